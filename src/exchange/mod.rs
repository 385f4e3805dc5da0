//! One request, from its parsed head to what answers it, in lighttpd's
//! phases: normalise the path, resolve the per-request settings, rewrite
//! (then resolve again), redirect, access (`url.access-deny`/`-allow`),
//! mod_status, gateways by prefix and extension, the directory's index
//! file (which meets access and the gateways again), the static file; an
//! error answer replaced by `server.error-handler(-404)` runs all of them
//! again.
//!
//! What answers is an [`Outcome`], returned as a value: glint's own
//! [`Reply`] in an [`Answer`] (built in [`Services::reply`], the reused
//! builder, and handed out whole), or a job started on a backend (the
//! connection hears its answer through a `Sink`). The exchange never
//! writes protocol bytes, never sees the connection, and leaves nothing
//! behind for the caller to look up after the call.

mod access;
mod ajp13;
mod auth;
mod auth_wait;
mod cgi;
mod endpoint;
mod error_handler;
mod forward;
mod gateway;
mod geo;
mod host;
mod logging;
mod magnet;
mod magnet_wait;
mod outcome;
mod phases;
pub mod physical;
mod proxy;
mod rerun;
pub mod rewrite;
pub mod sockproxy;
mod ssi;
mod version;
mod vhostdb;
mod webdav;
mod wstunnel;

use std::net::IpAddr;
use std::rc::Rc;

use mio::Registry;

use crate::accesslog::AccessLogs;
use crate::clock::Clock;
use crate::config::{Config, RequestFacts};
use crate::handler::{deflate, static_file};
use crate::msg::{ExchangeId, Method, Reply, Request};
use crate::stats::board::Board;
use crate::stats::{Recent, Stats};
use crate::upstream::Gateways;

pub use access::access_denied;
pub use auth::AuthState;
use error_handler::error_handler_for;
pub(crate) use error_handler::error_handler_of;
pub use error_handler::{error_reply, error_run_status, ErrorRun};
use host::{document_root, host_without_port, set_host};
pub use logging::{defer_reply, log_deferred, log_error, log_gateway, log_reply, DeferredLog};
pub use outcome::{Answer, GwStart, Outcome};
pub use rerun::{rerun, MAX_RERUNS};

pub use geo::GeoCache;
use phases::{respond_once, Once};
pub use version::speaks_http11;

/// What the exchanges of every connection share: the configuration and
/// the caches, the backends, the logs and counters, and the one reply
/// being built.
pub struct Services {
    pub config: Config,
    pub clock: Clock,
    pub logs: AccessLogs,
    /// SCGI and FastCGI routes, backends and backend connections.
    pub upstream: Gateways,
    /// Files opened in the last second.
    pub files: static_file::FileCache,
    pub stats: Stats,
    /// The connection table of the status page.
    pub board: Board,
    /// The last seconds' requests and bytes, for the status page's averages.
    pub recent: Recent,
    pub scratch: Scratch,
    /// Port of each listener (0 for unix sockets), for the access log.
    pub ports: Vec<u16>,
    /// Per listener: its one bound address, if it has one.
    pub bound_ips: Vec<Option<IpAddr>>,
    /// Stop keeping connections open after their current response.
    pub shutting_down: bool,
    /// The shutdown is a binary upgrade's handover: an answer that went
    /// out with keep-alive leaves its connection open for the request its
    /// client may already have sent (which gets `Connection: close`).
    pub handing_over: bool,
    /// Accepting is paused (at `server.max-connections`, or out of file
    /// descriptors) while clients wait in a listener's backlog: the
    /// connections that held their slot for a turn of the rotation (those
    /// up to [`Services::rotate_gen`]) close after their next answer
    /// instead of offering keep-alive, so that slots pass to the clients
    /// waiting.
    pub accept_paused: bool,
    /// A TLS listener stopped at the handshakes' share of the slots with
    /// clients waiting in its backlog (the server's `accept_held` takes
    /// them once a handshake ends); meanwhile a handshake that has gone
    /// silent gives its slot up (`Connection::on_tick`).
    pub tls_held: bool,
    /// While accepting is paused, connections of this generation
    /// ([`crate::msg::ExchangeId::gen`]) and older close after their next
    /// answer; the server raises it once per rotation (see its `rotate`).
    pub rotate_gen: u64,
    /// Connections lingering after their last answer: they do not count
    /// against `server.max-connections` (see the server's `at_limit`).
    pub lingering: usize,
    /// The builder of glint's own replies (its buffers are reused): the
    /// phases fill it, [`respond`] hands it out in its [`Answer`], and the
    /// connection gives it back ([`Services::give_back`]) once written.
    pub reply: Reply,
    /// A written reply given back, to build the next one in.
    spare: Option<Reply>,
    /// mod_deflate: the cache's worker pool, the load average, the sweeper.
    pub deflate: deflate::Deflater,
    /// mod_auth's user files, nonce key and caches.
    pub auth: AuthState,
    /// Per listener: the `Alt-Svc` value announcing its HTTP/3 endpoint
    /// (`glint.h3`), added to the answers given over TLS on it.
    pub alt_svc: Vec<Option<Rc<str>>>,
    /// mod_webdav's databases, opened at start.
    pub webdav: crate::handler::webdav::Stores,
    /// mod_magnet's scripts, each loaded when first run.
    pub magnet: crate::magnet::Magnet,
    /// mod_rrdtool: its counters and process, when a scope names a database.
    pub rrd: Option<crate::rrdtool::RrdTool>,
    /// `server.kbytes-per-second`: the bytes each limited scope sent this second.
    pub scope_bytes: crate::output::throttle::ScopeCounts,
    /// mod_vhostdb: the lookup threads and the cache of found hosts.
    pub vhostdb: crate::handler::vhostdb::VhostDb,
}

impl Services {
    pub fn new(config: Config, upstream: Gateways) -> Services {
        let global = Rc::clone(&config.global);
        Services {
            config,
            clock: Clock::new(),
            logs: AccessLogs::default(),
            upstream,
            files: Default::default(),
            stats: Stats::default(),
            board: Board::default(),
            recent: Recent::default(),
            scratch: Scratch::default(),
            ports: Vec::new(),
            bound_ips: Vec::new(),
            shutting_down: false,
            handing_over: false,
            accept_paused: false,
            tls_held: false,
            rotate_gen: 0,
            lingering: 0,
            reply: crate::msg::ReplyData::boxed(global, false),
            spare: None,
            deflate: deflate::Deflater::default(),
            auth: AuthState::default(),
            alt_svc: Vec::new(),
            webdav: Default::default(),
            magnet: Default::default(),
            rrd: None,
            scope_bytes: Default::default(),
            vhostdb: Default::default(),
        }
    }

    /// The reply built in [`Services::reply`], handed out whole; the
    /// builder starts again with a spare one's buffers.
    pub fn take_reply(&mut self) -> Reply {
        let next = match self.spare.take() {
            Some(r) => r,
            None => crate::msg::ReplyData::boxed(Rc::clone(&self.config.global), false),
        };
        std::mem::replace(&mut self.reply, next)
    }

    /// A reply that was written: its buffers build a later one.
    pub fn give_back(&mut self, reply: Reply) {
        if self.spare.is_none() {
            self.spare = Some(reply);
        }
    }

    /// Each backend's figures, for the metrics.
    pub fn backend_figures(&self) -> crate::handler::status_page::metrics::Backends {
        let up = &self.upstream;
        let now = self.clock.mono_secs;
        let mut hosts = Vec::new();
        for route in &up.routes {
            for &h in &route.hosts {
                let Some(h) = up.hosts.get(h) else { continue };
                hosts.push(crate::handler::status_page::metrics::Backend {
                    name: format!("{}", h.spec.addr),
                    route: route.pattern.clone(),
                    requests: h.requests,
                    failures: h.failures,
                    timeouts: h.timeouts,
                    connections: h.active as u64,
                    disabled: h.disabled_until > now,
                });
            }
        }
        crate::handler::status_page::metrics::Backends {
            hosts,
            queued: up.queued() as u64,
        }
    }

    /// The counters with the backends' added, for the status page.
    pub fn stats_now(&self) -> Stats {
        let acme = &crate::stats::ACME;
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        Stats {
            backend_opened: self.upstream.opened,
            backend_reused: self.upstream.reused,
            acme_obtained: load(&acme.obtained),
            acme_failures: load(&acme.failures),
            acme_certs_at_risk: load(&acme.certs_at_risk),
            compress_saved: load(&crate::stats::COMPRESS_SAVED),
            ..self.stats
        }
    }
}

/// Reusable buffers for the request path.
#[derive(Default)]
pub struct Scratch {
    /// Percent-decoded path bytes.
    pub decoded: Vec<u8>,
    /// The normalised URL path.
    pub path: String,
    /// The file system path being opened.
    pub fs_path: String,
    /// The Host as conditions and modules see it: lowercased, without a
    /// trailing dot or the scheme's own port (see [`host::normalize_host`]).
    pub host: String,
    /// The Host as sent, that `host` was made from, and a last byte for
    /// the scheme (`s`: https, `p`: http), whose port it lost.
    pub host_raw: Vec<u8>,
    /// The URL path of a directory's index file.
    pub index_path: String,
}

/// What a TLS connection tells its exchanges (after the handshake).
#[derive(Debug, Default)]
pub struct TlsFacts {
    /// `TLSv1.3` or `TLSv1.2`.
    pub version: &'static str,
    /// lighttpd's `SSL_*` variables for backends (protocol, cipher, and
    /// the client certificate's when one is asked for).
    pub env: Vec<(String, String)>,
}

/// What an exchange knows of its connection.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    /// Index of the listener that accepted it.
    pub listener: usize,
    /// The client: the connection's peer, or behind a trusted forwarder
    /// the address it names (mod_extforward) for this request.
    pub peer: Option<IpAddr>,
    /// The client's port (0 on a unix socket, or when a forwarder gave
    /// none), for `REMOTE_PORT`.
    pub peer_port: u16,
    /// The connection's own peer (after a PROXY protocol header, the
    /// address it gave), whatever mod_extforward made of the request.
    pub conn_peer: Option<IpAddr>,
    /// `http` or `https` as a trusted forwarder says the client's
    /// connection to it was (`X-Forwarded-Proto`, `Forwarded: proto=`, the
    /// PROXY header's TLS); `None`: as this connection is.
    pub forwarded_scheme: Option<&'static str>,
    /// mod_extforward ran for this request already (a run again keeps
    /// what it found).
    pub forwarded: bool,
    /// The address the client connected to, when the listener is bound to all.
    pub local_ip: Option<IpAddr>,
    /// The id of this exchange.
    pub ex: ExchangeId,
    /// The connection speaks TLS (`$HTTP["scheme"] == "https"`, `HTTPS=on`),
    /// with what its handshake came to.
    pub tls: Option<Rc<TlsFacts>>,
    /// mod_maxminddb's last answer on this connection.
    pub geo: GeoCache,
}

impl ConnInfo {
    /// `https` or `http`: a trusted forwarder's word, else this connection's.
    pub fn scheme(&self) -> &'static str {
        if let Some(s) = self.forwarded_scheme {
            return s;
        }
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// What one client request carries from one run through the phases to
/// the next, when glint runs it again itself.
#[derive(Debug, Default, Clone)]
pub struct Carry {
    /// An authorizer allowed the request (for its current path).
    pub authorized: bool,
    /// The allowing authorizer's `docroot`: files are served from there.
    pub docroot: Option<String>,
    /// Its `Variable-NAME: value` headers, as (NAME, value): set in the
    /// environment of every later backend request.
    pub vars: Vec<(String, Vec<u8>)>,
    /// Times the request was run again so far.
    pub reruns: u8,
    /// The request line as the client sent it, for the access log.
    pub orig_line: Option<Vec<u8>>,
    /// This run is an error handler's, for the error described.
    pub error: Option<ErrorRun>,
    /// `REMOTE_USER` for the backends: the user mod_auth let in (or a
    /// trusted forwarder named, with `extforward.params` `remote_user`).
    pub remote_user: Option<String>,
    /// `AUTH_TYPE` for the backends: `Basic` or `Digest`.
    pub auth_type: Option<&'static str>,
    /// The `auth.require` rule (its id) the request was let in by: a run
    /// again under the same rule is not asked again.
    pub auth_rule: Option<u32>,
    /// Digest's `nextnonce`, sent as `Authentication-Info`.
    pub authentication_info: Option<String>,
    /// The Host a trusted forwarder named (`Forwarded: host=` with
    /// `extforward.params` `host`), for conditionals and virtual hosts.
    pub host: Option<String>,
    /// mod_magnet's state across runs.
    pub magnet: magnet::MagnetCarry,
    /// A blocking `auth.backend`'s check this request waits for (its
    /// verdict is read when the request runs again).
    pub authn_wait: Option<Rc<auth_wait::AuthWait>>,
    /// mod_vhostdb's lookup for this request.
    pub vhost: vhostdb::VhostCarry,
    /// mod_authn_gssapi's credentials cache (`store-creds`), named in
    /// `vars`; the file is removed when the request is over.
    pub krb5_ccache: Option<crate::authn::gssapi::Ccache>,
}

/// Most internal rewrites of one request (`url.rewrite-repeat` loops end here).
const MAX_REWRITES: usize = 8;

/// Answers one parsed request: glint's own reply, or a backend's job.
/// mod_extforward may change `info` (the client, the scheme): the caller
/// logs the request with it. `conn_env` is what the connection sets for
/// every request (a PROXY protocol header's TLS details, `REMOTE_USER`).
pub fn respond(
    sv: &mut Services,
    info: &mut ConnInfo,
    req: &Request<'_, '_>,
    conn_env: &[(&'static str, Vec<u8>)],
    registry: &Registry,
) -> Outcome {
    let mut carry = Carry::default();
    for (k, v) in conn_env {
        match *k {
            "REMOTE_USER" => carry.remote_user = Some(String::from_utf8_lossy(v).into_owned()),
            "AUTH_TYPE" => {}
            _ => carry.vars.push((k.to_string(), v.clone())),
        }
    }
    if conn_env.iter().any(|(k, _)| *k == "AUTH_TYPE") {
        carry.auth_type = Some("SSL_CLIENT_VERIFY");
    }
    set_host(sv, info, req, &carry);
    let (slot, stream) = (info.ex.slot, info.ex.stream);
    let now = sv.clock.mono_secs;
    sv.board
        .begin(slot, stream, now, &sv.scratch.host, req.target);
    sv.scratch.fs_path.clear();
    // mod_extforward's own first check: when it does nothing, the Host
    // set above stands for the phases.
    let host_set = info.forwarded || !sv.config.extforward_anywhere;
    if let Err(why) = forward::apply(sv, info, req, &mut carry) {
        log::warn!(
            "(mod_extforward) bad Forwarded header from {:?}: {why}; answering 400",
            info.conn_peer
        );
        sv.reply
            .reset(Rc::clone(&sv.config.global), req.method == Method::Head);
        sv.reply.error(400);
        return Outcome::Reply(Answer::taken(sv));
    }
    let mut outcome = respond_carrying(sv, info, req, &mut carry, registry, host_set);
    let len = match &outcome {
        Outcome::Reply(a) => a.reply.body_len(),
        Outcome::Gateway(_) => 0,
    };
    sv.board.answered_by(slot, stream, &sv.scratch.fs_path, len);
    // HTTP/3 beside this TLS socket: every answer over TCP says so,
    // glint's own and a backend's.
    if let (Some(_), true) = (&info.tls, req.major < 3) {
        if let Some(v) = sv.alt_svc.get(info.listener).and_then(Option::as_ref) {
            match &mut outcome {
                Outcome::Reply(a) => a.reply.header("alt-svc", v.as_bytes()),
                Outcome::Gateway(g) => sv.upstream.set_alt_svc(g.job, Rc::clone(v)),
            }
        }
    }
    outcome
}

/// Answers a request that may have run before (see [`rerun`]): `carry`
/// says whether an authorizer allowed it, with which docroot and variables.
pub(crate) fn respond_with(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    mut carry: Carry,
    registry: &Registry,
) -> Outcome {
    respond_carrying(sv, info, req, &mut carry, registry, false)
}

/// [`respond_with`] on the caller's `carry` (lent, not moved: a move of
/// the whole `Carry` was a `memcpy` call per request). `host_set`: the
/// Host in `sv.scratch` is this request's already.
fn respond_carrying(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    carry: &mut Carry,
    registry: &Registry,
    host_set: bool,
) -> Outcome {
    if !host_set {
        set_host(sv, info, req, carry);
    }
    // The target of this run: the client's, or an error handler's.
    let mut target: Option<String> = carry.error.as_ref().map(|e| e.target.clone());
    loop {
        let once = respond_once(sv, info, req, carry, target.as_deref(), registry);
        match once {
            Once::Gateway(g) => {
                if g.carry.error.is_some() {
                    // An error handler's backend: its answer goes out as
                    // it is (server.error-intercept acts once).
                    sv.upstream.pass_errors(g.job);
                }
                return Outcome::Gateway(g);
            }
            Once::Again(head) => {
                // mod_magnet changed the request: the phases again on it.
                let mut hs = Vec::new();
                let next = head.view(&mut hs);
                return respond_carrying(sv, info, &next, carry, registry, false);
            }
            Once::Reply => {}
        }
        let settings = Rc::clone(&sv.reply.settings);
        let status = sv.reply.status;
        if let Some(next) = error_handler_for(&settings, status, carry) {
            // Run the error handler instead; the answer built is dropped.
            log::debug!("status {status}: running error handler {}", next.target);
            target = Some(next.target.clone());
            carry.error = Some(next);
            carry.magnet.raw_done = false;
            carry.magnet.no_rewrite = false;
            continue;
        }
        if let Some(run) = carry.error.as_ref() {
            if status >= 400 && status != run.status {
                // The error handler failed too: the first error's own page.
                let status = run.status;
                sv.reply.clear_answer();
                sv.reply.error(status);
            }
        }
        if sv.reply.status < 400 {
            if let Some(info) = carry.authentication_info.as_deref() {
                sv.reply.header("Authentication-Info", info.as_bytes());
            }
        }
        if !sv.reply.settings.magnet.is_empty() || !carry.magnet.resp_headers.is_empty() {
            if let Some(run) = magnet::response_start(sv, info, req, carry) {
                // A script's run is parked: the answer waits with it.
                let kept = Some(sv.take_reply());
                if let Some(g) = magnet_wait::park(sv, info, req, carry, (run, kept), registry) {
                    return Outcome::Gateway(g);
                }
            }
        }
        return reply_outcome(sv, req, carry);
    }
}

/// glint's answer in `sv.reply`, compressed as the settings and the
/// request ask, handed out.
fn reply_outcome(sv: &mut Services, req: &Request<'_, '_>, carry: &mut Carry) -> Outcome {
    if sv.reply.settings.deflate.enabled() && !sv.reply.encoding_decided {
        let load = sv
            .deflate
            .load_for(&sv.reply.settings.deflate, sv.clock.mono_secs);
        let ask = deflate::Ask::of(req.headers, req.method_str);
        deflate::filter_reply(&mut sv.reply, &ask, load);
    }
    Outcome::Reply(Answer {
        reply: sv.take_reply(),
        orig_line: carry.orig_line.take(),
        remote_user: carry.remote_user.take(),
    })
}

/// Splits a request target into path and query. A byte search: `str`'s
/// `split_once('?')` goes through the general char searcher, about 200
/// instructions for a short target (callgrind), a tenth of that here.
fn split_uri(uri: &str) -> (&str, &str) {
    match uri.bytes().position(|b| b == b'?') {
        // `?` is ASCII: both sides are on character boundaries.
        Some(i) => (&uri[..i], &uri[i + 1..]),
        None => (uri, ""),
    }
}

/// The facts conditionals test, for `url` under this connection and request.
fn facts<'a>(
    info: &ConnInfo,
    req: &'a Request<'_, 'a>,
    host: &'a str,
    url: &'a str,
    query: &'a str,
) -> RequestFacts<'a> {
    RequestFacts {
        listener: info.listener,
        remote_ip: info.peer,
        scheme: info.scheme(),
        method: req.method_str,
        host,
        url,
        query,
        headers: req.headers,
    }
}
