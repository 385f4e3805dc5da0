//! A small synchronous LDAPv3 client (RFC 4511): simple bind, subtree
//! search for DNs, StartTLS and `ldaps://` over rustls, unbind. What
//! mod_authn_ldap needs (and a vhostdb LDAP back end can use).
//!
//! Why glint's own: the maintained Rust LDAP client (ldap3) runs on tokio,
//! and glint has no async runtime; libldap through FFI would add a C
//! library and its build headers. The subset here is small: four
//! requests, their answers, and the BER they are written in
//! ([`ber`]). It blocks, so callers run it on a worker thread
//! (`authn::blocking`), never on the event loop; every socket step is
//! bounded by [`client::Options::timeout`].

pub mod ber;
pub mod client;
pub mod filter;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use client::{Connection, LdapResult, Options};

/// Why an LDAP operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LdapError {
    /// Connect, read or write failed (server down, connection refused or closed).
    Io(String),
    /// The server did not answer within the time-out.
    Timeout,
    /// TLS could not be set up (certificate refused, handshake failed).
    Tls(String),
    /// The server answered something that is not LDAP as glint reads it.
    Protocol(&'static str),
    /// The server's result code other than success (49: invalid credentials).
    Result(LdapResult),
}

impl std::fmt::Display for LdapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LdapError::Io(e) => write!(f, "{e}"),
            LdapError::Timeout => write!(f, "timed out"),
            LdapError::Tls(e) => write!(f, "TLS: {e}"),
            LdapError::Protocol(e) => write!(f, "protocol error: {e}"),
            LdapError::Result(r) => write!(f, "result code {} ({})", r.code, r.message),
        }
    }
}

/// The invalid-credentials result code (RFC 4511 A.1).
pub const INVALID_CREDENTIALS: i64 = 49;

/// One server: `ldap://host:port` or `ldaps://host:port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LdapUrl {
    pub tls: bool,
    pub host: String,
    pub port: u16,
}

/// `auth.backend.ldap.hostname`: one or more servers, separated by
/// spaces, each `host`, `host:port`, `ldap://host[:port][/]` or
/// `ldaps://host[:port][/]` (as libldap's `ldap_initialize` takes them).
/// `ldapi://` (a unix socket) is refused.
pub fn parse_urls(s: &str) -> Result<Vec<LdapUrl>, String> {
    let mut urls = Vec::new();
    for word in s.split([' ', ',']).filter(|w| !w.is_empty()) {
        let (tls, rest) = if let Some(r) = word.strip_prefix("ldaps://") {
            (true, r)
        } else if let Some(r) = word.strip_prefix("ldap://") {
            (false, r)
        } else if word.contains("://") {
            return Err(format!("{word:?}: only ldap:// and ldaps:// are supported"));
        } else {
            (false, word)
        };
        let hostport = rest.split('/').next().unwrap_or("");
        let (host, port) =
            split_host_port(hostport).ok_or_else(|| format!("{word:?}: bad host or port"))?;
        let host = if host.is_empty() { "localhost" } else { host };
        urls.push(LdapUrl {
            tls,
            host: host.to_string(),
            port: port.unwrap_or(if tls { 636 } else { 389 }),
        });
    }
    if urls.is_empty() {
        return Err("no LDAP server named".into());
    }
    Ok(urls)
}

fn split_host_port(s: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) => Some((h, Some(p.parse().ok()?))),
            None if after.is_empty() => Some((h, None)),
            None => None,
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Some((h, Some(p.parse().ok()?))),
        None => Some((s, None)),
    }
}

/// A TLS client configuration trusting the PEM certificates of `ca_file`,
/// or the system's bundle (`/etc/ssl/certs/ca-certificates.crt`, what
/// libldap uses on Debian) when none is named.
pub fn tls_config(
    ca_file: Option<&str>,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let path = ca_file.unwrap_or("/etc/ssl/certs/ca-certificates.crt");
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| format!("{path}: {e}"))?;
    for c in certs {
        let c = c.map_err(|e| format!("{path}: {e}"))?;
        roots.add(c).map_err(|e| format!("{path}: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("{path}: no certificate"));
    }
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}
