//! The request's Host as conditions and modules see it (lowercased, the
//! scheme's own port and a trailing dot removed), and the document root
//! it selects: mod_evhost's, mod_simple_vhost's, or
//! `server.document-root`.

use std::borrow::Cow;

use super::physical;
use super::{Carry, ConnInfo, Services};
use crate::config::Settings;
use crate::msg::Request;

/// The request's Host in `sv.scratch.host` as [`normalize_host`] makes
/// it (a trusted forwarder's when it named one).
pub(super) fn set_host(sv: &mut Services, info: &ConnInfo, req: &Request<'_, '_>, carry: &Carry) {
    let sc = &mut sv.scratch;
    let https = info.scheme() == "https";
    let tag = if https { b's' } else { b'p' };
    match carry.host.as_deref() {
        Some(h) => {
            sc.host.clear();
            sc.host.push_str(h);
            // Not the Host as sent: the next request builds its own.
            sc.host_raw.clear();
            sc.host_raw.push(b'/');
        }
        // Lowercased only when it differs from the last request's Host (as
        // a rule it does not): building it cost 250 of the 8,100
        // instructions of a keep-alive request (callgrind), comparing
        // costs a tenth of that.
        None if sc.host_raw.split_last() != Some((&tag, req.host)) => {
            sc.host_raw.clear();
            sc.host_raw.extend_from_slice(req.host);
            sc.host_raw.push(tag);
            sc.host.clear();
            sc.host
                .extend(req.host.iter().map(|&b| b.to_ascii_lowercase() as char));
            normalize_host(&mut sc.host, if https { 443 } else { 80 });
        }
        None => {}
    }
}

/// The Host as lighttpd's default `server.http-parseopts` (`host-strict`,
/// `host-normalize`) leave it for `$HTTP["host"]` and the modules: a name's
/// trailing dot removed, and the port removed when it is the scheme's own
/// (`default_port`) or empty. So `Admin.Example.com.:80` meets the
/// conditions written for `admin.example.com` (a block that guards that
/// host guards every spelling of it).
pub(crate) fn normalize_host(host: &mut String, default_port: u16) {
    let colon = if host.starts_with('[') {
        host.find(']').map(|i| i + 1).filter(|&i| i < host.len())
    } else {
        host.find(':')
    };
    let end = colon.unwrap_or(host.len());
    if let Some(c) = colon {
        let port = &host[c + 1..];
        let own =
            port.is_empty() || (!port.starts_with('0') && port.parse::<u16>() == Ok(default_port));
        if own {
            host.truncate(c);
        }
    }
    if !host.starts_with('[') && end > 1 && host.as_bytes()[end - 1] == b'.' {
        host.remove(end - 1);
    }
}

/// The docroot: mod_evhost's, `mod_simple_vhost`'s when configured, else
/// `server.document-root`.
/// Borrowed from the settings in the common case: no allocation per request.
pub(super) fn document_root<'s>(s: &'s Settings, host: &str) -> Option<Cow<'s, str>> {
    if let Some(pattern) = s.paths.evhost_path_pattern.as_deref() {
        // mod_evhost: the docroot from the Host's parts, when it exists.
        if let Some(d) = physical::evhost(pattern, host_without_port(host)) {
            return Some(Cow::Owned(d));
        }
    }
    let plain = || s.docroot_str().map(Cow::Borrowed);
    // An empty server root leaves the module off, as lighttpd has it.
    let Some(server_root) = s
        .simple_vhost
        .server_root
        .as_deref()
        .filter(|r| !r.is_empty())
    else {
        return plain();
    };
    let sub = s.simple_vhost.document_root.as_deref().unwrap_or("");
    let name = host_without_port(host);
    let build = |h: &str| {
        let mut p = server_root.trim_end_matches('/').to_string();
        p.push('/');
        p.push_str(h);
        if !sub.is_empty() {
            if !p.ends_with('/') {
                p.push('/');
            }
            p.push_str(sub.trim_matches('/'));
        }
        p
    };
    let is_dir = |p: &str| std::fs::metadata(p).is_ok_and(|m| m.is_dir());
    // The host was validated by the parser: no '/', no "..", no control characters.
    if !name.is_empty() && !name.starts_with('.') {
        let p = build(name);
        if is_dir(&p) {
            return Some(Cow::Owned(p));
        }
    }
    // The default host's directory (the server root's own without one),
    // and when that is missing too, `server.document-root` stays.
    let p = build(s.simple_vhost.default_host.as_deref().unwrap_or(""));
    if is_dir(&p) {
        Some(Cow::Owned(p))
    } else {
        plain()
    }
}

pub(super) fn host_without_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .split(']')
            .next()
            .map_or(host, |h| &host[..h.len() + 1]);
    }
    host.split(':').next().unwrap_or(host)
}
