//! The C libraries the authentication back ends open with dlopen(3) at
//! first use instead of linking them (libcrypt, libsasl2, libpam): opened
//! once, never closed, so the symbols found stay valid for the process.

use std::ffi::{c_void, CStr};

use nix::libc;

/// An open library (never closed).
#[derive(Clone, Copy)]
pub struct Lib(*mut c_void);

/// Opens `name` now (`RTLD_NOW`); `global` adds its symbols to the global
/// scope (`RTLD_GLOBAL`), as linking it would. None when it cannot be
/// loaded.
pub fn open(name: &CStr, global: bool) -> Option<Lib> {
    let scope = if global {
        libc::RTLD_GLOBAL
    } else {
        libc::RTLD_LOCAL
    };
    // SAFETY: dlopen with a NUL-terminated name; the handle is never closed.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | scope) };
    (!h.is_null()).then_some(Lib(h))
}

/// The global scope (`RTLD_DEFAULT`): the executable, what it links and
/// preloads (a wrapper of a library comes first), and libraries opened
/// with `global`.
pub const GLOBAL: Lib = Lib(libc::RTLD_DEFAULT);

impl Lib {
    /// The address of `name`; `Err("has no NAME")` when it has none.
    pub fn symbol(self, name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: an open handle (or RTLD_DEFAULT) and a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.0, name.as_ptr()) };
        (!p.is_null())
            .then_some(p)
            .ok_or_else(|| format!("has no {}", name.to_string_lossy()))
    }
}
