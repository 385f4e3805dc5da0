//! When a request may be sent again on a fresh connection.
//!
//! A kept upstream connection can be closed by the upstream at the moment
//! glint reuses it (its idle time-out and glint's request cross on the
//! wire): the request then fails with no answer, through no fault of the
//! request. Sending it again is safe only when doing it twice means the
//! same as doing it once (idempotent methods, RFC 9110 9.2.2), and RFC 9110
//! 9.2.2 asks a client not to retry automatically otherwise.

/// What happened to the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The connection came from the idle pool (not opened for this request).
    pub reused: bool,
    /// Some bytes of an answer arrived before the failure.
    pub answer_started: bool,
    /// The request body glint sent is still at hand to send again (none, or
    /// all of it still buffered).
    pub body_replayable: bool,
}

/// The idempotent methods of RFC 9110 9.2.2, plus WebDAV's read-only
/// PROPFIND (safe and idempotent in IANA's method registry). Method names
/// are case-sensitive (RFC 9110 9.1).
fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE" | "PROPFIND"
    )
}

/// Whether the request may go again on a fresh connection: a reused
/// connection closed (EOF, reset, broken pipe) before any answer byte, for
/// an idempotent method whose body can be sent again. A fresh connection
/// that fails is the backend's failure (the caller answers 502 and
/// disables it for `disable-time`), never retried here.
pub fn may_retry(method: &str, f: Failure) -> bool {
    f.reused && !f.answer_started && f.body_replayable && idempotent(method)
}
