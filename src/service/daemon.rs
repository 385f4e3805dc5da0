//! Detaching from the terminal: fork, `setsid`, fork again (so the daemon
//! can never acquire a controlling terminal), `chdir("/")`.
//!
//! The process that was started waits on a pipe until the daemon says it is
//! ready (then exits 0) or reports an error (printed, exit 1); if the daemon
//! dies without a word, that is an error too. Standard input, output and
//! error are pointed at /dev/null only when the daemon is ready, so start-up
//! messages still reach the terminal.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;

use nix::fcntl::OFlag;
use nix::sys::wait::waitpid;
use nix::unistd::{chdir, dup2_stderr, dup2_stdin, dup2_stdout, fork, pipe2, setsid, ForkResult};

const READY: &[u8] = b"ok";

/// The daemon's end of the start-up pipe.
pub struct Ready {
    pipe: Option<File>,
}

impl Ready {
    /// For a process that stays in the foreground: nothing to report to.
    pub fn foreground() -> Ready {
        Ready { pipe: None }
    }

    /// Start-up is done: detach the standard streams and let the starting
    /// process exit 0.
    pub fn ok(mut self) -> Result<(), String> {
        if let Some(mut p) = self.pipe.take() {
            let null = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
                .map_err(|e| format!("/dev/null: {e}"))?;
            dup2_stdin(&null).map_err(|e| format!("redirecting stdin: {e}"))?;
            dup2_stdout(&null).map_err(|e| format!("redirecting stdout: {e}"))?;
            dup2_stderr(&null).map_err(|e| format!("redirecting stderr: {e}"))?;
            let _ = p.write_all(READY);
        }
        Ok(())
    }

    /// Start-up failed: the starting process prints `msg` and exits 1.
    pub fn fail(mut self, msg: &str) {
        if let Some(mut p) = self.pipe.take() {
            let _ = p.write_all(msg.as_bytes());
        }
    }
}

/// Forks into the background. Returns in the daemon; the starting process
/// exits with the daemon's verdict and never returns.
pub fn daemonize() -> Result<Ready, String> {
    let (rd, wr): (OwnedFd, OwnedFd) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: glint is single-threaded at this point.
    match unsafe { fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Parent { child } => {
            drop(wr);
            let mut msg = Vec::new();
            let _ = File::from(rd).read_to_end(&mut msg);
            let _ = waitpid(child, None);
            if msg == READY {
                std::process::exit(0);
            }
            if msg.is_empty() {
                eprintln!("glint: the daemon exited during start-up");
            } else {
                eprintln!("glint: {}", String::from_utf8_lossy(&msg));
            }
            std::process::exit(1);
        }
        ForkResult::Child => {}
    }
    drop(rd);
    setsid().map_err(|e| format!("setsid: {e}"))?;
    // SAFETY: still single-threaded.
    match unsafe { fork() }.map_err(|e| format!("fork: {e}"))? {
        // The middle process leaves at once, skipping every destructor.
        // SAFETY: _exit is always safe to call.
        ForkResult::Parent { .. } => unsafe { nix::libc::_exit(0) },
        ForkResult::Child => {}
    }
    chdir("/").map_err(|e| format!("chdir /: {e}"))?;
    Ok(Ready {
        pipe: Some(File::from(wr)),
    })
}
