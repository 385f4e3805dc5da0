//! mod_authn_ldap's check, as lighttpd 1.4.69 makes it: find the user's
//! DN with `auth.backend.ldap.filter` (the user name escaped into it at
//! each `?`; `$` is the same), searching under `base-dn` bound as
//! `bind-dn` (or anonymously); bind as that DN with the password; then
//! the rule: `valid-user` or a `user=` lets in. A filter that starts with
//! `,` names the DN itself: `uid=<user, DN-escaped>` and the filter.
//!
//! `group=` rules: lighttpd 1.4.69 means to search each group's DN for
//! `(groupmember=<user DN or name>)`, but searches an empty base instead
//! (the directory answers "no such object"), so a group never lets anyone
//! in. glint does the same (and says so in the log line); the
//! `groupmember` option is accepted and has no effect.

use std::sync::Arc;
use std::time::Duration;

use crate::ldap::{self, filter, Connection, LdapError, LdapUrl};

use super::ask::{Ask, Verdict};

/// `auth.backend.ldap.*` as written in one scope (compiled into an
/// [`LdapSpec`] when first used).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LdapOptions {
    pub hostname: Option<String>,
    pub base_dn: Option<String>,
    pub filter: Option<String>,
    pub ca_file: Option<String>,
    pub starttls: bool,
    pub bind_dn: Option<String>,
    pub bind_pw: Option<String>,
    pub allow_empty_pw: bool,
    pub groupmember: Option<String>,
    /// Microseconds, as lighttpd reads it (`strtol`).
    pub timeout: Option<String>,
}

/// lighttpd's default `auth.backend.ldap.timeout`: 2 s ("not infinite").
pub const DEFAULT_TIMEOUT_US: u64 = 2_000_000;

/// Checks one option when the configuration is read, as lighttpd refuses
/// to start: a filter (not a DN) without `?` or `$`, a hostname glint
/// cannot reach.
pub fn check_option(key: &str, value: &str) -> Result<(), String> {
    match key {
        "auth.backend.ldap.filter"
            if !value.is_empty() && !value.starts_with(',') && !value.contains(['?', '$']) =>
        {
            Err(format!("ldap: {key} is missing a replace-operator '?'"))
        }
        "auth.backend.ldap.hostname" if !value.trim().is_empty() => {
            ldap::parse_urls(value).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// The timeout in microseconds, as C's `strtol` reads it: leading digits,
/// anything else 0 (lighttpd passes 0 on to libldap, which then waits
/// without end; glint takes 0 as the default instead).
fn timeout_of(o: &LdapOptions) -> Duration {
    let us = o.timeout.as_deref().map_or(DEFAULT_TIMEOUT_US, |t| {
        let digits: String = t.trim().chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or(0)
    });
    Duration::from_micros(if us == 0 { DEFAULT_TIMEOUT_US } else { us })
}

/// Compiles `o`: the servers, the filter with `$` as `?`, and (for
/// StartTLS or `ldaps://`) the TLS configuration from `ca-file`.
pub fn compile(
    o: &LdapOptions,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<LdapSpec, String> {
    let host = o
        .hostname
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .ok_or("auth.backend.ldap.hostname is not set")?;
    let urls = ldap::parse_urls(host)?;
    let tls = if o.starttls || urls.iter().any(|u| u.tls) {
        Some(ldap::tls_config(o.ca_file.as_deref(), provider)?)
    } else {
        None
    };
    let filter = o.filter.as_deref().filter(|f| !f.is_empty()).map(|f| {
        if f.starts_with(',') {
            f.to_string()
        } else {
            f.replace('$', "?")
        }
    });
    Ok(LdapSpec {
        urls,
        base_dn: o.base_dn.clone().unwrap_or_default(),
        filter,
        opts: ldap::Options {
            timeout: timeout_of(o),
            starttls: o.starttls,
            tls,
        },
        bind_dn: o.bind_dn.clone().filter(|d| !d.is_empty()),
        bind_pw: o.bind_pw.clone().unwrap_or_default(),
        allow_empty_pw: o.allow_empty_pw,
        groupmember: o
            .groupmember
            .clone()
            .filter(|g| !g.is_empty())
            .unwrap_or_else(|| "memberUid".into()),
    })
}

/// One scope's `auth.backend.ldap.*`, compiled.
pub struct LdapSpec {
    pub urls: Vec<LdapUrl>,
    /// `base-dn`.
    pub base_dn: String,
    /// `filter`, with `$` turned into `?` (as lighttpd does at start-up).
    pub filter: Option<String>,
    pub opts: ldap::Options,
    /// `bind-dn` and `bind-pw`, for the searches (anonymous without).
    pub bind_dn: Option<String>,
    pub bind_pw: String,
    /// `allow-empty-pw` (default disable): an empty password is refused
    /// before any bind, since most servers take an empty simple bind as
    /// an anonymous one that always succeeds (RFC 4513 5.1.2).
    pub allow_empty_pw: bool,
    /// `groupmember` (default `memberUid`): accepted; see the module doc.
    pub groupmember: String,
}

impl std::fmt::Debug for LdapSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LdapSpec")
            .field("urls", &self.urls)
            .field("base_dn", &self.base_dn)
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

/// The search filter for `user`: `template` with each `?` replaced by the
/// user name, escaped so that it is one literal value whatever it holds.
pub fn user_filter(template: &str, user: &str) -> String {
    let mut out = String::with_capacity(template.len() + user.len());
    let mut parts = template.split('?');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for p in parts {
        filter::escape_value(&mut out, user);
        out.push_str(p);
    }
    out
}

/// Checks `ask` against the directory; see the module doc.
pub fn verify(s: &LdapSpec, ask: &Ask) -> Verdict {
    if ask.password.is_empty() && !s.allow_empty_pw {
        return Verdict::Denied("ldap: empty password".into());
    }
    let Some(template) = s.filter.as_deref() else {
        return Verdict::Denied("ldap: auth.backend.ldap.filter is not set".into());
    };
    let dn = if template.starts_with(',') {
        let mut dn = String::from("uid=");
        filter::escape_dn_value(&mut dn, &ask.user);
        dn.push_str(template);
        dn
    } else {
        match find_dn(s, &user_filter(template, &ask.user)) {
            Ok(dn) => dn,
            Err(why) => return Verdict::Denied(why),
        }
    };
    let bound = open(s).and_then(|mut c| {
        let r = c.bind(&dn, &ask.password);
        c.unbind();
        r
    });
    match bound {
        Ok(()) => {}
        Err(LdapError::Result(r)) if r.code == ldap::INVALID_CREDENTIALS => {
            return Verdict::Denied("ldap: invalid credentials".into())
        }
        Err(e) => return Verdict::Denied(format!("ldap: bind as {dn}: {e}")),
    }
    if ask.rule.valid_user || ask.rule.users.contains(&ask.user) {
        return Verdict::Granted;
    }
    if ask.rule.groups.is_empty() {
        return Verdict::Denied("not allowed by auth.require".into());
    }
    // lighttpd 1.4.69 searches each group with an empty base DN (it takes
    // the key of its `group` list, which is empty, for the value), so no
    // group ever holds the user there; glint lets in no more than that.
    Verdict::Denied(
        "group= is not checked against the directory (as lighttpd 1.4.69, whose group search never matches)"
            .into(),
    )
}

/// A connection to the first server that answers, bound for searching.
fn open(s: &LdapSpec) -> Result<Connection, LdapError> {
    let mut last = LdapError::Io("no server".into());
    for url in &s.urls {
        match Connection::open(url, &s.opts) {
            Ok(c) => return Ok(c),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn open_bound(s: &LdapSpec) -> Result<Connection, LdapError> {
    let mut c = open(s)?;
    c.bind(s.bind_dn.as_deref().unwrap_or(""), s.bind_pw.as_bytes())?;
    Ok(c)
}

fn time_limit(s: &LdapSpec) -> i64 {
    s.opts.timeout.as_secs().max(1) as i64
}

/// The one DN `filter_text` finds under `base-dn`; zero or several are a refusal.
fn find_dn(s: &LdapSpec, filter_text: &str) -> Result<String, String> {
    let f = filter::encode(filter_text).map_err(|e| format!("ldap: {e}"))?;
    let mut c = open_bound(s).map_err(|e| format!("ldap: {e}"))?;
    // Two at most: one more than a login can use tells "ambiguous" apart.
    let found = c.search(&s.base_dn, &f, 2, time_limit(s));
    c.unbind();
    match found {
        Ok(dns) if dns.len() == 1 => Ok(dns.into_iter().next().unwrap_or_default()),
        Ok(dns) if dns.is_empty() => Err(format!("ldap: no entry for filter {filter_text}")),
        // Size limit exceeded (4), or two entries: lighttpd logs and takes
        // the first; glint refuses, since a filter that finds two users
        // is not safe to log in with.
        Ok(_) | Err(LdapError::Result(ldap::LdapResult { code: 4, .. })) => Err(format!(
            "ldap: more than one record returned, you might have to refine the filter: {filter_text}"
        )),
        Err(e) => Err(format!("ldap: {e}; filter: {filter_text}")),
    }
}
