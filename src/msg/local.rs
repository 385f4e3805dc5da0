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
