//! HTTP/3 frames (RFC 9114 §7): a type and a length as varints, then the
//! payload. Heads are parsed as pure functions over bytes (`Ok(None)`: need
//! more); SETTINGS is checked as §7.2.4 says; what a server sends is
//! written by the `write_*` functions.

use super::{conn_err, varint, Code, Failure};

pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// SETTINGS identifiers glint knows (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// Frame types of HTTP/2 that HTTP/3 reserves (§7.2.8): receiving one is
/// a connection error of type H3_FRAME_UNEXPECTED.
pub fn is_reserved_h2_type(ty: u64) -> bool {
    matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
}

/// A frame's type and payload length, and the bytes the two took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub ty: u64,
    pub len: u64,
    pub head_len: usize,
}

/// Reads a frame head from the front of `buf`; `None` when it is cut short.
pub fn parse_head(buf: &[u8]) -> Option<Head> {
    let (ty, a) = varint::decode(buf)?;
    let (len, b) = varint::decode(&buf[a..])?;
    Some(Head {
        ty,
        len,
        head_len: a + b,
    })
}

/// Appends a frame head.
pub fn write_head(ty: u64, len: u64, out: &mut Vec<u8>) {
    varint::encode(ty, out);
    varint::encode(len, out);
}

/// The peer's SETTINGS that glint acts on; unknown identifiers are ignored
/// (§7.2.4: they may be GREASE).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    pub qpack_max_table_capacity: u64,
    pub max_field_section_size: Option<u64>,
    pub qpack_blocked_streams: u64,
}

/// Parses a SETTINGS payload: pairs of varints, no identifier twice, none
/// of HTTP/2's (§7.2.4.1: H3_SETTINGS_ERROR).
pub fn parse_settings(mut payload: &[u8]) -> Result<Settings, Failure> {
    let mut s = Settings::default();
    // Identifiers seen, for the duplicate check (a SETTINGS frame is at
    // most a few KiB: see `control::MAX_CONTROL_FRAME`).
    let mut seen: Vec<u64> = Vec::new();
    while !payload.is_empty() {
        let cut = || conn_err(Code::FRAME_ERROR, "SETTINGS cut short");
        let (id, a) = varint::decode(payload).ok_or_else(cut)?;
        let (value, b) = varint::decode(&payload[a..]).ok_or_else(cut)?;
        payload = &payload[a + b..];
        if seen.contains(&id) {
            return Err(conn_err(Code::SETTINGS_ERROR, "a setting sent twice"));
        }
        seen.push(id);
        match id {
            0x00 | 0x02..=0x05 => {
                return Err(conn_err(Code::SETTINGS_ERROR, "an HTTP/2 setting"));
            }
            SETTINGS_QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
            SETTINGS_MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
            SETTINGS_QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
            _ => {}
        }
    }
    Ok(s)
}

/// Appends a SETTINGS frame with `pairs`.
pub fn write_settings(pairs: &[(u64, u64)], out: &mut Vec<u8>) {
    let len: usize = pairs
        .iter()
        .map(|&(k, v)| varint::len(k) + varint::len(v))
        .sum();
    write_head(SETTINGS, len as u64, out);
    for &(k, v) in pairs {
        varint::encode(k, out);
        varint::encode(v, out);
    }
}

/// Appends a GOAWAY frame naming the first request stream not processed.
pub fn write_goaway(stream_id: u64, out: &mut Vec<u8>) {
    write_head(GOAWAY, varint::len(stream_id) as u64, out);
    varint::encode(stream_id, out);
}

/// Appends the head of a DATA frame of `len` bytes (the payload follows).
pub fn write_data_head(len: u64, out: &mut Vec<u8>) {
    write_head(DATA, len, out);
}

/// Appends a HEADERS frame around an encoded field section.
pub fn write_headers(section: &[u8], out: &mut Vec<u8>) {
    write_head(HEADERS, section.len() as u64, out);
    out.extend_from_slice(section);
}
