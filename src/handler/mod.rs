//! From a parsed request to a queued response: path normalisation, the
//! per-request settings, the handler, the access log.

pub mod static_file;

use crate::accesslog::Entry;
use crate::config::RequestFacts;
use crate::connection::Connection;
use crate::http::request::{Body, Method, Request};
use crate::http::response::Responder;
use crate::path::normalize;
use crate::server::Shared;

/// What to do with a request body after the response is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyAction {
    /// Read and drop it, keeping the connection if the request allows.
    Discard,
    /// Close the connection after the response.
    Close,
}

/// Answers one parsed request into `conn.out`.
pub fn respond(
    conn: &mut Connection,
    sh: &mut Shared,
    req: &Request<'_, '_>,
    keep_alive: bool,
) -> BodyAction {
    conn.prepare_output(sh);
    let head_start = conn.out.mem.len();
    let Shared {
        config,
        clock,
        scratch,
        logs,
        stats,
        ports,
        ..
    } = sh;

    scratch.host.clear();
    for &b in req.host {
        scratch.host.push(b.to_ascii_lowercase() as char);
    }
    let path_ok =
        req.target == "*" || normalize(req.path(), &mut scratch.decoded, &mut scratch.path).is_ok();
    let facts = RequestFacts {
        listener: conn.listener,
        remote_ip: conn.peer,
        scheme: "http",
        method: req.method_str,
        host: &scratch.host,
        url: if path_ok { &scratch.path } else { "" },
        query: req.query(),
        headers: req.headers,
    };
    let resolved = config.resolve(&facts);
    let settings = &*resolved.settings;
    let mut r = Responder::new(
        &mut conn.out,
        &clock.http_date,
        settings,
        req.method == Method::Head,
        keep_alive,
        req.minor,
    );
    let mut action = BodyAction::Discard;
    let too_large = match req.body {
        Body::Length(n) => {
            settings.max_request_size_kb > 0 && n > settings.max_request_size_kb * 1024
        }
        _ => false,
    };
    if req.method == Method::Unknown {
        r.error(501);
    } else if !path_ok {
        r.error(400);
    } else if too_large {
        r.keep_alive = false;
        r.error(413);
        action = BodyAction::Close;
    } else if req.target == "*" {
        r.start(200);
        r.header("Allow", b"GET, HEAD, OPTIONS");
        r.end_head(Some(0));
    } else {
        let sreq = static_file::StaticRequest {
            method: req.method,
            raw_path: req.path(),
            path: &scratch.path,
            query: req.query(),
            host: req.host,
            headers: req.headers,
        };
        static_file::serve(&sreq, &mut r, &mut scratch.fs_path);
    }
    if r.force_close {
        action = BodyAction::Close;
    }
    let (status, body_len) = (r.status, r.body_len);
    let head_bytes = (conn.out.mem.len() - head_start) as u64;
    stats.requests += 1;
    if let Some(name) = &settings.accesslog_filename {
        let format = settings
            .accesslog_format
            .as_deref()
            .unwrap_or(crate::config::DEFAULT_ACCESSLOG_FORMAT);
        let e = Entry {
            remote: conn.peer,
            time: &clock.clf_date,
            request: Some(req),
            raw_line: b"",
            status,
            body_bytes: body_len,
            head_bytes,
            server_port: sh_port(ports, conn.listener),
            elapsed_us: 0,
        };
        logs.log(name, format, &e);
    }
    action
}

fn sh_port(ports: &[u16], listener: usize) -> u16 {
    ports.get(listener).copied().unwrap_or(0)
}

/// Answers a request that could not be parsed; the connection closes after it.
pub fn respond_error(conn: &mut Connection, sh: &mut Shared, status: u16, raw_line: &[u8]) {
    conn.prepare_output(sh);
    let settings = std::rc::Rc::clone(&sh.config.global);
    let mut r = Responder::new(
        &mut conn.out,
        &sh.clock.http_date,
        &settings,
        false,
        false,
        1,
    );
    r.error(status);
    let body_len = r.body_len;
    sh.stats.requests += 1;
    if let Some(name) = &settings.accesslog_filename {
        let format = settings
            .accesslog_format
            .as_deref()
            .unwrap_or(crate::config::DEFAULT_ACCESSLOG_FORMAT);
        let e = Entry {
            remote: conn.peer,
            time: &sh.clock.clf_date,
            request: None,
            raw_line,
            status,
            body_bytes: body_len,
            head_bytes: 0,
            server_port: sh_port(&sh.ports, conn.listener),
            elapsed_us: 0,
        };
        sh.logs.log(name, format, &e);
    }
}
