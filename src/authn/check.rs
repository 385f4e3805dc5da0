//! The one entry point per request: [`check`] and what it answers.

use super::basic::{basic_challenge, verify_basic};
use super::cache::AuthCache;
use super::digest::{digest_challenge, verify_digest};
use super::nonce::NonceKey;
use super::require::{BackendKind, Method, Require};
use super::userfile::UserFile;

/// What the request path knows that authentication needs.
#[derive(Clone, Copy, Debug)]
pub struct AuthRequest<'a> {
    /// The decoded URL path, for log lines.
    pub path: &'a str,
    /// The request method as sent (`GET`): part of the Digest A2.
    pub method: &'a str,
    /// The request-target exactly as the client sent it: Digest's `uri`
    /// must equal it (lighttpd compares `r->target_orig`).
    pub target: &'a [u8],
    /// The `Authorization` header value, if any.
    pub authorization: Option<&'a [u8]>,
    /// `REMOTE_USER` already set by someone else (TLS client certificate).
    pub remote_user: Option<&'a str>,
    /// Unix seconds.
    pub now: i64,
}

/// The configured backend and its loaded user file (`None` when the
/// `auth.backend.*.userfile` for it is unset).
#[derive(Clone, Copy, Debug)]
pub struct Backend<'a> {
    pub kind: BackendKind,
    pub users: Option<&'a UserFile>,
}

/// Per-scope settings and state a check uses.
pub struct Context<'a> {
    /// `auth.backend` and its file; `None` when `auth.backend` is unset.
    pub backend: Option<Backend<'a>>,
    /// `auth.cache`, when configured.
    pub cache: Option<&'a mut AuthCache>,
    /// The per-process nonce key (a rule's `"nonce-secret"` overrides it).
    pub key: &'a NonceKey,
    /// `auth.extern-authn`: a `REMOTE_USER` already set that the rule allows
    /// lets the request through without asking for credentials.
    pub extern_authn: bool,
}

/// `AUTH_TYPE` for gateways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthType {
    Basic,
    Digest,
}

impl AuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::Basic => "Basic",
            AuthType::Digest => "Digest",
        }
    }
}

/// A request let through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// `REMOTE_USER`.
    pub user: String,
    /// `AUTH_TYPE`; `None` when `REMOTE_USER` was already set (extern), so
    /// nothing is to be set.
    pub auth_type: Option<AuthType>,
    /// The value of an `Authentication-Info` response header (Digest's `nextnonce`).
    pub authentication_info: Option<String>,
}

/// The answer to one check; see the table in the module doc of `authn`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Granted(Grant),
    /// 401 with one `WWW-Authenticate` header per value (none for `extern`).
    /// `close`: lighttpd turns keep-alive off after a wrong password or
    /// unknown user, so a guesser pays a new connection per try.
    Unauthorized {
        www_authenticate: Vec<String>,
        close: bool,
        log: Option<String>,
    },
    /// 400 Bad Request; `log` says why.
    BadRequest {
        log: String,
    },
    /// 500: the configuration cannot serve this rule; `log` says why.
    Misconfigured {
        log: String,
    },
}

impl Outcome {
    /// The HTTP status, or `None` when the request goes on.
    pub fn status(&self) -> Option<u16> {
        match self {
            Outcome::Granted(_) => None,
            Outcome::Unauthorized { .. } => Some(401),
            Outcome::BadRequest { .. } => Some(400),
            Outcome::Misconfigured { .. } => Some(500),
        }
    }
}

/// Authenticates and authorises one request against the rule that
/// [`super::require::RequireTable::lookup`] found for it.
pub fn check(rule: &Require, ctx: &mut Context<'_>, req: &AuthRequest<'_>) -> Outcome {
    if ctx.extern_authn {
        if let Some(user) = req.remote_user.filter(|u| rule.matches(Some(u), &[], None)) {
            return Outcome::Granted(Grant {
                user: user.to_string(),
                auth_type: None,
                authentication_info: None,
            });
        }
    }
    match rule.method {
        Method::Basic => verify_basic(rule, ctx.backend, ctx.cache.as_deref_mut(), req),
        Method::Digest => verify_digest(rule, ctx.backend, ctx.key, req),
        Method::Extern => match req.remote_user.filter(|u| rule.matches(Some(u), &[], None)) {
            Some(user) => Outcome::Granted(Grant {
                user: user.to_string(),
                auth_type: None,
                authentication_info: None,
            }),
            None => Outcome::Unauthorized {
                www_authenticate: Vec::new(),
                close: false,
                log: None,
            },
        },
    }
}

/// The `WWW-Authenticate` values a 401 for `rule` carries at `now`.
pub fn challenge(rule: &Require, key: &NonceKey, now: i64) -> Vec<String> {
    match rule.method {
        Method::Basic => vec![basic_challenge(rule)],
        Method::Digest => digest_challenge(rule, key, now, None),
        Method::Extern => Vec::new(),
    }
}

/// The bytes after `scheme` (e.g. `b"Basic "`, matched ASCII case-blind).
pub(crate) fn strip_scheme<'h>(header: &'h [u8], scheme: &[u8]) -> Option<&'h [u8]> {
    let head = header.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &header[scheme.len()..])
}
