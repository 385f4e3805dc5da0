//! A graceful restart of the gateways: the new configuration's routes and
//! backends take over from the running ones.

use std::process::Child;

use super::process::{retire_step, spawn};
use super::{Gateways, Host, Route, Spawner};
use crate::config::Config;

impl Gateways {
    /// A graceful restart: the routes and backends of `c` take over. A
    /// backend whose options did not change is kept as it is (its process,
    /// its connections and its state); a new one is started; one that is no
    /// longer configured finishes its requests and is then stopped. Nothing
    /// changes when a new backend cannot be started.
    ///
    /// Requests under way move to the new route with the same pattern,
    /// protocol and role: the one with the same backends if there is one,
    /// else the one of the table at the same place, else any; one whose
    /// route is gone gets 503 when it next needs a backend.
    pub fn reconfigure(&mut self, c: &Config, now: u64) -> Result<(), String> {
        let mut next = Gateways::from_config(c)?;
        let same = self.same_hosts(&next);
        // Start the new spawned backends first: a failure leaves everything as it was.
        let started = self.start_new(&next, &same, now)?;
        for (j, c) in started {
            next.hosts[j].child = Some(c);
        }
        let map = self.carry_hosts(&mut next, &same);
        let routes = self.map_routes(&next, &map);
        self.hand_over(&mut next, &map, &routes);
        *self = next;
        // Retired backends keep no connection; nor do ones that now share
        // their address with another.
        self.settle_keep();
        let stop = !self.retire_held;
        let now_retired = self.hosts.iter_mut().filter(|h| h.retired);
        for h in now_retired {
            retire_step(h, stop);
        }
        Ok(())
    }

    /// Which running backend each of `next`'s is (the same options), each
    /// running one taken at most once.
    fn same_hosts(&self, next: &Gateways) -> Vec<Option<usize>> {
        let mut taken = vec![false; self.hosts.len()];
        let mut same: Vec<Option<usize>> = Vec::with_capacity(next.hosts.len());
        for nh in &next.hosts {
            let found = (0..self.hosts.len())
                .find(|&i| !taken[i] && !self.hosts[i].retired && self.hosts[i].spec == nh.spec);
            if let Some(i) = found {
                taken[i] = true;
            }
            same.push(found);
        }
        same
    }

    /// Starts the processes of `next`'s spawned backends that are not
    /// running yet: the children with the index of their host. When one
    /// cannot be started, those started are stopped again and the error
    /// is returned.
    fn start_new(
        &mut self,
        next: &Gateways,
        same: &[Option<usize>],
        now: u64,
    ) -> Result<Vec<(usize, Child)>, String> {
        let mut started: Vec<(usize, Child)> = Vec::new();
        for (j, nh) in next.hosts.iter().enumerate() {
            // A worker process leaves them to its supervisor.
            if nh.spec.spawn.is_none() || same[j].is_some() || self.spawner == Spawner::Supervisor {
                continue;
            }
            // An address another new backend's process serves already (one
            // kept, or one started here): as at start, not started twice.
            let served = next.hosts[..j].iter().enumerate().any(|(k, o)| {
                o.spec.spawn.is_some()
                    && o.spec.addr == nh.spec.addr
                    && (same[k].is_some_and(|i| self.hosts[i].child.is_some())
                        || started.iter().any(|(s, _)| *s == k))
            });
            if served {
                continue;
            }
            match spawn(&nh.spec) {
                Ok(c) => started.push((j, c)),
                Err(e) => {
                    let why = format!(
                        "{}: cannot start backend on {}: {e}",
                        nh.spec.label, nh.spec.addr
                    );
                    self.undo_starts(next, started, now);
                    return Err(why);
                }
            }
        }
        Ok(started)
    }

    /// Stops the processes `started` for `next`'s hosts.
    fn undo_starts(&mut self, next: &Gateways, started: Vec<(usize, Child)>, now: u64) {
        for (j, c) in started {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            // A running backend whose socket path was taken over
            // must listen there again.
            for h in &mut self.hosts {
                if h.spec.addr == next.hosts[j].spec.addr && h.child.is_some() {
                    if let Some(mut old) = h.child.take() {
                        let _ = nix::sys::signal::killpg(
                            nix::unistd::Pid::from_raw(old.id() as i32),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                        let _ = old.wait();
                    }
                    h.respawn_at = Some(now);
                }
            }
            let mut c = c;
            let _ = c.wait();
        }
    }

    /// Carries the running state of each kept backend over to `next`; the
    /// rest that still has work retires there. The new index of each
    /// running host.
    fn carry_hosts(&mut self, next: &mut Gateways, same: &[Option<usize>]) -> Vec<Option<usize>> {
        let mut map: Vec<Option<usize>> = vec![None; self.hosts.len()];
        for (j, found) in same.iter().enumerate() {
            if let Some(i) = *found {
                let old = &mut self.hosts[i];
                let nh = &mut next.hosts[j];
                nh.active = old.active;
                nh.cap = old.cap;
                nh.disabled_until = old.disabled_until;
                nh.child = old.child.take();
                nh.respawn_at = old.respawn_at.take();
                nh.keep = old.keep;
                nh.idle = std::mem::take(&mut old.idle);
                nh.limit = old.limit;
                nh.probe_at = old.probe_at;
                map[i] = Some(j);
            }
        }
        for (i, old) in std::mem::take(&mut self.hosts).into_iter().enumerate() {
            if map[i].is_some() || (old.active == 0 && old.child.is_none()) {
                continue;
            }
            map[i] = Some(next.hosts.len());
            next.hosts.push(Host {
                retired: true,
                ..old
            });
        }
        map
    }

    /// The route of `next` each running route's requests move to (`map`:
    /// the new index of each running host).
    fn map_routes(&self, next: &Gateways, map: &[Option<usize>]) -> Vec<Option<usize>> {
        self.routes
            .iter()
            .map(|r| {
                let alike = |n: &&Route| {
                    n.pattern == r.pattern
                        && n.protocol == r.protocol
                        && n.authorizer == r.authorizer
                };
                let same_hosts = |n: &&Route| {
                    n.hosts.len() == r.hosts.len()
                        && n.hosts
                            .iter()
                            .zip(&r.hosts)
                            .all(|(&nh, &oh)| map.get(oh).copied().flatten() == Some(nh))
                };
                let pick = |f: &dyn Fn(&&Route) -> bool| {
                    next.routes
                        .iter()
                        .enumerate()
                        .find(|(_, n)| alike(n) && f(n))
                        .map(|(i, _)| i)
                };
                pick(&same_hosts)
                    .or_else(|| pick(&|n| n.scope == r.scope))
                    .or_else(|| pick(&|_| true))
            })
            .collect()
    }

    /// Moves the connections, jobs, queues and counters under way over to
    /// `next`, renumbered by `map` (hosts) and `routes`.
    fn hand_over(&mut self, next: &mut Gateways, map: &[Option<usize>], routes: &[Option<usize>]) {
        next.conns = std::mem::take(&mut self.conns);
        for (_, b) in next.conns.iter_mut() {
            b.host = map.get(b.host).copied().flatten().unwrap_or(usize::MAX);
        }
        next.jobs = std::mem::take(&mut self.jobs);
        for (_, j) in next.jobs.iter_mut() {
            j.route = routes.get(j.route).copied().flatten().unwrap_or(usize::MAX);
        }
        next.next_gen = self.next_gen;
        next.exiting = std::mem::take(&mut self.exiting);
        for e in &mut next.exiting {
            e.host = map.get(e.host).copied().flatten().unwrap_or(usize::MAX);
        }
        next.outbox = std::mem::take(&mut self.outbox);
        next.waiting = std::mem::take(&mut self.waiting);
        next.retry_soon = true;
        next.freed = self.freed;
        next.workers = self.workers;
        next.closing = self.closing;
        next.spawner = self.spawner;
        next.retire_held = self.retire_held;
        next.opened = self.opened;
        next.reused = self.reused;
    }
}
