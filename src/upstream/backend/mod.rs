//! One connection to a backend, and its I/O: connect, send the request as
//! its job's upload has it ready, read the answer and pass it to the
//! client's [`Sink`].

mod failure;
mod transfer;

use std::io;

use mio::Registry;

use super::cgi_run::CgiProc;
use super::http_state::{self, HttpRead};
use super::local::LocalLink;
use super::{Gateways, Protocol};
use crate::msg::Sink;
use crate::net::{interest, Stream};
use crate::proto::h1::chunked;

/// What a backend connection is made of: a socket, or a CGI process's pipes.
#[derive(Debug)]
pub(super) enum Link {
    Sock(Stream),
    Cgi(Box<CgiProc>),
    Local(Box<LocalLink>),
}

impl Link {
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Link::Sock(s) => s.read(buf),
            Link::Cgi(p) => p.read(buf),
            Link::Local(l) => l.read(buf),
        }
    }

    pub(super) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Link::Sock(s) => s.write(buf),
            Link::Cgi(p) => p.write(buf),
            Link::Local(l) => l.write(buf),
        }
    }

    pub(super) fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Link::Sock(s) => s.take_error(),
            Link::Cgi(_) | Link::Local(_) => Ok(None),
        }
    }

    /// The request is all written: a tunnel's backend hears the client
    /// closed, a CGI program the end of its stdin.
    pub(super) fn shutdown_write(&mut self) {
        match self {
            Link::Sock(s) => s.shutdown_write(),
            Link::Cgi(p) => p.close_stdin(),
            Link::Local(l) => l.finish(),
        }
    }

    pub(super) fn register(&mut self, r: &Registry, t: mio::Token, writes: bool) -> io::Result<()> {
        match self {
            Link::Sock(s) => r.register(s, t, interest(writes)),
            Link::Cgi(p) => p.register(r, t, writes),
            Link::Local(l) => l.register(r, t),
        }
    }

    pub(super) fn watch_writes(&mut self, r: &Registry, t: mio::Token) -> io::Result<()> {
        match self {
            Link::Sock(s) => r.reregister(s, t, interest(true)),
            Link::Cgi(p) => p.watch_stdin(r, t),
            // (Its writes never block.)
            Link::Local(_) => Ok(()),
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
    /// A held CGI head (`Answer::Holding`) waits for the output's end
    /// (`hold_queued`) until [`super::job::HOLD_US`] passed
    /// (`hold_expired`): a pause after that sends it streaming. (Other
    /// pipes' events of the CGI wake it before: they do not count.)
    pub(super) hold_queued: bool,
    pub(super) hold_expired: bool,
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
        let connected = matches!(
            stream,
            Link::Sock(Stream::Unix(_)) | Link::Cgi(_) | Link::Local(_)
        );
        BackendConn {
            stream,
            state,
            host,
            protocol,
            connected,
            readable: false,
            hold_queued: false,
            hold_expired: false,
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
        self.hold_queued = false;
        self.hold_expired = false;
        self.paused = false;
        self.started = now;
        self.last_active = now;
    }

    /// The backend closed its side: whether its answer was complete.
    fn at_end(&self) -> Result<bool, Failure> {
        match (self.protocol, self.progress) {
            // A tunnel's end is the end of its bytes, whenever it comes.
            (Protocol::SockProxy | Protocol::WsTunnel, _) => Ok(true),
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
            (Protocol::Http, _) => http_state::complete_at_close(&self.http)
                .map(|()| true)
                .map_err(Failure::Broken),
            (Protocol::FastCgi, Progress::Ended) => Ok(true),
            (Protocol::FastCgi, _) => Err(Failure::Broken(
                "closed the connection before END_REQUEST".into(),
            )),
            (Protocol::Ajp13, Progress::Ended) => Ok(true),
            (Protocol::Ajp13, _) => Err(Failure::Broken(
                "closed the connection before END_RESPONSE".into(),
            )),
        }
    }
}

impl Gateways {
    /// At shutdown: every CGI process still running is killed and reaped.
    pub(super) fn kill_all_cgi(&mut self) {
        for (_, b) in self.conns.iter_mut() {
            if let Link::Cgi(p) = &mut b.stream {
                if let Some(e) = p.kill_now(b.host) {
                    self.exiting.push(e);
                }
            }
        }
        self.reap_all_exiting();
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
        // Local work's one event says its answer is complete: a short read
        // is its end.
        if matches!(b.stream, Link::Local(_)) {
            b.peer_closed = true;
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
        let ex = self
            .conns
            .get(bkey)
            .and_then(BackendConn::job)
            .and_then(|k| self.jobs.get(k))
            .map(|j| j.ex);
        let result = self
            .send_request(bkey, now)
            .and_then(|()| self.read_answer(bkey, sink, now))
            // What the answer asked for goes out now (AJP's GET_BODY_CHUNK).
            .and_then(|done| match done {
                true => Ok(true),
                false => self.send_request(bkey, now).map(|()| false),
            });
        self.after_progress(bkey, result, Some(&mut *sink), now, registry);
        // A retry's failure found without the sink (on a new backend).
        if let Some(ex) = ex {
            self.own_news(ex, Some(sink));
        }
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
}
