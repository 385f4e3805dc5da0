//! Search filters: escaping a value into a filter's text (RFC 4515 3) or a
//! DN's (RFC 4514 2.4), and a filter's text encoded as the BER `Filter`
//! of RFC 4511 4.5.1 that goes on the wire.

use super::ber;

/// `value` escaped for an assertion value in a filter's text: `*`, `(`,
/// `)`, `\`, NUL and every byte above 0x7f become `\xx` (lower-case hex),
/// as lighttpd's mod_authn_ldap escapes a user name. A user name can then
/// only ever be one literal value: `*` matches no other entry.
pub fn escape_value(out: &mut String, value: &str) {
    for &b in value.as_bytes() {
        if matches!(b, b'*' | b'(' | b')' | b'\\' | 0) || b > 0x7f {
            push_hex(out, b);
        } else {
            out.push(b as char);
        }
    }
}

/// `value` escaped as an attribute value in a DN: `"+,;\<>` with a
/// backslash, NUL and bytes above 0x7f as `\xx`, a leading `#` or space
/// and a trailing space with a backslash (lighttpd's DN escape, for a
/// filter that starts with `,` and names the DN itself).
pub fn escape_dn_value(out: &mut String, value: &str) {
    let b = value.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let edge_space = c == b' ' && (i == 0 || i + 1 == b.len());
        if matches!(c, b'"' | b'+' | b',' | b';' | b'\\' | b'<' | b'>')
            || edge_space
            || (i == 0 && c == b'#')
        {
            out.push('\\');
            out.push(c as char);
        } else if c == 0 || c > 0x7f {
            push_hex(out, c);
        } else {
            out.push(c as char);
        }
    }
}

/// `\xx`: a byte as RFC 4515 escapes it.
fn push_hex(out: &mut String, b: u8) {
    out.push('\\');
    crate::syntax::push_hex(out, &[b], crate::syntax::HEX_LOWER);
}

/// Nesting deeper than this is refused: filters written in a
/// configuration are a few levels deep.
const MAX_DEPTH: usize = 32;

/// The BER `Filter` of `text` (RFC 4515 syntax; the outer parentheses may
/// be left out, as libldap allows). Extensible matches are refused.
pub fn encode(text: &str) -> Result<Vec<u8>, String> {
    let t = text.trim();
    let owned;
    let t = if t.starts_with('(') {
        t
    } else {
        owned = format!("({t})");
        &owned
    };
    let mut p = Parser {
        s: t.as_bytes(),
        at: 0,
    };
    let mut out = Vec::new();
    p.filter(&mut out, 0)?;
    if p.at != p.s.len() {
        return Err(format!("bad LDAP filter {text:?}: text after the filter"));
    }
    Ok(out)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!(
            "bad LDAP filter {:?}: {what} at offset {}",
            String::from_utf8_lossy(self.s),
            self.at
        )
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }

    fn filter(&mut self, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deep"));
        }
        self.eat(b'(')?;
        match self.s.get(self.at) {
            Some(b'&') => self.set(out, 0xa0, depth)?,
            Some(b'|') => self.set(out, 0xa1, depth)?,
            Some(b'!') => {
                self.at += 1;
                let mut inner = Vec::new();
                self.filter(&mut inner, depth + 1)?;
                ber::put(out, 0xa2, &inner);
            }
            _ => self.item(out)?,
        }
        self.eat(b')')
    }

    fn set(&mut self, out: &mut Vec<u8>, tag: u8, depth: usize) -> Result<(), String> {
        self.at += 1;
        let mut inner = Vec::new();
        while self.s.get(self.at) == Some(&b'(') {
            self.filter(&mut inner, depth + 1)?;
        }
        if inner.is_empty() {
            return Err(self.err("empty set"));
        }
        ber::put(out, tag, &inner);
        Ok(())
    }

    /// `attr op value` up to the closing parenthesis.
    fn item(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b';' | b'_'))
        {
            self.at += 1;
        }
        let attr = &self.s[start..self.at];
        if attr.is_empty() {
            return Err(self.err("attribute name expected"));
        }
        let op = match (self.s.get(self.at), self.s.get(self.at + 1)) {
            (Some(b'='), _) => {
                self.at += 1;
                b'='
            }
            (Some(&c @ (b'>' | b'<' | b'~')), Some(b'=')) => {
                self.at += 2;
                c
            }
            (Some(b':'), _) => return Err(self.err("extensible match is not supported")),
            _ => return Err(self.err("operator expected")),
        };
        let vstart = self.at;
        while self.s.get(self.at).is_some_and(|&c| c != b')' && c != b'(') {
            self.at += 1;
        }
        let raw = &self.s[vstart..self.at];
        let tag = match op {
            b'>' => 0xa5,
            b'<' => 0xa6,
            b'~' => 0xa8,
            _ if raw == b"*" => {
                ber::put(out, 0x87, attr);
                return Ok(());
            }
            _ if raw.contains(&b'*') => return self.substrings(out, attr, raw),
            _ => 0xa3,
        };
        let value = self.unescape(raw)?;
        ber::put_with(out, tag, |o| {
            ber::put(o, ber::OCTET_STRING, attr);
            ber::put(o, ber::OCTET_STRING, &value);
        });
        Ok(())
    }

    fn substrings(&self, out: &mut Vec<u8>, attr: &[u8], raw: &[u8]) -> Result<(), String> {
        let parts: Vec<&[u8]> = raw.split(|&c| c == b'*').collect();
        let last = parts.len() - 1;
        let mut subs = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if part.is_empty() {
                if i != 0 && i != last {
                    return Err(self.err("'**' in a substring filter"));
                }
                continue;
            }
            let tag = match i {
                0 => 0x80,
                i if i == last => 0x82,
                _ => 0x81,
            };
            ber::put(&mut subs, tag, &self.unescape(part)?);
        }
        ber::put_with(out, 0xa4, |o| {
            ber::put(o, ber::OCTET_STRING, attr);
            ber::put(o, ber::SEQUENCE, &subs);
        });
        Ok(())
    }

    /// `\xx` escapes to their bytes.
    fn unescape(&self, raw: &[u8]) -> Result<Vec<u8>, String> {
        let mut v = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            if raw[i] == b'\\' {
                let hex = |c: Option<&u8>| c.copied().and_then(crate::syntax::hex_value);
                match (hex(raw.get(i + 1)), hex(raw.get(i + 2))) {
                    (Some(h), Some(l)) => v.push(h << 4 | l),
                    _ => return Err(self.err("bad '\\' escape")),
                }
                i += 3;
            } else {
                v.push(raw[i]);
                i += 1;
            }
        }
        Ok(v)
    }
}
