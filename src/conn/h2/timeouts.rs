//! The time-outs the protocol core leaves to the session, and what an idle
//! session gives back.

use super::stream;
use super::{FieldBuf, HeadCache, Io, Session, FAILED_SECS, SETTINGS_ACK_SECS};
use crate::proto::h2::ErrorCode;

/// A session that has carried at most this many streams is compacted as
/// soon as none is open (see [`Session::compact_if_done_early`]).
const FEW_STREAMS: u8 = 8;

impl Session {
    /// Once a second: the time-outs. Returns false when the connection is
    /// to close at once.
    pub(super) fn tick(&mut self, out_pending: bool, io: &mut Io<'_>) -> bool {
        let now = io.now();
        let g = std::rc::Rc::clone(&io.sv.config.global);
        if self.core.awaits_settings_ack()
            && self.core.wants_read()
            && now.saturating_sub(self.since)
                >= SETTINGS_ACK_SECS.min(g.limits.max_read_idle as u64)
        {
            log::debug!(
                "HTTP/2 client {:?} never acknowledged SETTINGS",
                io.info.peer
            );
            self.core
                .abort(ErrorCode::SETTINGS_TIMEOUT, "SETTINGS not acknowledged");
            self.drop_all(io.sv);
            return true;
        }
        if !self.core.wants_read() {
            let since = *self.failed_at.get_or_insert(now);
            if now.saturating_sub(since) >= FAILED_SECS {
                return false;
            }
        }
        if !out_pending {
            self.last_write = now;
        } else if now.saturating_sub(self.last_write) >= g.limits.max_write_idle as u64 {
            // The client stopped reading the socket.
            log::debug!("HTTP/2 client {:?} stopped reading", io.info.peer);
            return false;
        }
        let mut reset = Vec::new();
        for (&s, t) in self.tasks.iter_mut() {
            if !t.wants_to_send() {
                t.last_sent = now;
            } else if now.saturating_sub(t.last_sent) >= g.limits.max_write_idle as u64 {
                // A client that never opens the stream's (or the
                // connection's) window.
                reset.push(s);
                continue;
            }
            // Body bytes a backend waits for: the client's read time-out.
            let waits_body = !t.body.done && matches!(t.body.use_, stream::Use::Feed);
            if waits_body && now.saturating_sub(t.last_recv) >= g.limits.max_read_idle as u64 {
                reset.push(s);
            }
        }
        for s in reset {
            log::debug!("HTTP/2 stream {s} of {:?} timed out", io.info.peer);
            self.core.reset_stream(s, ErrorCode::CANCEL);
            self.drop_stream(s, io.sv);
            io.sv.board.end(io.info.ex.slot, s);
        }
        // A body dropped after its answer, whose client stopped sending:
        // the client's read time-out, as for a body a backend waits for.
        self.core.age_drains(g.limits.max_read_idle);
        if self.open() > 0 {
            self.idle_since = now;
        } else if now.saturating_sub(self.idle_since) >= g.limits.max_keep_alive_idle as u64 {
            // Idle: GOAWAY, and the connection closes once it is written.
            self.core.shutdown();
        }
        if self.open() == 0 && self.partial.is_empty() && !out_pending {
            self.compact();
        }
        true
    }

    /// Compacts at once a session that has carried only a few streams
    /// and has none open: most likely a client that fetched what it came
    /// for and now idles (a thousand such connections made within the
    /// same second held their buffers and caches until the tick: 6.7 KB
    /// each, the heap left at that peak). A busy connection waits for
    /// the tick (see [`Session::compact`]).
    pub(super) fn compact_if_done_early(&mut self) {
        if self.started <= FEW_STREAMS && self.open() == 0 && self.partial.is_empty() {
            self.compact();
        }
    }

    /// A connection with no stream open and nothing to write keeps only its
    /// protocol state, as between requests an HTTP/1 connection gives its
    /// buffers back to the pool: 1,000 idle connections that had each
    /// answered a request held 5.5 KB each before, mostly buffers and
    /// caches kept for a next request. Done on the second's tick, not each
    /// time the last open stream ends: a client that keeps streams going
    /// (a page load, h2load -m 10) is without an open stream after every
    /// batch of answers, and compacting then cost a tenth of its
    /// instructions per request (the stream tables grown again, each
    /// batch's first head encoded afresh, the head cache refilled).
    pub(super) fn compact(&mut self) {
        if self.compacted {
            return;
        }
        self.compacted = true;
        self.core.compact();
        self.tasks.shrink_to_fit();
        self.held.shrink_to_fit();
        self.fields = FieldBuf::default();
        self.heads = HeadCache::default();
        self.partial = Vec::new();
        self.chunk = Vec::new();
        self.view.compact();
        self.pump = Vec::new();
        self.events = Vec::new();
    }
}
