//! The auth-param list of `Authorization: Digest ...` and RFC 8187's
//! `username*` encoding, bounded against what a client can send.

/// Bounds on what a client can make the parser do: RFC 7616 defines 12
/// parameters, so 32 leaves room for extensions; 16 KiB covers a `uri` as long
/// as a long request-target.
pub const MAX_PARAMS: usize = 32;
/// See [`MAX_PARAMS`].
pub const MAX_HEADER: usize = 16 * 1024;
/// lighttpd's limit on a decoded `username*` (its `userbuf`).
pub const MAX_USERNAME: usize = 256;

/// The parameters of `Authorization: Digest ...` that mod_auth reads, each
/// unescaped. Unknown parameters (`opaque`, extensions) are skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestParams {
    pub username: Option<Vec<u8>>,
    pub username_star: Option<Vec<u8>>,
    pub realm: Option<Vec<u8>>,
    pub nonce: Option<Vec<u8>>,
    pub uri: Option<Vec<u8>>,
    pub algorithm: Option<Vec<u8>>,
    pub qop: Option<Vec<u8>>,
    pub cnonce: Option<Vec<u8>>,
    pub nc: Option<Vec<u8>>,
    pub response: Option<Vec<u8>>,
    pub userhash: Option<Vec<u8>>,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses the auth-param list after `Digest ` (RFC 7235 section 2.1):
/// `name = token | quoted-string`, comma separated, optional whitespace.
/// Names are case-blind; a name given twice is an error, as is any syntax error.
pub fn parse_params(s: &[u8]) -> Result<DigestParams, String> {
    if s.len() > MAX_HEADER {
        return Err(format!(
            "Authorization header longer than {MAX_HEADER} bytes"
        ));
    }
    let mut p = DigestParams::default();
    let mut i = 0;
    let mut count = 0;
    let ows = |i: &mut usize| {
        while *i < s.len() && (s[*i] == b' ' || s[*i] == b'\t') {
            *i += 1;
        }
    };
    loop {
        while i < s.len() && matches!(s[i], b' ' | b'\t' | b',') {
            i += 1;
        }
        if i == s.len() {
            return Ok(p);
        }
        count += 1;
        if count > MAX_PARAMS {
            return Err(format!("more than {MAX_PARAMS} parameters"));
        }
        let start = i;
        while i < s.len() && is_tchar(s[i]) {
            i += 1;
        }
        let name = &s[start..i];
        if name.is_empty() {
            return Err(format!("expected a parameter name at byte {i}"));
        }
        ows(&mut i);
        if s.get(i) != Some(&b'=') {
            return Err(format!(
                "no '=' after \"{}\"",
                String::from_utf8_lossy(name)
            ));
        }
        i += 1;
        ows(&mut i);
        let (value, next) = param_value(s, i, name)?;
        i = next;
        ows(&mut i);
        if i < s.len() && s[i] != b',' {
            return Err(format!("expected ',' at byte {i}"));
        }
        let Some(slot) = param_slot(&mut p, name) else {
            continue;
        };
        if slot.replace(value).is_some() {
            return Err(format!(
                "parameter \"{}\" given twice",
                String::from_utf8_lossy(name)
            ));
        }
    }
}

/// The value that starts at `s[i]` (a quoted-string, unescaped, or a
/// token) of parameter `name`, and the index after it.
fn param_value(s: &[u8], mut i: usize, name: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let mut value = Vec::new();
    if s.get(i) == Some(&b'"') {
        i += 1;
        loop {
            match s.get(i) {
                None => return Err("unterminated quoted string".into()),
                Some(b'"') => break,
                Some(b'\\') => {
                    i += 1;
                    match s.get(i) {
                        Some(&c) if c == b'\t' || c >= 0x20 && c != 0x7f => value.push(c),
                        _ => return Err("bad escape in quoted string".into()),
                    }
                }
                Some(&c) if c == b'\t' || c >= 0x20 && c != 0x7f => value.push(c),
                Some(_) => return Err("control character in quoted string".into()),
            }
            i += 1;
        }
        i += 1;
    } else {
        let v0 = i;
        while i < s.len() && is_tchar(s[i]) {
            i += 1;
        }
        if i == v0 {
            return Err(format!(
                "no value for \"{}\"",
                String::from_utf8_lossy(name)
            ));
        }
        value.extend_from_slice(&s[v0..i]);
    }
    Ok((value, i))
}

/// Where parameter `name` (any case) goes in `p`; `None` for one mod_auth
/// does not read.
fn param_slot<'p>(p: &'p mut DigestParams, name: &[u8]) -> Option<&'p mut Option<Vec<u8>>> {
    Some(match name.to_ascii_lowercase().as_slice() {
        b"username" => &mut p.username,
        b"username*" => &mut p.username_star,
        b"realm" => &mut p.realm,
        b"nonce" => &mut p.nonce,
        b"uri" => &mut p.uri,
        b"algorithm" => &mut p.algorithm,
        b"qop" => &mut p.qop,
        b"cnonce" => &mut p.cnonce,
        b"nc" => &mut p.nc,
        b"response" => &mut p.response,
        b"userhash" => &mut p.userhash,
        _ => return None,
    })
}

/// Decodes an RFC 8187 ext-value (`UTF-8''J%C3%A4s%C3%B8n`): charset UTF-8
/// or ISO-8859-1 (turned into UTF-8), language ignored, percent-decoded, at
/// most [`MAX_USERNAME`] bytes, no control characters.
pub fn decode_ext_value(v: &[u8]) -> Result<String, &'static str> {
    let mut parts = v.splitn(3, |&b| b == b'\'');
    let (charset, _lang, enc) = match (parts.next(), parts.next(), parts.next()) {
        (Some(c), Some(l), Some(e)) => (c, l, e),
        _ => return Err("invalid \"username*\" ext-value"),
    };
    let mut raw = Vec::with_capacity(enc.len());
    crate::syntax::percent_decode(enc, &mut raw, |_| false)
        .map_err(|_| "invalid %-escape in \"username*\"")?;
    let s = if charset.eq_ignore_ascii_case(b"UTF-8") {
        String::from_utf8(raw).map_err(|_| "invalid \"username*\" invalid UTF-8")?
    } else if charset.eq_ignore_ascii_case(b"ISO-8859-1") {
        raw.iter().map(|&b| char::from(b)).collect()
    } else {
        return Err("invalid \"username*\" charset");
    };
    if s.len() > MAX_USERNAME {
        return Err("invalid \"username*\" too long");
    }
    if s.chars().any(|c| c.is_control()) {
        return Err("invalid \"username*\" contains ctrl chars");
    }
    Ok(s)
}
