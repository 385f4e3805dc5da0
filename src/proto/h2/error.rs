//! HTTP/2 error codes (RFC 9113 §7) and the one error type of this layer.

use std::fmt;

/// A stream identifier: 31 bits, the reserved high bit always cleared on parse.
pub type StreamId = u32;

/// An RFC 9113 §7 error code, as carried by RST_STREAM and GOAWAY.
///
/// A newtype rather than an enum because a peer may send codes this layer
/// does not know, and RFC 9113 §7 says those must not trigger special
/// behaviour: they are kept and reported as they came.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    pub const NO_ERROR: ErrorCode = ErrorCode(0x0);
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x1);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(0x2);
    pub const FLOW_CONTROL_ERROR: ErrorCode = ErrorCode(0x3);
    pub const SETTINGS_TIMEOUT: ErrorCode = ErrorCode(0x4);
    pub const STREAM_CLOSED: ErrorCode = ErrorCode(0x5);
    pub const FRAME_SIZE_ERROR: ErrorCode = ErrorCode(0x6);
    pub const REFUSED_STREAM: ErrorCode = ErrorCode(0x7);
    pub const CANCEL: ErrorCode = ErrorCode(0x8);
    pub const COMPRESSION_ERROR: ErrorCode = ErrorCode(0x9);
    pub const CONNECT_ERROR: ErrorCode = ErrorCode(0xa);
    pub const ENHANCE_YOUR_CALM: ErrorCode = ErrorCode(0xb);
    pub const INADEQUATE_SECURITY: ErrorCode = ErrorCode(0xc);
    pub const HTTP_1_1_REQUIRED: ErrorCode = ErrorCode(0xd);

    /// The RFC's name for the code, or `None` for one it does not define.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(self.0 as usize).copied()
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "ErrorCode(0x{:x})", self.0),
        }
    }
}

/// What went wrong, and how much of the connection it takes down
/// (RFC 9113 §5.4: a connection error ends everything with GOAWAY, a stream
/// error only the one stream with RST_STREAM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    Connection {
        code: ErrorCode,
        /// For the error log and the GOAWAY debug data.
        why: &'static str,
    },
    Stream {
        stream: StreamId,
        code: ErrorCode,
        why: &'static str,
    },
}

impl Error {
    pub const fn conn(code: ErrorCode, why: &'static str) -> Error {
        Error::Connection { code, why }
    }

    pub const fn stream(stream: StreamId, code: ErrorCode, why: &'static str) -> Error {
        Error::Stream { stream, code, why }
    }

    pub fn code(&self) -> ErrorCode {
        match *self {
            Error::Connection { code, .. } | Error::Stream { code, .. } => code,
        }
    }

    pub fn why(&self) -> &'static str {
        match *self {
            Error::Connection { why, .. } | Error::Stream { why, .. } => why,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Connection { code, why } => write!(f, "connection error {code:?}: {why}"),
            Error::Stream { stream, code, why } => {
                write!(f, "stream {stream} error {code:?}: {why}")
            }
        }
    }
}

impl std::error::Error for Error {}
