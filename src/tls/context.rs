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
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{
    ClientHello, NoServerSessionStorage, ResolvesServerCert, ServerSessionMemoryCache,
};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, SupportedProtocolVersion};

use super::load::{self, LoadedCert};
use super::options::{HostMatch, ScopeSpec, TlsSpec, VerifySpec};
use super::tickets::TicketKeys;
use super::verify::ClientVerifier;
use super::{provider, TlsError, ALPN_ACME_TLS_1, ALPN_H2, ALPN_HTTP10, ALPN_HTTP11};

/// OpenSSL's default session cache size (SSL_SESSION_CACHE_MAX_SIZE_DEFAULT).
const SESSION_CACHE_SIZE: usize = 20 * 1024;
/// `-tt` warns about certificates expiring within 30 days.
const EXPIRY_WARNING_SECS: i64 = 30 * 86400;
/// A response without nextUpdate is kept for an hour (lighttpd's rule).
/// lighttpd only looks at the file within 256 s of nextUpdate; glint
/// stats it at every check (64 s), so a renewed response is served as
/// soon as it is written.
const STAPLE_RETRY_SECS: i64 = 3600;

/// A certificate and key, swapped whole when its OCSP staple changes.
#[derive(Debug)]
pub(crate) struct CertSlot {
    current: Mutex<Arc<CertifiedKey>>,
    names: Vec<String>,
    pemfile: PathBuf,
    not_before: i64,
    not_after: i64,
    must_staple: bool,
    staple: Option<Mutex<StapleState>>,
}

#[derive(Debug)]
struct StapleState {
    path: PathBuf,
    loaded_at: i64,
    next_update: i64,
    present: bool,
}

fn name_covers(pattern: &str, name: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => name
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
        None => pattern == name,
    }
}

impl CertSlot {
    fn get(&self) -> Option<Arc<CertifiedKey>> {
        self.current.lock().ok().map(|k| Arc::clone(&k))
    }

    fn covers(&self, name: &str) -> bool {
        self.names.iter().any(|p| name_covers(p, name))
    }

    fn set_ocsp(&self, ocsp: Option<Vec<u8>>) {
        if let Ok(mut cur) = self.current.lock() {
            let mut k = CertifiedKey::new(cur.cert.clone(), Arc::clone(&cur.key));
            k.ocsp = ocsp;
            *cur = Arc::new(k);
        }
    }

    /// mod_openssl_refresh_stapling_file, looking at the file every time.
    fn refresh_staple(&self, now: i64, force: bool) {
        let Some(st) = &self.staple else { return };
        let Ok(mut st) = st.lock() else { return };
        let mtime = std::fs::metadata(&st.path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_secs() as i64);
        if !force && mtime.is_none_or(|m| m <= st.loaded_at) {
            if st.present && st.next_update < now {
                self.expire_staple(&mut st);
            }
            return;
        }
        match load::staple(&st.path) {
            Err(e) => log::error!("SSL: OCSP stapling file read error: {e}"),
            Ok((der, next)) => {
                st.loaded_at = now;
                match next {
                    None => {
                        // No nextUpdate: keep it and look again in an hour.
                        st.next_update = now + STAPLE_RETRY_SECS;
                        st.loaded_at = 0;
                    }
                    Some(t) if t < now => {
                        st.present = true;
                        self.expire_staple(&mut st);
                        return;
                    }
                    Some(t) => st.next_update = t,
                }
                self.set_ocsp(Some(der));
                st.present = true;
            }
        }
    }

    fn expire_staple(&self, st: &mut StapleState) {
        if !st.present {
            return;
        }
        self.set_ocsp(None);
        st.present = false;
        if self.must_staple {
            log::error!(
                "certificate {} marked OCSP Must-Staple, but OCSP response expired from ssl.stapling-file {}",
                self.pemfile.display(),
                st.path.display()
            );
        }
    }
}

/// A scope's certificate, with the socket scope also trying the host
/// scopes' certificates by name.
#[derive(Debug)]
struct ScopeResolver {
    own: Arc<CertSlot>,
    others: Vec<Arc<CertSlot>>,
}

impl ResolvesServerCert for ScopeResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(name) = hello.server_name().map(normalize) {
            if !self.own.covers(&name) {
                if let Some(s) = self.others.iter().find(|s| s.covers(&name)) {
                    return s.get();
                }
            }
        }
        self.own.get()
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
        let mut slots = Vec::new();
        let load_scope = |s: &ScopeSpec, others: Vec<Arc<CertSlot>>, w: &mut Vec<String>| {
            scope(&spec, s, others, &provider, &cache, keys, now, w)
        };
        let mut hosts = Vec::new();
        for (m, s) in &spec.hosts {
            let (sc, slot) = load_scope(s, Vec::new(), &mut warnings)?;
            let m = match m {
                HostMatch::Exact(h) => Matcher::Exact(normalize(h)),
                HostMatch::Regex(r) => Matcher::Regex(
                    regex::Regex::new(r).map_err(|e| TlsError::Config(e.to_string()))?,
                ),
            };
            slots.push(slot);
            hosts.push((m, sc));
        }
        let (default, slot) = load_scope(&spec.default, slots.clone(), &mut warnings)?;
        slots.insert(0, slot);
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
    /// expired. Call from the once-a-second tick; works every 64 s.
    pub fn tick(&self, now: i64) {
        let last = self.built.last_staple_check.load(Ordering::Relaxed);
        if now - last >= super::tickets::CHECK_INTERVAL_SECS || now < last {
            self.refresh_staples(now);
        }
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
            if s.not_after < now {
                out.push(format!(
                    "SSL: certificate {p} expired {} days ago",
                    (now - s.not_after) / 86400
                ));
            } else if s.not_after - now < EXPIRY_WARNING_SECS {
                out.push(format!(
                    "SSL: certificate {p} expires in {} days",
                    (s.not_after - now) / 86400
                ));
            }
            if s.not_before > now {
                out.push(format!("SSL: certificate {p} is not valid yet"));
            }
        }
        out
    }

    pub fn spec(&self) -> &TlsSpec {
        &self.spec
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
) -> Result<(Arc<Scope>, Arc<CertSlot>), TlsError> {
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
        own: Arc::clone(&slot),
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
/// staple if it has one; dates and a missing staple are warnings.
fn cert_slot(
    s: &ScopeSpec,
    ca: Option<&[CertificateDer<'static>]>,
    provider: &Arc<CryptoProvider>,
    now: i64,
    warnings: &mut Vec<String>,
) -> Result<Arc<CertSlot>, TlsError> {
    let LoadedCert {
        key,
        names,
        not_before,
        not_after,
        must_staple,
    } = load::certified_key(&s.pemfile, &s.privkey, ca, provider)?;
    if not_before > now || not_after < now {
        warnings.push(format!(
            "SSL: inactive/expired X509 certificate '{}'",
            s.pemfile.display()
        ));
    }
    if must_staple && s.stapling_file.is_none() {
        warnings.push(format!(
            "certificate {} marked OCSP Must-Staple, but ssl.stapling-file not provided",
            s.pemfile.display()
        ));
    }
    let slot = Arc::new(CertSlot {
        current: Mutex::new(Arc::new(key)),
        names,
        pemfile: s.pemfile.clone(),
        not_before,
        not_after,
        must_staple,
        staple: s.stapling_file.clone().map(|path| {
            Mutex::new(StapleState {
                path,
                loaded_at: 0,
                next_update: 0,
                present: false,
            })
        }),
    });
    // lighttpd goes on without a staple when the file does not load.
    slot.refresh_staple(now, true);
    Ok(slot)
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
    fn wildcards_cover_one_label() {
        assert!(name_covers("*.example.com", "a.example.com"));
        assert!(!name_covers("*.example.com", "b.a.example.com"));
        assert!(!name_covers("*.example.com", "example.com"));
        assert!(!name_covers("*.example.com", ".example.com"));
        assert!(name_covers("example.com", "example.com"));
        assert_eq!(normalize("A.Example.COM."), "a.example.com");
    }
}
