//! Gateways to SCGI, uwsgi, FastCGI and AJP/1.3 backends (mod_scgi,
//! mod_fastcgi, mod_ajp13), in the same event loop as the clients.
//!
//! A request for a gateway route goes to a backend as soon as its head is
//! parsed: it gets a backend connection — glint caps how many it opens to
//! each backend and queues the rest instead of failing them — and its body
//! follows as the client sends it ([`upload`]): at most [`BODY_WINDOW`]
//! bytes wait for the backend, and the client is not read while the window
//! is full (a slow backend, or a request still in the queue). A chunked body
//! is collected first (bounded), because the backend needs CONTENT_LENGTH
//! up front. The backend's CGI answer is streamed to the client, framed with
//! Content-Length when the backend gave one and chunked otherwise; reading
//! from the backend pauses while the client is slow. No whole body, in
//! either direction, sits in memory.
//!
//! A backend that closes before answering gets the request again on another
//! try while glint still holds all of it (bodies within the window); after
//! that the client gets 502.
//!
//! Routes come in tables, one for each value `scgi.server` and
//! `fastcgi.server` take in some scope of the configuration (global, or a
//! conditional block); a request's settings name the table of each
//! ([`Settings::scgi_scope`], [`Settings::fastcgi_scope`]). A backend that
//! several tables configure alike is one [`Host`].
//!
//! FastCGI keep-conn: a connection may carry one request after another
//! (FCGI_KEEP_CONN), sparing the connect and close on both sides. But an
//! idle kept connection holds one of the backend's workers (php-cgi serves
//! one connection per child): holding more of them than the backend has
//! workers leaves further connections in its listen queue for good. So
//! glint keeps connections only when it knows how many the backend serves
//! at once, and never holds more: a probe connection of its own ([`Keep`],
//! `Use::Probe`) asks FCGI_GET_VALUES — for spawned backends at start and
//! after each respawn, for others when first needed — and FCGI_MAX_CONNS
//! = N (and FCGI_MAX_REQS) makes the host's cap min(`max-connections`, N),
//! counting idle connections. Requests meanwhile go one connection each;
//! a backend that does not answer, answers garbage or closes keeps it so.
//! `"keep-conn" => "enable" | "disable"` overrides the probe. After
//! END_REQUEST a connection goes to its host's idle list, still registered
//! for reads (data or an end of stream closes it); [`Gateways::dispatch`]
//! takes the most recent idle one first. Idle ones close after
//! [`IDLE_KEEP_SECS`], at shutdown, and when their host is retired. Where
//! glint cannot count every connection held to a backend, it keeps none
//! unless configured: two hosts on one address, worker processes.
//!
//! The backend may close a kept connection just as a request goes out on it
//! (php-cgi's child exits after `PHP_FCGI_MAX_REQUESTS`, right after its
//! last END_REQUEST): a close before any answer on a reused connection is
//! not a backend failure, and the request goes again on a new connection.
//! That needs glint to hold the whole request, so only requests whose body
//! cannot outgrow the window ([`Upload::stays_whole`]) are sent on kept
//! connections; a larger upload always gets a new one (closing an idle one
//! when at the cap) and cannot lose that race.
//!
//! Two answers are not passed on: an authorizer's 200 (FastCGI's Authorizer
//! role: the request goes on, with its `Variable-`s) and a local redirect
//! (`Location: /path` alone). For both the client's sink hears
//! [`crate::msg::Sink::rerun`], and its connection runs the request again
//! ([`crate::exchange::rerun`]).
//!
//! Where things are: this file has the types (routes, hosts, [`Gateways`]).
//! Beside it: `job` (the upstream side of one exchange, [`Job`], named by a
//! [`JobId`]), `dispatch` (a job's way to a backend: balance, caps, disabled
//! backends, the queue), `backend` (a backend connection, its I/O in
//! `transfer` and what a failure comes to in `failure`), `tick` (the
//! time-outs), `answer` (the backend's answer to the client's sink, local
//! redirects, X-Sendfile), `keep` (keep-conn and the FCGI_GET_VALUES
//! probe), `process` (`bin-path` backends: start, restart, stop),
//! `reconfigure` (graceful restart); the protocols' encodings in [`cgi`],
//! [`scgi`], [`uwsgi`], [`fastcgi`] and [`ajp13`] (AJP's body goes only as
//! the container asks for it: `ajp_body`), the request body in [`upload`], and
//! the `scgi.server`/`fastcgi.server` syntax in [`config`].

mod ajp_body;
mod answer;
mod backend;
pub mod cgi;
pub mod cgi_run;
pub mod codec;
pub mod config;
mod dispatch;
mod http_state;
mod job;
mod keep;
pub mod local;
mod process;
pub mod proxy;
mod reconfigure;
mod routes;
mod tick;
pub mod upload;

use std::collections::VecDeque;
use std::process::Child;

use slab::Slab;

use crate::config::Settings;
use backend::BackendConn;
pub use codec::{ajp13, fastcgi, scgi, uwsgi};
pub use config::{BackendAddr, HostSpec, Protocol, RouteSpec};
pub use job::{Job, JobEnd, JobId, JobSpec};
pub use upload::{BodyFraming, HttpBody, Upload, BODY_WINDOW};

pub use backend::BACKEND_BASE;

/// What became of a job, for its client's side, when the call that found
/// it had no sink of that job at hand (a time-out of the tick, the queue,
/// a retry): returned by that call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum News {
    /// The job failed with this status (an error page, or the answer cut).
    Failed(crate::msg::ExchangeId, u16),
    /// The job's answer is complete.
    Ended(crate::msg::ExchangeId),
    /// The job got a backend, or room in its body window: its client may be
    /// read again.
    Woken(crate::msg::ExchangeId),
}

/// Most clients waiting for a backend; past it a request gets 503 at once.
pub const MAX_WAITING: usize = 4096;
/// How long a request may wait in the queue before it gets 503.
pub const MAX_WAIT_SECS: u64 = 30;
/// Chunked request bodies for backends are collected in memory up to this
/// size (or `server.max-request-size` when smaller); larger ones get 413.
/// `Content-Length` bodies are streamed instead, and only
/// `server.max-request-size` bounds them.
pub const MAX_BODY: u64 = 64 * 1024 * 1024;
/// A request the backend closed before answering a single byte is sent again this often.
const MAX_ATTEMPTS: u8 = 3;
/// A kept FastCGI connection that no request used for this long is closed.
/// (lighttpd's host option `idle-timeout` is about stopping idle spawned
/// processes, not connections: glint ignores it.)
pub const IDLE_KEEP_SECS: u64 = 30;
/// Longest wait for the answer to FCGI_GET_VALUES (or `read-timeout` when
/// shorter): a backend that does not answer keeps one connection per request.
pub const PROBE_WAIT_SECS: u64 = 10;

/// One backend (a label's address, or one spawned process).
pub struct Host {
    pub spec: HostSpec,
    /// Connections open to it now.
    pub active: usize,
    /// Concurrency cap: the configured one, lowered while the backend refuses.
    pub cap: usize,
    /// Not used until this second (after a refused connection).
    pub disabled_until: u64,
    child: Option<Child>,
    respawn_at: Option<u64>,
    /// Dropped from the configuration by a graceful restart: kept only until
    /// its requests are done (a spawned one is then stopped, not restarted).
    retired: bool,
    /// Its process was sent the kill signal.
    stopping: bool,
    /// Whether connections to it are kept for further requests (FastCGI).
    pub keep: Keep,
    /// Kept connections waiting for a request, oldest first; they count in
    /// `active`.
    pub idle: Vec<usize>,
    /// Most connections glint holds to it: `max-connections`, or fewer when
    /// the backend said it serves fewer at once (FCGI_MAX_CONNS).
    pub limit: usize,
    /// The backend is not asked FCGI_GET_VALUES before this second.
    probe_at: u64,
    /// Requests sent to it, times it failed (and was disabled), requests
    /// that timed out on it, since start (the metrics).
    pub requests: u64,
    pub failures: u64,
    pub timeouts: u64,
}

/// Keep-conn for one FastCGI backend. A kept connection holds one of the
/// backend's workers while idle (php-cgi serves one connection per child),
/// so connections are kept only when glint knows how many the backend
/// serves at once, and glint then never holds more than that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// One connection per request: SCGI and uwsgi, `"keep-conn" =>
    /// "disable"`, or the backend did not say how many it serves.
    Off,
    /// To be asked (FCGI_GET_VALUES) when next needed.
    Unknown,
    /// Being asked on the probe connection with this key; meanwhile
    /// requests go one connection each, never waiting for the answer.
    Probing(usize),
    /// Connections are kept, at most `Host::limit` of them.
    On,
}

impl Host {
    fn new(spec: HostSpec) -> Host {
        let keep = match (spec.protocol, spec.keep_conn) {
            (Protocol::FastCgi, Some(true)) => Keep::On,
            (Protocol::FastCgi, None) => Keep::Unknown,
            // An idle HTTP connection holds no worker of a typical
            // application server (they multiplex or time idle ones out).
            (Protocol::Http, None | Some(true)) => Keep::On,
            _ => Keep::Off,
        };
        Host {
            cap: spec.max_conns,
            limit: spec.max_conns,
            spec,
            active: 0,
            disabled_until: 0,
            requests: 0,
            failures: 0,
            timeouts: 0,
            child: None,
            respawn_at: None,
            retired: false,
            stopping: false,
            keep,
            idle: Vec::new(),
            probe_at: 0,
        }
    }

    /// Connections carrying a request now.
    fn busy(&self) -> usize {
        self.active.saturating_sub(self.idle.len())
    }

    fn name(&self) -> String {
        format!("{} ({})", self.spec.label, self.spec.addr)
    }

    /// The backend failed at second `now`: no request goes to it for
    /// `disable-time` seconds, and never again within this second, even
    /// with `"disable-time" => 0`. lighttpd takes a failed backend back
    /// only on its once-a-second check, so 0 means "until the next
    /// second": a request whose tries found every backend failed is
    /// answered 503 at once, instead of trying the same one again without
    /// end.
    fn disable(&mut self, now: u64) {
        self.failures += 1;
        self.disabled_until = now + self.spec.disable_time.max(1);
    }
}

/// One `"<prefix or extension>" => ( backends )` entry.
#[derive(Clone)]
pub struct Route {
    pub pattern: String,
    pub extension: bool,
    pub protocol: Protocol,
    /// Its backends are authorizers (`"mode" => "authorizer"`).
    pub authorizer: bool,
    pub hosts: Vec<usize>,
    /// Which value of `scgi.server` / `fastcgi.server` it comes from
    /// (the index of its table).
    pub scope: usize,
    /// Next host for round-robin.
    next: usize,
}

pub use crate::config::Balance;

/// The balancing `s` asks for the routes of `protocol`.
pub fn balance_of(s: &Settings, protocol: Protocol) -> Balance {
    match protocol {
        Protocol::FastCgi => s.gateway.fastcgi_balance,
        Protocol::Scgi | Protocol::Uwsgi => s.gateway.scgi_balance,
        Protocol::Http => s.gateway.proxy_balance,
        Protocol::SockProxy => s.gateway.sockproxy_balance,
        Protocol::WsTunnel => s.gateway.wstunnel_balance,
        Protocol::Ajp13 => s.gateway.ajp13_balance,
        Protocol::Cgi => Balance::LeastBusy,
    }
}

/// Logs a `scgi.balance` / `fastcgi.balance` value in `s` that glint
/// does not know (requests then get least-connection).
fn check_balance(s: &Settings, key: &str) {
    let v = s.raw.iter().find(|(k, _)| k == key);
    match v.and_then(|(_, v)| v.as_str()) {
        Some(known) if Balance::parse(known).is_some() => {}
        None => {}
        Some(other) => log::warn!("{key} = \"{other}\" is not known; using least-connection"),
    }
}

/// A client's gateway request, from the head to the end of the answer.
/// Scripts `check-local` found to be files, with the second they were
/// seen: a second's worth of requests for one script costs one stat.
#[derive(Default)]
pub struct LocalScripts {
    seen: std::collections::HashMap<String, u64>,
    /// The path being asked about, built here to spare an allocation.
    path: String,
}

impl LocalScripts {
    /// Whether `docroot` + `script` is a file. A yes is remembered for a
    /// second, like the open-file cache's entries; a no is asked again each
    /// time.
    pub fn check(&mut self, docroot: &str, script: &str, now: u64) -> bool {
        self.path.clear();
        self.path.push_str(docroot.trim_end_matches('/'));
        self.path.push_str(script);
        if self.seen.get(&self.path).is_some_and(|&t| now <= t + 1) {
            return true;
        }
        let yes = std::fs::metadata(&self.path).is_ok_and(|m| m.is_file());
        if yes && self.seen.len() < 1024 {
            self.seen.insert(self.path.clone(), now);
        }
        yes
    }

    fn purge(&mut self, now: u64) {
        self.seen.retain(|_, t| now <= *t + 1);
    }
}

/// Which process starts, restarts and stops the `bin-path` backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spawner {
    /// This one: glint in one process, or the supervisor of
    /// `server.max-worker` processes (which starts them before its workers).
    #[default]
    Here,
    /// The supervisor of this worker process: the worker connects to them
    /// and never starts, restarts or stops one.
    Supervisor,
}

/// All routes, backends and backend connections.
#[derive(Default)]
pub struct Gateways {
    /// The routes of every table.
    pub routes: Vec<Route>,
    /// The route tables of each `scgi.server` value
    /// ([`crate::config::Config::scgi_servers`]), routes in lookup order.
    scgi_tables: Vec<Vec<usize>>,
    /// The same for `fastcgi.server`.
    fastcgi_tables: Vec<Vec<usize>>,
    /// The same for `proxy.server`.
    proxy_tables: Vec<Vec<usize>>,
    /// The same for `sockproxy.server` and `wstunnel.server` (looked up on
    /// their own: a connection, a WebSocket request).
    sockproxy_tables: Vec<Vec<usize>>,
    wstunnel_tables: Vec<Vec<usize>>,
    /// The same for `ajp13.server` (looked up after `proxy.server`).
    ajp13_tables: Vec<Vec<usize>>,
    /// No scope has a route of `scgi.server`, `fastcgi.server`,
    /// `proxy.server` or `ajp13.server`: a request's look-ups end at once.
    no_request_tables: bool,
    /// The route of CGI requests (`cgi.assign`), when some scope sets it.
    pub cgi_route: Option<usize>,
    /// The route of local jobs (mod_webdav's bodies and long answers).
    pub local_route: Option<usize>,
    /// CGI processes whose request is over, until they exit.
    exiting: Vec<cgi_run::Exiting>,
    /// The field table of HTTP answer heads, reused.
    http_fields: Vec<crate::httpup::response::Field>,
    pub hosts: Vec<Host>,
    conns: Slab<BackendConn>,
    /// The upstream side of every gateway exchange under way.
    jobs: Slab<Job>,
    /// Generation of the next job (a [`JobId`] names one job, never a later
    /// one in the same slot).
    next_gen: u64,
    /// Jobs waiting for a backend, oldest first.
    waiting: VecDeque<usize>,
    /// What the call under way learned about jobs with no sink at hand
    /// to tell: handed to its caller as the call returns ([`News`]), never
    /// kept for a later one.
    outbox: Vec<News>,
    /// A retry is due soon (a backend said "busy"): poll with a short time-out.
    pub retry_soon: bool,
    /// Backend connections holding a CGI head for its length whose output
    /// paused in this turn of the loop, and those of earlier turns with the
    /// `clock.mono_us` at which they are read again ([`Gateways::take_held`]).
    /// (The exchange tells a connection's later job from the one held.)
    held_now: Vec<(usize, crate::msg::ExchangeId)>,
    held_due: Vec<(usize, crate::msg::ExchangeId, u64)>,
    /// Backend connections closed since the queue was last looked at.
    pub freed: usize,
    scratch: Vec<u8>,
    /// Scripts `check-local` found to be files, with the second they were
    /// seen: a second's worth of requests for one script costs one stat.
    pub local_scripts: LocalScripts,
    /// This is one of several worker processes (`server.max-worker`): each
    /// would keep its own connections, so none are kept unless configured.
    workers: bool,
    /// A graceful shutdown is under way: no connection is kept any more.
    closing: bool,
    /// Who runs the `bin-path` backends' processes.
    spawner: Spawner,
    /// Retired backends are not stopped yet: worker processes of the older
    /// configuration may still send them requests (the supervisor of
    /// `server.max-worker` processes, after a graceful restart).
    retire_held: bool,
    /// Backend connections opened for requests, and requests sent on a
    /// kept one, since start.
    pub opened: u64,
    pub reused: u64,
}
