//! mod_authn_ldap's `auth.backend.ldap.*`, mod_authn_pam's
//! `auth.backend.pam.opts`, mod_authn_sasl's `auth.backend.sasl.opts`,
//! mod_authn_dbi's `auth.backend.dbi` and mod_authn_gssapi's
//! `auth.backend.gssapi.*`
//! into [`Settings`], and back for `-p`.

use super::values::{boolean, pairs, string};
use crate::authn::ldap_check::check_option;
use crate::config::settings::Settings;
use crate::config::value::Value;

/// Applies `key` when it is one of the external back ends' options.
pub(super) fn apply(s: &mut Settings, key: &str, v: &Value) -> Result<bool, String> {
    let o = &mut s.auth.ldap;
    let text = |v: &Value| -> Result<Option<String>, String> {
        let t = string(v)?;
        check_option(key, &t)?;
        Ok(Some(t))
    };
    match key {
        "auth.backend.ldap.hostname" => o.hostname = text(v)?,
        "auth.backend.ldap.base-dn" => o.base_dn = text(v)?,
        "auth.backend.ldap.filter" => o.filter = text(v)?,
        "auth.backend.ldap.ca-file" => o.ca_file = text(v)?,
        "auth.backend.ldap.starttls" => o.starttls = boolean(v)?,
        "auth.backend.ldap.bind-dn" => o.bind_dn = text(v)?,
        "auth.backend.ldap.bind-pw" => o.bind_pw = text(v)?,
        "auth.backend.ldap.allow-empty-pw" => o.allow_empty_pw = boolean(v)?,
        "auth.backend.ldap.groupmember" => o.groupmember = text(v)?,
        "auth.backend.ldap.timeout" => o.timeout = text(v)?,
        "auth.backend.pam.opts" => s.auth.pam_opts = Some(pairs(v)?),
        "auth.backend.sasl.opts" => {
            let p = pairs(v)?;
            crate::authn::sasl::parse_opts(&p)?;
            s.auth.sasl_opts = Some(p);
        }
        "auth.backend.gssapi.keytab" => {
            // lighttpd: a blank keytab is none.
            let k = string(v)?;
            s.auth.gssapi.keytab = (!k.is_empty()).then_some(k);
        }
        "auth.backend.gssapi.principal" => s.auth.gssapi.principal = Some(string(v)?),
        "auth.backend.gssapi.store-creds" => s.auth.gssapi.store_creds = boolean(v)?,
        "auth.backend.dbi" => {
            s.auth.dbi_spec = crate::config::dbi::parse(v)?.map(std::sync::Arc::new);
            s.auth.dbi = Some(v.clone());
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The options [`apply`] takes, as set in `s`.
pub(super) fn entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    let o = &s.auth.ldap;
    for (k, v) in [
        ("auth.backend.ldap.hostname", &o.hostname),
        ("auth.backend.ldap.base-dn", &o.base_dn),
        ("auth.backend.ldap.filter", &o.filter),
        ("auth.backend.ldap.ca-file", &o.ca_file),
        ("auth.backend.ldap.bind-dn", &o.bind_dn),
        ("auth.backend.ldap.bind-pw", &o.bind_pw),
        ("auth.backend.ldap.groupmember", &o.groupmember),
        ("auth.backend.ldap.timeout", &o.timeout),
    ] {
        if let Some(v) = v {
            put(k, Value::Str(v.clone()));
        }
    }
    for (k, b) in [
        ("auth.backend.ldap.starttls", o.starttls),
        ("auth.backend.ldap.allow-empty-pw", o.allow_empty_pw),
    ] {
        if b {
            put(k, Value::Str("enable".into()));
        }
    }
    for (k, o) in [
        ("auth.backend.pam.opts", &s.auth.pam_opts),
        ("auth.backend.sasl.opts", &s.auth.sasl_opts),
    ] {
        if let Some(p) = o {
            let items = p
                .iter()
                .map(|(k, v)| (Some(k.clone()), Value::Str(v.clone())))
                .collect();
            put(k, Value::Array(items));
        }
    }
    let g = &s.auth.gssapi;
    for (k, v) in [
        ("auth.backend.gssapi.keytab", &g.keytab),
        ("auth.backend.gssapi.principal", &g.principal),
    ] {
        if let Some(v) = v {
            put(k, Value::Str(v.clone()));
        }
    }
    if !g.store_creds {
        put(
            "auth.backend.gssapi.store-creds",
            Value::Str("disable".into()),
        );
    }
    if let Some(v) = &s.auth.dbi {
        put("auth.backend.dbi", v.clone());
    }
}
