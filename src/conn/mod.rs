//! One client connection: its socket, its session (HTTP/1: a state enum,
//! named for what it waits for; or HTTP/2, `h2/`), its input buffer and output queue, and the
//! one function that drives it after a readiness event. It returns to the
//! loop only whether it is done ([`Connection::is_closed`]) and what
//! readiness it needs.
//!
//! The socket is registered for reads (edge-triggered), and for writes too
//! once a write has blocked; the connection remembers which directions are
//! ready (`readable`, `writable`) and acts only on what its phase needs, so a
//! spurious event costs nothing.

mod encoded;
mod gateway;
mod h2;
pub mod h3;
mod idle;
mod proxy;
mod session;
mod transport;

use std::io;
use std::net::{IpAddr, SocketAddr};

use mio::Registry;

use crate::buf::{InBuf, Pool};
use crate::exchange::{BodyAction, ConnInfo, Services};
use crate::msg::{Body, ExchangeId};
use crate::net::Stream;
use crate::output::encode::Step;
use crate::output::Output;
use encoded::Encoded;
use gateway::GwSide;

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
/// so that closing does not reset the connection under the last response:
/// lighttpd's 5 s (HTTP_LINGER_TIMEOUT), time enough for a client on a slow
/// link to read an answer sent while it was still uploading.
pub const LINGER_SECS: u64 = 5;

/// Most bytes a closing connection reads and drops before it closes anyway:
/// as much as glint reads and drops to keep a connection ([`MAX_DISCARD`]).
/// A client still sending after that many bytes has had its answer for as
/// long; on loopback 5 s of reading would otherwise be gigabytes.
const LINGER_MAX_BYTES: u64 = MAX_DISCARD;

/// Most rounds of an upload (the client fills the body window, the backend
/// drains it) per drive: 16 windows of 64 KiB, 1 MiB, before others get a turn.
const PUMP_ROUNDS: usize = 16;

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
    /// Response sent, write side shut: reading what the client still sends
    /// until it closes, `until` passes or `left` more bytes came.
    Lingering { until: u64, left: u64 },
    /// An HTTP/2 connection: its session (`h2`) reads and writes.
    Http2,
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
    /// The rest of a reply being compressed as it is sent (mod_deflate).
    encoded: Option<Box<Encoded>>,
    /// A trusted forwarder's PROXY protocol header is due before the first
    /// request (`extforward.hap-PROXY`).
    proxy_wait: bool,
    /// The PROXY header says the client spoke TLS to the forwarder.
    proxy_https: bool,
    /// What the PROXY header sets for every request of the connection
    /// (`SSL_*`, `PP2_UNIQUE_ID`, with `hap-PROXY-ssl-client-verify`
    /// `REMOTE_USER`).
    proxy_env: Vec<(&'static str, Vec<u8>)>,
    /// TLS over the socket, on a listener with `ssl.engine`.
    tls: Option<Box<crate::tls::TlsConn>>,
    /// What the TLS handshake came to, once it is done.
    tls_facts: Option<std::rc::Rc<crate::exchange::TlsFacts>>,
    /// `clock.mono_secs` of the accept (the handshake's time-out).
    born: u64,
    /// Counted in `Stats::tls_handshaking` (until the handshake ends).
    in_handshake: bool,
    /// The HTTP/2 session, in `Phase::Http2`.
    h2: Option<Box<h2::Session>>,
}

impl Connection {
    pub fn new(
        stream: Stream,
        listener: usize,
        peer: Option<SocketAddr>,
        id: ExchangeId,
        now: u64,
        tls: Option<Box<crate::tls::TlsConn>>,
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
            // Try at once: a freshly accepted socket often has its request
            // (clients send it behind the handshake) and always has room to write.
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
            encoded: None,
            proxy_wait: false,
            proxy_https: false,
            proxy_env: Vec::new(),
            in_handshake: tls.is_some(),
            tls,
            tls_facts: None,
            born: now,
            h2: None,
        }
    }

    /// The connection comes from a forwarder trusted to send the PROXY
    /// protocol: its first bytes must be a PROXY header, or it is closed.
    pub fn expect_proxy_header(&mut self) {
        self.proxy_wait = true;
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
            conn_peer: self.peer,
            forwarded_scheme: self.proxy_https.then_some("https"),
            forwarded: false,
            local_ip,
            ex: self.id,
            tls: self.tls_facts.clone(),
        }
    }

    /// Makes whatever progress the readiness allows.
    pub fn drive(&mut self, cx: &mut Ctx<'_>) {
        let mut rounds = 0;
        let mut compressed = false;
        loop {
            match self.phase {
                Phase::Closed => break,
                Phase::Writing { then } => match self.flush(cx) {
                    Flushed::Done if self.encoded.is_some() => {
                        if compressed {
                            // One slice per turn: the others get theirs.
                            self.more = true;
                            break;
                        }
                        compressed = true;
                        self.compress_slice(cx);
                    }
                    Flushed::Done => self.after_write(then, cx),
                    Flushed::Blocked => break,
                    Flushed::Closed => {}
                },
                Phase::Http2 => {
                    self.drive_h2(cx);
                    break;
                }
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
        if self.phase != Phase::Closed {
            self.flush_tls_records(cx);
        }
        if self.phase == Phase::Idle || self.phase == Phase::Closed {
            self.release_buffers(cx.pool);
        }
    }

    /// Compresses one slice of the reply in [`Connection::encoded`] into the
    /// output queue; a body that cannot be completed closes the connection.
    fn compress_slice(&mut self, cx: &mut Ctx<'_>) {
        let Some(enc) = self.encoded.as_mut() else {
            return;
        };
        match enc.step(&mut self.out) {
            Ok(Step::Pending) => {}
            Ok(Step::Done) => self.end_encoded(cx),
            Err(e) => {
                log::warn!("{e}; connection closed");
                self.end_encoded(cx);
                // What is queued goes out; the cut body then ends with the
                // connection, so the client sees it incomplete.
                self.linger = false;
                self.phase = Phase::Writing {
                    then: AfterWrite::Close,
                };
                let _ = self.flush(cx);
            }
        }
    }

    /// The compressed reply is over (complete or cut): its log line.
    fn end_encoded(&mut self, cx: &mut Ctx<'_>) {
        if let Some(enc) = self.encoded.take() {
            if let Some(l) = &enc.log {
                let info = self.info(cx.sv);
                crate::exchange::log_deferred(cx.sv, &info, l, enc.bytes_out());
            }
        }
    }

    /// Writes queued output while the socket takes it. A write error closes
    /// the connection (logged unless the peer simply went away).
    fn flush(&mut self, cx: &mut Ctx<'_>) -> Flushed {
        if !self.writable {
            return Flushed::Blocked;
        }
        if let Some(f) = self.flush_tls(cx) {
            return f;
        }
        // The answer is whole in the queue and the connection closes after
        // it (at once, or by shutting its write side): its end can wait for
        // the FIN.
        let last = matches!(
            self.phase,
            Phase::Writing {
                then: AfterWrite::Close
            }
        ) && self.encoded.is_none()
            && self.stream.is_tcp();
        let result = self.out.write_to(self.stream.fd(), last);
        self.after_flush(result, cx)
    }

    /// One read from the socket, then whatever the bytes allow.
    fn read_some(&mut self, cx: &mut Ctx<'_>) {
        if self.tls.is_some() {
            return self.read_tls(cx);
        }
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
                self.readable = false;
                if let Some(job) = self
                    .gw
                    .as_ref()
                    .map(|g| g.start.job)
                    .filter(|&j| cx.sv.upstream.in_tunnel(j))
                {
                    // The client closed its side of a tunnel: the backend
                    // hears it, and may still answer before it closes too.
                    let now = cx.sv.clock.mono_secs;
                    cx.sv.upstream.end_input(job, now, cx.registry);
                    return;
                }
                // The client closed its side. A request in progress cannot complete.
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
        self.tls_goodbye();
        if self.linger {
            self.stream.shutdown_write();
            self.phase = Phase::Lingering {
                until: cx.sv.clock.mono_secs + LINGER_SECS,
                left: LINGER_MAX_BYTES,
            };
            cx.sv.lingering += 1;
        } else {
            self.close(cx);
        }
    }

    /// Drops the connection at once (and its gateway exchange, if any).
    pub fn close(&mut self, cx: &mut Ctx<'_>) {
        if matches!(self.phase, Phase::Lingering { .. }) {
            cx.sv.lingering = cx.sv.lingering.saturating_sub(1);
        }
        self.phase = Phase::Closed;
        self.end_handshake(cx);
        self.h2_release(cx);
        self.out.clear();
        self.end_encoded(cx);
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
}
