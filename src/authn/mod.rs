//! HTTP authentication: lighttpd 1.4.69's mod_auth with mod_authn_file's
//! `plain`, `htpasswd` and `htdigest` backends, as pure functions and
//! in-memory tables, and the back ends that block (mod_authn_ldap over
//! [`crate::ldap`], mod_authn_pam), which [`external`] runs on
//! [`blocking`]'s threads. The request path hands in plain values and
//! gets an [`Outcome`] back ([`Outcome::Blocking`]: run the back end).
//!
//! # At start-up (and on reload)
//!
//! - [`require::parse_require`] turns `auth.require = ( "/prefix" => ( "method" =>
//!   ..., "realm" => ..., "require" => ..., "algorithm" => ..., "nonce-secret" =>
//!   ..., "userhash" => ... ) )` into a [`require::RequireTable`]; the caller
//!   converts its config values into the neutral [`require::OptValue`] and
//!   prefixes the `file:line` to any error. [`require::parse_backend`] reads
//!   `auth.backend`; [`cache::parse_cache_options`] reads `auth.cache`.
//! - [`userfile::UserFile::load`] reads `auth.backend.{plain,htpasswd,htdigest}.userfile`
//!   (one [`userfile::UserFile`] per distinct kind and path across all config
//!   scopes) into memory and returns the messages to log (bad lines, unsupported hash
//!   formats, naming file, line and user). lighttpd reads the file on every
//!   request; glint keeps it in memory and the tick calls
//!   [`userfile::UserFile::reload_if_changed`] (one `stat` a second at most) so an
//!   edited file is picked up within a second. `auth.backend.plain.groupfile`
//!   is accepted by lighttpd 1.4.69 and never read: no file backend reports
//!   groups, so a `group=` rule never matches there (see [`require`]).
//! - [`nonce::NonceKey::generate`] makes the per-process Digest nonce key. Make
//!   it before forking workers so every worker accepts the others' nonces; a
//!   `"nonce-secret"` in a rule replaces it for that rule (stable across restarts).
//! - With `auth.cache`, one [`cache::AuthCache`] per cache setting; the tick calls
//!   [`cache::AuthCache::expire`].
//!
//! # Per request
//!
//! The caller finds the rule with [`require::RequireTable::lookup`] (first
//! prefix match against the decoded URL path, in config order; case-blind when
//! `server.force-lowercase-filenames` is set), then calls [`check`], which
//! dispatches to [`basic::verify_basic`], [`digest::verify_digest`] or the
//! `extern` check. [`challenge`] builds the `WWW-Authenticate` values alone.
//! What each [`Outcome`] means on the wire, as lighttpd answers:
//!
//! | outcome | status | headers | notes |
//! |---|---|---|---|
//! | `Granted` | request goes on | `Authentication-Info: nextnonce="..."` when a Digest nonce is older than 540 s | gateways get `REMOTE_USER` = user and `AUTH_TYPE` = `Basic` / `Digest` (not set again for `extern`) |
//! | `Unauthorized` | 401 | one `WWW-Authenticate` per value: `Basic realm="R", charset="UTF-8"`, or per algorithm `Digest realm="R", charset="UTF-8", algorithm=SHA-256, nonce="...", qop="auth"` (+ `userhash=true`, `stale=true`); none for `extern` | no header, wrong password, unknown user, user not allowed by `require`; `close` = lighttpd turns keep-alive off after a wrong password or unknown user |
//! | `BadRequest` | 400 | | Basic: not base64, no `:`, NUL, user name not UTF-8; Digest: a syntax error or a parameter given twice, missing field, bad `response` hex, `qop=auth-int` (or any qop but `auth`), bad `username*`, `uri` not the request-target, malformed nonce |
//! | `Misconfigured` | 500 | | no `auth.backend`, or `digest` over `htpasswd`, `ldap`, `pam`, `sasl` or `gssapi` (glint gets no HA1 from them) |
//! | `Blocking` | (later) | | `ldap`, `pam`, `sasl`, `dbi`, `gssapi`: the caller runs [`external::Spec::verify`] on [`blocking`]'s threads (a full queue: 503) and [`external::conclude`] makes one of the above of its verdict |
//! | `BlockingDigest` | (later) | | `digest` over `dbi`: the caller runs [`dbi::verify_digest`] on [`blocking`]'s threads and [`digest::conclude_digest`] makes a grant or a Digest 401 of its verdict |
//! | `Negotiate` | (later) | | `"method" => "gssapi"` with a decoded token: the same, with [`gssapi`]'s own answers (401 `Negotiate`, 500, `AUTH_TYPE` = `GSSAPI`) |
//!
//! lighttpd never answers 403 from mod_auth: an authenticated user whom the
//! rule does not list gets the same 401 challenge. Every `log` in an outcome
//! is a line for the error log; the caller adds the client's address, as
//! lighttpd's lines carry it ("password doesn't match for /x username: u IP: ...").
//!
//! # Timing
//!
//! A wrong password costs what a right one costs: every check computes the
//! full hash and compares in constant time ([`ct_eq`]). An unknown user costs
//! what a known one costs: the check runs against a dummy of the file's most
//! common hash kind and cost ([`userfile::UserFile::dummy_scheme`]) and its
//! result is thrown away. The one exception is opt-in: with `auth.cache` a
//! cached right password skips bcrypt, which is the cache's purpose.
//!
//! The hashing runs on the event loop. Measured once by hand (release build,
//! this 2-core machine, median per check; right, wrong and unknown within 5%
//! of each other): bcrypt cost 10 58 ms, cost 5 1.9 ms, SHA-512-crypt at 5000
//! rounds 1.3 ms, apr1 0.18 ms, `{SHA}`, plain and htdigest under 1 µs;
//! by libxcrypt, yescrypt at Debian's default `j9T` 45 ms and scrypt's
//! default 300 ms (by Python's crypt), which is why those go to
//! [`blocking`]'s threads ([`userfile::UserFile::is_offloaded`]). So a
//! rule over a cost-10 file does at most ~17 uncached Basic checks a second,
//! and `auth.cache` is what makes such a file usable under load.

mod algorithm;
pub mod ask;
pub mod basic;
pub mod blocking;
pub mod cache;
mod check;
pub mod crypt;
pub mod dbi;
pub mod digest;
mod dl;
pub mod external;
pub mod gssapi;
pub mod ldap_check;
pub mod nonce;
pub mod pam;
pub mod require;
pub mod sasl;
mod sasl_lib;
pub mod userfile;

#[cfg(test)]
mod tests;

pub use check::{challenge, check};

use cache::AuthCache;
use nonce::NonceKey;
use require::BackendKind;
use userfile::UserFile;

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
    /// mod_authn_gssapi's Negotiate.
    Gssapi,
}

impl AuthType {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::Basic => "Basic",
            AuthType::Digest => "Digest",
            AuthType::Gssapi => "GSSAPI",
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
    /// The back end blocks (LDAP, PAM): the caller runs
    /// [`external::Spec::verify`] off the loop with these credentials (the
    /// cache had no entry for them) and ends with [`external::conclude`].
    Blocking(basic::Credentials),
    /// `"method" => "gssapi"` with this decoded Negotiate token: the
    /// caller runs [`gssapi::verify`] off the loop.
    Negotiate(Vec<u8>),
    /// A Digest check whose HA1 a back end that blocks holds (dbi): the
    /// caller runs [`dbi::verify_digest`] off the loop and ends with
    /// [`digest::conclude_digest`].
    BlockingDigest(Box<digest::DigestWork>),
}

impl Outcome {
    /// The HTTP status, or `None` when the request goes on.
    pub fn status(&self) -> Option<u16> {
        match self {
            Outcome::Granted(_)
            | Outcome::Blocking(_)
            | Outcome::BlockingDigest(_)
            | Outcome::Negotiate(_) => None,
            Outcome::Unauthorized { .. } => Some(401),
            Outcome::BadRequest { .. } => Some(400),
            Outcome::Misconfigured { .. } => Some(500),
        }
    }
}

/// The bytes after `scheme` (e.g. `b"Basic "`, matched ASCII case-blind).
pub(crate) fn strip_scheme<'h>(header: &'h [u8], scheme: &[u8]) -> Option<&'h [u8]> {
    let head = header.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &header[scheme.len()..])
}

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

/// Constant-time equality: every byte is looked at whatever the first
/// difference. Lengths are not secret (a hash's length is its algorithm's).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

/// HMAC-SHA-256 (RFC 2104) over the concatenation of `parts`: the keyed hash
/// behind nonces and cache keys. 32-byte keys only, so no key hashing step.
pub(crate) fn hmac_sha256(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let mut inner = Sha256::new();
    inner.update(ipad);
    for p in parts {
        inner.update(p);
    }
    let inner = inner.finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// 32 bytes from the kernel's CSPRNG (getrandom(2)).
pub(crate) fn random_key() -> std::io::Result<[u8; 32]> {
    let mut k = [0u8; 32];
    getrandom::fill(&mut k).map_err(|e| std::io::Error::other(format!("getrandom: {e}")))?;
    Ok(k)
}
