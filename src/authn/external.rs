//! The back ends that ask someone else (mod_authn_ldap, mod_authn_pam,
//! mod_authn_sasl, mod_authn_dbi, mod_authn_gssapi):
//! what each needs, compiled from its options once per scope, and the
//! check itself, which blocks and so runs on [`super::blocking`]'s
//! threads. A check answers a [`Verdict`]; the loop turns it into the
//! request's [`super::Outcome`] with [`conclude`].
//!
//! As lighttpd: a back end that fails (server down, time-out, bad
//! configuration found at run time) refuses the login with 401 and a log
//! line; the next request tries again, so a back end that comes back is
//! used at once.

use std::sync::Arc;

use super::ask::{Ask, Verdict};
use super::basic::basic_challenge;
use super::crypt::PasswordHash;
use super::dbi::{self, DbiSpec};
use super::gssapi::{self, GssOptions};
use super::ldap_check::{self, LdapSpec};
use super::pam::{self, PamSpec};
use super::require::Require;
use super::sasl::{self, SaslSpec};
use super::{AuthType, Grant, Outcome};

/// A back end that blocks, ready to run.
#[derive(Clone, Debug)]
pub enum Spec {
    Ldap(Arc<LdapSpec>),
    Pam(Arc<PamSpec>),
    Sasl(Arc<SaslSpec>),
    Dbi(Arc<DbiSpec>),
    Gssapi(Arc<GssOptions>),
    /// An htpasswd hash only libxcrypt checks (yescrypt, scrypt: slow),
    /// and whether its user is known (else it is the dummy).
    Hash(Arc<(PasswordHash, bool)>),
}

impl Spec {
    /// Checks `ask` against the back end: blocks for at most the back
    /// end's time-out (LDAP) or as long as the PAM stack takes.
    pub fn verify(&self, ask: &Ask) -> Verdict {
        match self {
            Spec::Ldap(s) => ldap_check::verify(s, ask),
            Spec::Pam(s) => pam::verify(s, ask),
            Spec::Sasl(s) => sasl::verify(s, ask, &ask.realm),
            Spec::Dbi(s) => dbi::verify(s, ask),
            Spec::Gssapi(s) => gssapi::verify(s, ask),
            Spec::Hash(h) => {
                let (hash, known) = h.as_ref();
                let ok = hash.verify(&ask.password);
                if !*known {
                    Verdict::Denied("htpasswd: no such user".into())
                } else if !ok {
                    Verdict::Denied("htpasswd: wrong password".into())
                } else if ask.rule.valid_user || ask.rule.users.contains(&ask.user) {
                    Verdict::Granted
                } else {
                    Verdict::Denied("not allowed by auth.require".into())
                }
            }
        }
    }
}

/// The request's outcome for `verdict` under `rule` (run on the loop).
pub fn conclude(rule: &Require, path: &str, user: String, verdict: Verdict) -> Outcome {
    match verdict {
        Verdict::Granted => Outcome::Granted(Grant {
            user,
            auth_type: Some(AuthType::Basic),
            authentication_info: None,
        }),
        Verdict::Answer(outcome, _) => outcome,
        Verdict::Denied(why) => Outcome::Unauthorized {
            www_authenticate: vec![basic_challenge(rule)],
            close: true,
            log: Some(format!(
                "password doesn't match for {path} username: {user} ({why})"
            )),
        },
    }
}
