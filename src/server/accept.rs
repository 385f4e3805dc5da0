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

/// While clients wait at the connection limit, the slots rotate: every
/// connection is told, in turn, oldest first, to close after its next answer
/// (`Connection: close`; an HTTP/2 connection gets GOAWAY and finishes the
/// streams it has), all of them once in this long, and the slots go to
/// the clients waiting; until its turn a connection keeps keep-alive as
/// usual. With 5,000 keep-alive clients on the default 1,365 slots each slot
/// is connected anew four times a second instead of after every answer: the
/// storm keeps keep-alive's throughput (benches/results/storm.md).
const ROTATE_US: u64 = 250_000;

/// The rotation goes in steps this long, each marking its share of the
/// connections, at most as many as clients wait in the accept queues.
/// Measured with 5,000 clients on 1,365 slots (benches/results/storm.md):
/// steps of 100 ms served every client within 2 s (benches/storm_fair.py,
/// twice) at 476-619k answers in wrk's 8 s; steps of 25 ms 383-552k with
/// 64-441 clients later than 2 s; one step a turn (250 ms) left a third of
/// the clients unserved in 8 s (the queue refilled by those just let go
/// while the others waited for the kernel's retransmission).
const STEP_US: u64 = 100_000;

/// While clients wait at the connection limit, a connection whose turn came
/// and that has been idle this long (keep-alive between requests, or
/// nothing sent yet) is closed for them: a client that holds its slot idle
/// does not hold it for long. A loaded keep-alive client sends its next
/// request within milliseconds of an answer (wrk's mean latency at 5,000
/// connections is 7-16 ms), and one whose turn came closes after that
/// answer.
const IDLE_US: u64 = 250_000;

/// At most 1/HANDSHAKE_SHARE of `server.max-connections` may be TLS
/// connections still in their handshake: a flood of stalled handshakes
/// (each held up to the handshake time-out) leaves the other slots to
/// clients that finished theirs. A new TLS client past it waits in the
/// listener's backlog until a handshake ends (refusing it would lose its
/// request: under a storm at the limit, each turn of the rotation let in a
/// burst of new TLS clients, and a few hundred a second were closed).
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
            if self.handshakes_full(i) {
                if !self.sv.tls_held {
                    log::debug!("TLS handshakes at their share of the slots: new clients wait");
                }
                self.sv.tls_held = true;
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

    /// Whether listener `i` is a TLS one and its new clients would go past
    /// the handshakes' share of the slots ([`HANDSHAKE_SHARE`]).
    fn handshakes_full(&self, i: usize) -> bool {
        self.handshakes_at_cap() && self.is_tls(i)
    }

    /// Whether listener `i` speaks TLS.
    fn is_tls(&self, i: usize) -> bool {
        self.tls.contexts.get(i).is_some_and(Option::is_some)
    }

    fn handshakes_at_cap(&self) -> bool {
        let cap = (self.max_connections / HANDSHAKE_SHARE).max(1) as u64;
        self.sv.stats.tls_handshaking >= cap
    }

    /// Once a turn: TLS listeners stopped at the handshake cap accept again
    /// once a handshake ended (unless accepting is paused at the limit,
    /// whose resumption takes every listener's clients); one that reaches
    /// the cap again holds again.
    pub(super) fn accept_held(&mut self) {
        if !self.sv.tls_held || self.sv.accept_paused || self.handshakes_at_cap() {
            return;
        }
        self.sv.tls_held = false;
        for i in 0..self.listeners.len() {
            if self.is_tls(i) {
                self.accept_from(i);
            }
        }
    }

    /// Takes in a connection accepted on listener `i` and drives it once if
    /// its request is likely there already (`deferred`: TCP_DEFER_ACCEPT).
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
        let mut conn = Connection::new(stream, i, peer, id, &self.sv.clock, tls);
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

    /// Once a turn of the loop: while accepting is paused, every
    /// [`STEP_US`] marks the oldest connections not yet marked, their share
    /// of the rotation, to close after their next answer; tells the marked
    /// HTTP/2 connections GOAWAY (their streams finish); and closes the
    /// marked ones idle for [`IDLE_US`]. Returns true when one closed.
    pub(super) fn rotate(&mut self) -> bool {
        if !self.sv.accept_paused {
            self.rotate_at = 0;
            return false;
        }
        let now = self.sv.clock.mono_us;
        if self.rotate_at == 0 {
            // The pause begins: the connections open now are the first in turn.
            self.rotate_at = now + STEP_US;
            self.sv.rotate_gen = 0;
            return false;
        }
        if now < self.rotate_at {
            return false;
        }
        self.rotate_at = now + STEP_US;
        let mut idle = Vec::new();
        let mut unmarked = Vec::new();
        let mut h2_turns = Vec::new();
        let marked = self.sv.rotate_gen;
        for (key, c) in self.conns.iter() {
            if c.id.gen > marked {
                unmarked.push(c.id.gen);
            } else if c.takes_new_streams() {
                // An HTTP/2 connection's turn ends with GOAWAY.
                h2_turns.push(key);
            } else if c.idle_us(now) >= IDLE_US && c.is_idle() {
                // Its turn came, and it has not asked for anything since.
                idle.push(key);
            }
        }
        let share = (self.conns.len() as u64 * STEP_US).div_ceil(ROTATE_US) as usize;
        let turn = share.min(self.waiting());
        if turn >= unmarked.len() {
            self.sv.rotate_gen = self.next_gen;
        } else if turn > 0 {
            self.sv.rotate_gen = *unmarked.select_nth_unstable(turn - 1).1;
        }
        let mut freed = false;
        for key in h2_turns {
            let d = with_conn!(self, key, |conn, cx| conn.end_turn(&mut cx));
            freed |= self.after_drive(key, d);
        }
        self.close_idle(&idle) || freed
    }

    /// Clients waiting in the listeners' accept queues (as good as
    /// unbounded when a queue cannot say).
    fn waiting(&self) -> usize {
        let mut waiting = 0usize;
        for l in self.listeners.iter().flatten() {
            waiting = waiting.saturating_add(l.queued().unwrap_or(usize::MAX));
        }
        waiting
    }

    /// A slot may have freed (a connection closed, or a second passed):
    /// takes waiting clients. Accepting stays marked paused meanwhile, so
    /// that the slots go on rotating while others wait behind them.
    pub(super) fn resume_accepting(&mut self) {
        if !self.at_limit() {
            for i in 0..self.listeners.len() {
                self.accept_from(i);
            }
        }
    }

    /// Gives the slots of `idle` (connections idle for [`IDLE_US`]:
    /// keep-alive between requests, or nothing sent yet) to the clients
    /// waiting (see `Connection::reclaim`). Nothing the client sent is
    /// lost. Returns true when a slot was freed.
    fn close_idle(&mut self, idle: &[usize]) -> bool {
        let lingering = self.sv.lingering;
        let mut freed = false;
        for &key in idle {
            // Lingering sockets stay within their room (see `at_limit`),
            // with half of it left for the answers that close: a client
            // that keeps its socket after the goodbye holds it for seconds.
            let room = self.sv.lingering < self.max_connections / 2
                && self.conns.len() + 1 < self.max_connections.saturating_mul(LINGER_ROOM);
            let d = with_conn!(self, key, |conn, cx| conn.reclaim(room, &mut cx));
            freed |= self.after_drive(key, d);
        }
        if !idle.is_empty() {
            log::debug!(
                "at the connection limit: {} idle connections gave their slots up",
                idle.len()
            );
        }
        freed || self.sv.lingering > lingering
    }
}
