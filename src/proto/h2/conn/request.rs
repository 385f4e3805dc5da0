//! Request heads and trailers: the RFC 9113 §8.2 and §8.3 checks that make
//! a decoded field list a request, or the stream malformed (a stream error
//! of type PROTOCOL_ERROR, §8.1.1).

use crate::proto::h2::hpack::{
    bad_value, field_bytes_refused, known_name, static_index, HeaderList, KnownName, CHECKED,
    KNOWN_VALUE,
};

/// A validated request head. The pseudo-header fields are found once; the
/// regular fields are read with [`RequestHead::fields`] in the order sent.
/// Kept small (indexes as `u32`, [`NONE`] for absent): it moves from the
/// decoder through the event queue to the caller with every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    list: HeaderList,
    /// Where `:method`, `:scheme`, `:authority` and `:path` are in `list`.
    pseudo: [u32; 4],
    /// Where the regular fields start in `list`.
    first_field: u32,
    content_length: Option<u64>,
}

/// No such pseudo-header field.
const NONE: u32 = u32::MAX;
const METHOD: usize = 0;
const SCHEME: usize = 1;
const AUTHORITY: usize = 2;
const PATH: usize = 3;

impl Default for RequestHead {
    fn default() -> RequestHead {
        RequestHead {
            list: HeaderList::default(),
            pseudo: [NONE; 4],
            first_field: 0,
            content_length: None,
        }
    }
}

impl RequestHead {
    #[inline]
    fn value(&self, which: usize) -> Option<&[u8]> {
        match self.pseudo[which] {
            NONE => None,
            at => self.list.get(at as usize).map(|(_, v)| v),
        }
    }

    #[inline]
    pub fn method(&self) -> &[u8] {
        self.value(METHOD).unwrap_or_default()
    }

    /// `:scheme`; absent only for CONNECT.
    #[inline]
    pub fn scheme(&self) -> Option<&[u8]> {
        self.value(SCHEME)
    }

    /// `:authority`, or the `host` field when it is absent (§8.3.1).
    #[inline]
    pub fn authority(&self) -> Option<&[u8]> {
        self.value(AUTHORITY).or_else(|| self.header(b"host"))
    }

    /// `:path`: origin form, or `*` for OPTIONS; absent only for CONNECT.
    #[inline]
    pub fn path(&self) -> Option<&[u8]> {
        self.value(PATH)
    }

    /// The regular fields as sent. Names are lowercase. `cookie` may come
    /// split in several fields (§8.2.3); join them with "; " for one value.
    #[inline]
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.list.iter().skip(self.first_field as usize)
    }

    /// [`RequestHead::fields`] with the name as `str` where the decoder
    /// knows it for a static table's (see [`crate::proto::h2::hpack::KnownName`]).
    #[inline]
    pub fn fields_named(&self) -> impl Iterator<Item = (Option<&'static str>, &[u8], &[u8])> + '_ {
        self.list
            .iter_known()
            .skip(self.first_field as usize)
            .map(|(k, n, v)| (known_name(k), n, v))
    }

    /// The first regular field called `name` (lowercase).
    #[inline]
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The `content-length`, when sent; DATA is checked against it.
    #[inline]
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The decoded list, for [`super::Connection::recycle`].
    pub fn into_list(self) -> HeaderList {
        self.list
    }
}

/// Why a head or trailers are malformed (said in logs).
pub type Malformed = &'static str;

/// Checks one field of a request or trailers against §8.2.1 and §8.2.2.
fn check_field(name: &[u8], value: &[u8]) -> Result<(), Malformed> {
    check_known_field(0, name, value)
}

/// [`check_field`] of a field the decoder knows as `known`: a static
/// table's name is a lowercase token, and its value too when the whole
/// field is the static entry, so those bytes need no look at; nor do those
/// of a field from a dynamic entry checked when it entered the table
/// ([`CHECKED`]).
fn check_known_field(known: KnownName, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
    if known & CHECKED == 0 {
        if let Some(why) = field_bytes_refused(known, name, value) {
            return Err(why);
        }
    }
    // §8.2.2: connection-specific fields have no meaning in HTTP/2. Of
    // the static table's names only transfer-encoding is one: a field
    // named by the table is judged by its index, not its bytes.
    match static_index(known) {
        0 => {}
        TRANSFER_ENCODING => return Err("connection-specific field"),
        _ => return Ok(()),
    }
    match name {
        b"connection" | b"proxy-connection" | b"keep-alive" | b"transfer-encoding" | b"upgrade" => {
            Err("connection-specific field")
        }
        b"te" if value != b"trailers" => Err("te other than \"trailers\""),
        _ => Ok(()),
    }
}

/// Static table indices (RFC 7541 Appendix A) of names the checks single out.
const CONTENT_LENGTH: KnownName = 28;
const HOST: KnownName = 38;
const TRANSFER_ENCODING: KnownName = 57;

/// Parses `content-length` (RFC 9110 §8.6: digits only); repeated values
/// must agree.
fn content_length(prev: Option<u64>, value: &[u8]) -> Result<u64, Malformed> {
    if value.is_empty() || value.len() > 19 || !value.iter().all(u8::is_ascii_digit) {
        return Err("content-length not a number");
    }
    let n = value.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    match prev {
        Some(p) if p != n => Err("content-length values differ"),
        _ => Ok(n),
    }
}

/// Turns a decoded list into a request head (§8.3.1), or says why not.
pub fn request_head(list: HeaderList) -> Result<RequestHead, Malformed> {
    // Built around `list` once it is scanned: no empty list made and
    // dropped per request.
    let mut found = Found {
        pseudo: [NONE; 4],
        content_length: None,
    };
    let (first_field, host) = scan(&list, &mut found)?;
    let h = RequestHead {
        list,
        pseudo: found.pseudo,
        first_field,
        content_length: found.content_length,
    };
    let method = h.value(METHOD).ok_or("no :method")?;
    if method.is_empty() {
        return Err("empty :method");
    }
    if method == b"CONNECT" {
        // §8.5: only :method and :authority.
        if h.pseudo[SCHEME] != NONE || h.pseudo[PATH] != NONE {
            return Err("CONNECT with :scheme or :path");
        }
        if h.pseudo[AUTHORITY] == NONE {
            return Err("CONNECT without :authority");
        }
    } else {
        let scheme = h.value(SCHEME).ok_or("no :scheme")?;
        let path = h.value(PATH).ok_or("no :path")?;
        if scheme.is_empty() {
            return Err("empty :scheme");
        }
        let is_http = scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https");
        if path.is_empty() {
            return Err("empty :path");
        }
        if is_http && !(path[0] == b'/' || (path == b"*" && method == b"OPTIONS")) {
            return Err(":path neither origin form nor OPTIONS *");
        }
    }
    // §8.3.1: a host field naming another entity than :authority.
    if let (Some(a), Some(host)) = (h.value(AUTHORITY), host.and_then(|i| h.list.get(i))) {
        if !a.eq_ignore_ascii_case(host.1) {
            return Err("host differs from :authority");
        }
    }
    Ok(h)
}

/// The fields of a request head in order, checked (§8.2.1, §8.2.2, §8.3):
/// the pseudo-headers' places and the `content-length` into `h`; returns
/// where the regular fields start and where the first `host` is.
/// What [`scan`] finds besides where the fields are.
struct Found {
    pseudo: [u32; 4],
    content_length: Option<u64>,
}

fn scan(list: &HeaderList, h: &mut Found) -> Result<(u32, Option<usize>), Malformed> {
    let mut first_field = list.len() as u32;
    let mut regular = false;
    let mut host: Option<usize> = None;
    for (i, (known, name, value)) in list.iter_known().enumerate() {
        if name.first() == Some(&b':') {
            // §8.3: every pseudo-header comes before the regular fields.
            if regular {
                return Err("pseudo-header after a regular field");
            }
            let which = match (static_index(known), name) {
                // Static entries 1 to 7 (RFC 7541 Appendix A).
                (1, _) => AUTHORITY,
                (2 | 3, _) => METHOD,
                (4 | 5, _) => PATH,
                (6 | 7, _) => SCHEME,
                (_, b":method") => METHOD,
                (_, b":scheme") => SCHEME,
                (_, b":authority") => AUTHORITY,
                (_, b":path") => PATH,
                // :protocol needs SETTINGS_ENABLE_CONNECT_PROTOCOL, not sent.
                _ => return Err("unknown or response pseudo-header"),
            };
            if h.pseudo[which] != NONE {
                return Err("repeated pseudo-header");
            }
            h.pseudo[which] = i as u32;
            if known & (KNOWN_VALUE | CHECKED) == 0 && bad_value(value) {
                return Err("pseudo-header value with NUL, CR or LF");
            }
            continue;
        }
        if !regular {
            regular = true;
            first_field = i as u32;
        }
        check_known_field(known, name, value)?;
        match (static_index(known), name) {
            (CONTENT_LENGTH, _) | (0, b"content-length") => {
                h.content_length = Some(content_length(h.content_length, value)?)
            }
            (HOST, _) | (0, b"host") if host.is_none() => host = Some(i),
            _ => {}
        }
    }
    Ok((first_field, host))
}

/// Checks trailers: regular fields only (§8.1).
pub fn trailers(list: &HeaderList) -> Result<(), Malformed> {
    for (name, value) in list.iter() {
        if name.first() == Some(&b':') {
            return Err("pseudo-header in trailers");
        }
        check_field(name, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(fields: &[(&str, &str)]) -> HeaderList {
        let mut l = HeaderList::default();
        for (n, v) in fields {
            l.push(n.as_bytes(), v.as_bytes());
        }
        l
    }

    const GET: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", "/a?b"),
    ];

    fn get_with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        GET.iter().chain(extra).copied().collect()
    }

    #[test]
    fn good_heads() {
        let h = request_head(list(&get_with(&[
            ("accept", "*/*"),
            ("cookie", "a=1"),
            ("cookie", "b=2"),
        ])));
        let Ok(h) = h else { panic!("{h:?}") };
        assert_eq!(h.method(), b"GET");
        assert_eq!(h.scheme(), Some(&b"https"[..]));
        assert_eq!(h.authority(), Some(&b"example.com"[..]));
        assert_eq!(h.path(), Some(&b"/a?b"[..]));
        let f: Vec<_> = h.fields().collect();
        assert_eq!(f.len(), 3);
        assert_eq!(h.header(b"accept"), Some(&b"*/*"[..]));
        assert_eq!(h.content_length(), None);
        // host instead of :authority; OPTIONS *; CONNECT; content-length; te.
        let ok: &[&[(&str, &str)]] = &[
            &[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                ("host", "h"),
            ],
            &[(":method", "OPTIONS"), (":scheme", "https"), (":path", "*")],
            &[(":method", "CONNECT"), (":authority", "h:443")],
            &[
                (":method", "POST"),
                (":scheme", "https"),
                (":path", "/"),
                ("content-length", "5"),
                ("content-length", "5"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("te", "trailers"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":authority", "H"),
                ("host", "h"),
            ],
        ];
        for fields in ok {
            assert!(request_head(list(fields)).is_ok(), "{fields:?}");
        }
        let h = request_head(list(ok[0])).unwrap_or_default();
        assert_eq!(h.authority(), Some(&b"h"[..]));
        let h = request_head(list(ok[3])).unwrap_or_default();
        assert_eq!(h.content_length(), Some(5));
    }

    #[test]
    #[rustfmt::skip]
    fn malformed_heads() {
        let cases: &[(&str, Vec<(&str, &str)>)] = &[
            ("no :method", vec![(":scheme", "https"), (":path", "/")]),
            ("no :scheme", vec![(":method", "GET"), (":path", "/")]),
            ("no :path", vec![(":method", "GET"), (":scheme", "https")]),
            ("empty :path", vec![(":method", "GET"), (":scheme", "https"), (":path", "")]),
            ("path not origin form", vec![(":method", "GET"), (":scheme", "https"), (":path", "a")]),
            ("* for GET", vec![(":method", "GET"), (":scheme", "https"), (":path", "*")]),
            ("repeated :path", get_with(&[]).into_iter().chain([(":path", "/")]).collect()),
            ("pseudo after regular", vec![(":method", "GET"), ("accept", "x"), (":scheme", "https"), (":path", "/")]),
            ("unknown pseudo", get_with(&[]).into_iter().rev().chain([(":foo", "x")]).collect()),
            ("response pseudo", vec![(":status", "200"), (":method", "GET"), (":scheme", "https"), (":path", "/")]),
            (":protocol not enabled", vec![(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", "/"), (":authority", "h")]),
            ("CONNECT with :path", vec![(":method", "CONNECT"), (":authority", "h"), (":path", "/")]),
            ("CONNECT without :authority", vec![(":method", "CONNECT")]),
            ("uppercase name", get_with(&[("Accept", "x")])),
            ("space in name", get_with(&[("a b", "x")])),
            ("colon in a regular name", get_with(&[("a:b", "x")])),
            ("byte 0x7f in name", get_with(&[("a\u{7f}", "x")])),
            ("empty name", get_with(&[("", "x")])),
            ("CR in value", get_with(&[("a", "x\ry")])),
            ("LF in value", get_with(&[("a", "x\ny")])),
            ("NUL in value", get_with(&[("a", "x\0y")])),
            ("leading space in value", get_with(&[("a", " x")])),
            ("trailing tab in value", get_with(&[("a", "x\t")])),
            ("connection", get_with(&[("connection", "keep-alive")])),
            ("keep-alive", get_with(&[("keep-alive", "5")])),
            ("proxy-connection", get_with(&[("proxy-connection", "x")])),
            ("transfer-encoding", get_with(&[("transfer-encoding", "chunked")])),
            ("upgrade", get_with(&[("upgrade", "h2c")])),
            ("te gzip", get_with(&[("te", "gzip")])),
            ("content-length not digits", get_with(&[("content-length", "1x")])),
            ("content-length negative", get_with(&[("content-length", "-1")])),
            ("content-length too long", get_with(&[("content-length", "99999999999999999999")])),
            ("content-lengths differ", get_with(&[("content-length", "1"), ("content-length", "2")])),
            ("host differs from :authority", get_with(&[("host", "other.example")])),
        ];
        for (why, fields) in cases {
            assert!(request_head(list(fields)).is_err(), "{why}");
        }
    }

    /// Fields whose names the HPACK decoder took from the static table
    /// (directly or through a dynamic entry) are checked as other fields
    /// are, without a look at their name's bytes.
    #[test]
    fn heads_with_known_names() {
        use crate::proto::h2::hpack::{Decoder, CHECKED, KNOWN_VALUE};
        let mut d = Decoder::default();
        let mut decode = |block: &[u8]| {
            let mut l = HeaderList::default();
            d.decode(block, 1 << 16, &mut l).map(|()| l)
        };
        // :method GET, :scheme http, :path / (indexed); :authority "h" and
        // user-agent "x" (literals with indexing, names from the table).
        let first = [0x82, 0x86, 0x84, 0x41, 1, b'h', 0x7a, 1, b'x'];
        let Ok(l) = decode(&first) else {
            panic!("decode")
        };
        let known: Vec<u8> = l.iter_known().map(|(k, ..)| k).collect();
        assert_eq!(
            known,
            [
                2 | KNOWN_VALUE,
                6 | KNOWN_VALUE,
                4 | KNOWN_VALUE,
                1 | CHECKED,
                58 | CHECKED
            ]
        );
        // The same fields from the dynamic table keep their names' index.
        let Ok(l) = decode(&[0x82, 0x86, 0x84, 0xbf, 0xbe]) else {
            panic!("decode")
        };
        let known: Vec<u8> = l.iter_known().map(|(k, ..)| k).collect();
        assert_eq!(
            known,
            [
                2 | KNOWN_VALUE,
                6 | KNOWN_VALUE,
                4 | KNOWN_VALUE,
                1 | CHECKED,
                58 | CHECKED
            ]
        );
        let h = request_head(l).unwrap_or_default();
        assert_eq!(
            (h.authority(), h.path()),
            (Some(&b"h"[..]), Some(&b"/"[..]))
        );
        let named: Vec<_> = h.fields_named().collect();
        assert_eq!(named, [(Some("user-agent"), &b"user-agent"[..], &b"x"[..])]);
        // Still refused: transfer-encoding (static entry 57, literal
        // without indexing), a value with surrounding whitespace or a NUL.
        let cases: [(&[u8], &str); 3] = [
            (
                &[0x82, 0x86, 0x84, 0x0f, 0x2a, 0],
                "connection-specific field",
            ),
            (
                &[0x82, 0x86, 0x84, 0x0f, 0x2b, 2, b' ', b'x'],
                "field value with surrounding whitespace",
            ),
            (
                &[0x82, 0x86, 0x04, 2, b'/', 0],
                "pseudo-header value with NUL, CR or LF",
            ),
        ];
        for (bad, why) in cases {
            let Ok(l) = decode(bad) else { panic!("decode") };
            assert_eq!(request_head(l).err(), Some(why), "{bad:?}");
        }
        // content-length (entry 28) and host (38) found by their index.
        let cl = [0x82, 0x86, 0x84, 0x0f, 0x0d, 1, b'5'];
        let Ok(l) = decode(&cl) else { panic!("decode") };
        assert_eq!(request_head(l).map(|h| h.content_length()), Ok(Some(5)));
        let other_host = [0x82, 0x86, 0x84, 0x01, 1, b'h', 0x0f, 0x17, 1, b'g'];
        let Ok(l) = decode(&other_host) else {
            panic!("decode")
        };
        assert_eq!(request_head(l).err(), Some("host differs from :authority"));
    }

    /// A field that entered the dynamic table unchecked (its bytes refused)
    /// is refused again each time a request names the entry, and a literal
    /// that takes only the name of a checked entry has its own value checked.
    #[test]
    fn dynamic_entries_keep_their_verdict() {
        use crate::proto::h2::hpack::{Decoder, CHECKED};
        let mut d = Decoder::default();
        let mut decode = |block: &[u8]| {
            let mut l = HeaderList::default();
            d.decode(block, 1 << 16, &mut l).map(|()| l)
        };
        // user-agent " x" (entry 58 named, literal with indexing): refused,
        // and the entry (now index 62) is not marked checked.
        let bad = [0x82, 0x86, 0x84, 0x7a, 2, b' ', b'x'];
        let Ok(l) = decode(&bad) else {
            panic!("decode")
        };
        assert_eq!(
            request_head(l).err(),
            Some("field value with surrounding whitespace")
        );
        for _ in 0..2 {
            let Ok(l) = decode(&[0x82, 0x86, 0x84, 0xbe]) else {
                panic!("decode")
            };
            assert_eq!(l.iter_known().last().map(|(k, ..)| k & CHECKED), Some(0));
            assert_eq!(
                request_head(l).err(),
                Some("field value with surrounding whitespace")
            );
        }
        // A clean x-a "1" (new name, literal with indexing): checked, then
        // named from the table (index 62) with a value holding a NUL, as a
        // literal without indexing: refused.
        let Ok(l) = decode(&[0x82, 0x86, 0x84, 0x40, 3, b'x', b'-', b'a', 1, b'1']) else {
            panic!("decode")
        };
        assert_eq!(l.iter_known().last().map(|(k, ..)| k), Some(CHECKED));
        assert!(request_head(l).is_ok());
        let Ok(l) = decode(&[0x82, 0x86, 0x84, 0x0f, 62 - 15, 1, 0]) else {
            panic!("decode")
        };
        assert_eq!(l.iter_known().last().map(|(k, ..)| k & CHECKED), Some(0));
        assert_eq!(
            request_head(l).err(),
            Some("field value with NUL, CR or LF")
        );
        // An uppercase name entering the table is refused each time too.
        let Ok(l) = decode(&[0x82, 0x86, 0x84, 0x40, 1, b'X', 1, b'1']) else {
            panic!("decode")
        };
        assert!(request_head(l).is_err());
        let Ok(l) = decode(&[0x82, 0x86, 0x84, 0xbe]) else {
            panic!("decode")
        };
        assert_eq!(
            request_head(l).err(),
            Some("field name with a character not allowed")
        );
    }

    #[test]
    fn trailer_rules() {
        assert_eq!(trailers(&list(&[("x-checksum", "abc")])), Ok(()));
        assert!(trailers(&list(&[(":path", "/")])).is_err());
        assert!(trailers(&list(&[("X-Up", "1")])).is_err());
        assert!(trailers(&list(&[("connection", "close")])).is_err());
    }
}
