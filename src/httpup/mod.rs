//! HTTP/1.1 to an upstream server, sans-IO: the pure parts of `mod_proxy`.
//!
//! Nothing here reads or writes a socket. The event loop calls, per request:
//!
//! 1. [`request::build_request`]: the client's request becomes the upstream
//!    request head in a `Vec<u8>` (hop-by-hop headers removed, `Host`,
//!    `map-urlpath`, `X-Forwarded-*` / `Forwarded`), or a decision
//!    (CONNECT tunnel, 405, 411). The request body follows it as the caller
//!    streams it, chunk-encoded with [`chunked::write_chunk_header`] when
//!    [`request::Sent::chunked_body`] says so.
//! 2. [`response::parse_head`] on the bytes read from the upstream until it
//!    answers `Ok(Some(head))`: the status, the framing of the body
//!    ([`response::Framing`]), whether the connection may carry another
//!    request afterwards, and header offsets into the read buffer.
//!    Interim answers (1xx but 101) come first and are parsed again after
//!    [`response::Head::head_len`] bytes.
//! 3. [`response::write_client_headers`]: the header lines the client sees
//!    (hop-by-hop headers gone, `Location` / `Set-Cookie` remapped).
//! 4. The body: as is for `Length`/`UntilClose`, through a
//!    [`chunked::Dechunker`] for `Chunked`, relayed both ways for `Tunnel`.
//! 5. On a failure before any answer byte, [`retry::may_retry`] says whether
//!    the request may go again on a fresh connection.
//!
//! [`options`] turns lighttpd's `proxy.*` options (taken as [`ConfValue`],
//! the shape of glint's configuration values) into plain types, and
//! [`balance::pick`] is lighttpd's `proxy.balance` choice among backends.
//!
//! lighttpd's `mod_proxy` sends every request with `Connection: close`;
//! glint keeps upstream connections when the pool asks for it, so the
//! keep-alive decision ([`response::Head::reusable`]) and the retry rule
//! are glint's own (RFC 9112 9.3, RFC 9110 9.2.2).

pub mod balance;
pub mod chunked;
pub mod options;
pub mod remap;
pub mod request;
pub mod response;
pub mod retry;

#[cfg(test)]
mod tests;

/// A configuration value, in the shape of glint's configuration language
/// (`"text"`, `123`, `( "key" => value, value, ... )`). The caller converts
/// its own values into this one (a one-to-one mapping), so this module
/// depends on nothing else in glint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfValue {
    Str(String),
    Int(i64),
    Array(Vec<(Option<String>, ConfValue)>),
}

/// Whether the comma-separated header list `value` holds `token`
/// (case-insensitive, optional whitespace around elements: RFC 9110 5.6.1).
pub(crate) fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| crate::syntax::trim_ows(t).eq_ignore_ascii_case(token.as_bytes()))
}

/// Appends `s` for the inside of a quoted-string (RFC 9110 5.6.4): `"` and
/// `\` get a backslash. lighttpd also backslash-escapes control bytes, but
/// a quoted-pair may not carry them (HTAB, SP, VCHAR, obs-text only), and a
/// CR or LF would end the header line: they are left out instead.
pub(crate) fn push_quoted_inner(out: &mut Vec<u8>, s: &[u8]) {
    for &c in s {
        match c {
            b'"' | b'\\' => {
                out.push(b'\\');
                out.push(c);
            }
            b'\t' => out.push(c),
            0..=0x1f | 0x7f => {}
            _ => out.push(c),
        }
    }
}
