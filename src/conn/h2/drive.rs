//! The connection side of an HTTP/2 session: the protocol chosen from the
//! first bytes (or ALPN), the session entered, and the reads, answers and
//! writes of each turn; the server loop's news (ticks, shutdown, backends)
//! reach the session through here.

use super::{core_config, Io, Session, Start, ROUNDS};
use crate::conn::{Connection, Ctx, Drive, Flushed, Mode};
use crate::exchange::Services;
use crate::proto::h2::conn::{Connection as Core, PREFACE};

impl Connection {
    /// Whether this connection's first bytes (or its ALPN) ask for HTTP/2.
    pub(in crate::conn) fn h2_start(&self, pending: &[u8], sv: &Services) -> Start {
        if !sv.config.global.protocols.h2proto {
            return Start::H1;
        }
        if let Some(tls) = self.tls.as_deref() {
            let h2 = tls
                .info()
                .is_some_and(|i| i.alpn.as_deref() == Some(crate::tls::ALPN_H2));
            return if h2 { Start::H2 } else { Start::H1 };
        }
        if pending.is_empty() {
            return Start::H1;
        }
        let n = pending.len().min(PREFACE.len());
        if pending[..n] != PREFACE[..n] {
            Start::H1
        } else if n < PREFACE.len() {
            Start::Wait
        } else {
            Start::H2
        }
    }

    /// The connection speaks HTTP/2 from here on, with `core` (our SETTINGS
    /// already queued in it).
    pub(in crate::conn) fn enter_h2(&mut self, core: Option<Core>, cx: &mut Ctx<'_>) {
        let core = core.unwrap_or_else(|| Core::new(core_config(cx.sv)));
        let now = cx.sv.clock.mono_secs;
        // As lighttpd: the limits of the connection's scope (its socket)
        // apply to all its streams together.
        let scope = cx.sv.config.connection_settings(self.listener, self.peer);
        self.throttle.configure(&scope);
        self.mode = Mode::Http2;
        self.h2 = Some(Box::new(Session::new(core, now)));
        cx.sv.stats.h2_connections += 1;
        cx.sv.stats.h2_open += 1;
        cx.sv.board.h2(self.id.slot);
        if !self.nodelay {
            // Frames of many streams interleave: none may wait for an ACK.
            self.stream.set_nodelay();
            self.nodelay = true;
        }
        self.prepare_output(cx.pool);
    }

    /// The session for one call, with what it needs of the server; the
    /// session is put back after.
    pub(super) fn with_session<R>(
        &mut self,
        cx: &mut Ctx<'_>,
        f: impl FnOnce(&mut Session, &mut Io<'_>) -> R,
    ) -> Option<R> {
        let mut s = self.h2.take()?;
        let info = self.info(cx.sv);
        let mut io = Io {
            sv: &mut *cx.sv,
            registry: cx.registry,
            info,
            env: &self.proxy_env,
        };
        let r = f(&mut s, &mut io);
        if std::mem::take(&mut s.delay_output) {
            self.throttle.delay_login();
        }
        self.h2 = Some(s);
        Some(r)
    }

    /// Input read on an HTTP/2 connection: everything goes to the session.
    pub(in crate::conn) fn h2_input(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut input) = self.input.take() else {
            return;
        };
        self.with_session(cx, |s, io| {
            if !input.is_empty() {
                s.recv(input.pending(), io);
            }
        });
        input.consume_all();
        self.input = Some(input);
    }

    /// Reads, answers and writes while the socket allows.
    pub(in crate::conn) fn drive_h2(&mut self, cx: &mut Ctx<'_>) {
        let mut rounds = 0;
        while self.mode == Mode::Http2 {
            rounds += 1;
            if rounds > ROUNDS {
                self.again = true;
                break;
            }
            let reads = self.h2.as_ref().is_some_and(|s| s.core.wants_read());
            let read = self.readable && reads;
            if read {
                self.read_some(cx);
                if self.mode != Mode::Http2 {
                    return;
                }
                self.h2_input(cx);
            }
            if self
                .h2
                .as_ref()
                .is_some_and(|s| !s.pump.is_empty() || !s.held.is_empty())
            {
                self.with_session(cx, |s, io| {
                    s.pump_paused(io);
                    s.start_held(io);
                });
            }
            let now = cx.sv.clock.mono_secs;
            let stats = &mut cx.sv.stats;
            if let Some(s) = self.h2.as_deref_mut() {
                s.fill(&mut self.out, now, stats);
                if s.encode_pending {
                    // The loop comes back for the next slice.
                    self.again = true;
                }
            }
            if self.out.is_empty() {
                if let Some(s) = self.h2.as_deref_mut() {
                    s.last_write = now;
                }
                if self.h2.as_ref().is_some_and(|s| s.is_done()) {
                    self.h2_finish(cx);
                    return;
                }
                if read && self.readable {
                    continue;
                }
                break;
            }
            let before = self.out.pending_bytes();
            match self.flush(cx) {
                Flushed::Closed => return,
                f => {
                    if self.out.pending_bytes() < before {
                        if let Some(s) = self.h2.as_deref_mut() {
                            s.last_write = now;
                        }
                    }
                    if matches!(f, Flushed::Blocked) && !(read && self.readable) {
                        break;
                    }
                }
            }
        }
        if self.mode == Mode::Http2 {
            if self.out.is_empty() {
                if let Some(s) = self.h2.as_deref_mut() {
                    s.compact_if_done_early();
                }
            }
            self.release_idle_buffers(cx);
        }
    }

    /// An idle HTTP/2 connection holds no input or output buffer. The
    /// output buffer stays while a stream is open: answers still to come
    /// would take it again at once (and one that grew past the pool's
    /// bound would be allocated anew each time).
    fn release_idle_buffers(&mut self, cx: &mut Ctx<'_>) {
        if self.input.as_ref().is_some_and(|i| i.is_empty()) {
            if let Some(b) = self.input.take() {
                cx.pool.put_in(b);
            }
        }
        let streams_open = self.h2.as_deref().is_some_and(|s| s.open() > 0);
        if self.out.is_empty() && self.out.mem.capacity() > 0 && !streams_open {
            cx.pool.put_out(self.out.take_buffer());
        }
    }

    /// GOAWAY was exchanged (or sent for an error) and every stream is
    /// done: close, reading a little longer so that what the client still
    /// sends does not reset the connection under the last frames.
    fn h2_finish(&mut self, cx: &mut Ctx<'_>) {
        self.h2_release(cx);
        self.mode = Mode::Http1;
        self.h1.linger(cx.sv.clock.mono_secs);
        self.start_linger(cx);
    }

    /// Lets the session go: its jobs end, the counters drop it.
    pub(in crate::conn) fn h2_release(&mut self, cx: &mut Ctx<'_>) {
        if let Some(mut s) = self.h2.take() {
            s.drop_all(cx.sv);
            cx.sv.stats.h2_open = cx.sv.stats.h2_open.saturating_sub(1);
        }
    }

    /// Once a second, for an HTTP/2 connection.
    pub(in crate::conn) fn h2_tick(&mut self, cx: &mut Ctx<'_>) -> Drive {
        let pending = !self.out.is_empty();
        let keep = self.with_session(cx, |s, io| s.tick(pending, io));
        if keep == Some(false) {
            self.close(cx);
            return Drive::Closed;
        }
        self.drive(cx)
    }

    /// Graceful shutdown: GOAWAY; the streams open finish.
    pub(in crate::conn) fn h2_shutdown(&mut self, cx: &mut Ctx<'_>) -> Drive {
        if let Some(s) = self.h2.as_deref_mut() {
            s.core.shutdown();
        }
        self.drive(cx)
    }

    /// A backend of stream `stream` is ready: its answer goes on.
    pub(in crate::conn) fn h2_backend_ready(
        &mut self,
        stream: u32,
        bkey: usize,
        cx: &mut Ctx<'_>,
    ) -> Drive {
        self.with_session(cx, |s, io| {
            s.with_sink(stream, io, |sink, io, _| {
                let now = io.now();
                io.sv.upstream.drive_backend(bkey, sink, now, io.registry);
            });
            // The backend took body bytes: the stream's window may have room.
            s.feed_body(stream, io);
        });
        self.drive(cx)
    }

    /// The gateway exchange of `stream` failed (or ended) without a sink
    /// at hand.
    pub(in crate::conn) fn h2_upstream_news(
        &mut self,
        stream: u32,
        failed: Option<u16>,
        cx: &mut Ctx<'_>,
    ) -> Drive {
        self.with_session(cx, |s, io| {
            s.with_sink(stream, io, |sink, _, _| match failed {
                Some(status) => crate::msg::Sink::fail(sink, status),
                None => crate::msg::Sink::end(sink),
            });
        });
        self.drive(cx)
    }

    /// The body window of `stream`'s job has room again.
    pub(in crate::conn) fn h2_wake(&mut self, stream: u32, cx: &mut Ctx<'_>) -> Drive {
        if stream != 0 {
            self.with_session(cx, |s, io| s.feed_body(stream, io));
        }
        self.drive(cx)
    }
}
