//! One stream's exchange as the session holds it: the body still to frame
//! (a queue of memory and file pieces, as the connection's output queue is),
//! where its request body goes, the gateway exchange if a backend answers;
//! and the [`Request`] view the exchange gets of an HTTP/2 request head.

use std::cell::Cell;
use std::fs::File;
use std::rc::Rc;

use httparse::Header;

use super::pieces::Pieces;
use crate::conn::encoded::Encoded;
use crate::conn::gateway::GwSide;
use crate::msg::{Body, Method, Piece, Reply, Request, MAX_HEADERS};
use crate::proto::h1::parse::valid_host;
use crate::proto::h2::conn::RequestHead;

/// The payload of a file range up to this size is read into the output
/// buffer (`pread`, frame by frame) rather than queued for `sendfile`: one
/// system call per DATA frame instead of two (a `send` of its 9-byte header
/// with MSG_MORE, then `sendfile`), and the frames of many small answers
/// leave in one `send`. A 25 KB image over h2c took 4 calls per response
/// as file ranges, 2 reads and a share of one send so (lighttpd reads every
/// DATA payload with `pread`); larger files keep `sendfile`, whose saved
/// copy grows with the size.
pub const READ_INTO_MEMORY: u64 = 64 * 1024;

/// A piece of a response body not yet framed.
#[derive(Debug)]
pub enum Chunk {
    /// Bytes from `at` on.
    Mem(Vec<u8>, usize),
    Shared(Rc<[u8]>, usize),
    File {
        file: Rc<File>,
        offset: u64,
        len: u64,
        /// Payloads are read into the output (see [`READ_INTO_MEMORY`]).
        read: bool,
    },
}

impl Chunk {
    /// Bytes left in it.
    pub fn left(&self) -> u64 {
        match self {
            Chunk::Mem(v, at) => (v.len() - at) as u64,
            Chunk::Shared(v, at) => (v.len() - at) as u64,
            Chunk::File { len, .. } => *len,
        }
    }
}

/// What becomes of a request's body.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Nothing needs it: consumed and dropped as it comes.
    #[default]
    Drop,
    /// Kept unread in the core (an authorizer decides first).
    Hold,
    /// To the gateway job, as far as its window takes it.
    Feed,
}

/// Where a request's body stands.
#[derive(Debug, Default)]
pub struct ReqBody {
    /// The client sent END_STREAM: nothing more comes.
    pub done: bool,
    /// No `content-length`: a collecting job gets it in chunked framing
    /// (see `Session::feed_body`).
    pub unframed: bool,
    /// The last chunk of an unframed body went to the job.
    pub terminated: bool,
    pub use_: Use,
}

/// One request on its stream, from its head to its last DATA frame.
#[derive(Debug)]
pub struct Task {
    pub pieces: Pieces<Chunk>,
    /// Memory bytes in `pieces` (file pieces hold a descriptor, not memory).
    pub mem: usize,
    /// File pieces in `pieces`.
    pub files: usize,
    /// A final response head went out.
    pub head_sent: bool,
    /// Nothing more joins `pieces`: END_STREAM follows the last of them.
    pub complete: bool,
    /// The answer is cut short (a backend failed or sent less than it
    /// announced): the stream is reset once `pieces` are out, not ended.
    pub cut: bool,
    /// END_STREAM (or RST_STREAM) went out: nothing more is sent on it.
    pub ended: bool,
    /// A HEAD request: no body is sent.
    pub head_only: bool,
    pub body: ReqBody,
    /// The gateway exchange answering it, until its answer is complete.
    pub gw: Option<Box<GwSide>>,
    /// A reply compressed as it is sent (mod_deflate): a slice of it joins
    /// the queue each time the queue ran dry, one slice per turn of the
    /// loop for the whole connection.
    pub encoded: Option<Box<Encoded>>,
    /// The backend was told there is no room (`Sink::has_room`): it has
    /// paused, and is to be pumped once the stream drained.
    pub paused: Cell<bool>,
    /// `clock.mono_secs` of the last DATA frame, or of the last moment the
    /// stream had nothing to send (for `server.max-write-idle`).
    pub last_sent: u64,
    /// `clock.mono_secs` of the last request body bytes (for
    /// `server.max-read-idle` while a backend waits for them).
    pub last_recv: u64,
}

// Moved in and out of the task table several times per request: kept
// (with its stream id, as the table's entries are) within the 128 bytes a
// move copies without a `memcpy` call.
const _: () = assert!(std::mem::size_of::<(u32, Task)>() <= 128);

impl Task {
    pub fn new(now: u64, end_stream: bool, head_only: bool) -> Task {
        Task {
            pieces: Pieces::default(),
            mem: 0,
            files: 0,
            head_sent: false,
            complete: false,
            cut: false,
            ended: false,
            head_only,
            body: ReqBody {
                done: end_stream,
                ..ReqBody::default()
            },
            gw: None,
            encoded: None,
            paused: Cell::new(false),
            last_sent: now,
            last_recv: now,
        }
    }

    /// Queues body bytes; returns how many memory bytes were added.
    pub fn push_mem(&mut self, bytes: &[u8]) -> usize {
        if bytes.is_empty() || self.head_only {
            return 0;
        }
        match self.pieces.back_mut() {
            // Small writes from a backend join the last piece.
            Some(Chunk::Mem(v, _)) if v.len() < 16 * 1024 => v.extend_from_slice(bytes),
            _ => self.pieces.push_back(Chunk::Mem(bytes.to_vec(), 0)),
        }
        self.mem += bytes.len();
        bytes.len()
    }

    /// Queues `len` bytes of `file` from `offset`.
    pub fn push_file(&mut self, file: Rc<File>, offset: u64, len: u64) {
        if len > 0 && !self.head_only {
            self.pieces.push_back(Chunk::File {
                file,
                offset,
                len,
                read: len <= READ_INTO_MEMORY,
            });
            self.files += 1;
        }
    }

    /// A reply's body pieces; returns the memory bytes added.
    pub fn push_reply(&mut self, r: &Reply) -> usize {
        let mut added = 0;
        for p in r.pieces() {
            match p {
                Piece::Mem(range) => added += self.push_mem(r.mem(range)),
                Piece::Shared(bytes) if !self.head_only && !bytes.is_empty() => {
                    // Shared with the file cache: no copy, counted as memory
                    // only for the bound on what one stream holds.
                    self.pieces.push_back(Chunk::Shared(Rc::clone(bytes), 0));
                    self.mem += bytes.len();
                    added += bytes.len();
                }
                Piece::Shared(_) => {}
                Piece::File { file, offset, len } => self.push_file(Rc::clone(file), *offset, *len),
            }
        }
        added
    }

    /// Has a frame to send: body, or the END_STREAM (or reset) after it.
    pub fn wants_to_send(&self) -> bool {
        !self.ended && (!self.pieces.is_empty() || self.complete || self.encoded.is_some())
    }

    /// Done with: its answer is out and no backend needs its body.
    pub fn finished(&self) -> bool {
        self.ended && self.gw.is_none()
    }

    /// Drops what is queued (the stream was reset); returns the memory freed.
    pub fn drop_pieces(&mut self) -> usize {
        self.encoded = None;
        self.pieces.clear();
        self.files = 0;
        std::mem::take(&mut self.mem)
    }
}

/// Why a request head cannot be served: the status and the reason logged.
pub type Refused = (u16, &'static str);

/// What building request views reuses from one request to the next on a
/// connection.
#[derive(Debug, Default)]
pub struct ViewScratch {
    /// The request line the access log shows.
    pub line: String,
    /// The memory of the header vector (empty between requests).
    headers: Vec<Header<'static>>,
    /// The last `:authority` found valid on this connection: a client sends
    /// the same one on every request, which is compared instead of parsed
    /// again.
    host_ok: Vec<u8>,
}

impl ViewScratch {
    /// Lets go of the memory (an idle connection).
    pub fn compact(&mut self) {
        *self = ViewScratch::default();
    }

    /// The header vector's memory, emptied, for headers of any lifetime.
    fn take_headers<'h>(&mut self) -> Vec<Header<'h>> {
        std::mem::take(&mut self.headers)
    }

    /// Keeps `headers`' memory for the next request. Emptied, a vector of
    /// headers borrowing the request is turned into one of `'static`
    /// headers by collecting it in place, which keeps its allocation.
    fn keep_headers(&mut self, mut headers: Vec<Header<'_>>) {
        headers.clear();
        self.headers = headers
            .into_iter()
            .map(|_| Header {
                name: "",
                value: b"",
            })
            .collect();
    }
}

/// Builds the [`Request`] the exchange sees of an HTTP/2 request head and
/// hands it to `f`: `:method`, `:path` as the target, `:authority` as the
/// host (checked as HTTP/1's parser checks Host, for the docroot a virtual
/// host picks), the fields as headers (a `host` field from `:authority`
/// when the client sent none, split `cookie` fields joined with "; " as
/// RFC 9113 §8.2.3 says), the body's framing, and the request line
/// `METHOD PATH HTTP/2.0` for the access log.
pub fn with_request<R>(
    head: &RequestHead,
    end_stream: bool,
    scratch: &mut ViewScratch,
    f: impl FnOnce(Result<&Request<'_, '_>, Refused>) -> R,
) -> R {
    with_view(2, head, end_stream, scratch, f)
}

/// [`with_request`] for HTTP/`major` (2, or 3 for an HTTP/3 stream, whose
/// heads follow the same rules: RFC 9114 §4.3), with only the request line
/// kept from one request to the next.
pub fn with_request_of<R>(
    major: u8,
    head: &RequestHead,
    end_stream: bool,
    line: &mut String,
    f: impl FnOnce(Result<&Request<'_, '_>, Refused>) -> R,
) -> R {
    let mut scratch = ViewScratch {
        line: std::mem::take(line),
        ..ViewScratch::default()
    };
    let r = with_view(major, head, end_stream, &mut scratch, f);
    *line = scratch.line;
    r
}

fn with_view<R>(
    major: u8,
    head: &RequestHead,
    end_stream: bool,
    scratch: &mut ViewScratch,
    f: impl FnOnce(Result<&Request<'_, '_>, Refused>) -> R,
) -> R {
    let (method_str, target, host) = match pseudo_fields(head, &mut scratch.host_ok) {
        Ok(p) => p,
        Err(why) => return f(Err(why)),
    };
    let mut cookie: Vec<u8> = Vec::new();
    let mut headers = scratch.take_headers();
    let r = match view_fields(head, host, &mut cookie, &mut headers) {
        Err(why) => f(Err(why)),
        Ok(()) => {
            let body = match head.content_length() {
                _ if end_stream => Body::None,
                Some(0) => Body::None,
                Some(n) => Body::Length(n),
                None => Body::Chunked,
            };
            let line = &mut scratch.line;
            line.clear();
            line.push_str(method_str);
            line.push(' ');
            line.push_str(target);
            line.push_str(if major == 3 { " HTTP/3.0" } else { " HTTP/2.0" });
            let req = Request {
                method: Method::from_token(method_str),
                method_str,
                target,
                minor: 0,
                major,
                headers: &headers,
                head_len: 0,
                body,
                keep_alive: true,
                host,
                request_line: line.as_bytes(),
            };
            f(Ok(&req))
        }
    };
    scratch.keep_headers(headers);
    r
}

/// The method, target and host of a request head, checked. `host_ok` is
/// the last host found valid (see [`ViewScratch`]).
fn pseudo_fields<'h>(
    head: &'h RequestHead,
    host_ok: &mut Vec<u8>,
) -> Result<(&'h str, &'h str, &'h [u8]), Refused> {
    let method_str = match head.method() {
        b"GET" => "GET",
        b"HEAD" => "HEAD",
        b"POST" => "POST",
        m => match std::str::from_utf8(m) {
            Ok(m) if m.bytes().all(is_tchar) => m,
            _ => return Err((400, "method is not a token")),
        },
    };
    let Some(path) = head.path() else {
        // CONNECT (RFC 9113 §8.5): glint tunnels nothing.
        return Err((405, "CONNECT"));
    };
    let Some(target) = target_str(path) else {
        return Err((400, ":path with a space or control character"));
    };
    let host = head.authority().unwrap_or_default();
    if host.is_empty() {
        return Err((400, "no :authority"));
    }
    if host != host_ok.as_slice() {
        if !valid_host(host) {
            return Err((400, "invalid :authority"));
        }
        host_ok.clear();
        host_ok.extend_from_slice(host);
    }
    Ok((method_str, target, host))
}

/// `:path` as text: none when it is not UTF-8 or holds a space, a
/// control character or DEL. One pass over the bytes; a target all ASCII
/// (nearly every one) is UTF-8 as it is, and only one with bytes past
/// 0x7f goes through `from_utf8` (which, with the separate scan for the
/// refused bytes, was ~110 instructions for `/index.html`).
fn target_str(path: &[u8]) -> Option<&str> {
    let mut ascii = true;
    for &b in path {
        if b <= b' ' || b == 0x7f {
            return None;
        }
        ascii &= b < 0x80;
    }
    if ascii {
        // SAFETY: every byte is ASCII, and ASCII text is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(path) })
    } else {
        // (A multi-byte sequence has no byte at or below 0x7f: the scan
        // above judged every byte the old `from_utf8` then scan did.)
        std::str::from_utf8(path).ok()
    }
}

/// The fields as headers, in one pass: a `host` from `:authority` first
/// when the client sent none, split `cookie` fields joined into `cookie`
/// in the place of the first, an expectation glint does not meet refused.
fn view_fields<'h>(
    head: &'h RequestHead,
    host: &'h [u8],
    cookie: &'h mut Vec<u8>,
    headers: &mut Vec<Header<'h>>,
) -> Result<(), Refused> {
    headers.push(Header {
        name: "host",
        value: host,
    });
    let mut has_host = false;
    let mut cookie_at = None;
    let mut n_fields = 0;
    for (known, name, value) in head.fields_named() {
        n_fields += 1;
        // The core checked names: visible ASCII, so always a str.
        let name = match known {
            Some(name) => name,
            None => match std::str::from_utf8(name) {
                Ok(name) => name,
                Err(_) => return Err((400, "field name")),
            },
        };
        match name {
            "cookie" => {
                if cookie_at.is_some() {
                    cookie.extend_from_slice(b"; ");
                } else {
                    cookie_at = Some(headers.len());
                    headers.push(Header { name, value: &[] });
                }
                cookie.extend_from_slice(value);
                continue;
            }
            "host" if !has_host => {
                // The client's own: no field made from :authority.
                has_host = true;
                headers.remove(0);
                cookie_at = cookie_at.map(|i| i - 1);
            }
            "expect" if !value.eq_ignore_ascii_case(b"100-continue") => {
                return Err((417, "unsupported expectation"));
            }
            _ => {}
        }
        headers.push(Header { name, value });
    }
    if n_fields > MAX_HEADERS {
        return Err((431, "too many header fields"));
    }
    if let Some(i) = cookie_at {
        headers[i].value = cookie;
    }
    Ok(())
}

/// RFC 9110 §5.6.2 token characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::h2::hpack::HeaderList;

    fn head(fields: &[(&str, &str)]) -> RequestHead {
        let mut l = HeaderList::default();
        for (n, v) in fields {
            l.push(n.as_bytes(), v.as_bytes());
        }
        crate::proto::h2::conn::request::request_head(l).unwrap_or_default()
    }

    #[test]
    fn target_str_refuses_what_from_utf8_and_the_byte_scan_did() {
        let cases: [&[u8]; 7] = [
            b"/a?b",
            "/é".as_bytes(),
            b"/a b",
            b"/\x7f",
            b"/\xff",
            b"/\xc3",
            b"",
        ];
        for c in cases {
            let old = std::str::from_utf8(c)
                .ok()
                .filter(|t| !t.bytes().any(|b| b <= b' ' || b == 0x7f));
            assert_eq!(target_str(c), old, "{c:?}");
        }
    }

    const BASE: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com:8443"),
        (":path", "/a/b?c=d"),
    ];

    #[test]
    fn the_view_of_a_head() {
        let mut f: Vec<(&str, &str)> = BASE.to_vec();
        f.extend([("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2")]);
        let h = head(&f);
        with_request(&h, true, &mut ViewScratch::default(), |r| {
            let Ok(r) = r else { panic!("{r:?}") };
            assert_eq!(r.method, Method::Get);
            assert_eq!(r.target, "/a/b?c=d");
            assert_eq!(r.host, b"example.com:8443");
            assert_eq!(r.header("Host"), Some(&b"example.com:8443"[..]));
            assert_eq!(r.header("cookie"), Some(&b"a=1; b=2"[..]));
            assert_eq!(r.headers.len(), 3, "host, one cookie, accept");
            assert_eq!(r.request_line, b"GET /a/b?c=d HTTP/2.0");
            assert_eq!(r.protocol(), "HTTP/2.0");
            assert_eq!(r.body, Body::None);
        });
        let mut f: Vec<(&str, &str)> = BASE.to_vec();
        f[0].1 = "POST";
        f.push(("content-length", "5"));
        with_request(&head(&f), false, &mut ViewScratch::default(), |r| {
            assert_eq!(r.map(|r| r.body), Ok(Body::Length(5)));
        });
        f.pop();
        with_request(&head(&f), false, &mut ViewScratch::default(), |r| {
            assert_eq!(r.map(|r| r.body), Ok(Body::Chunked), "no length: collected");
        });
    }

    #[test]
    fn scratch_kept_across_requests() {
        let mut scratch = ViewScratch::default();
        let mut f: Vec<(&str, &str)> = BASE.to_vec();
        f.extend([
            ("cookie", "a=1"),
            ("host", "example.com:8443"),
            ("cookie", "b=2"),
        ]);
        with_request(&head(&f), true, &mut scratch, |r| {
            let Ok(r) = r else { panic!("{r:?}") };
            let names: Vec<&str> = r.headers.iter().map(|h| h.name).collect();
            assert_eq!(names, ["cookie", "host"], "the client's host, no other");
            assert_eq!(r.header("cookie"), Some(&b"a=1; b=2"[..]));
        });
        let cap = scratch.headers.capacity();
        assert!(cap >= 2, "the header vector's memory is kept");
        // The same authority again: accepted without parsing it again.
        with_request(&head(&BASE), true, &mut scratch, |r| {
            assert_eq!(r.map(|r| r.headers.len()).ok(), Some(1));
        });
        assert_eq!(scratch.headers.capacity(), cap);
        // Another, invalid one after a valid one is still refused.
        let mut f: Vec<(&str, &str)> = BASE.to_vec();
        f[2].1 = "a/b";
        with_request(&head(&f), true, &mut scratch, |r| {
            assert_eq!(r.map(|_| ()).map_err(|e| e.0), Err(400));
        });
    }

    #[test]
    fn heads_refused() {
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16);
        let cases: &[Case] = &[
            (
                "authority with a slash",
                vec![
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":authority", "a/b"),
                    (":path", "/"),
                ],
                400,
            ),
            (
                "no authority",
                vec![(":method", "GET"), (":scheme", "http"), (":path", "/")],
                400,
            ),
            (
                "space in path",
                vec![
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":authority", "a"),
                    (":path", "/a b"),
                ],
                400,
            ),
            (
                "method not a token",
                vec![
                    (":method", "G(T"),
                    (":scheme", "http"),
                    (":authority", "a"),
                    (":path", "/"),
                ],
                400,
            ),
            (
                "expect other than 100-continue",
                BASE.iter().copied().chain([("expect", "x")]).collect(),
                417,
            ),
        ];
        for (why, fields, status) in cases {
            let h = head(fields);
            with_request(&h, true, &mut ViewScratch::default(), |r| {
                assert_eq!(r.map(|_| ()).map_err(|e| e.0), Err(*status), "{why}");
            });
        }
        let many: Vec<(String, String)> = (0..=MAX_HEADERS)
            .map(|i| (format!("x-{i}"), "v".into()))
            .collect();
        let mut f: Vec<(&str, &str)> = BASE.to_vec();
        f.extend(many.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        with_request(&head(&f), true, &mut ViewScratch::default(), |r| {
            assert_eq!(r.map(|_| ()).map_err(|e| e.0), Err(431));
        });
    }
}
