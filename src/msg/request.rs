//! A request as every protocol hands it to the exchange: the method, the
//! target, the headers (borrowed from the connection's read buffer), and how
//! its body is framed. HTTP/1's parser (`proto::h1`) makes one from bytes.

pub use crate::syntax::trim_ows;
use httparse::Header;

/// Most headers one request may carry; more is answered with 431.
pub const MAX_HEADERS: usize = 64;

/// A request the server cannot or will not process, and the status that says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    /// Said in the error log at debug level.
    pub why: &'static str,
}

pub(crate) const fn err(status: u16, why: &'static str) -> HttpError {
    HttpError { status, why }
}

/// The methods glint knows; anything else is answered with 501.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    #[default]
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Trace,
    Connect,
    /// A WebDAV or other registered method: known, but not for static files.
    OtherKnown,
    Unknown,
}

impl Method {
    pub fn from_token(m: &str) -> Method {
        match m {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            "PATCH" => Method::Patch,
            "TRACE" => Method::Trace,
            "CONNECT" => Method::Connect,
            "PROPFIND" | "PROPPATCH" | "MKCOL" | "COPY" | "MOVE" | "LOCK" | "UNLOCK" | "REPORT"
            | "SEARCH" => Method::OtherKnown,
            _ => Method::Unknown,
        }
    }
}

/// How the request body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Body {
    #[default]
    None,
    Length(u64),
    Chunked,
}

/// A complete, validated request head, borrowing from the read buffer.
#[derive(Debug, Clone, Copy)]
pub struct Request<'h, 'b> {
    pub method: Method,
    pub method_str: &'b str,
    /// The path and query as sent (origin form); for absolute form, the part from the path on.
    pub target: &'b str,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1 (0 for HTTP/2.0).
    pub minor: u8,
    /// 1, or 2 for a request on an HTTP/2 stream (`%H`, `SERVER_PROTOCOL`).
    pub major: u8,
    pub headers: &'h [Header<'b>],
    /// Bytes of the head, request line through the empty line.
    pub head_len: usize,
    pub body: Body,
    /// The client allows the connection to stay open after this response.
    pub keep_alive: bool,
    /// Host from the absolute-form target or the Host header, lowercased by the caller.
    pub host: &'b [u8],
    /// The request line without its CRLF, for the access log.
    pub request_line: &'b [u8],
}

impl Request<'_, '_> {
    /// `HTTP/1.0`, `HTTP/1.1` or `HTTP/2.0`, as lighttpd names them in the
    /// access log and `SERVER_PROTOCOL`.
    pub fn protocol(&self) -> &'static str {
        match (self.major, self.minor) {
            (2, _) => "HTTP/2.0",
            (3, _) => "HTTP/3.0",
            (_, 0) => "HTTP/1.0",
            _ => "HTTP/1.1",
        }
    }

    /// The first header named `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The path part of the target (before `?`).
    pub fn path(&self) -> &str {
        match self.target.find('?') {
            Some(i) => &self.target[..i],
            None => self.target,
        }
    }

    /// The query string without `?` (empty when absent).
    pub fn query(&self) -> &str {
        match self.target.find('?') {
            Some(i) => &self.target[i + 1..],
            None => "",
        }
    }
}

/// A request head copied out of the read buffer, for a request that lives
/// longer than its bytes there (a backend answers it later, glint may run
/// it again, the access log writes it at the end): copied once, with where
/// each part is, so that no later step parses it again.
#[derive(Debug, Clone, Default)]
pub struct OwnedHead {
    bytes: Vec<u8>,
    method: Method,
    method_str: std::ops::Range<usize>,
    target: std::ops::Range<usize>,
    host: std::ops::Range<usize>,
    request_line: std::ops::Range<usize>,
    headers: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    minor: u8,
    major: u8,
    body: Body,
    keep_alive: bool,
}

impl OwnedHead {
    /// A copy of `req`.
    pub fn of(req: &Request<'_, '_>) -> OwnedHead {
        let mut h = OwnedHead {
            bytes: Vec::with_capacity(
                req.request_line.len()
                    + req.target.len()
                    + req.host.len()
                    + req
                        .headers
                        .iter()
                        .map(|h| h.name.len() + h.value.len())
                        .sum::<usize>(),
            ),
            method: req.method,
            minor: req.minor,
            major: req.major,
            body: req.body,
            keep_alive: req.keep_alive,
            ..OwnedHead::default()
        };
        h.request_line = h.put(req.request_line);
        h.method_str = h.put(req.method_str.as_bytes());
        h.target = h.put(req.target.as_bytes());
        h.host = h.put(req.host);
        h.headers = req
            .headers
            .iter()
            .map(|x| (h.put(x.name.as_bytes()), h.put(x.value)))
            .collect();
        h
    }

    /// The request a local redirect makes of `first`: GET (HEAD for HEAD)
    /// for `target`, with the client's headers but those of the body, and
    /// no body.
    pub fn redirect(first: &Request<'_, '_>, target: &str) -> OwnedHead {
        let (method, name) = if first.method == Method::Head {
            (Method::Head, "HEAD")
        } else {
            (Method::Get, "GET")
        };
        let line = format!("{name} {target} {}", first.protocol());
        const BODY_HEADERS: [&str; 4] = [
            "content-length",
            "transfer-encoding",
            "content-type",
            "expect",
        ];
        let mut h = OwnedHead {
            method,
            minor: first.minor,
            major: first.major,
            body: Body::None,
            keep_alive: first.keep_alive,
            ..OwnedHead::default()
        };
        h.request_line = h.put(line.as_bytes());
        h.method_str = h.put(name.as_bytes());
        h.target = h.put(target.as_bytes());
        h.host = h.put(first.host);
        h.headers = first
            .headers
            .iter()
            .filter(|x| !BODY_HEADERS.iter().any(|b| x.name.eq_ignore_ascii_case(b)))
            .map(|x| (h.put(x.name.as_bytes()), h.put(x.value)))
            .collect();
        h
    }

    /// `first` with another target and other headers (mod_magnet's
    /// changes): the same method, version and body; the Host from the
    /// headers when a valid one is there, else `first`'s.
    pub fn changed(
        first: &Request<'_, '_>,
        target: &str,
        headers: &[(String, Vec<u8>)],
    ) -> OwnedHead {
        let mut h = OwnedHead {
            method: first.method,
            minor: first.minor,
            major: first.major,
            body: first.body,
            keep_alive: first.keep_alive,
            ..OwnedHead::default()
        };
        h.request_line = h.put(first.request_line);
        h.method_str = h.put(first.method_str.as_bytes());
        h.target = h.put(target.as_bytes());
        let host = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.as_slice())
            .filter(|v| crate::syntax::valid_host(v))
            .unwrap_or(first.host);
        h.host = h.put(host);
        h.headers = headers
            .iter()
            .map(|(n, v)| (h.put(n.as_bytes()), h.put(v)))
            .collect();
        h
    }

    fn put(&mut self, b: &[u8]) -> std::ops::Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        start..self.bytes.len()
    }

    fn text(&self, r: &std::ops::Range<usize>) -> &str {
        // Every text part was a str when it was copied in.
        std::str::from_utf8(&self.bytes[r.clone()]).unwrap_or("")
    }

    /// How the body is framed.
    /// The request's HTTP major version.
    pub fn major(&self) -> u8 {
        self.major
    }

    pub fn body(&self) -> Body {
        self.body
    }

    /// The request line, for the access log.
    pub fn request_line(&self) -> &[u8] {
        &self.bytes[self.request_line.clone()]
    }

    /// The head as a [`Request`] (its `head_len` is 0: it is no longer in
    /// a read buffer), with its headers in `headers`.
    pub fn view<'h, 's>(&'s self, headers: &'h mut Vec<Header<'s>>) -> Request<'h, 's> {
        headers.clear();
        for (n, v) in &self.headers {
            headers.push(Header {
                name: self.text(n),
                value: &self.bytes[v.clone()],
            });
        }
        Request {
            method: self.method,
            method_str: self.text(&self.method_str),
            target: self.text(&self.target),
            minor: self.minor,
            major: self.major,
            headers,
            head_len: 0,
            body: self.body,
            keep_alive: self.keep_alive,
            host: &self.bytes[self.host.clone()],
            request_line: &self.bytes[self.request_line.clone()],
        }
    }
}
