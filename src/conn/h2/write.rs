//! The writing side: the protocol core's frames (control frames, response
//! heads) into the connection's output queue, then DATA frames chosen by
//! the core's scheduler (RFC 9218 urgency, round-robin within one), each a
//! 9-byte header from memory followed by its payload: copied from memory
//! pieces, or queued as a file range (sendfile on cleartext, read into
//! records on TLS). The queue is filled only to [`FILL_HIGH_WATER`]: the
//! rest waits until the socket took that, so a large download cannot
//! occupy the socket's buffer ahead of a small answer that becomes ready
//! a moment later.

use std::rc::Rc;

use super::stream::{Chunk, Task};
use super::{Session, STREAM_LOW_WATER};
use crate::output::encode::Step;
use crate::output::Output;
use crate::proto::h2::ErrorCode;
use crate::stats::Stats;

/// Bytes of output queued (memory and file ranges) past which no more
/// DATA frames are framed until the socket took them. 64 KiB is what the
/// socket buffer of a loopback or LAN connection takes in one go and four
/// TLS records; smaller would cost system calls, larger would let one
/// stream's frames sit ahead of a newly ready stream's for longer.
pub const FILL_HIGH_WATER: u64 = 64 * 1024;

/// What one fill may put in the output buffer: [`FILL_HIGH_WATER`], one
/// more DATA frame of the default 16 KiB maximum with its header, and
/// control frames. The buffer is given this much once a DATA frame does
/// not fit in it (small answers never need more than a pooled buffer)
/// instead of doubling up to it, which copied what it held at each step
/// (a sixth of the instructions per request of a batch of ten 25 KB
/// answers over h2c, the buffer being given back between batches).
const FILL_BUF: usize = FILL_HIGH_WATER as usize + 16 * 1024 + 9 + 4 * 1024;

impl Session {
    /// Frames into `out` what can go: the core's own frames always, DATA up
    /// to [`FILL_HIGH_WATER`]. Streams whose backend paused and whose queue
    /// drained are noted in `self.pump`.
    pub fn fill(&mut self, out: &mut Output, now: u64, stats: &mut Stats) {
        self.control(out);
        self.end_waiting(out, stats);
        self.sliced = false;
        self.encode_pending = false;
        // Out of `self` while framing, so that each task is framed where
        // it lies in the table (nothing below uses `self.tasks`).
        let mut tasks = std::mem::take(&mut self.tasks);
        while out.pending_bytes() < FILL_HIGH_WATER {
            if !self.core.output().is_empty() {
                break;
            }
            let Some(s) = self.core.next_stream_to_send() else {
                break;
            };
            let Some((framed, finished)) = tasks.update(s, |task| {
                let framed = self.frame_one(s, task, out, now);
                if task.paused.get() && task.mem < STREAM_LOW_WATER && !self.pump.contains(&s) {
                    task.paused.set(false);
                    self.pump.push(s);
                }
                (framed, task.finished())
            }) else {
                self.core.set_ready(s, false);
                continue;
            };
            if finished {
                if let Some(task) = tasks.remove(&s) {
                    self.finish(s, &task, stats);
                }
            }
            self.control(out);
            if !framed {
                break;
            }
        }
        self.tasks = tasks;
    }

    /// Moves the core's queued frames into `out` (they must precede any
    /// DATA framed after this moment) while `out` has room: frames the
    /// client provokes (PING and SETTINGS acks) then stay in the core when
    /// the client does not read, where its own bound ends a flood
    /// (`limits::MAX_PENDING_OUTPUT`), instead of growing `out`.
    pub fn control(&mut self, out: &mut Output) {
        let n = self.core.output().len();
        if n > 0 && out.pending_bytes() < FILL_HIGH_WATER {
            out.mem.extend_from_slice(self.core.output());
            self.core.advance_output(n);
        }
    }

    /// Streams whose body is all out and whose END_STREAM (or reset) is
    /// due: an empty DATA frame with END_STREAM needs no window, so it must
    /// not wait in the scheduler for one.
    fn end_waiting(&mut self, out: &mut Output, stats: &mut Stats) {
        if !self.core.output().is_empty() {
            // HEADERS of these streams may still be in the core.
            return;
        }
        let due = self.tasks.take_due();
        for &s in &due {
            if let Some(mut task) = self.tasks.remove(&s) {
                self.end_stream(s, &mut task, out);
                self.settle(s, task, stats);
            }
        }
        self.tasks.reuse_due(due);
        self.control(out);
    }

    /// The answer on `s` is all framed: END_STREAM, or a reset when it
    /// was cut short.
    fn end_stream(&mut self, s: u32, task: &mut Task, out: &mut Output) {
        task.ended = true;
        if task.cut {
            self.core.reset_stream(s, ErrorCode::INTERNAL_ERROR);
            return;
        }
        match self.core.data_header(s, 0, true) {
            Ok(h) => out.mem.extend_from_slice(&h),
            Err(e) => log::debug!("HTTP/2 stream {s}: no END_STREAM: {e:?}"),
        }
    }

    /// One DATA frame on `s` (or its end); false when nothing could be
    /// framed (no window after all), so that the caller stops asking.
    fn frame_one(&mut self, s: u32, task: &mut Task, out: &mut Output, now: u64) -> bool {
        if task.ended {
            self.core.set_ready(s, false);
            return true;
        }
        let only_one = task.pieces.len() == 1;
        let Some(front) = task.pieces.front_mut() else {
            return self.nothing_queued(s, task, out, now);
        };
        let window = self.core.send_window(s) as u64;
        if window == 0 {
            return false;
        }
        let left = front.left();
        let n = window.min(left);
        let last = task.complete && !task.cut && only_one && n == left;
        let n = n as usize;
        if out.mem.capacity() - out.mem.len() < n + 9 {
            out.mem
                .reserve_exact((n + 9).max(FILL_BUF.saturating_sub(out.mem.len())));
        }
        // The header's place: filled once the payload is known to be there.
        let at = out.mem.len();
        out.mem.extend_from_slice(&[0; 9]);
        if let Chunk::File {
            file,
            offset,
            read: true,
            ..
        } = front
        {
            if let Err(e) = read_onto(&mut out.mem, file, *offset, n) {
                // Shrunk since it was opened: this stream's answer cannot be
                // what its head announced; the others go on.
                log::warn!("a file could not be read for an HTTP/2 answer: {e}");
                out.mem.truncate(at);
                task.drop_pieces();
                task.cut = true;
                self.end_stream(s, task, out);
                return true;
            }
        }
        let header = match self.core.data_header(s, n, last) {
            Ok(h) => h,
            Err(e) => {
                log::debug!("HTTP/2 stream {s}: DATA refused: {e:?}");
                out.mem.truncate(at);
                task.ended = true;
                task.drop_pieces();
                return true;
            }
        };
        out.mem[at..at + 9].copy_from_slice(&header);
        task.mem -= push_payload(front, n, out);
        if front.left() == 0 {
            if let Some(Chunk::File { .. }) = task.pieces.pop_front() {
                task.files -= 1;
            }
        }
        task.last_sent = now;
        if last {
            task.ended = true;
        }
        true
    }

    /// A stream with nothing queued: a compressed reply's next slice (one
    /// per turn for the connection), its end when complete, or a wait for
    /// its backend. False when it must wait for the next turn.
    fn nothing_queued(&mut self, s: u32, task: &mut Task, out: &mut Output, now: u64) -> bool {
        if task.encoded.is_some() {
            if self.sliced {
                // One slice per turn for the connection: the others' turn.
                self.encode_pending = true;
                return false;
            }
            self.sliced = true;
            self.compress_slice(task);
        } else if task.complete {
            self.end_stream(s, task, out);
        } else {
            // Waiting for its backend: ready again when data comes.
            self.core.set_ready(s, false);
            task.last_sent = now;
        }
        true
    }
}

/// The payload of a DATA frame: `n` bytes of `front` after its header in
/// `out` (a file range not read into memory is queued as one). Returns the
/// bytes of memory this took from the stream's queue.
#[inline]
fn push_payload(front: &mut Chunk, n: usize, out: &mut Output) -> usize {
    match front {
        Chunk::Mem(v, at) => {
            out.mem.extend_from_slice(&v[*at..*at + n]);
            *at += n;
            n
        }
        Chunk::Shared(v, at) => {
            out.mem.extend_from_slice(&v[*at..*at + n]);
            *at += n;
            n
        }
        Chunk::File {
            file,
            offset,
            len,
            read,
        } => {
            if !*read {
                out.push_file(Rc::clone(file), *offset, n as u64);
            }
            *offset += n as u64;
            *len -= n as u64;
            0
        }
    }
}

impl Session {
    /// One slice of a compressed reply into the stream's queue; at its end
    /// the stream is complete (cut, and so reset, when the encoder failed).
    fn compress_slice(&mut self, task: &mut Task) {
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
                log::warn!("an HTTP/2 answer could not be compressed: {e}");
                task.drop_pieces();
                task.cut = true;
                task.complete = true;
            }
        }
    }
}

/// Appends `n` bytes of `file` from `offset` to `buf`, read with `pread`
/// straight into its spare capacity: zeroing 16 KiB first for each frame
/// was 3% of the CPU of a 25 KB file over h2c. Short files are an error
/// (the caller truncates what was appended).
fn read_onto(
    buf: &mut Vec<u8>,
    file: &std::fs::File,
    offset: u64,
    n: usize,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    buf.reserve(n);
    let mut got = 0;
    while got < n {
        let spare = buf.spare_capacity_mut();
        let want = (n - got).min(spare.len());
        let at = offset + got as u64;
        // SAFETY: `spare` is the vector's reserved, unused capacity, at least
        // `want` bytes long; pread writes at most `want` bytes into it and
        // reads nothing from it.
        let r = unsafe {
            nix::libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                want,
                at as nix::libc::off_t,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        // SAFETY: the kernel initialised those `r` (<= `want`) bytes.
        unsafe { buf.set_len(buf.len() + r as usize) };
        got += r as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::read_onto;

    #[test]
    fn read_onto_appends_and_refuses_short_files() {
        let dir = std::env::temp_dir().join(format!("glint-h2-read-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("f");
        std::fs::write(&path, b"0123456789").expect("write");
        let f = std::fs::File::open(&path).expect("open");
        let mut buf = b"head".to_vec();
        read_onto(&mut buf, &f, 3, 5).expect("read");
        assert_eq!(buf, b"head34567");
        assert!(read_onto(&mut buf, &f, 8, 5).is_err(), "only 2 bytes left");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
