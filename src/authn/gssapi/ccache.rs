//! The credentials cache of a request (`auth.backend.gssapi.store-creds`):
//! a file `/tmp/krb5cc_gssapi_XXXXXX` made with mkostemp(3) (mode 0600),
//! named to the request's back ends in `KRB5CCNAME` (the path, without
//! `FILE:`) and the request header `X-Forwarded-Keytab`, as lighttpd names
//! it, and removed when the request is over (lighttpd's request reset):
//! the last holder dropping it unlinks the file, whether the request was
//! answered, failed, or its client went away while the check ran.

use std::ffi::{c_char, CString};

use nix::libc;

use super::ffi::{krb_message, KrbCcache, KrbCtx, KrbPrincipal, Lib};

/// A cache file kept alive by the request and whoever holds its answer.
pub type Ccache = std::sync::Arc<CcacheFile>;

/// A credentials cache file; dropping it removes the file.
#[derive(Debug, PartialEq, Eq)]
pub struct CcacheFile {
    path: String,
}

impl CcacheFile {
    /// The file's path: `KRB5CCNAME`'s value.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// A new empty file under /tmp.
    fn create() -> Result<CcacheFile, String> {
        let mut template = *b"/tmp/krb5cc_gssapi_XXXXXX\0";
        // SAFETY: a writable NUL-terminated template, filled in place.
        let fd = unsafe { libc::mkostemp(template.as_mut_ptr() as *mut c_char, libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "mkstemp(): /tmp/krb5cc_gssapi_XXXXXX: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: the descriptor mkostemp returned, closed once.
        unsafe { libc::close(fd) };
        let path = String::from_utf8_lossy(&template[..template.len() - 1]).into_owned();
        Ok(CcacheFile { path })
    }
}

impl Drop for CcacheFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A new cache file for `princ`, open as `FILE:` in `ctx`: the caller
/// fills it and closes the handle. On failure nothing is left behind.
pub(super) fn create(
    lib: &Lib,
    ctx: KrbCtx,
    princ: KrbPrincipal,
) -> Result<(CcacheFile, KrbCcache), String> {
    let file = CcacheFile::create()?;
    let Ok(name) = CString::new(format!("FILE:{}", file.path)) else {
        return Err("credentials cache name".into());
    };
    let mut cc: KrbCcache = std::ptr::null_mut();
    // SAFETY: ctx and princ are live; cc is an out-parameter.
    let rc = unsafe { (lib.krb.krb5_cc_resolve)(ctx, name.as_ptr(), &mut cc) };
    if rc != 0 {
        return Err(format!("krb5_cc_resolve: {}", krb_message(lib, ctx, rc)));
    }
    // SAFETY: cc was resolved above.
    let rc = unsafe { (lib.krb.krb5_cc_initialize)(ctx, cc, princ) };
    if rc != 0 {
        // SAFETY: cc is destroyed once, here.
        unsafe { (lib.krb.krb5_cc_destroy)(ctx, cc) };
        return Err(format!(
            "krb5_cc_initialize ({}): {}",
            name.to_string_lossy(),
            krb_message(lib, ctx, rc)
        ));
    }
    Ok((file, cc))
}
