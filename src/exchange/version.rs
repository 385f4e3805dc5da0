//! `server.protocol-http11`: whether an HTTP/1 request's scope lets it be
//! answered as HTTP/1.1, decided before anything else runs for it.

use super::{facts, Carry, ConnInfo, Services};
use crate::msg::Request;
use crate::path::normalize;

/// Whether an HTTP/1 request may be answered as HTTP/1.1: not where its
/// scope sets `server.protocol-http11 = "disable"`. The scope is the one
/// lighttpd patches in before any module runs: the connection's own
/// address (mod_extforward has not run), the Host and path as sent.
pub fn speaks_http11(sv: &mut Services, info: &ConnInfo, req: &Request<'_, '_>) -> bool {
    if !sv.config.http11_off_anywhere {
        return true;
    }
    super::set_host(sv, info, req, &Carry::default());
    let (path, query) = req.target.split_once('?').unwrap_or((req.target, ""));
    let url = if normalize(path, &mut sv.scratch.decoded, &mut sv.scratch.path).is_ok() {
        sv.scratch.path.as_str()
    } else {
        ""
    };
    // (`info` is the connection's: mod_extforward has not run yet.)
    sv.config
        .resolve(&facts(info, req, &sv.scratch.host, url, query))
        .settings
        .protocols
        .protocol_http11
}
