//! Every answer reaches its client whole. A matrix of request shapes (a
//! GET; a POST with a 5 MB body the server never reads, framed by
//! Content-Length or chunked; each with keep-alive, `Connection: close`
//! or HTTP/1.0) against answer kinds (a static file, 401 from
//! `auth.require`, 403 from `url.access-deny`, 404, a directory's 301,
//! 413 from `server.max-request-size`, FastCGI, SCGI and proxy routes to
//! a backend that refuses connections, with the default `disable-time`
//! and with `"disable-time" => 0`). For each cell one thread keeps
//! sending the body while another reads; the cell passes only when the
//! reader has the whole answer: its status and every body byte its
//! framing announces, before any reset.
//!
//! The same over HTTP/2 (h2c, `tests/h2/h2client.py whole`): a GET, and a
//! POST of 5 MB with a content-length or without one, the body sent as the
//! windows allow while the answer is read to its END_STREAM.
//!
//! `GLINT_BLACKBOX_SERVER=lighttpd cargo test --test answers_whole` runs
//! the same matrices against lighttpd (Debian's 1.4.69). It passes all 96
//! HTTP/1 cells; over HTTP/2 every answer arrives whole, but a POST without
//! a content-length gets 411 whatever the URL (12 of the 36 cells).

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The unread body: larger than any socket buffer pair on loopback (about
/// 2.5 MB with Linux's defaults), so the server must do something with it
/// before the client's last write can complete.
const BODY: usize = 5 * 1024 * 1024;

/// The static file: several TCP segments, more than one write's worth of
/// an initial congestion window.
const FILE: usize = 30 * 1024;

/// How long one cell may take. A whole answer on loopback takes
/// milliseconds; the bound turns a hang into a failure, not into a stuck run.
const CELL_DEADLINE: Duration = Duration::from_secs(8);

/// Cells run at once: the machine's 2 cores stay busy without each cell's
/// 5 MB waiting behind the others'.
const PARALLEL: usize = 6;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Body {
    None,
    Length,
    Chunked,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Persist {
    KeepAlive,
    Close,
    Http10,
}

#[derive(Clone, Copy, Debug)]
struct Shape {
    body: Body,
    persist: Persist,
}

impl Shape {
    fn name(&self) -> String {
        let body = match self.body {
            Body::None => "GET",
            Body::Length => "POST 5 MB (length)",
            Body::Chunked => "POST 5 MB (chunked)",
        };
        let persist = match self.persist {
            Persist::KeepAlive => "keep-alive",
            Persist::Close => "Connection: close",
            Persist::Http10 => "HTTP/1.0",
        };
        format!("{body}, {persist}")
    }

    fn head(&self, path: &str) -> Vec<u8> {
        let method = if self.body == Body::None {
            "GET"
        } else {
            "POST"
        };
        let version = if self.persist == Persist::Http10 {
            "1.0"
        } else {
            "1.1"
        };
        let mut h = format!("{method} {path} HTTP/{version}\r\nHost: matrix\r\n");
        match self.body {
            Body::None => {}
            Body::Length => h += &format!("Content-Length: {BODY}\r\n"),
            Body::Chunked => h += "Transfer-Encoding: chunked\r\n",
        }
        if self.persist == Persist::Close {
            h += "Connection: close\r\n";
        }
        h += "\r\n";
        h.into_bytes()
    }
}

/// Every shape: the bodies with each kind of persistence, except a chunked
/// body on HTTP/1.0, which has no chunked coding (RFC 9112 6.1).
fn shapes() -> Vec<Shape> {
    let mut v = Vec::new();
    for body in [Body::None, Body::Length, Body::Chunked] {
        for persist in [Persist::KeepAlive, Persist::Close, Persist::Http10] {
            if body == Body::Chunked && persist == Persist::Http10 {
                continue;
            }
            v.push(Shape { body, persist });
        }
    }
    v
}

/// What an answer kind must be answered with.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// This status, whatever the body.
    Status(u16),
    /// 200 with the static file's bytes.
    File,
    /// 301 to the directory with its slash.
    Redirect,
    /// 413 for a body whose Content-Length is over the limit; the file
    /// for a GET, and for a chunked body, whose size only reading would
    /// tell (a static file reads none of it; lighttpd answers so too).
    FileOr413,
    /// A backend refusing connections: 503, as lighttpd answers it.
    Dead,
}

struct Answer {
    name: &'static str,
    path: &'static str,
    want: Want,
}

const KINDS: &[Answer] = &[
    Answer {
        name: "static file",
        path: "/f.bin",
        want: Want::File,
    },
    Answer {
        name: "401 auth.require",
        path: "/auth/f.bin",
        want: Want::Status(401),
    },
    Answer {
        name: "403 url.access-deny",
        path: "/f.deny",
        want: Want::Status(403),
    },
    Answer {
        name: "404",
        path: "/missing.bin",
        want: Want::Status(404),
    },
    Answer {
        name: "301 directory",
        path: "/dir",
        want: Want::Redirect,
    },
    Answer {
        name: "413 max-request-size",
        path: "/small/f.bin",
        want: Want::FileOr413,
    },
    Answer {
        name: "FastCGI, dead backend",
        path: "/fcgi/x",
        want: Want::Dead,
    },
    Answer {
        name: "FastCGI, dead backend, disable-time 0",
        path: "/fcgi0/x",
        want: Want::Dead,
    },
    Answer {
        name: "SCGI, dead backend",
        path: "/scgi/x",
        want: Want::Dead,
    },
    Answer {
        name: "SCGI, dead backend, disable-time 0",
        path: "/scgi0/x",
        want: Want::Dead,
    },
    Answer {
        name: "proxy, dead backend",
        path: "/proxy/x",
        want: Want::Dead,
    },
    Answer {
        name: "proxy, dead backend, disable-time 0",
        path: "/proxy0/x",
        want: Want::Dead,
    },
];

/// The fixture: the files, the user file, and the configuration (both
/// servers read it) with its dead backends.
struct Fixture {
    d: Docroot,
    file: Vec<u8>,
    conf: String,
    _dead: Vec<OwnedFd>,
}

fn fixture() -> Fixture {
    let d = Docroot::new();
    let file = pseudo_random(FILE, 24);
    d.file("f.bin", &file)
        .file("auth/f.bin", &file)
        .file("small/f.bin", &file)
        .file("f.deny", b"denied\n")
        .file("dir/index.html", b"index\n");
    let users = d.base.join("users");
    std::fs::write(&users, "alice:secret\n").expect("users");
    let mut dead = Vec::new();
    let mut port = || {
        let (fd, p) = refusing_port();
        dead.push(fd);
        p
    };
    let gw = |prefix: &str, port: u16, extra: &str| {
        format!(
            "\"/{prefix}/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {port}, \
             \"check-local\" => \"disable\"{extra} ) )"
        )
    };
    let zero = ", \"disable-time\" => 0";
    let conf = format!(
        "server.document-root = \"{root}\"\n\
         server.bind = \"127.0.0.1\"\n\
         server.port = {{port}}\n\
         {{errorlog}}\n\
         server.modules = ( \"mod_access\", \"mod_auth\", \"mod_authn_file\", \
           \"mod_fastcgi\", \"mod_scgi\", \"mod_proxy\" )\n\
         index-file.names = ( \"index.html\" )\n\
         url.access-deny = ( \".deny\" )\n\
         auth.backend = \"plain\"\n\
         auth.backend.plain.userfile = \"{users}\"\n\
         auth.require = ( \"/auth/\" => ( \"method\" => \"basic\", \"realm\" => \"matrix\", \
           \"require\" => \"valid-user\" ) )\n\
         $HTTP[\"url\"] =~ \"^/small/\" {{\n  server.max-request-size = 1\n}}\n\
         fastcgi.server = ( {f}, {f0} )\n\
         scgi.server = ( {s}, {s0} )\n\
         proxy.server = ( {p}, {p0} )\n",
        root = d.root.display(),
        users = users.display(),
        f = gw("fcgi", port(), ""),
        f0 = gw("fcgi0", port(), zero),
        s = gw("scgi", port(), ""),
        s0 = gw("scgi0", port(), zero),
        p = gw("proxy", port(), "").replace(", \"check-local\" => \"disable\"", ""),
        p0 = gw("proxy0", port(), zero).replace(", \"check-local\" => \"disable\"", ""),
    );
    Fixture {
        d,
        file,
        conf,
        _dead: dead,
    }
}

/// Sends the body of `shape` on `s` until it is sent or a write fails
/// (the server closed, or the reader shut the socket once it had its answer).
fn send_body(mut s: TcpStream, shape: Shape) {
    let piece = vec![b'u'; 64 * 1024];
    let mut left = BODY;
    while left > 0 {
        let n = left.min(piece.len());
        let ok = match shape.body {
            Body::None => return,
            Body::Length => s.write_all(&piece[..n]),
            Body::Chunked => s
                .write_all(format!("{n:x}\r\n").as_bytes())
                .and_then(|()| s.write_all(&piece[..n]))
                .and_then(|()| s.write_all(b"\r\n")),
        };
        if ok.is_err() {
            return;
        }
        left -= n;
    }
    if shape.body == Body::Chunked {
        let _ = s.write_all(b"0\r\n\r\n");
    }
}

/// Reads from `s` until `buf` holds one whole answer, the connection ends,
/// or the deadline passes.
fn read_answer(s: &mut TcpStream, deadline: Instant) -> Result<Response, String> {
    let mut buf = Vec::new();
    let mut tmp = vec![0u8; 64 * 1024];
    let mut eof = false;
    loop {
        match parse_response(&buf, false, eof) {
            Parsed::Complete(r, _) => return Ok(r),
            Parsed::Invalid(why) => return Err(format!("unparseable answer ({why})")),
            Parsed::Incomplete if eof => {
                return Err(format!(
                    "the connection ended after {} bytes of the answer: {:?}",
                    buf.len(),
                    show(&buf[..buf.len().min(200)])
                ))
            }
            Parsed::Incomplete => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "no whole answer in {CELL_DEADLINE:?}: {} bytes: {:?}",
                buf.len(),
                show(&buf[..buf.len().min(200)])
            ));
        }
        s.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        match s.read(&mut tmp) {
            Ok(0) => eof = true,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => {
                return Err(format!(
                    "{e} after {} bytes of the answer: {:?}",
                    buf.len(),
                    show(&buf[..buf.len().min(200)])
                ))
            }
        }
    }
}

/// Whether `r` is what `kind` must answer to `shape`.
fn check(r: &Response, kind: &Answer, shape: Shape, file: &[u8]) -> Result<(), String> {
    let ok = match kind.want {
        Want::Status(st) => r.status == st,
        Want::File => r.status == 200 && r.body == file,
        Want::FileOr413 if shape.body == Body::Length => r.status == 413,
        Want::FileOr413 => r.status == 200 && r.body == file,
        Want::Redirect => {
            r.status == 301 && r.header("location").is_some_and(|l| l.ends_with("/dir/"))
        }
        Want::Dead => r.status == 503,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "not the answer wanted ({:?}): {}",
            kind.want,
            r.describe()
        ))
    }
}

/// One cell: a connection, the head, a thread sending the body, and the
/// answer read whole on this one.
fn cell(addr: SocketAddr, kind: &Answer, shape: Shape, file: &[u8]) -> Result<(), String> {
    let start = Instant::now();
    let mut s = connect_tcp(addr).map_err(|e| format!("connect: {e}"))?;
    s.write_all(&shape.head(kind.path))
        .map_err(|e| format!("head: {e}"))?;
    let sender = s.try_clone().map_err(|e| format!("clone: {e}"))?;
    sender
        .set_write_timeout(Some(CELL_DEADLINE))
        .map_err(|e| e.to_string())?;
    let got = std::thread::scope(|sc| {
        let t = sc.spawn(move || send_body(sender, shape));
        let got = read_answer(&mut s, start + CELL_DEADLINE);
        // The answer is in (or will not come): stop the sender.
        let _ = s.shutdown(Shutdown::Both);
        let _ = t.join();
        got
    })?;
    check(&got, kind, shape, file)
}

#[test]
fn every_answer_arrives_whole_while_the_client_still_sends() {
    let fx = fixture();
    let s = Server::start_config(&fx.conf);
    let cells: Vec<(&Answer, Shape)> = KINDS
        .iter()
        .flat_map(|k| shapes().into_iter().map(move |sh| (k, sh)))
        .collect();
    let next = AtomicUsize::new(0);
    let fails = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..PARALLEL {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(kind, shape)) = cells.get(i) else {
                    break;
                };
                if let Err(e) = cell(s.addr(), kind, shape, &fx.file) {
                    let mut f = fails.lock().unwrap_or_else(|e| e.into_inner());
                    f.push(format!("{} × {}: {e}", kind.name, shape.name()));
                }
            });
        }
    });
    let mut fails = fails.into_inner().unwrap_or_else(|e| e.into_inner());
    fails.sort();
    eprintln!(
        "{:?}: {} cells in {:.2?}, {} failed",
        s.kind,
        cells.len(),
        started.elapsed(),
        fails.len()
    );
    assert!(
        fails.is_empty(),
        "{} of {} cells lost their answer:\n{}\n{}",
        fails.len(),
        cells.len(),
        fails.join("\n"),
        s.stderr_tail()
    );
    drop(fx.d);
}

/// A connection whose answer closes it while its chunked body is unread:
/// the answer read whole, then the socket, still open for writing.
fn lingering(s: &Server) -> TcpStream {
    let mut c = connect_tcp(s.addr()).expect("connect");
    c.write_all(
        b"POST /f.bin HTTP/1.1\r\nHost: matrix\r\nTransfer-Encoding: chunked\r\n\
          Connection: close\r\n\r\n4\r\nbody\r\n",
    )
    .expect("head");
    let r = read_answer(&mut c, Instant::now() + CELL_DEADLINE).expect("the answer");
    assert_eq!(r.status, 200, "{}", r.describe());
    c
}

/// Writes `piece` until a write fails or `max` bytes went; returns the bytes written.
fn write_until_refused(c: &mut TcpStream, piece: &[u8], max: usize, pause: Duration) -> usize {
    let mut sent = 0;
    while sent < max {
        if c.write_all(piece).is_err() {
            break;
        }
        sent += piece.len();
        if !pause.is_zero() {
            // The point is a client that keeps sending slowly: there is no
            // condition to wait for between its bytes.
            std::thread::sleep(pause);
        }
    }
    sent
}

#[test]
fn a_lingering_close_reads_a_bounded_number_of_bytes() {
    if server_kind() == Kind::Lighttpd {
        // lighttpd bounds its linger by time alone.
        return;
    }
    let fx = fixture();
    let s = Server::start_config(&fx.conf);
    let mut c = lingering(&s);
    // glint drops 16 MiB (LINGER_MAX_BYTES) and then closes; the socket
    // buffers on both sides hold a few MiB more before a write fails.
    const MAX: usize = 64 * 1024 * 1024;
    c.set_write_timeout(Some(CELL_DEADLINE)).expect("timeout");
    let sent = write_until_refused(&mut c, &[b'x'; 64 * 1024], MAX, Duration::ZERO);
    assert!(
        sent < MAX,
        "glint read {MAX} bytes of a closed request and still reads"
    );
    assert!(sent >= 16 * 1024 * 1024, "closed after {sent} bytes");
}

#[test]
fn a_lingering_close_ends_within_its_time() {
    let fx = fixture();
    let s = Server::start_config(&fx.conf);
    let mut c = lingering(&s);
    let began = Instant::now();
    // A byte every 100 ms: as slow a client as any, never done. glint and
    // lighttpd linger 5 s, checked on their one-second tick.
    let sent = write_until_refused(&mut c, b"x", 200, Duration::from_millis(100));
    let took = began.elapsed();
    assert!(
        sent < 200,
        "the server still read after {took:.1?} ({sent} bytes)"
    );
}

/// The HTTP/2 shapes: a GET, and a POST of [`BODY`] bytes with a
/// content-length or without one (DATA until END_STREAM); as
/// `h2client.py whole` names them.
const H2_SHAPES: [(&str, &str); 3] = [
    ("GET", "0:length"),
    ("POST", "5242880:length"),
    ("POST", "5242880:stream"),
];

/// The MD5 of `data` in hex, as h2client.py reports a body's.
fn md5_hex(data: &[u8]) -> String {
    use std::process::{Command, Stdio};
    let mut p = Command::new("python3")
        .args([
            "-c",
            "import hashlib,sys; print(hashlib.md5(sys.stdin.buffer.read()).hexdigest())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    p.stdin
        .take()
        .expect("stdin")
        .write_all(data)
        .expect("md5 input");
    let out = p.wait_with_output().expect("python3");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn every_answer_arrives_whole_over_http2_while_the_client_still_sends() {
    assert_eq!(BODY, 5_242_880, "H2_SHAPES name the body's size");
    let fx = fixture();
    let s = Server::start_config(&fx.conf);
    let file_md5 = md5_hex(&fx.file);
    let mut cells = Vec::new();
    let mut args = Vec::new();
    for kind in KINDS {
        for (method, rest) in H2_SHAPES {
            args.push(format!("{method}:{}:{rest}", kind.path));
            cells.push((kind, method, rest));
        }
    }
    let mut argv = vec!["whole"];
    argv.extend(args.iter().map(String::as_str));
    let facts = h2client(s.port, &argv);
    let fact = |i: usize, k: &str| common::fact(&facts, &format!("cell.{i}.{k}")).to_string();
    let mut fails = Vec::new();
    for (i, (kind, method, rest)) in cells.iter().enumerate() {
        let status: u16 = fact(i, "status").parse().unwrap_or(0);
        let with_length = *method == "POST" && rest.ends_with(":length");
        let ok = fact(i, "ended") == "true"
            && match kind.want {
                Want::Status(st) => status == st,
                Want::File => status == 200 && fact(i, "md5") == file_md5,
                Want::FileOr413 if with_length => status == 413,
                Want::FileOr413 => status == 200 && fact(i, "md5") == file_md5,
                Want::Redirect => status == 301,
                Want::Dead => status == 503,
            };
        if !ok {
            let prefix = format!("cell.{i}.");
            let cell: Vec<_> = facts
                .iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .collect();
            fails.push(format!("{} × {method} {rest}: {cell:?}", kind.name));
        }
    }
    eprintln!(
        "{:?} over h2c: {} cells, {} failed",
        s.kind,
        cells.len(),
        fails.len()
    );
    assert!(
        fails.is_empty(),
        "{} of {} cells lost their answer:\n{}\n{}",
        fails.len(),
        cells.len(),
        fails.join("\n"),
        s.stderr_tail()
    );
}
