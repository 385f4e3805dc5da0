//! Process signals. The handlers only set flags; the event loop reads them
//! after `epoll_wait` returns (a signal interrupts it, so no delay).
//!
//! As lighttpd: SIGTERM stops now; SIGINT stops gracefully (a second SIGINT
//! stops now); SIGHUP reopens the log files; SIGUSR1 asks for a graceful
//! restart.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static GRACEFUL: AtomicBool = AtomicBool::new(false);
static NOW: AtomicBool = AtomicBool::new(false);
static REOPEN: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);

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
        _ => {}
    }
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
        ] {
            sigaction(sig, &act)?;
        }
        sigaction(Signal::SIGPIPE, &ignore)?;
    }
    Ok(())
}

/// What the signals asked for since the last look.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Requests {
    pub graceful: bool,
    pub now: bool,
    pub reopen: bool,
    pub reload: bool,
}

/// Reads the flags; `reopen` and `reload` are cleared, the stop flags stay set.
pub fn take() -> Requests {
    Requests {
        graceful: GRACEFUL.load(Ordering::SeqCst),
        now: NOW.load(Ordering::SeqCst),
        reopen: REOPEN.swap(false, Ordering::SeqCst),
        reload: RELOAD.swap(false, Ordering::SeqCst),
    }
}
