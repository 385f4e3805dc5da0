//! Process signals. The handlers only set flags; the event loop reads them
//! after `epoll_wait` returns (a signal interrupts it, so no delay).
//!
//! As lighttpd: SIGTERM stops now; SIGINT stops gracefully (a second SIGINT
//! stops now); SIGHUP reopens the log files; SIGUSR1 asks for a graceful
//! restart.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static GRACEFUL: AtomicBool = AtomicBool::new(false);
static NOW: AtomicBool = AtomicBool::new(false);
static REOPEN: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);
static UPGRADE: AtomicBool = AtomicBool::new(false);
/// A non-blocking socket the handler writes a byte to, so that a signal
/// that arrives just before `epoll_wait` still wakes the loop at once.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: nix::libc::c_int) {
    match Signal::try_from(sig) {
        // A second SIGINT stops at once.
        Ok(Signal::SIGINT) if GRACEFUL.swap(true, Ordering::SeqCst) => {
            NOW.store(true, Ordering::SeqCst)
        }
        Ok(Signal::SIGINT) => {}
        Ok(Signal::SIGTERM) => NOW.store(true, Ordering::SeqCst),
        Ok(Signal::SIGHUP) => REOPEN.store(true, Ordering::SeqCst),
        Ok(Signal::SIGUSR1) => RELOAD.store(true, Ordering::SeqCst),
        Ok(Signal::SIGUSR2) => UPGRADE.store(true, Ordering::SeqCst),
        _ => {}
    }
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let saved = nix::errno::Errno::last_raw();
        // SAFETY: write(2) is async-signal-safe; a full buffer (EAGAIN) is fine,
        // the loop is awake already.
        unsafe {
            nix::libc::write(fd, b"s".as_ptr().cast(), 1);
        }
        nix::errno::Errno::set_raw(saved);
    }
}

/// Makes the handlers also write a byte to `fd` (non-blocking), or stop
/// doing so with -1.
pub fn set_wake_fd(fd: RawFd) {
    WAKE_FD.store(fd, Ordering::SeqCst);
}

/// Installs the handlers (without SA_RESTART, so `epoll_wait` returns at once)
/// and ignores SIGPIPE: a client that went away is an EPIPE, not a death.
pub fn install() -> nix::Result<()> {
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: the handler only stores to atomics, which is async-signal-safe.
    unsafe {
        for sig in [
            Signal::SIGINT,
            Signal::SIGTERM,
            Signal::SIGHUP,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
        ] {
            sigaction(sig, &act)?;
        }
        sigaction(Signal::SIGPIPE, &ignore)?;
    }
    Ok(())
}

/// True when a signal is waiting to be acted on (cheap: five atomic loads),
/// so that long loops can yield to the event loop.
pub fn pending() -> bool {
    GRACEFUL.load(Ordering::Relaxed)
        || NOW.load(Ordering::Relaxed)
        || REOPEN.load(Ordering::Relaxed)
        || RELOAD.load(Ordering::Relaxed)
        || UPGRADE.load(Ordering::Relaxed)
}

/// What the signals asked for since the last look.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Requests {
    pub graceful: bool,
    pub now: bool,
    pub reopen: bool,
    pub reload: bool,
    pub upgrade: bool,
}

/// Reads the flags; `reopen`, `reload` and `upgrade` are cleared, the stop
/// flags stay set.
pub fn take() -> Requests {
    Requests {
        graceful: GRACEFUL.load(Ordering::SeqCst),
        now: NOW.load(Ordering::SeqCst),
        reopen: REOPEN.swap(false, Ordering::SeqCst),
        reload: RELOAD.swap(false, Ordering::SeqCst),
        upgrade: UPGRADE.swap(false, Ordering::SeqCst),
    }
}
