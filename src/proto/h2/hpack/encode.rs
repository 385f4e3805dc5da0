//! The HPACK encoder for response heads.
//!
//! Policy, per field: an exact match in the static or dynamic table is one
//! indexed byte; a value that repeats from response to response (`server`,
//! `content-type`, `vary`, a 301's `:status`) is sent once as a literal with
//! incremental indexing and indexed afterwards; values that change with
//! every response (`date`, `content-length`, `etag`, ...) are literals
//! without indexing so they do not push the repeating ones out of the table;
//! `set-cookie` is never indexed (RFC 7541 §7.1.3: its value is a secret
//! for one client). Strings are Huffman-coded when that is shorter.

use super::{
    encode_int, encode_string, DynamicTable, DEFAULT_TABLE_SIZE, ENTRY_OVERHEAD, STATIC_TABLE,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    Index,
    NoIndex,
    Never,
}

fn policy(name: &[u8]) -> Policy {
    match name {
        b"date"
        | b"content-length"
        | b"last-modified"
        | b"etag"
        | b"expires"
        | b"age"
        | b"location"
        | b"content-range"
        | b"content-disposition"
        | b"link" => Policy::NoIndex,
        b"set-cookie" | b"authorization" | b"proxy-authorization" => Policy::Never,
        _ => Policy::Index,
    }
}

/// The encoding side of one connection's HPACK context.
#[derive(Debug)]
pub struct Encoder {
    table: DynamicTable,
    /// The smallest and the last table size the peer's SETTINGS asked for
    /// since the last block: §4.2 wants both signalled, smallest first.
    pending: Option<(usize, usize)>,
    /// The lowercased name of the field being encoded.
    name: Vec<u8>,
    /// The last few literals sent without indexing, encoded (see [`Recent`]).
    recent: Recent,
    /// Counts changes of the table (an insert, a size change): a block
    /// encoded while it stayed the same may be sent again while it still is
    /// (see [`Encoder::generation`]).
    generation: u64,
}

/// Literal fields sent without indexing repeat from response to response
/// without entering the table: `date` for a whole second, `etag`,
/// `last-modified` and `content-length` for every answer of one file. Their
/// encoded bytes are kept for the last [`RECENT`] of them, so a repeat is a
/// comparison and a copy instead of a Huffman encoding (which was 6% of the
/// CPU of serving a small file).
#[derive(Debug, Default)]
struct Recent {
    /// (name and value, name length, encoded field), oldest replaced first.
    entries: Vec<(Vec<u8>, usize, Vec<u8>)>,
    next: usize,
}

/// Literals remembered per connection: a head has at most 4 that change per
/// file, and a page's assets alternate between a few files.
const RECENT: usize = 8;

impl Recent {
    fn find(&self, name: &[u8], value: &[u8]) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(key, n, _)| {
                *n == name.len()
                    && key.len() == name.len() + value.len()
                    && key[..*n] == *name
                    && key[*n..] == *value
            })
            .map(|(_, _, enc)| enc.as_slice())
    }

    fn put(&mut self, name: &[u8], value: &[u8], encoded: &[u8]) {
        let fill = |e: &mut (Vec<u8>, usize, Vec<u8>)| {
            e.0.clear();
            e.0.extend_from_slice(name);
            e.0.extend_from_slice(value);
            e.1 = name.len();
            e.2.clear();
            e.2.extend_from_slice(encoded);
        };
        if self.entries.len() < RECENT {
            let mut e = (Vec::new(), 0, Vec::new());
            fill(&mut e);
            self.entries.push(e);
        } else {
            fill(&mut self.entries[self.next]);
            self.next = (self.next + 1) % RECENT;
        }
    }
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder {
            table: DynamicTable::new(DEFAULT_TABLE_SIZE),
            pending: None,
            name: Vec::new(),
            recent: Recent::default(),
            generation: 0,
        }
    }

    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Lets go of what only speeds up the next heads (an idle connection):
    /// the remembered literals and the scratch name. The table stays: it is
    /// shared state with the peer.
    pub fn compact(&mut self) {
        self.recent = Recent::default();
        self.name = Vec::new();
    }

    /// Changes with every change of the dynamic table and with every size
    /// update owed. A block whose encoding left it unchanged changed nothing
    /// in the peer's table either, so it decodes the same if sent again
    /// while the generation is still the one it was encoded at; a block
    /// that inserted entries must never be sent twice (the peer would
    /// insert them twice).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed. The table used is at
    /// most 4096 bytes whatever the peer allows: it holds a dozen repeating
    /// fields, and each connection pays for it.
    pub fn set_max_table_size(&mut self, peer: u32) {
        let size = (peer as usize).min(DEFAULT_TABLE_SIZE);
        if size == self.table.max_size() && self.pending.is_none() {
            return;
        }
        self.pending = Some(match self.pending {
            Some((low, _)) => (low.min(size), size),
            None => (size, size),
        });
        self.table.set_max_size(size);
        self.generation += 1;
    }

    /// Encodes a response head: `:status` then `fields`, which should be
    /// free of connection-specific fields (the connection drops those).
    pub fn encode_head<'f>(
        &mut self,
        out: &mut Vec<u8>,
        status: u16,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) {
        self.size_updates(out);
        let mut digits = itoa::Buffer::new();
        let status = digits.format(status).as_bytes();
        self.field_lower(out, b":status", status);
        self.encode_fields(out, fields);
    }

    /// Encodes fields without a status: trailers, or the rest of a head.
    pub fn encode_fields<'f>(
        &mut self,
        out: &mut Vec<u8>,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
    ) {
        self.size_updates(out);
        for (name, value) in fields {
            if !name.iter().any(u8::is_ascii_uppercase) {
                // Already lowercase (the usual case): no copy.
                self.field_lower(out, name, value);
                continue;
            }
            self.name.clear();
            self.name.extend(name.iter().map(u8::to_ascii_lowercase));
            let name = std::mem::take(&mut self.name);
            self.field_lower(out, &name, value);
            self.name = name;
        }
    }

    /// The §4.2 size updates owed since the last block, at its start.
    fn size_updates(&mut self, out: &mut Vec<u8>) {
        if let Some((low, last)) = self.pending.take() {
            self.generation += 1;
            if low < last {
                encode_int(out, low, 5, 0x20);
            }
            encode_int(out, last, 5, 0x20);
        }
    }

    fn field_lower(&mut self, out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        let mut name_index = 0;
        if let Some((first, last)) = static_names(name) {
            name_index = first;
            for i in first..=last {
                if STATIC_TABLE[i - 1].1 == value {
                    return encode_int(out, i, 7, 0x80);
                }
            }
        }
        let mut policy = policy(name);
        if policy != Policy::Never {
            if let Some(i) = self.table.find(name, value) {
                return encode_int(out, 62 + i, 7, 0x80);
            }
        }
        // One entry of more than a quarter of the table would evict the
        // repeating fields it exists for.
        if policy == Policy::Index
            && name.len() + value.len() + ENTRY_OVERHEAD > self.table.max_size() / 4
        {
            policy = Policy::NoIndex;
        }
        if policy == Policy::NoIndex {
            if let Some(enc) = self.recent.find(name, value) {
                out.extend_from_slice(enc);
                return;
            }
        }
        let start = out.len();
        match policy {
            Policy::Index => encode_int(out, name_index, 6, 0x40),
            Policy::NoIndex => encode_int(out, name_index, 4, 0x00),
            Policy::Never => encode_int(out, name_index, 4, 0x10),
        }
        if name_index == 0 {
            encode_string(out, name);
        }
        encode_string(out, value);
        match policy {
            Policy::Index => {
                self.table.insert(name, value);
                self.generation += 1;
            }
            // (A literal without indexing leaves the table alone: its
            // encoding stays valid whatever the table becomes.)
            Policy::NoIndex => self.recent.put(name, value, &out[start..]),
            Policy::Never => {}
        }
    }
}

/// The 1-based range of static table entries named `name` (lowercase), for
/// the encoder: one `match` (compiled to length and byte comparisons) rather
/// than 61 name comparisons per field.
pub fn static_names(name: &[u8]) -> Option<(usize, usize)> {
    Some(match name {
        b":authority" => (1, 1),
        b":method" => (2, 3),
        b":path" => (4, 5),
        b":scheme" => (6, 7),
        b":status" => (8, 14),
        b"accept-charset" => (15, 15),
        b"accept-encoding" => (16, 16),
        b"accept-language" => (17, 17),
        b"accept-ranges" => (18, 18),
        b"accept" => (19, 19),
        b"access-control-allow-origin" => (20, 20),
        b"age" => (21, 21),
        b"allow" => (22, 22),
        b"authorization" => (23, 23),
        b"cache-control" => (24, 24),
        b"content-disposition" => (25, 25),
        b"content-encoding" => (26, 26),
        b"content-language" => (27, 27),
        b"content-length" => (28, 28),
        b"content-location" => (29, 29),
        b"content-range" => (30, 30),
        b"content-type" => (31, 31),
        b"cookie" => (32, 32),
        b"date" => (33, 33),
        b"etag" => (34, 34),
        b"expect" => (35, 35),
        b"expires" => (36, 36),
        b"from" => (37, 37),
        b"host" => (38, 38),
        b"if-match" => (39, 39),
        b"if-modified-since" => (40, 40),
        b"if-none-match" => (41, 41),
        b"if-range" => (42, 42),
        b"if-unmodified-since" => (43, 43),
        b"last-modified" => (44, 44),
        b"link" => (45, 45),
        b"location" => (46, 46),
        b"max-forwards" => (47, 47),
        b"proxy-authenticate" => (48, 48),
        b"proxy-authorization" => (49, 49),
        b"range" => (50, 50),
        b"referer" => (51, 51),
        b"refresh" => (52, 52),
        b"retry-after" => (53, 53),
        b"server" => (54, 54),
        b"set-cookie" => (55, 55),
        b"strict-transport-security" => (56, 56),
        b"transfer-encoding" => (57, 57),
        b"user-agent" => (58, 58),
        b"vary" => (59, 59),
        b"via" => (60, 60),
        b"www-authenticate" => (61, 61),
        _ => return None,
    })
}

#[cfg(test)]
mod static_lookup {
    use super::*;

    #[test]
    fn the_match_agrees_with_the_table() {
        for (i, (name, _)) in STATIC_TABLE.iter().enumerate() {
            let (first, last) = static_names(name).expect("every static name");
            assert!(
                (first..=last).contains(&(i + 1)),
                "{}",
                String::from_utf8_lossy(name)
            );
            assert_eq!(STATIC_TABLE[first - 1].0, *name);
            assert_eq!(STATIC_TABLE[last - 1].0, *name);
        }
        assert_eq!(static_names(b"x-custom"), None);
        assert_eq!(static_names(b":status"), Some((8, 14)));
    }

    /// A repeated literal comes from the cache of recent ones: the same
    /// bytes, and each block still decodes to its fields.
    #[test]
    fn recent_literals_encode_alike() {
        use crate::proto::h2::hpack::{Decoder, HeaderList};
        let mut e = Encoder::new();
        let mut d = Decoder::default();
        let heads: [&[(&[u8], &[u8])]; 4] = [
            &[
                (b"date", b"Thu, 02 Jan 2020 03:04:05 GMT"),
                (b"etag", b"\"a\""),
            ],
            &[
                (b"date", b"Thu, 02 Jan 2020 03:04:05 GMT"),
                (b"etag", b"\"b\""),
            ],
            &[
                (b"date", b"Thu, 02 Jan 2020 03:04:06 GMT"),
                (b"etag", b"\"a\""),
            ],
            &[
                (b"date", b"Thu, 02 Jan 2020 03:04:05 GMT"),
                (b"etag", b"\"a\""),
            ],
        ];
        let mut blocks = Vec::new();
        for h in heads {
            let mut out = Vec::new();
            e.encode_head(&mut out, 200, h.iter().copied());
            let mut list = HeaderList::default();
            assert_eq!(d.decode(&out, 1 << 16, &mut list), Ok(()));
            let got: Vec<(&[u8], &[u8])> = list.iter().skip(1).collect();
            assert_eq!(got, h.to_vec());
            blocks.push(out);
        }
        assert_eq!(blocks[0], blocks[3], "the same head, the same bytes");
        // Past RECENT distinct literals the oldest is encoded afresh, alike.
        for i in 0..RECENT {
            let mut out = Vec::new();
            e.encode_fields(&mut out, [(&b"etag"[..], format!("\"{i}\"").as_bytes())]);
        }
        let mut again = Vec::new();
        e.encode_head(&mut again, 200, heads[0].iter().copied());
        assert_eq!(again, blocks[0]);
    }
}
