//! What a blocking back end is asked ([`Ask`]) and answers ([`Verdict`]).

use super::gssapi::ccache::Ccache;
use super::require::Rule;
use super::Outcome;

/// What one check came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The password is right and the rule lets the user in.
    Granted,
    /// Refused; the line to log says why (wrong password, unknown user,
    /// not in the rule's groups, back end down).
    Denied(String),
    /// A back end with answers of its own (mod_authn_gssapi: its own
    /// challenges, 500, the client's name from its ticket): the request's
    /// outcome, and with a grant the credentials cache its back ends get.
    Answer(Outcome, Option<Ccache>),
}

/// Credentials and the rule's list, as the worker thread gets them.
pub struct Ask {
    pub user: String,
    pub password: Vec<u8>,
    pub rule: Rule,
    /// The client's address (PAM's `PAM_RHOST`).
    pub remote: String,
    /// The rule's realm (saslauthd's user realm).
    pub realm: String,
    /// The decoded URL path, for log lines.
    pub path: String,
    /// The request's Host (mod_authn_gssapi's service principal).
    pub host: String,
    /// A Negotiate token (`"method" => "gssapi"`) instead of a password.
    pub token: Option<Vec<u8>>,
}
