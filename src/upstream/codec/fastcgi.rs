//! FastCGI records (fastcgi-archives.github.io spec): the request as
//! BEGIN_REQUEST, PARAMS and STDIN streams; the answer as STDOUT and STDERR
//! streams closed by END_REQUEST. And the one management exchange glint
//! uses: GET_VALUES, answered by GET_VALUES_RESULT, which tells how many
//! connections the backend serves at once (see [`super`] on keep-conn).

use crate::msg::status::itoa_u64;
use crate::upstream::cgi::Env;

const VERSION: u8 = 1;
const BEGIN_REQUEST: u8 = 1;
const END_REQUEST: u8 = 3;
const PARAMS: u8 = 4;
const STDIN: u8 = 5;
const STDOUT: u8 = 6;
const STDERR: u8 = 7;
const GET_VALUES: u8 = 9;
const GET_VALUES_RESULT: u8 = 10;
const UNKNOWN_TYPE: u8 = 11;
/// BEGIN_REQUEST's flag: the backend keeps the connection open after
/// END_REQUEST, for the next request.
const KEEP_CONN: u8 = 1;
/// The request id of management records.
const NULL_REQUEST_ID: u16 = 0;
const RESPONDER: u16 = 1;
const AUTHORIZER: u16 = 2;
/// glint sends one request at a time on a backend connection (it does not
/// multiplex), so every request has the same id.
pub const REQUEST_ID: u16 = 1;
/// Largest record content; the length field is 16 bits.
const MAX_CONTENT: usize = 65_535;

fn header(out: &mut Vec<u8>, kind: u8, len: usize) {
    header_for(out, kind, REQUEST_ID, len);
}

fn header_for(out: &mut Vec<u8>, kind: u8, id: u16, len: usize) {
    out.extend_from_slice(&[
        VERSION,
        kind,
        (id >> 8) as u8,
        id as u8,
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
    begin(out, RESPONDER);
    let cl = itoa_u64(content_length);
    let first = std::iter::once((&b"CONTENT_LENGTH"[..], cl.as_bytes()));
    params(out, first.chain(env.pairs()));
}

/// BEGIN_REQUEST for `role`, without FCGI_KEEP_CONN (see [`set_keep_conn`]).
fn begin(out: &mut Vec<u8>, role: u16) {
    header(out, BEGIN_REQUEST, 8);
    out.extend_from_slice(&[(role >> 8) as u8, role as u8, 0, 0, 0, 0, 0, 0]);
}

fn push_pair(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    push_len(out, name.len());
    push_len(out, value.len());
    out.extend_from_slice(name);
    out.extend_from_slice(value);
}

/// The whole PARAMS stream, ended by its empty record. The pairs are
/// written straight into `out` behind a header whose length is filled in
/// afterwards; only an environment over one record's 64 KiB is moved to be
/// split.
fn params<'a>(out: &mut Vec<u8>, pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>) {
    let at = out.len();
    header(out, PARAMS, 0);
    for (k, v) in pairs {
        push_pair(out, k, v);
    }
    let len = out.len() - at - 8;
    if len <= MAX_CONTENT {
        out[at + 4] = (len >> 8) as u8;
        out[at + 5] = len as u8;
    } else {
        let data = out.split_off(at + 8);
        out.truncate(at);
        stream(out, PARAMS, &data);
    }
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
    begin(out, AUTHORIZER);
    params(out, env.pairs());
    header(out, STDIN, 0);
}

/// Sets or clears FCGI_KEEP_CONN in the BEGIN_REQUEST record `request`
/// starts with (one from [`encode_head`] or [`encode_authorizer`]); other
/// bytes are left alone.
pub fn set_keep_conn(request: &mut [u8], keep: bool) {
    if request.len() >= 16 && request[0] == VERSION && request[1] == BEGIN_REQUEST {
        request[10] = if keep { KEEP_CONN } else { 0 };
    }
}

/// Appends a GET_VALUES record asking FCGI_MAX_CONNS, FCGI_MAX_REQS and
/// FCGI_MPXS_CONNS (names with empty values, request id 0).
pub fn encode_get_values(out: &mut Vec<u8>) {
    let mut body = Vec::with_capacity(64);
    for name in [&b"FCGI_MAX_CONNS"[..], b"FCGI_MAX_REQS", b"FCGI_MPXS_CONNS"] {
        push_pair(&mut body, name, b"");
    }
    header_for(out, GET_VALUES, NULL_REQUEST_ID, body.len());
    out.extend_from_slice(&body);
}

/// What a backend said in its GET_VALUES_RESULT (`None`: not said).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Values {
    /// FCGI_MAX_CONNS: the most connections it serves at once.
    pub max_conns: Option<u64>,
    /// FCGI_MAX_REQS: the most requests it serves at once.
    pub max_reqs: Option<u64>,
    /// FCGI_MPXS_CONNS: whether it multiplexes requests on a connection.
    pub mpxs_conns: Option<u64>,
}

/// Reads one name-value length (1 byte, or 4 with the high bit set).
fn pull_len(buf: &[u8], at: &mut usize) -> Option<usize> {
    let first = *buf.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(first as usize);
    }
    let b = buf.get(*at..*at + 4)?;
    *at += 4;
    Some((u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff) as usize)
}

/// Decodes the answer to [`encode_get_values`] at the start of `buf`:
/// `Ok(None)` while the record is incomplete. An UNKNOWN_TYPE record, any
/// other record, malformed pairs or a value that is not a number are errors
/// (the backend is not asked again); names glint did not ask are ignored.
pub fn decode_values(buf: &[u8]) -> Result<Option<Values>, &'static str> {
    let Some(r) = record(buf)? else {
        return Ok(None);
    };
    match r.kind {
        GET_VALUES_RESULT => {}
        UNKNOWN_TYPE => return Err("it does not know GET_VALUES (UNKNOWN_TYPE)"),
        _ => return Err("another record than GET_VALUES_RESULT"),
    }
    if r.id != NULL_REQUEST_ID {
        return Err("GET_VALUES_RESULT with a request id");
    }
    let content = r.content;
    let mut v = Values::default();
    let mut at = 0;
    while at < content.len() {
        let bad = "malformed GET_VALUES_RESULT";
        let n = pull_len(content, &mut at).ok_or(bad)?;
        let m = pull_len(content, &mut at).ok_or(bad)?;
        let name = content.get(at..at + n).ok_or(bad)?;
        let value = content.get(at + n..at + n + m).ok_or(bad)?;
        at += n + m;
        let slot = match name {
            b"FCGI_MAX_CONNS" => &mut v.max_conns,
            b"FCGI_MAX_REQS" => &mut v.max_reqs,
            b"FCGI_MPXS_CONNS" => &mut v.mpxs_conns,
            _ => continue,
        };
        let num = std::str::from_utf8(value)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .ok_or("a value in GET_VALUES_RESULT is not a number")?;
        *slot = Some(num);
    }
    Ok(Some(v))
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
    let Some(r) = record(buf)? else {
        return Ok(None);
    };
    let content = r.content;
    let piece = match r.kind {
        _ if r.id != REQUEST_ID => Piece::Skip,
        STDOUT => Piece::Stdout(content),
        STDERR => Piece::Stderr(content),
        END_REQUEST if content.len() >= 4 => Piece::End(u32::from_be_bytes([
            content[0], content[1], content[2], content[3],
        ])),
        END_REQUEST => return Err("a short END_REQUEST"),
        _ => Piece::Skip,
    };
    Ok(Some((piece, r.total)))
}

/// One record as it came: its type, request id and content, and the bytes
/// it takes with its padding.
struct Record<'a> {
    kind: u8,
    id: u16,
    content: &'a [u8],
    total: usize,
}

/// The first complete record of `buf`, `Ok(None)` while more bytes are needed.
fn record(buf: &[u8]) -> Result<Option<Record<'_>>, &'static str> {
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
    Ok(Some(Record {
        kind: buf[1],
        id: u16::from_be_bytes([buf[2], buf[3]]),
        content: &buf[8..8 + len],
        total,
    }))
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
    fn params_over_one_record_are_split() {
        let env = Env::from_pairs(&[("BIG", &"v".repeat(70_000))]);
        let mut out = Vec::new();
        encode_head(5, &env, &mut out);
        // BEGIN_REQUEST, then PARAMS records of at most 65,535 bytes.
        let mut at = 16;
        let mut params = Vec::new();
        loop {
            assert_eq!(&out[at..at + 4], &[1, 4, 0, 1]);
            let len = u16::from_be_bytes([out[at + 4], out[at + 5]]) as usize;
            if len == 0 {
                break;
            }
            params.extend_from_slice(&out[at + 8..at + 8 + len]);
            at += 8 + len;
        }
        assert_eq!(at + 8, out.len());
        let mut want = Vec::new();
        push_pair(&mut want, b"CONTENT_LENGTH", b"5");
        push_pair(&mut want, b"BIG", "v".repeat(70_000).as_bytes());
        assert_eq!(params, want);
        assert!(
            out[16 + 4..16 + 6] == [0xff, 0xff],
            "the first record is full"
        );
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

    #[test]
    fn keep_conn_flag_in_begin_request() {
        let env = Env::from_pairs(&[("A", "b")]);
        let mut out = Vec::new();
        encode_head(0, &env, &mut out);
        set_keep_conn(&mut out, true);
        assert_eq!(
            &out[..16],
            &[1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]
        );
        set_keep_conn(&mut out, false);
        assert_eq!(out[10], 0);
        let mut auth = Vec::new();
        encode_authorizer(&env, &mut auth);
        set_keep_conn(&mut auth, true);
        assert_eq!(&auth[8..11], &[0, 2, 1], "role kept, flag set");
        // Not a BEGIN_REQUEST: untouched.
        let mut other = vec![1, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        set_keep_conn(&mut other, true);
        assert_eq!(other[10], 0);
    }

    #[test]
    fn get_values_record() {
        let mut out = Vec::new();
        encode_get_values(&mut out);
        assert_eq!(&out[..8], &[1, 9, 0, 0, 0, 48, 0, 0]);
        assert_eq!(&out[8..24], b"\x0e\x00FCGI_MAX_CONNS");
        assert_eq!(&out[24..39], b"\x0d\x00FCGI_MAX_REQS");
        assert_eq!(&out[39..], b"\x0f\x00FCGI_MPXS_CONNS");
    }

    #[test]
    fn get_values_result_as_php_cgi_sends_it() {
        // php-cgi 8.2 with PHP_FCGI_CHILDREN=2, padding included.
        let mut buf = vec![1, 10, 0, 0, 0, 51, 5, 0];
        buf.extend_from_slice(
            b"\x0f\x01FCGI_MPXS_CONNS0\x0d\x01FCGI_MAX_REQS2\x0e\x01FCGI_MAX_CONNS2",
        );
        buf.extend_from_slice(&[0; 5]);
        let want = Values {
            max_conns: Some(2),
            max_reqs: Some(2),
            mpxs_conns: Some(0),
        };
        assert_eq!(decode_values(&buf), Ok(Some(want)));
        assert_eq!(
            decode_values(&buf[..buf.len() - 1]),
            Ok(None),
            "padding is awaited"
        );
        assert_eq!(decode_values(&buf[..7]), Ok(None));
    }

    #[test]
    fn get_values_result_empty_long_and_bad() {
        // flup 1.0.3 on Python 3 answers with no pairs at all.
        assert_eq!(
            decode_values(&[1, 10, 0, 0, 0, 0, 0, 0]),
            Ok(Some(Values::default()))
        );
        // A 4-byte value length and a name glint did not ask.
        let mut rec = vec![1, 10, 0, 0, 0, 0, 0, 0];
        let mut body = vec![3, 0x80, 0, 0, 1];
        body.extend_from_slice(b"FOO1");
        body.extend_from_slice(b"\x0e\x03FCGI_MAX_CONNS100");
        rec[5] = body.len() as u8;
        rec.extend_from_slice(&body);
        let v = decode_values(&rec).unwrap().unwrap();
        assert_eq!(v.max_conns, Some(100));
        assert_eq!(v.max_reqs, None);
        // UNKNOWN_TYPE, another record, a request id, a pair past the end,
        // a value that is not a number, not FastCGI at all.
        assert!(decode_values(&[1, 11, 0, 0, 0, 8, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(decode_values(&[1, 6, 0, 1, 0, 0, 0, 0]).is_err());
        assert!(decode_values(&[1, 10, 0, 1, 0, 0, 0, 0]).is_err());
        assert!(decode_values(&[1, 10, 0, 0, 0, 3, 0, 0, 5, 1, b'A']).is_err());
        let mut nan = vec![1, 10, 0, 0, 0, 17, 0, 0, 14, 1];
        nan.extend_from_slice(b"FCGI_MAX_CONNSx");
        assert!(decode_values(&nan).is_err());
        assert!(decode_values(b"HTTP/1.1 200 OK\r\n").is_err());
    }
}
