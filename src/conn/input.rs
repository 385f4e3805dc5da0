//! The HTTP/1 session's input: the buffered bytes go where the session
//! says (a request to answer, body bytes for a backend, bytes to drop),
//! and a request is answered through the exchange.

use super::h2::Start;
use super::{Connection, Ctx, Mode, LINGER_MAX_BYTES};
use crate::buf::InBuf;
use crate::exchange;
use crate::msg::Request;
use crate::proto::h1::session::{self as h1, Input};

impl Connection {
    /// Takes what the buffered input allows; whether anything moved.
    pub(super) fn on_input(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some(mut input) = self.input.take() else {
            return false;
        };
        let moved = self.take_input(&mut input, cx);
        self.input = Some(input);
        if moved && self.mode == Mode::Http2 {
            // Upgraded, or the preface came: the rest is HTTP/2's.
            self.h2_input(cx);
        }
        moved
    }

    /// The loop over the buffered input (several requests when pipelined).
    fn take_input(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) -> bool {
        let mut moved = false;
        while self.mode == Mode::Http1 && !input.is_empty() {
            if self.h1.requests() == 0 && self.h1.read_state() == h1::Read::Head {
                // (A PROXY v2 header starts with blank lines: before those are skipped.)
                if self.proxy_wait && !self.read_proxy_header(input, cx) {
                    return moved;
                }
                // The first bytes (or ALPN) may say HTTP/2.
                match self.h2_start(input.pending(), cx.sv) {
                    Start::H2 => {
                        self.enter_h2(None, cx);
                        return true;
                    }
                    Start::Wait => return moved,
                    Start::H1 => {}
                }
                if input.is_empty() {
                    return true;
                }
            }
            let offer = self.offer(cx.sv);
            let mut headers = h1::header_slots();
            let more = match self.h1.input(input.pending(), &mut headers, offer) {
                Input::Wait => return moved,
                Input::Drop(n) => {
                    self.dropped(n, cx);
                    n
                }
                Input::Body(bytes) => self.feed_body(bytes, cx),
                Input::Bad(e) => {
                    log::debug!("bad request from {:?}: {}", self.peer, e.why);
                    let pending = input.pending();
                    let line_end = pending.iter().position(|&b| b == b'\n').unwrap_or(0);
                    let raw_line = &pending[..line_end.min(256)];
                    self.answer_error(e.status, raw_line, cx);
                    input.len()
                }
                Input::Request(req) => {
                    let more = input.pending().len() > req.head_len;
                    self.answer_request(&req, more, cx);
                    req.head_len
                }
            };
            if more == 0 {
                return moved;
            }
            input.consume(more);
            moved = true;
        }
        moved
    }

    /// `n` bytes were dropped; a lingering close stops at its bound.
    fn dropped(&mut self, n: usize, cx: &mut Ctx<'_>) {
        if self.h1.linger_until().is_some() {
            self.lingered += n as u64;
            if self.lingered > LINGER_MAX_BYTES {
                log::debug!(
                    "client {:?} still sending after its answer; closing",
                    self.peer
                );
                self.close(cx);
            }
        }
    }

    /// Body bytes for the gateway exchange in progress: to its job, as far
    /// as its window takes them. Returns how many were taken.
    fn feed_body(&mut self, bytes: &[u8], cx: &mut Ctx<'_>) -> usize {
        let Some(job) = self.gw.as_ref().map(|g| g.start.job) else {
            return 0;
        };
        if self.gw.as_ref().is_some_and(|g| g.ws.is_some()) {
            return self.feed_ws(bytes, cx);
        }
        let up = &mut cx.sv.upstream;
        if !up.takes_body(job) {
            return 0;
        }
        let now = cx.sv.clock.mono_secs;
        match up.feed(job, bytes, now, cx.registry) {
            Ok((used, done)) => {
                self.h1.body_taken(used, done);
                used
            }
            Err(status) => {
                if status == 413 {
                    log::warn!(
                        "a chunked request body for a backend is over its limit; answering 413"
                    );
                }
                if let Some(gw) = self.gw.take() {
                    cx.sv.upstream.finish(gw.start.job);
                }
                self.answer_error(status, b"", cx);
                bytes.len()
            }
        }
    }

    /// Answers a parsed request (`more`: bytes are buffered behind its
    /// head): through the exchange, or as HTTP/2 after an h2c upgrade.
    fn answer_request(&mut self, req: &Request<'_, '_>, more: bool, cx: &mut Ctx<'_>) {
        if self.h1.requests() == 1 && self.upgrade_h2c(req, cx) {
            // Answered on stream 1; what follows the head is HTTP/2.
            return;
        }
        let mut info = self.info(cx.sv);
        let mut req = *req;
        if !exchange::speaks_http11(cx.sv, &info, &req) {
            if req.minor >= 1 {
                req.minor = 0;
                req.keep_alive = false;
            }
            self.h1.downgrade();
        }
        let outcome = exchange::respond(cx.sv, &mut info, &req, &self.proxy_env, cx.registry);
        self.take_outcome(outcome, &req, &info, true, more, cx);
    }
}
