//! The HPACK decoder: one per connection, fed each complete field block.

use super::{
    decode_int, decode_string, field_bytes_ok, static_index, CompressionError, DynamicTable,
    KnownName, CHECKED, DEFAULT_TABLE_SIZE, ENTRY_OVERHEAD, KNOWN_VALUE, STATIC_TABLE,
};

/// Why a block did not give a header list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The block is malformed: a connection error of type COMPRESSION_ERROR.
    Compression(CompressionError),
    /// The list passed the caller's cap. The whole block was still processed,
    /// so the dynamic table stays in step with the peer's (RFC 9113 §10.5.1)
    /// and the connection can go on; the fields past the cap were not stored.
    ListTooLarge,
}

impl From<CompressionError> for DecodeError {
    fn from(e: CompressionError) -> DecodeError {
        DecodeError::Compression(e)
    }
}

/// A decoded field list: every name and value in one buffer, reused from
/// block to block so a connection's steady state allocates nothing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HeaderList {
    pub(super) bytes: Vec<u8>,
    /// (name start, name end = value start, value end) into `bytes`: `u32`,
    /// as a list is bounded by SETTINGS_MAX_HEADER_LIST_SIZE (a `u32`);
    /// and what the decoder knows of the name ([`KnownName`]).
    fields: Vec<(u32, u32, u32, KnownName)>,
    /// The RFC 9113 §6.5.2 size: name + value + 32 for each field.
    size: usize,
}

impl HeaderList {
    /// An empty list with room for `bytes` of names and values and
    /// `fields` fields, so that decoding a block grows nothing.
    pub fn with_capacity(bytes: usize, fields: usize) -> HeaderList {
        HeaderList {
            bytes: Vec::with_capacity(bytes),
            fields: Vec::with_capacity(fields),
            size: 0,
        }
    }

    /// Empties the list and makes room for `bytes` of names and values
    /// and `fields` fields (a list reused for the next block).
    pub fn reset(&mut self, bytes: usize, fields: usize) {
        self.clear();
        reserve(&mut self.bytes, bytes);
        reserve(&mut self.fields, fields);
    }

    /// Bytes of names and values the list holds without growing.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
        self.size = 0;
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The §6.5.2 size of what was stored.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Field `i` as (name, value).
    #[inline]
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(n, v, e, _) = self.fields.get(i)?;
        self.span(n, v, e)
    }

    #[inline]
    fn span(&self, n: u32, v: u32, e: u32) -> Option<(&[u8], &[u8])> {
        let (n, v, e) = (n as usize, v as usize, e as usize);
        Some((self.bytes.get(n..v)?, self.bytes.get(v..e)?))
    }

    /// The fields in the order they were sent.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.fields
            .iter()
            .filter_map(|&(n, v, e, _)| self.span(n, v, e))
    }

    /// The fields in order with what the decoder knows of each name
    /// ([`KnownName`]; 0 for a list not made by [`Decoder`]).
    #[inline]
    pub fn iter_known(&self) -> impl Iterator<Item = (KnownName, &[u8], &[u8])> + '_ {
        self.fields
            .iter()
            .filter_map(|&(n, v, e, k)| self.span(n, v, e).map(|(n, v)| (k, n, v)))
    }

    /// Adds a field; used by the decoder and by tests that build lists.
    #[inline]
    pub fn push(&mut self, name: &[u8], value: &[u8]) {
        self.push_known(name, value, 0);
    }

    /// Adds a field whose name (`name_len` bytes) and value are one slice,
    /// as a dynamic entry and a decoded literal hold them: one copy.
    #[inline]
    fn push_joined(&mut self, field: &[u8], name_len: usize, known: KnownName) {
        let n = self.bytes.len() as u32;
        reserve(&mut self.bytes, field.len());
        self.bytes.extend_from_slice(field);
        let v = n + name_len.min(field.len()) as u32;
        self.fields.push((n, v, self.bytes.len() as u32, known));
        self.size += field.len() + ENTRY_OVERHEAD;
    }

    /// Adds a field whose name the decoder knows as `known`.
    #[inline]
    fn push_known(&mut self, name: &[u8], value: &[u8], known: KnownName) {
        let n = self.bytes.len() as u32;
        reserve(&mut self.bytes, name.len() + value.len());
        self.bytes.extend_from_slice(name);
        let v = self.bytes.len() as u32;
        self.bytes.extend_from_slice(value);
        self.fields.push((n, v, self.bytes.len() as u32, known));
        self.size += name.len() + value.len() + ENTRY_OVERHEAD;
    }
}

/// `v.reserve(n)` with the test of the room it already has inline: the
/// list is sized for its block beforehand, so the room is nearly always
/// there, and the call to `reserve` that found so was ~70 instructions of
/// a small request.
#[inline]
fn reserve<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() - v.len() < n {
        v.reserve(n);
    }
}

/// The decoding side of one connection's HPACK context.
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// Our SETTINGS_HEADER_TABLE_SIZE: a size update past it is an error (§6.3).
    max_table_size: usize,
    /// Where a literal's name and value are decoded before they are placed.
    scratch: Vec<u8>,
}

impl Decoder {
    /// Lets go of scratch memory between field blocks (an idle connection).
    pub fn compact(&mut self) {
        self.scratch = Vec::new();
    }
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::new(DEFAULT_TABLE_SIZE)
    }
}

impl Decoder {
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            scratch: Vec::new(),
        }
    }

    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Decodes one complete field block into `list` (cleared first).
    ///
    /// `max_list_size` caps the list's §6.5.2 size. Nothing past the cap is
    /// stored: each string is decoded with a bound of what is left (or of
    /// the table size, for a literal that must still enter the table), so
    /// the memory a block can claim is `max_list_size` + one table entry,
    /// however it was built.
    pub fn decode(
        &mut self,
        mut block: &[u8],
        max_list_size: usize,
        list: &mut HeaderList,
    ) -> Result<(), DecodeError> {
        list.clear();
        let mut over = false;
        let mut at_start = true;
        while let Some(&b) = block.first() {
            if b & 0x80 != 0 {
                // §6.1 indexed field.
                let i = decode_int(&mut block, 7)? as usize;
                at_start = false;
                if i > STATIC_TABLE.len() {
                    let (field, name_len, known) = self
                        .table
                        .get_joined(i - STATIC_TABLE.len() - 1)
                        .ok_or(CompressionError("index past the dynamic table"))?;
                    if !over && fits(list, max_list_size, field.len()) {
                        list.push_joined(field, name_len, known);
                    } else {
                        over = true;
                    }
                    continue;
                }
                let (name, value, known) = lookup(&self.table, i)?;
                // A static entry's value is known too.
                let known = if i <= STATIC_TABLE.len() {
                    known | KNOWN_VALUE
                } else {
                    known
                };
                at_start = false;
                if !over && fits(list, max_list_size, name.len() + value.len()) {
                    list.push_known(name, value, known);
                } else {
                    over = true;
                }
            } else if b & 0xe0 == 0x20 {
                // §6.3 dynamic table size update: only before the first field (§4.2).
                if !at_start {
                    return Err(CompressionError("table size update after a field").into());
                }
                let size = decode_int(&mut block, 5)? as usize;
                if size > self.max_table_size {
                    return Err(CompressionError(
                        "table size update past SETTINGS_HEADER_TABLE_SIZE",
                    )
                    .into());
                }
                self.table.set_max_size(size);
            } else {
                // §6.2: 01 with incremental indexing (6-bit index), 0000
                // without indexing and 0001 never indexed (4-bit index).
                let indexing = b & 0x40 != 0;
                let prefix = if indexing { 6 } else { 4 };
                let i = decode_int(&mut block, prefix)? as usize;
                at_start = false;
                if !self.literal(&mut block, i, indexing, over, max_list_size, list)? {
                    over = true;
                }
            }
        }
        if over {
            return Err(DecodeError::ListTooLarge);
        }
        Ok(())
    }

    /// One §6.2 literal; returns whether it was stored in the list.
    fn literal(
        &mut self,
        block: &mut &[u8],
        name_index: usize,
        indexing: bool,
        over: bool,
        max_list_size: usize,
        list: &mut HeaderList,
    ) -> Result<bool, DecodeError> {
        let room = if over {
            0
        } else {
            max_list_size.saturating_sub(list.size() + ENTRY_OVERHEAD)
        };
        // An entry for the table needs decoding even when the list is full;
        // past the table size it would only empty the table (§4.4).
        let bound = if indexing {
            room.max(self.table.max_size())
        } else {
            room
        };
        self.scratch.clear();
        let mut known = 0;
        let mut whole = if name_index == 0 {
            decode_string(block, &mut self.scratch, bound)?
        } else {
            let (name, _, k) = lookup(&self.table, name_index)?;
            // The name's index only: this field's value is new.
            known = static_index(k);
            let fit = name.len() <= bound;
            if fit {
                self.scratch.extend_from_slice(name);
            }
            fit
        };
        let name_len = self.scratch.len();
        if whole {
            whole = decode_string(block, &mut self.scratch, bound - name_len)?;
        } else {
            // The value still has to be stepped over.
            decode_string(block, &mut self.scratch, 0)?;
        }
        let (name, value) = self.scratch.split_at(name_len);
        if indexing && whole && field_bytes_ok(known, name, value) {
            // Checked once here for every request that names the entry.
            known |= CHECKED;
        }
        // Not `<= room`: room saturates at 0, which an empty field would pass.
        let stored = whole && !over && fits(list, max_list_size, name.len() + value.len());
        if stored {
            list.push_joined(&self.scratch, name_len, known);
        }
        if indexing {
            if whole {
                self.table.insert_known(name, value, known);
            } else {
                // Larger than the bound, which is at least the table size:
                // §4.4 says such an entry empties the table.
                self.table.clear();
            }
        }
        Ok(stored)
    }
}

/// Index `i` of the combined address space (§2.3.3): 1..=61 static, then
/// dynamic; with the static index of the name ([`KnownName`], without
/// [`KNOWN_VALUE`]; a dynamic entry's with its [`CHECKED`] flag).
#[inline]
fn lookup(table: &DynamicTable, i: usize) -> Result<(&[u8], &[u8], KnownName), CompressionError> {
    match i {
        0 => Err(CompressionError("index 0")),
        1..=61 => {
            let (n, v) = STATIC_TABLE[i - 1];
            Ok((n, v, i as KnownName))
        }
        _ => table
            .get_known(i - 62)
            .ok_or(CompressionError("index past the dynamic table")),
    }
}

/// Whether a field of `len` name+value bytes keeps `list` within `max`.
fn fits(list: &HeaderList, max: usize, len: usize) -> bool {
    list.size() + len + ENTRY_OVERHEAD <= max
}
