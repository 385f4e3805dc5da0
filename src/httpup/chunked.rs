//! `Transfer-Encoding: chunked` (RFC 9112 7.1) for upstream answers and
//! streamed request bodies.
//!
//! The decoder passes data through as slices of its input: it copies
//! nothing and keeps only counters for a chunk-size line, so a download of
//! any size goes through in bounded memory. Trailer fields (at most
//! [`MAX_TRAILERS`] bytes) are kept for the caller to pass on or drop.
//!
//! It is strict where looseness lets two parsers disagree on where a body
//! ends (request smuggling and response splitting through chunk
//! extensions and bare LF): every line ends in CRLF, chunk data ends in
//! CRLF exactly, the size is hex digits without sign or leading space.
//!
//! glint's `http::chunked` decodes request bodies by copying into a `Vec`
//! and accepts bare LF; the lead may merge the two into this one.

use std::fmt;

/// The longest chunk-size line (size and extensions). Extensions are for
/// the hop that made them; 4 KiB is four times what `http::chunked` allows.
pub const MAX_LINE: usize = 4096;

/// The most trailer bytes kept (lighttpd keeps none; 8 KiB holds a gRPC
/// status and message).
pub const MAX_TRAILERS: usize = 8192;

/// The last chunk and the empty trailer section that end a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Appends a chunk-size line for `len` bytes of data (`len` > 0; the data
/// follows, then `\r\n`).
pub fn write_chunk_header(len: usize, out: &mut Vec<u8>) {
    crate::syntax::push_hex_number(out, len as u64);
    out.extend_from_slice(b"\r\n");
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In the hex digits of a chunk size (`digits` so far).
    Size {
        digits: u8,
    },
    /// After the size: whitespace before `;` (BWS in RFC 9112 7.1.1).
    SizeSpace,
    /// Inside chunk extensions, up to the CR.
    Ext,
    /// The LF ending a chunk-size line.
    SizeLf,
    /// `n` more data bytes.
    Data(u64),
    /// The CR, then the LF, after a chunk's data.
    DataCr,
    DataLf,
    /// A trailer line (`line` bytes so far; 0 at its start).
    Trailer {
        line: usize,
    },
    /// The LF ending a trailer line; `last` when the line was empty.
    TrailerLf {
        last: bool,
    },
    Done,
}

/// An error in chunked framing; the connection is not usable after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkError(pub &'static str);

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chunked body: {}", self.0)
    }
}

impl std::error::Error for ChunkError {}

/// An incremental decoder; one per body.
#[derive(Debug, Clone)]
pub struct Dechunker {
    state: State,
    size: u64,
    line: usize,
    trailers: Vec<u8>,
}

impl Default for Dechunker {
    fn default() -> Self {
        Dechunker {
            state: State::Size { digits: 0 },
            size: 0,
            line: 0,
            trailers: Vec::new(),
        }
    }
}

impl Dechunker {
    /// The body has ended (last chunk and trailers read).
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The trailer section as received (`Name: value\r\n` lines), once done.
    pub fn trailers(&self) -> &[u8] {
        &self.trailers
    }

    /// Decodes from `input`, handing each run of body data to `data` (slices
    /// of `input`). Returns the bytes consumed: all of `input`, or fewer when
    /// the body ended inside it (what follows is not part of this body).
    pub fn feed<'a>(
        &mut self,
        input: &'a [u8],
        mut data: impl FnMut(&'a [u8]),
    ) -> Result<usize, ChunkError> {
        let mut i = 0;
        while i < input.len() {
            if let State::Data(n) = self.state {
                let take = usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(input.len() - i);
                data(&input[i..i + take]);
                i += take;
                let left = n - take as u64;
                self.state = if left == 0 {
                    State::DataCr
                } else {
                    State::Data(left)
                };
                continue;
            }
            if self.state == State::Done {
                break;
            }
            let b = input[i];
            i += 1;
            self.state = self.step(b)?;
        }
        Ok(i)
    }

    fn step(&mut self, b: u8) -> Result<State, ChunkError> {
        Ok(match self.state {
            State::Size { .. } | State::SizeSpace | State::Ext => self.size_line(b)?,
            State::SizeLf => {
                if b != b'\n' {
                    return Err(ChunkError("CR without LF in chunk-size line"));
                }
                self.line = 0;
                let n = std::mem::take(&mut self.size);
                if n == 0 {
                    State::Trailer { line: 0 }
                } else {
                    State::Data(n)
                }
            }
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataCr => return Err(ChunkError("chunk data longer than its size")),
            State::DataLf if b == b'\n' => State::Size { digits: 0 },
            State::DataLf => return Err(ChunkError("CR without LF after chunk data")),
            State::Trailer { line } => self.trailer_byte(line, b)?,
            State::TrailerLf { last } => {
                if b != b'\n' {
                    return Err(ChunkError("CR without LF in trailer"));
                }
                if last {
                    State::Done
                } else {
                    self.trailers.extend_from_slice(b"\r\n");
                    State::Trailer { line: 0 }
                }
            }
            State::Data(_) | State::Done => self.state,
        })
    }

    /// A byte of a chunk-size line up to its CR: the size, whitespace,
    /// extensions.
    fn size_line(&mut self, b: u8) -> Result<State, ChunkError> {
        self.line += 1;
        if self.line > MAX_LINE {
            return Err(ChunkError("chunk-size line too long"));
        }
        Ok(match self.state {
            State::Size { digits } => match (crate::syntax::hex_value(b).map(u64::from), b) {
                (Some(d), _) => {
                    // 16 hex digits fill a u64; more cannot be a size.
                    if digits >= 16 {
                        return Err(ChunkError("chunk size too large"));
                    }
                    self.size = self.size << 4 | d;
                    State::Size { digits: digits + 1 }
                }
                _ if digits == 0 => return Err(ChunkError("chunk size is not hex")),
                (None, b';') => State::Ext,
                (None, b' ' | b'\t') => State::SizeSpace,
                (None, b'\r') => State::SizeLf,
                (None, _) => return Err(ChunkError("bad byte after chunk size")),
            },
            State::SizeSpace => match b {
                b' ' | b'\t' => State::SizeSpace,
                b';' => State::Ext,
                _ => {
                    return Err(ChunkError(
                        "whitespace after chunk size without an extension",
                    ))
                }
            },
            State::Ext => match b {
                b'\r' => State::SizeLf,
                b'\t' | 0x20..=0x7e | 0x80..=0xff => State::Ext,
                _ => return Err(ChunkError("control byte in chunk extension")),
            },
            other => other,
        })
    }

    /// A byte of a trailer line, `line` bytes into it.
    fn trailer_byte(&mut self, line: usize, b: u8) -> Result<State, ChunkError> {
        Ok(match b {
            b'\r' => {
                let field = &self.trailers[self.trailers.len() - line..];
                // A field line: a name, a colon; no obs-fold (RFC 9112 5.2).
                if line > 0 && (!field.contains(&b':') || matches!(field[0], b' ' | b'\t' | b':')) {
                    return Err(ChunkError("malformed trailer field"));
                }
                State::TrailerLf { last: line == 0 }
            }
            b'\t' | 0x20..=0x7e | 0x80..=0xff => {
                if self.trailers.len() >= MAX_TRAILERS {
                    return Err(ChunkError("trailer section too long"));
                }
                self.trailers.push(b);
                State::Trailer { line: line + 1 }
            }
            _ => return Err(ChunkError("control byte in trailer")),
        })
    }
}
