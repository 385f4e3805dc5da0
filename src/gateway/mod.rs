//! Gateways to SCGI, uwsgi and FastCGI backends (mod_scgi, mod_fastcgi), in
//! the same event loop as the clients.
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
//! (`Location: /path` alone). For both the connection runs the request again
//! (`GwClient::rerun`, [`crate::handler::rerun`]).
//!
//! Where things are: this file has the types (routes, hosts, the client's
//! [`GwClient`], [`BackendConn`], [`Gateways`]) and a request's way through
//! them (dispatch, backend I/O, time-outs). Beside it: `answer` (the
//! backend's answer to the client, local redirects, X-Sendfile,
//! [`fail_client`]), `keep` (keep-conn and the FCGI_GET_VALUES probe),
//! `process` (`bin-path` backends: start, restart, stop), `reconfigure`
//! (graceful restart); the protocols' encodings in [`cgi`], [`scgi`],
//! [`uwsgi`] and [`fastcgi`], the request body in [`upload`], and the
//! `scgi.server`/`fastcgi.server` syntax in [`config`].

mod answer;
pub mod cgi;
pub mod config;
pub mod fastcgi;
mod keep;
mod process;
mod reconfigure;
pub mod scgi;
pub mod upload;
pub mod uwsgi;

use std::collections::VecDeque;
use std::io;
use std::process::Child;
use std::rc::Rc;

use mio::{Registry, Token};
use slab::Slab;

use crate::config::{Config, Settings};
use crate::connection::{Connection, Stream};
use crate::http::chunked;
use answer::deliver;
pub use answer::fail_client;
pub use config::{BackendAddr, HostSpec, Protocol, RouteSpec};
use keep::ProbeEnd;
pub use upload::{BodyFraming, Upload, BODY_WINDOW};

/// Backend connection tokens start here (client connections are below, listeners above).
pub const BACKEND_BASE: usize = 1 << 29;

/// Most clients waiting for a backend; past it a request gets 503 at once.
pub const MAX_WAITING: usize = 4096;
/// How long a request may wait in the queue before it gets 503.
pub const MAX_WAIT_SECS: u64 = 30;
/// Stop reading from a backend while the client has this much unsent.
pub const CLIENT_HIGH_WATER: usize = 256 * 1024;
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
/// `BackendConn::client` of a connection that serves no client (idle, probe).
const NO_CLIENT: usize = usize::MAX;
/// Most times one client request is run again inside glint (an authorizer
/// allowed it, a backend redirected it locally); past it the client gets 500.
pub const MAX_RERUNS: u8 = 5;

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
            _ => Keep::Off,
        };
        Host {
            cap: spec.max_conns,
            limit: spec.max_conns,
            spec,
            active: 0,
            disabled_until: 0,
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

/// `scgi.balance` / `fastcgi.balance`: how a route picks among its backends
/// that are up and under their cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// `fair` / `least-connection` (default): the least busy.
    LeastBusy,
    /// `round-robin`: each in turn.
    RoundRobin,
    /// `hash`: by URL path, so one path keeps its backend (caches).
    Hash,
    /// `sticky`: by client address.
    Sticky,
}

impl Balance {
    /// The balancing `s` asks for the routes of `protocol`.
    pub fn of(s: &Settings, protocol: Protocol) -> Balance {
        let key = match protocol {
            Protocol::FastCgi => "fastcgi.balance",
            Protocol::Scgi | Protocol::Uwsgi => "scgi.balance",
        };
        let v = s.raw.iter().rev().find(|(k, _)| k == key);
        match v.and_then(|(_, v)| v.as_str()) {
            Some("round-robin") => Balance::RoundRobin,
            Some("hash") => Balance::Hash,
            Some("sticky") => Balance::Sticky,
            _ => Balance::LeastBusy,
        }
    }

    /// Logs a `scgi.balance` / `fastcgi.balance` value in `s` that glint
    /// does not know (requests then get least-connection).
    fn check(s: &Settings, key: &str) {
        let v = s.raw.iter().find(|(k, _)| k == key);
        match v.and_then(|(_, v)| v.as_str()) {
            Some("round-robin" | "hash" | "sticky" | "fair" | "least-connection") | None => {}
            Some(other) => {
                log::warn!("{key} = \"{other}\" is not known; using least-connection")
            }
        }
    }
}

/// A client's gateway request, from the head to the end of the answer.
#[derive(Debug)]
pub struct GwClient {
    pub route: usize,
    pub protocol: Protocol,
    /// What goes to the backend: the environment, then the body as it arrives.
    pub upload: Upload,
    pub backend: Option<usize>,
    pub waiting: bool,
    pub since: u64,
    pub attempts: u8,
    /// The next attempt opens a new backend connection, not a kept one (a
    /// kept one was found closed).
    pub fresh_conn: bool,
    pub settings: Rc<Settings>,
    pub head_only: bool,
    pub minor: u8,
    pub keep_alive: bool,
    /// The response head has been written to the client.
    pub head_sent: bool,
    /// The body is framed with chunked encoding.
    pub resp_chunked: bool,
    /// Body bytes still expected when the backend announced a length.
    pub resp_remaining: Option<u64>,
    pub status: u16,
    pub body_sent: u64,
    /// The backend is finished; the connection continues once the output is written.
    pub done: bool,
    /// The request head of this pass (its request line names the current
    /// target), for the access log and for running the request again.
    pub log_head: Vec<u8>,
    /// Hashes of the URL path and of the client address, for `hash` and `sticky` balancing.
    pub hash_path: u64,
    pub hash_ip: u64,
    /// The backend is an authorizer: its 200 lets the request go on, its
    /// other answers go to the client. The request body stays unread meanwhile.
    pub authorizer: bool,
    /// A `Location: /path` answer is followed inside glint (`local-redir`).
    pub local_redir: bool,
    /// What the request carries from earlier passes (see [`Carry`]).
    pub carry: Carry,
    /// Set when the answer says to run the request again: the rest of the
    /// answer is read and dropped, then the connection runs it.
    pub rerun: Option<Rerun>,
}

/// What one client request carries from one pass through the handler chain
/// to the next, when glint runs it again itself.
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
}

/// An error answer replaced by `server.error-handler` or
/// `server.error-handler-404`: the handler's URL runs instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorRun {
    /// The handler's URL.
    pub target: String,
    /// The status of the error it replaces (`REDIRECT_STATUS` for backends).
    pub status: u16,
    /// `server.error-handler` (runs as a GET; the error's status stays),
    /// rather than `server.error-handler-404`.
    pub generic: bool,
}

/// Why glint runs a request again once its backend's answer is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rerun {
    /// An authorizer answered 200; its `Variable-` headers as (NAME, value).
    Authorized(Vec<(String, Vec<u8>)>),
    /// A local redirect (RFC 3875 6.2.2) to this path and query.
    Redirect(String),
}

/// FNV-1a: a stable hash for picking a backend.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

impl GwClient {
    /// The client's socket should be read for this request now: body bytes
    /// are due and the window has room (or the backend is finished with the
    /// request, and the rest of the body is dropped as it comes).
    pub fn takes_body(&self) -> bool {
        self.upload.wants_body() && (self.done || self.upload.room() > 0)
    }

    /// Feeds body bytes from the client: to the backend's window, or
    /// nowhere once the answer no longer needs them. Returns how many of
    /// `input` were used and whether the body is complete.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, bool), u16> {
        if self.done && !self.upload.collecting() {
            let used = self.upload.discard(input);
            return Ok((used, !self.upload.wants_body()));
        }
        self.upload.take(input)
    }
}

/// A connection to a backend: serving one client request, kept open
/// between two (FastCGI keep-conn), or asking the backend FCGI_GET_VALUES.
pub struct BackendConn {
    stream: Stream,
    /// What it is for now.
    state: Use,
    /// The client whose request it carries (while `Use::Busy`).
    pub client: usize,
    pub host: usize,
    protocol: Protocol,
    connected: bool,
    readable: bool,
    writable: bool,
    /// The backend closed its side: the end of stream is still to be read,
    /// and no new edge will announce it.
    peer_closed: bool,
    /// That close was an orderly end of stream (FIN): once a read comes
    /// up short, nothing but the end is left to read.
    fin_seen: bool,
    /// Registered for writability too (once a write blocked).
    watches_writes: bool,
    /// Writing to the backend failed: it stopped reading. Its answer, if
    /// any, is still read; whether it answered decides the outcome.
    write_shut: bool,
    /// Undecoded FastCGI record bytes.
    records: Vec<u8>,
    /// The CGI header block while it is being collected.
    head: Vec<u8>,
    /// The backend framed its body with `Transfer-Encoding: chunked` (Quixote
    /// does for HTTP/1.1 requests): glint decodes it and frames it anew.
    dechunk: Option<chunked::Decoder>,
    /// Any answer byte arrived (after that, a failure cannot be retried).
    answered: bool,
    /// FastCGI END_REQUEST seen.
    ended: bool,
    pub paused: bool,
    started: u64,
    last_active: u64,
    /// The request on it asked the backend to keep the connection
    /// (FCGI_KEEP_CONN).
    keep: bool,
    /// It carried a request before this one: a close before any answer
    /// may just mean the backend let the kept connection go.
    reused: bool,
}

/// What a backend connection is for.
enum Use {
    /// Carries the request of its client.
    Busy,
    /// Kept after END_REQUEST, since this second, for the next request.
    Idle(u64),
    /// Asks FCGI_GET_VALUES; the bytes of the question still to send.
    Probe(Vec<u8>),
}

impl BackendConn {
    fn new(stream: Stream, state: Use, client: usize, host: usize, protocol: Protocol) -> Self {
        // A unix socket connects at once (or says EAGAIN), and a TCP
        // connect to a near backend is usually done too: the first write
        // goes out now instead of after an epoll round trip.
        let connected = matches!(stream, Stream::Unix(_));
        BackendConn {
            stream,
            state,
            client,
            host,
            protocol,
            connected,
            readable: false,
            writable: true,
            peer_closed: false,
            fin_seen: false,
            watches_writes: false,
            write_shut: false,
            records: Vec::new(),
            head: Vec::new(),
            dechunk: None,
            answered: false,
            ended: false,
            paused: false,
            started: 0,
            last_active: 0,
            keep: false,
            reused: false,
        }
    }

    /// Ready for another request: the state one request leaves is cleared.
    fn reset(&mut self, now: u64) {
        self.records.clear();
        self.head.clear();
        self.dechunk = None;
        self.answered = false;
        self.ended = false;
        self.paused = false;
        self.started = now;
        self.last_active = now;
    }

    /// The backend closed its side: whether its answer was complete.
    fn at_end(&self) -> Result<bool, Failure> {
        match (self.protocol, self.answered) {
            (_, false) => Err(Failure::Retry(
                "closed the connection without an answer".into(),
            )),
            (Protocol::Scgi | Protocol::Uwsgi, true)
                if self.dechunk.as_ref().is_some_and(|d| !d.is_done()) =>
            {
                Err(Failure::Broken(
                    "closed the connection inside its chunked answer".into(),
                ))
            }
            (Protocol::Scgi | Protocol::Uwsgi, true) => Ok(true),
            (Protocol::FastCgi, true) if self.ended => Ok(true),
            (Protocol::FastCgi, true) => Err(Failure::Broken(
                "closed the connection before END_REQUEST".into(),
            )),
        }
    }
}

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
    pub hosts: Vec<Host>,
    pub conns: Slab<BackendConn>,
    pub waiting: VecDeque<usize>,
    /// A retry is due soon (a backend said "busy"): poll with a short time-out.
    pub retry_soon: bool,
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

impl Gateways {
    /// The routes of `scgi.server` and `fastcgi.server`: one table for
    /// each value they have in some scope of `c` (the global one and each
    /// conditional block that sets them). A backend configured alike in
    /// several tables is one [`Host`]: one cap, one process, one set of
    /// kept connections.
    pub fn from_config(c: &Config) -> Result<Gateways, String> {
        let mut g = Gateways::default();
        for (values, p, name, balance_key) in [
            (
                &c.scgi_servers,
                Protocol::Scgi,
                "scgi.server",
                "scgi.balance",
            ),
            (
                &c.fastcgi_servers,
                Protocol::FastCgi,
                "fastcgi.server",
                "fastcgi.balance",
            ),
        ] {
            // Said once here; requests read it quietly from their settings.
            Balance::check(&c.global, balance_key);
            // `*.map-extensions = ( ".php3" => ".php" )` (global): the other
            // extension goes to the same backends, after every extension of
            // its own, in each table.
            let map_key = balance_key.replace("balance", "map-extensions");
            let used = values.iter().any(Option::is_some);
            let maps = match used {
                true => map_extensions(&c.global, &map_key)?,
                false => Vec::new(),
            };
            let mut mapped = vec![false; maps.len()];
            let mut tables = Vec::with_capacity(values.len());
            for (scope, v) in values.iter().enumerate() {
                let mut table = Vec::new();
                if let Some(v) = v {
                    g.add_table(v, p, scope, &mut table)
                        .map_err(|e| format!("{name}: {e}"))?;
                }
                for ((from, to), done) in maps.iter().zip(&mut mapped) {
                    let aliases: Vec<Route> = table
                        .iter()
                        .filter_map(|&i| g.routes.get(i))
                        .filter(|r| r.extension && r.pattern == *to)
                        .map(|r| Route {
                            pattern: from.clone(),
                            next: 0,
                            ..r.clone()
                        })
                        .collect();
                    *done |= !aliases.is_empty();
                    for r in aliases {
                        table.push(g.routes.len());
                        g.routes.push(r);
                    }
                }
                tables.push(table);
            }
            for ((from, to), done) in maps.iter().zip(&mapped) {
                if !done {
                    log::warn!("{map_key}: {name} has no \"{to}\" for \"{from}\"; ignored");
                }
            }
            match p {
                Protocol::FastCgi => g.fastcgi_tables = tables,
                _ => g.scgi_tables = tables,
            }
        }
        g.settle_keep();
        Ok(g)
    }

    /// Adds the routes of one `scgi.server` / `fastcgi.server` value; their
    /// indexes go to `table`, in lookup order.
    fn add_table(
        &mut self,
        v: &crate::config::Value,
        p: Protocol,
        scope: usize,
        table: &mut Vec<usize>,
    ) -> Result<(), String> {
        // Hosts of earlier tables this one may share, each at most once
        // (a backend named twice in one table stays two hosts).
        let before = self.hosts.len();
        let mut shared = vec![false; before];
        for r in config::parse_servers(v, p)? {
            // Authorizers and responders under one pattern are two
            // routes: the authorizer's is looked up first.
            for authorizer in [true, false] {
                let mut ids = Vec::new();
                for h in r.hosts.iter().filter(|h| h.authorizer == authorizer) {
                    let same = (0..before).find(|&i| !shared[i] && self.hosts[i].spec == *h);
                    match same {
                        Some(i) => {
                            shared[i] = true;
                            ids.push(i);
                        }
                        None => {
                            ids.push(self.hosts.len());
                            self.hosts.push(Host::new(h.clone()));
                        }
                    }
                }
                if ids.is_empty() {
                    continue;
                }
                table.push(self.routes.len());
                self.routes.push(Route {
                    extension: r.is_extension(),
                    protocol: p,
                    authorizer,
                    scope,
                    next: 0,
                    pattern: r.pattern.clone(),
                    hosts: ids,
                });
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The responder route for a path under settings `s` and where its
    /// script name ends.
    pub fn route_for(&self, s: &Settings, path: &str) -> Option<(usize, usize)> {
        self.find_route(s, path, false)
    }

    /// The authorizer route that guards a path under settings `s`, if any.
    pub fn authorizer_for(&self, s: &Settings, path: &str) -> Option<(usize, usize)> {
        self.find_route(s, path, true)
    }

    /// Looks in the SCGI routes of the scope of `s`, then in its FastCGI ones.
    fn find_route(&self, s: &Settings, path: &str, authorizer: bool) -> Option<(usize, usize)> {
        let scgi = self.scgi_tables.get(s.scgi_scope as usize);
        let fastcgi = self.fastcgi_tables.get(s.fastcgi_scope as usize);
        let ids = scgi.into_iter().chain(fastcgi).flatten().copied();
        self.match_route(ids, path, authorizer)
    }

    fn match_route(
        &self,
        ids: impl Iterator<Item = usize>,
        path: &str,
        authorizer: bool,
    ) -> Option<(usize, usize)> {
        for i in ids {
            let Some(r) = self.routes.get(i) else {
                continue;
            };
            if r.authorizer != authorizer {
                continue;
            }
            if r.extension {
                // `.php` matches `/a.php` and `/a.php/more` (the rest is PATH_INFO).
                let mut from = 0;
                while let Some(pos) = path[from..].find(r.pattern.as_str()) {
                    let end = from + pos + r.pattern.len();
                    if end == path.len() || path.as_bytes()[end] == b'/' {
                        return Some((i, end));
                    }
                    from = end;
                }
            } else if let Some(rest) = path.strip_prefix(r.pattern.as_str()) {
                if rest.is_empty() || rest.starts_with('/') || r.pattern.ends_with('/') {
                    return Some((i, r.pattern.trim_end_matches('/').len()));
                }
            }
        }
        None
    }
}

/// The pairs of `scgi.map-extensions` / `fastcgi.map-extensions`.
fn map_extensions(s: &Settings, key: &str) -> Result<Vec<(String, String)>, String> {
    let Some((_, v)) = s.raw.iter().rev().find(|(k, _)| k == key) else {
        return Ok(Vec::new());
    };
    let crate::config::Value::Array(items) = v else {
        return Err(format!("{key} expects ( \".ext\" => \".ext\", ... )"));
    };
    let mut pairs = Vec::new();
    for (from, to) in items {
        let (Some(from), Some(to)) = (from, to.as_str()) else {
            return Err(format!("{key} expects ( \".ext\" => \".ext\", ... )"));
        };
        if from.is_empty() || to.is_empty() {
            return Err(format!("{key}: an empty extension"));
        }
        pairs.push((from.clone(), to.to_string()));
    }
    Ok(pairs)
}

fn connect(addr: &BackendAddr) -> io::Result<Stream> {
    match addr {
        BackendAddr::Tcp(a) => mio::net::TcpStream::connect(*a).map(Stream::Tcp),
        BackendAddr::Unix(p) => mio::net::UnixStream::connect(p).map(Stream::Unix),
    }
}

/// Why a backend attempt failed.
enum Failure {
    /// Refused, reset or gone before answering: try again elsewhere or later.
    Retry(String),
    /// Broke after answering: the response cannot be completed.
    Broken(String),
}

impl Failure {
    /// An I/O error: retryable until the backend has answered anything.
    fn of(answered: bool, what: &str, e: &io::Error) -> Failure {
        if answered {
            Failure::Broken(format!("{what}: {e}"))
        } else {
            Failure::Retry(format!("{what}: {e}"))
        }
    }
}

impl Gateways {
    /// Finds a backend for a client whose request is complete and connects to
    /// it, or queues the client; answers 503 when no backend can ever take it.
    pub fn dispatch(
        &mut self,
        key: usize,
        conn: &mut Connection,
        now: u64,
        registry: &Registry,
        date: &[u8],
    ) {
        let Some(gw) = conn.gw.as_mut() else { return };
        if gw.backend.is_some() || gw.done {
            return;
        }
        let Some(route) = self.routes.get_mut(gw.route) else {
            // Its route was removed by a graceful restart.
            fail_client(conn, 503, date);
            return;
        };
        let hosts = &self.hosts;
        // Under its cap, or with a kept connection waiting for a request.
        let usable = |h: &usize| {
            let h = &hosts[*h];
            h.disabled_until <= now && (h.active < h.cap || !h.idle.is_empty())
        };
        let balance = Balance::of(&gw.settings, route.protocol);
        let candidate = match balance {
            Balance::LeastBusy => route
                .hosts
                .iter()
                .copied()
                .filter(usable)
                .min_by_key(|&h| hosts[h].busy()),
            Balance::RoundRobin => {
                let n = route.hosts.len();
                let pick = (0..n)
                    .map(|i| route.hosts[(route.next + i) % n])
                    .find(usable);
                route.next = (route.next + 1) % n.max(1);
                pick
            }
            Balance::Hash | Balance::Sticky => {
                // Start at the key's backend and take the next usable one.
                let key = if balance == Balance::Hash {
                    gw.hash_path
                } else {
                    gw.hash_ip
                };
                let n = route.hosts.len();
                let first = (key % n.max(1) as u64) as usize;
                (0..n).map(|i| route.hosts[(first + i) % n]).find(usable)
            }
        };
        let Some(h) = candidate else {
            let route = &self.routes[gw.route];
            let all_down = route
                .hosts
                .iter()
                .all(|&h| self.hosts[h].disabled_until > now);
            if all_down {
                log::warn!(
                    "every backend of {} is disabled; answering 503",
                    route.pattern
                );
                fail_client(conn, 503, date);
            } else if !gw.waiting {
                if self.waiting.len() >= MAX_WAITING {
                    log::warn!("backend queue full; answering 503");
                    fail_client(conn, 503, date);
                } else {
                    gw.waiting = true;
                    self.waiting.push_back(key);
                }
            }
            return;
        };
        gw.waiting = false;
        gw.attempts += 1;
        if self.hosts[h].keep == Keep::Unknown && now >= self.hosts[h].probe_at {
            // First needed: ask how many connections it serves. This
            // request does not wait for the answer.
            self.start_probe(h, now, registry);
        }
        let host = &mut self.hosts[h];
        let keep = host.keep == Keep::On && gw.protocol == Protocol::FastCgi;
        // A kept connection may have been closed by the backend a moment
        // ago (php-cgi's child exits after PHP_FCGI_MAX_REQUESTS): only a
        // request glint can always send again goes on one. Another gets a
        // new connection, in the place of an idle one when at the cap.
        let fresh = gw.fresh_conn || !gw.upload.stays_whole();
        if keep && !fresh {
            if let Some(bkey) = host.idle.pop() {
                if let Some(b) = self.conns.get_mut(bkey) {
                    b.state = Use::Busy;
                    b.client = key;
                    b.protocol = gw.protocol;
                    b.reused = true;
                    b.writable = true;
                    b.reset(now);
                    gw.upload.set_keep_conn(true);
                    gw.backend = Some(bkey);
                    self.reused += 1;
                    self.drive(bkey, conn, now, date, registry);
                    return;
                }
            }
        }
        if host.active >= host.cap {
            match host.idle.first().copied() {
                Some(oldest) => {
                    self.remove_conn(oldest);
                }
                None => {
                    gw.attempts -= 1;
                    gw.waiting = true;
                    self.waiting.push_front(key);
                    return;
                }
            }
        }
        let host = &mut self.hosts[h];
        let stream = match connect(&host.spec.addr) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // A unix socket's listen queue is full: the backend is busy, not
                // broken. Lower its cap to what it holds now and wait.
                host.cap = host.active.max(1);
                gw.attempts -= 1;
                gw.waiting = true;
                self.waiting.push_front(key);
                self.retry_soon = true;
                return;
            }
            Err(e) => {
                log::error!(
                    "backend {} ({}): connect: {e}; disabled for {} s",
                    host.spec.label,
                    host.spec.addr,
                    host.spec.disable_time
                );
                host.disabled_until = now + host.spec.disable_time.max(1);
                // Another backend of the route may take it.
                self.dispatch(key, conn, now, registry, date);
                return;
            }
        };
        // The request's protocol: `scgi.protocol` may differ per request.
        let mut b = BackendConn::new(stream, Use::Busy, key, h, gw.protocol);
        b.keep = keep;
        let Some(bkey) = self.insert_conn(registry, b, now) else {
            fail_client(conn, 502, date);
            return;
        };
        self.hosts[h].active += 1;
        gw.backend = Some(bkey);
        gw.upload.set_keep_conn(keep);
        self.opened += 1;
        self.drive(bkey, conn, now, date, registry);
    }

    /// Registers a new backend connection with the poll (for writability
    /// too only if `b.watches_writes`: see `drive`) and keeps it; its key,
    /// or `None` (logged) when it cannot be registered.
    fn insert_conn(&mut self, registry: &Registry, mut b: BackendConn, now: u64) -> Option<usize> {
        let entry = self.conns.vacant_entry();
        let bkey = entry.key();
        let interest = crate::server::interest(b.watches_writes);
        if let Err(e) = registry.register(&mut b.stream, Token(BACKEND_BASE + bkey), interest) {
            log::error!("cannot register a backend connection: {e}");
            return None;
        }
        b.started = now;
        b.last_active = now;
        entry.insert(b);
        Some(bkey)
    }

    /// Records readiness of backend connection `bkey`; returns its client,
    /// or `None` when it has none (a kept idle connection or a probe,
    /// handled here).
    pub fn on_event(&mut self, bkey: usize, ev: &mio::event::Event, now: u64) -> Option<usize> {
        let b = self.conns.get_mut(bkey)?;
        if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
            b.readable = true;
        }
        if ev.is_writable() || ev.is_write_closed() || ev.is_error() {
            b.writable = true;
        }
        if ev.is_read_closed() || ev.is_error() {
            b.peer_closed = true;
        }
        // An orderly end of stream (FIN), not a reset.
        if ev.is_read_closed() && !ev.is_error() {
            b.fin_seen = true;
        }
        match b.state {
            Use::Busy => Some(b.client),
            Use::Idle(_) => {
                if !b.still_idle() {
                    let host = b.host;
                    log::debug!(
                        "backend {}: closed a kept connection",
                        self.hosts.get(host).map(Host::name).unwrap_or_default()
                    );
                    self.remove_conn(bkey);
                }
                None
            }
            Use::Probe(_) => {
                self.probe_event(bkey, now);
                None
            }
        }
    }

    /// Makes what progress the backend's readiness allows: connect, send the
    /// request, read the answer into the client's output.
    pub fn drive(
        &mut self,
        bkey: usize,
        conn: &mut Connection,
        now: u64,
        date: &[u8],
        registry: &Registry,
    ) {
        let result = self.progress(bkey, conn, now, date);
        match result {
            Ok(false) => {
                // A write blocked (a TCP connect under way, or a full socket):
                // from now on the socket's writability is watched.
                if let Some(b) = self.conns.get_mut(bkey) {
                    if !b.writable && !b.watches_writes {
                        b.watches_writes = true;
                        let t = Token(BACKEND_BASE + bkey);
                        if let Err(e) =
                            registry.reregister(&mut b.stream, t, crate::server::interest(true))
                        {
                            log::error!("cannot watch a backend connection: {e}");
                        }
                    }
                }
            }
            Ok(true) => {
                self.finish(bkey, conn, now, date);
            }
            Err(Failure::Retry(why)) => {
                let b = self.remove_conn(bkey);
                let Some(b) = b else { return };
                let host = &mut self.hosts[b.host];
                let name = host.name();
                // A kept connection closed before any answer: the backend
                // let it go (a worker exited, say) while the request was on
                // its way. Not a failure of the backend, nor an attempt.
                let stale = b.reused && !b.answered;
                if stale {
                    log::debug!("backend {name}: a kept connection was closed ({why}); sending the request on a new one");
                } else {
                    log::error!("backend {name}: {why}");
                    if !b.answered {
                        host.disabled_until = now + host.spec.disable_time;
                    }
                }
                if let Some(gw) = conn.gw.as_mut() {
                    gw.backend = None;
                    if stale {
                        gw.attempts = gw.attempts.saturating_sub(1);
                        gw.fresh_conn = true;
                    }
                    if gw.attempts < MAX_ATTEMPTS && !gw.head_sent {
                        if gw.upload.rewind() {
                            // Nothing reached the client yet and glint still holds the whole request.
                            self.dispatch(b.client, conn, now, registry, date);
                            return;
                        }
                        log::error!(
                            "backend {name}: it already took part of the request body, \
                             which glint no longer holds; answering 502 instead of retrying"
                        );
                    }
                }
                fail_client(conn, 502, date);
            }
            Err(Failure::Broken(why)) => {
                if let Some(b) = self.remove_conn(bkey) {
                    let host = &self.hosts[b.host];
                    log::error!("backend {} ({}): {why}", host.spec.label, host.spec.addr);
                }
                fail_client(conn, 502, date);
            }
        }
    }

    /// Returns Ok(true) when the backend's answer is complete.
    fn progress(
        &mut self,
        bkey: usize,
        conn: &mut Connection,
        now: u64,
        date: &[u8],
    ) -> Result<bool, Failure> {
        let Some(b) = self.conns.get_mut(bkey) else {
            return Ok(false);
        };
        let pending = conn
            .gw
            .as_ref()
            .is_some_and(|g| !g.upload.pending().is_empty());
        if !b.connected {
            if !b.writable {
                return Ok(false);
            }
            // A TCP connect still under way: the first write tells. On
            // loopback the handshake is done within connect(), so the request
            // goes out now rather than after a wake-up for writability; a
            // write into a connect still pending says EAGAIN, one into a
            // refused connect gives its error.
            if !pending {
                if let Ok(Some(e)) | Err(e) = b.stream.take_error() {
                    return Err(Failure::Retry(format!("connect: {e}")));
                }
                b.connected = true;
                b.last_active = now;
            }
        }
        // The request: what the client's upload has ready, while the socket takes it.
        if let Some(up) = conn.gw.as_mut().map(|g| &mut g.upload) {
            while b.writable && !b.write_shut && !up.pending().is_empty() {
                match b.stream.write(up.pending()) {
                    Ok(n) => {
                        up.advance(n);
                        b.connected = true;
                        b.last_active = now;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => b.writable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if !b.connected => {
                        return Err(Failure::Retry(format!("connect: {e}")));
                    }
                    Err(e) => {
                        // It stopped reading (it may have answered without
                        // wanting the whole body): the read side tells.
                        log::debug!("backend write: {e}; reading its answer");
                        b.write_shut = true;
                        b.readable = true;
                    }
                }
            }
        }
        let buf = &mut self.scratch;
        let spec = &self.hosts[b.host].spec;
        let xs = spec
            .x_sendfile
            .then_some(spec.x_sendfile_docroot.as_slice());
        while b.readable && !b.paused {
            buf.resize(64 * 1024, 0);
            match b.stream.read(buf) {
                Ok(0) => {
                    b.readable = false;
                    return b.at_end();
                }
                Ok(n) => {
                    b.last_active = now;
                    b.answered = true;
                    let data = &buf[..n];
                    let finished = match b.protocol {
                        // Both end when the backend closes, or with the last chunk.
                        Protocol::Scgi | Protocol::Uwsgi => {
                            deliver(conn, &mut b.head, &mut b.dechunk, data, date, xs)
                                .map_err(Failure::Broken)?
                        }
                        Protocol::FastCgi => {
                            b.records.extend_from_slice(data);
                            let mut used = 0;
                            let mut stdout = Vec::new();
                            let mut ended = false;
                            while let Some((piece, len)) = fastcgi::decode(&b.records[used..])
                                .map_err(|e| Failure::Broken(e.into()))?
                            {
                                used += len;
                                match piece {
                                    fastcgi::Piece::Stdout(d) => stdout.extend_from_slice(d),
                                    fastcgi::Piece::Stderr(d) => log::warn!(
                                        "backend stderr: {}",
                                        String::from_utf8_lossy(d).trim_end()
                                    ),
                                    fastcgi::Piece::End(_) => {
                                        ended = true;
                                        break;
                                    }
                                    fastcgi::Piece::Skip => {}
                                }
                            }
                            b.records.drain(..used);
                            // END_REQUEST, not the last chunk, ends a FastCGI answer.
                            deliver(conn, &mut b.head, &mut b.dechunk, &stdout, date, xs)
                                .map_err(Failure::Broken)?;
                            b.ended |= ended;
                            ended
                        }
                    };
                    // Finished, or the client was answered otherwise (an
                    // X-Sendfile refused): the backend connection goes now.
                    if finished || conn.gw.as_ref().is_none_or(|g| g.done) {
                        return Ok(true);
                    }
                    if conn.out.pending_mem() >= CLIENT_HIGH_WATER {
                        b.paused = true;
                    }
                    // A short read drained the socket. If the backend had
                    // closed before it, the end of stream is all that is left:
                    // no need to read it (SCGI answers end that way).
                    if n < buf.len() {
                        if b.fin_seen {
                            b.readable = false;
                            return b.at_end();
                        }
                        // After a reset the error is still to be read: no
                        // new edge will announce it.
                        if !b.peer_closed {
                            b.readable = false;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => b.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::of(b.answered, "read", &e)),
            }
        }
        Ok(false)
    }

    /// Moves a gateway request on after its client was driven: resumes
    /// reading from a paused backend once the client caught up, and writes
    /// body bytes the client sent since to a backend whose socket has room.
    pub fn pump(&mut self, conn: &mut Connection, now: u64, date: &[u8], registry: &Registry) {
        let Some(gw) = conn.gw.as_ref() else { return };
        let Some(bkey) = gw.backend else { return };
        let has_bytes = !gw.upload.pending().is_empty();
        let Some(b) = self.conns.get_mut(bkey) else {
            return;
        };
        let mut go = b.connected && b.writable && !b.write_shut && has_bytes;
        if b.paused && conn.out.pending_mem() < CLIENT_HIGH_WATER / 2 {
            b.paused = false;
            b.readable = true;
            go = true;
        }
        if go {
            self.drive(bkey, conn, now, date, registry);
        }
    }

    /// The backend's answer is complete: end the client's response.
    fn finish(&mut self, bkey: usize, conn: &mut Connection, now: u64, date: &[u8]) {
        let all_sent = conn.gw.as_ref().is_some_and(|g| g.upload.all_sent());
        self.release(bkey, all_sent, now);
        let Some(gw) = conn.gw.as_mut() else { return };
        gw.backend = None;
        if gw.rerun.is_some() {
            // Nothing was written: the connection runs the request again.
            gw.done = true;
            return;
        }
        if !gw.head_sent {
            log::error!("backend answered without a complete header block");
            fail_client(conn, 502, date);
            return;
        }
        if gw.resp_chunked && !gw.head_only {
            conn.out.mem.extend_from_slice(b"0\r\n\r\n");
        }
        if gw.resp_remaining.is_some_and(|r| r > 0) {
            log::error!("backend sent less than its Content-Length; closing the connection");
            gw.keep_alive = false;
        }
        gw.done = true;
    }

    /// A request is over on backend connection `bkey` (the whole request
    /// was written when `all_sent`): the connection is kept for the next
    /// request when the request asked for it and it ended cleanly — END_REQUEST
    /// read and nothing after it, the backend's side still open, its backend
    /// still keeping connections; else it is closed. Either way its slot
    /// goes to a waiting client.
    fn release(&mut self, bkey: usize, all_sent: bool, now: u64) {
        let Some(b) = self.conns.get_mut(bkey) else {
            return;
        };
        let clean = b.keep
            && b.ended
            && all_sent
            && b.records.is_empty()
            && !b.peer_closed
            && !b.write_shut
            && matches!(b.state, Use::Busy);
        let host = self.hosts.get_mut(b.host);
        let Some(h) = host.filter(|h| clean && !self.closing && h.keep == Keep::On && !h.retired)
        else {
            self.remove_conn(bkey);
            return;
        };
        if b.answered && h.cap < h.limit {
            h.cap += 1;
        }
        b.state = Use::Idle(now);
        b.client = NO_CLIENT;
        b.reset(now);
        h.idle.push(bkey);
        self.freed += 1;
    }

    /// Drops a backend connection and frees its slot for a waiting client.
    fn remove_conn(&mut self, bkey: usize) -> Option<BackendConn> {
        let b = self.conns.try_remove(bkey)?;
        self.freed += 1;
        if let Some(h) = self.hosts.get_mut(b.host) {
            h.active = h.active.saturating_sub(1);
            if matches!(b.state, Use::Idle(_)) {
                h.idle.retain(|&k| k != bkey);
            }
            // A backend that answered may take one more again.
            if b.answered && h.cap < h.limit {
                h.cap += 1;
            }
        }
        Some(b)
    }

    /// The client went away: close its backend connection, drop it from the queue.
    pub fn client_gone(&mut self, key: usize, conn: &mut Connection) {
        if let Some(gw) = conn.gw.as_mut() {
            if let Some(b) = gw.backend.take() {
                self.remove_conn(b);
            }
            if gw.waiting {
                self.waiting.retain(|&k| k != key);
            }
        }
    }

    /// Time-outs: connect, write and read time-outs answer 504, a long wait in the queue 503.
    /// Returns the clients that were answered (to be driven by the caller).
    pub fn on_tick(&mut self, now: u64, conns: &mut Slab<Connection>, date: &[u8]) -> Vec<usize> {
        self.local_scripts.purge(now);
        let mut touched = Vec::new();
        let mut expired = Vec::new();
        let mut idle_over = Vec::new();
        let mut probes_over = Vec::new();
        for (bkey, b) in self.conns.iter() {
            let since = match b.state {
                Use::Busy => continue,
                Use::Idle(since) => {
                    if now.saturating_sub(since) >= IDLE_KEEP_SECS {
                        idle_over.push(bkey);
                    }
                    continue;
                }
                Use::Probe(_) => b.started,
            };
            let Some(h) = self.hosts.get(b.host) else {
                probes_over.push((bkey, ProbeEnd::Failed("its backend is gone".into())));
                continue;
            };
            let waited = now.saturating_sub(since);
            let answer_wait = h.spec.read_timeout.min(PROBE_WAIT_SECS);
            if !b.connected && waited >= h.spec.connect_timeout {
                probes_over.push((bkey, ProbeEnd::Unreachable("connect time-out".into())));
            } else if b.connected && waited >= answer_wait {
                let why = format!("it did not answer within {answer_wait} s");
                probes_over.push((bkey, ProbeEnd::Failed(why)));
            }
        }
        for bkey in idle_over {
            self.remove_conn(bkey);
        }
        for (bkey, end) in probes_over {
            self.end_probe(bkey, end, now);
        }
        for (bkey, b) in self.conns.iter() {
            if !matches!(b.state, Use::Busy) {
                continue;
            }
            let h = &self.hosts[b.host].spec;
            let up = conns
                .get(b.client)
                .and_then(|c| c.gw.as_ref())
                .map(|g| &g.upload);
            let (what, limit, since) = if !b.connected {
                ("connect", h.connect_timeout, b.started)
            } else if !b.write_shut && up.is_some_and(|u| !u.pending().is_empty()) {
                // Glint has request bytes the backend does not take.
                ("write", h.write_timeout, b.last_active)
            } else if b.write_shut || up.is_none_or(|u| u.all_sent()) {
                ("read", h.read_timeout, b.last_active)
            } else {
                // The rest of the body is still to come from the client,
                // whose own idle time-out applies.
                continue;
            };
            if now.saturating_sub(since) >= limit {
                expired.push((bkey, b.client, what));
            }
        }
        for (bkey, client, what) in expired {
            if let Some(b) = self.remove_conn(bkey) {
                let h = &mut self.hosts[b.host];
                log::error!(
                    "backend {} ({}): {what} time-out",
                    h.spec.label,
                    h.spec.addr
                );
                if what == "connect" {
                    h.disabled_until = now + h.spec.disable_time;
                }
            }
            if let Some(c) = conns.get_mut(client) {
                if let Some(gw) = c.gw.as_mut() {
                    gw.backend = None;
                }
                fail_client(c, 504, date);
                touched.push(client);
            }
        }
        let waited: Vec<usize> = self
            .waiting
            .iter()
            .copied()
            .filter(|&k| {
                conns
                    .get(k)
                    .and_then(|c| c.gw.as_ref())
                    .is_none_or(|g| now.saturating_sub(g.since) >= MAX_WAIT_SECS)
            })
            .collect();
        for k in waited {
            self.waiting.retain(|&w| w != k);
            if let Some(c) = conns.get_mut(k) {
                if let Some(gw) = c.gw.as_mut() {
                    gw.waiting = false;
                }
                log::warn!("a request waited {MAX_WAIT_SECS} s for a backend; answering 503");
                fail_client(c, 503, date);
                touched.push(k);
            }
        }
        // Backends that were down may be up again.
        if !self.waiting.is_empty() {
            self.retry_soon = true;
        }
        self.reap(now);
        touched
    }

    /// Takes the next waiting client that may now get a backend.
    pub fn next_waiting(&mut self) -> Option<usize> {
        self.waiting.pop_front()
    }

    /// Puts a client that still found no backend back at the head of the queue.
    pub fn requeue_front(&mut self, key: usize) {
        if let Some(pos) = self.waiting.iter().rposition(|&k| k == key) {
            self.waiting.remove(pos);
        }
        self.waiting.push_front(key);
    }

    /// Closes a backend connection whose client is gone.
    pub fn drop_backend(&mut self, bkey: usize) {
        self.remove_conn(bkey);
    }
}
