//! From a parsed request to a queued response, in fixed phases:
//! normalise the path, resolve the per-request settings, mod_status,
//! mod_redirect, mod_rewrite (then resolve again), mod_simple_vhost, the
//! static file (with mod_dirlisting, mod_expire, mod_setenv and
//! `server.error-handler-404`), the access log.

pub mod dirlisting;
pub mod expire;
pub mod rewrite;
pub mod static_file;
pub mod status_page;

use crate::accesslog::Entry;
use crate::config::{RequestFacts, Settings};
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

/// Most internal rewrites of one request (`url.rewrite-repeat` loops end here).
const MAX_REWRITES: usize = 8;

/// Answers one parsed request into `conn.out`.
pub fn respond(
    conn: &mut Connection,
    sh: &mut Shared,
    req: &Request<'_, '_>,
    keep_alive: bool,
) -> BodyAction {
    conn.prepare_output(sh);
    let head_start = conn.out.mem.len();

    sh.scratch.host.clear();
    for &b in req.host {
        sh.scratch.host.push(b.to_ascii_lowercase() as char);
    }
    // The URI as the client sent it; replaced by an internal rewrite.
    let mut rewritten: Option<String> = None;
    let mut resolved;
    let mut path_ok;
    let mut rewrites = 0;
    loop {
        let uri = rewritten.as_deref().unwrap_or(req.target);
        let (path, query) = split_uri(uri);
        path_ok =
            uri == "*" || normalize(path, &mut sh.scratch.decoded, &mut sh.scratch.path).is_ok();
        let facts = RequestFacts {
            listener: conn.listener,
            remote_ip: conn.peer,
            scheme: "http",
            method: req.method_str,
            host: &sh.scratch.host,
            url: if path_ok { &sh.scratch.path } else { "" },
            query,
            headers: req.headers,
        };
        resolved = sh.config.resolve(&facts);
        if !path_ok || uri == "*" || rewrites == MAX_REWRITES {
            break;
        }
        let s = &resolved.settings;
        let rules: &[(String, String)] = if rewrites == 0 && !s.url_rewrite_once.is_empty() {
            &s.url_rewrite_once
        } else {
            &s.url_rewrite_repeat
        };
        let mut next = rewrite::first_match(rules, uri, &resolved.captures, &mut sh.regexes);
        if next.is_none() && rewrites == 0 && !s.url_rewrite_if_not_file.is_empty() {
            let root = s
                .document_root
                .as_ref()
                .and_then(|p| p.to_str())
                .unwrap_or("");
            let fs = format!("{}{}", root.trim_end_matches('/'), sh.scratch.path);
            if !std::fs::metadata(&fs).is_ok_and(|m| m.is_file()) {
                next = rewrite::first_match(
                    &s.url_rewrite_if_not_file,
                    uri,
                    &resolved.captures,
                    &mut sh.regexes,
                );
            }
        }
        match next {
            // `url.rewrite-once` rules apply once; only `-repeat` rules loop.
            Some(n) if n != uri => {
                let once_done = rewrites == 0 && s.url_rewrite_repeat.is_empty();
                rewritten = Some(n);
                rewrites = if once_done {
                    MAX_REWRITES
                } else {
                    rewrites + 1
                };
            }
            _ => break,
        }
    }
    let settings = std::rc::Rc::clone(&resolved.settings);
    let uri = rewritten.as_deref().unwrap_or(req.target);
    let (raw_path, query) = split_uri(uri);

    let mut r = Responder::new(
        &mut conn.out,
        &sh.clock.http_date,
        &settings,
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
    } else if uri == "*" {
        r.start(200);
        r.header("Allow", b"GET, HEAD, OPTIONS");
        r.end_head(Some(0));
    } else if status_page::serve(
        &sh.scratch.path,
        query,
        &mut r,
        &sh.stats,
        &sh.clock,
        &sh.config,
    ) {
        // mod_status answered.
    } else if let Some(loc) = rewrite::first_match(
        &settings.url_redirect,
        uri,
        &resolved.captures,
        &mut sh.regexes,
    ) {
        let code = match settings.url_redirect_code {
            c @ (301 | 302 | 303 | 307 | 308) => c,
            _ => 301,
        };
        r.error_with(code, &[("Location", loc.as_bytes())]);
    } else {
        let docroot = document_root(&settings, &sh.scratch.host);
        let sreq = static_file::StaticRequest {
            method: req.method,
            raw_path,
            path: &sh.scratch.path,
            query,
            host: req.host,
            headers: req.headers,
            docroot: docroot.as_deref(),
            now: sh.clock.unix,
        };
        let mark = r.out.mem.len();
        static_file::serve(&sreq, &mut r, &mut sh.scratch.fs_path);
        if r.status == 404 {
            if let Some(handler) = settings.error_handler_404.as_deref() {
                serve_404_handler(handler, &sreq, &mut r, mark, &mut sh.scratch.decoded);
            }
        }
    }
    if r.force_close {
        action = BodyAction::Close;
    }
    let (status, body_len) = (r.status, r.body_len);
    let head_bytes = (conn.out.mem.len() - head_start) as u64;
    sh.stats.requests += 1;
    log_access(
        sh,
        &settings,
        conn,
        Some(req),
        b"",
        status,
        body_len,
        head_bytes,
    );
    action
}

/// `server.error-handler-404`: the configured page replaces the 404's body;
/// the status stays 404.
fn serve_404_handler(
    handler: &str,
    orig: &static_file::StaticRequest<'_>,
    r: &mut Responder<'_>,
    mark: usize,
    decoded: &mut Vec<u8>,
) {
    let mut path = String::new();
    if normalize(split_uri(handler).0, decoded, &mut path).is_err() {
        return;
    }
    let sreq = static_file::StaticRequest {
        method: if orig.method == Method::Head {
            Method::Head
        } else {
            Method::Get
        },
        raw_path: &path,
        path: &path,
        query: "",
        host: orig.host,
        headers: &[],
        docroot: orig.docroot,
        now: orig.now,
    };
    let mut fs_path = String::new();
    r.out.mem.truncate(mark);
    r.status_override = Some(404);
    static_file::serve(&sreq, r, &mut fs_path);
    r.status_override = None;
    if r.status != 404 {
        // The handler itself failed: fall back to the plain 404 page.
        log::warn!("server.error-handler-404 {handler} could not be served");
        r.out.mem.truncate(mark);
        r.error(404);
    }
}

/// The docroot: `mod_simple_vhost` when configured, else `server.document-root`.
fn document_root(s: &Settings, host: &str) -> Option<String> {
    let plain = || {
        s.document_root
            .as_ref()
            .and_then(|p| p.to_str())
            .map(str::to_string)
    };
    let Some(server_root) = s.simple_vhost_server_root.as_deref() else {
        return plain();
    };
    let sub = s.simple_vhost_document_root.as_deref().unwrap_or("");
    let name = host_without_port(host);
    let build = |h: &str| {
        let mut p = server_root.trim_end_matches('/').to_string();
        p.push('/');
        p.push_str(h);
        if !sub.is_empty() {
            p.push('/');
            p.push_str(sub.trim_matches('/'));
        }
        p
    };
    // The host was validated by the parser: no '/', no "..", no control characters.
    if !name.is_empty() && !name.starts_with('.') {
        let p = build(name);
        if std::fs::metadata(&p).is_ok_and(|m| m.is_dir()) {
            return Some(p);
        }
    }
    match s.simple_vhost_default_host.as_deref() {
        Some(d) => Some(build(d)),
        None => plain(),
    }
}

fn host_without_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .split(']')
            .next()
            .map_or(host, |h| &host[..h.len() + 1]);
    }
    host.split(':').next().unwrap_or(host)
}

/// Splits a request target into path and query.
fn split_uri(uri: &str) -> (&str, &str) {
    match uri.split_once('?') {
        Some((p, q)) => (p, q),
        None => (uri, ""),
    }
}

#[allow(clippy::too_many_arguments)]
fn log_access(
    sh: &mut Shared,
    settings: &Settings,
    conn: &Connection,
    req: Option<&Request<'_, '_>>,
    raw_line: &[u8],
    status: u16,
    body_len: u64,
    head_bytes: u64,
) {
    let Some(name) = &settings.accesslog_filename else {
        return;
    };
    let format = settings
        .accesslog_format
        .as_deref()
        .unwrap_or(crate::config::DEFAULT_ACCESSLOG_FORMAT);
    let e = Entry {
        remote: conn.peer,
        time: &sh.clock.clf_date,
        request: req,
        raw_line,
        status,
        body_bytes: body_len,
        head_bytes,
        server_port: sh.ports.get(conn.listener).copied().unwrap_or(0),
        elapsed_us: 0,
    };
    sh.logs.log(name, format, &e);
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
    log_access(sh, &settings, conn, None, raw_line, status, body_len, 0);
}
