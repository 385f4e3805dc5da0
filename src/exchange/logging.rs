//! The access log line of each exchange (mod_accesslog), written when its
//! answer is complete: glint's own replies as they are written, gateway
//! answers at their end, requests that could not be parsed with their raw line.

use super::{ConnInfo, GwStart, Services};
use crate::accesslog::Entry;
use crate::config::Settings;
use crate::msg::Request;

/// Logs one of glint's replies (the one in [`Services::reply`]) to `req`;
/// a request run again is logged with the line the client sent.
pub fn log_reply(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    orig_line: Option<&[u8]>,
    head_bytes: u64,
) {
    let settings = std::rc::Rc::clone(&sv.reply.settings);
    let (status, body) = (sv.reply.status, sv.reply.body_len());
    let shown = Request {
        request_line: orig_line.unwrap_or(req.request_line),
        ..*req
    };
    let user = sv.remote_user.take();
    log_access(
        sv,
        &settings,
        info,
        Some(&shown),
        b"",
        status,
        body,
        head_bytes,
        user.as_deref(),
    );
}

/// Logs a gateway exchange that ended with `status` and `body` bytes.
pub fn log_gateway(sv: &mut Services, info: &ConnInfo, gw: &GwStart, status: u16, body: u64) {
    if gw.settings.accesslog_filename.is_none() {
        sv.stats.requests += 1;
        return;
    }
    let mut headers = Vec::new();
    let req = gw.head.view(&mut headers);
    let shown = Request {
        request_line: gw.carry.orig_line.as_deref().unwrap_or(req.request_line),
        ..req
    };
    let settings = std::rc::Rc::clone(&gw.settings);
    let user = gw.carry.remote_user.clone();
    log_access(
        sv,
        &settings,
        info,
        Some(&shown),
        b"",
        status,
        body,
        0,
        user.as_deref(),
    );
}

/// Logs the answer to a request that could not be parsed (the reply in
/// [`Services::reply`]), with the start of its raw line.
pub fn log_error(sv: &mut Services, info: &ConnInfo, raw_line: &[u8]) {
    let settings = std::rc::Rc::clone(&sv.reply.settings);
    let (status, body) = (sv.reply.status, sv.reply.body_len());
    log_access(sv, &settings, info, None, raw_line, status, body, 0, None);
}

#[allow(clippy::too_many_arguments)]
fn log_access(
    sv: &mut Services,
    settings: &Settings,
    info: &ConnInfo,
    req: Option<&Request<'_, '_>>,
    raw_line: &[u8],
    status: u16,
    body_len: u64,
    head_bytes: u64,
    remote_user: Option<&str>,
) {
    sv.stats.requests += 1;
    let Some(name) = &settings.accesslog_filename else {
        return;
    };
    let format = settings
        .accesslog_format
        .as_deref()
        .unwrap_or(crate::config::DEFAULT_ACCESSLOG_FORMAT);
    let e = Entry {
        remote: info.peer,
        time: &sv.clock.clf_date,
        request: req,
        raw_line,
        status,
        body_bytes: body_len,
        head_bytes,
        server_port: sv.ports.get(info.listener).copied().unwrap_or(0),
        elapsed_us: 0,
        remote_user,
    };
    sv.logs.log(name, format, &e);
}
