//! HTTP/1.x response bytes: the one head serializer, for glint's own
//! replies and for backends' answers, and the framing of bodies.

use std::rc::Rc;

use super::session::Plan;
use crate::config::Settings;
pub use crate::msg::plan::Framing;
use crate::msg::status::{itoa_u64, reason};
use crate::msg::{Piece, Reply};
use crate::output::Output;

/// The header lines of a head, in the form its source has them.
pub enum Fields<'a> {
    /// `Name: value\r\n` lines (a [`Reply`]'s).
    Lines(&'a [u8]),
    /// (name, value) pairs (a backend's answer).
    Pairs(&'a [(String, Vec<u8>)]),
}

/// What a response head says besides its fields.
pub struct Head<'a> {
    pub status: u16,
    pub fields: Fields<'a>,
    /// As the response plan decided it (`msg::plan::framing`).
    pub framing: Framing,
    pub settings: &'a Settings,
    /// The `Date` value of this second.
    pub date: &'a [u8],
    /// The connection stays open after this response (as the response
    /// plan decided it, `msg::plan::after`).
    pub keep_alive: bool,
    /// The request's minor version (0 or 1).
    pub minor: u8,
    /// The status line says HTTP/1.0, and a closing answer says
    /// `Connection: close` (`server.protocol-http11 = "disable"`: the
    /// client may be an HTTP/1.1 one). Otherwise glint answers HTTP/1.1.
    pub http10: bool,
}

/// A backend's answer carries a field of this name.
pub fn has_field(pairs: &[(String, Vec<u8>)], name: &str) -> bool {
    pairs.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
}

/// Writes a response head into `out`: status line, `Date`, `Server`, the
/// fields, the framing, `Connection` as the version needs it, the
/// configured `setenv.*-response-header`s, the empty line. Returns its length.
pub fn write_head(out: &mut Output, h: &Head<'_>) -> usize {
    let m = &mut out.mem;
    let start = m.len();
    match common_status_line(h.status) {
        Some(l) if !h.http10 => m.extend_from_slice(l),
        _ => {
            m.extend_from_slice(if h.http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
            m.extend_from_slice(itoa_u64(u64::from(h.status)).as_bytes());
            m.push(b' ');
            m.extend_from_slice(reason(h.status).as_bytes());
            m.extend_from_slice(b"\r\n");
        }
    }
    // A backend's own Date and Server are passed on in place of glint's
    // (as lighttpd does): one value each, never two.
    let (own_date, own_server) = match h.fields {
        Fields::Pairs(pairs) => (!has_field(pairs, "date"), !has_field(pairs, "server")),
        Fields::Lines(_) => (true, true),
    };
    if own_date {
        m.extend_from_slice(b"Date: ");
        m.extend_from_slice(h.date);
        m.extend_from_slice(b"\r\n");
    }
    if own_server && !h.settings.identity.tag.is_empty() {
        m.extend_from_slice(b"Server: ");
        m.extend_from_slice(h.settings.identity.tag.as_bytes());
        m.extend_from_slice(b"\r\n");
    }
    // `setenv.set-response-header` replaces a field of the same name (an
    // empty value removes it), as lighttpd's mod_setenv.
    let set = &h.settings.setenv.set_response_header;
    let replaced = |name: &[u8]| {
        set.iter()
            .any(|(k, _)| k.as_bytes().eq_ignore_ascii_case(name))
    };
    match h.fields {
        Fields::Lines(lines) if set.is_empty() => m.extend_from_slice(lines),
        Fields::Lines(lines) => {
            for l in lines.split_inclusive(|&b| b == b'\n') {
                let name = l.split(|&b| b == b':').next().unwrap_or(l);
                if !replaced(name) {
                    m.extend_from_slice(l);
                }
            }
        }
        Fields::Pairs(pairs) => {
            for (k, v) in pairs {
                if !replaced(k.as_bytes()) {
                    line(m, k, v);
                }
            }
        }
    }
    match h.framing {
        Framing::Length(n) => line(m, "Content-Length", itoa_u64(n).as_bytes()),
        Framing::Chunked => line(m, "Transfer-Encoding", b"chunked"),
        Framing::UntilClose | Framing::Unframed | Framing::None => {}
    }
    if h.keep_alive && h.minor == 0 {
        line(m, "Connection", b"keep-alive");
    } else if !h.keep_alive && (h.minor >= 1 || h.http10) {
        line(m, "Connection", b"close");
    }
    let s = h.settings;
    for (k, v) in s.setenv.add_response_header.iter().chain(
        s.setenv
            .set_response_header
            .iter()
            .filter(|(_, v)| !v.is_empty()),
    ) {
        if !has_crlf(k) && !has_crlf(v) {
            line(m, k, v.as_bytes());
        }
    }
    m.extend_from_slice(b"\r\n");
    m.len() - start
}

/// The status lines of the most frequent answers, whole: one copy instead
/// of formatting the number and looking up the reason.
fn common_status_line(status: u16) -> Option<&'static [u8]> {
    Some(match status {
        200 => b"HTTP/1.1 200 OK\r\n",
        206 => b"HTTP/1.1 206 Partial Content\r\n",
        304 => b"HTTP/1.1 304 Not Modified\r\n",
        404 => b"HTTP/1.1 404 Not Found\r\n",
        _ => return None,
    })
}

// Inlined: with the name a constant, its copy needs no call to memcpy
// (two lines of each head: 85 instructions apiece as a call).
#[inline(always)]
fn line(m: &mut Vec<u8>, name: &str, value: &[u8]) {
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(b": ");
    m.extend_from_slice(value);
    m.extend_from_slice(b"\r\n");
}

fn has_crlf(s: &str) -> bool {
    s.bytes().any(|b| b == b'\r' || b == b'\n')
}

/// Writes one of glint's own replies as `plan` says: its head, then (when
/// the plan has a body and `body` asks for it: not when a compressor
/// takes it) its pieces, memory copied after the head so that a small
/// answer leaves in one `send`, files queued for `sendfile`. Returns the
/// head's length.
pub fn write_reply(out: &mut Output, r: &Reply, date: &[u8], plan: &Plan, body: bool) -> usize {
    let head = Head {
        status: r.status,
        fields: Fields::Lines(&r.fields),
        framing: plan.framing,
        settings: &r.settings,
        date,
        keep_alive: plan.keep_alive,
        minor: plan.minor,
        http10: plan.http10,
    };
    let n = write_head(out, &head);
    if r.head_only || !plan.body || !body {
        return n;
    }
    for p in r.pieces() {
        match p {
            Piece::Mem(range) => out.mem.extend_from_slice(r.mem(range)),
            Piece::Shared(bytes) => out.mem.extend_from_slice(bytes),
            Piece::File { file, offset, len } => out.push_file(Rc::clone(file), *offset, *len),
        }
    }
    n
}

/// One chunk of a chunked body (nothing for no bytes: that would end it).
pub fn write_chunk(out: &mut Output, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let m = &mut out.mem;
    crate::syntax::push_hex_number(m, data.len() as u64);
    m.extend_from_slice(b"\r\n");
    m.extend_from_slice(data);
    m.extend_from_slice(b"\r\n");
}

/// The last chunk of a chunked body.
pub fn write_last_chunk(out: &mut Output) {
    out.mem.extend_from_slice(b"0\r\n\r\n");
}

/// The interim `100 Continue` a client waits for before sending its body.
pub fn write_continue(out: &mut Output) {
    out.mem.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_status_lines_match_the_reasons() {
        for status in [200u16, 206, 304, 404] {
            let want = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            assert_eq!(common_status_line(status), Some(want.as_bytes()));
        }
        assert_eq!(common_status_line(201), None);
    }

    #[test]
    fn chunk_sizes_are_hex() {
        let cases: &[(usize, &str)] = &[
            (1, "1\r\n"),
            (15, "f\r\n"),
            (16, "10\r\n"),
            (4096, "1000\r\n"),
        ];
        for (len, want) in cases {
            let mut out = Output::default();
            write_chunk(&mut out, &vec![b'x'; *len]);
            assert!(
                out.mem.starts_with(want.as_bytes()),
                "{len}: {:?}",
                &out.mem[..8]
            );
            assert!(out.mem.ends_with(b"x\r\n"));
        }
        let mut out = Output::default();
        write_chunk(&mut out, b"");
        assert!(out.mem.is_empty(), "an empty chunk would end the body");
    }
}
