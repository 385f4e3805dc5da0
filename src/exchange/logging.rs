//! The access log line of each exchange (mod_accesslog), written when its
//! answer is complete: glint's own replies as they are written, gateway
//! answers at their end, requests that could not be parsed with their raw line.

use std::rc::Rc;

use super::{Answer, ConnInfo, GwStart, Services};
use crate::accesslog::Entry;
use crate::config::Settings;
use crate::msg::{OwnedHead, Reply, Request};

/// Logs one of glint's answers to `req`; a request run again is logged
/// with the line the client sent.
pub fn log_reply(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    a: &Answer,
    head_bytes: u64,
) {
    let settings = std::rc::Rc::clone(&a.reply.settings);
    let (status, body) = (a.reply.status, a.reply.body_len());
    let shown = Request {
        request_line: a.orig_line.as_deref().unwrap_or(req.request_line),
        ..*req
    };
    log_access(
        sv,
        &settings,
        info,
        Some(&shown),
        b"",
        status,
        body,
        head_bytes,
        a.remote_user.as_deref(),
    );
}

/// The log line of a reply whose body is compressed as it is sent: it is
/// written once the body is, with the bytes that went out.
#[derive(Debug)]
pub struct DeferredLog {
    settings: Rc<Settings>,
    head: OwnedHead,
    orig_line: Option<Vec<u8>>,
    status: u16,
    head_bytes: u64,
    remote_user: Option<String>,
}

/// Keeps what the log line of answer `a` to `req` needs, when there is an
/// access log to write it to (else it is counted now and `None` comes back).
pub fn defer_reply(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    a: &Answer,
    head_bytes: u64,
) -> Option<DeferredLog> {
    if !logs_access(&a.reply.settings) {
        counted(sv, info, a.reply.status, req.major);
        let (bytes_in, bytes_out) = (request_bytes(req), head_bytes + a.reply.body_len());
        rrd_count(sv, &a.reply.settings, bytes_in, bytes_out);
        return None;
    }
    Some(DeferredLog {
        settings: Rc::clone(&a.reply.settings),
        head: OwnedHead::of(req),
        orig_line: a.orig_line.clone(),
        status: a.reply.status,
        head_bytes,
        remote_user: a.remote_user.clone(),
    })
}

/// Writes a deferred log line: the reply's body was `body` bytes.
pub fn log_deferred(sv: &mut Services, info: &ConnInfo, d: &DeferredLog, body: u64) {
    let mut headers = Vec::new();
    let req = d.head.view(&mut headers);
    let shown = Request {
        request_line: d.orig_line.as_deref().unwrap_or(req.request_line),
        ..req
    };
    let settings = Rc::clone(&d.settings);
    log_access(
        sv,
        &settings,
        info,
        Some(&shown),
        b"",
        d.status,
        body,
        d.head_bytes,
        d.remote_user.as_deref(),
    );
}

/// Logs a gateway exchange that ended with `status` and `body` bytes.
pub fn log_gateway(sv: &mut Services, info: &ConnInfo, gw: &GwStart, status: u16, body: u64) {
    if Some(gw.route) == sv.upstream.local_route {
        // A WebDAV job may have changed files: no open file kept from
        // before it may answer a GET.
        sv.files.clear();
    }
    let mut headers = Vec::new();
    let req = gw.head.view(&mut headers);
    if !logs_access(&gw.settings) {
        counted(sv, info, status, gw.head.major());
        rrd_count(sv, &gw.settings, request_bytes(&req), body);
        return;
    }
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

/// Logs the answer `r` to a request that could not be parsed, with the
/// start of its raw line.
pub fn log_error(sv: &mut Services, info: &ConnInfo, r: &Reply, raw_line: &[u8]) {
    let settings = std::rc::Rc::clone(&r.settings);
    let (status, body) = (r.status, r.body_len());
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
    let major = match req {
        Some(r) => r.major,
        None => protocol_of(info),
    };
    counted(sv, info, status, major);
    let bytes_in = req.map_or(raw_line.len() as u64, request_bytes);
    rrd_count(sv, settings, bytes_in, head_bytes + body_len);
    if !logs_access(settings) {
        return;
    }
    let format = settings
        .accesslog
        .format
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
        escaping: if settings.accesslog.escaping_json {
            crate::accesslog::Escaping::Json
        } else {
            crate::accesslog::Escaping::Default
        },
    };
    if settings.accesslog.use_syslog {
        let facility = settings
            .error_log
            .syslog_facility
            .as_deref()
            .and_then(crate::syslog::facility)
            .unwrap_or(3);
        sv.logs
            .log_syslog(facility, settings.accesslog.syslog_level, format, &e);
    } else if let Some(name) = &settings.accesslog.filename {
        sv.logs.log(name, format, &e);
    }
}

/// Is there an access log for this scope (a file, a pipe or the system log)?
fn logs_access(s: &Settings) -> bool {
    s.accesslog.filename.is_some() || s.accesslog.use_syslog
}

/// An answer is complete: counted, and its row on the status page's
/// connection table says so.
fn counted(sv: &mut Services, info: &ConnInfo, status: u16, major: u8) {
    sv.stats.answered(status, major);
    sv.board.end(info.ex.slot, info.ex.stream);
}

/// The HTTP major version of a connection's exchanges, for a request
/// that could not be parsed.
fn protocol_of(info: &ConnInfo) -> u8 {
    if info.ex.slot >= crate::msg::H3_SLOT_BASE {
        3
    } else if info.ex.stream != 0 {
        2
    } else {
        1
    }
}

/// mod_rrdtool: a request done, counted in the database of its scope
/// (`bytes_in`: its head and announced body; `bytes_out`: the answer's bytes).
fn rrd_count(sv: &mut Services, settings: &Settings, bytes_in: u64, bytes_out: u64) {
    if let (Some(rrd), Some(db)) = (sv.rrd.as_mut(), settings.rrdtool_db.as_deref()) {
        rrd.account(db, bytes_in, bytes_out);
    }
}

/// The bytes of a request as the client sent them: its head, and its body
/// when it announced a length.
fn request_bytes(req: &Request<'_, '_>) -> u64 {
    let body = match req.body {
        crate::msg::Body::Length(n) => n,
        _ => 0,
    };
    req.head_len as u64 + body
}
