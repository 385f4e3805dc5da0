//! mod_magnet: Lua 5.4 scripts (embedded with mlua, built from source) run
//! at three points of a request, with lighttpd's `lighty.*` interface.
//!
//! Each script file has a Lua state of its own, compiled once and again
//! when the file changes (its mtime or size). A run is bounded: a run
//! longer than a [`QUANTUM`] is suspended and its request parked (see
//! [`park`]), to go on after the loop served the other connections; a
//! run that has used [`TIME_SLICE`] of run time in all is stopped (see
//! [`watchdog`]), and each state may allocate at most [`MEMORY_LIMIT`];
//! either, or any error in the script, ends the run with its traceback in
//! the error log. While a run of a script is suspended, that script's
//! next requests run in a second state (up to [`MAX_STATES`]).
//! A request whose settings name no script never touches Lua.

mod clib;
pub mod ctx;
mod park;
mod prims;
mod state;
mod watchdog;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use mlua::{Lua, Table, Value};

pub use ctx::{attr, AddrText, Ctx, Part, Stage};
pub use park::{Parked, Ran};
use state::{Quantum, State};

/// Longest a script may run for one request (its quanta summed) before
/// it is stopped.
pub const TIME_SLICE: Duration = Duration::from_millis(200);
/// Longest a script runs before the loop serves others: then the run is
/// suspended and goes on later.
pub const QUANTUM: Duration = Duration::from_millis(1);
/// Most Lua states of one script (more only while runs are suspended);
/// requests for it beyond them wait their turn.
pub const MAX_STATES: usize = 4;
/// Most memory one script's Lua state may hold.
pub const MEMORY_LIMIT: usize = 64 << 20;
/// A coroutine's hook looks at the clock every this many Lua instructions.
const HOOK_EVERY: i32 = 10_000;
/// `lighty.RESTART_REQUEST`.
pub const RESTART_REQUEST: i64 = 99;
/// Most restarts of one request (lighttpd's limit): then 500.
pub const MAX_RESTARTS: u8 = 10;

/// What the scripts of one stage came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Go on with the request.
    GoOn,
    /// Answer with this status now (the body is what the script set).
    Status(u16),
    /// Run the request again from the start (`lighty.RESTART_REQUEST`).
    Restart,
    /// A script failed (it is logged): 500 before the response starts.
    Failed,
}

/// One script file: its states, loaded from the same version of it.
struct Script {
    /// The file's name as the configuration gives it.
    file: String,
    /// The inotify watch on the file while it is the one loaded: until it
    /// reports a change, the file is not looked at again.
    watch: Option<nix::sys::inotify::WatchDescriptor>,
    /// A change was reported (or there is no watch): stat the file before
    /// the next run.
    stale: bool,
    /// The states not running (the last one used on top).
    idle: Vec<State>,
    /// States out for a suspended run.
    busy: usize,
    /// The load the states are of: a state of an older one is dropped
    /// when its run ends.
    generation: u64,
    /// The file's text, for a second state.
    src: std::rc::Rc<[u8]>,
    mtime: Option<SystemTime>,
    size: u64,
}

/// The scripts loaded so far.
#[derive(Default)]
pub struct Magnet {
    /// Each file's script (one a file's new version replaces in place).
    scripts: Vec<Script>,
    /// The index in `scripts` of each file.
    by_name: crate::hash::StrMap<usize>,
    /// The script run last: a configuration with one script finds it
    /// without hashing its name.
    last: usize,
    /// Watches the loaded scripts (see [`Magnet::watcher`]); without it
    /// every run stats its file.
    inotify: Option<nix::sys::inotify::Inotify>,
    /// The context of the last run, its buffers kept for the next.
    spare: Option<Ctx>,
    watchdog: watchdog::Watchdog,
    /// The suspended runs and those waiting for a state, in turn.
    parked: VecDeque<Parked>,
    /// Loads made so far (each script's `generation`).
    loads: u64,
    /// While the loop has other work, no parked run's quantum before
    /// this (monotonic ns).
    next_turn: u64,
}

impl Magnet {
    /// A context to fill for a run (the last one's buffers, when there is
    /// one).
    pub fn take_ctx(&mut self) -> Ctx {
        self.spare.take().unwrap_or_default()
    }

    /// Keeps `ctx`'s buffers for the next run (the request it was lent
    /// is done with).
    pub fn put_ctx(&mut self, mut ctx: Ctx) {
        ctx.forget_loan();
        self.spare = Some(ctx);
    }

    /// Runs `files` in order on `ctx` while each says go on. A run that
    /// needs more than a quantum (or finds every state of its script
    /// busy) is parked: its request waits on the [`Parked`] handle, and
    /// `ctx` goes with it.
    pub fn run(&mut self, files: &[String], ctx: &mut Ctx) -> Ran {
        self.watchdog.ready();
        let stage = ctx.stage;
        for (i, f) in files.iter().enumerate() {
            let mut state = match self.acquire(f) {
                Ok(Some(s)) => s,
                Ok(None) => {
                    // (The request is not kept while the run waits.)
                    ctx.detach();
                    let p = Parked::new(stage, &files[i..], std::mem::take(ctx), None);
                    self.parked.push_back(p.clone());
                    return Ran::Parked(p);
                }
                Err(e) => {
                    log::error!("loading script {f} failed: {e}");
                    return Ran::Done(Verdict::Failed);
                }
            };
            // The request goes where the primitives look for it (a swap:
            // no allocation, no copy of what it holds).
            state.swap(ctx);
            let (q, ran) = state.go(true, TIME_SLICE.as_nanos() as u64);
            match q {
                Quantum::Suspended => {
                    // The request stays in the state (its loan copied: the
                    // request is not kept while the run waits); `ctx`
                    // holds the state's spare, swapped back at the end.
                    if !state.detach_ctx() {
                        // Never parked with a loan it could not copy out.
                        self.discard(state);
                        return Ran::Done(Verdict::Failed);
                    }
                    let mut p = Parked::new(stage, &files[i..], std::mem::take(ctx), Some(state));
                    p.ran(ran);
                    self.parked.push_back(p.clone());
                    return Ran::Parked(p);
                }
                Quantum::Over(rv) => {
                    state.swap(ctx);
                    let v = self.ended(f, state, rv, ctx.stage);
                    if v != Verdict::GoOn {
                        return Ran::Done(v);
                    }
                }
            }
        }
        Ran::Done(Verdict::GoOn)
    }

    /// A run of `file` in `state` ended with `rv`: the state goes back
    /// to its script; what the run asks for.
    fn ended(
        &mut self,
        file: &str,
        mut state: State,
        rv: mlua::Result<Value>,
        stage: Stage,
    ) -> Verdict {
        if rv.is_err() {
            state.clean_up(file);
        }
        self.release(state);
        match rv {
            Err(e) => {
                log::error!("lua: {file}: {e}");
                Verdict::Failed
            }
            Ok(v) => verdict(file, &v, stage),
        }
    }

    /// A state of `file`'s script to run it in: an idle one, a new one
    /// while the script has fewer than [`MAX_STATES`], else None.
    fn acquire(&mut self, file: &str) -> Result<Option<State>, String> {
        let i = self.script(file)?;
        let script = self
            .scripts
            .get_mut(i)
            .ok_or_else(|| "script vanished".to_string())?;
        if let Some(s) = script.idle.pop() {
            script.busy += 1;
            return Ok(Some(s));
        }
        if script.busy >= MAX_STATES {
            return Ok(None);
        }
        let s = state::load(file, &script.src, script.generation).map_err(|e| e.to_string())?;
        script.busy += 1;
        Ok(Some(s))
    }

    /// `state` ran: back with its script, or dropped when the script was
    /// loaded anew meanwhile. (A load's generation is its script's alone:
    /// no name to compare.)
    fn release(&mut self, state: State) {
        let g = state.generation;
        let at = match self.scripts.get(self.last) {
            Some(s) if s.generation == g => Some(self.last),
            _ => self.scripts.iter().position(|s| s.generation == g),
        };
        if let Some(script) = at.and_then(|i| self.scripts.get_mut(i)) {
            script.busy = script.busy.saturating_sub(1);
            script.idle.push(state);
        }
    }

    /// `state` is dropped, not given back: its script may make another.
    fn discard(&mut self, state: State) {
        let g = state.generation;
        drop(state);
        if let Some(script) = self.scripts.iter_mut().find(|s| s.generation == g) {
            script.busy = script.busy.saturating_sub(1);
        }
    }

    /// The descriptor to watch for changes to the scripts, made on first
    /// use: the server's loop registers it and calls
    /// [`Magnet::files_changed`] when it is readable, before the requests
    /// of that turn. None when the system has no inotify to give.
    /// Returns the descriptor when it was made by this call (to be
    /// registered), None when it already was or cannot be.
    pub fn watcher(&mut self) -> Option<std::os::fd::RawFd> {
        use nix::sys::inotify::{InitFlags, Inotify};
        use std::os::fd::{AsFd, AsRawFd};
        if self.inotify.is_some() {
            return None;
        }
        match Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC) {
            Ok(i) => {
                let fd = i.as_fd().as_raw_fd();
                self.inotify = Some(i);
                Some(fd)
            }
            Err(e) => {
                log::warn!("mod_magnet: no inotify ({e}); scripts are checked on every run");
                None
            }
        }
    }

    /// Drops the watcher (a worker process just forked shares its parent's,
    /// whose events only one of them would read): every script is checked
    /// on its next run until [`Magnet::watcher`] makes a new one.
    pub fn forget_watcher(&mut self) {
        self.inotify = None;
        self.watchdog.forget();
        for s in self.scripts.iter_mut() {
            s.watch = None;
            s.stale = true;
        }
    }

    /// The watcher is readable: the scripts it reports are looked at
    /// again before their next run.
    pub fn files_changed(&mut self) {
        let Some(ino) = &self.inotify else { return };
        let mut any = false;
        while let Ok(events) = ino.read_events() {
            if events.is_empty() {
                break;
            }
            for ev in events {
                for s in self.scripts.iter_mut() {
                    if s.watch == Some(ev.wd) {
                        s.stale = true;
                        any = true;
                    }
                }
            }
        }
        if any {
            log::debug!("mod_magnet: a script changed on disk");
        }
    }

    /// The index of `file`'s script, if loaded.
    #[inline]
    fn find(&self, file: &str) -> Option<usize> {
        if self.scripts.get(self.last).is_some_and(|s| s.file == file) {
            return Some(self.last);
        }
        self.by_name.get(file).copied()
    }

    /// The index of the script of `file`, loaded (again, when the file
    /// changed). The file is stat'ed only when its watch reported a
    /// change (or it has none): a script on every request costs no
    /// system call.
    fn script(&mut self, file: &str) -> Result<usize, String> {
        let found = self.find(file);
        if let Some(i) = found.filter(|&i| !self.scripts[i].stale) {
            self.last = i;
            return Ok(i);
        }
        let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
        let (mtime, size) = (meta.modified().ok(), meta.len());
        let fresh =
            found.is_some_and(|i| self.scripts[i].mtime == mtime && self.scripts[i].size == size);
        let i = match found {
            Some(i) if fresh => i,
            _ => self.load(file, found, mtime, size)?,
        };
        // Watch the file as it is now (a new inode after an editor's
        // rename), before it can change again.
        let watch = self.watch(file);
        let s = &mut self.scripts[i];
        if s.watch != watch {
            let old = s.watch.take();
            s.watch = watch;
            s.stale = watch.is_none();
            self.unwatch(old);
        } else {
            s.stale = watch.is_none();
        }
        self.last = i;
        Ok(i)
    }

    /// Loads `file` (its first state), in place of the script at `at`
    /// when there is one; returns its index.
    fn load(
        &mut self,
        file: &str,
        at: Option<usize>,
        mtime: Option<SystemTime>,
        size: u64,
    ) -> Result<usize, String> {
        let src: std::rc::Rc<[u8]> = std::fs::read(file).map_err(|e| e.to_string())?.into();
        self.loads += 1;
        let generation = self.loads;
        let first = state::load(file, &src, generation).map_err(|e| e.to_string())?;
        // Every state of the script is of the new text: those out for a
        // suspended run are dropped when it ends.
        let s = Script {
            file: file.to_string(),
            watch: None,
            stale: true,
            idle: vec![first],
            busy: 0,
            generation,
            src,
            mtime,
            size,
        };
        Ok(match at {
            Some(i) => {
                let old = std::mem::replace(&mut self.scripts[i], s);
                self.unwatch(old.watch);
                i
            }
            None => {
                self.scripts.push(s);
                let i = self.scripts.len() - 1;
                self.by_name.insert(file.to_string(), i);
                i
            }
        })
    }

    fn watch(&self, file: &str) -> Option<nix::sys::inotify::WatchDescriptor> {
        use nix::sys::inotify::AddWatchFlags as F;
        let ino = self.inotify.as_ref()?;
        let what =
            F::IN_MODIFY | F::IN_ATTRIB | F::IN_CLOSE_WRITE | F::IN_MOVE_SELF | F::IN_DELETE_SELF;
        ino.add_watch(file, what).ok()
    }

    fn unwatch(&self, wd: Option<nix::sys::inotify::WatchDescriptor>) {
        // The same inode may be watched for a newer load: inotify gives
        // one descriptor per inode, so only drop it when no script has it.
        if let (Some(ino), Some(wd)) = (&self.inotify, wd) {
            if !self.scripts.iter().any(|s| s.watch == Some(wd)) {
                let _ = ino.rm_watch(wd);
            }
        }
    }
}

/// `t[name]` = a Rust function (the helpers of `lighty.c` and the
/// primitives behind `lighty.r`).
fn set_fn<A, R>(
    lua: &Lua,
    t: &Table,
    name: &str,
    f: impl Fn(&Lua, A) -> mlua::Result<R> + 'static,
) -> mlua::Result<()>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
{
    t.set(name, lua.create_function(f)?)
}

/// What a script's return value asks for.
fn verdict(file: &str, v: &Value, stage: Stage) -> Verdict {
    let n = match v {
        Value::Nil => 0,
        Value::Integer(i) => *i,
        other => {
            log::error!(
                "{file}: unexpected non-integer return type: {}",
                other.type_name()
            );
            return Verdict::GoOn;
        }
    };
    match n {
        200..=999 => Verdict::Status(n as u16),
        RESTART_REQUEST if stage != Stage::ResponseStart => Verdict::Restart,
        _ => Verdict::GoOn,
    }
}

/// Exchanges the request being run with the one the primitives see.
fn swap_ctx(shared: &RefCell<Ctx>, ctx: &mut Ctx) {
    match shared.try_borrow_mut() {
        Ok(mut c) => std::mem::swap(&mut *c, ctx),
        // Only a primitive borrows it, and none runs now.
        Err(_) => log::error!("mod_magnet: the request is in use"),
    }
}
