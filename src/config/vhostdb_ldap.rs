//! `vhostdb.ldap = ( "host" => ..., "base-dn" => ..., "filter" => ...,
//! "attr" => ..., "bind-dn" => ..., "bind-pw" => ..., "ca-file" => ...,
//! "starttls" => ..., "timeout" => ... )`, read as lighttpd 1.4.69's
//! mod_vhostdb_ldap reads it: keys without regard to case, the last one
//! given wins, every value a string.

use std::time::Duration;

use super::value::Value;
use crate::ldap::{self, LdapUrl};

/// lighttpd's default `timeout`: 2 s (in microseconds).
pub const DEFAULT_TIMEOUT_US: u64 = 2_000_000;

/// One scope's LDAP search for document roots.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LdapQuery {
    /// `host`: the servers, tried in turn.
    pub urls: Vec<LdapUrl>,
    /// `base-dn`.
    pub base_dn: String,
    /// `filter`: each `?` is the host, escaped (RFC 4515).
    pub filter: String,
    /// `attr` (default `documentRoot`): the attribute holding the root.
    pub attr: String,
    /// `bind-dn` and `bind-pw` (anonymous without a DN).
    pub bind_dn: Option<String>,
    pub bind_pw: Option<String>,
    /// `ca-file`: the CAs trusted for StartTLS and `ldaps://` (else the
    /// system's bundle).
    pub ca_file: Option<String>,
    pub starttls: bool,
    /// `timeout`: each connect, read and write at most this long.
    pub timeout: Duration,
}

/// `vhostdb.ldap`'s table: None (no lookup, as lighttpd) without a
/// non-blank `filter`, a `host` and a non-blank `base-dn`; a refusal for
/// a filter without `?`, a value that is not a string, or servers glint
/// cannot name.
pub fn ldap(t: &[(&str, &Value)]) -> Result<Option<LdapQuery>, String> {
    let mut q = LdapQuery {
        urls: Vec::new(),
        base_dn: String::new(),
        filter: String::new(),
        attr: "documentRoot".into(),
        bind_dn: None,
        bind_pw: None,
        ca_file: None,
        starttls: false,
        timeout: Duration::from_micros(DEFAULT_TIMEOUT_US),
    };
    let (mut host, mut base_dn, mut filter) = (None, None, None);
    for (k, v) in t {
        let Value::Str(s) = v else {
            return Err(format!(
                "vhostdb.ldap: \"{k}\" expects a string, not {}",
                v.type_name()
            ));
        };
        let blank = s.trim().is_empty();
        match k.to_ascii_lowercase().as_str() {
            "filter" => filter = Some(s.clone()),
            "attr" if !blank => q.attr = s.clone(),
            "host" => host = Some(s.clone()),
            "base-dn" if !blank => base_dn = Some(s.clone()),
            "bind-dn" if !blank => q.bind_dn = Some(s.clone()),
            "bind-pw" => q.bind_pw = Some(s.clone()),
            "ca-file" if !blank => q.ca_file = Some(s.clone()),
            "starttls" => q.starttls = tobool(s),
            "timeout" => q.timeout = timeout(s),
            _ => {}
        }
    }
    let (Some(filter), Some(host), Some(base_dn)) = (filter, host, base_dn) else {
        return Ok(None);
    };
    if filter.trim().is_empty() {
        return Ok(None);
    }
    if !filter.contains('?') {
        return Err("vhostdb.ldap: filter is missing a replace-operator '?'".into());
    }
    if host.trim().is_empty() {
        return Err("vhostdb.ldap: \"host\" names no server".into());
    }
    q.urls = ldap::parse_urls(&host).map_err(|e| format!("vhostdb.ldap: host {e}"))?;
    q.filter = filter;
    q.base_dn = base_dn;
    Ok(Some(q))
}

/// lighttpd's `config_plugin_value_tobool` on a string (its default 1 for
/// a word it does not know).
fn tobool(s: &str) -> bool {
    let s = s.to_ascii_lowercase();
    !matches!(s.as_str(), "disable" | "disabled" | "false" | "0")
}

/// Microseconds as C's `strtol` reads them (leading digits); 0 (which
/// libldap would take as no limit) is the default instead.
fn timeout(s: &str) -> Duration {
    let digits: String = s
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let us = digits.parse().unwrap_or(0);
    Duration::from_micros(if us == 0 { DEFAULT_TIMEOUT_US } else { us })
}

/// The search filter for `host`: `template` with each `?` replaced by
/// the host, escaped so that it is one literal value whatever it holds.
pub fn host_filter(template: &str, host: &str) -> String {
    let mut out = String::with_capacity(template.len() + host.len());
    let mut parts = template.split('?');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for p in parts {
        ldap::filter::escape_value(&mut out, host);
        out.push_str(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(kv: &[(&str, &str)]) -> Vec<(String, Value)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), Value::Str(v.to_string())))
            .collect()
    }

    fn parse(kv: &[(&str, &str)]) -> Result<Option<LdapQuery>, String> {
        let t = table(kv);
        let t: Vec<(&str, &Value)> = t.iter().map(|(k, v)| (k.as_str(), v)).collect();
        ldap(&t)
    }

    #[test]
    fn options_as_lighttpd_reads_them() {
        let q = parse(&[
            ("Host", "127.0.0.1:3890 ldaps://h2"),
            ("base-dn", "dc=x"),
            ("filter", "(cn=?)"),
            ("attr", ""),
            ("starttls", "enable"),
            ("timeout", "500000us"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(q.attr, "documentRoot");
        assert_eq!((q.urls[0].port, q.urls[1].tls), (3890, true));
        assert!(q.starttls);
        assert_eq!(q.timeout, Duration::from_millis(500));
        // Missing base-dn or filter: no lookup.
        assert_eq!(parse(&[("host", "h"), ("filter", "(cn=?)")]), Ok(None));
        assert_eq!(
            parse(&[("host", "h"), ("filter", " "), ("base-dn", "x")]),
            Ok(None)
        );
        assert!(parse(&[("host", "h"), ("filter", "(cn=x)"), ("base-dn", "x")]).is_err());
        assert!(parse(&[
            ("host", "ldapi://x"),
            ("filter", "(cn=?)"),
            ("base-dn", "x")
        ])
        .is_err());
        assert!(parse(&[("host", ""), ("filter", "(cn=?)"), ("base-dn", "x")]).is_err());
    }

    #[test]
    fn the_host_is_one_literal_value() {
        assert_eq!(
            host_filter("(&(cn=?)(o=?))", "a*)(cn=b\\"),
            "(&(cn=a\\2a\\29\\28cn=b\\5c)(o=a\\2a\\29\\28cn=b\\5c))"
        );
    }
}
