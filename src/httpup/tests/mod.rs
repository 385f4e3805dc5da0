//! Table tests for the upstream parts, with byte literals.

mod chunked;
mod options;
mod remap;
mod request;
mod response;

use std::net::{IpAddr, Ipv4Addr};

use crate::httpup::options::ProxyOptions;
use crate::httpup::request::{build_request, Body, ClientRequest, Conn, Peer, Plan, Sent, Version};

/// A request from 192.0.2.7 over http for `host` with `headers`.
pub(crate) fn req<'a>(
    method: &'a str,
    target: &'a str,
    host: Option<&'a str>,
    headers: &'a [(&'a str, &'a [u8])],
) -> ClientRequest<'a> {
    ClientRequest {
        method,
        target,
        version: Version::Http11,
        headers,
        body: Body::Length(0),
        scheme: "http",
        host,
        remote_user: None,
        conn: Conn {
            peer: Peer::Ip(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7))),
            scheme: "http",
            host,
            local: None,
        },
    }
}

/// Builds `r` and returns the head as text and what was sent.
pub(crate) fn build(r: &ClientRequest, opts: &ProxyOptions, keep: bool) -> (String, Sent) {
    let mut out = Vec::new();
    match build_request(r, opts, "backend-label", keep, &mut out) {
        Ok(Plan::Forward(sent)) => (String::from_utf8_lossy(&out).into_owned(), sent),
        other => panic!("expected a forwarded request, got {other:?}"),
    }
}

/// The `Sent` of a plain GET with keep-alive.
pub(crate) fn sent_get() -> Sent {
    let headers: &[(&str, &[u8])] = &[];
    build(
        &req("GET", "/", Some("h"), headers),
        &ProxyOptions::default(),
        true,
    )
    .1
}
