//! mod_vhostdb's place in the phases: where the document root is decided
//! (lighttpd's docroot hook), the request's host is looked up in the
//! database of `vhostdb.backend`. A host in the cache is answered at once;
//! otherwise the request waits for a local job (see
//! [`crate::handler::vhostdb`]) and runs again with what it found.

use std::rc::Rc;

use mio::Registry;

use super::{Carry, ConnInfo, GwStart, Services};
use crate::config::Settings;
use crate::msg::{Method, Request};
use crate::upstream::{HttpBody, JobSpec, Protocol, Upload};

/// What this request's lookup came to, carried into the run after it.
#[derive(Debug, Default, Clone)]
pub struct VhostCarry {
    /// The host that was looked up.
    pub asked: Option<String>,
    /// What the lookup found (see `handler::vhostdb::Found`).
    pub answer: Option<Result<Option<String>, u16>>,
}

/// Where the document root comes from.
pub(super) enum Root {
    /// The database's.
    Found(String),
    /// No lookup here, or no such host: the other modules' and
    /// `server.document-root`.
    Default,
    /// The lookup runs; the request goes on when it ends.
    Wait(Box<GwStart>),
    /// The lookup failed (500, as lighttpd; 503 when too many wait).
    Failed(u16),
}

/// The request's document root as mod_vhostdb decides it.
pub(super) fn docroot(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    settings: &Rc<Settings>,
    registry: &Registry,
) -> Root {
    let v = &settings.vhostdb;
    let Some(query) = v.query() else {
        return Root::Default;
    };
    // No host given: nothing to look up (lighttpd goes on).
    if sv.scratch.host.is_empty() {
        return Root::Default;
    }
    let now = sv.clock.mono_secs;
    let host = lookup_key(&sv.scratch.host, info.scheme());
    if carry.vhost.asked.as_deref() == Some(host.as_str()) {
        if let Some(found) = carry.vhost.answer.clone() {
            return match found {
                Ok(Some(root)) => {
                    if let Some(age) = v.cache_max_age {
                        sv.vhostdb.remember(&query, &host, &root, now, age);
                    }
                    Root::Found(root)
                }
                Ok(None) => Root::Default,
                Err(status) => Root::Failed(status),
            };
        }
    }
    if let Some(age) = v.cache_max_age {
        if let Some(root) = sv.vhostdb.cached(&query, &host, now, age) {
            return Root::Found(root.to_string());
        }
    }
    start(sv, (info, req, registry), carry, settings, host)
}

/// The host as lighttpd's `host-strict` and `host-normalize` leave it for
/// the query: without a trailing dot, and without the scheme's own port.
fn lookup_key(host: &str, scheme: &str) -> String {
    let (name, port) = match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => (&host[..i], Some(&host[i + 1..])),
        _ => (host, None),
    };
    let name = match name.strip_suffix('.') {
        Some(n) if !n.is_empty() && !name.starts_with('[') => n,
        _ => name,
    };
    let default = if scheme == "https" { "443" } else { "80" };
    match port {
        Some(p) if p != default && !p.is_empty() => format!("{name}:{p}"),
        _ => name.to_string(),
    }
}

/// Starts the lookup of the request's host as a local job.
fn start(
    sv: &mut Services,
    (info, req, registry): (&ConnInfo, &Request<'_, '_>, &Registry),
    carry: &mut Carry,
    settings: &Rc<Settings>,
    host: String,
) -> Root {
    let (Some(route), Some(query)) = (sv.upstream.local_route, settings.vhostdb.query()) else {
        return Root::Failed(500);
    };
    let work = sv.vhostdb.lookup(&query, &host);
    let spec = JobSpec {
        route,
        protocol: Protocol::Cgi,
        // The body waits for the run after the lookup.
        upload: Upload::http(Vec::new(), HttpBody::Length(0)),
        settings: Rc::clone(settings),
        hash_path: 0,
        hash_ip: 0,
        authorizer: false,
        local_redir: false,
        head_only: req.method == Method::Head,
        method: String::new(),
        http: None,
        cgi: None,
        local: Some(Box::new(work)),
    };
    match sv
        .upstream
        .start(spec, info.ex, sv.clock.mono_secs, registry)
    {
        Ok(job) => {
            carry.vhost = VhostCarry {
                asked: Some(host),
                answer: None,
            };
            let route_id = route;
            let mut g = GwStart::whole(job, settings, req, carry, route_id, info);
            // Held as an authorizer's request is: the head alone goes to
            // the job, the body waits for the request's handler.
            g.authorizer = true;
            g.head_only = req.method == Method::Head;
            Root::Wait(g)
        }
        Err(status) => Root::Failed(status),
    }
}

#[cfg(test)]
mod tests {
    use super::lookup_key;

    #[test]
    fn the_host_as_lighttpd_normalises_it() {
        let cases = [
            ("a.test", "http", "a.test"),
            ("a.test.", "http", "a.test"),
            ("a.test:80", "http", "a.test"),
            ("a.test.:80", "http", "a.test"),
            ("a.test:8080", "http", "a.test:8080"),
            ("a.test:443", "https", "a.test"),
            ("a.test:443", "http", "a.test:443"),
            ("[::1]:80", "http", "[::1]"),
            ("[::1]", "http", "[::1]"),
        ];
        for (h, s, want) in cases {
            assert_eq!(lookup_key(h, s), want, "{h} {s}");
        }
    }
}
