//! Listening sockets: binding what the configuration names (TCP with
//! `TCP_DEFER_ACCEPT`, or unix), adopting inherited ones (socket
//! activation), and what the loop needs to know of each.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

use nix::sys::socket::{
    bind, getsockname, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag,
    SockType, SockaddrStorage,
};

use crate::config::{Listen, ListenAddr};

/// `listen(2)` backlog, lighttpd's `server.listen-backlog` default: room for
/// bursts while the loop is busy or at `server.max-connections`
/// (`Settings::listen_backlog` carries the configured one).
pub const LISTEN_BACKLOG: i32 = 1024;

/// A listening socket.
pub(super) enum Listener {
    /// A TCP socket, and whether it has TCP_DEFER_ACCEPT (a connection is
    /// accepted with its first bytes already there, so they are read at once).
    Tcp(mio::net::TcpListener, bool),
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
    pub(super) fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            Listener::Tcp(t, _) => t,
            Listener::Unix(u, _, _) => u,
        }
    }

    /// The address it is bound to, when that is one address (not 0.0.0.0 or
    /// ::): the SERVER_ADDR of its connections without asking the socket.
    pub(super) fn bound_ip(&self) -> Option<std::net::IpAddr> {
        match self {
            Listener::Tcp(t, _) => t
                .local_addr()
                .ok()
                .map(|a| a.ip())
                .filter(|ip| !ip.is_unspecified()),
            Listener::Unix(..) => None,
        }
    }

    /// Connections waiting in a TCP listener's accept queue, as the kernel
    /// counts them; None for a unix socket or when the kernel does not say.
    /// Accepting exactly these spares the `accept` that would fail with
    /// EAGAIN, which is not cheap: the kernel makes a socket, its file and
    /// inode for it before it looks at the queue, and tears them down again.
    pub(super) fn queued(&self) -> Option<usize> {
        let Listener::Tcp(t, _) = self else {
            return None;
        };
        crate::sockopt::accept_queue(t.as_fd())
    }

    pub(super) fn port(&self) -> u16 {
        match self {
            Listener::Tcp(t, _) => t.local_addr().map(|a| a.port()).unwrap_or(0),
            Listener::Unix(..) => 0,
        }
    }

    /// Whether this socket is the one `addr` names (its bound address, or its path).
    pub(super) fn is_at(&self, addr: &ListenAddr) -> bool {
        match (self, addr) {
            (Listener::Tcp(t, _), ListenAddr::Tcp { host, port }) => {
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
pub(super) fn adopt_listener(fd: OwnedFd) -> io::Result<Listener> {
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
        let deferred = defers_accept(&fd);
        let std_listener = std::net::TcpListener::from(fd);
        std_listener.set_nonblocking(true)?;
        return Ok(Listener::Tcp(
            mio::net::TcpListener::from_std(std_listener),
            deferred,
        ));
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "an inherited descriptor is not a TCP or unix socket",
    ))
}

/// Binds one listener as the configuration names it; `s` holds its
/// socket options (`Config::socket_settings`).
pub(super) fn bind_listener(l: &Listen, s: &crate::config::Settings) -> io::Result<Listener> {
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
            if let Some(mode) = s.listener.socket_perms {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
            }
            Ok(Listener::Unix(lst, path.clone(), true))
        }
        ListenAddr::Tcp { host, port } => {
            // `server.use-ipv6`: a listener without an address takes IPv6's.
            let host = if host.is_empty() && s.listener.use_ipv6 {
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
                // `server.v4mapped`, when set, decides over `server.set-v6only`.
                let v6only = s
                    .listener
                    .v4mapped
                    .map_or(s.listener.set_v6only, |mapped| !mapped);
                setsockopt(&fd, sockopt::Ipv6V6Only, &v6only)?;
            }
            bind(fd.as_raw_fd(), &SockaddrStorage::from(addr))
                .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("{addr}: {e}")))?;
            let backlog = i32::try_from(s.listener.listen_backlog).unwrap_or(LISTEN_BACKLOG);
            listen(&fd, Backlog::new(backlog).unwrap_or(Backlog::MAXCONN))?;
            // TCP_DEFER_ACCEPT only when asked (`server.defer-accept`, off
            // by default as in lighttpd): with it, the kernel completes
            // handshakes it cannot queue for accept. In a storm of 5,000
            // keep-alive clients at 1,365 slots it held 1,025 connections
            // with their requests sent but unread, pruned 513 of them (to
            // backlog / 2) at the third SYN-ACK timer, ~7 s in, and answered
            // their retransmitted requests with a reset, ~12.6 s in.
            // Without it, a client the backlog has no room for is still
            // connecting and has sent nothing that can be lost. With it, a
            // one-request connection costs one epoll registration and one
            // wake-up less (server CPU per request at ab -c 50 /index.html:
            // 20-22 µs with, 27-32 µs without, measured when glint still
            // also tried a read at once without it).
            let deferred = s.listener.defer_accept && set_defer_accept(&fd);
            let std_listener = std::net::TcpListener::from(fd);
            Ok(Listener::Tcp(
                mio::net::TcpListener::from_std(std_listener),
                deferred,
            ))
        }
    }
}

/// Seconds the kernel holds a new connection until its first bytes arrive
/// (TCP_DEFER_ACCEPT, with `server.defer-accept`): glint then accepts a
/// connection with its request already readable, and idle connects never
/// take a slot.
const DEFER_ACCEPT_SECS: i32 = 2;

/// Sets TCP_DEFER_ACCEPT; true when the kernel took it.
fn set_defer_accept(fd: &OwnedFd) -> bool {
    let ok =
        crate::sockopt::set_tcp_int(fd.as_fd(), nix::libc::TCP_DEFER_ACCEPT, DEFER_ACCEPT_SECS);
    if !ok {
        log::debug!("TCP_DEFER_ACCEPT: {}", io::Error::last_os_error());
    }
    ok
}

/// Whether an inherited socket has TCP_DEFER_ACCEPT (systemd's
/// `DeferAcceptSec=`).
fn defers_accept(fd: &OwnedFd) -> bool {
    crate::sockopt::tcp_int(fd.as_fd(), nix::libc::TCP_DEFER_ACCEPT).is_some_and(|s| s > 0)
}

/// A listener's address, as `ip:port` or a unix socket path.
pub(super) fn describe(l: &Listener) -> String {
    match l {
        Listener::Tcp(t, _) => t
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's count of connections waiting for accept, which the
    /// loop accepts exactly (no accept that fails with EAGAIN).
    #[test]
    fn a_tcp_listener_says_how_many_wait() {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = std_listener.local_addr().unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let lst = Listener::Tcp(mio::net::TcpListener::from_std(std_listener), false);
        assert_eq!(lst.queued(), Some(0));
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // The handshake ends in the kernel's softirq: give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while lst.queued() != Some(3) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(lst.queued(), Some(3));
        let Listener::Tcp(t, _) = &lst else {
            unreachable!()
        };
        let _one = t.accept().unwrap();
        assert_eq!(lst.queued(), Some(2));
        drop(clients);
    }
}
