//! A request for a gateway route becomes a job on a backend: the CGI
//! environment (mod_fastcgi's and mod_scgi's variables, `check-local`,
//! `strip-request-uri`, authorizer variables, `REDIRECT_STATUS`), the body's
//! framing, and the encoding for the backend's protocol.

use std::rc::Rc;

use mio::Registry;

use super::{Carry, ConnInfo, GwStart, Services};
use crate::config::Settings;
use crate::hash::fnv1a;
use crate::msg::{Body, Method, OwnedHead, Request};
use crate::upstream::{Gateways, JobSpec, Protocol};

/// The gateway route for a path under the request's settings (the
/// innermost scope that sets `scgi.server` / `fastcgi.server` decides the
/// routes of each): the authorizer that guards it, until one allowed the
/// request, then the responder. (route, where the script name ends).
pub(super) fn route(
    gateways: &Gateways,
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

/// Where a gateway request goes.
pub(super) struct At<'a> {
    pub route: usize,
    /// The request-target after rewrites, as received (not decoded).
    pub raw_path: &'a str,
    /// Where the script name ends in the path.
    pub split: usize,
    /// The path the route matched (the request's, or its index file's).
    pub path: &'a str,
    pub query: &'a str,
    pub keep_alive: bool,
    pub info: &'a ConnInfo,
}

/// The CGI variable of request header `name`: `HTTP_` and the name in
/// upper case with `-` as `_` (`Content-Type` is `CONTENT_TYPE`).
fn header_var(name: &str) -> Vec<u8> {
    if name.eq_ignore_ascii_case("content-type") {
        return b"CONTENT_TYPE".to_vec();
    }
    let mut v = b"HTTP_".to_vec();
    v.extend(name.bytes().map(|c| match c {
        b'-' => b'_',
        c => c.to_ascii_uppercase(),
    }));
    v
}

/// `v` after what `env` has for `name`, joined with ", " (lighttpd's
/// `http_header_token_append`).
fn append(env: &mut crate::upstream::cgi::Env, name: &[u8], v: &[u8]) {
    let old = env
        .pairs()
        .find(|(k, _)| *k == name)
        .map(|(_, old)| old.to_vec());
    match old {
        Some(mut o) if !o.is_empty() => {
            o.extend_from_slice(b", ");
            o.extend_from_slice(v);
            env.set(name, &o);
        }
        _ => env.set(name, v),
    }
}

/// mod_setenv for the backends: request headers added and set (an empty
/// value removes the header), then environment variables added and set,
/// in lighttpd's order.
pub(super) fn setenv(env: &mut crate::upstream::cgi::Env, s: &Settings) {
    for (name, v) in &s.setenv_add_request_header {
        append(env, &header_var(name), v.as_bytes());
    }
    for (name, v) in &s.setenv_set_request_header {
        let var = header_var(name);
        if v.is_empty() {
            env.remove(&var);
        } else {
            env.set(&var, v.as_bytes());
        }
    }
    for (name, v) in &s.setenv_add_environment {
        append(env, name.as_bytes(), v.as_bytes());
    }
    for (name, v) in &s.setenv_set_environment {
        env.set(name.as_bytes(), v.as_bytes());
    }
}

/// Builds the job for a gateway route and starts it; errors are statuses
/// (503 no backend can take it, 404 `check-local`, 413, 431).
pub(super) fn start(
    sv: &mut Services,
    at: &At<'_>,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
) -> Result<Box<GwStart>, u16> {
    let path = at.path;
    let now = sv.clock.mono_secs;
    let owned_root;
    let docroot_req: &str = match carry.docroot.as_deref() {
        Some(d) => d,
        None => {
            owned_root = super::document_root(settings, &sv.scratch.host).unwrap_or_default();
            &owned_root
        }
    };
    let server_port = sv.ports.get(at.info.listener).copied().unwrap_or(0);
    // The listener's own address, or (bound to all) the socket's.
    let server_addr = match sv.bound_ips.get(at.info.listener).copied().flatten() {
        Some(ip) => Some(ip),
        None => at.info.local_ip,
    };
    let route = &sv.upstream.routes[at.route];
    if route.protocol == Protocol::Http {
        return super::proxy::start(sv, at, req, settings, carry, registry);
    }
    let Some(spec) = route.hosts.first().map(|&h| &sv.upstream.hosts[h].spec) else {
        return Err(503);
    };
    // An authorizer is not a script below the docroot, and never sees the body.
    let authorizer = route.authorizer;
    let protocol = match route.protocol {
        Protocol::Scgi | Protocol::Uwsgi => Protocol::of_scgi_server(settings),
        p => p,
    };
    let docroot = spec.docroot.as_deref().unwrap_or(docroot_req);
    let (mut script_name, mut path_info) = path.split_at(at.split.min(path.len()));
    if spec.fix_root_scriptname && route.pattern == "/" {
        script_name = "";
        path_info = path;
    }
    // The script's file where mod_userdir or mod_alias put it (a backend's
    // own `docroot` puts it there instead).
    let ph = super::physical::map(settings, docroot_req, script_name)?;
    let mapped = spec.docroot.is_none() && ph.mapped(docroot_req);
    if spec.check_local && !authorizer && !sv.upstream.local_scripts.check(&ph.base, &ph.rel, now) {
        return Err(404);
    }
    let docroot = if mapped { &*ph.base } else { docroot };
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
    let chunked_limit = limit.min(crate::upstream::MAX_BODY);
    let framing = match req.body {
        // An authorizer never sees the body: it stays unread until it decides.
        _ if authorizer => crate::upstream::BodyFraming::Length(0),
        Body::None => crate::upstream::BodyFraming::Length(0),
        Body::Length(n) if n > limit => return Err(413),
        Body::Length(n) => crate::upstream::BodyFraming::Length(n),
        Body::Chunked => crate::upstream::BodyFraming::Chunked {
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
    let mut env = crate::upstream::cgi::environment(&crate::upstream::cgi::EnvInput {
        req: &shown,
        path,
        query: at.query,
        script_name,
        path_info,
        document_root: docroot,
        script_filename_whole_path: spec.broken_scriptfilename || spec.docroot.is_some(),
        remote: at.info.peer,
        remote_port: at.info.peer_port,
        server_addr,
        server_port,
        server_name,
        server_software: &settings.tag,
        scgi: protocol == Protocol::Scgi,
        authorizer,
    });
    if mapped && !authorizer {
        env.set(b"SCRIPT_FILENAME", ph.join().as_bytes());
    }
    setenv(&mut env, settings);
    for (k, v) in &carry.vars {
        env.set(k.as_bytes(), v);
    }
    // Who mod_auth let in, and how (after the authorizer's variables: the
    // server's own word wins).
    if let Some(user) = carry.remote_user.as_deref() {
        env.set(b"REMOTE_USER", user.as_bytes());
    }
    if let Some(t) = carry.auth_type {
        env.set(b"AUTH_TYPE", t.as_bytes());
    }
    // The scheme, and on TLS lighttpd's `HTTPS` and `SSL_*` variables:
    // names `environment` never makes and client headers cannot (theirs
    // start with HTTP_), so only mod_setenv's variables or an authorizer's
    // can be there already, and only then is each one searched for.
    let replace = !settings.setenv_add_environment.is_empty()
        || !settings.setenv_set_environment.is_empty()
        || !carry.vars.is_empty();
    let own = |env: &mut crate::upstream::cgi::Env, k: &[u8], v: &[u8]| {
        if replace {
            env.set(k, v)
        } else {
            env.add_new(k, v)
        }
    };
    own(&mut env, b"REQUEST_SCHEME", at.info.scheme().as_bytes());
    if let Some(t) = at.info.tls.as_deref() {
        own(&mut env, b"HTTPS", b"on");
        for (k, v) in &t.env {
            own(&mut env, k.as_bytes(), v.as_bytes());
        }
    }
    if let Some(run) = carry.error.as_ref() {
        // The status the error handler replaces.
        env.set(
            b"REDIRECT_STATUS",
            crate::msg::status::itoa_u64(u64::from(run.status)).as_bytes(),
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
        let size = crate::upstream::uwsgi::vars_len(most, &env);
        if size > crate::upstream::uwsgi::MAX_VARS {
            log::error!(
                "backend {} ({}): the request's uwsgi variables take {size} bytes, over {}; answering 431",
                spec.label,
                spec.addr,
                crate::upstream::uwsgi::MAX_VARS
            );
            return Err(431);
        }
    }
    // An authorizer's request is complete now: it has no body to wait for.
    let mut request = Vec::new();
    if authorizer {
        match protocol {
            Protocol::FastCgi => crate::upstream::fastcgi::encode_authorizer(&env, &mut request),
            // SCGI and uwsgi have no roles: the request with CONTENT_LENGTH 0
            // (SCGI's header must start with it).
            Protocol::Scgi => crate::upstream::scgi::encode_head(0, &env, &mut request),
            Protocol::Uwsgi => {
                // The size was checked above.
                if crate::upstream::uwsgi::encode_head(0, &env, &mut request).is_err() {
                    return Err(431);
                }
            }
            // (No authorizer speaks these.)
            Protocol::Http | Protocol::Cgi => return Err(500),
        }
    }
    let upload = if authorizer {
        crate::upstream::Upload::fixed(protocol, request)
    } else {
        crate::upstream::Upload::new(protocol, env, framing)
    };
    let job_spec = JobSpec {
        route: at.route,
        protocol,
        upload,
        settings: Rc::clone(settings),
        hash_path: fnv1a(path.as_bytes()),
        hash_ip: at.info.peer.map_or(0, |ip| match ip {
            std::net::IpAddr::V4(a) => fnv1a(&a.octets()),
            std::net::IpAddr::V6(a) => fnv1a(&a.octets()),
        }),
        authorizer,
        local_redir: spec.local_redir,
        head_only: req.method == Method::Head,
        method: String::new(),
        http: None,
        cgi: None,
    };
    let job = sv.upstream.start(job_spec, at.info.ex, now, registry)?;
    Ok(Box::new(GwStart {
        job,
        authorizer,
        settings: Rc::clone(settings),
        head_only: req.method == Method::Head,
        minor: req.minor,
        keep_alive: at.keep_alive,
        head: OwnedHead::of(req),
        carry: std::mem::take(carry),
        route: at.route,
        info: at.info.clone(),
    }))
}
