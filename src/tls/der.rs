//! A small DER reader for the few X.509 and OCSP fields glint needs beyond
//! what rustls checks: validity dates (`-tt` warnings), subject/issuer names
//! (lighttpd's `SSL_CLIENT_S_DN_*`, chain building from `ssl.ca-file`), the
//! serial, DNS names (SNI fallback), OCSP Must-Staple and an OCSP response's
//! nextUpdate (when to drop a staple). Some 250 lines against `x509-parser`,
//! which would bring nom, asn1-rs, der-parser, oid-registry and time along
//! for these fields and still has no OCSP. Every function returns `None` on
//! malformed input; certificates were already parsed by webpki on load.

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const ENUMERATED: u8 = 0x0a;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

pub(crate) struct Reader<'a> {
    data: &'a [u8],
}

pub(crate) struct Tlv<'a> {
    pub tag: u8,
    pub content: &'a [u8],
    /// Tag, length and content: what a Name is compared and sent as.
    pub whole: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn peek_tag(&self) -> Option<u8> {
        self.data.first().copied()
    }

    pub fn any(&mut self) -> Option<Tlv<'a>> {
        let d = self.data;
        let tag = *d.first()?;
        let first = *d.get(1)? as usize;
        let (len, head) = if first < 0x80 {
            (first, 2)
        } else {
            // Long form, at most 4 length bytes (4 GiB); 0x80 (indefinite)
            // is not DER.
            let n = first & 0x7f;
            if n == 0 || n > 4 {
                return None;
            }
            let mut len = 0usize;
            for b in d.get(2..2 + n)? {
                len = (len << 8) | *b as usize;
            }
            (len, 2 + n)
        };
        let end = head.checked_add(len)?;
        let whole = d.get(..end)?;
        self.data = &d[end..];
        Some(Tlv {
            tag,
            content: &whole[head..],
            whole,
        })
    }

    /// The next element's content if it has `tag`.
    pub fn tagged(&mut self, tag: u8) -> Option<&'a [u8]> {
        let t = self.any()?;
        (t.tag == tag).then_some(t.content)
    }

    /// The next element if it has `tag`; nothing is consumed otherwise.
    pub fn optional(&mut self, tag: u8) -> Option<Tlv<'a>> {
        if self.peek_tag() == Some(tag) {
            self.any()
        } else {
            None
        }
    }
}

/// The certificate fields glint reads.
pub(crate) struct Cert<'a> {
    pub serial: &'a [u8],
    pub issuer: &'a [u8],
    pub subject: &'a [u8],
    pub not_before: i64,
    pub not_after: i64,
    pub dns_names: Vec<&'a [u8]>,
    pub must_staple: bool,
    /// The authorityKeyIdentifier's keyIdentifier (ACME renewal
    /// information names a certificate by it and the serial).
    pub aki: Option<&'a [u8]>,
}

const OID_AKI: &[u8] = &[0x55, 0x1d, 0x23];
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];
const OID_TLS_FEATURE: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x18];
/// TLS feature 5: status_request, i.e. OCSP Must-Staple (RFC 7633).
const STATUS_REQUEST: &[u8] = &[5];

pub(crate) fn cert(der: &[u8]) -> Option<Cert<'_>> {
    let mut outer = Reader::new(der);
    let mut c = Reader::new(outer.tagged(SEQUENCE)?);
    let mut tbs = Reader::new(c.tagged(SEQUENCE)?);
    tbs.optional(0xa0); // version
    let serial = tbs.tagged(INTEGER)?;
    tbs.tagged(SEQUENCE)?; // signature algorithm
    let issuer = tbs.any()?.whole;
    let mut validity = Reader::new(tbs.tagged(SEQUENCE)?);
    let nb = validity.any()?;
    let na = validity.any()?;
    let subject = tbs.any()?.whole;
    tbs.tagged(SEQUENCE)?; // subjectPublicKeyInfo
    tbs.optional(0x81);
    tbs.optional(0x82);
    let mut dns_names = Vec::new();
    let mut must_staple = false;
    let mut aki = None;
    if let Some(ext) = tbs.optional(0xa3) {
        let mut list = Reader::new(Reader::new(ext.content).tagged(SEQUENCE)?);
        while !list.is_empty() {
            let mut e = Reader::new(list.tagged(SEQUENCE)?);
            let oid = e.tagged(OID)?;
            e.optional(0x01); // critical
            let value = e.tagged(OCTET_STRING)?;
            if oid == OID_SAN {
                let mut names = Reader::new(Reader::new(value).tagged(SEQUENCE)?);
                while let Some(n) = names.any() {
                    if n.tag == 0x82 {
                        dns_names.push(n.content);
                    }
                }
            } else if oid == OID_AKI {
                let mut fields = Reader::new(Reader::new(value).tagged(SEQUENCE)?);
                aki = fields.optional(0x80).map(|k| k.content);
            } else if oid == OID_TLS_FEATURE {
                let mut feats = Reader::new(Reader::new(value).tagged(SEQUENCE)?);
                while let Some(f) = feats.tagged(INTEGER) {
                    must_staple |= f == STATUS_REQUEST;
                }
            }
        }
    }
    Some(Cert {
        serial,
        issuer,
        subject,
        not_before: time(nb.tag, nb.content)?,
        not_after: time(na.tag, na.content)?,
        dns_names,
        must_staple,
        aki,
    })
}

fn digits(b: &[u8]) -> Option<i64> {
    b.iter().try_fold(0i64, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + (c - b'0') as i64)
    })
}

/// UTCTime (YYMMDDHHMMSSZ, years 1950-2049 as RFC 5280 says) or
/// GeneralizedTime (YYYYMMDDHHMMSS[.f]Z) to Unix seconds.
pub(crate) fn time(tag: u8, s: &[u8]) -> Option<i64> {
    let (year, rest) = match tag {
        UTC_TIME => {
            let yy = digits(s.get(..2)?)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, s.get(2..)?)
        }
        GENERALIZED_TIME => (digits(s.get(..4)?)?, s.get(4..)?),
        _ => return None,
    };
    let field = |i: usize| digits(rest.get(i..i + 2)?);
    let (mon, day, h, m, sec) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    let mut tail = rest.get(10..)?;
    if tag == GENERALIZED_TIME && tail.first() == Some(&b'.') {
        let frac = tail[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        tail = &tail[1 + frac..];
    }
    if tail != b"Z"
        || !(1..=12).contains(&mon)
        || !(1..=31).contains(&day)
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    Some(days_from_civil(year, mon, day) * 86400 + h * 3600 + m * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// One attribute of a Name: type OID, value tag, value bytes.
pub(crate) type Attribute<'a> = (&'a [u8], u8, &'a [u8]);

/// The attribute type/value pairs of a Name, in order.
pub(crate) fn name_entries(name: &[u8]) -> Option<Vec<Attribute<'_>>> {
    let mut out = Vec::new();
    let mut rdns = Reader::new(Reader::new(name).tagged(SEQUENCE)?);
    while !rdns.is_empty() {
        let mut set = Reader::new(rdns.tagged(SET)?);
        while !set.is_empty() {
            let mut atv = Reader::new(set.tagged(SEQUENCE)?);
            let oid = atv.tagged(OID)?;
            let v = atv.any()?;
            out.push((oid, v.tag, v.content));
        }
    }
    Some(out)
}

/// OpenSSL's short name of an attribute type (`OBJ_nid2sn`), for the ones
/// certificates carry.
pub(crate) fn short_name(oid: &[u8]) -> Option<&'static str> {
    const X520: [(u8, &str); 18] = [
        (3, "CN"),
        (4, "SN"),
        (5, "serialNumber"),
        (6, "C"),
        (7, "L"),
        (8, "ST"),
        (9, "street"),
        (10, "O"),
        (11, "OU"),
        (12, "title"),
        (15, "businessCategory"),
        (17, "postalCode"),
        (41, "name"),
        (42, "GN"),
        (43, "initials"),
        (44, "generationQualifier"),
        (46, "dnQualifier"),
        (65, "pseudonym"),
    ];
    match oid {
        [0x55, 0x04, n] => X520.iter().find(|(k, _)| k == n).map(|(_, s)| *s),
        [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01] => Some("emailAddress"),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01] => Some("UID"),
        [0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19] => Some("DC"),
        _ => None,
    }
}

/// Dotted form of an OID, for attribute types without a short name.
pub(crate) fn dotted(oid: &[u8]) -> String {
    let mut arcs: Vec<u64> = Vec::new();
    let mut v: u64 = 0;
    for b in oid {
        v = (v << 7) | (b & 0x7f) as u64;
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - first * 40);
            } else {
                arcs.push(v);
            }
            v = 0;
        }
    }
    arcs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// An attribute value as text: UTF8String, PrintableString, IA5String as
/// they are; T61String as Latin-1; BMPString and UniversalString decoded.
pub(crate) fn string_value(tag: u8, v: &[u8]) -> String {
    match tag {
        0x14 => v.iter().map(|b| *b as char).collect(),
        0x1e => char::decode_utf16(
            v.chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])),
        )
        .map(|c| c.unwrap_or('\u{fffd}'))
        .collect(),
        0x1c => v
            .chunks(4)
            .map(|c| {
                let mut b = [0u8; 4];
                b[..c.len()].copy_from_slice(c);
                char::from_u32(u32::from_be_bytes(b)).unwrap_or('\u{fffd}')
            })
            .collect(),
        _ => String::from_utf8_lossy(v).into_owned(),
    }
}

/// nextUpdate of the first SingleResponse of a successful OCSP response:
/// `Err` when the bytes are no successful OCSP response, `Ok(None)` when
/// the responder gave no nextUpdate.
pub(crate) fn ocsp_next_update(der: &[u8]) -> Result<Option<i64>, ()> {
    ocsp_inner(der).ok_or(())
}

fn ocsp_inner(der: &[u8]) -> Option<Option<i64>> {
    let mut resp = Reader::new(Reader::new(der).tagged(SEQUENCE)?);
    if resp.tagged(ENUMERATED)? != [0] {
        return None; // not "successful"
    }
    let bytes = resp.tagged(0xa0)?;
    let mut rb = Reader::new(Reader::new(bytes).tagged(SEQUENCE)?);
    rb.tagged(OID)?;
    let basic = rb.tagged(OCTET_STRING)?;
    let mut b = Reader::new(Reader::new(basic).tagged(SEQUENCE)?);
    let mut data = Reader::new(b.tagged(SEQUENCE)?);
    data.optional(0xa0); // version
    data.any()?; // responderID
    data.tagged(GENERALIZED_TIME)?; // producedAt
    let mut responses = Reader::new(data.tagged(SEQUENCE)?);
    let mut single = Reader::new(responses.tagged(SEQUENCE)?);
    single.tagged(SEQUENCE)?; // certID
    single.any()?; // certStatus
    single.tagged(GENERALIZED_TIME)?; // thisUpdate
    match single.optional(0xa0) {
        Some(next) => {
            let t = Reader::new(next.content).any()?;
            Some(Some(time(t.tag, t.content)?))
        }
        None => Some(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(time(UTC_TIME, b"491231235959Z"), Some(2524607999));
        assert_eq!(time(GENERALIZED_TIME, b"20000229120000Z"), Some(951825600));
        assert_eq!(
            time(GENERALIZED_TIME, b"20000229120000.123Z"),
            Some(951825600)
        );
        assert_eq!(
            time(UTC_TIME, b"7001010000Z"),
            None,
            "seconds are required in DER"
        );
        assert_eq!(time(UTC_TIME, b"700101000000+0100"), None);
        assert_eq!(time(GENERALIZED_TIME, b"2000130112000Z"), None);
    }

    #[test]
    fn reader_refuses_truncation_and_indefinite_length() {
        assert!(Reader::new(&[0x30, 0x05, 1, 2]).any().is_none());
        assert!(Reader::new(&[0x30, 0x80, 0, 0]).any().is_none());
        assert!(Reader::new(&[0x30, 0x81]).any().is_none());
        let t = Reader::new(&[0x04, 0x81, 0x01, 0xaa]).any().unwrap();
        assert_eq!(t.content, &[0xaa]);
        assert!(cert(&[0x30, 0x03, 0x30, 0x01, 0x00]).is_none());
        assert_eq!(ocsp_next_update(b"garbage"), Err(()));
    }

    #[test]
    fn oids_and_strings() {
        assert_eq!(
            dotted(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d]),
            "1.2.840.113549"
        );
        assert_eq!(short_name(&[0x55, 0x04, 0x03]), Some("CN"));
        assert_eq!(string_value(0x1e, &[0, b'h', 0, b'i']), "hi");
        assert_eq!(string_value(0x14, &[0xe9]), "é");
    }
}
