//! The client's side of a gateway exchange on an HTTP/1 connection: how a
//! backend's answer, heard through the [`Sink`], becomes response bytes
//! (its head, a body framed with Content-Length or chunked), and what the
//! connection does when the backend is done.

use std::fs::File;
use std::rc::Rc;

use super::{AfterWrite, Connection, Ctx, Flushed, Phase, MAX_DISCARD};
use crate::exchange::{self, error_run_status, BodyAction, GwStart};
use crate::msg::{AnswerHead, Body, Reply, Rerun, Sink};
use crate::output::Output;
use crate::proto::h1::{self, Fields, Framing, Head};

/// Stop reading from a backend while the client has this much unsent.
pub const CLIENT_HIGH_WATER: usize = 256 * 1024;
/// Reading resumes once the client caught up below this.
pub const CLIENT_LOW_WATER: usize = CLIENT_HIGH_WATER / 2;

/// How much of the answer has gone to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Nothing: an error page may still answer.
    Nothing,
    /// The head, and the body is under way.
    Body {
        chunked: bool,
        /// Body bytes still expected, when the head announced a length.
        remaining: Option<u64>,
    },
}

/// A gateway exchange, from the head of its request to the end of its answer.
#[derive(Debug)]
pub struct GwSide {
    pub start: GwStart,
    pub sent: Sent,
    pub status: u16,
    pub body_sent: u64,
    /// The backend is done with the request (its answer complete, or failed).
    pub done: bool,
    /// The answer says to run the request again (once `done`).
    pub rerun: Option<Rerun>,
}

impl GwSide {
    pub fn new(start: GwStart) -> GwSide {
        GwSide {
            start,
            sent: Sent::Nothing,
            status: 0,
            body_sent: 0,
            done: false,
            rerun: None,
        }
    }

    pub fn head_sent(&self) -> bool {
        self.sent != Sent::Nothing
    }

    /// The client has the whole body its head announced.
    pub fn body_complete(&self) -> bool {
        matches!(
            self.sent,
            Sent::Body {
                remaining: Some(0),
                ..
            }
        )
    }
}

/// The [`Sink`] of one gateway exchange: its connection's output queue.
pub struct ClientSink<'a> {
    pub out: &'a mut Output,
    pub gw: &'a mut GwSide,
    /// The `Date` value of this second.
    pub date: &'a [u8],
}

impl ClientSink<'_> {
    pub(super) fn write_head(
        &mut self,
        status: u16,
        headers: &[(String, Vec<u8>)],
        framing: Framing,
    ) {
        let g = &mut self.gw;
        g.status = status;
        let head = Head {
            status,
            fields: Fields::Pairs(headers),
            framing,
            settings: &g.start.settings,
            date: self.date,
            keep_alive: g.start.keep_alive,
            minor: g.start.minor,
        };
        h1::write_head(self.out, &head);
    }
}

impl ClientSink<'_> {
    /// A 101 to an `Upgrade` request: the head as the backend gave it
    /// (`Upgrade`, `Connection: upgrade`), then the connection is a
    /// tunnel: bytes both ways, unframed, until either side closes; it is
    /// never used for another request.
    fn switch(&mut self, head: &AnswerHead<'_>) {
        let g = &mut self.gw;
        g.status = head.status;
        g.sent = Sent::Body {
            chunked: false,
            remaining: None,
        };
        let mut fields = head.headers.to_vec();
        if !fields
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
        {
            fields.push(("Connection".into(), b"upgrade".to_vec()));
        }
        let h = Head {
            status: head.status,
            fields: Fields::Pairs(&fields),
            framing: Framing::None,
            settings: &g.start.settings,
            date: self.date,
            // (Not `Connection: close`: the field above says what happens.)
            keep_alive: true,
            minor: g.start.minor,
        };
        h1::write_head(self.out, &h);
        g.start.keep_alive = false;
    }
}

impl Sink for ClientSink<'_> {
    fn has_room(&self) -> bool {
        self.out.pending_mem() < CLIENT_HIGH_WATER
    }

    fn head(&mut self, head: &AnswerHead<'_>) {
        if head.upgrade {
            return self.switch(head);
        }
        let g = &mut self.gw;
        let (framing, remaining) = match head.content_length {
            _ if head.bodiless => (Framing::None, None),
            Some(n) => (Framing::Length(n), Some(n)),
            None if g.start.minor >= 1 => (Framing::Chunked, None),
            None => {
                // HTTP/1.0 without a length: the body ends when the connection does.
                g.start.keep_alive = false;
                (Framing::None, None)
            }
        };
        // An error handler's answer: the status lighttpd gives it.
        let status = match g.start.carry.error.as_ref() {
            Some(run) => error_run_status(run, head.status),
            None => head.status,
        };
        g.sent = Sent::Body {
            chunked: framing == Framing::Chunked && !g.start.head_only,
            remaining,
        };
        self.write_head(status, head.headers, framing);
    }

    fn data(&mut self, bytes: &[u8]) {
        let g = &mut self.gw;
        let Sent::Body { chunked, remaining } = &mut g.sent else {
            return;
        };
        let mut body = bytes;
        if let Some(rem) = remaining.as_mut() {
            let take = (body.len() as u64).min(*rem) as usize;
            body = &body[..take];
            *rem -= take as u64;
        }
        if body.is_empty() || g.start.head_only {
            return;
        }
        g.body_sent += body.len() as u64;
        if *chunked {
            h1::write_chunk(self.out, body);
        } else {
            self.out.mem.extend_from_slice(body);
        }
    }

    fn file(&mut self, head: &AnswerHead<'_>, file: Rc<File>, len: u64) {
        self.write_head(head.status, head.headers, Framing::Length(len));
        let g = &mut self.gw;
        // Whatever body the backend sends is not passed on.
        g.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        g.body_sent = len;
        if !g.start.head_only {
            self.out.push_file(file, 0, len);
        }
    }

    fn end(&mut self) {
        let g = &mut self.gw;
        g.done = true;
        if g.rerun.is_some() {
            // Nothing was written: the connection runs the request again.
            return;
        }
        match g.sent {
            Sent::Nothing => {}
            Sent::Body { chunked, remaining } => {
                if chunked {
                    h1::write_last_chunk(self.out);
                }
                if remaining.is_some_and(|r| r > 0) && !g.start.head_only {
                    log::error!(
                        "backend sent less than its Content-Length; closing the connection"
                    );
                    g.start.keep_alive = false;
                }
            }
        }
    }

    fn fail(&mut self, status: u16) {
        let g = &mut self.gw;
        g.done = true;
        // A failure while the rest of an answer was being dropped ends the
        // request too: it is not run again.
        g.rerun = None;
        if g.head_sent() {
            // The head promised a body that will not come: the client must see the cut.
            g.start.keep_alive = false;
            return;
        }
        let mut r = Reply::new(Rc::clone(&g.start.settings), g.start.head_only);
        r.error(status);
        g.status = status;
        g.body_sent = r.body_len();
        g.sent = Sent::Body {
            chunked: false,
            remaining: Some(0),
        };
        h1::write_reply(self.out, &r, self.date, g.start.keep_alive, g.start.minor);
    }

    fn rerun(&mut self, why: Rerun) {
        self.gw.rerun = Some(why);
    }
}

impl Connection {
    /// One step of a gateway exchange; false when it has to wait.
    pub(super) fn drive_gateway(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some(gw) = self.gw.as_ref() else {
            self.phase = Phase::Idle;
            return true;
        };
        // A client that hung up before its answer began is not worth a
        // backend's time: drop it (and its place in the queue) now, not
        // when the answer finally comes.
        let job = gw.start.job;
        // Once the answer began too: a client that closed while no body of
        // its is due is gone (nginx's "client prematurely closed" as well),
        // and its backend's work — a CGI program, a long stream — stops now,
        // not at the next write. A tunnel's close goes on to its backend.
        // (One that has its whole body already just left first: the backend
        // finishes, and its connection may be kept.)
        // A FIN does not tell a close from a half-close (shutdown(SHUT_WR)):
        // a client whose request ends the connection (HTTP/1.0, `Connection:
        // close`) and whose body is all in may shut its side after sending
        // and still wait for the answer, as lighttpd allows (its test
        // suite's client does exactly that); the write that fails tells.
        let half_closed = !gw.start.keep_alive && !cx.sv.upstream.takes_body(job);
        let gone = self.peer_closed
            && !half_closed
            && (!gw.head_sent()
                || !(cx.sv.upstream.takes_body(job)
                    || cx.sv.upstream.in_tunnel(job)
                    || gw.done
                    || gw.body_complete()));
        if gone {
            log::debug!("client {:?} left before its answer was complete", self.peer);
            self.close(cx);
            return true;
        }
        if !self.out.is_empty() {
            match self.flush(cx) {
                Flushed::Done => {}
                Flushed::Blocked if cx.sv.upstream.takes_body(job) => {}
                Flushed::Blocked => return false,
                Flushed::Closed => return true,
            }
            if self.out.pending_mem() < CLIENT_LOW_WATER {
                // The client caught up: a backend paused for it reads again;
                // what it reads goes out on the next round (the socket was
                // not full: no event would come for it).
                self.pump(cx);
                if !self.out.is_empty() {
                    return true;
                }
            }
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
            // Body bytes already buffered go first; the socket is read only
            // once they are taken, and only while the window has room, so a
            // full window leaves `readable` set for when the backend drains it.
            if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
                self.on_input(cx);
            } else if self.readable {
                self.read_some(cx);
            } else {
                return false;
            }
            return true;
        }
        if !(gw.done && self.out.is_empty()) {
            return false;
        }
        let then = self.end_gateway(cx);
        self.after_write(then, cx);
        true
    }

    /// The gateway exchange ends with `status` before its answer began
    /// (the body is unusable): an error page, and the connection closes.
    pub(super) fn fail_gateway(&mut self, status: u16, cx: &mut Ctx<'_>) {
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
    pub(super) fn end_gateway(&mut self, cx: &mut Ctx<'_>) -> AfterWrite {
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
    pub(super) fn rerun(&mut self, cx: &mut Ctx<'_>) {
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
    pub(super) fn start_gateway_body(&mut self, cx: &mut Ctx<'_>, continue_100: bool) {
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
    pub fn backend_ready(&mut self, bkey: usize, cx: &mut Ctx<'_>) {
        let Some(gw) = self.gw.as_deref_mut() else {
            return;
        };
        let mut sink = ClientSink {
            out: &mut self.out,
            gw,
            date: &cx.sv.clock.http_date,
        };
        let now = cx.sv.clock.mono_secs;
        cx.sv
            .upstream
            .drive_backend(bkey, &mut sink, now, cx.registry);
        self.drive(cx);
    }

    /// Resumes a backend paused while the client was slow, and sends body
    /// bytes the window holds.
    pub(super) fn pump(&mut self, cx: &mut Ctx<'_>) {
        let Some(gw) = self.gw.as_deref_mut() else {
            return;
        };
        let job = gw.start.job;
        let mut sink = ClientSink {
            out: &mut self.out,
            gw,
            date: &cx.sv.clock.http_date,
        };
        let now = cx.sv.clock.mono_secs;
        cx.sv.upstream.pump(job, &mut sink, now, cx.registry);
    }

    /// The gateway exchange failed where no sink was at hand (a time-out,
    /// the queue): the client hears it now.
    pub fn upstream_failed(&mut self, status: u16, cx: &mut Ctx<'_>) {
        self.with_sink(cx, |s: &mut ClientSink<'_>| {
            crate::msg::Sink::fail(s, status)
        });
    }

    /// The gateway answer ended where no sink was at hand.
    pub fn upstream_ended(&mut self, cx: &mut Ctx<'_>) {
        self.with_sink(cx, |s: &mut ClientSink<'_>| crate::msg::Sink::end(s));
    }

    pub(super) fn with_sink(
        &mut self,
        cx: &mut Ctx<'_>,
        f: impl for<'s> FnOnce(&mut ClientSink<'s>),
    ) {
        let Some(gw) = self.gw.as_deref_mut() else {
            return;
        };
        let mut sink = ClientSink {
            out: &mut self.out,
            gw,
            date: &cx.sv.clock.http_date,
        };
        f(&mut sink);
        self.drive(cx);
    }
}
