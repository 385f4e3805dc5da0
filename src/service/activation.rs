//! systemd socket activation (`server.systemd-socket-activation = "enable"`):
//! the listening sockets systemd opened, passed as descriptors 3, 4, ...
//! with `LISTEN_FDS` = their count and `LISTEN_PID` = this process's pid.
//!
//! The variables are removed from the environment once read, as
//! `sd_listen_fds(1)` does, so that children do not take them for theirs.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::sys::socket::{getsockopt, sockopt};
use nix::unistd::getpid;

/// The first passed descriptor.
const FIRST_FD: RawFd = 3;

/// Takes the descriptors systemd passed to this process; empty when there
/// are none or they are meant for another process.
pub fn take_listen_fds() -> Vec<OwnedFd> {
    // A binary upgrade (SIGUSR2) names the old glint, our parent, instead
    // of our own pid, which it could not know before the fork.
    let from_parent =
        super::upgrade::upgraded_from().is_some_and(|p| p == nix::unistd::getppid().as_raw());
    let pid = std::env::var("LISTEN_PID").ok();
    let count = std::env::var("LISTEN_FDS").ok();
    for v in [
        "LISTEN_PID",
        "LISTEN_FDS",
        "LISTEN_FDNAMES",
        super::upgrade::FROM_VAR,
    ] {
        std::env::remove_var(v);
    }
    let Some(count) = count else {
        log::warn!("server.systemd-socket-activation is enabled, but LISTEN_FDS is not set");
        return Vec::new();
    };
    let for_us = from_parent
        || pid
            .and_then(|p| p.trim().parse::<i32>().ok())
            .is_some_and(|p| p == getpid().as_raw());
    if !for_us {
        log::warn!("LISTEN_PID is not this process's pid; ignoring LISTEN_FDS");
        return Vec::new();
    }
    let Ok(n) = count.trim().parse::<i32>() else {
        log::warn!("LISTEN_FDS={count} is not a number; ignored");
        return Vec::new();
    };
    let mut fds = Vec::new();
    for fd in FIRST_FD..FIRST_FD.saturating_add(n.clamp(0, 1024)) {
        // An fd that is not open is skipped rather than adopted.
        let Ok(flags) = fcntl(
            // SAFETY: borrowed only for this call; validity is what fcntl checks.
            unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
            FcntlArg::F_GETFD,
        ) else {
            log::warn!("LISTEN_FDS: descriptor {fd} is not open; skipped");
            continue;
        };
        // SAFETY: the descriptor is open and, by the protocol, ours alone.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut flags = FdFlag::from_bits_truncate(flags);
        flags.insert(FdFlag::FD_CLOEXEC);
        let _ = fcntl(&owned, FcntlArg::F_SETFD(flags));
        match getsockopt(&owned, sockopt::AcceptConn) {
            Ok(true) => fds.push(owned),
            _ => log::warn!("LISTEN_FDS: descriptor {fd} is not a listening socket; skipped"),
        }
    }
    fds
}
