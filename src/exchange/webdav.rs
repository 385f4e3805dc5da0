//! mod_webdav's place in the phases: after mod_auth and mod_access
//! admitted the request and its path is mapped, before the index file and
//! the handlers (as lighttpd's physical-path hook). COPY and MOVE's
//! Destination meets mod_access and mod_auth too. A method with a body
//! becomes a local job of the upstream (see [`crate::msg::local`]).

use std::rc::Rc;

use mio::Registry;

use super::physical;
use super::{access_denied, auth, Carry, ConnInfo, GwStart, Services};
use crate::config::Settings;
use crate::handler::webdav::{self, request::READ_HEADERS, Ctx, DavMethod, Start};
use crate::msg::{Body, Method, Request};
use crate::upstream::{HttpBody, JobSpec, Protocol, Upload};

/// How mod_webdav took a request.
pub(super) enum Taken {
    /// Answered, in [`Services::reply`].
    Reply,
    /// A job answers (a method with a body, or a long answer).
    Job(Box<GwStart>),
}

/// What the request's scope and method come to: `None` when mod_webdav
/// does not take it (not active here, not one of its methods).
#[allow(clippy::too_many_arguments)]
pub(super) fn take(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Rc<Settings>,
    docroot: Option<&str>,
    registry: &Registry,
) -> Option<Taken> {
    if !settings.webdav.activate {
        return None;
    }
    if req.method_str == "OPTIONS" {
        options(sv, settings);
        return Some(Taken::Reply);
    }
    let method = DavMethod::of(req.method_str)?;
    let docroot = docroot?;
    if method.writes() || method == DavMethod::Lock {
        // Files may change: none of those kept open may answer a later
        // GET (a job's end clears them again, see `log_gateway`).
        sv.files.clear();
    }
    let cx = match context(sv, info, req, carry, settings, docroot, method) {
        Ok(cx) => cx,
        Err(status) => {
            sv.reply.error(status);
            return Some(Taken::Reply);
        }
    };
    if matches!(method, DavMethod::Copy | DavMethod::Move)
        && destination_refused(sv, info, req, settings, carry, &cx)
    {
        return Some(Taken::Reply);
    }
    match webdav::start(cx) {
        Start::Answer(a) => {
            a.write_reply(&mut sv.reply);
            Some(Taken::Reply)
        }
        Start::Work(work) => Some(start_job(sv, info, req, carry, settings, work, registry)),
    }
}

/// OPTIONS: what the share offers (`DAV`, `MS-Author-Via` for Microsoft's
/// clients, `Allow`), as lighttpd adds them.
fn options(sv: &mut Services, settings: &Settings) {
    let w = &settings.webdav;
    let locks = w.sqlite_db_name.is_some();
    let allow: &[u8] = if w.is_readonly {
        b"PROPFIND, OPTIONS, GET, HEAD, POST"
    } else if locks {
        b"PROPFIND, DELETE, MKCOL, PUT, MOVE, COPY, PROPPATCH, LOCK, UNLOCK, OPTIONS, GET, HEAD, POST"
    } else {
        b"PROPFIND, DELETE, MKCOL, PUT, MOVE, COPY, OPTIONS, GET, HEAD, POST"
    };
    let r = &mut sv.reply;
    r.start(200);
    r.header("DAV", if locks { b"1,2,3" } else { b"1,3" });
    r.header("MS-Author-Via", b"DAV");
    r.header("Allow", allow);
    r.end_head(Some(0));
}

/// The request as mod_webdav's methods see it (`Err`: the status).
fn context(
    sv: &Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &Carry,
    settings: &Rc<Settings>,
    docroot: &str,
    method: DavMethod,
) -> Result<Ctx, u16> {
    let rel = sv.scratch.path.clone();
    let ph = physical::map(settings, docroot, &rel)?;
    let store = match settings.webdav.sqlite_db_name.as_deref() {
        Some(name) => Some(sv.webdav.get(name).ok_or_else(|| {
            log::error!("(mod_webdav) database {name} was not opened");
            500u16
        })?),
        None => None,
    };
    let headers = READ_HEADERS
        .iter()
        .filter_map(|h| {
            req.header(h)
                .map(|v| (h.to_string(), String::from_utf8_lossy(v).into_owned()))
        })
        .collect();
    Ok(Ctx {
        method,
        path: ph.join(),
        base: ph.base.to_string(),
        rel,
        settings: Rc::clone(settings),
        docroot: docroot.to_string(),
        scheme: info.scheme().to_string(),
        authority: String::from_utf8_lossy(req.host).into_owned(),
        has_fragment: req.target.contains('#'),
        user: carry.remote_user.clone(),
        body_len: match req.body {
            Body::None => Some(0),
            Body::Length(n) => Some(n),
            Body::Chunked => None,
        },
        headers,
        store,
    })
}

/// COPY and MOVE: the Destination must be one this request could have
/// written through its own URL (mod_access, mod_auth). True when refused
/// (answered).
fn destination_refused(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Settings,
    carry: &mut Carry,
    cx: &Ctx,
) -> bool {
    let Ok(dst) = webdav::methods::destination_rel(cx) else {
        // (Malformed: the method answers it.)
        return false;
    };
    if access_denied(&dst, settings) {
        log::debug!("{dst}: Destination denied by url.access-deny/-allow");
        sv.reply.error(403);
        return true;
    }
    match auth::check(sv, info, req, settings, &dst, carry) {
        auth::Checked::Pass => false,
        auth::Checked::Blocking(_) | auth::Checked::Wait(_) => {
            // A Destination under a rule of its own whose back end blocks
            // would need a second wait: refused.
            log::warn!("(mod_auth) {dst}: Destination needs a check by a blocking auth.backend; answering 403");
            sv.reply.error(403);
            true
        }
        auth::Checked::Refused => true,
    }
}

/// A method with a body: a job whose work is glint's own.
#[allow(clippy::too_many_arguments)]
fn start_job(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Rc<Settings>,
    work: Box<dyn crate::msg::local::LocalWork>,
    registry: &Registry,
) -> Taken {
    let Some(route) = sv.upstream.local_route else {
        sv.reply.error(500);
        return Taken::Reply;
    };
    let body = match req.body {
        Body::None => HttpBody::Length(0),
        Body::Length(n) => HttpBody::Length(n),
        Body::Chunked => HttpBody::Chunked,
    };
    let spec = JobSpec {
        route,
        protocol: Protocol::Cgi,
        upload: Upload::http(Vec::new(), body),
        settings: Rc::clone(settings),
        hash_path: 0,
        hash_ip: 0,
        authorizer: false,
        local_redir: false,
        head_only: req.method == Method::Head,
        method: String::new(),
        http: None,
        cgi: None,
        local: Some(work),
    };
    match sv
        .upstream
        .start(spec, info.ex, sv.clock.mono_secs, registry)
    {
        Ok(job) => Taken::Job(GwStart::whole(job, settings, req, carry, route, info)),
        Err(status) => {
            sv.reply.error(status);
            Taken::Reply
        }
    }
}
