//! The crypt(3) schemes glint has no code of its own for (yescrypt `$y$`,
//! Debian's default; `$gy$`, `$7$`, `$2x$`, `$sha1$`, `$md5`, `$3$`,
//! BSDi `_`, bigcrypt, ...), checked by the system's libxcrypt as
//! lighttpd's crypt() call checks them.
//!
//! `libcrypt.so.1` (Debian's libcrypt1, which libc6 depends on, so it is
//! always there) is opened with dlopen at the first such hash, not linked:
//! a glint whose users have none never maps it, and building glint needs
//! no libcrypt-dev. The calls are `crypt_checksalt` (is the scheme known
//! and enabled: asked when a hash is read, so the loader can report one
//! that never verifies) and `crypt_rn`, the reentrant crypt with a
//! caller's work area (so any thread may call it; no global state).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// libxcrypt's `sizeof(struct crypt_data)`: the work area `crypt_rn`
/// needs at least.
const CRYPT_DATA: usize = 32_768;

/// `crypt_checksalt`'s answers that mean "crypt will hash with it":
/// `CRYPT_SALT_OK`, `CRYPT_SALT_METHOD_LEGACY` (weak but enabled, as
/// lighttpd's crypt() takes it) and `CRYPT_SALT_TOO_CHEAP`.
const SALT_OK: c_int = 0;
const SALT_LEGACY: c_int = 3;
const SALT_TOO_CHEAP: c_int = 4;

type CryptRn =
    unsafe extern "C" fn(*const c_char, *const c_char, *mut c_void, c_int) -> *mut c_char;
type CheckSalt = unsafe extern "C" fn(*const c_char) -> c_int;

struct Lib {
    crypt_rn: CryptRn,
    checksalt: CheckSalt,
}

/// libxcrypt, opened once; `None` when it cannot be (logged once).
fn lib() -> Option<&'static Lib> {
    static LIB: OnceLock<Option<Lib>> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = open();
        if let Err(e) = &lib {
            log::error!("(mod_auth) libcrypt.so.1: {e}; hashes only it knows never match");
        }
        lib.ok()
    })
    .as_ref()
}

fn open() -> Result<Lib, String> {
    let h = crate::authn::dl::open(c"libcrypt.so.1", false)
        .ok_or("cannot be loaded (apt-get install libcrypt1)")?;
    let sym = |name: &CStr| h.symbol(name);
    let (rn, check) = (sym(c"crypt_rn")?, sym(c"crypt_checksalt")?);
    // SAFETY: libxcrypt's prototypes (<crypt.h>):
    //   char *crypt_rn(const char *phrase, const char *setting, void *data, int size);
    //   int crypt_checksalt(const char *setting);
    Ok(unsafe {
        Lib {
            crypt_rn: std::mem::transmute::<*mut c_void, CryptRn>(rn),
            checksalt: std::mem::transmute::<*mut c_void, CheckSalt>(check),
        }
    })
}

/// Whether libxcrypt hashes with `setting` (a stored hash): its scheme is
/// known and enabled. `false` when libcrypt cannot be loaded.
pub fn knows(setting: &str) -> bool {
    let Some(lib) = lib() else { return false };
    let Ok(c) = std::ffi::CString::new(setting) else {
        return false;
    };
    // SAFETY: a NUL-terminated string; crypt_checksalt only reads it.
    let rc = unsafe { (lib.checksalt)(c.as_ptr()) };
    matches!(rc, SALT_OK | SALT_LEGACY | SALT_TOO_CHEAP)
}

thread_local! {
    /// This thread's `struct crypt_data`, zeroed after every use.
    static DATA: RefCell<Vec<u8>> = RefCell::new(vec![0u8; CRYPT_DATA]);
}

/// Whether crypt(3) of `password` with `stored` as setting gives `stored`:
/// the whole hash is computed, the result compared in constant time, and
/// the password's copy and the work area are wiped afterwards.
pub fn verify(password: &[u8], stored: &str) -> bool {
    let Some(lib) = lib() else { return false };
    // crypt(3) takes C strings: a NUL cannot be in either (Basic refuses a
    // NUL in the password before this).
    if password.contains(&0) || stored.as_bytes().contains(&0) {
        return false;
    }
    let mut phrase = Vec::with_capacity(password.len() + 1);
    phrase.extend_from_slice(password);
    phrase.push(0);
    let mut setting = Vec::with_capacity(stored.len() + 1);
    setting.extend_from_slice(stored.as_bytes());
    setting.push(0);
    let ok = DATA.with(|d| {
        let mut data = d.borrow_mut();
        let size = c_int::try_from(data.len()).unwrap_or(c_int::MAX);
        // SAFETY: NUL-terminated phrase and setting; `data` is `size`
        // writable bytes that crypt_rn uses as its struct crypt_data and
        // returns a pointer into (or NULL); we read the result before
        // touching `data` again.
        let out = unsafe {
            (lib.crypt_rn)(
                phrase.as_ptr().cast(),
                setting.as_ptr().cast(),
                data.as_mut_ptr().cast(),
                size,
            )
        };
        let ok = !out.is_null() && {
            // SAFETY: crypt_rn's result is a NUL-terminated string in `data`.
            let got = unsafe { CStr::from_ptr(out) }.to_bytes();
            // A failure is "*0"/"*1" (never a hash); lengths are public.
            !got.starts_with(b"*") && super::super::ct_eq(got, stored.as_bytes())
        };
        wipe(&mut data);
        ok
    });
    wipe(&mut phrase);
    ok
}

/// Zeroes `b` so that the compiler cannot drop the writes as dead.
fn wipe(b: &mut [u8]) {
    for x in b.iter_mut() {
        // SAFETY: a valid, aligned `u8` of the slice.
        unsafe { std::ptr::write_volatile(x, 0) };
    }
}
