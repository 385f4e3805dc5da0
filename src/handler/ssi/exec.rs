//! `<!--#exec cmd="..." -->`: the command runs under `/bin/sh -c` and
//! its standard output goes into the page, as lighttpd runs it: while the
//! page is built (lighttpd, too, waits for the command). glint bounds the
//! wait and the output, which lighttpd does not: a command still running
//! after [`EXEC_TIMEOUT`] is killed and what it wrote so far is kept.

use std::io::Read;
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// The longest a command may run.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(10);

/// The output of `cmd`, at most `limit` bytes; `None` if it could not start.
pub fn run(cmd: &[u8], limit: usize) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(cmd))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            log::error!(
                "ssi: spawning exec failed: {}: {e}",
                String::from_utf8_lossy(cmd)
            )
        })
        .ok()?;
    let mut out = Vec::new();
    let deadline = Instant::now() + EXEC_TIMEOUT;
    if let Some(mut stdout) = child.stdout.take() {
        let mut buf = [0u8; 8192];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
            let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => break,
            }
            match stdout.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(out.len());
                    out.extend_from_slice(&buf[..n.min(room)]);
                    if n > room {
                        log::error!(
                            "ssi: exec output over {limit} bytes, cut: {}",
                            String::from_utf8_lossy(cmd)
                        );
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
    }
    let status = loop {
        match child.try_wait() {
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                log::error!(
                    "ssi: exec ran over {EXEC_TIMEOUT:?}, killed: {}",
                    String::from_utf8_lossy(cmd)
                );
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(Some(st)) => break Some(st),
            Err(_) => break None,
        }
    };
    if status.is_some_and(|st| st.code().is_none()) {
        log::error!(
            "ssi: process exited abnormally: {}",
            String::from_utf8_lossy(cmd)
        );
    }
    Some(out)
}
