//! One Lua state of a script: the standard libraries, the `lighty` table,
//! the script compiled, and the coroutine its runs go in (so that a run
//! past its quantum can be suspended and resumed later; see
//! [`super::watchdog`]).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mlua::{Function, HookTriggers, Lua, Table, Thread, Value, VmState};

use super::{clib, prims, set_fn, swap_ctx, watchdog, Ctx, HOOK_EVERY, MEMORY_LIMIT, TIME_SLICE};

/// A compiled script in a Lua state of its own (boxed: it goes from its
/// script to the run and back on every request, moved as a pointer).
pub(super) type State = Box<StateData>;

/// What a [`State`] holds.
pub(super) struct StateData {
    /// The state itself: the functions and tables below only refer to it.
    lua: Lua,
    env: Table,
    /// `env` in the registry (its index there).
    env_key: mlua::RegistryKey,
    clear: Function,
    /// The prelude's `after`: what a run that touched the older
    /// interface's tables or left globals needs done after it.
    after: Function,
    /// The run touched `lighty.header`, `lighty.content` or another
    /// field of `lighty` (the prelude calls `P.touch`).
    touched: Rc<Cell<bool>>,
    /// When the running script must stop (monotonic ns; 0 between
    /// quanta): what the hooks of the script's coroutines look at.
    deadline: Rc<Cell<u64>>,
    /// The request of the run, where the primitives find it (the state's
    /// app data).
    ctx: Rc<RefCell<Ctx>>,
    /// The script's function (in its environment): what the coroutine
    /// runs, resumed directly.
    runner: Function,
    /// `runner` in the registry (its index there), for the coroutine's
    /// reset.
    runner_key: mlua::RegistryKey,
    /// The coroutine a run goes in (made once, reset for each run).
    thread: Thread,
    /// The coroutine's `lua_State`, for the watchdog's hook.
    raw: *mut mlua::ffi::lua_State,
    /// The load of the file this state holds (see `Script::generation`).
    pub generation: u64,
}

/// What a quantum of a run came to.
pub(super) enum Quantum {
    /// The run used up its quantum and is suspended (resume it later).
    Suspended,
    /// The run is over: the script's return value or its error.
    Over(mlua::Result<Value>),
}

impl StateData {
    /// Swaps `ctx` with the request the primitives see.
    pub fn swap(&self, ctx: &mut Ctx) {
        swap_ctx(&self.ctx, ctx);
    }

    /// The request in the state no longer needs the one it was lent
    /// (see [`Ctx::detach`]). False when it could not be copied out (the
    /// context in use: cannot happen once a run has yielded); the state
    /// must not be kept then.
    pub fn detach_ctx(&self) -> bool {
        match self.ctx.try_borrow_mut() {
            Ok(mut c) => {
                c.detach();
                true
            }
            Err(_) => {
                log::error!("mod_magnet: the request is in use; the run is dropped");
                false
            }
        }
    }

    /// Runs the script (`fresh`: from its start; else on from where it
    /// was suspended) for at most a quantum, with `left` ns of its budget
    /// left. Returns what it came to and the ns it ran (0 for a first
    /// quantum that ended the run: its time counts for nothing more, and
    /// a run that is over costs one clock reading, not two).
    pub fn go(&mut self, fresh: bool, left: u64) -> (Quantum, u64) {
        if fresh {
            if let Err(e) = self.reset() {
                return (Quantum::Over(Err(e)), 0);
            }
        }
        let start = watchdog::begin(self.raw, left, !fresh);
        let cpu = if fresh { 0 } else { watchdog::cpu_ns() };
        self.deadline.set(start.saturating_add(left));
        let rv = self.thread.resume::<Value>(());
        let preempted = watchdog::end(self.raw);
        self.deadline.set(0);
        // SAFETY: reads the status of the live coroutine that just ran.
        let yielded = unsafe { mlua::ffi::lua_status(self.raw) } == mlua::ffi::LUA_YIELD;
        // Run time: on the wall clock for a first quantum, in CPU time
        // for a resumed one (see `watchdog::cpu_ns`).
        let ran = if !fresh {
            watchdog::cpu_ns().saturating_sub(cpu)
        } else if yielded {
            watchdog::now_ns().saturating_sub(start)
        } else {
            0
        };
        let q = match rv {
            Ok(_) if preempted && yielded => Quantum::Suspended,
            Ok(_) if yielded => {
                // The script yielded itself, outside any coroutine of its
                // own (as run by lighttpd: an error).
                let _ = self.reset();
                Quantum::Over(Err(mlua::Error::runtime(
                    "attempt to yield from outside a coroutine",
                )))
            }
            Ok(v) => Quantum::Over(self.after_run(v)),
            Err(e) => Quantum::Over(Err(e)),
        };
        (q, ran)
    }

    /// The run returned `rv`: what it asks for as `verdict` takes it (an
    /// integer, as `math.tointeger` makes it, or the value as it is when
    /// it is none), its globals and the older interface's tables cleared.
    /// Only a run that touched the latter or left globals calls into Lua.
    fn after_run(&mut self, rv: Value) -> mlua::Result<Value> {
        let n = match &rv {
            Value::Nil => Some(0),
            Value::Integer(i) => Some(*i),
            other => self.lua.coerce_integer(other.clone()).ok().flatten(),
        };
        let Some(n) = n else {
            self.touched.set(false);
            self.clear.call::<()>(self.env.clone())?;
            return Ok(rv);
        };
        if self.touched.get() || self.has_globals() {
            self.touched.set(false);
            self.after.call::<()>((n, self.env.clone()))?;
        }
        Ok(Value::Integer(n))
    }

    /// The script's environment holds globals (set by the run).
    fn has_globals(&self) -> bool {
        let key = mlua::ffi::lua_Integer::from(self.env_key.id());
        // SAFETY: the coroutine's run returned (it is not running), so
        // its stack may be used: room for three values is made, the
        // environment and a nil key pushed, `lua_next` (which raises no
        // error on a nil key) pushes a pair or nothing, and the stack is
        // emptied again.
        unsafe {
            use mlua::ffi;
            if ffi::lua_checkstack(self.raw, 3) == 0 {
                return true;
            }
            ffi::lua_rawgeti(self.raw, ffi::LUA_REGISTRYINDEX, key);
            ffi::lua_pushnil(self.raw);
            let any = ffi::lua_next(self.raw, -2) != 0;
            ffi::lua_settop(self.raw, 0);
            any
        }
    }

    /// The coroutine made ready for a run from the start. One whose run
    /// failed is replaced: an error raised by a hook (the watchdog's)
    /// leaves the coroutine's hooks off for good (no protected call
    /// inside it restores them).
    fn reset(&mut self) -> mlua::Result<()> {
        // SAFETY: reads the status of the live coroutine (an error code
        // after a run that failed).
        let status = unsafe { mlua::ffi::lua_status(self.raw) };
        if status == mlua::ffi::LUA_OK {
            // A run that returned (or none yet): its stack emptied and the
            // runner pushed, as `Thread::reset` does, without its checks
            // (a coroutine whose run returned has no frames left).
            // SAFETY: the coroutine is not running (runs are on this
            // thread, and none is), its stack has room for one value
            // after it is emptied, and the key is the runner's.
            unsafe {
                mlua::ffi::lua_settop(self.raw, 0);
                let key = mlua::ffi::lua_Integer::from(self.runner_key.id());
                mlua::ffi::lua_rawgeti(self.raw, mlua::ffi::LUA_REGISTRYINDEX, key);
            }
            return Ok(());
        }
        let failed = status != mlua::ffi::LUA_YIELD;
        if failed || self.thread.reset(self.runner.clone()).is_err() {
            self.thread = self.lua.create_thread(self.runner.clone())?;
            self.raw = self.thread.to_pointer() as *mut mlua::ffi::lua_State;
        }
        Ok(())
    }

    /// A run that failed (or was abandoned) left its globals behind (one
    /// that returned cleared them itself: one call into Lua per run, not
    /// two); its coroutine is closed (what its stack held is garbage).
    pub fn clean_up(&mut self, file: &str) {
        if let Err(e) = self.reset() {
            log::error!("{file}: closing the run: {e}");
        }
        self.touched.set(false);
        if let Err(e) = self.clear.call::<()>(self.env.clone()) {
            log::error!("{file}: clearing after the run: {e}");
        }
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

/// A new state for the script `src` of `file`: the standard libraries,
/// the `lighty` table, the memory limit, and the script compiled.
pub(super) fn load(file: &str, src: &[u8], generation: u64) -> mlua::Result<State> {
    let lua = Lua::new();
    let prims = prims::table(&lua)?;
    let ctx: Rc<RefCell<Ctx>> = Rc::default();
    lua.set_app_data(Rc::clone(&ctx));
    prims::fast_reads(&lua, &prims, &ctx)?;
    let deadline: Rc<Cell<u64>> = Rc::default();
    let dl = Rc::clone(&deadline);
    // The coroutines a script makes: bounded by a count hook of their
    // own (the watchdog's hook reaches only the run's coroutine).
    set_fn(&lua, &prims, "guard", move |_, co: mlua::Thread| {
        co.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY as u32),
            deadline_hook(Rc::clone(&dl)),
        )
    })?;
    let touched: Rc<Cell<bool>> = Rc::default();
    let t = Rc::clone(&touched);
    set_fn(&lua, &prims, "touch", move |_, ()| {
        t.set(true);
        Ok(())
    })?;
    let c = clib::table(&lua)?;
    let (after, clear, base): (Function, Function, Table) = lua
        .load(include_str!("prelude.lua"))
        .set_name("=magnet-prelude")
        .call((prims, c))?;
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.set("__index", base)?;
    meta.set("__metatable", false)?;
    env.set_metatable(Some(meta))?;
    let func = lua
        .load(src)
        .set_name(format!("@{file}"))
        .set_environment(env.clone())
        .into_function()?;
    let runner = func;
    let env_key = lua.create_registry_value(env.clone())?;
    let runner_key = lua.create_registry_value(runner.clone())?;
    let thread = lua.create_thread(runner.clone())?;
    // (A thread's pointer is its lua_State, which lives as long as the
    // thread, kept beside it.)
    let raw = thread.to_pointer() as *mut mlua::ffi::lua_State;
    lua.set_memory_limit(MEMORY_LIMIT)?;
    Ok(Box::new(StateData {
        lua,
        env,
        env_key,
        clear,
        after,
        touched,
        deadline,
        ctx,
        runner,
        runner_key,
        thread,
        raw,
        generation,
    }))
}

#[cfg(test)]
mod tests {
    use super::{load, Quantum, State, Value};

    fn run(s: &mut State) -> Value {
        match s.go(true, 1_000_000_000).0 {
            Quantum::Over(Ok(v)) => v,
            Quantum::Over(Err(e)) => panic!("{e}"),
            Quantum::Suspended => panic!("suspended"),
        }
    }

    #[test]
    fn a_run_leaves_no_globals_and_returns_as_math_tointeger_makes_it() {
        let src = b"n = (n or 0) + 1\nlighty.header['X-N'] = tostring(n)\n\
                    local r = lighty.r.req_attr['uri.path']\n\
                    if r == '/s' then return '404' elseif r == '/f' then return 1.5 end\n\
                    return 403.0";
        let mut s = load("t.lua", src, 1).expect("load");
        for (path, want) in [
            ("/", Value::Integer(403)),
            ("/", Value::Integer(403)),
            ("/s", Value::Integer(404)),
            ("/f", Value::Number(1.5)),
            ("/", Value::Integer(403)),
        ] {
            {
                let mut c = s.ctx.borrow_mut();
                c.reset(super::super::Stage::RawUrl);
                c.set_attr(super::super::attr::URI_PATH, path);
            }
            assert_eq!(run(&mut s), want, "{path}");
            // (A global of an earlier run would make it 2.)
            let n = s.ctx.borrow().resp_header("X-N").map(str::to_string);
            if !matches!(want, Value::Number(_)) {
                assert_eq!(n.as_deref(), Some("1"), "{path}");
            }
        }
    }
}
