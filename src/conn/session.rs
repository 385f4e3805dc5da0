//! The HTTP/1 session of a connection: requests parsed from the input
//! (several when pipelined), answered through the exchange, replies
//! written with their log lines, bodies dropped or fed to a backend.

use std::mem::MaybeUninit;

use super::gateway::GwSide;
use super::h2::Start;
use super::{skip_body, AfterWrite, Connection, Ctx, Phase};
use super::{PIPELINE_HIGH_WATER, PIPELINE_MAX_FILES};
use crate::buf::{InBuf, INPUT_BUF};
use crate::exchange::{self, BodyAction, ConnInfo, Outcome};
use crate::msg::{Body, Request, MAX_HEADERS};
use crate::proto::h1;

/// The client asked for `100 Continue` before a body it has yet to send.
fn wants_continue(req: &Request<'_, '_>) -> bool {
    req.minor >= 1
        && !matches!(req.body, Body::None | Body::Length(0))
        && req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"))
}

/// How far [`Connection::answer_one`] took a request it parsed.
enum Answered {
    /// Its head (the bytes named) is consumed; the connection goes on in
    /// the phase the answer set (a gateway's body, HTTP/2).
    Head(usize),
    /// Its answer is queued: the bytes named are consumed, and this
    /// follows once it is written.
    Write(AfterWrite, usize),
}

impl Connection {
    /// Consumes buffered input according to the phase: drops body bytes,
    /// feeds them to a backend, parses and answers requests (several when
    /// pipelined).
    pub(super) fn on_input(&mut self, cx: &mut Ctx<'_>) {
        if self.phase == Phase::Http2 {
            return self.h2_input(cx);
        }
        let Some(mut input) = self.input.take() else {
            return;
        };
        loop {
            match self.phase {
                Phase::Lingering { until, left } => {
                    let n = input.pending().len() as u64;
                    input.consume_all();
                    if n >= left {
                        self.close(cx);
                    } else {
                        self.phase = Phase::Lingering {
                            until,
                            left: left - n,
                        };
                    }
                    break;
                }
                Phase::DiscardingBody { remaining } => {
                    let n = (input.pending().len() as u64).min(remaining);
                    input.consume(n as usize);
                    self.phase = if n == remaining {
                        Phase::Idle
                    } else {
                        Phase::DiscardingBody {
                            remaining: remaining - n,
                        }
                    };
                    if input.is_empty() {
                        break;
                    }
                }
                Phase::ReadingBody | Phase::Gateway => {
                    self.feed_body(&mut input, cx);
                    break;
                }
                Phase::Idle | Phase::ReadingHead => {
                    // (A PROXY v2 header starts with blank lines: before those are skipped.)
                    if self.proxy_wait && !self.read_proxy_header(&mut input, cx) {
                        break;
                    }
                    if self.requests == 0 {
                        // The first bytes (or ALPN) may say HTTP/2.
                        match self.h2_start(input.pending(), cx.sv) {
                            Start::H2 => {
                                self.enter_h2(None, cx);
                                continue;
                            }
                            Start::Wait => {
                                self.phase = Phase::ReadingHead;
                                break;
                            }
                            Start::H1 => {}
                        }
                    }
                    if !self.answer_h1(&mut input, cx) {
                        break;
                    }
                }

                Phase::Writing {
                    then: AfterWrite::NextRequest,
                } if !input.is_empty()
                    && self.encoded.is_none()
                    && self.out.pending_mem() < PIPELINE_HIGH_WATER
                    && self.out.pending_files() < PIPELINE_MAX_FILES =>
                {
                    // Pipelined: answer the next request into the same queue.
                    self.phase = Phase::Idle;
                }
                _ => break,
            }
        }
        self.input = Some(input);
        if self.phase == Phase::Http2 {
            // Upgraded, or the preface came: the rest is HTTP/2's.
            self.h2_input(cx);
        }
    }

    /// Answers one HTTP/1 request from `input` if it is complete; false
    /// when the loop over the input is to stop.
    fn answer_h1(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) -> bool {
        // RFC 9112 §2.2: ignore an empty line before a request
        // line ("at least one"); more than one is not a request
        // line either, and gets 400, as lighttpd answers it.
        let lead = input
            .pending()
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        let lines = input.pending()[..lead]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        if lines > 1 {
            self.answer_error(400, b"", cx);
            self.linger = true;
            input.consume_all();
            self.phase = Phase::Writing {
                then: AfterWrite::Close,
            };
            return false;
        }
        input.consume(lead);
        if input.is_empty() {
            self.phase = self.idle_or_writing();
            return false;
        }
        if !self.answer_one(input, cx) {
            // An incomplete head stays buffered; answers queued before it go out first.
            if !self.out.is_empty() {
                self.phase = self.idle_or_writing();
            }
            return false;
        }
        true
    }

    /// Body bytes for the gateway exchange in progress: to its job.
    pub(super) fn feed_body(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) {
        let Some(job) = self.gw.as_ref().map(|g| g.start.job) else {
            if self.phase == Phase::ReadingBody {
                self.phase = Phase::Idle;
            }
            return;
        };
        let up = &mut cx.sv.upstream;
        if !up.takes_body(job) || input.is_empty() {
            return;
        }
        let now = cx.sv.clock.mono_secs;
        match up.feed(job, input.pending(), now, cx.registry) {
            Ok((used, done)) => {
                input.consume(used);
                if done && self.phase == Phase::ReadingBody {
                    // A collected chunked body is complete and on its way.
                    self.phase = Phase::Gateway;
                }
            }
            Err(status) => {
                if status == 413 {
                    log::warn!(
                        "a chunked request body for a backend is over its limit; answering 413"
                    );
                }
                input.consume_all();
                self.fail_gateway(status, cx);
            }
        }
    }

    /// `Writing` while answers are queued, else `Idle`.
    pub(super) fn idle_or_writing(&self) -> Phase {
        if self.out.is_empty() && self.encoded.is_none() {
            Phase::Idle
        } else {
            Phase::Writing {
                then: AfterWrite::NextRequest,
            }
        }
    }

    /// Parses and answers one request from `input`. Returns false when more
    /// bytes are needed.
    pub(super) fn answer_one(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) -> bool {
        let max_head = (cx.sv.config.global.max_request_field_size as usize).min(INPUT_BUF);
        let mut headers = [MaybeUninit::uninit(); MAX_HEADERS];
        let pending = input.pending();
        let (then, consumed) = match h1::parse_uninit(pending, &mut headers, max_head) {
            Ok(None) => {
                self.phase = Phase::ReadingHead;
                return false;
            }
            Err(e) => {
                log::debug!("bad request from {:?}: {}", self.peer, e.why);
                let line_end = pending.iter().position(|&b| b == b'\n').unwrap_or(0);
                let raw_line = &pending[..line_end.min(256)];
                self.answer_error(e.status, raw_line, cx);
                // The rest of a refused request may still be on its way.
                self.linger = true;
                (AfterWrite::Close, pending.len())
            }
            Ok(Some(req)) => match self.answer_request(&req, pending.len(), cx) {
                Answered::Head(n) => {
                    input.consume(n);
                    return true;
                }
                Answered::Write(then, n) => (then, n),
            },
        };
        input.consume(consumed);
        if then == AfterWrite::Close {
            // Whatever else the client sent will not be answered: drain it while closing.
            self.linger |= !input.is_empty();
            input.consume_all();
        }
        self.phase = Phase::Writing { then };
        true
    }

    /// Answers a parsed request (`pending` bytes buffered with its head):
    /// through the exchange, or as HTTP/2 after an h2c upgrade.
    fn answer_request(
        &mut self,
        req: &Request<'_, '_>,
        pending: usize,
        cx: &mut Ctx<'_>,
    ) -> Answered {
        self.requests += 1;
        if self.requests == 1 && self.upgrade_h2c(req, cx) {
            // Answered on stream 1; what follows the head is HTTP/2.
            return Answered::Head(req.head_len);
        }
        let keep_alive = self.keeps_alive(req, cx);
        let body_here = pending - req.head_len;
        let mut info = self.info(cx.sv);
        let outcome = exchange::respond(
            cx.sv,
            &mut info,
            req,
            keep_alive,
            &self.proxy_env,
            cx.registry,
        );
        let action = self.take_outcome(outcome, req, keep_alive, &info, cx);
        match action {
            BodyAction::Gateway => {
                // A chunked body is collected before a backend is
                // asked; any other goes to the backend as it arrives.
                // RFC 9110 10.1.1: no `100 Continue` for a body
                // that is here already (lighttpd sends none then).
                let continue_100 = wants_continue(req)
                    && !matches!(req.body, Body::Length(n) if body_here as u64 >= n);
                self.start_gateway_body(cx, continue_100);
                return Answered::Head(req.head_len);
            }
            BodyAction::Authorize => {
                // The authorizer gets the head alone; the body waits.
                self.phase = Phase::Gateway;
                return Answered::Head(req.head_len);
            }
            BodyAction::Discard | BodyAction::Close => {}
        }
        let (then, body_consumed) =
            skip_body(action, req.body, body_here, req.header("expect").is_some());
        let body_unread = match req.body {
            Body::None => false,
            Body::Length(n) => body_consumed as u64 != n,
            Body::Chunked => true,
        };
        // The connection's fate first, then whether closing must linger:
        // a body left unread under an answer that closes (`Connection:
        // close`, HTTP/1.0) would otherwise turn the close into a reset
        // that destroys the answer's last bytes, as `skip_unread_body` orders it.
        let then = if keep_alive && !cx.sv.reply.close {
            then
        } else {
            AfterWrite::Close
        };
        self.linger |= then == AfterWrite::Close && body_unread;
        Answered::Write(then, req.head_len + body_consumed)
    }

    /// Whether the connection stays open after this request's answer.
    /// Clients wait for a slot: this answer frees one for them. (Keeping
    /// connections alive for a turn of a second instead served 2,989 of
    /// 5,000 storm clients in 8 s, not all, and wrk saw 178 answers later
    /// than 2 s: the backlog stays full between turns, and the clients
    /// whose SYNs it drops back off.)
    fn keeps_alive(&mut self, req: &Request<'_, '_>, cx: &Ctx<'_>) -> bool {
        let keep_alive = req.keep_alive
            && !cx.sv.shutting_down
            && !cx.sv.accept_paused
            && self.requests < cx.sv.config.global.max_keep_alive_requests;
        if keep_alive && !self.nodelay {
            // A persistent connection: the last segment of a response must
            // not wait for the client's delayed ACK.
            self.stream.set_nodelay();
            self.nodelay = true;
        }
        keep_alive
    }

    /// Writes an exchange's outcome: glint's reply now (and its log line),
    /// or the gateway exchange's start. Returns what becomes of the body.
    pub(super) fn take_outcome(
        &mut self,
        outcome: Outcome,
        req: &Request<'_, '_>,
        keep_alive: bool,
        info: &ConnInfo,
        cx: &mut Ctx<'_>,
    ) -> BodyAction {
        match outcome {
            Outcome::Reply { action, orig_line } => {
                self.prepare_output(cx.pool);
                let sv = &mut *cx.sv;
                let head = match sv.reply.encode {
                    Some(coding) => self.write_encoded_head(sv, coding, keep_alive, req.minor),
                    None => {
                        let keep = keep_alive && !sv.reply.close;
                        h1::write_reply(
                            &mut self.out,
                            &sv.reply,
                            &sv.clock.http_date,
                            keep,
                            req.minor,
                        )
                    }
                };
                let head_bytes = head as u64;
                match self.encoded.as_mut() {
                    // Logged when its body is out, with the bytes sent.
                    Some(enc) => {
                        enc.log = exchange::defer_reply(sv, req, orig_line.as_deref(), head_bytes)
                    }
                    None => exchange::log_reply(sv, info, req, orig_line.as_deref(), head_bytes),
                }
                action
            }
            Outcome::Gateway(start) => {
                let authorizer = start.authorizer;
                self.prepare_output(cx.pool);
                self.gw = Some(Box::new(GwSide::new(*start)));
                if authorizer {
                    BodyAction::Authorize
                } else {
                    BodyAction::Gateway
                }
            }
        }
    }

    /// The head of a reply whose body is compressed as it is sent: chunked
    /// on HTTP/1.1, close-delimited on HTTP/1.0 (the connection then
    /// closes after it); the body goes to [`Connection::encoded`].
    fn write_encoded_head(
        &mut self,
        sv: &mut exchange::Services,
        coding: crate::compress::Coding,
        keep_alive: bool,
        minor: u8,
    ) -> usize {
        let r = &mut sv.reply;
        let body = !r.head_only && !r.pieces().is_empty();
        let encoded = if body {
            match super::encoded::Encoded::of_reply(r, coding, minor >= 1) {
                Some(e) => Some(e),
                None => {
                    // The head is not written yet: an error page instead.
                    exchange::error_reply(sv, 500);
                    return h1::write_reply(
                        &mut self.out,
                        &sv.reply,
                        &sv.clock.http_date,
                        false,
                        minor,
                    );
                }
            }
        } else {
            None
        };
        let r = &mut sv.reply;
        if body && minor == 0 {
            r.close = true;
        }
        let framing = if body && minor >= 1 {
            h1::Framing::Chunked
        } else {
            h1::Framing::None
        };
        let head = h1::Head {
            status: r.status,
            fields: h1::Fields::Lines(&r.fields),
            framing,
            settings: &r.settings,
            date: &sv.clock.http_date,
            keep_alive: keep_alive && !r.close,
            minor,
        };
        let n = h1::write_head(&mut self.out, &head);
        self.encoded = encoded.map(Box::new);
        n
    }

    /// Answers a request that could not be parsed (or whose body broke):
    /// an error page, logged with the start of its raw line.
    pub(super) fn answer_error(&mut self, status: u16, raw_line: &[u8], cx: &mut Ctx<'_>) {
        self.prepare_output(cx.pool);
        exchange::error_reply(cx.sv, status);
        let sv = &mut *cx.sv;
        h1::write_reply(&mut self.out, &sv.reply, &sv.clock.http_date, false, 1);
        let info = self.info(cx.sv);
        exchange::log_error(cx.sv, &info, raw_line);
    }

    /// For a response that did not use the request's body, still unread
    /// behind the head: drops what of it is buffered, says what follows.
    pub(super) fn skip_unread_body(
        &mut self,
        action: BodyAction,
        body: Body,
        expect: bool,
        keep_alive: bool,
    ) -> AfterWrite {
        let buffered = self.input.as_ref().map_or(0, |i| i.pending().len());
        let (then, used) = skip_body(action, body, buffered, expect);
        let then = if keep_alive { then } else { AfterWrite::Close };
        if let Some(input) = self.input.as_mut() {
            input.consume(used);
            if then == AfterWrite::Close {
                // Whatever else the client sent will not be answered: drain it while closing.
                self.linger |= !input.is_empty();
                input.consume_all();
            }
        }
        let unread = match body {
            Body::None => false,
            Body::Length(n) => used as u64 != n,
            Body::Chunked => true,
        };
        self.linger |= then == AfterWrite::Close && unread;
        then
    }
}
