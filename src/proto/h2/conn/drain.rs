//! A request body nobody needs any more: the answer went out whole (a
//! static file, an error page) while the client was still sending. RFC
//! 9113 §8.1 lets the server stop the body with RST_STREAM(NO_ERROR) at
//! once; but a stream reset makes every later frame on it one to ignore
//! (§5.1), so what the client sends next — trailers without END_STREAM, a
//! body longer than its content-length, a WINDOW_UPDATE past 2^31-1 — is
//! never judged, and whether it is depends on whether it was read before
//! the answer was sent. Instead the stream stays half-closed (local): its
//! body is dropped as it comes, its credit returned, its frames judged as
//! any open stream's, for one stream window more; a body that goes on
//! past that is stopped with RST_STREAM(NO_ERROR), as is one whose client
//! falls silent.

use super::*;

/// A stream whose answer is complete and whose body is dropped as it comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drain {
    /// Body bytes still taken (and dropped) before the stream is reset.
    pub left: u32,
    /// Ticks (seconds) it has been draining.
    pub age: u32,
}

impl Connection {
    /// The answer on `stream` is complete and its request body is not
    /// needed: what is buffered is dropped, and what comes is dropped as it
    /// arrives, up to one stream window (what a client may have in flight
    /// when the answer reaches it). A stream not ended on the wire yet is
    /// reset with NO_ERROR at once.
    pub fn drop_body(&mut self, stream: StreamId) {
        let Some(s) = self.streams.get(&stream) else {
            return;
        };
        if !s.remote_open() {
            let n = s.buffered();
            return self.consume_body(stream, n);
        }
        if s.local_open() {
            return self.reset_stream(stream, ErrorCode::NO_ERROR);
        }
        let n = s.buffered();
        self.consume_body(stream, n);
        if let Some(s) = self.streams.get_mut(&stream) {
            s.drain = Some(Drain {
                left: self.cfg.stream_window,
                age: 0,
            });
        }
    }

    /// DATA of `flow` bytes (padding included) on a draining stream, judged
    /// already: dropped, its credit returned; past the stream's budget the
    /// stream is reset with NO_ERROR.
    pub(super) fn drop_data(&mut self, id: StreamId, flow: usize, end_stream: bool) {
        self.credit_conn(flow);
        if end_stream {
            return self.close_remote(id);
        }
        let window = self.cfg.stream_window;
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(d) = s.drain.as_mut() else {
            return;
        };
        match d.left.checked_sub(flow as u32) {
            Some(left) => {
                d.left = left;
                super::recv::credit_stream(s, id, flow, window, &mut self.out);
            }
            None => self.reset_stream(id, ErrorCode::NO_ERROR),
        }
    }

    /// Once a second: draining streams age; those draining for `limit`
    /// seconds (the client's body stalled) are reset with NO_ERROR.
    pub fn age_drains(&mut self, limit: u32) {
        let mut over = Vec::new();
        for (&id, s) in self.streams.iter_mut() {
            if let Some(d) = s.drain.as_mut() {
                d.age += 1;
                if d.age >= limit {
                    over.push(id);
                }
            }
        }
        for id in over {
            self.reset_stream(id, ErrorCode::NO_ERROR);
        }
    }

    /// Every draining stream is reset with NO_ERROR (the connection is
    /// going away: nothing on them is awaited).
    pub fn stop_drains(&mut self) {
        let draining: Vec<StreamId> = self
            .streams
            .iter()
            .filter(|(_, s)| s.drain.is_some())
            .map(|(&id, _)| id)
            .collect();
        for id in draining {
            self.reset_stream(id, ErrorCode::NO_ERROR);
        }
    }
}
