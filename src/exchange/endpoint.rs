//! What every backend start needs, whatever its protocol (FastCGI, SCGI,
//! uwsgi, HTTP proxy, CGI): where the request goes, the server's end of the
//! connection, the Host as SERVER_NAME, and the client's hash for the
//! balancers.

use std::net::IpAddr;

use super::{ConnInfo, Services};
use crate::hash::fnv1a;

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
    pub info: &'a ConnInfo,
}

/// SERVER_NAME: the Host without its port, an IPv6 literal with its
/// brackets (`[::1]`, also from `[::1]:8080`), as lighttpd sets it.
pub(super) fn host_name(host: &[u8]) -> &str {
    super::host_without_port(std::str::from_utf8(host).unwrap_or(""))
}

/// The listener's port, and its own address or (bound to all) the socket's.
pub(super) fn server_end(sv: &Services, info: &ConnInfo) -> (u16, Option<IpAddr>) {
    let server_port = sv.ports.get(info.listener).copied().unwrap_or(0);
    let server_addr = match sv.bound_ips.get(info.listener).copied().flatten() {
        Some(ip) => Some(ip),
        None => info.local_ip,
    };
    (server_port, server_addr)
}

/// The hash a `hash` or `sticky` balancer picks a backend by for the
/// client's address (0 without one).
pub(super) fn peer_hash(info: &ConnInfo) -> u64 {
    info.peer.map_or(0, |ip| match ip {
        IpAddr::V4(a) => fnv1a(&a.octets()),
        IpAddr::V6(a) => fnv1a(&a.octets()),
    })
}
