//! A job's way to a backend connection: choosing the backend (balance,
//! caps, disabled ones), reusing a kept connection or opening one, the
//! queue of jobs that found no room, and handing connections back.

use std::io;

use mio::{Registry, Token};
use slab::Slab;

use super::backend::{BackendConn, Link, Use, BACKEND_BASE};
use super::http_state::HttpJob;
use super::job::{Answer, Job};
use super::{
    Balance, Gateways, Host, Keep, News, Protocol, Route, Upload, MAX_WAITING, MAX_WAIT_SECS,
};
use crate::net::connect;

impl Gateways {
    /// Finds a backend for job `key`, whose request is ready to go, and
    /// connects to it (sending what the request has ready at once), or
    /// queues the job. `Err(status)` when no backend can ever take it.
    pub(super) fn dispatch(
        &mut self,
        key: usize,
        now: u64,
        registry: &Registry,
    ) -> Result<(), u16> {
        let Some(j) = self.jobs.get_mut(key) else {
            return Ok(());
        };
        if j.backend.is_some() || j.answer == Answer::Done {
            return Ok(());
        }
        let Some(route) = self.routes.get_mut(j.route) else {
            // Its route was removed by a graceful restart.
            return Err(503);
        };
        let Some(h) = pick_host(route, &self.hosts, j, now) else {
            return self.no_host(key, now);
        };
        j.waiting = false;
        j.attempts += 1;
        if self.hosts[h].keep == Keep::Unknown && now >= self.hosts[h].probe_at {
            // First needed: ask how many connections it serves. This
            // request does not wait for the answer.
            self.start_probe(h, now, registry);
        }
        let Some(j) = self.jobs.get_mut(key) else {
            return Ok(());
        };
        let host = &mut self.hosts[h];
        let keep =
            host.keep == Keep::On && matches!(j.protocol, Protocol::FastCgi | Protocol::Http);
        let is_cgi = j.protocol == Protocol::Cgi;
        let is_local = j.local.is_some();
        if let Some(http) = j.http.as_mut() {
            choose_head(http, &mut j.upload, &host.spec.http_label);
        }
        if keep && may_reuse(j, host, &self.conns, now) {
            if let Some(bkey) = host.idle.pop() {
                if let Some(b) = self.conns.get_mut(bkey) {
                    b.state = Use::Busy { job: key };
                    b.protocol = j.protocol;
                    b.reused = true;
                    b.writable = true;
                    b.reset(now);
                    j.upload.set_keep_conn(true);
                    j.backend = Some(bkey);
                    self.reused += 1;
                    return self.first_send(bkey, now, registry);
                }
            }
        }
        if host.active >= host.cap {
            match host.idle.first().copied() {
                Some(oldest) => {
                    self.remove_conn(oldest);
                }
                None => {
                    j.attempts -= 1;
                    j.waiting = true;
                    self.waiting.push_front(key);
                    return Ok(());
                }
            }
        }
        if is_local {
            return self.start_local(key, h, now, registry);
        }
        if is_cgi {
            return self.start_cgi(key, h, now, registry);
        }
        self.open_conn(key, h, keep, now, registry)
    }

    /// No backend of job `key`'s route can take it now: 503 when all of
    /// them are disabled (or the queue is full), else it waits in the queue.
    fn no_host(&mut self, key: usize, now: u64) -> Result<(), u16> {
        let Some(j) = self.jobs.get_mut(key) else {
            return Ok(());
        };
        let route = &self.routes[j.route];
        let all_down = route
            .hosts
            .iter()
            .all(|&h| self.hosts[h].disabled_until > now);
        if all_down {
            log::warn!(
                "every backend of {} is disabled; answering 503",
                route.pattern
            );
            return Err(503);
        }
        if !j.waiting {
            if self.waiting.len() >= MAX_WAITING {
                log::warn!("backend queue full; answering 503");
                return Err(503);
            }
            j.waiting = true;
            self.waiting.push_back(key);
        }
        Ok(())
    }

    /// Opens a new connection to host `h` (under its cap) for job `key`
    /// and sends what the request has ready. A connect that fails disables
    /// the host and tries another; a full unix listen queue queues the job.
    fn open_conn(
        &mut self,
        key: usize,
        h: usize,
        keep: bool,
        now: u64,
        registry: &Registry,
    ) -> Result<(), u16> {
        let Some(j) = self.jobs.get_mut(key) else {
            return Ok(());
        };
        let host = &mut self.hosts[h];
        let stream = match connect(&host.spec.addr) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // A unix socket's listen queue is full: the backend is busy, not
                // broken. Lower its cap to what it holds now and wait.
                host.cap = host.active.max(1);
                j.attempts -= 1;
                j.waiting = true;
                self.waiting.push_front(key);
                self.retry_soon = true;
                return Ok(());
            }
            Err(e) => {
                log::error!(
                    "backend {} ({}): connect: {e}; disabled for {} s",
                    host.spec.label,
                    host.spec.addr,
                    host.spec.disable_time.max(1)
                );
                host.disable(now);
                // Another backend of the route may take it.
                return self.dispatch(key, now, registry);
            }
        };
        // The request's protocol: `scgi.protocol` may differ per request.
        let mut b = BackendConn::new(Link::Sock(stream), Use::Busy { job: key }, h, j.protocol);
        b.keep = keep && j.http.as_ref().is_none_or(|http| http.sent.keep_alive);
        if j.protocol == Protocol::Http {
            b.idle_limit = super::proxy::IDLE_SECS;
        }
        let Some(bkey) = self.insert_conn(registry, b, now) else {
            return Err(502);
        };
        self.hosts[h].active += 1;
        let Some(j) = self.jobs.get_mut(key) else {
            return Ok(());
        };
        j.backend = Some(bkey);
        j.upload.set_keep_conn(keep);
        self.opened += 1;
        self.first_send(bkey, now, registry)
    }

    /// Starts the CGI program of job `key` under host `h` (under its cap):
    /// a failure to start is the request's 500, as lighttpd answers.
    fn start_cgi(
        &mut self,
        key: usize,
        h: usize,
        now: u64,
        registry: &Registry,
    ) -> Result<(), u16> {
        let Some(j) = self.jobs.get_mut(key) else {
            return Ok(());
        };
        let Some(cgi) = j.cgi.as_ref() else {
            return Err(500);
        };
        let Some((env, len)) = j.upload.take_cgi_env() else {
            return Err(500);
        };
        let proc = match super::cgi_run::CgiProc::spawn(cgi, &env, len) {
            Ok(p) => p,
            Err(e) => {
                log::error!("cgi {}: cannot start: {e}", cgi.script.display());
                return Err(500);
            }
        };
        let b = BackendConn::new(
            Link::Cgi(Box::new(proc)),
            Use::Busy { job: key },
            h,
            Protocol::Cgi,
        );
        let Some(bkey) = self.insert_conn(registry, b, now) else {
            return Err(500);
        };
        self.hosts[h].active += 1;
        if let Some(j) = self.jobs.get_mut(key) {
            j.backend = Some(bkey);
        }
        self.opened += 1;
        self.first_send(bkey, now, registry)
    }

    /// Starts job `key`'s local work under host `h` (under its cap).
    pub(super) fn start_local(
        &mut self,
        key: usize,
        h: usize,
        now: u64,
        registry: &Registry,
    ) -> Result<(), u16> {
        let Some(work) = self.jobs.get_mut(key).and_then(|j| j.local.take()) else {
            return Err(500);
        };
        let link = match super::local::LocalLink::new(work) {
            Ok(l) => l,
            Err(e) => {
                log::error!("local job: cannot make its pipe: {e}");
                return Err(500);
            }
        };
        let b = BackendConn::new(
            Link::Local(Box::new(link)),
            Use::Busy { job: key },
            h,
            Protocol::Cgi,
        );
        let Some(bkey) = self.insert_conn(registry, b, now) else {
            return Err(500);
        };
        self.hosts[h].active += 1;
        if let Some(j) = self.jobs.get_mut(key) {
            j.backend = Some(bkey);
        }
        self.first_send(bkey, now, registry)
    }

    /// Sends what the request has ready on its new (or reused) connection;
    /// a failure here is the job's (retried, or its status returned).
    pub(super) fn first_send(
        &mut self,
        bkey: usize,
        now: u64,
        registry: &Registry,
    ) -> Result<(), u16> {
        let job = self.conns.get(bkey).and_then(BackendConn::job);
        if let Some(h) = self
            .conns
            .get(bkey)
            .and_then(|b| self.hosts.get_mut(b.host))
        {
            h.requests += 1;
        }
        let sent = self.send_request(bkey, now).map(|()| false);
        self.after_progress(bkey, sent, None, now, registry);
        let Some(ex) = job.and_then(|k| self.jobs.get(k)).map(|j| j.ex) else {
            return Ok(());
        };
        match self.own_news(ex, None) {
            Some(status) => {
                // The failure goes to the caller as this `Err`, which it
                // passes on to the client (a retry's caller through
                // `fail_job`): the job is not told yet, or that `fail_job`
                // would take it for told and the client would wait forever.
                if let Some(j) = job.and_then(|k| self.jobs.get_mut(k)) {
                    j.answer = Answer::Nothing;
                }
                Err(status)
            }
            None => Ok(()),
        }
    }

    /// Registers a new backend connection with the poll (for writability
    /// too only if `b.watches_writes`: see `watch_writes`) and keeps it; its
    /// key, or `None` (logged) when it cannot be registered.
    pub(super) fn insert_conn(
        &mut self,
        registry: &Registry,
        mut b: BackendConn,
        now: u64,
    ) -> Option<usize> {
        let entry = self.conns.vacant_entry();
        let bkey = entry.key();
        if let Err(e) = b
            .stream
            .register(registry, Token(BACKEND_BASE + bkey), b.watches_writes)
        {
            log::error!("cannot register a backend connection: {e}");
            return None;
        }
        b.started = now;
        b.last_active = now;
        entry.insert(b);
        Some(bkey)
    }

    /// A request is over on backend connection `bkey` (the whole request
    /// was written when `all_sent`): the connection is kept for the next
    /// request when the request asked for it and it ended cleanly — END_REQUEST
    /// read and nothing after it, the backend's side still open, its backend
    /// still keeping connections; else it is closed. Either way its slot
    /// goes to a waiting job.
    pub(super) fn release(&mut self, bkey: usize, all_sent: bool, now: u64) {
        let Some(b) = self.conns.get_mut(bkey) else {
            return;
        };
        let clean = b.keep
            && b.progress == super::backend::Progress::Ended
            && all_sent
            && b.records.is_empty()
            && !b.peer_closed
            && !b.write_shut
            && matches!(b.state, Use::Busy { .. });
        let host = self.hosts.get_mut(b.host);
        let Some(h) = host.filter(|h| clean && !self.closing && h.keep == Keep::On && !h.retired)
        else {
            self.remove_conn(bkey);
            return;
        };
        if b.answered() && h.cap < h.limit {
            h.cap += 1;
        }
        b.state = Use::Idle { since: now };
        b.reset(now);
        h.idle.push(bkey);
        self.freed += 1;
    }

    /// Drops a backend connection and frees its slot for a waiting job.
    pub(super) fn remove_conn(&mut self, bkey: usize) -> Option<BackendConn> {
        let mut b = self.conns.try_remove(bkey)?;
        self.freed += 1;
        if let Link::Cgi(p) = &mut b.stream {
            if let Some(child) = p.child.take() {
                p.drain_stderr();
                // Its stdout ended: the answer is complete.
                let finished = b.progress == super::backend::Progress::Ended;
                self.retire_cgi(child, b.host, finished);
            }
        }
        if let Some(h) = self.hosts.get_mut(b.host) {
            h.active = h.active.saturating_sub(1);
            if matches!(b.state, Use::Idle { .. }) {
                h.idle.retain(|&k| k != bkey);
            }
            // A backend that answered may take one more again.
            if b.answered() && h.cap < h.limit {
                h.cap += 1;
            }
        }
        if let Some(j) = b.job().and_then(|k| self.jobs.get_mut(k)) {
            if j.backend == Some(bkey) {
                j.backend = None;
            }
        }
        Some(b)
    }

    /// Whether waiting jobs should be looked at now: a backend slot was
    /// freed, or a backend said "busy" a moment ago.
    pub fn has_work(&self) -> bool {
        self.retry_soon || self.freed > 0 || !self.outbox.is_empty()
    }

    /// Gives freed backend slots to waiting jobs, oldest first, and returns
    /// what their clients are to hear: jobs that found no backend at all
    /// failed; those dispatched may take their clients' bodies again.
    pub fn pump_waiting(&mut self, now: u64, registry: &Registry) -> Vec<News> {
        self.retry_soon = false;
        self.freed = 0;
        if !self.exiting.is_empty() {
            self.reap_cgi(now);
            // A CGI process about to exit frees a place for a waiting
            // request: look again in a moment, not at the next tick.
            self.retry_soon = !self.waiting.is_empty();
            self.freed = 0;
        }
        for _ in 0..self.waiting.len() {
            let Some(key) = self.waiting.pop_front() else {
                break;
            };
            let Some(j) = self.jobs.get_mut(key) else {
                continue;
            };
            j.waiting = false;
            let ex = j.ex;
            if let Err(status) = self.dispatch(key, now, registry) {
                self.fail_job(key, status, None);
                continue;
            }
            match self.jobs.get(key) {
                Some(j) if j.waiting => {
                    // Still no room: keep its place at the head of the queue.
                    if let Some(pos) = self.waiting.iter().rposition(|&k| k == key) {
                        self.waiting.remove(pos);
                    }
                    self.waiting.push_front(key);
                    break;
                }
                Some(_) => self.outbox.push(News::Woken(ex)),
                None => {}
            }
        }
        self.take_news()
    }

    /// Jobs that waited too long for a backend fail with 503.
    pub(super) fn expire_waiting(&mut self, now: u64) {
        let over: Vec<usize> = self
            .waiting
            .iter()
            .copied()
            .filter(|&k| {
                self.jobs
                    .get(k)
                    .is_none_or(|j| now.saturating_sub(j.since) >= MAX_WAIT_SECS)
            })
            .collect();
        for k in over {
            log::warn!("a request waited {MAX_WAIT_SECS} s for a backend; answering 503");
            self.fail_job(k, 503, None);
        }
    }
}

/// The backend of `route` that job `j` goes to as its balancing says,
/// among those up and under their cap (or with a kept connection waiting).
fn pick_host(route: &mut Route, hosts: &[Host], j: &Job, now: u64) -> Option<usize> {
    let usable = |h: &usize| {
        let h = &hosts[*h];
        h.disabled_until <= now && (h.active < h.cap || !h.idle.is_empty())
    };
    let balance = super::balance_of(&j.settings, route.protocol);
    match balance {
        Balance::LeastBusy => route
            .hosts
            .iter()
            .copied()
            .filter(usable)
            .min_by_key(|&h| hosts[h].busy()),
        Balance::RoundRobin => {
            let n = route.hosts.len();
            let pick = (0..n)
                .map(|i| route.hosts[(route.next + i) % n])
                .find(usable);
            route.next = (route.next + 1) % n.max(1);
            pick
        }
        Balance::Hash | Balance::Sticky => {
            // Start at the key's backend and take the next usable one.
            let hash = if balance == Balance::Hash {
                j.hash_path
            } else {
                j.hash_ip
            };
            let n = route.hosts.len();
            let first = (hash % n.max(1) as u64) as usize;
            (0..n).map(|i| route.hosts[(first + i) % n]).find(usable)
        }
    }
}

/// `proxy.replace-http-host`: the request head with the label of the
/// backend it goes to.
fn choose_head(http: &mut HttpJob, upload: &mut Upload, label: &str) {
    let want = http
        .heads
        .iter()
        .position(|(l, _)| *l == label)
        .unwrap_or(0);
    if want != http.current {
        if let Some((_, head)) = http.heads.get(want) {
            upload.replace_head(head);
            http.current = want;
        }
    }
}

/// Whether job `j` may go on one of `host`'s kept connections.
fn may_reuse(j: &Job, host: &Host, conns: &Slab<BackendConn>, now: u64) -> bool {
    // A kept connection may have been closed by the backend a moment
    // ago (php-cgi's child exits after PHP_FCGI_MAX_REQUESTS): only a
    // request glint can always send again goes on one. Another gets a
    // new connection, in the place of an idle one when at the cap.
    let fresh = j.fresh_conn || !j.upload.stays_whole();
    // HTTP: a request that must not be sent twice goes only on a
    // connection that rested for less than a second (no backend lets
    // one go that soon), or a new one.
    let risky = j.protocol == Protocol::Http
        && !crate::httpup::retry::may_retry(
            &j.method,
            crate::httpup::retry::Failure {
                reused: true,
                answer_started: false,
                body_replayable: true,
            },
        );
    let newest_rested = host
        .idle
        .last()
        .and_then(|&k| conns.get(k))
        .is_some_and(|b| matches!(b.state, Use::Idle { since } if since < now));
    let rested_risk = risky && newest_rested;
    !fresh && !rested_risk
}
