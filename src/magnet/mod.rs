//! mod_magnet: Lua 5.4 scripts (embedded with mlua, built from source) run
//! at three points of a request, with lighttpd's `lighty.*` interface.
//!
//! Each script file has a Lua state of its own, compiled once and again
//! when the file changes (its mtime or size). A run is bounded: an
//! instruction-count hook stops a script that runs past [`TIME_SLICE`],
//! and each state may allocate at most [`MEMORY_LIMIT`]; either, or any
//! error in the script, ends the run with its traceback in the error log.
//! A request whose settings name no script never touches Lua.

mod clib;
pub mod ctx;
mod prims;

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use mlua::{Function, HookTriggers, Lua, Table, Value, VmState};

pub use ctx::{attr, Ctx, Part, Stage};

/// Longest a script may run for one request before it is stopped.
pub const TIME_SLICE: Duration = Duration::from_millis(200);
/// Most memory one script's Lua state may hold.
pub const MEMORY_LIMIT: usize = 64 << 20;
/// The hook looks at the clock every this many Lua instructions.
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
    lua: Lua,
    func: Function,
    env: Table,
    run: Function,
    clear: Function,
    /// When the running script must stop (None between runs).
    deadline: Rc<Cell<Option<Instant>>>,
    mtime: Option<SystemTime>,
    size: u64,
}

/// The scripts loaded so far, by file name.
#[derive(Default)]
pub struct Magnet {
    scripts: HashMap<String, Script>,
    /// The context of the last run, its buffers kept for the next.
    spare: Option<Ctx>,
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
        let script = match self.script(file) {
            Ok(s) => s,
            Err(e) => {
                log::error!("loading script {file} failed: {e}");
                return Verdict::Failed;
            }
        };
        script.deadline.set(Some(Instant::now() + TIME_SLICE));
        script.lua.set_app_data(std::mem::take(ctx));
        let rv = script
            .run
            .call::<Value>((script.func.clone(), script.env.clone()));
        script.deadline.set(None);
        if let Some(c) = script.lua.remove_app_data::<Ctx>() {
            *ctx = c;
        }
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

    /// The script of `file`, loaded (again, when the file changed).
    fn script(&mut self, file: &str) -> Result<&mut Script, String> {
        let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
        let (mtime, size) = (meta.modified().ok(), meta.len());
        let fresh = self
            .scripts
            .get(file)
            .is_some_and(|s| s.mtime == mtime && s.size == size);
        if !fresh {
            let s = load(file, mtime, size).map_err(|e| e.to_string())?;
            self.scripts.insert(file.to_string(), s);
        }
        self.scripts
            .get_mut(file)
            .ok_or_else(|| "script vanished".to_string())
    }
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

/// A new state for `file`: the standard libraries, the `lighty` table,
/// the hook and the memory limit, and the script compiled.
fn load(file: &str, mtime: Option<SystemTime>, size: u64) -> mlua::Result<Script> {
    let src = std::fs::read(file).map_err(mlua::Error::external)?;
    let lua = Lua::new();
    let prims = prims::table(&lua)?;
    let c = clib::table(&lua)?;
    let (run, clear): (Function, Function) = lua
        .load(include_str!("prelude.lua"))
        .set_name("=magnet-prelude")
        .call((prims, c))?;
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.set("__index", lua.globals())?;
    meta.set("__metatable", false)?;
    env.set_metatable(Some(meta))?;
    let func = lua
        .load(&src[..])
        .set_name(format!("@{file}"))
        .set_environment(env.clone())
        .into_function()?;
    let deadline: Rc<Cell<Option<Instant>>> = Rc::default();
    let dl = Rc::clone(&deadline);
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, debug| match dl.get() {
            Some(d) if Instant::now() > d => {
                let line = debug.current_line().unwrap_or(0);
                let src = debug.source().short_src.unwrap_or_default().into_owned();
                Err(mlua::Error::runtime(format!(
                    "{src}:{line}: script stopped: ran longer than {} ms",
                    TIME_SLICE.as_millis()
                )))
            }
            _ => Ok(VmState::Continue),
        },
    )?;
    lua.set_memory_limit(MEMORY_LIMIT)?;
    Ok(Script {
        lua,
        func,
        env,
        run,
        clear,
        deadline,
        mtime,
        size,
    })
}
