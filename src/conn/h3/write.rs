//! The writing side: each request stream's framed bytes to its QUIC send
//! stream, refilled from the stream's queue a DATA frame at a time (memory
//! pieces copied, file ranges read with `pread`, a compressed reply a
//! slice at a time), as far as QUIC's flow control and send window take
//! them; the end of an answer finishes the stream (or resets it when the
//! answer was cut short). Backends paused for room are pumped once their
//! stream drained.

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
        self.write_control(conn);
        let ids: Vec<StreamId> = self.reqs.keys().copied().collect();
        let mut pump = Vec::new();
        for id in ids {
            let Some(mut req) = self.reqs.remove(&id) else {
                continue;
            };
            if write_req(conn, id, &mut req, io.now()) {
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
                    if write_req(conn, id, &mut req, io.now()) {
                        self.unacked.insert(id);
                    }
                    self.settle(conn, id, req);
                }
            }
        }
        self.close_if_done(conn);
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

/// Writes what QUIC takes of `req`'s answer, refilling as it goes.
/// Returns true when the stream was finished now (its end sent).
fn write_req(conn: &mut Connection, id: StreamId, req: &mut Req, now: u64) -> bool {
    // Bounded by QUIC's send window; this only guards a logic slip.
    for _ in 0..4096 {
        if req.out_at < req.out.len() {
            match conn.send_stream(id).write(&req.out[req.out_at..]) {
                Ok(n) => req.out_at += n,
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
