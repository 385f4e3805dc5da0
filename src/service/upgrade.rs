//! A binary upgrade without a dropped connection (SIGUSR2, nginx's
//! convention): the running glint starts the binary now at its own path,
//! with the same command line and its listening sockets, and hands over
//! once the new one says it is ready.
//!
//! The sockets go down the way systemd's socket activation passes them
//! (descriptors 3, 4, ... and `LISTEN_FDS`), so the new glint adopts them
//! with the code that already matches inherited sockets to its listeners;
//! `GLINT_UPGRADE_FROM` (the old pid, the new one's parent) stands in for
//! `LISTEN_PID`, which no one knows before the fork. One more descriptor,
//! named by `GLINT_UPGRADE_READY_FD`, is a pipe: the new glint writes `ok`
//! to it once it serves (after its configuration loaded, its listeners were
//! taken, privileges dropped, its pid file written). Until then the old
//! one serves as before; if the pipe closes without `ok` (the new binary
//! failed its configuration check, or died) or nothing comes within
//! [`READY_LIMIT`], the old one logs it and keeps serving.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::unistd::pipe2;

/// The old pid, in the new glint's environment.
pub const FROM_VAR: &str = "GLINT_UPGRADE_FROM";
/// The readiness pipe's descriptor, in the new glint's environment.
pub const READY_VAR: &str = "GLINT_UPGRADE_READY_FD";
/// How long the new glint may take to be ready: start-up reads
/// certificates and may start `bin-path` backends (PHP takes about a
/// second); a minute leaves room on a loaded machine.
pub const READY_LIMIT: Duration = Duration::from_secs(60);
const READY: &[u8] = b"ok";

/// Where the new glint is.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The path glint was started from (a package upgrade puts the new
    /// binary there).
    pub exe: PathBuf,
    pub args: Vec<OsString>,
}

impl Plan {
    /// This process's own binary path and arguments, read at start (before
    /// the file can be replaced; `/proc/self/exe` would name the old one).
    pub fn of_this_process() -> Option<Plan> {
        let exe = std::env::current_exe().ok()?;
        Some(Plan {
            exe,
            args: std::env::args_os().skip(1).collect(),
        })
    }
}

/// What came of a handover so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Waiting,
    /// The new glint serves: stop accepting and finish (as on SIGINT).
    Ready,
    /// It did not come up: keep serving.
    Failed(String),
}

/// A new glint starting.
pub struct Handover {
    child: Option<Child>,
    pipe: File,
    got: Vec<u8>,
    deadline: Instant,
}

/// Starts `plan.exe` with the listening sockets `fds` as descriptors 3...
pub fn start(plan: &Plan, fds: &[RawFd]) -> io::Result<Handover> {
    let (rd, wr): (OwnedFd, OwnedFd) = pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
    // The write end blocks: the new glint writes two bytes once.
    fcntl(&wr, FcntlArg::F_SETFL(OFlag::empty()))?;
    let n = fds.len() as RawFd;
    let mut sources: Vec<RawFd> = fds.to_vec();
    sources.push(wr.as_raw_fd());
    let mut cmd = Command::new(&plan.exe);
    cmd.args(&plan.args)
        .env("LISTEN_FDS", n.to_string())
        .env(FROM_VAR, std::process::id().to_string())
        .env(READY_VAR, (3 + n).to_string())
        .env_remove("LISTEN_PID")
        .env_remove("LISTEN_FDNAMES")
        .stdin(Stdio::null());
    // SAFETY: only async-signal-safe calls (fcntl, dup2, close) on
    // descriptors, over a Vec made before the fork; no allocation.
    unsafe {
        cmd.pre_exec(move || place_fds(&sources));
    }
    let child = cmd.spawn()?;
    drop(wr);
    Ok(Handover {
        child: Some(child),
        pipe: File::from(rd),
        got: Vec::new(),
        deadline: Instant::now() + READY_LIMIT,
    })
}

/// In the child: `sources[i]` becomes descriptor `3 + i`, inheritable.
/// First every source is copied above the targets, so that moving one
/// never overwrites another.
fn place_fds(sources: &[RawFd]) -> io::Result<()> {
    let above = 3 + sources.len() as RawFd;
    let mut high = [0 as RawFd; 1024];
    let count = sources.len().min(high.len());
    for (i, &fd) in sources.iter().take(count).enumerate() {
        // SAFETY: fcntl(F_DUPFD) on a descriptor of ours.
        let r = unsafe { nix::libc::fcntl(fd, nix::libc::F_DUPFD, above) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        high[i] = r;
    }
    for (i, &fd) in high.iter().take(count).enumerate() {
        let target = 3 + i as RawFd;
        // SAFETY: dup2 onto a fixed number; dup2 clears FD_CLOEXEC.
        if unsafe { nix::libc::dup2(fd, target) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the copy above the targets is ours to close.
        unsafe { nix::libc::close(fd) };
    }
    Ok(())
}

impl Handover {
    /// Looks at the pipe (non-blocking) and the child.
    pub fn poll(&mut self) -> State {
        let mut buf = [0u8; 16];
        loop {
            match self.pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    self.got.extend_from_slice(&buf[..k]);
                    if self.got.starts_with(READY) {
                        self.reap();
                        return State::Ready;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reap();
                    if Instant::now() >= self.deadline {
                        return self.give_up(format!("not ready within {READY_LIMIT:?}"));
                    }
                    return State::Waiting;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.give_up(format!("readiness pipe: {e}")),
            }
        }
        // End of file without "ok": every copy of the write end is closed.
        let how = self.wait_exit();
        State::Failed(format!("the new glint {how} before it was ready"))
    }

    /// Collects the child if it exited (a daemonizing glint's first process
    /// leaves once its daemon is ready).
    fn reap(&mut self) {
        if let Some(c) = self.child.as_mut() {
            if matches!(c.try_wait(), Ok(Some(_))) {
                self.child = None;
            }
        }
    }

    fn wait_exit(&mut self) -> String {
        match self.child.take().map(|mut c| c.wait()) {
            Some(Ok(st)) => format!("exited ({st})"),
            Some(Err(e)) => format!("is gone ({e})"),
            None => "exited".into(),
        }
    }

    fn give_up(&mut self, why: String) -> State {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        State::Failed(why)
    }
}

/// In a glint started by an upgrade: takes the readiness descriptor out
/// of the environment (so that no child of ours inherits it).
pub fn take_ready_fd() -> Option<File> {
    let fd = std::env::var(READY_VAR)
        .ok()?
        .trim()
        .parse::<RawFd>()
        .ok()?;
    std::env::remove_var(READY_VAR);
    if fd < 3 {
        return None;
    }
    // SAFETY: the descriptor was placed for us by the old glint.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let _ = fcntl(&owned, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
    Some(File::from(owned))
}

/// The old glint's pid, when this one was started by an upgrade.
pub fn upgraded_from() -> Option<i32> {
    std::env::var(FROM_VAR).ok()?.trim().parse().ok()
}

/// Tells the old glint this one serves.
pub fn report_ready(pipe: Option<File>) {
    if let Some(mut p) = pipe {
        let _ = p.write_all(READY);
    }
}

/// Whether `path` is an executable file (checked before a handover is
/// tried, for a clearer log line than the spawn error).
pub fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl crate::server::Handover for Handover {
    fn poll(&mut self) -> crate::server::HandoverState {
        match Handover::poll(self) {
            State::Waiting => crate::server::HandoverState::Waiting,
            State::Ready => crate::server::HandoverState::Ready,
            State::Failed(why) => crate::server::HandoverState::Failed(why),
        }
    }
}

/// The [`crate::server::Upgrader`] of a single-process glint.
pub fn upgrader(plan: Plan) -> crate::server::Upgrader {
    Box::new(move |fds| {
        if !executable(&plan.exe) {
            return Err(format!("{} is not an executable file", plan.exe.display()));
        }
        start(&plan, fds)
            .map(|h| Box::new(h) as Box<dyn crate::server::Handover>)
            .map_err(|e| format!("{}: {e}", plan.exe.display()))
    })
}
