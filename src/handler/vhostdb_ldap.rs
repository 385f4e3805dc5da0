//! mod_vhostdb's LDAP back end (`vhostdb.backend = "ldap"`): a host's
//! document root is the `attr` value of the first entry that `filter`
//! (the host escaped into it at each `?`) finds under `base-dn`. No entry
//! (or no value) is no such host; a failed search is 500, as lighttpd.
//!
//! It runs on mod_vhostdb's lookup threads (see [`super::vhostdb`]); each
//! keeps one bound connection per configuration, as lighttpd keeps its
//! LDAP handle, and opens a new one when that one fails.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::vhostdb_ldap::{host_filter, LdapQuery};
use crate::ldap::{self, filter, Connection, LdapError};

use super::vhostdb_root::{checked_root, Found};

/// One lookup thread's connections, by configuration.
#[derive(Default)]
pub struct LdapConns {
    conns: HashMap<Arc<LdapQuery>, Connection>,
}

type Entries = Vec<ldap::client::Entry>;

impl LdapConns {
    /// The document root of `host` under `q`. A search that fails on a
    /// kept connection is tried once on a new one (the server may have
    /// been restarted), unless it timed out: a server that does not
    /// answer is not waited for twice.
    pub fn lookup(&mut self, q: &Arc<LdapQuery>, host: &str) -> Found {
        let text = host_filter(&q.filter, host);
        let ber = match filter::encode(&text) {
            Ok(f) => f,
            Err(e) => {
                log::error!("ldap: {e}; filter: {text}");
                return Err(500);
            }
        };
        if let Some(mut c) = self.conns.remove(q) {
            match search(&mut c, q, &ber) {
                Ok(found) => {
                    self.conns.insert(Arc::clone(q), c);
                    return answer(q, found, &text);
                }
                Err(LdapError::Timeout) => {
                    log::error!("ldap: search timed out; filter: {text}");
                    return Err(500);
                }
                Err(e) => log::debug!("ldap: {e}; connecting again"),
            }
        }
        let mut c = match open_bound(q) {
            Ok(c) => c,
            Err(e) => {
                log::error!("ldap: {}: {e}", describe(q));
                return Err(500);
            }
        };
        match search(&mut c, q, &ber) {
            Ok(found) => {
                self.conns.insert(Arc::clone(q), c);
                answer(q, found, &text)
            }
            Err(e) => {
                log::error!("ldap: {e}; filter: {text}");
                Err(500)
            }
        }
    }
}

fn search(c: &mut Connection, q: &LdapQuery, ber: &[u8]) -> Result<Entries, LdapError> {
    let time_limit = q.timeout.as_secs().max(1) as i64;
    c.search_attr(&q.base_dn, ber, Some(&q.attr), 0, time_limit)
}

/// A connection to the first server that answers, bound as `bind-dn`
/// (or anonymously).
fn open_bound(q: &LdapQuery) -> Result<Connection, LdapError> {
    let tls = if q.starttls || q.urls.iter().any(|u| u.tls) {
        let provider = Arc::new(crate::tls::crypto_provider());
        Some(ldap::tls_config(q.ca_file.as_deref(), provider).map_err(LdapError::Tls)?)
    } else {
        None
    };
    let opts = ldap::Options {
        timeout: q.timeout,
        starttls: q.starttls,
        tls,
    };
    let mut last = LdapError::Io("no server".into());
    for url in &q.urls {
        match Connection::open(url, &opts) {
            Ok(mut c) => {
                let dn = q.bind_dn.as_deref().unwrap_or("");
                let pw = q.bind_pw.as_deref().unwrap_or("");
                c.bind(dn, pw.as_bytes())?;
                return Ok(c);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The first entry's value, as lighttpd takes it (several entries are
/// logged); none, or a blank one, is no such host.
fn answer(q: &LdapQuery, found: Entries, text: &str) -> Found {
    if found.len() > 1 {
        log::error!(
            "ldap: more than one record returned.  you might have to refine the filter: {text}"
        );
    }
    let Some((dn, value)) = found.into_iter().next() else {
        return Ok(None);
    };
    let Some(value) = value else {
        log::debug!("ldap: {dn} has no {}", q.attr);
        return Ok(None);
    };
    match String::from_utf8(value) {
        Ok(root) if root.is_empty() => Ok(None),
        Ok(root) => checked_root(root),
        Err(_) => {
            log::error!("ldap: {dn}: {} is not UTF-8", q.attr);
            Err(500)
        }
    }
}

fn describe(q: &LdapQuery) -> String {
    let urls: Vec<String> = q
        .urls
        .iter()
        .map(|u| {
            let scheme = if u.tls { "ldaps" } else { "ldap" };
            format!("{scheme}://{}:{}", u.host, u.port)
        })
        .collect();
    urls.join(" ")
}
