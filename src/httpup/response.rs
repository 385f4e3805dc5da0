//! The upstream's answer head: parsing, framing (RFC 9112 6.3), whether the
//! connection may carry another request, and the header lines the client
//! gets (lighttpd `src/http-header-glue.c` `http_response_parse_headers`,
//! `src/mod_proxy.c` `proxy_response_headers`).
//!
//! glint is stricter than lighttpd where an answer's framing is ambiguous:
//! lighttpd lets `Transfer-Encoding` win over `Content-Length` and ignores
//! a second `Content-Length`; on a kept connection either could let one
//! answer's body be read as the next answer (response splitting), so glint
//! refuses the answer (the caller answers 502 and closes the connection).

use std::fmt;
use std::ops::Range;

use super::has_token;
use super::options::HeaderOptions;
use super::remap::{Dir, Remap};
use super::request::{Sent, Version};
use crate::syntax::trim_ows as trim;

/// The longest answer head accepted, status line included (lighttpd
/// `MAX_HTTP_RESPONSE_FIELD_SIZE`, 65535).
pub const MAX_HEAD: usize = 65_535;

/// The most header fields in one answer head. lighttpd counts up to 8192
/// lines within its 64 KiB; 256 fields is four times glint's own request
/// limit (64) and more than any application server sends, while keeping
/// the parser's field table (32 bytes each) at 8 KiB of stack.
pub const MAX_FIELDS: usize = 256;

/// One header field: byte ranges of its name and (trimmed) value in the
/// buffer given to [`parse_head`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: Range<usize>,
    pub value: Range<usize>,
}

impl Field {
    pub fn name<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.name.clone()]
    }
    pub fn value<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.value.clone()]
    }
}

/// What kind of answer head this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 1xx but 101: the real answer follows after `head_len` bytes; see
    /// [`forward_interim`].
    Interim,
    /// 101 Switching Protocols to a request that passed `Upgrade`: after the
    /// head, bytes go both ways until either side closes.
    Switching,
    /// The answer.
    Final,
}

/// How the answer's body is delimited (RFC 9112 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body: 1xx, 204, 304, an answer to HEAD.
    None,
    Length(u64),
    /// Through a [`super::chunked::Dechunker`].
    Chunked,
    /// Until the upstream closes; the connection is not kept.
    UntilClose,
    /// After a 101: relayed both ways.
    Tunnel,
}

/// A parsed answer head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub status: u16,
    /// The reason phrase's bytes in the buffer.
    pub reason: Range<usize>,
    /// Bytes of the head, up to and including its empty line.
    pub head_len: usize,
    pub kind: Kind,
    pub framing: Framing,
    /// The one valid `Content-Length` value, when there is one.
    pub content_length: Option<u64>,
    /// After the body has been read to its end, the connection may carry
    /// another request (RFC 9112 9.3): a keep-alive request was sent, the
    /// upstream did not say `close` (HTTP/1.1) or did say `keep-alive`
    /// (HTTP/1.0), and the body's end is known.
    pub reusable: bool,
    /// `Keep-Alive: timeout=N` from the upstream: how long it keeps an idle
    /// connection, for the pool to give up sooner.
    pub keep_alive_timeout: Option<u32>,
}

/// Why an answer is refused; the client gets 502 and the connection closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamError {
    /// The head is longer than [`MAX_HEAD`].
    TooLarge,
    /// Not HTTP/1.x syntax (httparse's reason; obs-fold, NUL, bare CR,
    /// whitespace before a colon, more than [`MAX_FIELDS`] fields).
    Malformed(httparse::Error),
    /// A status code below 100.
    BadStatus,
    /// A `Content-Length` that is not one number, or several that differ.
    BadContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` (RFC 9112 6.3 item 3).
    LengthAndTransferEncoding,
    /// A transfer coding other than exactly `chunked`.
    BadTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 answer (RFC 9112 6.1).
    TransferEncodingInHttp10,
    /// 101 to a request that did not ask to upgrade, or without `Upgrade`.
    UnexpectedSwitch,
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamError::TooLarge => write!(f, "answer head longer than {MAX_HEAD} bytes"),
            UpstreamError::Malformed(e) => write!(f, "malformed answer head: {e}"),
            UpstreamError::BadStatus => f.write_str("status code below 100"),
            UpstreamError::BadContentLength => f.write_str("invalid or conflicting Content-Length"),
            UpstreamError::LengthAndTransferEncoding => {
                f.write_str("both Content-Length and Transfer-Encoding")
            }
            UpstreamError::BadTransferEncoding => {
                f.write_str("Transfer-Encoding other than chunked")
            }
            UpstreamError::TransferEncodingInHttp10 => {
                f.write_str("Transfer-Encoding in an HTTP/1.0 answer")
            }
            UpstreamError::UnexpectedSwitch => {
                f.write_str("101 Switching Protocols without a requested upgrade")
            }
        }
    }
}

impl std::error::Error for UpstreamError {}

fn range_in(buf: &[u8], sub: &[u8]) -> Range<usize> {
    let start = (sub.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    if sub.is_empty() || start > buf.len() || buf.len() - start < sub.len() {
        return 0..0;
    }
    start..start + sub.len()
}

/// Parses the answer head at the start of `buf`. `Ok(None)`: not complete
/// yet, read more. `fields` is cleared and filled (its capacity is kept for
/// the next answer).
pub fn parse_head(
    buf: &[u8],
    sent: &Sent,
    fields: &mut Vec<Field>,
) -> Result<Option<Head>, UpstreamError> {
    fields.clear();
    let scan = &buf[..buf.len().min(MAX_HEAD)];
    let mut hs = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut resp = httparse::Response::new(&mut hs);
    let head_len = match resp.parse(scan) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Err(UpstreamError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(UpstreamError::Malformed(e)),
    };
    let (Some(version), Some(status)) = (resp.version, resp.code) else {
        return Err(UpstreamError::BadStatus);
    };
    if status < 100 {
        return Err(UpstreamError::BadStatus);
    }
    let reason = resp.reason.map_or(0..0, |r| range_in(buf, r.as_bytes()));
    let mut seen = Seen::default();
    for h in resp.headers.iter() {
        let value = trim(h.value);
        fields.push(Field {
            name: range_in(buf, h.name.as_bytes()),
            value: range_in(buf, value),
        });
        seen.field(h.name, value);
    }
    let content_length = match seen.lengths {
        None => None,
        Some(Ok(n)) => Some(n),
        Some(Err(())) => return Err(UpstreamError::BadContentLength),
    };
    let head = Head {
        version,
        status,
        reason,
        head_len,
        kind: Kind::Final,
        framing: Framing::None,
        content_length,
        reusable: false,
        keep_alive_timeout: seen.keep_alive_timeout,
    };
    settle(head, sent, &seen).map(Some)
}

/// What an answer's fields say of its framing and its connection.
#[derive(Default)]
struct Seen {
    /// The `Content-Length` values: one, agreeing ones, or a disagreement.
    lengths: Option<Result<u64, ()>>,
    /// `Transfer-Encoding` came: whether it is exactly `chunked`.
    te: Option<bool>,
    close: bool,
    keep: bool,
    upgrade: bool,
    keep_alive_timeout: Option<u32>,
}

impl Seen {
    fn field(&mut self, name: &str, value: &[u8]) {
        if name.eq_ignore_ascii_case("content-length") {
            self.lengths = Some(match (self.lengths, content_length(value)) {
                (None, Ok(n)) => Ok(n),
                (Some(Ok(a)), Ok(b)) if a == b => Ok(a),
                _ => Err(()),
            });
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            let codings: Vec<&[u8]> = value
                .split(|&c| c == b',')
                .map(trim)
                .filter(|c| !c.is_empty())
                .collect();
            let chunked_only = codings.len() == 1 && codings[0].eq_ignore_ascii_case(b"chunked");
            // A second field adds codings: never exactly one `chunked` then.
            self.te = Some(self.te.is_none() && chunked_only);
        } else if name.eq_ignore_ascii_case("connection") {
            self.close |= has_token(value, "close");
            self.keep |= has_token(value, "keep-alive");
        } else if name.eq_ignore_ascii_case("upgrade") {
            self.upgrade |= !value.is_empty();
        } else if name.eq_ignore_ascii_case("keep-alive") {
            self.keep_alive_timeout = self.keep_alive_timeout.or_else(|| timeout_param(value));
        }
    }
}

/// The kind, framing and reusability of `head` from its status, what was
/// `sent` and what its fields said; an error for a framing glint cannot
/// trust.
fn settle(mut head: Head, sent: &Sent, seen: &Seen) -> Result<Head, UpstreamError> {
    let (version, status, content_length) = (head.version, head.status, head.content_length);
    if status == 101 {
        if !sent.upgrade || version == 0 || !seen.upgrade {
            return Err(UpstreamError::UnexpectedSwitch);
        }
        head.kind = Kind::Switching;
        head.framing = Framing::Tunnel;
        return Ok(head);
    }
    if status < 200 {
        head.kind = Kind::Interim;
        return Ok(head);
    }
    if let Some(chunked_only) = seen.te {
        if content_length.is_some() {
            return Err(UpstreamError::LengthAndTransferEncoding);
        }
        if version == 0 {
            return Err(UpstreamError::TransferEncodingInHttp10);
        }
        if !chunked_only {
            return Err(UpstreamError::BadTransferEncoding);
        }
    }
    head.framing = if sent.head || status == 204 || status == 304 {
        Framing::None
    } else if seen.te.is_some() {
        Framing::Chunked
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::UntilClose
    };
    let persist = if version == 1 {
        !seen.close
    } else {
        seen.keep && !seen.close
    };
    // A 204 announcing a body it may not have (RFC 9110 15.3.5): whatever
    // follows is not a next answer to trust.
    let stray_body = status == 204 && content_length.is_some_and(|n| n > 0);
    head.reusable =
        sent.keep_alive && persist && head.framing != Framing::UntilClose && !stray_body;
    Ok(head)
}

/// One `Content-Length` value: 1*DIGIT, or a list of equal ones (RFC 9110
/// 8.6 lets a recipient take "5, 5" as 5). lighttpd also takes a leading
/// `+`, which RFC 9110 does not allow.
fn content_length(v: &[u8]) -> Result<u64, ()> {
    let mut n = None;
    for part in v.split(|&c| c == b',').map(trim) {
        // 19 digits always fit a u64; a body that long is refused anyway.
        if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
            return Err(());
        }
        let x = part.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0'));
        match n {
            Some(y) if y != x => return Err(()),
            _ => n = Some(x),
        }
    }
    n.ok_or(())
}

fn timeout_param(v: &[u8]) -> Option<u32> {
    v.split(|&c| c == b',' || c == b';')
        .map(trim)
        .find_map(|p| {
            if p.len() < 8 || !p[..8].eq_ignore_ascii_case(b"timeout=") {
                return None;
            }
            std::str::from_utf8(&p[8..]).ok()?.trim().parse().ok()
        })
}

/// Whether an interim answer goes on to the client: lighttpd passes 1xx to
/// HTTP/1.1 clients only (`http_response_send_1xx`). glint keeps 100
/// Continue back: it answered `Expect: 100-continue` itself and never sent
/// `Expect` upstream.
pub fn forward_interim(status: u16, client: Version) -> bool {
    status != 100 && client == Version::Http11
}

/// Fields the client never sees from an upstream: hop-by-hop (RFC 9110
/// 7.6.1), re-framed by glint, or refused by RFC 9113 8.2.2 (`HTTP2-Settings`,
/// dropped by lighttpd too).
const HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "upgrade",
    "content-length",
    "http2-settings",
];

/// Writes the answer's header lines for the client (each `Name: value\r\n`;
/// no status line, no empty line) into `out`: hop-by-hop fields and those
/// the upstream named in `Connection` left out, `Content-Length` once as
/// parsed, `Location` / `Content-Location` / `Set-Cookie` remapped. For a
/// 101, `Upgrade` and `Connection: upgrade` are written; for other answers
/// the caller adds its own framing (`Transfer-Encoding: chunked` for
/// `Chunked`/`UntilClose` to an HTTP/1.1 client) and `Connection`.
pub fn write_client_headers(
    buf: &[u8],
    head: &Head,
    fields: &[Field],
    opts: &HeaderOptions,
    remap: &mut Remap,
    out: &mut Vec<u8>,
) {
    let named: Vec<&[u8]> = fields
        .iter()
        .filter(|f| f.name(buf).eq_ignore_ascii_case(b"connection"))
        .flat_map(|f| f.value(buf).split(|&c| c == b','))
        .map(trim)
        .filter(|t| !t.is_empty())
        .collect();
    let switching = head.kind == Kind::Switching;
    let remaps = opts.remaps_response();
    for f in fields {
        let name = f.name(buf);
        let value = f.value(buf);
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if switching && is("upgrade") {
            put(out, name, value);
            continue;
        }
        if HOP.iter().any(|h| is(h)) || named.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            continue;
        }
        if remaps && (is("location") || is("content-location") || is("set-cookie")) {
            let mut v = value.to_vec();
            if is("set-cookie") {
                remap.remap_setcookie(opts, &mut v);
            } else {
                remap.remap_uri(opts, &mut v, Dir::Response);
            }
            put(out, name, &v);
            continue;
        }
        put(out, name, value);
    }
    if switching {
        out.extend_from_slice(b"Connection: upgrade\r\n");
    } else if let Some(n) = head
        .content_length
        .filter(|_| head.status != 204 && head.kind == Kind::Final)
    {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(n.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

fn put(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}
