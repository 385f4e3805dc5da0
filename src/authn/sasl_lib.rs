//! mod_authn_sasl with `pwcheck_method` `auxprop` (or `sasldb`, which
//! lighttpd turns into `auxprop`): libsasl2's own `sasl_checkpass`, as
//! lighttpd calls it: `sasl_server_new` with the service, the fqdn and
//! the rule's realm as user realm, and a getopt callback that answers
//! `pwcheck_method`, `sasldb_path` (when set) and `auxprop_plugin` =
//! `sasldb`; the password is then compared by libsasl2 with the one its
//! sasldb plugin (Debian's libsasl2-modules-db) reads from the database.
//!
//! `libsasl2.so.2` (Debian's libsasl2-2) is opened with dlopen at the
//! first such check, not linked: a glint without it configured never maps
//! it, and building needs no libsasl2-dev. libsasl2's global state
//! (`sasl_server_init`, its plugin tables) is not safe to share between
//! threads without mutex callbacks, so every call into it happens under
//! one lock: checks against a local database file are quick, and they
//! run on the worker threads, never on the loop.

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr, CString};
use std::sync::Mutex;

const SASL_OK: c_int = 0;
const SASL_FAIL: c_int = -1;
const SASL_CB_LIST_END: c_ulong = 0;
const SASL_CB_GETOPT: c_ulong = 1;
const SASL_CB_LOG: c_ulong = 2;
const SASL_LOG_ERR: c_int = 1;
const SASL_LOG_FAIL: c_int = 2;
const SASL_LOG_WARN: c_int = 3;

/// `sasl_callback_t` of `<sasl/sasl.h>`.
#[repr(C)]
struct Callback {
    id: c_ulong,
    proc_: Option<unsafe extern "C" fn()>,
    context: *mut c_void,
}

type ServerInit = unsafe extern "C" fn(*const Callback, *const c_char) -> c_int;
type ServerNew = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const Callback,
    c_uint,
    *mut *mut c_void,
) -> c_int;
type CheckPass =
    unsafe extern "C" fn(*mut c_void, *const c_char, c_uint, *const c_char, c_uint) -> c_int;
type Dispose = unsafe extern "C" fn(*mut *mut c_void);
type ErrString = unsafe extern "C" fn(c_int, *const c_char, *const c_char) -> *const c_char;

struct Lib {
    server_new: ServerNew,
    checkpass: CheckPass,
    dispose: Dispose,
    errstring: ErrString,
}

// (Function pointers into a library that stays loaded.)
unsafe impl Send for Lib {}

/// libsasl2, once loaded and initialised (`Err`: why it cannot be, said
/// at every check).
static LIB: Mutex<Option<Result<Lib, String>>> = Mutex::new(None);

/// What the getopt callback answers for one check.
struct Opts {
    pwcheck_method: CString,
    sasldb_path: Option<CString>,
}

/// The options libsasl2 asks for (`context`: an [`Opts`], or null for the
/// global callbacks, which only name the auxprop plugin).
unsafe extern "C" fn getopt(
    context: *mut c_void,
    _plugin: *const c_char,
    option: *const c_char,
    result: *mut *const c_char,
    len: *mut c_uint,
) -> c_int {
    if option.is_null() || result.is_null() {
        return SASL_FAIL;
    }
    // SAFETY: libsasl2 passes a NUL-terminated option name.
    let option = unsafe { CStr::from_ptr(option) }.to_bytes();
    // SAFETY: the context is null or the `Opts` of the running check,
    // which outlives its connection.
    let opts = unsafe { (context as *const Opts).as_ref() };
    let value: &CStr = match (option, opts) {
        (b"auxprop_plugin", _) => c"sasldb",
        (b"pwcheck_method", Some(o)) => &o.pwcheck_method,
        (
            b"sasldb_path",
            Some(Opts {
                sasldb_path: Some(p),
                ..
            }),
        ) => p,
        _ => return SASL_FAIL,
    };
    // SAFETY: `result` is writable; the value lives as long as the
    // connection (static or the check's `Opts`).
    unsafe {
        *result = value.as_ptr();
        if !len.is_null() {
            *len = c_uint::try_from(value.to_bytes().len()).unwrap_or(0);
        }
    }
    SASL_OK
}

/// libsasl2's errors, failures and warnings go to the error log.
unsafe extern "C" fn log_cb(_context: *mut c_void, level: c_int, message: *const c_char) -> c_int {
    if matches!(level, SASL_LOG_ERR | SASL_LOG_FAIL | SASL_LOG_WARN) && !message.is_null() {
        // SAFETY: a NUL-terminated message.
        let m = unsafe { CStr::from_ptr(message) }.to_string_lossy();
        log::warn!("(mod_authn_sasl) {m}");
    }
    SASL_OK
}

fn callbacks(context: *mut c_void) -> [Callback; 3] {
    // SAFETY (of the casts): libsasl2 calls each `proc` with the
    // signature its `id` names (sasl_getopt_t, sasl_log_t).
    let getopt_fn: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        *const c_char,
        *mut *const c_char,
        *mut c_uint,
    ) -> c_int = getopt;
    let log_fn: unsafe extern "C" fn(*mut c_void, c_int, *const c_char) -> c_int = log_cb;
    [
        Callback {
            id: SASL_CB_GETOPT,
            proc_: Some(unsafe {
                std::mem::transmute::<
                    unsafe extern "C" fn(
                        *mut c_void,
                        *const c_char,
                        *const c_char,
                        *mut *const c_char,
                        *mut c_uint,
                    ) -> c_int,
                    unsafe extern "C" fn(),
                >(getopt_fn)
            }),
            context,
        },
        Callback {
            id: SASL_CB_LOG,
            proc_: Some(unsafe {
                std::mem::transmute::<
                    unsafe extern "C" fn(*mut c_void, c_int, *const c_char) -> c_int,
                    unsafe extern "C" fn(),
                >(log_fn)
            }),
            context: std::ptr::null_mut(),
        },
        Callback {
            id: SASL_CB_LIST_END,
            proc_: None,
            context: std::ptr::null_mut(),
        },
    ]
}

/// Loads libsasl2 and runs `sasl_server_init` (once per process).
fn open() -> Result<Lib, String> {
    let h = super::dl::open(c"libsasl2.so.2", false)
        .ok_or("libsasl2.so.2 cannot be loaded (apt-get install libsasl2-2 libsasl2-modules-db)")?;
    let sym = |name: &CStr| h.symbol(name).map_err(|e| format!("libsasl2.so.2 {e}"));
    let init = sym(c"sasl_server_init")?;
    let (new, check) = (sym(c"sasl_server_new")?, sym(c"sasl_checkpass")?);
    let (dispose, errstring) = (sym(c"sasl_dispose")?, sym(c"sasl_errstring")?);
    // SAFETY: the prototypes of <sasl/sasl.h> for these symbols.
    let lib = unsafe {
        Lib {
            server_new: std::mem::transmute::<*mut c_void, ServerNew>(new),
            checkpass: std::mem::transmute::<*mut c_void, CheckPass>(check),
            dispose: std::mem::transmute::<*mut c_void, Dispose>(dispose),
            errstring: std::mem::transmute::<*mut c_void, ErrString>(errstring),
        }
    };
    // libsasl2 keeps the global callbacks' address: they live for ever.
    let global: &'static [Callback; 3] = Box::leak(Box::new(callbacks(std::ptr::null_mut())));
    // SAFETY: a callback list ending in SASL_CB_LIST_END; no app name (as
    // lighttpd: no /etc/sasl2/<app>.conf is read).
    let rc = unsafe {
        std::mem::transmute::<*mut c_void, ServerInit>(init)(global.as_ptr(), std::ptr::null())
    };
    if rc != SASL_OK {
        return Err(format!("sasl_server_init failed ({rc})"));
    }
    Ok(lib)
}

/// What one auxprop check needs.
pub struct AuxpropCheck<'a> {
    pub service: &'a str,
    pub fqdn: &'a str,
    /// The rule's realm: libsasl2's user realm.
    pub realm: &'a str,
    pub sasldb_path: Option<&'a str>,
    pub user: &'a str,
    pub password: &'a [u8],
}

/// `Ok(())` when libsasl2 accepts the password; `Err` says why not.
pub fn checkpass(c: &AuxpropCheck<'_>) -> Result<(), String> {
    let cstr = |s: &str| CString::new(s).map_err(|_| "sasl: a NUL in an option".to_string());
    let (service, fqdn, realm) = (cstr(c.service)?, cstr(c.fqdn)?, cstr(c.realm)?);
    let opts = Opts {
        pwcheck_method: c"auxprop".to_owned(),
        sasldb_path: c.sasldb_path.map(cstr).transpose()?,
    };
    let user = cstr(c.user)?;
    let user_len = c_uint::try_from(c.user.len()).map_err(|_| "sasl: user name too long")?;
    let pw_len = c_uint::try_from(c.password.len()).map_err(|_| "sasl: password too long")?;
    // libsasl2's verifiers read the password as a C string, whatever its
    // length says.
    if c.password.contains(&0) {
        return Err("sasl: a NUL in the password".into());
    }
    let mut pw = Vec::with_capacity(c.password.len() + 1);
    pw.extend_from_slice(c.password);
    pw.push(0);
    let rc = checkpass_locked(
        &service,
        &fqdn,
        &realm,
        &opts,
        (&user, user_len),
        (&pw, pw_len),
    );
    for b in pw.iter_mut() {
        // SAFETY: a valid byte of `pw`; volatile so the wipe stays.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
    rc
}

/// [`checkpass`] under the lock, on NUL-terminated values.
fn checkpass_locked(
    service: &CStr,
    fqdn: &CStr,
    realm: &CStr,
    opts: &Opts,
    (user, user_len): (&CStr, c_uint),
    (pw, pw_len): (&[u8], c_uint),
) -> Result<(), String> {
    let mut guard = LIB.lock().unwrap_or_else(|p| p.into_inner());
    let lib = match guard.get_or_insert_with(open) {
        Ok(l) => l,
        Err(e) => return Err(format!("sasl: {e}")),
    };
    let cbs = callbacks(opts as *const Opts as *mut c_void);
    let mut conn: *mut c_void = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings, a callback list that (with `opts`)
    // outlives the connection, which is disposed of below.
    let mut rc = unsafe {
        (lib.server_new)(
            service.as_ptr(),
            fqdn.as_ptr(),
            realm.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            cbs.as_ptr(),
            0,
            &mut conn,
        )
    };
    if rc == SASL_OK {
        // SAFETY: a live connection; user and password with their lengths.
        rc = unsafe { (lib.checkpass)(conn, user.as_ptr(), user_len, pw.as_ptr().cast(), pw_len) };
    }
    if !conn.is_null() {
        // SAFETY: the connection sasl_server_new made, disposed of once.
        unsafe { (lib.dispose)(&mut conn) };
    }
    if rc == SASL_OK {
        return Ok(());
    }
    // SAFETY: sasl_errstring returns a static string (or null).
    let why = unsafe { (lib.errstring)(rc, std::ptr::null(), std::ptr::null()) };
    let why = if why.is_null() {
        rc.to_string()
    } else {
        // SAFETY: NUL-terminated and static.
        unsafe { CStr::from_ptr(why) }
            .to_string_lossy()
            .into_owned()
    };
    Err(format!("sasl: {why}"))
}
