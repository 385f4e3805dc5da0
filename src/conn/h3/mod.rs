//! HTTP/3 connections (RFC 9114) in the one event loop: beside each TLS
//! listener with `glint.h3` on, a UDP socket of the same address and port
//! (`endpoint.rs`: quinn-proto's sans-IO QUIC endpoint, quinn-udp's
//! socket with GSO, GRO and ECN), and for each QUIC connection an HTTP/3
//! session (`session.rs`) whose request streams each run an exchange as
//! an HTTP/2 stream does: the same [`crate::exchange::respond`], the same
//! body queue (`h2::stream::Task`), a gateway's answer through a
//! [`crate::msg::Sink`] (`sink.rs`), pieces framed as DATA and written to
//! the QUIC stream as its flow control allows (`write.rs`).
//!
//! The server reaches this module through [`Quic`]: readiness of a UDP
//! socket, the QUIC timers (the loop's wait never passes the next one),
//! the tick, graceful shutdown, and news for an exchange whose
//! [`ExchangeId::slot`] is at or past [`SLOT_BASE`].
//!
//! What QUIC's attacks meet (docs/http3.md has the figures):
//! - amplification: quinn-proto sends at most 3 times what an unvalidated
//!   address sent (RFC 9000 §8.1);
//! - handshake floods: past [`RETRY_HANDSHAKES`] handshakes under way a
//!   new client must first echo a Retry token (its address is validated
//!   before any state is kept for it); past the connection cap it is
//!   refused with CONNECTION_REFUSED;
//! - streams: 100 concurrent requests and 8 unidirectional streams per
//!   connection (QUIC's stream limits, so a client cannot open more);
//!   connection IDs: quinn-proto issues at most 8 per connection and
//!   retires what the peer asks;
//! - QPACK: a dynamic table of capacity 0 (`proto::h3::qpack`), heads
//!   bounded while they are decoded;
//! - time: `server.max-read-idle` as QUIC's idle time-out, a handshake
//!   that does not finish in [`HANDSHAKE_SECS`] is dropped, a connection
//!   with no request for `server.max-keep-alive-idle` is closed;
//! - stateless resets for packets of connections glint no longer knows.

mod endpoint;
mod life;
mod reply;
mod session;
mod sink;
mod write;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::{Interest, Registry, Token};
use quinn_proto::{ConnectionHandle, DatagramEvent};
use slab::Slab;

use crate::conn::Ctx;
use crate::msg::ExchangeId;
use endpoint::Endpoint;
pub use endpoint::EndpointSpec;
use session::Session;

/// Exchange ids of HTTP/3 streams have slots from here on (TCP
/// connections' slots stay far below it: a slab of at most
/// `server.max-connections` times two).
pub const SLOT_BASE: usize = crate::msg::H3_SLOT_BASE;

/// A handshake not done after this many seconds is dropped: TLS over TCP
/// has the same bound (`conn`'s handshake time-out, 10 s).
pub const HANDSHAKE_SECS: u64 = 10;

/// Handshakes under way past which a new client must echo a Retry token
/// first (RFC 9000 §8.1.2): a flood of spoofed Initials then costs one
/// stateless packet each, not a connection's state and a TLS handshake.
/// 64 is what a burst of honest page loads reaches here at most (one or
/// two connections per browser).
pub const RETRY_HANDSHAKES: usize = 64;

/// Datagrams read per readiness event before others get a turn: 64 reads
/// of up to 64 KiB (GRO batches), 4 MiB.
const RECV_ROUNDS: usize = 64;

/// One QUIC connection and its HTTP/3 session.
struct QConn {
    ep: usize,
    ch: ConnectionHandle,
    conn: quinn_proto::Connection,
    gen: u64,
    s: Session,
    /// When quinn-proto wants `handle_timeout`.
    timer: Option<Instant>,
    /// `clock.mono_secs` at the first packet.
    since: u64,
}

/// Every HTTP/3 endpoint of the server and their connections.
pub struct Quic {
    eps: Vec<Endpoint>,
    conns: Slab<QConn>,
    next_gen: u64,
    /// Cap on connections (`server.max-connections`).
    max_conns: usize,
    /// The buffer quinn-proto writes packets into.
    tx: Vec<u8>,
    /// Datagrams received in one `recvmmsg`, GRO-merged.
    rx: Vec<u8>,
    /// Connections that got packets in this round.
    dirty: Vec<usize>,
}

impl Quic {
    /// One endpoint per spec, bound now (before privileges are dropped).
    pub fn bind(specs: Vec<EndpointSpec>, max_conns: usize) -> std::io::Result<Quic> {
        let mut eps = Vec::with_capacity(specs.len());
        for s in specs {
            eps.push(Endpoint::bind(s)?);
        }
        Ok(Quic {
            eps,
            conns: Slab::new(),
            next_gen: 0,
            max_conns: max_conns.max(1),
            tx: Vec::with_capacity(64 * 1024),
            rx: Vec::new(),
            dirty: Vec::new(),
        })
    }

    /// No endpoint: HTTP/3 is off.
    pub fn is_off(&self) -> bool {
        self.eps.is_empty()
    }

    /// The UDP port serving HTTP/3 beside TCP listener `listener`.
    pub fn port_of(&self, listener: usize) -> Option<u16> {
        self.eps
            .iter()
            .find(|e| e.listener == listener)
            .map(|e| e.local.port())
    }

    /// The bound UDP addresses, in endpoint order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.eps.iter().map(|e| e.local).collect()
    }

    /// Registers the UDP sockets with tokens `base + i`.
    pub fn register(&mut self, registry: &Registry, base: usize) -> std::io::Result<()> {
        for (i, e) in self.eps.iter_mut().enumerate() {
            registry.register(&mut e.socket, Token(base + i), Interest::READABLE)?;
        }
        Ok(())
    }

    /// Open connections (handshaking or not, draining ones too).
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Whether `ex` names a connection still here.
    pub fn is_current(&self, ex: ExchangeId) -> bool {
        ex.slot >= SLOT_BASE
            && self
                .conns
                .get(ex.slot - SLOT_BASE)
                .is_some_and(|c| c.gen == ex.gen)
    }

    /// How long the loop may wait before a QUIC timer is due.
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        self.conns
            .iter()
            .filter_map(|(_, c)| c.timer)
            .min()
            .map(|t| t.saturating_duration_since(now))
    }

    /// UDP socket `i` is readable: datagrams to their connections (new
    /// ones admitted or not), then each connection touched is driven.
    pub fn on_readable(&mut self, i: usize, cx: &mut Ctx<'_>) {
        for _ in 0..RECV_ROUNDS {
            let Some(got) = self.recv_batch(i, cx) else {
                break;
            };
            if got == 0 {
                break;
            }
        }
        for key in std::mem::take(&mut self.dirty) {
            self.drive(key, cx);
        }
    }

    /// Fires the timers that are due.
    pub fn on_timers(&mut self, cx: &mut Ctx<'_>) {
        let now = Instant::now();
        let due: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.timer.is_some_and(|t| t <= now))
            .map(|(k, _)| k)
            .collect();
        for key in due {
            if let Some(c) = self.conns.get_mut(key) {
                c.conn.handle_timeout(now);
            }
            self.drive(key, cx);
        }
    }

    /// A datagram for `ep`: to its connection, or a new one admitted.
    fn on_datagram(&mut self, ep: usize, event: DatagramEvent, cx: &mut Ctx<'_>) {
        match event {
            DatagramEvent::ConnectionEvent(ch, ev) => {
                let Some(&key) = self.eps[ep].handles.get(&ch) else {
                    return;
                };
                if let Some(c) = self.conns.get_mut(key) {
                    c.conn.handle_event(ev);
                    if !self.dirty.contains(&key) {
                        self.dirty.push(key);
                    }
                }
            }
            DatagramEvent::Response(t) => {
                let n = t.size;
                self.eps[ep].send(&t, &self.tx[..n]);
            }
            DatagramEvent::NewConnection(incoming) => self.admit(ep, incoming, cx),
        }
    }

    /// A client's first Initial: refused at the cap, asked to prove its
    /// address when many handshakes are under way, else accepted.
    fn admit(&mut self, ep: usize, incoming: quinn_proto::Incoming, cx: &mut Ctx<'_>) {
        let handshaking = self
            .conns
            .iter()
            .filter(|(_, c)| c.conn.is_handshaking())
            .count();
        let now = Instant::now();
        self.tx.clear();
        let e = &mut self.eps[ep];
        if self.conns.len() >= self.max_conns || cx.sv.shutting_down {
            log::debug!(
                "HTTP/3: refusing {} at the connection limit",
                incoming.remote_address()
            );
            let t = e.ep.refuse(incoming, &mut self.tx);
            e.send(&t, &self.tx[..t.size]);
            return;
        }
        if handshaking >= RETRY_HANDSHAKES.min(self.max_conns)
            && !incoming.remote_address_validated()
        {
            match e.ep.retry(incoming, &mut self.tx) {
                Ok(t) => e.send(&t, &self.tx[..t.size]),
                Err(err) => e.ep.ignore(err.into_incoming()),
            }
            cx.sv.stats.h3_retries += 1;
            return;
        }
        let peer = incoming.remote_address();
        match e.ep.accept(incoming, now, &mut self.tx, None) {
            Ok((ch, conn)) => {
                self.next_gen += 1;
                let mut s = Session::new(e.listener, peer, cx.sv.clock.mono_secs);
                // As for HTTP/2: the limits of the connection's scope (its
                // socket, the client's address) for all its streams.
                let scope = cx
                    .sv
                    .config
                    .connection_settings(e.listener, Some(peer.ip()));
                s.throttle.configure(&scope);
                let key = self.conns.insert(QConn {
                    ep,
                    ch,
                    conn,
                    gen: self.next_gen,
                    s,
                    timer: None,
                    since: cx.sv.clock.mono_secs,
                });
                self.eps[ep].handles.insert(ch, key);
                cx.sv.stats.h3_connections += 1;
                cx.sv
                    .board
                    .open(SLOT_BASE + key, Some(peer.ip()), cx.sv.clock.mono_secs);
                if !self.dirty.contains(&key) {
                    self.dirty.push(key);
                }
            }
            Err(err) => {
                log::debug!("HTTP/3: handshake with {peer} refused: {}", err.cause);
                if let Some(t) = err.response {
                    e.send(&t, &self.tx[..t.size]);
                }
            }
        }
    }

    /// Once a second: the handshake, keep-alive and stream time-outs.
    pub fn tick(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.sv.clock.mono_secs;
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            let Some(c) = self.conns.get_mut(key) else {
                continue;
            };
            if c.conn.is_handshaking() && now.saturating_sub(c.since) >= HANDSHAKE_SECS {
                log::debug!("HTTP/3: handshake of {} timed out", c.conn.remote_address());
                c.conn.close(
                    Instant::now(),
                    quinn_proto::VarInt::from_u32(0),
                    Default::default(),
                );
            } else {
                let mut io = session::Io::new(cx, key, c.gen);
                c.s.tick(&mut c.conn, &mut io);
            }
            // A new second: a connection held by a download limit goes on
            // (in the drive below) when its average allows.
            if cx.sv.scope_bytes.is_new_second() {
                c.s.throttle.new_second(now.saturating_sub(c.since));
            }
            self.drive(key, cx);
        }
    }

    /// Graceful shutdown: GOAWAY on every connection; each closes once its
    /// requests are answered.
    pub fn shutdown(&mut self, cx: &mut Ctx<'_>) {
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            if let Some(c) = self.conns.get_mut(key) {
                // The answers in flight go out unthrottled, as lighttpd lets them.
                c.s.throttle.lift();
                c.s.goaway(&mut c.conn);
            }
            self.drive(key, cx);
        }
    }

    /// Drives the connection of `ex` (its stream's body window has room,
    /// or the loop woke it).
    pub fn wake(&mut self, ex: ExchangeId, cx: &mut Ctx<'_>) {
        self.with_session(ex, cx, |s, conn, io, stream| s.wake(conn, stream, io));
    }

    /// A backend of `ex` is ready: its answer goes on.
    pub fn backend_ready(&mut self, ex: ExchangeId, bkey: usize, cx: &mut Ctx<'_>) {
        self.with_session(ex, cx, |s, conn, io, stream| {
            s.backend_ready(conn, stream, bkey, io)
        });
    }

    /// The gateway exchange of `ex` failed (`Some(status)`) or ended
    /// without a sink at hand.
    pub fn upstream_news(&mut self, ex: ExchangeId, failed: Option<u16>, cx: &mut Ctx<'_>) {
        self.with_session(ex, cx, |s, conn, io, stream| {
            s.upstream_news(conn, stream, failed, io)
        });
    }

    fn with_session(
        &mut self,
        ex: ExchangeId,
        cx: &mut Ctx<'_>,
        f: impl FnOnce(&mut Session, &mut quinn_proto::Connection, &mut session::Io<'_>, u32),
    ) {
        if !self.is_current(ex) {
            return;
        }
        let key = ex.slot - SLOT_BASE;
        if let Some(c) = self.conns.get_mut(key) {
            let mut io = session::Io::new(cx, key, c.gen);
            f(&mut c.s, &mut c.conn, &mut io, ex.stream);
        }
        self.drive(key, cx);
    }
}

/// The exchange id of request stream `stream` (index + 1) on connection `key`.
fn exchange_id(key: usize, gen: u64, stream: u32) -> crate::msg::ExchangeId {
    crate::msg::ExchangeId {
        slot: SLOT_BASE + key,
        gen,
        stream,
    }
}
