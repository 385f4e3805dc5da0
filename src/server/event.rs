//! One turn of the loop: wait for readiness, accept, drive the connections
//! and backends the events name, deliver what the backends' side has for
//! connections (failures, ends, room for more body), the once-a-second
//! tick, and the stop checks.

use std::io;
use std::time::Duration;

use mio::{Events, Token};
use nix::errno::Errno;

use super::listen::Listener;
use super::quic::QUIC_TOKEN_BASE;
use super::{Server, LISTENER_BASE, SCRIPTS, SIGNAL, WAKER};
use crate::conn::h3::SLOT_BASE as H3_SLOT_BASE;
use crate::conn::{Connection, Ctx, Drive};
use crate::msg::ExchangeId;
use crate::net::{interest, Stream};
use crate::signals;
use crate::upstream::News;
use crate::upstream::BACKEND_BASE;

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

/// Runs `$body` (which says what the connection waits for, a [`Drive`])
/// with `$conn` (a connection by slot) and a [`Ctx`] made of the server's
/// disjoint fields; `None` when the slot is empty.
macro_rules! with_conn {
    ($server:expr, $slot:expr, |$conn:ident, $cx:ident| $body:expr) => {{
        let s = &mut *$server;
        match s.conns.get_mut($slot) {
            Some($conn) => {
                let mut $cx = Ctx {
                    sv: &mut s.sv,
                    pool: &mut s.pool,
                    registry: s.poll.registry(),
                };
                let drive: Drive = $body;
                Some(drive)
            }
            None => None,
        }
    }};
}

impl Server {
    /// Runs `f` on the HTTP/3 endpoints with a [`Ctx`].
    fn quic_call(&mut self, f: impl FnOnce(&mut crate::conn::h3::Quic, &mut Ctx<'_>)) {
        let mut cx = Ctx {
            sv: &mut self.sv,
            pool: &mut self.pool,
            registry: self.poll.registry(),
        };
        f(&mut self.quic, &mut cx);
    }

    pub(super) fn run_loop(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let to_next_second = 1_000_000 - self.sv.clock.mono_us % 1_000_000;
            // A backend said "busy": look again in 10 ms rather than at the next tick.
            // (Parked mod_magnet runs: their next quantum after this turn's events.)
            let wait = if self.accept_more || !self.wake.is_empty() || self.sv.magnet.has_parked() {
                Duration::ZERO
            } else if self.sv.upstream.holds_answers() {
                // A CGI answer held for its length: its end is due any moment.
                Duration::from_millis(1)
            } else if self.sv.upstream.retry_soon {
                Duration::from_millis(10)
            } else {
                Duration::from_micros(to_next_second + 1)
            };
            // QUIC's timers (loss recovery, acks, idle) are due on time.
            let wait = match self.quic.wait(std::time::Instant::now()) {
                Some(q) => wait.min(q),
                None => wait,
            };
            match self.poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => events.clear(),
                Err(e) => return Err(e),
            }
            let new_second = self.sv.clock.update();
            self.sv.stats.active = self.conns.len() as u64;
            // Before the events: a request that arrived after a SIGHUP or
            // SIGUSR1 is logged to the new file and served by the new
            // configuration.
            self.apply_signals();
            // Also before the events: a script changed on disk runs anew
            // for the requests of this turn.
            if events.iter().any(|e| e.token() == SCRIPTS) {
                self.sv.magnet.files_changed();
            }
            let lingering_before = self.sv.lingering;
            let mut closed_any = false;
            self.accept_backlog();
            for ev in events.iter() {
                let t = ev.token().0;
                if t >= LISTENER_BASE {
                    self.accept_all(t - LISTENER_BASE);
                } else if (QUIC_TOKEN_BASE..BACKEND_BASE).contains(&t) {
                    self.quic_call(|q, cx| q.on_readable(t - QUIC_TOKEN_BASE, cx));
                } else if ev.token() == SCRIPTS {
                    // Read before the events (above).
                } else if ev.token() == SIGNAL {
                    self.drain_signal_wake();
                } else if ev.token() == WAKER {
                    // A compression job ended (or a StopHandle was used).
                    self.sv.deflate.take_finished();
                } else if t >= BACKEND_BASE {
                    closed_any |= self.backend_event(t - BACKEND_BASE, ev);
                } else {
                    let d = with_conn!(self, t, |conn, cx| {
                        conn.on_event(ev);
                        conn.drive(&mut cx)
                    });
                    closed_any |= self.after_drive(t, d);
                }
            }
            if !self.quic.is_off() {
                self.quic_call(|q, cx| q.on_timers(cx));
            }
            for ex in std::mem::take(&mut self.wake) {
                closed_any |= self.drive_exchange(ex);
            }
            for (bkey, ex) in self.sv.upstream.take_held(self.sv.clock.mono_us) {
                if ex.slot >= H3_SLOT_BASE {
                    self.quic_call(|q, cx| q.backend_ready(ex, bkey, cx));
                } else if self.is_current(ex) {
                    let d = with_conn!(self, ex.slot, |conn, cx| conn
                        .backend_ready(ex, bkey, &mut cx));
                    closed_any |= self.after_drive(ex.slot, d);
                }
            }
            // One quantum of a parked mod_magnet run, after the others'
            // work of this turn (its request is woken when it is done).
            self.sv.magnet.step(events.is_empty());
            if new_second {
                closed_any |= self.tick();
            }
            if self.sv.upstream.has_work() {
                let now = self.sv.clock.mono_secs;
                let news = self.sv.upstream.pump_waiting(now, self.poll.registry());
                closed_any |= self.deliver(news);
            }
            // A connection that began to linger gave up its slot too.
            let freed = closed_any || self.sv.lingering > lingering_before;
            if (freed || new_second) && self.sv.accept_paused {
                self.resume_accepting();
            }
            if self.check_stop() {
                break;
            }
        }
        self.sv.logs.flush();
        // mod_rrdtool: what was counted since the last minute.
        if let Some(r) = self.sv.rrd.as_mut() {
            r.stop();
        }
        Ok(())
    }

    /// The connection of exchange `ex`, if it is still the one in its slot.
    fn is_current(&self, ex: ExchangeId) -> bool {
        self.conns.get(ex.slot).is_some_and(|c| c.id.same_conn(ex))
    }

    /// Drives the connection of `ex` (if it is still there), for its
    /// stream `ex.stream` on HTTP/2; true when it closed.
    fn drive_exchange(&mut self, ex: ExchangeId) -> bool {
        if ex.slot >= H3_SLOT_BASE {
            self.quic_call(|q, cx| q.wake(ex, cx));
            return false;
        }
        if !self.is_current(ex) {
            return false;
        }
        let d = with_conn!(self, ex.slot, |conn, cx| conn.wake(ex, &mut cx));
        self.after_drive(ex.slot, d)
    }

    /// Hands connections what a call of the backends' side returned for
    /// them (failures and ends that had no sink at hand, room in body
    /// windows, a backend found for a queued request). Returns whether a
    /// connection closed.
    fn deliver(&mut self, news: Vec<News>) -> bool {
        let mut closed = false;
        for n in news {
            closed |= match n {
                News::Failed(ex, status) => self.tell(
                    ex,
                    |conn, cx| conn.upstream_failed(ex, status, cx),
                    |q, cx| q.upstream_news(ex, Some(status), cx),
                ),
                News::Ended(ex) => self.tell(
                    ex,
                    |conn, cx| conn.upstream_ended(ex, cx),
                    |q, cx| q.upstream_news(ex, None, cx),
                ),
                News::Woken(ex) => self.drive_exchange(ex),
            };
        }
        closed
    }

    /// Tells the connection of `ex` (HTTP/1, HTTP/2 or HTTP/3) with `f`, if
    /// it is still there; true when it closed.
    fn tell(
        &mut self,
        ex: ExchangeId,
        f: impl FnOnce(&mut Connection, &mut Ctx<'_>) -> Drive,
        h3: impl FnOnce(&mut crate::conn::h3::Quic, &mut Ctx<'_>),
    ) -> bool {
        if ex.slot >= H3_SLOT_BASE {
            self.quic_call(h3);
            return false;
        }
        if !self.is_current(ex) {
            return false;
        }
        let d = with_conn!(self, ex.slot, |conn, cx| f(conn, &mut cx));
        self.after_drive(ex.slot, d)
    }

    /// After a connection was driven, acts on what it said it waits for
    /// (`drive`, `None` when its slot was empty): drops it when closed,
    /// registers it with the poll when it has to wait (for writability too
    /// once a write blocked), and keeps it on the wake list when it stopped
    /// with work left. Returns true when the connection was removed.
    pub(super) fn after_drive(&mut self, key: usize, drive: Option<Drive>) -> bool {
        let registry = self.poll.registry();
        let (Some(conn), Some(drive)) = (self.conns.get_mut(key), drive) else {
            return false;
        };
        let want_writes = match drive {
            Drive::Closed => {
                self.conns.remove(key);
                self.sv.board.close(key);
                return true;
            }
            Drive::Again { writes } => {
                self.wake.push(conn.id);
                writes
            }
            Drive::Wait { writes } => writes,
        };
        // Writability is watched only once a write has blocked: a socket
        // registered for it reports "writable" at once, one more turn of the
        // loop for nothing on every connection that never fills its buffer.
        let watch = if !conn.registered {
            Some(registry.register(&mut conn.stream, Token(key), interest(want_writes)))
        } else if want_writes && !conn.watches_writes {
            Some(registry.reregister(&mut conn.stream, Token(key), interest(true)))
        } else {
            None
        };
        if let Some(result) = watch {
            if let Err(e) = result {
                log::error!("cannot register a connection: {e}");
                let mut cx = Ctx {
                    sv: &mut self.sv,
                    pool: &mut self.pool,
                    registry,
                };
                conn.close(&mut cx);
                self.conns.remove(key);
                self.sv.board.close(key);
                return true;
            }
            conn.registered = true;
            conn.watches_writes |= want_writes;
        }
        false
    }

    /// Readiness of a backend connection: its job's answer goes on to its
    /// client. Returns true when a connection closed.
    fn backend_event(&mut self, bkey: usize, ev: &mio::event::Event) -> bool {
        let now = self.sv.clock.mono_secs;
        let Some(ex) = self.sv.upstream.on_event(bkey, ev, now) else {
            return false;
        };
        if ex.slot >= H3_SLOT_BASE {
            self.quic_call(|q, cx| q.backend_ready(ex, bkey, cx));
            return false;
        }
        if !self.is_current(ex) {
            return false;
        }
        let d = with_conn!(self, ex.slot, |conn, cx| conn
            .backend_ready(ex, bkey, &mut cx));
        self.after_drive(ex.slot, d)
    }

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
    fn accept_backlog(&mut self) {
        if std::mem::take(&mut self.accept_more) {
            for i in 0..self.listeners.len() {
                self.accept_from(i);
            }
        }
    }

    /// A slot may have freed (a connection closed, or a second passed):
    /// takes waiting clients. Accepting stays marked paused meanwhile, so
    /// that what is answered now closes too while others wait behind it.
    fn resume_accepting(&mut self) {
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
    fn reclaim_idle(&mut self, now: u64) -> bool {
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

    /// Once a second: time-outs, log flushing. Returns true when a connection closed.
    fn tick(&mut self) -> bool {
        let now = self.sv.clock.mono_secs;
        self.sv.recent.tick(&self.sv.stats);
        let news = self.sv.upstream.on_tick(now, self.poll.registry());
        let mut any_closed = self.deliver(news);
        // server.kbytes-per-second: a new second for every limited scope.
        self.sv.scope_bytes.tick(now);
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        let mut lingering = 0;
        for key in keys {
            let d = with_conn!(self, key, |conn, cx| conn.on_tick(&mut cx));
            any_closed |= self.after_drive(key, d);
            if let Some(c) = self.conns.get(key) {
                lingering += usize::from(c.is_lingering());
            }
        }
        if !self.quic.is_off() {
            self.quic_call(|q, cx| q.tick(cx));
        }
        // The count kept as connections change phase, made exact again.
        self.sv.lingering = lingering;
        if self.sv.accept_paused {
            any_closed |= self.reclaim_idle(now);
        }
        self.tls.tick(self.sv.clock.unix);
        self.sv.logs.flush();
        self.sv.files.purge(now);
        let global = std::rc::Rc::clone(&self.sv.config.global);
        self.sv.deflate.on_tick(now, &|_, meta| {
            crate::handler::static_file::etag_of(meta, &global)
        });
        self.sv.auth.on_tick(self.sv.clock.unix);
        if let Some(r) = self.sv.rrd.as_mut() {
            r.on_tick(self.sv.clock.unix);
        }
        any_closed
    }
}
