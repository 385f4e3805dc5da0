//! What answers an HTTP/1 request, written: glint's own reply (its head by
//! the session's plan, its body queued or compressed as it goes out), an
//! error for a request that could not be parsed, or a gateway exchange
//! begun (its answer comes through the sink, `gateway/`).

use super::encoded::Encoded;
use super::gateway::GwSide;
use super::{Connection, Ctx};
use crate::exchange::{self, Answer, ConnInfo, Outcome};
use crate::msg::plan::{Framing, Shape};
use crate::msg::Request;
use crate::proto::h1;
use crate::proto::h1::session::BodyTo;

impl Connection {
    /// Acts on what answers `req`: glint's reply is written now (with its
    /// log line); a gateway exchange is held, its body going to the job
    /// (or waiting for an authorizer). `body`: the request's body is still
    /// the client's to give (not after a local redirect, whose new request
    /// has none); `more`: bytes are buffered behind the request.
    pub(super) fn take_outcome(
        &mut self,
        outcome: Outcome,
        req: &Request<'_, '_>,
        info: &ConnInfo,
        body: bool,
        more: bool,
        cx: &mut Ctx<'_>,
    ) {
        match outcome {
            Outcome::Reply(a) => {
                self.h1.hand_body(BodyTo::Nobody);
                self.write_answer(a, req, info, more, cx);
            }
            Outcome::Gateway(start) => {
                let to = match (body, start.authorizer) {
                    (false, _) => BodyTo::Nobody,
                    // The authorizer gets the head alone; the body waits.
                    (true, true) => BodyTo::Hold,
                    (true, false) => BodyTo::Consumer,
                };
                self.h1.hand_body(to);
                self.prepare_output(cx.pool);
                self.throttle.configure(&start.settings);
                let ws = cx
                    .sv
                    .upstream
                    .routes
                    .get(start.route)
                    .is_some_and(|r| r.protocol == crate::upstream::Protocol::WsTunnel);
                self.gw = Some(Box::new(GwSide::new(*start)));
                if ws {
                    // mod_wstunnel: the 101, and a WebSocket from here on.
                    self.start_ws(cx);
                }
                if to == BodyTo::Consumer && self.h1.awaits_continue() {
                    // The client waits for a go-ahead before the body (curl
                    // does for uploads over 1 MB): the backend takes it as
                    // it comes.
                    h1::encode::write_continue(&mut self.out);
                    self.h1.continue_sent();
                }
                // The body's idle time-out counts from the head.
                self.last_active = cx.sv.clock.mono_us;
            }
        }
    }

    /// Writes glint's answer `a` to `req`: its head as the session plans
    /// it, its body queued (memory copied behind the head, files for
    /// sendfile) or handed to a compressor, and its log line.
    fn write_answer(
        &mut self,
        mut a: Answer,
        req: &Request<'_, '_>,
        info: &ConnInfo,
        more: bool,
        cx: &mut Ctx<'_>,
    ) {
        self.prepare_output(cx.pool);
        self.throttle.configure(&a.reply.settings);
        if a.reply.delay {
            self.throttle.delay_login();
        }
        let offer = self.offer(cx.sv);
        let mut plan = self
            .h1
            .plan(Shape::of_reply(&a.reply), a.reply.close, offer);
        let mut encoded = None;
        if let (Some(coding), true) = (a.reply.encode, plan.body) {
            let chunked = plan.framing == Framing::Chunked;
            match Encoded::of_reply(&a.reply, coding, chunked) {
                Some(e) => encoded = Some(Box::new(e)),
                None => {
                    // The head is not written yet: an error page instead.
                    let page = exchange::error_reply(cx.sv, 500);
                    cx.sv.give_back(std::mem::replace(&mut a.reply, page));
                    plan = self.h1.plan(Shape::of_reply(&a.reply), true, offer);
                }
            }
        }
        self.keep_nodelay(plan.keep_alive);
        let sv = &mut *cx.sv;
        let head = h1::write_reply(
            &mut self.out,
            &a.reply,
            &sv.clock.http_date,
            &plan,
            encoded.is_none(),
        ) as u64;
        match encoded {
            Some(mut e) => {
                // Logged when its body is out, with the bytes sent; the
                // answer is complete when the compressor is done.
                e.log = exchange::defer_reply(sv, info, req, &a, head);
                self.encoded = Some(e);
            }
            None => {
                exchange::log_reply(sv, info, req, &a, head);
                self.h1.complete(offer, more);
            }
        }
        sv.give_back(a.reply);
    }

    /// A persistent connection: the last segment of a response must not
    /// wait for the client's delayed ACK.
    pub(super) fn keep_nodelay(&mut self, keep_alive: bool) {
        if keep_alive && !self.nodelay {
            self.stream.set_nodelay();
            self.nodelay = true;
        }
    }

    /// Answers a request that could not be parsed, or whose exchange
    /// failed before its answer began: an error page, logged with the
    /// start of its raw line; the connection closes after it.
    pub(super) fn answer_error(&mut self, status: u16, raw_line: &[u8], cx: &mut Ctx<'_>) {
        self.prepare_output(cx.pool);
        // Whatever is left of the body has no taker now.
        self.h1.hand_body(BodyTo::Nobody);
        let r = exchange::error_reply(cx.sv, status);
        self.throttle.configure(&r.settings);
        let offer = self.offer(cx.sv);
        let plan = self.h1.plan(Shape::of_reply(&r), true, offer);
        h1::write_reply(&mut self.out, &r, &cx.sv.clock.http_date, &plan, true);
        let info = self.info(cx.sv);
        exchange::log_error(cx.sv, &info, &r, raw_line);
        self.h1.complete(offer, true);
        cx.sv.give_back(r);
    }
}
