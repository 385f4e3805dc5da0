//! The HTTP/1 session as a sans-IO state machine: bytes in, what to do with
//! them out, and the answer's plan and the connection's fate decided from
//! its states. It never sees a socket, a backend or the exchange; the
//! connection (`conn`) reads and writes, answers the requests it hands out,
//! and tells it how far the answer got.
//!
//! Three states, as hyper's `proto::h1` keeps them: what the read side
//! waits for ([`Read`]), what the write side is doing ([`Write`]), and the
//! request in progress (its version, body, and whether the connection may
//! stay open after it). Framing and keep-alive are decided by
//! [`crate::msg::plan`], at the head ([`Session::plan`]) and at the end of
//! the answer ([`Session::written`]), from the same facts.

use std::mem::MaybeUninit;

use httparse::Header;

use super::parse::parse_uninit;
pub use super::states::{BodyTo, Eof, Input, Limits, Next, Offer, Plan, Read, Write};
use crate::msg::plan::{self, After, Ask, Framing, Proto, Shape, Unread};
use crate::msg::{Body, HttpError, Request, MAX_HEADERS};

/// How long a closing connection reads and drops what the client still
/// sends after its last answer (lighttpd's HTTP_LINGER_TIMEOUT, 5 s): long
/// enough for an upload in flight to stop, bounded so that a client that
/// never closes holds its socket no longer.
pub const LINGER_SECS: u64 = 5;

/// Headers of one request, uninitialised (see [`parse_uninit`]).
pub type HeaderSlots<'b> = [MaybeUninit<Header<'b>>; MAX_HEADERS];

/// A fresh array of header slots.
pub fn header_slots<'b>() -> HeaderSlots<'b> {
    [MaybeUninit::uninit(); MAX_HEADERS]
}

/// The request being answered.
#[derive(Debug, Clone, Copy, Default)]
struct Current {
    minor: u8,
    head_only: bool,
    body: Body,
    /// Body bytes taken so far (given to the consumer, or dropped).
    taken: u64,
    /// The chunked body's end was seen.
    ended: bool,
    /// The client waits for `100 Continue` before its body.
    awaits_continue: bool,
    /// The client asked for the connection to stay open.
    asked: bool,
    /// The client and the server allow the connection to stay open.
    keep_alive: bool,
    /// The answer's head said the connection stays open.
    head_keeps: bool,
    /// The answer ends the connection (a 413, a failed login, a cut body).
    answer_closes: bool,
    /// Answered as HTTP/1.0 whatever the request's version ([`Session::downgrade`]).
    http10: bool,
}

impl Current {
    fn unread(&self) -> Unread {
        if self.ended {
            Unread::Nothing
        } else {
            Unread::of(self.body, self.taken)
        }
    }
}

/// One HTTP/1 connection's protocol state.
#[derive(Debug)]
pub struct Session {
    read: Read,
    write: Write,
    cur: Current,
    /// Requests begun on this connection.
    requests: u32,
}

impl Default for Session {
    fn default() -> Session {
        Session::new()
    }
}

impl Session {
    pub fn new() -> Session {
        Session {
            read: Read::Head,
            write: Write::Idle,
            cur: Current::default(),
            requests: 0,
        }
    }

    pub fn read_state(&self) -> Read {
        self.read
    }

    pub fn write_state(&self) -> Write {
        self.write
    }

    /// Requests begun on this connection.
    pub fn requests(&self) -> u32 {
        self.requests
    }

    /// Waiting for a request with none in progress (the caller knows
    /// whether part of a head is buffered, or answers are still queued).
    pub fn is_idle(&self) -> bool {
        self.read == Read::Head && self.write == Write::Idle
    }

    /// The socket is to be read now: a head is due, a body comes (for a
    /// consumer the caller also asks whether it has room), bytes are
    /// dropped, or the connection lingers.
    pub fn reads(&self) -> bool {
        match self.read {
            Read::Head | Read::Body | Read::Drop { .. } | Read::Tunnel | Read::Linger { .. } => {
                true
            }
            Read::Pending | Read::Held | Read::Done | Read::Closed => false,
        }
    }

    /// Body bytes of the request go to its consumer now.
    pub fn feeds_body(&self) -> bool {
        matches!(self.read, Read::Body | Read::Tunnel)
    }

    /// The time the lingering close ends, while it lingers.
    pub fn linger_until(&self) -> Option<u64> {
        match self.read {
            Read::Linger { until } => Some(until),
            _ => None,
        }
    }

    /// The request's version and method: what its answer's head needs.
    pub fn minor(&self) -> u8 {
        self.cur.minor
    }

    /// What to do with the buffered bytes `buf`.
    pub fn input<'h, 'b>(
        &mut self,
        buf: &'b [u8],
        headers: &'h mut HeaderSlots<'b>,
        offer: Offer,
    ) -> Input<'h, 'b> {
        if buf.is_empty() {
            return Input::Wait;
        }
        match self.read {
            Read::Head => self.head(buf, headers, offer),
            Read::Body | Read::Tunnel => Input::Body(buf),
            Read::Drop { left: None } | Read::Linger { .. } => Input::Drop(buf.len()),
            Read::Drop { left: Some(left) } => {
                let n = (buf.len() as u64).min(left);
                self.cur.taken += n;
                self.read = if n == left {
                    self.body_done()
                } else {
                    Read::Drop {
                        left: Some(left - n),
                    }
                };
                Input::Drop(n as usize)
            }
            Read::Pending | Read::Held | Read::Done | Read::Closed => Input::Wait,
        }
    }

    /// In [`Read::Head`]: blank lines, a request, or a bad head.
    fn head<'h, 'b>(
        &mut self,
        buf: &'b [u8],
        headers: &'h mut HeaderSlots<'b>,
        offer: Offer,
    ) -> Input<'h, 'b> {
        if !offer.room {
            // Pipelined: answered ahead only while the queue has room.
            return Input::Wait;
        }
        // RFC 9112 §2.2: an empty line before a request line is ignored
        // ("at least one"); more than one is not a request line either,
        // and gets 400, as lighttpd answers it.
        let lead = buf
            .iter()
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        if lead > 0 {
            let lines = buf[..lead].iter().filter(|&&b| b == b'\n').count();
            if lines > 1 {
                return self.bad(crate::msg::request::err(
                    400,
                    "blank lines before a request",
                ));
            }
            return Input::Drop(lead);
        }
        match parse_uninit(buf, headers, offer.limits.max_head) {
            Ok(None) => Input::Wait,
            Err(e) => self.bad(e),
            Ok(Some(req)) => {
                self.begin(&req, buf.len() - req.head_len, offer);
                Input::Request(req)
            }
        }
    }

    /// A head that cannot be answered as a request: its error answer
    /// closes the connection, and what else was sent is dropped.
    fn bad<'h, 'b>(&mut self, e: HttpError) -> Input<'h, 'b> {
        self.requests += 1;
        self.cur = Current {
            minor: 1,
            // Whatever else comes will not be answered.
            body: Body::Chunked,
            answer_closes: true,
            ..Current::default()
        };
        self.read = Read::Drop { left: None };
        self.write = Write::Answer;
        Input::Bad(e)
    }

    /// A request was handed out: its facts, and the read side waits to hear
    /// who takes its body. `behind`: bytes buffered after its head.
    fn begin(&mut self, req: &Request<'_, '_>, behind: usize, offer: Offer) {
        self.requests += 1;
        let body_here = match req.body {
            Body::Length(n) => (behind as u64) >= n,
            _ => false,
        };
        self.cur = Current {
            minor: req.minor,
            head_only: req.method == crate::msg::Method::Head,
            body: req.body,
            taken: 0,
            ended: false,
            // RFC 9110 §10.1.1: no `100 Continue` for a body that is here
            // already (lighttpd sends none then).
            awaits_continue: expects_continue(req) && !body_here,
            asked: req.keep_alive,
            keep_alive: req.keep_alive
                && offer.keep_alive
                && self.requests < offer.limits.max_requests,
            head_keeps: false,
            answer_closes: false,
            http10: false,
        };
        self.read = Read::Pending;
        self.write = Write::Answer;
    }

    /// The request handed out is answered as HTTP/1.0
    /// (`server.protocol-http11 = "disable"`): an HTTP/1.0 head; for an
    /// HTTP/1.1 request also no chunked body, no `100 Continue`, and the
    /// connection closes after the answer (lighttpd ignores its keep-alive
    /// wish then; an HTTP/1.0 request keeps its own).
    pub fn downgrade(&mut self) {
        if self.cur.minor >= 1 {
            self.cur.minor = 0;
            self.cur.keep_alive = false;
            self.cur.awaits_continue = false;
        }
        self.cur.http10 = true;
    }

    /// The request asked to end the connection after its answer: a
    /// client that then closes its side may still wait for the answer (a
    /// half-close, RFC 9112 §9.6); one that asked to keep it is gone.
    pub fn may_half_close(&self) -> bool {
        !self.cur.asked
    }

    /// The client waits for `100 Continue` before it sends the body.
    pub fn awaits_continue(&self) -> bool {
        self.cur.awaits_continue
    }

    /// `100 Continue` went out: the body comes now.
    pub fn continue_sent(&mut self) {
        self.cur.awaits_continue = false;
    }

    /// Says who takes the body of the request handed out (or of the one
    /// held for an authorizer, run again).
    pub fn hand_body(&mut self, to: BodyTo) {
        match (self.read, to) {
            (Read::Pending | Read::Held, _) | (Read::Body, BodyTo::Nobody) => {}
            _ => return,
        }
        self.read = match to {
            _ if self.cur.unread() == Unread::Nothing => self.body_done(),
            BodyTo::Consumer => Read::Body,
            BodyTo::Hold => Read::Held,
            // Decided with the answer's plan.
            BodyTo::Nobody => Read::Pending,
        };
    }

    /// The consumer took `n` body bytes; `ended`: a chunked body's end
    /// was among them.
    pub fn body_taken(&mut self, n: usize, ended: bool) {
        self.cur.taken += n as u64;
        self.cur.ended |= ended;
        if self.read == Read::Body && self.cur.unread() == Unread::Nothing {
            self.read = self.body_done();
        }
    }

    /// The request's body is all read: the next head, once its answer is
    /// written.
    fn body_done(&self) -> Read {
        if self.write == Write::Idle {
            Read::Head
        } else {
            Read::Done
        }
    }

    /// The answer's head is known: its framing, and whether it says the
    /// connection stays open. A body nobody takes is dropped (or drained
    /// until the close) from now on, while the answer goes out.
    pub fn plan(&mut self, shape: Shape, answer_closes: bool, offer: Offer) -> Plan {
        let c = &mut self.cur;
        c.answer_closes |= answer_closes;
        c.keep_alive &= offer.keep_alive;
        let framing = plan::framing(Proto::H1 { minor: c.minor }, c.head_only, shape);
        let after = plan::after(&self.ask(false), framing);
        let c = &mut self.cur;
        c.head_keeps = after.keeps() && shape != Shape::Tunnel;
        match shape {
            Shape::Tunnel => {
                self.write = Write::Tunnel;
                self.read = Read::Tunnel;
            }
            _ if matches!(self.read, Read::Pending | Read::Held) => {
                self.read = match after {
                    _ if self.cur.unread() == Unread::Nothing => Read::Done,
                    After::Drain(n) => Read::Drop { left: Some(n) },
                    _ => Read::Drop { left: None },
                };
            }
            _ => {}
        }
        Plan {
            framing,
            keep_alive: self.cur.head_keeps,
            body: !self.cur.head_only && !matches!(framing, Framing::None),
            minor: self.cur.minor,
            http10: self.cur.http10,
        }
    }

    /// The facts [`plan::after`] decides from.
    fn ask(&self, more_input: bool) -> Ask {
        let c = &self.cur;
        Ask {
            keep_alive: c.keep_alive,
            awaits_continue: c.awaits_continue,
            answer_closes: c.answer_closes,
            unread: c.unread(),
            more_input,
        }
    }

    /// The answer can no longer end as its head said (a backend's body
    /// cut short, a compressor that failed): the connection closes after it.
    pub fn cut(&mut self) {
        self.cur.answer_closes = true;
    }

    /// The connection is to close once its answer is written (the server
    /// stops).
    pub fn close_after(&mut self) {
        self.cur.keep_alive = false;
    }

    /// Lingers from now on (an HTTP/2 connection that ends, whose reads
    /// come here for its last seconds).
    pub fn linger(&mut self, now: u64) {
        self.read = Read::Linger {
            until: now + LINGER_SECS,
        };
        self.write = Write::Idle;
    }

    /// The answer's last byte is queued: the connection's fate is decided.
    /// Kept: the next request may be read and answered while this answer
    /// is still being written (pipelining), and a body left is dropped.
    /// `more_input`: bytes are buffered behind the request.
    pub fn complete(&mut self, offer: Offer, more_input: bool) {
        if self.write == Write::Tunnel {
            // The tunnel's backend is done: what it sent goes out, then the
            // connection closes (after reading what the client still sends,
            // so that its close does not reset the last bytes).
            let open = self.read != Read::Closed;
            self.write = Write::Closing { linger: open };
            if open {
                self.read = Read::Drop { left: None };
            }
            return;
        }
        if self.write != Write::Answer {
            return;
        }
        let c = &mut self.cur;
        // A head that said `Connection: close` is kept to.
        c.keep_alive &= offer.keep_alive && c.head_keeps && self.read != Read::Closed;
        // Bytes behind a request whose connection stays open are the next
        // request; only a close drops them.
        let after = plan::after(&self.ask(more_input), Framing::Length(0));
        match after {
            After::Next => {
                self.write = Write::Idle;
                if matches!(self.read, Read::Done | Read::Pending | Read::Held) {
                    self.read = Read::Head;
                }
            }
            After::Drain(n) => {
                self.write = Write::Idle;
                self.read = Read::Drop { left: Some(n) };
            }
            After::Close { linger } => {
                self.write = Write::Closing { linger };
                if self.read != Read::Closed {
                    // Dropped while the answer goes out, so that a client
                    // that sends its whole body before it reads is not
                    // stuck behind a full socket.
                    self.read = Read::Drop { left: None };
                }
            }
        }
    }

    /// Every queued byte is written: what follows.
    pub fn written(&mut self, now: u64) -> Next {
        match self.write {
            Write::Closing { linger: true } if self.read != Read::Closed => {
                self.read = Read::Linger {
                    until: now + LINGER_SECS,
                };
                self.write = Write::Idle;
                Next::Linger
            }
            Write::Closing { .. } => {
                self.read = Read::Closed;
                self.write = Write::Idle;
                Next::Close
            }
            // The client closed its side and nothing is in progress.
            Write::Idle if self.read == Read::Closed => Next::Close,
            _ => Next::Read,
        }
    }

    /// The client closed its side (a read returned 0).
    pub fn peer_closed(&mut self) -> Eof {
        let before = self.read;
        self.read = Read::Closed;
        self.cur.keep_alive = false;
        match before {
            Read::Tunnel => Eof::Tunnel,
            Read::Body | Read::Pending | Read::Held if self.cur.unread() != Unread::Nothing => {
                Eof::BodyCut
            }
            _ => Eof::Finish,
        }
    }
}

/// The client asked for `100 Continue` before a body it has yet to send.
pub fn expects_continue(req: &Request<'_, '_>) -> bool {
    req.minor >= 1
        && !matches!(req.body, Body::None | Body::Length(0))
        && req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"))
}
