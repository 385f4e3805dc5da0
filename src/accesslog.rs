//! The access log: lighttpd's format strings, buffered per destination,
//! flushed once a second and at exit.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::msg::Request;

/// Flush a destination's buffer early once it holds this much.
const FLUSH_AT: usize = 64 * 1024;

/// One piece of a compiled format.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    RemoteHost,
    RemoteUser,
    Time,
    RequestLine,
    Status,
    BodyBytes,
    BytesOut,
    ReqHeader(String),
    Method,
    UrlPath,
    Query,
    Protocol,
    Host,
    ServerPort,
    TimeUs,
    TimeS,
}

/// A compiled `accesslog.format`.
#[derive(Debug, Clone, PartialEq)]
pub struct Format(Vec<Piece>);

impl Format {
    /// Compiles a format string; unknown tokens are logged and print `-`.
    pub fn parse(f: &str) -> Format {
        let mut out = Vec::new();
        let mut lit = String::new();
        let mut chars = f.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                lit.push(c);
                continue;
            }
            let mut arg = None;
            if chars.peek() == Some(&'{') {
                chars.next();
                let mut a = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    a.push(c);
                }
                arg = Some(a);
            }
            if chars.peek() == Some(&'>') || chars.peek() == Some(&'<') {
                chars.next();
            }
            let Some(t) = chars.next() else { break };
            let piece = match (t, arg) {
                ('%', _) => {
                    lit.push('%');
                    continue;
                }
                ('h' | 'a', _) => Piece::RemoteHost,
                ('u' | 'l', _) => Piece::RemoteUser,
                ('t', _) => Piece::Time,
                ('r', _) => Piece::RequestLine,
                ('s', _) => Piece::Status,
                ('b', _) => Piece::BodyBytes,
                ('O', _) => Piece::BytesOut,
                ('i', Some(h)) => Piece::ReqHeader(h),
                ('m', _) => Piece::Method,
                ('U', _) => Piece::UrlPath,
                ('q', _) => Piece::Query,
                ('H', _) => Piece::Protocol,
                ('V' | 'v', _) => Piece::Host,
                ('p', _) => Piece::ServerPort,
                ('D', _) => Piece::TimeUs,
                ('T', _) => Piece::TimeS,
                (other, _) => {
                    log::warn!("accesslog.format: %{other} is not supported; logged as -");
                    Piece::Lit("-".into())
                }
            };
            if !lit.is_empty() {
                out.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            out.push(piece);
        }
        if !lit.is_empty() {
            out.push(Piece::Lit(lit));
        }
        Format(out)
    }
}

/// What one log line says about one request.
pub struct Entry<'a> {
    pub remote: Option<IpAddr>,
    /// `[30/Nov/2026:10:45:42 +0000]`, formatted once a second.
    pub time: &'a str,
    pub request: Option<&'a Request<'a, 'a>>,
    /// The raw request line when the request could not be parsed.
    pub raw_line: &'a [u8],
    pub status: u16,
    pub body_bytes: u64,
    pub head_bytes: u64,
    pub server_port: u16,
    pub elapsed_us: u64,
    /// The user mod_auth let in (`%u`), if any.
    pub remote_user: Option<&'a str>,
    /// `accesslog.escaping`.
    pub escaping: Escaping,
}

/// `accesslog.escaping`: how bytes a client chose are written, as
/// lighttpd 1.4.69 writes them: `"` and `\\` with a backslash, the
/// whitespace controls as `\\t`, `\\n`, ..., other bytes outside printable
/// ASCII as `\\xHH` ("default") or, in JSON strings, controls as `\\u00HH`
/// and bytes from 0x7f up as they are ("json").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Escaping {
    #[default]
    Default,
    Json,
}

fn push_escaped(out: &mut Vec<u8>, v: &[u8], esc: Escaping) {
    for &b in v {
        let plain = match esc {
            Escaping::Default => (0x20..0x7f).contains(&b),
            Escaping::Json => b >= 0x20,
        };
        if plain && b != b'"' && b != b'\\' {
            out.push(b);
            continue;
        }
        let short = match b {
            0x07 => b'a',
            0x08 => b'b',
            b'\t' => b't',
            b'\n' => b'n',
            0x0b => b'v',
            0x0c => b'f',
            b'\r' => b'r',
            b'"' | b'\\' => b,
            _ => 0,
        };
        if short != 0 {
            out.extend_from_slice(&[b'\\', short]);
        } else {
            out.extend_from_slice(match esc {
                Escaping::Default => b"\\x",
                Escaping::Json => b"\\u00",
            });
            out.extend_from_slice(&crate::syntax::hex_pair(b, crate::syntax::HEX_UPPER));
        }
    }
}

fn push_or_dash(out: &mut Vec<u8>, v: &[u8], esc: Escaping) {
    if v.is_empty() {
        out.push(b'-');
    } else {
        push_escaped(out, v, esc);
    }
}

impl Format {
    /// Appends one line for `e` to `out`.
    pub fn write(&self, e: &Entry<'_>, out: &mut Vec<u8>) {
        let esc = e.escaping;
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Piece::RemoteHost => match e.remote {
                    Some(ip) => {
                        let _ = write!(out, "{ip}");
                    }
                    None => out.push(b'-'),
                },
                Piece::RemoteUser => match e.remote_user {
                    Some(u) if !u.is_empty() => push_escaped(out, u.as_bytes(), esc),
                    _ => out.push(b'-'),
                },
                Piece::Time => out.extend_from_slice(e.time.as_bytes()),
                Piece::RequestLine => match e.request {
                    // Answered as HTTP/1.0 (`server.protocol-http11 =
                    // "disable"`): the line says so, as lighttpd's does.
                    Some(r)
                        if r.major == 1
                            && r.minor == 0
                            && r.request_line.ends_with(b" HTTP/1.1") =>
                    {
                        let line = &r.request_line[..r.request_line.len() - 8];
                        push_escaped(out, line, esc);
                        out.extend_from_slice(b"HTTP/1.0");
                    }
                    Some(r) => push_escaped(out, r.request_line, esc),
                    None => push_escaped(out, e.raw_line, esc),
                },
                Piece::Status => {
                    let _ = write!(out, "{}", e.status);
                }
                Piece::BodyBytes => {
                    if e.body_bytes == 0 {
                        out.push(b'-');
                    } else {
                        let _ = write!(out, "{}", e.body_bytes);
                    }
                }
                Piece::BytesOut => {
                    let _ = write!(out, "{}", e.body_bytes + e.head_bytes);
                }
                Piece::ReqHeader(h) => {
                    push_or_dash(out, e.request.and_then(|r| r.header(h)).unwrap_or(b""), esc)
                }
                Piece::Method => push_or_dash(
                    out,
                    e.request.map(|r| r.method_str.as_bytes()).unwrap_or(b""),
                    esc,
                ),
                Piece::UrlPath => push_or_dash(
                    out,
                    e.request.map(|r| r.path().as_bytes()).unwrap_or(b""),
                    esc,
                ),
                Piece::Query => push_or_dash(
                    out,
                    e.request.map(|r| r.query().as_bytes()).unwrap_or(b""),
                    esc,
                ),
                Piece::Protocol => out.extend_from_slice(match e.request {
                    Some(r) => r.protocol().as_bytes(),
                    None => b"-",
                }),
                Piece::Host => push_or_dash(out, e.request.map(|r| r.host).unwrap_or(b""), esc),
                Piece::ServerPort => {
                    let _ = write!(out, "{}", e.server_port);
                }
                Piece::TimeUs => {
                    let _ = write!(out, "{}", e.elapsed_us);
                }
                Piece::TimeS => {
                    let _ = write!(out, "{}", e.elapsed_us / 1_000_000);
                }
            }
        }
        out.push(b'\n');
    }
}

/// Where lines go.
enum Sink {
    File(File),
    Pipe(Child, ChildStdin),
    Stderr,
}

/// One destination with its buffer.
struct Destination {
    sink: Sink,
    buf: Vec<u8>,
}

impl Destination {
    fn open(name: &str) -> io::Result<Destination> {
        let sink = if let Some(cmd) = name.strip_prefix('|') {
            let mut child = Command::new("/bin/sh")
                .arg("-c")
                .arg(cmd)
                .stdin(Stdio::piped())
                .spawn()?;
            let stdin = child
                .stdin
                .take()
                .ok_or_else(|| io::Error::other("no stdin for the access log pipe"))?;
            Sink::Pipe(child, stdin)
        } else if name == "/dev/stderr" || name.is_empty() {
            Sink::Stderr
        } else {
            Sink::File(OpenOptions::new().append(true).create(true).open(name)?)
        };
        Ok(Destination {
            sink,
            buf: Vec::with_capacity(4096),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = match &mut self.sink {
            Sink::File(f) => f.write_all(&self.buf),
            Sink::Pipe(_, p) => p.write_all(&self.buf),
            Sink::Stderr => io::stderr().write_all(&self.buf),
        };
        self.buf.clear();
        r
    }
}

impl Drop for Destination {
    fn drop(&mut self) {
        let _ = self.flush();
        if let Sink::Pipe(child, stdin) = std::mem::replace(&mut self.sink, Sink::Stderr) {
            drop(stdin);
            let mut child = child;
            let _ = child.wait();
        }
    }
}

/// All access log destinations, opened on first use, keyed by `accesslog.filename`.
#[derive(Default)]
pub struct AccessLogs {
    dests: HashMap<String, Destination>,
    formats: HashMap<String, Format>,
    /// Names that failed to open: logged once, not retried until reopen.
    failed: Vec<String>,
    /// The system log (`accesslog.use-syslog`), once a line went there.
    syslog: Option<crate::syslog::Syslog>,
    /// A line for the system log, reused.
    line: Vec<u8>,
}

impl AccessLogs {
    /// Opens `name` now, so that start-up can report a log that cannot be opened.
    pub fn open(&mut self, name: &str) -> io::Result<()> {
        if !self.dests.contains_key(name) {
            self.dests
                .insert(name.to_string(), Destination::open(name)?);
        }
        Ok(())
    }

    /// Appends one line to `name` in `format`.
    pub fn log(&mut self, name: &str, format: &str, e: &Entry<'_>) {
        if !self.dests.contains_key(name) {
            if self.failed.iter().any(|f| f == name) {
                return;
            }
            if let Err(err) = self.open(name) {
                log::error!("cannot open access log {name}: {err}");
                self.failed.push(name.to_string());
                return;
            }
        }
        if !self.formats.contains_key(format) {
            self.formats
                .insert(format.to_string(), Format::parse(format));
        }
        let (Some(dest), Some(fmt)) = (self.dests.get_mut(name), self.formats.get(format)) else {
            return;
        };
        fmt.write(e, &mut dest.buf);
        if dest.buf.len() >= FLUSH_AT {
            if let Err(err) = dest.flush() {
                log::error!("writing access log {name}: {err}");
            }
        }
    }

    /// Sends one line for `e` in `format` to the system log at `level`
    /// (`accesslog.use-syslog`); the first opens the log under `facility`.
    pub fn log_syslog(&mut self, facility: u8, level: u8, format: &str, e: &Entry<'_>) {
        if self.syslog.is_none() {
            match crate::syslog::Syslog::open(facility) {
                Ok(s) => self.syslog = Some(s),
                Err(err) => {
                    if !self.failed.iter().any(|f| f.is_empty()) {
                        log::error!("cannot open the system log for the access log: {err}");
                        // (The empty name stands for the system log.)
                        self.failed.push(String::new());
                    }
                    return;
                }
            }
        }
        if !self.formats.contains_key(format) {
            self.formats
                .insert(format.to_string(), Format::parse(format));
        }
        let (Some(s), Some(fmt)) = (self.syslog.as_ref(), self.formats.get(format)) else {
            return;
        };
        self.line.clear();
        fmt.write(e, &mut self.line);
        s.send(level, &self.line);
    }

    /// Writes every buffer out (each tick, and at exit).
    pub fn flush(&mut self) {
        for (name, d) in self.dests.iter_mut() {
            if let Err(err) = d.flush() {
                log::error!("writing access log {name}: {err}");
            }
        }
    }

    /// Flushes and closes every file so the next line opens it anew (SIGHUP, after logrotate).
    pub fn reopen(&mut self) {
        self.flush();
        self.dests.retain(|_, d| matches!(d.sink, Sink::Pipe(..)));
        self.failed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::MAX_HEADERS;
    use crate::proto::h1::parse;

    #[test]
    fn escaping_default_and_json() {
        let raw = b"a\"b\\c\td\x01\xe9";
        let mut d = Vec::new();
        push_escaped(&mut d, raw, Escaping::Default);
        assert_eq!(d, b"a\\\"b\\\\c\\td\\x01\\xE9");
        let mut j = Vec::new();
        push_escaped(&mut j, raw, Escaping::Json);
        assert_eq!(j, b"a\\\"b\\\\c\\td\\u0001\xe9");
    }

    #[test]
    fn default_format_line() {
        let buf =
            b"GET /index.html?x=1 HTTP/1.1\r\nHost: example.org\r\nUser-Agent: ab \"q\"\r\n\r\n";
        let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let req = parse(buf, &mut hs, 8192).unwrap().unwrap();
        let e = Entry {
            remote: Some("127.0.0.1".parse().unwrap()),
            time: "[06/Nov/1994:08:49:37 +0000]",
            request: Some(&req),
            raw_line: b"",
            status: 200,
            body_bytes: 469,
            head_bytes: 200,
            server_port: 80,
            elapsed_us: 12,
            remote_user: Some("alice"),
            escaping: Escaping::Default,
        };
        let mut out = Vec::new();
        Format::parse(crate::config::DEFAULT_ACCESSLOG_FORMAT).write(&e, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "127.0.0.1 example.org alice [06/Nov/1994:08:49:37 +0000] \"GET /index.html?x=1 HTTP/1.1\" 200 469 \"-\" \"ab \\\"q\\\"\"\n"
        );
    }

    #[test]
    fn other_tokens() {
        let f = Format::parse("%m %U %q %H %% %D %O");
        let buf = b"HEAD /a?b HTTP/1.0\r\n\r\n";
        let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let req = parse(buf, &mut hs, 8192).unwrap().unwrap();
        let e = Entry {
            remote: None,
            time: "",
            request: Some(&req),
            raw_line: b"",
            status: 200,
            body_bytes: 0,
            head_bytes: 100,
            server_port: 80,
            elapsed_us: 7,
            remote_user: None,
            escaping: Escaping::Default,
        };
        let mut out = Vec::new();
        f.write(&e, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HEAD /a b HTTP/1.0 % 7 100\n"
        );
    }
}
