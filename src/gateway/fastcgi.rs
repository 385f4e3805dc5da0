//! FastCGI records (fastcgi-archives.github.io spec): the request as
//! BEGIN_REQUEST, PARAMS and STDIN streams; the answer as STDOUT and STDERR
//! streams closed by END_REQUEST.

use super::cgi::Env;
use crate::http::status::itoa_u64;

const VERSION: u8 = 1;
const BEGIN_REQUEST: u8 = 1;
const END_REQUEST: u8 = 3;
const PARAMS: u8 = 4;
const STDIN: u8 = 5;
const STDOUT: u8 = 6;
const STDERR: u8 = 7;
const RESPONDER: u16 = 1;
const AUTHORIZER: u16 = 2;
/// glint sends one request per backend connection.
pub const REQUEST_ID: u16 = 1;
/// Largest record content; the length field is 16 bits.
const MAX_CONTENT: usize = 65_535;

fn header(out: &mut Vec<u8>, kind: u8, len: usize) {
    out.extend_from_slice(&[
        VERSION,
        kind,
        (REQUEST_ID >> 8) as u8,
        REQUEST_ID as u8,
        (len >> 8) as u8,
        len as u8,
        0,
        0,
    ]);
}

fn push_len(out: &mut Vec<u8>, n: usize) {
    if n < 128 {
        out.push(n as u8);
    } else {
        out.extend_from_slice(&((n as u32) | 0x8000_0000).to_be_bytes());
    }
}

/// Appends a stream of records of `kind` carrying `data`, without the empty
/// record that ends the stream.
fn stream(out: &mut Vec<u8>, kind: u8, data: &[u8]) {
    for part in data.chunks(MAX_CONTENT) {
        header(out, kind, part.len());
        out.extend_from_slice(part);
    }
}

/// Appends BEGIN_REQUEST and the whole PARAMS stream for one request; the
/// body follows as [`stdin`] records, closed by [`end_stdin`].
pub fn encode_head(content_length: u64, env: &Env, out: &mut Vec<u8>) {
    header(out, BEGIN_REQUEST, 8);
    out.extend_from_slice(&[(RESPONDER >> 8) as u8, RESPONDER as u8, 0, 0, 0, 0, 0, 0]);
    let mut params = Vec::with_capacity(env.as_bytes().len() + 64);
    let cl = itoa_u64(content_length);
    let first = std::iter::once((&b"CONTENT_LENGTH"[..], cl.as_bytes()));
    for (k, v) in first.chain(env.pairs()) {
        push_len(&mut params, k.len());
        push_len(&mut params, v.len());
        params.extend_from_slice(k);
        params.extend_from_slice(v);
    }
    stream(out, PARAMS, &params);
    header(out, PARAMS, 0);
}

/// Appends body bytes as STDIN records (none for an empty slice: an empty
/// record would end the stream).
pub fn stdin(data: &[u8], out: &mut Vec<u8>) {
    stream(out, STDIN, data);
}

/// Bytes [`stdin`] adds around `n` body bytes.
pub fn stdin_overhead(n: usize) -> usize {
    n.div_ceil(MAX_CONTENT) * 8
}

/// Appends the empty STDIN record that ends the body.
pub fn end_stdin(out: &mut Vec<u8>) {
    header(out, STDIN, 0);
}

/// Appends a whole Authorizer request: BEGIN_REQUEST with the AUTHORIZER
/// role, the PARAMS stream without `CONTENT_LENGTH` (the spec, 6.3: an
/// authorizer sees the request's head, never its body), and an empty STDIN.
pub fn encode_authorizer(env: &Env, out: &mut Vec<u8>) {
    header(out, BEGIN_REQUEST, 8);
    out.extend_from_slice(&[(AUTHORIZER >> 8) as u8, AUTHORIZER as u8, 0, 0, 0, 0, 0, 0]);
    let mut params = Vec::with_capacity(env.as_bytes().len() + 64);
    for (k, v) in env.pairs() {
        push_len(&mut params, k.len());
        push_len(&mut params, v.len());
        params.extend_from_slice(k);
        params.extend_from_slice(v);
    }
    stream(out, PARAMS, &params);
    header(out, PARAMS, 0);
    header(out, STDIN, 0);
}

/// One decoded piece of a backend's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Stdout(&'a [u8]),
    Stderr(&'a [u8]),
    /// END_REQUEST with the application's status.
    End(u32),
    /// A record glint does not use (or for another request id).
    Skip,
}

/// Decodes the first complete record of `buf`: the piece and the bytes it
/// took, `Ok(None)` when more bytes are needed.
pub fn decode(buf: &[u8]) -> Result<Option<(Piece<'_>, usize)>, &'static str> {
    if buf.len() < 8 {
        return Ok(None);
    }
    if buf[0] != VERSION {
        return Err("not a FastCGI record");
    }
    let len = u16::from_be_bytes([buf[4], buf[5]]) as usize;
    let total = 8 + len + buf[6] as usize;
    if buf.len() < total {
        return Ok(None);
    }
    let content = &buf[8..8 + len];
    let id = u16::from_be_bytes([buf[2], buf[3]]);
    let piece = match buf[1] {
        _ if id != REQUEST_ID => Piece::Skip,
        STDOUT => Piece::Stdout(content),
        STDERR => Piece::Stderr(content),
        END_REQUEST if len >= 4 => Piece::End(u32::from_be_bytes([
            content[0], content[1], content[2], content[3],
        ])),
        END_REQUEST => return Err("a short END_REQUEST"),
        _ => Piece::Skip,
    };
    Ok(Some((piece, total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_records() {
        let env = Env::from_pairs(&[("A", &"x".repeat(200))]);
        let mut out = Vec::new();
        encode_head(0, &env, &mut out);
        stdin(b"", &mut out);
        stdin(b"hi", &mut out);
        end_stdin(&mut out);
        // BEGIN_REQUEST
        assert_eq!(&out[..8], &[1, 1, 0, 1, 0, 8, 0, 0]);
        // PARAMS: CONTENT_LENGTH first (17 bytes), then A with a
        // 1-byte name length and a 4-byte value length (200 >= 128).
        assert_eq!(&out[16..24], &[1, 4, 0, 1, 0, 17 + 206, 0, 0]);
        assert_eq!(&out[24..41], b"\x0e\x01CONTENT_LENGTH0");
        assert_eq!(&out[41..47], &[1, 0x80, 0, 0, 200, b'A']);
        let rest = &out[24 + 17 + 206..];
        assert_eq!(
            &rest[..8],
            &[1, 4, 0, 1, 0, 0, 0, 0],
            "empty PARAMS ends the stream"
        );
        assert_eq!(&rest[8..18], &[1, 5, 0, 1, 0, 2, 0, 0, b'h', b'i']);
        assert_eq!(&rest[18..], &[1, 5, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn authorizer_records() {
        let env = Env::from_pairs(&[("A", "b")]);
        let mut out = Vec::new();
        encode_authorizer(&env, &mut out);
        let want: &[u8] = &[
            1, 1, 0, 1, 0, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, // BEGIN_REQUEST, role 2
            1, 4, 0, 1, 0, 4, 0, 0, 1, 1, b'A', b'b', // PARAMS: A=b, no CONTENT_LENGTH
            1, 4, 0, 1, 0, 0, 0, 0, // end of PARAMS
            1, 5, 0, 1, 0, 0, 0, 0, // empty STDIN
        ];
        assert_eq!(out, want);
    }

    #[test]
    fn stdin_records_split_at_the_record_limit() {
        let body = vec![7u8; MAX_CONTENT + 10];
        let mut out = Vec::new();
        stdin(&body, &mut out);
        assert_eq!(out.len(), body.len() + stdin_overhead(body.len()));
        assert_eq!(&out[..8], &[1, 5, 0, 1, 0xff, 0xff, 0, 0]);
        assert_eq!(
            &out[8 + MAX_CONTENT..16 + MAX_CONTENT],
            &[1, 5, 0, 1, 0, 10, 0, 0]
        );
        assert_eq!(stdin_overhead(0), 0);
    }

    #[test]
    fn answer_records() {
        let mut buf = vec![1, 6, 0, 1, 0, 3, 1, 0, b'a', b'b', b'c', 0];
        buf.extend_from_slice(&[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0]);
        let (p, n) = decode(&buf).unwrap().unwrap();
        assert_eq!((p, n), (Piece::Stdout(b"abc"), 12));
        let (p, n) = decode(&buf[12..]).unwrap().unwrap();
        assert_eq!((p, n), (Piece::End(7), 16));
        assert_eq!(decode(&buf[..10]), Ok(None));
        assert!(decode(&[9, 6, 0, 1, 0, 0, 0, 0]).is_err());
    }
}
