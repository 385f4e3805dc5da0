//! The compression filter between a response body and the output queue.
//!
//! A [`BodyEncoder`] holds the body still to be compressed (memory, shared
//! bytes, file ranges) and one [`Encoder`]; [`BodyEncoder::step`] compresses
//! a bounded slice of it and hands the compressed bytes to the caller, who
//! frames them for its protocol (an HTTP/1.1 chunk, the raw bytes of a
//! close-delimited HTTP/1.0 body, later HTTP/2 DATA frames). The filter
//! knows no protocol: that is what lets one filter serve each of them.
//!
//! The slice bounds how long one turn of the event loop compresses: brotli
//! at quality 5 takes about 84 ms for a 2 MiB block here (the
//! `deflate.work-block-size` default), which is why callers pass at most
//! [`MAX_SLICE`]: 128 KiB of HTML is 0.8-1.2 ms at gzip 6 and 0.2 ms at
//! zstd 3 (7 MB of rustdoc pages, release build). brotli 5 buffers its
//! input and encodes a metablock of about 256 KiB at a time, 5-10 ms
//! whatever the slice; flushing it every 32 KiB kept that at 7 ms and cost
//! 6 % more bytes, so it is not done.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use crate::compress::encoder::CompressError;
use crate::compress::{Encoder, Progress};

/// The most input one [`BodyEncoder::step`] should take in one turn of the loop.
pub const MAX_SLICE: usize = 128 * 1024;

/// File bytes read per `pread`: 64 KiB, a quarter of a slice, so that the
/// read buffer stays small and a slice still costs only two reads.
const READ_BLOCK: usize = 64 * 1024;

/// Input still to be compressed, in order.
#[derive(Debug)]
enum Input {
    Mem {
        bytes: Vec<u8>,
        pos: usize,
    },
    Shared {
        bytes: Rc<[u8]>,
        pos: usize,
    },
    File {
        file: Rc<File>,
        offset: u64,
        remaining: u64,
    },
}

/// Why a compressed body cannot be completed.
#[derive(Debug)]
pub enum FilterError {
    Compress(CompressError),
    /// A file piece could not be read.
    Read(io::Error),
    /// A file got shorter than its piece while it was being compressed.
    FileTruncated,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::Compress(e) => write!(f, "compression failed: {e}"),
            FilterError::Read(e) => write!(f, "reading the body failed: {e}"),
            FilterError::FileTruncated => f.write_str("a file shrank while it was compressed"),
        }
    }
}

impl From<CompressError> for FilterError {
    fn from(e: CompressError) -> Self {
        FilterError::Compress(e)
    }
}

/// Whether a compressed body is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Input is left, or its end has not been announced yet.
    Pending,
    /// The input ended and the last compressed bytes were given out.
    Done,
}

/// One response body on its way through a compressor.
pub struct BodyEncoder {
    enc: Encoder,
    input: VecDeque<Input>,
    ended: bool,
    done: bool,
    /// Compressed bytes between the encoder and `emit` (one budget's worth).
    packed: Vec<u8>,
    /// File bytes read for the encoder.
    read_buf: Vec<u8>,
}

impl fmt::Debug for BodyEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyEncoder")
            .field("enc", &self.enc)
            .field("pieces", &self.input.len())
            .field("ended", &self.ended)
            .field("done", &self.done)
            .finish()
    }
}

impl BodyEncoder {
    pub fn new(enc: Encoder) -> BodyEncoder {
        BodyEncoder {
            enc,
            input: VecDeque::new(),
            ended: false,
            done: false,
            packed: Vec::new(),
            read_buf: Vec::new(),
        }
    }

    /// Queues a copy of `bytes`.
    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(Input::Mem { bytes: b, .. }) = self.input.back_mut() {
            b.extend_from_slice(bytes);
        } else {
            self.input.push_back(Input::Mem {
                bytes: bytes.to_vec(),
                pos: 0,
            });
        }
    }

    /// Queues bytes shared with a cache.
    pub fn push_shared(&mut self, bytes: Rc<[u8]>) {
        if !bytes.is_empty() {
            self.input.push_back(Input::Shared { bytes, pos: 0 });
        }
    }

    /// Queues `len` bytes of `file` from `offset`, read as they are compressed.
    pub fn push_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len > 0 {
            self.input.push_back(Input::File {
                file,
                offset,
                remaining: len,
            });
        }
    }

    /// No more input will come: the next steps finish the stream.
    pub fn end(&mut self) {
        self.ended = true;
    }

    /// Input is queued.
    pub fn has_input(&self) -> bool {
        !self.input.is_empty()
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Uncompressed bytes taken so far.
    pub fn bytes_in(&self) -> u64 {
        self.enc.bytes_in()
    }

    /// Compressed bytes given out so far.
    pub fn bytes_out(&self) -> u64 {
        self.enc.bytes_out()
    }

    /// Compresses at most `slice` bytes of the queued input, giving the
    /// compressed bytes to `emit` as they come (each call at most the
    /// encoder's output budget, never empty). Once the input has ended and
    /// is all taken, finishes the stream. With `flush`, a queue drained
    /// before its end is flushed so that the client can decode all of it
    /// now (`deflate.sync-flush`).
    pub fn step(
        &mut self,
        slice: usize,
        flush: bool,
        emit: &mut dyn FnMut(&[u8]),
    ) -> Result<Step, FilterError> {
        if self.done {
            return Ok(Step::Done);
        }
        let mut budget = slice.max(1);
        while budget > 0 {
            let Some(front) = self.input.front_mut() else {
                break;
            };
            let used = match front {
                Input::Mem { bytes, pos } => {
                    let end = bytes.len().min(*pos + budget);
                    feed(&mut self.enc, &bytes[*pos..end], &mut self.packed, emit)?;
                    let n = end - *pos;
                    *pos = end;
                    (n, *pos == bytes.len())
                }
                Input::Shared { bytes, pos } => {
                    let end = bytes.len().min(*pos + budget);
                    feed(&mut self.enc, &bytes[*pos..end], &mut self.packed, emit)?;
                    let n = end - *pos;
                    *pos = end;
                    (n, *pos == bytes.len())
                }
                Input::File {
                    file,
                    offset,
                    remaining,
                } => {
                    let want = (*remaining).min(budget.min(READ_BLOCK) as u64) as usize;
                    self.read_buf.resize(want, 0);
                    let n = loop {
                        match file.read_at(&mut self.read_buf, *offset) {
                            Ok(0) => return Err(FilterError::FileTruncated),
                            Ok(n) => break n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            Err(e) => return Err(FilterError::Read(e)),
                        }
                    };
                    feed(&mut self.enc, &self.read_buf[..n], &mut self.packed, emit)?;
                    *offset += n as u64;
                    *remaining -= n as u64;
                    (n, *remaining == 0)
                }
            };
            budget = budget.saturating_sub(used.0);
            if used.1 {
                self.input.pop_front();
            }
        }
        if !self.input.is_empty() {
            return Ok(Step::Pending);
        }
        if self.ended {
            while self.enc.finish(&mut self.packed)? == Progress::More {
                give(&mut self.packed, emit);
            }
            give(&mut self.packed, emit);
            self.done = true;
            return Ok(Step::Done);
        }
        if flush && self.enc.bytes_in() > 0 {
            while self.enc.flush_sync(&mut self.packed)? == Progress::More {
                give(&mut self.packed, emit);
            }
            give(&mut self.packed, emit);
        }
        Ok(Step::Pending)
    }
}

/// Feeds all of `input`, emitting each budget's worth of output.
fn feed(
    enc: &mut Encoder,
    mut input: &[u8],
    packed: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]),
) -> Result<(), FilterError> {
    while !input.is_empty() {
        let taken = enc.feed(input, packed)?;
        if taken == 0 && packed.is_empty() {
            // Never expected: without this a stuck encoder would spin the loop.
            return Err(FilterError::Compress(CompressError(
                "encoder made no progress".into(),
            )));
        }
        give(packed, emit);
        input = &input[taken..];
    }
    Ok(())
}

fn give(packed: &mut Vec<u8>, emit: &mut dyn FnMut(&[u8])) {
    if !packed.is_empty() {
        emit(packed);
        packed.clear();
    }
}

/// Compresses `bytes` whole into `out` (a small body, done at once).
pub fn encode_all(enc: &mut Encoder, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), FilterError> {
    let mut packed = Vec::new();
    feed(enc, bytes, &mut packed, &mut |b| out.extend_from_slice(b))?;
    while enc.finish(&mut packed)? == Progress::More {
        out.extend_from_slice(&packed);
        packed.clear();
    }
    out.extend_from_slice(&packed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::{Coding, DeflateSpec};
    use std::io::{Read, Write};

    fn encoder(c: Coding) -> Encoder {
        let spec = DeflateSpec::default();
        match Encoder::new(c, &spec.encoder_params(), Some("text/plain"), None) {
            Ok(e) => e,
            Err(e) => panic!("{e}"),
        }
    }

    fn gunzip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b)
            .read_to_end(&mut out)
            .expect("gzip stream");
        out
    }

    fn text(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                b"the quick brown fox jumps over the lazy dog\n"[i % 44] ^ ((i / 4096) as u8 & 1)
            })
            .collect()
    }

    #[test]
    fn memory_shared_and_file_pieces_come_out_in_order_within_slices() {
        let dir = std::env::temp_dir().join(format!("glint-encode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let file_part = text(300_000);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&file_part)
            .unwrap();
        let mut be = BodyEncoder::new(encoder(Coding::Gzip));
        let head = text(1000);
        let shared: Rc<[u8]> = Rc::from(text(5000));
        be.push(&head);
        be.push_shared(Rc::clone(&shared));
        be.push_file(Rc::new(File::open(&path).unwrap()), 100, 250_000);
        be.end();
        let mut out = Vec::new();
        let mut steps = 0;
        loop {
            let before = be.bytes_in();
            let s = be
                .step(MAX_SLICE, false, &mut |b| {
                    assert!(!b.is_empty());
                    out.extend_from_slice(b)
                })
                .unwrap();
            assert!(
                be.bytes_in() - before <= MAX_SLICE as u64,
                "a step took more than its slice"
            );
            steps += 1;
            if s == Step::Done {
                break;
            }
            assert!(steps < 100);
        }
        assert_eq!(steps, 2, "256 KiB took {steps} steps of 128 KiB");
        let mut want = head.clone();
        want.extend_from_slice(&shared);
        want.extend_from_slice(&file_part[100..250_100]);
        assert_eq!(gunzip(&out), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_shrunk_file_is_an_error() {
        let dir = std::env::temp_dir().join(format!("glint-encode-t-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"0123").unwrap();
        let mut be = BodyEncoder::new(encoder(Coding::Br));
        be.push_file(Rc::new(File::open(&path).unwrap()), 0, 100);
        be.end();
        let mut sink = |_: &[u8]| {};
        // The 4 bytes there are taken, then the read past them comes back empty.
        assert!(matches!(
            be.step(MAX_SLICE, false, &mut sink),
            Err(FilterError::FileTruncated)
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sync_flush_makes_what_came_so_far_decodable() {
        let mut be = BodyEncoder::new(encoder(Coding::Deflate));
        be.push(b"data: first event\n\n");
        let mut out = Vec::new();
        let s = be
            .step(MAX_SLICE, true, &mut |b| out.extend_from_slice(b))
            .unwrap();
        assert_eq!(s, Step::Pending);
        let mut got = Vec::new();
        // A zlib stream cut after a sync flush decodes up to the cut.
        let mut d = flate2::read::ZlibDecoder::new(&out[..]);
        let _ = d.read_to_end(&mut got);
        assert_eq!(got, b"data: first event\n\n");
    }

    #[test]
    fn encode_all_is_one_stream() {
        let body = text(40_000);
        let mut out = Vec::new();
        encode_all(&mut encoder(Coding::Gzip), &body, &mut out).unwrap();
        assert!(out.len() < body.len() / 4);
        assert_eq!(gunzip(&out), body);
    }
}
