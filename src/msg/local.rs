//! Work glint does itself for a request that has a body or a long answer
//! (mod_webdav's PUT, PROPFIND, PROPPATCH, LOCK), run as a job of the
//! upstream so that the body comes through the same window, time-outs and
//! HTTP/2 flow control as a backend's, and the answer goes out through the
//! same [`super::Sink`] with the same back-pressure.

use std::io;

/// The upstream's view of such work: the body goes in, then an answer
/// comes out, as a CGI program's output (`Status:` and header lines, an
/// empty line, the body).
pub trait LocalWork {
    /// Body bytes as the client sent them (a `Content-Length` body as is;
    /// a chunked one chunked anew): how many were taken. A short count
    /// means the work refuses the rest (it has an answer already).
    fn write(&mut self, data: &[u8]) -> io::Result<usize>;
    /// The body is complete: do the work (file work in bounded slices
    /// happens here or in `read`).
    fn finish(&mut self);
    /// The next bytes of the answer; 0 at its end. Called only after
    /// `finish`. Work that answers later (see
    /// [`LocalWork::wake_when_ready`]) may say `WouldBlock` until it has
    /// woken the loop.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// After `finish`: `wake` tells the loop the answer is ready. Work
    /// done by then gives it back (the default) and the loop hears at
    /// once; work that finishes on another thread (mod_auth's blocking
    /// back ends) keeps it and calls it then.
    fn wake_when_ready(&mut self, wake: Wake) -> Option<Wake> {
        Some(wake)
    }
    /// The answer is mod_vhostdb's lookup (its head becomes
    /// [`super::Rerun::Vhost`], never the client's answer).
    fn is_vhost_lookup(&self) -> bool {
        false
    }
}

/// The header of mod_vhostdb's lookup answer that carries the document
/// root it found (the answer never reaches a client).
pub const VHOST_DOCROOT: &str = "Glint-Vhostdb-Docroot";

/// Tells the loop that a local job's answer is ready (from any thread).
pub type Wake = Box<dyn FnOnce() + Send>;

/// What a request parked as a local job waits for: a blocking check's
/// verdict, a suspended script run.
pub trait Awaited {
    fn is_ready(&self) -> bool;
    /// After the body: keep `wake` and call it once ready, or give it
    /// back (ready already, or nothing else will call it).
    fn on_ready(&mut self, wake: Wake) -> Option<Wake>;
}

/// Local work that waits for `A`, then answers "run on" (an
/// authorizer's `Status: 200`): the connection runs the request again,
/// which then takes what it waited for.
pub struct RunOn<A> {
    pub awaited: A,
    sent: bool,
}

impl<A> RunOn<A> {
    pub fn new(awaited: A) -> RunOn<A> {
        RunOn {
            awaited,
            sent: false,
        }
    }
}

/// The answer that makes the connection run the request again.
const RUN_ON: &[u8] = b"Status: 200\r\n\r\n";

impl<A: Awaited> LocalWork for RunOn<A> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        Ok(data.len())
    }

    fn finish(&mut self) {}

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.sent {
            return Ok(0);
        }
        if !self.awaited.is_ready() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = RUN_ON.len().min(buf.len());
        buf[..n].copy_from_slice(&RUN_ON[..n]);
        self.sent = n == RUN_ON.len();
        Ok(n)
    }

    fn wake_when_ready(&mut self, wake: Wake) -> Option<Wake> {
        self.awaited.on_ready(wake)
    }
}
