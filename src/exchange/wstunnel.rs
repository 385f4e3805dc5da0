//! mod_wstunnel: a WebSocket opening handshake (RFC 6455 §4) for a
//! `wstunnel.server` route is answered by glint itself, and the messages
//! that follow go to a plain TCP backend as bytes (the connection's side
//! decodes and encodes the frames, [`crate::proto::ws`]). The checks are
//! lighttpd's, in its order: an HTTP/1.1 GET with `Upgrade: websocket`
//! and `Connection: upgrade` is the module's; a bad `Sec-WebSocket-Version`
//! is 400, a missing Host 400, an `Origin` that `wstunnel.origins` does
//! not allow 403 (400 when it is missing), a missing key 400, a version
//! below 8 503. The 101 goes out as the backend connection is made (one
//! refused at once is 503, as lighttpd answers; a later failure closes the
//! WebSocket with 1001).

use std::rc::Rc;

use mio::Registry;

use super::endpoint::peer_hash;
use super::{Carry, ConnInfo, GwStart, Services};
use crate::config::Settings;
use crate::hash::fnv1a;
use crate::httpup::has_token;
use crate::msg::{Method, Request};
use crate::upstream::{JobSpec, Protocol, Upload};

/// A WebSocket request on a `wstunnel.server` route: `Err(status)` when it
/// is refused (400, 403, 503), its job otherwise; `None` when it is not
/// one (another handler answers it).
pub(super) fn take(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
) -> Option<Result<Box<GwStart>, u16>> {
    if !is_upgrade(req) {
        return None;
    }
    let route = sv.upstream.wstunnel_route(settings, &sv.scratch.path)?;
    let debug = settings.tunnel.wstunnel_debug > 0;
    if let Err(status) = check(req, settings) {
        if debug {
            log::info!("wstunnel: {} refused with {status}", sv.scratch.path);
        }
        return Some(Err(status));
    }
    if debug {
        log::info!("wstunnel: {} to its backend", sv.scratch.path);
    }
    Some(start(sv, info, req, settings, carry, route, registry))
}

/// An HTTP/1.1 GET asking to upgrade to WebSocket.
pub(super) fn is_upgrade(req: &Request<'_, '_>) -> bool {
    req.major == 1
        && req.minor == 1
        && req.method == Method::Get
        && req
            .header("upgrade")
            .is_some_and(|v| has_token(v, "websocket"))
        && req
            .header("connection")
            .is_some_and(|v| has_token(v, "upgrade"))
}

/// lighttpd's checks of the handshake, before a backend is asked.
fn check(req: &Request<'_, '_>, settings: &Settings) -> Result<(), u16> {
    let version = match req.header("sec-websocket-version") {
        None => 0,
        Some(v) if v.first().is_some_and(u8::is_ascii_digit) => {
            let digits: Vec<u8> = v.iter().copied().take_while(u8::is_ascii_digit).collect();
            std::str::from_utf8(&digits)
                .ok()
                .and_then(|d| d.parse::<i32>().ok())
                .ok_or(400u16)?
        }
        Some(_) => return Err(400),
    };
    if req.host.is_empty() {
        return Err(400);
    }
    origin_allowed(req, &settings.tunnel.ws_origins)?;
    match version {
        // (Draft hybi-00's handshake, with its key in the body, is not
        // provided: no client in use speaks it.)
        0 => Err(400),
        1..=7 => Err(503),
        _ if req.header("sec-websocket-key").is_none_or(<[u8]>::is_empty) => Err(400),
        _ => Ok(()),
    }
}

/// `wstunnel.origins`: when set, the `Origin` (or the older drafts'
/// `Sec-WebSocket-Origin`) must be one of them, or end with `.` and one of
/// them; compared as sent (not normalised), as lighttpd does.
fn origin_allowed(req: &Request<'_, '_>, allowed: &[String]) -> Result<(), u16> {
    if allowed.is_empty() {
        return Ok(());
    }
    let origin = req
        .header("origin")
        .or_else(|| req.header("sec-websocket-origin"))
        .filter(|o| !o.is_empty())
        .ok_or(400u16)?;
    let ok = allowed.iter().any(|a| {
        let a = a.as_bytes();
        origin.ends_with(a)
            && (origin.len() == a.len() || origin[origin.len() - a.len() - 1] == b'.')
    });
    if ok {
        Ok(())
    } else {
        Err(403)
    }
}

/// The job: a tunnel to one of the route's backends.
fn start(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    route: usize,
    registry: &Registry,
) -> Result<Box<GwStart>, u16> {
    let spec = JobSpec {
        route,
        protocol: Protocol::WsTunnel,
        upload: Upload::raw(Protocol::WsTunnel),
        settings: Rc::clone(settings),
        hash_path: fnv1a(sv.scratch.path.as_bytes()),
        hash_ip: peer_hash(info),
        authorizer: false,
        local_redir: false,
        head_only: false,
        method: req.method_str.to_string(),
        http: None,
        cgi: None,
        local: None,
    };
    let now = sv.clock.mono_secs;
    let job = sv.upstream.start(spec, info.ex, now, registry)?;
    Ok(GwStart::whole(job, settings, req, carry, route, info))
}
