//! The request side of a gateway request: what glint sends the backend.
//!
//! The CGI environment goes first (an SCGI netstring, a uwsgi variable
//! block, or FastCGI BEGIN_REQUEST and PARAMS records), then the body as the
//! client sends it (raw after SCGI's and uwsgi's heads, STDIN records for
//! FastCGI). All need CONTENT_LENGTH up front, so:
//!
//! - a `Content-Length` body is streamed: the head is encoded at once and
//!   body bytes are appended as they arrive, at most [`BODY_WINDOW`] of them
//!   waiting for the backend. While the window is full the client is not
//!   read, so memory does not grow with the body, however large.
//! - a chunked body is decoded and collected first (up to a bound), then
//!   sent with its length.
//!
//! A request is sent again to another backend (a backend that closed
//! before answering) only while glint still holds all of it: bytes the
//! backend took are kept until the request outgrows the window, and
//! dropped after that.

use super::ajp13::ForwardRequest;
use super::ajp_body::AjpBody;
use super::cgi::Env;
use super::{fastcgi, scgi, uwsgi, Protocol};
use crate::proto::h1::chunked;

/// Most body bytes glint holds for one request that the backend has not
/// taken yet; with the client's 16 KiB input buffer, an upload costs glint
/// about 80 KiB whatever its size. 64 KiB is what a backend's socket
/// usually takes in one go, so a fast backend never waits on the window.
pub const BODY_WINDOW: usize = 64 * 1024;

/// Room for FastCGI record headers on top of the window, so that a body
/// that fits the window stays whole (one 8-byte header per client read).
const FRAMING_SLACK: usize = 4 * 1024;

/// How the client frames the body.
#[derive(Debug)]
pub enum BodyFraming {
    /// No body, or a `Content-Length` one.
    Length(u64),
    /// `Transfer-Encoding: chunked`: collected up to `limit` bytes (then 413).
    Chunked { limit: u64 },
}

/// The bytes of one request on their way to the backend.
#[derive(Debug)]
pub struct Upload {
    protocol: Protocol,
    /// Encoded request bytes: from the request's first byte while `whole`,
    /// else from some later point.
    buf: Vec<u8>,
    /// How much of `buf` the current backend connection has taken.
    sent: usize,
    /// `buf` starts at the request's first byte: it can be sent again.
    whole: bool,
    /// Length of the encoded head (the environment), for the hold limit.
    head_len: usize,
    /// Body bytes still to come from the client (`Content-Length`).
    remaining: u64,
    /// Chunked body being collected, with the environment to encode once it is complete.
    collecting: Option<Collect>,
    /// Body bytes taken from the client so far (kept or discarded).
    pub received: u64,
    /// Request bytes written to backends so far (retries included).
    pub written: u64,
    /// HTTP: a chunked body streamed as it comes, decoded and chunked anew
    /// (an HTTP backend, unlike a CGI one, needs no length up front).
    rechunk: Option<chunked::Decoder>,
    /// A tunnel (after a 101): the client's bytes go to the backend as
    /// they come, until the client closes.
    tunnel: bool,
    /// A tunnel was started (and may be over).
    tunneled: bool,
    /// CGI: the environment, kept for the process start, and the body's length.
    cgi_env: Option<Env>,
    content_length: u64,
    /// AJP/1.3: body bytes wait here until the container asks for them.
    ajp: Option<Box<AjpBody>>,
}

/// How an HTTP request's body reaches the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpBody {
    /// None, or `Content-Length` bytes passed on as they come.
    Length(u64),
    /// The client's chunked body, chunked anew as it comes.
    Chunked,
}

#[derive(Debug)]
struct Collect {
    decoder: chunked::Decoder,
    body: Vec<u8>,
    limit: u64,
    head: HeadSource,
}

/// What the request's head is made from once the body's length is known.
#[derive(Debug)]
pub enum HeadSource {
    /// The CGI environment (SCGI, uwsgi, FastCGI, CGI).
    Env(Env),
    /// An AJP FORWARD_REQUEST.
    Ajp(Box<ForwardRequest>),
}

impl Upload {
    /// Starts a request: a `Content-Length` one has its head encoded now.
    pub fn new(protocol: Protocol, env: Env, framing: BodyFraming) -> Upload {
        Upload::of(protocol, HeadSource::Env(env), framing)
    }

    /// An AJP/1.3 request (the FORWARD_REQUEST was checked to fit).
    pub fn ajp13(head: ForwardRequest, framing: BodyFraming) -> Upload {
        // A request without a body has no data packet (the container reads
        // none for Content-Length 0); with one, the first goes unasked.
        let body = !matches!(framing, BodyFraming::Length(0));
        let mut u = Upload::of(Protocol::Ajp13, HeadSource::Ajp(Box::new(head)), framing);
        if let Some(a) = u.ajp.as_mut().filter(|_| body) {
            a.first_packet();
        }
        u.pump_ajp();
        u
    }

    fn of(protocol: Protocol, head: HeadSource, framing: BodyFraming) -> Upload {
        let mut u = Upload::empty(protocol);
        if protocol == Protocol::Ajp13 {
            u.ajp = Some(Box::default());
        }
        match framing {
            BodyFraming::Length(n) => {
                u.start(n, head);
                u.remaining = n;
                if n == 0 {
                    u.end_body();
                }
            }
            BodyFraming::Chunked { limit } => {
                u.collecting = Some(Collect {
                    decoder: chunked::Decoder::default(),
                    body: Vec::new(),
                    limit,
                    head,
                })
            }
        }
        u
    }

    fn empty(protocol: Protocol) -> Upload {
        Upload {
            protocol,
            buf: Vec::new(),
            sent: 0,
            whole: true,
            head_len: 0,
            remaining: 0,
            collecting: None,
            received: 0,
            written: 0,
            rechunk: None,
            tunnel: false,
            tunneled: false,
            cgi_env: None,
            content_length: 0,
            ajp: None,
        }
    }

    /// A request encoded whole by the caller, without a body (an authorizer's).
    pub fn fixed(protocol: Protocol, request: Vec<u8>) -> Upload {
        let mut u = Upload::empty(protocol);
        u.head_len = request.len();
        u.buf = request;
        u
    }

    /// An HTTP request: its head (built by [`crate::httpup::request`]),
    /// then its body as the client sends it.
    pub fn http(head: Vec<u8>, body: HttpBody) -> Upload {
        let mut u = Upload::empty(Protocol::Http);
        u.head_len = head.len();
        u.buf = head;
        match body {
            HttpBody::Length(n) => u.remaining = n,
            HttpBody::Chunked => u.rechunk = Some(chunked::Decoder::default()),
        }
        u
    }

    /// A tunnel from the first byte (`sockproxy.server`, `wstunnel.server`):
    /// the client's bytes go to the backend as they come, until it closes.
    /// Until the backend took some of them glint holds them all, so a
    /// backend that refuses the connection can be replaced by another.
    pub fn raw(protocol: Protocol) -> Upload {
        let mut u = Upload::empty(protocol);
        u.tunnel = true;
        u.tunneled = true;
        u
    }

    /// Encodes the head: everything before the body.
    fn start(&mut self, content_length: u64, head: HeadSource) {
        let env = match head {
            HeadSource::Env(env) => env,
            HeadSource::Ajp(f) => {
                let mut out = Vec::with_capacity(1024);
                // exchange::ajp13::start checked that it fits with the longest length
                // the body may reach.
                let _ = f.encode(content_length, &mut out);
                self.head_len = out.len();
                self.buf = out;
                return;
            }
        };
        let mut out = Vec::with_capacity(env.as_bytes().len() + 128);
        match self.protocol {
            Protocol::Scgi => scgi::encode_head(content_length, &env, &mut out),
            Protocol::FastCgi => fastcgi::encode_head(content_length, &env, &mut out),
            Protocol::Uwsgi => {
                // start_gateway refused variables too large for uwsgi's
                // 16-bit size, with the longest length the body may reach.
                let _ = uwsgi::encode_head(content_length, &env, &mut out);
            }
            // A CGI program gets its environment when it is started; only
            // the body goes down its stdin.
            Protocol::Cgi => {
                self.cgi_env = Some(env);
                self.content_length = content_length;
            }
            // (An HTTP request's head is built by the caller: `Upload::http`;
            // a tunnel has none; an AJP one is not made from an environment.)
            Protocol::Http | Protocol::SockProxy | Protocol::WsTunnel | Protocol::Ajp13 => {}
        }
        self.head_len = out.len();
        self.buf = out;
    }

    /// Appends body bytes in the protocol's framing.
    fn frame(&mut self, data: &[u8]) {
        match self.protocol {
            Protocol::Scgi
            | Protocol::Uwsgi
            | Protocol::Http
            | Protocol::Cgi
            | Protocol::SockProxy
            | Protocol::WsTunnel => self.buf.extend_from_slice(data),
            Protocol::FastCgi => fastcgi::stdin(data, &mut self.buf),
            Protocol::Ajp13 => {
                if let Some(a) = self.ajp.as_mut() {
                    a.push(data);
                }
                self.pump_ajp();
            }
        }
    }

    /// AJP: puts body bytes into the packets the container asked for, and
    /// answers an ask with the empty packet once the body is over.
    fn pump_ajp(&mut self) {
        let over = self.remaining == 0 && self.collecting.is_none();
        if let Some(a) = self.ajp.as_mut() {
            a.pump(over, &mut self.buf);
        }
    }

    /// AJP: the container asked for at most `n` more body bytes
    /// (GET_BODY_CHUNK); an error when it keeps asking without reading.
    pub fn grant(&mut self, n: usize) -> Result<(), String> {
        if let Some(a) = self.ajp.as_mut() {
            a.ask(n)?;
        }
        self.pump_ajp();
        Ok(())
    }

    /// Appends what ends the body.
    fn end_body(&mut self) {
        match self.protocol {
            Protocol::Scgi
            | Protocol::Uwsgi
            | Protocol::Http
            | Protocol::Cgi
            | Protocol::SockProxy
            | Protocol::WsTunnel => {}
            Protocol::FastCgi => fastcgi::end_stdin(&mut self.buf),
            // The container knows the length; an ask past it gets the
            // empty packet.
            Protocol::Ajp13 => self.pump_ajp(),
        }
    }

    fn encoded_len(&self, n: usize) -> usize {
        match self.protocol {
            Protocol::Scgi
            | Protocol::Uwsgi
            | Protocol::Http
            | Protocol::Cgi
            | Protocol::SockProxy
            | Protocol::WsTunnel
            | Protocol::Ajp13 => n,
            Protocol::FastCgi => n + fastcgi::stdin_overhead(n),
        }
    }

    /// The client still has body bytes to send.
    pub fn wants_body(&self) -> bool {
        self.remaining > 0 || self.collecting.is_some() || self.rechunk.is_some() || self.tunnel
    }

    /// CGI: the environment for the program (taken once, when it starts)
    /// and the body's length.
    pub fn take_cgi_env(&mut self) -> Option<(Env, u64)> {
        self.cgi_env.take().map(|e| (e, self.content_length))
    }

    /// After a 101: the client's bytes go to the backend until it closes.
    pub fn start_tunnel(&mut self) {
        self.tunnel = true;
        self.tunneled = true;
        // Nothing of it will be sent again: no need to hold it.
        self.whole = false;
    }

    /// The client closed its side of the tunnel (or the tunnel is over).
    pub fn end_tunnel(&mut self) {
        self.tunnel = false;
    }

    pub fn is_tunnel(&self) -> bool {
        self.tunnel
    }

    /// A tunnel was started: its end is the end of the connection.
    pub fn tunneled(&self) -> bool {
        self.tunneled
    }

    /// HTTP: puts `head` in place of the request's head (the Host of
    /// `proxy.replace-http-host` differs per backend); only before any of
    /// it was sent.
    pub fn replace_head(&mut self, head: &[u8]) {
        if self.whole && self.sent == 0 {
            self.buf.splice(..self.head_len, head.iter().copied());
            self.head_len = head.len();
        }
    }

    /// A chunked body is still being collected (no backend before it is complete).
    pub fn collecting(&self) -> bool {
        self.collecting.is_some()
    }

    /// How many more body bytes glint takes from the client now.
    pub fn room(&self) -> usize {
        if self.collecting.is_some() {
            return usize::MAX;
        }
        let waiting = self.ajp.as_ref().map_or(0, |a| a.waiting());
        let unsent = self.buf.len() - self.sent + waiting;
        let room = BODY_WINDOW.saturating_sub(unsent);
        if self.rechunk.is_some() || self.tunnel {
            return room;
        }
        room.min(self.remaining_usize())
    }

    fn remaining_usize(&self) -> usize {
        usize::try_from(self.remaining).unwrap_or(usize::MAX)
    }

    /// Takes body bytes from `input` (as many as the window allows); returns
    /// how many were used and whether the body is now complete. A chunked
    /// body over its limit is 413, a malformed one 400.
    pub fn take(&mut self, input: &[u8]) -> Result<(usize, bool), u16> {
        if let Some(c) = self.collecting.as_mut() {
            let used = c.decoder.decode(input, &mut c.body).map_err(|_| 400u16)?;
            if c.body.len() as u64 > c.limit {
                return Err(413);
            }
            self.received += used as u64;
            if !c.decoder.is_done() {
                return Ok((used, false));
            }
            if let Some(c) = self.collecting.take() {
                self.start(c.body.len() as u64, c.head);
                self.frame(&c.body);
                self.end_body();
            }
            return Ok((used, true));
        }
        if self.rechunk.is_some() || self.tunnel {
            return self.take_streamed(input);
        }
        let take = input.len().min(self.room());
        if take == 0 {
            return Ok((0, self.remaining == 0));
        }
        let data = &input[..take];
        let encoded = self.encoded_len(take);
        if self.sent > 0 && self.buf.len() + encoded > self.head_len + BODY_WINDOW + FRAMING_SLACK {
            // The request outgrows the window: let go of what the backend
            // has taken. From here on a failed backend cannot be retried.
            self.buf.drain(..self.sent);
            self.sent = 0;
            self.whole = false;
        }
        self.frame(data);
        self.remaining -= take as u64;
        self.received += take as u64;
        if self.remaining == 0 {
            self.end_body();
        }
        Ok((take, self.remaining == 0))
    }

    /// A tunnel's bytes, or a chunked body chunked anew, as far as the
    /// window allows; bytes the backend took are let go (neither is ever
    /// sent again).
    fn take_streamed(&mut self, input: &[u8]) -> Result<(usize, bool), u16> {
        let take = input.len().min(self.room());
        if take == 0 {
            return Ok((0, !self.wants_body()));
        }
        if self.sent > 0 {
            self.buf.drain(..self.sent);
            self.sent = 0;
            self.whole = false;
        }
        let input = &input[..take];
        let Some(d) = self.rechunk.as_mut() else {
            self.buf.extend_from_slice(input);
            self.received += take as u64;
            return Ok((take, false));
        };
        let mut plain = Vec::with_capacity(take);
        let used = d.decode(input, &mut plain).map_err(|_| 400u16)?;
        let done = d.is_done();
        if !plain.is_empty() {
            crate::httpup::chunked::write_chunk_header(plain.len(), &mut self.buf);
            self.buf.extend_from_slice(&plain);
            self.buf.extend_from_slice(b"\r\n");
        }
        if done {
            self.buf
                .extend_from_slice(crate::httpup::chunked::LAST_CHUNK);
            self.rechunk = None;
        }
        self.received += used as u64;
        Ok((used, done))
    }

    /// Drops body bytes the backend will never get (it answered, or failed);
    /// returns how many of `input` were body.
    pub fn discard(&mut self, input: &[u8]) -> usize {
        if self.collecting.is_some() {
            return 0;
        }
        if self.tunnel {
            self.received += input.len() as u64;
            return input.len();
        }
        if let Some(d) = self.rechunk.as_mut() {
            // Through the decoder, to find where the body ends.
            let mut sink = Vec::new();
            let used = d.decode(input, &mut sink).unwrap_or(input.len());
            if d.is_done() {
                self.rechunk = None;
            }
            self.received += used as u64;
            return used;
        }
        let n = input.len().min(self.remaining_usize());
        self.remaining -= n as u64;
        self.received += n as u64;
        n
    }

    /// Body bytes the client has yet to send (`Content-Length`).
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Bytes ready for the backend.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.sent..]
    }

    /// The backend took `n` bytes of [`Upload::pending`].
    pub fn advance(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.buf.len());
        self.written += n as u64;
    }

    /// The whole request has been written to the backend.
    pub fn all_sent(&self) -> bool {
        !self.wants_body() && self.sent == self.buf.len()
    }

    /// AJP: body bytes wait for the container to ask for them, so it is
    /// the backend's turn (its read time-out applies).
    pub fn awaits_ask(&self) -> bool {
        self.ajp.as_ref().is_some_and(|a| a.awaits_ask())
    }

    /// Glint still holds the whole request.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// Prepares to send the request again from its first byte, to another
    /// backend connection; false when part of it is gone.
    pub fn rewind(&mut self) -> bool {
        if self.whole {
            self.sent = 0;
        }
        self.whole
    }

    /// Glint will hold the whole request until it is sent, whatever the
    /// client does: a chunked body (collected first), or a `Content-Length`
    /// one so small that even framed a byte per record it fits the window.
    /// Only such a request can be sent on a kept connection the backend may
    /// have closed meanwhile: it can always be sent again on a new one.
    pub fn stays_whole(&self) -> bool {
        if !self.whole {
            return false;
        }
        if self.rechunk.is_some() || self.tunnel {
            return false;
        }
        if self.collecting.is_some() || self.remaining == 0 {
            return true;
        }
        let body_so_far = self.buf.len() - self.head_len;
        // Each client read becomes at least one record: at worst a header per byte.
        let worst = match self.protocol {
            Protocol::FastCgi => self
                .remaining_usize()
                .saturating_mul(1 + fastcgi::stdin_overhead(1))
                .saturating_add(fastcgi::stdin_overhead(1)),
            _ => self.remaining_usize(),
        };
        body_so_far.saturating_add(worst) <= BODY_WINDOW + FRAMING_SLACK
    }

    /// FastCGI: sets FCGI_KEEP_CONN in the request's BEGIN_REQUEST (for the
    /// connection it is about to be sent on); only before any of it is sent.
    pub fn set_keep_conn(&mut self, keep: bool) {
        if self.protocol == Protocol::FastCgi && self.whole && self.sent == 0 {
            fastcgi::set_keep_conn(&mut self.buf, keep);
        }
    }

    /// Bytes held in memory (for tests of the bound).
    pub fn held(&self) -> usize {
        self.buf.len() + self.collecting.as_ref().map_or(0, |c| c.body.len())
    }
}

#[cfg(test)]
mod tests;
