//! What a blocking back end is asked ([`Ask`]) and answers ([`Verdict`]).

use super::require::Rule;

/// What one check came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The password is right and the rule lets the user in.
    Granted,
    /// Refused; the line to log says why (wrong password, unknown user,
    /// not in the rule's groups, back end down).
    Denied(String),
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
}
