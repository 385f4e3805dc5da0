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

use std::borrow::Cow;

use crate::accesslog::Entry;
use crate::config::{RequestFacts, Settings};
use crate::connection::Connection;
use crate::gateway::{Carry, GwClient, Protocol, Rerun};
use crate::http::request::{Body, Method, Request};
use crate::http::response::Responder;
use crate::path::normalize;
use crate::server::{Shared, Stats};

/// What to do with a request body after the response is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyAction {
    /// Read and drop it, keeping the connection if the request allows.
    Discard,
    /// Close the connection after the response.
    Close,
    /// A backend answers: the body (if any) is collected for it (`conn.gw`).
    Gateway,
    /// An authorizer decides first (`conn.gw`); the body stays unread until
    /// it allowed the request, which then runs again.
    Authorize,
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
    respond_with(conn, sh, req, keep_alive, Carry::default())
}

/// Answers a request that may have run before (see [`rerun`]): `carry`
/// says whether an authorizer allowed it, with which docroot and variables.
///
/// The phases, in lighttpd's order: rewrite (then resolve the settings
/// again), redirect, access, mod_status, gateways by prefix or extension,
/// the index file of a directory — which goes through access and the
/// gateways' extensions again, so `/` runs `index.php` rather than showing
/// it —, and the static file (never one `static-file.exclude-extensions`
/// names). An error answer glint gives itself is replaced by
/// `server.error-handler` / `server.error-handler-404`, which runs through
/// all the phases again.
fn respond_with(
    conn: &mut Connection,
    sh: &mut Shared,
    req: &Request<'_, '_>,
    keep_alive: bool,
    mut carry: Carry,
) -> BodyAction {
    conn.prepare_output(sh);
    let head_start = conn.out.mem.len();

    sh.scratch.host.clear();
    for &b in req.host {
        sh.scratch.host.push(b.to_ascii_lowercase() as char);
    }
    // The target of this run: the client's, or an error handler's.
    let mut target: Option<String> = carry.error.as_ref().map(|e| e.target.clone());
    loop {
        let mark = conn.out.mem.len();
        let mut once = respond_once(conn, sh, req, keep_alive, &mut carry, target.as_deref());
        let Some(settings) = once.settings.take() else {
            // A backend answers: logged when its answer is complete.
            return once.action;
        };
        if let Some(next) = error_handler_for(&settings, once.status, &carry) {
            // Run the error handler instead; the answer written is dropped.
            conn.out.mem.truncate(mark);
            log::debug!(
                "status {}: running error handler {}",
                once.status,
                next.target
            );
            target = Some(next.target.clone());
            carry.error = Some(next);
            continue;
        }
        if let Some(run) = carry.error.as_ref() {
            if once.status >= 400 && once.status != run.status {
                // The error handler failed too: the first error's own page.
                conn.out.mem.truncate(mark);
                let mut r = Responder::new(
                    &mut conn.out,
                    &sh.clock.http_date,
                    &settings,
                    req.method == Method::Head,
                    keep_alive,
                    req.minor,
                );
                r.error(run.status);
                once.status = run.status;
                once.body_len = r.body_len;
            }
        }
        let head_bytes = (conn.out.mem.len() - head_start) as u64;
        sh.stats.requests += 1;
        // A request run again is logged with the line the client sent.
        let shown;
        let logged = match carry.orig_line.as_deref() {
            Some(line) => {
                shown = Request {
                    request_line: line,
                    ..*req
                };
                &shown
            }
            None => req,
        };
        log_access(
            sh,
            &settings,
            conn,
            Some(logged),
            b"",
            once.status,
            once.body_len,
            head_bytes,
        );
        return once.action;
    }
}

/// What one run of the phases did.
struct Once {
    action: BodyAction,
    /// The status written (0 when a backend answers).
    status: u16,
    /// Body bytes written, for the access log.
    body_len: u64,
    /// The settings it ran under; `None` when a backend answers.
    settings: Option<std::rc::Rc<Settings>>,
}

/// The end of a run that answered from glint itself.
fn finish_once(r: Responder<'_>, action: BodyAction, settings: &std::rc::Rc<Settings>) -> Once {
    Once {
        action: if r.force_close {
            BodyAction::Close
        } else {
            action
        },
        status: r.status,
        body_len: r.body_len,
        settings: Some(std::rc::Rc::clone(settings)),
    }
}

/// The error handler to run for an answer with `status`, if the settings
/// have one for it and this is not already an error handler's run.
/// `server.error-handler` takes every error (as a GET); the older
/// `server.error-handler-404` takes 403 and 404 (same method), as lighttpd.
fn error_handler_for(s: &Settings, status: u16, carry: &Carry) -> Option<crate::gateway::ErrorRun> {
    // Errors about the request itself (malformed, too large, an unknown
    // method or version) are answered as they are.
    if carry.error.is_some() || status < 400 || matches!(status, 400 | 413 | 414 | 431 | 501 | 505)
    {
        return None;
    }
    if let Some(h) = s.error_handler.as_deref() {
        return Some(crate::gateway::ErrorRun {
            target: h.to_string(),
            status,
            generic: true,
        });
    }
    match (s.error_handler_404.as_deref(), status) {
        (Some(h), 403 | 404) => Some(crate::gateway::ErrorRun {
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
pub fn error_run_status(run: &crate::gateway::ErrorRun, handler: u16) -> u16 {
    if run.generic || matches!(handler, 403 | 404) {
        run.status
    } else {
        handler
    }
}

/// `url.access-deny` / `url.access-allow` for one path (mod_access): with
/// an allow list only its suffixes are served; otherwise a deny suffix
/// refuses (`""` refuses every path). Suffixes match without case under
/// `server.force-lowercase-filenames`, as lighttpd.
pub fn access_denied(path: &str, s: &Settings) -> bool {
    let lc = s.force_lowercase_filenames;
    let ends = |suffix: &String| {
        path.len() >= suffix.len()
            && path.is_char_boundary(path.len() - suffix.len())
            && if lc {
                path[path.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
            } else {
                path.ends_with(suffix.as_str())
            }
    };
    if !s.url_access_allow.is_empty() {
        return !s.url_access_allow.iter().any(ends);
    }
    s.url_access_deny.iter().any(ends)
}

/// One run of the phases for `target` (the client's when `None`). Returns
/// what becomes of the body, the status written, and the settings it ran
/// under (`None` when a backend answers: it is logged later).
fn respond_once(
    conn: &mut Connection,
    sh: &mut Shared,
    req: &Request<'_, '_>,
    keep_alive: bool,
    carry: &mut Carry,
    target: Option<&str>,
) -> Once {
    // The URI as the client sent it (or the error handler's); replaced by an internal rewrite.
    let first = target.unwrap_or(req.target);
    let mut rewritten: Option<String> = None;
    let mut resolved;
    let mut path_ok;
    let mut rewrites = 0;
    loop {
        let uri = rewritten.as_deref().unwrap_or(first);
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
    let uri = rewritten.as_deref().unwrap_or(first);
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
    // The path the handlers see: the request's, or its directory's index file.
    let mut indexed = false;
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
    } else if access_denied(&sh.scratch.path, &settings) {
        log::debug!("{}: denied by url.access-deny/-allow", sh.scratch.path);
        r.error(403);
    } else if status_page::serve(
        &sh.scratch.path,
        query,
        &mut r,
        &Stats {
            backend_opened: sh.gateways.opened,
            backend_reused: sh.gateways.reused,
            ..sh.stats
        },
        &sh.clock,
        &sh.config,
    ) {
        // mod_status answered.
    } else {
        let docroot = match carry.docroot.as_deref() {
            Some(d) => Some(Cow::Borrowed(d)),
            None => document_root(&settings, &sh.scratch.host),
        };
        let mut route = gateway_route(&sh.gateways, &settings, &sh.scratch.path, carry);
        if route.is_none() && sh.scratch.path.ends_with('/') {
            // mod_indexfile: the directory's index file is the request's
            // path from here on, and meets access and the gateways again.
            if let Some(root) = docroot.as_deref() {
                indexed = static_file::find_index(
                    root,
                    &sh.scratch.path,
                    &settings,
                    &mut sh.files,
                    sh.clock.mono_secs,
                    &mut sh.scratch.index_path,
                );
            }
            if indexed {
                if access_denied(&sh.scratch.index_path, &settings) {
                    log::debug!(
                        "{}: denied by url.access-deny/-allow",
                        sh.scratch.index_path
                    );
                    r.error(403);
                    return finish_once(r, action, &settings);
                }
                route = gateway_route(&sh.gateways, &settings, &sh.scratch.index_path, carry);
            }
        }
        let path: &str = if indexed {
            &sh.scratch.index_path
        } else {
            &sh.scratch.path
        };
        if let Some((route, split)) = route {
            let gw_docroot = match carry.docroot.clone() {
                Some(d) => Cow::Owned(d),
                None => document_root(&settings, &sh.scratch.host).unwrap_or_default(),
            };
            let authorizer = sh.gateways.routes[route].authorizer;
            let g = GatewayStart {
                route,
                split,
                docroot: &gw_docroot,
                query,
                keep_alive,
                now: sh.clock.mono_secs,
                server_port: sh.ports.get(conn.listener).copied().unwrap_or(0),
                // The listener's own address, or (bound to all) the socket's.
                server_addr: match sh.bound_ips.get(conn.listener).copied().flatten() {
                    Some(ip) => Some(ip),
                    None => conn.stream.local_addr().map(|a| a.ip()),
                },
                remote_port: conn.peer_port,
            };
            match start_gateway(&g, req, path, &mut sh.gateways, conn.peer, &settings, carry) {
                Ok(gw) => {
                    conn.gw = Some(gw);
                    let action = if authorizer {
                        BodyAction::Authorize
                    } else {
                        BodyAction::Gateway
                    };
                    return Once {
                        action,
                        status: 0,
                        body_len: 0,
                        settings: None,
                    };
                }
                Err(status) => {
                    if status == 413 {
                        r.keep_alive = false;
                        action = BodyAction::Close;
                    }
                    r.error(status);
                }
            }
        } else if static_file::excluded(path, &settings) {
            // mod_staticfile declines; no other handler: 403, as lighttpd.
            log::debug!("{path}: not sent, static-file.exclude-extensions");
            r.error(403);
        } else {
            // `server.error-handler` runs as a GET (HEAD stays HEAD).
            let method = match carry.error.as_ref() {
                Some(run) if run.generic && req.method != Method::Head => Method::Get,
                _ => req.method,
            };
            let sreq = static_file::StaticRequest {
                method,
                raw_path,
                path,
                query,
                host: req.host,
                headers: req.headers,
                docroot: docroot.as_deref(),
                now: sh.clock.unix,
                mono: sh.clock.mono_secs,
            };
            if let Some(run) = carry.error.as_ref() {
                // An error handler's page: sent with the error's status
                // where lighttpd keeps it.
                if run.generic {
                    r.status_override = Some(run.status);
                }
            }
            static_file::serve(&sreq, &mut r, &mut sh.scratch.fs_path, &mut sh.files);
        }
    }
    finish_once(r, action, &settings)
}
/// The gateway route for a path under the request's settings (the
/// innermost scope that sets `scgi.server` / `fastcgi.server` decides the
/// routes of each): the authorizer that guards it, until one
/// allowed the request, then the responder.
fn gateway_route(
    gateways: &crate::gateway::Gateways,
    settings: &Settings,
    path: &str,
    carry: &Carry,
) -> Option<(usize, usize)> {
    if !carry.authorized {
        if let Some(found) = gateways.authorizer_for(settings, path) {
            return Some(found);
        }
    }
    gateways.route_for(settings, path)
}

/// What the connection needs after [`rerun`]: what became of the request,
/// and its body (still unread after an authorizer, spent after a redirect).
pub struct Rerunning {
    pub action: BodyAction,
    pub body: Body,
    /// The client sent `Expect`: it waits before sending the body.
    pub expects_continue: bool,
}

/// Runs a request again inside glint once its backend's answer said so
/// (`gw.rerun`): after an authorizer's 200 the same request goes on, with
/// the authorizer's `docroot` and `Variable-`s; after a local redirect
/// (RFC 3875 6.2.2) glint answers a GET (HEAD for a HEAD) for the new path
/// and query, without the body the first backend already had. At most
/// [`crate::gateway::MAX_RERUNS`] times per request, then 500.
pub fn rerun(conn: &mut Connection, sh: &mut Shared, mut gw: Box<GwClient>) -> Rerunning {
    let Some(why) = gw.rerun.take() else {
        return rerun_failed(conn, sh, &gw, 500, Body::None);
    };
    let mut headers = [httparse::EMPTY_HEADER; crate::http::request::MAX_HEADERS];
    let Some(first) = crate::http::request::parse(&gw.log_head, &mut headers, usize::MAX)
        .ok()
        .flatten()
    else {
        return rerun_failed(conn, sh, &gw, 500, Body::None);
    };
    // An authorizer's request kept its body unread; a redirected one spent it.
    let body = match why {
        Rerun::Authorized(_) => first.body,
        Rerun::Redirect(_) => Body::None,
    };
    let mut carry = std::mem::take(&mut gw.carry);
    carry
        .orig_line
        .get_or_insert_with(|| first.request_line.to_vec());
    carry.reruns += 1;
    // (A graceful restart may have removed the route since.)
    let spec = sh
        .gateways
        .routes
        .get(gw.route)
        .and_then(|route| route.hosts.first())
        .and_then(|&h| sh.gateways.hosts.get(h))
        .map(|h| &h.spec);
    let (label, addr) = spec.map_or((String::new(), String::new()), |s| {
        (s.label.clone(), s.addr.to_string())
    });
    if carry.reruns > crate::gateway::MAX_RERUNS {
        log::error!(
            "backend {label} ({addr}): {:?} ran {} times inside glint (a redirect loop?); answering 500",
            String::from_utf8_lossy(carry.orig_line.as_deref().unwrap_or(b"")),
            crate::gateway::MAX_RERUNS
        );
        gw.carry = carry;
        return rerun_failed(conn, sh, &gw, 500, body);
    }
    let head = match why {
        Rerun::Authorized(vars) => {
            carry.authorized = true;
            carry.docroot = spec.and_then(|s| s.docroot.clone());
            for (k, v) in vars {
                carry.vars.retain(|(old, _)| *old != k);
                carry.vars.push((k, v));
            }
            std::mem::take(&mut gw.log_head)
        }
        Rerun::Redirect(target) => {
            log::debug!("backend {label}: local redirect to {target}");
            // The new path meets its own authorizer, if it has one.
            carry.authorized = false;
            carry.docroot = None;
            redirect_head(&first, &target)
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; crate::http::request::MAX_HEADERS];
    let Some(req) = crate::http::request::parse(&head, &mut headers, usize::MAX)
        .ok()
        .flatten()
    else {
        log::error!(
            "backend {label} ({addr}): the request to run again does not parse (a bad Location?); answering 502"
        );
        gw.carry = carry;
        return rerun_failed(conn, sh, &gw, 502, body);
    };
    // The rest of a body the redirecting backend did not wait for is still
    // on its way: the connection closes after this answer.
    let keep_alive = gw.keep_alive && !sh.shutting_down && gw.upload.remaining() == 0;
    let action = respond_with(conn, sh, &req, keep_alive, carry);
    Rerunning {
        action,
        body: req.body,
        expects_continue: req.header("expect").is_some(),
    }
}

/// The head of the request a local redirect makes: GET (HEAD for HEAD)
/// for `target`, with the client's headers but those of the body.
fn redirect_head(first: &Request<'_, '_>, target: &str) -> Vec<u8> {
    let method = if first.method == Method::Head {
        "HEAD"
    } else {
        "GET"
    };
    let mut head = format!("{method} {target} HTTP/1.{}\r\n", first.minor).into_bytes();
    if first.header("host").is_none() && !first.host.is_empty() {
        // It came in the absolute-form target, which the new one is not.
        head.extend_from_slice(b"Host: ");
        head.extend_from_slice(first.host);
        head.extend_from_slice(b"\r\n");
    }
    const BODY_HEADERS: [&str; 4] = [
        "content-length",
        "transfer-encoding",
        "content-type",
        "expect",
    ];
    for h in first.headers {
        if BODY_HEADERS.iter().any(|b| h.name.eq_ignore_ascii_case(b)) {
            continue;
        }
        head.extend_from_slice(h.name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(h.value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// Answers a request glint could not run again with an error page.
fn rerun_failed(
    conn: &mut Connection,
    sh: &mut Shared,
    gw: &GwClient,
    status: u16,
    body: Body,
) -> Rerunning {
    conn.prepare_output(sh);
    let settings = std::rc::Rc::clone(&gw.settings);
    let mut r = Responder::new(
        &mut conn.out,
        &sh.clock.http_date,
        &settings,
        gw.head_only,
        gw.keep_alive,
        gw.minor,
    );
    r.error(status);
    let body_len = r.body_len;
    sh.stats.requests += 1;
    log_gateway_as(conn, sh, gw, status, body_len);
    Rerunning {
        action: BodyAction::Discard,
        body,
        expects_continue: unread_body(gw).1,
    }
}

/// The body framing of the request behind `gw`, and whether the client
/// sent `Expect` (an authorizer's request leaves its body unread).
pub fn unread_body(gw: &GwClient) -> (Body, bool) {
    let mut headers = [httparse::EMPTY_HEADER; crate::http::request::MAX_HEADERS];
    match crate::http::request::parse(&gw.log_head, &mut headers, usize::MAX) {
        Ok(Some(req)) => (req.body, req.header("expect").is_some()),
        // It parsed when it arrived; if it no longer does, close.
        _ => (Body::Chunked, false),
    }
}

/// What a gateway request needs besides the request itself.
struct GatewayStart<'a> {
    route: usize,
    /// Where the script name ends in the path.
    split: usize,
    docroot: &'a str,
    query: &'a str,
    keep_alive: bool,
    now: u64,
    server_port: u16,
    /// Where the client connected to (`SERVER_ADDR`), and its own port.
    server_addr: Option<std::net::IpAddr>,
    remote_port: u16,
}

/// Builds the CGI environment for a gateway route; errors are statuses.
fn start_gateway(
    g: &GatewayStart<'_>,
    req: &Request<'_, '_>,
    path: &str,
    gateways: &mut crate::gateway::Gateways,
    peer: Option<std::net::IpAddr>,
    settings: &std::rc::Rc<Settings>,
    carry: &mut Carry,
) -> Result<Box<crate::gateway::GwClient>, u16> {
    let route = &gateways.routes[g.route];
    let Some(spec) = route.hosts.first().map(|&h| &gateways.hosts[h].spec) else {
        return Err(503);
    };
    // An authorizer is not a script below the docroot, and never sees the body.
    let authorizer = route.authorizer;
    let protocol = match route.protocol {
        Protocol::FastCgi => Protocol::FastCgi,
        Protocol::Scgi | Protocol::Uwsgi => Protocol::of_scgi_server(settings),
    };
    let docroot = spec.docroot.as_deref().unwrap_or(g.docroot);
    let (mut script_name, mut path_info) = path.split_at(g.split.min(path.len()));
    if spec.fix_root_scriptname && route.pattern == "/" {
        script_name = "";
        path_info = path;
    }
    if spec.check_local
        && !authorizer
        && !gateways.local_scripts.check(g.docroot, script_name, g.now)
    {
        return Err(404);
    }
    // `server.error-handler` runs as a GET without the request's body;
    // glint does not run a backend for a request whose body it would have
    // to hold back: the error's own page answers it.
    let generic_error = carry.error.as_ref().filter(|e| e.generic).map(|e| e.status);
    if let Some(status) = generic_error {
        if !matches!(req.body, Body::None | Body::Length(0)) {
            return Err(status);
        }
    }
    // `server.max-request-size` bounds every body (413 before any backend
    // is asked); a chunked one is collected in memory, so also MAX_BODY.
    let limit = match settings.max_request_size_kb {
        0 => u64::MAX,
        kb => kb.saturating_mul(1024),
    };
    let chunked_limit = limit.min(crate::gateway::MAX_BODY);
    let framing = match req.body {
        // An authorizer never sees the body: it stays unread until it decides.
        _ if authorizer => crate::gateway::BodyFraming::Length(0),
        Body::None => crate::gateway::BodyFraming::Length(0),
        Body::Length(n) if n > limit => return Err(413),
        Body::Length(n) => crate::gateway::BodyFraming::Length(n),
        Body::Chunked => crate::gateway::BodyFraming::Chunked {
            limit: chunked_limit,
        },
    };
    let server_name = std::str::from_utf8(req.host).unwrap_or("");
    let server_name = server_name.rsplit_once(':').map_or(server_name, |(h, _)| h);
    let mut target = req.target;
    if let Some(strip) = spec.strip_request_uri.as_deref() {
        if let Some(rest) = target.strip_prefix(strip.trim_end_matches('/')) {
            target = if rest.starts_with('/') { rest } else { "/" };
        }
    }
    let shown = match generic_error {
        Some(_) if req.method != Method::Head => Request {
            target,
            method: Method::Get,
            method_str: "GET",
            ..*req
        },
        _ => Request { target, ..*req },
    };
    let mut env = crate::gateway::cgi::environment(&crate::gateway::cgi::EnvInput {
        req: &shown,
        path,
        query: g.query,
        script_name,
        path_info,
        document_root: docroot,
        script_filename_whole_path: spec.broken_scriptfilename || spec.docroot.is_some(),
        remote: peer,
        remote_port: g.remote_port,
        server_addr: g.server_addr,
        server_port: g.server_port,
        server_name,
        server_software: &settings.tag,
        scgi: protocol == Protocol::Scgi,
        authorizer,
    });
    for (k, v) in &carry.vars {
        env.set(k.as_bytes(), v);
    }
    if let Some(run) = carry.error.as_ref() {
        // The status the error handler replaces.
        env.set(
            b"REDIRECT_STATUS",
            crate::http::status::itoa_u64(u64::from(run.status)).as_bytes(),
        );
    }
    if protocol == Protocol::Uwsgi {
        // uwsgi describes its variables with a 16-bit size: check it now, with
        // the longest CONTENT_LENGTH the body may reach, so encoding cannot fail.
        let most = match req.body {
            _ if authorizer => 0,
            Body::None => 0,
            Body::Length(n) => n,
            Body::Chunked => chunked_limit,
        };
        let size = crate::gateway::uwsgi::vars_len(most, &env);
        if size > crate::gateway::uwsgi::MAX_VARS {
            log::error!(
                "backend {} ({}): the request's uwsgi variables take {size} bytes, over {}; answering 431",
                spec.label,
                spec.addr,
                crate::gateway::uwsgi::MAX_VARS
            );
            return Err(431);
        }
    }
    // An authorizer's request is complete now: it has no body to wait for.
    let mut request = Vec::new();
    if authorizer {
        match protocol {
            Protocol::FastCgi => crate::gateway::fastcgi::encode_authorizer(&env, &mut request),
            // SCGI and uwsgi have no roles: the request with CONTENT_LENGTH 0
            // (SCGI's header must start with it).
            Protocol::Scgi => crate::gateway::scgi::encode_head(0, &env, &mut request),
            Protocol::Uwsgi => {
                // The size was checked above.
                if crate::gateway::uwsgi::encode_head(0, &env, &mut request).is_err() {
                    return Err(431);
                }
            }
        }
    }
    let mut log_head = req.request_line.to_vec();
    log_head.extend_from_slice(b"\r\n");
    for h in req.headers {
        log_head.extend_from_slice(h.name.as_bytes());
        log_head.extend_from_slice(b": ");
        log_head.extend_from_slice(h.value);
        log_head.extend_from_slice(b"\r\n");
    }
    log_head.extend_from_slice(b"\r\n");
    Ok(Box::new(crate::gateway::GwClient {
        route: g.route,
        protocol,
        upload: if authorizer {
            crate::gateway::Upload::fixed(protocol, request)
        } else {
            crate::gateway::Upload::new(protocol, env, framing)
        },
        backend: None,
        waiting: false,
        since: g.now,
        attempts: 0,
        fresh_conn: false,
        settings: std::rc::Rc::clone(settings),
        head_only: req.method == Method::Head,
        minor: req.minor,
        keep_alive: g.keep_alive,
        head_sent: false,
        resp_chunked: false,
        resp_remaining: None,
        status: 0,
        body_sent: 0,
        done: false,
        log_head,
        hash_path: crate::gateway::fnv(path.as_bytes()),
        hash_ip: peer.map_or(0, |ip| match ip {
            std::net::IpAddr::V4(a) => crate::gateway::fnv(&a.octets()),
            std::net::IpAddr::V6(a) => crate::gateway::fnv(&a.octets()),
        }),
        authorizer,
        local_redir: spec.local_redir,
        carry: std::mem::take(carry),
        rerun: None,
    }))
}

/// Logs a finished gateway request from the head kept for it.
pub fn log_gateway(conn: &Connection, sh: &mut Shared, gw: &crate::gateway::GwClient) {
    log_gateway_as(conn, sh, gw, gw.status, gw.body_sent);
}

/// Logs a gateway request with the status and body length it ended with.
fn log_gateway_as(conn: &Connection, sh: &mut Shared, gw: &GwClient, status: u16, body: u64) {
    if gw.settings.accesslog_filename.is_none() {
        return;
    }
    let mut headers = [httparse::EMPTY_HEADER; crate::http::request::MAX_HEADERS];
    let parsed = crate::http::request::parse(&gw.log_head, &mut headers, usize::MAX)
        .ok()
        .flatten();
    // A request run again is logged with the line the client sent.
    let shown = parsed.as_ref().map(|p| Request {
        request_line: gw.carry.orig_line.as_deref().unwrap_or(p.request_line),
        ..*p
    });
    let settings = std::rc::Rc::clone(&gw.settings);
    log_access(sh, &settings, conn, shown.as_ref(), b"", status, body, 0);
}

/// The docroot: `mod_simple_vhost` when configured, else `server.document-root`.
/// Borrowed from the settings in the common case: no allocation per request.
fn document_root<'s>(s: &'s Settings, host: &str) -> Option<Cow<'s, str>> {
    let plain = || {
        s.document_root
            .as_ref()
            .and_then(|p| p.to_str())
            .map(Cow::Borrowed)
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
            return Some(Cow::Owned(p));
        }
    }
    match s.simple_vhost_default_host.as_deref() {
        Some(d) => Some(Cow::Owned(build(d))),
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
