//! HTTP Digest (RFC 7616) as lighttpd 1.4.69's mod_auth does it: MD5,
//! SHA-256 and SHA-512-256, each also as `-sess`; `qop=auth` or no qop (RFC
//! 2069 clients); `qop=auth-int` is refused with 400, as lighttpd refuses it;
//! `userhash` and `username*` (RFC 8187) are understood; no `opaque` is sent.
//! lighttpd does not track `nc`, and neither does glint: replay inside the
//! nonce's 10 minutes is not detected.
//!
//! Over a back end that blocks and holds HA1s (mod_authn_dbi) the checks
//! up to the nonce run here, on the loop; the rest is a [`DigestWork`]
//! that a worker thread finishes once the database gave the HA1
//! ([`Outcome::BlockingDigest`]).

pub use super::algorithm::{DigestAlgorithm, Hashed};
use super::nonce::{NonceCheck, NonceKey, NEXTNONCE_AFTER};
use super::require::{BackendKind, Require};
use super::{AuthRequest, AuthType, Backend, Grant, Outcome};

mod params;

pub use params::{
    decode_ext_value, parse_params, DigestParams, MAX_HEADER, MAX_PARAMS, MAX_USERNAME,
};

/// The expected `response` (RFC 7616 section 3.4.1) from the binary HA1.
#[allow(clippy::too_many_arguments)]
pub fn expected_response(
    algo: DigestAlgorithm,
    sess: bool,
    ha1: &Hashed,
    nonce: &[u8],
    cnonce: &[u8],
    nc: &[u8],
    qop: Option<&[u8]>,
    method: &[u8],
    uri: &[u8],
) -> Hashed {
    let mut a1 = ha1.hex();
    if sess {
        // RFC 2617 erratum 1649: H(A1) for -sess hashes the hex HA1.
        a1 = algo.hash(&[a1.as_bytes(), b":", nonce, b":", cnonce]).hex();
    }
    let a2 = algo.hash(&[method, b":", uri]).hex();
    match qop {
        Some(q) => algo.hash(&[
            a1.as_bytes(),
            b":",
            nonce,
            b":",
            nc,
            b":",
            cnonce,
            b":",
            q,
            b":",
            a2.as_bytes(),
        ]),
        None => algo.hash(&[a1.as_bytes(), b":", nonce, b":", a2.as_bytes()]),
    }
}

/// A Digest check that waits for its HA1 from a back end that blocks
/// (mod_authn_dbi): what the client sent, checked already up to the
/// nonce, and what finishing it needs.
#[derive(Clone, PartialEq, Eq)]
pub struct DigestWork {
    /// The user name as claimed (a userhash when `userhash`).
    pub user: String,
    pub userhash: bool,
    pub algo: DigestAlgorithm,
    pub sess: bool,
    /// The client's `response`, decoded from hex.
    pub response: Vec<u8>,
    pub nonce: Vec<u8>,
    pub cnonce: Vec<u8>,
    pub nc: Vec<u8>,
    pub qop: Option<Vec<u8>>,
    pub method: String,
    pub uri: Vec<u8>,
    /// The nonce's age in seconds (for `nextnonce`).
    pub age: i64,
}

impl std::fmt::Debug for DigestWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestWork")
            .field("user", &self.user)
            .field("algo", &self.algo)
            .finish_non_exhaustive()
    }
}

impl DigestWork {
    /// Whether the client's response is the one `ha1` gives (constant time).
    pub fn matches(&self, ha1: &Hashed) -> bool {
        let want = expected_response(
            self.algo,
            self.sess,
            ha1,
            &self.nonce,
            &self.cnonce,
            &self.nc,
            self.qop.as_deref(),
            self.method.as_bytes(),
            &self.uri,
        );
        super::ct_eq(want.as_slice(), &self.response)
    }
}

/// The request's outcome once a worker checked `work` for `rule`
/// (run on the loop): a grant (`nextnonce` when the nonce is getting
/// old), or the Digest challenge again.
pub fn conclude_digest(
    rule: &Require,
    key: &NonceKey,
    now: i64,
    path: &str,
    work: &DigestWork,
    verdict: super::ask::Verdict,
) -> Outcome {
    match verdict {
        super::ask::Verdict::Granted => {
            let nkey = rule.nonce_key.as_ref().unwrap_or(key);
            Outcome::Granted(Grant {
                user: work.user.clone(),
                auth_type: Some(AuthType::Digest),
                authentication_info: (work.age > NEXTNONCE_AFTER)
                    .then(|| format!("nextnonce=\"{}\"", nkey.make(now, work.algo, &rule.realm))),
            })
        }
        super::ask::Verdict::Denied(why) => unauthorized(
            rule,
            key,
            now,
            true,
            Some(format!(
                "digest: auth failed for {} on {path}: {why}",
                work.user
            )),
        ),
        // (A back end with answers of its own is not a Digest one.)
        super::ask::Verdict::Answer(outcome, _) => outcome,
    }
}

/// Quotes a realm for a challenge (RFC 7230 quoted-string).
pub(crate) fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// The `WWW-Authenticate` values for a Digest rule: one per algorithm,
/// strongest first; after a stale nonce only the client's algorithm, with `stale=true`.
pub fn digest_challenge(
    rule: &Require,
    key: &NonceKey,
    now: i64,
    stale: Option<DigestAlgorithm>,
) -> Vec<String> {
    let key = rule.nonce_key.as_ref().unwrap_or(key);
    let algos = match stale {
        Some(a) => vec![a],
        None => rule.algorithms.clone(),
    };
    algos
        .into_iter()
        .map(|a| {
            let mut v = format!(
                "Digest realm={}, charset=\"UTF-8\", algorithm={}, nonce=\"{}\", qop=\"auth\"",
                quote(&rule.realm),
                a.name(),
                key.make(now, a, &rule.realm)
            );
            if rule.userhash {
                v.push_str(", userhash=true");
            }
            if stale.is_some() {
                v.push_str(", stale=true");
            }
            v
        })
        .collect()
}

fn unauthorized(
    rule: &Require,
    key: &NonceKey,
    now: i64,
    close: bool,
    log: Option<String>,
) -> Outcome {
    Outcome::Unauthorized {
        www_authenticate: digest_challenge(rule, key, now, None),
        close,
        log,
    }
}

fn bad(log: String) -> Outcome {
    Outcome::BadRequest {
        log: format!("digest: {log}"),
    }
}

/// Checks `Authorization: Digest` for `rule`, in lighttpd's order: params,
/// realm, algorithm, response format, qop, uri, nonce, then the user and the
/// response, then the rule's user list.
pub fn verify_digest(
    rule: &Require,
    backend: Option<Backend<'_>>,
    key: &NonceKey,
    req: &AuthRequest<'_>,
) -> Outcome {
    match check_digest(rule, backend, key, req) {
        Ok(grant) => Outcome::Granted(grant),
        Err(refusal) => refusal,
    }
}

/// [`verify_digest`]'s steps; each refusal is the [`Outcome`] to answer.
fn check_digest(
    rule: &Require,
    backend: Option<Backend<'_>>,
    key: &NonceKey,
    req: &AuthRequest<'_>,
) -> Result<Grant, Outcome> {
    let backend = digest_backend(backend, req)?;
    let work = checked_request(rule, key, req)?;
    if backend.kind == BackendKind::Dbi {
        // The HA1 is in a database: a worker thread finishes the check.
        return Err(Outcome::BlockingDigest(Box::new(work)));
    }
    let now = req.now;
    let Some(users) = backend.users else {
        let log = format!("digest: no user file configured for {}", req.path);
        return Err(unauthorized(rule, key, now, true, Some(log)));
    };
    let (algo, username) = (work.algo, &work.user);
    // userhash: the client sent H(user:realm); find the user it stands for.
    let user = if work.userhash {
        users.resolve_userhash(&rule.realm, algo, &username.to_ascii_lowercase())
    } else {
        Some(username.clone())
    };
    let lookup = users.digest_ha1(user.as_deref().unwrap_or(username), &rule.realm, algo);
    let ok = work.matches(&lookup.ha1);
    let (Some(user), true, true) = (user, lookup.known, ok) else {
        return Err(auth_failed(rule, key, now, username, lookup.known));
    };
    if !rule.matches(Some(&user), &[], None) {
        let log = format!(
            "digest: user {user} not allowed by require for {}",
            req.path
        );
        return Err(unauthorized(rule, key, now, false, Some(log)));
    }
    let nkey = rule.nonce_key.as_ref().unwrap_or(key);
    let authentication_info = (work.age > NEXTNONCE_AFTER)
        .then(|| format!("nextnonce=\"{}\"", nkey.make(now, algo, &rule.realm)));
    Ok(Grant {
        user,
        auth_type: Some(AuthType::Digest),
        authentication_info,
    })
}

/// The request's `Authorization: Digest` checked up to and with its nonce
/// (all but the user's HA1), in lighttpd's order.
fn checked_request(
    rule: &Require,
    key: &NonceKey,
    req: &AuthRequest<'_>,
) -> Result<DigestWork, Outcome> {
    let now = req.now;
    let Some(value) = req
        .authorization
        .and_then(|v| super::strip_scheme(v, b"Digest "))
    else {
        return Err(unauthorized(rule, key, now, false, None));
    };
    let p = parse_params(value).map_err(|e| bad(format!("malformed Authorization header: {e}")))?;
    let (Some(realm), Some(nonce), Some(uri), Some(response)) =
        (&p.realm, &p.nonce, &p.uri, &p.response)
    else {
        return Err(bad("missing field".into()));
    };
    let (username, userhash) = digest_username(&p)?;
    if realm.as_slice() != rule.realm.as_bytes() {
        return Err(unauthorized(
            rule,
            key,
            now,
            false,
            Some("digest: realm mismatch".into()),
        ));
    }
    let (algo, sess) = digest_algorithm(rule, key, now, &p)?;
    let mut got = [0u8; 32];
    let got = &mut got[..algo.digest_len()];
    if crate::syntax::hex_decode_into(response, got).is_none() {
        return Err(bad(format!(
            "({}): invalid format",
            String::from_utf8_lossy(response)
        )));
    }
    check_qop_and_uri(&p, uri, req)?;
    let nkey = rule.nonce_key.as_ref().unwrap_or(key);
    let age = check_nonce(rule, key, nkey, nonce, algo, now)?;
    Ok(DigestWork {
        user: username,
        userhash,
        algo,
        sess,
        response: got.to_vec(),
        nonce: nonce.clone(),
        cnonce: p.cnonce.clone().unwrap_or_default(),
        nc: p.nc.clone().unwrap_or_default(),
        qop: p.qop.clone(),
        method: req.method.to_string(),
        uri: uri.clone(),
        age,
    })
}

/// The backend, if it can give a digest HA1 (htpasswd's hashes cannot).
fn digest_backend<'b>(
    backend: Option<Backend<'b>>,
    req: &AuthRequest<'_>,
) -> Result<Backend<'b>, Outcome> {
    match backend {
        None => Err(Outcome::Misconfigured { log: format!("auth.backend not configured for {}", req.path) }),
        Some(b) if b.kind == BackendKind::Htpasswd => Err(Outcome::Misconfigured {
            log: format!("auth.require \"method\" => \"digest\" invalid (try \"basic\"?) for {}: htpasswd hashes cannot give the digest HA1", req.path),
        }),
        // lighttpd's LDAP, PAM and SASL back ends check a password, not
        // a digest; dbi's holds HA1s.
        Some(b) if b.kind.is_blocking() && b.kind != BackendKind::Dbi => Err(Outcome::Misconfigured {
            log: format!("auth.require \"method\" => \"digest\" invalid (try \"basic\"?) for {}: the auth.backend checks passwords only", req.path),
        }),
        Some(b) => Ok(b),
    }
}

/// The user name the client claims (`username`, or `username*` decoded) and
/// whether it is a userhash; a missing or doubled field is a 400.
fn digest_username(p: &DigestParams) -> Result<(String, bool), Outcome> {
    if p.qop.is_some() && (p.nc.is_none() || p.cnonce.is_none())
        || p.username.is_some() == p.username_star.is_some()
    {
        return Err(bad("missing field".into()));
    }
    let userhash = p
        .userhash
        .as_deref()
        .is_some_and(|v| v.eq_ignore_ascii_case(b"true"));
    let username = match (&p.username, &p.username_star) {
        (_, Some(_)) if userhash => {
            return Err(bad("invalid \"username*\" with \"userhash\" = true".into()))
        }
        (_, Some(star)) => decode_ext_value(star).map_err(|e| bad(e.into()))?,
        (Some(u), None) => {
            String::from_utf8(u.clone()).map_err(|_| bad("username is not UTF-8".into()))?
        }
        (None, None) => return Err(bad("missing field".into())),
    };
    Ok((username, userhash))
}

/// The algorithm the client chose, if `rule` allows it, and whether it is a
/// `-sess` one (which needs a `cnonce`).
fn digest_algorithm(
    rule: &Require,
    key: &NonceKey,
    now: i64,
    p: &DigestParams,
) -> Result<(DigestAlgorithm, bool), Outcome> {
    let algo_text = String::from_utf8_lossy(p.algorithm.as_deref().unwrap_or(b"MD5")).into_owned();
    let (algo, sess) = match DigestAlgorithm::parse(&algo_text) {
        Some((a, s)) if rule.algorithms.contains(&a) => (a, s),
        _ => {
            let log = format!("digest: ({algo_text}): invalid");
            return Err(unauthorized(rule, key, now, false, Some(log)));
        }
    };
    if sess && p.cnonce.is_none() {
        return Err(bad(format!("({algo_text}): missing field")));
    }
    Ok((algo, sess))
}

/// `qop` must be absent or `auth`; `uri` must be the request's target.
fn check_qop_and_uri(p: &DigestParams, uri: &[u8], req: &AuthRequest<'_>) -> Result<(), Outcome> {
    match p.qop.as_deref() {
        None => {}
        Some(q) if q.eq_ignore_ascii_case(b"auth") => {}
        Some(q) if q.eq_ignore_ascii_case(b"auth-int") => {
            return Err(bad("qop=auth-int not supported".into()))
        }
        Some(q) => {
            return Err(bad(format!(
                "qop={} not supported",
                String::from_utf8_lossy(q)
            )))
        }
    }
    if uri != req.target {
        return Err(bad(format!(
            "auth failed: uri mismatch ({} != {})",
            String::from_utf8_lossy(req.target),
            String::from_utf8_lossy(uri)
        )));
    }
    Ok(())
}

/// The nonce's age if `nkey` issued it and it is fresh; otherwise the 401
/// (stale: a new challenge) or 400 to answer.
fn check_nonce(
    rule: &Require,
    key: &NonceKey,
    nkey: &NonceKey,
    nonce: &[u8],
    algo: DigestAlgorithm,
    now: i64,
) -> Result<i64, Outcome> {
    match nkey.check(nonce, algo, &rule.realm, now) {
        NonceCheck::Valid { age } => Ok(age),
        NonceCheck::Stale => Err(Outcome::Unauthorized {
            www_authenticate: digest_challenge(rule, key, now, Some(algo)),
            close: false,
            log: None,
        }),
        NonceCheck::Forged => Err(unauthorized(
            rule,
            key,
            now,
            false,
            Some("digest: nonce mismatch".into()),
        )),
        // A nonce not in glint's form (another server's, a client's
        // garbage): as lighttpd without a nonce-secret, the client is asked
        // to try again with a fresh one (401, stale=true); with a
        // nonce-secret lighttpd refuses it with 400.
        NonceCheck::Malformed if rule.nonce_key.is_some() => Err(bad("nonce invalid".into())),
        NonceCheck::Malformed => Err(Outcome::Unauthorized {
            www_authenticate: digest_challenge(rule, key, now, Some(algo)),
            close: false,
            log: Some("digest: nonce not issued here; asking for a fresh one".into()),
        }),
    }
}

/// The 401 for a wrong response or an unknown user (the connection closes).
fn auth_failed(rule: &Require, key: &NonceKey, now: i64, username: &str, known: bool) -> Outcome {
    let why = if known {
        "wrong password"
    } else {
        "unknown user"
    };
    let log = format!("digest: auth failed for {username}: {why}");
    unauthorized(rule, key, now, true, Some(log))
}
