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
        }
    }

    pub fn table(&self) -> &DynamicTable {
        &self.table
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
        let mut digits = [0u8; 5];
        let status = status_digits(status, &mut digits);
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
            if low < last {
                encode_int(out, low, 5, 0x20);
            }
            encode_int(out, last, 5, 0x20);
        }
    }

    fn field_lower(&mut self, out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        let mut name_index = 0;
        for (i, &(n, v)) in STATIC_TABLE.iter().enumerate() {
            if n == name {
                if v == value {
                    return encode_int(out, i + 1, 7, 0x80);
                }
                if name_index == 0 {
                    name_index = i + 1;
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
        match policy {
            Policy::Index => encode_int(out, name_index, 6, 0x40),
            Policy::NoIndex => encode_int(out, name_index, 4, 0x00),
            Policy::Never => encode_int(out, name_index, 4, 0x10),
        }
        if name_index == 0 {
            encode_string(out, name);
        }
        encode_string(out, value);
        if policy == Policy::Index {
            self.table.insert(name, value);
        }
    }
}

/// The decimal digits of a status code (100..=999 by RFC 9110 §15).
fn status_digits(status: u16, buf: &mut [u8; 5]) -> &[u8] {
    let mut n = status;
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    &buf[i..]
}
