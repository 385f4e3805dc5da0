//! `server.error-handler` and `server.error-handler-404`: which error
//! answers a handler's URL replaces, the status the client then gets, and
//! glint's answer to a request that could not be parsed.

use std::rc::Rc;

use super::{Carry, Services};
use crate::config::Settings;
use crate::msg::Reply;

/// An error answer replaced by `server.error-handler` or
/// `server.error-handler-404`: the handler's URL runs instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorRun {
    /// The handler's URL.
    pub target: String,
    /// The status of the error it replaces (`REDIRECT_STATUS` for backends).
    pub status: u16,
    /// `server.error-handler` (runs as a GET; the error's status stays),
    /// rather than `server.error-handler-404`.
    pub generic: bool,
}

/// The error handler to run for an answer with `status`, if the settings
/// have one for it and this is not already an error handler's run.
pub(super) fn error_handler_for(s: &Settings, status: u16, carry: &Carry) -> Option<ErrorRun> {
    // Errors about the request itself (malformed, too large, an unknown
    // method or version) are answered as they are.
    // A 401 keeps its own page: its challenge must reach the client.
    if carry.error.is_some()
        || status < 400
        || matches!(status, 400 | 401 | 413 | 414 | 431 | 501 | 505)
    {
        return None;
    }
    error_handler_of(s, status)
}

/// The error handler the settings name for `status`:
/// `server.error-handler` takes every error (as a GET); the older
/// `server.error-handler-404` takes 403 and 404 (same method), as lighttpd.
pub(crate) fn error_handler_of(s: &Settings, status: u16) -> Option<ErrorRun> {
    if let Some(h) = s.errors.error_handler.as_deref() {
        return Some(ErrorRun {
            target: h.to_string(),
            status,
            generic: true,
        });
    }
    match (s.errors.error_handler_404.as_deref(), status) {
        (Some(h), 403 | 404) => Some(ErrorRun {
            target: h.to_string(),
            status,
            generic: false,
        }),
        _ => None,
    }
}

/// The status the client gets when an error handler answered with
/// `handler`: `server.error-handler` keeps the error's status; an answer
/// of `server.error-handler-404` keeps its own unless it failed too (403,
/// 404), as lighttpd.
pub fn error_run_status(run: &ErrorRun, handler: u16) -> u16 {
    if run.generic || matches!(handler, 403 | 404) {
        run.status
    } else {
        handler
    }
}

/// glint's answer to a request that could not be parsed (the connection
/// closes after it).
pub fn error_reply(sv: &mut Services, status: u16) -> Reply {
    sv.reply.reset(Rc::clone(&sv.config.global), false);
    sv.reply.close = true;
    sv.reply.error(status);
    sv.take_reply()
}
