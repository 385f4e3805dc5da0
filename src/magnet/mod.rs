//! mod_magnet: Lua 5.4 scripts (embedded with mlua, built from source) run
//! at three points of a request, with lighttpd's `lighty.*` interface.
//!
//! Each script file has a Lua state of its own, compiled once and again
//! when the file changes (its mtime or size). A run is bounded: a
//! watchdog stops a script that runs past [`TIME_SLICE`] (see
//! [`watchdog`]), and each state may allocate at most [`MEMORY_LIMIT`];
//! either, or any error in the script, ends the run with its traceback in
//! the error log.
//! A request whose settings name no script never touches Lua.

mod clib;
pub mod ctx;
mod prims;
mod watchdog;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use mlua::{Function, HookTriggers, Lua, Table, Value, VmState};

pub use ctx::{attr, Ctx, Part, Stage};

/// Longest a script may run for one request before it is stopped.
pub const TIME_SLICE: Duration = Duration::from_millis(200);
/// Most memory one script's Lua state may hold.
pub const MEMORY_LIMIT: usize = 64 << 20;
/// A coroutine's hook looks at the clock every this many Lua instructions.
const HOOK_EVERY: u32 = 10_000;
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

/// One script file's compiled state.
struct Script {
    /// The inotify watch on the file while it is the one loaded: until it
    /// reports a change, the file is not looked at again.
    watch: Option<nix::sys::inotify::WatchDescriptor>,
    /// A change was reported (or there is no watch): stat the file before
    /// the next run.
    stale: bool,
    /// The state itself: the functions and tables above only refer to it.
    _lua: Lua,
    env: Table,
    clear: Function,
    /// When the running script must stop (monotonic ns; 0 between runs):
    /// what the hooks of the script's coroutines look at.
    deadline: Rc<Cell<u64>>,
    /// The request of the run, where the primitives find it (the state's
    /// app data).
    ctx: Rc<RefCell<Ctx>>,
    /// Runs the script in its environment (the prelude's `run` bound to
    /// them: a call without arguments).
    runner: Function,
    /// The state's main thread, for the watchdog's hook.
    state: *mut mlua::ffi::lua_State,
    mtime: Option<SystemTime>,
    size: u64,
}

/// The scripts loaded so far, by file name.
#[derive(Default)]
pub struct Magnet {
    scripts: HashMap<String, Script>,
    /// Watches the loaded scripts (see [`Magnet::watcher`]); without it
    /// every run stats its file.
    inotify: Option<nix::sys::inotify::Inotify>,
    /// The context of the last run, its buffers kept for the next.
    spare: Option<Ctx>,
    watchdog: watchdog::Watchdog,
}

impl Magnet {
    /// A context to fill for a run (the last one's buffers, when there is
    /// one).
    pub fn take_ctx(&mut self) -> Ctx {
        self.spare.take().unwrap_or_default()
    }

    /// Keeps `ctx`'s buffers for the next run.
    pub fn put_ctx(&mut self, ctx: Ctx) {
        self.spare = Some(ctx);
    }

    /// Runs `files` in order on `ctx` while each says go on.
    pub fn run(&mut self, files: &[String], ctx: &mut Ctx) -> Verdict {
        for f in files {
            match self.run_one(f, ctx) {
                Verdict::GoOn => {}
                v => return v,
            }
        }
        Verdict::GoOn
    }

    fn run_one(&mut self, file: &str, ctx: &mut Ctx) -> Verdict {
        self.watchdog.ready();
        let script = match self.script(file) {
            Ok(s) => s,
            Err(e) => {
                log::error!("loading script {file} failed: {e}");
                return Verdict::Failed;
            }
        };
        let start = watchdog::begin(script.state);
        script
            .deadline
            .set(start.saturating_add(TIME_SLICE.as_nanos() as u64));
        // The request goes where the primitives look for it (a swap: no
        // allocation, no copy of what it holds).
        swap_ctx(&script.ctx, ctx);
        let rv = script.runner.call::<Value>(());
        swap_ctx(&script.ctx, ctx);
        watchdog::end(script.state);
        script.deadline.set(0);
        // A run that failed left its globals behind (one that returned
        // cleared them itself: one call into Lua per run, not two).
        if rv.is_err() {
            if let Err(e) = script.clear.call::<()>(script.env.clone()) {
                log::error!("{file}: clearing after the run: {e}");
            }
        }
        match rv {
            Err(e) => {
                log::error!("lua: {file}: {e}");
                Verdict::Failed
            }
            Ok(v) => verdict(file, &v, ctx.stage),
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
        for s in self.scripts.values_mut() {
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
                for s in self.scripts.values_mut() {
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

    /// The script of `file`, loaded (again, when the file changed). The
    /// file is stat'ed only when its watch reported a change (or it has
    /// none): a script on every request costs no system call.
    fn script(&mut self, file: &str) -> Result<&mut Script, String> {
        if self.scripts.get(file).is_some_and(|s| !s.stale) {
            return self
                .scripts
                .get_mut(file)
                .ok_or_else(|| "script vanished".to_string());
        }
        let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
        let (mtime, size) = (meta.modified().ok(), meta.len());
        let fresh = self
            .scripts
            .get(file)
            .is_some_and(|s| s.mtime == mtime && s.size == size);
        if !fresh {
            let s = load(file, mtime, size).map_err(|e| e.to_string())?;
            if let Some(old) = self.scripts.insert(file.to_string(), s) {
                self.unwatch(old.watch);
            }
        }
        // Watch the file as it is now (a new inode after an editor's
        // rename), before it can change again.
        let watch = self.watch(file);
        let s = self
            .scripts
            .get_mut(file)
            .ok_or_else(|| "script vanished".to_string())?;
        if s.watch != watch {
            let old = s.watch.take();
            s.watch = watch;
            s.stale = watch.is_none();
            self.unwatch(old);
        } else {
            s.stale = watch.is_none();
        }
        self.scripts
            .get_mut(file)
            .ok_or_else(|| "script vanished".to_string())
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
            if !self.scripts.values().any(|s| s.watch == Some(wd)) {
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

/// The hook of a script's coroutines: stops the run past its deadline.
fn deadline_hook(
    deadline: Rc<Cell<u64>>,
) -> impl Fn(&Lua, &mlua::debug::Debug) -> mlua::Result<VmState> {
    move |_, debug| match deadline.get() {
        d if d != 0 && watchdog::now_ns() > d => {
            let line = debug.current_line().unwrap_or(0);
            let src = debug.source().short_src.unwrap_or_default().into_owned();
            Err(mlua::Error::runtime(format!(
                "{src}:{line}: script stopped: ran longer than {} ms",
                TIME_SLICE.as_millis()
            )))
        }
        _ => Ok(VmState::Continue),
    }
}

/// A new state for `file`: the standard libraries, the `lighty` table,
/// the memory limit, and the script compiled.
fn load(file: &str, mtime: Option<SystemTime>, size: u64) -> mlua::Result<Script> {
    let src = std::fs::read(file).map_err(mlua::Error::external)?;
    let lua = Lua::new();
    let prims = prims::table(&lua)?;
    let ctx: Rc<RefCell<Ctx>> = Rc::default();
    lua.set_app_data(Rc::clone(&ctx));
    let deadline: Rc<Cell<u64>> = Rc::default();
    let dl = Rc::clone(&deadline);
    // The coroutines a script makes: bounded by a count hook of their
    // own (the watchdog's hook reaches only the script's main thread).
    set_fn(&lua, &prims, "guard", move |_, co: mlua::Thread| {
        co.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            deadline_hook(Rc::clone(&dl)),
        )
    })?;
    let c = clib::table(&lua)?;
    let (bind, clear, base): (Function, Function, Table) = lua
        .load(include_str!("prelude.lua"))
        .set_name("=magnet-prelude")
        .call((prims, c))?;
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.set("__index", base)?;
    meta.set("__metatable", false)?;
    env.set_metatable(Some(meta))?;
    let func = lua
        .load(&src[..])
        .set_name(format!("@{file}"))
        .set_environment(env.clone())
        .into_function()?;
    let runner: Function = bind.call((func, env.clone()))?;
    let mut state = std::ptr::null_mut();
    // SAFETY: only reads the pointer of the state's main thread, which
    // lives as long as `lua` (kept beside it in the Script).
    unsafe { lua.exec_raw::<()>((), |l| state = l)? };
    lua.set_memory_limit(MEMORY_LIMIT)?;
    Ok(Script {
        watch: None,
        stale: true,
        _lua: lua,
        env,
        clear,
        deadline,
        ctx,
        runner,
        state,
        mtime,
        size,
    })
}
