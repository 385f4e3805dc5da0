//! One TLS socket's loaded configuration: a rustls `ServerConfig` per
//! scope (the socket's and each `$HTTP["host"]` block's, since a host may
//! ask for client certificates), the certificate resolver that serves SNI,
//! wildcards and ACME challenges, OCSP staples and their refresh, reload
//! and the `-tt` check.
//!
//! Choosing the scope: during the handshake the SNI name stands in for the
//! Host header, as in lighttpd. The last `$HTTP["host"]` block matching it
//! wins (later conditions override earlier ones in lighttpd); with none,
//! the socket's scope serves, and its certificate unless that does not
//! cover the name and a host block's certificate does (its subjectAltName
//! lists the name, or a wildcard `*.example.com` covering exactly one label).

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{
    ClientHello, NoServerSessionStorage, ResolvesServerCert, ServerSessionMemoryCache,
};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, SupportedProtocolVersion};

use super::load;
use super::options::{HostMatch, ScopeSpec, TlsSpec, VerifySpec};
use super::slot::CertSlot;
use super::tickets::TicketKeys;
use super::verify::ClientVerifier;
use super::{provider, TlsError, ALPN_ACME_TLS_1, ALPN_H2, ALPN_H3, ALPN_HTTP10, ALPN_HTTP11};

/// OpenSSL's default session cache size (SSL_SESSION_CACHE_MAX_SIZE_DEFAULT).
const SESSION_CACHE_SIZE: usize = 20 * 1024;
/// `-tt` warns about certificates expiring within 30 days.
const EXPIRY_WARNING_SECS: i64 = 30 * 86400;
/// A scope's certificate, with the socket scope also trying the host
/// scopes' certificates by name.
/// A scope without `ssl.pemfile` (where glint's ACME client provides the
/// certificates) has no certificate of its own.
#[derive(Debug)]
struct ScopeResolver {
    own: Option<Arc<CertSlot>>,
    others: Vec<Arc<CertSlot>>,
}

impl ResolvesServerCert for ScopeResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(name) = hello.server_name().map(normalize) {
            if !self.own.as_ref().is_some_and(|o| o.covers(&name)) {
                if let Some(s) = self.others.iter().find(|s| s.has_key() && s.covers(&name)) {
                    return s.get();
                }
            }
        }
        match &self.own {
            Some(own) => own.get(),
            // No name, or one no certificate covers: the first managed
            // certificate there is, as a socket's certificate would be.
            None => self.others.iter().find_map(|s| s.get()),
        }
    }
}

/// `ssl.acme-tls-1`: the challenge certificate for the SNI name, read from
/// the directory at each handshake as lighttpd does (the ACME client
/// writes it just before the validation).
#[derive(Debug)]
struct AcmeResolver {
    dir: PathBuf,
    provider: Arc<CryptoProvider>,
}

impl ResolvesServerCert for AcmeResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = normalize(hello.server_name()?);
        load::acme_key(&self.dir, &name, &self.provider)
    }
}

pub(crate) fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

enum Matcher {
    Exact(String),
    Regex(regex::Regex),
}

impl Matcher {
    fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Exact(h) => *h == name,
            Matcher::Regex(r) => r.is_match(name),
        }
    }
}

/// One scope's configuration.
pub(crate) struct Scope {
    pub config: Arc<ServerConfig>,
    pub acme: Option<Arc<ServerConfig>>,
    pub verify: Option<(Arc<ClientVerifier>, VerifySpec)>,
}

struct Built {
    default: Arc<Scope>,
    hosts: Vec<(Matcher, Arc<Scope>)>,
    /// Every certificate of the socket: the scopes' own, then the managed ones.
    slots: Vec<Arc<CertSlot>>,
    last_staple_check: AtomicI64,
}

/// A TLS socket's loaded configuration; cheap to clone. Connections keep
/// the one they started with, so a reload never disturbs them.
#[derive(Clone)]
pub struct TlsContext {
    built: Arc<Built>,
    spec: Arc<TlsSpec>,
    keys: Arc<TicketKeys>,
}

impl TlsContext {
    /// Loads every file the spec names. `keys` are the process's ticket
    /// keys (one set for all sockets, made before the workers fork).
    /// Returns warnings lighttpd would log (inactive certificates, Must-Staple
    /// without a staple).
    pub fn load(
        spec: TlsSpec,
        keys: &Arc<TicketKeys>,
    ) -> Result<(TlsContext, Vec<String>), TlsError> {
        let mut warnings = Vec::new();
        let provider = Arc::new(crypto_provider(&spec)?);
        let cache: Arc<dyn rustls::server::StoresServerSessions> = if spec.session_cache {
            ServerSessionMemoryCache::new(SESSION_CACHE_SIZE)
        } else {
            Arc::new(NoServerSessionStorage {})
        };
        let now = super::tickets::unix_now();
        let managed = managed_slots(&spec, &provider);
        let mut slots = Vec::new();
        let load_scope = |s: &ScopeSpec, others: Vec<Arc<CertSlot>>, w: &mut Vec<String>| {
            scope(&spec, s, others, &provider, &cache, keys, now, w)
        };
        let mut hosts = Vec::new();
        for (m, s) in &spec.hosts {
            let (sc, slot) = load_scope(s, managed.clone(), &mut warnings)?;
            let m = match m {
                HostMatch::Exact(h) => Matcher::Exact(normalize(h)),
                HostMatch::Regex(r) => Matcher::Regex(
                    regex::Regex::new(r).map_err(|e| TlsError::Config(e.to_string()))?,
                ),
            };
            slots.extend(slot);
            hosts.push((m, sc));
        }
        let mut others = slots.clone();
        others.extend(managed.iter().cloned());
        let (default, slot) = load_scope(&spec.default, others, &mut warnings)?;
        if let Some(slot) = slot {
            slots.insert(0, slot);
        }
        slots.extend(managed);
        let built = Built {
            default,
            hosts,
            slots,
            last_staple_check: AtomicI64::new(now),
        };
        Ok((
            TlsContext {
                built: Arc::new(built),
                spec: Arc::new(spec),
                keys: Arc::clone(keys),
            },
            warnings,
        ))
    }

    /// Builds a fresh configuration from `spec` (or the files of the
    /// current one, re-read) and switches to it; on any error the current
    /// configuration stays and the error is returned. Call on SIGUSR1.
    pub fn reload(&mut self, spec: Option<TlsSpec>) -> Result<Vec<String>, TlsError> {
        let spec = spec.unwrap_or_else(|| (*self.spec).clone());
        let (new, warnings) = TlsContext::load(spec, &self.keys)?;
        *self = new;
        Ok(warnings)
    }

    /// Refreshes OCSP staples whose file changed or whose response
    /// expired (every 64 s, as lighttpd's check), and certificates whose
    /// files changed. Call from the once-a-second tick. Certificate files
    /// are looked at every second, two stat(2) calls each: those of glint's
    /// ACME client (and any certificate not loaded yet) are read as soon as
    /// they change, the others (`ssl.refresh-certs`) once they have not
    /// changed for a second, so that a renewal by certbot is served within
    /// two seconds (lighttpd looks every 64 s). Returns whether a
    /// certificate changed.
    pub fn tick(&self, now: i64) -> bool {
        let last = self.built.last_staple_check.load(Ordering::Relaxed);
        if now - last >= super::tickets::CHECK_INTERVAL_SECS || now < last {
            self.refresh_staples(now);
        }
        let mut changed = false;
        for s in &self.built.slots {
            if s.managed || !s.has_key() {
                changed |= s.refresh();
            } else if self.spec.refresh_certs {
                changed |= s.refresh_settled();
            }
        }
        changed
    }

    /// The certificate check, now (all of them, changed or not).
    pub fn refresh_certs(&self) -> bool {
        let mut changed = false;
        for s in &self.built.slots {
            changed |= s.refresh();
        }
        changed
    }

    /// The staple check, now.
    pub fn refresh_staples(&self, now: i64) {
        self.built.last_staple_check.store(now, Ordering::Relaxed);
        for s in &self.built.slots {
            s.refresh_staple(now, false);
        }
    }

    /// `-tt`: certificates that expire within 30 days, or are not yet or no
    /// longer valid.
    pub fn expiry_warnings(&self, now: i64) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.built.slots {
            let p = s.pemfile.display();
            let Some((not_before, not_after, _)) = s.dates() else {
                continue;
            };
            if not_after < now {
                out.push(format!(
                    "SSL: certificate {p} expired {} days ago",
                    (now - not_after) / 86400
                ));
            } else if not_after - now < EXPIRY_WARNING_SECS {
                out.push(format!(
                    "SSL: certificate {p} expires in {} days",
                    (not_after - now) / 86400
                ));
            }
            if not_before > now {
                out.push(format!("SSL: certificate {p} is not valid yet"));
            }
        }
        out
    }

    pub fn spec(&self) -> &TlsSpec {
        &self.spec
    }

    /// The configuration of HTTP/3's handshakes on this socket: the socket
    /// scope's (its certificate, the host scopes' certificates by SNI, its
    /// cipher suites, groups and tickets) with ALPN `h3` alone. QUIC runs
    /// TLS 1.3 only (RFC 9001 §4.2), whatever TLS 1.2 the socket allows
    /// TCP. A QUIC handshake starts before its ClientHello is seen, so the
    /// host scopes' own client-certificate settings cannot apply: the
    /// caller refuses HTTP/3 where they differ (see `quic_unsupported`).
    pub fn quic_config(&self) -> Arc<ServerConfig> {
        let mut c = (*self.built.default.config).clone();
        c.alpn_protocols = vec![ALPN_H3.to_vec()];
        c.max_early_data_size = 0;
        // QUIC frames the handshake itself: no TLS records to size.
        c.max_fragment_size = None;
        Arc::new(c)
    }

    /// Why this socket's TLS settings cannot be offered over QUIC, if they
    /// cannot: client certificates (their variables are built from the TCP
    /// handshake), or no TLS 1.3.
    pub fn quic_unsupported(&self) -> Option<&'static str> {
        let scopes =
            std::iter::once(&self.spec.default).chain(self.spec.hosts.iter().map(|(_, s)| s));
        for s in scopes {
            if s.verify.is_some() {
                return Some("client certificates (ssl.verifyclient.activate)");
            }
        }
        if !self.spec.settings.tls13 {
            return Some("TLS 1.3 is turned off");
        }
        None
    }

    /// The scope for a ClientHello and the configuration to finish it with.
    pub(crate) fn select(&self, hello: &ClientHello<'_>) -> (Arc<Scope>, Arc<ServerConfig>) {
        let name = hello.server_name().map(normalize);
        let scope = name
            .as_deref()
            .and_then(|n| self.built.hosts.iter().rev().find(|(m, _)| m.matches(n)))
            .map(|(_, s)| Arc::clone(s))
            .unwrap_or_else(|| Arc::clone(&self.built.default));
        let acme_offered = hello
            .alpn()
            .is_some_and(|mut a| a.any(|p| p == ALPN_ACME_TLS_1));
        let config = match (&scope.acme, acme_offered) {
            (Some(acme), true) => Arc::clone(acme),
            _ => Arc::clone(&scope.config),
        };
        (scope, config)
    }
}

/// `-tt`: loads everything as start-up would and returns the warnings,
/// certificates expiring within 30 days among them.
pub fn check(spec: &TlsSpec, now: i64) -> Result<Vec<String>, TlsError> {
    let keys = TicketKeys::new(spec.stek_file.as_deref(), now);
    let (ctx, mut warnings) = TlsContext::load(spec.clone(), &keys)?;
    if let Some(f) = &spec.stek_file {
        if keys.key_names().is_empty() {
            warnings.push(format!(
                "SSL: ssl.stek-file {} gave no usable key",
                f.display()
            ));
        }
    }
    let scopes = std::iter::once(&spec.default).chain(spec.hosts.iter().map(|(_, s)| s));
    for s in scopes {
        if let Some(f) = &s.stapling_file {
            if let Err(e) = load::staple(f) {
                warnings.push(format!("ssl.stapling-file: {e}"));
            }
        }
        if let Some(d) = s.acme_dir.as_ref().filter(|d| !d.is_dir()) {
            warnings.push(format!(
                "ssl.acme-tls-1: {} is not a directory",
                d.display()
            ));
        }
    }
    warnings.extend(ctx.expiry_warnings(now));
    warnings.dedup();
    Ok(warnings)
}

fn crypto_provider(spec: &TlsSpec) -> Result<CryptoProvider, TlsError> {
    let mut p = provider::default_provider();
    let s = &spec.settings;
    p.cipher_suites = s
        .tls13_suites
        .iter()
        .chain(&s.tls12_suites)
        .filter_map(|want| {
            provider::ALL_CIPHER_SUITES
                .iter()
                .find(|c| c.suite() == *want)
                .copied()
        })
        .collect();
    if let Some(groups) = &s.groups {
        p.kx_groups = groups
            .iter()
            .filter_map(|g| {
                provider::ALL_KX_GROUPS
                    .iter()
                    .find(|k| k.name() == *g)
                    .copied()
            })
            .collect();
    }
    if p.cipher_suites.is_empty() || p.kx_groups.is_empty() {
        return Err(TlsError::Config(
            "no cipher suite or key-exchange group left".into(),
        ));
    }
    Ok(p)
}

#[allow(clippy::too_many_arguments)]
fn scope(
    spec: &TlsSpec,
    s: &ScopeSpec,
    others: Vec<Arc<CertSlot>>,
    provider: &Arc<CryptoProvider>,
    cache: &Arc<dyn rustls::server::StoresServerSessions>,
    keys: &Arc<TicketKeys>,
    now: i64,
    warnings: &mut Vec<String>,
) -> Result<(Arc<Scope>, Option<Arc<CertSlot>>), TlsError> {
    let ca = s.ca_file.as_deref().map(load::ca_certs).transpose()?;
    let slot = cert_slot(s, ca.as_deref(), provider, now, warnings)?;
    let verify = client_verifier(s, ca.as_deref(), warnings)?;
    let mut alpn = Vec::new();
    if spec.h2 {
        alpn.push(ALPN_H2.to_vec());
    }
    alpn.push(ALPN_HTTP11.to_vec());
    alpn.push(ALPN_HTTP10.to_vec());
    let resolver = Arc::new(ScopeResolver {
        own: slot.clone(),
        others,
    });
    let verifier = verify
        .as_ref()
        .map(|(v, _)| Arc::clone(v) as Arc<dyn ClientCertVerifier>);
    let config = server_config(spec, provider, verifier, resolver, alpn, cache, keys)?;
    let acme = match &s.acme_dir {
        Some(dir) => {
            let resolver = Arc::new(AcmeResolver {
                dir: dir.clone(),
                provider: Arc::clone(provider),
            });
            let alpn = vec![ALPN_ACME_TLS_1.to_vec()];
            Some(server_config(
                spec, provider, None, resolver, alpn, cache, keys,
            )?)
        }
        None => None,
    };
    Ok((
        Arc::new(Scope {
            config,
            acme,
            verify,
        }),
        slot,
    ))
}

/// The scope's certificate and key, loaded and checked, with its OCSP
/// staple if it has one; dates and a missing staple are warnings. `None`
/// for a scope without `ssl.pemfile` (managed certificates serve it).
fn cert_slot(
    s: &ScopeSpec,
    ca: Option<&[CertificateDer<'static>]>,
    provider: &Arc<CryptoProvider>,
    now: i64,
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<CertSlot>>, TlsError> {
    let (Some(pemfile), Some(privkey)) = (&s.pemfile, &s.privkey) else {
        return Ok(None);
    };
    let slot = CertSlot::load(pemfile, privkey, ca, provider, s.stapling_file.clone())?;
    if let Some((not_before, not_after, must_staple)) = slot.dates() {
        if not_before > now || not_after < now {
            warnings.push(format!(
                "SSL: inactive/expired X509 certificate '{}'",
                pemfile.display()
            ));
        }
        if must_staple && s.stapling_file.is_none() {
            warnings.push(format!(
                "certificate {} marked OCSP Must-Staple, but ssl.stapling-file not provided",
                pemfile.display()
            ));
        }
    }
    // lighttpd goes on without a staple when the file does not load.
    slot.refresh_staple(now, true);
    Ok(Some(Arc::new(slot)))
}

/// The certificates glint's ACME client keeps: each served once its files
/// load (perhaps already now, from an earlier run).
fn managed_slots(spec: &TlsSpec, provider: &Arc<CryptoProvider>) -> Vec<Arc<CertSlot>> {
    spec.managed
        .iter()
        .map(|m| {
            let slot = CertSlot::empty(
                &m.pemfile,
                &m.privkey,
                None,
                provider,
                None,
                vec![m.name.clone()],
            );
            slot.refresh();
            Arc::new(slot)
        })
        .collect()
}

/// The client-certificate verifier of `ssl.verifyclient.*`, if activated.
fn client_verifier(
    s: &ScopeSpec,
    ca: Option<&[CertificateDer<'static>]>,
    warnings: &mut Vec<String>,
) -> Result<Option<(Arc<ClientVerifier>, VerifySpec)>, TlsError> {
    Ok(match &s.verify {
        Some(v) => {
            let ca = ca.unwrap_or_default();
            let ca_path = s.ca_file.clone().unwrap_or_default();
            let roots = load::root_store(&ca_path, ca)?;
            let dn = s.ca_dn_file.as_deref().map(load::dn_subjects).transpose()?;
            let hints = dn.as_ref().map(|d| {
                d.iter()
                    .map(|n| rustls::DistinguishedName::from(n.clone()))
                    .collect()
            });
            let crls = s
                .ca_crl_file
                .as_deref()
                .map(load::crls)
                .transpose()?
                .unwrap_or_default();
            let inner = ClientVerifier::webpki(roots, hints, crls).map_err(|e| TlsError::File {
                path: ca_path.clone(),
                reason: e,
            })?;
            Some((Arc::new(ClientVerifier::new(inner, v, dn)), v.clone()))
        }
        None => {
            if let (Some(crl), None) = (&s.ca_crl_file, &s.ca_file) {
                warnings.push(format!(
                    "ssl.ca-crl-file ({}) ignored unless issued with ssl.ca-file",
                    crl.display()
                ));
            }
            None
        }
    })
}

fn server_config(
    spec: &TlsSpec,
    provider: &Arc<CryptoProvider>,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
    resolver: Arc<dyn ResolvesServerCert>,
    alpn: Vec<Vec<u8>>,
    cache: &Arc<dyn rustls::server::StoresServerSessions>,
    keys: &Arc<TicketKeys>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let s = &spec.settings;
    let mut versions: Vec<&'static SupportedProtocolVersion> = Vec::new();
    if s.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    if s.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    let builder = ServerConfig::builder_with_provider(Arc::clone(provider))
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Config(format!("ssl.openssl.ssl-conf-cmd: {e}")))?;
    let builder = match verifier {
        Some(v) => builder.with_client_cert_verifier(v),
        None => builder.with_no_client_auth(),
    };
    let mut c = builder.with_cert_resolver(resolver);
    c.alpn_protocols = alpn;
    c.ignore_client_order = s.server_preference;
    // rustls counts the 5-byte record header in the fragment size.
    c.max_fragment_size = s.max_fragment.map(|n| n + 5);
    c.session_storage = Arc::clone(cache);
    if s.session_tickets {
        c.ticketer = Arc::clone(keys) as Arc<dyn rustls::server::ProducesTickets>;
    }
    c.send_tls13_tickets = if s.session_tickets || spec.session_cache {
        s.num_tickets
    } else {
        0
    };
    Ok(Arc::new(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalized() {
        assert_eq!(normalize("A.Example.COM."), "a.example.com");
    }
}
