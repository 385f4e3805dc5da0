//! AJP/1.3 (tomcat.apache.org/connectors-doc/ajp/ajpv13a.html): packets
//! of at most [`MAX_PACKET`] bytes, `0x12 0x34` and a length from the web
//! server, `AB` and a length from the container. The request is one
//! FORWARD_REQUEST packet, then the body in data packets: the first one
//! unasked, each later one only when the container asks for it
//! (GET_BODY_CHUNK). The answer is SEND_HEADERS, SEND_BODY_CHUNKs and
//! END_RESPONSE.
//!
//! Strings are a u16 length, the bytes and a NUL; the length 0xFFFF is
//! "no string". glint sends strings as lighttpd 1.4.69 does (an empty one
//! as 0xFFFF).

use crate::msg::status::itoa_u64;

/// The most bytes one packet may take, header included (mod_jk's and
/// Tomcat's default `packetSize`, and lighttpd's only size).
pub const MAX_PACKET: usize = 8192;
/// The most body bytes one data packet carries: the packet less its 4-byte
/// header and the 2-byte length of the data.
pub const MAX_DATA: usize = MAX_PACKET - 6;

const FORWARD_REQUEST: u8 = 2;
const SEND_BODY_CHUNK: u8 = 3;
const SEND_HEADERS: u8 = 4;
const END_RESPONSE: u8 = 5;
const GET_BODY_CHUNK: u8 = 6;
const CPONG_REPLY: u8 = 9;

/// The attribute codes glint sends.
pub mod attr {
    pub const REMOTE_USER: u8 = 0x03;
    pub const AUTH_TYPE: u8 = 0x04;
    pub const QUERY_STRING: u8 = 0x05;
    pub const SSL_CERT: u8 = 0x07;
    pub const SSL_CIPHER: u8 = 0x08;
    pub const SSL_KEY_SIZE: u8 = 0x0B;
    pub const SECRET: u8 = 0x0C;
}
const ARE_DONE: u8 = 0xFF;

/// The AJP method code of an HTTP method (lighttpd's table); `None` for a
/// method AJP has no code for (lighttpd answers such a request 400).
pub fn method_code(m: &str) -> Option<u8> {
    Some(match m {
        "OPTIONS" => 1,
        "GET" => 2,
        "HEAD" => 3,
        "POST" => 4,
        "PUT" => 5,
        "DELETE" => 6,
        "TRACE" => 7,
        "PROPFIND" => 8,
        "PROPPATCH" => 9,
        "MKCOL" => 10,
        "COPY" => 11,
        "MOVE" => 12,
        "LOCK" => 13,
        "UNLOCK" => 14,
        "ACL" => 15,
        "REPORT" => 16,
        "VERSION-CONTROL" => 17,
        "CHECKIN" => 18,
        "CHECKOUT" => 19,
        "UNCHECKOUT" => 20,
        "SEARCH" => 21,
        "MKWORKSPACE" => 22,
        "UPDATE" => 23,
        "LABEL" => 24,
        "MERGE" => 25,
        "BASELINE-CONTROL" => 26,
        "MKACTIVITY" => 27,
        _ => return None,
    })
}

/// The code AJP gives a request header's name (`0xA0nn`), if it has one.
fn header_code(name: &[u8]) -> Option<u8> {
    const CODES: [&str; 14] = [
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "authorization",
        "connection",
        "content-type",
        "content-length",
        "cookie",
        "cookie2",
        "host",
        "pragma",
        "referer",
        "user-agent",
    ];
    CODES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| i as u8 + 1)
}

/// What a FORWARD_REQUEST says, before the body's length is known (a
/// chunked body is collected first).
#[derive(Debug, Clone, Default)]
pub struct ForwardRequest {
    pub method: u8,
    /// `HTTP/1.1`.
    pub protocol: String,
    /// The decoded URL path.
    pub uri: String,
    pub remote_addr: String,
    pub server_name: String,
    pub server_port: u16,
    pub is_ssl: bool,
    /// Request headers as the client sent them (after mod_setenv).
    pub headers: Vec<(String, Vec<u8>)>,
    /// String attributes by code, in the order sent.
    pub attributes: Vec<(u8, Vec<u8>)>,
    /// The cipher's key size on TLS: an integer attribute (Tomcat reads
    /// two bytes, as mod_jk sends it; a string there would be misread as
    /// the rest of the packet).
    pub ssl_key_size: Option<u16>,
}

/// The request does not fit in one packet (lighttpd answers 400).
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge;

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// A string: no string (0xFFFF) when empty, as lighttpd sends one.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    match u16::try_from(s.len()) {
        Ok(n) if n != 0 && n != u16::MAX => {
            put_u16(out, n);
            out.extend_from_slice(s);
            out.push(0);
        }
        // (Longer ones make the packet too large: refused by the caller.)
        _ => put_u16(out, u16::MAX),
    }
}

impl ForwardRequest {
    /// Appends the FORWARD_REQUEST packet for a body of `content_length`
    /// bytes: a `Content-Length` header is added when the client sent none
    /// (a collected chunked body, or none), as lighttpd does.
    pub fn encode(&self, content_length: u64, out: &mut Vec<u8>) -> Result<(), TooLarge> {
        let at = out.len();
        out.extend_from_slice(&[0x12, 0x34, 0, 0, FORWARD_REQUEST, self.method]);
        put_str(out, self.protocol.as_bytes());
        put_str(out, self.uri.as_bytes());
        put_str(out, self.remote_addr.as_bytes());
        put_str(out, b""); // remote_host: no DNS lookup
        put_str(out, self.server_name.as_bytes());
        put_u16(out, self.server_port);
        out.push(u8::from(self.is_ssl));
        let has_length = self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
        let n = self.headers.len() + usize::from(!has_length);
        put_u16(out, u16::try_from(n).map_err(|_| TooLarge)?);
        if !has_length {
            put_u16(out, 0xA008);
            put_str(out, itoa_u64(content_length).as_bytes());
        }
        for (k, v) in &self.headers {
            let too_long = k.len() >= usize::from(u16::MAX) || v.len() >= usize::from(u16::MAX);
            if too_long {
                out.truncate(at);
                return Err(TooLarge);
            }
            match header_code(k.as_bytes()) {
                Some(c) => put_u16(out, 0xA000 | u16::from(c)),
                None => put_str(out, k.as_bytes()),
            }
            put_str(out, v);
        }
        for (code, v) in &self.attributes {
            out.push(*code);
            put_str(out, v);
        }
        if let Some(bits) = self.ssl_key_size {
            out.push(attr::SSL_KEY_SIZE);
            put_u16(out, bits);
        }
        out.push(ARE_DONE);
        let len = out.len() - at;
        if len > MAX_PACKET {
            out.truncate(at);
            return Err(TooLarge);
        }
        let payload = (len - 4) as u16;
        out[at + 2..at + 4].copy_from_slice(&payload.to_be_bytes());
        Ok(())
    }
}

/// Appends one data packet carrying `data` (at most [`MAX_DATA`] bytes);
/// an empty `data` is the empty packet that says the body is over.
pub fn data_packet(data: &[u8], out: &mut Vec<u8>) {
    let n = data.len().min(MAX_DATA);
    if n == 0 {
        out.extend_from_slice(&[0x12, 0x34, 0, 0]);
        return;
    }
    out.extend_from_slice(&[0x12, 0x34]);
    put_u16(out, (n + 2) as u16);
    put_u16(out, n as u16);
    out.extend_from_slice(&data[..n]);
}

/// One packet from the container.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// SEND_HEADERS: the status and the headers.
    Headers(Head<'a>),
    /// SEND_BODY_CHUNK's bytes.
    Body(&'a [u8]),
    /// GET_BODY_CHUNK: the container asks for at most this many body bytes.
    GetBody(usize),
    /// END_RESPONSE; whether the container would take another request.
    End { reuse: bool },
    /// A packet glint has no use for (CPONG_REPLY, an unknown type).
    Skip(u8),
}

/// SEND_HEADERS decoded.
#[derive(Debug, PartialEq, Eq)]
pub struct Head<'a> {
    pub status: u16,
    pub headers: Vec<(&'a [u8], &'a [u8])>,
}

/// The names of the response header codes `0xA001`..`0xA00B`.
const RESPONSE_CODES: [&[u8]; 11] = [
    b"Content-Type",
    b"Content-Language",
    b"Content-Length",
    b"Date",
    b"Last-Modified",
    b"Location",
    b"Set-Cookie",
    b"Set-Cookie2",
    b"Servlet-Engine",
    b"Status",
    b"WWW-Authenticate",
];

/// Reads the payload of a packet field by field; every read is checked.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

const SHORT: &str = "an AJP packet shorter than its fields";

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, &'static str> {
        let b = *self.buf.get(self.at).ok_or(SHORT)?;
        self.at += 1;
        Ok(b)
    }

    fn u16(&mut self) -> Result<u16, &'static str> {
        let b = self.buf.get(self.at..self.at + 2).ok_or(SHORT)?;
        self.at += 2;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A string of `len` bytes and its NUL (0xFFFF: none, read as empty).
    fn str_of(&mut self, len: u16) -> Result<&'a [u8], &'static str> {
        if len == u16::MAX {
            return Ok(b"");
        }
        let n = usize::from(len);
        let s = self.buf.get(self.at..self.at + n).ok_or(SHORT)?;
        if self.buf.get(self.at + n) != Some(&0) {
            return Err("an AJP string without its NUL");
        }
        self.at += n + 1;
        Ok(s)
    }

    fn string(&mut self) -> Result<&'a [u8], &'static str> {
        let len = self.u16()?;
        self.str_of(len)
    }
}

/// No CR, LF or NUL in a header's name or value: they would let a backend
/// add headers of its own making (response splitting).
fn clean(s: &[u8]) -> Result<&[u8], &'static str> {
    match s.iter().any(|&c| c == b'\r' || c == b'\n' || c == 0) {
        true => Err("a header with CR, LF or NUL in SEND_HEADERS"),
        false => Ok(s),
    }
}

fn decode_head<'a>(payload: &'a [u8]) -> Result<Head<'a>, &'static str> {
    let mut r = Reader {
        buf: payload,
        at: 0,
    };
    let status = r.u16()?;
    if !(100..=999).contains(&status) {
        return Err("a status out of range in SEND_HEADERS");
    }
    let _message = r.string()?;
    let n = r.u16()?;
    let mut out = Vec::with_capacity(usize::from(n).min(64));
    for _ in 0..n {
        let code = r.u16()?;
        let name: &[u8] = if code & 0xFF00 == 0xA000 {
            let i = usize::from(code & 0xFF);
            i.checked_sub(1)
                .and_then(|i| RESPONSE_CODES.get(i))
                .ok_or("an unknown header code in SEND_HEADERS")?
        } else {
            clean(r.str_of(code)?)?
        };
        if name.is_empty() || name.contains(&b':') {
            return Err("a bad header name in SEND_HEADERS");
        }
        let value = clean(r.string()?)?;
        out.push((name, value));
    }
    Ok(Head {
        status,
        headers: out,
    })
}

/// Decodes the first complete packet of `buf`: the packet and the bytes it
/// took, `Ok(None)` while more are needed. Anything that is not AJP from a
/// container, or a packet that contradicts its own lengths, is an error.
pub fn decode(buf: &[u8]) -> Result<Option<(Packet<'_>, usize)>, &'static str> {
    if buf.len() >= 2 && &buf[..2] != b"AB" {
        return Err("not an AJP packet from a container");
    }
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
    if buf.len() < 4 + len {
        return Ok(None);
    }
    let payload = &buf[4..4 + len];
    let Some((&kind, rest)) = payload.split_first() else {
        return Err("an empty AJP packet");
    };
    let mut r = Reader { buf: rest, at: 0 };
    let packet = match kind {
        SEND_HEADERS => Packet::Headers(decode_head(rest)?),
        SEND_BODY_CHUNK => {
            let n = usize::from(r.u16()?);
            Packet::Body(rest.get(2..2 + n).ok_or(SHORT)?)
        }
        GET_BODY_CHUNK => Packet::GetBody(usize::from(r.u16()?)),
        END_RESPONSE => Packet::End {
            reuse: r.u8().unwrap_or(0) != 0,
        },
        other => Packet::Skip(other),
    };
    Ok(Some((packet, 4 + len)))
}

/// Whether `kind` is one the container may send in an answer and glint
/// quietly ignores.
pub fn is_quiet(kind: u8) -> bool {
    kind == CPONG_REPLY
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ForwardRequest {
        ForwardRequest {
            method: method_code("POST").unwrap_or(0),
            protocol: "HTTP/1.1".into(),
            uri: "/app/x.jsp".into(),
            remote_addr: "127.0.0.1".into(),
            server_name: "example.org".into(),
            server_port: 80,
            is_ssl: false,
            headers: vec![
                ("Host".into(), b"example.org".to_vec()),
                ("X-Foo".into(), b"bar".to_vec()),
            ],
            attributes: vec![(attr::QUERY_STRING, b"a=1".to_vec())],
            ssl_key_size: Some(256),
        }
    }

    #[test]
    fn forward_request_layout() {
        let mut out = Vec::new();
        request().encode(5, &mut out).unwrap();
        let mut want: Vec<u8> = vec![0x12, 0x34, 0, 0, 2, 4];
        want.extend_from_slice(b"\x00\x08HTTP/1.1\x00");
        want.extend_from_slice(b"\x00\x0a/app/x.jsp\x00");
        want.extend_from_slice(b"\x00\x09127.0.0.1\x00");
        want.extend_from_slice(b"\xff\xff"); // remote_host: none
        want.extend_from_slice(b"\x00\x0bexample.org\x00");
        want.extend_from_slice(&[0, 80, 0]); // port, is_ssl
        want.extend_from_slice(&[0, 3]); // Content-Length added, Host, X-Foo
        want.extend_from_slice(b"\xa0\x08\x00\x015\x00");
        want.extend_from_slice(b"\xa0\x0b\x00\x0bexample.org\x00");
        want.extend_from_slice(b"\x00\x05X-Foo\x00\x00\x03bar\x00");
        want.extend_from_slice(b"\x05\x00\x03a=1\x00");
        want.extend_from_slice(b"\x0b\x01\x00\xff"); // key size 256, the end
        let len = (want.len() - 4) as u16;
        want[2..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(out, want);
    }

    #[test]
    fn forward_request_over_one_packet_is_refused() {
        let mut r = request();
        r.headers.push(("X-Big".into(), vec![b'v'; MAX_PACKET]));
        let mut out = b"kept".to_vec();
        assert_eq!(r.encode(0, &mut out), Err(TooLarge));
        assert_eq!(out, b"kept", "nothing half-written");
        assert_eq!(method_code("PATCH"), None, "AJP has no code for PATCH");
    }

    #[test]
    fn data_packets() {
        let mut out = Vec::new();
        data_packet(b"hello", &mut out);
        data_packet(b"", &mut out);
        assert_eq!(out, b"\x12\x34\x00\x07\x00\x05hello\x12\x34\x00\x00");
        let mut big = Vec::new();
        data_packet(&vec![1u8; MAX_DATA + 10], &mut big);
        assert_eq!(big.len(), MAX_PACKET, "a packet carries at most MAX_DATA");
    }

    /// A container's packet: `AB`, the length, the payload.
    fn packet(payload: &[u8]) -> Vec<u8> {
        let mut p = b"AB".to_vec();
        p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn answer_packets_as_tomcat_sends_them() {
        // SEND_HEADERS 200 "OK", Content-Type coded, X-A named.
        let mut h = vec![4, 0, 200, 0, 2, b'O', b'K', 0, 0, 2, 0xa0, 0x01];
        h.extend_from_slice(b"\x00\x0atext/plain\x00\x00\x03X-A\x00\x00\x01b\x00");
        let head = packet(&h);
        let (p, n) = decode(&head).unwrap().unwrap();
        assert_eq!(n, head.len());
        let want = Head {
            status: 200,
            headers: vec![(&b"Content-Type"[..], &b"text/plain"[..]), (b"X-A", b"b")],
        };
        assert_eq!(p, Packet::Headers(want));
        // SEND_BODY_CHUNK with Tomcat's trailing NUL; GET_BODY_CHUNK; END_RESPONSE.
        let body = packet(b"\x03\x00\x03abc\x00");
        assert_eq!(decode(&body), Ok(Some((Packet::Body(b"abc"), 11))));
        let get = packet(b"\x06\x1f\xfa");
        assert_eq!(decode(&get), Ok(Some((Packet::GetBody(8186), 7))));
        let end = packet(b"\x05\x01");
        assert_eq!(decode(&end), Ok(Some((Packet::End { reuse: true }, 6))));
        // Partial packets wait.
        assert_eq!(decode(&body[..5]), Ok(None));
        assert_eq!(decode(b"A"), Ok(None));
    }

    #[test]
    fn malformed_answers_are_errors() {
        let cases: &[(&str, Vec<u8>)] = &[
            ("not AJP", b"HTTP/1.1 200 OK\r\n".to_vec()),
            ("empty packet", packet(b"")),
            ("body longer than its packet", packet(b"\x03\x00\x09abc")),
            (
                "status out of range",
                packet(b"\x04\x00\x05\xff\xff\x00\x00"),
            ),
            (
                "header count past the end",
                packet(b"\x04\x00\xc8\xff\xff\x00\x05"),
            ),
            (
                "unknown header code",
                packet(b"\x04\x00\xc8\xff\xff\x00\x01\xa0\x0c\xff\xff"),
            ),
            (
                "LF in a value",
                packet(b"\x04\x00\xc8\xff\xff\x00\x01\x00\x01X\x00\x00\x03a\nb\x00"),
            ),
            (
                "colon in a name",
                packet(b"\x04\x00\xc8\xff\xff\x00\x01\x00\x02X:\x00\x00\x01a\x00"),
            ),
            (
                "string without NUL",
                packet(b"\x04\x00\xc8\xff\xff\x00\x01\x00\x01X\x01\x00\x01a\x00"),
            ),
            ("short GET_BODY_CHUNK", packet(b"\x06\x1f")),
        ];
        for (what, bytes) in cases {
            assert!(decode(bytes).is_err(), "{what}: {:?}", decode(bytes));
        }
        // An unknown type is skipped, as lighttpd does.
        assert_eq!(decode(&packet(b"\x63")), Ok(Some((Packet::Skip(0x63), 5))));
    }
}
