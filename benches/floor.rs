//! The floor: the least a server can do to answer a benchmark's requests.
//!
//! One thread, one epoll set (edge-triggered), one `recv` and one `send`
//! per request (with `MSG_MORE` before a close, so that the answer and the
//! FIN leave in one segment): each answer is a canned copy of the bytes a
//! real server sends for the file (status line, the same header fields
//! with fixed values, the body), read from the document root on the first
//! request for a path and kept. A body above 16 KiB is sent from the file
//! kept open, by `sendfile` after the header (the copy it saves is more
//! than the call costs). No parsing beyond the request line and the
//! `Connection` field, no per-request file access, no logging, no timers.
//! Benchmarks run it beside the real servers so that each row shows how far
//! a server is from what the kernel's socket work alone costs on this
//! machine.
//!
//! It depends on nothing but the standard library, so the benchmarks build
//! it in a second: `rustc --edition 2021 -C opt-level=3 -C panic=abort
//! benches/floor.rs -o floor`, then `floor --port 8080 --document-root www`.
//! Loopback benchmarks only: it bounds nothing (no timeouts, no limits).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::raw::{c_int, c_void};
use std::path::{Path, PathBuf};

#[repr(C)]
#[cfg_attr(target_arch = "x86_64", repr(packed))]
#[derive(Clone, Copy)]
struct EpollEvent {
    events: u32,
    data: u64,
}

extern "C" {
    fn epoll_create1(flags: c_int) -> c_int;
    fn epoll_ctl(epfd: c_int, op: c_int, fd: c_int, event: *mut EpollEvent) -> c_int;
    fn epoll_wait(epfd: c_int, events: *mut EpollEvent, max: c_int, timeout: c_int) -> c_int;
    fn accept4(fd: c_int, addr: *mut c_void, len: *mut u32, flags: c_int) -> c_int;
    fn listen(fd: c_int, backlog: c_int) -> c_int;
    fn recv(fd: c_int, buf: *mut c_void, len: usize, flags: c_int) -> isize;
    fn send(fd: c_int, buf: *const c_void, len: usize, flags: c_int) -> isize;
    fn sendfile(out_fd: c_int, in_fd: c_int, offset: *mut i64, count: usize) -> isize;
    fn close(fd: c_int) -> c_int;
}

const EPOLLIN: u32 = 0x1;
const EPOLLOUT: u32 = 0x4;
const EPOLLERR: u32 = 0x8;
const EPOLLHUP: u32 = 0x10;
const EPOLLRDHUP: u32 = 0x2000;
const EPOLLET: u32 = 1 << 31;
const EPOLL_CTL_ADD: c_int = 1;
const EPOLL_CTL_MOD: c_int = 3;
const EPOLL_CLOEXEC: c_int = 0o2000000;
const SOCK_NONBLOCK: c_int = 0o4000;
const SOCK_CLOEXEC: c_int = 0o2000000;
const MSG_NOSIGNAL: c_int = 0x4000;
const MSG_MORE: c_int = 0x8000;
const EAGAIN: i32 = 11;
const EINTR: i32 = 4;
const READ_CHUNK: usize = 4096;
const MAX_CACHED: usize = 1024;
const INLINE_BODY: usize = 16 * 1024;

/// The three answers kept per path: HTTP/1.1 keep-alive (no `Connection`
/// field), HTTP/1.0 keep-alive (`Connection: keep-alive`), and the answer
/// after which the connection closes (`Connection: close`).
const KEEP_11: usize = 0;
const KEEP_10: usize = 1;
const CLOSE: usize = 2;

/// One path's answers: the three heads (with the body when it is small),
/// and the file the body is sent from when it is not.
struct Answer {
    heads: [Vec<u8>; 3],
    file: Option<(File, usize)>,
}

struct Conn {
    inb: Vec<u8>,
    out: Vec<u8>,
    sent: usize,
    /// A body to send from a file after `out`: descriptor, offset, end.
    file: Option<(c_int, i64, i64)>,
    close_after: bool,
    /// Whether the connection is registered for writability too (only once
    /// an answer did not fit the socket's buffer).
    want_out: bool,
}

struct Floor {
    root: PathBuf,
    answers: HashMap<Vec<u8>, Answer>,
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") | Some("htm") => "text/html; charset=utf-8",
        Some("jpg") | Some("jpeg") => "image/jpeg",
        Some("png") => "image/png",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn canned(status: &str, ctype: &str, body: &[u8], len: usize) -> [Vec<u8>; 3] {
    // The header fields glint, lighttpd and nginx send for a static file,
    // with fixed values of the usual lengths.
    let head = format!(
        "HTTP/1.1 {status}\r\nDate: Thu, 03 Dec 2026 15:01:12 GMT\r\nServer: floor/1.0\r\n\
         ETag: \"d0fbc9b8ce04f247\"\r\nLast-Modified: Wed, 02 Dec 2026 20:00:30 GMT\r\n\
         Accept-Ranges: bytes\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n",
        len
    );
    let with = |conn: &str| {
        let mut v = Vec::with_capacity(head.len() + conn.len() + 2 + body.len());
        v.extend_from_slice(head.as_bytes());
        v.extend_from_slice(conn.as_bytes());
        v.extend_from_slice(b"\r\n");
        v.extend_from_slice(body);
        v
    };
    [
        with(""),
        with("Connection: keep-alive\r\n"),
        with("Connection: close\r\n"),
    ]
}

impl Floor {
    fn answer(&mut self, path: &[u8]) -> Option<&Answer> {
        // A connection may be sending from a kept file: nothing is evicted,
        // and a path beyond the first MAX_CACHED closes the connection.
        if !self.answers.contains_key(path) && self.answers.len() < MAX_CACHED {
            let made = self.load(path);
            self.answers.insert(path.to_vec(), made);
        }
        self.answers.get(path)
    }

    fn load(&self, path: &[u8]) -> Answer {
        let not_found = || {
            let body = b"not found\n";
            Answer {
                heads: canned(
                    "404 Not Found",
                    "text/plain; charset=utf-8",
                    body,
                    body.len(),
                ),
                file: None,
            }
        };
        let Ok(rel) = std::str::from_utf8(path) else {
            return not_found();
        };
        if !rel.starts_with('/') || rel.split('/').any(|seg| seg == "..") {
            return not_found();
        }
        let mut file = self.root.join(rel.trim_start_matches('/'));
        if file.is_dir() {
            file.push("index.html");
        }
        let ctype = content_type(&file);
        let len = match std::fs::metadata(&file) {
            Ok(m) => m.len() as usize,
            Err(_) => return not_found(),
        };
        if len > INLINE_BODY {
            return match File::open(&file) {
                Ok(f) => Answer {
                    heads: canned("200 OK", ctype, b"", len),
                    file: Some((f, len)),
                },
                Err(_) => not_found(),
            };
        }
        match std::fs::read(&file) {
            Ok(body) => Answer {
                heads: canned("200 OK", ctype, &body, body.len()),
                file: None,
            },
            Err(_) => not_found(),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether the head carries `Connection: <token>` (case-insensitive).
fn connection_is(head: &[u8], token: &[u8]) -> bool {
    head.split(|&b| b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return false;
        };
        line[..colon].eq_ignore_ascii_case(b"connection")
            && line[colon + 1..]
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
    })
}

/// Answers every complete request head in `c.inb` into `c.out`; a request
/// after which the connection closes, or whose body comes from a file, ends
/// the parsing.
fn answer_requests(floor: &mut Floor, c: &mut Conn) {
    let mut at = 0;
    while !c.close_after && c.file.is_none() {
        let Some(end) = find(&c.inb[at..], b"\r\n\r\n") else {
            break;
        };
        let head = &c.inb[at..at + end + 4];
        at += end + 4;
        let line_end = head.iter().position(|&b| b == b'\r').unwrap_or(head.len());
        let mut parts = head[..line_end].split(|&b| b == b' ');
        let _method = parts.next();
        let target = parts.next().unwrap_or(b"/");
        let version = parts.next().unwrap_or(b"HTTP/1.0");
        let path = match target.iter().position(|&b| b == b'?') {
            Some(q) => &target[..q],
            None => target,
        };
        let variant = if version == b"HTTP/1.1" {
            if connection_is(head, b"close") {
                CLOSE
            } else {
                KEEP_11
            }
        } else if connection_is(head, b"keep-alive") {
            KEEP_10
        } else {
            CLOSE
        };
        c.close_after = variant == CLOSE;
        match floor.answer(path) {
            Some(a) => {
                c.out.extend_from_slice(&a.heads[variant]);
                if let Some((f, len)) = &a.file {
                    c.file = Some((f.as_raw_fd(), 0, *len as i64));
                }
            }
            None => c.close_after = true,
        }
    }
    c.inb.drain(..at);
}

/// Reads what the socket holds; returns false when the peer closed or failed.
fn read_all(fd: c_int, c: &mut Conn) -> bool {
    loop {
        c.inb.reserve(READ_CHUNK);
        let len = c.inb.len();
        let spare = c.inb.capacity() - len;
        // SAFETY: the pointer and length are the vector's spare capacity.
        let n = unsafe { recv(fd, c.inb.as_mut_ptr().add(len).cast(), spare, 0) };
        if n > 0 {
            // SAFETY: recv initialised the n bytes after len.
            unsafe { c.inb.set_len(len + n as usize) };
            if (n as usize) < spare {
                return true;
            }
        } else if n == 0 {
            return false;
        } else {
            match errno() {
                EAGAIN => return true,
                EINTR => continue,
                _ => return false,
            }
        }
    }
}

/// Sends what is queued; returns false when sending failed.
fn flush(ep: c_int, fd: c_int, c: &mut Conn) -> bool {
    // A body from a file, or the close that follows the last answer, goes
    // in the same segment as what is sent now.
    let more = c.close_after || c.file.is_some();
    let flags = MSG_NOSIGNAL | if more { MSG_MORE } else { 0 };
    while c.sent < c.out.len() {
        let rest = &c.out[c.sent..];
        // SAFETY: the pointer and length are the unsent part of the vector.
        let n = unsafe { send(fd, rest.as_ptr().cast(), rest.len(), flags) };
        if n >= 0 {
            c.sent += n as usize;
        } else if !retry(ep, fd, c) {
            return c.want_out;
        }
    }
    c.out.clear();
    c.sent = 0;
    while let Some((file, off, end)) = c.file.as_mut() {
        if *off >= *end {
            c.file = None;
            break;
        }
        // SAFETY: sendfile advances `off`; both descriptors are open.
        let n = unsafe { sendfile(fd, *file, off, (*end - *off) as usize) };
        if n == 0 {
            return false; // the file shrank
        }
        if n < 0 && !retry(ep, fd, c) {
            return c.want_out;
        }
    }
    true
}

/// After a failed send: true to try again at once (EINTR); false to stop,
/// with `c.want_out` set when the socket is full and its writability is
/// being watched (otherwise the connection failed).
fn retry(ep: c_int, fd: c_int, c: &mut Conn) -> bool {
    match errno() {
        EINTR => true,
        EAGAIN if c.want_out => false,
        EAGAIN => {
            let mut ev = EpollEvent {
                events: EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                data: fd as u64,
            };
            // SAFETY: a plain system call on descriptors this process owns.
            c.want_out = unsafe { epoll_ctl(ep, EPOLL_CTL_MOD, fd, &mut ev) } == 0;
            false
        }
        _ => {
            c.want_out = false;
            false
        }
    }
}

fn parse_args() -> Result<(String, u16, PathBuf), String> {
    let mut bind = "127.0.0.1".to_string();
    let mut port = 8080u16;
    let mut root = PathBuf::from("www");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--bind" => bind = v,
            "--port" => port = v.parse().map_err(|e| format!("--port {v}: {e}"))?,
            "--document-root" => root = PathBuf::from(v),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok((bind, port, root))
}

fn main() -> io::Result<()> {
    let (bind, port, root) =
        parse_args().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let listener = std::net::TcpListener::bind((bind.as_str(), port))?;
    listener.set_nonblocking(true)?;
    let lfd = listener.as_raw_fd();
    let mut floor = Floor {
        root,
        answers: HashMap::new(),
    };
    // SAFETY: plain system calls on descriptors this process owns.
    let ep = unsafe { epoll_create1(EPOLL_CLOEXEC) };
    if ep < 0 || unsafe { listen(lfd, 4096) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut ev = EpollEvent {
        events: EPOLLIN,
        data: lfd as u64,
    };
    if unsafe { epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    println!("floor: listening on {bind}:{port}");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = vec![EpollEvent { events: 0, data: 0 }; 256];
    loop {
        let n = unsafe { epoll_wait(ep, events.as_mut_ptr(), events.len() as c_int, -1) };
        if n < 0 {
            if errno() == EINTR {
                continue;
            }
            return Err(io::Error::last_os_error());
        }
        for ev in &events[..n as usize] {
            let (bits, fd) = (ev.events, ev.data as c_int);
            if fd == lfd {
                accept_all(ep, lfd, &mut conns);
                continue;
            }
            let Some(Some(c)) = conns.get_mut(fd as usize) else {
                continue;
            };
            let mut open = true;
            if bits & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR) != 0 {
                open = read_all(fd, c);
            }
            let mut sent_ok = true;
            loop {
                answer_requests(&mut floor, c);
                if c.out.is_empty() && c.file.is_none() {
                    break;
                }
                sent_ok = flush(ep, fd, c);
                // Requests parked behind a body from a file go on once it is out.
                if !sent_ok || !c.out.is_empty() || c.file.is_some() || c.close_after {
                    break;
                }
            }
            let pending = !c.out.is_empty() || c.file.is_some();
            // Open while an answer waits for room, or while the peer may
            // send another request.
            let keep = sent_ok && (pending || (open && !c.close_after));
            if !keep {
                conns[fd as usize] = None;
                unsafe { close(fd) };
            }
        }
    }
}

fn accept_all(ep: c_int, lfd: c_int, conns: &mut Vec<Option<Conn>>) {
    loop {
        let fd = unsafe {
            accept4(
                lfd,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                SOCK_NONBLOCK | SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return;
        }
        let mut ev = EpollEvent {
            events: EPOLLIN | EPOLLRDHUP | EPOLLET,
            data: fd as u64,
        };
        if unsafe { epoll_ctl(ep, EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            unsafe { close(fd) };
            continue;
        }
        let i = fd as usize;
        if conns.len() <= i {
            conns.resize_with(i + 1, || None);
        }
        conns[i] = Some(Conn {
            inb: Vec::with_capacity(READ_CHUNK),
            out: Vec::new(),
            sent: 0,
            file: None,
            close_after: false,
            want_out: false,
        });
    }
}
