//! Once a second: time-outs of backend connections (connect, write, read:
//! 504), of kept idle connections and probes, of the queue (503), and the
//! spawned backends' upkeep.

use mio::Registry;

use super::backend::Use;
use super::keep::ProbeEnd;
use super::{Gateways, News, IDLE_KEEP_SECS, PROBE_WAIT_SECS};

impl Gateways {
    /// The time-outs of this second; returns the jobs they ended, for
    /// their clients.
    pub fn on_tick(&mut self, now: u64, registry: &Registry) -> Vec<News> {
        self.local_scripts.purge(now);
        let mut idle_over = Vec::new();
        let mut probes_over = Vec::new();
        for (bkey, b) in self.conns.iter() {
            let since = match b.state {
                Use::Busy { .. } => continue,
                Use::Idle { since } => {
                    if now.saturating_sub(since) >= b.idle_limit.min(IDLE_KEEP_SECS) {
                        idle_over.push(bkey);
                    }
                    continue;
                }
                Use::Probe { .. } => b.started,
            };
            let Some(h) = self.hosts.get(b.host) else {
                probes_over.push((bkey, ProbeEnd::Failed("its backend is gone".into())));
                continue;
            };
            let waited = now.saturating_sub(since);
            let answer_wait = h.spec.read_timeout.min(PROBE_WAIT_SECS);
            if !b.connected && waited >= h.spec.connect_timeout {
                probes_over.push((bkey, ProbeEnd::Unreachable("connect time-out".into())));
            } else if b.connected && waited >= answer_wait {
                let why = format!("it did not answer within {answer_wait} s");
                probes_over.push((bkey, ProbeEnd::Failed(why)));
            }
        }
        for bkey in idle_over {
            self.remove_conn(bkey);
        }
        for (bkey, end) in probes_over {
            self.end_probe(bkey, end, now);
        }
        self.expire_busy(now);
        self.expire_waiting(now);
        // Backends that were down may be up again.
        if !self.waiting.is_empty() {
            self.retry_soon = true;
        }
        self.reap(now);
        self.reap_cgi(now);
        // Backends started again are asked again.
        self.start_probes(now, registry);
        self.take_news()
    }

    /// Connect, write and read time-outs of connections carrying a job.
    fn expire_busy(&mut self, now: u64) {
        let mut expired = Vec::new();
        for (bkey, b) in self.conns.iter() {
            let Some(job) = b.job() else { continue };
            let h = &self.hosts[b.host].spec;
            let j = self.jobs.get(job);
            let up = j.map(|j| &j.upload);
            // A CGI request's limits are its scope's `cgi.limits` (0: none).
            let cgi = j.and_then(|j| j.cgi.as_ref());
            let limit_of = |t: u32| if t == 0 { u64::MAX } else { u64::from(t) };
            let (write_limit, read_limit) = match cgi {
                Some(c) => (limit_of(c.write_timeout), limit_of(c.read_timeout)),
                None => (h.write_timeout, h.read_timeout),
            };
            let (what, limit, since) = if !b.connected {
                ("connect", h.connect_timeout, b.started)
            } else if !b.write_shut && up.is_some_and(|u| !u.pending().is_empty()) {
                // Glint has request bytes the backend does not take.
                ("write", write_limit, b.last_active)
            } else if b.write_shut || up.is_none_or(|u| u.all_sent() || u.awaits_ask()) {
                ("read", read_limit, b.last_active)
            } else {
                // The rest of the body is still to come from the client,
                // whose own idle time-out applies.
                continue;
            };
            // Whole seconds: `>=` would fire a 1 s limit within a
            // millisecond of a byte read at the end of a second (the body
            // after a head already sent, cut); `>` waits 1-2 s, as lighttpd.
            if now.saturating_sub(since) > limit {
                expired.push((bkey, job, what));
            }
        }
        for (bkey, job, what) in expired {
            if let Some(b) = self.remove_conn(bkey) {
                let h = &mut self.hosts[b.host];
                h.timeouts += 1;
                log::error!(
                    "backend {} ({}): {what} time-out",
                    h.spec.label,
                    h.spec.addr
                );
                if what == "connect" {
                    h.disable(now);
                }
            }
            self.fail_job(job, 504, None);
        }
    }
}
