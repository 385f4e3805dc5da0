//! The connection side of a gateway exchange on HTTP/1: each step of the
//! answer's way to the client, its end (logged, what follows), a rerun, and
//! the backend's news reaching the exchange's sink.

use super::{ClientSink, CLIENT_LOW_WATER};
use crate::conn::{AfterWrite, Connection, Ctx, Flushed, Phase, MAX_DISCARD};
use crate::exchange::{self, BodyAction};
use crate::msg::{Body, ExchangeId};
use crate::output::encode::MAX_SLICE;
use crate::proto::h1;
use crate::upstream::{Gateways, JobId};

/// A client that hung up before its answer began is not worth a backend's
/// time: its exchange (and its place in the queue) is dropped now, not when
/// the answer finally comes.
///
/// Once the answer began too: a client that closed while no body of its is
/// due is gone (nginx's "client prematurely closed" as well), and its
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
fn client_gone(gw: &super::GwSide, peer_closed: bool, upstream: &Gateways) -> bool {
    let job = gw.start.job;
    let half_closed = !gw.start.keep_alive && !upstream.takes_body(job);
    peer_closed
        && !half_closed
        && (!gw.head_sent()
            || !(upstream.takes_body(job)
                || upstream.in_tunnel(job)
                || gw.done
                || gw.body_complete()))
}

impl Connection {
    /// One step of a gateway exchange; false when it has to wait.
    pub(in crate::conn) fn drive_gateway(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some(gw) = self.gw.as_ref() else {
            self.phase = Phase::Idle;
            return true;
        };
        let job = gw.start.job;
        if client_gone(gw, self.peer_closed, &cx.sv.upstream) {
            log::debug!("client {:?} left before its answer was complete", self.peer);
            self.close(cx);
            return true;
        }
        if let Some(g) = self.gw.as_deref_mut().filter(|g| g.resume) {
            // Paused last turn at the compression bound: read on.
            g.resume = false;
            self.pump(cx);
        }
        if let Some(step) = self.flush_answer(job, cx) {
            return step;
        }
        let Some(gw) = self.gw.as_ref() else {
            return true;
        };
        // An answer to run again (an authorizer's 200, a local redirect)
        // does not wait for the rest of the body.
        if gw.done && gw.rerun.is_some() && self.out.is_empty() {
            self.rerun(cx);
            return true;
        }
        if cx.sv.upstream.takes_body(job) {
            return self.read_body_on(cx);
        }
        if self.slice_spent() {
            return false;
        }
        let Some(gw) = self.gw.as_ref() else {
            return true;
        };
        if !(gw.done && self.out.is_empty()) {
            return false;
        }
        let then = self.end_gateway(cx);
        self.after_write(then, cx);
        true
    }

    /// Writes what of the answer is queued; `Some` when the step ends
    /// there (with what [`Connection::drive_gateway`] returns).
    fn flush_answer(&mut self, job: JobId, cx: &mut Ctx<'_>) -> Option<bool> {
        if self.out.is_empty() {
            return None;
        }
        match self.flush(cx) {
            Flushed::Done => {}
            Flushed::Blocked if cx.sv.upstream.takes_body(job) => {}
            Flushed::Blocked => return Some(false),
            Flushed::Closed => return Some(true),
        }
        if self.out.pending_mem() < CLIENT_LOW_WATER {
            // The client caught up: a backend paused for it reads again;
            // what it reads goes out on the next round (the socket was
            // not full: no event would come for it).
            self.pump(cx);
            if !self.out.is_empty() {
                return Some(true);
            }
        }
        None
    }

    /// Body bytes already buffered go first; the socket is read only once
    /// they are taken, and only while the window has room, so a full
    /// window leaves `readable` set for when the backend drains it.
    fn read_body_on(&mut self, cx: &mut Ctx<'_>) -> bool {
        if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
            self.on_input(cx);
        } else if self.readable {
            self.read_some(cx);
        } else {
            return false;
        }
        true
    }

    /// The backend fed a compression slice's worth this turn: it pauses
    /// for the rest of the turn (true), or its count starts again.
    fn slice_spent(&mut self) -> bool {
        let Some(g) = self.gw.as_deref_mut() else {
            return false;
        };
        if g.fed >= MAX_SLICE {
            // The backend paused for the rest of this turn.
            g.fed = 0;
            g.resume = true;
            self.more = true;
            return true;
        }
        g.fed = 0;
        false
    }

    /// The gateway exchange ends with `status` before its answer began
    /// (the body is unusable): an error page, and the connection closes.
    pub(in crate::conn) fn fail_gateway(&mut self, status: u16, cx: &mut Ctx<'_>) {
        if let Some(gw) = self.gw.take() {
            cx.sv.upstream.finish(gw.start.job);
        }
        self.answer_error(status, b"", cx);
        self.linger = true;
        self.phase = Phase::Writing {
            then: AfterWrite::Close,
        };
    }

    /// The backend's answer has been written: log it, and say what follows.
    pub(in crate::conn) fn end_gateway(&mut self, cx: &mut Ctx<'_>) -> AfterWrite {
        let Some(gw) = self.gw.take() else {
            return AfterWrite::Close;
        };
        let info = gw.start.info.clone();
        exchange::log_gateway(cx.sv, &info, &gw.start, gw.status, gw.body_sent);
        let rest = cx.sv.upstream.finish(gw.start.job).body_remaining;
        let keep_alive = gw.start.keep_alive && !cx.sv.shutting_down;
        if gw.start.authorizer {
            // The authorizer's answer (a refusal, or an error page) went to
            // the client instead of the request's: its body is still unread.
            let body = gw.start.head.body();
            let mut hs = Vec::new();
            let expect = gw.start.head.view(&mut hs).header("expect").is_some();
            return self.skip_unread_body(BodyAction::Discard, body, expect, keep_alive);
        }
        if !keep_alive {
            // Body bytes the client may still send must not reset the close.
            self.linger |= rest > 0;
            AfterWrite::Close
        } else if rest == 0 {
            AfterWrite::NextRequest
        } else if rest <= MAX_DISCARD {
            // The backend answered before the whole body came: drop the rest.
            AfterWrite::DiscardBody(rest)
        } else {
            self.linger = true;
            AfterWrite::Close
        }
    }

    /// The backend's answer said to run the request again (an authorizer
    /// allowed it, or a local redirect): run it, and go on as for a new one.
    pub(in crate::conn) fn rerun(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut gw) = self.gw.take() else { return };
        let Some(why) = gw.rerun.take() else { return };
        // A backend that redirected before the whole body came: the rest of
        // it is still on its way, and must not be read as a new request.
        let leftover = cx.sv.upstream.finish(gw.start.job).body_remaining > 0;
        let keep_alive = gw.start.keep_alive && !cx.sv.shutting_down && !leftover;
        let minor = gw.start.minor;
        let info = gw.start.info.clone();
        let mut hs = Vec::new();
        let head = gw.start.head.clone();
        let r = exchange::rerun(cx.sv, &info, gw.start, why, keep_alive, cx.registry);
        self.linger |= leftover;
        let req = head.view(&mut hs);
        let action = self.take_outcome(r.outcome, &req, keep_alive, &info, cx);
        match action {
            BodyAction::Gateway => {
                // Its body, if any, is buffered or still to come.
                let continue_100 = minor >= 1
                    && r.expects_continue
                    && !matches!(r.body, Body::None | Body::Length(0));
                self.start_gateway_body(cx, continue_100);
                self.input.get_or_insert_with(|| cx.pool.take_in());
                self.on_input(cx);
            }
            BodyAction::Authorize => self.phase = Phase::Gateway,
            action @ (BodyAction::Discard | BodyAction::Close) => {
                let keep = keep_alive && !cx.sv.reply.close;
                let then = self.skip_unread_body(action, r.body, r.expects_continue, keep);
                self.phase = Phase::Writing { then };
            }
        }
    }

    /// The head of a gateway request was taken: its body (if any) follows,
    /// collected first when chunked, else streamed to the backend as it comes.
    pub(in crate::conn) fn start_gateway_body(&mut self, cx: &mut Ctx<'_>, continue_100: bool) {
        if continue_100 {
            // The client waits for a go-ahead before the body (curl does
            // for uploads over 1 MB): the backend takes it as it comes.
            self.prepare_output(cx.pool);
            h1::encode::write_continue(&mut self.out);
        }
        // The body's idle time-out counts from the head.
        self.last_active = cx.sv.clock.mono_secs;
        let collect = self
            .gw
            .as_ref()
            .is_some_and(|g| cx.sv.upstream.collecting(g.start.job));
        self.phase = if collect {
            Phase::ReadingBody
        } else {
            Phase::Gateway
        };
    }

    /// Readiness of the backend connection `bkey` of this connection's
    /// gateway exchange: its answer goes on to the client.
    pub fn backend_ready(&mut self, ex: ExchangeId, bkey: usize, cx: &mut Ctx<'_>) {
        if self.phase == Phase::Http2 {
            return self.h2_backend_ready(ex.stream, bkey, cx);
        }
        self.with_sink_and(cx, |sink, up, registry, now, _| {
            up.drive_backend(bkey, sink, now, registry)
        });
        self.drive(cx);
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
    pub fn upstream_failed(&mut self, ex: ExchangeId, status: u16, cx: &mut Ctx<'_>) {
        if self.phase == Phase::Http2 {
            return self.h2_upstream_news(ex.stream, Some(status), cx);
        }
        self.with_sink(cx, |s: &mut ClientSink<'_>| {
            crate::msg::Sink::fail(s, status)
        });
    }

    /// The gateway answer ended where no sink was at hand.
    pub fn upstream_ended(&mut self, ex: ExchangeId, cx: &mut Ctx<'_>) {
        if self.phase == Phase::Http2 {
            return self.h2_upstream_news(ex.stream, None, cx);
        }
        self.with_sink(cx, |s: &mut ClientSink<'_>| crate::msg::Sink::end(s));
    }

    pub(in crate::conn) fn with_sink(
        &mut self,
        cx: &mut Ctx<'_>,
        f: impl for<'s> FnOnce(&mut ClientSink<'s>),
    ) {
        self.with_sink_and(cx, |sink, _, _, _, _| f(sink));
        self.drive(cx);
    }

    /// The client's side of the gateway exchange as a [`ClientSink`], with
    /// the gateways, the registry, the second and the job for `f`; nothing
    /// when there is no exchange.
    fn with_sink_and(
        &mut self,
        cx: &mut Ctx<'_>,
        f: impl for<'s> FnOnce(&mut ClientSink<'s>, &mut Gateways, &mio::Registry, u64, JobId),
    ) {
        let Some(gw) = self.gw.as_deref_mut() else {
            return;
        };
        let job = gw.start.job;
        let now = cx.sv.clock.mono_secs;
        let load = cx.sv.deflate.load_for(&gw.start.settings.deflate, now);
        let mut sink = ClientSink {
            out: &mut self.out,
            gw,
            date: &cx.sv.clock.http_date,
            load,
        };
        f(&mut sink, &mut cx.sv.upstream, cx.registry, now, job);
    }
}
