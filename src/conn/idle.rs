//! What time and the server loop do to a connection between its reads:
//! idle and read/write time-outs, lingering, a graceful shutdown, a wake.

use super::{Connection, Ctx, Drive, Mode};
use crate::buf::InBuf;
use crate::msg::ExchangeId;
use crate::proto::h1::session::Read;

impl Connection {
    /// Lingering after its last answer (it waits only for the client's end).
    pub fn is_lingering(&self) -> bool {
        self.mode == Mode::Http1 && self.h1.linger_until().is_some()
    }

    /// Microseconds the connection has gone without progress at `now`
    /// (`clock.mono_us`).
    pub fn idle_us(&self, now: u64) -> u64 {
        now.saturating_sub(self.last_active)
    }

    /// Whether the connection waits for a request with nothing read of it,
    /// nothing to write and no backend: keep-alive between requests, or a
    /// client that has sent nothing yet. Closing such a connection loses
    /// nothing the client sent.
    pub fn is_idle(&self) -> bool {
        if self.mode == Mode::Http2 {
            // No stream open, nothing to write or half read.
            return self.h2.as_deref().is_some_and(|s| s.is_idle()) && self.out.is_empty();
        }
        self.mode == Mode::Http1
            && self.idle_h1()
            && !self.readable
            && self.tls.as_deref().is_none_or(|t| !t.is_handshaking())
            && self.input.as_ref().is_none_or(InBuf::is_empty)
    }

    /// Gives an idle connection's slot up to clients waiting at the limit.
    /// An HTTP/1 connection says goodbye (TLS close_notify, then its FIN)
    /// and lingers, reading and dropping what comes: a request the client
    /// sent just then, already in the socket but not yet read, does not turn
    /// the close into a reset (which clients report as an error); the client
    /// sees the end of a keep-alive connection and retries. A lingering
    /// connection does not count against the limit. Any other, or without
    /// `linger` (no room left for lingering sockets), closes.
    pub fn reclaim(&mut self, linger: bool, cx: &mut Ctx<'_>) -> Drive {
        if linger && self.mode == Mode::Http1 {
            self.h1.linger(cx.sv.clock.mono_secs);
            self.start_linger(cx);
            return Drive::Wait { writes: false };
        }
        self.close(cx);
        Drive::Closed
    }

    /// An HTTP/2 connection that serves new streams: at the connection limit
    /// its turn ends with GOAWAY (see [`Connection::end_turn`]).
    pub fn takes_new_streams(&self) -> bool {
        self.mode == Mode::Http2 && self.h2.as_deref().is_some_and(|s| !s.going_away())
    }

    /// Its turn at the connection limit came (`Server::rotate`): an HTTP/2
    /// connection says GOAWAY and finishes the streams it took, as on a
    /// graceful shutdown; the client asks for more on a new connection,
    /// behind those waiting for a slot (an HTTP/1 connection instead closes
    /// after its next answer, `Connection::offer`). Without this, a client
    /// that keeps streams open holds its slot for as long as it likes.
    pub fn end_turn(&mut self, cx: &mut Ctx<'_>) -> Drive {
        self.h2_shutdown(cx)
    }

    /// The server shuts down gracefully: an HTTP/2 connection says GOAWAY
    /// and finishes its streams (an HTTP/1 one closes after its response).
    pub fn on_shutdown(&mut self, cx: &mut Ctx<'_>) -> Drive {
        // The answers in flight go out unthrottled, as lighttpd lets them.
        self.throttle.lift();
        if self.mode == Mode::Http2 {
            return self.h2_shutdown(cx);
        }
        self.drive(cx)
    }

    /// Drives the connection for its exchange `ex`: on HTTP/2, the body
    /// window of the stream's job has room again.
    pub fn wake(&mut self, ex: ExchangeId, cx: &mut Ctx<'_>) -> Drive {
        if self.mode == Mode::Http2 {
            return self.h2_wake(ex.stream, cx);
        }
        self.drive(cx)
    }

    /// Called once a second (after the scopes' counts were cleared): a
    /// connection held by a download limit goes on when the limit allows;
    /// closes the connection when it has been idle too long, or its
    /// lingering is over.
    pub fn on_tick(&mut self, cx: &mut Ctx<'_>) -> Drive {
        let age = cx.sv.clock.mono_secs.saturating_sub(self.born);
        let resume = cx.sv.scope_bytes.is_new_second() && self.throttle.new_second(age);
        match self.check_time(cx) {
            Drive::Closed => Drive::Closed,
            _ if resume => self.drive(cx),
            d => d,
        }
    }

    /// The time-outs of [`Connection::on_tick`].
    fn check_time(&mut self, cx: &mut Ctx<'_>) -> Drive {
        let now = cx.sv.clock.mono_secs;
        if self.handshake_overdue(cx) {
            log::debug!("TLS handshake from {:?} not done in time", self.peer);
            self.close(cx);
            return Drive::Closed;
        }
        match self.mode {
            Mode::Http2 => return self.h2_tick(cx),
            Mode::Closed => return Drive::Closed,
            Mode::Http1 => {}
        }
        if let Some(until) = self.h1.linger_until() {
            if now >= until {
                self.close(cx);
                return Drive::Closed;
            }
            return Drive::Wait { writes: false };
        }
        if self.ws_tick(cx) {
            // A ping or a close to write now.
            return self.drive(cx);
        }
        let Some(limit) = self.idle_limit(cx) else {
            // Waiting on the backend, whose time-outs apply: the client is
            // idle through no fault of its own.
            self.last_active = cx.sv.clock.mono_us;
            return Drive::Wait {
                writes: !self.writable,
            };
        };
        if self.idle_us(cx.sv.clock.mono_us) >= limit.saturating_mul(1_000_000) {
            log::debug!(
                "closing idle connection from {:?} ({:?}, {:?})",
                self.peer,
                self.h1.read_state(),
                self.h1.write_state()
            );
            self.close(cx);
            return Drive::Closed;
        }
        Drive::Wait {
            writes: !self.writable,
        }
    }

    /// How long the connection may go without progress in its state;
    /// `None` while only its backend is to act.
    fn idle_limit(&self, cx: &Ctx<'_>) -> Option<u64> {
        let g = &cx.sv.config.global;
        if !self.out.is_empty() || self.encoded.is_some() {
            // Only a client that stopped reading its answer is ours.
            return Some(g.limits.max_write_idle as u64);
        }
        if let Some(gw) = self.gw.as_ref() {
            // Body bytes are due from the client: its read time-out.
            let reads_body = self.h1.feeds_body() && cx.sv.upstream.takes_body(gw.start.job);
            return reads_body.then_some(g.limits.max_read_idle as u64);
        }
        let partial = self.input.as_ref().is_some_and(|i| !i.is_empty());
        Some(match self.h1.read_state() {
            Read::Head if self.h1.requests() > 0 && !partial => g.limits.max_keep_alive_idle as u64,
            _ => g.limits.max_read_idle as u64,
        })
    }
}
