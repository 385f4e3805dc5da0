//! The CGI/1.1 side of the gateways: the environment a backend sees, and the
//! header block it answers with.

use std::net::IpAddr;

use crate::http::request::Request;

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
    pub remote: Option<IpAddr>,
    pub remote_port: u16,
    pub server_addr: &'a str,
    pub server_port: u16,
    pub server_name: &'a str,
    pub server_software: &'a str,
    pub content_length: u64,
    /// The SCGI protocol wants `SCGI=1`.
    pub scgi: bool,
}

/// The CGI/1.1 variables for one request, in the order a backend expects
/// (`CONTENT_LENGTH` first, as SCGI requires).
pub fn environment(e: &EnvInput<'_>) -> Vec<(String, Vec<u8>)> {
    let mut env: Vec<(String, Vec<u8>)> = Vec::with_capacity(24 + e.req.headers.len());
    fn put(env: &mut Vec<(String, Vec<u8>)>, k: &str, v: &[u8]) {
        env.push((k.to_string(), v.to_vec()));
    }
    put(
        &mut env,
        "CONTENT_LENGTH",
        e.content_length.to_string().as_bytes(),
    );
    if e.scgi {
        put(&mut env, "SCGI", b"1");
    }
    put(&mut env, "GATEWAY_INTERFACE", b"CGI/1.1");
    put(&mut env, "SERVER_SOFTWARE", e.server_software.as_bytes());
    put(&mut env, "SERVER_NAME", e.server_name.as_bytes());
    put(&mut env, "SERVER_ADDR", e.server_addr.as_bytes());
    put(
        &mut env,
        "SERVER_PORT",
        e.server_port.to_string().as_bytes(),
    );
    put(
        &mut env,
        "SERVER_PROTOCOL",
        if e.req.minor == 0 {
            b"HTTP/1.0"
        } else {
            b"HTTP/1.1"
        },
    );
    put(&mut env, "REQUEST_METHOD", e.req.method_str.as_bytes());
    put(&mut env, "REQUEST_URI", e.req.target.as_bytes());
    put(&mut env, "QUERY_STRING", e.query.as_bytes());
    put(&mut env, "SCRIPT_NAME", e.script_name.as_bytes());
    if !e.path_info.is_empty() {
        put(&mut env, "PATH_INFO", e.path_info.as_bytes());
        let mut translated = e.document_root.trim_end_matches('/').to_string();
        translated.push_str(e.path_info);
        put(&mut env, "PATH_TRANSLATED", translated.as_bytes());
    }
    let mut script_filename = e.document_root.trim_end_matches('/').to_string();
    script_filename.push_str(e.script_name);
    put(&mut env, "SCRIPT_FILENAME", script_filename.as_bytes());
    put(&mut env, "DOCUMENT_ROOT", e.document_root.as_bytes());
    if let Some(ip) = e.remote {
        put(&mut env, "REMOTE_ADDR", ip.to_string().as_bytes());
        put(
            &mut env,
            "REMOTE_PORT",
            e.remote_port.to_string().as_bytes(),
        );
    }
    // php-cgi refuses to run without it (its force-redirect protection).
    put(&mut env, "REDIRECT_STATUS", b"200");
    for h in e.req.headers {
        if h.name.eq_ignore_ascii_case("content-type") {
            put(&mut env, "CONTENT_TYPE", h.value);
            continue;
        }
        if h.name.eq_ignore_ascii_case("content-length")
            || h.name.eq_ignore_ascii_case("transfer-encoding")
            || h.name.eq_ignore_ascii_case("proxy")
        {
            // CONTENT_LENGTH is set above from the decoded body; `Proxy:` is httpoxy.
            continue;
        }
        let mut name = String::with_capacity(5 + h.name.len());
        name.push_str("HTTP_");
        for c in h.name.chars() {
            name.push(if c == '-' {
                '_'
            } else {
                c.to_ascii_uppercase()
            });
        }
        // A repeated header joins with ", " as HTTP allows.
        if let Some((_, v)) = env.iter_mut().find(|(k, _)| *k == name) {
            v.extend_from_slice(b", ");
            v.extend_from_slice(h.value);
        } else {
            env.push((name, h.value.to_vec()));
        }
    }
    env
}

/// A parsed CGI response head.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CgiHead {
    pub status: u16,
    /// Header lines to pass on, without `Status`.
    pub headers: Vec<(String, Vec<u8>)>,
    pub content_length: Option<u64>,
    pub location: Option<Vec<u8>>,
}

/// Looks for the end of the CGI header block (`\r\n\r\n` or `\n\n`);
/// returns the head and the number of bytes it took.
pub fn parse_head(buf: &[u8]) -> Result<Option<(CgiHead, usize)>, &'static str> {
    let end = find_head_end(buf);
    let Some((head_len, body_start)) = end else {
        return Ok(None);
    };
    let mut h = CgiHead {
        status: 200,
        ..CgiHead::default()
    };
    let mut explicit_status = false;
    for line in buf[..head_len].split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err("a header line without a colon");
        };
        let name =
            std::str::from_utf8(&line[..colon]).map_err(|_| "a header name that is not text")?;
        if name.is_empty() || name.bytes().any(|b| !(b.is_ascii_graphic()) || b == b':') {
            return Err("an invalid header name");
        }
        let value = crate::http::request::trim_ows(&line[colon + 1..]);
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
            explicit_status = true;
            continue;
        }
        if name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or("an invalid Content-Length")?;
            h.content_length = Some(n);
            continue;
        }
        if name.eq_ignore_ascii_case("connection")
            || name.eq_ignore_ascii_case("transfer-encoding")
            || name.eq_ignore_ascii_case("keep-alive")
        {
            // Hop-by-hop: glint frames the response itself.
            continue;
        }
        if name.eq_ignore_ascii_case("location") {
            h.location = Some(value.to_vec());
        }
        h.headers.push((name.to_string(), value.to_vec()));
    }
    if h.location.is_some() && !explicit_status {
        h.status = 302;
    }
    Ok(Some((h, body_start)))
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
mod tests {
    use super::*;

    #[test]
    fn heads() {
        /// status, Content-Length, headers kept, head length
        type Want = Result<Option<(u16, Option<u64>, usize, usize)>, ()>;
        let cases: &[(&str, &[u8], Want)] = &[
            (
                "plain",
                b"Content-Type: text/html\r\n\r\nbody",
                Ok(Some((200, None, 1, 27))),
            ),
            (
                "status and length",
                b"Status: 404 Not Found\r\nContent-Length: 4\r\n\r\nnope",
                Ok(Some((404, Some(4), 0, 44))),
            ),
            (
                "bare LF",
                b"Content-Type: a\n\nx",
                Ok(Some((200, None, 1, 17))),
            ),
            (
                "location means 302",
                b"Location: http://x/\r\n\r\n",
                Ok(Some((302, None, 1, 23))),
            ),
            ("incomplete", b"Content-Type: text/html\r\n", Ok(None)),
            ("no colon", b"garbage\r\n\r\n", Err(())),
            ("bad status", b"Status: abc\r\n\r\n", Err(())),
            (
                "hop-by-hop dropped",
                b"Connection: close\r\nTransfer-Encoding: chunked\r\nX: y\r\n\r\n",
                Ok(Some((200, None, 1, 55))),
            ),
        ];
        for (what, buf, want) in cases {
            let got = parse_head(buf)
                .map(|o| o.map(|(h, n)| (h.status, h.content_length, h.headers.len(), n)))
                .map_err(|_| ());
            assert_eq!(&got, want, "{what}");
        }
    }
}
