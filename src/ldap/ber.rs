//! The subset of BER (X.690) that LDAPv3 (RFC 4511) messages use: definite
//! lengths, INTEGER, ENUMERATED, BOOLEAN, OCTET STRING, SEQUENCE/SET and
//! context or application tags. Encoding writes DER-style minimal
//! lengths; decoding takes any definite length up to [`MAX_LEN`] and never
//! reads past its input.

/// The largest element glint reads from a directory server: 1 MiB. A
/// search for one DN with no attributes answers in well under 1 KiB; the
/// cap keeps a hostile or broken server from making glint allocate more.
pub const MAX_LEN: usize = 1 << 20;

pub const INTEGER: u8 = 0x02;
pub const OCTET_STRING: u8 = 0x04;
pub const ENUMERATED: u8 = 0x0a;
pub const BOOLEAN: u8 = 0x01;
pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;

/// Appends one element: `tag`, the length of `content`, `content`.
pub fn put(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    put_len(out, content.len());
    out.extend_from_slice(content);
}

/// A definite length: short form below 128, else the long form with the
/// fewest bytes.
pub fn put_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
        return;
    }
    let bytes = len.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    out.push(0x80 | (bytes.len() - skip) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

/// An INTEGER (or ENUMERATED with its tag) in the fewest two's-complement bytes.
pub fn put_int(out: &mut Vec<u8>, tag: u8, v: i64) {
    let bytes = v.to_be_bytes();
    let mut i = 0;
    while i < 7 {
        let (b, next) = (bytes[i], bytes[i + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            i += 1;
        } else {
            break;
        }
    }
    put(out, tag, &bytes[i..]);
}

/// A constructed element whose content `f` writes.
pub fn put_with(out: &mut Vec<u8>, tag: u8, f: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    f(&mut inner);
    put(out, tag, &inner);
}

/// Why bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BerError {
    /// More bytes are needed (a stream reader reads on).
    Short,
    /// Not BER glint reads (indefinite length, an oversized length, a
    /// wrong tag).
    Bad(&'static str),
}

/// The tag, the content and the bytes the whole element took, from the
/// start of `buf`.
pub fn element(buf: &[u8]) -> Result<(u8, &[u8], usize), BerError> {
    let (tag, len, hdr) = header(buf)?;
    let end = hdr.checked_add(len).ok_or(BerError::Bad("length"))?;
    let content = buf.get(hdr..end).ok_or(BerError::Short)?;
    Ok((tag, content, end))
}

/// The tag, the content length and the header's length.
pub fn header(buf: &[u8]) -> Result<(u8, usize, usize), BerError> {
    let tag = *buf.first().ok_or(BerError::Short)?;
    if tag & 0x1f == 0x1f {
        return Err(BerError::Bad("multi-byte tag"));
    }
    let first = *buf.get(1).ok_or(BerError::Short)?;
    if first < 0x80 {
        return Ok((tag, first as usize, 2));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 {
        return Err(BerError::Bad("indefinite length"));
    }
    if n > 4 {
        return Err(BerError::Bad("length too long"));
    }
    let bytes = buf.get(2..2 + n).ok_or(BerError::Short)?;
    let len = bytes.iter().fold(0usize, |a, &b| (a << 8) | b as usize);
    if len > MAX_LEN {
        return Err(BerError::Bad("element larger than 1 MiB"));
    }
    Ok((tag, len, 2 + n))
}

/// Reads the elements of a constructed element's content in order.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(content: &'a [u8]) -> Reader<'a> {
        Reader { rest: content }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next element, whatever its tag.
    pub fn any(&mut self) -> Result<(u8, &'a [u8]), BerError> {
        let (tag, content, used) = element(self.rest).map_err(|e| match e {
            BerError::Short => BerError::Bad("element cut short"),
            b => b,
        })?;
        self.rest = &self.rest[used..];
        Ok((tag, content))
    }

    /// The next element, which must carry `tag`.
    pub fn expect(&mut self, tag: u8) -> Result<&'a [u8], BerError> {
        match self.any()? {
            (t, c) if t == tag => Ok(c),
            _ => Err(BerError::Bad("unexpected tag")),
        }
    }

    /// The next element as an integer (INTEGER or ENUMERATED by `tag`).
    pub fn int(&mut self, tag: u8) -> Result<i64, BerError> {
        let c = self.expect(tag)?;
        if c.is_empty() || c.len() > 8 {
            return Err(BerError::Bad("integer size"));
        }
        let neg = c[0] & 0x80 != 0;
        let start = if neg { -1i64 } else { 0 };
        Ok(c.iter().fold(start, |a, &b| (a << 8) | b as i64))
    }
}
