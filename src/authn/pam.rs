//! mod_authn_pam's check, as lighttpd 1.4.69 makes it: `pam_start` with
//! `auth.backend.pam.opts`' `"service"` (default `http`) and the user,
//! `PAM_RHOST` set to the client's address, `pam_authenticate` then
//! `pam_acct_mgmt` (both `PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK`), the
//! conversation answering every prompt with the password; then the rule
//! (`valid-user` or `user=`; PAM reports no groups).
//!
//! `libpam.so.0` is opened with dlopen at start when a scope's
//! `auth.backend` is `pam` ([`load`]), not linked: a glint without
//! mod_authn_pam configured never maps it (nor libaudit and libcap-ng,
//! which it pulls in: ~140 kB of an idle server's memory), as lighttpd
//! loads mod_authn_pam.so only when configured; and building needs no
//! PAM development package (libpam0g-dev). The few declarations
//! below are the stable ABI of `<security/pam_appl.h>` (Linux-PAM and
//! OpenPAM agree on them). The binding crates either generate their
//! bindings with bindgen from those headers at build time or are
//! unmaintained.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use nix::libc;

use super::ask::{Ask, Verdict};

/// One scope's `auth.backend.pam.opts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PamSpec {
    /// `"service"` (default `http`): the file under /etc/pam.d.
    pub service: String,
}

const PAM_SUCCESS: c_int = 0;
const PAM_BUF_ERR: c_int = 5;
const PAM_RHOST: c_int = 4;
const PAM_SILENT: c_int = 0x8000;
const PAM_DISALLOW_NULL_AUTHTOK: c_int = 0x0001;
const PAM_PROMPT_ECHO_OFF: c_int = 1;
const PAM_PROMPT_ECHO_ON: c_int = 2;

#[repr(C)]
struct PamMessage {
    msg_style: c_int,
    msg: *const c_char,
}

#[repr(C)]
struct PamResponse {
    resp: *mut c_char,
    resp_retcode: c_int,
}

type ConvFn = unsafe extern "C" fn(
    c_int,
    *mut *const PamMessage,
    *mut *mut PamResponse,
    *mut c_void,
) -> c_int;

#[repr(C)]
struct PamConv {
    conv: Option<ConvFn>,
    appdata_ptr: *mut c_void,
}

type Start =
    unsafe extern "C" fn(*const c_char, *const c_char, *const PamConv, *mut *mut c_void) -> c_int;
type SetItem = unsafe extern "C" fn(*mut c_void, c_int, *const c_void) -> c_int;
/// `pam_authenticate`, `pam_acct_mgmt`, `pam_end`: a handle and an int.
type WithInt = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
type StrError = unsafe extern "C" fn(*mut c_void, c_int) -> *const c_char;

/// The calls of libpam glint makes.
struct Lib {
    start: Start,
    set_item: SetItem,
    authenticate: WithInt,
    acct_mgmt: WithInt,
    end: WithInt,
    strerror: StrError,
}

static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();

/// Opens libpam (once per process). `RTLD_GLOBAL` and the look-up in the
/// global scope keep what linking gave: a preloaded library that wraps
/// libpam's calls (pam_wrapper, as the tests use) comes first.
fn open() -> Result<Lib, String> {
    if super::dl::open(c"libpam.so.0", true).is_none() {
        return Err("libpam.so.0 cannot be loaded (apt-get install libpam0g)".into());
    }
    let sym = |name: &CStr| {
        super::dl::GLOBAL
            .symbol(name)
            .map_err(|e| format!("libpam.so.0 {e}"))
    };
    let (start, set_item) = (sym(c"pam_start")?, sym(c"pam_set_item")?);
    let (authenticate, acct_mgmt) = (sym(c"pam_authenticate")?, sym(c"pam_acct_mgmt")?);
    let (end, strerror) = (sym(c"pam_end")?, sym(c"pam_strerror")?);
    // SAFETY: the prototypes of <security/pam_appl.h> for these symbols.
    Ok(unsafe {
        Lib {
            start: std::mem::transmute::<*mut c_void, Start>(start),
            set_item: std::mem::transmute::<*mut c_void, SetItem>(set_item),
            authenticate: std::mem::transmute::<*mut c_void, WithInt>(authenticate),
            acct_mgmt: std::mem::transmute::<*mut c_void, WithInt>(acct_mgmt),
            end: std::mem::transmute::<*mut c_void, WithInt>(end),
            strerror: std::mem::transmute::<*mut c_void, StrError>(strerror),
        }
    })
}

/// The conversation: every prompt (echo on or off) is answered with the
/// password in `appdata`; messages get no answer. The answers are
/// malloc'ed, as PAM frees them with free(3).
unsafe extern "C" fn converse(
    n: c_int,
    msgs: *mut *const PamMessage,
    out: *mut *mut PamResponse,
    appdata: *mut c_void,
) -> c_int {
    if n <= 0 || msgs.is_null() || out.is_null() || appdata.is_null() {
        return PAM_BUF_ERR;
    }
    let n = n as usize;
    // SAFETY: calloc of n zeroed responses; checked for NULL below.
    let resp = unsafe { libc::calloc(n, std::mem::size_of::<PamResponse>()) } as *mut PamResponse;
    if resp.is_null() {
        return PAM_BUF_ERR;
    }
    for i in 0..n {
        // SAFETY: Linux-PAM passes an array of n message pointers.
        let m = unsafe { *msgs.add(i) };
        if m.is_null() {
            continue;
        }
        // SAFETY: m points to a PamMessage PAM owns for this call.
        let style = unsafe { (*m).msg_style };
        if style == PAM_PROMPT_ECHO_OFF || style == PAM_PROMPT_ECHO_ON {
            // SAFETY: appdata is the password CString, alive for the call;
            // resp has n entries.
            unsafe { (*resp.add(i)).resp = libc::strdup(appdata as *const c_char) };
        }
    }
    // SAFETY: out is PAM's pointer to receive the array.
    unsafe { *out = resp };
    PAM_SUCCESS
}

/// Opens libpam now: at start, while the whole file system is in view
/// (before `server.chroot`), as lighttpd loads mod_authn_pam.so.
pub fn load() -> Result<(), String> {
    LIB.get_or_init(open)
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// Checks `ask` with the PAM stack of `s.service`.
pub fn verify(s: &PamSpec, ask: &Ask) -> Verdict {
    let (Ok(service), Ok(user), Ok(password), Ok(rhost)) = (
        CString::new(s.service.as_str()),
        CString::new(ask.user.as_str()),
        CString::new(ask.password.clone()),
        CString::new(ask.remote.as_str()),
    ) else {
        return Verdict::Denied("pam: NUL in user name or password".into());
    };
    let lib = match LIB.get_or_init(open) {
        Ok(lib) => lib,
        Err(e) => return Verdict::Denied(format!("pam: {e}")),
    };
    let conv = PamConv {
        conv: Some(converse),
        appdata_ptr: password.as_ptr() as *mut c_void,
    };
    let mut h: *mut c_void = std::ptr::null_mut();
    let flags = PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK;
    // SAFETY: every pointer is to a CString or a struct alive until
    // pam_end; PAM keeps `conv` only until then.
    let rc = unsafe {
        let mut rc = (lib.start)(service.as_ptr(), user.as_ptr(), &conv, &mut h);
        if rc == PAM_SUCCESS {
            rc = (lib.set_item)(h, PAM_RHOST, rhost.as_ptr() as *const c_void);
        }
        if rc == PAM_SUCCESS {
            rc = (lib.authenticate)(h, flags);
        }
        if rc == PAM_SUCCESS {
            rc = (lib.acct_mgmt)(h, flags);
        }
        rc
    };
    let why = if rc == PAM_SUCCESS {
        None
    } else {
        // SAFETY: pam_strerror returns a static string (h may be NULL).
        let p = unsafe { (lib.strerror)(h, rc) };
        Some(if p.is_null() {
            format!("pam: error {rc}")
        } else {
            // SAFETY: a NUL-terminated static string.
            format!("pam: {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
        })
    };
    if !h.is_null() {
        // SAFETY: h came from pam_start and is ended once.
        unsafe { (lib.end)(h, rc) };
    }
    if let Some(why) = why {
        return Verdict::Denied(why);
    }
    if ask.rule.valid_user || ask.rule.users.contains(&ask.user) {
        Verdict::Granted
    } else {
        Verdict::Denied("not allowed by auth.require".into())
    }
}
