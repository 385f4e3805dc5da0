//! Sockets: a client's or a backend's stream (TCP or unix), connecting to
//! a backend, and the readiness a socket is registered for.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;

use mio::event::Source;
use mio::{Interest, Registry, Token};

/// A connected stream socket.
#[derive(Debug)]
pub enum Stream {
    Tcp(mio::net::TcpStream),
    Unix(mio::net::UnixStream),
}

impl Stream {
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    /// The address the peer connected to (`SERVER_ADDR`); None on a unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Stream::Tcp(s) => s.local_addr().ok(),
            Stream::Unix(_) => None,
        }
    }

    /// The pending socket error (SO_ERROR), e.g. of a non-blocking connect.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Stream::Tcp(s) => s.take_error(),
            Stream::Unix(s) => s.take_error(),
        }
    }

    pub fn shutdown_write(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Write),
            Stream::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }

    pub fn set_nodelay(&self) {
        if let Stream::Tcp(s) = self {
            let _ = s.set_nodelay(true);
        }
    }

    pub fn is_tcp(&self) -> bool {
        matches!(self, Stream::Tcp(_))
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Stream::read(self, buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Stream::write(self, buf)
    }
    /// One writev for all the pieces: rustls hands its queued TLS records
    /// over as a vector, and without this each record was a `send` of its
    /// own (three per keep-alive request for a 25 KB file; SIGPIPE is
    /// ignored, so writev's broken pipe is an EPIPE like send's).
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Unix(s) => s.register(r, t, i),
        }
    }
    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Unix(s) => s.reregister(r, t, i),
        }
    }
    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(r),
            Stream::Unix(s) => s.deregister(r),
        }
    }
}

/// Where a backend listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Tcp(a) => write!(f, "{a}"),
            Addr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Starts a non-blocking connect to `addr`.
pub fn connect(addr: &Addr) -> io::Result<Stream> {
    match addr {
        Addr::Tcp(a) => mio::net::TcpStream::connect(*a).map(Stream::Tcp),
        Addr::Unix(p) => mio::net::UnixStream::connect(p).map(Stream::Unix),
    }
}

/// Readiness a socket is registered for: reads always, writes once a
/// write has blocked (a socket registered for writability reports it at
/// once: one more turn of the loop for nothing on every connection that
/// never fills its buffer).
pub fn interest(writes: bool) -> Interest {
    if writes {
        Interest::READABLE | Interest::WRITABLE
    } else {
        Interest::READABLE
    }
}
