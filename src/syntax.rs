//! HTTP's small syntax, once for every layer: tokens, optional whitespace,
//! hex digits, percent-encoding and -decoding (with the byte sets glint
//! uses named here), and the Host check. It imports nothing of glint, so
//! the pure modules (authn, compress, forwarded, httpup, ...) use it too
//! instead of keeping copies.

/// Lower-case hex digits (ETags, Digest, chunk sizes).
pub const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
/// Upper-case hex digits (percent-encoding, serial numbers).
pub const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// The value of one hex digit.
pub fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The two hex digits of a byte, from `digits` ([`HEX_LOWER`] or [`HEX_UPPER`]).
pub fn hex_pair(b: u8, digits: &[u8; 16]) -> [u8; 2] {
    [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]
}

/// Appends the hex digits of `bytes` to `out`.
pub fn push_hex(out: &mut impl Ascii, bytes: &[u8], digits: &[u8; 16]) {
    for &b in bytes {
        let [h, l] = hex_pair(b, digits);
        out.push_ascii(h);
        out.push_ascii(l);
    }
}

/// `bytes` as lower-case hex.
pub fn hex_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex(&mut s, bytes, HEX_LOWER);
    s
}

/// `bytes` as upper-case hex.
pub fn hex_upper_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex(&mut s, bytes, HEX_UPPER);
    s
}

/// Appends `n` in lower-case hex without leading zeros (a chunk size).
/// No allocation: the digits are built on the stack.
#[inline]
pub fn push_hex_number(out: &mut impl Ascii, mut n: u64) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = HEX_LOWER[(n & 15) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.push_ascii_slice(&digits[i..]);
}

/// Whether `s` is a non-empty run of hex digits (either case).
pub fn is_hex(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(u8::is_ascii_hexdigit)
}

/// Hex (either case) into `out`; `None` unless `s` is exactly
/// `2 * out.len()` hex digits.
pub fn hex_decode_into(s: &[u8], out: &mut [u8]) -> Option<()> {
    if s.len() != out.len() * 2 {
        return None;
    }
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        *o = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
    }
    Some(())
}

/// Hex (either case) as bytes; `None` for an odd length or a byte that
/// is not a hex digit.
pub fn hex_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = vec![0; s.len() / 2];
    hex_decode_into(s, &mut out)?;
    Some(out)
}

/// Where ASCII bytes are written: a `Vec<u8>` or a `String`.
pub trait Ascii {
    /// Appends one byte; only ASCII is ever passed.
    fn push_ascii(&mut self, b: u8);

    /// Appends ASCII bytes.
    fn push_ascii_slice(&mut self, s: &[u8]) {
        for &b in s {
            self.push_ascii(b);
        }
    }
}

impl Ascii for Vec<u8> {
    fn push_ascii(&mut self, b: u8) {
        self.push(b);
    }

    fn push_ascii_slice(&mut self, s: &[u8]) {
        self.extend_from_slice(s);
    }
}

impl Ascii for String {
    fn push_ascii(&mut self, b: u8) {
        self.push(char::from(b));
    }
}

/// RFC 9110 5.6.2 tchar: the bytes of a token.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A non-empty run of tchar.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// `v` without optional whitespace (SP, HTAB) at either end, as text.
pub fn trim_ows_str(v: &str) -> &str {
    v.trim_matches([' ', '\t'])
}

/// `v` without optional whitespace (SP, HTAB) at either end (RFC 9110 5.6.3).
pub fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// The bytes percent-encoding leaves as they are: RFC 3986's unreserved
/// characters and the set's own, and which escapes already present stay.
#[derive(Clone, Copy, Debug)]
pub struct Unescaped {
    bits: [u64; 4],
    escapes: KeptEscapes,
}

/// Which `%XX` already in the input are copied as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptEscapes {
    /// None: a `%` becomes `%25`.
    None,
    /// `%2F` only (a decoded path keeps an encoded slash so).
    Slash,
    /// Any well-formed one.
    All,
}

impl Unescaped {
    /// Unreserved characters and `extra`.
    pub const fn new(extra: &[u8], escapes: KeptEscapes) -> Unescaped {
        let mut bits = [0u64; 4];
        let mut b = 0;
        while b < 128 {
            let c = b as u8;
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                bits[b / 64] |= 1 << (b % 64);
            }
            b += 1;
        }
        let mut i = 0;
        while i < extra.len() {
            let c = extra[i] as usize;
            bits[c / 64] |= 1 << (c % 64);
            i += 1;
        }
        Unescaped { bits, escapes }
    }

    pub fn contains(&self, b: u8) -> bool {
        self.bits[usize::from(b) / 64] & (1 << (b % 64)) != 0
    }
}

/// RFC 3986 unreserved only (mod_rewrite's `${esc:n}`).
pub const UNRESERVED: Unescaped = Unescaped::new(b"", KeptEscapes::None);
/// Unreserved, existing escapes kept (`${nde:n}`).
pub const UNRESERVED_KEEP_ESCAPES: Unescaped = Unescaped::new(b"", KeptEscapes::All);
/// Unreserved and `/`, existing escapes kept (`${psnde:n}`, `$n`'s default).
pub const PATH_KEEP_ESCAPES: Unescaped = Unescaped::new(b"/", KeptEscapes::All);
/// lighttpd's `ENCODING_REL_URI` for a decoded path in a Location:
/// unreserved, `/!()*`, an encoded slash kept.
pub const REL_URI: Unescaped = Unescaped::new(b"/!()*", KeptEscapes::Slash);
/// `ENCODING_REL_URI` for a path whose every `%` is a byte of a name
/// (WebDAV's hrefs): unreserved and `/!()*`, nothing kept.
pub const REL_URI_NAME: Unescaped = Unescaped::new(b"/!()*", KeptEscapes::None);
/// A path segment's pchar (RFC 3986 3.3) but `%`: a file name as a
/// relative link in a directory listing.
pub const SEGMENT: Unescaped = Unescaped::new(b"!$&'()*+,;=:@", KeptEscapes::None);

/// Percent-encodes `bytes` into `out`: each byte outside `set` as `%XX`
/// (upper-case hex, RFC 3986 2.1).
pub fn percent_encode(bytes: &[u8], set: &Unescaped, out: &mut impl Ascii) {
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let kept_escape = c == b'%'
            && match set.escapes {
                KeptEscapes::None => false,
                KeptEscapes::Slash => bytes.get(i + 1..i + 3) == Some(b"2F"),
                KeptEscapes::All => {
                    bytes.get(i + 1).copied().and_then(hex_value).is_some()
                        && bytes.get(i + 2).copied().and_then(hex_value).is_some()
                }
            };
        if kept_escape {
            for &e in &bytes[i..i + 3] {
                out.push_ascii(e);
            }
            i += 3;
            continue;
        }
        if set.contains(c) {
            out.push_ascii(c);
        } else {
            let [h, l] = hex_pair(c, HEX_UPPER);
            out.push_ascii(b'%');
            out.push_ascii(h);
            out.push_ascii(l);
        }
        i += 1;
    }
}

/// A `%` not followed by two hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadEscape;

/// Percent-decodes `raw` into `out` (appended). Each decoded byte goes
/// through `keep`: `Some(escape)` copies the escape itself instead (a
/// path keeps `%2F` so, never a separator).
pub fn percent_decode(
    raw: &[u8],
    out: &mut Vec<u8>,
    keep: impl Fn(u8) -> bool,
) -> Result<(), BadEscape> {
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'%' {
            out.push(b);
            i += 1;
            continue;
        }
        let (Some(h), Some(l)) = (
            raw.get(i + 1).copied().and_then(hex_value),
            raw.get(i + 2).copied().and_then(hex_value),
        ) else {
            return Err(BadEscape);
        };
        let d = h << 4 | l;
        if keep(d) {
            out.push(b'%');
            out.extend_from_slice(&hex_pair(d, HEX_UPPER));
        } else {
            out.push(d);
        }
        i += 3;
    }
    Ok(())
}

/// Percent-decodes `raw` into `out` (appended) as lighttpd decodes a path
/// it was given rather than sent: a `%` not followed by two hex digits
/// stays as it is.
pub fn percent_decode_lenient(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let hex = |j: usize| raw.get(j).copied().and_then(hex_value);
        match (raw[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push(h << 4 | l);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// The Host syntax glint accepts, in a request's Host (or authority) and
/// in Forwarded's `host=`, as lighttpd's `request_check_hostname`: a name
/// of labels of letters, digits and inner `-` (an optional trailing dot),
/// whose last label is numeric only in a dotted IPv4 address, or an IPv6
/// literal in brackets; then an optional `:port` of at most 5 digits; at
/// most 255 bytes. So nothing that could smuggle a path (`/`, `\`), a user
/// (`@`) or a control character gets through. Empty is not a host.
pub fn valid_host(h: &[u8]) -> bool {
    if h.is_empty() || h.len() > 255 {
        return false;
    }
    let (port_at, ok_name) = if h[0] == b'[' {
        let Some(close) = h.iter().position(|&c| c == b']') else {
            return false;
        };
        let inner = &h[1..close];
        let colons = inner.iter().filter(|&&c| c == b':').count();
        let ok = !inner.is_empty()
            && colons <= 7
            && inner
                .iter()
                .all(|c| c.is_ascii_hexdigit() || b":.".contains(c));
        (close + 1, ok)
    } else {
        let colon = h.iter().position(|&c| c == b':').unwrap_or(h.len());
        (colon, valid_name(&h[..colon]))
    };
    let port = &h[port_at..];
    let digits = port.strip_prefix(b":").unwrap_or(port);
    ok_name
        && (port.is_empty() || port[0] == b':')
        && digits.len() <= 5
        && digits.iter().all(u8::is_ascii_digit)
}

/// A host name's labels (see [`valid_host`]), in one pass: every request's
/// Host comes through here.
fn valid_name(name: &[u8]) -> bool {
    let name = name.strip_suffix(b".").unwrap_or(name);
    let mut labels = 0;
    // The label being read: its length, and whether it is digits only.
    let mut len = 0;
    let mut numeric = true;
    let mut all_numeric = true;
    for &c in name {
        match c {
            b'.' if len > 0 => {
                labels += 1;
                all_numeric &= numeric;
                len = 0;
                numeric = true;
                continue;
            }
            b'0'..=b'9' => {}
            b'-' if len > 0 => numeric = false,
            c if c.is_ascii_alphabetic() => numeric = false,
            _ => return false,
        }
        len += 1;
    }
    if len == 0 {
        return false;
    }
    labels += 1;
    all_numeric &= numeric;
    !numeric || (labels == 4 && all_numeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_both_ways() {
        assert_eq!(hex_string(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(hex_upper_string(&[0x00, 0xab, 0x7f]), "00AB7F");
        assert_eq!(hex_decode(b"00aB7f"), Some(vec![0x00, 0xab, 0x7f]));
        assert_eq!(hex_decode(b""), Some(vec![]));
        assert_eq!(hex_decode(b"abc"), None, "odd length");
        assert_eq!(hex_decode(b"0g"), None, "not a digit");
        assert_eq!(hex_decode(b"+1"), None, "a sign is not a digit");
        let mut two = [0u8; 2];
        assert_eq!(hex_decode_into(b"FFfe", &mut two), Some(()));
        assert_eq!(two, [0xff, 0xfe]);
        assert_eq!(hex_decode_into(b"FFf", &mut two), None);
        assert_eq!(hex_decode_into(b"FFfeee", &mut two), None);
        assert!(is_hex(b"09afAF") && !is_hex(b"") && !is_hex(b"0x1"));
        let num = |n: u64| {
            let mut v = Vec::new();
            push_hex_number(&mut v, n);
            let mut s = String::new();
            push_hex_number(&mut s, n);
            assert_eq!(v, s.as_bytes());
            s
        };
        assert_eq!(num(0), "0");
        assert_eq!(num(0x1a), "1a");
        assert_eq!(num(u64::MAX), "ffffffffffffffff");
        assert_eq!(trim_ows_str(" \t a b\t "), "a b");
        assert_eq!(trim_ows(b" \t a b\t "), b"a b");
    }

    #[test]
    fn lenient_decoding_keeps_a_bad_escape() {
        let dec = |s: &[u8]| {
            let mut out = Vec::new();
            percent_decode_lenient(s, &mut out);
            out
        };
        assert_eq!(dec(b"/a%20b%2f"), b"/a b/");
        assert_eq!(dec(b"100%"), b"100%");
        assert_eq!(dec(b"%zz%4"), b"%zz%4");
        assert_eq!(dec(b"%%41"), b"%A");
        let mut strict = Vec::new();
        assert_eq!(
            percent_decode(b"100%", &mut strict, |_| false),
            Err(BadEscape)
        );
    }

    #[test]
    fn percent_encoding_by_set() {
        let enc = |s: &str, set: &Unescaped| {
            let mut out = String::new();
            percent_encode(s.as_bytes(), set, &mut out);
            out
        };
        let cases: [(&str, &Unescaped, &str); 7] = [
            ("a b/ä", &UNRESERVED, "a%20b%2F%C3%A4"),
            ("a%41%zz", &UNRESERVED, "a%2541%25zz"),
            ("a%41%zz/", &UNRESERVED_KEEP_ESCAPES, "a%41%25zz%2F"),
            ("a%41 /", &PATH_KEEP_ESCAPES, "a%41%20/"),
            ("/a b/(x)*%2F%41", &REL_URI, "/a%20b/(x)*%2F%2541"),
            ("a:b@c;d/e", &SEGMENT, "a:b@c;d%2Fe"),
            ("~-._", &UNRESERVED, "~-._"),
        ];
        for (input, set, want) in cases {
            assert_eq!(enc(input, set), want, "{input}");
        }
    }

    #[test]
    fn percent_decoding() {
        let dec = |s: &[u8]| {
            let mut out = Vec::new();
            percent_decode(s, &mut out, |b| b == b'/').map(|()| out)
        };
        assert_eq!(dec(b"a%41%2f%2F"), Ok(b"aA%2F%2F".to_vec()));
        assert_eq!(dec(b"%4"), Err(BadEscape));
        assert_eq!(dec(b"%g0"), Err(BadEscape));
        assert_eq!(dec(b"%C3%A4"), Ok("ä".as_bytes().to_vec()));
    }

    #[test]
    fn ows_tokens_hex() {
        assert_eq!(trim_ows(b" \t a b \t"), b"a b");
        assert_eq!(trim_ows(b" \r\n"), b"\r\n");
        assert!(is_token(b"gzip"));
        assert!(!is_token(b"a b") && !is_token(b""));
        assert_eq!(hex_string(&[0x00, 0xaf]), "00af");
        assert_eq!(hex_pair(0xaf, HEX_UPPER), *b"AF");
        assert_eq!(hex_value(b'f'), Some(15));
        assert_eq!(hex_value(b'g'), None);
    }

    #[test]
    fn hosts() {
        let ok: [&[u8]; 8] = [
            b"1.2.3.4",
            b"a1.b-2.c3",
            b"example.com",
            b"Example.COM.:8080",
            b"[::1]:80",
            b"a-b.test",
            b"127.0.0.1",
            b"localhost:",
        ];
        for h in ok {
            assert!(valid_host(h), "{}", String::from_utf8_lossy(h));
        }
        let bad: [&[u8]; 16] = [
            b"a..b",
            b"a.-b",
            b".",
            b"1.2.3.4.5",
            b"a/b",
            b"a\\b",
            b"a@b",
            b".a",
            b"a:80x",
            b"[::1",
            b"[]",
            b"a:123456",
            b"a_b.test",
            b"-a.test",
            b"1.2.3",
            b"",
        ];
        for h in bad {
            assert!(!valid_host(h), "{}", String::from_utf8_lossy(h));
        }
    }
}
