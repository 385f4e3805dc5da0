//! A request for an `ajp13.server` route becomes an AJP/1.3 job: the
//! FORWARD_REQUEST as lighttpd 1.4.69's mod_ajp13 fills it in (the request
//! headers after mod_setenv, the client's address, the server's name and
//! port, who mod_auth let in, the query string, TLS facts, mod_setenv's
//! `AJP13_SECRET`), then the body as the container asks for it.

use std::rc::Rc;

use mio::Registry;

use super::endpoint::{host_name, server_end, At};
use super::gateway::{body_framing, launch, Prepared};
use super::{Carry, GwStart, Services, TlsFacts};
use crate::config::Settings;
use crate::msg::Request;
use crate::upstream::ajp13::{self, attr, ForwardRequest};
use crate::upstream::{BodyFraming, Protocol, Upload};

/// Starts the AJP job for `at.route`; 400 for a method AJP has no code
/// for or a head over one packet (as lighttpd), else what the gateways say.
pub(super) fn start(
    sv: &mut Services,
    at: &At<'_>,
    req: &Request<'_, '_>,
    settings: &Rc<Settings>,
    carry: &mut Carry,
    registry: &Registry,
) -> Result<Box<GwStart>, u16> {
    let route = &sv.upstream.routes[at.route];
    let Some(spec) = route.hosts.first().map(|&h| &sv.upstream.hosts[h].spec) else {
        return Err(503);
    };
    let (label, addr) = (spec.label.clone(), spec.addr.to_string());
    let generic_error = carry.error.as_ref().filter(|e| e.generic).map(|e| e.status);
    let (framing, _) = body_framing(req, settings, false, generic_error)?;
    let method = match generic_error {
        Some(_) if req.method_str != "HEAD" => "GET",
        _ => req.method_str,
    };
    let Some(method) = ajp13::method_code(method) else {
        log::warn!("backend {label} ({addr}): AJP has no code for {method}; answering 400");
        return Err(400);
    };
    let (server_port, _) = server_end(sv, at.info);
    let fr = ForwardRequest {
        method,
        protocol: req.protocol().to_string(),
        uri: at.path.to_string(),
        remote_addr: at.info.peer.map(|ip| ip.to_string()).unwrap_or_default(),
        server_name: host_name(req.host).to_string(),
        server_port,
        is_ssl: at.info.scheme() == "https",
        headers: headers(req, settings, carry),
        attributes: attributes(at, settings, carry),
        ssl_key_size: key_size(at),
    };
    // Checked with the longest length the body may reach, so that the
    // packet made once a chunked body is collected fits too.
    let most = match framing {
        BodyFraming::Length(n) => n,
        BodyFraming::Chunked { limit } => limit,
    };
    if fr.encode(most, &mut Vec::new()).is_err() {
        log::error!(
            "backend {label} ({addr}): the request's head takes more than one AJP packet ({} bytes); answering 400",
            ajp13::MAX_PACKET
        );
        return Err(400);
    }
    let job = Prepared {
        protocol: Protocol::Ajp13,
        upload: Upload::ajp13(fr, framing),
        authorizer: false,
        // lighttpd's mod_ajp13 passes every Location on.
        local_redir: false,
    };
    launch(sv, at, req, settings, carry, registry, job)
}

/// The request's headers with mod_setenv's added and set ones (an empty
/// value removes a header), in lighttpd's order. A chunked body goes to the
/// container collected, with its length: the client's `Transfer-Encoding`
/// is not passed on (a hop-by-hop header lighttpd never stores; a
/// container must never see it beside a length).
fn headers(req: &Request<'_, '_>, s: &Settings, carry: &Carry) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .filter(|h| !h.name.eq_ignore_ascii_case("transfer-encoding"))
        .map(|h| (h.name.to_string(), h.value.to_vec()))
        .collect();
    for (name, v) in &s.setenv.add_request_header {
        match out.iter_mut().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
            Some((_, old)) if !old.is_empty() => {
                old.extend_from_slice(b", ");
                old.extend_from_slice(v.as_bytes());
            }
            Some((_, old)) => *old = v.as_bytes().to_vec(),
            None => out.push((name.clone(), v.as_bytes().to_vec())),
        }
    }
    for (name, v) in &s.setenv.set_request_header {
        out.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        if !v.is_empty() {
            out.push((name.clone(), v.as_bytes().to_vec()));
        }
    }
    // mod_authn_gssapi's stored credentials, named as lighttpd names them
    // (the client's own header of that name replaced).
    if let Some(k) = carry.krb5_ccache.as_deref() {
        out.retain(|(n, _)| !n.eq_ignore_ascii_case("x-forwarded-keytab"));
        out.push(("X-Forwarded-Keytab".into(), k.path().as_bytes().to_vec()));
    }
    out
}

/// The attributes lighttpd sends: REMOTE_USER and AUTH_TYPE when mod_auth
/// let someone in, the query string when there is one, the cipher, its key
/// size and the client's certificate on TLS, and mod_setenv's
/// `AJP13_SECRET`.
fn attributes(at: &At<'_>, s: &Settings, carry: &Carry) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let var = |name: &str| {
        carry
            .vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let user = carry
        .remote_user
        .as_ref()
        .map(|u| u.as_bytes().to_vec())
        .or_else(|| var("REMOTE_USER"));
    if let Some(u) = user {
        out.push((attr::REMOTE_USER, u));
    }
    if let Some(t) = carry.auth_type {
        out.push((attr::AUTH_TYPE, t.as_bytes().to_vec()));
    }
    if !at.query.is_empty() {
        out.push((attr::QUERY_STRING, at.query.as_bytes().to_vec()));
    }
    if let Some(t) = tls(at) {
        for (name, code) in [
            ("SSL_CLIENT_CERT", attr::SSL_CERT),
            ("SSL_CIPHER", attr::SSL_CIPHER),
        ] {
            if let Some((_, v)) = t.env.iter().find(|(k, _)| k == name) {
                out.push((code, v.as_bytes().to_vec()));
            }
        }
    }
    let mut env = s
        .setenv
        .add_environment
        .iter()
        .chain(&s.setenv.set_environment);
    if let Some((_, secret)) = env.rfind(|(k, _)| k == "AJP13_SECRET") {
        out.push((attr::SECRET, secret.as_bytes().to_vec()));
    }
    out
}

/// The connection's TLS facts, when the request came over it.
fn tls<'a>(at: &At<'a>) -> Option<&'a TlsFacts> {
    at.info
        .tls
        .as_deref()
        .filter(|_| at.info.scheme() == "https")
}

/// The cipher's key size on TLS. (lighttpd 1.4.69 looks for
/// `SSL_CIPHER_USE_KEYSIZE`, a name its mod_openssl never sets, and never
/// sends it.)
fn key_size(at: &At<'_>) -> Option<u16> {
    let t = tls(at)?;
    let (_, v) = t.env.iter().find(|(k, _)| k == "SSL_CIPHER_USEKEYSIZE")?;
    v.parse().ok()
}
