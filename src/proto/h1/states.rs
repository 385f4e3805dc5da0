//! The states and answers of the HTTP/1 session ([`super::session`]): what
//! its read and write sides are doing, what the connection offers it, and
//! what it tells the connection to do.

use crate::msg::plan::Framing;
use crate::msg::{HttpError, Request};

/// What the read side waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// A request head (none yet, or part of one).
    Head,
    /// A head was handed out; what becomes of its body is not said yet.
    Pending,
    /// Body bytes go to the request's consumer (a backend).
    Body,
    /// The body waits unread until its consumer is known (an authorizer
    /// decides first).
    Held,
    /// Body bytes of an answered request are dropped: `left` of them, or
    /// (`None`) all that come until the connection closes.
    Drop { left: Option<u64> },
    /// The request is read whole; the next head waits for its answer.
    Done,
    /// After a 101: every byte goes to the backend, unframed.
    Tunnel,
    /// The write side is shut after the last answer: what the client still
    /// sends is dropped until it closes, or until `until`.
    Linger { until: u64 },
    /// Nothing more is read.
    Closed,
}

/// What the write side is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// No request in progress (answers of earlier ones may still be queued).
    Idle,
    /// A request is being answered, from its head on (its answer may come
    /// later, from a backend).
    Answer,
    /// The last answer is queued whole and the connection closes once it
    /// is written; with `linger`, after reading what the client still sends.
    Closing { linger: bool },
    /// After a 101: bytes go both ways as they come.
    Tunnel,
}

/// What the connection's side says with each call: what the server still
/// offers, room in the output queue, and the configured limits (a
/// graceful restart may change them between two requests).
#[derive(Debug, Clone, Copy)]
pub struct Offer {
    /// The server offers keep-alive (it is not shutting down, and no
    /// client waits at the connection limit).
    pub keep_alive: bool,
    /// The output queue has room for a pipelined request's answer.
    pub room: bool,
    pub limits: Limits,
}

/// The limits of a session, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `server.max-request-field-size`: the longest head.
    pub max_head: usize,
    /// `server.max-keep-alive-requests`.
    pub max_requests: u32,
}

/// What to do with the buffered input.
#[derive(Debug)]
pub enum Input<'h, 'b> {
    /// Nothing now (more bytes, or the answer in progress, must come first).
    Wait,
    /// Drop this many bytes (a body nothing needs, blank lines, lingering).
    Drop(usize),
    /// A request: consume its `head_len` bytes and answer it.
    Request(Request<'h, 'b>),
    /// A bad head: answer with its status (the connection closes after
    /// it); every buffered byte is dropped.
    Bad(HttpError),
    /// Body bytes for the consumer: offer them, then say
    /// [`Session::body_taken`](super::session::Session::body_taken) how many it took.
    Body(&'b [u8]),
}

/// Who takes the body of the request just handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyTo {
    /// A backend, as it comes.
    Consumer,
    /// Nobody yet: an authorizer decides first.
    Hold,
    /// Nobody: glint answers itself (the body is dropped, or the
    /// connection closes, as the plan says).
    Nobody,
}

/// How an answer goes out: the framing its head announces, and whether the
/// head says the connection stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub framing: Framing,
    pub keep_alive: bool,
    /// Body bytes follow the head (not for HEAD or a bodiless status).
    pub body: bool,
    pub minor: u8,
    /// The head says HTTP/1.0 (`server.protocol-http11 = "disable"`).
    pub http10: bool,
}

/// What follows once an answer is written whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The next request (buffered bytes may hold it).
    Read,
    /// Shut the write side and linger (see [`LINGER_SECS`](super::session::LINGER_SECS)).
    Linger,
    /// Close now.
    Close,
}

/// What the client's end of stream means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eof {
    /// Nothing more is read: what is queued or in progress is still
    /// answered and written (a client may half-close after its request,
    /// RFC 9112 §9.6), then the connection closes.
    Finish,
    /// The request's body was cut short: its exchange fails.
    BodyCut,
    /// The client closed its side of a tunnel: the backend hears it.
    Tunnel,
}
