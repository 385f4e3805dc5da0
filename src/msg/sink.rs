//! How an upstream (a FastCGI, SCGI, uwsgi or HTTP backend, a CGI program) hands its answer to
//! the client's side: through a [`Sink`] that the protocol layer
//! implements. The upstream never sees the client's connection, and the
//! client's side never sees a backend.

use std::fs::File;
use std::rc::Rc;

/// Which exchange a piece of work belongs to: a connection's slot and the
/// generation of the connection in it, so that work for a connection that
/// has gone never reaches the next one in the same slot; and on an HTTP/2
/// connection the stream (0 on HTTP/1, whose exchanges follow one another).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExchangeId {
    pub slot: usize,
    pub gen: u64,
    pub stream: u32,
}

/// Slots at or past this name HTTP/3 connections (beside the TCP ones).
pub const H3_SLOT_BASE: usize = 1 << 28;

impl ExchangeId {
    /// The same connection's exchange on `stream`.
    pub fn on_stream(self, stream: u32) -> ExchangeId {
        ExchangeId { stream, ..self }
    }

    /// Both name the same connection (whatever the stream).
    pub fn same_conn(self, other: ExchangeId) -> bool {
        self.slot == other.slot && self.gen == other.gen
    }
}

/// The head of a backend's answer, as the client is to get it.
#[derive(Debug)]
pub struct AnswerHead<'a> {
    pub status: u16,
    /// The backend's header lines (no framing headers: glint frames the body).
    pub headers: &'a [(String, Vec<u8>)],
    /// The body's length as the backend announced it, if it did.
    pub content_length: Option<u64>,
    /// There is no body (1xx, 204, 304).
    pub bodiless: bool,
    /// A 101 to an `Upgrade` request: after the head, bytes go both ways
    /// as they come (a tunnel) until either side closes.
    pub upgrade: bool,
    /// The backend's `X-LIGHTTPD-KBytes-per-second`, in bytes: a lower
    /// download limit for this answer's HTTP/1 connection.
    pub rate_limit: Option<u64>,
}

/// Why glint runs a request again once its backend's answer is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rerun {
    /// An authorizer answered 200; its `Variable-` headers as (NAME, value).
    Authorized(Vec<(String, Vec<u8>)>),
    /// A local redirect (RFC 3875 6.2.2) to this path and query.
    Redirect(String),
    /// `server.error-intercept`: the backend answered this 4xx or 5xx
    /// status; glint answers with its own error (page or handler) instead.
    /// `challenge`: a 401's `WWW-Authenticate`, the one header kept.
    Intercepted {
        status: u16,
        challenge: Option<Vec<u8>>,
    },
    /// mod_vhostdb's lookup of the request's host ended: the document root
    /// it found (`None`: no such host), or the status to answer.
    Vhost(Result<Option<String>, u16>),
}

impl Rerun {
    /// The request's body is still the client's to give (it was held
    /// while the answer was awaited): after an authorizer or a vhost
    /// lookup; not after a local redirect or an intercepted error (the
    /// backend had the body).
    pub fn keeps_body(&self) -> bool {
        matches!(self, Rerun::Authorized(_) | Rerun::Vhost(_))
    }
}

/// The client's side of a gateway exchange, as the upstream sees it.
pub trait Sink {
    /// The client has room for more of the answer; while it has not, the
    /// upstream stops reading its backend (back-pressure).
    fn has_room(&self) -> bool;
    /// The answer's head.
    fn head(&mut self, head: &AnswerHead<'_>);
    /// Body bytes, after the head.
    fn data(&mut self, bytes: &[u8]);
    /// X-Sendfile: `len` bytes of `file` are the body, instead of the
    /// backend's own.
    fn file(&mut self, head: &AnswerHead<'_>, file: Rc<File>, len: u64);
    /// The answer is complete.
    fn end(&mut self);
    /// The backend failed: an error page when nothing was sent yet, else
    /// the client's connection is closed (the answer is cut).
    fn fail(&mut self, status: u16);
    /// The answer says to run the request again; nothing was sent.
    fn rerun(&mut self, why: Rerun);
}
