//! The `bin-path` backends glint runs itself: starting them (with their
//! listening socket on fd 0), restarting those that died, stopping them at
//! shutdown, and stopping those a graceful restart retired.

use std::io;
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};

use super::{BackendAddr, Gateways, Host, HostSpec, Spawner};

impl Gateways {
    /// In a worker process forked by the supervisor: the `bin-path` backends
    /// are the supervisor's (it started them before forking, restarts them
    /// and stops them). This process only connects to them: it forgets the
    /// processes its copy of the supervisor's state names.
    pub fn leave_backends_to_supervisor(&mut self) {
        self.spawner = Spawner::Supervisor;
        for h in &mut self.hosts {
            // Dropping a `Child` neither waits for nor signals the process.
            h.child = None;
            h.respawn_at = None;
            h.stopping = false;
        }
    }

    /// Whether backends retired by a graceful restart wait to be stopped
    /// (the supervisor holds them while the workers of the older
    /// configuration, which may still send them requests, are running).
    pub fn hold_retired(&mut self, hold: bool) {
        self.retire_held = hold;
    }

    /// Starts every `bin-path` backend; a failure is an error at start.
    /// Nothing in a worker process, whose supervisor starts them.
    pub fn spawn_all(&mut self) -> Result<(), String> {
        if self.spawner == Spawner::Supervisor {
            return Ok(());
        }
        for i in 0..self.hosts.len() {
            let (before, rest) = self.hosts.split_at_mut(i);
            let Some(h) = rest.first_mut() else { break };
            if h.spec.spawn.is_some() {
                // Two backend entries on one address (two scopes naming the
                // same `bin-path` backend): the first one's process serves
                // both, as lighttpd does when it finds the socket in use.
                if let Some(o) = before
                    .iter()
                    .find(|o| o.child.is_some() && o.spec.addr == h.spec.addr)
                {
                    log::info!(
                        "backend {} ({}): started already for {}; not started again",
                        h.spec.label,
                        h.spec.addr,
                        o.spec.label
                    );
                    continue;
                }
                h.child = Some(spawn(&h.spec).map_err(|e| {
                    format!(
                        "{}: cannot start backend on {}: {e}",
                        h.spec.label, h.spec.addr
                    )
                })?);
            }
        }
        Ok(())
    }

    /// Stops spawned backends: their kill signal, then SIGKILL for those still there after 2 s.
    pub fn shutdown(&mut self) {
        use nix::sys::signal::{killpg, Signal};
        self.kill_all_cgi();
        use nix::unistd::Pid;
        let mut children: Vec<(Child, Option<std::path::PathBuf>)> = Vec::new();
        for h in &mut self.hosts {
            if let Some(c) = h.child.take() {
                let sig = h
                    .spec
                    .spawn
                    .as_ref()
                    .and_then(|s| Signal::try_from(s.kill_signal).ok())
                    .unwrap_or(Signal::SIGTERM);
                // The whole group: the backend and the workers it forked.
                let _ = killpg(Pid::from_raw(c.id() as i32), sig);
                let path = match &h.spec.addr {
                    BackendAddr::Unix(p) => Some(p.clone()),
                    BackendAddr::Tcp(_) => None,
                };
                children.push((c, path));
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        for (mut c, path) in children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if std::time::Instant::now() >= deadline => {
                        let _ = killpg(Pid::from_raw(c.id() as i32), Signal::SIGKILL);
                        let _ = c.wait();
                        break;
                    }
                    // Children exit within milliseconds of the signal; there is no fd to wait on.
                    Ok(None) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
            if let Some(p) = path {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// Once a second: reaps spawned backends that died and starts them again
    /// (after a second, so a backend that cannot start does not spin), and
    /// stops retired ones once they are done. Nothing in a worker process,
    /// whose supervisor does it. Each backend is waited for by its own pid,
    /// so that this never takes the exit status of another child (the
    /// supervisor's workers).
    pub fn reap(&mut self, now: u64) {
        if self.spawner == Spawner::Supervisor {
            return;
        }
        let stop_retired = !self.retire_held;
        let mut exited = Vec::new();
        for (i, h) in self.hosts.iter_mut().enumerate() {
            if h.retired {
                retire_step(h, stop_retired);
                continue;
            }
            if let Some(c) = &mut h.child {
                if let Ok(Some(status)) = c.try_wait() {
                    log::error!(
                        "backend {} ({}) exited: {status}; restarting it",
                        h.spec.label,
                        h.spec.addr
                    );
                    // Workers it forked may live on, still holding the old
                    // socket: end its whole process group first.
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(c.id() as i32),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                    h.child = None;
                    h.respawn_at = Some(now + 1);
                    exited.push(i);
                }
            }
            if h.respawn_at.is_some_and(|t| now >= t) {
                h.respawn_at = None;
                match spawn(&h.spec) {
                    Ok(c) => {
                        h.child = Some(c);
                        h.disabled_until = 0;
                    }
                    Err(e) => {
                        log::error!("backend {}: cannot restart: {e}", h.spec.label);
                        h.respawn_at = Some(now + 5);
                    }
                }
            }
        }
        if !exited.is_empty() {
            for i in exited {
                self.forget_keep(i);
            }
            self.settle_keep();
        }
    }
}

/// A retired backend: once its last request is done (and `stop`: no
/// process of the older configuration may still use it), its process group
/// gets the kill signal; once the process has exited, it is reaped and
/// forgotten.
pub(super) fn retire_step(h: &mut Host, stop: bool) {
    h.respawn_at = None;
    let Some(c) = &mut h.child else { return };
    if !matches!(c.try_wait(), Ok(None)) {
        h.child = None;
        return;
    }
    if stop && h.active == 0 && !h.stopping {
        let sig = h
            .spec
            .spawn
            .as_ref()
            .and_then(|s| nix::sys::signal::Signal::try_from(s.kill_signal).ok())
            .unwrap_or(nix::sys::signal::Signal::SIGTERM);
        log::info!(
            "graceful restart: stopping backend {} ({})",
            h.spec.label,
            h.spec.addr
        );
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(c.id() as i32), sig);
        h.stopping = true;
    }
}

/// Starts one `bin-path` backend with its listening socket on fd 0, as FastCGI
/// and lighttpd's spawner do. Every other descriptor glint has is close-on-exec.
pub(super) fn spawn(h: &HostSpec) -> io::Result<Child> {
    let Some(sp) = &h.spawn else {
        return Err(io::Error::other("no bin-path"));
    };
    // A unix socket is bound beside its path and renamed over it once the
    // backend runs: a backend that cannot start leaves the path as it was.
    let mut staged = None;
    let listener: OwnedFd = match &h.addr {
        BackendAddr::Unix(p) => {
            let mut tmp = p.clone().into_os_string();
            tmp.push(".glint-new");
            let tmp = std::path::PathBuf::from(tmp);
            if std::fs::symlink_metadata(&tmp).is_ok() {
                std::fs::remove_file(&tmp)?;
            }
            let l = std::os::unix::net::UnixListener::bind(&tmp)?;
            staged = Some((tmp, p));
            l.into()
        }
        BackendAddr::Tcp(a) => std::net::TcpListener::bind(a)?.into(),
    };
    // `listen-backlog`: listening again on a bound socket sets its queue
    // length (the kernel caps it at net.core.somaxconn).
    let backlog = nix::sys::socket::Backlog::new(h.listen_backlog.clamp(1, 4096))
        .unwrap_or(nix::sys::socket::Backlog::MAXCONN);
    nix::sys::socket::listen(&listener, backlog).map_err(io::Error::from)?;
    let Some((prog, args)) = sp.argv.split_first() else {
        return Err(io::Error::other("empty bin-path"));
    };
    let mut cmd = Command::new(prog);
    cmd.args(args).env_clear();
    for name in &sp.copy_env {
        if let Some(v) = std::env::var_os(name) {
            cmd.env(name, v);
        }
    }
    cmd.envs(sp.env.iter().map(|(k, v)| (k, v)));
    cmd.stdin(Stdio::from(listener))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // Its own process group: php-cgi and flup fork workers, and stopping
    // the backend must stop them too, even after the parent died.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // And if glint itself is killed (SIGKILL leaves no time to stop them),
    // the kernel tells the backend with SIGTERM.
    // SAFETY: runs in the child between fork and exec; prctl(PR_SET_PDEATHSIG)
    // is async-signal-safe and touches no memory of the parent.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                .map_err(io::Error::from)
        });
    }
    let child = cmd.spawn();
    if let Some((tmp, path)) = staged {
        let placed = match &child {
            Ok(_) => std::fs::rename(&tmp, path),
            Err(_) => std::fs::remove_file(&tmp),
        };
        if let Err(e) = placed {
            if let Ok(mut c) = child {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(c.id() as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let _ = c.wait();
                return Err(e);
            }
        }
    }
    child
}
