//! What time and the server loop do to a connection between its reads:
//! idle and read/write time-outs, lingering, a graceful shutdown, a wake.

use super::{Connection, Ctx, Phase};
use crate::buf::InBuf;
use crate::msg::ExchangeId;

impl Connection {
    /// Lingering after its last answer (it waits only for the client's end).
    pub fn is_lingering(&self) -> bool {
        matches!(self.phase, Phase::Lingering { .. })
    }

    /// When the connection became idle, if it waits for a request with
    /// nothing read of it, nothing to write and no backend: keep-alive
    /// between requests, or a client that has sent nothing yet. Closing such
    /// a connection loses nothing the client sent.
    pub fn idle_since(&self) -> Option<u64> {
        if self.phase == Phase::Http2 {
            // No stream open, nothing to write or half read.
            return self
                .h2
                .as_deref()
                .is_some_and(|s| s.is_idle())
                .then_some(self.last_active)
                .filter(|_| self.out.is_empty());
        }
        let waiting = self.phase == Phase::Idle
            && !self.readable
            && self.out.is_empty()
            && self.gw.is_none()
            && self.tls.as_deref().is_none_or(|t| !t.is_handshaking())
            && self.input.as_ref().is_none_or(InBuf::is_empty);
        waiting.then_some(self.last_active)
    }

    /// The server shuts down gracefully: an HTTP/2 connection says GOAWAY
    /// and finishes its streams (an HTTP/1 one closes after its response).
    pub fn on_shutdown(&mut self, cx: &mut Ctx<'_>) {
        if self.phase == Phase::Http2 {
            self.h2_shutdown(cx);
        }
    }

    /// Drives the connection for its exchange `ex`: on HTTP/2, the body
    /// window of the stream's job has room again.
    pub fn wake(&mut self, ex: ExchangeId, cx: &mut Ctx<'_>) {
        if self.phase == Phase::Http2 {
            return self.h2_wake(ex.stream, cx);
        }
        self.drive(cx);
    }

    /// Called once a second: closes the connection when it has been idle too long.
    pub fn on_tick(&mut self, cx: &mut Ctx<'_>) {
        let g = &cx.sv.config.global;
        let now = cx.sv.clock.mono_secs;
        let reads_body = self
            .gw
            .as_ref()
            .is_some_and(|gw| cx.sv.upstream.takes_body(gw.start.job));
        if self.handshake_overdue(now, g.max_read_idle as u64) {
            log::debug!("TLS handshake from {:?} not done in time", self.peer);
            self.close(cx);
            return;
        }
        if self.phase == Phase::Http2 {
            return self.h2_tick(cx);
        }
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
            Phase::Lingering { until, .. } => {
                if now >= until {
                    self.close(cx);
                }
                return;
            }
            Phase::Closed | Phase::Http2 => return,
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
