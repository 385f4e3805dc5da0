//! Encoders for the frames a server sends. Each appends to an output buffer,
//! except [`data_header`], which returns the 9 bytes so the caller can send
//! the payload from its own source (a file by sendfile, a backend's buffer).

use super::{flag, kind, HEADER_LEN, MAX_WINDOW};
use crate::proto::h2::error::{ErrorCode, StreamId};

/// The 9-byte header of a frame. `len` must fit 24 bits; every caller here
/// passes a length bounded by a SETTINGS_MAX_FRAME_SIZE (at most 2^24-1).
pub fn head(len: usize, kind: u8, flags: u8, stream: StreamId) -> [u8; HEADER_LEN] {
    let l = (len as u32).to_be_bytes();
    let s = (stream & 0x7fff_ffff).to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

fn put(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: StreamId) {
    out.extend_from_slice(&head(len, kind, flags, stream));
}

/// A SETTINGS frame carrying `params` in order.
pub fn settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    put(out, params.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, v) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// The empty SETTINGS frame with ACK that every received SETTINGS needs (§6.5.3).
pub fn settings_ack(out: &mut Vec<u8>) {
    put(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// The PING with ACK that echoes a received PING's 8 bytes (§6.7).
pub fn ping_ack(out: &mut Vec<u8>, data: [u8; 8]) {
    put(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(&data);
}

/// GOAWAY (§6.8). `debug` is cut to 256 bytes: it is for logs, and a long
/// one would only make the last frame slower to arrive.
pub fn goaway(out: &mut Vec<u8>, last_stream: StreamId, code: ErrorCode, debug: &[u8]) {
    let debug = &debug[..debug.len().min(256)];
    put(out, 8 + debug.len(), kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.0.to_be_bytes());
    out.extend_from_slice(debug);
}

/// RST_STREAM (§6.4).
pub fn rst_stream(out: &mut Vec<u8>, stream: StreamId, code: ErrorCode) {
    put(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.0.to_be_bytes());
}

/// WINDOW_UPDATE (§6.9); `increment` is clamped to 1..=2^31-1 by the caller's
/// accounting, masked here so the reserved bit is never set.
pub fn window_update(out: &mut Vec<u8>, stream: StreamId, increment: u32) {
    put(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

/// A field block as one HEADERS frame and as many CONTINUATION frames as
/// needed so no frame is longer than the peer's SETTINGS_MAX_FRAME_SIZE (§4.3).
/// END_STREAM goes on the HEADERS frame, END_HEADERS on the last one (§6.2).
pub fn headers(
    out: &mut Vec<u8>,
    stream: StreamId,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    // max(1) keeps a caller's zero from looping forever; parse() never lets a
    // peer's value below 16384.
    let max = (max_frame_size as usize).max(1);
    let mut chunks = block.chunks(max);
    let first = chunks.next().unwrap_or(&[]);
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    let single = first.len() == block.len();
    if single {
        flags |= flag::END_HEADERS;
    }
    put(out, first.len(), kind::HEADERS, flags, stream);
    out.extend_from_slice(first);
    let mut left = block.len() - first.len();
    for c in chunks {
        left -= c.len();
        let flags = if left == 0 { flag::END_HEADERS } else { 0 };
        put(out, c.len(), kind::CONTINUATION, flags, stream);
        out.extend_from_slice(c);
    }
}

/// The header of a DATA frame of `len` payload bytes; the payload follows it
/// on the wire, sent by the caller from wherever it lives.
pub fn data_header(stream: StreamId, len: usize, end_stream: bool) -> [u8; HEADER_LEN] {
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    head(len, kind::DATA, flags, stream)
}
