//! `server.max-worker = N`: N worker processes, each running its own event
//! loop on the listening sockets bound once by the supervisor (the kernel
//! spreads new connections between them).
//!
//! The supervisor serves no request. It restarts a worker that dies (at once
//! if it had run for a while, else after a back-off that doubles up to 30 s),
//! and passes signals on: SIGTERM and SIGINT to every worker (then exits once
//! all are gone), SIGHUP to every worker (and reopens its own error log).
//! SIGUSR1 is a graceful restart done by the supervisor: it reads the
//! configuration again, opens the new listeners (keeping the unchanged
//! ones), starts a new set of workers with the new configuration and sends
//! SIGINT to the old set, which finishes its responses and exits.
//!
//! The supervisor also runs the `bin-path` gateway backends, once for all
//! workers: it starts them before the first worker, restarts those that
//! die, and stops them once its workers are gone. A graceful restart keeps
//! the unchanged ones, starts the new ones before the new workers, and
//! stops the retired ones once the old workers have exited. Workers only
//! connect to them. Every child, worker or backend, is waited for by its own
//! pid, so neither takes the other's exit status.
//!
//! SIGUSR2 is a binary upgrade (see [`super::upgrade`]): the supervisor
//! starts the new glint on its listening sockets and, once it is ready,
//! sends SIGUSR2 to its workers (which finish their connections as in a
//! handover), closes its listeners, and exits when they are gone; if the
//! new glint does not come up, nothing changes.
//!
//! Workers have their own process group, so a Ctrl-C at the terminal reaches
//! the supervisor only (which passes it on once), and on Linux they get
//! SIGTERM if the supervisor dies.

use std::io;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, getpid, getppid, setpgid, ForkResult, Pid};

use crate::server::Server;
use crate::signals;

/// A worker that ran at least this long before dying is restarted at once.
const STABLE_AFTER: Duration = Duration::from_secs(10);
/// First back-off after a quick death; doubles each time, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often the supervisor looks at its workers and the signal flags.
const TICK: Duration = Duration::from_millis(100);

/// One place for a worker.
struct Slot {
    pid: Option<Pid>,
    started: Instant,
    /// Quick deaths in a row.
    failures: u32,
    /// When to start the next worker in this slot, while it has none.
    next_start: Instant,
}

/// Runs `count` workers until a stop signal and all of them have exited.
/// `server` must be bound and signal-aware; each worker runs it.
pub fn supervise(
    server: &mut Server,
    count: usize,
    plan: Option<super::upgrade::Plan>,
) -> io::Result<()> {
    let me = getpid();
    let now = Instant::now();
    let mut slots: Vec<Slot> = (0..count.max(1))
        .map(|_| Slot {
            pid: None,
            started: now,
            failures: 0,
            next_start: now,
        })
        .collect();
    // Workers of an older configuration, finishing their responses.
    let mut retiring: Vec<Pid> = Vec::new();
    let mut stopping: Option<Signal> = None;
    let mut upgrade = Upgrading {
        plan,
        running: None,
    };
    if let Err(e) = server.start_backends() {
        // Those that started before the failure.
        server.stop_backends();
        return Err(e);
    }
    log::info!("supervisor {me}: starting {} workers", slots.len());
    loop {
        reap(&mut slots, stopping.is_some());
        retiring.retain(|&pid| exited(pid).is_none());
        let requested = signals::take();
        if requested.upgrade && stopping.is_none() {
            upgrade.begin(server);
        }
        if upgrade.ready() && stopping.is_none() {
            let live: Vec<Pid> = slots
                .iter()
                .filter_map(|s| s.pid)
                .chain(retiring.iter().copied())
                .collect();
            send(&live, Signal::SIGUSR2);
            server.leave_socket_paths();
            server.close_listeners();
            stopping = Some(Signal::SIGINT);
        }
        stopping = on_signals(server, requested, &mut slots, &mut retiring, stopping);
        // Backends that died are started again, also while the workers
        // finish their last responses.
        server.tend_backends(!retiring.is_empty());
        if stopping.is_some() {
            if slots.iter().all(|s| s.pid.is_none()) && retiring.is_empty() {
                log::info!("supervisor: all workers have exited");
                server.stop_backends();
                return Ok(());
            }
        } else {
            start_missing(server, &mut slots, me);
        }
        std::thread::sleep(TICK);
    }
}

/// Notes the workers that exited; while not stopping, each slot's restart
/// waits longer after each quick death in a row.
fn reap(slots: &mut [Slot], stopping: bool) {
    for (i, slot) in slots.iter_mut().enumerate() {
        let Some(pid) = slot.pid else { continue };
        if let Some(how) = exited(pid) {
            slot.pid = None;
            if stopping {
                continue;
            }
            let lived = slot.started.elapsed();
            slot.failures = if lived >= STABLE_AFTER {
                0
            } else {
                slot.failures.saturating_add(1)
            };
            let wait = backoff(slot.failures);
            slot.next_start = Instant::now() + wait;
            log::error!(
                "worker {i} (pid {pid}) {how} after {:.1} s; restarting in {:.1} s",
                lived.as_secs_f64(),
                wait.as_secs_f64()
            );
        }
    }
}

/// Acts on the signals that arrived: stop (now or gracefully), reopen the
/// logs, reload (the old workers retire). Returns how the workers are
/// being stopped, if they are.
fn on_signals(
    server: &mut Server,
    s: signals::Requests,
    slots: &mut [Slot],
    retiring: &mut Vec<Pid>,
    mut stopping: Option<Signal>,
) -> Option<Signal> {
    let live: Vec<Pid> = slots
        .iter()
        .filter_map(|s| s.pid)
        .chain(retiring.iter().copied())
        .collect();
    if s.now && stopping != Some(Signal::SIGTERM) {
        log::info!("supervisor: stopping the workers now");
        send(&live, Signal::SIGTERM);
        stopping = Some(Signal::SIGTERM);
        server.close_listeners();
    } else if s.graceful && stopping.is_none() {
        log::info!("supervisor: stopping the workers gracefully");
        send(&live, Signal::SIGINT);
        stopping = Some(Signal::SIGINT);
        server.close_listeners();
    }
    if s.reopen {
        if let Err(e) = crate::errorlog::reopen() {
            log::error!("cannot reopen the error log: {e}");
        }
        send(&live, Signal::SIGHUP);
    }
    // Backends a graceful restart retires serve the old workers until
    // they have exited.
    if s.reload && stopping.is_none() {
        server.tend_backends(true);
    }
    if s.reload && stopping.is_none() && server.reload_from_source() {
        let old: Vec<Pid> = slots.iter_mut().filter_map(|s| s.pid.take()).collect();
        send(&old, Signal::SIGINT);
        retiring.extend(old);
        let now = Instant::now();
        for slot in slots.iter_mut() {
            slot.failures = 0;
            slot.next_start = now;
        }
    }
    stopping
}

/// A binary upgrade of the supervisor: the new glint starting.
struct Upgrading {
    plan: Option<super::upgrade::Plan>,
    running: Option<super::upgrade::Handover>,
}

impl Upgrading {
    fn begin(&mut self, server: &Server) {
        let Some(plan) = &self.plan else {
            log::warn!("binary upgrade requested, but glint's own path is unknown");
            return;
        };
        if self.running.is_some() {
            log::warn!("binary upgrade: one is under way; SIGUSR2 ignored");
            return;
        }
        log::info!(
            "supervisor: binary upgrade: starting {}",
            plan.exe.display()
        );
        match super::upgrade::start(plan, &server.listener_fds()) {
            Ok(h) => self.running = Some(h),
            Err(e) => log::error!(
                "binary upgrade: {}: {e}; this glint serves on",
                plan.exe.display()
            ),
        }
    }

    /// True once, when the new glint is ready.
    fn ready(&mut self) -> bool {
        let Some(h) = self.running.as_mut() else {
            return false;
        };
        match h.poll() {
            super::upgrade::State::Waiting => false,
            super::upgrade::State::Ready => {
                self.running = None;
                log::info!("supervisor: binary upgrade: the new glint serves; the workers finish");
                true
            }
            super::upgrade::State::Failed(why) => {
                self.running = None;
                log::error!("binary upgrade failed: {why}; this glint serves on");
                false
            }
        }
    }
}

/// Starts a worker in each empty slot whose back-off has passed.
fn start_missing(server: &mut Server, slots: &mut [Slot], me: Pid) {
    let now = Instant::now();
    for slot in slots.iter_mut() {
        if slot.pid.is_none() && slot.next_start <= now {
            match spawn(server, me) {
                Ok(pid) => {
                    slot.pid = Some(pid);
                    slot.started = now;
                }
                Err(e) => {
                    log::error!("cannot start a worker: {e}");
                    slot.failures = slot.failures.saturating_add(1);
                    slot.next_start = now + backoff(slot.failures);
                }
            }
        }
    }
}

fn backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let shift = (failures - 1).min(16);
    FIRST_BACKOFF.saturating_mul(1u32 << shift).min(MAX_BACKOFF)
}

fn send(pids: &[Pid], sig: Signal) {
    for &pid in pids {
        let _ = kill(pid, sig);
    }
}

/// How the worker ended, if it has; `None` while it runs.
fn exited(pid: Pid) -> Option<String> {
    loop {
        return match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => Some(format!("exited with status {code}")),
            Ok(WaitStatus::Signaled(_, sig, _)) => Some(format!("was killed by {sig}")),
            Ok(_) => None,
            Err(Errno::EINTR) => continue,
            // Not our child any more: gone.
            Err(e) => Some(format!("is gone ({e})")),
        };
    }
}

/// Forks one worker; in the child, runs the event loop and exits.
fn spawn(server: &mut Server, supervisor: Pid) -> io::Result<Pid> {
    // SAFETY: the supervisor is single-threaded.
    match unsafe { fork() }.map_err(io::Error::from)? {
        ForkResult::Parent { child } => Ok(child),
        ForkResult::Child => {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            {
                let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM);
            }
            if getppid() != supervisor {
                // The supervisor died before the line above.
                std::process::exit(1);
            }
            let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
            let code = match server.prepare_worker().and_then(|()| server.run()) {
                Ok(()) => 0,
                Err(e) => {
                    log::error!("worker {}: {e}", getpid());
                    1
                }
            };
            std::process::exit(code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_limit() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(4));
        assert_eq!(backoff(7), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
