//! A request for a gateway route becomes a job on a backend: the CGI
//! environment (mod_fastcgi's and mod_scgi's variables, `check-local`,
//! `strip-request-uri`, authorizer variables, `REDIRECT_STATUS`), the body's
//! framing, and the encoding for the backend's protocol.

use std::borrow::Cow;
use std::rc::Rc;

use mio::Registry;

pub(super) use super::endpoint::At;
use super::endpoint::{host_name, peer_hash, server_end};
use super::{Carry, ConnInfo, GwStart, Services};
use crate::config::Settings;
use crate::hash::fnv1a;
use crate::msg::{Body, Method, OwnedHead, Request};
use crate::upstream::cgi::Env;
use crate::upstream::{BodyFraming, Gateways, HostSpec, JobSpec, Protocol, Upload};

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
    // No gateway configured: neither look-up finds a route (their own
    // first answer, without the two calls).
    if gateways.routes.is_empty() {
        return None;
    }
    if !carry.authorized {
        if let Some(found) = gateways.authorizer_for(settings, path) {
            return Some(found);
        }
    }
    gateways.route_for(settings, path)
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
fn append(env: &mut Env, name: &[u8], v: &[u8]) {
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
fn setenv(env: &mut Env, s: &Settings) {
    for (name, v) in &s.setenv.add_request_header {
        append(env, &header_var(name), v.as_bytes());
    }
    for (name, v) in &s.setenv.set_request_header {
        let var = header_var(name);
        if v.is_empty() {
            env.remove(&var);
        } else {
            env.set(&var, v.as_bytes());
        }
    }
    for (name, v) in &s.setenv.add_environment {
        append(env, name.as_bytes(), v.as_bytes());
    }
    for (name, v) in &s.setenv.set_environment {
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
    let docroot_req = request_docroot(carry, settings, &sv.scratch.host);
    let docroot_req: &str = &docroot_req;
    let (server_port, server_addr) = server_end(sv, at.info);
    let route = &sv.upstream.routes[at.route];
    if route.protocol == Protocol::Http {
        return super::proxy::start(sv, at, req, settings, carry, registry);
    }
    let Some(spec) = route.hosts.first().map(|&h| &sv.upstream.hosts[h].spec) else {
        return Err(503);
    };
    // An authorizer is not a script below the docroot, and never sees the body.
    let authorizer = route.authorizer;
    let protocol = wire_protocol(route.protocol, settings);
    let docroot = spec.docroot.as_deref().unwrap_or(docroot_req);
    let root_script = spec.fix_root_scriptname && route.pattern == "/";
    let (script_name, path_info) = split_script(path, at.split, root_script);
    // The script's file where mod_userdir or mod_alias put it (a backend's
    // own `docroot` puts it there instead).
    let ph = super::physical::map(settings, docroot_req, script_name)?;
    let mapped = spec.docroot.is_none() && ph.mapped(docroot_req);
    if spec.check_local && !authorizer && !sv.upstream.local_scripts.check(&ph.base, &ph.rel, now) {
        return Err(404);
    }
    let docroot = if mapped { &*ph.base } else { docroot };
    let generic_error = carry.error.as_ref().filter(|e| e.generic).map(|e| e.status);
    let (framing, chunked_limit) = body_framing(req, settings, authorizer, generic_error)?;
    let shown = shown_request(
        req,
        spec.strip_request_uri.as_deref(),
        generic_error.is_some(),
    );
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
        server_name: host_name(req.host),
        server_software: &settings.identity.tag,
        scgi: protocol == Protocol::Scgi,
        authorizer,
    });
    if mapped && !authorizer {
        env.set(b"SCRIPT_FILENAME", ph.join().as_bytes());
    }
    server_vars(&mut env, settings, carry, at.info);
    if protocol == Protocol::Uwsgi {
        uwsgi_fits(&env, req, authorizer, chunked_limit, spec)?;
    }
    let upload = if authorizer {
        // An authorizer's request is complete now: it has no body to wait for.
        Upload::fixed(protocol, authorizer_request(protocol, &env)?)
    } else {
        Upload::new(protocol, env, framing)
    };
    let job = Prepared {
        protocol,
        upload,
        authorizer,
        local_redir: spec.local_redir,
    };
    launch(sv, at, req, settings, carry, registry, job)
}

/// The protocol a route speaks: for an `scgi.server` route, SCGI or uwsgi
/// as `scgi.protocol` says under the request's settings.
fn wire_protocol(route: Protocol, settings: &Settings) -> Protocol {
    match route {
        Protocol::Scgi | Protocol::Uwsgi => Protocol::of_scgi_server(settings),
        p => p,
    }
}

/// The docroot of the request: an authorizer's, or the host's.
fn request_docroot<'a>(carry: &'a Carry, settings: &'a Settings, host: &str) -> Cow<'a, str> {
    match carry.docroot.as_deref() {
        Some(d) => Cow::Borrowed(d),
        None => super::document_root(settings, host).unwrap_or_default(),
    }
}

/// The script's name and PATH_INFO in `path`, split at `split` (or, for
/// `fix-root-scriptname` on a route of `/`, all of it PATH_INFO).
fn split_script(path: &str, split: usize, root_script: bool) -> (&str, &str) {
    if root_script {
        ("", path)
    } else {
        path.split_at(split.min(path.len()))
    }
}

/// How the request's body goes to the backend, and the most a chunked one
/// may be. `server.max-request-size` bounds every body (413 before any
/// backend is asked); a chunked one is collected in memory, so also MAX_BODY.
pub(super) fn body_framing(
    req: &Request<'_, '_>,
    settings: &Settings,
    authorizer: bool,
    generic_error: Option<u16>,
) -> Result<(BodyFraming, u64), u16> {
    // `server.error-handler` (status `generic_error`) runs as a GET without
    // the request's body; glint does not run a backend for a request whose
    // body it would have to hold back: the error's own page answers it.
    if let Some(status) = generic_error {
        if !matches!(req.body, Body::None | Body::Length(0)) {
            return Err(status);
        }
    }
    let limit = match settings.limits.max_request_size_kb {
        0 => u64::MAX,
        kb => kb.saturating_mul(1024),
    };
    let chunked_limit = limit.min(crate::upstream::MAX_BODY);
    let framing = match req.body {
        // An authorizer never sees the body: it stays unread until it decides.
        _ if authorizer => BodyFraming::Length(0),
        Body::None => BodyFraming::Length(0),
        Body::Length(n) if n > limit => return Err(413),
        Body::Length(n) => BodyFraming::Length(n),
        Body::Chunked => BodyFraming::Chunked {
            limit: chunked_limit,
        },
    };
    Ok((framing, chunked_limit))
}

/// The request as the backend is told of it: the target without
/// `strip-request-uri`'s prefix, and an error handler's run as a GET
/// (HEAD stays HEAD).
fn shown_request<'h, 'b>(
    req: &Request<'h, 'b>,
    strip: Option<&str>,
    as_get: bool,
) -> Request<'h, 'b> {
    let mut target = req.target;
    if let Some(strip) = strip {
        if let Some(rest) = target.strip_prefix(strip.trim_end_matches('/')) {
            target = if rest.starts_with('/') { rest } else { "/" };
        }
    }
    if as_get && req.method != Method::Head {
        Request {
            target,
            method: Method::Get,
            method_str: "GET",
            ..*req
        }
    } else {
        Request { target, ..*req }
    }
}

/// mod_setenv's and mod_maxminddb's variables (in `server.modules`'
/// order), an authorizer's, and who mod_auth let in and how (after the
/// authorizer's variables: the server's own word wins).
pub(super) fn carried_vars(env: &mut Env, settings: &Settings, carry: &Carry, info: &ConnInfo) {
    if settings.maxminddb.before_setenv {
        super::geo::set_vars(env, settings, info);
        setenv(env, settings);
    } else {
        setenv(env, settings);
        super::geo::set_vars(env, settings, info);
    }
    for (k, v) in &carry.vars {
        env.set(k.as_bytes(), v);
    }
    if let Some(user) = carry.remote_user.as_deref() {
        env.set(b"REMOTE_USER", user.as_bytes());
    }
    if let Some(t) = carry.auth_type {
        env.set(b"AUTH_TYPE", t.as_bytes());
    }
}

/// The variables the server sets after the request's: mod_setenv's, an
/// authorizer's, who mod_auth let in, the scheme and TLS, and the status
/// an error handler replaces.
pub(super) fn server_vars(env: &mut Env, settings: &Settings, carry: &Carry, info: &ConnInfo) {
    carried_vars(env, settings, carry, info);
    // The scheme, and on TLS lighttpd's `HTTPS` and `SSL_*` variables:
    // names `environment` never makes and client headers cannot (theirs
    // start with HTTP_), so only mod_setenv's variables or an authorizer's
    // can be there already, and only then is each one searched for.
    let replace = !settings.setenv.add_environment.is_empty()
        || !settings.setenv.set_environment.is_empty()
        || settings.maxminddb.active().is_some()
        || !carry.vars.is_empty();
    let own = |env: &mut Env, k: &[u8], v: &[u8]| {
        if replace {
            env.set(k, v)
        } else {
            env.add_new(k, v)
        }
    };
    own(env, b"REQUEST_SCHEME", info.scheme().as_bytes());
    if let Some(t) = info.tls.as_deref() {
        own(env, b"HTTPS", b"on");
        for (k, v) in &t.env {
            own(env, k.as_bytes(), v.as_bytes());
        }
    }
    if let Some(run) = carry.error.as_ref() {
        // The status the error handler replaces.
        env.set(
            b"REDIRECT_STATUS",
            crate::msg::status::itoa_u64(u64::from(run.status)).as_bytes(),
        );
    }
}

/// uwsgi describes its variables with a 16-bit size: checked before the
/// job starts, with the longest CONTENT_LENGTH the body may reach
/// (`chunked_limit` for a chunked one), so encoding cannot fail; 431 when
/// they do not fit.
fn uwsgi_fits(
    env: &Env,
    req: &Request<'_, '_>,
    authorizer: bool,
    chunked_limit: u64,
    spec: &HostSpec,
) -> Result<(), u16> {
    let most = match req.body {
        _ if authorizer => 0,
        Body::None => 0,
        Body::Length(n) => n,
        Body::Chunked => chunked_limit,
    };
    let size = crate::upstream::uwsgi::vars_len(most, env);
    if size > crate::upstream::uwsgi::MAX_VARS {
        log::error!(
            "backend {} ({}): the request's uwsgi variables take {size} bytes, over {}; answering 431",
            spec.label,
            spec.addr,
            crate::upstream::uwsgi::MAX_VARS
        );
        return Err(431);
    }
    Ok(())
}

/// An authorizer's whole request, encoded for its protocol.
fn authorizer_request(protocol: Protocol, env: &Env) -> Result<Vec<u8>, u16> {
    let mut request = Vec::new();
    match protocol {
        Protocol::FastCgi => crate::upstream::fastcgi::encode_authorizer(env, &mut request),
        // SCGI and uwsgi have no roles: the request with CONTENT_LENGTH 0
        // (SCGI's header must start with it).
        Protocol::Scgi => crate::upstream::scgi::encode_head(0, env, &mut request),
        Protocol::Uwsgi => {
            // The size was checked before.
            if crate::upstream::uwsgi::encode_head(0, env, &mut request).is_err() {
                return Err(431);
            }
        }
        // (No authorizer speaks these.)
        Protocol::Http
        | Protocol::Cgi
        | Protocol::SockProxy
        | Protocol::WsTunnel
        | Protocol::Ajp13 => return Err(500),
    }
    Ok(request)
}

/// What [`start`] made of a gateway request, for [`launch`].
pub(super) struct Prepared {
    pub protocol: Protocol,
    pub upload: Upload,
    pub authorizer: bool,
    pub local_redir: bool,
}

/// Starts the job `p` on the route's backends: what the connection needs
/// to hear its answer, or the status (503) when none can take it.
pub(super) fn launch(
    sv: &mut Services,
    at: &At<'_>,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
    p: Prepared,
) -> Result<Box<GwStart>, u16> {
    let job_spec = JobSpec {
        route: at.route,
        protocol: p.protocol,
        upload: p.upload,
        settings: Rc::clone(settings),
        hash_path: fnv1a(at.path.as_bytes()),
        hash_ip: peer_hash(at.info),
        authorizer: p.authorizer,
        local_redir: p.local_redir,
        head_only: req.method == Method::Head,
        method: String::new(),
        http: None,
        cgi: None,
        local: None,
    };
    let job = sv
        .upstream
        .start(job_spec, at.info.ex, sv.clock.mono_secs, registry)?;
    Ok(Box::new(GwStart {
        job,
        authorizer: p.authorizer,
        settings: Rc::clone(settings),
        head_only: req.method == Method::Head,
        minor: req.minor,
        head: OwnedHead::of(req),
        carry: std::mem::take(carry),
        route: at.route,
        info: at.info.clone(),
    }))
}
