//! A session's life beside its streams: streams ended early, GOAWAY and
//! the close that follows it, the once-a-second time-outs, and a job's
//! wake-up.

use std::rc::Rc;

use quinn_proto::{Connection, StreamId, VarInt};

use super::session::{stream_id, Io, Session};
use crate::conn::h2::stream::Use;
use crate::proto::h3::{frame, Code};

impl Session {
    /// Ends a request stream early (reset by the client, stopped, failed):
    /// its job ends, its queue is dropped.
    pub fn drop_req(&mut self, _conn: &mut Connection, id: StreamId, io: &mut Io<'_>) {
        if let Some(mut r) = self.reqs.remove(&id) {
            if let Some(t) = r.task.as_mut() {
                t.drop_pieces();
                if let Some(g) = t.gw.take() {
                    io.sv.upstream.finish(g.start.job);
                }
            }
        }
    }

    /// Every stream ends (the connection is gone).
    pub fn drop_all(&mut self, io: &mut Io<'_>) {
        for (_, mut r) in self.reqs.drain() {
            if let Some(t) = r.task.as_mut() {
                t.drop_pieces();
                if let Some(g) = t.gw.take() {
                    io.sv.upstream.finish(g.start.job);
                }
            }
        }
        self.unis.clear();
    }

    /// Graceful shutdown: GOAWAY naming the first request stream not
    /// processed; the connection closes once the open ones are answered.
    pub fn goaway(&mut self, conn: &mut Connection) {
        if self.goaway.is_some() {
            return;
        }
        self.goaway = Some(self.next_index);
        frame::write_goaway(self.next_index * 4, &mut self.control_out);
        self.write_control(conn);
        self.close_if_done(conn);
    }

    /// After GOAWAY, with every request answered: the connection closes.
    pub fn close_if_done(&mut self, conn: &mut Connection) {
        let done = self.reqs.is_empty() && self.unacked.is_empty() && self.control_out.is_empty();
        if self.goaway.is_some() && done {
            conn.close(
                std::time::Instant::now(),
                VarInt::from_u32(Code::NO_ERROR.0 as u32),
                bytes::Bytes::new(),
            );
        }
    }

    /// Once a second: a connection with no request open for
    /// `server.max-keep-alive-idle` says GOAWAY and closes; a stream whose
    /// client stopped reading its answer for `server.max-write-idle`, or
    /// whose backend waits for body bytes past `server.max-read-idle`, is
    /// reset.
    pub fn tick(&mut self, conn: &mut Connection, io: &mut Io<'_>) {
        let now = io.now();
        let g = Rc::clone(&io.sv.config.global);
        if !self.reqs.is_empty() {
            self.idle_since = now;
        } else if now.saturating_sub(self.idle_since) >= g.limits.max_keep_alive_idle as u64
            && !conn.is_handshaking()
        {
            self.goaway(conn);
        }
        let mut late = Vec::new();
        for (&id, r) in self.reqs.iter_mut() {
            let Some(t) = r.task.as_mut() else { continue };
            if !t.wants_to_send() && r.out_at >= r.out.len() {
                t.last_sent = now;
            } else if now.saturating_sub(t.last_sent) >= g.limits.max_write_idle as u64 {
                late.push(id);
                continue;
            }
            let waits_body = !t.body.done && matches!(t.body.use_, Use::Feed);
            if waits_body && now.saturating_sub(t.last_recv) >= g.limits.max_read_idle as u64 {
                late.push(id);
            }
        }
        for id in late {
            log::debug!("HTTP/3 stream {id} of {} timed out", self.peer);
            let code = VarInt::from_u32(Code::REQUEST_CANCELLED.0 as u32);
            let _ = conn.send_stream(id).reset(code);
            let _ = conn.recv_stream(id).stop(code);
            self.drop_req(conn, id, io);
        }
        self.close_if_done(conn);
    }

    /// The job of `stream` can take body again (or the loop woke it).
    pub fn wake(&mut self, conn: &mut Connection, stream: u32, io: &mut Io<'_>) {
        let Some(id) = stream_id(stream) else { return };
        if let Some(mut req) = self.reqs.remove(&id) {
            self.feed_body(id, &mut req, io);
            self.reqs.insert(id, req);
            self.read_req(conn, id, io);
        }
    }
}
