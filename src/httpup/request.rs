//! The upstream request head, from the client's request (lighttpd
//! `src/mod_proxy.c` `proxy_create_env` and `proxy_set_Forwarded`).

use std::net::{IpAddr, SocketAddr};

use super::options::{Forwarded, HeaderOptions, ProxyOptions};
use super::push_quoted_inner;
use super::remap::{Dir, Remap};
use crate::syntax::trim_ows as trim;

/// The client's HTTP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// What the client's request body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body, or `Content-Length: n` (0 included).
    Length(u64),
    /// A body of unknown length (the client sent it chunked) that glint
    /// streams upstream as it arrives: sent chunked again.
    Streamed,
}

/// An address of the connection's far end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer<'a> {
    Ip(IpAddr),
    /// A unix socket listener: lighttpd's text for it.
    Unix(&'a str),
}

/// The connection's own end, for `Forwarded: by=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local<'a> {
    Inet(SocketAddr),
    Unix(&'a str),
}

/// What this hop saw of the connection, before `mod_extforward` replaced
/// any of it: the `Forwarded` element glint adds describes this hop.
#[derive(Debug, Clone, Copy)]
pub struct Conn<'a> {
    /// The far end (the socket peer, or the source the PROXY protocol
    /// gave): appended to `X-Forwarded-For`, `Forwarded: for=`. lighttpd's
    /// `_L_EXTFORWARD_ACTUAL_FOR`, or `con->dst_addr_buf` without it.
    pub peer: Peer<'a>,
    /// `"https"` on a TLS connection (or one the PROXY protocol said was
    /// TLS), else `"http"`: `Forwarded: proto=`.
    pub scheme: &'a str,
    /// The Host the client sent: `Forwarded: host=`.
    pub host: Option<&'a str>,
    /// The listening end: `Forwarded: by=`; `None` leaves `by` out.
    pub local: Option<Local<'a>>,
}

/// The client's request, as glint parsed it and `mod_extforward` left it.
#[derive(Debug, Clone, Copy)]
pub struct ClientRequest<'a> {
    pub method: &'a str,
    /// The request-target as received (origin-form `/a?b`, or absolute-form).
    pub target: &'a str,
    pub version: Version,
    /// The request's header fields in order, repeated names repeated.
    pub headers: &'a [(&'a str, &'a [u8])],
    pub body: Body,
    /// The request's scheme (lighttpd `r->uri.scheme`, after
    /// `X-Forwarded-Proto` from a trusted forwarder): `X-Forwarded-Proto`.
    pub scheme: &'a str,
    /// The request's Host (lighttpd `r->http_host`, after `Forwarded: host=`):
    /// the upstream Host, `X-Forwarded-Host`, `X-Host`.
    pub host: Option<&'a str>,
    /// `REMOTE_USER` after authentication: `Forwarded: remote_user=`.
    pub remote_user: Option<&'a str>,
    pub conn: Conn<'a>,
}

/// Why no request goes upstream; [`BuildError::status`] is the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildError {
    /// CONNECT without `proxy.header = ( "connect" => "enable" )`.
    ConnectNotAllowed,
    /// A body of unknown length to an HTTP/1.0 upstream (lighttpd 411).
    LengthRequired,
    /// A header name or value glint cannot pass on (CR, LF, NUL).
    BadHeader,
}

impl BuildError {
    pub fn status(self) -> u16 {
        match self {
            BuildError::ConnectNotAllowed => 405,
            BuildError::LengthRequired => 411,
            BuildError::BadHeader => 400,
        }
    }
}

/// What was sent, for reading the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The request was HEAD: its answer has no body.
    pub head: bool,
    /// `Upgrade` was passed: a 101 may come, then bytes both ways.
    pub upgrade: bool,
    /// `Connection: keep-alive` was sent (else `close` or `upgrade`).
    pub keep_alive: bool,
    /// The request line says HTTP/1.0 (`force-http10`, or no Host known).
    pub http10: bool,
    /// The body goes chunked: the caller frames it with
    /// [`super::chunked::write_chunk_header`] and ends it with
    /// [`super::chunked::LAST_CHUNK`].
    pub chunked_body: bool,
    /// The remapping state for the answer's headers.
    pub remap: Remap,
}

/// What to do with the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The head is in `out`; the body follows.
    Forward(Sent),
    /// CONNECT with `"connect" => "enable"`: nothing is sent; glint answers
    /// 200 itself and relays bytes between the client and the backend
    /// (lighttpd `proxy_create_env_connect`).
    Tunnel,
}

/// Header fields never passed on as the client sent them: hop-by-hop
/// (RFC 9110 7.6.1), re-framed (RFC 9112 6), rebuilt, or dropped as lighttpd
/// drops them: `Proxy` (httpoxy), `Set-Cookie` (an answer field), `Expect`
/// (glint answers `100-continue` itself, as lighttpd does).
const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy",
    "te",
    "transfer-encoding",
    "content-length",
    "host",
    "set-cookie",
    "expect",
    "http2-settings",
];

/// `X-*` fields glint sets itself; a client's values are replaced.
const REPLACED: &[&str] = &["x-forwarded-proto", "x-forwarded-host", "x-host"];

fn valid_field(name: &str, value: &[u8]) -> bool {
    !name.is_empty()
        && name.bytes().all(|c| c.is_ascii_graphic() && c != b':')
        && !value.iter().any(|&c| matches!(c, b'\r' | b'\n' | 0))
}

/// Writes the upstream request head for `req` into `out` (appended).
/// `label` is the chosen host's `proxy.server` key (for
/// `replace-http-host`); `keep_alive` is the pool's wish to keep the
/// connection after the answer.
pub fn build_request(
    req: &ClientRequest,
    opts: &ProxyOptions,
    label: &str,
    keep_alive: bool,
    out: &mut Vec<u8>,
) -> Result<Plan, BuildError> {
    if !req.headers.iter().all(|(n, v)| valid_field(n, v)) || !valid_target(req.target) {
        return Err(BuildError::BadHeader);
    }
    let h = &opts.header;
    if req.method.eq_ignore_ascii_case("CONNECT") {
        return if h.connect {
            Ok(Plan::Tunnel)
        } else {
            Err(BuildError::ConnectNotAllowed)
        };
    }
    let remaps = h.remaps_request();
    let mut remap = Remap {
        client_host: req.host.map(str::to_string),
        https_remap: h.https_remap && req.scheme.eq_ignore_ascii_case("https"),
        ..Remap::default()
    };
    let host = upstream_host(req, opts, label, remaps.then_some(&mut remap));
    let shape = Shape::of(req, h, host.is_some(), keep_alive)?;
    let hop = |n: &str| {
        DROPPED.iter().any(|d| d.eq_ignore_ascii_case(n))
            || shape
                .named
                .iter()
                .any(|t| t.eq_ignore_ascii_case(n.as_bytes()))
    };

    // The request line.
    out.extend_from_slice(req.method.as_bytes());
    out.push(b' ');
    if remaps {
        let mut t = req.target.as_bytes().to_vec();
        remap.remap_uri(h, &mut t, Dir::Request);
        out.extend_from_slice(&t);
    } else {
        out.extend_from_slice(req.target.as_bytes());
    }
    out.extend_from_slice(if shape.http10 {
        b" HTTP/1.0\r\n"
    } else {
        b" HTTP/1.1\r\n"
    });
    if let Some(host) = &host {
        line(out, "Host", host);
    }

    let added = Added {
        xff: x_forwarded_for(req, &hop),
        forwarded: forwarded_value(req, opts.forwarded, &hop),
    };
    let remap_fields = remaps.then_some(&mut remap);
    let wrote = copy_fields(out, req, h, remap_fields, shape.upgrade, &hop, &added);
    add_missing(out, req, &wrote, &added);
    shape.write_framing(out);
    out.extend_from_slice(b"\r\n");

    Ok(Plan::Forward(Sent {
        head: req.method == "HEAD",
        upgrade: shape.upgrade,
        keep_alive: shape.keep_alive,
        http10: shape.http10,
        chunked_body: shape.framing == Some(Framing::Chunked),
        remap,
    }))
}

/// The Host the upstream gets: the backend's label (`replace-http-host`),
/// else the client's, remapped when `remap` is given.
fn upstream_host(
    req: &ClientRequest,
    opts: &ProxyOptions,
    label: &str,
    remap: Option<&mut Remap>,
) -> Option<Vec<u8>> {
    if opts.replace_http_host && !label.is_empty() {
        return Some(label.as_bytes().to_vec());
    }
    req.host.map(|c| {
        let mut b = c.as_bytes().to_vec();
        if let Some(remap) = remap {
            let n = b.len();
            remap.remap_host(&opts.header, &mut b, 0, n, Dir::Request);
        }
        b
    })
}

/// What the upstream head says beyond the client's fields, decided before
/// any of it is written.
struct Shape<'a> {
    /// Hop-by-hop fields the client named in Connection (RFC 9110 7.6.1).
    named: Vec<&'a [u8]>,
    http10: bool,
    upgrade: bool,
    te_trailers: bool,
    keep_alive: bool,
    framing: Option<Framing>,
}

impl<'a> Shape<'a> {
    /// `has_host`: a Host goes upstream; `keep_alive`: the pool's wish.
    fn of(
        req: &ClientRequest<'a>,
        h: &HeaderOptions,
        has_host: bool,
        keep_alive: bool,
    ) -> Result<Shape<'a>, BuildError> {
        let headers = req.headers;
        let field = |name: &'static str| {
            headers
                .iter()
                .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        };
        // No Host to send: lighttpd downgrades the request line to HTTP/1.0.
        let http10 = h.force_http10 || !has_host;
        let client11 = req.version == Version::Http11 && !http10;
        let named: Vec<&[u8]> = field("connection")
            .flat_map(|(_, v)| v.split(|&b| b == b','))
            .map(trim)
            .filter(|t| !t.is_empty())
            .collect();
        let upgrade_value = field("upgrade")
            .map(|(_, v)| trim(v))
            .find(|v| !v.is_empty());
        let upgrade = h.upgrade
            && client11
            && upgrade_value.is_some()
            && named.iter().any(|t| t.eq_ignore_ascii_case(b"upgrade"));
        let te_trailers =
            client11 && field("te").any(|(_, v)| trim(v).eq_ignore_ascii_case(b"trailers"));
        let keep_alive = keep_alive && !http10 && !upgrade;
        let is_get_head = req.method == "GET" || req.method == "HEAD";
        let framing = match req.body {
            Body::Length(0) if is_get_head => None,
            Body::Length(n) => Some(Framing::Length(n)),
            Body::Streamed if http10 => return Err(BuildError::LengthRequired),
            Body::Streamed => Some(Framing::Chunked),
        };
        Ok(Shape {
            named,
            http10,
            upgrade,
            te_trailers,
            keep_alive,
            framing,
        })
    }

    /// The body's framing, `TE` and `Connection`.
    fn write_framing(&self, out: &mut Vec<u8>) {
        match self.framing {
            Some(Framing::Length(n)) => line(out, "Content-Length", n.to_string().as_bytes()),
            Some(Framing::Chunked) => line(out, "Transfer-Encoding", b"chunked"),
            None => {}
        }
        if self.te_trailers {
            line(out, "TE", b"trailers");
        }
        let mut conn = Vec::with_capacity(24);
        conn.extend_from_slice(match (self.upgrade, self.keep_alive) {
            (true, _) => b"upgrade".as_slice(),
            (false, true) => b"keep-alive",
            (false, false) => b"close",
        });
        if self.te_trailers {
            conn.extend_from_slice(b", te");
        }
        line(out, "Connection", &conn);
    }
}

/// The forwarding fields glint writes in place of the client's.
struct Added {
    xff: Vec<u8>,
    forwarded: Option<Vec<u8>>,
}

/// Which of the [`Added`] and [`REPLACED`] fields are written.
struct Wrote {
    xff: bool,
    forwarded: bool,
    x: [bool; 3],
}

/// Copies the client's fields that go on, each where the client had it:
/// hop-by-hop ones dropped, forwarding ones replaced by glint's (at the
/// first of their name), `Destination` and `Content-Location` remapped
/// when `remap` is given.
fn copy_fields(
    out: &mut Vec<u8>,
    req: &ClientRequest,
    h: &HeaderOptions,
    mut remap: Option<&mut Remap>,
    upgrade: bool,
    hop: &dyn Fn(&str) -> bool,
    added: &Added,
) -> Wrote {
    let mut wrote = Wrote {
        xff: false,
        forwarded: false,
        x: [false; 3],
    };
    let mut wrote_upgrade = false;
    for &(name, value) in req.headers {
        if hop(name) && !(upgrade && name.eq_ignore_ascii_case("upgrade")) {
            continue;
        }
        if name.eq_ignore_ascii_case("upgrade") {
            if !upgrade || wrote_upgrade || trim(value).is_empty() {
                continue;
            }
            wrote_upgrade = true;
        } else if name.eq_ignore_ascii_case("x-forwarded-for") {
            if !wrote.xff {
                line(out, "X-Forwarded-For", &added.xff);
                wrote.xff = true;
            }
            continue;
        } else if name.eq_ignore_ascii_case("forwarded") && added.forwarded.is_some() {
            if let (false, Some(f)) = (wrote.forwarded, &added.forwarded) {
                line(out, "Forwarded", f);
                wrote.forwarded = true;
            }
            continue;
        } else if let Some(i) = REPLACED.iter().position(|r| r.eq_ignore_ascii_case(name)) {
            if !wrote.x[i] {
                wrote.x[i] = true;
                x_field(out, req, i, name);
            }
            continue;
        } else if let Some(remap) = remap.as_deref_mut().filter(|_| {
            name.eq_ignore_ascii_case("destination")
                || name.eq_ignore_ascii_case("content-location")
        }) {
            let mut v = trim(value).to_vec();
            remap.remap_uri(h, &mut v, Dir::Request);
            line(out, name, &v);
            continue;
        }
        line(out, name, value);
    }
    wrote
}

/// The [`Added`] and [`REPLACED`] fields the client did not send.
fn add_missing(out: &mut Vec<u8>, req: &ClientRequest, wrote: &Wrote, added: &Added) {
    if !wrote.xff {
        line(out, "X-Forwarded-For", &added.xff);
    }
    for (i, name) in ["X-Forwarded-Proto", "X-Forwarded-Host", "X-Host"]
        .iter()
        .enumerate()
    {
        if !wrote.x[i] {
            x_field(out, req, i, name);
        }
    }
    if let (false, Some(f)) = (wrote.forwarded, &added.forwarded) {
        line(out, "Forwarded", f);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
}

/// A request-target glint can copy into a request line: no whitespace,
/// no control bytes (glint's parser refused them already).
fn valid_target(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|c| c.is_ascii_graphic() || c >= 0x80)
}

fn line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// `X-Forwarded-Proto` (always), `X-Forwarded-Host` and `X-Host` (with a
/// Host), replacing what the client sent. Without a Host lighttpd passes the
/// client's `X-Forwarded-Host` on; glint drops it rather than pass a
/// client's claim as this hop's.
fn x_field(out: &mut Vec<u8>, req: &ClientRequest, i: usize, name: &str) {
    match (i, req.host.filter(|h| !h.is_empty())) {
        (0, _) => line(out, name, req.scheme.as_bytes()),
        (_, Some(host)) => line(out, name, host.as_bytes()),
        (_, None) => {}
    }
}

fn peer_text(p: Peer) -> String {
    match p {
        Peer::Ip(ip) => ip.to_string(),
        Peer::Unix(s) => s.to_string(),
    }
}

/// The client's `X-Forwarded-For` values, joined, then this hop's peer
/// (lighttpd `http_header_request_append`).
fn x_forwarded_for(req: &ClientRequest, hop: &dyn Fn(&str) -> bool) -> Vec<u8> {
    let mut v = Vec::new();
    for (n, val) in req.headers {
        if n.eq_ignore_ascii_case("x-forwarded-for") && !hop(n) && !trim(val).is_empty() {
            v.extend_from_slice(trim(val));
            v.extend_from_slice(b", ");
        }
    }
    v.extend_from_slice(peer_text(req.conn.peer).as_bytes());
    v
}

/// The `Forwarded` value: the client's (joined), or, when it sent none, one
/// seeded from its `X-Forwarded-For`, then this hop's element; `None` when
/// `proxy.forwarded` asks for nothing.
fn forwarded_value(
    req: &ClientRequest,
    f: Forwarded,
    hop: &dyn Fn(&str) -> bool,
) -> Option<Vec<u8>> {
    if !f.any() {
        return None;
    }
    let mut parts: Vec<Vec<u8>> = req
        .headers
        .iter()
        .filter(|(n, v)| n.eq_ignore_ascii_case("forwarded") && !hop(n) && !trim(v).is_empty())
        .map(|(_, v)| trim(v).to_vec())
        .collect();
    if parts.is_empty() {
        // lighttpd seeds Forwarded from X-Forwarded-For: every element
        // quoted, one with a ':' taken for IPv6 and bracketed.
        for (n, v) in req.headers {
            if !n.eq_ignore_ascii_case("x-forwarded-for") || hop(n) {
                continue;
            }
            for tok in v
                .split(|&c| matches!(c, b' ' | b'\t' | b','))
                .filter(|t| !t.is_empty())
            {
                let v6 = tok.contains(&b':');
                let mut e = b"for=\"".to_vec();
                if v6 {
                    e.push(b'[');
                }
                push_quoted_inner(&mut e, tok);
                e.extend_from_slice(if v6 { b"]\"" } else { b"\"" });
                parts.push(e);
            }
        }
    }
    let mut pairs: Vec<Vec<u8>> = Vec::new();
    if f.for_ {
        pairs.push(match req.conn.peer {
            Peer::Ip(IpAddr::V4(a)) => format!("for={a}").into_bytes(),
            Peer::Ip(IpAddr::V6(a)) => format!("for=\"[{a}]\"").into_bytes(),
            Peer::Unix(s) => quoted("for", s.as_bytes()),
        });
    }
    if f.by {
        match req.conn.local {
            Some(Local::Inet(a)) => pairs.push(format!("by=\"{a}\"").into_bytes()),
            Some(Local::Unix(s)) => pairs.push(quoted("by", s.as_bytes())),
            None => {}
        }
    }
    if f.proto
        && req
            .conn
            .scheme
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
    {
        pairs.push(format!("proto={}", req.conn.scheme).into_bytes());
    }
    if f.host {
        if let Some(host) = req.conn.host.filter(|h| !h.is_empty()) {
            pairs.push(quoted("host", host.as_bytes()));
        }
    }
    if f.remote_user {
        if let Some(u) = req.remote_user {
            pairs.push(quoted("remote_user", u.as_bytes()));
        }
    }
    if !pairs.is_empty() {
        parts.push(pairs.join(&b';'));
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(b", ".as_slice()))
    }
}

fn quoted(key: &str, v: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(key.len() + v.len() + 3);
    e.extend_from_slice(key.as_bytes());
    e.extend_from_slice(b"=\"");
    push_quoted_inner(&mut e, v);
    e.push(b'"');
    e
}
