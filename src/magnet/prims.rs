//! The functions behind `lighty.r.*` (the prelude wraps them in tables):
//! each reads or changes the [`Ctx`] of the running script, the state's
//! app data while it runs.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use mlua::{ffi, Lua, MultiValue, Result, Table, Value};

use super::ctx::{attr, attr_id, Ctx, Part, Stage, ATTRS};
use super::set_fn;

/// The running script's request (an error outside a run).
fn with_ctx<R>(lua: &Lua, f: impl FnOnce(&mut Ctx) -> Result<R>) -> Result<R> {
    let shared = lua
        .app_data_ref::<Rc<RefCell<Ctx>>>()
        .ok_or_else(|| mlua::Error::runtime("lighty.r used outside a request"))?;
    let mut ctx = shared
        .try_borrow_mut()
        .map_err(|_| mlua::Error::runtime("lighty.r: the request is in use"))?;
    f(&mut ctx)
}

/// A string argument's bytes (`nil`: none); numbers are taken as Lua
/// turns them into strings.
fn bytes_of(v: &Value) -> Result<Option<Vec<u8>>> {
    match v {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.as_bytes().to_vec())),
        Value::Integer(i) => Ok(Some(i.to_string().into_bytes())),
        Value::Number(n) => Ok(Some(n.to_string().into_bytes())),
        other => Err(mlua::Error::runtime(format!(
            "string expected, got {}",
            other.type_name()
        ))),
    }
}

fn text_of(v: &Value) -> Result<Option<String>> {
    Ok(bytes_of(v)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// A header name or value a script gives: no CR, LF or NUL (they would
/// split the message), names a token.
fn check_field(name: &str, value: &[u8]) -> Result<()> {
    let bad_name = name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
    if bad_name || value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(mlua::Error::runtime(format!(
            "invalid header field {name:?}"
        )));
    }
    Ok(())
}

/// Headers a script may not set (the server frames the message itself).
fn framing(name: &str) -> bool {
    ["content-length", "transfer-encoding", "connection"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// The table of primitives handed to the prelude.
pub fn table(lua: &Lua) -> Result<Table> {
    let t = lua.create_table()?;
    request_headers(lua, &t)?;
    attributes(lua, &t)?;
    environment(lua, &t)?;
    response_headers(lua, &t)?;
    response_body(lua, &t)?;
    items(lua, &t)?;
    set_fn(lua, &t, "print", |_, v: Value| {
        let s = text_of(&v).ok().flatten().unwrap_or_default();
        log::error!("(lua-print) {s}");
        Ok(())
    })?;
    Ok(t)
}

fn request_headers(lua: &Lua, t: &Table) -> Result<()> {
    set_fn(lua, t, "rh_get", |lua, k: String| {
        let v = with_ctx(lua, |c| Ok(c.header(&k)))?;
        v.map(|v| lua.create_string(v)).transpose()
    })?;
    set_fn(lua, t, "rh_set", |lua, (k, v): (String, Value)| {
        let v = bytes_of(&v)?.unwrap_or_default();
        check_field(&k, &v)?;
        if framing(&k) {
            return Ok(());
        }
        with_ctx(lua, |c| {
            let headers = c.headers_mut();
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&k));
            if !v.is_empty() {
                headers.push((k, v));
            }
            c.headers_changed = true;
            Ok(())
        })
    })?;
    set_fn(lua, t, "rh_pairs", |lua, ()| {
        let all: Vec<(String, Vec<u8>)> = with_ctx(lua, |c| {
            Ok(c.header_fields()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect())
        })?;
        let out = lua.create_table()?;
        for (k, v) in all {
            let joined = match out.raw_get::<Option<mlua::LuaString>>(k.as_str())? {
                Some(old) => [&old.as_bytes()[..], b", ", &v].concat(),
                None => v,
            };
            out.raw_set(k, lua.create_string(joined)?)?;
        }
        Ok(out)
    })
}

fn attributes(lua: &Lua, t: &Table) -> Result<()> {
    // The key is read where Lua holds it (no copy: this runs for nearly
    // every script on every request).
    set_fn(lua, t, "ra_get", |lua, k: mlua::LuaString| {
        let Some(id) = attr_id(&k.as_bytes()) else {
            return Ok(None);
        };
        with_ctx(lua, |c| match c.attr_opt(id) {
            Some(v) => lua.create_string(v).map(Some),
            None => Ok(None),
        })
    })?;
    set_fn(lua, t, "ra_set", |lua, (k, v): (String, Value)| {
        let id = attr_id(k.as_bytes())
            .ok_or_else(|| mlua::Error::runtime(format!("couldn't store '{k}' in r.req_attr[]")))?;
        let v = text_of(&v)?.unwrap_or_default();
        if v.bytes().any(|b| b == 0 || b == b'\r' || b == b'\n') {
            return Err(mlua::Error::runtime(format!(
                "r.req_attr['{k}']: invalid value"
            )));
        }
        with_ctx(lua, |c| {
            if ATTRS[id] == "request.stage" {
                return Ok(());
            }
            let v = match ATTRS[id] {
                "uri.scheme" | "uri.authority" => v.to_ascii_lowercase(),
                _ => v,
            };
            // request.uri and uri.path-raw are two views of one target.
            match ATTRS[id] {
                "uri.path-raw" => {
                    let uri = c.attr(attr::REQUEST_URI);
                    let q = uri.find('?').map_or("", |i| &uri[i..]);
                    let t = format!("{v}{q}");
                    c.set_attr(attr::REQUEST_URI, &t);
                    c.changed |= 1 << attr::REQUEST_URI;
                }
                "request.uri" => {
                    let p = v.split('?').next().unwrap_or("").to_string();
                    c.set_attr(attr::URI_PATH_RAW, &p);
                }
                _ => {}
            }
            c.set_attr(id, &v);
            c.changed |= 1 << id;
            Ok(())
        })
    })?;
    set_fn(lua, t, "ra_pairs", |lua, ()| {
        with_ctx(lua, |c| {
            let out = lua.create_table()?;
            for (id, k) in ATTRS.iter().enumerate() {
                if let Some(v) = c.attr_opt(id) {
                    out.raw_set(*k, v)?;
                }
            }
            Ok(out)
        })
    })
}

fn environment(lua: &Lua, t: &Table) -> Result<()> {
    set_fn(lua, t, "re_get", |lua, k: String| {
        with_ctx(lua, |c| {
            Ok(c.env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
        })
    })?;
    set_fn(lua, t, "re_set", |lua, (k, v): (String, Value)| {
        let v = text_of(&v)?;
        with_ctx(lua, |c| {
            c.env_changed = true;
            match (c.env.iter_mut().find(|(n, _)| *n == k), v) {
                (Some(e), Some(v)) => e.1 = v,
                (Some(e), None) => e.1.clear(),
                (None, Some(v)) => c.env.push((k, v)),
                (None, None) => {}
            }
            Ok(())
        })
    })?;
    set_fn(lua, t, "re_pairs", |lua, ()| {
        let all = with_ctx(lua, |c| Ok(c.env.clone()))?;
        lua.create_table_from(all)
    })
}

fn response_headers(lua: &Lua, t: &Table) -> Result<()> {
    set_fn(lua, t, "sh_get", |lua, k: String| {
        with_ctx(lua, |c| Ok(c.resp_header(&k).map(str::to_string)))
    })?;
    set_fn(lua, t, "sh_set", |lua, (k, v): (String, Value)| {
        let v = text_of(&v)?.unwrap_or_default();
        check_field(&k, v.as_bytes())?;
        if framing(&k) {
            return Ok(());
        }
        with_ctx(lua, |c| {
            c.resp_headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&k));
            if !v.is_empty() {
                c.resp_headers.push((k, v));
            }
            c.resp_changed = true;
            Ok(())
        })
    })?;
    set_fn(lua, t, "sh_pairs", |lua, ()| {
        let all = with_ctx(lua, |c| Ok(c.resp_headers.clone()))?;
        lua.create_table_from(all)
    })
}

/// The pieces of a body given as a string or a table of strings and
/// `{filename=, offset=, length=}` tables. `legacy`: lighty.content's
/// `length`, which is the end of the range, not its length.
pub fn parts_of(v: &Value, legacy: bool) -> Result<Option<Vec<Part>>> {
    let t = match v {
        Value::String(s) => return Ok(Some(vec![Part::Mem(s.as_bytes().to_vec())])),
        Value::Table(t) => t,
        _ => return Ok(None),
    };
    let mut parts = Vec::new();
    for item in t.sequence_values::<Value>() {
        match item? {
            Value::String(s) => parts.push(Part::Mem(s.as_bytes().to_vec())),
            Value::Table(f) => {
                let Some(path) = f.get::<Option<String>>("filename")? else {
                    log::error!("body table field \"filename\" must be a string");
                    break;
                };
                let offset = f.get::<Option<i64>>("offset")?.unwrap_or(0).max(0) as u64;
                let len = f
                    .get::<Option<i64>>("length")?
                    .filter(|l| *l >= 0)
                    .map(|l| l as u64);
                let len = match (legacy, len) {
                    (true, Some(end)) => Some(end.saturating_sub(offset)),
                    (_, len) => len,
                };
                parts.push(Part::File { path, offset, len });
            }
            other => {
                log::error!(
                    "body part is neither a string nor a table ({})",
                    other.type_name()
                );
                break;
            }
        }
    }
    Ok(Some(parts))
}

fn response_body(lua: &Lua, t: &Table) -> Result<()> {
    let add = |set: bool| {
        move |lua: &Lua, args: MultiValue| {
            let last = args.into_iter().last().unwrap_or(Value::Nil);
            let Some(parts) = parts_of(&last, false)? else {
                return Ok(false);
            };
            with_ctx(lua, |c| {
                if set || (!c.body_set && c.stage == Stage::ResponseStart) {
                    c.body.clear();
                    if let (false, Some(known)) = (set, c.body_known.take()) {
                        c.body.push(Part::Mem(known));
                    }
                }
                c.body.extend(parts);
                c.body_set = true;
                Ok(true)
            })
        }
    };
    set_fn(lua, t, "rb_add", add(false))?;
    set_fn(lua, t, "rb_set", add(true))?;
    set_fn(lua, t, "rb_content", |lua, v: Value| {
        let parts = parts_of(&v, true)?.unwrap_or_default();
        with_ctx(lua, |c| {
            c.body = parts;
            c.body_set = true;
            Ok(())
        })
    })?;
    set_fn(lua, t, "rb_get", |lua, ()| {
        let body = with_ctx(lua, |c| Ok(body_bytes(c)))?;
        body.map(|b| lua.create_string(b)).transpose()
    })?;
    set_fn(lua, t, "rb_len", |lua, ()| {
        with_ctx(lua, |c| Ok(body_bytes(c).map(|b| b.len() as i64)))
    })
}

/// The response body as bytes, when it is known.
fn body_bytes(c: &Ctx) -> Option<Vec<u8>> {
    if !c.body_set {
        return c.body_known.clone();
    }
    let mut out = Vec::new();
    for p in &c.body {
        match p {
            Part::Mem(b) => out.extend_from_slice(b),
            Part::File { path, offset, len } => {
                let all = std::fs::read(path).ok()?;
                let start = (*offset as usize).min(all.len());
                let end = len.map_or(all.len(), |l| (start + l as usize).min(all.len()));
                out.extend_from_slice(&all[start..end]);
            }
        }
    }
    Some(out)
}

fn items(lua: &Lua, t: &Table) -> Result<()> {
    set_fn(lua, t, "ri_get", |lua, k: String| {
        with_ctx(lua, |c| {
            Ok(match k.as_str() {
                "http_status" => Some(i64::from(c.status)),
                "keep_alive" => Some(i64::from(c.keep_alive)),
                "req_count" => Some(1),
                "bytes_in" | "bytes_out" | "stream_id" | "req_header_len" | "resp_header_len"
                | "start_time" => Some(0),
                _ => return Err(mlua::Error::runtime(format!("r.req_item['{k}'] invalid"))),
            })
        })
    })?;
    set_fn(lua, t, "ri_set", |lua, (k, v): (String, Value)| {
        if k != "keep_alive" {
            return Err(mlua::Error::runtime(format!(
                "r.req_item['{k}'] invalid or read-only"
            )));
        }
        let on = matches!(v, Value::Integer(i) if i != 0) || matches!(v, Value::Boolean(true));
        with_ctx(lua, |c| {
            c.keep_alive = c.keep_alive && on;
            Ok(())
        })
    })?;
    Ok(())
}

/// The reads nearly every script makes on every request, `ra_get` and
/// `rh_get`, as C functions over the request: a state with a memory limit
/// makes every string mlua pushes a protected call of its own (about a
/// tenth of a trivial script's cost), where `lua_pushlstring` from a C
/// function is already inside the run's protected call. Each takes its
/// key as its last argument (so it serves as an `__index` directly);
/// what the fast path does not cover (a key that is not a string, a
/// header given more than once, the request in use) goes to the function
/// of the same name in `t`, kept as the closure's first upvalue.
pub fn fast_reads(lua: &Lua, t: &Table, ctx: &Rc<RefCell<Ctx>>) -> Result<()> {
    let reads: [(&str, ffi::lua_CFunction); 2] = [("ra_get", ra_get_c), ("rh_get", rh_get_c)];
    for (name, f) in reads {
        let general: mlua::Function = t.get(name)?;
        let cell = Rc::as_ptr(ctx).cast_mut().cast::<c_void>();
        // SAFETY: pushes a pointer and makes a closure of the general
        // function (pushed as the argument) and it; the cell it points to
        // lives as long as the state (the state's app data holds it).
        // (`ra_get` has a third: the string each attribute was last
        // read as, see `ra_get_c`.)
        let cached = name == "ra_get";
        let fast: mlua::Function = unsafe {
            lua.exec_raw(general, |state| {
                ffi::lua_pushlightuserdata(state, cell);
                if cached {
                    ffi::lua_createtable(state, ATTRS.len() as c_int, 0);
                    ffi::lua_pushcclosure(state, f, 3);
                } else {
                    ffi::lua_pushcclosure(state, f, 2);
                }
            })
        }?;
        t.set(name, fast)?;
    }
    Ok(())
}

/// The key (the last argument) when it is a string.
///
/// # Safety
/// `state` is the state of a running C function.
unsafe fn key_arg<'a>(state: *mut ffi::lua_State) -> Option<&'a [u8]> {
    let top = ffi::lua_gettop(state);
    if top < 1 || ffi::lua_type(state, top) != ffi::LUA_TSTRING {
        return None;
    }
    let mut len = 0;
    let p = ffi::lua_tolstring(state, top, &mut len);
    (!p.is_null()).then(|| std::slice::from_raw_parts(p.cast::<u8>(), len))
}

/// The cell of the request the closure's second upvalue points to.
///
/// # Safety
/// As [`key_arg`], in a closure made by [`fast_reads`].
unsafe fn cell_arg<'a>(state: *mut ffi::lua_State) -> Option<&'a RefCell<Ctx>> {
    let cell = ffi::lua_touserdata(state, ffi::lua_upvalueindex(2)) as *const RefCell<Ctx>;
    cell.as_ref()
}

/// The request, unless a primitive has it borrowed.
///
/// # Safety
/// As [`cell_arg`]; the reference is used before any Lua code can run
/// (the caller copies what it needs into the stack and touches it no
/// more).
unsafe fn ctx_arg<'a>(state: *mut ffi::lua_State) -> Option<&'a Ctx> {
    cell_arg(state)?.try_borrow_unguarded().ok()
}

/// Calls the general function (upvalue 1) with the last argument.
///
/// # Safety
/// As [`key_arg`], in a closure made by [`fast_reads`].
unsafe fn general(state: *mut ffi::lua_State) -> c_int {
    let top = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    if top >= 1 {
        ffi::lua_pushvalue(state, top);
    } else {
        ffi::lua_pushnil(state);
    }
    ffi::lua_call(state, 1, 1);
    1
}

/// Pushes `v` (nil when None): the last thing a fast read does, since
/// the push can raise a memory error (a longjmp past this frame, which
/// holds nothing to drop) or run a collection (after the bytes are
/// copied).
///
/// # Safety
/// As [`key_arg`].
unsafe fn push_found(state: *mut ffi::lua_State, v: Option<(*const u8, usize)>) -> c_int {
    match v {
        Some((p, n)) => {
            ffi::lua_pushlstring(state, p.cast(), n);
        }
        None => ffi::lua_pushnil(state),
    }
    1
}

unsafe extern "C-unwind" fn ra_get_c(state: *mut ffi::lua_State) -> c_int {
    let (Some(key), Some(cell)) = (key_arg(state), cell_arg(state)) else {
        return general(state);
    };
    let Ok(mut ctx) = cell.try_borrow_mut() else {
        return general(state);
    };
    // (The value is where the request or the context keeps it, which
    // nothing changes before the push copies it; the borrow ends first,
    // since the push may raise an error past this frame.)
    let Some(id) = attr_id(key) else {
        drop(ctx);
        return push_found(state, None);
    };
    let found = ctx.attr_opt(id).map(|v| (v.as_ptr(), v.len()));
    drop(ctx);
    let Some((p, n)) = found else {
        return push_found(state, None);
    };
    // The string the attribute was read as last (the same on most
    // requests: the path of a busy page, the method) is pushed again
    // instead of made anew (lua_pushlstring hashes and looks it up).
    let slot = id as ffi::lua_Integer + 1;
    if ffi::lua_rawgeti(state, ffi::lua_upvalueindex(3), slot) == ffi::LUA_TSTRING {
        let mut len = 0;
        let q = ffi::lua_tolstring(state, -1, &mut len);
        if len == n
            && !q.is_null()
            && std::slice::from_raw_parts(q.cast::<u8>(), len) == std::slice::from_raw_parts(p, n)
        {
            return 1;
        }
    }
    ffi::lua_settop(state, -2);
    // (The push copies the bytes before anything else can happen; the
    // slot is in the table's array part, made with it: no allocation.)
    ffi::lua_pushlstring(state, p.cast(), n);
    ffi::lua_pushvalue(state, -1);
    ffi::lua_rawseti(state, ffi::lua_upvalueindex(3), slot);
    1
}

unsafe extern "C-unwind" fn rh_get_c(state: *mut ffi::lua_State) -> c_int {
    let (Some(key), Some(ctx)) = (key_arg(state), ctx_arg(state)) else {
        return general(state);
    };
    let mut found = ctx
        .header_fields()
        .filter(|(k, _)| k.as_bytes().eq_ignore_ascii_case(key));
    match (found.next(), found.next()) {
        (Some((_, v)), None) => push_found(state, Some((v.as_ptr(), v.len()))),
        (None, _) => push_found(state, None),
        // Given more than once: the values joined by the general read.
        (Some(_), Some(_)) => general(state),
    }
}
