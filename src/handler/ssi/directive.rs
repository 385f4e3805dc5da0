//! Finding `<!--#element attribute=value ... -->` in a page and splitting
//! one into its words, with lighttpd 1.4.69's rules: at most two
//! attributes, values bare or in single or double quotes (a backslash
//! keeps the next character, and stays), and a directive that is not
//! well formed passes through as text.

/// The longest directive: one that does not end within this many bytes of
/// its `<!--#` is an error (lighttpd reads pages in 8 KiB buffers).
pub const MAX_DIRECTIVE: usize = 8192;

/// What the scanner found next in the page.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Text up to here, then a whole directive of this many bytes.
    Directive { text_end: usize, len: usize },
    /// Text up to here, then a directive that does not end within
    /// [`MAX_DIRECTIVE`] bytes: the first [`MAX_DIRECTIVE`] bytes are dropped.
    TooLong { text_end: usize },
    /// Only text is left.
    End,
}

/// Looks for the next directive in `page` from `from`.
pub fn next(page: &[u8], from: usize) -> Next {
    let mut at = from;
    while let Some(i) = page[at..].iter().position(|&b| b == b'<') {
        let start = at + i;
        if page[start..].starts_with(b"<!--#") {
            let window = &page[start..page.len().min(start + MAX_DIRECTIVE)];
            return match stmt_len(window) {
                Some(len) => Next::Directive {
                    text_end: start,
                    len,
                },
                None if window.len() == MAX_DIRECTIVE => Next::TooLong { text_end: start },
                // Not closed before the end of the page: text.
                None => Next::End,
            };
        }
        at = start + 1;
    }
    Next::End
}

/// The length of the directive at the start of `s` (which begins `<!--#`)
/// up to and with its `-->`, which does not count inside quotes.
fn stmt_len(s: &[u8]) -> Option<usize> {
    let (mut sq, mut dq, mut bs) = (false, false, false);
    for n in 5..s.len() {
        match s[n] {
            b'-' if !sq && !dq && s[n..].starts_with(b"-->") => return Some(n + 3),
            b'"' if !sq && (!dq || !bs) => dq = !dq,
            b'\'' if !dq && (!sq || !bs) => sq = !sq,
            b'\\' if sq || dq => bs = !bs,
            _ => {}
        }
    }
    None
}

/// C's isspace in the "C" locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The words of a well-formed directive `s` (from `<!--#` to `-->`): the
/// element, then attribute and value in turn (quotes taken off, cut at a
/// NUL as lighttpd's C strings are). `None`: not well formed.
pub fn words(s: &[u8]) -> Option<Vec<&[u8]>> {
    let body_end = s.len().checked_sub(3)?;
    let mut out = Vec::with_capacity(5);
    let mut n = 5;
    let alpha_run = |mut n: usize| {
        while n < body_end && s[n].is_ascii_alphabetic() {
            n += 1;
        }
        n
    };
    let end = alpha_run(n);
    if end == n {
        return None;
    }
    out.push(cut(&s[n..end]));
    n = end;
    for _ in 0..2 {
        if n == body_end {
            return Some(out);
        }
        if !is_space(s[n]) {
            return None;
        }
        while n < body_end && is_space(s[n]) {
            n += 1;
        }
        if n == body_end {
            return Some(out);
        }
        let end = alpha_run(n);
        if end == n || s[end] != b'=' {
            return None;
        }
        out.push(cut(&s[n..end]));
        n = end + 1;
        let len = value_len(&s[n..body_end]);
        if len == 0 {
            return None;
        }
        let v = &s[n..n + len];
        out.push(cut(match v[0] {
            b'"' | b'\'' => &v[1..len - 1],
            _ => v,
        }));
        n += len;
    }
    if n == body_end {
        return Some(out);
    }
    if !is_space(s[n]) {
        return None;
    }
    while n < body_end && is_space(s[n]) {
        n += 1;
    }
    (n == body_end).then_some(out)
}

/// The length of the value at the start of `s`, quotes included; 0 when
/// it is empty or not closed.
fn value_len(s: &[u8]) -> usize {
    let quote = match s.first() {
        Some(&q @ (b'"' | b'\'')) => Some(q),
        Some(_) => None,
        None => return 0,
    };
    let mut n = usize::from(quote.is_some());
    while n < s.len() {
        match (quote, s[n]) {
            (Some(q), c) if c == q => return n + 1,
            (None, c) if is_space(c) => return n,
            (_, b'\\') if n + 1 == s.len() => return 0,
            (_, b'\\') => n += 1,
            _ => {}
        }
        n += 1;
    }
    if quote.is_some() {
        0
    } else {
        n
    }
}

fn cut(w: &[u8]) -> &[u8] {
    match w.iter().position(|&b| b == 0) {
        Some(i) => &w[..i],
        None => w,
    }
}

/// A malformed `<!--#comment ...-->` is dropped rather than sent.
pub fn is_loose_comment(s: &[u8]) -> bool {
    s.len() >= 16 && &s[5..12] == b"comment" && matches!(s[12], b' ' | b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_table() {
        let w = |s: &str| {
            words(s.as_bytes()).map(|v| {
                v.iter()
                    .map(|x| String::from_utf8_lossy(x).into_owned())
                    .collect::<Vec<_>>()
            })
        };
        let cases: &[(&str, Option<&[&str]>, &str)] = &[
            (
                "<!--#echo var=\"X\" -->",
                Some(&["echo", "var", "X"]),
                "quoted",
            ),
            (
                "<!--#echo var=X-->",
                Some(&["echo", "var", "X"]),
                "bare, no space",
            ),
            (
                "<!--#echo var='a b' -->",
                Some(&["echo", "var", "a b"]),
                "single quotes",
            ),
            ("<!--#endif-->", Some(&["endif"]), "no attribute"),
            ("<!--#endif   -->", Some(&["endif"]), "spaces"),
            (
                "<!--#set var=\"a\" value=\"b\" -->",
                Some(&["set", "var", "a", "value", "b"]),
                "two",
            ),
            ("<!--#set var=a value=b x=c -->", None, "three attributes"),
            ("<!--#echo var= -->", None, "empty value"),
            ("<!--#echo var=\"x -->", None, "unclosed quote"),
            ("<!--# echo -->", None, "space before the element"),
            (
                "<!--#echo var=\"a\\\"b\" -->",
                Some(&["echo", "var", "a\\\"b"]),
                "escaped quote kept",
            ),
            ("<!--#echo var\"x\" -->", None, "no ="),
        ];
        for (s, want, why) in cases {
            let want = want.map(|v| v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
            assert_eq!(w(s), want, "{why}: {s}");
        }
    }

    #[test]
    fn scanning() {
        let p = b"ab<!--#x -->cd";
        assert_eq!(
            next(p, 0),
            Next::Directive {
                text_end: 2,
                len: 10
            }
        );
        assert_eq!(
            next(b"a <!-- plain --> <!--#x \"-->\" -->", 0),
            Next::Directive {
                text_end: 17,
                len: 16
            }
        );
        assert_eq!(
            next(b"a <!--#x", 0),
            Next::End,
            "unclosed at the end is text"
        );
        let mut long = b"<!--#echo var=\"".to_vec();
        long.resize(MAX_DIRECTIVE + 10, b'a');
        assert_eq!(next(&long, 0), Next::TooLong { text_end: 0 });
    }
}
