//! HTTP Basic (RFC 7617) as lighttpd 1.4.69's mod_auth does it.
//!
//! The header is `Basic ` (scheme case-blind, one space) and base64 of
//! `user:password`; the password may hold `:`. lighttpd answers 401 (not 400)
//! to more than 1363 base64 characters, its 1023-byte decode buffer, and 400
//! to base64 it cannot decode or to a missing `:`. glint also answers 400 to a
//! NUL (lighttpd's C strings would cut the password there) and to base64 with
//! junk in it (lighttpd decodes up to the first bad character); padding is
//! optional and spaces or tabs inside are skipped, as lighttpd skips them.

use base64::engine::{general_purpose, DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;

use super::algorithm::DigestAlgorithm;
use super::cache::AuthCache;
use super::digest::quote;
use super::require::{BackendKind, Require};
use super::{strip_scheme, AuthRequest, AuthType, Backend, Grant, Outcome};

/// lighttpd's cap on the base64 text: 1363 characters decode to at most
/// 1023 bytes, its buffer less the NUL.
pub const MAX_BASE64: usize = 1363;

/// Decoded Basic credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: Vec<u8>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// Why a Basic header was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BasicError {
    /// Not `Basic ...`: answer with the challenge.
    NotBasic,
    /// Longer than [`MAX_BASE64`]: lighttpd answers 401 with the challenge.
    TooLong,
    /// 400, with the reason to log.
    Malformed(&'static str),
}

const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Parses an `Authorization` header value as Basic credentials.
pub fn parse_basic(header: &[u8]) -> Result<Credentials, BasicError> {
    let b64 = strip_scheme(header, b"Basic ").ok_or(BasicError::NotBasic)?;
    if b64.len() > MAX_BASE64 {
        return Err(BasicError::TooLong);
    }
    let compact: Vec<u8> = b64
        .iter()
        .copied()
        .filter(|&b| b != b' ' && b != b'\t')
        .collect();
    let decoded = B64
        .decode(&compact)
        .map_err(|_| BasicError::Malformed("decoding base64-string failed"))?;
    if decoded.is_empty() {
        return Err(BasicError::Malformed("decoding base64-string failed"));
    }
    if decoded.contains(&0) {
        return Err(BasicError::Malformed("NUL in credentials"));
    }
    let colon = decoded
        .iter()
        .position(|&b| b == b':')
        .ok_or(BasicError::Malformed("missing ':' in credentials"))?;
    let user = std::str::from_utf8(&decoded[..colon])
        .map_err(|_| BasicError::Malformed("user name is not UTF-8"))?;
    Ok(Credentials {
        user: user.to_string(),
        password: decoded[colon + 1..].to_vec(),
    })
}

/// `Basic realm="R", charset="UTF-8"`, lighttpd's Basic challenge.
pub fn basic_challenge(rule: &Require) -> String {
    format!("Basic realm={}, charset=\"UTF-8\"", quote(&rule.realm))
}

fn unauthorized(rule: &Require, close: bool, log: Option<String>) -> Outcome {
    Outcome::Unauthorized {
        www_authenticate: vec![basic_challenge(rule)],
        close,
        log,
    }
}

/// The algorithm whose HA1 an htdigest file is checked with for Basic:
/// lighttpd supports one, SHA-256 when offered, else SHA-512-256, else MD5.
fn htdigest_algorithm(rule: &Require) -> DigestAlgorithm {
    [DigestAlgorithm::Sha256, DigestAlgorithm::Sha512_256]
        .into_iter()
        .find(|a| rule.algorithms.contains(a))
        .unwrap_or(DigestAlgorithm::Md5)
}

/// Checks `Authorization: Basic` for `rule`: credentials, then the cache,
/// then the backend, then the rule's user list.
pub fn verify_basic(
    rule: &Require,
    backend: Option<Backend<'_>>,
    cache: Option<&mut AuthCache>,
    req: &AuthRequest<'_>,
) -> Outcome {
    let Some(backend) = backend else {
        return Outcome::Misconfigured {
            log: format!("auth.backend not configured for {}", req.path),
        };
    };
    let creds = match req.authorization.map(parse_basic) {
        None | Some(Err(BasicError::NotBasic)) | Some(Err(BasicError::TooLong)) => {
            return unauthorized(rule, false, None)
        }
        Some(Err(BasicError::Malformed(why))) => {
            return Outcome::BadRequest {
                log: why.to_string(),
            }
        }
        Some(Ok(c)) => c,
    };
    let generation = backend.users.map_or(0, |u| u.generation());
    let mut cache = cache;
    if let Some(c) = cache.as_deref_mut() {
        if c.hit(rule.id, generation, &creds.user, &creds.password, req.now) {
            return granted(creds.user);
        }
    }
    // (A back end that blocks, or a hash that only libxcrypt checks, and
    // slowly: the check runs on the worker threads.)
    let offloaded = backend
        .users
        .is_some_and(|u| u.kind() == backend.kind && u.is_offloaded(&creds.user));
    if backend.kind.is_blocking() || offloaded {
        return Outcome::Blocking(creds);
    }
    let password_ok = match backend.users {
        Some(users) if users.kind() == backend.kind => {
            let algo = if backend.kind == BackendKind::Htdigest {
                htdigest_algorithm(rule)
            } else {
                DigestAlgorithm::Md5
            };
            users.verify_password(&creds.user, &creds.password, &rule.realm, algo)
        }
        _ => false,
    };
    // As lighttpd: a user the rule does not list gets the same 401 and log
    // line as a wrong password.
    if !password_ok || !rule.matches(Some(&creds.user), &[], None) {
        let why = if backend.users.is_none() {
            " (no user file configured)"
        } else {
            ""
        };
        return unauthorized(
            rule,
            true,
            Some(format!(
                "password doesn't match for {} username: {}{why}",
                req.path, creds.user
            )),
        );
    }
    if let Some(c) = cache {
        c.insert(rule.id, generation, &creds.user, &creds.password, req.now);
    }
    granted(creds.user)
}

fn granted(user: String) -> Outcome {
    Outcome::Granted(Grant {
        user,
        auth_type: Some(AuthType::Basic),
        authentication_info: None,
    })
}

/// Base64 of `user:password`, for tests and clients.
pub fn encode(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}
