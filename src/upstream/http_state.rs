//! The state of an HTTP backend's work, apart from reading it: what the
//! exchange built for a proxied request (the job's side), and how far the
//! answer on a connection has come (the connection's side), with what a
//! close at each point means. `proxy.rs` reads answers into it; the job
//! and the backend connection hold it.

use std::rc::Rc;

use crate::httpup::chunked::Dechunker;
use crate::httpup::options::ProxyOptions;
use crate::httpup::request::Sent;

/// What the exchange built for one proxied request.
#[derive(Debug)]
pub struct HttpJob {
    /// The request head for each `proxy.server` label the route's hosts
    /// have (`proxy.replace-http-host` sends it as the Host), the first in
    /// the upload now; one head when the Host does not depend on the label.
    pub heads: Vec<(String, Vec<u8>)>,
    pub current: usize,
    /// What was sent, for reading the answer.
    pub sent: Sent,
    /// The request's `proxy.*` options (`proxy.header`'s `map-*` remap
    /// the answer's header lines).
    pub opts: Rc<ProxyOptions>,
}

/// How far an HTTP answer on a connection has come.
#[derive(Debug, Default)]
pub(super) enum Body {
    /// Its head is still being read (into the connection's head buffer).
    #[default]
    Head,
    /// This many body bytes are still to come.
    Length(u64),
    Chunked(Box<Dechunker>),
    /// Until the backend closes (or, after a 101, both ways).
    UntilClose,
    /// Complete.
    Done,
}

/// The per-connection state of an HTTP answer.
#[derive(Debug, Default)]
pub(super) struct HttpRead {
    pub body: Body,
    /// The connection may carry another request once the body is read
    /// ([`response::Head::reusable`], and nothing after the body).
    pub reusable: bool,
    /// The backend's `Keep-Alive: timeout=N`.
    pub keep_secs: Option<u32>,
}

/// The backend closed its side: whether the answer was complete.
pub(super) fn complete_at_close(read: &HttpRead) -> Result<(), String> {
    match &read.body {
        Body::Head => Err("closed the connection inside its answer's head".into()),
        Body::Length(n) => Err(format!(
            "closed the connection with {n} bytes of its answer missing"
        )),
        Body::Chunked(_) => Err("closed the connection inside its chunked answer".into()),
        Body::UntilClose | Body::Done => Ok(()),
    }
}
