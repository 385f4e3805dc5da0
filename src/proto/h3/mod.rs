//! HTTP/3 (RFC 9114) and QPACK (RFC 9204) for the server side, sans-IO:
//! QUIC carries the streams (glint drives quinn-proto in `conn::h3`); this
//! layer turns each stream's bytes into requests and a response into
//! bytes, with no sockets, clock or runtime.
//!
//! - [`varint`]: QUIC's variable-length integers.
//! - [`frame`]: frame heads, SETTINGS and GOAWAY, what a server writes.
//! - [`qpack`]: field sections with the static table. glint advertises a
//!   dynamic table capacity of 0 (SETTINGS_QPACK_MAX_TABLE_CAPACITY, RFC
//!   9204 §3.2.3), so a client may not insert, and glint's encoder uses the
//!   static table and literals only: no encoder or decoder stream state,
//!   no blocked streams, and no memory a client can make glint hold for a
//!   table. Field values are Huffman-coded with HPACK's code
//!   ([`crate::proto::huffman`]).
//! - [`request`]: one request stream, HEADERS then DATA then trailers.
//! - [`control`]: the unidirectional streams (control, QPACK encoder and
//!   decoder), SETTINGS first, the critical streams kept open.
//!
//! Errors carry RFC 9114 §8.1's codes: [`Error`] ends the connection,
//! [`StreamError`] only its stream.

pub mod control;
pub mod frame;
pub mod qpack;
pub mod request;
pub mod varint;

#[cfg(test)]
mod tests;

/// An HTTP/3 or QPACK error code (RFC 9114 §8.1, RFC 9204 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(pub u64);

impl Code {
    pub const NO_ERROR: Code = Code(0x100);
    pub const GENERAL_PROTOCOL_ERROR: Code = Code(0x101);
    pub const INTERNAL_ERROR: Code = Code(0x102);
    pub const STREAM_CREATION_ERROR: Code = Code(0x103);
    pub const CLOSED_CRITICAL_STREAM: Code = Code(0x104);
    pub const FRAME_UNEXPECTED: Code = Code(0x105);
    pub const FRAME_ERROR: Code = Code(0x106);
    pub const EXCESSIVE_LOAD: Code = Code(0x107);
    pub const ID_ERROR: Code = Code(0x108);
    pub const SETTINGS_ERROR: Code = Code(0x109);
    pub const MISSING_SETTINGS: Code = Code(0x10a);
    pub const REQUEST_REJECTED: Code = Code(0x10b);
    pub const REQUEST_CANCELLED: Code = Code(0x10c);
    pub const REQUEST_INCOMPLETE: Code = Code(0x10d);
    pub const MESSAGE_ERROR: Code = Code(0x10e);
    pub const QPACK_DECOMPRESSION_FAILED: Code = Code(0x200);
    pub const QPACK_ENCODER_STREAM_ERROR: Code = Code(0x201);
    pub const QPACK_DECODER_STREAM_ERROR: Code = Code(0x202);
}

/// A connection error: the connection closes with `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    pub code: Code,
    pub why: &'static str,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP/3 error 0x{:x}: {}", self.code.0, self.why)
    }
}

/// A stream error: the stream is reset (and reading it stopped) with `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamError {
    pub code: Code,
    pub why: &'static str,
}

/// What a stream's bytes can come to: the connection fails, or the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Conn(Error),
    Stream(StreamError),
}

pub(crate) fn conn_err(code: Code, why: &'static str) -> Failure {
    Failure::Conn(Error { code, why })
}

pub(crate) fn stream_err(code: Code, why: &'static str) -> Failure {
    Failure::Stream(StreamError { code, why })
}
