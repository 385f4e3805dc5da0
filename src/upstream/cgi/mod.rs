//! The CGI/1.1 side of the gateways: the environment a backend sees, and the
//! header block it answers with.

use std::net::IpAddr;

use crate::msg::Request;

/// What the environment is built from, besides the request itself.
pub struct EnvInput<'a> {
    pub req: &'a Request<'a, 'a>,
    /// The decoded, normalised path.
    pub path: &'a str,
    pub query: &'a str,
    /// The part of the path that names the script (`SCRIPT_NAME`); the rest is `PATH_INFO`.
    pub script_name: &'a str,
    pub path_info: &'a str,
    pub document_root: &'a str,
    /// SCRIPT_FILENAME is the document root and the whole path (with the
    /// PATH_INFO): for `broken-scriptfilename`, and for a backend's own `docroot`.
    pub script_filename_whole_path: bool,
    pub remote: Option<IpAddr>,
    pub remote_port: u16,
    /// The address the client connected to (`SERVER_ADDR`; empty on a unix socket).
    pub server_addr: Option<IpAddr>,
    pub server_port: u16,
    pub server_name: &'a str,
    pub server_software: &'a str,
    /// The SCGI protocol wants `SCGI=1`.
    pub scgi: bool,
    /// For an authorizer: no `SCRIPT_NAME`, `PATH_INFO` or
    /// `PATH_TRANSLATED` (FastCGI spec, 6.3), and `SCRIPT_FILENAME` names
    /// the whole path.
    pub authorizer: bool,
}

/// CGI variables as `NAME\0VALUE\0` pairs in one buffer (SCGI's own
/// layout): one allocation per request instead of two per variable. Names
/// and values never contain NUL: the request parser refuses it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Env {
    buf: Vec<u8>,
}

impl Env {
    fn put(&mut self, k: &[u8], v: &[u8]) {
        self.put_with(k, |b| b.extend_from_slice(v));
    }

    /// A variable whose value `value` writes straight into the buffer.
    fn put_with(&mut self, k: &[u8], value: impl FnOnce(&mut Vec<u8>)) {
        self.buf.extend_from_slice(k);
        self.buf.push(0);
        value(&mut self.buf);
        self.buf.push(0);
    }

    fn put_ip(&mut self, k: &[u8], ip: IpAddr) {
        use std::io::Write;
        self.put_with(k, |b| match ip {
            // By hand: the formatter cost 1,065 instructions an address
            // (callgrind), two per backend request.
            IpAddr::V4(a) => {
                for (i, o) in a.octets().into_iter().enumerate() {
                    if i > 0 {
                        b.push(b'.');
                    }
                    b.extend_from_slice(crate::msg::status::itoa_u64(u64::from(o)).as_bytes());
                }
            }
            // Writing to a Vec cannot fail.
            IpAddr::V6(_) => {
                let _ = write!(b, "{ip}");
            }
        });
    }

    fn put_num(&mut self, k: &[u8], n: u64) {
        self.put(k, crate::msg::status::itoa_u64(n).as_bytes());
    }

    /// The pairs as SCGI sends them: `NAME\0VALUE\0`...
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The (name, value) pairs in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut parts = self.buf.split(|&b| b == 0);
        std::iter::from_fn(move || {
            let k = parts.next().filter(|k| !k.is_empty())?;
            let v = parts.next()?;
            Some((k, v))
        })
    }

    /// An environment from pairs (tests).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Env {
        let mut env = Env::default();
        for (k, v) in pairs {
            env.put(k.as_bytes(), v.as_bytes());
        }
        env
    }

    /// The value of `name`, for tests and logs.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.pairs()
            .find(|(k, _)| *k == name.as_bytes())
            .map(|(_, v)| v)
    }

    /// Sets `name` to `value`, replacing what glint or the client put there
    /// (an authorizer's `Variable-` headers are trusted over both).
    pub fn set(&mut self, name: &[u8], value: &[u8]) {
        self.remove(name);
        self.put(name, value);
    }

    /// Adds `name`, which the caller knows is not there yet: no search of
    /// the variables for it (a [`Env::set`] walks them all, 3,300
    /// instructions for an SCGI request's 30, callgrind).
    pub fn add_new(&mut self, name: &[u8], value: &[u8]) {
        self.put(name, value);
    }

    /// Drops the variable `name`, if it is there (an `Upgrade` a CGI
    /// program may not act on, a header `setenv.set-request-header` empties).
    pub fn remove(&mut self, name: &[u8]) {
        if self.pairs().any(|(k, _)| k == name) {
            let mut kept = Env::default();
            for (k, v) in self.pairs().filter(|(k, _)| *k != name) {
                kept.put(k, v);
            }
            *self = kept;
        }
    }
}

/// The variable an authorizer's `Variable-NAME` header sets: NAME in upper
/// case, with every character but letters and digits turned into `_`
/// (`Variable-auth-user` sets `AUTH_USER`). None for other headers.
pub fn authorizer_variable(header: &str) -> Option<String> {
    const PREFIX: &str = "variable-";
    let name = header.get(PREFIX.len()..)?;
    if !header[..PREFIX.len()].eq_ignore_ascii_case(PREFIX) || name.is_empty() {
        return None;
    }
    Some(
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect(),
    )
}

/// The CGI/1.1 variables for one request, but `CONTENT_LENGTH`, which the
/// encoders put first (SCGI requires it there) once the body is complete.
pub fn environment(e: &EnvInput<'_>) -> Env {
    let mut env = Env {
        buf: Vec::with_capacity(1024),
    };
    if e.scgi {
        env.put(b"SCGI", b"1");
    }
    env.put(b"GATEWAY_INTERFACE", b"CGI/1.1");
    env.put(b"SERVER_SOFTWARE", e.server_software.as_bytes());
    env.put(b"SERVER_NAME", e.server_name.as_bytes());
    match e.server_addr {
        Some(ip) => env.put_ip(b"SERVER_ADDR", ip),
        None => env.put(b"SERVER_ADDR", b""),
    }
    env.put_num(b"SERVER_PORT", e.server_port as u64);
    env.put(b"SERVER_PROTOCOL", e.req.protocol().as_bytes());
    env.put(b"REQUEST_METHOD", e.req.method_str.as_bytes());
    env.put(b"REQUEST_URI", e.req.target.as_bytes());
    env.put(b"QUERY_STRING", e.query.as_bytes());
    env.put_paths(e);
    env.put(b"DOCUMENT_ROOT", e.document_root.as_bytes());
    if let Some(ip) = e.remote {
        env.put_ip(b"REMOTE_ADDR", ip);
        env.put_num(b"REMOTE_PORT", e.remote_port as u64);
    }
    // php-cgi refuses to run without it (its force-redirect protection).
    env.put(b"REDIRECT_STATUS", b"200");
    env.put_headers(e.req.headers);
    env
}

impl Env {
    /// SCRIPT_NAME, PATH_INFO, PATH_TRANSLATED and SCRIPT_FILENAME.
    fn put_paths(&mut self, e: &EnvInput<'_>) {
        let root = e.document_root.trim_end_matches('/').as_bytes();
        if !e.authorizer {
            self.put(b"SCRIPT_NAME", e.script_name.as_bytes());
            if !e.path_info.is_empty() {
                self.put(b"PATH_INFO", e.path_info.as_bytes());
                self.put_with(b"PATH_TRANSLATED", |b| {
                    b.extend_from_slice(root);
                    b.extend_from_slice(e.path_info.as_bytes());
                });
            }
        }
        // An authorizer's request names no script: its file is the whole path.
        let script = if e.script_filename_whole_path || e.authorizer {
            e.path
        } else {
            e.script_name
        };
        self.put_with(b"SCRIPT_FILENAME", |b| {
            b.extend_from_slice(root);
            b.extend_from_slice(script.as_bytes());
        });
    }

    /// The request's headers as `HTTP_*` variables (and CONTENT_TYPE),
    /// repeated ones joined.
    fn put_headers(&mut self, headers: &[httparse::Header<'_>]) {
        for (i, h) in headers.iter().enumerate() {
            if h.name.eq_ignore_ascii_case("content-length")
                || h.name.eq_ignore_ascii_case("transfer-encoding")
                || h.name.eq_ignore_ascii_case("proxy")
            {
                // CONTENT_LENGTH comes from the decoded body; `Proxy:` is httpoxy.
                continue;
            }
            let same = |o: &httparse::Header<'_>| o.name.eq_ignore_ascii_case(h.name);
            if headers[..i].iter().any(same) {
                // Already written, joined with the first of its name.
                continue;
            }
            if h.name.eq_ignore_ascii_case("content-type") {
                self.buf.extend_from_slice(b"CONTENT_TYPE");
            } else {
                self.buf.extend_from_slice(b"HTTP_");
                self.buf.extend(h.name.bytes().map(|c| {
                    if c == b'-' {
                        b'_'
                    } else {
                        c.to_ascii_uppercase()
                    }
                }));
            }
            self.buf.push(0);
            self.buf.extend_from_slice(h.value);
            // A repeated header joins with ", " as HTTP allows.
            for later in headers[i + 1..].iter().filter(|o| same(o)) {
                self.buf.extend_from_slice(b", ");
                self.buf.extend_from_slice(later.value);
            }
            self.buf.push(0);
        }
    }
}

/// A parsed CGI response head.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CgiHead {
    pub status: u16,
    /// Header lines to pass on, without `Status`.
    pub headers: Vec<(String, Vec<u8>)>,
    pub content_length: Option<u64>,
    pub location: Option<Vec<u8>>,
    /// The backend sent a `Status` line (without one, `Location` means 302).
    pub explicit_status: bool,
    /// The backend chunk-encoded its body (`Transfer-Encoding: chunked`).
    pub chunked: bool,
}

impl CgiHead {
    /// A 200 with no fields: what a program's output without a header
    /// block is served as.
    pub fn ok() -> CgiHead {
        CgiHead {
            status: 200,
            ..CgiHead::default()
        }
    }
}

/// Looks for the end of the CGI header block (`\r\n\r\n` or `\n\n`);
/// returns the head and the number of bytes it took. The status comes from
/// a `Status:` header, or from an HTTP status line (`HTTP/1.1 200 OK`) in
/// first place, which is how uWSGI answers.
pub fn parse_head(buf: &[u8]) -> Result<Option<(CgiHead, usize)>, &'static str> {
    let end = find_head_end(buf);
    let Some((head_len, body_start)) = end else {
        return Ok(None);
    };
    let mut h = CgiHead {
        status: 200,
        ..CgiHead::default()
    };
    let mut lines = buf[..head_len].split(|&b| b == b'\n');
    if buf.starts_with(b"HTTP/") {
        // `/` cannot appear in a header name, so this is a status line.
        let line = lines.next().unwrap_or_default();
        h.status = status_line(line.strip_suffix(b"\r").unwrap_or(line))
            .ok_or("an invalid HTTP status line")?;
        h.explicit_status = true;
    }
    for line in lines {
        header_line(&mut h, line)?;
    }
    if h.location.is_some() && !h.explicit_status {
        h.status = 302;
    }
    if h.chunked {
        // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3).
        h.content_length = None;
    }
    Ok(Some((h, body_start)))
}

/// Takes one line of a CGI header block into `h`.
fn header_line(h: &mut CgiHead, line: &[u8]) -> Result<(), &'static str> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Ok(());
    }
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err("a header line without a colon");
    };
    let name = std::str::from_utf8(&line[..colon]).map_err(|_| "a header name that is not text")?;
    if name.is_empty() || name.bytes().any(|b| !(b.is_ascii_graphic()) || b == b':') {
        return Err("an invalid header name");
    }
    let value = crate::msg::request::trim_ows(&line[colon + 1..]);
    if value.iter().any(|&b| b == b'\r' || b == 0) {
        return Err("a control character in a header value");
    }
    if name.eq_ignore_ascii_case("status") {
        let digits: Vec<u8> = value.iter().take(3).copied().collect();
        let code = std::str::from_utf8(&digits)
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .filter(|c| (100..=999).contains(c))
            .ok_or("an invalid Status")?;
        h.status = code;
        h.explicit_status = true;
        return Ok(());
    }
    if name.eq_ignore_ascii_case("content-length") {
        let n = std::str::from_utf8(value)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or("an invalid Content-Length")?;
        h.content_length = Some(n);
        return Ok(());
    }
    if name.eq_ignore_ascii_case("transfer-encoding") {
        // The last coding decides the framing (RFC 9112 §6.3).
        h.chunked = value
            .rsplit(|&b| b == b',')
            .next()
            .is_some_and(|c| crate::msg::request::trim_ows(c).eq_ignore_ascii_case(b"chunked"));
        return Ok(());
    }
    if name.eq_ignore_ascii_case("connection") || name.eq_ignore_ascii_case("keep-alive") {
        // Hop-by-hop: glint frames the response itself.
        return Ok(());
    }
    if name.eq_ignore_ascii_case("location") {
        h.location = Some(value.to_vec());
    }
    h.headers.push((name.to_string(), value.to_vec()));
    Ok(())
}

/// The code of `HTTP/1.x NNN reason`.
fn status_line(line: &[u8]) -> Option<u16> {
    let mut parts = line.splitn(3, |&b| b == b' ');
    let version = parts.next()?;
    let code = parts.next()?;
    let version_ok = version.len() == 8
        && version.starts_with(b"HTTP/")
        && version[5].is_ascii_digit()
        && version[6] == b'.'
        && version[7].is_ascii_digit();
    if !version_ok || code.len() != 3 || !code.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(code)
        .ok()?
        .parse::<u16>()
        .ok()
        .filter(|c| (100..=999).contains(c))
}

/// (end of the header lines, start of the body)
fn find_head_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i] == b'\n' {
            if buf.get(i + 1) == Some(&b'\n') {
                return Some((i + 1, i + 2));
            }
            if buf.get(i + 1) == Some(&b'\r') && buf.get(i + 2) == Some(&b'\n') {
                return Some((i + 1, i + 3));
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests;
