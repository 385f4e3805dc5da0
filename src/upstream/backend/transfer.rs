//! The I/O of a backend connection: the request out as its job's upload
//! has it ready, the answer in and on to the client's [`Sink`].

use std::io;

use super::super::ajp13::{self, Packet};
use super::super::answer::{deliver, release_held};
use super::super::job::{Answer, Job};
use super::super::proxy::{self, Step};
use super::super::{fastcgi, Gateways, Protocol};
use super::{BackendConn, Failure, Link, Progress};
use crate::msg::Sink;

impl Gateways {
    /// Writes what the job's upload has ready while the socket takes it.
    pub(in crate::upstream) fn send_request(
        &mut self,
        bkey: usize,
        now: u64,
    ) -> Result<(), Failure> {
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
            Link::Local(_) => true,
        };
        if done_writing && closes && !b.write_shut {
            b.half_closed = true;
            b.stream.shutdown_write();
        }
        // Room in the body window: the client may be read again.
        if up.pending().len() < before {
            if let Some(j) = b.job().and_then(|j| self.jobs.get(j)) {
                self.outbox.push(super::super::News::Woken(j.ex));
            }
        }
        Ok(())
    }

    /// Reads the answer while the backend has one and the client has room;
    /// `Ok(true)` when it is complete.
    pub(super) fn read_answer(
        &mut self,
        bkey: usize,
        sink: &mut dyn Sink,
        now: u64,
    ) -> Result<bool, Failure> {
        let Some(b) = self.conns.get_mut(bkey) else {
            return Ok(false);
        };
        let Some(job) = b.job().and_then(|j| self.jobs.get_mut(j)) else {
            return Ok(false);
        };
        let buf = &mut self.scratch;
        let fields = &mut self.http_fields;
        let held = &mut self.held_now;
        let spec = &self.hosts[b.host].spec;
        let cgi_xs: Option<Vec<String>> = job.cgi.as_ref().and_then(|c| c.x_sendfile.clone());
        let xs = x_sendfile_roots(cgi_xs.as_deref(), spec);
        if let Link::Cgi(p) = &mut b.stream {
            p.drain_stderr();
        }
        while b.readable && !b.paused {
            buf.resize(64 * 1024, 0);
            match b.stream.read(buf) {
                Ok(0) => return closed(b, job, sink),
                Ok(n) => {
                    b.last_active = now;
                    if b.progress == Progress::Silent {
                        b.progress = Progress::Answering;
                    }
                    let finished = pass_on(b, job, &buf[..n], xs, fields, sink)?;
                    // Finished, or the client was answered otherwise (an
                    // X-Sendfile refused): the backend connection goes now.
                    if finished || job.answer == Answer::Done {
                        return Ok(true);
                    }
                    if !sink.has_room() {
                        b.paused = true;
                    }
                    if n < buf.len() {
                        if let Some(end) = drained(b, job, sink, held, bkey)? {
                            return Ok(end);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    b.readable = false;
                    settle_held(b, job, sink, Some((held, bkey)))?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::of(b.answered(), "read", &e)),
            }
        }
        Ok(false)
    }
}

/// The backend closed its side: the answer ends here (a held CGI head
/// goes out with its length).
#[inline]
fn closed(b: &mut BackendConn, job: &mut Job, sink: &mut dyn Sink) -> Result<bool, Failure> {
    b.readable = false;
    settle_held(b, job, sink, None)?;
    let end = b.at_end();
    if end.is_ok() {
        b.progress = Progress::Ended;
    }
    end
}

/// A short read drained the socket. If the backend had closed before it,
/// the end of stream is all that is left: no need to read it (SCGI
/// answers end that way); `Some` then, whether the answer is complete.
#[inline]
fn drained(
    b: &mut BackendConn,
    job: &mut Job,
    sink: &mut dyn Sink,
    held: &mut Vec<(usize, crate::msg::ExchangeId)>,
    bkey: usize,
) -> Result<Option<bool>, Failure> {
    if b.fin_seen {
        b.readable = false;
        settle_held(b, job, sink, None)?;
        return b.at_end().map(Some);
    }
    // After a reset the error is still to be read: no new edge will
    // announce it. Nor for a CGI's stdout, whose close may have come with
    // the last bytes in one event (its three pipes share a token, so
    // `peer_closed` cannot say it): read on to EAGAIN or the end. (Taking
    // the short read for drained left about one close-delimited CGI answer
    // in 70 without its end.)
    let pipe = matches!(b.stream, Link::Cgi(_));
    if !b.peer_closed && !pipe {
        b.readable = false;
        settle_held(b, job, sink, Some((held, bkey)))?;
    }
    Ok(None)
}

/// Where X-Sendfile may point: a CGI's roots are the request's
/// (`cgi.x-sendfile` may be set per scope); a backend's are its own.
fn x_sendfile_roots<'a>(
    cgi: Option<&'a [String]>,
    spec: &'a super::super::config::HostSpec,
) -> Option<&'a [String]> {
    match cgi {
        Some(roots) => Some(roots),
        None => spec
            .x_sendfile
            .then_some(spec.x_sendfile_docroot.as_slice()),
    }
}

/// A CGI head held for its length (`Answer::Holding`) when this turn's
/// reading stops: sent with the length when the output ended (`paused` is
/// `None`); when it only paused, held one more turn of the loop (about a
/// millisecond: a program that wrote its answer is exiting), then sent
/// streaming, so that a program still writing is not kept waiting.
fn settle_held(
    b: &mut BackendConn,
    job: &mut Job,
    sink: &mut dyn Sink,
    paused: Option<(&mut Vec<(usize, crate::msg::ExchangeId)>, usize)>,
) -> Result<(), Failure> {
    if !matches!(job.answer, Answer::Holding(_)) {
        return Ok(());
    }
    let ended = paused.is_none();
    if let Some((held, bkey)) = paused {
        if !b.hold_expired {
            if !b.hold_queued {
                b.hold_queued = true;
                held.push((bkey, job.ex));
            }
            return Ok(());
        }
    }
    release_held(job, &mut b.head, &mut b.dechunk, sink, ended).map_err(Failure::Broken)
}

/// Passes `data`, the bytes one read brought, on to `sink` as the
/// backend's protocol frames them; whether the answer is complete.
fn pass_on(
    b: &mut BackendConn,
    job: &mut Job,
    data: &[u8],
    xs: Option<&[String]>,
    fields: &mut Vec<crate::httpup::response::Field>,
    sink: &mut dyn Sink,
) -> Result<bool, Failure> {
    match b.protocol {
        // Both end when the backend closes, or with the last chunk.
        Protocol::Scgi | Protocol::Uwsgi | Protocol::Cgi => {
            deliver(job, &mut b.head, &mut b.dechunk, data, xs, sink).map_err(Failure::Broken)
        }
        Protocol::Http => {
            let step = proxy::deliver(job, &mut b.head, &mut b.http, fields, data, sink)
                .map_err(Failure::Broken)?;
            match step {
                Step::More => Ok(false),
                Step::Complete => {
                    b.http_complete();
                    Ok(true)
                }
            }
        }
        Protocol::SockProxy | Protocol::WsTunnel => {
            // The bytes as they came: the client's side frames them, if at all.
            job.answer = Answer::Streaming;
            sink.data(data);
            Ok(false)
        }
        Protocol::Ajp13 => {
            b.records.extend_from_slice(data);
            let ended = ajp13_answer(b, job, xs, sink)?;
            if ended {
                b.progress = Progress::Ended;
            }
            Ok(ended)
        }
        Protocol::FastCgi => {
            b.records.extend_from_slice(data);
            let (stdout, ended) = fastcgi_stdout(&mut b.records).map_err(Failure::Broken)?;
            // END_REQUEST, not the last chunk, ends a FastCGI answer.
            deliver(job, &mut b.head, &mut b.dechunk, &stdout, xs, sink)
                .map_err(Failure::Broken)?;
            if ended {
                b.progress = Progress::Ended;
            }
            Ok(ended)
        }
    }
}

impl BackendConn {
    /// An HTTP answer is complete: the connection is kept only as long as
    /// the backend said it would keep it.
    fn http_complete(&mut self) {
        self.progress = Progress::Ended;
        self.keep &= self.http.reusable;
        if let Some(t) = self.http.keep_secs {
            // Gone before the backend lets it go.
            let t = u64::from(t).saturating_sub(1);
            self.idle_limit = self.idle_limit.min(t);
            self.keep &= t > 0;
        }
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

/// Decodes the complete AJP packets in the connection's buffer: the head
/// and the body go on to `sink` as a CGI answer would, the container's
/// asks for body to the job's upload; whether END_RESPONSE came. A
/// malformed packet, or a body before any head, breaks the answer (502
/// when nothing was sent yet).
fn ajp13_answer(
    b: &mut BackendConn,
    job: &mut Job,
    xs: Option<&[String]>,
    sink: &mut dyn Sink,
) -> Result<bool, Failure> {
    let broken = |e: &str| Failure::Broken(format!("AJP13: {e}"));
    let mut used = 0;
    let mut ended = false;
    let mut head_seen = job.answer != Answer::Nothing;
    let mut cgi = Vec::new();
    while let Some((packet, len)) = ajp13::decode(&b.records[used..]).map_err(broken)? {
        used += len;
        match packet {
            Packet::Headers(_) if head_seen => {
                log::warn!("AJP13: headers received after the body started; ignored")
            }
            Packet::Headers(h) => {
                head_seen = true;
                cgi_head(&h, &mut cgi);
            }
            Packet::Body(_) if !head_seen => return Err(broken("body received before headers")),
            Packet::Body(d) => cgi.extend_from_slice(d),
            Packet::GetBody(n) => job.upload.grant(n).map_err(|e| broken(&e))?,
            Packet::End { .. } => {
                ended = true;
                break;
            }
            Packet::Skip(k) if ajp13::is_quiet(k) => {}
            Packet::Skip(k) => log::warn!("AJP13: packet type not handled: {k}"),
        }
    }
    b.records.drain(..used);
    if ended && !head_seen {
        return Err(broken("END_RESPONSE before any headers"));
    }
    if !cgi.is_empty() {
        deliver(job, &mut b.head, &mut b.dechunk, &cgi, xs, sink).map_err(Failure::Broken)?;
    }
    Ok(ended)
}

/// SEND_HEADERS as a CGI head (`Status:` and the fields), for the one
/// parser of backend heads. AJP frames the body itself: a
/// `Transfer-Encoding` from the container would frame it twice, and is
/// dropped.
fn cgi_head(h: &ajp13::Head<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"Status: ");
    out.extend_from_slice(crate::msg::status::itoa_u64(u64::from(h.status)).as_bytes());
    out.extend_from_slice(b"\r\n");
    for (k, v) in &h.headers {
        if k.eq_ignore_ascii_case(b"transfer-encoding") || k.eq_ignore_ascii_case(b"status") {
            continue;
        }
        out.extend_from_slice(k);
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}
