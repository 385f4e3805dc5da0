//! Stops a script that runs past its time slice, without a hook on every
//! Lua instruction while scripts behave.
//!
//! A count hook makes the Lua VM leave its fast path on every instruction
//! (about a tenth of a trivial script's cost). Instead, a watchdog thread
//! looks every quarter slice at the run in progress (a sequence number and
//! its start, in atomics the loop writes at each run's start and end); when
//! one has lasted longer than the slice, it sends the loop's thread
//! `SIGURG`, whose handler installs a hook on the running state with
//! `lua_sethook`, the one Lua function made to be called from a signal
//! handler (Lua's own interpreter stops a script on SIGINT the same way).
//! The hook fires at the next instruction and raises the error that ends
//! the run; the loop removes it after the run.
//!
//! Coroutines are Lua states of their own, which a hook on the script's
//! state does not reach: those a script makes get the count hook
//! ([`super::guard_thread`]), as all of a state's did before.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::Duration;

use mlua::ffi;
use nix::sys::pthread::{pthread_kill, pthread_self, Pthread};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::time::{clock_gettime, ClockId};

use super::TIME_SLICE;

/// The Lua state whose script runs now (null between runs).
static RUNNING: AtomicPtr<ffi::lua_State> = AtomicPtr::new(std::ptr::null_mut());
/// The number of the run in progress (or of the last one).
static SEQ: AtomicU64 = AtomicU64::new(0);
/// When the run in progress started (monotonic ns), 0 between runs.
static STARTED: AtomicU64 = AtomicU64::new(0);
/// The run the watchdog found too long: the handler stops it only if it
/// is still the one running.
static TRIP: AtomicU64 = AtomicU64::new(u64::MAX);
/// The handler installed the stop hook during the current run.
static TRIPPED: AtomicBool = AtomicBool::new(false);
/// The watchdog sleeps until the next run (no run for a while).
static PARKED: AtomicBool = AtomicBool::new(false);

/// How long the watchdog keeps looking after the last run before it parks.
const IDLE: Duration = Duration::from_secs(5);

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(t) => (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64),
        Err(_) => 0,
    }
}

/// The watchdog of this process (a worker made by fork has none of its
/// parent's threads, and makes its own: see [`Watchdog::forget`]).
#[derive(Default)]
pub struct Watchdog {
    thread: Option<std::thread::Thread>,
}

impl Watchdog {
    /// The watchdog thread, started on first use (None when it cannot be:
    /// logged).
    pub fn thread(&mut self) -> Option<std::thread::Thread> {
        if self.thread.is_none() {
            self.thread = start();
        }
        self.thread.clone()
    }

    /// After fork: the watchdog thread stayed in the parent.
    pub fn forget(&mut self) {
        self.thread = None;
    }
}

/// A run of the script of `state` begins (`watchdog`: the thread to wake
/// when it sleeps).
/// Returns when it began (monotonic ns).
pub fn begin(state: *mut ffi::lua_State, watchdog: Option<&std::thread::Thread>) -> u64 {
    let seq = SEQ.load(Ordering::Relaxed).wrapping_add(1);
    SEQ.store(seq, Ordering::SeqCst);
    let now = now_ns().max(1);
    STARTED.store(now, Ordering::SeqCst);
    RUNNING.store(state, Ordering::SeqCst);
    if PARKED.load(Ordering::Relaxed) {
        PARKED.store(false, Ordering::SeqCst);
        if let Some(t) = watchdog {
            t.unpark();
        }
    }
    now
}

/// The run ended: when the watchdog stopped it, its hook is removed (the
/// state runs the next request at full speed again).
pub fn end(state: *mut ffi::lua_State) {
    RUNNING.store(std::ptr::null_mut(), Ordering::SeqCst);
    STARTED.store(0, Ordering::SeqCst);
    if TRIPPED.swap(false, Ordering::SeqCst) {
        // SAFETY: `state` is the live state that just ran, on this
        // thread; no signal sets a hook on it any more (RUNNING is null).
        unsafe { ffi::lua_sethook(state, None, 0, 0) };
    }
}

/// Starts the watchdog thread for this thread (the loop's): None when
/// the signal handler or the thread cannot be had (runs are then bounded
/// only by coroutine hooks and the memory limit; logged).
fn start() -> Option<std::thread::Thread> {
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only reads atomics and calls lua_sethook, which
    // Lua documents as safe to call from a signal handler.
    if let Err(e) = unsafe { sigaction(Signal::SIGURG, &act) } {
        log::error!("mod_magnet: no watchdog for runaway scripts (sigaction: {e})");
        return None;
    }
    let target = pthread_self();
    match std::thread::Builder::new()
        .name("glint-magnet-watchdog".into())
        .spawn(move || watch(target))
    {
        Ok(h) => Some(h.thread().clone()),
        Err(e) => {
            log::error!("mod_magnet: no watchdog for runaway scripts ({e})");
            None
        }
    }
}

/// The watchdog's loop: every quarter slice, is a run older than a slice?
fn watch(target: Pthread) {
    let period = TIME_SLICE / 4;
    let slice = TIME_SLICE.as_nanos() as u64;
    let mut last_seq = SEQ.load(Ordering::SeqCst);
    let mut quiet = Duration::ZERO;
    loop {
        std::thread::sleep(period);
        let seq = SEQ.load(Ordering::SeqCst);
        let started = STARTED.load(Ordering::SeqCst);
        let overdue = started != 0 && now_ns().saturating_sub(started) > slice;
        // Once per run: the signal is sent for a run only the first time.
        if overdue && TRIP.swap(seq, Ordering::SeqCst) != seq {
            if let Err(e) = pthread_kill(target, Signal::SIGURG) {
                log::error!("mod_magnet: cannot stop a runaway script: {e}");
            }
        }
        if seq == last_seq && started == 0 {
            quiet += period;
            if quiet >= IDLE {
                PARKED.store(true, Ordering::SeqCst);
                // A run that began before PARKED was seen unparks nobody:
                // look once more before sleeping.
                if SEQ.load(Ordering::SeqCst) == seq {
                    std::thread::park();
                }
                PARKED.store(false, Ordering::SeqCst);
                quiet = Duration::ZERO;
            }
        } else {
            quiet = Duration::ZERO;
        }
        last_seq = seq;
    }
}

extern "C" fn on_signal(_sig: nix::libc::c_int) {
    let state = RUNNING.load(Ordering::SeqCst);
    // Only the run the watchdog judged: a run that began since is not
    // stopped for its predecessor's time.
    if state.is_null() || TRIP.load(Ordering::SeqCst) != SEQ.load(Ordering::SeqCst) {
        return;
    }
    TRIPPED.store(true, Ordering::SeqCst);
    // SAFETY: `state` is running on this very thread (the signal was sent
    // to it and RUNNING is set only around runs); lua_sethook is
    // async-signal-safe by Lua's design.
    unsafe { ffi::lua_sethook(state, Some(stop), ffi::LUA_MASKCOUNT, 1) };
}

/// The hook the signal installs: ends the run with an error naming the
/// script's file and line.
unsafe extern "C-unwind" fn stop(state: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: called by Lua with its running state, inside the protected
    // call that runs the script; lua_error unwinds to that call (this
    // frame holds nothing to drop).
    unsafe {
        ffi::luaL_where(state, 0);
        ffi::lua_pushstring(state, STOP_MSG.as_ptr());
        ffi::lua_concat(state, 2);
        ffi::lua_error(state);
    }
}

/// The error of a script stopped by the watchdog.
const STOP_MSG: &std::ffi::CStr = c"script stopped: ran longer than 200 ms";

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_says_the_slice() {
        let ms = super::TIME_SLICE.as_millis().to_string();
        assert!(super::STOP_MSG
            .to_string_lossy()
            .contains(&format!("than {ms} ms")));
    }
}
