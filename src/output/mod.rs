//! The write queue: memory chunks and file chunks, and the one writer that
//! decides between `send` and `sendfile`.
//!
//! Handlers only append. Memory bytes go into one buffer (`mem`) and are
//! written with a single `send`; a file chunk is written with `sendfile`
//! straight from the open file, after the head was sent with `MSG_MORE` so the
//! kernel puts head and first file bytes in one packet.
//!
//! When the connection closes once the queue is written ([`Output::write_to`]
//! with `last`), the final bytes are held back for the close: the last memory
//! chunk goes with `MSG_MORE`, and a queue with a file corks the socket
//! (`TCP_CORK`) first. The close then sends them with its FIN in one segment,
//! one packet less per one-shot connection (and one ACK less from the client).
//!
//! [`encode`] is the compression filter a body can pass through on its way
//! into the queue (mod_deflate), free of any protocol's framing.

pub mod encode;
pub mod throttle;

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::rc::Rc;

use nix::errno::Errno;
use nix::sys::socket::{send, MsgFlags};

/// One piece of the queue.
#[derive(Debug)]
enum Chunk {
    /// `mem[previous end..end]`.
    Mem { end: usize },
    /// `remaining` bytes of `file` from `offset`.
    File {
        file: Rc<File>,
        offset: u64,
        remaining: u64,
    },
}

/// What one call of [`Output::write_to`] achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Everything queued has been written.
    Done,
    /// The socket is full; wait for writability.
    Blocked,
    /// `max` bytes were written with more queued (a download limit).
    Capped,
}

/// Why writing stopped for good.
#[derive(Debug)]
pub enum WriteError {
    /// The peer closed or reset the connection: nothing to log.
    PeerGone,
    /// A file got shorter while it was being sent: the response cannot be completed.
    FileTruncated,
    /// Anything else, worth a log line.
    Io(io::Error),
}

/// sendfile moves at most this much per call (Linux caps it near 2 GiB anyway).
const MAX_SENDFILE: u64 = 0x7fff_f000;

/// Pending response bytes of one connection.
#[derive(Debug, Default)]
pub struct Output {
    /// Memory bytes: response heads, small bodies, multipart separators.
    pub mem: Vec<u8>,
    /// Bytes of `mem` already written.
    mem_pos: usize,
    /// `mem` bytes up to here belong to a chunk in `chunks`.
    sealed: usize,
    chunks: VecDeque<Chunk>,
    /// Bytes written since the last call to [`Output::take_written`].
    written: u64,
    /// TCP_CORK is on: the socket is closed after this queue.
    corked: bool,
}

impl Output {
    /// True when nothing is waiting to be written.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty() && self.sealed == self.mem.len()
    }

    /// Bytes of memory waiting, a measure for back-pressure.
    pub fn pending_mem(&self) -> usize {
        self.mem.len() - self.mem_pos
    }

    /// Bytes waiting, memory and files: what an HTTP/2 session bounds
    /// the queue by before it frames more.
    pub fn pending_bytes(&self) -> u64 {
        let files: u64 = self
            .chunks
            .iter()
            .map(|c| match c {
                Chunk::File { remaining, .. } => *remaining,
                Chunk::Mem { .. } => 0,
            })
            .sum();
        self.pending_mem() as u64 + files
    }

    /// Files waiting to be sent, each holding a descriptor open until it is.
    pub fn pending_files(&self) -> usize {
        self.chunks
            .iter()
            .filter(|c| matches!(c, Chunk::File { .. }))
            .count()
    }

    /// Turns bytes appended to `mem` since the last seal into a chunk.
    fn seal(&mut self) {
        let end = self.mem.len();
        if end == self.sealed {
            return;
        }
        match self.chunks.back_mut() {
            Some(Chunk::Mem { end: e }) => *e = end,
            _ => self.chunks.push_back(Chunk::Mem { end }),
        }
        self.sealed = end;
    }

    /// Queues `len` bytes of `file` from `offset`, after everything appended so far.
    pub fn push_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.seal();
        self.chunks.push_back(Chunk::File {
            file,
            offset,
            remaining: len,
        });
    }

    /// Drops everything queued (the connection is closing).
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.mem.clear();
        self.mem_pos = 0;
        self.sealed = 0;
        self.corked = false;
    }

    /// Bytes written since the last call.
    pub fn take_written(&mut self) -> u64 {
        std::mem::take(&mut self.written)
    }

    /// Takes the memory buffer out (for pooling) when nothing is pending.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        debug_assert!(self.is_empty());
        self.clear();
        std::mem::take(&mut self.mem)
    }

    /// Writes as much as the socket takes, at most `max` bytes. `last`:
    /// the caller closes (or shuts the write side of) this TCP socket as
    /// soon as the queue is written, in the same turn, and nothing more is
    /// appended to it; the final bytes then wait for the FIN (see the
    /// module's words).
    pub fn write_to(
        &mut self,
        sock: BorrowedFd<'_>,
        last: bool,
        max: u64,
    ) -> Result<WriteOutcome, WriteError> {
        self.seal();
        if last && !self.corked && self.pending_files() > 0 {
            self.corked = cork(sock);
        }
        let stop = self.written.saturating_add(max);
        loop {
            let more_after = self.chunks.len() > 1 || (last && !self.corked);
            let room = stop - self.written;
            let Some(front) = self.chunks.front_mut() else {
                self.clear();
                return Ok(WriteOutcome::Done);
            };
            if room == 0 {
                return Ok(WriteOutcome::Capped);
            }
            match front {
                Chunk::Mem { end } => {
                    let end = *end;
                    let flags = if more_after {
                        MsgFlags::MSG_NOSIGNAL | MsgFlags::from_bits_retain(nix::libc::MSG_MORE)
                    } else {
                        MsgFlags::MSG_NOSIGNAL
                    };
                    let to = end.min(
                        self.mem_pos
                            .saturating_add(usize::try_from(room).unwrap_or(usize::MAX)),
                    );
                    match send(sock.as_raw_fd(), &self.mem[self.mem_pos..to], flags) {
                        Ok(n) => {
                            self.mem_pos += n;
                            self.written += n as u64;
                            if self.mem_pos == end {
                                self.chunks.pop_front();
                            }
                        }
                        // A signal before any byte went: write again.
                        Err(Errno::EINTR) => {}
                        Err(e) => return classify(e),
                    }
                }
                Chunk::File {
                    file,
                    offset,
                    remaining,
                } => {
                    let mut off = *offset as i64;
                    let count = (*remaining).min(MAX_SENDFILE).min(room) as usize;
                    match nix::sys::sendfile::sendfile64(sock, file.as_fd(), Some(&mut off), count)
                    {
                        Ok(0) => return Err(WriteError::FileTruncated),
                        Ok(n) => {
                            *offset += n as u64;
                            *remaining -= n as u64;
                            self.written += n as u64;
                            if *remaining == 0 {
                                self.chunks.pop_front();
                            }
                        }
                        Err(Errno::EINTR) => {}
                        Err(e) => return classify(e),
                    }
                }
            }
        }
    }
}

/// Sets TCP_CORK: full segments still go out, a partial one waits for the
/// close. False when the socket does not take it.
fn cork(sock: BorrowedFd<'_>) -> bool {
    crate::sockopt::set_tcp_int(sock, nix::libc::TCP_CORK, 1)
}

impl Output {
    /// Writes as much as a TLS connection takes, at most `max` bytes of
    /// plaintext: memory and file chunks go into it as plaintext (files
    /// read in record-sized pieces, never whole), its records to `sock`.
    pub fn write_tls<W: io::Write>(
        &mut self,
        tls: &mut crate::tls::TlsConn,
        sock: &mut W,
        max: u64,
    ) -> Result<WriteOutcome, WriteError> {
        self.seal();
        let stop = self.written.saturating_add(max);
        loop {
            let mut took = false;
            while let Some(front) = self.chunks.front_mut() {
                let room = stop - self.written;
                if room == 0 {
                    break;
                }
                let n = match front {
                    Chunk::Mem { end } => {
                        let end = *end;
                        let to = end.min(
                            self.mem_pos
                                .saturating_add(usize::try_from(room).unwrap_or(usize::MAX)),
                        );
                        let n = tls.write_plain(&self.mem[self.mem_pos..to]);
                        self.mem_pos += n;
                        if self.mem_pos == end {
                            self.chunks.pop_front();
                        }
                        n as u64
                    }
                    Chunk::File {
                        file,
                        offset,
                        remaining,
                    } => {
                        let n = tls
                            .send_file(file, *offset, (*remaining).min(room))
                            .map_err(tls_error)?;
                        *offset += n;
                        *remaining -= n;
                        if *remaining == 0 {
                            self.chunks.pop_front();
                        }
                        n
                    }
                };
                if n == 0 {
                    // The TLS send buffer is full.
                    break;
                }
                self.written += n;
                took = true;
            }
            match tls.write_tls_to(sock) {
                Ok(true) if self.chunks.is_empty() => {
                    self.clear();
                    return Ok(WriteOutcome::Done);
                }
                // The records of what the limit let through are out.
                Ok(true) if self.written == stop => return Ok(WriteOutcome::Capped),
                // Records flushed: room for more plaintext.
                Ok(true) if took => {}
                // Nothing went in although the buffer is empty (no
                // handshake yet): wait for the next event.
                Ok(true) => return Ok(WriteOutcome::Blocked),
                Ok(false) => return Ok(WriteOutcome::Blocked),
                Err(e) => return Err(tls_error(e)),
            }
        }
    }
}

fn tls_error(e: crate::tls::TlsError) -> WriteError {
    match e {
        crate::tls::TlsError::FileTruncated => WriteError::FileTruncated,
        crate::tls::TlsError::Io(e)
            if matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::NotConnected
                    | io::ErrorKind::WriteZero
            ) =>
        {
            WriteError::PeerGone
        }
        crate::tls::TlsError::Io(e) => WriteError::Io(e),
        other => WriteError::Io(io::Error::other(other.to_string())),
    }
}

/// Collapses a write error into the three cases that matter. EINTR is not
/// one of them: the callers write again at once.
fn classify(e: Errno) -> Result<WriteOutcome, WriteError> {
    match e {
        Errno::EAGAIN => Ok(WriteOutcome::Blocked),
        Errno::EPIPE | Errno::ECONNRESET | Errno::ENOTCONN | Errno::ESHUTDOWN => {
            Err(WriteError::PeerGone)
        }
        e => Err(WriteError::Io(io::Error::from(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    #[test]
    fn memory_and_file_chunks_arrive_in_order() {
        let dir = std::env::temp_dir().join(format!("glint-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(b"0123456789")
            .unwrap();
        let file = Rc::new(File::open(&path).unwrap());
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut out = Output::default();
        out.mem.extend_from_slice(b"head|");
        out.push_file(Rc::clone(&file), 2, 3);
        out.mem.extend_from_slice(b"|mid|");
        out.push_file(file, 7, 3);
        out.mem.extend_from_slice(b"|end");
        assert_eq!(
            out.write_to(a.as_fd(), false, u64::MAX).unwrap(),
            WriteOutcome::Done
        );
        assert!(out.is_empty());
        assert_eq!(out.take_written(), 20);
        drop(a);
        let mut got = String::new();
        b.read_to_string(&mut got).unwrap();
        assert_eq!(got, "head|234|mid|789|end");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The end of the last answer waits for the FIN (TCP_CORK, MSG_MORE):
    /// the close sends it, nothing is lost or held back.
    #[test]
    fn the_last_answer_goes_out_whole_with_the_close() {
        let dir = std::env::temp_dir().join(format!("glint-output-l-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let body: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &body).unwrap();
        let file = Rc::new(File::open(&path).unwrap());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        for with_file in [true, false] {
            let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            client
                .set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let (server, _) = listener.accept().unwrap();
            let mut out = Output::default();
            out.mem.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
            let mut want = out.mem.clone();
            if with_file {
                out.push_file(Rc::clone(&file), 0, body.len() as u64);
                want.extend_from_slice(&body);
            }
            assert_eq!(
                out.write_to(server.as_fd(), true, u64::MAX).unwrap(),
                WriteOutcome::Done
            );
            assert_eq!(corked(&server), with_file);
            // Nothing of it has left yet (far below one segment): it waits
            // for the FIN, in the kernel's send queue.
            assert_eq!(unsent(&server), want.len());
            drop(server);
            let mut got = Vec::new();
            client.read_to_end(&mut got).unwrap();
            assert_eq!(got, want);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Bytes in the socket's send queue not sent yet (SIOCOUTQNSD).
    fn unsent(sock: &std::net::TcpStream) -> usize {
        let mut n: nix::libc::c_int = 0;
        // SAFETY: a valid socket and a c_int for the kernel to fill, as
        // ioctl(SIOCOUTQNSD) requires.
        let rc = unsafe { nix::libc::ioctl(sock.as_raw_fd(), nix::libc::SIOCOUTQNSD, &mut n) };
        assert_eq!(rc, 0);
        n as usize
    }

    fn corked(sock: &std::net::TcpStream) -> bool {
        crate::sockopt::tcp_int(sock.as_fd(), nix::libc::TCP_CORK).is_some_and(|v| v != 0)
    }

    /// A cap (a download limit) stops the writer at that many bytes,
    /// within a memory chunk or a file, and the rest follows later.
    #[test]
    fn a_cap_stops_writing_and_the_rest_follows() {
        let dir = std::env::temp_dir().join(format!("glint-output-c-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let file = Rc::new(File::open(&path).unwrap());
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut out = Output::default();
        out.mem.extend_from_slice(b"head|");
        out.push_file(file, 0, 10);
        out.mem.extend_from_slice(b"|end");
        assert_eq!(
            out.write_to(a.as_fd(), false, 3).unwrap(),
            WriteOutcome::Capped
        );
        assert_eq!(out.take_written(), 3);
        assert_eq!(
            out.write_to(a.as_fd(), false, 7).unwrap(),
            WriteOutcome::Capped
        );
        assert_eq!(out.take_written(), 7);
        assert_eq!(
            out.write_to(a.as_fd(), false, 100).unwrap(),
            WriteOutcome::Done
        );
        assert_eq!(out.take_written(), 9);
        drop(a);
        let mut got = String::new();
        b.read_to_string(&mut got).unwrap();
        assert_eq!(got, "head|0123456789|end");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncated_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("glint-output-t-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"0123").unwrap();
        let file = Rc::new(File::open(&path).unwrap());
        let (a, _b) = UnixStream::pair().unwrap();
        let mut out = Output::default();
        out.push_file(file, 0, 100);
        assert!(matches!(
            out.write_to(a.as_fd(), false, u64::MAX),
            Err(WriteError::FileTruncated)
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
