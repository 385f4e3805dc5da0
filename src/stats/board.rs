//! The connection table of the status page: one row per open client
//! connection (by its slot in the server), and per HTTP/2 stream with a
//! request in progress. Rows are kept up to date at a few moments (the
//! accept, bytes read and written, a request's start and end, the close)
//! with plain stores into reused rows: nothing is allocated once a slot's
//! strings have grown to the sizes its requests need.

use std::net::IpAddr;

/// What a connection is doing, with lighttpd's one-letter names (its
/// scoreboard and legend list them in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum State {
    Connect,
    #[default]
    ReqStart,
    Read,
    ReqEnd,
    ReadPost,
    HandleReq,
    RespStart,
    Write,
    RespEnd,
    Error,
    Close,
    KeepAlive,
}

impl State {
    /// Every state of the legend, keep-alive first as lighttpd lists it.
    pub const LEGEND: [State; 12] = [
        State::KeepAlive,
        State::Connect,
        State::ReqStart,
        State::Read,
        State::ReqEnd,
        State::ReadPost,
        State::HandleReq,
        State::RespStart,
        State::Write,
        State::RespEnd,
        State::Error,
        State::Close,
    ];

    /// The scoreboard's letter.
    pub fn letter(self) -> char {
        match self {
            State::Connect => '.',
            State::ReqStart => 'q',
            State::Read => 'r',
            State::ReqEnd => 'Q',
            State::ReadPost => 'R',
            State::HandleReq => 'h',
            State::RespStart => 's',
            State::Write => 'W',
            State::RespEnd => 'S',
            State::Error => 'E',
            State::Close => 'C',
            State::KeepAlive => 'k',
        }
    }

    /// The name in the legend and the table.
    pub fn name(self) -> &'static str {
        match self {
            State::Connect => "connect",
            State::ReqStart => "req-start",
            State::Read => "read",
            State::ReqEnd => "req-end",
            State::ReadPost => "readpost",
            State::HandleReq => "handle-req",
            State::RespStart => "resp-start",
            State::Write => "write",
            State::RespEnd => "resp-end",
            State::Error => "error",
            State::Close => "close",
            State::KeepAlive => "keep-alive",
        }
    }
}

/// One request's part of a row: what it asked for and since when.
#[derive(Debug, Default, Clone)]
pub struct Request {
    pub state: State,
    /// `clock.mono_secs` when it started (or the connection, before its
    /// first request).
    pub since: u64,
    pub host: String,
    /// Path and query as the client sent them.
    pub uri: String,
    /// The file that answers it, when one does.
    pub file: String,
    /// Bytes of its answer's body, once known (HTTP/2 streams).
    pub answer_len: u64,
}

/// One open connection.
#[derive(Debug, Default, Clone)]
pub struct Row {
    pub live: bool,
    pub peer: Option<IpAddr>,
    pub read: u64,
    pub written: u64,
    /// It speaks HTTP/2: its own state is keep-alive while no stream is
    /// open, as lighttpd shows it.
    pub h2: bool,
    pub req: Request,
    /// HTTP/2 streams with a request in progress: (stream id, request).
    pub streams: Vec<(u32, Request)>,
    /// Stream rows given back, reused for the next stream.
    spare: Vec<Request>,
}

impl Row {
    /// The state shown for the connection itself.
    pub fn state(&self) -> State {
        if self.h2 {
            if self.streams.is_empty() {
                State::KeepAlive
            } else {
                State::Write
            }
        } else {
            self.req.state
        }
    }
}

/// The rows of every open connection, by slot.
#[derive(Debug, Default)]
pub struct Board {
    /// Rows are kept (see [`Board::keep`]).
    on: bool,
    rows: Vec<Row>,
    /// HTTP/3's connections, by slot less [`QUIC_SLOTS`].
    quic: Vec<Row>,
}

/// Slots at or past this are QUIC connections (HTTP/3's, the
/// `H3_SLOT_BASE` of `msg`), each multiplexed as an HTTP/2 connection.
const QUIC_SLOTS: usize = 1 << 28;

impl Board {
    /// Whether rows are kept: only while something shows them (mod_status's
    /// page, glint's metrics). Turned off, every row goes; turned on, the
    /// connections accepted from then on have rows.
    pub fn keep(&mut self, on: bool) {
        self.on = on;
        if !on {
            self.rows = Vec::new();
            self.quic = Vec::new();
        }
    }

    /// Rows are kept (something shows them).
    pub fn is_kept(&self) -> bool {
        self.on
    }

    /// A connection's byte totals as they stand (HTTP/3: the UDP payload
    /// of its datagrams, from QUIC's own count).
    pub fn totals(&mut self, slot: usize, read: u64, written: u64) {
        if let Some(r) = self.row(slot) {
            r.read = read;
            r.written = written;
        }
    }

    /// A connection was accepted into `slot`.
    pub fn open(&mut self, slot: usize, peer: Option<IpAddr>, now: u64) {
        if !self.on {
            return;
        }
        let (rows, i) = if slot >= QUIC_SLOTS {
            (&mut self.quic, slot - QUIC_SLOTS)
        } else {
            (&mut self.rows, slot)
        };
        if rows.len() <= i {
            rows.resize_with(i + 1, Row::default);
        }
        let r = &mut rows[i];
        r.live = true;
        r.peer = peer;
        r.read = 0;
        r.written = 0;
        r.h2 = slot >= QUIC_SLOTS;
        r.req.state = State::ReqStart;
        r.req.since = now;
        r.req.host.clear();
        r.req.uri.clear();
        r.req.file.clear();
        while let Some((_, s)) = r.streams.pop() {
            r.spare.push(s);
        }
    }

    /// The connection in `slot` is gone.
    pub fn close(&mut self, slot: usize) {
        let r = if slot >= QUIC_SLOTS {
            self.quic.get_mut(slot - QUIC_SLOTS)
        } else {
            self.rows.get_mut(slot)
        };
        if let Some(r) = r {
            r.live = false;
        }
    }

    fn row(&mut self, slot: usize) -> Option<&mut Row> {
        let r = if slot >= QUIC_SLOTS {
            self.quic.get_mut(slot - QUIC_SLOTS)
        } else {
            self.rows.get_mut(slot)
        };
        r.filter(|r| r.live)
    }

    /// `n` bytes came from the client: an idle connection is reading a
    /// request now.
    pub fn read(&mut self, slot: usize, n: usize, now: u64) {
        if let Some(r) = self.row(slot) {
            r.read += n as u64;
            if matches!(r.req.state, State::ReqStart | State::KeepAlive) && !r.h2 {
                r.req.state = State::Read;
                r.req.since = now;
            }
        }
    }

    /// `n` bytes went to the client; `drained`: nothing is left queued,
    /// so an answer that was complete has been written.
    pub fn wrote(&mut self, slot: usize, n: u64, drained: bool) {
        if let Some(r) = self.row(slot) {
            r.written += n;
            if drained && r.req.state == State::Write {
                r.req.state = State::KeepAlive;
            }
        }
    }

    /// The connection speaks HTTP/2 from now on.
    pub fn h2(&mut self, slot: usize) {
        if let Some(r) = self.row(slot) {
            r.h2 = true;
        }
    }

    /// A request (on `stream`, 0 for HTTP/1) is being answered.
    pub fn begin(&mut self, slot: usize, stream: u32, now: u64, host: &str, uri: &str) {
        let Some(r) = self.row(slot) else { return };
        let req = if stream == 0 {
            &mut r.req
        } else {
            let s = r.spare.pop().unwrap_or_default();
            r.streams.push((stream, s));
            let Some((_, s)) = r.streams.last_mut() else {
                return;
            };
            s
        };
        req.state = State::HandleReq;
        req.since = now;
        req.answer_len = 0;
        set(&mut req.host, host);
        set(&mut req.uri, uri);
        req.file.clear();
    }

    /// What answers the request on `stream`: a file (empty if none) and
    /// the length of the answer's body when known.
    pub fn answered_by(&mut self, slot: usize, stream: u32, file: &str, len: u64) {
        if let Some(req) = self.request(slot, stream) {
            set(&mut req.file, file);
            req.answer_len = len;
        }
    }

    /// The answer to the request on `stream` is complete: it is being
    /// written (HTTP/1), or the stream's row goes (HTTP/2).
    pub fn end(&mut self, slot: usize, stream: u32) {
        let Some(r) = self.row(slot) else { return };
        if stream == 0 {
            if r.req.state == State::HandleReq {
                r.req.state = State::Write;
            }
        } else if let Some(i) = r.streams.iter().position(|(id, _)| *id == stream) {
            let (_, s) = r.streams.swap_remove(i);
            r.spare.push(s);
        }
    }

    fn request(&mut self, slot: usize, stream: u32) -> Option<&mut Request> {
        let r = self.row(slot)?;
        if stream == 0 {
            return Some(&mut r.req);
        }
        r.streams
            .iter_mut()
            .find(|(id, _)| *id == stream)
            .map(|(_, s)| s)
    }

    /// The open connections' rows.
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().chain(&self.quic).filter(|r| r.live)
    }
}

/// `dst = src`, in `dst`'s buffer.
fn set(dst: &mut String, src: &str) {
    dst.clear();
    dst.push_str(src);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_goes_from_read_to_keep_alive() {
        let mut b = Board::default();
        b.keep(true);
        b.open(3, None, 10);
        assert_eq!(b.rows().count(), 1);
        b.read(3, 80, 11);
        b.begin(3, 0, 11, "example.org", "/a?b");
        let r = b.rows().next().unwrap();
        assert_eq!(
            (r.state(), r.read, r.req.uri.as_str()),
            (State::HandleReq, 80, "/a?b")
        );
        b.end(3, 0);
        b.wrote(3, 100, false);
        assert_eq!(b.rows().next().unwrap().state(), State::Write);
        b.wrote(3, 5, true);
        let r = b.rows().next().unwrap();
        assert_eq!((r.state(), r.written), (State::KeepAlive, 105));
        b.close(3);
        assert_eq!(b.rows().count(), 0);
    }

    #[test]
    fn http2_streams_have_rows_of_their_own() {
        let mut b = Board::default();
        b.keep(true);
        b.open(0, None, 0);
        b.h2(0);
        assert_eq!(b.rows().next().unwrap().state(), State::KeepAlive);
        b.begin(0, 1, 1, "h", "/one");
        b.begin(0, 3, 1, "h", "/two");
        b.answered_by(0, 3, "/srv/two", 7);
        let r = b.rows().next().unwrap();
        assert_eq!(r.streams.len(), 2);
        assert_eq!(r.streams[1].1.file, "/srv/two");
        b.end(0, 1);
        b.end(0, 3);
        assert!(b.rows().next().unwrap().streams.is_empty());
        // An HTTP/3 connection's row: multiplexed, its streams as HTTP/2's.
        b.open(QUIC_SLOTS + 2, None, 0);
        assert_eq!(b.rows().count(), 2);
        b.begin(QUIC_SLOTS + 2, 1, 1, "h", "/three");
        let r = b.rows().nth(1).unwrap();
        assert_eq!((r.state(), r.streams.len()), (State::Write, 1));
        b.end(QUIC_SLOTS + 2, 1);
        assert_eq!(b.rows().nth(1).unwrap().state(), State::KeepAlive);
        b.close(QUIC_SLOTS + 2);
        assert_eq!(b.rows().count(), 1);
    }

    #[test]
    fn nothing_is_kept_unless_asked() {
        let mut b = Board::default();
        b.open(1, None, 0);
        b.begin(1, 0, 0, "h", "/a");
        assert_eq!(b.rows().count(), 0);
        b.keep(true);
        b.open(1, None, 0);
        assert_eq!(b.rows().count(), 1);
        b.keep(false);
        assert_eq!(b.rows().count(), 0);
    }
}
