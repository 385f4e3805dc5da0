//! The event loop: one `mio::Poll`, the listeners, a slab of client
//! connections (each named by its slot and a generation), the backends'
//! sockets, and a tick once a second for time-outs and log flushing. This
//! file has the server's state and its life (start, signals, shutdown);
//! beside it, `event` (one turn of the loop: events, the wake list),
//! `accept` (taking in connections up to the limit), `listen` (listening
//! sockets) and `reload` (graceful restart).

/// Runs `$body` (which says what the connection waits for, a
/// [`crate::conn::Drive`]) with `$conn` (a connection by slot) and a
/// [`crate::conn::Ctx`] made of the server's disjoint fields; `None` when
/// the slot is empty. (Defined before the files that use it.)
macro_rules! with_conn {
    ($server:expr, $slot:expr, |$conn:ident, $cx:ident| $body:expr) => {{
        let s = &mut *$server;
        match s.conns.get_mut($slot) {
            Some($conn) => {
                let mut $cx = Ctx {
                    sv: &mut s.sv,
                    pool: &mut s.pool,
                    registry: s.poll.registry(),
                };
                let drive: Drive = $body;
                Some(drive)
            }
            None => None,
        }
    }};
}

mod accept;
mod event;
mod handover;
mod listen;
mod quic;
mod reload;
mod secure;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use mio::{Interest, Poll, Token, Waker};
use slab::Slab;

use crate::buf::Pool;
use crate::config::Config;
use crate::conn::Connection;
use crate::exchange::Services;
use crate::msg::ExchangeId;
use crate::signals;
use crate::stats::Stats;
use listen::{adopt_listener, bind_listener, describe, Listener};

pub use handover::{Handover, HandoverState, Upgrader};
pub use listen::LISTEN_BACKLOG;

/// Listener tokens start here; connection tokens are slab keys below it.
const LISTENER_BASE: usize = 1 << 30;
const WAKER: Token = Token(LISTENER_BASE - 1);
/// The socket the signal handlers write to.
const SIGNAL: Token = Token(LISTENER_BASE - 2);
/// mod_magnet's watch on its script files.
const SCRIPTS: Token = Token(LISTENER_BASE - 3);

/// Reads a new configuration for a graceful restart (SIGUSR1).
pub type Reloader = Box<dyn FnMut() -> Result<Config, String>>;

/// Stops a running server from another thread (tests, embedding).
#[derive(Clone)]
pub struct StopHandle {
    state: Arc<AtomicU8>,
    waker: Arc<Waker>,
}

const RUN: u8 = 0;
const GRACEFUL: u8 = 1;
const NOW: u8 = 2;

impl StopHandle {
    /// Stops accepting, finishes the responses in flight, then returns from `run`.
    pub fn graceful(&self) {
        self.state.fetch_max(GRACEFUL, Ordering::SeqCst);
        let _ = self.waker.wake();
    }
    /// Returns from `run` at once.
    pub fn now(&self) {
        self.state.store(NOW, Ordering::SeqCst);
        let _ = self.waker.wake();
    }
}

/// A bound server, ready to run.
pub struct Server {
    poll: Poll,
    listeners: Vec<Option<Listener>>,
    conns: Slab<Connection>,
    /// The generation of the next connection ([`ExchangeId::gen`]).
    next_gen: u64,
    /// While accepting is paused: when (`clock.mono_us`) the rotation's
    /// next step is due; 0 while not.
    rotate_at: u64,
    sv: Services,
    pool: Pool,
    max_connections: usize,
    /// A listener stopped at its accept batch with connections still waiting.
    accept_more: bool,
    /// Connections to drive next turn without an event (they stopped at
    /// their round limit with work left).
    wake: Vec<ExchangeId>,
    stop: Arc<AtomicU8>,
    waker: Arc<Waker>,
    /// Whether this server reacts to process signals (the binary), or only to its StopHandle.
    use_signals: bool,
    shutdown_deadline: Option<u64>,
    /// Reads the configuration again on SIGUSR1.
    reloader: Option<Reloader>,
    /// Read end (registered) and write end of the signal wake-up socket.
    signal_wake: Option<(mio::net::UnixStream, std::os::unix::net::UnixStream)>,
    /// The TLS configuration of the listeners with `ssl.engine`.
    tls: secure::Tls,
    /// What glint's ACME client looks after (`glint.acme.activate`), and
    /// its thread once `run` has started it.
    acme_spec: Option<crate::acme::Spec>,
    acme: Option<crate::acme::Running>,
    /// HTTP/3 endpoints beside the TLS listeners with `glint.h3`.
    quic: crate::conn::h3::Quic,
    /// A binary upgrade (SIGUSR2): starting one, handing over.
    upgrade: handover::Upgrade,
}

/// The configuration's listeners: those inherited (systemd's sockets, or
/// the old process's on an upgrade) taken up where they match, the others
/// bound; inherited ones the configuration does not name come last.
fn open_listeners(config: &Config, inherited: Vec<OwnedFd>) -> io::Result<Vec<Option<Listener>>> {
    let mut pool = Vec::new();
    for fd in inherited {
        pool.push(Some(adopt_listener(fd)?));
    }
    let mut listeners = Vec::new();
    for (i, l) in config.listeners.iter().enumerate() {
        let found = pool
            .iter_mut()
            .find(|p| p.as_ref().is_some_and(|p| p.is_at(&l.addr)))
            .and_then(Option::take);
        let lst = match found {
            Some(lst) => lst,
            None => bind_listener(l, &config.socket_settings(i)).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot listen on {}: {e}", l.spec))
            })?,
        };
        listeners.push(Some(lst));
    }
    listeners.extend(pool.into_iter().flatten().map(Some));
    Ok(listeners)
}

impl Server {
    /// Binds every listener of `config`. Errors name the address.
    pub fn bind(config: Config) -> io::Result<Server> {
        Server::bind_inherited(config, Vec::new())
    }

    /// Binds the listeners of `config`, using the listening sockets in
    /// `inherited` (systemd socket activation) where their bound address is
    /// the one configured; inherited sockets no listener names are served
    /// too, after the configured ones.
    pub fn bind_inherited(config: Config, inherited: Vec<OwnedFd>) -> io::Result<Server> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut listeners = open_listeners(&config, inherited)?;
        let mut ports = Vec::new();
        let mut bound_ips = Vec::new();
        for (i, lst) in listeners.iter_mut().flatten().enumerate() {
            poll.registry()
                .register(lst.source(), Token(LISTENER_BASE + i), Interest::READABLE)?;
            ports.push(lst.port());
            bound_ips.push(lst.bound_ip());
        }
        let cache_dirs = config.deflate_cache_dirs();
        let max_connections = config.global.limits.max_connections.max(1) as usize;
        let gateways = crate::upstream::Gateways::from_config(&config)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let auth = crate::exchange::AuthState::from_config(&config);
        // Certificates and keys are read now, before chroot and the switch
        // of user.
        let tls = secure::Tls::load(&config, crate::clock::unix_now())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let acme_spec = secure::acme_spec(&config)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // mod_webdav's databases, opened (and made) before chroot and the
        // switch of user, as certificates are.
        let dav_names = config.webdav_db_names();
        let webdav = crate::handler::webdav::Stores::open(dav_names.iter().map(String::as_str))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // mod_rrdtool's process, started now (lighttpd refuses to start
        // when it cannot run it).
        let mut rrd = crate::rrdtool::RrdTool::new(config.rrdtool_binary(), &config.rrdtool_dbs());
        if let Some(r) = rrd.as_mut() {
            r.start()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        let mut sv = Services::new(config, gateways);
        sv.rrd = rrd;
        sv.auth = auth;
        sv.webdav = webdav;
        sv.ports = ports;
        sv.bound_ips = bound_ips;
        sv.deflate.set_cache_dirs(&cache_dirs);
        sv.board.keep(sv.config.shows_connections());
        let mut server = Server {
            poll,
            listeners,
            conns: Slab::with_capacity(64),
            next_gen: 0,
            rotate_at: 0,
            sv,
            pool: Pool::default(),
            max_connections,
            accept_more: false,
            wake: Vec::new(),
            tls,
            stop: Arc::new(AtomicU8::new(RUN)),
            waker,
            use_signals: false,
            shutdown_deadline: None,
            reloader: None,
            signal_wake: None,
            acme_spec,
            acme: None,
            quic: crate::conn::h3::Quic::bind(Vec::new(), 1)?,
            upgrade: handover::Upgrade::default(),
        };
        server.open_quic()?;
        server.watch_scripts();
        Ok(server)
    }

    /// With mod_magnet loaded, its script files are watched from the loop
    /// (a change is seen before the next request runs a script), so that a
    /// run needs no `stat` of its file.
    pub(super) fn watch_scripts(&mut self) {
        if !self
            .sv
            .config
            .global
            .modules
            .iter()
            .any(|m| m == "mod_magnet")
        {
            return;
        }
        if let Some(fd) = self.sv.magnet.watcher() {
            let r = self.poll.registry().register(
                &mut mio::unix::SourceFd(&fd),
                SCRIPTS,
                Interest::READABLE,
            );
            if let Err(e) = r {
                log::warn!("mod_magnet: script changes not watched ({e}); checked on every run");
                self.sv.magnet.forget_watcher();
            }
        }
    }

    /// The bound addresses, as `ip:port` or a unix socket path, in listener order.
    pub fn local_addrs(&self) -> Vec<String> {
        self.listeners.iter().flatten().map(describe).collect()
    }

    /// A handle that stops `run` from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            state: Arc::clone(&self.stop),
            waker: Arc::clone(&self.waker),
        }
    }

    /// Makes `run` react to SIGINT, SIGTERM, SIGHUP, SIGUSR1 (the handlers
    /// must be installed with [`signals::install`]).
    pub fn with_signals(mut self) -> Self {
        self.use_signals = true;
        if let Err(e) = self.signal_wake_up() {
            log::warn!("signal wake-up socket: {e}; signals may wait for the next tick");
        }
        self
    }

    /// A socket pair the signal handlers write to, registered with this
    /// process's poll (each worker makes its own).
    fn signal_wake_up(&mut self) -> io::Result<()> {
        let (rx, tx) = std::os::unix::net::UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        let mut rx = mio::net::UnixStream::from_std(rx);
        self.poll
            .registry()
            .register(&mut rx, SIGNAL, Interest::READABLE)?;
        signals::set_wake_fd(tx.as_raw_fd());
        self.signal_wake = Some((rx, tx));
        Ok(())
    }

    /// Makes SIGUSR1 read a new configuration with `reloader` and apply it
    /// with [`Server::reload`].
    pub fn with_reloader(mut self, reloader: Reloader) -> Self {
        self.reloader = Some(reloader);
        self
    }

    /// Reads the configuration again and applies it; a configuration that
    /// does not load or whose listeners cannot be opened is logged and the
    /// running one stays. Returns whether the new one is in force.
    /// connections are refused rather than left in a backlog nobody reads).
    pub fn close_listeners(&mut self) {
        for l in self.listeners.iter_mut() {
            if let Some(lst) = l.as_mut() {
                let _ = self.poll.registry().deregister(lst.source());
            }
            *l = None;
        }
    }

    /// In a worker process just forked from the supervisor: a poll instance
    /// of its own (an epoll set is shared across `fork`), the listeners
    /// registered with it, and unix socket paths left to the supervisor.
    pub fn prepare_worker(&mut self) -> io::Result<()> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        for (i, lst) in self.listeners.iter_mut().enumerate() {
            if let Some(l) = lst {
                if let Listener::Unix(_, _, owned) = l {
                    *owned = false;
                }
                // The epoll set is the supervisor's, which never waits on it.
                let _ = self.poll.registry().deregister(l.source());
                poll.registry().register(
                    l.source(),
                    Token(LISTENER_BASE + i),
                    Interest::READABLE,
                )?;
            }
        }
        self.poll = poll;
        self.waker = waker;
        self.upgrade.is_worker = true;
        // Each worker would keep its own backend connections.
        self.sv.upstream.set_workers();
        // The supervisor runs the `bin-path` backends for all workers.
        self.sv.upstream.leave_backends_to_supervisor();
        if self.use_signals {
            self.signal_wake_up()?;
        }
        // A watcher of its own (the parent's is shared across fork).
        self.sv.magnet.forget_watcher();
        self.watch_scripts();
        Ok(())
    }

    /// The supervisor of worker processes, before it forks the first one:
    /// starts the `bin-path` backends, once for all workers.
    pub fn start_backends(&mut self) -> io::Result<()> {
        self.sv.upstream.spawn_all().map_err(io::Error::other)
    }

    /// The supervisor, often: restarts `bin-path` backends that died and
    /// stops retired ones once `hold_retired` is false (no worker of an
    /// older configuration left to use them).
    pub fn tend_backends(&mut self, hold_retired: bool) {
        self.sv.clock.update();
        self.sv.upstream.hold_retired(hold_retired);
        self.sv.upstream.reap(self.sv.clock.mono_secs);
    }

    /// The supervisor, once its workers are gone: stops the `bin-path` backends.
    pub fn stop_backends(&mut self) {
        self.sv.upstream.shutdown();
    }

    /// Opens the access logs named by the global settings now, so that a
    /// log that cannot be opened is an error at start.
    pub fn open_logs(&mut self) -> io::Result<()> {
        if let Some(name) = self.sv.config.global.accesslog.filename.clone() {
            self.sv
                .logs
                .open(&name)
                .map_err(|e| io::Error::new(e.kind(), format!("accesslog.filename {name}: {e}")))?;
        }
        Ok(())
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.sv.stats_now()
    }

    /// Runs the loop until stopped.
    pub fn run(&mut self) -> io::Result<()> {
        self.sv.upstream.spawn_all().map_err(io::Error::other)?;
        // A worker of `server.max-worker` has its own poll and waker by now.
        self.sv.deflate.set_waker(Arc::clone(&self.waker));
        // As lighttpd, each deflate.cache-dir is made once privileges are
        // dropped (so that the server's user owns it), and glint does not
        // run without it.
        for d in self.sv.config.deflate_cache_dirs() {
            crate::compress::cache::prepare_cache_dir(&d).map_err(io::Error::other)?;
        }
        // Spawned FastCGI backends are asked at once how many connections
        // they serve (keep-conn); the others when first needed.
        self.sv
            .upstream
            .start_probes(self.sv.clock.mono_secs, self.poll.registry());
        // The ACME thread of this process (a worker's own, after the fork):
        // it makes the storage directory as the user glint serves as.
        self.start_acme();
        let result = self.run_loop();
        self.acme = None;
        self.sv.upstream.shutdown();
        result
    }

    /// Starts (or restarts, after a reload changed it) the ACME thread.
    fn start_acme(&mut self) {
        self.acme = None;
        if let Some(spec) = self.acme_spec.clone() {
            match crate::acme::start(spec) {
                Ok(r) => self.acme = Some(r),
                Err(e) => log::error!("acme: cannot start its thread: {e}"),
            }
        }
    }

    fn drain_signal_wake(&mut self) {
        if let Some((rx, _)) = self.signal_wake.as_mut() {
            let mut buf = [0u8; 64];
            while matches!(io::Read::read(rx, &mut buf), Ok(n) if n > 0) {}
        }
    }

    /// Reads the signal flags (when this server uses them): stop requests
    /// join the StopHandle's state, SIGHUP reopens the logs, SIGUSR1 reloads.
    fn apply_signals(&mut self) {
        if !self.use_signals {
            return;
        }
        let s = signals::take();
        if s.now {
            self.stop.store(NOW, Ordering::SeqCst);
        } else if s.graceful {
            self.stop.fetch_max(GRACEFUL, Ordering::SeqCst);
        }
        if s.reopen {
            log::info!("reopening log files");
            self.sv.logs.reopen();
            if let Err(e) = crate::errorlog::reopen() {
                log::error!("cannot reopen the error log: {e}");
            }
        }
        if s.reload && self.stop.load(Ordering::SeqCst) == RUN {
            self.reload_from_source();
        }
        if s.upgrade {
            self.on_upgrade_signal();
        }
    }

    /// Applies stop requests; returns true when `run` should return.
    fn check_stop(&mut self) -> bool {
        self.apply_signals();
        self.watch_upgrade();
        self.close_settled_idle();
        let state = self.stop.load(Ordering::SeqCst);
        match state {
            NOW => true,
            GRACEFUL => {
                if !self.sv.shutting_down {
                    self.begin_shutdown();
                }
                let past_deadline = self
                    .shutdown_deadline
                    .is_some_and(|d| self.sv.clock.mono_secs >= d);
                if past_deadline && !self.conns.is_empty() {
                    log::warn!(
                        "graceful shutdown time-out: dropping {} connections",
                        self.conns.len()
                    );
                }
                (self.conns.is_empty() && self.quic.is_empty()) || past_deadline
            }
            _ => false,
        }
    }

    /// Stops accepting and closes idle connections; the others close after
    /// their current response.
    fn begin_shutdown(&mut self) {
        self.sv.shutting_down = true;
        for l in self.listeners.iter_mut() {
            *l = None;
        }
        let timeout = self.sv.config.global.process.graceful_shutdown_timeout as u64;
        self.shutdown_deadline = Some(self.sv.clock.mono_secs + timeout.max(1));
        // A handover closes idle connections once they settle instead.
        let idle: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_idle_kept() && !self.upgrade.handing_over)
            .map(|(k, _)| k)
            .collect();
        for k in idle {
            self.conns.remove(k);
            self.sv.board.close(k);
        }
        // HTTP/2 connections say GOAWAY and finish the streams they have.
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for k in keys {
            let registry = self.poll.registry();
            if let Some(conn) = self.conns.get_mut(k) {
                let mut cx = crate::conn::Ctx {
                    sv: &mut self.sv,
                    pool: &mut self.pool,
                    registry,
                };
                let d = conn.on_shutdown(&mut cx);
                self.after_drive(k, Some(d));
            }
        }
        {
            let mut cx = crate::conn::Ctx {
                sv: &mut self.sv,
                pool: &mut self.pool,
                registry: self.poll.registry(),
            };
            self.quic.shutdown(&mut cx);
        }
        // Kept backend connections too; none is kept from here on.
        self.sv.upstream.close_all_idle();
        log::info!(
            "graceful shutdown: finishing {} connections",
            self.conns.len()
        );
    }
}
