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
    /// `finish`. Work that answers later ([`LocalWork::answers_later`])
    /// may say `WouldBlock` until it has signalled [`Ready`].
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// The work ends on another thread after `finish`: it is handed a
    /// [`Ready`] to signal then, rather than being read at once.
    fn answers_later(&self) -> bool {
        false
    }
    /// The signal for work that [`LocalWork::answers_later`].
    fn set_ready(&mut self, _ready: Ready) {}
    /// The answer is mod_vhostdb's lookup (its head becomes
    /// [`super::Rerun::Vhost`], never the client's answer).
    fn is_vhost_lookup(&self) -> bool {
        false
    }
}

/// The header of mod_vhostdb's lookup answer that carries the document
/// root it found (the answer never reaches a client).
pub const VHOST_DOCROOT: &str = "Glint-Vhostdb-Docroot";

/// Wakes the loop for a local job whose answer is ready; may be signalled
/// from any thread, once.
pub struct Ready(Box<dyn FnOnce() + Send>);

impl Ready {
    pub fn new(f: impl FnOnce() + Send + 'static) -> Ready {
        Ready(Box::new(f))
    }

    pub fn signal(self) {
        (self.0)()
    }
}
