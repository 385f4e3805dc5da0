//! The server side of one HTTP/2 connection as a sans-IO state machine.
//!
//! Bytes go in through [`Connection::recv`]; what happened comes out as
//! [`Event`]s; control frames and response heads are queued in an output
//! buffer ([`Connection::output`]) the caller writes to the socket; DATA
//! frames are framed by [`Connection::data_header`] and their payload sent
//! by the caller from wherever it lives. The sending side is in `send.rs`;
//! the reading side in `recv.rs`
//! (frames with field blocks and DATA) and `control.rs` (the rest).

mod control;
mod drain;
mod flow;
mod headers;
pub mod limits;
pub mod priority;
mod recv;
pub mod request;
mod send;
mod slots;
mod stream;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};

pub use limits::Config;
pub use priority::Priority;
pub use request::RequestHead;
pub use slots::StreamSlots;

use super::error::{Error, ErrorCode, StreamId};
use super::frame::{self, encode, setting, HEADER_LEN};
use super::hpack::{self, HeaderList};
use limits::Budget;
use priority::{Candidate, Scheduler};
use stream::{Closed, State, Stream};

/// Stream ids as hash keys: Fibonacci hashing (a multiply by 2^64/φ) and a
/// rotation that brings the mixed high bits down to where the table looks,
/// instead of SipHash. SipHash guards against keys chosen to collide; here
/// the client chooses the ids, but at most `max_concurrent_streams` (100)
/// records exist at once, so a chosen collision costs at most 100 probes,
/// and SipHash cost 4% of the CPU of a small response.
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamHasher(u64);

impl std::hash::Hasher for StreamHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(32)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n);
    }
}

/// A map keyed by stream id with [`StreamHasher`].
pub type StreamMap<V> = HashMap<StreamId, V, std::hash::BuildHasherDefault<StreamHasher>>;

/// What every client connection starts with (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What the client did, in order; drained with [`Connection::poll_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A new request. With `end_stream` it has no body.
    Request {
        stream: StreamId,
        head: RequestHead,
        end_stream: bool,
    },
    /// `len` more body bytes are buffered for `stream` (read them with
    /// [`Connection::body`]); `end_stream` means the body is complete.
    /// `len` may be 0 when only END_STREAM arrived.
    Data {
        stream: StreamId,
        len: usize,
        end_stream: bool,
    },
    /// Trailers ending the request body.
    Trailers {
        stream: StreamId,
        fields: HeaderList,
    },
    /// A stream the caller knows of ended abnormally: by the client's
    /// RST_STREAM (`by_peer`) or by a reset this side sent because of the
    /// client's error. Drop whatever work it had.
    Reset {
        stream: StreamId,
        code: ErrorCode,
        by_peer: bool,
    },
    /// A request the caller never saw was refused (malformed, over a
    /// limit, answered 431 here); for the error log.
    Rejected { stream: StreamId, why: &'static str },
    /// The client is closing; streams up to now still complete.
    GoAway { code: ErrorCode, debug: Vec<u8> },
}

/// A caller's request this connection cannot carry out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// Not an open stream (never was, or closed or reset since).
    NoSuchStream,
    /// This side already sent END_STREAM on it.
    Finished,
    /// A final response head was already sent.
    HeadAlreadySent,
    /// DATA before the response head.
    NoHead,
    /// More DATA than [`Connection::send_window`] allows.
    OverWindow,
    /// A head block from an encoder generation that has passed.
    Stale,
}

/// The peer's settings that shape what the server sends.
#[derive(Debug, Clone, Copy)]
struct PeerSettings {
    initial_window: u32,
    max_frame_size: u32,
}

/// Where reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Matching the 24-byte client preface; `usize` bytes matched so far.
    Preface(usize),
    /// The first frame must be the client's SETTINGS (§3.4).
    FirstSettings,
    Frames,
    /// A connection error: GOAWAY is queued, nothing more is read.
    Failed(Error),
}

/// A field block waiting for its CONTINUATION frames.
#[derive(Debug, Clone, Copy)]
struct Pending {
    stream: StreamId,
    end_stream: bool,
    priority: Option<frame::Priority>,
    continuations: u32,
}

/// One HTTP/2 connection, server side.
#[derive(Debug)]
pub struct Connection {
    cfg: Config,
    phase: Phase,
    streams: StreamSlots<Stream>,
    /// The highest stream id the client opened (or tried to).
    last_stream: StreamId,
    recently_closed: VecDeque<(StreamId, Closed)>,
    /// PRIORITY_UPDATE values for streams not opened yet (RFC 9218 §7.1).
    early_priority: VecDeque<(StreamId, Priority)>,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    pending: Option<Pending>,
    block: Vec<u8>,
    /// Field lists given back by the caller, for the next blocks.
    spare_lists: Vec<HeaderList>,
    conn_send: i64,
    conn_recv: i64,
    conn_unacked: u32,
    peer: PeerSettings,
    out: Vec<u8>,
    out_start: usize,
    events: VecDeque<Event>,
    sched: Scheduler,
    resets: Budget,
    empties: Budget,
    /// Set once GOAWAY went out: the last stream id that will be processed.
    goaway_sent: Option<StreamId>,
    goaway_received: bool,
    /// Scratch for encoding a field block.
    scratch: Vec<u8>,
    /// Our SETTINGS went out and the client has not acknowledged them yet.
    settings_unacked: bool,
}

impl Connection {
    /// A connection with `cfg`'s limits. Our SETTINGS and the connection
    /// WINDOW_UPDATE are queued at once: the server preface may go out
    /// before the client's arrives (§3.4).
    ///
    /// Windows below 65535 are raised to it: a client may send that much
    /// before our SETTINGS reach it, and would be punished for it.
    pub fn new(mut cfg: Config) -> Connection {
        cfg.stream_window = cfg.stream_window.clamp(65_535, frame::MAX_WINDOW);
        cfg.connection_window = cfg
            .connection_window
            .clamp(cfg.stream_window, frame::MAX_WINDOW);
        let mut c = Connection {
            cfg,
            phase: Phase::Preface(0),
            streams: StreamSlots::default(),
            last_stream: 0,
            recently_closed: VecDeque::new(),
            early_priority: VecDeque::new(),
            decoder: hpack::Decoder::default(),
            encoder: hpack::Encoder::new(),
            pending: None,
            block: Vec::new(),
            spare_lists: Vec::new(),
            conn_send: 65_535,
            conn_recv: 65_535,
            conn_unacked: 0,
            peer: PeerSettings {
                initial_window: 65_535,
                max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            },
            out: Vec::new(),
            out_start: 0,
            events: VecDeque::new(),
            sched: Scheduler::default(),
            resets: Budget::new(cfg.reset_budget, cfg.budget_window_ms),
            empties: Budget::new(cfg.empty_frame_budget, cfg.budget_window_ms),
            goaway_sent: None,
            goaway_received: false,
            scratch: Vec::new(),
            settings_unacked: true,
        };
        encode::settings(
            &mut c.out,
            &[
                (setting::MAX_CONCURRENT_STREAMS, cfg.max_concurrent_streams),
                (setting::INITIAL_WINDOW_SIZE, cfg.stream_window),
                (setting::MAX_HEADER_LIST_SIZE, cfg.max_header_list_size),
                // RFC 9218 §2.1: RFC 7540 priorities are ignored here.
                (setting::NO_RFC7540_PRIORITIES, 1),
            ],
        );
        let raise = cfg.connection_window.saturating_sub(65_535);
        if raise > 0 {
            encode::window_update(&mut c.out, 0, raise);
            c.conn_recv += raise as i64;
        }
        c
    }

    /// A connection that starts with HTTP/1.1's `Upgrade: h2c` (RFC 7540
    /// §3.2): `settings` is the decoded `HTTP2-Settings` value, the
    /// client's SETTINGS payload, taken as if a SETTINGS frame had brought
    /// it (the 101 response acknowledges it: no ACK is sent). The request
    /// that carried the upgrade is stream 1, half-closed from the client;
    /// the caller answers it with [`Self::send_headers`] as any other
    /// (there is no `Request` event for it). The client's preface follows.
    pub fn upgrade(cfg: Config, settings: &[u8]) -> Result<Connection, Error> {
        let mut c = Connection::new(cfg);
        let mut f = encode::head(settings.len(), frame::kind::SETTINGS, 0, 0).to_vec();
        f.extend_from_slice(settings);
        match frame::parse(&f, frame::MAX_MAX_FRAME_SIZE)? {
            Some((frame::Frame::Settings { ack: false, params }, _)) => c.apply_settings(params)?,
            _ => {
                return Err(Error::conn(
                    ErrorCode::PROTOCOL_ERROR,
                    "HTTP2-Settings is not a SETTINGS payload",
                ))
            }
        }
        c.last_stream = 1;
        let s = Stream::new(c.peer.initial_window, c.cfg.stream_window, true);
        c.streams.insert(1, s);
        Ok(c)
    }

    /// Releases memory kept only for speed while no stream is open (an
    /// idle connection among thousands): emptied maps and queues give
    /// their capacity back, scratch buffers go, the encoder forgets its
    /// recent literals. Protocol state (HPACK tables, windows, the
    /// recently closed ids) stays.
    pub fn compact(&mut self) {
        if !self.streams.is_empty() || self.pending.is_some() {
            return;
        }
        self.streams.shrink_to_fit();
        self.events.shrink_to_fit();
        self.recently_closed.shrink_to_fit();
        self.early_priority.shrink_to_fit();
        if self.output().is_empty() {
            self.out = Vec::new();
            self.out_start = 0;
        }
        self.scratch = Vec::new();
        self.block = Vec::new();
        self.spare_lists = Vec::new();
        self.encoder.compact();
        self.decoder.compact();
        self.sched.compact();
    }

    /// Our SETTINGS are not acknowledged yet. RFC 9113 §6.5.3 lets the
    /// server end a connection whose client takes too long
    /// (SETTINGS_TIMEOUT, see [`Self::abort`]); how long is the caller's.
    pub fn awaits_settings_ack(&self) -> bool {
        self.settings_unacked
    }

    /// Ends the connection for a reason the caller found (a time-out):
    /// GOAWAY(`code`) is queued and nothing more is read.
    pub fn abort(&mut self, code: ErrorCode, why: &'static str) {
        self.fail(Error::conn(code, why));
    }

    /// The next event, in the order they happened.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Bytes queued for the socket: control frames and response heads. Write
    /// them before any DATA frame, and never between a DATA frame's header
    /// and its payload; report what was written with [`Self::advance_output`].
    pub fn output(&self) -> &[u8] {
        &self.out[self.out_start..]
    }

    /// `n` bytes of [`Self::output`] were written.
    pub fn advance_output(&mut self, n: usize) {
        self.out_start = (self.out_start + n).min(self.out.len());
        if self.out_start == self.out.len() {
            self.out.clear();
            self.out_start = 0;
        } else if self.out_start > 16 * 1024 && self.out_start * 2 > self.out.len() {
            // Keep the buffer from growing at the front.
            self.out.drain(..self.out_start);
            self.out_start = 0;
        }
    }

    /// Nothing more will happen: GOAWAY was exchanged (or an error sent), no
    /// stream is left, and the output is written. Close the socket.
    pub fn is_done(&self) -> bool {
        let ending = matches!(self.phase, Phase::Failed(_))
            || ((self.goaway_sent.is_some() || self.goaway_received) && self.streams.is_empty());
        ending && self.output().is_empty()
    }

    /// Whether reading should go on (false after a connection error).
    pub fn wants_read(&self) -> bool {
        !matches!(self.phase, Phase::Failed(_))
    }

    /// Streams open or half-closed, and closed ones whose body is unread.
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// A stream's current priority.
    pub fn priority(&self, stream: StreamId) -> Option<Priority> {
        self.streams.get(&stream).map(|s| s.priority)
    }

    /// GOAWAY went out (a graceful shutdown, or an error): no new stream
    /// will be served on this connection.
    pub fn going_away(&self) -> bool {
        self.goaway_sent.is_some() || !self.wants_read()
    }

    /// Graceful shutdown: GOAWAY(NO_ERROR) naming the last stream that will
    /// be processed; those finish, later ones are ignored (the client
    /// retries them elsewhere, §6.8).
    pub fn shutdown(&mut self) {
        self.stop_drains();
        if self.goaway_sent.is_none() && self.wants_read() {
            self.goaway_sent = Some(self.last_stream);
            encode::goaway(&mut self.out, self.last_stream, ErrorCode::NO_ERROR, b"");
        }
    }

    /// Says whether `stream` has response data waiting to be sent; ready
    /// streams are what [`Self::next_stream_to_send`] chooses from.
    pub fn set_ready(&mut self, stream: StreamId, ready: bool) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        s.ready = ready;
        if ready && s.queued_at != Some(s.priority.urgency) {
            s.queued_at = Some(s.priority.urgency);
            self.sched.push(stream, s.priority.urgency);
        }
    }

    /// The ready stream to send the next DATA frame on (RFC 9218: lowest
    /// urgency first, in turn among equals), or `None` when no ready stream
    /// has window. Ask again after each frame; a stream stays ready until
    /// [`Self::set_ready`] says otherwise or it ends.
    pub fn next_stream_to_send(&mut self) -> Option<StreamId> {
        if self.conn_send <= 0 {
            return None;
        }
        let streams = &mut self.streams;
        self.sched.next(|id, u| match streams.get_mut(&id) {
            Some(s) if s.ready && s.queued_at == Some(u) && s.local_open() => {
                // Before its head, a stream waits for the caller to send one.
                if s.send_window > 0 && s.response_started {
                    Candidate::Send
                } else {
                    Candidate::Blocked
                }
            }
            Some(s) => {
                if s.queued_at == Some(u) {
                    s.queued_at = None;
                }
                Candidate::Stale
            }
            None => Candidate::Stale,
        })
    }

    /// The unconsumed request body of `stream`.
    pub fn body(&self, stream: StreamId) -> &[u8] {
        match self.streams.get(&stream) {
            Some(s) => &s.body[s.body_start..],
            None => &[],
        }
    }

    /// Marks `n` body bytes consumed; their flow-control credit goes back
    /// to the client (in a WINDOW_UPDATE once enough is owed).
    pub fn consume_body(&mut self, stream: StreamId, n: usize) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        let n = n.min(s.buffered());
        s.body_start += n;
        if s.body_start == s.body.len() {
            s.body.clear();
            s.body_start = 0;
        }
        let drained = s.state == State::Closed && s.buffered() == 0;
        if s.remote_open() {
            s.recv_unacked += n as u32;
            if flow::due(s.recv_unacked, self.cfg.stream_window) {
                encode::window_update(&mut self.out, stream, s.recv_unacked);
                s.recv_window += s.recv_unacked as i64;
                s.recv_unacked = 0;
            }
        }
        self.credit_conn(n);
        if drained {
            self.remove_stream(stream, Closed::EndStream);
        }
    }

    /// Consumes all of `stream`'s buffered body ([`Self::consume_body`]
    /// of [`Self::body`]'s length) with one look-up, and none more when
    /// there is nothing to consume (every request without a body).
    pub fn consume_all_body(&mut self, stream: StreamId) {
        let n = match self.streams.get(&stream) {
            // Nothing to credit; only a closed record waits to be removed.
            Some(s) if s.buffered() == 0 && s.state != State::Closed => return,
            Some(s) => s.buffered(),
            None => return,
        };
        self.consume_body(stream, n);
    }

    /// Cancels a stream from this side (a backend failed, the handler gave
    /// up): RST_STREAM(`code`), and the stream is gone.
    pub fn reset_stream(&mut self, stream: StreamId, code: ErrorCode) {
        match self.streams.get(&stream).map(|s| s.state) {
            // Closed on the wire already, kept only for its body: no frame.
            Some(State::Closed) => self.remove_stream(stream, Closed::EndStream),
            Some(_) => {
                encode::rst_stream(&mut self.out, stream, code);
                self.remove_stream(stream, Closed::ResetByUs);
            }
            None => {}
        }
    }

    /// Returns `n` bytes of connection-level credit, by WINDOW_UPDATE once due.
    fn credit_conn(&mut self, n: usize) {
        self.conn_unacked = self.conn_unacked.saturating_add(n as u32);
        if flow::due(self.conn_unacked, self.cfg.connection_window) {
            encode::window_update(&mut self.out, 0, self.conn_unacked);
            self.conn_recv += self.conn_unacked as i64;
            self.conn_unacked = 0;
        }
    }

    /// Remembers how a stream without a record ended (a fixed number of them).
    fn note_closed(&mut self, id: StreamId, how: Closed) {
        if self.recently_closed.len() >= limits::RECENTLY_CLOSED {
            self.recently_closed.pop_front();
        }
        self.recently_closed.push_back((id, how));
    }

    /// This side sent END_STREAM on `stream`.
    fn close_local(&mut self, stream: StreamId) {
        let Some(s) = self.streams.get_mut(&stream) else {
            return;
        };
        if end_local(s) {
            self.remove_stream(stream, Closed::EndStream);
        }
    }

    /// Forgets a closed stream; its unconsumed body's credit goes back to
    /// the connection window, or that window would shrink for good.
    fn remove_stream(&mut self, stream: StreamId, how: Closed) {
        if let Some(s) = self.streams.remove(&stream) {
            let left = s.buffered();
            if left > 0 {
                self.credit_conn(left);
            }
            self.note_closed(stream, how);
        }
    }
}

/// This side sent END_STREAM on `s`: its new state, or true when the
/// record is to go ([`Connection::close_local`]).
fn end_local(s: &mut Stream) -> bool {
    match s.state {
        State::Open => s.state = State::HalfClosedLocal,
        // The caller still has body to read: keep the record for it.
        State::HalfClosedRemote if s.buffered() > 0 => s.state = State::Closed,
        _ => return true,
    }
    false
}
