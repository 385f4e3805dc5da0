//! The socket's bytes: one read and what the client's end of stream
//! means for the connection, and writing the output queue (throttled, and
//! through TLS when the connection has it).

use std::io;

use super::{Connection, Ctx, Flushed, Mode};
use crate::proto::h1::session as h1;

impl Connection {
    /// Writes queued output while the socket takes it. A write error closes
    /// the connection (logged unless the peer simply went away).
    pub(super) fn flush(&mut self, cx: &mut Ctx<'_>) -> Flushed {
        if !self.writable {
            return Flushed::Blocked;
        }
        let max = self.throttle.allowance(&cx.sv.scope_bytes);
        if max == 0 {
            // The tick lifts the hold (see `output::throttle`).
            return Flushed::Blocked;
        }
        if let Some(f) = self.flush_tls(max, cx) {
            return f;
        }
        // The answer is whole in the queue and the connection closes after
        // it (at once, or by shutting its write side): its end can wait for
        // the FIN.
        let last = self.mode == Mode::Http1
            && matches!(self.h1.write_state(), h1::Write::Closing { .. })
            && self.encoded.is_none()
            && self.gw.is_none()
            && self.stream.is_tcp();
        let result = self.out.write_to(self.stream.fd(), last, max);
        self.after_flush(result, cx)
    }

    /// One read from the socket, then whatever the bytes allow.
    pub(super) fn read_some(&mut self, cx: &mut Ctx<'_>) {
        if self.tls.is_some() {
            return self.read_tls(cx);
        }
        let input = self.input.get_or_insert_with(|| cx.pool.take_in());
        // A head must be complete within max-read-idle of its first byte:
        // bytes that trickle in (slowloris) do not extend it.
        let heading = self.h1.read_state() == h1::Read::Head && !input.is_empty();
        let spare = input.spare();
        if spare.is_empty() {
            return;
        }
        let want = spare.len();
        match self.stream.read(spare) {
            Ok(0) => {
                self.readable = false;
                self.on_eof(cx);
            }
            Ok(n) => {
                // A short read drained the socket: the next bytes bring a new event.
                if n < want && !self.peer_closed {
                    self.readable = false;
                }
                input.filled(n);
                cx.sv.stats.bytes_in += n as u64;
                cx.sv.board.read(self.id.slot, n, cx.sv.clock.mono_secs);
                if !heading {
                    self.last_active = cx.sv.clock.mono_us;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.close(cx),
        }
    }

    /// The client closed its side: the tunnel's backend hears it; a body
    /// cut short fails its exchange; otherwise what is in progress is
    /// still answered and written, then the connection closes.
    pub(super) fn on_eof(&mut self, cx: &mut Ctx<'_>) {
        if self.mode == Mode::Http2 {
            return self.close(cx);
        }
        let half_close = self.h1.may_half_close();
        match self.h1.peer_closed() {
            h1::Eof::Tunnel => {
                if self.gw.is_some() {
                    // The backend hears it, and may still answer before it
                    // closes too.
                    self.with_sink_and(cx, |sink, up, registry, now, job| {
                        up.end_input(job, sink, now, registry)
                    });
                } else {
                    self.close(cx);
                }
            }
            h1::Eof::BodyCut => self.close(cx),
            h1::Eof::Finish => {
                if self.gw.is_some() && self.client_gone(half_close, cx) {
                    log::debug!("client {:?} left before its answer was complete", self.peer);
                    self.close(cx);
                } else if self.h1.write_state() == h1::Write::Idle
                    && self.out.is_empty()
                    && self.encoded.is_none()
                {
                    self.close(cx);
                }
            }
        }
    }
}
