//! The one place that turns a URL path into a path below the docroot.
//!
//! The path is percent-decoded once and then normalised: empty and `.`
//! segments are dropped and `..` removes the segment before it. A `..` that
//! would climb above the root, a decoded NUL or control character, a
//! backslash, a malformed escape and bytes that are not UTF-8 (overlong
//! encodings of `.` and `/` among them) are all refused with 400, so no later
//! step has to think about traversal again.

use crate::syntax;

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// NUL, another control character or a backslash.
    BadByte,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
    /// `..` above the root.
    AboveRoot,
    /// Does not start with `/`.
    NotAbsolute,
}

/// Percent-decodes `raw` into `out` (cleared first). An encoded slash
/// (`%2F`) stays encoded: it is part of a segment's name, never a separator,
/// so `..%2F..%2Fetc` is one odd file name and not a way up.
pub fn percent_decode(raw: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    out.clear();
    syntax::percent_decode(raw, out, |b| b == b'/').map_err(|_| PathError::BadEscape)
}

/// Decodes and normalises the path part of a request target into `out`.
/// `scratch` is a reusable buffer for the decoded bytes.
pub fn normalize(raw: &str, scratch: &mut Vec<u8>, out: &mut String) -> Result<(), PathError> {
    out.clear();
    if !raw.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    if already_normal(raw.as_bytes()) {
        out.push_str(raw);
        return Ok(());
    }
    normalize_slow(raw, scratch, out)
}

/// What [`already_normal`] and [`needs_normalizing`] make of a byte: one
/// table load per byte, most of them [`PLAIN`].
const PLAIN: u8 = 0;
const SLASH: u8 = 1;
const QUERY: u8 = 2;
const PERCENT: u8 = 3;
/// A byte [`normalize_target`] escapes (`%` aside).
const ENCODE: u8 = 4;
/// In [`PATH_CLASS`]: a byte the path refuses (see [`normalize`]).
const BAD: u8 = 5;

/// Byte classes of a decoded path: `/`, `%`, and what [`normalize`]
/// refuses (controls, DEL, backslash).
static PATH_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    let mut b = 0;
    while b < 256 {
        if b < 0x20 || b == 0x7f || b == b'\\' as usize {
            t[b] = BAD;
        }
        b += 1;
    }
    t[b'/' as usize] = SLASH;
    t[b'%' as usize] = PERCENT;
    t
};

/// Whether `raw` (starting with `/`) is its own normal form: no escape,
/// no byte the path refuses, no empty, `.` or `..` segment but for the
/// empty one after a trailing slash. Most requests' paths are: then the
/// one scan is all the work (the segment walk of [`normalize_slow`] cost
/// about 300 instructions of a small request).
fn already_normal(raw: &[u8]) -> bool {
    let dot_seg = |seg: &[u8]| seg == b"." || seg == b"..";
    let mut seg_start = 1;
    for (i, &c) in raw.iter().enumerate().skip(1) {
        match PATH_CLASS[usize::from(c)] {
            PLAIN => {}
            SLASH => {
                let seg = &raw[seg_start..i];
                if seg.is_empty() || dot_seg(seg) {
                    return false;
                }
                seg_start = i + 1;
            }
            _ => return false,
        }
    }
    !dot_seg(&raw[seg_start..])
}

/// [`normalize`] of a path that is not [`already_normal`].
fn normalize_slow(raw: &str, scratch: &mut Vec<u8>, out: &mut String) -> Result<(), PathError> {
    let bad = |b: u8| b < 0x20 || b == 0x7f || b == b'\\';
    let (mut escaped, mut refused) = (false, false);
    for &b in raw.as_bytes() {
        escaped |= b == b'%';
        refused |= bad(b);
    }
    // Without an escape the decoded path is `raw` itself, already UTF-8:
    // copying and validating it again cost about 250 of the 8,100
    // instructions of a keep-alive request for a small file (callgrind).
    let decoded = if escaped {
        percent_decode(raw.as_bytes(), scratch)?;
        if scratch.iter().any(|&b| bad(b)) {
            return Err(PathError::BadByte);
        }
        std::str::from_utf8(scratch).map_err(|_| PathError::NotUtf8)?
    } else if refused {
        return Err(PathError::BadByte);
    } else {
        raw
    };
    let mut trailing_slash = false;
    // Split at '/' bytes (ASCII, so every piece is on character
    // boundaries) without the general char searcher of `str::split`.
    let bytes = decoded.as_bytes();
    let mut from = 0;
    while from <= bytes.len() {
        let end = bytes[from..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(bytes.len(), |i| from + i);
        let seg = &decoded[from..end];
        from = end + 1;
        match seg {
            "" | "." => trailing_slash = true,
            ".." => {
                if out.is_empty() {
                    return Err(PathError::AboveRoot);
                }
                let cut = out.rfind('/').unwrap_or(0);
                out.truncate(cut);
                trailing_slash = true;
            }
            s => {
                out.push('/');
                out.push_str(s);
                trailing_slash = false;
            }
        }
    }
    if out.is_empty() || trailing_slash {
        out.push('/');
    }
    Ok(())
}

/// Bytes a request target may not hold unencoded (lighttpd's
/// `encoded_chars_http_uri_reqd`): controls, space, `"`, `#`, `%`, `<`,
/// `>`, `[`, `\\`, `]`, `^`, `` ` ``, `{`, `|`, `}`, DEL and every non-ASCII byte.
fn needs_encoding(b: u8) -> bool {
    NEEDS_ENCODING[usize::from(b)]
}

/// [`needs_encoding`] as a table: a byte costs one load, not a range test
/// and a search of 13 bytes.
const NEEDS_ENCODING: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x21 || b >= 0x7f;
        b += 1;
    }
    let special = b"\"#%<>[\\]^`{|}";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = true;
        i += 1;
    }
    t
};

/// Byte classes of a request target: `/`, `?`, `%`, and the bytes
/// [`normalize_target`] escapes ([`needs_encoding`]).
static TARGET_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    let mut b = 0;
    while b < 256 {
        if NEEDS_ENCODING[b] {
            t[b] = ENCODE;
        }
        b += 1;
    }
    t[b'/' as usize] = SLASH;
    t[b'?' as usize] = QUERY;
    t[b'%' as usize] = PERCENT;
    t
};

/// Whether [`normalize_target`] has work on `b`: an empty, `.` or `..`
/// segment inside the path (before `?`), an escape it rewrites, or a byte
/// it escapes. One pass over the bytes with one
/// table load each: the first version (`find('?')`, `contains("//")`,
/// `split('/')`, a search per byte) cost 1,570 of the 8,200 instructions
/// of a keep-alive request for a small file.
fn needs_normalizing(b: &[u8]) -> bool {
    let mut in_query = false;
    let mut seg_start = 0;
    let dot_seg = |seg: &[u8]| seg == b"." || seg == b"..";
    for (i, &c) in b.iter().enumerate() {
        let class = TARGET_CLASS[usize::from(c)];
        if class == PLAIN {
            continue;
        }
        if class == ENCODE {
            return true;
        }
        if class == PERCENT {
            let (h, l) = (b.get(i + 1).copied(), b.get(i + 2).copied());
            match (h.and_then(syntax::hex_value), l.and_then(syntax::hex_value)) {
                (Some(x), Some(y)) => {
                    if unreserved(x << 4 | y)
                        || h.is_some_and(|h| h.is_ascii_lowercase())
                        || l.is_some_and(|l| l.is_ascii_lowercase())
                    {
                        return true;
                    }
                }
                _ => return true,
            }
        } else if !in_query {
            if class == SLASH {
                // "//" (an empty segment between two slashes), ".", ".."
                let seg = &b[seg_start..i];
                if (seg.is_empty() && seg_start > 0) || dot_seg(seg) {
                    return true;
                }
                seg_start = i + 1;
            } else {
                // QUERY
                if dot_seg(&b[seg_start..i]) {
                    return true;
                }
                in_query = true;
            }
        }
    }
    !in_query && dot_seg(&b[seg_start..])
}

/// RFC 3986 2.3: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The request target as mod_rewrite and mod_redirect match it, normalised
/// as lighttpd's default `server.http-parseopts` do: an escape of an
/// unreserved character is decoded (`%41` is `A`), other escapes get
/// upper-case hex (`%3a` is `%3A`), bytes that must be escaped are
/// (`ä` is `%C3%A4`), a fragment is dropped, and dot segments and empty
/// segments of the path are removed. An encoded slash stays `%2F` (the
/// path's rule, see [`percent_decode`]). `None` when the target is
/// already in that form, the common case, which costs one scan.
pub fn normalize_target(raw: &str) -> Option<String> {
    let b = raw.as_bytes();
    if !needs_normalizing(b) {
        return None;
    }
    let has_query = b.contains(&b'?');
    let mut out = Vec::with_capacity(b.len() + 16);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(syntax::hex_value),
                b.get(i + 2).copied().and_then(syntax::hex_value),
            ) else {
                // A malformed escape: left as sent, for the path's own check (400).
                return None;
            };
            let x = h << 4 | l;
            if unreserved(x) {
                out.push(x);
            } else {
                out.push(b'%');
                out.extend_from_slice(&syntax::hex_pair(x, syntax::HEX_UPPER));
            }
            i += 3;
            continue;
        }
        if c == b'#' {
            break;
        }
        if needs_encoding(c) {
            out.push(b'%');
            out.extend_from_slice(&syntax::hex_pair(c, syntax::HEX_UPPER));
        } else {
            out.push(c);
        }
        i += 1;
    }
    // (Every byte pushed is ASCII.)
    let text = String::from_utf8_lossy(&out).into_owned();
    let (p, q) = match text.find('?') {
        Some(i) if has_query => (&text[..i], &text[i..]),
        _ => (text.as_str(), ""),
    };
    let mut simple = String::with_capacity(text.len());
    let mut trailing = false;
    for seg in p.split('/') {
        match seg {
            "" | "." => trailing = true,
            // Above the root: left as sent, for the path's own check (400).
            ".." if simple.is_empty() => return None,
            ".." => {
                let cut = simple.rfind('/').unwrap_or(0);
                simple.truncate(cut);
                trailing = true;
            }
            s => {
                simple.push('/');
                simple.push_str(s);
                trailing = false;
            }
        }
    }
    if simple.is_empty() || (trailing && !simple.ends_with('/')) {
        simple.push('/');
    }
    if !p.starts_with('/') {
        // (`*` and other targets that are not paths keep their path as is.)
        simple = p.to_string();
    }
    simple.push_str(q);
    (simple != raw).then_some(simple)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(raw: &str) -> Result<String, PathError> {
        let mut scratch = Vec::new();
        let mut out = String::new();
        normalize(raw, &mut scratch, &mut out).map(|_| out)
    }

    /// The first, readable formulation of the common-case check.
    fn needs_normalizing_by_definition(raw: &str) -> bool {
        let b = raw.as_bytes();
        let path = &raw[..raw.find('?').unwrap_or(raw.len())];
        let dots = path.contains("//") || path.split('/').any(|seg| seg == "." || seg == "..");
        let escapes = b.iter().enumerate().any(|(i, &c)| {
            if c == b'%' {
                let (h, l) = (b.get(i + 1).copied(), b.get(i + 2).copied());
                match (h.and_then(syntax::hex_value), l.and_then(syntax::hex_value)) {
                    (Some(x), Some(y)) => {
                        unreserved(x << 4 | y)
                            || h.is_some_and(|h| h.is_ascii_lowercase())
                            || l.is_some_and(|l| l.is_ascii_lowercase())
                    }
                    _ => true,
                }
            } else {
                !(0x21..0x7f).contains(&c) || b"\"#%<>[\\]^`{|}".contains(&c)
            }
        });
        dots || escapes
    }

    #[test]
    fn the_one_pass_check_agrees_with_its_definition() {
        // Every string of up to 5 of these pieces: 12^5 = 248,832 targets.
        let pieces = [
            "/", ".", "a", "%", "2", "f", "F", "e", "?", "#", " ", "\u{e9}",
        ];
        let mut n = 0;
        let mut stack = vec![String::new()];
        while let Some(t) = stack.pop() {
            assert_eq!(
                needs_normalizing(t.as_bytes()),
                needs_normalizing_by_definition(&t),
                "{t:?}"
            );
            n += 1;
            if t.chars().count() < 5 {
                for p in pieces {
                    stack.push(format!("{t}{p}"));
                }
            }
        }
        assert!(n > 200_000);
    }

    #[test]
    fn targets_normalise_as_lighttpd_matches_them() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("already normal", "/a/b?x=1", None),
            (
                "lower hex",
                "/some+test%3axxx%20with%20space",
                Some("/some+test%3Axxx%20with%20space"),
            ),
            ("unreserved decoded", "/%7euser/%41", Some("/~user/A")),
            (
                "raw utf-8 encoded",
                "/~test%20\u{e4}_",
                Some("/~test%20%C3%A4_"),
            ),
            ("fragment dropped", "/a#frag", Some("/a")),
            ("dot segments", "/a/./b/../c", Some("/a/c")),
            ("double slash", "//a//b", Some("/a/b")),
            (
                "query kept, hex upper",
                "/a?x=%2f&y=%7e",
                Some("/a?x=%2F&y=~"),
            ),
            ("encoded slash stays", "/a%2Fb", None),
            ("a bad escape is left for the path check", "/a%zz", None),
            ("a space encoded", "/a b", Some("/a%20b")),
            ("star", "*", None),
            ("above the root: left for the path check", "/../x%3a", None),
        ];
        for (what, raw, want) in cases {
            assert_eq!(normalize_target(raw).as_deref(), *want, "{what}");
        }
    }

    #[test]
    fn table() {
        use PathError::*;
        let cases: &[(&str, &str, Result<&str, PathError>)] = &[
            ("root", "/", Ok("/")),
            ("plain file", "/index.html", Ok("/index.html")),
            ("directory keeps slash", "/a/b/", Ok("/a/b/")),
            ("double slashes", "//a///b", Ok("/a/b")),
            ("dot segments", "/a/./b/.", Ok("/a/b/")),
            ("dot-dot inside", "/a/b/../c", Ok("/a/c")),
            ("dot-dot to root", "/a/..", Ok("/")),
            ("escaped letters", "/%69ndex.html", Ok("/index.html")),
            ("escaped space", "/a%20b", Ok("/a b")),
            ("utf-8", "/%C3%A9t%C3%A9", Ok("/été")),
            ("escaped slash stays in the name", "/a%2fb", Ok("/a%2Fb")),
            ("dot-dot above root", "/..", Err(AboveRoot)),
            (
                "dot-dot deep above root",
                "/a/../../etc/passwd",
                Err(AboveRoot),
            ),
            ("escaped dot-dot", "/%2e%2e/etc/passwd", Err(AboveRoot)),
            (
                "escaped slash and dot-dot",
                "/a/..%2f..%2fetc",
                Ok("/a/..%2F..%2Fetc"),
            ),
            ("escaped slash after dot-dot", "/..%2fetc", Ok("/..%2Fetc")),
            ("mixed case escape", "/%2E%2E/x", Err(AboveRoot)),
            ("NUL", "/index.html%00.jpg", Err(BadByte)),
            ("newline", "/a%0d%0aSet-Cookie:x", Err(BadByte)),
            ("backslash", "/..\\..\\etc", Err(BadByte)),
            ("escaped backslash", "/..%5c..%5cetc", Err(BadByte)),
            ("overlong dot", "/%c0%ae%c0%ae/etc", Err(NotUtf8)),
            ("overlong slash", "/..%c0%af..%c0%afetc", Err(NotUtf8)),
            (
                "double encoded stays literal",
                "/%252e%252e/x",
                Ok("/%2e%2e/x"),
            ),
            ("bad escape", "/a%zz", Err(BadEscape)),
            ("truncated escape", "/a%2", Err(BadEscape)),
            ("relative", "a/b", Err(NotAbsolute)),
        ];
        for (what, raw, want) in cases {
            assert_eq!(
                norm(raw).as_deref(),
                want.as_ref().map(|s| *s),
                "{what}: {raw}"
            );
        }
    }

    #[test]
    fn the_fast_path_agrees_with_the_segment_walk() {
        // Every path of "/" and up to 5 of these pieces.
        let pieces = ["/", ".", "a", "%2e", "\\", "\u{e9}", "%", "\u{1}"];
        let mut n = 0;
        let mut stack = vec![(String::from("/"), 0)];
        while let Some((t, depth)) = stack.pop() {
            let (mut s1, mut o1) = (Vec::new(), String::new());
            let slow = normalize_slow(&t, &mut s1, &mut o1).map(|_| o1);
            if already_normal(t.as_bytes()) {
                assert_eq!(slow.as_deref(), Ok(t.as_str()), "{t:?}");
            }
            assert_eq!(norm(&t), slow, "{t:?}");
            n += 1;
            if depth < 5 {
                for p in pieces {
                    stack.push((format!("{t}{p}"), depth + 1));
                }
            }
        }
        assert!(n > 30_000);
    }

    #[test]
    fn never_leaves_the_root() {
        // Every normalised path starts with "/" and has no ".." segment.
        let pieces = [
            "..", ".", "a", "%2e", "%2e%2e", "%2f", "", "b%2f..", "..%2f",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let raw = format!("/{a}/{b}/{c}");
                    if let Ok(p) = norm(&raw) {
                        assert!(p.starts_with('/'), "{raw} -> {p}");
                        assert!(!p.split('/').any(|s| s == ".."), "{raw} -> {p}");
                    }
                }
            }
        }
    }
}
