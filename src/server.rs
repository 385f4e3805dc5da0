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
    bind, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag, SockType,
    SockaddrStorage,
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

/// `listen(2)` backlog, lighttpd's `server.listen-backlog` default: room for
/// bursts while the loop is busy or at `server.max-connections`.
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
    /// Stop accepting and close connections after their current response.
    pub shutting_down: bool,
}

/// A listening socket.
enum Listener {
    Tcp(mio::net::TcpListener),
    Unix(mio::net::UnixListener, PathBuf),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

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
    stop: Arc<AtomicU8>,
    waker: Arc<Waker>,
    /// Whether this server reacts to process signals (the binary), or only to its StopHandle.
    use_signals: bool,
    shutdown_deadline: Option<u64>,
}

/// Binds one listener as the configuration names it.
fn bind_listener(l: &Listen) -> io::Result<Listener> {
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
            Ok(Listener::Unix(lst, path.clone()))
        }
        ListenAddr::Tcp { host, port } => {
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
                setsockopt(&fd, sockopt::Ipv6V6Only, &true)?;
            }
            bind(fd.as_raw_fd(), &SockaddrStorage::from(addr))
                .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("{addr}: {e}")))?;
            listen(
                &fd,
                Backlog::new(LISTEN_BACKLOG).unwrap_or(Backlog::MAXCONN),
            )?;
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
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut listeners = Vec::new();
        let mut ports = Vec::new();
        for (i, l) in config.listeners.iter().enumerate() {
            let mut lst = bind_listener(l).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot listen on {}: {e}", l.spec))
            })?;
            let token = Token(LISTENER_BASE + i);
            match &mut lst {
                Listener::Tcp(t) => {
                    poll.registry().register(t, token, Interest::READABLE)?;
                    ports.push(t.local_addr()?.port());
                }
                Listener::Unix(u, _) => {
                    poll.registry().register(u, token, Interest::READABLE)?;
                    ports.push(0);
                }
            }
            listeners.push(Some(lst));
        }
        let max_connections = config.global.max_connections.max(1) as usize;
        let gateways = crate::gateway::Gateways::from_settings(&config.global)
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
                shutting_down: false,
            },
            max_connections,
            accept_paused: false,
            stop: Arc::new(AtomicU8::new(RUN)),
            waker,
            use_signals: false,
            shutdown_deadline: None,
        })
    }

    /// The bound addresses, as `ip:port` or a unix socket path, in listener order.
    pub fn local_addrs(&self) -> Vec<String> {
        self.listeners
            .iter()
            .flatten()
            .map(|l| match l {
                Listener::Tcp(t) => t
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|e| format!("?({e})")),
                Listener::Unix(_, p) => p.display().to_string(),
            })
            .collect()
    }

    /// A handle that stops `run` from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            state: Arc::clone(&self.stop),
            waker: Arc::clone(&self.waker),
        }
    }

    /// Makes `run` react to SIGINT, SIGTERM, SIGHUP (the handlers must be
    /// installed with [`signals::install`]).
    pub fn with_signals(mut self) -> Self {
        self.use_signals = true;
        self
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
        let result = self.run_loop();
        self.sh.gateways.shutdown();
        result
    }

    fn run_loop(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let to_next_second = 1_000_000 - self.sh.clock.mono_us % 1_000_000;
            // A backend said "busy": look again in 10 ms rather than at the next tick.
            let wait = if self.sh.gateways.retry_soon {
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
            let mut closed_any = false;
            for ev in events.iter() {
                let t = ev.token().0;
                if t >= LISTENER_BASE {
                    self.accept_all(t - LISTENER_BASE);
                } else if t == WAKER.0 {
                } else if t >= BACKEND_BASE {
                    closed_any |= self.backend_event(t - BACKEND_BASE, ev);
                } else if let Some(conn) = self.conns.get_mut(t) {
                    conn.on_event(ev);
                    conn.drive(&mut self.sh);
                    closed_any |= self.after_drive(t);
                }
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
        // may be another gateway request: loop until the connection rests.
        for _ in 0..4 {
            if conn.wants_backend() {
                sh.gateways
                    .dispatch(key, conn, sh.clock.mono_secs, registry, &sh.clock.http_date);
                conn.drive(sh);
            } else if conn.phase == Phase::Gateway {
                sh.gateways
                    .resume(conn, sh.clock.mono_secs, &sh.clock.http_date, registry);
                conn.drive(sh);
                break;
            } else {
                break;
            }
        }
        if conn.phase == Phase::Closed {
            sh.gateways.client_gone(key, conn);
            self.conns.remove(key);
            return true;
        }
        if !conn.registered {
            if let Err(e) = registry.register(
                &mut conn.stream,
                Token(key),
                Interest::READABLE | Interest::WRITABLE,
            ) {
                log::error!("cannot register a connection: {e}");
                sh.gateways.client_gone(key, conn);
                self.conns.remove(key);
                return true;
            }
            conn.registered = true;
        }
        false
    }

    /// Readiness of a backend connection: progress it, then its client.
    fn backend_event(&mut self, bkey: usize, ev: &mio::event::Event) -> bool {
        let Some(client) = self.sh.gateways.on_event(bkey, ev) else {
            return false;
        };
        let registry = self.poll.registry();
        let sh = &mut self.sh;
        let Some(conn) = self.conns.get_mut(client) else {
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
        loop {
            if self.conns.len() >= self.max_connections {
                self.accept_paused = true;
                return;
            }
            let Some(Some(lst)) = self.listeners.get(i) else {
                return;
            };
            let accepted = match lst {
                Listener::Tcp(t) => t.accept().map(|(s, a)| (Stream::Tcp(s), Some(a.ip()))),
                Listener::Unix(u, _) => u.accept().map(|(s, _)| (Stream::Unix(s), None)),
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

    /// Applies stop requests; returns true when `run` should return.
    fn check_stop(&mut self) -> bool {
        let mut state = self.stop.load(Ordering::SeqCst);
        if self.use_signals {
            let s = signals::take();
            if s.now {
                state = NOW;
            } else if s.graceful {
                state = state.max(GRACEFUL);
            }
            if s.reopen {
                log::info!("reopening log files");
                self.sh.logs.reopen();
            }
            if s.reload {
                log::warn!("graceful restart (SIGUSR1) is not supported yet; ignored");
            }
        }
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
        log::info!(
            "graceful shutdown: finishing {} connections",
            self.conns.len()
        );
    }
}
