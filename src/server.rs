//! The event loop: one `mio::Poll`, the listeners, a slab of connections,
//! and a tick once a second for time-outs and log flushing.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Interest, Poll, Token, Waker};
use nix::errno::Errno;
use nix::sys::socket::{
    bind, getsockname, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag,
    SockType, SockaddrStorage,
};
use slab::Slab;

use crate::accesslog::AccessLogs;
use crate::clock::Clock;
use crate::config::{Config, Listen, ListenAddr};
use crate::connection::{Connection, InBuf, Phase, Stream};
use crate::gateway::BACKEND_BASE;
use crate::signals;

/// Listener tokens start here; connection tokens are slab keys below it.
const LISTENER_BASE: usize = 1 << 30;
const WAKER: Token = Token(LISTENER_BASE - 1);
/// The socket the signal handlers write to.
const SIGNAL: Token = Token(LISTENER_BASE - 2);

/// Most connections accepted (and answered) per listener per loop turn: a
/// fast client must not keep the loop from signals, time-outs and others.
const ACCEPT_BATCH: usize = 64;

/// Most rounds of an upload (the client fills the body window, the backend
/// drains it) per event: 16 windows of 64 KiB, 1 MiB, before others get a turn.
const PUMP_ROUNDS: usize = 16;

/// `listen(2)` backlog, lighttpd's `server.listen-backlog` default: room for
/// bursts while the loop is busy or at `server.max-connections`
/// (`Settings::listen_backlog` carries the configured one).
pub const LISTEN_BACKLOG: i32 = 1024;

/// Pooled buffers kept for reuse; beyond this, freed buffers go back to the allocator.
const POOL_MAX: usize = 128;
/// Output buffers that grew past this (multipart answers, long pipelines) are not pooled.
const POOL_MAX_OUT_CAPACITY: usize = 64 * 1024;

/// Buffers returned by idle connections.
#[derive(Default)]
pub struct Pool {
    ins: Vec<InBuf>,
    outs: Vec<Vec<u8>>,
}

impl Pool {
    pub fn take_in(&mut self) -> InBuf {
        self.ins.pop().unwrap_or_default()
    }
    pub fn put_in(&mut self, mut b: InBuf) {
        // A closed connection may leave half a request behind: never hand it on.
        b.clear();
        if self.ins.len() < POOL_MAX {
            self.ins.push(b);
        }
    }
    pub fn take_out(&mut self) -> Vec<u8> {
        self.outs.pop().unwrap_or_else(|| Vec::with_capacity(4096))
    }
    pub fn put_out(&mut self, mut b: Vec<u8>) {
        if self.outs.len() < POOL_MAX && b.capacity() <= POOL_MAX_OUT_CAPACITY {
            b.clear();
            self.outs.push(b);
        }
    }
}

/// Counters for the status page and the closing log line.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub requests: u64,
    pub bytes_out: u64,
    /// Connections accepted since start.
    pub connections: u64,
    /// Connections open now.
    pub active: u64,
    /// Backend connections opened for gateway requests, and gateway
    /// requests sent on a kept FastCGI connection instead, since start.
    pub backend_opened: u64,
    pub backend_reused: u64,
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
    /// The lowercased Host.
    pub host: String,
    /// The URL path of a directory's index file.
    pub index_path: String,
}

/// Everything a connection may touch besides itself.
pub struct Shared {
    pub config: Config,
    pub clock: Clock,
    pub logs: AccessLogs,
    pub pool: Pool,
    pub scratch: Scratch,
    pub regexes: crate::handler::rewrite::Regexes,
    /// SCGI and FastCGI routes, backends and backend connections.
    pub gateways: crate::gateway::Gateways,
    /// Files opened in the last second.
    pub files: crate::handler::static_file::FileCache,
    pub stats: Stats,
    /// Port of each listener (0 for unix sockets), for the access log.
    pub ports: Vec<u16>,
    /// Per listener: its one bound address, if it has one.
    pub bound_ips: Vec<Option<std::net::IpAddr>>,
    /// Stop accepting and close connections after their current response.
    pub shutting_down: bool,
}

/// A listening socket.
enum Listener {
    Tcp(mio::net::TcpListener),
    /// A unix socket; glint removes the path when it closes the socket only
    /// if it created it (`true`), not when it was inherited or a worker's copy.
    Unix(mio::net::UnixListener, PathBuf, bool),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path, true) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Listener {
    fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Listener::Tcp(t) => t,
            Listener::Unix(u, _, _) => u,
        }
    }

    /// The address it is bound to, when that is one address (not 0.0.0.0 or
    /// ::): the SERVER_ADDR of its connections without asking the socket.
    fn bound_ip(&self) -> Option<std::net::IpAddr> {
        match self {
            Listener::Tcp(t) => t
                .local_addr()
                .ok()
                .map(|a| a.ip())
                .filter(|ip| !ip.is_unspecified()),
            Listener::Unix(..) => None,
        }
    }

    fn port(&self) -> u16 {
        match self {
            Listener::Tcp(t) => t.local_addr().map(|a| a.port()).unwrap_or(0),
            Listener::Unix(..) => 0,
        }
    }

    /// Whether this socket is the one `addr` names (its bound address, or its path).
    fn is_at(&self, addr: &ListenAddr) -> bool {
        match (self, addr) {
            (Listener::Tcp(t), ListenAddr::Tcp { host, port }) => {
                match (t.local_addr(), resolve(host, *port)) {
                    (Ok(bound), Ok(want)) => bound == want,
                    _ => false,
                }
            }
            (Listener::Unix(_, p, _), ListenAddr::Unix(want)) => p == want,
            _ => false,
        }
    }
}

/// Adopts a listening socket handed down by the parent process (systemd
/// socket activation): TCP or unix, as `getsockname` tells.
fn adopt_listener(fd: OwnedFd) -> io::Result<Listener> {
    let addr: SockaddrStorage = getsockname(fd.as_raw_fd())?;
    if let Some(u) = addr.as_unix_addr() {
        let path = u.path().map(PathBuf::from).unwrap_or_default();
        let std_listener = std::os::unix::net::UnixListener::from(fd);
        std_listener.set_nonblocking(true)?;
        return Ok(Listener::Unix(
            mio::net::UnixListener::from_std(std_listener),
            path,
            false,
        ));
    }
    if addr.as_sockaddr_in().is_some() || addr.as_sockaddr_in6().is_some() {
        let std_listener = std::net::TcpListener::from(fd);
        std_listener.set_nonblocking(true)?;
        return Ok(Listener::Tcp(mio::net::TcpListener::from_std(std_listener)));
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "an inherited descriptor is not a TCP or unix socket",
    ))
}

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
    sh: Shared,
    max_connections: usize,
    /// Accepting paused: at `server.max-connections`, or out of file descriptors.
    accept_paused: bool,
    /// A listener stopped at [`ACCEPT_BATCH`] with connections still waiting.
    accept_more: bool,
    /// Gateway requests that stopped at [`PUMP_ROUNDS`] with body bytes
    /// still moving: no new edge will come for them, so go on next turn.
    pump_more: Vec<usize>,
    stop: Arc<AtomicU8>,
    waker: Arc<Waker>,
    /// Whether this server reacts to process signals (the binary), or only to its StopHandle.
    use_signals: bool,
    shutdown_deadline: Option<u64>,
    /// Reads the configuration again on SIGUSR1.
    reloader: Option<Reloader>,
    /// Read end (registered) and write end of the signal wake-up socket.
    signal_wake: Option<(mio::net::UnixStream, std::os::unix::net::UnixStream)>,
}

/// Binds one listener as the configuration names it; `s` holds its
/// socket options (`Config::socket_settings`).
fn bind_listener(l: &Listen, s: &crate::config::Settings) -> io::Result<Listener> {
    match &l.addr {
        ListenAddr::Unix(path) => {
            if std::fs::symlink_metadata(path).is_ok() {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("{} is in use by another process", path.display()),
                    ));
                }
                // A stale socket left by a process that is gone.
                std::fs::remove_file(path)?;
            }
            let lst = mio::net::UnixListener::bind(path)?;
            if let Some(mode) = s.socket_perms {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
            }
            Ok(Listener::Unix(lst, path.clone(), true))
        }
        ListenAddr::Tcp { host, port } => {
            // `server.use-ipv6`: a listener without an address takes IPv6's.
            let host = if host.is_empty() && s.use_ipv6 {
                "::"
            } else {
                host.as_str()
            };
            let addr = resolve(host, *port)?;
            let family = if addr.is_ipv6() {
                AddressFamily::Inet6
            } else {
                AddressFamily::Inet
            };
            let fd: OwnedFd = socket(
                family,
                SockType::Stream,
                SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
                None,
            )?;
            setsockopt(&fd, sockopt::ReuseAddr, &true)?;
            if addr.is_ipv6() {
                setsockopt(&fd, sockopt::Ipv6V6Only, &s.set_v6only)?;
            }
            bind(fd.as_raw_fd(), &SockaddrStorage::from(addr))
                .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("{addr}: {e}")))?;
            let backlog = i32::try_from(s.listen_backlog).unwrap_or(LISTEN_BACKLOG);
            listen(&fd, Backlog::new(backlog).unwrap_or(Backlog::MAXCONN))?;
            set_defer_accept(&fd);
            let std_listener = std::net::TcpListener::from(fd);
            Ok(Listener::Tcp(mio::net::TcpListener::from_std(std_listener)))
        }
    }
}

/// Seconds the kernel holds a new connection until its first bytes arrive
/// (TCP_DEFER_ACCEPT): glint then accepts a connection with its request
/// already readable, and idle connects never take a slot.
const DEFER_ACCEPT_SECS: i32 = 2;

fn set_defer_accept(fd: &OwnedFd) {
    use nix::libc;
    let secs: libc::c_int = DEFER_ACCEPT_SECS;
    // SAFETY: a valid socket, a pointer to a c_int and its size, as
    // setsockopt(2) requires; nix has no wrapper for this Linux option.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&secs as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        log::debug!("TCP_DEFER_ACCEPT: {}", io::Error::last_os_error());
    }
}

/// A listener's address, as `ip:port` or a unix socket path.
fn describe(l: &Listener) -> String {
    match l {
        Listener::Tcp(t) => t
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|e| format!("?({e})")),
        Listener::Unix(_, p, _) => p.display().to_string(),
    }
}

/// `host` as written in the configuration: empty for all IPv4 addresses, an
/// IP literal (IPv6 with or without brackets), or a name to look up.
fn resolve(host: &str, port: u16) -> io::Result<SocketAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.is_empty() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(ip) = h.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (h, port).to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host}: no address for this name"),
        )
    })
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
        let mut ports = Vec::new();
        let mut bound_ips = Vec::new();
        for (i, lst) in listeners.iter_mut().flatten().enumerate() {
            poll.registry()
                .register(lst.source(), Token(LISTENER_BASE + i), Interest::READABLE)?;
            ports.push(lst.port());
            bound_ips.push(lst.bound_ip());
        }
        let max_connections = config.global.max_connections.max(1) as usize;
        let gateways = crate::gateway::Gateways::from_config(&config)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(Server {
            poll,
            listeners,
            conns: Slab::with_capacity(64),
            sh: Shared {
                config,
                clock: Clock::new(),
                logs: AccessLogs::default(),
                pool: Pool::default(),
                scratch: Scratch::default(),
                regexes: Default::default(),
                gateways,
                files: Default::default(),
                stats: Stats::default(),
                ports,
                bound_ips,
                shutting_down: false,
            },
            max_connections,
            accept_paused: false,
            accept_more: false,
            pump_more: Vec::new(),
            stop: Arc::new(AtomicU8::new(RUN)),
            waker,
            use_signals: false,
            shutdown_deadline: None,
            reloader: None,
            signal_wake: None,
        })
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
    pub fn reload_from_source(&mut self) -> bool {
        let Some(reloader) = self.reloader.as_mut() else {
            log::warn!("graceful restart requested, but there is no configuration file to read");
            return false;
        };
        log::info!("graceful restart: reading the configuration again");
        let config = match reloader() {
            Ok(c) => c,
            Err(e) => {
                log::error!("graceful restart: {e}; keeping the running configuration");
                return false;
            }
        };
        match self.reload(config) {
            Ok(()) => {
                log::info!("graceful restart: new configuration in force");
                true
            }
            Err(e) => {
                log::error!("graceful restart: {e}; keeping the running configuration");
                false
            }
        }
    }

    /// Switches to `config` without dropping a connection: listening
    /// sockets whose address is unchanged are kept (same descriptor), new
    /// ones are opened, removed ones closed. Responses under way finish as
    /// they started; the next request on any connection uses `config`.
    /// On error (a new listener cannot be opened) nothing changes.
    pub fn reload(&mut self, config: Config) -> io::Result<()> {
        if self.sh.shutting_down {
            return Err(io::Error::other("shutting down"));
        }
        let old_n = self.sh.config.listeners.len();
        // Which old listener each new one reuses, or the socket bound for it.
        let mut plan: Vec<Result<usize, Listener>> = Vec::with_capacity(config.listeners.len());
        let mut used = vec![false; self.listeners.len()];
        for (li, l) in config.listeners.iter().enumerate() {
            // The same configured address, or a socket bound there
            // (inherited sockets no listener named included).
            let same = (0..self.listeners.len()).find(|&i| {
                !used[i]
                    && self.listeners[i].as_ref().is_some_and(|x| {
                        self.sh
                            .config
                            .listeners
                            .get(i)
                            .is_some_and(|o| o.addr == l.addr)
                            || x.is_at(&l.addr)
                    })
            });
            match same {
                Some(i) => {
                    used[i] = true;
                    plan.push(Ok(i));
                }
                None => {
                    let lst = bind_listener(l, &config.socket_settings(li)).map_err(|e| {
                        io::Error::new(e.kind(), format!("cannot listen on {}: {e}", l.spec))
                    })?;
                    plan.push(Err(lst));
                }
            }
        }
        // The gateways last: starting a new backend is the last step that may fail.
        let route_map = self
            .sh
            .gateways
            .reconfigure(&config, self.sh.clock.mono_secs)
            .map_err(io::Error::other)?;
        // Inherited sockets no listener names stay, after the configured ones.
        let extras: Vec<usize> = (old_n..self.listeners.len())
            .filter(|&i| !used[i])
            .collect();
        let mut old = std::mem::take(&mut self.listeners);
        for lst in old.iter_mut().flatten() {
            let _ = self.poll.registry().deregister(lst.source());
        }
        let mut remap = vec![usize::MAX; old.len()];
        let mut next = Vec::with_capacity(plan.len() + extras.len());
        for p in plan {
            match p {
                Ok(i) => {
                    remap[i] = next.len();
                    next.push(old[i].take());
                }
                Err(lst) => next.push(Some(lst)),
            }
        }
        for i in extras {
            remap[i] = next.len();
            next.push(old[i].take());
        }
        for l in old.iter().flatten() {
            log::info!("graceful restart: closing listener {}", describe(l));
        }
        drop(old);
        let mut ports = Vec::with_capacity(next.len());
        let mut bound_ips = Vec::with_capacity(next.len());
        for (i, lst) in next.iter_mut().enumerate() {
            match lst {
                Some(l) => {
                    // Past the point of no return: a failure is logged, not undone.
                    if let Err(e) = self.poll.registry().register(
                        l.source(),
                        Token(LISTENER_BASE + i),
                        Interest::READABLE,
                    ) {
                        log::error!("graceful restart: listener {}: {e}", describe(l));
                    }
                    ports.push(l.port());
                    bound_ips.push(l.bound_ip());
                }
                None => {
                    ports.push(0);
                    bound_ips.push(None);
                }
            }
        }
        for (_, conn) in self.conns.iter_mut() {
            conn.listener = remap.get(conn.listener).copied().unwrap_or(usize::MAX);
            // Gateway requests follow their route into the new configuration;
            // one whose route is gone gets 503 when it next needs a backend.
            if let Some(gw) = conn.gw.as_mut() {
                gw.route = route_map
                    .get(gw.route)
                    .copied()
                    .flatten()
                    .unwrap_or(usize::MAX);
            }
        }
        self.listeners = next;
        self.sh.ports = ports;
        self.sh.bound_ips = bound_ips;
        self.max_connections = config.global.max_connections.max(1) as usize;
        self.sh.config = config;
        if let Err(e) = self.open_logs() {
            log::error!("graceful restart: {e}");
        }
        // No accepting here: a supervisor reloads too, and must not. A
        // listener with connections waiting is reported ready when it is
        // registered again.
        Ok(())
    }

    /// Closes the listening sockets (a supervisor that is stopping: new
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
        // Each worker would keep its own backend connections.
        self.sh.gateways.set_workers();
        // The supervisor runs the `bin-path` backends for all workers.
        self.sh.gateways.leave_backends_to_supervisor();
        if self.use_signals {
            self.signal_wake_up()?;
        }
        Ok(())
    }

    /// The supervisor of worker processes, before it forks the first one:
    /// starts the `bin-path` backends, once for all workers.
    pub fn start_backends(&mut self) -> io::Result<()> {
        self.sh.gateways.spawn_all().map_err(io::Error::other)
    }

    /// The supervisor, often: restarts `bin-path` backends that died and
    /// stops retired ones once `hold_retired` is false (no worker of an
    /// older configuration left to use them).
    pub fn tend_backends(&mut self, hold_retired: bool) {
        self.sh.clock.update();
        self.sh.gateways.hold_retired(hold_retired);
        self.sh.gateways.reap(self.sh.clock.mono_secs);
    }

    /// The supervisor, once its workers are gone: stops the `bin-path` backends.
    pub fn stop_backends(&mut self) {
        self.sh.gateways.shutdown();
    }

    /// Opens the access logs named by the global settings now, so that a
    /// log that cannot be opened is an error at start.
    pub fn open_logs(&mut self) -> io::Result<()> {
        if let Some(name) = self.sh.config.global.accesslog_filename.clone() {
            self.sh
                .logs
                .open(&name)
                .map_err(|e| io::Error::new(e.kind(), format!("accesslog.filename {name}: {e}")))?;
        }
        Ok(())
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.sh.stats
    }

    /// Runs the loop until stopped.
    pub fn run(&mut self) -> io::Result<()> {
        self.sh.gateways.spawn_all().map_err(io::Error::other)?;
        // Spawned FastCGI backends are asked at once how many connections
        // they serve (keep-conn); the others when first needed.
        self.sh
            .gateways
            .start_probes(self.sh.clock.mono_secs, self.poll.registry());
        let result = self.run_loop();
        self.sh.gateways.shutdown();
        result
    }

    fn run_loop(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let to_next_second = 1_000_000 - self.sh.clock.mono_us % 1_000_000;
            // A backend said "busy": look again in 10 ms rather than at the next tick.
            let wait = if self.accept_more || !self.pump_more.is_empty() {
                Duration::ZERO
            } else if self.sh.gateways.retry_soon {
                Duration::from_millis(10)
            } else {
                Duration::from_micros(to_next_second + 1)
            };
            match self.poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => events.clear(),
                Err(e) => return Err(e),
            }
            let new_second = self.sh.clock.update();
            self.sh.stats.active = self.conns.len() as u64;
            // Before the events: a request that arrived after a SIGHUP or
            // SIGUSR1 is logged to the new file and served by the new
            // configuration.
            self.apply_signals();
            let mut closed_any = false;
            self.accept_backlog();
            for ev in events.iter() {
                let t = ev.token().0;
                if t >= LISTENER_BASE {
                    self.accept_all(t - LISTENER_BASE);
                } else if ev.token() == SIGNAL {
                    self.drain_signal_wake();
                } else if t == WAKER.0 {
                } else if t >= BACKEND_BASE {
                    closed_any |= self.backend_event(t - BACKEND_BASE, ev);
                } else if let Some(conn) = self.conns.get_mut(t) {
                    conn.on_event(ev);
                    conn.drive(&mut self.sh);
                    closed_any |= self.after_drive(t);
                }
            }
            for key in std::mem::take(&mut self.pump_more) {
                closed_any |= self.after_drive(key);
            }
            if new_second {
                closed_any |= self.tick();
            }
            if self.sh.gateways.retry_soon || self.sh.gateways.freed > 0 {
                closed_any |= self.pump_waiting();
            }
            if (closed_any || new_second) && self.accept_paused {
                self.resume_accepting();
            }
            if self.check_stop() {
                break;
            }
        }
        self.sh.logs.flush();
        Ok(())
    }

    /// After a client was driven: hand a complete gateway request to a
    /// backend, resume a paused backend, or drop a closed connection.
    /// Returns true when the connection was removed.
    fn after_drive(&mut self, key: usize) -> bool {
        let registry = self.poll.registry();
        let sh = &mut self.sh;
        let Some(conn) = self.conns.get_mut(key) else {
            return false;
        };
        // Dispatching may answer at once (503), and the next pipelined request
        // may be another gateway request; an upload moves in rounds (the
        // client fills the window, the backend drains it): loop until the
        // connection rests, or a bounded number of rounds for fairness.
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > PUMP_ROUNDS {
                self.pump_more.push(key);
                break;
            }
            if conn.wants_backend() {
                sh.gateways
                    .dispatch(key, conn, sh.clock.mono_secs, registry, &sh.clock.http_date);
                conn.drive(sh);
            } else if conn.phase == Phase::Gateway {
                let before = conn
                    .gw
                    .as_ref()
                    .map(|g| (g.upload.received, g.upload.written));
                sh.gateways
                    .pump(conn, sh.clock.mono_secs, &sh.clock.http_date, registry);
                conn.drive(sh);
                let after = conn
                    .gw
                    .as_ref()
                    .map(|g| (g.upload.received, g.upload.written));
                if before == after || after.is_none() {
                    break;
                }
            } else {
                break;
            }
        }
        if conn.phase == Phase::Closed {
            sh.gateways.client_gone(key, conn);
            self.conns.remove(key);
            return true;
        }
        // Writability is watched only once a write has blocked: a socket
        // registered for it reports "writable" at once, one more turn of the
        // loop for nothing on every connection that never fills its buffer.
        let want_writes = conn.waits_to_write();
        let watch = if !conn.registered {
            Some(registry.register(&mut conn.stream, Token(key), interest(want_writes)))
        } else if want_writes && !conn.watches_writes {
            Some(registry.reregister(&mut conn.stream, Token(key), interest(true)))
        } else {
            None
        };
        if let Some(result) = watch {
            if let Err(e) = result {
                log::error!("cannot register a connection: {e}");
                sh.gateways.client_gone(key, conn);
                self.conns.remove(key);
                return true;
            }
            conn.registered = true;
            conn.watches_writes |= want_writes;
        }
        false
    }

    /// Readiness of a backend connection: progress it, then its client.
    fn backend_event(&mut self, bkey: usize, ev: &mio::event::Event) -> bool {
        let now = self.sh.clock.mono_secs;
        let Some(client) = self.sh.gateways.on_event(bkey, ev, now) else {
            return false;
        };
        let registry = self.poll.registry();
        let sh = &mut self.sh;
        // The client must still be the one this backend works for: its slot
        // may have been given to a new connection since.
        let Some(conn) = self
            .conns
            .get_mut(client)
            .filter(|c| c.gw.as_ref().is_some_and(|g| g.backend == Some(bkey)))
        else {
            sh.gateways.drop_backend(bkey);
            return false;
        };
        sh.gateways.drive(
            bkey,
            conn,
            sh.clock.mono_secs,
            &sh.clock.http_date,
            registry,
        );
        conn.drive(sh);
        self.after_drive(client)
    }

    /// Gives freed backend slots to waiting requests, oldest first.
    fn pump_waiting(&mut self) -> bool {
        self.sh.gateways.retry_soon = false;
        self.sh.gateways.freed = 0;
        let mut closed = false;
        for _ in 0..self.sh.gateways.waiting.len() {
            let Some(key) = self.sh.gateways.next_waiting() else {
                break;
            };
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            if let Some(gw) = conn.gw.as_mut() {
                gw.waiting = false;
            }
            closed |= self.after_drive(key);
            let requeued = self
                .conns
                .get(key)
                .and_then(|c| c.gw.as_ref())
                .is_some_and(|g| g.waiting);
            if requeued {
                // Still no room: keep its place at the head of the queue.
                self.sh.gateways.requeue_front(key);
                break;
            }
        }
        closed
    }

    /// Accepts until the listener has nothing more, the connection limit is
    /// reached, or file descriptors run out.
    fn accept_all(&mut self, i: usize) {
        if self.accept_paused || self.sh.shutting_down {
            return;
        }
        for _ in 0..ACCEPT_BATCH {
            if self.conns.len() >= self.max_connections {
                self.accept_paused = true;
                return;
            }
            if self.use_signals && signals::pending() {
                break;
            }
            let Some(Some(lst)) = self.listeners.get(i) else {
                return;
            };
            let accepted = match lst {
                Listener::Tcp(t) => t.accept().map(|(s, a)| (Stream::Tcp(s), Some(a))),
                Listener::Unix(u, _, _) => u.accept().map(|(s, _)| (Stream::Unix(s), None)),
            };
            match accepted {
                Ok((stream, peer)) => {
                    self.sh.stats.connections += 1;
                    let key = self.conns.insert(Connection::new(
                        stream,
                        i,
                        peer,
                        self.sh.clock.mono_secs,
                    ));
                    // TCP_DEFER_ACCEPT means the request is usually here already:
                    // answer it now, and register with epoll only if the
                    // connection has to wait (a one-shot request never does).
                    if let Some(conn) = self.conns.get_mut(key) {
                        conn.drive(&mut self.sh);
                    }
                    self.after_drive(key);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => match e.raw_os_error().map(Errno::from_raw) {
                    Some(Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM) => {
                        // Out of descriptors or memory: leave the rest in the backlog
                        // and retry when a connection closes or at the next tick.
                        log::warn!(
                            "accept: {e}; pausing with {} connections open",
                            self.conns.len()
                        );
                        self.accept_paused = true;
                        // Cached open files hold descriptors too: give them back.
                        self.sh.files.clear();
                        return;
                    }
                    Some(Errno::ECONNABORTED | Errno::EINTR | Errno::EPROTO) => continue,
                    _ => {
                        log::error!("accept: {e}");
                        return;
                    }
                },
            }
        }
        // Stopped before the backlog was empty: no new edge will announce
        // what is left, so look again on the next turn.
        self.accept_more = true;
    }

    /// Accepts again on every listener that stopped at [`ACCEPT_BATCH`].
    fn accept_backlog(&mut self) {
        if std::mem::take(&mut self.accept_more) {
            for i in 0..self.listeners.len() {
                self.accept_all(i);
            }
        }
    }

    fn resume_accepting(&mut self) {
        if self.conns.len() < self.max_connections {
            self.accept_paused = false;
            for i in 0..self.listeners.len() {
                self.accept_all(i);
            }
        }
    }

    /// Once a second: time-outs, log flushing. Returns true when a connection closed.
    fn tick(&mut self) -> bool {
        let now = self.sh.clock.mono_secs;
        let touched = self
            .sh
            .gateways
            .on_tick(now, &mut self.conns, &self.sh.clock.http_date);
        // Backends started again are asked again.
        self.sh.gateways.start_probes(now, self.poll.registry());
        let mut any_closed = false;
        for key in touched {
            if let Some(conn) = self.conns.get_mut(key) {
                conn.drive(&mut self.sh);
                any_closed |= self.after_drive(key);
            }
        }
        let mut closed = Vec::new();
        for (key, conn) in self.conns.iter_mut() {
            conn.on_tick(&mut self.sh);
            if conn.phase == Phase::Closed {
                closed.push(key);
            }
        }
        for key in &closed {
            if let Some(mut conn) = self.conns.try_remove(*key) {
                self.sh.gateways.client_gone(*key, &mut conn);
            }
        }
        self.sh.logs.flush();
        self.sh.files.purge(now);
        any_closed || !closed.is_empty()
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
            self.sh.logs.reopen();
            if let Err(e) = crate::errorlog::reopen() {
                log::error!("cannot reopen the error log: {e}");
            }
        }
        if s.reload && self.stop.load(Ordering::SeqCst) == RUN {
            self.reload_from_source();
        }
    }

    /// Applies stop requests; returns true when `run` should return.
    fn check_stop(&mut self) -> bool {
        self.apply_signals();
        let state = self.stop.load(Ordering::SeqCst);
        match state {
            NOW => true,
            GRACEFUL => {
                if !self.sh.shutting_down {
                    self.begin_shutdown();
                }
                let past_deadline = self
                    .shutdown_deadline
                    .is_some_and(|d| self.sh.clock.mono_secs >= d);
                if past_deadline && !self.conns.is_empty() {
                    log::warn!(
                        "graceful shutdown time-out: dropping {} connections",
                        self.conns.len()
                    );
                }
                self.conns.is_empty() || past_deadline
            }
            _ => false,
        }
    }

    /// Stops accepting and closes idle connections; the others close after
    /// their current response.
    fn begin_shutdown(&mut self) {
        self.sh.shutting_down = true;
        for l in self.listeners.iter_mut() {
            *l = None;
        }
        let timeout = self.sh.config.global.graceful_shutdown_timeout as u64;
        self.shutdown_deadline = Some(self.sh.clock.mono_secs + timeout.max(1));
        let idle: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.phase == Phase::Idle && c.requests > 0)
            .map(|(k, _)| k)
            .collect();
        for k in idle {
            self.conns.remove(k);
        }
        // Kept backend connections too; none is kept from here on.
        self.sh.gateways.close_all_idle();
        log::info!(
            "graceful shutdown: finishing {} connections",
            self.conns.len()
        );
    }
}

/// Readiness a socket is registered for: reads always, writes once they block.
pub fn interest(writes: bool) -> Interest {
    if writes {
        Interest::READABLE | Interest::WRITABLE
    } else {
        Interest::READABLE
    }
}
