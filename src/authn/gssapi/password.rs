//! `"method" => "basic"` over `auth.backend = "gssapi"`, as lighttpd
//! 1.4.69's mod_authn_gssapi checks it, on a worker thread: the user's
//! principal (`user@` the rule's realm unless the name has an `@`) asks
//! the KDC for a ticket with the password (`krb5_get_init_creds_password`),
//! and that ticket is verified against the service principal's key in
//! `auth.backend.gssapi.keytab` (`krb5_verify_init_creds`, failing when
//! the keytab has no key for it), so a KDC that is not the realm's cannot
//! vouch for a password. Then the rule, with the user name as sent; with
//! `store-creds` the ticket goes into a cache file for the back ends.
//!
//! Every refusal is lighttpd's: 401 with `WWW-Authenticate: Basic
//! realm="Kerberos"`, the connection kept.

use std::ffi::CString;
use std::sync::Arc;

use super::ccache::{self, CcacheFile};
use super::ffi::{
    krb_message, KrbCcache, KrbCreds, KrbCtx, KrbKeytab, KrbPrincipal, Lib, VerifyOpt,
    VERIFY_OPT_AP_REQ_NOFAIL,
};
use super::{basic_refused, service_principal, GssOptions};
use crate::authn::ask::{Ask, Verdict};
use crate::authn::{AuthType, Grant, Outcome};

/// A krb5 context and what one check makes in it, freed when it ends.
struct Krb<'l> {
    lib: &'l Lib,
    ctx: KrbCtx,
    keytab: KrbKeytab,
    server: KrbPrincipal,
    client: KrbPrincipal,
    /// Whether `creds` holds what `krb5_get_init_creds_password` filled.
    have_creds: bool,
    creds: KrbCreds,
}

impl Drop for Krb<'_> {
    fn drop(&mut self) {
        let k = &self.lib.krb;
        // SAFETY: each object is NULL or made in ctx, freed once, ctx last.
        unsafe {
            if self.have_creds {
                (k.krb5_free_cred_contents)(self.ctx, &mut self.creds);
            }
            for p in [self.client, self.server] {
                if !p.is_null() {
                    (k.krb5_free_principal)(self.ctx, p);
                }
            }
            if !self.keytab.is_null() {
                (k.krb5_kt_close)(self.ctx, self.keytab);
            }
            (k.krb5_free_context)(self.ctx);
        }
    }
}

impl Krb<'_> {
    fn err(&self, call: &str, extra: &str, rc: i32) -> String {
        format!("{call} ({extra}): {}", krb_message(self.lib, self.ctx, rc))
    }

    fn parse(&self, name: &str) -> Result<KrbPrincipal, String> {
        let c = CString::new(name).map_err(|_| format!("krb5_parse_name ({name}): NUL"))?;
        let mut p: KrbPrincipal = std::ptr::null_mut();
        // SAFETY: ctx is live; p is freed by Drop once stored there.
        let rc = unsafe { (self.lib.krb.krb5_parse_name)(self.ctx, c.as_ptr(), &mut p) };
        if rc != 0 {
            return Err(self.err("krb5_parse_name", name, rc));
        }
        Ok(p)
    }
}

/// Checks `ask`'s Basic credentials with the KDC and the keytab.
pub fn verify(lib: &Lib, o: &GssOptions, ask: &Ask) -> Verdict {
    if ask.password.is_empty() {
        return basic_refused(ask, "Empty passwords are not accepted".into());
    }
    let Some(keytab) = o.keytab.as_deref() else {
        return basic_refused(ask, "auth.backend.gssapi.keytab not configured".into());
    };
    let mut ctx: KrbCtx = std::ptr::null_mut();
    // SAFETY: an out-parameter, freed by Krb's Drop.
    let rc = unsafe { (lib.krb.krb5_init_context)(&mut ctx) };
    if rc != 0 {
        return basic_refused(ask, format!("krb5_init_context(): {rc}"));
    }
    let mut k = Krb {
        lib,
        ctx,
        keytab: std::ptr::null_mut(),
        server: std::ptr::null_mut(),
        client: std::ptr::null_mut(),
        have_creds: false,
        // SAFETY: krb5_creds is plain data; all zero is its empty value
        // (lighttpd memsets it the same way).
        creds: unsafe { std::mem::zeroed() },
    };
    match check(&mut k, o, ask, keytab) {
        Ok(file) if ask.rule.valid_user || ask.rule.users.contains(&ask.user) => Verdict::Answer(
            Outcome::Granted(Grant {
                user: ask.user.clone(),
                auth_type: Some(AuthType::Basic),
                authentication_info: None,
            }),
            file.map(Arc::new),
        ),
        Ok(_) => basic_refused(ask, "not allowed by auth.require".into()),
        Err(e) => basic_refused(ask, e),
    }
}

/// The password and the ticket checked; the cache file with `store-creds`.
fn check(
    k: &mut Krb<'_>,
    o: &GssOptions,
    ask: &Ask,
    keytab: &str,
) -> Result<Option<CcacheFile>, String> {
    let lib = k.lib;
    let kt = CString::new(keytab).map_err(|_| "NUL in auth.backend.gssapi.keytab")?;
    // SAFETY: ctx is live; the keytab is closed by Drop.
    let rc = unsafe { (lib.krb.krb5_kt_resolve)(k.ctx, kt.as_ptr(), &mut k.keytab) };
    if rc != 0 {
        return Err(format!("krb5_kt_resolve(): {rc} {keytab}"));
    }
    k.server = k.parse(&service_principal(o.principal.as_deref(), &ask.host, None))?;
    let user = if ask.user.contains('@') {
        ask.user.clone()
    } else {
        format!("{}@{}", ask.user, ask.realm)
    };
    k.client = k.parse(&user)?;
    let pw = CString::new(ask.password.clone()).map_err(|_| "NUL in the password")?;
    // SAFETY: creds is zeroed and owned by k; no prompter, options or
    // service name (lighttpd passes none either).
    let rc = unsafe {
        (lib.krb.krb5_get_init_creds_password)(
            k.ctx,
            &mut k.creds,
            k.client,
            pw.as_ptr(),
            std::ptr::null(),
            std::ptr::null_mut(),
            0,
            std::ptr::null(),
            std::ptr::null_mut(),
        )
    };
    if rc != 0 {
        return Err(k.err("krb5_get_init_creds_password", &user, rc));
    }
    k.have_creds = true;
    let mut opt = VerifyOpt {
        flags: VERIFY_OPT_AP_REQ_NOFAIL,
        ap_req_nofail: 1,
    };
    // SAFETY: every object is live in ctx; no cache is asked for.
    let rc = unsafe {
        (lib.krb.krb5_verify_init_creds)(
            k.ctx,
            &mut k.creds,
            k.server,
            k.keytab,
            std::ptr::null_mut(),
            &mut opt,
        )
    };
    if rc != 0 {
        return Err(k.err("krb5_verify_init_creds", &user, rc));
    }
    if !o.store_creds {
        return Ok(None);
    }
    let (file, cc): (CcacheFile, KrbCcache) = ccache::create(lib, k.ctx, k.client)?;
    // SAFETY: cc is open; creds are the ticket obtained above.
    let rc = unsafe { (lib.krb.krb5_cc_store_cred)(k.ctx, cc, &mut k.creds) };
    // SAFETY: cc is closed (kept) or destroyed once.
    unsafe {
        if rc == 0 {
            (lib.krb.krb5_cc_close)(k.ctx, cc);
        } else {
            (lib.krb.krb5_cc_destroy)(k.ctx, cc);
        }
    }
    if rc != 0 {
        return Err(k.err("krb5_cc_store_cred", &user, rc));
    }
    Ok(Some(file))
}
