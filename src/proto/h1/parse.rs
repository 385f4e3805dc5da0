//! Request-head parsing: a pure function over bytes.
//!
//! `parse` returns `Ok(None)` while the head is incomplete, a [`Request`]
//! borrowing from the buffer once it is complete, and an [`HttpError`]
//! carrying the status to answer with when the head is bad. Every framing
//! ambiguity (RFC 9112 §6.3) is an error, so that glint and whatever sits in
//! front of it can never disagree on where one request ends.

pub use crate::syntax::valid_host;
use std::mem::MaybeUninit;

use httparse::{Header, Status};

use crate::msg::request::{err, trim_ows, Body, HttpError, Method, Request, MAX_HEADERS};

/// Parses one request head from the start of `buf`.
///
/// `max_head` is `server.max-request-field-size`: a head that is not complete
/// within that many bytes is refused (414 when even the request line is
/// longer, 431 otherwise).
pub fn parse<'h, 'b>(
    buf: &'b [u8],
    headers: &'h mut [Header<'b>; MAX_HEADERS],
    max_head: usize,
) -> Result<Option<Request<'h, 'b>>, HttpError> {
    let mut req = httparse::Request::new(headers);
    let parsed = req.parse(buf);
    validate(buf, req, parsed, max_head)
}

/// [`parse`] into headers that need no initialising: an array of 64
/// `EMPTY_HEADER`s is 2 KiB of stores, about 370 of the 8,100 instructions
/// a keep-alive request for a small file cost (callgrind).
pub fn parse_uninit<'h, 'b>(
    buf: &'b [u8],
    headers: &'h mut [MaybeUninit<Header<'b>>; MAX_HEADERS],
    max_head: usize,
) -> Result<Option<Request<'h, 'b>>, HttpError> {
    let mut req = httparse::Request::new(&mut []);
    let parsed = req.parse_with_uninit_headers(buf, headers);
    validate(buf, req, parsed, max_head)
}

/// The checks after httparse: framing, Host, keep-alive.
fn validate<'h, 'b>(
    buf: &'b [u8],
    req: httparse::Request<'h, 'b>,
    parsed: httparse::Result<usize>,
    max_head: usize,
) -> Result<Option<Request<'h, 'b>>, HttpError> {
    let Some(head_len) = complete_len(buf, parsed, max_head)? else {
        return Ok(None);
    };
    let method_str = req.method.unwrap_or("");
    let target = req.path.unwrap_or("");
    let minor = req.version.unwrap_or(1);
    let headers: &'h [Header<'b>] = req.headers;
    let method = Method::from_token(method_str);

    let line_end = buf.iter().position(|&b| b == b'\n').unwrap_or(0);
    let request_line = trim_cr(&buf[..line_end]);

    let fields = HeadFields::scan(headers)?;
    let body = fields.body(minor)?;

    // The target: origin form, absolute form, or `*` for OPTIONS.
    let (target, target_host) = split_target(target, method)?;
    let host = match (target_host, fields.host) {
        (Some(t), _) => t,
        (None, Some(h)) => h,
        (None, None) if minor >= 1 => return Err(err(400, "HTTP/1.1 request without Host")),
        (None, None) => b"",
    };
    // An empty Host is what RFC 9112 3.2 asks for when there is no authority.
    if !host.is_empty() && !valid_host(host) {
        return Err(err(400, "invalid Host"));
    }

    let keep_alive = if minor >= 1 {
        !fields.conn_close
    } else {
        fields.conn_keep_alive && !fields.conn_close
    };
    Ok(Some(Request {
        method,
        method_str,
        target,
        minor,
        major: 1,
        headers,
        head_len,
        body,
        keep_alive,
        host,
        request_line,
    }))
}

/// The length of a complete head within `max_head`, `None` while it is
/// incomplete, or the error for what httparse refused.
#[inline]
fn complete_len(
    buf: &[u8],
    parsed: httparse::Result<usize>,
    max_head: usize,
) -> Result<Option<usize>, HttpError> {
    let head_len = match parsed {
        Ok(Status::Complete(n)) => n,
        Ok(Status::Partial) => {
            if buf.len() >= max_head {
                return Err(too_long(&buf[..max_head]));
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(err(431, "too many header fields"));
        }
        Err(httparse::Error::Version) => return Err(bad_version(buf)),
        Err(_) => return Err(err(400, "malformed request head")),
    };
    if head_len > max_head {
        return Err(too_long(&buf[..max_head]));
    }
    Ok(Some(head_len))
}

/// What the header fields say of the request's host, framing and
/// connection, each checked for ambiguity as it is met.
struct HeadFields<'b> {
    host: Option<&'b [u8]>,
    content_length: Option<u64>,
    chunked: bool,
    conn_close: bool,
    conn_keep_alive: bool,
}

impl<'b> HeadFields<'b> {
    #[inline]
    fn scan(headers: &[Header<'b>]) -> Result<HeadFields<'b>, HttpError> {
        let mut f = HeadFields {
            host: None,
            content_length: None,
            chunked: false,
            conn_close: false,
            conn_keep_alive: false,
        };
        let mut transfer_encoding = false;
        for h in headers.iter() {
            let name = h.name;
            if name.eq_ignore_ascii_case("host") {
                if f.host.is_some() {
                    return Err(err(400, "more than one Host header"));
                }
                f.host = Some(h.value);
            } else if name.eq_ignore_ascii_case("content-length") {
                let n = parse_content_length(h.value)?;
                if f.content_length.is_some_and(|old| old != n) {
                    return Err(err(400, "differing Content-Length headers"));
                }
                f.content_length = Some(n);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                if transfer_encoding {
                    return Err(err(400, "more than one Transfer-Encoding header"));
                }
                transfer_encoding = true;
                if !trim_ows(h.value).eq_ignore_ascii_case(b"chunked") {
                    return Err(err(501, "unsupported Transfer-Encoding"));
                }
                f.chunked = true;
            } else if name.eq_ignore_ascii_case("connection") {
                f.connection(h.value);
            } else if name.eq_ignore_ascii_case("expect")
                && !trim_ows(h.value).eq_ignore_ascii_case(b"100-continue")
            {
                return Err(err(417, "unsupported expectation"));
            }
        }
        Ok(f)
    }

    /// The tokens of a `Connection` field.
    #[inline]
    fn connection(&mut self, value: &[u8]) {
        for token in value.split(|&b| b == b',') {
            let token = trim_ows(token);
            if token.eq_ignore_ascii_case(b"close") {
                self.conn_close = true;
            } else if token.eq_ignore_ascii_case(b"keep-alive") {
                self.conn_keep_alive = true;
            }
        }
    }

    /// The body's framing; chunked framing needs HTTP/1.1 and no
    /// Content-Length beside it.
    #[inline]
    fn body(&self, minor: u8) -> Result<Body, HttpError> {
        if self.chunked && self.content_length.is_some() {
            return Err(err(400, "both Transfer-Encoding and Content-Length"));
        }
        if self.chunked && minor == 0 {
            return Err(err(400, "Transfer-Encoding in an HTTP/1.0 request"));
        }
        Ok(if self.chunked {
            Body::Chunked
        } else {
            match self.content_length {
                Some(0) | None => Body::None,
                Some(n) => Body::Length(n),
            }
        })
    }
}

fn too_long(start: &[u8]) -> HttpError {
    if start.contains(&b'\n') {
        err(431, "request head too large")
    } else {
        err(414, "request line too long")
    }
}

/// A version httparse refused: 505 for a well-formed `HTTP/x.y` other than
/// 1.0 and 1.1 (HTTP/2's preface among them), 400 for anything else, including
/// HTTP/0.9's `GET /` with no version at all.
fn bad_version(buf: &[u8]) -> HttpError {
    let line_end = buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len());
    let line = trim_cr(&buf[..line_end]);
    match line.rsplit(|&b| b == b' ').next() {
        Some([b'H', b'T', b'T', b'P', b'/', major, rest @ ..])
            if major.is_ascii_digit()
                && (rest.is_empty()
                    || (rest.len() == 2 && rest[0] == b'.' && rest[1].is_ascii_digit())) =>
        {
            err(505, "unsupported HTTP version")
        }
        _ => err(400, "malformed request line"),
    }
}

fn split_target(target: &str, method: Method) -> Result<(&str, Option<&[u8]>), HttpError> {
    if target.starts_with('/') {
        return Ok((target, None));
    }
    if target == "*" {
        return if method == Method::Options {
            Ok((target, None))
        } else {
            Err(err(400, "asterisk target on a method other than OPTIONS"))
        };
    }
    // Compare bytes: the target may hold UTF-8, and slicing the str at 7 or
    // 8 inside a multibyte character panics (found by fuzz/request_head).
    let t = target.as_bytes();
    let rest = if t.len() > 7 && t[..7].eq_ignore_ascii_case(b"http://") {
        &target[7..]
    } else if t.len() > 8 && t[..8].eq_ignore_ascii_case(b"https://") {
        &target[8..]
    } else {
        return Err(err(400, "invalid request target"));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(err(400, "invalid authority in request target"));
    }
    if path.starts_with('?') {
        // `http://host?q` has an empty path: serve `/` with the query.
        return Err(err(400, "absolute target without a path"));
    }
    Ok((path, Some(authority.as_bytes())))
}

fn parse_content_length(v: &[u8]) -> Result<u64, HttpError> {
    let v = trim_ows(v);
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(err(400, "invalid Content-Length"));
    }
    let mut n: u64 = 0;
    for &d in v {
        n = n * 10 + (d - b'0') as u64;
    }
    Ok(n)
}

fn trim_cr(v: &[u8]) -> &[u8] {
    v.strip_suffix(b"\r").unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Method, target, minor version, body framing, keep-alive, host.
    type Parsed = (Method, String, u8, Body, bool, String);

    fn run(buf: &[u8]) -> Result<Option<Parsed>, u16> {
        let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match parse(buf, &mut hs, 8192) {
            Ok(Some(r)) => Ok(Some((
                r.method,
                r.target.to_string(),
                r.minor,
                r.body,
                r.keep_alive,
                String::from_utf8_lossy(r.host).into_owned(),
            ))),
            Ok(None) => Ok(None),
            Err(e) => Err(e.status),
        }
    }

    #[test]
    fn good_requests() {
        type Case<'a> = (&'a str, &'a [u8], Method, &'a str, u8, Body, bool, &'a str);
        let cases: &[Case] = &[
            (
                "simple 1.1",
                b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n",
                Method::Get,
                "/index.html",
                1,
                Body::None,
                true,
                "a",
            ),
            (
                "1.0 closes by default",
                b"GET / HTTP/1.0\r\n\r\n",
                Method::Get,
                "/",
                0,
                Body::None,
                false,
                "",
            ),
            (
                "1.0 keep-alive",
                b"HEAD / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
                Method::Head,
                "/",
                0,
                Body::None,
                true,
                "",
            ),
            (
                "1.1 close",
                b"GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n",
                Method::Get,
                "/",
                1,
                Body::None,
                false,
                "a",
            ),
            (
                "absolute form overrides Host",
                b"GET http://example.com:8080/x?y HTTP/1.1\r\nHost: other\r\n\r\n",
                Method::Get,
                "/x?y",
                1,
                Body::None,
                true,
                "example.com:8080",
            ),
            (
                "body by length",
                b"POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
                Method::Post,
                "/f",
                1,
                Body::Length(5),
                true,
                "a",
            ),
            (
                "repeated equal Content-Length",
                b"POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                Method::Post,
                "/f",
                1,
                Body::Length(5),
                true,
                "a",
            ),
            (
                "chunked",
                b"POST /f HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
                Method::Post,
                "/f",
                1,
                Body::Chunked,
                true,
                "a",
            ),
            (
                "OPTIONS *",
                b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
                Method::Options,
                "*",
                1,
                Body::None,
                true,
                "a",
            ),
            (
                "unknown method parses",
                b"FOO / HTTP/1.1\r\nHost: a\r\n\r\n",
                Method::Unknown,
                "/",
                1,
                Body::None,
                true,
                "a",
            ),
            (
                "IPv6 host",
                b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
                Method::Get,
                "/",
                1,
                Body::None,
                true,
                "[::1]:80",
            ),
        ];
        for (what, buf, m, target, minor, body, ka, host) in cases {
            let got = run(buf);
            assert_eq!(
                got,
                Ok(Some((
                    *m,
                    target.to_string(),
                    *minor,
                    *body,
                    *ka,
                    host.to_string()
                ))),
                "{what}"
            );
        }
    }

    #[test]
    fn incomplete_heads_need_more() {
        let cases: &[(&str, &[u8])] = &[
            ("empty", b""),
            ("half a line", b"GET /ind"),
            ("no blank line", b"GET / HTTP/1.1\r\nHost: a\r\n"),
        ];
        for (what, buf) in cases {
            assert_eq!(run(buf), Ok(None), "{what}");
        }
    }

    #[test]
    fn bad_requests() {
        let long_uri = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(9000));
        let big_head = format!(
            "GET / HTTP/1.1\r\nHost: a\r\nX-Big: {}\r\n\r\n",
            "b".repeat(9000)
        );
        let many: String = (0..70).map(|i| format!("X-{i}: v\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n");
        let cases: &[(&str, &[u8], u16)] = &[
            ("garbage", b"\x01\x02garbage\r\n\r\n", 400),
            ("no Host in 1.1", b"GET / HTTP/1.1\r\n\r\n", 400),
            ("two Hosts", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("Host with slash", b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
            (
                "TE and CL",
                b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                400,
            ),
            (
                "differing CL",
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                400,
            ),
            ("non-numeric CL", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3x\r\n\r\n", 400),
            ("negative CL", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
            ("CL list", b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\n", 400),
            (
                "unknown TE",
                b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
                501,
            ),
            (
                "TE in 1.0",
                b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                400,
            ),
            ("obs-fold", b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400),
            ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
            ("HTTP/0.9", b"GET /\r\n\r\n", 400),
            ("HTTP/3.0", b"GET / HTTP/3.0\r\nHost: a\r\n\r\n", 505),
            ("bad version text", b"GET / FOO/1.1\r\nHost: a\r\n\r\n", 400),
            ("asterisk on GET", b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("relative target", b"GET index.html HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("userinfo", b"GET http://u@h/ HTTP/1.1\r\n\r\n", 400),
            ("expect other", b"GET / HTTP/1.1\r\nHost: a\r\nExpect: foo\r\n\r\n", 417),
            ("URI too long", long_uri.as_bytes(), 414),
            ("head too large", big_head.as_bytes(), 431),
            ("too many headers", many.as_bytes(), 431),
        ];
        for (what, buf, status) in cases {
            assert_eq!(run(buf), Err(*status), "{what}");
        }
    }

    #[test]
    fn multibyte_characters_in_an_absolute_target_do_not_panic() {
        // Found by fuzz/request_head: `target[..7]` split the 'ф'.
        assert_eq!(
            run("GET http:/\u{444}DhDh/ HTTP/1.1\r\n\r\n".as_bytes()),
            Err(400)
        );
        assert_eq!(
            run("GET https:/\u{444}x/ HTTP/1.1\r\n\r\n".as_bytes()),
            Err(400)
        );
        let got = run("GET http://\u{444}/x HTTP/1.1\r\n\r\n".as_bytes());
        assert!(matches!(got, Err(400) | Ok(Some(_))), "{got:?}");
    }

    #[test]
    fn partial_over_the_limit_is_refused_early() {
        let buf = vec![b'a'; 9000];
        assert_eq!(run(&buf), Err(414));
        let mut buf = b"GET / HTTP/1.1\r\nX: ".to_vec();
        buf.extend(std::iter::repeat_n(b'b', 9000));
        assert_eq!(run(&buf), Err(431));
    }
}
