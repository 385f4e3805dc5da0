//! [`TlsConn`]: one server-side TLS connection driven by the caller's
//! event loop, as rustls's `examples/src/bin/tlsserver-mio.rs` drives one:
//! on readable, [`TlsConn::read_tls_from`] (read_tls + process_new_packets
//! until the socket would block) and then [`TlsConn::read_plain`]; to send,
//! [`TlsConn::write_plain`] / [`TlsConn::send_file`] and, on writable,
//! [`TlsConn::write_tls_to`]; the mio interest comes from
//! [`TlsConn::wants_read`] / [`TlsConn::wants_write`].
//!
//! The ClientHello goes through rustls's `Acceptor` first, so the scope
//! (certificate, client-certificate policy, ACME challenge) is chosen from
//! the SNI name and ALPN offer before the handshake goes on.

use std::fs::File;
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use rustls::server::Acceptor;
use rustls::{HandshakeKind, ProtocolVersion, ServerConnection};

use super::context::{Scope, TlsContext};
use super::verify::ClientCertInfo;
use super::{ciphers, TlsError, ALPN_ACME_TLS_1};

/// Plaintext plus ciphertext rustls buffers for sending (rustls's own
/// default): four full 16 KiB records. Past it `write_plain` and
/// `send_file` take nothing until the socket drains.
pub const SEND_BUFFER_LIMIT: usize = 64 * 1024;
/// The plaintext size of a full TLS record.
pub const RECORD_SIZE: usize = 16 * 1024;
/// Bytes of a file read per pread by [`TlsConn::send_file`] (rustls cuts
/// them into records): a file up to 32 KiB costs one pread. The buffer is
/// one per thread, zeroed once: a 16 KiB array per call was zeroed every
/// time (16,400 of the 125,000 instructions of a keep-alive 25 KB answer)
/// and took two preads for that answer.
const FILE_READ: usize = 2 * RECORD_SIZE;

thread_local! {
    static FILE_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; FILE_READ]);
}

/// Stop reading the socket while this much plaintext waits to be taken:
/// rustls refuses more past its 16 KiB received-plaintext limit.
const PLAINTEXT_HIGH_WATER: usize = 16 * 1024;

/// The answer to plain HTTP sent to a TLS port, to be written in clear
/// before closing (what nginx answers in that case).
pub const PLAIN_HTTP_RESPONSE: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
Content-Type: text/plain\r\n\
Content-Length: 47\r\n\
Connection: close\r\n\
\r\n\
The plain HTTP request was sent to HTTPS port\r\n";

/// A TLS record of type handshake (22) opens every ClientHello.
const HANDSHAKE_RECORD: u8 = 0x16;

enum State {
    /// Reading the ClientHello.
    Hello(Box<Acceptor>),
    /// Handshaking or established.
    Open(Box<ServerConnection>),
    /// A fatal error was reported; nothing more will happen.
    Failed,
}

/// What one [`TlsConn::read_tls_from`] call found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStatus {
    /// Plaintext bytes waiting for [`TlsConn::read_plain`].
    pub plaintext: usize,
    /// The socket would block, or a read came back short (it emptied the
    /// socket; a peer that also closed is seen at the next read, which the
    /// caller does when its poll said the peer closed): wait for the next
    /// readable event. When false, reading stopped because plaintext piled
    /// up: take it and call again (an edge-triggered poll will not report
    /// the socket again).
    pub socket_drained: bool,
    /// The peer sent close_notify or closed TCP: no more data will come.
    pub peer_closed: bool,
    /// Bytes came from the socket (records, or part of one).
    pub received: bool,
}

/// The handshake's outcome, for logs, mod_status and lighttpd's `SSL_*`
/// request variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandshakeInfo {
    /// The SNI name, lower case.
    pub sni: Option<String>,
    /// The ALPN protocol chosen.
    pub alpn: Option<Vec<u8>>,
    /// `TLSv1.2` or `TLSv1.3` (`SSL_PROTOCOL`).
    pub version: &'static str,
    /// OpenSSL's name of the suite (`SSL_CIPHER`).
    pub cipher: String,
    /// Its key bits (`SSL_CIPHER_USEKEYSIZE` and `_ALGKEYSIZE`).
    pub cipher_bits: u16,
    /// Resumed from a ticket or the session cache.
    pub resumed: bool,
}

impl HandshakeInfo {
    /// True for an ACME tls-alpn-01 validation: close once the handshake
    /// is done (lighttpd does), no HTTP follows.
    pub fn is_acme_challenge(&self) -> bool {
        self.alpn.as_deref() == Some(ALPN_ACME_TLS_1)
    }

    /// `SSL_PROTOCOL`, `SSL_CIPHER`, `SSL_CIPHER_USEKEYSIZE`, `SSL_CIPHER_ALGKEYSIZE`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("SSL_PROTOCOL".into(), self.version.into()),
            ("SSL_CIPHER".into(), self.cipher.clone()),
            ("SSL_CIPHER_USEKEYSIZE".into(), self.cipher_bits.to_string()),
            ("SSL_CIPHER_ALGKEYSIZE".into(), self.cipher_bits.to_string()),
        ]
    }
}

/// Notes the first byte read from the socket, to tell plain HTTP apart.
struct Sniff<'a, R> {
    inner: &'a mut R,
    first: &'a mut Option<u8>,
}

impl<R: Read> Read for Sniff<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.first.is_none() && n > 0 {
            *self.first = Some(buf[0]);
        }
        Ok(n)
    }
}

/// A reader that notes whether a read returned less than asked for.
struct Measured<'a, R> {
    inner: &'a mut R,
    short: bool,
}

impl<R: Read> Read for Measured<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

/// One TLS connection over a non-blocking socket (anything `Read + Write`).
pub struct TlsConn {
    ctx: TlsContext,
    state: State,
    scope: Option<Arc<Scope>>,
    first_byte: Option<u8>,
}

impl TlsConn {
    /// A connection accepted on a socket configured with `ctx`.
    pub fn new(ctx: &TlsContext) -> TlsConn {
        TlsConn {
            ctx: ctx.clone(),
            state: State::Hello(Box::default()),
            scope: None,
            first_byte: None,
        }
    }

    /// Reads and processes TLS from `sock` until it would block (or
    /// plaintext piles up, or the peer closed). Handshake replies and
    /// alerts are left for [`write_tls_to`](Self::write_tls_to), except
    /// the alert of a failed ClientHello, written here before the error
    /// returns. [`TlsError::PlainHttp`]: answer [`PLAIN_HTTP_RESPONSE`].
    pub fn read_tls_from<S: Read + Write>(&mut self, sock: &mut S) -> Result<ReadStatus, TlsError> {
        let mut st = ReadStatus::default();
        loop {
            let step = match self.state {
                State::Failed => return Err(TlsError::Closed),
                State::Hello(_) => self.read_hello(sock, &mut st)?,
                State::Open(_) => self.read_records(sock, &mut st)?,
            };
            if step.is_break() {
                return Ok(st);
            }
        }
    }

    /// One read towards the ClientHello; once it is whole, the connection
    /// its name selects. `Break`: `st` is the answer.
    #[inline]
    fn read_hello<S: Read + Write>(
        &mut self,
        sock: &mut S,
        st: &mut ReadStatus,
    ) -> Result<ControlFlow<()>, TlsError> {
        let State::Hello(acceptor) = &mut self.state else {
            return Ok(ControlFlow::Continue(()));
        };
        let mut sniff = Sniff {
            inner: sock,
            first: &mut self.first_byte,
        };
        match acceptor.read_tls(&mut sniff) {
            Ok(0) => {
                st.peer_closed = true;
                st.socket_drained = true;
                return Ok(ControlFlow::Break(()));
            }
            Ok(_) => st.received = true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                st.socket_drained = true;
                return Ok(ControlFlow::Break(()));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                return Ok(ControlFlow::Continue(()))
            }
            Err(e) => return Err(self.fail(TlsError::Io(e))),
        }
        if self
            .first_byte
            .is_some_and(|b| b != HANDSHAKE_RECORD && b.is_ascii_uppercase())
        {
            return Err(self.fail(TlsError::PlainHttp));
        }
        let accepted = match acceptor.accept() {
            Ok(None) => return Ok(ControlFlow::Continue(())),
            Ok(Some(a)) => a,
            Err((e, mut alert)) => {
                let _ = alert.write_all(sock);
                return Err(self.fail(TlsError::Protocol(e)));
            }
        };
        let (scope, config) = self.ctx.select(&accepted.client_hello());
        match accepted.into_connection(config) {
            Ok(mut conn) => {
                conn.set_buffer_limit(Some(SEND_BUFFER_LIMIT));
                self.scope = Some(scope);
                self.state = State::Open(Box::new(conn));
                Ok(ControlFlow::Continue(()))
            }
            Err((e, mut alert)) => {
                let _ = alert.write_all(sock);
                Err(self.fail(TlsError::Protocol(e)))
            }
        }
    }

    /// The records read so far processed, then one more read unless
    /// plaintext piled up or the socket is done. `Break`: `st` is the answer.
    #[inline]
    fn read_records<S: Read + Write>(
        &mut self,
        sock: &mut S,
        st: &mut ReadStatus,
    ) -> Result<ControlFlow<()>, TlsError> {
        let State::Open(conn) = &mut self.state else {
            return Ok(ControlFlow::Continue(()));
        };
        let io_state = match conn.process_new_packets() {
            Ok(s) => s,
            Err(e) => {
                // Best effort: the alert rustls queued for this.
                let _ = conn.write_tls(sock);
                return Err(self.fail(TlsError::Protocol(e)));
            }
        };
        st.plaintext = io_state.plaintext_bytes_to_read();
        st.peer_closed |= io_state.peer_has_closed();
        if st.socket_drained || st.peer_closed || st.plaintext >= PLAINTEXT_HIGH_WATER {
            return Ok(ControlFlow::Break(()));
        }
        let mut rd = Measured {
            inner: &mut *sock,
            short: false,
        };
        match conn.read_tls(&mut rd) {
            Ok(0) => {
                st.peer_closed = true;
                st.socket_drained = true;
            }
            // A short read emptied the socket: the next bytes
            // bring a new event, and a read to find that out
            // would be one more syscall per request.
            Ok(_) => {
                st.received = true;
                st.socket_drained = rd.short;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => st.socket_drained = true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(self.fail(TlsError::Io(e))),
        }
        Ok(ControlFlow::Continue(()))
    }

    fn fail(&mut self, e: TlsError) -> TlsError {
        self.state = State::Failed;
        e
    }

    /// Takes up to `buf.len()` bytes of decrypted data; 0 when none waits.
    pub fn read_plain(&mut self, buf: &mut [u8]) -> usize {
        match &mut self.state {
            State::Open(conn) => conn.reader().read(buf).unwrap_or(0),
            _ => 0,
        }
    }

    /// Queues plaintext for sending; returns how much was taken (0 while
    /// the send buffer is full or before the ClientHello was read).
    pub fn write_plain(&mut self, data: &[u8]) -> usize {
        match &mut self.state {
            State::Open(conn) => conn.writer().write(data).unwrap_or(0),
            _ => 0,
        }
    }

    /// Queues `len` bytes of `file` from `offset`, read with pread in
    /// record-sized pieces, as far as the send buffer allows; returns how
    /// many were taken. pread rather than a mapping: a file truncated under
    /// a mapping raises SIGBUS, here it is [`TlsError::FileTruncated`].
    pub fn send_file(&mut self, file: &File, offset: u64, len: u64) -> Result<u64, TlsError> {
        let State::Open(conn) = &mut self.state else {
            return Ok(0);
        };
        FILE_BUF.with_borrow_mut(|buf| {
            let mut taken = 0u64;
            while taken < len {
                let want = (len - taken).min(buf.len() as u64) as usize;
                let n = match file.read_at(&mut buf[..want], offset + taken) {
                    Ok(0) => return Err(TlsError::FileTruncated),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(TlsError::Io(e)),
                };
                let w = conn.writer().write(&buf[..n]).map_err(TlsError::Io)?;
                taken += w as u64;
                if w < n {
                    break;
                }
            }
            Ok(taken)
        })
    }

    /// Writes queued TLS records to `sock`; `Ok(true)` when all went,
    /// `Ok(false)` when the socket would block with some left.
    pub fn write_tls_to<W: Write>(&mut self, sock: &mut W) -> Result<bool, TlsError> {
        let State::Open(conn) = &mut self.state else {
            return Ok(true);
        };
        while conn.wants_write() {
            match conn.write_tls(sock) {
                Ok(0) => return Err(TlsError::Io(io::ErrorKind::WriteZero.into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(TlsError::Io(e)),
            }
        }
        Ok(true)
    }

    /// Wants a readable event (mio interest).
    pub fn wants_read(&self) -> bool {
        match &self.state {
            State::Hello(_) => true,
            State::Open(c) => c.wants_read(),
            State::Failed => false,
        }
    }

    /// Wants a writable event (mio interest).
    pub fn wants_write(&self) -> bool {
        match &self.state {
            State::Open(c) => c.wants_write(),
            _ => false,
        }
    }

    /// Still before the end of the handshake.
    pub fn is_handshaking(&self) -> bool {
        match &self.state {
            State::Hello(_) => true,
            State::Open(c) => c.is_handshaking(),
            State::Failed => false,
        }
    }

    /// Queues close_notify; flush with `write_tls_to`, then close.
    pub fn close_notify(&mut self) {
        if let State::Open(c) = &mut self.state {
            c.send_close_notify();
        }
    }

    /// The handshake's outcome, once it is done.
    pub fn info(&self) -> Option<HandshakeInfo> {
        let State::Open(c) = &self.state else {
            return None;
        };
        if c.is_handshaking() {
            return None;
        }
        let suite = c.negotiated_cipher_suite()?;
        let (cipher, cipher_bits) = ciphers::openssl_name(suite.suite());
        Some(HandshakeInfo {
            sni: c.server_name().map(super::context::normalize),
            alpn: c.alpn_protocol().map(<[u8]>::to_vec),
            version: match c.protocol_version() {
                Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
                _ => "TLSv1.2",
            },
            cipher,
            cipher_bits,
            resumed: c.handshake_kind() == Some(HandshakeKind::Resumed),
        })
    }

    /// lighttpd's `SSL_CLIENT_*` for a scope with `ssl.verifyclient.activate`;
    /// `None` where client certificates are not asked for.
    pub fn client_cert(&self) -> Option<ClientCertInfo> {
        let State::Open(c) = &self.state else {
            return None;
        };
        let (verifier, spec) = self.scope.as_ref()?.verify.as_ref()?;
        if c.is_handshaking() {
            return None;
        }
        Some(ClientCertInfo::new(c.peer_certificates(), verifier, spec))
    }
}
