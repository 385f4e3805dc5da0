//! What a failed backend attempt comes to: the job retried (on another
//! backend, or on a new connection), or answered 502.

use mio::Registry;

use super::super::job::Answer;
use super::super::{Gateways, Protocol, MAX_ATTEMPTS};
use super::{BackendConn, Failure};
use crate::msg::Sink;

impl Gateways {
    /// Acts on what an attempt at progress came to: watches writability
    /// once a write blocked, ends the job when its answer is complete,
    /// retries or fails it when the backend failed. Without a `sink` (no
    /// answer was read), a failure of the job is noted for the caller.
    pub(in crate::upstream) fn after_progress(
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
            Err(Failure::Retry(why)) => self.gateway_retry(bkey, job, why, sink, now, registry),
            Err(Failure::Broken(why)) => {
                if let Some(b) = self.remove_conn(bkey) {
                    let host = &self.hosts[b.host];
                    log::error!("backend {} ({}): {why}", host.spec.label, host.spec.addr);
                }
                self.fail_job(job, 502, sink);
            }
        }
    }

    /// A FastCGI, SCGI, uwsgi or CGI backend refused, reset or went away
    /// before answering: the job goes to a backend again while attempts
    /// remain, nothing reached the client and glint still holds its whole
    /// request; else it is answered 502.
    fn gateway_retry(
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
        // A kept connection closed before any answer: the backend
        // let it go (a worker exited, say) while the request was on
        // its way. Not a failure of the backend, nor an attempt.
        let stale = b.reused && !b.answered();
        if stale {
            log::debug!("backend {name}: a kept connection was closed ({why}); sending the request on a new one");
        } else {
            log::error!("backend {name}: {why}");
            if !b.answered() {
                host.disable(now);
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
        if j.answer == Answer::Nothing && j.attempts >= MAX_ATTEMPTS {
            let status = self.out_of_tries(job, now);
            return self.fail_job(job, status, sink);
        }
        if j.answer == Answer::Nothing {
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

    /// The status of a request whose tries are used up before any answer:
    /// 503 when every backend of its route is disabled now (as when there
    /// was none to try at all, and as lighttpd answers), else 502.
    fn out_of_tries(&self, job: usize, now: u64) -> u16 {
        let all_down = self
            .jobs
            .get(job)
            .and_then(|j| self.routes.get(j.route))
            .is_some_and(|r| {
                r.hosts
                    .iter()
                    .all(|&h| self.hosts.get(h).is_none_or(|h| h.disabled_until > now))
            });
        if all_down {
            503
        } else {
            502
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
                host.spec.disable_time.max(1)
            );
            host.disable(now);
            if j.answer == Answer::Nothing && j.attempts >= MAX_ATTEMPTS {
                let status = self.out_of_tries(job, now);
                return self.fail_job(job, status, sink);
            }
            if j.answer == Answer::Nothing && j.upload.rewind() {
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
                host.spec.disable_time.max(1)
            );
            host.disable(now);
        }
        self.fail_job(job, 502, sink);
    }
}
