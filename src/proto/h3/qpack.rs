//! QPACK (RFC 9204) with a dynamic table of capacity 0: field sections are
//! decoded from static-table references and literals, and encoded the same
//! way. Prefixed integers and string literals are HPACK's (RFC 9204 §4.1.1,
//! §4.1.2), so [`crate::proto::h2::hpack`]'s readers and the shared
//! Huffman code serve both.

use crate::proto::h2::hpack::{decode_int, encode_int, HeaderList, ENTRY_OVERHEAD};
use crate::proto::huffman;

/// Why a field section was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Not valid QPACK, or a reference to a dynamic table glint never
    /// allowed: the connection fails with QPACK_DECOMPRESSION_FAILED.
    Failed(&'static str),
    /// Decoded, the section would pass the bound glint advertised
    /// (SETTINGS_MAX_FIELD_SECTION_SIZE): the request is answered 431.
    TooLarge,
}

/// Appendix A: the static table, index 0 first.
#[rustfmt::skip]
pub const STATIC_TABLE: [(&[u8], &[u8]); 99] = [
    (b":authority", b""), // 0
    (b":path", b"/"), // 1
    (b"age", b"0"), // 2
    (b"content-disposition", b""), // 3
    (b"content-length", b"0"), // 4
    (b"cookie", b""), // 5
    (b"date", b""), // 6
    (b"etag", b""), // 7
    (b"if-modified-since", b""), // 8
    (b"if-none-match", b""), // 9
    (b"last-modified", b""), // 10
    (b"link", b""), // 11
    (b"location", b""), // 12
    (b"referer", b""), // 13
    (b"set-cookie", b""), // 14
    (b":method", b"CONNECT"), // 15
    (b":method", b"DELETE"), // 16
    (b":method", b"GET"), // 17
    (b":method", b"HEAD"), // 18
    (b":method", b"OPTIONS"), // 19
    (b":method", b"POST"), // 20
    (b":method", b"PUT"), // 21
    (b":scheme", b"http"), // 22
    (b":scheme", b"https"), // 23
    (b":status", b"103"), // 24
    (b":status", b"200"), // 25
    (b":status", b"304"), // 26
    (b":status", b"404"), // 27
    (b":status", b"503"), // 28
    (b"accept", b"*/*"), // 29
    (b"accept", b"application/dns-message"), // 30
    (b"accept-encoding", b"gzip, deflate, br"), // 31
    (b"accept-ranges", b"bytes"), // 32
    (b"access-control-allow-headers", b"cache-control"), // 33
    (b"access-control-allow-headers", b"content-type"), // 34
    (b"access-control-allow-origin", b"*"), // 35
    (b"cache-control", b"max-age=0"), // 36
    (b"cache-control", b"max-age=2592000"), // 37
    (b"cache-control", b"max-age=604800"), // 38
    (b"cache-control", b"no-cache"), // 39
    (b"cache-control", b"no-store"), // 40
    (b"cache-control", b"public, max-age=31536000"), // 41
    (b"content-encoding", b"br"), // 42
    (b"content-encoding", b"gzip"), // 43
    (b"content-type", b"application/dns-message"), // 44
    (b"content-type", b"application/javascript"), // 45
    (b"content-type", b"application/json"), // 46
    (b"content-type", b"application/x-www-form-urlencoded"), // 47
    (b"content-type", b"image/gif"), // 48
    (b"content-type", b"image/jpeg"), // 49
    (b"content-type", b"image/png"), // 50
    (b"content-type", b"text/css"), // 51
    (b"content-type", b"text/html; charset=utf-8"), // 52
    (b"content-type", b"text/plain"), // 53
    (b"content-type", b"text/plain;charset=utf-8"), // 54
    (b"range", b"bytes=0-"), // 55
    (b"strict-transport-security", b"max-age=31536000"), // 56
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"), // 57
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"), // 58
    (b"vary", b"accept-encoding"), // 59
    (b"vary", b"origin"), // 60
    (b"x-content-type-options", b"nosniff"), // 61
    (b"x-xss-protection", b"1; mode=block"), // 62
    (b":status", b"100"), // 63
    (b":status", b"204"), // 64
    (b":status", b"206"), // 65
    (b":status", b"302"), // 66
    (b":status", b"400"), // 67
    (b":status", b"403"), // 68
    (b":status", b"421"), // 69
    (b":status", b"425"), // 70
    (b":status", b"500"), // 71
    (b"accept-language", b""), // 72
    (b"access-control-allow-credentials", b"FALSE"), // 73
    (b"access-control-allow-credentials", b"TRUE"), // 74
    (b"access-control-allow-headers", b"*"), // 75
    (b"access-control-allow-methods", b"get"), // 76
    (b"access-control-allow-methods", b"get, post, options"), // 77
    (b"access-control-allow-methods", b"options"), // 78
    (b"access-control-expose-headers", b"content-length"), // 79
    (b"access-control-request-headers", b"content-type"), // 80
    (b"access-control-request-method", b"get"), // 81
    (b"access-control-request-method", b"post"), // 82
    (b"alt-svc", b"clear"), // 83
    (b"authorization", b""), // 84
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"), // 85
    (b"early-data", b"1"), // 86
    (b"expect-ct", b""), // 87
    (b"forwarded", b""), // 88
    (b"if-range", b""), // 89
    (b"origin", b""), // 90
    (b"purpose", b"prefetch"), // 91
    (b"server", b""), // 92
    (b"timing-allow-origin", b"*"), // 93
    (b"upgrade-insecure-requests", b"1"), // 94
    (b"user-agent", b""), // 95
    (b"x-forwarded-for", b""), // 96
    (b"x-frame-options", b"deny"), // 97
    (b"x-frame-options", b"sameorigin"), // 98
];

fn fail(why: &'static str) -> DecodeError {
    DecodeError::Failed(why)
}

fn int(buf: &mut &[u8], prefix: u8) -> Result<u64, DecodeError> {
    decode_int(buf, prefix).map_err(|e| fail(e.0))
}

/// Reads a string literal whose length has an N-bit prefix, with the
/// Huffman flag the bit above it (§4.1.2), appending at most `bound` bytes
/// decoded to `out`. `Ok(false)`: it would pass the bound.
fn string(
    buf: &mut &[u8],
    prefix: u8,
    out: &mut Vec<u8>,
    bound: usize,
) -> Result<bool, DecodeError> {
    let huff = buf.first().is_some_and(|b| b & (1 << prefix) != 0);
    let len = int(buf, prefix)? as usize;
    if len > buf.len() {
        return Err(fail("string longer than the section"));
    }
    let (s, rest) = buf.split_at(len);
    *buf = rest;
    if !huff {
        if len > bound {
            return Ok(false);
        }
        out.extend_from_slice(s);
        return Ok(true);
    }
    match huffman::decode(s, out, bound) {
        Ok(()) => Ok(true),
        Err(huffman::HuffmanError::TooLong) => Ok(false),
        Err(_) => Err(fail("bad Huffman string")),
    }
}

fn static_entry(i: u64) -> Result<(&'static [u8], &'static [u8]), DecodeError> {
    STATIC_TABLE
        .get(i as usize)
        .copied()
        .ok_or(fail("static index past the table"))
}

/// Decodes one field section into `list` (cleared first), refusing one
/// whose fields would add up past `max_size` (name + value + 32 each, as
/// SETTINGS_MAX_FIELD_SECTION_SIZE counts) as it goes: a section built to
/// expand stops at the bound without the memory it asks for.
pub fn decode(section: &[u8], max_size: usize, list: &mut HeaderList) -> Result<(), DecodeError> {
    list.clear();
    let mut buf = section;
    // §4.5.1: Required Insert Count, then the sign and Delta Base. With no
    // dynamic table the count must be 0; the base then means nothing.
    if int(&mut buf, 8)? != 0 {
        return Err(fail("a dynamic table reference (capacity 0)"));
    }
    int(&mut buf, 7)?;
    let mut scratch = Vec::new();
    while let Some(&b) = buf.first() {
        let left = max_size.saturating_sub(list.size());
        if b & 0x80 != 0 {
            // §4.5.2: Indexed Field Line; T (0x40) says static.
            if b & 0x40 == 0 {
                return Err(fail("a dynamic table reference (capacity 0)"));
            }
            let (n, v) = static_entry(int(&mut buf, 6)?)?;
            if n.len() + v.len() + ENTRY_OVERHEAD > left {
                return Err(DecodeError::TooLarge);
            }
            list.push(n, v);
        } else if b & 0x40 != 0 {
            // §4.5.4: Literal Field Line with Name Reference (N 0x20, T 0x10).
            if b & 0x10 == 0 {
                return Err(fail("a dynamic table reference (capacity 0)"));
            }
            let (n, _) = static_entry(int(&mut buf, 4)?)?;
            scratch.clear();
            let room = left.saturating_sub(n.len() + ENTRY_OVERHEAD);
            if n.len() + ENTRY_OVERHEAD > left || !string(&mut buf, 7, &mut scratch, room)? {
                return Err(DecodeError::TooLarge);
            }
            list.push(n, &scratch);
        } else if b & 0x20 != 0 {
            // §4.5.6: Literal Field Line with Literal Name (N 0x10, H 0x08).
            scratch.clear();
            let room = left.saturating_sub(ENTRY_OVERHEAD);
            if left < ENTRY_OVERHEAD || !string(&mut buf, 3, &mut scratch, room)? {
                return Err(DecodeError::TooLarge);
            }
            let name_len = scratch.len();
            if !string(&mut buf, 7, &mut scratch, room - name_len)? {
                return Err(DecodeError::TooLarge);
            }
            let (n, v) = scratch.split_at(name_len);
            list.push(n, v);
        } else {
            // §4.5.3 and §4.5.5: post-base indexes, dynamic by definition.
            return Err(fail("a post-base reference (capacity 0)"));
        }
    }
    Ok(())
}

/// The static entry that is `(name, value)`, else one called `name`:
/// (index, whether the value matches too).
pub fn find_static(name: &[u8], value: &[u8]) -> Option<(usize, bool)> {
    let mut by_name = None;
    for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
        if *n == name {
            if *v == value {
                return Some((i, true));
            }
            by_name.get_or_insert(i);
        }
    }
    by_name.map(|i| (i, false))
}

/// Appends a string literal with an N-bit length prefix and the Huffman
/// flag above it, Huffman-coded when that is shorter.
fn put_string(out: &mut Vec<u8>, s: &[u8], prefix: u8, first: u8) {
    let hlen = huffman::encoded_len(s);
    if hlen < s.len() {
        encode_int(out, hlen, prefix, first | (1 << prefix));
        huffman::encode(s, out);
    } else {
        encode_int(out, s.len(), prefix, first);
        out.extend_from_slice(s);
    }
}

/// Starts a field section: Required Insert Count 0, Delta Base 0.
pub fn begin_section(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0]);
}

/// Appends one field line: a static index where the table has the field,
/// a static name with a literal value where it has the name, else both
/// literal. Names are written as given (HTTP/3 wants them lowercase).
pub fn encode_field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    match find_static(name, value) {
        Some((i, true)) => encode_int(out, i, 6, 0xc0),
        Some((i, false)) => {
            encode_int(out, i, 4, 0x50);
            put_string(out, value, 7, 0);
        }
        None => {
            put_string(out, name, 3, 0x20);
            put_string(out, value, 7, 0);
        }
    }
}

/// Appends the `:status` line of a response.
pub fn encode_status(status: u16, out: &mut Vec<u8>) {
    let mut digits = itoa::Buffer::new();
    let s = digits.format(status.clamp(100, 999));
    encode_field(b":status", s.as_bytes(), out);
}

/// What the peer's QPACK encoder stream may say to a decoder whose
/// capacity is 0 (§4.3): only Set Dynamic Table Capacity to 0. Consumes
/// whole instructions from `buf`; returns the bytes used (a partial one
/// waits), or the error that fails the connection.
pub fn encoder_stream(buf: &[u8]) -> Result<usize, &'static str> {
    let mut rest = buf;
    while let Some(&b) = rest.first() {
        if b & 0xe0 != 0x20 {
            return Err("an insert into a table of capacity 0");
        }
        let mut r = rest;
        match decode_int(&mut r, 5) {
            Ok(0) => rest = r,
            Ok(_) => return Err("a table capacity past the 0 allowed"),
            Err(_) if rest.len() < 8 => break,
            Err(e) => return Err(e.0),
        }
    }
    Ok(buf.len() - rest.len())
}

/// What the peer's QPACK decoder stream may say to an encoder that never
/// used the dynamic table (§4.4): Stream Cancellation only (a Section
/// Acknowledgment or an Insert Count Increment refers to inserts that never
/// were). Returns the bytes used, or the error.
pub fn decoder_stream(buf: &[u8]) -> Result<usize, &'static str> {
    let mut rest = buf;
    while let Some(&b) = rest.first() {
        if b & 0xc0 != 0x40 {
            return Err("an acknowledgment of nothing sent");
        }
        let mut r = rest;
        match decode_int(&mut r, 6) {
            Ok(_) => rest = r,
            Err(_) if rest.len() < 8 => break,
            Err(e) => return Err(e.0),
        }
    }
    Ok(buf.len() - rest.len())
}
