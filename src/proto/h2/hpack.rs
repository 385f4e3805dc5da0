//! HPACK (RFC 7541): header compression for HTTP/2.
//!
//! [`Decoder`] turns a request's field block into a [`HeaderList`] and keeps
//! the peer's dynamic table; it enforces a cap on the decoded list size
//! (RFC 9113 §6.5.2 counting: name + value + 32 per field) *while* decoding,
//! so a block built to expand (an "HPACK bomb": one 4 KiB table entry
//! referenced by thousands of 1-byte indexes) stops at the cap without the
//! memory it asks for. [`Encoder`] writes response heads.

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use decode::{DecodeError, Decoder, HeaderList};

pub use encode::Encoder;

use crate::proto::huffman;

/// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2). glint
/// advertises no other, so this is also the bound on the peer's dynamic
/// table size updates.
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// The 32 bytes RFC 7541 §4.1 adds to each entry's name and value length,
/// which RFC 9113 §6.5.2 reuses for SETTINGS_MAX_HEADER_LIST_SIZE.
pub const ENTRY_OVERHEAD: usize = 32;

/// Appendix A: the static table, index 1 first.
#[rustfmt::skip]
pub const STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""), // 1
    (b":method", b"GET"), // 2
    (b":method", b"POST"), // 3
    (b":path", b"/"), // 4
    (b":path", b"/index.html"), // 5
    (b":scheme", b"http"), // 6
    (b":scheme", b"https"), // 7
    (b":status", b"200"), // 8
    (b":status", b"204"), // 9
    (b":status", b"206"), // 10
    (b":status", b"304"), // 11
    (b":status", b"400"), // 12
    (b":status", b"404"), // 13
    (b":status", b"500"), // 14
    (b"accept-charset", b""), // 15
    (b"accept-encoding", b"gzip, deflate"), // 16
    (b"accept-language", b""), // 17
    (b"accept-ranges", b""), // 18
    (b"accept", b""), // 19
    (b"access-control-allow-origin", b""), // 20
    (b"age", b""), // 21
    (b"allow", b""), // 22
    (b"authorization", b""), // 23
    (b"cache-control", b""), // 24
    (b"content-disposition", b""), // 25
    (b"content-encoding", b""), // 26
    (b"content-language", b""), // 27
    (b"content-length", b""), // 28
    (b"content-location", b""), // 29
    (b"content-range", b""), // 30
    (b"content-type", b""), // 31
    (b"cookie", b""), // 32
    (b"date", b""), // 33
    (b"etag", b""), // 34
    (b"expect", b""), // 35
    (b"expires", b""), // 36
    (b"from", b""), // 37
    (b"host", b""), // 38
    (b"if-match", b""), // 39
    (b"if-modified-since", b""), // 40
    (b"if-none-match", b""), // 41
    (b"if-range", b""), // 42
    (b"if-unmodified-since", b""), // 43
    (b"last-modified", b""), // 44
    (b"link", b""), // 45
    (b"location", b""), // 46
    (b"max-forwards", b""), // 47
    (b"proxy-authenticate", b""), // 48
    (b"proxy-authorization", b""), // 49
    (b"range", b""), // 50
    (b"referer", b""), // 51
    (b"refresh", b""), // 52
    (b"retry-after", b""), // 53
    (b"server", b""), // 54
    (b"set-cookie", b""), // 55
    (b"strict-transport-security", b""), // 56
    (b"transfer-encoding", b""), // 57
    (b"user-agent", b""), // 58
    (b"vary", b""), // 59
    (b"via", b""), // 60
    (b"www-authenticate", b""), // 61
];

/// What the decoder knows of a field's name: the index (1..=61) of the
/// static-table entry whose name it is, 0 when it came as a literal (or
/// from a dynamic entry whose name did); with [`KNOWN_VALUE`] set, the
/// value is that static entry's too. Such names need no check of their
/// bytes (they are lowercase tokens) and have a `&'static str`
/// ([`STATIC_NAMES`]): a client's request names mostly come so, first
/// from the static table and then from dynamic entries that took the name.
pub type KnownName = u8;

/// In a [`KnownName`]: the field is the static entry, value included.
pub const KNOWN_VALUE: KnownName = 0x80;

/// In a [`KnownName`]: the field's bytes passed RFC 9113 §8.2.1's checks
/// ([`field_bytes_ok`]) when it entered the dynamic table, so the many
/// requests that name that entry need no look at them again (a client
/// sends its `:authority`, `user-agent` and `accept` so on every request).
pub const CHECKED: KnownName = 0x40;

/// The static-table index in a [`KnownName`] (0: none), without its flags.
#[inline]
pub const fn static_index(known: KnownName) -> KnownName {
    known & 0x3f
}

/// Bytes a field name may not hold (RFC 9113 §8.2.1): 0x00-0x20,
/// uppercase 0x41-0x5a, 0x7f-0xff, and a colon (allowed only as a
/// pseudo-header's first character, which the request's checks handle).
static NAME_BAD: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b <= 0x20 || b.is_ascii_uppercase() || b >= 0x7f || b == b':';
        c += 1;
    }
    t
};

/// Bytes a field value may not hold (§8.2.1): NUL, CR and LF.
static VALUE_BAD: [bool; 256] = {
    let mut t = [false; 256];
    t[0] = true;
    t[b'\r' as usize] = true;
    t[b'\n' as usize] = true;
    t
};

/// Whether `value` holds NUL, CR or LF: a table look-up per byte, where
/// three comparisons per byte were a twentieth of a request's instructions.
#[inline]
pub fn bad_value(value: &[u8]) -> bool {
    value.iter().any(|&c| VALUE_BAD[c as usize])
}

/// Why a field's bytes are refused by §8.2.1, if they are: a name that is
/// not a lowercase token (looked at only when `known` names no static
/// entry), a value with NUL, CR or LF or with whitespace around it (only
/// when `known` does not say the value is the static entry's).
pub fn field_bytes_refused(known: KnownName, name: &[u8], value: &[u8]) -> Option<&'static str> {
    if static_index(known) == 0 {
        if name.is_empty() {
            return Some("empty field name");
        }
        if name.iter().any(|&c| NAME_BAD[c as usize]) {
            return Some("field name with a character not allowed");
        }
    }
    if known & KNOWN_VALUE == 0 {
        if bad_value(value) {
            return Some("field value with NUL, CR or LF");
        }
        if matches!(value.first(), Some(b' ' | b'\t')) || matches!(value.last(), Some(b' ' | b'\t'))
        {
            return Some("field value with surrounding whitespace");
        }
    }
    None
}

/// Whether a field's bytes pass §8.2.1 (see [`field_bytes_refused`]).
#[inline]
pub fn field_bytes_ok(known: KnownName, name: &[u8], value: &[u8]) -> bool {
    field_bytes_refused(known, name, value).is_none()
}

/// The static table's names as `str`, index 1 first.
pub static STATIC_NAMES: [&str; 61] = {
    let mut t = [""; 61];
    let mut i = 0;
    while i < 61 {
        t[i] = match std::str::from_utf8(STATIC_TABLE[i].0) {
            Ok(s) => s,
            Err(_) => panic!("static table names are ASCII"),
        };
        i += 1;
    }
    t
};

/// The name of a field the decoder knows as `known`, as `str`.
#[inline]
pub fn known_name(known: KnownName) -> Option<&'static str> {
    match static_index(known) {
        0 => None,
        k => STATIC_NAMES.get(usize::from(k) - 1).copied(),
    }
}

/// A decoding failure: RFC 7541 §2.1 makes every one a COMPRESSION_ERROR on
/// the connection, since the dynamic tables can no longer agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionError(pub &'static str);

/// Integer values above this are refused (§5.1 allows any; nothing in a
/// block of at most a few hundred KiB needs more, and it keeps every sum in
/// range on 32-bit targets).
const MAX_INT: u64 = u32::MAX as u64;

/// Reads a §5.1 integer with an N-bit prefix from the front of `buf`,
/// advancing it. Refuses values past [`MAX_INT`] and more than 5
/// continuation bytes (a run of 0x80 bytes adds nothing but costs time).
pub fn decode_int(buf: &mut &[u8], prefix: u8) -> Result<u64, CompressionError> {
    let (&first, mut rest) = buf
        .split_first()
        .ok_or(CompressionError("integer cut short"))?;
    let max_prefix = (1u64 << prefix) - 1;
    let mut value = first as u64 & max_prefix;
    if value == max_prefix {
        let mut shift = 0;
        loop {
            let (&b, r) = rest
                .split_first()
                .ok_or(CompressionError("integer cut short"))?;
            rest = r;
            value += ((b & 0x7f) as u64) << shift;
            if value > MAX_INT {
                return Err(CompressionError("integer overflow"));
            }
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return Err(CompressionError("integer with too many bytes"));
            }
        }
    }
    *buf = rest;
    Ok(value)
}

/// Appends a §5.1 integer; `first` holds the bits above the prefix.
pub fn encode_int(out: &mut Vec<u8>, value: usize, prefix: u8, first: u8) {
    let max_prefix = (1usize << prefix) - 1;
    if value < max_prefix {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max_prefix as u8);
    let mut v = value - max_prefix;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Reads a §5.2 string from the front of `buf`, advancing past it whatever
/// happens, and appends it decoded to `out` if that adds at most `bound`
/// bytes. Returns whether it fit; when it did not, `out` is as it was.
pub fn decode_string(
    buf: &mut &[u8],
    out: &mut Vec<u8>,
    bound: usize,
) -> Result<bool, CompressionError> {
    let huff = buf.first().is_some_and(|b| b & 0x80 != 0);
    let len = decode_int(buf, 7)? as usize;
    if len > buf.len() {
        return Err(CompressionError("string longer than the block"));
    }
    let (s, rest) = buf.split_at(len);
    *buf = rest;
    let mark = out.len();
    if !huff {
        if len > bound {
            return Ok(false);
        }
        out.extend_from_slice(s);
        return Ok(true);
    }
    match huffman::decode(s, out, bound) {
        Ok(()) => Ok(true),
        Err(huffman::HuffmanError::TooLong) => {
            out.truncate(mark);
            Ok(false)
        }
        Err(huffman::HuffmanError::Eos) => Err(CompressionError("Huffman string holds EOS")),
        Err(huffman::HuffmanError::BadPadding) => {
            Err(CompressionError("Huffman padding not 0-7 one bits"))
        }
    }
}

/// Appends a §5.2 string, Huffman-coded when that is shorter.
pub fn encode_string(out: &mut Vec<u8>, s: &[u8]) {
    let hlen = huffman::encoded_len(s);
    if hlen < s.len() {
        encode_int(out, hlen, 7, 0x80);
        out.reserve(hlen);
        huffman::encode(s, out);
    } else {
        encode_int(out, s.len(), 7, 0);
        out.extend_from_slice(s);
    }
}

/// A dynamic table (§2.3.2, §4): newest entry first, with the §4.1 size
/// accounting and the §4.4 eviction on insert.
#[derive(Debug, Default)]
pub struct DynamicTable {
    /// Each entry's name and value in one allocation, the name's length,
    /// and the static-table index of its name (see [`KnownName`]).
    entries: std::collections::VecDeque<(Box<[u8]>, u32, KnownName)>,
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    pub fn new(max_size: usize) -> DynamicTable {
        DynamicTable {
            entries: Default::default(),
            size: 0,
            max_size,
        }
    }

    /// The §4.1 size: name + value + 32 for every entry.
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn max_size(&self) -> usize {
        self.max_size
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// §4.3: a new maximum evicts from the oldest end until the table fits.
    pub fn set_max_size(&mut self, max: usize) {
        self.max_size = max;
        self.evict_to(max);
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            match self.entries.pop_back() {
                Some((b, ..)) => self.size -= b.len() + ENTRY_OVERHEAD,
                None => break,
            }
        }
    }

    /// Drops every entry, as inserting one larger than the table does.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.size = 0;
    }

    /// §4.4: evict until the entry fits, then add it; an entry larger than
    /// the whole table empties it and is not added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        self.insert_known(name, value, 0);
    }

    /// [`DynamicTable::insert`] of an entry whose name is the static
    /// table's entry `known` (0: not known to be).
    pub fn insert_known(&mut self, name: &[u8], value: &[u8], known: KnownName) {
        let need = name.len() + value.len() + ENTRY_OVERHEAD;
        if need > self.max_size {
            self.clear();
            return;
        }
        self.evict_to(self.max_size - need);
        let mut b = Vec::with_capacity(name.len() + value.len());
        b.extend_from_slice(name);
        b.extend_from_slice(value);
        self.entries
            .push_front((b.into_boxed_slice(), name.len() as u32, known));
        self.size += need;
    }

    /// Entry `i`, 0 being the newest (HPACK index 62).
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.get_known(i).map(|(n, v, _)| (n, v))
    }

    /// Entry `i`'s name and value as one slice, the name's length and the
    /// static-table index of the name.
    #[inline]
    pub fn get_joined(&self, i: usize) -> Option<(&[u8], usize, KnownName)> {
        self.entries
            .get(i)
            .map(|(b, n, k)| (&b[..], *n as usize, *k))
    }

    /// [`DynamicTable::get`] with the static-table index of the name.
    #[inline]
    pub fn get_known(&self, i: usize) -> Option<(&[u8], &[u8], KnownName)> {
        self.entries.get(i).map(|(b, n, k)| {
            let (n, v) = b.split_at(*n as usize);
            (n, v, *k)
        })
    }

    /// The position of an exact (name, value) match, newest first.
    pub fn find(&self, name: &[u8], value: &[u8]) -> Option<usize> {
        self.entries.iter().position(|(b, n, _)| {
            *n as usize == name.len()
                && b.len() == name.len() + value.len()
                && b.starts_with(name)
                && b.ends_with(value)
        })
    }
}
