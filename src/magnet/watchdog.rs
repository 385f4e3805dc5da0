//! Suspends a script run at the end of its quantum and stops it at the
//! end of its budget, without a hook on every Lua instruction while
//! scripts behave.
//!
//! A count hook makes the Lua VM leave its fast path on every instruction
//! (about a tenth of a trivial script's cost). Instead, while scripts run,
//! a POSIX timer sends the loop's thread `SIGURG` every [`QUANTUM`]; the
//! handler looks at the run in progress (a sequence number and the start
//! of its quantum, in atomics the loop writes as each quantum begins and
//! ends) and, when it has lasted longer than the quantum, installs a hook
//! on the run's coroutine with `lua_sethook`, the one Lua function made to
//! be called from a signal handler (Lua's own interpreter stops a script
//! on SIGINT the same way). The hook fires at the next instruction and
//! yields the coroutine (Lua 5.4 lets a count hook yield): the run is
//! suspended, and goes on later from where it was. A resumed run is a
//! long one: it gets a count hook at once, which looks at the clock every
//! [`HOOK_EVERY`] instructions. Once the run's budget is used up, the hook
//! raises the error that ends it. The loop removes the hook after each
//! quantum. No thread is started, and the timer stops itself after a few
//! seconds without a run.
//!
//! Coroutines are Lua states of their own, which a hook on the run's
//! coroutine does not reach: those a script makes get a count hook (see
//! the `guard` primitive) that stops the run at the end of its budget;
//! time spent inside them is not cut into quanta.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use mlua::ffi;
use nix::libc;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::time::{clock_gettime, ClockId};

use super::{HOOK_EVERY, QUANTUM};

/// The Lua state whose script runs now (null between runs).
static RUNNING: AtomicPtr<ffi::lua_State> = AtomicPtr::new(std::ptr::null_mut());
/// The number of the run in progress (or of the last one).
static SEQ: AtomicU64 = AtomicU64::new(0);
/// When the quantum in progress started (monotonic ns), 0 between runs.
static STARTED: AtomicU64 = AtomicU64::new(0);
/// The quantum the handler set the hook in (each quantum at most once).
static TRIP: AtomicU64 = AtomicU64::new(u64::MAX);
/// The handler installed the hook during the current quantum.
static TRIPPED: AtomicBool = AtomicBool::new(false);
/// When the run in progress has used up its budget: monotonic ns, or
/// with [`BUDGET_CPU`] the thread's CPU time in ns.
static BUDGET_END: AtomicU64 = AtomicU64::new(u64::MAX);
static BUDGET_CPU: AtomicBool = AtomicBool::new(false);
/// The hook suspended the run of the current quantum.
static PREEMPTED: AtomicBool = AtomicBool::new(false);
/// The timer (a `timer_t`: the first one a process makes is 0, a null
/// pointer), meaningful while [`HAVE_TIMER`] is set.
static TIMER: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static HAVE_TIMER: AtomicBool = AtomicBool::new(false);
/// The timer is ticking.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Ticks without a run since the last one, and the run seen at the last.
static QUIET_TICKS: AtomicU32 = AtomicU32::new(0);
static LAST_SEQ: AtomicU64 = AtomicU64::new(0);

/// The timer's period while scripts run.
const TICK: std::time::Duration = QUANTUM;
/// Ticks without a run after which the timer stops (5 s).
const IDLE_TICKS: u32 = (5_000_000_000 / TICK.as_nanos()) as u32;

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(t) => (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64),
        Err(_) => 0,
    }
}

/// The CPU time this thread has used, in nanoseconds: what a resumed
/// run's budget is counted in (a system call, so only for runs past
/// their first quantum; time the thread waits for a CPU is no run time).
pub fn cpu_ns() -> u64 {
    match clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID) {
        Ok(t) => (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64),
        Err(_) => now_ns(),
    }
}

/// The watchdog's timer in this process (a worker made by fork inherits
/// no timer, and makes its own: see [`Watchdog::forget`]).
#[derive(Default)]
pub struct Watchdog {
    made: bool,
}

impl Watchdog {
    /// Makes the timer on first use, aimed at this (the loop's) thread;
    /// logged when it cannot be (runs are then bounded by the memory
    /// limit and their coroutines' hooks only).
    pub fn ready(&mut self) {
        if !self.made {
            self.made = true;
            if let Err(e) = make_timer() {
                log::error!("mod_magnet: no watchdog for runaway scripts ({e})");
            }
        }
    }

    /// After fork: the timer stayed with the parent.
    pub fn forget(&mut self) {
        self.made = false;
        HAVE_TIMER.store(false, Ordering::SeqCst);
        ARMED.store(false, Ordering::SeqCst);
    }
}

fn make_timer() -> nix::Result<()> {
    let act = SigAction::new(
        SigHandler::Handler(on_tick),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only reads and writes atomics and calls
    // clock_gettime, timer_settime and lua_sethook, all safe in a signal
    // handler (lua_sethook by Lua's design).
    unsafe { sigaction(Signal::SIGURG, &act) }?;
    // SAFETY: a zeroed sigevent is valid; the fields set are those
    // SIGEV_THREAD_ID reads (the signal goes to this thread only).
    let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
    ev.sigev_notify = libc::SIGEV_THREAD_ID;
    ev.sigev_signo = libc::SIGURG;
    ev.sigev_notify_thread_id = nix::unistd::gettid().as_raw();
    let mut id: libc::timer_t = std::ptr::null_mut();
    // SAFETY: `ev` and `id` are valid for the call.
    if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) } != 0 {
        return Err(nix::errno::Errno::last());
    }
    TIMER.store(id, Ordering::SeqCst);
    HAVE_TIMER.store(true, Ordering::SeqCst);
    Ok(())
}

/// Starts (`every` > 0) or stops the timer.
fn set_timer(every_ns: u64) {
    if !HAVE_TIMER.load(Ordering::SeqCst) {
        return;
    }
    let id = TIMER.load(Ordering::SeqCst);
    let ts = libc::timespec {
        tv_sec: (every_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (every_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: `id` is the timer made by make_timer in this process;
    // timer_settime is async-signal-safe.
    unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) };
}

/// A quantum of a run begins on the coroutine `state`, with `left` ns of
/// the run's budget left; `resumed`: the run was suspended before (it
/// gets a count hook at once: it is a long one). Returns when (monotonic
/// ns).
pub fn begin(state: *mut ffi::lua_State, left: u64, resumed: bool) -> u64 {
    let seq = SEQ.load(Ordering::Relaxed).wrapping_add(1);
    SEQ.store(seq, Ordering::SeqCst);
    let now = now_ns().max(1);
    // (A first quantum is short: its budget is counted on the wall clock,
    // with no system call.)
    let base = if resumed { cpu_ns() } else { now };
    BUDGET_CPU.store(resumed, Ordering::SeqCst);
    BUDGET_END.store(base.saturating_add(left), Ordering::SeqCst);
    PREEMPTED.store(false, Ordering::SeqCst);
    STARTED.store(now, Ordering::SeqCst);
    RUNNING.store(state, Ordering::SeqCst);
    if resumed {
        // SAFETY: `state` is the live coroutine about to be resumed on
        // this thread.
        unsafe { ffi::lua_sethook(state, Some(stop), ffi::LUA_MASKCOUNT, HOOK_EVERY) };
    }
    if !ARMED.load(Ordering::Relaxed) {
        ARMED.store(true, Ordering::SeqCst);
        QUIET_TICKS.store(0, Ordering::SeqCst);
        set_timer(TICK.as_nanos() as u64);
    }
    now
}

/// The quantum ended: any hook on the coroutine is removed (the state
/// runs the next request at full speed again). Returns whether the hook
/// suspended the run.
pub fn end(state: *mut ffi::lua_State) -> bool {
    RUNNING.store(std::ptr::null_mut(), Ordering::SeqCst);
    STARTED.store(0, Ordering::SeqCst);
    TRIPPED.store(false, Ordering::SeqCst);
    // SAFETY: `state` is the live coroutine that just ran, on this
    // thread; no signal sets a hook on it any more (RUNNING is null).
    unsafe { ffi::lua_sethook(state, None, 0, 0) };
    PREEMPTED.swap(false, Ordering::SeqCst)
}

extern "C" fn on_tick(_sig: libc::c_int) {
    let state = RUNNING.load(Ordering::SeqCst);
    let started = STARTED.load(Ordering::SeqCst);
    let seq = SEQ.load(Ordering::SeqCst);
    if state.is_null() || started == 0 {
        // Between runs: stop ticking once runs have stopped coming.
        if LAST_SEQ.swap(seq, Ordering::SeqCst) != seq {
            QUIET_TICKS.store(0, Ordering::SeqCst);
        } else if QUIET_TICKS.fetch_add(1, Ordering::SeqCst) >= IDLE_TICKS {
            ARMED.store(false, Ordering::SeqCst);
            set_timer(0);
        }
        return;
    }
    let overdue = now_ns().saturating_sub(started) > QUANTUM.as_nanos() as u64;
    if !overdue || TRIP.swap(seq, Ordering::SeqCst) == seq {
        return;
    }
    TRIPPED.store(true, Ordering::SeqCst);
    // SAFETY: `state` is running on this very thread (the timer's signal
    // goes to it, and RUNNING is set only around runs); lua_sethook is
    // async-signal-safe by Lua's design.
    unsafe { ffi::lua_sethook(state, Some(stop), ffi::LUA_MASKCOUNT, 1) };
}

/// The hook on a run's coroutine (set by the handler once the run is
/// past its quantum, or at once on a resumed run): suspends the run when
/// its quantum is over, ends it with an error naming the script's file
/// and line when its budget is.
unsafe extern "C-unwind" fn stop(state: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    let now = now_ns();
    let spent = if BUDGET_CPU.load(Ordering::SeqCst) {
        cpu_ns()
    } else {
        now
    };
    if spent > BUDGET_END.load(Ordering::SeqCst) {
        // SAFETY: called by Lua with its running state, inside the
        // protected resume of the run; lua_error unwinds to it (this
        // frame holds nothing to drop). The hook stays, on every
        // instruction: a script that catches the error meets it again.
        unsafe {
            ffi::lua_sethook(state, Some(stop), ffi::LUA_MASKCOUNT, 1);
            ffi::luaL_where(state, 0);
            ffi::lua_pushstring(state, STOP_MSG.as_ptr());
            ffi::lua_concat(state, 2);
            ffi::lua_error(state);
        }
    }
    let quantum_over =
        now.saturating_sub(STARTED.load(Ordering::SeqCst)) > QUANTUM.as_nanos() as u64;
    // (Only the run's own coroutine is suspended: one the script made
    // that inherited this hook yields to the script, never.)
    if !quantum_over || state != RUNNING.load(Ordering::SeqCst) {
        return;
    }
    // SAFETY: as above; yielding from a count hook with no results is
    // what Lua 5.4 allows (the hook returns, Lua then yields the
    // coroutine to its resume).
    unsafe {
        if ffi::lua_isyieldable(state) != 0 {
            PREEMPTED.store(true, Ordering::SeqCst);
            ffi::lua_yield(state, 0);
        } else {
            // Inside a C function's call (a sort's comparison, a gsub
            // callback): look again a little later.
            ffi::lua_sethook(state, Some(stop), ffi::LUA_MASKCOUNT, 1000);
        }
    }
}

/// The error of a script stopped by the watchdog.
const STOP_MSG: &std::ffi::CStr = c"script stopped: ran longer than 200 ms";

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_says_the_slice() {
        let ms = crate::magnet::TIME_SLICE.as_millis().to_string();
        assert!(super::STOP_MSG
            .to_string_lossy()
            .contains(&format!("than {ms} ms")));
    }
}
