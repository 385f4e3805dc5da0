//! The one entry point per request: [`check`] and what it answers.

use super::basic::{basic_challenge, verify_basic};
use super::digest::{digest_challenge, verify_digest};
use super::nonce::NonceKey;
use super::require::{Method, Require};
use super::{AuthRequest, Context, Grant, Outcome};

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
        Method::Gssapi => match super::gssapi::negotiate_token(req.authorization) {
            Ok(token) => Outcome::Negotiate(token),
            Err(outcome) => outcome,
        },
    }
}

/// The `WWW-Authenticate` values a 401 for `rule` carries at `now`.
pub fn challenge(rule: &Require, key: &NonceKey, now: i64) -> Vec<String> {
    match rule.method {
        Method::Basic => vec![basic_challenge(rule)],
        Method::Digest => digest_challenge(rule, key, now, None),
        Method::Extern => Vec::new(),
        Method::Gssapi => vec!["Negotiate".into()],
    }
}
