//! RFC 9113 §4 and §6 frames: parsing as pure functions over bytes.
//!
//! [`parse`] takes the bytes received so far and returns `Ok(None)` until one
//! whole frame is there, then the frame borrowing from the input and its
//! length on the wire. Every per-frame rule of §6 (sizes, stream 0 or not,
//! padding, setting values) is checked here, so the connection state machine
//! only sees well-formed frames; each error says whether it ends the
//! connection or only the stream (§5.4). Encoders for what a server sends are
//! in [`encode`].

pub mod encode;
#[cfg(test)]
mod tests;

use super::error::{Error, ErrorCode, StreamId};

/// Every frame starts with 9 bytes: length (24), type (8), flags (8), R + stream id (32).
pub const HEADER_LEN: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value and lower bound (§6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// SETTINGS_MAX_FRAME_SIZE's upper bound, 2^24-1 (§6.5.2).
pub const MAX_MAX_FRAME_SIZE: u32 = 16_777_215;
/// The largest flow-control window, 2^31-1 (§6.9.1).
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

/// Frame type octets (§6, and RFC 9218 §7.1 for PRIORITY_UPDATE).
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
    pub const PRIORITY_UPDATE: u8 = 0x10;
}

/// Flag bits; which frame types define them is in §6.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS parameter identifiers (§6.5.2, RFC 8441 §3, RFC 9218 §2.1).
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    pub const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
    pub const NO_RFC7540_PRIORITIES: u16 = 0x9;
}

/// The fixed 9-byte frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: StreamId,
}

/// Reads a frame header, or `None` if fewer than 9 bytes are there.
pub fn parse_head(b: &[u8]) -> Option<Head> {
    let h: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
    Some(Head {
        len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
        kind: h[3],
        flags: h[4],
        stream: u31(&h[5..9]),
    })
}

/// A big-endian 31-bit value whose reserved top bit is ignored (§4.1).
fn u31(b: &[u8]) -> u32 {
    match b {
        [a, b, c, d, ..] => u32::from_be_bytes([*a, *b, *c, *d]) & 0x7fff_ffff,
        _ => 0,
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// The RFC 7540 §5.3 priority fields some HEADERS and every PRIORITY frame
/// carry. RFC 9113 deprecates the scheme; they are parsed only to be
/// validated (a stream may not depend on itself) and then ignored, as
/// RFC 9218 priorities replace them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    pub exclusive: bool,
    pub dependency: StreamId,
    pub weight: u8,
}

/// One parsed frame, borrowing its payload from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        stream: StreamId,
        /// The payload without padding.
        data: &'a [u8],
        end_stream: bool,
        /// The whole payload length, padding included: what flow control counts (§6.9).
        flow_len: u32,
    },
    Headers {
        stream: StreamId,
        priority: Option<Priority>,
        /// The field block fragment, padding removed.
        fragment: &'a [u8],
        end_stream: bool,
        end_headers: bool,
    },
    Priority {
        stream: StreamId,
        priority: Priority,
    },
    RstStream {
        stream: StreamId,
        code: ErrorCode,
    },
    Settings {
        ack: bool,
        params: Settings<'a>,
    },
    PushPromise {
        stream: StreamId,
        promised: StreamId,
        fragment: &'a [u8],
        end_headers: bool,
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    GoAway {
        last_stream: StreamId,
        code: ErrorCode,
        debug: &'a [u8],
    },
    WindowUpdate {
        stream: StreamId,
        increment: u32,
    },
    Continuation {
        stream: StreamId,
        fragment: &'a [u8],
        end_headers: bool,
    },
    /// RFC 9218 §7.1: a new priority for a request stream.
    PriorityUpdate {
        prioritized: StreamId,
        field_value: &'a [u8],
    },
    /// A type this layer does not know; §4.1 says to ignore and discard it.
    Unknown {
        kind: u8,
        stream: StreamId,
    },
}

/// The parameters of a SETTINGS frame, already validated by [`parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings<'a>(&'a [u8]);

impl<'a> Settings<'a> {
    /// The pairs in the order sent (§6.5.3: processed in order, last one wins).
    pub fn iter(&self) -> impl Iterator<Item = (u16, u32)> + 'a {
        self.0
            .chunks_exact(6)
            .map(|c| (u16::from_be_bytes([c[0], c[1]]), u32_at(c, 2)))
    }
}

/// Parses one frame from the start of `buf`.
///
/// `max_frame_size` is the SETTINGS_MAX_FRAME_SIZE this endpoint advertised.
/// Returns `Ok(None)` while the frame is incomplete, else the frame and the
/// bytes it used (9 + its length). On `Err(Error::Stream { .. })` the frame was
/// well delimited and the caller skips its 9 + length bytes; on a connection
/// error the caller stops reading.
///
/// A frame longer than `max_frame_size` is always a connection error, even
/// for DATA where §4.2 would allow a stream error: skipping it would mean
/// reading up to 16 MiB that nobody wants, and §5.4.1 lets any stream error
/// be treated as a connection error.
pub fn parse(buf: &[u8], max_frame_size: u32) -> Result<Option<(Frame<'_>, usize)>, Error> {
    let Some(h) = parse_head(buf) else {
        return Ok(None);
    };
    if h.len > max_frame_size {
        return Err(Error::conn(
            ErrorCode::FRAME_SIZE_ERROR,
            "frame longer than SETTINGS_MAX_FRAME_SIZE",
        ));
    }
    let total = HEADER_LEN + h.len as usize;
    let Some(payload) = buf.get(HEADER_LEN..total) else {
        return Ok(None);
    };
    let frame = parse_payload(h, payload)?;
    Ok(Some((frame, total)))
}

/// Parses a payload once its header says it is complete.
pub fn parse_payload(h: Head, p: &[u8]) -> Result<Frame<'_>, Error> {
    use ErrorCode as E;
    let conn = Error::conn;
    let s = h.stream;
    match h.kind {
        kind::DATA => {
            if s == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "DATA on stream 0"));
            }
            let data = unpad(h, p)?;
            Ok(Frame::Data {
                stream: s,
                data,
                end_stream: h.flags & flag::END_STREAM != 0,
                flow_len: h.len,
            })
        }
        kind::HEADERS => {
            if s == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "HEADERS on stream 0"));
            }
            let mut rest = unpad(h, p)?;
            let mut priority = None;
            if h.flags & flag::PRIORITY != 0 {
                // The padding was already removed, so a frame whose padding
                // eats into the 5 priority bytes lands here too (§6.2).
                if rest.len() < 5 {
                    return Err(conn(E::FRAME_SIZE_ERROR, "HEADERS too short for priority"));
                }
                priority = Some(parse_priority(rest));
                rest = &rest[5..];
            }
            Ok(Frame::Headers {
                stream: s,
                priority,
                fragment: rest,
                end_stream: h.flags & flag::END_STREAM != 0,
                end_headers: h.flags & flag::END_HEADERS != 0,
            })
        }
        kind::PRIORITY => {
            if s == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "PRIORITY on stream 0"));
            }
            if p.len() != 5 {
                // §6.3: a stream error, the frame is skipped whole.
                return Err(Error::stream(
                    s,
                    E::FRAME_SIZE_ERROR,
                    "PRIORITY length not 5",
                ));
            }
            let priority = parse_priority(p);
            if priority.dependency == s {
                return Err(Error::stream(
                    s,
                    E::PROTOCOL_ERROR,
                    "stream depends on itself",
                ));
            }
            Ok(Frame::Priority {
                stream: s,
                priority,
            })
        }
        kind::RST_STREAM => {
            if s == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "RST_STREAM on stream 0"));
            }
            if p.len() != 4 {
                return Err(conn(E::FRAME_SIZE_ERROR, "RST_STREAM length not 4"));
            }
            Ok(Frame::RstStream {
                stream: s,
                code: ErrorCode(u32_at(p, 0)),
            })
        }
        kind::SETTINGS => {
            if s != 0 {
                return Err(conn(E::PROTOCOL_ERROR, "SETTINGS on a stream"));
            }
            let ack = h.flags & flag::ACK != 0;
            if ack && !p.is_empty() {
                return Err(conn(E::FRAME_SIZE_ERROR, "SETTINGS ack with a payload"));
            }
            if !p.len().is_multiple_of(6) {
                return Err(conn(
                    E::FRAME_SIZE_ERROR,
                    "SETTINGS length not a multiple of 6",
                ));
            }
            let params = Settings(p);
            for (id, v) in params.iter() {
                check_setting(id, v)?;
            }
            Ok(Frame::Settings { ack, params })
        }
        kind::PUSH_PROMISE => {
            if s == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "PUSH_PROMISE on stream 0"));
            }
            let rest = unpad(h, p)?;
            if rest.len() < 4 {
                return Err(conn(E::FRAME_SIZE_ERROR, "PUSH_PROMISE too short"));
            }
            Ok(Frame::PushPromise {
                stream: s,
                promised: u31(rest),
                fragment: &rest[4..],
                end_headers: h.flags & flag::END_HEADERS != 0,
            })
        }
        kind::PING => {
            if s != 0 {
                return Err(conn(E::PROTOCOL_ERROR, "PING on a stream"));
            }
            let data: [u8; 8] = p
                .try_into()
                .map_err(|_| conn(E::FRAME_SIZE_ERROR, "PING length not 8"))?;
            Ok(Frame::Ping {
                ack: h.flags & flag::ACK != 0,
                data,
            })
        }
        kind::GOAWAY => {
            if s != 0 {
                return Err(conn(E::PROTOCOL_ERROR, "GOAWAY on a stream"));
            }
            if p.len() < 8 {
                return Err(conn(E::FRAME_SIZE_ERROR, "GOAWAY shorter than 8"));
            }
            Ok(Frame::GoAway {
                last_stream: u31(p),
                code: ErrorCode(u32_at(p, 4)),
                debug: &p[8..],
            })
        }
        kind::WINDOW_UPDATE => {
            if p.len() != 4 {
                return Err(conn(E::FRAME_SIZE_ERROR, "WINDOW_UPDATE length not 4"));
            }
            let increment = u31(p);
            if increment == 0 {
                // §6.9: an error on the stream it names, or on the connection.
                let why = "WINDOW_UPDATE of 0";
                return Err(if s == 0 {
                    conn(E::PROTOCOL_ERROR, why)
                } else {
                    Error::stream(s, E::PROTOCOL_ERROR, why)
                });
            }
            Ok(Frame::WindowUpdate {
                stream: s,
                increment,
            })
        }
        kind::CONTINUATION => {
            if s == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "CONTINUATION on stream 0"));
            }
            Ok(Frame::Continuation {
                stream: s,
                fragment: p,
                end_headers: h.flags & flag::END_HEADERS != 0,
            })
        }
        kind::PRIORITY_UPDATE => {
            if s != 0 {
                return Err(conn(E::PROTOCOL_ERROR, "PRIORITY_UPDATE on a stream"));
            }
            if p.len() < 4 {
                return Err(conn(E::FRAME_SIZE_ERROR, "PRIORITY_UPDATE shorter than 4"));
            }
            let prioritized = u31(p);
            if prioritized == 0 {
                return Err(conn(E::PROTOCOL_ERROR, "PRIORITY_UPDATE for stream 0"));
            }
            Ok(Frame::PriorityUpdate {
                prioritized,
                field_value: &p[4..],
            })
        }
        other => Ok(Frame::Unknown {
            kind: other,
            stream: s,
        }),
    }
}

fn parse_priority(p: &[u8]) -> Priority {
    Priority {
        exclusive: p.first().is_some_and(|b| b & 0x80 != 0),
        dependency: u31(p),
        weight: p.get(4).copied().unwrap_or(0),
    }
}

/// Strips the Pad Length octet and the padding of a PADDED frame (§6.1, §6.2, §6.6).
fn unpad(h: Head, p: &[u8]) -> Result<&[u8], Error> {
    if h.flags & flag::PADDED == 0 {
        return Ok(p);
    }
    let Some((&pad, rest)) = p.split_first() else {
        return Err(Error::conn(
            ErrorCode::FRAME_SIZE_ERROR,
            "PADDED frame without a Pad Length",
        ));
    };
    // §6.1: padding as long as the payload or longer is a connection error.
    let pad = pad as usize;
    if pad >= p.len() {
        return Err(Error::conn(
            ErrorCode::PROTOCOL_ERROR,
            "padding as long as the payload",
        ));
    }
    Ok(&rest[..rest.len() - pad])
}

/// The value checks of §6.5.2 (and RFC 8441 §3, RFC 9218 §2.1); unknown ids pass.
fn check_setting(id: u16, v: u32) -> Result<(), Error> {
    use ErrorCode as E;
    let bad = |code, why| Err(Error::conn(code, why));
    match id {
        setting::ENABLE_PUSH if v > 1 => bad(E::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1"),
        setting::INITIAL_WINDOW_SIZE if v > MAX_WINDOW => bad(
            E::FLOW_CONTROL_ERROR,
            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
        ),
        setting::MAX_FRAME_SIZE if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&v) => {
            bad(E::PROTOCOL_ERROR, "SETTINGS_MAX_FRAME_SIZE out of range")
        }
        setting::ENABLE_CONNECT_PROTOCOL if v > 1 => bad(
            E::PROTOCOL_ERROR,
            "SETTINGS_ENABLE_CONNECT_PROTOCOL not 0 or 1",
        ),
        setting::NO_RFC7540_PRIORITIES if v > 1 => bad(
            E::PROTOCOL_ERROR,
            "SETTINGS_NO_RFC7540_PRIORITIES not 0 or 1",
        ),
        _ => Ok(()),
    }
}
