//! A request for a `proxy.server` route becomes a job on an HTTP backend:
//! its head built by [`crate::httpup::request::build_request`] (hop-by-hop
//! fields out, `Host`, `X-Forwarded-*` / `Forwarded`, `map-urlpath`,
//! `Upgrade` when `proxy.header` allows it), its body streamed after it.

use std::borrow::Cow;
use std::rc::Rc;

use mio::Registry;

use super::endpoint::{peer_hash, server_end, At};
use super::{Carry, GwStart, Services};
use crate::config::Settings;
use crate::hash::fnv1a;
use crate::httpup::options::ProxyOptions;
use crate::httpup::request::{
    self, Body as UpBody, ClientRequest, Conn, Local, Peer, Plan, Sent, Version,
};
use crate::msg::{Body, Method, OwnedHead, Request};
use crate::upstream::proxy::HttpJob;
use crate::upstream::{HttpBody, JobSpec, Protocol, Upload};

/// Builds the upstream request for `req` on route `at.route` and starts
/// its job; errors are statuses (413, 400 for a header glint cannot pass
/// on, 405 for CONNECT, 503 when no backend can take it).
pub(super) fn start(
    sv: &mut Services,
    at: &At<'_>,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
) -> Result<Box<GwStart>, u16> {
    let now = sv.clock.mono_secs;
    let (body, up_body) = body_of(req, settings)?;
    let mut headers: Vec<(&str, &[u8])> = req.headers.iter().map(|h| (h.name, h.value)).collect();
    // mod_authn_gssapi's stored credentials, named as lighttpd names them
    // (the client's own header of that name replaced).
    let keytab = carry.krb5_ccache.clone();
    if let Some(k) = keytab.as_deref() {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case("x-forwarded-keytab"));
        headers.push(("X-Forwarded-Keytab", k.path().as_bytes()));
    }
    let target = client_target(req, at);
    let host = std::str::from_utf8(req.host).ok().filter(|h| !h.is_empty());
    let creq = ClientRequest {
        method: req.method_str,
        target: &target,
        version: if req.minor == 0 {
            Version::Http10
        } else {
            Version::Http11
        },
        headers: &headers,
        body,
        scheme: at.info.scheme(),
        host,
        remote_user: None,
        conn: conn_of(sv, at, host),
    };
    let opts = &settings.proxy;
    let (mut heads, sent) = build_heads(sv, at.route, &creq, opts, req.head_len)?;
    // With one head there is nothing to switch to: it moves into the upload.
    let first = match heads.len() {
        1 => std::mem::take(&mut heads[0].1),
        _ => heads[0].1.clone(),
    };
    let upload = Upload::http(first, up_body);
    let head_only = req.method == Method::Head;
    let job_spec = JobSpec {
        route: at.route,
        protocol: Protocol::Http,
        upload,
        settings: Rc::clone(settings),
        hash_path: fnv1a(at.path.as_bytes()),
        hash_ip: peer_hash(at.info),
        authorizer: false,
        local_redir: false,
        head_only,
        method: req.method_str.to_string(),
        http: Some(Box::new(HttpJob {
            heads,
            current: 0,
            sent,
            opts: Rc::clone(opts),
        })),
        cgi: None,
        local: None,
    };
    let job = sv.upstream.start(job_spec, at.info.ex, now, registry)?;
    Ok(Box::new(GwStart {
        job,
        authorizer: false,
        settings: Rc::clone(settings),
        head_only,
        minor: req.minor,
        head: OwnedHead::of(req),
        carry: std::mem::take(carry),
        route: at.route,
        info: at.info.clone(),
    }))
}

/// The request's body as the head announces it and as the upload carries
/// it; 413 over `server.max-request-size`.
fn body_of(req: &Request<'_, '_>, settings: &Settings) -> Result<(UpBody, HttpBody), u16> {
    let limit = match settings.limits.max_request_size_kb {
        0 => u64::MAX,
        kb => kb.saturating_mul(1024),
    };
    Ok(match req.body {
        Body::None => (UpBody::Length(0), HttpBody::Length(0)),
        Body::Length(n) if n > limit => return Err(413),
        Body::Length(n) => (UpBody::Length(n), HttpBody::Length(n)),
        Body::Chunked => (UpBody::Streamed, HttpBody::Chunked),
    })
}

/// The target after url.rewrite: the path as the client wrote it (the
/// client's own target when that is it, as a rule).
fn client_target<'a>(req: &'a Request<'_, '_>, at: &'a At<'a>) -> Cow<'a, str> {
    if at.query.is_empty() {
        Cow::Borrowed(at.raw_path)
    } else if req.target.len() == at.raw_path.len() + 1 + at.query.len()
        && req.target.starts_with(at.raw_path)
    {
        Cow::Borrowed(req.target)
    } else {
        Cow::Owned(format!("{}?{}", at.raw_path, at.query))
    }
}

/// The connection's ends, for `X-Forwarded-*` and `Forwarded`.
fn conn_of<'a>(sv: &Services, at: &At<'a>, host: Option<&'a str>) -> Conn<'a> {
    let (server_port, server_ip) = server_end(sv, at.info);
    Conn {
        peer: match at.info.peer {
            Some(ip) => Peer::Ip(ip),
            None => Peer::Unix("unix"),
        },
        scheme: at.info.scheme(),
        host,
        local: server_ip.map(|ip| Local::Inet(std::net::SocketAddr::new(ip, server_port))),
    }
}

/// A `proxy.server` label and the request head that names it as the Host.
type LabelHead = (String, Vec<u8>);

/// The request head for each label the route's backends have (one when
/// the Host is not the backend's label), and what was sent; errors are
/// statuses (501 for a tunnel, the builder's for a request it refuses).
fn build_heads(
    sv: &Services,
    route: usize,
    creq: &ClientRequest<'_>,
    opts: &ProxyOptions,
    head_len: usize,
) -> Result<(Vec<LabelHead>, Sent), u16> {
    let route = &sv.upstream.routes[route];
    // One head per label when the Host is the backend's label.
    let mut labels: Vec<&str> = Vec::new();
    for &h in &route.hosts {
        let l = sv.upstream.hosts[h].spec.http_label.as_str();
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    if !opts.replace_http_host {
        labels.truncate(1);
    }
    let mut heads = Vec::with_capacity(labels.len());
    let mut sent = None;
    for label in labels {
        let mut out = Vec::with_capacity(512 + head_len);
        match request::build_request(creq, opts, label, true, &mut out) {
            Ok(Plan::Forward(s)) => sent = Some(s),
            // CONNECT with "connect" => "enable": glint does not open
            // tunnels to arbitrary hosts through a backend.
            Ok(Plan::Tunnel) => return Err(501),
            Err(e) => {
                log::debug!("proxy: request not passed on: {e:?}");
                return Err(e.status());
            }
        }
        heads.push((label.to_string(), out));
    }
    match sent {
        Some(sent) => Ok((heads, sent)),
        None => Err(503),
    }
}
