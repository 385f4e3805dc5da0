//! The connection side of a gateway exchange on HTTP/1: a backend paused
//! for a slow client read again, the end of the answer (logged, the
//! session told), a rerun, a client that left, and the backend's news
//! reaching the exchange's sink.

use super::{ClientSink, CLIENT_LOW_WATER};
use crate::conn::{Connection, Ctx, Drive, Mode};
use crate::exchange;
use crate::msg::{ExchangeId, Sink};
use crate::output::encode::MAX_SLICE;
use crate::upstream::{Gateways, JobId};

impl Connection {
    /// A client that closed its side while its answer is under way. One
    /// that hung up before its answer began is not worth a backend's time:
    /// its exchange (and its place in the queue) is dropped now, not when
    /// the answer finally comes.
    ///
    /// Once the answer began too: a client that closed while no body of its
    /// is due is gone (nginx's "client prematurely closed" as well), and its
    /// backend's work — a CGI program, a long stream — stops now, not at the
    /// next write. A tunnel's close goes on to its backend. (One that has its
    /// whole body already just left first: the backend finishes, and its
    /// connection may be kept.)
    ///
    /// A FIN does not tell a close from a half-close (shutdown(SHUT_WR)): a
    /// client whose request ends the connection (HTTP/1.0, `Connection: close`)
    /// and whose body is all in may shut its side after sending and still wait
    /// for the answer, as lighttpd allows (its test suite's client does exactly
    /// that); the write that fails tells.
    pub(in crate::conn) fn client_gone(&self, half_close: bool, cx: &Ctx<'_>) -> bool {
        let Some(gw) = self.gw.as_deref() else {
            return false;
        };
        let upstream = &cx.sv.upstream;
        let job = gw.start.job;
        let half_closed = half_close && !upstream.takes_body(job);
        !half_closed
            && (!gw.head_sent()
                || !(upstream.takes_body(job)
                    || upstream.in_tunnel(job)
                    || gw.done
                    || gw.body_complete()))
    }

    /// One step of the gateway exchange between the writes: its end, a
    /// rerun, a backend read again once the client caught up (`flushed`:
    /// output went out this round). True when something moved.
    pub(in crate::conn) fn drive_gateway(&mut self, flushed: bool, cx: &mut Ctx<'_>) -> bool {
        if self.peer_closed && self.client_gone(self.h1.may_half_close(), cx) {
            log::debug!("client {:?} left before its answer was complete", self.peer);
            self.close(cx);
            return false;
        }
        let Some(g) = self.gw.as_deref_mut() else {
            return false;
        };
        if g.done {
            if g.rerun.is_none() {
                self.end_gateway(cx);
                return true;
            }
            // An answer to run again (an authorizer's 200, a local
            // redirect) goes once the `100 Continue` before it is out; it
            // does not wait for the rest of the body.
            if self.out.is_empty() {
                self.rerun(cx);
                return true;
            }
            return false;
        }
        if self.slice_spent() {
            return false;
        }
        let Some(g) = self.gw.as_deref_mut() else {
            return false;
        };
        let resume = std::mem::take(&mut g.resume);
        if resume || (flushed && self.out.pending_mem() < CLIENT_LOW_WATER) {
            // Paused last turn at the compression bound, or the client
            // caught up: a backend paused for it reads again; what it reads
            // goes out on the next round (the socket was not full: no event
            // would come for it).
            let before = self.out.pending_bytes();
            self.pump(cx);
            let moved =
                self.out.pending_bytes() != before || self.gw.as_ref().is_none_or(|g| g.done);
            let paused = self.gw.as_ref().is_some_and(|g| g.fed >= MAX_SLICE);
            if paused {
                self.slice_spent();
            }
            return !paused && moved;
        }
        false
    }

    /// The backend fed a compression slice's worth this turn: it pauses
    /// for the rest of it, and is read again on the next (true).
    fn slice_spent(&mut self) -> bool {
        let Some(g) = self.gw.as_deref_mut() else {
            return false;
        };
        let spent = g.fed >= MAX_SLICE;
        g.fed = 0;
        if !spent {
            return false;
        }
        g.resume = true;
        self.again = true;
        true
    }

    /// The backend's answer is queued whole: log it, and let the session
    /// decide what follows (a body left is dropped, or the connection
    /// closes, as its plan says).
    pub(in crate::conn) fn end_gateway(&mut self, cx: &mut Ctx<'_>) {
        let Some(gw) = self.gw.take() else {
            return;
        };
        let info = gw.start.info.clone();
        // (A mod_sockproxy connection has no request to log.)
        let sockproxy = cx
            .sv
            .upstream
            .routes
            .get(gw.start.route)
            .is_some_and(|r| r.protocol == crate::upstream::Protocol::SockProxy);
        if !sockproxy {
            exchange::log_gateway(cx.sv, &info, &gw.start, gw.status, gw.body_sent);
        }
        cx.sv.upstream.finish(gw.start.job);
        let offer = self.offer(cx.sv);
        let more = self.input.as_ref().is_some_and(|i| !i.is_empty());
        self.h1.complete(offer, more);
    }

    /// The backend's answer said to run the request again (an authorizer
    /// allowed it, or a local redirect): run it, and go on as for a new one.
    pub(in crate::conn) fn rerun(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut gw) = self.gw.take() else { return };
        let Some(why) = gw.rerun.take() else { return };
        // After an authorizer (or a vhost lookup), the body still waits for the request's
        // handler; after a redirect, the new request has none, and what is
        // left of the first one's is dropped.
        let body = why.keeps_body();
        cx.sv.upstream.finish(gw.start.job);
        let info = gw.start.info.clone();
        let head = gw.start.head.clone();
        let outcome = exchange::rerun(cx.sv, &info, gw.start, why, cx.registry);
        let mut hs = Vec::new();
        let req = head.view(&mut hs);
        let more = self.input.as_ref().is_some_and(|i| !i.is_empty());
        self.take_outcome(outcome, &req, &info, body, more, cx);
    }

    /// Readiness of the backend connection `bkey` of this connection's
    /// gateway exchange: its answer goes on to the client.
    pub fn backend_ready(&mut self, ex: ExchangeId, bkey: usize, cx: &mut Ctx<'_>) -> Drive {
        if self.mode == Mode::Http2 {
            return self.h2_backend_ready(ex.stream, bkey, cx);
        }
        self.with_sink_and(cx, |sink, up, registry, now, _| {
            up.drive_backend(bkey, sink, now, registry)
        });
        self.drive(cx)
    }

    /// Resumes a backend paused while the client was slow, and sends body
    /// bytes the window holds.
    pub(in crate::conn) fn pump(&mut self, cx: &mut Ctx<'_>) {
        self.with_sink_and(cx, |sink, up, registry, now, job| {
            up.pump(job, sink, now, registry)
        });
    }

    /// The gateway exchange failed where no sink was at hand (a time-out,
    /// the queue): the client hears it now.
    pub fn upstream_failed(&mut self, ex: ExchangeId, status: u16, cx: &mut Ctx<'_>) -> Drive {
        if self.mode == Mode::Http2 {
            return self.h2_upstream_news(ex.stream, Some(status), cx);
        }
        self.with_sink_and(cx, |s, _, _, _, _| s.fail(status));
        self.drive(cx)
    }

    /// The gateway answer ended where no sink was at hand.
    pub fn upstream_ended(&mut self, ex: ExchangeId, cx: &mut Ctx<'_>) -> Drive {
        if self.mode == Mode::Http2 {
            return self.h2_upstream_news(ex.stream, None, cx);
        }
        self.with_sink_and(cx, |s, _, _, _, _| s.end());
        self.drive(cx)
    }

    /// The client's side of the gateway exchange as a [`ClientSink`], with
    /// the gateways, the registry, the second and the job for `f`; nothing
    /// when there is no exchange.
    pub(in crate::conn) fn with_sink_and(
        &mut self,
        cx: &mut Ctx<'_>,
        f: impl for<'s> FnOnce(&mut ClientSink<'s>, &mut Gateways, &mio::Registry, u64, JobId),
    ) {
        let offer = self.offer(cx.sv);
        let Some(gw) = self.gw.as_deref_mut() else {
            return;
        };
        let job = gw.start.job;
        let now = cx.sv.clock.mono_secs;
        let load = cx.sv.deflate.load_for(&gw.start.settings.deflate, now);
        let mut sink = ClientSink {
            out: &mut self.out,
            gw,
            h1: &mut self.h1,
            offer,
            date: &cx.sv.clock.http_date,
            load,
            throttle: &mut self.throttle,
        };
        f(&mut sink, &mut cx.sv.upstream, cx.registry, now, job);
    }
}
