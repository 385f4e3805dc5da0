//! The upstream side of one gateway exchange: what goes to the backend
//! (the request and its body as the client sends it), which backend
//! connection carries it, and how far the answer has come. The client's
//! side names it by a [`JobId`] and hears the answer through its
//! [`Sink`]; the job names its exchange by an [`ExchangeId`].

use std::rc::Rc;

use mio::Registry;

use super::{Gateways, News, Protocol, Upload};
use crate::config::Settings;
use crate::msg::{ExchangeId, Sink};

/// Names one job: its slot and its generation, so that an id kept past
/// the job's end never reaches a later job in the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobId {
    key: usize,
    gen: u64,
}

/// What the exchange layer hands the upstream for one gateway request.
pub struct JobSpec {
    /// The route (an index into [`Gateways::routes`]).
    pub route: usize,
    pub protocol: Protocol,
    /// The request: the backend's encoding of the environment, then the body.
    pub upload: Upload,
    /// The request's settings (`*.balance`).
    pub settings: Rc<Settings>,
    /// Hashes of the URL path and of the client address, for `hash` and
    /// `sticky` balancing.
    pub hash_path: u64,
    pub hash_ip: u64,
    /// The backend is an authorizer: its 200 makes the request run on.
    pub authorizer: bool,
    /// A `Location: /path` answer is followed inside glint (`local-redir`).
    pub local_redir: bool,
    /// A HEAD request: the backend may leave out the body, chunks and all.
    pub head_only: bool,
    /// The request's method (HTTP: whether it may be sent again).
    pub method: String,
    /// HTTP (`proxy.server`): the heads built for it and how to read the answer.
    pub http: Option<Box<super::http_state::HttpJob>>,
    /// CGI (`cgi.assign`): the program to run.
    pub cgi: Option<Box<super::cgi_run::CgiJob>>,
    /// Work glint does itself (mod_webdav), on [`Gateways::local_route`].
    pub local: Option<Box<dyn crate::msg::local::LocalWork>>,
}

/// How far the client has had the answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Nothing yet: a failure may still be retried on another connection.
    Nothing,
    /// A CGI head without a length, held with the body read so far while
    /// the program's output keeps coming in the same turn: if it ends
    /// there, the answer goes out whole with a `Content-Length` (as
    /// lighttpd sends a small CGI answer); otherwise it streams.
    Holding(Box<super::cgi::CgiHead>),
    /// The head went to the client; the body follows.
    Streaming,
    /// The client has been answered otherwise (the request runs again, or
    /// a file is sent instead): the rest of the backend's answer is dropped.
    Dropping,
    /// Complete, or failed: no more for the client.
    Done,
}

/// One gateway exchange's upstream side.
pub struct Job {
    gen: u64,
    /// The exchange it belongs to.
    pub ex: ExchangeId,
    pub route: usize,
    pub protocol: Protocol,
    pub upload: Upload,
    pub settings: Rc<Settings>,
    pub hash_path: u64,
    pub hash_ip: u64,
    pub authorizer: bool,
    pub local_redir: bool,
    pub head_only: bool,
    pub method: String,
    pub http: Option<Box<super::http_state::HttpJob>>,
    pub cgi: Option<Box<super::cgi_run::CgiJob>>,
    /// Local work, until it is started.
    pub local: Option<Box<dyn crate::msg::local::LocalWork>>,
    /// The work is mod_vhostdb's lookup: its answer runs the request again.
    pub(super) vhost_lookup: bool,
    /// The backend connection carrying it, once it has one.
    pub(super) backend: Option<usize>,
    /// In the queue for a backend.
    pub(super) waiting: bool,
    /// When it was started, for the queue's time-out.
    pub(super) since: u64,
    pub(super) attempts: u8,
    /// The next attempt opens a new backend connection, not a kept one (a
    /// kept one was found closed).
    pub(super) fresh_conn: bool,
    pub(super) answer: Answer,
    /// The `Alt-Svc` value its answer carries (HTTP/3 offered beside the
    /// TLS socket the request came on), unless the backend sent its own.
    pub(super) alt_svc: Option<Rc<str>>,
    /// `server.error-intercept`: a 4xx or 5xx answer is replaced by
    /// glint's own (not for an authorizer, nor for an error handler's run).
    pub(super) intercept: bool,
}

impl Job {
    /// `headers` with the job's `Alt-Svc` added, when it has one and the
    /// backend did not send one.
    pub(super) fn with_alt_svc<'h>(
        &self,
        headers: &'h [(String, Vec<u8>)],
    ) -> std::borrow::Cow<'h, [(String, Vec<u8>)]> {
        match &self.alt_svc {
            Some(v)
                if !headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("alt-svc")) =>
            {
                let mut h = headers.to_vec();
                h.push(("Alt-Svc".to_string(), v.as_bytes().to_vec()));
                std::borrow::Cow::Owned(h)
            }
            _ => std::borrow::Cow::Borrowed(headers),
        }
    }
}

/// How long a CGI head is held for its length once the program's output
/// paused: a program that wrote its answer and exits closes its output
/// within this (measured here from its last write to the end of its
/// output: perl 0.3 ms alone, several ms under the load of lighttpd's
/// suite; Python 8-11 ms), and a program that goes on writing has its
/// first bytes delayed by at most this once.
pub const HOLD_US: u64 = 20_000;

/// What the client's side learns when it lets a job go.
#[derive(Debug, Clone, Copy)]
pub struct JobEnd {
    /// Request body bytes the client has yet to send (it answered early).
    pub body_remaining: u64,
}

impl Gateways {
    /// Starts a gateway request for exchange `ex`: connects to a backend
    /// (or queues the job) unless its chunked body is to be collected
    /// first. `Err(status)` when no backend can take it (the job is gone).
    pub fn start(
        &mut self,
        spec: JobSpec,
        ex: ExchangeId,
        now: u64,
        registry: &Registry,
    ) -> Result<JobId, u16> {
        self.next_gen += 1;
        let gen = self.next_gen;
        let collecting = spec.upload.collecting();
        let intercept = spec.settings.errors.error_intercept && !spec.authorizer;
        let key = self.jobs.insert(Job {
            gen,
            ex,
            route: spec.route,
            protocol: spec.protocol,
            upload: spec.upload,
            settings: spec.settings,
            hash_path: spec.hash_path,
            hash_ip: spec.hash_ip,
            authorizer: spec.authorizer,
            local_redir: spec.local_redir,
            head_only: spec.head_only,
            method: spec.method,
            http: spec.http,
            cgi: spec.cgi,
            vhost_lookup: spec.local.as_ref().is_some_and(|w| w.is_vhost_lookup()),
            local: spec.local,
            backend: None,
            waiting: false,
            since: now,
            attempts: 0,
            fresh_conn: false,
            answer: Answer::Nothing,
            alt_svc: None,
            intercept,
        });
        if !collecting {
            let sent = self.dispatch(key, now, registry);
            // A failure found on the way (a connect refused at once, every
            // try used up) is this call's answer.
            let failed = self.own_news(ex, None);
            if let Some(status) = sent.err().or(failed) {
                self.drop_job(key);
                return Err(status);
            }
        }
        Ok(JobId { key, gen })
    }

    /// Job `id` runs for an error handler: its error answers go to the
    /// client as they are (with the first error's status), as lighttpd
    /// intercepts only once.
    pub fn pass_errors(&mut self, id: JobId) {
        if let Some(j) = self.job_mut(id) {
            j.intercept = false;
        }
    }

    /// The answer of job `id` announces HTTP/3 with `Alt-Svc: value`.
    pub fn set_alt_svc(&mut self, id: JobId, value: Rc<str>) {
        if let Some(j) = self.job_mut(id) {
            j.alt_svc = Some(value);
        }
    }

    fn job(&self, id: JobId) -> Option<&Job> {
        self.jobs.get(id.key).filter(|j| j.gen == id.gen)
    }

    fn job_mut(&mut self, id: JobId) -> Option<&mut Job> {
        self.jobs.get_mut(id.key).filter(|j| j.gen == id.gen)
    }

    /// The client's socket should be read for this job now: body bytes are
    /// due and the window has room (or the answer is over, and the rest of
    /// the body is dropped as it comes).
    pub fn takes_body(&self, id: JobId) -> bool {
        self.job(id).is_some_and(|j| {
            j.upload.wants_body() && (j.answer == Answer::Done || j.upload.room() > 0)
        })
    }

    /// How many more bytes the job's window takes from the client now.
    pub fn room(&self, id: JobId) -> usize {
        self.job(id).map_or(0, |j| j.upload.room())
    }

    /// The client's side is a tunnel (after a 101): its bytes go to the
    /// backend as they come, and its close is passed on, not an abort.
    pub fn in_tunnel(&self, id: JobId) -> bool {
        self.job(id).is_some_and(|j| j.upload.tunneled())
    }

    /// The client closed its side of a tunnel: the backend hears it (its
    /// write side is shut once the bytes before the close are out), and
    /// the tunnel ends when the backend closes too. A CGI program is sent
    /// `cgi.limits`' `tcp-fin-propagate` signal.
    pub fn end_input(&mut self, id: JobId, sink: &mut dyn Sink, now: u64, registry: &Registry) {
        let Some(j) = self.job_mut(id) else {
            return;
        };
        let ex = j.ex;
        j.upload.end_tunnel();
        let sig = j.cgi.as_ref().map_or(0, |c| c.fin_signal);
        if let Some(bkey) = j.backend {
            if let Some(super::backend::Link::Cgi(p)) = self.conns.get(bkey).map(|b| &b.stream) {
                if sig > 0 {
                    p.signal(sig);
                }
            }
            let sent = self.send_request(bkey, now).map(|()| false);
            self.after_progress(bkey, sent, Some(sink), now, registry);
            self.own_news(ex, Some(sink));
        }
    }

    /// A chunked body is still being collected before a backend is asked.
    pub fn collecting(&self, id: JobId) -> bool {
        self.job(id).is_some_and(|j| j.upload.collecting())
    }

    /// Request body bytes the client has yet to send.
    pub fn body_remaining(&self, id: JobId) -> u64 {
        self.job(id).map_or(0, |j| j.upload.remaining())
    }

    /// Body bytes from the client: into the backend's window (and out to
    /// the backend as far as its socket takes them), or nowhere once the
    /// answer is over. How many of `input` were used, and whether the body
    /// is complete; `Err(status)` ends the exchange with that status (413
    /// for a chunked body over its limit, 503/502 when a collected body
    /// finds no backend).
    pub fn feed(
        &mut self,
        id: JobId,
        input: &[u8],
        now: u64,
        registry: &Registry,
    ) -> Result<(usize, bool), u16> {
        let Some(j) = self.job_mut(id) else {
            return Ok((input.len(), true));
        };
        if j.answer == Answer::Done && !j.upload.collecting() {
            let used = j.upload.discard(input);
            return Ok((used, !j.upload.wants_body()));
        }
        let was_collecting = j.upload.collecting();
        let (used, done) = j.upload.take(input)?;
        let (backend, ex) = (j.backend, j.ex);
        if was_collecting && done {
            // A collected chunked body is complete: now a backend.
            let sent = self.dispatch(id.key, now, registry);
            if let Some(status) = self.own_news(ex, None) {
                return Err(status);
            }
            sent?;
        } else if let Some(bkey) = backend {
            let sent = self.send_request(bkey, now).map(|()| false);
            self.after_progress(bkey, sent, None, now, registry);
            // A retry that found no backend: the client hears it now.
            if let Some(status) = self.own_news(ex, None) {
                return Err(status);
            }
        }
        Ok((used, done))
    }

    /// Moves a job on after its client was driven: resumes reading a
    /// backend paused while the client was slow, and sends body bytes the
    /// window holds.
    pub fn pump(&mut self, id: JobId, sink: &mut dyn Sink, now: u64, registry: &Registry) {
        let Some(bkey) = self.job(id).and_then(|j| j.backend) else {
            return;
        };
        let Some(b) = self.conns.get_mut(bkey) else {
            return;
        };
        if b.paused && sink.has_room() {
            b.paused = false;
            b.readable = true;
        }
        self.drive_backend(bkey, sink, now, registry);
    }

    /// The client's side is done with the job (its answer is written, or
    /// the client went away): the job and any backend connection it still
    /// holds go.
    pub fn finish(&mut self, id: JobId) -> JobEnd {
        let body_remaining = self.body_remaining(id);
        if self.job(id).is_some() {
            self.drop_job(id.key);
        }
        JobEnd { body_remaining }
    }

    /// Removes a job, its backend connection and its place in the queue.
    pub(super) fn drop_job(&mut self, key: usize) {
        let Some(j) = self.jobs.try_remove(key) else {
            return;
        };
        if let Some(b) = j.backend {
            self.remove_conn(b);
        }
        if j.waiting {
            self.waiting.retain(|&k| k != key);
        }
    }

    /// The job failed with `status`: the sink hears it now, or (without
    /// one) the call under way returns it ([`News::Failed`]).
    pub(super) fn fail_job(&mut self, key: usize, status: u16, sink: Option<&mut dyn Sink>) {
        let Some(j) = self.jobs.get_mut(key) else {
            return;
        };
        j.backend = None;
        if j.waiting {
            j.waiting = false;
            self.waiting.retain(|&k| k != key);
        }
        let j = &mut self.jobs[key];
        j.upload.end_tunnel();
        let told = j.answer == Answer::Done;
        j.answer = Answer::Done;
        match sink {
            Some(s) if !told => s.fail(status),
            Some(_) => {}
            None if !told => self.outbox.push(News::Failed(j.ex, status)),
            None => {}
        }
    }

    /// The answer on backend connection `bkey` is complete: the connection
    /// is kept or closed, and the client's side hears the end.
    pub(super) fn finish_answer(&mut self, bkey: usize, sink: Option<&mut dyn Sink>, now: u64) {
        let Some(key) = self
            .conns
            .get(bkey)
            .and_then(super::backend::BackendConn::job)
        else {
            return;
        };
        let all_sent = self.jobs.get(key).is_some_and(|j| j.upload.all_sent());
        self.release(bkey, all_sent, now);
        let Some(j) = self.jobs.get_mut(key) else {
            return;
        };
        j.backend = None;
        // A tunnel ends with its backend's end: the client is not read any more.
        j.upload.end_tunnel();
        match j.answer {
            // A tunnel whose backend closed before it sent a byte: its end.
            Answer::Nothing if j.protocol.is_raw() => {
                j.answer = Answer::Done;
                match sink {
                    Some(s) => s.end(),
                    None => self.outbox.push(News::Ended(j.ex)),
                }
            }
            Answer::Nothing => {
                log::error!("backend answered without a complete header block");
                self.fail_job(key, 502, sink);
            }
            // (After a rerun or a file sent instead, the end says the
            // backend is done with the request: the exchange goes on.)
            Answer::Streaming | Answer::Dropping | Answer::Holding(_) => {
                j.answer = Answer::Done;
                match sink {
                    Some(s) => s.end(),
                    None => self.outbox.push(News::Ended(j.ex)),
                }
            }
            Answer::Done => {}
        }
    }

    /// What this call learned of the caller's own job `ex` and had no sink
    /// to tell: told to `sink` when there is one, or its failure returned.
    /// (Room in its window needs no word: its caller drives it on.) News of
    /// other jobs, which a call about one job does not make, is left for
    /// the next [`Gateways::pump_waiting`] to return.
    pub(super) fn own_news(
        &mut self,
        ex: ExchangeId,
        mut sink: Option<&mut dyn Sink>,
    ) -> Option<u16> {
        let mut failed = None;
        self.outbox.retain(|n| match *n {
            News::Failed(e, status) if e == ex => {
                match sink.as_deref_mut() {
                    Some(s) => s.fail(status),
                    None => failed = Some(status),
                }
                false
            }
            News::Ended(e) if e == ex => {
                if let Some(s) = sink.as_deref_mut() {
                    s.end();
                }
                false
            }
            News::Woken(e) => e != ex,
            _ => true,
        });
        failed
    }

    /// News the call under way made, for its caller.
    pub(super) fn take_news(&mut self) -> Vec<News> {
        std::mem::take(&mut self.outbox)
    }

    /// Backend connections whose held CGI head waited [`HOLD_US`] (see
    /// [`Answer::Holding`]): each with its exchange, to be read again now
    /// (as if readable) so that the head goes out, whole or streaming.
    pub fn take_held(&mut self, now_us: u64) -> Vec<(usize, ExchangeId)> {
        for (bkey, ex) in self.held_now.drain(..) {
            self.held_due.push((bkey, ex, now_us + HOLD_US));
        }
        if self.held_due.iter().all(|&(_, _, at)| at > now_us) {
            return Vec::new();
        }
        let (due, wait): (Vec<_>, Vec<_>) = self
            .held_due
            .drain(..)
            .partition(|&(_, _, at)| at <= now_us);
        self.held_due = wait;
        due.into_iter()
            .filter_map(|(bkey, ex, _)| {
                let b = self.conns.get_mut(bkey)?;
                let j = self.jobs.get(b.job()?)?;
                if j.ex != ex || !matches!(j.answer, Answer::Holding(_)) {
                    return None;
                }
                b.readable = true;
                b.hold_expired = true;
                Some((bkey, ex))
            })
            .collect()
    }

    /// Some CGI head is held for its length: the loop comes back soon.
    pub fn holds_answers(&self) -> bool {
        !self.held_now.is_empty() || !self.held_due.is_empty()
    }

    /// Requests waiting for a free backend now.
    pub fn queued(&self) -> usize {
        self.waiting.len()
    }
}
