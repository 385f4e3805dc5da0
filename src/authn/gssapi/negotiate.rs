//! `"method" => "gssapi"`: SPNEGO (RFC 4559) as lighttpd 1.4.69's
//! mod_authn_gssapi checks it, on a worker thread: the service principal
//! ([`super::service_principal`], with the rule's realm) imported as a
//! Kerberos name, its acceptor credentials from the keytab
//! (`auth.backend.gssapi.keytab`, else the default keytab), one
//! `gss_accept_sec_context` over the client's token, the client's name as
//! `gss_display_name` gives it (`user@REALM`) checked against the rule,
//! and with `store-creds` the delegated credentials written to a cache.
//!
//! As lighttpd, no output token goes back (no mutual authentication
//! header), a context that would need another round is refused, and with
//! `store-creds` (its default) a client that delegates nothing is refused.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::ccache::{self, CcacheFile};
use super::ffi::{
    gss_error, gss_message, krb_message, GssBuffer, GssCred, GssCtx, GssName, GssOid, KeyValue,
    KeyValueSet, KrbCtx, KrbPrincipal, Lib, OmUint32, GSS_C_ACCEPT, GSS_C_CONF_FLAG,
    GSS_C_DELEG_FLAG, GSS_C_INDEFINITE, GSS_S_CONTINUE_NEEDED, KRB5_NT_PRINCIPAL_NAME,
};
use super::{negotiate_refused, service_principal, GssOptions};
use crate::authn::ask::{Ask, Verdict};
use crate::authn::{AuthType, Grant, Outcome};

/// The GSS-API objects of one check, released when it ends.
struct Handles<'l> {
    lib: &'l Lib,
    server_name: GssName,
    client_name: GssName,
    server_cred: GssCred,
    client_cred: GssCred,
    ctx: GssCtx,
}

impl Drop for Handles<'_> {
    fn drop(&mut self) {
        let g = &self.lib.gss;
        let mut min = 0;
        // SAFETY: each handle is NULL or the library's, released once.
        unsafe {
            if !self.ctx.is_null() {
                (g.gss_delete_sec_context)(&mut min, &mut self.ctx, std::ptr::null_mut());
            }
            for c in [&mut self.client_cred, &mut self.server_cred] {
                if !c.is_null() {
                    (g.gss_release_cred)(&mut min, c);
                }
            }
            for n in [&mut self.client_name, &mut self.server_name] {
                if !n.is_null() {
                    (g.gss_release_name)(&mut min, n);
                }
            }
        }
    }
}

/// A failed GSS-API call's log line.
fn failed(lib: &Lib, call: &str, extra: &str, major: OmUint32, minor: OmUint32) -> String {
    format!("{call}({extra}): {}", gss_message(lib, major, minor))
}

/// `gss_display_name` of `name`.
fn display(lib: &Lib, name: GssName) -> Result<String, String> {
    let (mut min, mut buf) = (0, GssBuffer::empty());
    // SAFETY: name is live; the buffer is released below.
    let maj = unsafe { (lib.gss.gss_display_name)(&mut min, name, &mut buf, std::ptr::null_mut()) };
    if gss_error(maj) {
        return Err(failed(lib, "gss_display_name", "", maj, min));
    }
    let s = String::from_utf8(buf.bytes().to_vec());
    // SAFETY: the library's buffer, released once.
    unsafe { (lib.gss.gss_release_buffer)(&mut min, &mut buf) };
    s.map_err(|e| format!("a client name that is not UTF-8: {:?}", e.as_bytes()))
}

/// The acceptor's credentials for `h.server_name`: from `keytab` when
/// set (MIT's credential store, per call), else the default keytab.
fn acquire(h: &mut Handles<'_>, keytab: Option<&str>, sprinc: &str) -> Result<(), String> {
    let lib = h.lib;
    let mut min = 0;
    let maj = match keytab {
        Some(k) => {
            let (key, value) = (c"keytab", CString::new(k).map_err(|_| "NUL in keytab")?);
            let kv = [KeyValue {
                key: key.as_ptr(),
                value: value.as_ptr(),
            }];
            let store = KeyValueSet {
                count: 1,
                elements: kv.as_ptr(),
            };
            // SAFETY: the store and its strings outlive the call.
            unsafe {
                (lib.gss.gss_acquire_cred_from)(
                    &mut min,
                    h.server_name,
                    GSS_C_INDEFINITE,
                    std::ptr::null(),
                    GSS_C_ACCEPT,
                    &store,
                    &mut h.server_cred,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            }
        }
        // SAFETY: out-parameters owned by `h`.
        None => unsafe {
            (lib.gss.gss_acquire_cred)(
                &mut min,
                h.server_name,
                GSS_C_INDEFINITE,
                std::ptr::null(),
                GSS_C_ACCEPT,
                &mut h.server_cred,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
    };
    if gss_error(maj) {
        return Err(failed(lib, "gss_acquire_cred", sprinc, maj, min));
    }
    Ok(())
}

/// Accepts `token`: the client's name and the context's flags.
fn accept(h: &mut Handles<'_>, token: &[u8]) -> Result<(String, OmUint32), String> {
    let lib = h.lib;
    let input = GssBuffer {
        length: token.len(),
        value: token.as_ptr() as *mut c_void,
    };
    let (mut min, mut flags) = (0, 0);
    let mut out = GssBuffer::empty();
    // SAFETY: the input outlives the call (the library does not keep it);
    // every out-parameter is owned by `h` or released below.
    let maj = unsafe {
        (lib.gss.gss_accept_sec_context)(
            &mut min,
            &mut h.ctx,
            h.server_cred,
            &input,
            std::ptr::null(),
            &mut h.client_name,
            std::ptr::null_mut(),
            &mut out,
            &mut flags,
            std::ptr::null_mut(),
            &mut h.client_cred,
        )
    };
    if !out.value.is_null() {
        let mut m2 = 0;
        // SAFETY: the library's buffer, released once.
        unsafe { (lib.gss.gss_release_buffer)(&mut m2, &mut out) };
    }
    if gss_error(maj) {
        return Err(failed(lib, "gss_accept_sec_context", "", maj, min));
    }
    // A context that needs another round is refused (lighttpd finds no
    // client name in it, which is the same here, but glint does not rely
    // on the mechanism leaving the name unset).
    if maj & GSS_S_CONTINUE_NEEDED != 0 || h.client_name.is_null() {
        return Err("gss_accept_sec_context: the context is not complete".into());
    }
    Ok((display(lib, h.client_name)?, flags))
}

/// Checks a decoded Negotiate token for `ask`'s rule, realm and Host. A
/// refusal is lighttpd's 401 with `WWW-Authenticate: Negotiate`, a
/// credentials cache that cannot be written its 500.
pub fn verify(lib: &Lib, o: &GssOptions, ask: &Ask, token: &[u8]) -> Verdict {
    let sprinc = service_principal(o.principal.as_deref(), &ask.host, Some(&ask.realm));
    let mut h = Handles {
        lib,
        server_name: std::ptr::null_mut(),
        client_name: std::ptr::null_mut(),
        server_cred: std::ptr::null_mut(),
        client_cred: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    };
    let name = GssBuffer {
        length: sprinc.len(),
        value: sprinc.as_ptr() as *mut c_void,
    };
    let oid = GssOid {
        length: KRB5_NT_PRINCIPAL_NAME.len() as OmUint32,
        elements: KRB5_NT_PRINCIPAL_NAME.as_ptr() as *const c_void,
    };
    let mut min = 0;
    // SAFETY: the name and OID outlive the call; the result is `h`'s.
    let maj = unsafe { (lib.gss.gss_import_name)(&mut min, &name, &oid, &mut h.server_name) };
    if gss_error(maj) {
        return negotiate_refused(failed(lib, "gss_import_name", "", maj, min));
    }
    if let Err(e) = acquire(&mut h, o.keytab.as_deref(), &sprinc) {
        return negotiate_refused(e);
    }
    let (user, flags) = match accept(&mut h, token) {
        Ok(v) => v,
        Err(e) => return negotiate_refused(e),
    };
    // A name glint could not pass on whole (REMOTE_USER, log lines): a
    // foreign realm's principal may hold any byte.
    if user.chars().any(char::is_control) {
        return negotiate_refused(format!("a client name with control characters: {user:?}"));
    }
    if !(ask.rule.valid_user || ask.rule.users.contains(&user)) {
        return negotiate_refused(format!("{user} is not allowed by auth.require"));
    }
    let mut ccache = None;
    if o.store_creds {
        if flags & GSS_C_CONF_FLAG == 0 {
            log::warn!("(mod_authn_gssapi) No confidentiality for user: {user}");
        }
        if flags & GSS_C_DELEG_FLAG == 0 {
            return negotiate_refused(format!("Unable to delegate credentials for user: {user}"));
        }
        match store(lib, &user, h.client_cred) {
            Ok(f) => ccache = Some(Arc::new(f)),
            Err(e) => {
                return Verdict::Answer(
                    Outcome::Misconfigured {
                        log: format!("(mod_authn_gssapi) {e}"),
                    },
                    None,
                )
            }
        }
    }
    Verdict::Answer(
        Outcome::Granted(Grant {
            user,
            auth_type: Some(AuthType::Gssapi),
            authentication_info: None,
        }),
        ccache,
    )
}

/// The delegated credentials of `user` into a new cache file.
fn store(lib: &Lib, user: &str, cred: GssCred) -> Result<CcacheFile, String> {
    let mut ctx: KrbCtx = std::ptr::null_mut();
    // SAFETY: an out-parameter; freed below.
    let rc = unsafe { (lib.krb.krb5_init_context)(&mut ctx) };
    if rc != 0 {
        return Err(format!("krb5_init_context: {}", krb_message(lib, ctx, rc)));
    }
    let r = store_in(lib, ctx, user, cred);
    // SAFETY: the context made above, freed once.
    unsafe { (lib.krb.krb5_free_context)(ctx) };
    r
}

fn store_in(lib: &Lib, ctx: KrbCtx, user: &str, cred: GssCred) -> Result<CcacheFile, String> {
    let name = CString::new(user).map_err(|_| "NUL in the client's name")?;
    let mut princ: KrbPrincipal = std::ptr::null_mut();
    // SAFETY: ctx is live; princ is freed below.
    let rc = unsafe { (lib.krb.krb5_parse_name)(ctx, name.as_ptr(), &mut princ) };
    if rc != 0 {
        return Err(format!("krb5_parse_name: {}", krb_message(lib, ctx, rc)));
    }
    let made = ccache::create(lib, ctx, princ);
    // SAFETY: the principal parsed above, freed once.
    unsafe { (lib.krb.krb5_free_principal)(ctx, princ) };
    let (file, cc) = made?;
    let mut min = 0;
    // SAFETY: cred is the accepted context's delegated credential, cc open.
    let maj = unsafe { (lib.gss.gss_krb5_copy_ccache)(&mut min, cred, cc) };
    if gss_error(maj) {
        // SAFETY: cc is destroyed once; the file goes with `file`.
        unsafe { (lib.krb.krb5_cc_destroy)(ctx, cc) };
        return Err(failed(lib, "gss_krb5_copy_ccache", user, maj, min));
    }
    // SAFETY: cc is closed once.
    unsafe { (lib.krb.krb5_cc_close)(ctx, cc) };
    Ok(file)
}
