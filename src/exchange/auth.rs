//! mod_auth in the request's phases: the rule `auth.require` has for a
//! path, checked against `auth.backend`'s user file before anything can
//! answer the path (mod_status, gateways, index files, listings, static
//! files). A refusal is glint's own reply (401 with its challenge, 400,
//! 500); a grant carries `REMOTE_USER` and `AUTH_TYPE` on to the gateways.
//!
//! The checks themselves are [`crate::authn`]'s; this file holds what
//! they need across requests: the user files (read at start, re-read
//! within a second of a change), the Digest nonce key and the `auth.cache`
//! caches.

use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use super::{Carry, ConnInfo, GwStart, Services};
use crate::authn::basic::Credentials;
use crate::authn::blocking::{Pool, QUEUE, THREADS};
use crate::authn::cache::{AuthCache, CacheOptions};
use crate::authn::digest::DigestWork;
use crate::authn::external::Spec;
use crate::authn::ldap_check::{self, LdapOptions, LdapSpec};
use crate::authn::nonce::NonceKey;
use crate::authn::pam::PamSpec;
use crate::authn::require::{parse_backend, BackendKind, Require, RequireTable};
use crate::authn::userfile::UserFile;
use crate::authn::{self, AuthRequest, Backend, Context, Outcome};
use crate::config::{Config, Settings, Value};
use crate::msg::Request;

/// What authentication keeps between requests.
pub struct AuthState {
    /// Signs Digest nonces; made once per process (before workers fork, so
    /// every worker accepts the others' nonces).
    key: NonceKey,
    /// Every user file the configuration names, by kind and path.
    files: Vec<(BackendKind, String, UserFile)>,
    /// One cache per `auth.cache` max-age.
    pub(super) caches: Vec<(i64, AuthCache)>,
    /// `clock.unix` of the last look at the user files.
    checked: i64,
    /// The threads blocking back ends run on, made on first use.
    pool: Option<Pool>,
    pool_failed: bool,
    /// Each scope's `auth.backend.ldap.*`, compiled on first use (the CA
    /// file read once, not per request).
    ldap_specs: Vec<(LdapOptions, Result<Arc<LdapSpec>, String>)>,
}

impl Default for AuthState {
    fn default() -> Self {
        AuthState {
            key: nonce_key(),
            files: Vec::new(),
            caches: Vec::new(),
            checked: 0,
            pool: None,
            pool_failed: false,
            ldap_specs: Vec::new(),
        }
    }
}

/// A nonce key when the kernel's random source fails (it does not on
/// Linux past early boot): the time and pid, so nonces still differ per
/// process; Digest stays correct, only less unguessable.
fn nonce_key() -> NonceKey {
    match NonceKey::generate() {
        Ok(k) => k,
        Err(e) => {
            log::warn!("Digest nonce key: {e}; using a key from the time and pid");
            let mut k = [0u8; 32];
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            k[..16].copy_from_slice(&t.to_le_bytes());
            k[16..20].copy_from_slice(&std::process::id().to_le_bytes());
            NonceKey::from_bytes(k)
        }
    }
}

/// The user file option of each backend kind.
const USERFILES: &[(BackendKind, &str)] = &[
    (BackendKind::Plain, "auth.backend.plain.userfile"),
    (BackendKind::Htpasswd, "auth.backend.htpasswd.userfile"),
    (BackendKind::Htdigest, "auth.backend.htdigest.userfile"),
];

fn userfile_of(s: &Settings, kind: BackendKind) -> Option<&str> {
    match kind {
        BackendKind::Plain => s.auth.plain_userfile.as_deref(),
        BackendKind::Htpasswd => s.auth.htpasswd_userfile.as_deref(),
        BackendKind::Htdigest => s.auth.htdigest_userfile.as_deref(),
        BackendKind::Ldap
        | BackendKind::Pam
        | BackendKind::Sasl
        | BackendKind::Dbi
        | BackendKind::Gssapi => None,
    }
}

impl AuthState {
    /// Reads every user file the configuration names (in any scope). A file
    /// that cannot be read is logged and nobody logs in with it until it
    /// can be (lighttpd, which reads it per request, fails each request).
    /// Lines it skips are logged with their file and line.
    pub fn from_config(config: &Config) -> AuthState {
        let mut st = AuthState::default();
        st.reconfigure(config);
        st
    }

    /// Takes the user files of a new configuration (SIGUSR1): files it
    /// still names keep their tables, others are read; the nonce key stays,
    /// so a client's nonce survives the restart.
    pub fn reconfigure(&mut self, config: &Config) {
        let mut files = Vec::new();
        for &(kind, key) in USERFILES {
            let global = userfile_of(&config.global, kind).map(str::to_string);
            let blocks = config
                .block_values(key)
                .filter_map(Value::as_str)
                .map(str::to_string);
            for path in global.into_iter().chain(blocks) {
                if files.iter().any(|(k, p, _)| *k == kind && *p == path) {
                    continue;
                }
                let kept = self
                    .files
                    .iter()
                    .position(|(k, p, _)| *k == kind && *p == path)
                    .map(|i| self.files.swap_remove(i).2);
                let f = kept.unwrap_or_else(|| load(kind, &path));
                files.push((kind, path, f));
            }
        }
        self.files = files;
        self.caches.clear();
        self.ldap_specs.clear();
    }

    /// The back-end threads (made in the process that serves: a
    /// `server.max-worker` child must not inherit threads it cannot have).
    /// The per-process Digest nonce key.
    pub(super) fn key(&self) -> &NonceKey {
        &self.key
    }

    pub(super) fn pool(&mut self) -> Option<&Pool> {
        if self.pool.is_none() && !self.pool_failed {
            match Pool::new(THREADS, QUEUE) {
                Ok(p) => self.pool = Some(p),
                Err(e) => {
                    log::error!("(mod_auth) cannot start the back-end threads: {e}");
                    self.pool_failed = true;
                }
            }
        }
        self.pool.as_ref()
    }

    /// The blocking back end `kind` as `s` configures it.
    pub(super) fn spec_for(&mut self, kind: BackendKind, s: &Settings) -> Result<Spec, String> {
        match kind {
            BackendKind::Ldap => {
                let o = &s.auth.ldap;
                let i = match self.ldap_specs.iter().position(|(k, _)| k == o) {
                    Some(i) => i,
                    None => {
                        let provider = Arc::new(crate::tls::crypto_provider());
                        let spec = ldap_check::compile(o, provider).map(Arc::new);
                        if let Err(e) = &spec {
                            log::error!("(mod_authn_ldap) {e}");
                        }
                        self.ldap_specs.push((o.clone(), spec));
                        self.ldap_specs.len() - 1
                    }
                };
                match &self.ldap_specs[i].1 {
                    Ok(spec) => Ok(Spec::Ldap(Arc::clone(spec))),
                    Err(e) => Err(format!("ldap: {e}")),
                }
            }
            BackendKind::Pam => {
                let service = s
                    .auth
                    .pam_opts
                    .as_ref()
                    .and_then(|o| o.iter().find(|(k, _)| k == "service"))
                    .map_or("http", |(_, v)| v.as_str());
                Ok(Spec::Pam(Arc::new(PamSpec {
                    service: service.to_string(),
                })))
            }
            BackendKind::Sasl => {
                let opts = s.auth.sasl_opts.as_deref().unwrap_or(&[]);
                crate::authn::sasl::parse_opts(opts).map(|spec| Spec::Sasl(Arc::new(spec)))
            }
            BackendKind::Dbi => match &s.auth.dbi_spec {
                Some(spec) => Ok(Spec::Dbi(Arc::clone(spec))),
                // lighttpd sets nothing up without sql, dbname and dbtype,
                // and refuses every login under it.
                None => {
                    Err("dbi: auth.backend.dbi needs \"sql\", \"dbname\" and \"dbtype\"".into())
                }
            },
            BackendKind::Gssapi => Ok(Spec::Gssapi(Arc::new(s.auth.gssapi.clone()))),
            other => Err(format!("{other:?} does not block")),
        }
    }

    /// Once a second: user files changed on disk are read again, cache
    /// entries past their age dropped.
    pub fn on_tick(&mut self, now: i64) {
        if now == self.checked {
            return;
        }
        self.checked = now;
        for (_, _, f) in self.files.iter_mut() {
            for m in f.reload_if_changed(now) {
                log::info!("(mod_auth) {m}");
            }
        }
        for (_, c) in self.caches.iter_mut() {
            c.expire(now);
        }
    }
}

fn load(kind: BackendKind, path: &str) -> UserFile {
    match UserFile::load(kind, Path::new(path)) {
        Ok((f, msgs)) => {
            for m in msgs {
                log::warn!("(mod_auth) {m}");
            }
            f
        }
        Err(e) => {
            log::error!("(mod_auth) {e}; nobody can log in with it until it can be read");
            UserFile::missing(kind, Path::new(path))
        }
    }
}

/// What a check decided.
pub(super) enum Checked {
    /// No rule covers the path, or the request was let in.
    Pass,
    /// The answer is in `sv.reply` (401, 400, 500, 503).
    Refused,
    /// The back end blocks: the check is to run off the loop (see
    /// `auth_wait`), for these credentials under this rule.
    Blocking(Box<Blocked>),
    /// The request waits as this job until its check is done.
    Wait(Box<GwStart>),
}

/// A check for a back end that blocks.
pub(super) struct Blocked {
    pub rule: Require,
    pub kind: BackendKind,
    /// Basic's; for Digest the claimed user and no password.
    pub creds: Credentials,
    /// A Negotiate token (`"method" => "gssapi"`) rather than `creds`.
    pub token: Option<Vec<u8>>,
    /// A Digest check to finish with the back end's HA1.
    pub digest: Option<Box<DigestWork>>,
    /// An htpasswd hash libxcrypt checks on a worker thread, and the user
    /// file's generation (for `auth.cache`).
    pub local: Option<(Spec, u64)>,
}

/// mod_auth for `path` under `settings`: passes when no rule covers it or
/// the credentials satisfy the rule (the grant goes into `carry`), says
/// so when the back end blocks (the caller starts the wait), else leaves
/// the refusal in `sv.reply`.
pub(super) fn check(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Settings,
    path: &str,
    carry: &mut Carry,
) -> Checked {
    let Some(table) = sv
        .config
        .auth_requires
        .get(settings.auth.scope as usize)
        .map(|(_, t)| Rc::clone(t))
    else {
        return Checked::Pass;
    };
    let Some(rule) = lookup(&table, path, settings) else {
        return Checked::Pass;
    };
    if carry.auth_rule == Some(rule.id) {
        // Granted for this rule already (the same request run again).
        return Checked::Pass;
    }
    let now = sv.clock.unix;
    let st = &mut sv.auth;
    let backend = backend_of(settings, &st.files);
    let kind = backend.map(|b| b.kind);
    let cache = settings
        .auth
        .cache_max_age
        .and_then(|age| cache_for(&mut st.caches, age));
    let mut ctx = Context {
        backend,
        cache,
        key: &st.key,
        extern_authn: settings.auth.extern_authn,
    };
    let areq = AuthRequest {
        path,
        method: req.method_str,
        target: req.target.as_bytes(),
        authorization: req.header("authorization"),
        remote_user: carry.remote_user.as_deref(),
        now,
    };
    let ip = info
        .peer
        .map_or_else(|| "(unix socket)".to_string(), |ip| ip.to_string());
    let outcome = authn::check(rule, &mut ctx, &areq);
    let users = backend.and_then(|b| b.users);
    match (outcome, kind) {
        (Outcome::Blocking(creds), Some(kind)) => {
            Checked::Blocking(Box::new(blocked_basic(rule, kind, creds, users)))
        }
        (Outcome::BlockingDigest(work), Some(kind)) => {
            Checked::Blocking(Box::new(blocked_digest(rule, kind, work)))
        }
        // Negotiate uses auth.backend.gssapi.* whatever auth.backend is.
        (Outcome::Negotiate(token), _) => {
            Checked::Blocking(Box::new(blocked_negotiate(rule, token)))
        }
        (outcome, _) => answer_outcome(sv, carry, rule.id, outcome, &ip),
    }
}

/// `auth.backend` of `settings` with its user file (from `files`, the
/// files loaded), if it has one.
fn backend_of<'a>(
    settings: &Settings,
    files: &'a [(BackendKind, String, UserFile)],
) -> Option<Backend<'a>> {
    let kind = parse_backend(settings.auth.backend.as_deref()?)
        .ok()
        .flatten()?;
    let users = userfile_of(settings, kind).and_then(|p| {
        files
            .iter()
            .find(|(k, fp, _)| *k == kind && fp == p)
            .map(|(_, _, f)| f)
    });
    Some(Backend { kind, users })
}

/// A Digest check for a worker thread: the back end's HA1 of the claimed
/// user, then the rest of `work`.
fn blocked_digest(rule: &Require, kind: BackendKind, work: Box<DigestWork>) -> Blocked {
    Blocked {
        rule: rule.clone(),
        kind,
        creds: Credentials {
            user: work.user.clone(),
            password: Vec::new(),
        },
        token: None,
        digest: Some(work),
        local: None,
    }
}

/// A Negotiate token for a worker thread (auth.backend.gssapi.*).
fn blocked_negotiate(rule: &Require, token: Vec<u8>) -> Blocked {
    Blocked {
        rule: rule.clone(),
        kind: BackendKind::Gssapi,
        creds: Credentials {
            user: String::new(),
            password: Vec::new(),
        },
        token: Some(token),
        digest: None,
        local: None,
    }
}

/// A Basic check for a worker thread: the back end's, or for an
/// htpasswd hash libxcrypt checks, that hash itself.
fn blocked_basic(
    rule: &Require,
    kind: BackendKind,
    creds: Credentials,
    users: Option<&UserFile>,
) -> Blocked {
    let local = users.and_then(|u| {
        let h = u.offloaded_hash(&creds.user)?;
        Some((Spec::Hash(Arc::new(h)), u.generation()))
    });
    Blocked {
        rule: rule.clone(),
        kind,
        creds,
        token: None,
        digest: None,
        local,
    }
}

/// The `auth.cache` cache for `max-age` `age`, made on first use; none
/// (checked without one) when it cannot be made.
pub(super) fn cache_for(caches: &mut Vec<(i64, AuthCache)>, age: i64) -> Option<&mut AuthCache> {
    let i = match caches.iter().position(|(a, _)| *a == age) {
        Some(i) => Some(i),
        None => match AuthCache::new(CacheOptions { max_age: age }) {
            Ok(c) => {
                caches.push((age, c));
                Some(caches.len() - 1)
            }
            Err(e) => {
                log::warn!("(mod_auth) auth.cache: {e}; checking without it");
                None
            }
        },
    };
    i.and_then(|i| caches.get_mut(i)).map(|(_, c)| c)
}

/// What the check came to for rule `rule_id`: a grant goes on in `carry`;
/// a refusal is the reply (401 with its challenges, 400, 500). `ip`: the
/// client's, for the log.
pub(super) fn answer_outcome(
    sv: &mut Services,
    carry: &mut Carry,
    rule_id: u32,
    outcome: Outcome,
    ip: &str,
) -> Checked {
    match outcome {
        Outcome::Granted(g) => {
            carry.auth_rule = Some(rule_id);
            if let Some(t) = g.auth_type {
                carry.auth_type = Some(t.as_str());
            }
            carry.remote_user = Some(g.user);
            carry.authentication_info = g.authentication_info;
            Checked::Pass
        }
        Outcome::Unauthorized {
            www_authenticate,
            close,
            log,
        } => {
            if let Some(l) = log {
                log::warn!("(mod_auth) {l}, IP: {ip}");
            }
            let values: Vec<(&str, &[u8])> = www_authenticate
                .iter()
                .map(|v| ("WWW-Authenticate", v.as_bytes()))
                .collect();
            sv.reply.error_with(401, &values);
            // A wrong password or an unknown user: the next guess costs a
            // new connection and, unless `auth.delay-invalid-creds` is
            // disabled, a second's wait, as lighttpd (a global flag there).
            sv.reply.close |= close;
            sv.reply.delay |= close && !sv.config.global.auth.undelayed_invalid_creds;
            Checked::Refused
        }
        Outcome::BadRequest { log } => {
            log::warn!("(mod_auth) {log}, IP: {ip}");
            sv.reply.error(400);
            Checked::Refused
        }
        Outcome::Misconfigured { log } => {
            log::error!("(mod_auth) {log}");
            sv.reply.error(500);
            Checked::Refused
        }
        // (Handled by the caller; a back end that blocks without a
        // backend configured cannot happen.)
        Outcome::Blocking(_) | Outcome::BlockingDigest(_) | Outcome::Negotiate(_) => {
            sv.reply.error(500);
            Checked::Refused
        }
    }
}

/// The rule for `path`: the first prefix that starts it, in configuration
/// order; without case under `server.force-lowercase-filenames`, whose
/// file names do not tell case apart either.
fn lookup<'t>(
    table: &'t RequireTable,
    path: &str,
    s: &Settings,
) -> Option<&'t crate::authn::require::Require> {
    table.lookup(path, s.files.force_lowercase_filenames)
}
