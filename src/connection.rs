//! One client connection: a state enum, its buffers, and the function that
//! drives it after a readiness event.
//!
//! The socket is registered for reads (edge-triggered), and for writes too
//! once a write has blocked; the connection remembers which directions are
//! ready (`readable`, `writable`) and acts only on what its phase needs, so a
//! spurious event costs nothing.

use std::io::{self, Read};
use std::net::{IpAddr, Shutdown, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};

use mio::event::Source;
use mio::{Interest, Registry, Token};

use crate::handler::{respond, BodyAction};
use crate::http::request::{self, Body, MAX_HEADERS};
use crate::output::{Output, WriteError, WriteOutcome};
use crate::server::Shared;

/// Size of a connection's input buffer: a whole request head
/// (`server.max-request-field-size`, 8 KiB by default) plus room for
/// pipelined requests behind it.
pub const INPUT_BUF: usize = 16 * 1024;

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

/// The client asked for `100 Continue` before a body it has yet to send.
fn wants_continue(req: &crate::http::request::Request<'_, '_>) -> bool {
    req.minor >= 1
        && !matches!(req.body, Body::None | Body::Length(0))
        && req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"))
}

/// How long a closing connection keeps reading what the client still sends,
/// so that closing does not reset the connection under the last response.
const LINGER_SECS: u64 = 2;

/// A client socket.
#[derive(Debug)]
pub enum Stream {
    Tcp(mio::net::TcpStream),
    Unix(mio::net::UnixStream),
}

impl Stream {
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    /// The address the client connected to (`SERVER_ADDR`); None on a unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Stream::Tcp(s) => s.local_addr().ok(),
            Stream::Unix(_) => None,
        }
    }

    /// The pending socket error (SO_ERROR), e.g. of a non-blocking connect.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Stream::Tcp(s) => s.take_error(),
            Stream::Unix(s) => s.take_error(),
        }
    }

    fn shutdown_write(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }

    fn set_nodelay(&self) {
        if let Stream::Tcp(s) = self {
            let _ = s.set_nodelay(true);
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Unix(s) => s.register(r, t, i),
        }
    }
    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Unix(s) => s.reregister(r, t, i),
        }
    }
    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(r),
            Stream::Unix(s) => s.deregister(r),
        }
    }
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

/// An input buffer: `data[start..end]` holds unconsumed bytes.
#[derive(Debug)]
pub struct InBuf {
    data: Box<[u8]>,
    start: usize,
    end: usize,
}

impl InBuf {
    pub fn new() -> InBuf {
        InBuf {
            data: vec![0u8; INPUT_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    fn pending(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Free space at the end, moving pending bytes to the front when that helps.
    fn spare(&mut self) -> &mut [u8] {
        if self.end == self.data.len() && self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.data[self.end..]
    }

    fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Forgets any unconsumed bytes (before the buffer goes back to the pool).
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }
}

impl Default for InBuf {
    fn default() -> Self {
        Self::new()
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
    /// The gateway request in progress, from its head to the end of the answer.
    pub gw: Option<Box<crate::gateway::GwClient>>,
    /// Registered with epoll (only once the connection has had to wait).
    pub registered: bool,
    /// Registered for writability too (only once a write has blocked).
    pub watches_writes: bool,
}

impl Connection {
    pub fn new(stream: Stream, listener: usize, peer: Option<SocketAddr>, now: u64) -> Connection {
        Connection {
            stream,
            listener,
            peer: peer.map(|a| a.ip()),
            peer_port: peer.map_or(0, |a| a.port()),
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
            registered: false,
            watches_writes: false,
        }
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

    /// Makes whatever progress the readiness allows.
    pub fn drive(&mut self, sh: &mut Shared) {
        loop {
            match self.phase {
                Phase::Closed => break,
                Phase::Writing { then } => match self.flush(sh) {
                    Flushed::Done => self.after_write(then, sh),
                    Flushed::Blocked => break,
                    Flushed::Closed => {}
                },
                Phase::Gateway => {
                    // A client that hung up before its answer began is not
                    // worth a backend's time: drop it (and its place in the
                    // queue) now, not when the answer finally comes.
                    let answered = self.gw.as_ref().is_some_and(|g| g.head_sent);
                    if self.peer_closed && !answered {
                        log::debug!("client {:?} left before its backend answered", self.peer);
                        self.close(sh);
                        continue;
                    }
                    if !self.out.is_empty() {
                        match self.flush(sh) {
                            Flushed::Done => {}
                            Flushed::Blocked if self.reads_body() => {}
                            Flushed::Blocked => break,
                            Flushed::Closed => continue,
                        }
                    }
                    // An answer to run again (an authorizer's 200, a local
                    // redirect) does not wait for the rest of the body.
                    let rerun = self
                        .gw
                        .as_ref()
                        .is_some_and(|g| g.done && g.rerun.is_some());
                    if rerun && self.out.is_empty() {
                        self.rerun(sh);
                        continue;
                    }
                    if self.reads_body() {
                        // Body bytes already buffered go first; the socket is
                        // read only once they are taken, and only while the
                        // window has room, so a full window leaves `readable`
                        // set for when the backend drains it.
                        if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
                            self.on_input(sh);
                        } else if self.readable {
                            self.read_some(sh);
                        } else {
                            break;
                        }
                        continue;
                    }
                    let done = self.gw.as_ref().is_none_or(|g| g.done);
                    if !(done && self.out.is_empty()) {
                        break;
                    }
                    let then = self.end_gateway(sh);
                    self.after_write(then, sh);
                }
                phase if phase.reads() => {
                    if phase == Phase::ReadingBody && !self.out.is_empty() {
                        // A `100 Continue` the client waits for before its body.
                        if let Flushed::Closed = self.flush(sh) {
                            continue;
                        }
                    }
                    if !self.readable {
                        break;
                    }
                    self.read_some(sh);
                }
                _ => break,
            }
        }
        if self.phase == Phase::Idle || self.phase == Phase::Closed {
            self.release_buffers(sh);
        }
    }

    /// Writes queued output while the socket takes it. A write error closes
    /// the connection (logged unless the peer simply went away).
    /// A write blocked: the socket's writability must be watched.
    pub fn waits_to_write(&self) -> bool {
        !self.writable
    }

    fn flush(&mut self, sh: &mut Shared) -> Flushed {
        if !self.writable {
            return Flushed::Blocked;
        }
        let result = self.out.write_to(self.stream.fd());
        self.account_written(sh);
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
                self.close(sh);
                Flushed::Closed
            }
        }
    }

    fn account_written(&mut self, sh: &mut Shared) {
        let n = self.out.take_written();
        if n > 0 {
            sh.stats.bytes_out += n;
            self.last_active = sh.clock.mono_secs;
        }
    }

    /// One read from the socket, then whatever the bytes allow.
    fn read_some(&mut self, sh: &mut Shared) {
        let input = self.input.get_or_insert_with(|| sh.pool.take_in());
        let spare = input.spare();
        if spare.is_empty() {
            // A full buffer that does not parse was refused by the parser already;
            // this is a lingering or discarding connection: drop what is there.
            input.start = 0;
            input.end = 0;
            return;
        }
        let want = spare.len();
        match self.stream.read(spare) {
            Ok(0) => {
                // The client closed its side. A request in progress cannot complete.
                self.readable = false;
                self.close(sh);
            }
            Ok(n) => {
                // A short read drained the socket: the next bytes bring a new event.
                if n < want && !self.peer_closed {
                    self.readable = false;
                }
                input.end += n;
                // A head must be complete within max-read-idle of its first
                // byte: bytes that trickle in (slowloris) do not extend it.
                if self.phase != Phase::ReadingHead {
                    self.last_active = sh.clock.mono_secs;
                }
                self.on_input(sh);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.close(sh),
        }
    }

    /// Consumes buffered input according to the phase: drops body bytes,
    /// parses and answers requests (several when pipelined).
    fn on_input(&mut self, sh: &mut Shared) {
        let Some(mut input) = self.input.take() else {
            return;
        };
        loop {
            match self.phase {
                Phase::Lingering { .. } => {
                    input.consume(input.pending().len());
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
                    let Some(gw) = self.gw.as_mut() else {
                        if self.phase == Phase::ReadingBody {
                            self.phase = Phase::Idle;
                            continue;
                        }
                        break;
                    };
                    if !gw.takes_body() || input.is_empty() {
                        break;
                    }
                    match gw.feed(input.pending()) {
                        Ok((used, done)) => {
                            input.consume(used);
                            if done {
                                // A collected chunked body is complete: now a backend.
                                self.phase = Phase::Gateway;
                            }
                            break;
                        }
                        Err(status) => {
                            if status == 413 {
                                log::warn!(
                                    "a chunked request body for a backend is over {} bytes; answering 413",
                                    gw.upload.received
                                );
                            }
                            input.consume(input.pending().len());
                            self.gw = None;
                            crate::handler::respond_error(self, sh, status, b"");
                            self.linger = true;
                            self.phase = Phase::Writing {
                                then: AfterWrite::Close,
                            };
                            break;
                        }
                    }
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
                    if !self.answer_one(&mut input, sh) {
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
    fn answer_one(&mut self, input: &mut InBuf, sh: &mut Shared) -> bool {
        let max_head = (sh.config.global.max_request_field_size as usize).min(INPUT_BUF);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let pending = input.pending();
        let (then, consumed) = match request::parse(pending, &mut headers, max_head) {
            Ok(None) => {
                self.phase = Phase::ReadingHead;
                return false;
            }
            Err(e) => {
                log::debug!("bad request from {:?}: {}", self.peer, e.why);
                let line_end = pending.iter().position(|&b| b == b'\n').unwrap_or(0);
                let raw_line = &pending[..line_end.min(256)];
                crate::handler::respond_error(self, sh, e.status, raw_line);
                // The rest of a refused request may still be on its way.
                self.linger = true;
                (AfterWrite::Close, pending.len())
            }
            Ok(Some(req)) => {
                self.requests += 1;
                let keep_alive = req.keep_alive
                    && !sh.shutting_down
                    && self.requests < sh.config.global.max_keep_alive_requests;
                if keep_alive && !self.nodelay {
                    // A persistent connection: the last segment of a response must
                    // not wait for the client's delayed ACK.
                    self.stream.set_nodelay();
                    self.nodelay = true;
                }
                let body_here = pending.len() - req.head_len;
                let action = respond(self, sh, &req, keep_alive);
                match action {
                    BodyAction::Gateway => {
                        // A chunked body is collected before a backend is
                        // asked; any other goes to the backend as it arrives.
                        let continue_100 = wants_continue(&req);
                        input.consume(req.head_len);
                        self.start_gateway_body(sh, continue_100);
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
                if keep_alive {
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
            let n = input.pending().len();
            input.consume(n);
        }
        self.phase = Phase::Writing { then };
        true
    }

    /// The backend's answer has been written: log it, and say what follows.
    fn end_gateway(&mut self, sh: &mut Shared) -> AfterWrite {
        let Some(gw) = self.gw.take() else {
            return AfterWrite::Close;
        };
        crate::handler::log_gateway(self, sh, &gw);
        let keep_alive = gw.keep_alive && !sh.shutting_down;
        if gw.authorizer {
            // The authorizer's answer (a refusal, or an error page) went to
            // the client instead of the request's: its body is still unread.
            let (body, expect) = crate::handler::unread_body(&gw);
            return self.skip_unread_body(BodyAction::Discard, body, expect, keep_alive);
        }
        let rest = gw.upload.remaining();
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
    fn rerun(&mut self, sh: &mut Shared) {
        let Some(gw) = self.gw.take() else { return };
        // A backend that redirected before the whole body came: the rest of
        // it is still on its way, and must not be read as a new request.
        let leftover = gw.upload.remaining() > 0;
        let keep_alive = gw.keep_alive && !sh.shutting_down && !leftover;
        let minor = gw.minor;
        let r = crate::handler::rerun(self, sh, gw);
        self.linger |= leftover;
        match r.action {
            BodyAction::Gateway => {
                // Its body, if any, is buffered or still to come.
                let continue_100 = minor >= 1
                    && r.expects_continue
                    && !matches!(r.body, Body::None | Body::Length(0));
                self.start_gateway_body(sh, continue_100);
                self.input.get_or_insert_with(|| sh.pool.take_in());
                self.on_input(sh);
            }
            BodyAction::Authorize => self.phase = Phase::Gateway,
            action @ (BodyAction::Discard | BodyAction::Close) => {
                let then = self.skip_unread_body(action, r.body, r.expects_continue, keep_alive);
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
                input.consume(input.pending().len());
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
    fn start_gateway_body(&mut self, sh: &mut Shared, continue_100: bool) {
        if continue_100 {
            // The client waits for a go-ahead before the body (curl does
            // for uploads over 1 MB): the backend takes it as it comes.
            self.prepare_output(sh);
            self.out
                .mem
                .extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        // The body's idle time-out counts from the head.
        self.last_active = sh.clock.mono_secs;
        let collect = self.gw.as_ref().is_some_and(|g| g.upload.collecting());
        self.phase = if collect {
            Phase::ReadingBody
        } else {
            Phase::Gateway
        };
    }

    /// A gateway request wants body bytes from the socket now.
    fn reads_body(&self) -> bool {
        self.gw.as_ref().is_some_and(|g| g.takes_body())
    }

    /// A complete gateway request waits for a backend connection.
    pub fn wants_backend(&self) -> bool {
        self.phase == Phase::Gateway
            && self
                .gw
                .as_ref()
                .is_some_and(|g| g.backend.is_none() && !g.waiting && !g.done)
    }

    fn after_write(&mut self, then: AfterWrite, sh: &mut Shared) {
        match then {
            AfterWrite::NextRequest if sh.shutting_down => self.finish(sh),
            AfterWrite::NextRequest => {
                self.phase = Phase::Idle;
                if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
                    self.on_input(sh);
                }
            }
            AfterWrite::DiscardBody(remaining) => {
                self.phase = Phase::DiscardingBody { remaining };
                if self.input.as_ref().is_some_and(|i| !i.is_empty()) {
                    self.on_input(sh);
                }
            }
            AfterWrite::Close => self.finish(sh),
        }
    }

    /// Ends a connection whose last response is written. When the client may
    /// still be sending, shut the write side and read until it closes, so
    /// that unread bytes do not turn the close into a reset that destroys the
    /// response in flight.
    fn finish(&mut self, sh: &mut Shared) {
        if self.linger {
            self.stream.shutdown_write();
            self.phase = Phase::Lingering {
                until: sh.clock.mono_secs + LINGER_SECS,
            };
        } else {
            self.close(sh);
        }
    }

    /// Drops the connection at once.
    pub fn close(&mut self, sh: &mut Shared) {
        self.phase = Phase::Closed;
        self.out.clear();
        self.release_buffers(sh);
    }

    /// Returns buffers to the pool while nothing is buffered.
    fn release_buffers(&mut self, sh: &mut Shared) {
        if self.input.as_ref().is_some_and(|i| i.is_empty()) || self.phase == Phase::Closed {
            if let Some(mut b) = self.input.take() {
                // A closed connection may leave unparsed bytes behind: the
                // next connection to take this buffer must start empty.
                b.start = 0;
                b.end = 0;
                sh.pool.put_in(b);
            }
        }
        if self.out.is_empty() && self.out.mem.capacity() > 0 {
            sh.pool.put_out(self.out.take_buffer());
        }
    }

    /// Gives the output queue a pooled buffer before a response is written.
    pub fn prepare_output(&mut self, sh: &mut Shared) {
        if self.out.mem.capacity() == 0 {
            self.out.mem = sh.pool.take_out();
        }
    }

    /// Called once a second: closes the connection when it has been idle too long.
    pub fn on_tick(&mut self, sh: &mut Shared) {
        let g = &sh.config.global;
        let now = sh.clock.mono_secs;
        let limit = match self.phase {
            Phase::Idle if self.requests == 0 => g.max_read_idle as u64,
            Phase::Idle => g.max_keep_alive_idle as u64,
            Phase::ReadingHead | Phase::DiscardingBody { .. } | Phase::ReadingBody => {
                g.max_read_idle as u64
            }
            // Body bytes are due from the client: its read time-out.
            Phase::Gateway if self.reads_body() => g.max_read_idle as u64,
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
                    self.close(sh);
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
            self.close(sh);
        }
    }
}
