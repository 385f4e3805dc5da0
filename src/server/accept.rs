//! Accepting: connections taken from the listeners in batches up to
//! `server.max-connections` (lingering ones counted apart), the TLS
//! handshake cap, pausing at the limit and resuming as slots free, and the
//! idle connections closed for clients that wait.

use std::io;

use nix::errno::Errno;

use super::listen::Listener;
use super::Server;
use crate::conn::{Connection, Ctx, Drive};
use crate::msg::ExchangeId;
use crate::net::Stream;
use crate::signals;

/// Most connections accepted (and answered) per listener per loop turn: a
/// fast client must not keep the loop from signals, time-outs and others.
const ACCEPT_BATCH: usize = 64;

/// Lingering connections do not count against `server.max-connections`,
/// but all connections together stay below this many times it: a lingering
/// connection holds a socket and no file, and `server.max-fds` (4096) is
/// three times the default limit (1365), room for a socket and a file per
/// counted connection and as many lingering sockets again.
const LINGER_ROOM: usize = 2;

/// While clients wait at the connection limit, a connection idle this long
/// (whole seconds of the tick clock: over one second) is closed for them.
/// The keep-alive clients of a storm send their next request within 7-16 ms
/// of an answer (wrk's mean latency at 5,000 connections), so one idle past
/// a second waits between pages, not between the requests of a burst.
const RECLAIM_IDLE_SECS: u64 = 2;

/// Most idle connections closed per tick for waiting clients, oldest first:
/// room for one [`ACCEPT_BATCH`]. Every answer given while clients wait
/// closes its connection, so each slot freed serves the backlog in turn.
const RECLAIM_BATCH: usize = ACCEPT_BATCH;

/// At most 1/HANDSHAKE_SHARE of `server.max-connections` may be TLS
/// connections still in their handshake: a flood of stalled handshakes
/// (each held up to the handshake time-out) leaves the other slots to
/// clients that finished theirs. A new TLS connection past it is closed at
/// once rather than left hanging.
const HANDSHAKE_SHARE: usize = 2;

impl Server {
    /// A listener is readable: accepts, unless accepting is paused (then
    /// [`Server::resume_accepting`] takes the waiting clients as slots free).
    pub(super) fn accept_all(&mut self, i: usize) {
        if !self.sv.accept_paused {
            self.accept_from(i);
        }
    }

    /// Whether a new connection would go over `server.max-connections`.
    /// Lingering connections are not counted: their answer is sent, and they
    /// only wait for the client to close (at most `conn::LINGER_SECS`), so
    /// they must not keep a waiting client out; all connections together
    /// stay below [`LINGER_ROOM`] times the limit.
    fn at_limit(&self) -> bool {
        let open = self.conns.len();
        open - self.sv.lingering.min(open) >= self.max_connections
            || open >= self.max_connections.saturating_mul(LINGER_ROOM)
    }

    /// Accepts until the listener has nothing more (what its queue held, for
    /// TCP), the connection limit is reached, or file descriptors run out,
    /// at most [`ACCEPT_BATCH`] a turn; pauses accepting at the limit,
    /// and resumes it (clients no longer wait) once the backlog is empty.
    fn accept_from(&mut self, i: usize) {
        if self.sv.shutting_down {
            return;
        }
        // A TCP listener says how many wait: take those (connections that
        // come meanwhile raise a new edge), not one more that fails.
        let queued = self.listeners.get(i).and_then(|l| l.as_ref()?.queued());
        if queued == Some(0) {
            // Nobody waits: paused only while at the limit.
            self.sv.accept_paused = self.at_limit();
            return;
        }
        let budget = queued.map_or(ACCEPT_BATCH, |n| n.min(ACCEPT_BATCH));
        for _ in 0..budget {
            if self.at_limit() {
                // Counted once each time the limit stops accepting (metrics).
                self.sv.stats.conn_limit_reached += u64::from(!self.sv.accept_paused);
                self.sv.accept_paused = true;
                return;
            }
            if self.use_signals && signals::pending() {
                // The signal first; the rest of the backlog on the next turn.
                self.accept_more = true;
                return;
            }
            let Some(Some(lst)) = self.listeners.get(i) else {
                return;
            };
            let accepted = match lst {
                Listener::Tcp(t, deferred) => t
                    .accept()
                    .map(|(s, a)| (Stream::Tcp(s), Some(a), *deferred)),
                Listener::Unix(u, _, _) => u.accept().map(|(s, _)| (Stream::Unix(s), None, false)),
            };
            match accepted {
                Ok((stream, peer, deferred)) => self.admit(i, stream, peer, deferred),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.sv.accept_paused = false;
                    return;
                }
                Err(e) => match e.raw_os_error().map(Errno::from_raw) {
                    Some(Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM) => {
                        // Out of descriptors or memory: leave the rest in the backlog
                        // and retry when a connection closes or at the next tick.
                        log::warn!(
                            "accept: {e}; pausing with {} connections open",
                            self.conns.len()
                        );
                        self.sv.accept_paused = true;
                        // Cached open files hold descriptors too: give them back.
                        self.sv.files.clear();
                        return;
                    }
                    Some(Errno::ECONNABORTED | Errno::EINTR | Errno::EPROTO) => continue,
                    _ => {
                        log::error!("accept: {e}");
                        return;
                    }
                },
            }
        }
        if queued.is_some_and(|n| n <= ACCEPT_BATCH) {
            // All that waited is in; later ones raise an edge of their own.
            self.sv.accept_paused = self.at_limit();
            return;
        }
        // Stopped before the backlog was empty: no new edge will announce
        // what is left, so look again on the next turn.
        self.accept_more = true;
    }

    /// Takes in a connection accepted on listener `i` and drives it once if
    /// its request is likely there already (`deferred`: TCP_DEFER_ACCEPT);
    /// past the TLS handshake cap it is closed at once.
    fn admit(
        &mut self,
        i: usize,
        stream: Stream,
        peer: Option<std::net::SocketAddr>,
        deferred: bool,
    ) {
        self.sv.stats.connections += 1;
        self.next_gen += 1;
        let ctx = self.tls.contexts.get(i).and_then(Option::as_ref);
        if ctx.is_some() {
            let cap = (self.max_connections / HANDSHAKE_SHARE).max(1) as u64;
            if self.sv.stats.tls_handshaking >= cap {
                log::warn!("{cap} TLS handshakes under way; closing a new connection");
                drop(stream);
                return;
            }
            self.sv.stats.tls_handshaking += 1;
            self.sv.stats.tls_connections += 1;
        }
        let tls = ctx.map(|ctx| Box::new(crate::tls::TlsConn::new(ctx)));
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        let id = ExchangeId {
            slot: key,
            gen: self.next_gen,
            stream: 0,
        };
        let mut conn = Connection::new(stream, i, peer, id, self.sv.clock.mono_secs, tls);
        // The status page's connection table (a row per slot, reused).
        let now = self.sv.clock.mono_secs;
        self.sv.board.open(key, peer.map(|a| a.ip()), now);
        // extforward.hap-PROXY: a trusted forwarder's connection
        // starts with a PROXY header (the socket's own peer decides).
        if self.sv.config.extforward_anywhere
            && self
                .sv
                .config
                .socket_settings(i)
                .extforward
                .as_ref()
                .is_some_and(|x| x.hap_proxy && x.trust.trusts_peer(peer.map(|a| a.ip())))
        {
            conn.expect_proxy_header();
        }
        // mod_sockproxy: a backend is connected as the client is accepted
        // (a protocol whose server speaks first waits for nothing else).
        let sockproxy = self.sv.config.sockproxy_used();
        if sockproxy {
            conn.expect_sockproxy();
        }
        entry.insert(conn);
        // TCP_DEFER_ACCEPT means the request is usually here already:
        // answer it now, and register with epoll only if the
        // connection has to wait (a one-shot request never does).
        // Without it, the handshake has just completed and the request is
        // not there yet: a read now would only say EAGAIN (one wasted
        // system call per connection), so the connection waits for epoll
        // (registered for reading, which reports bytes that came meanwhile).
        let d = if deferred || sockproxy {
            with_conn!(self, key, |conn, cx| conn.drive(&mut cx))
        } else {
            Some(Drive::Wait { writes: false })
        };
        self.after_drive(key, d);
    }

    /// Accepts again on every listener that stopped at [`ACCEPT_BATCH`].
    pub(super) fn accept_backlog(&mut self) {
        if std::mem::take(&mut self.accept_more) {
            for i in 0..self.listeners.len() {
                self.accept_from(i);
            }
        }
    }

    /// A slot may have freed (a connection closed, or a second passed):
    /// takes waiting clients. Accepting stays marked paused meanwhile, so
    /// that what is answered now closes too while others wait behind it.
    pub(super) fn resume_accepting(&mut self) {
        if !self.at_limit() {
            for i in 0..self.listeners.len() {
                self.accept_from(i);
            }
        }
    }

    /// Clients wait while every slot is taken: closes the connections idle
    /// longest (keep-alive between requests, or nothing sent yet), at most
    /// [`RECLAIM_BATCH`] of them, none idle for less than [`RECLAIM_IDLE_SECS`].
    /// Nothing the client sent is lost: each waits for a request with nothing
    /// read, so the close is a plain FIN. Returns true when one closed.
    pub(super) fn reclaim_idle(&mut self, now: u64) -> bool {
        let mut idle: Vec<(u64, usize)> = self
            .conns
            .iter()
            .filter_map(|(key, c)| c.idle_since().map(|since| (since, key)))
            .filter(|&(since, _)| now.saturating_sub(since) >= RECLAIM_IDLE_SECS)
            .collect();
        if idle.len() > RECLAIM_BATCH {
            idle.select_nth_unstable(RECLAIM_BATCH - 1);
            idle.truncate(RECLAIM_BATCH);
        }
        for &(_, key) in &idle {
            with_conn!(self, key, |conn, cx| {
                conn.close(&mut cx);
                Drive::Closed
            });
            self.conns.try_remove(key);
            self.sv.board.close(key);
        }
        if !idle.is_empty() {
            log::debug!(
                "at the connection limit: closed {} idle connections for waiting clients",
                idle.len()
            );
        }
        !idle.is_empty()
    }
}
