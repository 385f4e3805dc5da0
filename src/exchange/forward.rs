//! mod_extforward in the request's phases: behind a trusted forwarder, the
//! client named by `X-Forwarded-For` / `Forwarded` becomes the request's
//! client before any conditional is evaluated, so `$HTTP["remoteip"]`,
//! mod_access rules written for it, the access log and the gateways'
//! `REMOTE_ADDR` all see it; `X-Forwarded-Proto` (or `proto=`) sets the
//! scheme of `$HTTP["scheme"]`. A peer that is not trusted changes nothing,
//! whatever headers it sends. The parsing is [`crate::forwarded`]'s.

use super::{facts, Carry, ConnInfo, Services};
use crate::forwarded::client::{self, Scheme};
use crate::msg::Request;
use crate::path::normalize;

/// Applies mod_extforward to `info` for `req` (once per request: a run
/// again keeps what the first run found). `Err` is a trusted forwarder's
/// `Forwarded` header that cannot be read safely: 400, as lighttpd.
pub(super) fn apply(
    sv: &mut Services,
    info: &mut ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
) -> Result<(), &'static str> {
    if info.forwarded || !sv.config.extforward_anywhere {
        return Ok(());
    }
    info.forwarded = true;
    // The scope's extforward options, under the connection's own address
    // (as lighttpd, which patches its config before changing the address).
    let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
    let url = if normalize(path, &mut sv.scratch.decoded, &mut sv.scratch.path).is_ok() {
        sv.scratch.path.as_str()
    } else {
        ""
    };
    let resolved = sv
        .config
        .resolve(&facts(info, req, &sv.scratch.host, url, query));
    let Some(xf) = resolved.settings.extforward.as_deref() else {
        return Ok(());
    };
    let headers: Vec<(&str, &[u8])> = req.headers.iter().map(|h| (h.name, h.value)).collect();
    let view = client::Request {
        peer: info.peer,
        scheme: info.scheme(),
        headers: &headers,
    };
    let found = client::resolve(xf, &view).map_err(|e| e.0)?;
    if let Some(addr) = found.addr {
        log::debug!(
            "extforward: client {addr} (forwarded by {:?})",
            info.conn_peer
        );
        info.peer = Some(addr);
        info.peer_port = found.port.unwrap_or(0);
    }
    if let Some(s) = found.scheme {
        info.forwarded_scheme = Some(match s {
            Scheme::Http => "http",
            Scheme::Https => "https",
        });
    }
    if let Some(host) = found.host {
        carry.host = Some(host);
    }
    if let Some(user) = found.remote_user {
        carry.remote_user = Some(user);
    }
    Ok(())
}
