//! One client connection: its socket (plain or TLS), its protocol (an
//! HTTP/1 [`h1::Session`], the sans-IO state machine of `proto::h1`; or
//! HTTP/2, `h2/`), its input buffer and output queue, and the one function
//! that drives it after a readiness event and says what it waits for then
//! ([`Drive`]).
//!
//! The socket is registered for reads (edge-triggered), and for writes too
//! once a write has blocked; the connection remembers which directions are
//! ready (`readable`, `writable`) and acts only on what its state needs, so
//! a spurious event costs nothing.

mod answer;
mod encoded;
mod gateway;
mod h2;
pub mod h3;
mod idle;
mod input;
mod proxy;
mod socket;
mod sockproxy;
mod transport;
mod wstunnel;

use std::net::{IpAddr, SocketAddr};

use mio::Registry;

use crate::buf::{InBuf, Pool};
use crate::exchange::{ConnInfo, Services};
use crate::msg::ExchangeId;
use crate::net::Stream;
use crate::output::encode::Step;
use crate::output::throttle::Throttle;
use crate::output::Output;
use crate::proto::h1::session::{self as h1, Next, Offer};
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

/// Most bytes a lingering close drops before it closes anyway: as much as
/// glint reads and drops to keep a connection (`plan::MAX_DISCARD`). A
/// client still sending after that many bytes has had its answer for as
/// long; on loopback [`h1::LINGER_SECS`] of reading would be gigabytes.
const LINGER_MAX_BYTES: u64 = crate::msg::plan::MAX_DISCARD;

/// Most rounds of one drive (reads, body bytes to a backend, writes) before
/// others get a turn: 16 windows of 64 KiB of an upload, 1 MiB.
const ROUNDS: usize = 16;

/// Which protocol the connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// HTTP/1.x, in [`Connection::h1`].
    Http1,
    /// HTTP/2, in [`Connection::h2`].
    Http2,
    /// Finished: the server drops the connection.
    Closed,
}

/// What a connection waits for after [`Connection::drive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// It closed: the server drops it.
    Closed,
    /// An event; `writes`: a write blocked, so writability is watched too.
    Wait { writes: bool },
    /// It stopped at a bound with work left (a compression slice, a round
    /// limit): no event will come for that, so the loop drives it again
    /// next turn.
    Again { writes: bool },
}

/// What one [`Connection::flush`] achieved.
enum Flushed {
    /// Everything queued is written.
    Done,
    /// The socket is full (or not yet known writable): wait for an event;
    /// or a download limit holds the connection until a tick.
    Blocked,
    /// The write failed and the connection is closed.
    Closed,
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
    mode: Mode,
    /// The HTTP/1 session (also what an ended HTTP/2 connection lingers in).
    h1: h1::Session,
    /// Input, present while a request is in progress; pooled while idle.
    input: Option<InBuf>,
    pub out: Output,
    /// The socket has (or may have) bytes to read / room to write.
    readable: bool,
    writable: bool,
    /// The peer closed its side: a short read no longer means "drained", the
    /// end of stream is still to be read (no new edge will announce it).
    peer_closed: bool,
    /// `clock.mono_us` of the last progress, for the idle time-outs.
    last_active: u64,
    nodelay: bool,
    /// Bytes dropped while lingering (see [`LINGER_MAX_BYTES`]).
    lingered: u64,
    /// Counted in `Services::lingering`.
    counted_lingering: bool,
    /// The gateway exchange in progress, from its head to the end of the answer.
    gw: Option<Box<GwSide>>,
    /// The address the client connected to, asked once (for `SERVER_ADDR`).
    local_ip: Option<Option<IpAddr>>,
    /// Registered with epoll (only once the connection has had to wait).
    pub registered: bool,
    /// Registered for writability too (only once a write has blocked).
    pub watches_writes: bool,
    /// This drive stopped at a bound with work left (see [`Drive::Again`]).
    again: bool,
    /// The rest of a reply being compressed as it is sent (mod_deflate),
    /// with its access log line.
    encoded: Option<Box<Encoded>>,
    /// A trusted forwarder's PROXY protocol header is due before the first
    /// request (`extforward.hap-PROXY`).
    proxy_wait: bool,
    /// The PROXY header says the client spoke TLS to the forwarder.
    proxy_https: bool,
    /// What the PROXY header sets for every request of the connection
    /// (`SSL_*`, `PP2_UNIQUE_ID`, with `hap-PROXY-ssl-client-verify`
    /// `REMOTE_USER`).
    proxy_env: Box<[(&'static str, Vec<u8>)]>,
    /// TLS over the socket, on a listener with `ssl.engine`.
    tls: Option<Box<crate::tls::TlsConn>>,
    /// What the TLS handshake came to, once it is done.
    tls_facts: Option<std::rc::Rc<crate::exchange::TlsFacts>>,
    /// `clock.mono_secs` of the accept (the handshake's time-out).
    born: u64,
    /// Counted in `Stats::tls_handshaking` (until the handshake ends).
    in_handshake: bool,
    /// The HTTP/2 session, in [`Mode::Http2`].
    h2: Option<Box<h2::Session>>,
    /// mod_sockproxy may take the connection: decided on its first drive.
    sockproxy_due: bool,
    /// `connection.kbytes-per-second`, `server.kbytes-per-second`.
    throttle: Throttle,
    /// mod_maxminddb's answer for this connection's client.
    geo: crate::exchange::GeoCache,
}

impl Connection {
    pub fn new(
        stream: Stream,
        listener: usize,
        peer: Option<SocketAddr>,
        id: ExchangeId,
        clock: &crate::clock::Clock,
        tls: Option<Box<crate::tls::TlsConn>>,
    ) -> Connection {
        Connection {
            stream,
            listener,
            peer: peer.map(|a| a.ip()),
            peer_port: peer.map_or(0, |a| a.port()),
            id,
            mode: Mode::Http1,
            h1: h1::Session::new(),
            input: None,
            out: Output::default(),
            // Try at once: a freshly accepted socket often has its request
            // (clients send it behind the handshake) and always has room to write.
            readable: true,
            writable: true,
            peer_closed: false,
            last_active: clock.mono_us,
            nodelay: false,
            lingered: 0,
            counted_lingering: false,
            gw: None,
            local_ip: None,
            registered: false,
            watches_writes: false,
            again: false,
            encoded: None,
            proxy_wait: false,
            proxy_https: false,
            proxy_env: Box::default(),
            in_handshake: tls.is_some(),
            tls,
            tls_facts: None,
            born: clock.mono_secs,
            h2: None,
            sockproxy_due: false,
            throttle: Throttle::default(),
            geo: Default::default(),
        }
    }

    /// The connection comes from a forwarder trusted to send the PROXY
    /// protocol: its first bytes must be a PROXY header, or it is closed.
    pub fn expect_proxy_header(&mut self) {
        self.proxy_wait = true;
    }

    pub fn is_closed(&self) -> bool {
        self.mode == Mode::Closed
    }

    /// Requests begun on this connection (HTTP/1).
    pub fn requests(&self) -> u32 {
        self.h1.requests()
    }

    /// Idle between requests after at least one (a graceful shutdown closes these).
    pub fn is_idle_kept(&self) -> bool {
        self.mode == Mode::Http1 && self.idle_h1() && self.h1.requests() > 0
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
        if !self.geo.is_kept() && sv.config.geo_used() {
            self.geo = crate::exchange::GeoCache::new();
        }
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
            geo: self.geo.clone(),
        }
    }

    /// What the connection's side offers the HTTP/1 session now.
    fn offer(&self, sv: &Services) -> Offer {
        let g = &sv.config.global;
        Offer {
            // While clients wait at the limit, a connection whose turn
            // came (see `Services::rotate_gen`) gives its slot up.
            keep_alive: !(sv.shutting_down || sv.accept_paused && self.id.gen <= sv.rotate_gen),
            room: self.encoded.is_none()
                && self.gw.is_none()
                && self.out.pending_mem() < PIPELINE_HIGH_WATER
                && self.out.pending_files() < PIPELINE_MAX_FILES,
            limits: h1::Limits {
                max_head: (g.limits.max_request_field_size as usize).min(crate::buf::INPUT_BUF),
                max_requests: g.limits.max_keep_alive_requests,
            },
        }
    }

    /// Makes whatever progress the readiness allows, and says what the
    /// connection waits for then.
    pub fn drive(&mut self, cx: &mut Ctx<'_>) -> Drive {
        if std::mem::take(&mut self.sockproxy_due) {
            self.start_sockproxy(cx);
        }
        match self.mode {
            Mode::Http1 => {
                self.drive_h1(cx);
                // The preface (or ALPN) made it HTTP/2: the session answers
                // the frames that came with it now, not at the next event
                // (over TLS that was the next tick, a second later).
                if self.mode == Mode::Http2 {
                    self.drive_h2(cx);
                }
            }
            Mode::Http2 => self.drive_h2(cx),
            Mode::Closed => {}
        }
        if self.mode != Mode::Closed {
            self.flush_tls_records(cx);
        }
        if self.mode == Mode::Closed || (self.mode == Mode::Http1 && self.idle_h1()) {
            self.release_buffers(cx.pool);
        }
        let writes = !self.writable;
        match std::mem::take(&mut self.again) {
            _ if self.mode == Mode::Closed => Drive::Closed,
            true => Drive::Again { writes },
            false => Drive::Wait { writes },
        }
    }

    /// HTTP/1: writes what is queued, lets the answer in progress go on
    /// (a compressor, a backend), acts on the end of an answer, takes the
    /// buffered input, and reads; round after round while any of them
    /// moves.
    fn drive_h1(&mut self, cx: &mut Ctx<'_>) {
        let mut compressed = false;
        // An answer went out in this drive (what follows it may be a close).
        let mut wrote = false;
        for _ in 0..ROUNDS {
            if self.mode != Mode::Http1 {
                return;
            }
            let flushed = !self.out.is_empty();
            wrote |= flushed;
            if flushed {
                if let Flushed::Closed = self.flush(cx) {
                    return;
                }
            }
            if self.out.is_empty() && self.encoded.is_some() {
                if compressed {
                    // One slice per turn: the others get theirs.
                    self.again = true;
                    return;
                }
                compressed = true;
                self.compress_slice(cx);
                continue;
            }
            if self.gw.is_some() && self.drive_gateway(flushed, cx) {
                continue;
            }
            let quiet = self.out.is_empty() && self.encoded.is_none() && self.gw.is_none();
            if quiet && !self.after_written(wrote, cx) {
                return;
            }
            if self.on_input(cx) {
                continue;
            }
            if self.wants_read(cx) {
                self.read_some(cx);
                continue;
            }
            return;
        }
        // Rounds spent with work left.
        self.again = self.mode == Mode::Http1;
    }

    /// The socket is to be read now.
    fn wants_read(&self, cx: &Ctx<'_>) -> bool {
        if !self.readable || !self.h1.reads() {
            return false;
        }
        if self.h1.feeds_body() {
            // Only while the backend's window has room: a full window
            // leaves `readable` set for when the backend drains it.
            return self
                .gw
                .as_ref()
                .is_some_and(|g| cx.sv.upstream.takes_body(g.start.job));
        }
        // A full buffer waits for the session to take what it holds.
        self.input.as_ref().is_none_or(|i| i.has_spare())
    }

    /// Every queued byte is written and no answer is being produced: what
    /// the session says follows (`wrote`: an answer's bytes went out in this
    /// drive). False when the connection closed.
    fn after_written(&mut self, wrote: bool, cx: &mut Ctx<'_>) -> bool {
        let now = cx.sv.clock.mono_secs;
        match self.h1.written(now) {
            Next::Read => {
                if wrote && cx.sv.shutting_down && !cx.sv.handing_over && self.is_idle_kept() {
                    // The answer it had when the server began to stop is
                    // out: it closes. (Handing over, an answer that went out
                    // with keep-alive leaves the connection open for the
                    // request its client may have sent already; one idle
                    // since before is the server's to close, at once or,
                    // handing over, once settled; a new
                    // connection's first request is still read and answered.)
                    self.close(cx);
                    return false;
                }
                true
            }
            Next::Linger => {
                self.start_linger(cx);
                true
            }
            Next::Close => {
                self.tls_goodbye();
                self.close(cx);
                false
            }
        }
    }

    /// Ends the connection's writing and reads what the client still sends
    /// (for a bounded time, see `h1::LINGER_SECS`), so that unread bytes do
    /// not turn the close into a reset that destroys the answer in flight.
    fn start_linger(&mut self, cx: &mut Ctx<'_>) {
        self.tls_goodbye();
        self.stream.shutdown_write();
        if !std::mem::replace(&mut self.counted_lingering, true) {
            cx.sv.lingering += 1;
        }
    }

    /// Waiting for a request, with nothing of one read and nothing queued.
    fn idle_h1(&self) -> bool {
        self.h1.is_idle()
            && self.out.is_empty()
            && self.encoded.is_none()
            && self.gw.is_none()
            && self.input.as_ref().is_none_or(InBuf::is_empty)
    }

    /// Compresses one slice of the reply in [`Connection::encoded`] into the
    /// output queue; a body that cannot be completed closes the connection.
    fn compress_slice(&mut self, cx: &mut Ctx<'_>) {
        let Some(enc) = self.encoded.as_mut() else {
            return;
        };
        match enc.step(&mut self.out) {
            Ok(Step::Pending) => {}
            Ok(Step::Done) => {
                self.end_encoded(cx);
                let offer = self.offer(cx.sv);
                let more = self.input.as_ref().is_some_and(|i| !i.is_empty());
                self.h1.complete(offer, more);
            }
            Err(e) => {
                log::warn!("{e}; connection closed");
                self.end_encoded(cx);
                // What is queued goes out; the cut body then ends with the
                // connection, so the client sees it incomplete.
                self.h1.cut();
                let offer = self.offer(cx.sv);
                self.h1.complete(offer, false);
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

    /// Drops the connection at once (and its gateway exchange, if any).
    pub fn close(&mut self, cx: &mut Ctx<'_>) {
        if std::mem::take(&mut self.counted_lingering) {
            cx.sv.lingering = cx.sv.lingering.saturating_sub(1);
        }
        self.mode = Mode::Closed;
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
        if self.input.as_ref().is_some_and(|i| i.is_empty()) || self.mode == Mode::Closed {
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
