//! The writing side: each request stream's framed bytes to its QUIC send
//! stream, refilled from the stream's queue a DATA frame at a time (memory
//! pieces copied, file ranges read with `pread`, a compressed reply a
//! slice at a time), as far as QUIC's flow control and send window take
//! them; the end of an answer finishes the stream (or resets it when the
//! answer was cut short). Backends paused for room are pumped once their
//! stream drained.
//!
//! `connection.kbytes-per-second` and `server.kbytes-per-second` limit
//! what the request streams are given (HEADERS and DATA frames: every
//! byte of the answers), with the accounting of the TCP connections
//! (`output::throttle`): the connection's scope sets the limits for all
//! its streams together, as for HTTP/2; once the second's allowance is
//! used the connection is held, writes nothing more and waits for the
//! tick (QUIC's own ACKs and timers go on meanwhile).

use std::os::unix::fs::FileExt;

use quinn_proto::{Connection, StreamId, VarInt, WriteError};

use super::session::{stream_of, Io, Req, Session};
use crate::conn::h2::stream::{Chunk, Task};
use crate::conn::h2::STREAM_LOW_WATER;
use crate::output::encode::Step;
use crate::proto::h3::{frame, Code};

/// DATA payload per frame: 16 KiB, what one QUIC send call copies without
/// growing the stream's buffer past what the send window holds anyway.
const FRAME: u64 = 16 * 1024;

/// What refilling a stream's output came to.
enum Fill {
    /// A frame was added.
    Framed,
    /// The answer is all out: finish the stream.
    End,
    /// Nothing to add now (a backend has not sent more).
    Wait,
}

impl Session {
    /// Writes every stream that has something to send, then lets go of the
    /// finished ones and pumps paused backends.
    pub fn write_all(&mut self, conn: &mut Connection, io: &mut Io<'_>) {
        if std::mem::take(&mut self.login_refused) {
            // The next guess costs a new connection (and its handshake).
            self.goaway(conn);
        }
        self.write_control(conn);
        let mut budget = Budget {
            left: self.throttle.allowance(&io.sv.scope_bytes),
            used: 0,
        };
        self.write_streams(conn, io, &mut budget);
        self.throttle.wrote(budget.used, &mut io.sv.scope_bytes);
        if budget.left == 0 {
            // Held until the tick lifts it (a limit was reached).
            self.throttle.hold();
        }
        self.close_if_done(conn);
    }

    fn write_streams(&mut self, conn: &mut Connection, io: &mut Io<'_>, budget: &mut Budget) {
        let ids: Vec<StreamId> = self.reqs.keys().copied().collect();
        let mut pump = Vec::new();
        for id in ids {
            let Some(mut req) = self.reqs.remove(&id) else {
                continue;
            };
            if write_req(conn, id, &mut req, io.now(), budget) {
                self.unacked.insert(id);
            }
            if let Some(t) = req.task.as_ref() {
                if t.paused.get() && t.mem < STREAM_LOW_WATER && t.gw.is_some() {
                    t.paused.set(false);
                    pump.push(stream_of(id));
                }
            }
            self.settle(conn, id, req);
        }
        for s in pump {
            self.with_sink(s, io, |sink, io, job| {
                let now = io.now();
                io.sv.upstream.pump(job, sink, now, io.registry);
            });
            if let Some(id) = super::session::stream_id(s) {
                if let Some(mut req) = self.reqs.remove(&id) {
                    if write_req(conn, id, &mut req, io.now(), budget) {
                        self.unacked.insert(id);
                    }
                    self.settle(conn, id, req);
                }
            }
        }
    }

    /// Puts a stream back, or lets it go once its answer is out and no
    /// backend needs its body; a body still coming is then not read
    /// (STOP_SENDING with H3_NO_ERROR, RFC 9114 §4.1.1).
    fn settle(&mut self, conn: &mut Connection, id: StreamId, req: Req) {
        if !req.finished() {
            self.reqs.insert(id, req);
            return;
        }
        if !req.fin_read {
            let _ = conn
                .recv_stream(id)
                .stop(VarInt::from_u32(Code::NO_ERROR.0 as u32));
        }
    }
}

/// What the download limits let the streams be given in one
/// `write_all` (`u64::MAX`: no limit), and what they were.
struct Budget {
    left: u64,
    used: u64,
}

/// Writes what QUIC and `budget` take of `req`'s answer, refilling as it
/// goes. Returns true when the stream was finished now (its end sent).
fn write_req(
    conn: &mut Connection,
    id: StreamId,
    req: &mut Req,
    now: u64,
    budget: &mut Budget,
) -> bool {
    // Bounded by QUIC's send window; this only guards a logic slip.
    for _ in 0..4096 {
        if req.out_at < req.out.len() {
            if budget.left == 0 {
                return false;
            }
            let pending = &req.out[req.out_at..];
            let cap = usize::try_from(budget.left)
                .unwrap_or(usize::MAX)
                .min(pending.len());
            match conn.send_stream(id).write(&pending[..cap]) {
                Ok(n) => {
                    req.out_at += n;
                    budget.left -= n as u64;
                    budget.used += n as u64;
                }
                Err(WriteError::Blocked) => return false,
                Err(_) => {
                    // Stopped or gone: nothing more is sent.
                    gone(req);
                    return false;
                }
            }
            if req.out_at < req.out.len() {
                return false;
            }
        }
        req.out.clear();
        req.out_at = 0;
        let Some(task) = req.task.as_mut() else {
            return false;
        };
        if task.ended {
            return false;
        }
        match fill(task, &mut req.out) {
            Fill::Framed => task.last_sent = now,
            Fill::Wait => return false,
            Fill::End => {
                task.ended = true;
                let mut s = conn.send_stream(id);
                if task.cut {
                    let _ = s.reset(VarInt::from_u32(Code::INTERNAL_ERROR.0 as u32));
                    return false;
                }
                return s.finish().is_ok();
            }
        }
    }
    false
}

/// The client will take nothing more on this stream.
fn gone(req: &mut Req) {
    req.out.clear();
    req.out_at = 0;
    if let Some(t) = req.task.as_mut() {
        t.drop_pieces();
        t.ended = true;
    }
}

/// One DATA frame from the front of the task's queue into `out`.
fn fill(task: &mut Task, out: &mut Vec<u8>) -> Fill {
    if task.encoded.is_some() && task.pieces.is_empty() {
        compress_slice(task);
    }
    let Some(front) = task.pieces.front_mut() else {
        return if task.complete { Fill::End } else { Fill::Wait };
    };
    let n = front.left().min(FRAME);
    frame::write_data_head(n, out);
    let n = n as usize;
    match front {
        Chunk::Mem(v, at) => {
            out.extend_from_slice(&v[*at..*at + n]);
            *at += n;
            task.mem -= n;
        }
        Chunk::Shared(v, at) => {
            out.extend_from_slice(&v[*at..*at + n]);
            *at += n;
            task.mem -= n;
        }
        Chunk::File {
            file, offset, len, ..
        } => {
            let at = out.len();
            out.resize(at + n, 0);
            if let Err(e) = file.read_exact_at(&mut out[at..], *offset) {
                // Shrunk since it was opened: the answer cannot be what
                // its head said; the stream is reset.
                log::warn!("a file could not be read for an HTTP/3 answer: {e}");
                out.clear();
                task.drop_pieces();
                task.cut = true;
                task.complete = true;
                return Fill::End;
            }
            *offset += n as u64;
            *len -= n as u64;
        }
    }
    if front.left() == 0 {
        if let Some(Chunk::File { .. }) = task.pieces.pop_front() {
            task.files -= 1;
        }
    }
    Fill::Framed
}

/// One slice of a compressed reply into the task's queue; at its end the
/// task is complete (cut, and so reset, when the encoder failed).
fn compress_slice(task: &mut Task) {
    let Some(mut enc) = task.encoded.take() else {
        return;
    };
    let mut emit = |b: &[u8]| {
        task.push_mem(b);
    };
    match enc.step_into(&mut emit) {
        Ok(Step::Pending) => task.encoded = Some(enc),
        Ok(Step::Done) => task.complete = true,
        Err(e) => {
            log::warn!("an HTTP/3 answer could not be compressed: {e}");
            task.drop_pieces();
            task.cut = true;
            task.complete = true;
        }
    }
}
