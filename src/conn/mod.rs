//! One client connection: its socket, its HTTP/1 session (a state enum,
//! named for what it waits for), its input buffer and output queue, and the
//! one function that drives it after a readiness event. It returns to the
//! loop only whether it is done ([`Connection::is_closed`]) and what
//! readiness it needs.
//!
//! The socket is registered for reads (edge-triggered), and for writes too
//! once a write has blocked; the connection remembers which directions are
//! ready (`readable`, `writable`) and acts only on what its phase needs, so a
//! spurious event costs nothing.

mod gateway;

use std::io;
use std::net::{IpAddr, SocketAddr};

use mio::Registry;

use crate::buf::{InBuf, Pool, INPUT_BUF};
use crate::exchange::{self, BodyAction, ConnInfo, Outcome, Services};
use crate::msg::{Body, ExchangeId, Request, MAX_HEADERS};
use crate::net::Stream;
use crate::output::{Output, WriteError, WriteOutcome};
use crate::proto::h1;
use gateway::{ClientSink, GwSide, CLIENT_LOW_WATER};

/// What a connection needs besides itself: the services every exchange
/// shares, the buffer pool, and the poll registry (backend sockets).
pub struct Ctx<'a> {
    pub sv: &'a mut Services,
    pub pool: &'a mut Pool,
    pub registry: &'a Registry,
}

/// Keep at most this many responses' bytes queued from pipelined requests
/// before writing them out; bounds what one client can make glint buffer.
const PIPELINE_HIGH_WATER: usize = 64 * 1024;

/// Answer pipelined requests ahead only while fewer files than this are
/// queued: each queued file holds a descriptor, and without a bound one
/// client pipelining requests for large files held hundreds.
const PIPELINE_MAX_FILES: usize = 4;

/// Bodies of requests glint does not need (a GET with a body, a POST to a
/// file) are read and dropped up to this size, so the connection can be kept;
/// beyond it the connection is closed after the response.
const MAX_DISCARD: u64 = 16 * 1024 * 1024;

/// How long a closing connection keeps reading what the client still sends,
/// so that closing does not reset the connection under the last response.
const LINGER_SECS: u64 = 2;

/// Most rounds of an upload (the client fills the body window, the backend
/// drains it) per drive: 16 windows of 64 KiB, 1 MiB, before others get a turn.
const PUMP_ROUNDS: usize = 16;

/// The client asked for `100 Continue` before a body it has yet to send.
fn wants_continue(req: &Request<'_, '_>) -> bool {
    req.minor >= 1
        && !matches!(req.body, Body::None | Body::Length(0))
        && req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"))
}

/// What the connection is waiting for, in processing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No request in progress: a new connection, or keep-alive between requests.
    Idle,
    /// Part of a request head has arrived.
    ReadingHead,
    /// Reading and dropping the rest of a request body already answered.
    DiscardingBody { remaining: u64 },
    /// Collecting a chunked request body for a backend (see `gw`): the
    /// backend needs its length first.
    ReadingBody,
    /// Waiting for a backend, streaming a `Content-Length` body to it as
    /// the window allows, and passing its answer on (see `gw`).
    Gateway,
    /// Writing queued responses; `then` says what follows.
    Writing { then: AfterWrite },
    /// Response sent, write side shut: reading what the client still sends until it closes.
    Lingering { until: u64 },
    /// Finished: the server drops the connection.
    Closed,
}

/// What one [`Connection::flush`] achieved.
enum Flushed {
    /// Everything queued is written.
    Done,
    /// The socket is full (or not yet known writable): wait for an event.
    Blocked,
    /// The write failed and the connection is closed.
    Closed,
}

/// What follows once the output queue is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterWrite {
    /// Keep-alive: parse what is buffered or wait for the next request.
    NextRequest,
    /// Drop the rest of the body, then the next request.
    DiscardBody(u64),
    /// Close: at once when all input was consumed, else by lingering.
    Close,
}

impl Phase {
    /// Does this phase read from the socket?
    fn reads(self) -> bool {
        matches!(
            self,
            Phase::Idle
                | Phase::ReadingHead
                | Phase::DiscardingBody { .. }
                | Phase::ReadingBody
                | Phase::Lingering { .. }
        )
    }
}

/// For a response that did not use the request's body: how many of the
/// `buffered` bytes behind the head are body to drop now, and what follows
/// the response (dropping the rest, or closing when it is chunked, too large,
/// or the client waits for `100 Continue` before sending it).
fn skip_body(action: BodyAction, body: Body, buffered: usize, expect: bool) -> (AfterWrite, usize) {
    match (action, body) {
        (BodyAction::Discard, Body::None) => (AfterWrite::NextRequest, 0),
        (BodyAction::Discard, Body::Length(n)) => {
            let here = (buffered as u64).min(n);
            let rest = n - here;
            let then = if rest == 0 {
                AfterWrite::NextRequest
            } else if rest <= MAX_DISCARD && !expect {
                AfterWrite::DiscardBody(rest)
            } else {
                AfterWrite::Close
            };
            (then, here as usize)
        }
        _ => (AfterWrite::Close, 0),
    }
}

/// One client connection.
#[derive(Debug)]
pub struct Connection {
    pub stream: Stream,
    /// Index of the listener that accepted it.
    pub listener: usize,
    pub peer: Option<IpAddr>,
    /// The client's port (0 on a unix socket), for `REMOTE_PORT`.
    pub peer_port: u16,
    /// Its slot in the server and the generation of this connection there.
    pub id: ExchangeId,
    pub phase: Phase,
    /// Input, present while a request is in progress; pooled while idle.
    input: Option<InBuf>,
    pub out: Output,
    /// The socket has (or may have) bytes to read / room to write.
    readable: bool,
    writable: bool,
    /// The peer closed its side: a short read no longer means "drained", the
    /// end of stream is still to be read (no new edge will announce it).
    peer_closed: bool,
    /// Requests answered on this connection.
    pub requests: u32,
    /// `clock.mono_secs` of the last progress, for the idle time-outs.
    pub last_active: u64,
    nodelay: bool,
    /// Closing must drain what the client may still send (see [`Connection::finish`]).
    linger: bool,
    /// The gateway exchange in progress, from its head to the end of the answer.
    gw: Option<Box<GwSide>>,
    /// The address the client connected to, asked once (for `SERVER_ADDR`).
    local_ip: Option<Option<IpAddr>>,
    /// Registered with epoll (only once the connection has had to wait).
    pub registered: bool,
    /// Registered for writability too (only once a write has blocked).
    pub watches_writes: bool,
    /// Stopped at [`PUMP_ROUNDS`] with body bytes still moving: no new edge
    /// will come for them, so the loop drives it again next turn.
    more: bool,
}

impl Connection {
    pub fn new(
        stream: Stream,
        listener: usize,
        peer: Option<SocketAddr>,
        id: ExchangeId,
        now: u64,
    ) -> Connection {
        Connection {
            stream,
            listener,
            peer: peer.map(|a| a.ip()),
            peer_port: peer.map_or(0, |a| a.port()),
            id,
            phase: Phase::Idle,
            input: None,
            out: Output::default(),
            // Try at once: a freshly accepted socket usually has its request
            // (TCP_DEFER_ACCEPT) and always has room to write.
            readable: true,
            writable: true,
            peer_closed: false,
            requests: 0,
            last_active: now,
            nodelay: false,
            linger: false,
            gw: None,
            local_ip: None,
            registered: false,
            watches_writes: false,
            more: false,
        }
    }

    /// Whether the loop should drive it again next turn without an event
    /// (and forgets it was asked).
    pub fn take_more(&mut self) -> bool {
        std::mem::take(&mut self.more)
    }

    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Idle between requests after at least one (a graceful shutdown closes these).
    pub fn is_idle_kept(&self) -> bool {
        self.phase == Phase::Idle && self.requests > 0
    }

    /// A write blocked: the socket's writability must be watched.
    pub fn waits_to_write(&self) -> bool {
        !self.writable
    }

    /// Records readiness from an event.
    pub fn on_event(&mut self, ev: &mio::event::Event) {
        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
            self.readable = true;
        }
        if ev.is_read_closed() || ev.is_error() {
            self.peer_closed = true;
        }
        if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
            self.writable = true;
        }
    }

    /// What the exchanges of this connection know of it.
    fn info(&mut self, sv: &Services) -> ConnInfo {
        // Asked only where a backend may need it: a listener bound to all
        // addresses, and gateways configured.
        let local_ip = match self.local_ip {
            Some(ip) => ip,
            None if sv.bound_ips.get(self.listener).copied().flatten().is_none()
                && !sv.upstream.is_empty() =>
            {
                let ip = self.stream.local_addr().map(|a| a.ip());
                self.local_ip = Some(ip);
                ip
            }
            None => None,
        };
        ConnInfo {
            listener: self.listener,
            peer: self.peer,
            peer_port: self.peer_port,
            local_ip,
            ex: self.id,
        }
    }

    /// Makes whatever progress the readiness allows.
    pub fn drive(&mut self, cx: &mut Ctx<'_>) {
        let mut rounds = 0;
        loop {
            match self.phase {
                Phase::Closed => break,
                Phase::Writing { then } => match self.flush(cx) {
                    Flushed::Done => self.after_write(then, cx),
                    Flushed::Blocked => break,
                    Flushed::Closed => {}
                },
                Phase::Gateway => {
                    rounds += 1;
                    if rounds > PUMP_ROUNDS {
                        self.more = true;
                        break;
                    }
                    if !self.drive_gateway(cx) {
                        break;
                    }
                }
                phase if phase.reads() => {
                    if phase == Phase::ReadingBody && !self.out.is_empty() {
                        // A `100 Continue` the client waits for before its body.
                        if let Flushed::Closed = self.flush(cx) {
                            continue;
                        }
                    }
                    if !self.readable {
                        break;
                    }
                    self.read_some(cx);
                }
                _ => break,
            }
        }
        if self.phase == Phase::Idle || self.phase == Phase::Closed {
            self.release_buffers(cx.pool);
        }
    }

    /// One step of a gateway exchange; false when it has to wait.
    fn drive_gateway(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some(gw) = self.gw.as_ref() else {
            self.phase = Phase::Idle;
            return true;
        };
        // A client that hung up before its answer began is not worth a
        // backend's time: drop it (and its place in the queue) now, not
        // when the answer finally comes.
        if self.peer_closed && !gw.head_sent() {
            log::debug!("client {:?} left before its backend answered", self.peer);
            self.close(cx);
            return true;
        }
        let job = gw.start.job;
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

    /// Writes queued output while the socket takes it. A write error closes
    /// the connection (logged unless the peer simply went away).
    fn flush(&mut self, cx: &mut Ctx<'_>) -> Flushed {
        if !self.writable {
            return Flushed::Blocked;
        }
        let result = self.out.write_to(self.stream.fd());
        let n = self.out.take_written();
        if n > 0 {
            cx.sv.stats.bytes_out += n;
            self.last_active = cx.sv.clock.mono_secs;
        }
        match result {
            Ok(WriteOutcome::Done) => Flushed::Done,
            Ok(WriteOutcome::Blocked) => {
                self.writable = false;
                Flushed::Blocked
            }
            Err(e) => {
                match e {
                    WriteError::PeerGone => {}
                    WriteError::FileTruncated => {
                        log::warn!("a file shrank while it was being sent; connection closed")
                    }
                    WriteError::Io(e) => log::warn!("write to client failed: {e}"),
                }
                self.close(cx);
                Flushed::Closed
            }
        }
    }

    /// One read from the socket, then whatever the bytes allow.
    fn read_some(&mut self, cx: &mut Ctx<'_>) {
        let input = self.input.get_or_insert_with(|| cx.pool.take_in());
        let spare = input.spare();
        if spare.is_empty() {
            // A full buffer that does not parse was refused by the parser already;
            // this is a lingering or discarding connection: drop what is there.
            input.consume_all();
            return;
        }
        let want = spare.len();
        match self.stream.read(spare) {
            Ok(0) => {
                // The client closed its side. A request in progress cannot complete.
                self.readable = false;
                self.close(cx);
            }
            Ok(n) => {
                // A short read drained the socket: the next bytes bring a new event.
                if n < want && !self.peer_closed {
                    self.readable = false;
                }
                input.filled(n);
                // A head must be complete within max-read-idle of its first
                // byte: bytes that trickle in (slowloris) do not extend it.
                if self.phase != Phase::ReadingHead {
                    self.last_active = cx.sv.clock.mono_secs;
                }
                self.on_input(cx);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.close(cx),
        }
    }

    /// Consumes buffered input according to the phase: drops body bytes,
    /// feeds them to a backend, parses and answers requests (several when
    /// pipelined).
    fn on_input(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut input) = self.input.take() else {
            return;
        };
        loop {
            match self.phase {
                Phase::Lingering { .. } => {
                    input.consume_all();
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
                    // RFC 9112 §2.2: ignore empty lines before a request line.
                    let lead = input
                        .pending()
                        .iter()
                        .take_while(|&&b| b == b'\r' || b == b'\n')
                        .count();
                    input.consume(lead);
                    if input.is_empty() {
                        self.phase = self.idle_or_writing();
                        break;
                    }
                    if !self.answer_one(&mut input, cx) {
                        // An incomplete head stays buffered; answers queued before it go out first.
                        if !self.out.is_empty() {
                            self.phase = self.idle_or_writing();
                        }
                        break;
                    }
                }
                Phase::Writing {
                    then: AfterWrite::NextRequest,
                } if self.out.pending_mem() < PIPELINE_HIGH_WATER
                    && self.out.pending_files() < PIPELINE_MAX_FILES
                    && !input.is_empty() =>
                {
                    // Pipelined: answer the next request into the same queue.
                    self.phase = Phase::Idle;
                }
                _ => break,
            }
        }
        self.input = Some(input);
    }

    /// Body bytes for the gateway exchange in progress: to its job.
    fn feed_body(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) {
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

    /// The gateway exchange ends with `status` before its answer began
    /// (the body is unusable): an error page, and the connection closes.
    fn fail_gateway(&mut self, status: u16, cx: &mut Ctx<'_>) {
        if let Some(gw) = self.gw.take() {
            cx.sv.upstream.finish(gw.start.job);
        }
        self.answer_error(status, b"", cx);
        self.linger = true;
        self.phase = Phase::Writing {
            then: AfterWrite::Close,
        };
    }

    /// `Writing` while answers are queued, else `Idle`.
    fn idle_or_writing(&self) -> Phase {
        if self.out.is_empty() {
            Phase::Idle
        } else {
            Phase::Writing {
                then: AfterWrite::NextRequest,
            }
        }
    }

    /// Parses and answers one request from `input`. Returns false when more
    /// bytes are needed.
    fn answer_one(&mut self, input: &mut InBuf, cx: &mut Ctx<'_>) -> bool {
        let max_head = (cx.sv.config.global.max_request_field_size as usize).min(INPUT_BUF);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let pending = input.pending();
        let (then, consumed) = match h1::parse(pending, &mut headers, max_head) {
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
            Ok(Some(req)) => {
                self.requests += 1;
                let keep_alive = req.keep_alive
                    && !cx.sv.shutting_down
                    && self.requests < cx.sv.config.global.max_keep_alive_requests;
                if keep_alive && !self.nodelay {
                    // A persistent connection: the last segment of a response must
                    // not wait for the client's delayed ACK.
                    self.stream.set_nodelay();
                    self.nodelay = true;
                }
                let body_here = pending.len() - req.head_len;
                let info = self.info(cx.sv);
                let outcome = exchange::respond(cx.sv, &info, &req, keep_alive, cx.registry);
                let action = self.take_outcome(outcome, &req, keep_alive, &info, cx);
                match action {
                    BodyAction::Gateway => {
                        // A chunked body is collected before a backend is
                        // asked; any other goes to the backend as it arrives.
                        let continue_100 = wants_continue(&req);
                        input.consume(req.head_len);
                        self.start_gateway_body(cx, continue_100);
                        return true;
                    }
                    BodyAction::Authorize => {
                        // The authorizer gets the head alone; the body waits.
                        input.consume(req.head_len);
                        self.phase = Phase::Gateway;
                        return true;
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
                self.linger |= then == AfterWrite::Close && body_unread;
                let keep = keep_alive && !cx.sv.reply.close;
                if keep {
                    (then, req.head_len + body_consumed)
                } else {
                    (AfterWrite::Close, req.head_len + body_consumed)
                }
            }
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

    /// Writes an exchange's outcome: glint's reply now (and its log line),
    /// or the gateway exchange's start. Returns what becomes of the body.
    fn take_outcome(
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
                let keep = keep_alive && !sv.reply.close;
                let head = h1::write_reply(
                    &mut self.out,
                    &sv.reply,
                    &sv.clock.http_date,
                    keep,
                    req.minor,
                );
                let head_bytes = head as u64;
                exchange::log_reply(sv, info, req, orig_line.as_deref(), head_bytes);
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

    /// Answers a request that could not be parsed (or whose body broke):
    /// an error page, logged with the start of its raw line.
    fn answer_error(&mut self, status: u16, raw_line: &[u8], cx: &mut Ctx<'_>) {
        self.prepare_output(cx.pool);
        exchange::error_reply(cx.sv, status);
        let sv = &mut *cx.sv;
        h1::write_reply(&mut self.out, &sv.reply, &sv.clock.http_date, false, 1);
        let info = self.info(cx.sv);
        exchange::log_error(cx.sv, &info, raw_line);
    }

    /// The backend's answer has been written: log it, and say what follows.
    fn end_gateway(&mut self, cx: &mut Ctx<'_>) -> AfterWrite {
        let Some(gw) = self.gw.take() else {
            return AfterWrite::Close;
        };
        let info = self.info(cx.sv);
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
    fn rerun(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut gw) = self.gw.take() else { return };
        let Some(why) = gw.rerun.take() else { return };
        // A backend that redirected before the whole body came: the rest of
        // it is still on its way, and must not be read as a new request.
        let leftover = cx.sv.upstream.finish(gw.start.job).body_remaining > 0;
        let keep_alive = gw.start.keep_alive && !cx.sv.shutting_down && !leftover;
        let minor = gw.start.minor;
        let info = self.info(cx.sv);
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

    /// For a response that did not use the request's body, still unread
    /// behind the head: drops what of it is buffered, says what follows.
    fn skip_unread_body(
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

    /// The head of a gateway request was taken: its body (if any) follows,
    /// collected first when chunked, else streamed to the backend as it comes.
    fn start_gateway_body(&mut self, cx: &mut Ctx<'_>, continue_100: bool) {
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
    fn pump(&mut self, cx: &mut Ctx<'_>) {
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

    fn with_sink(&mut self, cx: &mut Ctx<'_>, f: impl for<'s> FnOnce(&mut ClientSink<'s>)) {
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

    fn after_write(&mut self, then: AfterWrite, cx: &mut Ctx<'_>) {
        match then {
            AfterWrite::NextRequest if cx.sv.shutting_down => self.finish(cx),
            AfterWrite::NextRequest => {
                self.phase = Phase::Idle;
                if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
                    self.on_input(cx);
                }
            }
            AfterWrite::DiscardBody(remaining) => {
                self.phase = Phase::DiscardingBody { remaining };
                if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
                    self.on_input(cx);
                }
            }
            AfterWrite::Close => self.finish(cx),
        }
    }

    /// Ends a connection whose last response is written. When the client may
    /// still be sending, shut the write side and read until it closes, so
    /// that unread bytes do not turn the close into a reset that destroys the
    /// response in flight.
    fn finish(&mut self, cx: &mut Ctx<'_>) {
        if self.linger {
            self.stream.shutdown_write();
            self.phase = Phase::Lingering {
                until: cx.sv.clock.mono_secs + LINGER_SECS,
            };
        } else {
            self.close(cx);
        }
    }

    /// Drops the connection at once (and its gateway exchange, if any).
    pub fn close(&mut self, cx: &mut Ctx<'_>) {
        self.phase = Phase::Closed;
        self.out.clear();
        if let Some(gw) = self.gw.take() {
            cx.sv.upstream.finish(gw.start.job);
        }
        self.release_buffers(cx.pool);
    }

    /// Returns buffers to the pool while nothing is buffered.
    fn release_buffers(&mut self, pool: &mut Pool) {
        if self.input.as_ref().is_some_and(|i| i.is_empty()) || self.phase == Phase::Closed {
            if let Some(b) = self.input.take() {
                // A closed connection may leave unparsed bytes behind: the
                // pool empties the buffer before the next connection takes it.
                pool.put_in(b);
            }
        }
        if self.out.is_empty() && self.out.mem.capacity() > 0 {
            pool.put_out(self.out.take_buffer());
        }
    }

    /// Gives the output queue a pooled buffer before a response is written.
    fn prepare_output(&mut self, pool: &mut Pool) {
        if self.out.mem.capacity() == 0 {
            self.out.mem = pool.take_out();
        }
    }

    /// Called once a second: closes the connection when it has been idle too long.
    pub fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let g = &cx.sv.config.global;
        let now = cx.sv.clock.mono_secs;
        let reads_body = self
            .gw
            .as_ref()
            .is_some_and(|gw| cx.sv.upstream.takes_body(gw.start.job));
        let limit = match self.phase {
            Phase::Idle if self.requests == 0 => g.max_read_idle as u64,
            Phase::Idle => g.max_keep_alive_idle as u64,
            Phase::ReadingHead | Phase::DiscardingBody { .. } | Phase::ReadingBody => {
                g.max_read_idle as u64
            }
            // Body bytes are due from the client: its read time-out.
            Phase::Gateway if reads_body => g.max_read_idle as u64,
            // Waiting on the backend, whose time-outs apply: the client is
            // idle through no fault of its own.
            Phase::Gateway if self.out.is_empty() => {
                self.last_active = now;
                return;
            }
            // Only a client that stopped reading its answer is ours.
            Phase::Gateway => g.max_write_idle as u64,
            Phase::Writing { .. } => g.max_write_idle as u64,
            Phase::Lingering { until } => {
                if now >= until {
                    self.close(cx);
                }
                return;
            }
            Phase::Closed => return,
        };
        if now.saturating_sub(self.last_active) >= limit {
            log::debug!(
                "closing idle connection from {:?} in {:?}",
                self.peer,
                self.phase
            );
            self.close(cx);
        }
    }
}
