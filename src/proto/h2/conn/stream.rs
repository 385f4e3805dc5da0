//! One stream's record (RFC 9113 §5.1). Idle streams have none (an id above
//! the highest the client opened), closed ones lose theirs (a few ids are
//! remembered in `recently_closed` to classify late frames); what is kept is
//! one of the three states in between, or closed with body left to read.

use super::priority::Priority;

/// The states of §5.1 a record exists for, seen from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Both sides may still send.
    Open,
    /// The client sent END_STREAM; the server is still answering.
    HalfClosedRemote,
    /// The server sent END_STREAM; the request body is still arriving.
    HalfClosedLocal,
    /// Both sides sent END_STREAM but the caller has not read all of the
    /// body: the record stays (and counts toward the concurrency cap)
    /// until it has, or until the caller resets it.
    Closed,
}

/// How a stream was closed, for a frame that arrives on it afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Both sides sent END_STREAM: a later frame is the peer's error
    /// (§5.1, "closed": STREAM_CLOSED).
    EndStream,
    /// The server sent RST_STREAM: frames the client sent before it saw
    /// the reset are ignored (§5.1).
    ResetByUs,
    /// The client sent RST_STREAM: anything but PRIORITY, WINDOW_UPDATE or
    /// RST_STREAM after it is its error (§5.1, STREAM_CLOSED).
    ResetByPeer,
}

#[derive(Debug)]
pub struct Stream {
    pub state: State,
    /// What the server may still send (i64: a SETTINGS change can take it
    /// below zero, §6.9.2).
    pub send_window: i64,
    /// What the client may still send before a WINDOW_UPDATE.
    pub recv_window: i64,
    /// Bytes consumed (or discarded) whose credit is not yet returned.
    pub recv_unacked: u32,
    /// Request body received and not yet consumed; `body_start` is the
    /// first unconsumed byte.
    pub body: Vec<u8>,
    pub body_start: usize,
    pub content_length: Option<u64>,
    pub received: u64,
    pub priority: Priority,
    /// The caller has data to send on it.
    pub ready: bool,
    /// The urgency it is queued at in the scheduler, if it is.
    pub queued_at: Option<u8>,
    /// A final (non-1xx) response head was sent.
    pub response_started: bool,
    /// The answer is complete and the body is dropped as it comes.
    pub drain: Option<super::drain::Drain>,
}

impl Stream {
    pub fn new(send_window: u32, recv_window: u32, end_stream: bool) -> Stream {
        Stream {
            state: if end_stream {
                State::HalfClosedRemote
            } else {
                State::Open
            },
            send_window: send_window as i64,
            recv_window: recv_window as i64,
            recv_unacked: 0,
            body: Vec::new(),
            body_start: 0,
            content_length: None,
            received: 0,
            priority: Priority::default(),
            ready: false,
            queued_at: None,
            response_started: false,
            drain: None,
        }
    }

    pub fn remote_open(&self) -> bool {
        matches!(self.state, State::Open | State::HalfClosedLocal)
    }

    pub fn local_open(&self) -> bool {
        matches!(self.state, State::Open | State::HalfClosedRemote)
    }

    /// Unconsumed body bytes.
    pub fn buffered(&self) -> usize {
        self.body.len() - self.body_start
    }
}
