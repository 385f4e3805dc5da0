//! One turn of the loop: wait for readiness, accept, drive the connections
//! and backends the events name, deliver what the backends' side has for
//! connections (failures, ends, room for more body), the once-a-second
//! tick, and the stop checks.

use std::io;
use std::time::Duration;

use mio::{Events, Token};

use super::quic::QUIC_TOKEN_BASE;
use super::{Server, LISTENER_BASE, SCRIPTS, SIGNAL, WAKER};
use crate::conn::h3::SLOT_BASE as H3_SLOT_BASE;
use crate::conn::{Connection, Ctx, Drive};
use crate::msg::ExchangeId;
use crate::net::interest;
use crate::upstream::News;
use crate::upstream::BACKEND_BASE;

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
            let wait = self.poll_wait();
            match self.poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => events.clear(),
                Err(e) => return Err(e),
            }
            if self.turn(&events) {
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

    /// How long the next poll may wait: not at all while work is queued,
    /// else until the next second's tick or a backend's or QUIC's timer.
    #[inline]
    fn poll_wait(&mut self) -> Duration {
        let mut to_next_second = 1_000_000 - self.sv.clock.mono_us % 1_000_000;
        if self.rotate_at != 0 {
            // Clients wait at the limit: the next rotation is due on time.
            let next = self.rotate_at.saturating_sub(self.sv.clock.mono_us);
            to_next_second = to_next_second.min(next);
        }
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
        match self.quic.wait(std::time::Instant::now()) {
            Some(q) => wait.min(q),
            None => wait,
        }
    }

    /// One turn after a poll: signals, the events, the woken and held
    /// exchanges, mod_magnet's quantum, the tick, the backends' queue and
    /// accepting again. True when the server is to stop.
    #[inline]
    fn turn(&mut self, events: &Events) -> bool {
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
        self.accept_backlog();
        let mut closed_any = self.dispatch(events);
        if !self.quic.is_off() {
            self.quic_call(|q, cx| q.on_timers(cx));
        }
        closed_any |= self.drive_woken();
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
        closed_any |= self.rotate();
        // A connection that began to linger gave up its slot too.
        let freed = closed_any || self.sv.lingering > lingering_before;
        if (freed || new_second) && self.sv.accept_paused {
            self.resume_accepting();
        }
        self.accept_held();
        self.check_stop()
    }

    /// Each event to what its token names: a listener, a QUIC endpoint,
    /// the script watch, the signal pipe, the waker, a backend or a
    /// connection. True when a connection closed.
    #[inline]
    fn dispatch(&mut self, events: &Events) -> bool {
        let mut closed_any = false;
        for ev in events.iter() {
            let t = ev.token().0;
            if t >= LISTENER_BASE {
                self.accept_all(t - LISTENER_BASE);
            } else if (QUIC_TOKEN_BASE..BACKEND_BASE).contains(&t) {
                self.quic_call(|q, cx| q.on_readable(t - QUIC_TOKEN_BASE, cx));
            } else if ev.token() == SCRIPTS {
                // Read before the events (in `turn`).
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
        closed_any
    }

    /// The exchanges woken this turn, then those whose backend's answer
    /// was held until now. True when a connection closed.
    #[inline]
    fn drive_woken(&mut self) -> bool {
        let mut closed_any = false;
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
        closed_any
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
