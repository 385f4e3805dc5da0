//! The transport under a connection: the socket as it is, or TLS over it
//! (rustls through [`TlsConn`]). HTTP above it sees plaintext either way;
//! this file has the TLS side of reading, writing and closing, and the
//! handshake's limits.

use std::rc::Rc;

use super::{Connection, Ctx, Flushed};
use crate::exchange::TlsFacts;
use crate::output::{WriteError, WriteOutcome};
use crate::proto::h1::session::Read;
use crate::tls::{TlsConn, TlsError, PLAIN_HTTP_RESPONSE};

/// A TLS handshake must be done within this many seconds of the accept,
/// or `server.max-read-idle` when that is shorter (nginx's
/// `ssl_handshake_timeout` is 60 s; a browser needs well under one): a
/// client that stalls its handshake holds a slot no longer.
pub const HANDSHAKE_SECS: u64 = 10;

/// While clients wait for a slot, a handshake whose client has sent
/// nothing for this long gives its slot up: a browser sends its
/// ClientHello, and its next flight, within a round trip, and a flood of
/// connections that never speak would otherwise hold every handshake slot
/// for [`HANDSHAKE_SECS`] at a time while real clients wait behind them.
pub const SILENT_HANDSHAKE_US: u64 = 2_000_000;

impl Connection {
    /// A TLS connection: one read of records from the socket, then the
    /// plaintext they carry into the input buffer.
    pub(super) fn read_tls(&mut self, cx: &mut Ctx<'_>) {
        let mut input = self.input.take().unwrap_or_else(|| cx.pool.take_in());
        // A head must be complete within max-read-idle of its first byte.
        let heading = self.h1.read_state() == Read::Head && !input.is_empty();
        let got = self.read_tls_into(&mut input, cx);
        if self.mode == super::Mode::Closed {
            cx.pool.put_in(input);
            return;
        }
        self.input = Some(input);
        self.note_handshake();
        if self.tls_facts.is_some() {
            self.end_handshake(cx);
        }
        if got && !heading {
            self.last_active = cx.sv.clock.mono_us;
        }
    }

    /// Moves records from the socket and plaintext into `input`; whether
    /// plaintext came.
    fn read_tls_into(&mut self, input: &mut crate::buf::InBuf, cx: &mut Ctx<'_>) -> bool {
        let Some(tls) = self.tls.as_deref_mut() else {
            return false;
        };
        let spare = input.spare();
        if spare.is_empty() {
            return false;
        }
        let want = spare.len();
        // Plaintext rustls holds from an earlier read goes first.
        let mut n = tls.read_plain(spare);
        if n == 0 {
            match tls.read_tls_from(&mut self.stream) {
                Ok(st) => {
                    if st.received && self.in_handshake {
                        // The client is not silent (SILENT_HANDSHAKE_US).
                        self.last_active = cx.sv.clock.mono_us;
                    }
                    n = tls.read_plain(spare);
                    // As a plain read: a peer that closed is read to the end.
                    if st.socket_drained && n < want && !self.peer_closed {
                        self.readable = false;
                    }
                    if st.peer_closed && n == 0 {
                        // The client closed (close_notify or end of stream).
                        self.readable = false;
                        self.on_eof(cx);
                        return false;
                    }
                }
                Err(TlsError::PlainHttp) => {
                    // Plain HTTP on the TLS port: a short answer in clear, as
                    // nginx gives, then the connection closes.
                    log::debug!("plain HTTP from {:?} on a TLS socket", self.peer);
                    let _ = std::io::Write::write(&mut self.stream, PLAIN_HTTP_RESPONSE);
                    self.close(cx);
                    return false;
                }
                Err(e) => {
                    log::debug!("TLS from {:?}: {e}", self.peer);
                    self.close(cx);
                    return false;
                }
            }
        }
        input.filled(n);
        if n > 0 {
            cx.sv.stats.bytes_in += n as u64;
            cx.sv.board.read(self.id.slot, n, cx.sv.clock.mono_secs);
        }
        n > 0
    }

    /// Once the handshake is done: what it came to, for the exchanges.
    fn note_handshake(&mut self) {
        let Some(tls) = self.tls.as_deref() else {
            return;
        };
        if self.tls_facts.is_some() || tls.is_handshaking() {
            return;
        }
        let Some(info) = tls.info() else { return };
        let mut env = info.env();
        if let Some(cert) = tls.client_cert() {
            env.extend(cert.env());
        }
        self.tls_facts = Some(Rc::new(TlsFacts {
            version: info.version,
            env,
        }));
    }

    /// The handshake is over (done, or the connection closes): it no
    /// longer counts against the share of slots handshakes may hold.
    pub(super) fn end_handshake(&mut self, cx: &mut Ctx<'_>) {
        if std::mem::take(&mut self.in_handshake) {
            let st = &mut cx.sv.stats;
            st.tls_handshaking = st.tls_handshaking.saturating_sub(1);
            // Done (its facts are known), or given up as the connection closes.
            let resumed = self
                .tls
                .as_deref()
                .and_then(TlsConn::info)
                .map(|i| i.resumed);
            match (self.tls_facts.is_some(), resumed) {
                (true, Some(true)) => st.tls_resumed += 1,
                (true, _) => st.tls_full += 1,
                (false, _) => st.tls_failed += 1,
            }
        }
    }

    /// Writes the output queue through TLS.
    pub(super) fn flush_tls(&mut self, max: u64, cx: &mut Ctx<'_>) -> Option<Flushed> {
        let tls = self.tls.as_deref_mut()?;
        let result = self.out.write_tls(tls, &mut self.stream, max);
        Some(self.after_flush(result, cx))
    }

    /// Handshake records (and alerts) rustls has to send while no
    /// response is queued.
    pub(super) fn flush_tls_records(&mut self, cx: &mut Ctx<'_>) {
        let Some(tls) = self.tls.as_deref_mut() else {
            return;
        };
        if !tls.wants_write() || !self.writable {
            return;
        }
        match tls.write_tls_to(&mut self.stream) {
            Ok(true) => {}
            Ok(false) => self.writable = false,
            Err(e) => {
                log::debug!("TLS write to {:?}: {e}", self.peer);
                self.close(cx);
            }
        }
    }

    /// Before a close: close_notify, sent as far as the socket takes it.
    pub(super) fn tls_goodbye(&mut self) {
        if let Some(tls) = self.tls.as_deref_mut() {
            tls.close_notify();
            let _ = tls.write_tls_to(&mut self.stream);
        }
    }

    /// The handshake is still under way after [`HANDSHAKE_SECS`]; or, while
    /// clients wait for a slot (accepting paused at the limit, or TLS
    /// listeners held at the handshakes' share), its client has sent
    /// nothing for [`SILENT_HANDSHAKE_US`] (since the accept, or its last
    /// bytes).
    pub(super) fn handshake_overdue(&self, cx: &Ctx<'_>) -> bool {
        if !self.tls.as_deref().is_some_and(TlsConn::is_handshaking) {
            return false;
        }
        let max_read_idle = cx.sv.config.global.limits.max_read_idle as u64;
        let clock = &cx.sv.clock;
        clock.mono_secs.saturating_sub(self.born) >= HANDSHAKE_SECS.min(max_read_idle)
            || (cx.sv.accept_paused || cx.sv.tls_held)
                && self.idle_us(clock.mono_us) >= SILENT_HANDSHAKE_US
    }

    /// How a write ended, for both transports.
    pub(super) fn after_flush(
        &mut self,
        result: Result<WriteOutcome, WriteError>,
        cx: &mut Ctx<'_>,
    ) -> Flushed {
        let n = self.out.take_written();
        self.throttle.wrote(n, &mut cx.sv.scope_bytes);
        if n > 0 {
            cx.sv.stats.bytes_out += n;
            self.last_active = cx.sv.clock.mono_us;
        }
        let drained = matches!(result, Ok(WriteOutcome::Done)) && self.out.is_empty();
        if n > 0 || drained {
            cx.sv.board.wrote(self.id.slot, n, drained);
        }
        match result {
            Ok(WriteOutcome::Done) => Flushed::Done,
            // Held by a download limit: the tick drives it on.
            Ok(WriteOutcome::Capped) => {
                self.throttle.hold();
                Flushed::Blocked
            }
            Ok(WriteOutcome::Blocked) => {
                self.writable = false;
                Flushed::Blocked
            }
            Err(e) => {
                match e {
                    WriteError::PeerGone => {}
                    WriteError::FileTruncated => {
                        log::warn!("a file shrank while it was being sent; connection closed")
                    }
                    WriteError::Io(e) => log::warn!("write to client failed: {e}"),
                }
                self.close(cx);
                Flushed::Closed
            }
        }
    }
}
