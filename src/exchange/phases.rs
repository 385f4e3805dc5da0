//! One run of the phases for a request target: the request's own checks,
//! mod_redirect, mod_auth, access, mod_status, then the handlers:
//! gateways by prefix or extension, the index file (meeting auth, access
//! and the gateways again), mod_cgi, the static file.

use std::borrow::Cow;
use std::rc::Rc;

use mio::Registry;

use super::magnet::{Moved, Turn};
use super::physical::{self, Physical};
use super::vhostdb::Root;
use super::{access_denied, ajp13, auth, auth_wait, cgi, document_root, gateway, rewrite, ssi};
use super::{Carry, ConnInfo, GwStart, Services};
use crate::config::{Resolved, Settings};
use crate::handler::{static_file, status_page};
use crate::msg::{Body, Method, Request};

/// What one run of the phases came to.
pub(super) enum Once {
    /// glint's own, in [`Services::reply`].
    Reply,
    Gateway(Box<GwStart>),
    /// mod_magnet changed the request: run the phases on this one.
    Again(Box<crate::msg::OwnedHead>),
}

/// One run of the phases for `target` (the client's when `None`).
pub(super) fn respond_once(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    target: Option<&str>,
    registry: &Registry,
) -> Once {
    let first = target.unwrap_or(req.target);
    if acme_http01_answered(sv, req, first) {
        return Once::Reply;
    }
    let rewrite = !carry.magnet.no_rewrite;
    let (uri, resolved, path_ok, path_len) =
        rewrite::resolve_and_rewrite(sv, info, req, first, rewrite);
    let settings = Rc::clone(&resolved.settings);
    // The target split where `resolve_and_rewrite` split it (one search
    // for `?` per request, not two): the path before it, the query after.
    let raw_path = uri.get(..path_len).unwrap_or(&uri);
    let query = uri.get(path_len + 1..).unwrap_or("");
    sv.reply
        .reset(Rc::clone(&settings), req.method == Method::Head);
    if let Some(run) = carry.error.as_ref() {
        // An error handler's page: sent with the error's status where
        // lighttpd keeps it.
        if run.generic {
            sv.reply.status_override = Some(run.status);
        }
    }
    let raw_scripts = !settings.magnet.raw_url.is_empty() && !carry.magnet.raw_done;
    if raw_scripts && path_ok && uri != "*" && req.method != Method::Unknown {
        match super::magnet::raw_url(sv, info, req, carry, &settings, &uri) {
            Turn::GoOn => {}
            Turn::Answered => return Once::Reply,
            Turn::Again(head) => return Once::Again(head),
            Turn::Park(p) => return park(sv, info, req, carry, p, registry),
        }
    }
    if req.method == Method::Unknown {
        sv.reply.error(501);
    } else if !path_ok {
        sv.reply.error(400);
    } else if body_too_large(req, &settings) {
        sv.reply.close = true;
        sv.reply.error(413);
        return Once::Reply;
    } else if uri == "*" {
        sv.reply.start(200);
        sv.reply.header("Allow", b"GET, HEAD, OPTIONS");
        sv.reply.end_head(Some(0));
    } else if let Some(loc) = redirect_to(sv, info, &settings, &resolved, &uri) {
        let code = match settings.rewrite.redirect_code {
            c @ (301 | 302 | 303 | 307 | 308) => c,
            _ => 301,
        };
        sv.reply.error_with(code, &[("Location", loc.as_bytes())]);
    } else if let Some(gate) = auth_gate(sv, info, req, &settings, carry, registry) {
        match gate {
            auth::Checked::Wait(g) => return Once::Gateway(g),
            _ => log::debug!("{}: refused by auth.require", sv.scratch.path),
        }
    } else if access_denied(&sv.scratch.path, &settings) {
        log::debug!("{}: denied by url.access-deny/-allow", sv.scratch.path);
        sv.reply.error(403);
    } else if !status_page_answered(sv, query) {
        return route(sv, info, req, carry, raw_path, query, registry);
    }
    Once::Reply
}

/// A script's run is parked: the request waits for it (or is answered,
/// when it cannot wait).
fn park(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    run: crate::magnet::Parked,
    registry: &Registry,
) -> Once {
    match super::magnet_wait::park(sv, info, req, carry, (run, None), registry) {
        Some(g) => Once::Gateway(g),
        None => Once::Reply,
    }
}

/// glint's ACME client's http-01 answer (RFC 8555 8.3), before rewrites,
/// redirects, auth and access rules can get in its way: true when
/// `target` asks for a token being validated and the answer is set.
fn acme_http01_answered(sv: &mut Services, req: &Request<'_, '_>, target: &str) -> bool {
    let acme = &sv.config.global.acme;
    if !acme.activate || !target.starts_with(crate::acme::HTTP01_PREFIX) {
        return false;
    }
    let Some(answer) = crate::acme::http01_answer(&acme.storage, target) else {
        return false;
    };
    let settings = Rc::clone(&sv.config.global);
    sv.reply.reset(settings, req.method == Method::Head);
    sv.reply.start(200);
    sv.reply.body_bytes(b"application/octet-stream", &answer);
    true
}

/// A body longer than `server.max-request-size` says it is: 413.
fn body_too_large(req: &Request<'_, '_>, settings: &Settings) -> bool {
    match req.body {
        Body::Length(n) => {
            settings.limits.max_request_size_kb > 0
                && n > settings.limits.max_request_size_kb * 1024
        }
        _ => false,
    }
}

/// mod_redirect: the Location of the first `url.redirect` rule that
/// matches `uri`.
fn redirect_to(
    sv: &mut Services,
    info: &ConnInfo,
    settings: &Settings,
    resolved: &Resolved,
    uri: &str,
) -> Option<String> {
    if settings.rewrite.redirect.is_empty() {
        return None;
    }
    rewrite::first_match(
        &settings.rewrite.redirect,
        uri,
        &rewrite::Subst {
            cond: &resolved.captures,
            scheme: info.scheme(),
            authority: &sv.scratch.host,
            port: sv.ports.get(info.listener).copied().unwrap_or(0),
        },
    )
}

/// mod_auth, before anything can answer the path (the path buffer is
/// lent out for the check): `None` when the request goes on, else it
/// was answered (401, 400, 500, 503) or waits for a blocking back end.
fn auth_gate(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Settings,
    carry: &mut Carry,
    registry: &Registry,
) -> Option<auth::Checked> {
    // No `auth.require` rule in this scope: mod_auth lets it pass.
    let scope = settings.auth.scope as usize;
    if sv
        .config
        .auth_requires
        .get(scope)
        .is_none_or(|(_, t)| t.rules.is_empty())
    {
        return None;
    }
    let path = std::mem::take(&mut sv.scratch.path);
    let c = auth_run(sv, info, req, settings, &path, carry, registry);
    sv.scratch.path = path;
    match c {
        auth::Checked::Pass => None,
        other => Some(other),
    }
}

/// mod_auth for `path`; a back end that blocks gets its wait started.
fn auth_run(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Settings,
    path: &str,
    carry: &mut Carry,
    registry: &Registry,
) -> auth::Checked {
    match auth::check(sv, info, req, settings, path, carry) {
        auth::Checked::Blocking(b) => {
            let w = auth_wait::Waiting {
                info,
                req,
                settings,
                path,
                carry,
                registry,
            };
            auth_wait::start(sv, w, *b)
        }
        other => other,
    }
}

/// mod_status: true when the path is its page and it answered.
fn status_page_answered(sv: &mut Services, query: &str) -> bool {
    // Every request passes here: the figures are copied only for a page.
    if !status_page::is_page(&sv.scratch.path, &sv.reply.settings.status) {
        return false;
    }
    let stats = sv.stats_now();
    let backends = if sv.reply.settings.status.metrics_url.as_deref() == Some(&sv.scratch.path) {
        sv.backend_figures()
    } else {
        Default::default()
    };
    let view = status_page::View {
        backends: &backends,
        stats: &stats,
        recent: &sv.recent,
        board: &sv.board,
        clock: &sv.clock,
        config: &sv.config,
        host: &sv.scratch.host,
    };
    status_page::serve(&sv.scratch.path, query, &mut sv.reply, &view)
}

/// The handler phases: gateways by prefix or extension, the index file
/// (meeting access and the gateways again), the static file.
#[allow(clippy::too_many_arguments)]
fn route(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    raw_path: &str,
    query: &str,
    registry: &Registry,
) -> Once {
    let settings = Rc::clone(&sv.reply.settings);
    if let Some(once) = websocket_phase(sv, info, req, &settings, carry, registry) {
        return once;
    }
    let docroot = match docroot_phase(sv, info, req, carry, &settings, registry) {
        Ok(d) => d,
        Err(once) => return once,
    };
    let root = docroot.as_deref();
    if let Some(once) = webdav_phase(sv, info, req, carry, &settings, root, registry) {
        return once;
    }
    let (found, indexed) = match index_phase(sv, info, req, carry, &settings, root, registry) {
        Ok(v) => v,
        Err(answered) => return answered,
    };
    let path = if indexed {
        std::mem::take(&mut sv.scratch.index_path)
    } else {
        std::mem::take(&mut sv.scratch.path)
    };
    let urls = (raw_path, query);
    let (ph, moved) = match physical_phase(sv, info, req, carry, &settings, root, &path, urls) {
        Ok(v) => v,
        Err(turn) => {
            give_back(sv, indexed, path);
            return match turn {
                Turn::Again(head) => Once::Again(head),
                Turn::Park(p) => park(sv, info, req, carry, p, registry),
                _ => Once::Reply,
            };
        }
    };
    let (moved_path, moved_ph) = moved.map_or((None, None), |m| (m.path, m.ph));
    let at = At {
        raw_path,
        path: moved_path.as_deref().unwrap_or(&path),
        query,
        ph: moved_ph.as_ref().or(ph.as_ref()),
        docroot: root,
        route: found,
    };
    let once = handle(sv, info, req, carry, &at, &settings, registry);
    give_back(sv, indexed, path);
    once
}

/// mod_wstunnel takes a WebSocket handshake for its routes first.
#[inline]
fn websocket_phase(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
) -> Option<Once> {
    // Not a WebSocket handshake (every HTTP/2 request): `take`'s own
    // first answer, without the call.
    if !super::wstunnel::is_upgrade(req) {
        return None;
    }
    match super::wstunnel::take(sv, info, req, settings, carry, registry)? {
        Ok(g) => Some(Once::Gateway(g)),
        Err(status) => {
            sv.reply.error(status);
            Some(Once::Reply)
        }
    }
}

/// The document root: an authorizer's, mod_vhostdb's, mod_evhost's or
/// the configured one. Err: answered, or waiting on mod_vhostdb.
#[inline]
fn docroot_phase<'s>(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &'s Rc<Settings>,
    registry: &Registry,
) -> Result<Option<Cow<'s, str>>, Once> {
    // (An authorizer's docroot is copied: `carry` changes below, and goes
    // on to a CGI or gateway job.)
    if let Some(d) = carry.docroot.as_deref() {
        return Ok(Some(Cow::Owned(d.to_string())));
    }
    if settings.vhostdb.backend.is_none() {
        // mod_vhostdb not configured here (its own first answer).
        return Ok(document_root(settings, &sv.scratch.host));
    }
    match super::vhostdb::docroot(sv, info, req, carry, settings, registry) {
        Root::Found(d) => Ok(Some(Cow::Owned(d))),
        Root::Default => Ok(document_root(settings, &sv.scratch.host)),
        Root::Wait(g) => Err(Once::Gateway(g)),
        Root::Failed(status) => {
            sv.reply.error(status);
            Err(Once::Reply)
        }
    }
}

/// mod_webdav answers before the index file and the handlers.
#[inline]
fn webdav_phase(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Rc<Settings>,
    docroot: Option<&str>,
    registry: &Registry,
) -> Option<Once> {
    if !settings.webdav.activate {
        return None;
    }
    match super::webdav::take(sv, info, req, carry, settings, docroot, registry)? {
        super::webdav::Taken::Reply => Some(Once::Reply),
        super::webdav::Taken::Job(g) => Some(Once::Gateway(g)),
    }
}

/// Where the path is on the file system (mod_userdir, mod_alias), for CGI
/// programs and static files (the URL path still decides the rest), and
/// where mod_magnet's physical-path scripts move it. Err: answered (a
/// refused alias is `Turn::Answered`), or mod_magnet's turn.
#[allow(clippy::too_many_arguments)]
#[inline]
fn physical_phase<'a>(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &'a Settings,
    docroot: Option<&'a str>,
    path: &'a str,
    (raw_path, query): (&str, &str),
) -> Result<(Option<Physical<'a>>, Option<Moved>), Turn> {
    let Some(root) = docroot else {
        return Ok((None, None));
    };
    let ph = match physical::map(settings, root, path) {
        Ok(ph) => ph,
        Err(status) => {
            sv.reply.error(status);
            return Err(Turn::Answered);
        }
    };
    if settings.magnet.physical_path.is_empty() {
        return Ok((Some(ph), None));
    }
    let here = (path, root, &ph);
    let moved = super::magnet::physical(sv, info, req, carry, settings, (raw_path, query), here)?;
    Ok((Some(ph), Some(moved)))
}

/// The path buffer goes back for the next request.
fn give_back(sv: &mut Services, indexed: bool, path: String) {
    if indexed {
        sv.scratch.index_path = path;
    } else {
        sv.scratch.path = path;
    }
}

/// mod_indexfile: for a directory no gateway takes, its index file is the
/// request's path from here on (in `sv.scratch.index_path`), and meets
/// auth, access and the gateways again. Ok: (the gateway route, whether
/// an index file took over); Err: answered.
fn index_phase(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Settings,
    docroot: Option<&str>,
    registry: &Registry,
) -> Result<(Option<(usize, usize)>, bool), Once> {
    let found = gateway::route(&sv.upstream, settings, &sv.scratch.path, carry);
    if found.is_some() || !sv.scratch.path.ends_with('/') {
        return Ok((found, false));
    }
    let Some(root) = docroot else {
        return Ok((found, false));
    };
    // The directory where mod_userdir or mod_alias puts it.
    let ph = match physical::map(settings, root, &sv.scratch.path) {
        Ok(ph) => ph,
        Err(status) => {
            sv.reply.error(status);
            return Err(Once::Reply);
        }
    };
    let indexed = static_file::find_index(
        &ph.base,
        &sv.scratch.path,
        &ph.rel,
        settings,
        &mut sv.files,
        sv.clock.mono_secs,
        &mut sv.scratch.index_path,
    );
    if !indexed {
        return Ok((found, false));
    }
    let index = std::mem::take(&mut sv.scratch.index_path);
    let checked = auth_run(sv, info, req, settings, &index, carry, registry);
    sv.scratch.index_path = index;
    match checked {
        auth::Checked::Pass => {}
        auth::Checked::Refused => return Err(Once::Reply),
        auth::Checked::Wait(g) => return Err(Once::Gateway(g)),
        auth::Checked::Blocking(_) => return Err(Once::Reply),
    }
    if access_denied(&sv.scratch.index_path, settings) {
        log::debug!(
            "{}: denied by url.access-deny/-allow",
            sv.scratch.index_path
        );
        sv.reply.error(403);
        return Err(Once::Reply);
    }
    let found = gateway::route(&sv.upstream, settings, &sv.scratch.index_path, carry);
    Ok((found, true))
}

/// The request's path as the handlers see it.
struct At<'p> {
    raw_path: &'p str,
    /// The URL path: the request's, or its index file's.
    path: &'p str,
    query: &'p str,
    /// Where it is on the file system, when there is a docroot.
    ph: Option<&'p Physical<'p>>,
    docroot: Option<&'p str>,
    /// The gateway route that takes it, and where its script name ends.
    route: Option<(usize, usize)>,
}

/// The handler that answers: mod_cgi, a gateway, or the static file.
fn handle(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    at: &At<'_>,
    settings: &Rc<Settings>,
    registry: &Registry,
) -> Once {
    // mod_cgi: a file `cgi.assign` takes runs instead of being sent.
    let cgi = match (at.route, at.ph) {
        (None, Some(ph)) if !settings.cgi.assign.is_empty() => {
            let here = cgi::Here {
                docroot: &ph.base,
                path: at.path,
                fs_rel: &ph.rel,
                query: at.query,
                info,
            };
            cgi::start(sv, &here, req, settings, carry, registry)
        }
        _ => None,
    };
    match (at.route, cgi) {
        (_, Some(Ok(g))) => Once::Gateway(g),
        (_, Some(Err(status))) => job_refused(sv, status),
        (Some((route, split)), None) => {
            let gw = gateway::At {
                route,
                raw_path: at.raw_path,
                split,
                path: at.path,
                query: at.query,
                info,
            };
            // (AJP's requests are built from the request's head, not from
            // a CGI environment.)
            let ajp = sv.upstream.routes.get(route).map(|r| r.protocol)
                == Some(crate::upstream::Protocol::Ajp13);
            let started = match ajp {
                true => ajp13::start(sv, &gw, req, settings, carry, registry),
                false => gateway::start(sv, &gw, req, settings, carry, registry),
            };
            match started {
                Ok(g) => Once::Gateway(g),
                Err(status) => job_refused(sv, status),
            }
        }
        (None, None) if ssi_answered(sv, info, req, carry, at, settings) => Once::Reply,
        (None, None) if static_file::excluded(at.path, settings) => {
            // mod_staticfile declines; no other handler: 403, as lighttpd.
            log::debug!("{}: not sent, static-file.exclude-extensions", at.path);
            sv.reply.error(403);
            Once::Reply
        }
        (None, None) => serve_static(sv, info, req, carry, at),
    }
}

/// mod_ssi: true when it answered with the page.
fn ssi_answered(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &Carry,
    at: &At<'_>,
    settings: &Settings,
) -> bool {
    // (mod_ssi's own first check, before its arguments are built.)
    if settings.ssi.extension.is_empty() {
        return false;
    }
    let (Some(ph), Some(docroot)) = (at.ph, at.docroot) else {
        return false;
    };
    let here = ssi::Here {
        path: at.path,
        raw_path: at.raw_path,
        query: at.query,
        ph,
        docroot,
        info,
    };
    ssi::answered(sv, &here, req, settings, carry)
}

/// A job that did not start: its status answers (413 closes the connection).
fn job_refused(sv: &mut Services, status: u16) -> Once {
    if status == 413 {
        sv.reply.close = true;
    }
    sv.reply.error(status);
    Once::Reply
}

/// mod_staticfile.
fn serve_static(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &Carry,
    at: &At<'_>,
) -> Once {
    // `server.error-handler` runs as a GET (HEAD stays HEAD).
    let method = match carry.error.as_ref() {
        Some(run) if run.generic && req.method != Method::Head => Method::Get,
        _ => req.method,
    };
    let sreq = static_file::StaticRequest {
        method,
        scheme: info.scheme(),
        raw_path: at.raw_path,
        path: at.path,
        fs_rel: at.ph.map_or(at.path, |p| &p.rel),
        query: at.query,
        host: req.host,
        headers: req.headers,
        docroot: at.ph.map(|p| &*p.base),
        now: sv.clock.unix,
        mono: sv.clock.mono_secs,
        copies: req.major >= 2 || info.tls.is_some(),
    };
    static_file::serve(
        &sreq,
        &mut sv.reply,
        &mut sv.scratch.fs_path,
        &mut sv.files,
        &mut sv.deflate,
    );
    Once::Reply
}
