//! mod_sockproxy: a connection whose settings (its socket and its
//! client's address, the conditions known when it is accepted) name a
//! `sockproxy.server` route is no HTTP connection at all: a backend is
//! connected as it is accepted, and every byte goes through unchanged,
//! both ways, until one side closes (the byte tunnel of a proxied
//! `Upgrade`, from the first byte).

use std::rc::Rc;

use mio::Registry;

use super::endpoint::peer_hash;
use super::{Carry, ConnInfo, GwStart, Services};
use crate::hash::fnv1a;
use crate::msg::OwnedHead;
use crate::upstream::{JobSpec, Protocol, Upload};

/// Starts the tunnel of a connection just accepted, when its settings
/// route it to `sockproxy.server`; `None` when they do not (it is HTTP),
/// `Some(Err(status))` when no backend can take it now.
pub fn start(
    sv: &mut Services,
    info: &ConnInfo,
    registry: &Registry,
) -> Option<Result<Box<GwStart>, u16>> {
    let settings = sv.config.connection_settings(info.listener, info.peer);
    let route = sv.upstream.sockproxy_route(&settings)?;
    if settings.tunnel.sockproxy_debug > 0 {
        log::info!("sockproxy: connection from {:?} to its backend", info.peer);
    }
    sv.stats.requests += 1;
    let spec = JobSpec {
        route,
        protocol: Protocol::SockProxy,
        upload: Upload::raw(Protocol::SockProxy),
        settings: Rc::clone(&settings),
        // lighttpd matches (and hashes) the path "/" for every connection.
        hash_path: fnv1a(b"/"),
        hash_ip: peer_hash(info),
        authorizer: false,
        local_redir: false,
        head_only: false,
        method: String::new(),
        http: None,
        cgi: None,
        local: None,
    };
    let now = sv.clock.mono_secs;
    let job = match sv.upstream.start(spec, info.ex, now, registry) {
        Ok(job) => job,
        Err(status) => return Some(Err(status)),
    };
    Some(Ok(Box::new(GwStart {
        job,
        authorizer: false,
        settings,
        head_only: false,
        minor: 1,
        head: OwnedHead::default(),
        carry: Carry::default(),
        route,
        info: info.clone(),
    })))
}
