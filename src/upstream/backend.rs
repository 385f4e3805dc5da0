//! One connection to a backend, and its I/O: connect, send the request as
//! its job's upload has it ready, read the answer and pass it to the
//! client's [`Sink`].

use std::io;

use mio::Registry;

use super::answer::deliver;
use super::cgi_run::CgiProc;
use super::job::Answer;
use super::proxy::{self, HttpRead, Step};
use super::{fastcgi, Gateways, Protocol, MAX_ATTEMPTS};
use crate::msg::Sink;
use crate::net::{interest, Stream};
use crate::proto::h1::chunked;

/// What a backend connection is made of: a socket, or a CGI process's pipes.
#[derive(Debug)]
pub(super) enum Link {
    Sock(Stream),
    Cgi(Box<CgiProc>),
}

impl Link {
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Link::Sock(s) => s.read(buf),
            Link::Cgi(p) => p.read(buf),
        }
    }

    pub(super) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Link::Sock(s) => s.write(buf),
            Link::Cgi(p) => p.write(buf),
        }
    }

    pub(super) fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Link::Sock(s) => s.take_error(),
            Link::Cgi(_) => Ok(None),
        }
    }

    /// The request is all written: a tunnel's backend hears the client
    /// closed, a CGI program the end of its stdin.
    pub(super) fn shutdown_write(&mut self) {
        match self {
            Link::Sock(s) => s.shutdown_write(),
            Link::Cgi(p) => p.close_stdin(),
        }
    }

    pub(super) fn register(&mut self, r: &Registry, t: mio::Token, writes: bool) -> io::Result<()> {
        match self {
            Link::Sock(s) => r.register(s, t, interest(writes)),
            Link::Cgi(p) => p.register(r, t, writes),
        }
    }

    pub(super) fn watch_writes(&mut self, r: &Registry, t: mio::Token) -> io::Result<()> {
        match self {
            Link::Sock(s) => r.reregister(s, t, interest(true)),
            Link::Cgi(p) => p.watch_stdin(r, t),
        }
    }
}

/// Backend connection tokens start here (client connections are below,
/// listeners above).
pub const BACKEND_BASE: usize = 1 << 29;

/// What a backend connection is for.
#[derive(Debug)]
pub(super) enum Use {
    /// Carries the request of this job.
    Busy { job: usize },
    /// Kept after END_REQUEST, since this second, for the next request.
    Idle { since: u64 },
    /// Asks FCGI_GET_VALUES; the bytes of the question still to send.
    Probe { question: Vec<u8> },
}

/// How far the backend's answer on this connection has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Progress {
    /// Not a byte yet: a failure may still be retried.
    Silent,
    /// Answer bytes arrived.
    Answering,
    /// FastCGI END_REQUEST seen.
    Ended,
}

/// A connection to a backend: serving one job, kept open between two
/// (FastCGI keep-conn), or asking the backend FCGI_GET_VALUES.
pub(super) struct BackendConn {
    pub(super) stream: Link,
    /// What it is for now.
    pub(super) state: Use,
    pub(super) host: usize,
    pub(super) protocol: Protocol,
    /// The connect has completed (a unix socket's at once).
    pub(super) connected: bool,
    pub(super) readable: bool,
    pub(super) writable: bool,
    /// The backend closed its side: the end of stream is still to be read,
    /// and no new edge will announce it.
    pub(super) peer_closed: bool,
    /// That close was an orderly end of stream (FIN): once a read comes
    /// up short, nothing but the end is left to read.
    pub(super) fin_seen: bool,
    /// Registered for writability too (once a write blocked).
    pub(super) watches_writes: bool,
    /// Writing to the backend failed: it stopped reading. Its answer, if
    /// any, is still read; whether it answered decides the outcome.
    pub(super) write_shut: bool,
    /// Undecoded FastCGI record bytes.
    pub(super) records: Vec<u8>,
    /// The CGI header block while it is being collected.
    pub(super) head: Vec<u8>,
    /// The backend framed its body with `Transfer-Encoding: chunked` (Quixote
    /// does for HTTP/1.1 requests): glint decodes it (the client's side
    /// frames it anew).
    pub(super) dechunk: Option<chunked::Decoder>,
    pub(super) progress: Progress,
    /// Reading stopped while the client has much unsent (back-pressure).
    pub(super) paused: bool,
    pub(super) started: u64,
    pub(super) last_active: u64,
    /// The request on it asked the backend to keep the connection
    /// (FCGI_KEEP_CONN).
    pub(super) keep: bool,
    /// It carried a request before this one: a close before any answer
    /// may just mean the backend let the kept connection go.
    pub(super) reused: bool,
    /// HTTP: how far the answer has come.
    pub(super) http: HttpRead,
    /// Kept idle for at most this many seconds.
    pub(super) idle_limit: u64,
    /// The write side was shut (the end of a tunnel, or of a CGI's stdin).
    pub(super) half_closed: bool,
}

/// Why a backend attempt failed.
pub(super) enum Failure {
    /// Refused, reset or gone before answering: try again elsewhere or later.
    Retry(String),
    /// Broke after answering: the response cannot be completed.
    Broken(String),
}

impl Failure {
    /// An I/O error: retryable until the backend has answered anything.
    fn of(answered: bool, what: &str, e: &io::Error) -> Failure {
        if answered {
            Failure::Broken(format!("{what}: {e}"))
        } else {
            Failure::Retry(format!("{what}: {e}"))
        }
    }
}

impl BackendConn {
    pub(super) fn new(stream: Link, state: Use, host: usize, protocol: Protocol) -> Self {
        // A unix socket connects at once (or says EAGAIN), and a TCP
        // connect to a near backend is usually done too: the first write
        // goes out now instead of after an epoll round trip. Pipes are
        // there at once.
        let connected = matches!(stream, Link::Sock(Stream::Unix(_)) | Link::Cgi(_));
        BackendConn {
            stream,
            state,
            host,
            protocol,
            connected,
            readable: false,
            writable: true,
            peer_closed: false,
            fin_seen: false,
            watches_writes: false,
            write_shut: false,
            records: Vec::new(),
            head: Vec::new(),
            dechunk: None,
            progress: Progress::Silent,
            paused: false,
            started: 0,
            last_active: 0,
            keep: false,
            reused: false,
            http: HttpRead::default(),
            idle_limit: super::IDLE_KEEP_SECS,
            half_closed: false,
        }
    }

    /// The job it carries, if it carries one.
    pub(super) fn job(&self) -> Option<usize> {
        match self.state {
            Use::Busy { job } => Some(job),
            _ => None,
        }
    }

    pub(super) fn answered(&self) -> bool {
        self.progress != Progress::Silent
    }

    /// Ready for another request: the state one request leaves is cleared.
    pub(super) fn reset(&mut self, now: u64) {
        self.records.clear();
        self.head.clear();
        self.dechunk = None;
        self.http = HttpRead::default();
        self.progress = Progress::Silent;
        self.paused = false;
        self.started = now;
        self.last_active = now;
    }

    /// The backend closed its side: whether its answer was complete.
    fn at_end(&self) -> Result<bool, Failure> {
        match (self.protocol, self.progress) {
            (_, Progress::Silent) => Err(Failure::Retry(
                "closed the connection without an answer".into(),
            )),
            (Protocol::Scgi | Protocol::Uwsgi | Protocol::Cgi, _)
                if self.dechunk.as_ref().is_some_and(|d| !d.is_done()) =>
            {
                Err(Failure::Broken(
                    "closed the connection inside its chunked answer".into(),
                ))
            }
            (Protocol::Cgi, _) if !self.head.is_empty() => Err(Failure::Broken(
                "ended its output inside its header block".into(),
            )),
            (Protocol::Scgi | Protocol::Uwsgi | Protocol::Cgi, _) => Ok(true),
            (Protocol::Http, _) => proxy::complete_at_close(&self.http)
                .map(|()| true)
                .map_err(Failure::Broken),
            (Protocol::FastCgi, Progress::Ended) => Ok(true),
            (Protocol::FastCgi, _) => Err(Failure::Broken(
                "closed the connection before END_REQUEST".into(),
            )),
        }
    }
}

impl Gateways {
    /// Records readiness of backend connection `bkey`; returns the
    /// exchange of the job it carries, or `None` when it carries none (a
    /// kept idle connection or a probe, handled here).
    pub fn on_event(
        &mut self,
        bkey: usize,
        ev: &mio::event::Event,
        now: u64,
    ) -> Option<crate::msg::ExchangeId> {
        let b = self.conns.get_mut(bkey)?;
        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
            b.readable = true;
        }
        if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
            b.writable = true;
        }
        // A CGI's three pipes share one token: which of them closed is not
        // known, so its stdout is read to its end instead.
        let pipes = matches!(b.stream, Link::Cgi(_));
        if (ev.is_read_closed() || ev.is_error()) && !pipes {
            b.peer_closed = true;
        }
        // An orderly end of stream (FIN), not a reset.
        if ev.is_read_closed() && !ev.is_error() && !pipes {
            b.fin_seen = true;
        }
        match b.state {
            Use::Busy { job } => match self.jobs.get(job) {
                Some(j) => Some(j.ex),
                None => {
                    self.remove_conn(bkey);
                    None
                }
            },
            Use::Idle { .. } => {
                if !b.still_idle() {
                    let host = b.host;
                    log::debug!(
                        "backend {}: closed a kept connection",
                        self.hosts
                            .get(host)
                            .map(super::Host::name)
                            .unwrap_or_default()
                    );
                    self.remove_conn(bkey);
                }
                None
            }
            Use::Probe { .. } => {
                self.probe_event(bkey, now);
                None
            }
        }
    }

    /// Makes what progress backend connection `bkey` allows: the request
    /// out, the answer in and on to `sink`.
    pub fn drive_backend(
        &mut self,
        bkey: usize,
        sink: &mut dyn Sink,
        now: u64,
        registry: &Registry,
    ) {
        let result = self
            .send_request(bkey, now)
            .and_then(|()| self.read_answer(bkey, sink, now));
        self.after_progress(bkey, result, Some(sink), now, registry);
    }

    /// Acts on what an attempt at progress came to: watches writability
    /// once a write blocked, ends the job when its answer is complete,
    /// retries or fails it when the backend failed. Without a `sink` (no
    /// answer was read), a failure of the job is noted for the caller.
    pub(super) fn after_progress(
        &mut self,
        bkey: usize,
        result: Result<bool, Failure>,
        sink: Option<&mut dyn Sink>,
        now: u64,
        registry: &Registry,
    ) {
        let Some(job) = self.conns.get(bkey).and_then(BackendConn::job) else {
            return;
        };
        match result {
            Ok(false) => self.watch_writes(bkey, registry),
            Ok(true) => self.finish_answer(bkey, sink, now),
            Err(Failure::Retry(why))
                if self
                    .conns
                    .get(bkey)
                    .is_some_and(|b| b.protocol == Protocol::Http) =>
            {
                self.http_retry(bkey, job, why, sink, now, registry);
            }
            Err(Failure::Retry(why)) => {
                let Some(b) = self.remove_conn(bkey) else {
                    return;
                };
                let host = &mut self.hosts[b.host];
                let name = host.name();
                // A kept connection closed before any answer: the backend
                // let it go (a worker exited, say) while the request was on
                // its way. Not a failure of the backend, nor an attempt.
                let stale = b.reused && !b.answered();
                if stale {
                    log::debug!("backend {name}: a kept connection was closed ({why}); sending the request on a new one");
                } else {
                    log::error!("backend {name}: {why}");
                    if !b.answered() {
                        host.disabled_until = now + host.spec.disable_time;
                    }
                }
                let Some(j) = self.jobs.get_mut(job) else {
                    return;
                };
                j.backend = None;
                if stale {
                    j.attempts = j.attempts.saturating_sub(1);
                    j.fresh_conn = true;
                }
                if j.attempts < MAX_ATTEMPTS && j.answer == Answer::Nothing {
                    if j.upload.rewind() {
                        // Nothing reached the client yet and glint still
                        // holds the whole request.
                        if let Err(status) = self.dispatch(job, now, registry) {
                            self.fail_job(job, status, sink);
                        }
                        return;
                    }
                    log::error!(
                        "backend {name}: it already took part of the request body, \
                         which glint no longer holds; answering 502 instead of retrying"
                    );
                }
                self.fail_job(job, 502, sink);
            }
            Err(Failure::Broken(why)) => {
                if let Some(b) = self.remove_conn(bkey) {
                    let host = &self.hosts[b.host];
                    log::error!("backend {} ({}): {why}", host.spec.label, host.spec.addr);
                }
                self.fail_job(job, 502, sink);
            }
        }
    }

    /// An HTTP backend failed before answering. Not connected yet: the
    /// request never left, so another backend (or this one later) may take
    /// it, as for the gateways. A kept connection found closed: sent again
    /// on a new one when [`crate::httpup::retry::may_retry`] allows (an
    /// idempotent method, the request still whole), else 502. A new
    /// connection that failed: the backend's failure, 502 and disabled.
    fn http_retry(
        &mut self,
        bkey: usize,
        job: usize,
        why: String,
        sink: Option<&mut dyn Sink>,
        now: u64,
        registry: &Registry,
    ) {
        let Some(b) = self.remove_conn(bkey) else {
            return;
        };
        let host = &mut self.hosts[b.host];
        let name = host.name();
        let Some(j) = self.jobs.get_mut(job) else {
            return;
        };
        j.backend = None;
        if !b.connected {
            log::error!(
                "backend {name}: {why}; disabled for {} s",
                host.spec.disable_time
            );
            host.disabled_until = now + host.spec.disable_time;
            if j.attempts < MAX_ATTEMPTS && j.answer == Answer::Nothing && j.upload.rewind() {
                if let Err(status) = self.dispatch(job, now, registry) {
                    self.fail_job(job, status, sink);
                }
                return;
            }
            return self.fail_job(job, 502, sink);
        }
        let f = crate::httpup::retry::Failure {
            reused: b.reused,
            answer_started: b.answered() || j.answer != Answer::Nothing,
            body_replayable: j.upload.is_whole(),
        };
        if crate::httpup::retry::may_retry(&j.method, f) && j.upload.rewind() {
            log::debug!("backend {name}: a kept connection was closed ({why}); sending the request again on a new one");
            j.attempts = j.attempts.saturating_sub(1);
            j.fresh_conn = true;
            if let Err(status) = self.dispatch(job, now, registry) {
                self.fail_job(job, status, sink);
            }
            return;
        }
        if b.reused {
            log::error!(
                "backend {name}: {why} on a kept connection; a {} request is not sent twice: answering 502",
                j.method
            );
        } else {
            log::error!(
                "backend {name}: {why}; answering 502, disabled for {} s",
                host.spec.disable_time
            );
            host.disabled_until = now + host.spec.disable_time;
        }
        self.fail_job(job, 502, sink);
    }

    /// Registers for writability once a write blocked (a TCP connect under
    /// way, or a full socket).
    fn watch_writes(&mut self, bkey: usize, registry: &Registry) {
        if let Some(b) = self.conns.get_mut(bkey) {
            if !b.writable && !b.watches_writes {
                b.watches_writes = true;
                let t = mio::Token(BACKEND_BASE + bkey);
                if let Err(e) = b.stream.watch_writes(registry, t) {
                    log::error!("cannot watch a backend connection: {e}");
                }
            }
        }
    }

    /// Writes what the job's upload has ready while the socket takes it.
    pub(super) fn send_request(&mut self, bkey: usize, now: u64) -> Result<(), Failure> {
        let Some(b) = self.conns.get_mut(bkey) else {
            return Ok(());
        };
        let Some(up) = b
            .job()
            .and_then(|j| self.jobs.get_mut(j))
            .map(|j| &mut j.upload)
        else {
            return Ok(());
        };
        let before = up.pending().len();
        if !b.connected {
            if !b.writable {
                return Ok(());
            }
            // A TCP connect still under way: the first write tells. On
            // loopback the handshake is done within connect(), so the request
            // goes out now rather than after a wake-up for writability; a
            // write into a connect still pending says EAGAIN, one into a
            // refused connect gives its error.
            if up.pending().is_empty() {
                if let Ok(Some(e)) | Err(e) = b.stream.take_error() {
                    return Err(Failure::Retry(format!("connect: {e}")));
                }
                b.connected = true;
                b.last_active = now;
            }
        }
        while b.writable && !b.write_shut && !up.pending().is_empty() {
            match b.stream.write(up.pending()) {
                Ok(n) => {
                    up.advance(n);
                    b.connected = true;
                    b.last_active = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => b.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if !b.connected => {
                    return Err(Failure::Retry(format!("connect: {e}")));
                }
                Err(e) => {
                    // It stopped reading (it may have answered without
                    // wanting the whole body): the read side tells.
                    log::debug!("backend write: {e}; reading its answer");
                    b.write_shut = true;
                    b.readable = true;
                }
            }
        }
        // The whole request is out: a CGI program reads the end of its
        // body (unless a tunnel may follow), a tunnel's backend hears the
        // client closed.
        let done_writing = up.all_sent() && !b.half_closed;
        let closes = match &b.stream {
            Link::Cgi(p) => !p.hold_stdin,
            Link::Sock(_) => up.tunneled(),
        };
        if done_writing && closes && !b.write_shut {
            b.half_closed = true;
            b.stream.shutdown_write();
        }
        // Room in the body window: the client may be read again.
        if up.pending().len() < before {
            if let Some(j) = b.job().and_then(|j| self.jobs.get(j)) {
                self.woken.push(j.ex);
            }
        }
        Ok(())
    }

    /// Reads the answer while the backend has one and the client has room;
    /// `Ok(true)` when it is complete.
    fn read_answer(&mut self, bkey: usize, sink: &mut dyn Sink, now: u64) -> Result<bool, Failure> {
        let Some(b) = self.conns.get_mut(bkey) else {
            return Ok(false);
        };
        let Some(job) = b.job().and_then(|j| self.jobs.get_mut(j)) else {
            return Ok(false);
        };
        let buf = &mut self.scratch;
        let fields = &mut self.http_fields;
        let spec = &self.hosts[b.host].spec;
        // A CGI's x-sendfile is the request's (`cgi.x-sendfile` may be set
        // per scope); a backend's is its own.
        let cgi_xs: Option<Vec<String>> = job.cgi.as_ref().and_then(|c| c.x_sendfile.clone());
        let xs = match &cgi_xs {
            Some(roots) => Some(roots.as_slice()),
            None => spec
                .x_sendfile
                .then_some(spec.x_sendfile_docroot.as_slice()),
        };
        if let Link::Cgi(p) = &mut b.stream {
            p.drain_stderr();
        }
        while b.readable && !b.paused {
            buf.resize(64 * 1024, 0);
            match b.stream.read(buf) {
                Ok(0) => {
                    b.readable = false;
                    let end = b.at_end();
                    if end.is_ok() {
                        b.progress = Progress::Ended;
                    }
                    return end;
                }
                Ok(n) => {
                    b.last_active = now;
                    if b.progress == Progress::Silent {
                        b.progress = Progress::Answering;
                    }
                    let data = &buf[..n];
                    let finished = match b.protocol {
                        // Both end when the backend closes, or with the last chunk.
                        Protocol::Scgi | Protocol::Uwsgi | Protocol::Cgi => {
                            deliver(job, &mut b.head, &mut b.dechunk, data, xs, sink)
                                .map_err(Failure::Broken)?
                        }
                        Protocol::Http => {
                            let step =
                                proxy::deliver(job, &mut b.head, &mut b.http, fields, data, sink)
                                    .map_err(Failure::Broken)?;
                            match step {
                                Step::More => false,
                                Step::Complete => {
                                    b.progress = Progress::Ended;
                                    b.keep &= b.http.reusable;
                                    if let Some(t) = b.http.keep_secs {
                                        // Gone before the backend lets it go.
                                        let t = u64::from(t).saturating_sub(1);
                                        b.idle_limit = b.idle_limit.min(t);
                                        b.keep &= t > 0;
                                    }
                                    true
                                }
                            }
                        }
                        Protocol::FastCgi => {
                            b.records.extend_from_slice(data);
                            let (stdout, ended) =
                                fastcgi_stdout(&mut b.records).map_err(Failure::Broken)?;
                            // END_REQUEST, not the last chunk, ends a FastCGI answer.
                            deliver(job, &mut b.head, &mut b.dechunk, &stdout, xs, sink)
                                .map_err(Failure::Broken)?;
                            if ended {
                                b.progress = Progress::Ended;
                            }
                            ended
                        }
                    };
                    // Finished, or the client was answered otherwise (an
                    // X-Sendfile refused): the backend connection goes now.
                    if finished || job.answer == Answer::Done {
                        return Ok(true);
                    }
                    if !sink.has_room() {
                        b.paused = true;
                    }
                    // A short read drained the socket. If the backend had
                    // closed before it, the end of stream is all that is left:
                    // no need to read it (SCGI answers end that way).
                    if n < buf.len() {
                        if b.fin_seen {
                            b.readable = false;
                            return b.at_end();
                        }
                        // After a reset the error is still to be read: no
                        // new edge will announce it.
                        if !b.peer_closed {
                            b.readable = false;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => b.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::of(b.answered(), "read", &e)),
            }
        }
        Ok(false)
    }
}

/// Takes the STDOUT of the complete FastCGI records in `records` (logging
/// STDERR) and whether END_REQUEST came; the rest stays for later.
fn fastcgi_stdout(records: &mut Vec<u8>) -> Result<(Vec<u8>, bool), String> {
    let mut used = 0;
    let mut stdout = Vec::new();
    let mut ended = false;
    while let Some((piece, len)) = fastcgi::decode(&records[used..]).map_err(String::from)? {
        used += len;
        match piece {
            fastcgi::Piece::Stdout(d) => stdout.extend_from_slice(d),
            fastcgi::Piece::Stderr(d) => {
                log::warn!("backend stderr: {}", String::from_utf8_lossy(d).trim_end())
            }
            fastcgi::Piece::End(_) => {
                ended = true;
                break;
            }
            fastcgi::Piece::Skip => {}
        }
    }
    records.drain(..used);
    Ok((stdout, ended))
}
