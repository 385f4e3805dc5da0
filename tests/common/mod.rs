//! Black-box harness for glint's HTTP conformance tests.
//!
//! Only `std` is used. The pieces:
//! * [`Docroot`]: a temporary directory `<tmp>/glint-bb-<pid>-<n>-<nanos>/` holding
//!   `www/` (the document root) and `secret.txt` *outside* it, removed on drop.
//! * [`Server`]: starts the server under test and kills it on drop. Which server:
//!   - default: the glint binary built with the tests (`CARGO_BIN_EXE_glint`);
//!   - `GLINT_BIN=/path/to/glint`: another glint binary (e.g. /work/main's);
//!   - `GLINT_BLACKBOX_SERVER=lighttpd`: lighttpd with a generated minimal config,
//!     used to sanity-check the expectations against a reference implementation.
//! * [`Conn`]: a raw TCP connection with a read buffer and a deadline on every read;
//!   [`Conn::read_response`] reads exactly one response off a keep-alive stream.
//! * [`parse_response`]: status, headers (in order, as sent), body; the body is framed
//!   by HEAD/1xx/204/304 (none), `Transfer-Encoding: chunked`, `Content-Length`, or
//!   connection close, in that order.
//! * [`Case`]: one row of a table (request bytes, accepted statuses, header and body
//!   expectations, whether the connection must close) and [`run_cases`], which runs
//!   every row on a fresh connection and panics once with *all* failures.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Upper bound for any single wait on the server.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Content of the file placed just outside the document root.
pub const SECRET: &str = "TOPSECRET-7f3a9-outside-docroot";

/// mtime given to the fixture files: Thu, 02 Jan 2020 03:04:05 GMT.
pub const MTIME_EPOCH: u64 = 1_577_934_245;
pub const MTIME_HTTP: &str = "Thu, 02 Jan 2020 03:04:05 GMT";

// ---------------------------------------------------------------------------
// Temporary document root
// ---------------------------------------------------------------------------

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct Docroot {
    /// `<tmp>/glint-bb-...`: contains `www/` and `secret.txt`.
    pub base: PathBuf,
    /// The document root handed to the server.
    pub root: PathBuf,
}

impl Docroot {
    pub fn new() -> Docroot {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let base =
            std::env::temp_dir().join(format!("glint-bb-{}-{}-{}", std::process::id(), n, nanos));
        let root = base.join("www");
        std::fs::create_dir_all(&root).expect("create docroot");
        let d = Docroot { base, root };
        std::fs::write(d.base.join("secret.txt"), SECRET).unwrap();
        d
    }

    /// Path of `rel` (relative, `/`-separated) inside the document root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Writes a file (creating parent directories) and sets its mtime to [`MTIME_EPOCH`].
    pub fn file(&self, rel: &str, content: &[u8]) -> &Self {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_secs(MTIME_EPOCH))
            .unwrap();
        self
    }

    pub fn dir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.path(rel)).unwrap();
        self
    }
}

impl Drop for Docroot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Deterministic pseudo-random bytes (xorshift64*), so misplaced bytes are detected.
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

// ---------------------------------------------------------------------------
// Server under test
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Glint,
    Lighttpd,
}

pub fn server_kind() -> Kind {
    match std::env::var("GLINT_BLACKBOX_SERVER").as_deref() {
        Ok("lighttpd") => Kind::Lighttpd,
        _ => Kind::Glint,
    }
}

pub struct Server {
    child: Child,
    pub port: u16,
    pub kind: Kind,
    /// Everything the server wrote on stderr so far (drained by a thread).
    pub stderr: Arc<Mutex<Vec<String>>>,
    _conf_dir: Option<Docroot>,
}

impl Server {
    pub fn start(root: &Docroot) -> Server {
        Server::start_with(root, &[])
    }

    /// `extra`: additional glint flags, e.g. `["--max-connections", "10"]`
    /// (for lighttpd only `--max-connections` is translated).
    pub fn start_with(root: &Docroot, extra: &[&str]) -> Server {
        match server_kind() {
            Kind::Glint => Server::start_glint(root, extra),
            Kind::Lighttpd => Server::start_lighttpd(root, extra),
        }
    }

    fn start_glint(root: &Docroot, extra: &[&str]) -> Server {
        let bin =
            std::env::var("GLINT_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_glint").to_string());
        let mut child = Command::new(&bin)
            .arg("-D")
            .arg("--document-root")
            .arg(&root.root)
            .args(["--bind", "127.0.0.1", "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let (tx, rx) = mpsc::channel::<String>();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let log2 = log.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                log2.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + TIMEOUT;
        let port = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    // Tolerate a log prefix before the contract text.
                    const MARK: &str = "glint: listening on 127.0.0.1:";
                    if let Some(i) = line.find(MARK) {
                        let digits: String = line[i + MARK.len()..]
                            .chars()
                            .take_while(|c| c.is_ascii_digit())
                            .collect();
                        break digits
                            .parse::<u16>()
                            .unwrap_or_else(|_| panic!("bad listening line: {line}"));
                    }
                }
                Err(e) => {
                    let _ = child.kill();
                    let st = child.wait();
                    let why = match e {
                        mpsc::RecvTimeoutError::Timeout => format!("within {TIMEOUT:?}"),
                        mpsc::RecvTimeoutError::Disconnected => {
                            format!("before closing stderr (exit: {st:?})")
                        }
                    };
                    panic!(
                        "{bin} did not print `glint: listening on 127.0.0.1:PORT` {why}; stderr:\n{}",
                        log.lock().unwrap().join("\n")
                    );
                }
            }
        };
        Server {
            child,
            port,
            kind: Kind::Glint,
            stderr: log,
            _conf_dir: None,
        }
    }

    fn start_lighttpd(root: &Docroot, extra: &[&str]) -> Server {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let confdir = Docroot::new();
        let mut conf = String::new();
        let _ = writeln!(conf, "server.document-root = \"{}\"", root.root.display());
        let _ = writeln!(conf, "server.bind = \"127.0.0.1\"");
        let _ = writeln!(conf, "server.port = {port}");
        let _ = writeln!(
            conf,
            "server.errorlog = \"{}\"",
            confdir.base.join("error.log").display()
        );
        let _ = writeln!(
            conf,
            "server.modules += ( \"mod_indexfile\", \"mod_staticfile\" )"
        );
        let _ = writeln!(conf, "index-file.names = ( \"index.html\", \"index.htm\" )");
        let _ = writeln!(conf, "server.range-requests = \"enable\"");
        let _ = writeln!(conf, "static-file.etags = \"enable\"");
        let _ = writeln!(conf, "etag.use-inode = \"enable\"");
        let _ = writeln!(conf, "etag.use-mtime = \"enable\"");
        let _ = writeln!(conf, "etag.use-size = \"enable\"");
        let _ = writeln!(
            conf,
            "mimetype.assign = ( \".html\" => \"text/html; charset=utf-8\", \".htm\" => \"text/html; charset=utf-8\", \
             \".css\" => \"text/css; charset=utf-8\", \".js\" => \"text/javascript\", \".jpg\" => \"image/jpeg\", \
             \".jpeg\" => \"image/jpeg\", \".txt\" => \"text/plain; charset=utf-8\" )"
        );
        let mut it = extra.iter();
        while let Some(a) = it.next() {
            if *a == "--max-connections" {
                let n = it.next().expect("--max-connections N");
                let _ = writeln!(conf, "server.max-connections = {n}");
            }
        }
        let conf_path = confdir.base.join("lighttpd.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut child = Command::new("lighttpd")
            .arg("-D")
            .arg("-f")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start lighttpd (apt-get install lighttpd)");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "lighttpd exited early ({st}); error.log:\n{}",
                    std::fs::read_to_string(confdir.base.join("error.log")).unwrap_or_default()
                );
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("lighttpd did not accept on port {port} within {TIMEOUT:?}");
            }
            // Polling a port has no blocking alternative; keep the step short.
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            port,
            kind: Kind::Lighttpd,
            stderr: Arc::new(Mutex::new(Vec::new())),
            _conf_dir: Some(confdir),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Server:` value prefix expected on every response.
    pub fn server_prefix(&self) -> &'static str {
        match self.kind {
            Kind::Glint => "glint/",
            Kind::Lighttpd => "lighttpd/",
        }
    }

    pub fn connect(&self) -> Conn {
        Conn::connect(self.port)
    }

    /// Sends a signal via kill(1) (std has no kill(2) wrapper).
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(st.success(), "kill -{sig} failed");
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn stderr_tail(&self) -> String {
        let l = self.stderr.lock().unwrap();
        let start = l.len().saturating_sub(20);
        l[start..].join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first, so glint stops the backends it started; SIGKILL
        // if it is still there after 2 s. (It may be gone already: no assert.)
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------

pub struct Conn {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
    /// Set once the peer closed (EOF or reset).
    pub eof: bool,
    pub reset: bool,
}

impl Conn {
    pub fn connect(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"));
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
            eof: false,
            reset: false,
        }
    }

    /// Writes everything; write errors are returned (the server may legitimately close early).
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// One read into the buffer, bounded by `deadline`. Ok(false) = peer closed.
    fn fill(&mut self, deadline: Instant) -> Result<bool, String> {
        if self.eof {
            return Ok(false);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("timed out".into());
        }
        self.stream.set_read_timeout(Some(left)).unwrap();
        let mut tmp = vec![0u8; 256 * 1024];
        loop {
            match self.stream.read(&mut tmp) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                    return Err("timed out".into())
                }
                Err(e)
                    if e.kind() == ErrorKind::ConnectionReset
                        || e.kind() == ErrorKind::ConnectionAborted =>
                {
                    self.eof = true;
                    self.reset = true;
                    return Ok(false);
                }
                Err(e) => return Err(format!("read error: {e}")),
            }
        }
    }

    /// Reads exactly one response (leaving any following bytes buffered).
    /// `head`: the request was HEAD (no body whatever the headers say).
    pub fn read_response(&mut self, head: bool) -> Result<Response, String> {
        self.read_response_by(head, Instant::now() + TIMEOUT)
    }

    pub fn read_response_by(&mut self, head: bool, deadline: Instant) -> Result<Response, String> {
        loop {
            match parse_response(&self.buf, head, self.eof) {
                Parsed::Complete(resp, used) => {
                    self.buf.drain(..used);
                    return Ok(resp);
                }
                Parsed::Invalid(why) => {
                    return Err(format!(
                        "unparseable response ({why}): {:?}",
                        show(&self.buf)
                    ));
                }
                Parsed::Incomplete => {
                    if self.eof {
                        return Err(format!(
                            "connection {} before a complete response; got {} bytes: {:?}",
                            if self.reset { "reset" } else { "closed" },
                            self.buf.len(),
                            show(&self.buf)
                        ));
                    }
                    if let Err(e) = self.fill(deadline) {
                        return Err(format!(
                            "{e} waiting for a response; got {} bytes: {:?}",
                            self.buf.len(),
                            show(&self.buf)
                        ));
                    }
                }
            }
        }
    }

    /// Waits for the server to close the connection; returns the bytes that arrived
    /// meanwhile (they should be none after a complete response).
    pub fn expect_close(&mut self, timeout: Duration) -> Result<Vec<u8>, String> {
        let deadline = Instant::now() + timeout;
        while !self.eof {
            if let Err(e) = self.fill(deadline) {
                return Err(format!(
                    "server did not close the connection ({e}); extra bytes: {:?}",
                    show(&self.buf)
                ));
            }
        }
        Ok(std::mem::take(&mut self.buf))
    }

    /// Reads everything up to EOF (or the deadline) and returns it.
    pub fn read_to_close(&mut self, timeout: Duration) -> Result<Vec<u8>, String> {
        self.expect_close(timeout)
    }

    /// Sets SO_LINGER {on, 0} so that close() sends a RST.
    pub fn set_linger_zero(&self) {
        set_linger_zero(&self.stream);
    }

    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

#[cfg(target_os = "linux")]
pub fn set_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Linger {
        l_onoff: i32,
        l_linger: i32,
    }
    extern "C" {
        fn setsockopt(
            fd: i32,
            level: i32,
            name: i32,
            val: *const std::ffi::c_void,
            len: u32,
        ) -> i32;
    }
    const SOL_SOCKET: i32 = 1;
    const SO_LINGER: i32 = 13;
    let l = Linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let rc = unsafe {
        setsockopt(
            s.as_raw_fd(),
            SOL_SOCKET,
            SO_LINGER,
            &l as *const Linger as *const _,
            std::mem::size_of::<Linger>() as u32,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
}

/// Sends `request` on a fresh connection and reads one response.
pub fn exchange(server: &Server, request: &[u8]) -> Result<(Response, Conn), String> {
    let mut c = server.connect();
    let _ = c.send(request);
    let head = request.starts_with(b"HEAD ");
    let r = c.read_response(head)?;
    Ok((r, c))
}

/// `GET path HTTP/1.1` with Host and `Connection: close`, plus extra header lines.
pub fn get(path: &str, extra: &[&str]) -> Vec<u8> {
    req("GET", path, extra)
}

pub fn head(path: &str, extra: &[&str]) -> Vec<u8> {
    req("HEAD", path, extra)
}

pub fn req(method: &str, path: &str, extra: &[&str]) -> Vec<u8> {
    let mut s = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
    for h in extra {
        s.push_str(h);
        s.push_str("\r\n");
    }
    s.push_str("Connection: close\r\n\r\n");
    s.into_bytes()
}

/// Printable, truncated rendering of raw bytes for failure messages.
pub fn show(b: &[u8]) -> String {
    const MAX: usize = 600;
    let s = String::from_utf8_lossy(&b[..b.len().min(MAX)]).into_owned();
    if b.len() > MAX {
        format!("{s}...[{} more bytes]", b.len() - MAX)
    } else {
        s
    }
}

// ---------------------------------------------------------------------------
// Response parsing
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct Response {
    pub version: String,
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The raw head (status line + headers), for messages.
    pub head: String,
    /// How the body was delimited: "none", "chunked", "length", "close".
    pub framing: &'static str,
}

impl Response {
    /// First header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers_named(name)
            .iter()
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    pub fn content_length(&self) -> Option<u64> {
        self.header("content-length")
            .and_then(|v| v.trim().parse().ok())
    }

    pub fn describe(&self) -> String {
        format!(
            "{}\r\n[body {} bytes, {}]: {:?}",
            self.head,
            self.body.len(),
            self.framing,
            show(&self.body)
        )
    }
}

pub enum Parsed {
    Incomplete,
    Complete(Response, usize),
    Invalid(String),
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Parses one response from the start of `buf`. `eof`: no more bytes will come.
pub fn parse_response(buf: &[u8], head_req: bool, eof: bool) -> Parsed {
    let Some(end) = find(buf, b"\r\n\r\n") else {
        if buf.len() > 64 * 1024 {
            return Parsed::Invalid("no end of head in 64 KiB".into());
        }
        return Parsed::Incomplete;
    };
    let head = match std::str::from_utf8(&buf[..end]) {
        Ok(h) => h.to_string(),
        Err(_) => return Parsed::Invalid("head is not UTF-8".into()),
    };
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("").to_string();
    if !version.starts_with("HTTP/") {
        return Parsed::Invalid(format!("bad status line {status_line:?}"));
    }
    let Some(status) = parts.next().and_then(|s| s.parse::<u16>().ok()) else {
        return Parsed::Invalid(format!("bad status line {status_line:?}"));
    };
    let reason = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    for l in lines {
        let Some((n, v)) = l.split_once(':') else {
            return Parsed::Invalid(format!("bad header line {l:?}"));
        };
        headers.push((n.to_string(), v.trim().to_string()));
    }
    let mut resp = Response {
        version,
        status,
        reason,
        headers,
        body: Vec::new(),
        head,
        framing: "none",
    };
    let start = end + 4;
    let rest = &buf[start..];
    if head_req || (100..200).contains(&status) || status == 204 || status == 304 {
        return Parsed::Complete(resp, start);
    }
    let chunked = resp
        .headers_named("transfer-encoding")
        .iter()
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("chunked"));
    if chunked {
        resp.framing = "chunked";
        let mut pos = 0;
        let mut body = Vec::new();
        loop {
            let Some(le) = find(&rest[pos..], b"\r\n") else {
                return Parsed::Incomplete;
            };
            let line = String::from_utf8_lossy(&rest[pos..pos + le]).into_owned();
            let size_txt = line.split(';').next().unwrap().trim();
            let Ok(size) = usize::from_str_radix(size_txt, 16) else {
                return Parsed::Invalid(format!("bad chunk size {line:?}"));
            };
            pos += le + 2;
            if size == 0 {
                // trailers until an empty line
                loop {
                    let Some(le) = find(&rest[pos..], b"\r\n") else {
                        return Parsed::Incomplete;
                    };
                    pos += le + 2;
                    if le == 0 {
                        break;
                    }
                }
                resp.body = body;
                return Parsed::Complete(resp, start + pos);
            }
            if rest.len() < pos + size + 2 {
                return Parsed::Incomplete;
            }
            body.extend_from_slice(&rest[pos..pos + size]);
            if &rest[pos + size..pos + size + 2] != b"\r\n" {
                return Parsed::Invalid("chunk not followed by CRLF".into());
            }
            pos += size + 2;
        }
    }
    let cls = resp.headers_named("content-length");
    if !cls.is_empty() {
        if cls.iter().any(|v| *v != cls[0]) {
            return Parsed::Invalid(format!("several different Content-Length: {cls:?}"));
        }
        let Ok(n) = cls[0].trim().parse::<usize>() else {
            return Parsed::Invalid(format!("bad Content-Length {:?}", cls[0]));
        };
        resp.framing = "length";
        if rest.len() < n {
            return Parsed::Incomplete;
        }
        resp.body = rest[..n].to_vec();
        return Parsed::Complete(resp, start + n);
    }
    if eof {
        resp.framing = "close";
        resp.body = rest.to_vec();
        return Parsed::Complete(resp, buf.len());
    }
    Parsed::Incomplete
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` exactly (RFC 9110 §5.6.7).
pub fn is_imf_fixdate(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 29 {
        return false;
    }
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let dig = |r: std::ops::Range<usize>| b[r].iter().all(|c| c.is_ascii_digit());
    days.contains(&&s[0..3])
        && &s[3..5] == ", "
        && dig(5..7)
        && b[7] == b' '
        && months.contains(&&s[8..11])
        && b[11] == b' '
        && dig(12..16)
        && b[16] == b' '
        && dig(17..19)
        && b[19] == b':'
        && dig(20..22)
        && b[22] == b':'
        && dig(23..25)
        && &s[25..] == " GMT"
}

/// Seconds since the epoch of an IMF-fixdate (which must be valid per [`is_imf_fixdate`]).
pub fn imf_fixdate_epoch(s: &str) -> i64 {
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (d, y) = (n(5..7), n(12..16));
    let m = months.iter().position(|x| *x == &s[8..11]).unwrap() as i64 + 1;
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + n(17..19) * 3600 + n(20..22) * 60 + n(23..25)
}

/// Checks every response must pass: Date (IMF-fixdate), Server prefix, and for
/// error statuses an HTML body mentioning the code.
pub fn common_checks(server: &Server, r: &Response, head_req: bool) -> Vec<String> {
    let mut errs = Vec::new();
    match r.header("date") {
        Some(d) if is_imf_fixdate(d) => {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            if (imf_fixdate_epoch(d) - now).abs() > 120 {
                errs.push(format!(
                    "Date {d:?} is more than 2 minutes off the current time"
                ));
            }
        }
        Some(d) => errs.push(format!("Date is not an IMF-fixdate: {d:?}")),
        None => errs.push("no Date header".into()),
    }
    match r.header("server") {
        Some(s)
            if s.starts_with(server.server_prefix()) && s.len() > server.server_prefix().len() => {}
        other => errs.push(format!(
            "Server header {other:?}, expected {:?}<version>",
            server.server_prefix()
        )),
    }
    if r.status >= 400 {
        let ct = r.header("content-type").unwrap_or("");
        if !ct.to_ascii_lowercase().starts_with("text/html") {
            errs.push(format!(
                "error response Content-Type {ct:?}, expected text/html"
            ));
        }
        if !head_req && !String::from_utf8_lossy(&r.body).contains(&r.status.to_string()) {
            errs.push(format!(
                "error body does not contain the status code {}",
                r.status
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------
// Table-driven cases
// ---------------------------------------------------------------------------

pub type Check = Box<dyn Fn(&Response) -> Result<(), String> + Send + Sync>;

pub enum HeaderExp {
    /// Present (any value).
    Present,
    /// Value equal, ignoring ASCII case and surrounding blanks.
    Eq(String),
    /// Value contains the substring (ASCII case-insensitive).
    Contains(String),
    /// Value ends with (case-sensitive).
    EndsWith(String),
    /// Value equal to one of these (ignoring ASCII case).
    OneOf(Vec<String>),
}

pub struct Case {
    pub name: String,
    pub request: Vec<u8>,
    /// Accepted statuses.
    pub status: Vec<u16>,
    pub headers_present: Vec<(String, HeaderExp)>,
    pub headers_absent: Vec<String>,
    pub body: Option<Vec<u8>>,
    pub body_contains: Vec<Vec<u8>>,
    pub body_forbidden: Vec<Vec<u8>>,
    /// Some(true): server must close after the response; Some(false): must keep it open.
    pub closes: Option<bool>,
    pub checks: Vec<Check>,
}

impl Case {
    pub fn new(name: &str, request: impl Into<Vec<u8>>, status: &[u16]) -> Case {
        Case {
            name: name.to_string(),
            request: request.into(),
            status: status.to_vec(),
            headers_present: Vec::new(),
            headers_absent: Vec::new(),
            body: None,
            body_contains: Vec::new(),
            body_forbidden: Vec::new(),
            closes: None,
            checks: Vec::new(),
        }
    }
    pub fn has(mut self, name: &str) -> Self {
        self.headers_present.push((name.into(), HeaderExp::Present));
        self
    }
    pub fn hdr(mut self, name: &str, value: &str) -> Self {
        self.headers_present
            .push((name.into(), HeaderExp::Eq(value.into())));
        self
    }
    pub fn hdr_contains(mut self, name: &str, value: &str) -> Self {
        self.headers_present
            .push((name.into(), HeaderExp::Contains(value.into())));
        self
    }
    pub fn hdr_ends(mut self, name: &str, value: &str) -> Self {
        self.headers_present
            .push((name.into(), HeaderExp::EndsWith(value.into())));
        self
    }
    pub fn hdr_one_of(mut self, name: &str, values: &[&str]) -> Self {
        self.headers_present.push((
            name.into(),
            HeaderExp::OneOf(values.iter().map(|s| s.to_string()).collect()),
        ));
        self
    }
    pub fn lacks(mut self, name: &str) -> Self {
        self.headers_absent.push(name.into());
        self
    }
    pub fn body(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body = Some(b.into());
        self
    }
    pub fn empty_body(self) -> Self {
        self.body(Vec::new())
    }
    pub fn body_has(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body_contains.push(b.into());
        self
    }
    pub fn body_lacks(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body_forbidden.push(b.into());
        self
    }
    pub fn closes(mut self) -> Self {
        self.closes = Some(true);
        self
    }
    pub fn stays_open(mut self) -> Self {
        self.closes = Some(false);
        self
    }
    pub fn check(
        mut self,
        f: impl Fn(&Response) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push(Box::new(f));
        self
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || find(hay, needle).is_some()
}

/// Verifies one response against a case; returns the list of problems.
pub fn verify(server: &Server, case: &Case, r: &Response) -> Vec<String> {
    let head_req = case.request.starts_with(b"HEAD ");
    let mut errs = Vec::new();
    if !case.status.contains(&r.status) {
        errs.push(format!("status {} not in {:?}", r.status, case.status));
    }
    for (name, exp) in &case.headers_present {
        let Some(v) = r.header(name) else {
            errs.push(format!("missing header {name}"));
            continue;
        };
        let ok = match exp {
            HeaderExp::Present => true,
            HeaderExp::Eq(x) => v.trim().eq_ignore_ascii_case(x.trim()),
            HeaderExp::Contains(x) => v.to_ascii_lowercase().contains(&x.to_ascii_lowercase()),
            HeaderExp::EndsWith(x) => v.ends_with(x.as_str()),
            HeaderExp::OneOf(xs) => xs.iter().any(|x| v.trim().eq_ignore_ascii_case(x)),
        };
        if !ok {
            let want = match exp {
                HeaderExp::Present => String::new(),
                HeaderExp::Eq(x) => format!("== {x:?}"),
                HeaderExp::Contains(x) => format!("containing {x:?}"),
                HeaderExp::EndsWith(x) => format!("ending with {x:?}"),
                HeaderExp::OneOf(xs) => format!("one of {xs:?}"),
            };
            errs.push(format!("header {name}: {v:?}, expected {want}"));
        }
    }
    for name in &case.headers_absent {
        if let Some(v) = r.header(name) {
            errs.push(format!("header {name} must be absent, got {v:?}"));
        }
    }
    if let Some(b) = &case.body {
        if &r.body != b {
            errs.push(format!(
                "body ({} bytes) differs from expected ({} bytes): expected {:?}",
                r.body.len(),
                b.len(),
                show(b)
            ));
        }
    }
    for b in &case.body_contains {
        if !contains(&r.body, b) {
            errs.push(format!("body does not contain {:?}", show(b)));
        }
    }
    for b in &case.body_forbidden {
        if find(&r.body, b).is_some() {
            errs.push(format!("body must not contain {:?}", show(b)));
        }
    }
    for c in &case.checks {
        if let Err(e) = c(r) {
            errs.push(e);
        }
    }
    errs.extend(common_checks(server, r, head_req));
    errs
}

/// Runs one case on a fresh connection; returns a failure report or None.
pub fn run_case(server: &Server, case: &Case) -> Option<String> {
    let head_req = case.request.starts_with(b"HEAD ");
    let mut c = server.connect();
    let mut errs = Vec::new();
    if let Err(e) = c.send(&case.request) {
        errs.push(format!("(note) write failed: {e}"));
    }
    let resp = match c.read_response(head_req) {
        Ok(r) => r,
        Err(e) => {
            errs.push(e);
            return Some(report(case, None, &errs));
        }
    };
    errs.extend(verify(server, case, &resp));
    // Secret check on everything that came back, trailing bytes included.
    let req_text = String::from_utf8_lossy(&case.request);
    let close_requested = req_text
        .to_ascii_lowercase()
        .contains("\r\nconnection: close\r\n");
    match case.closes {
        Some(true) => match c.expect_close(TIMEOUT) {
            Ok(extra) if !extra.is_empty() => errs.push(format!(
                "bytes after the response before close: {:?}",
                show(&extra)
            )),
            Ok(_) => {}
            Err(e) => errs.push(e),
        },
        Some(false) => {
            if resp.has_token("connection", "close") {
                errs.push(
                    "response says Connection: close but the connection must stay open".into(),
                );
            }
            let _ = c.send(b"HEAD /index.html HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
            match c.read_response(true) {
                Ok(r2) if r2.status == 200 => {}
                Ok(r2) => errs.push(format!(
                    "follow-up request on the same connection got {}",
                    r2.status
                )),
                Err(e) => errs.push(format!(
                    "follow-up request on the same connection failed: {e}"
                )),
            }
        }
        None => {
            if close_requested || resp.framing == "close" {
                // Nothing may follow the response (e.g. a body after a HEAD or a 304).
                match c.expect_close(TIMEOUT) {
                    Ok(extra) if !extra.is_empty() => {
                        errs.push(format!("bytes after the response: {:?}", show(&extra)))
                    }
                    Ok(_) => {}
                    Err(e) => errs.push(e),
                }
            }
        }
    }
    if errs.is_empty() {
        None
    } else {
        Some(report(case, Some(&resp), &errs))
    }
}

fn report(case: &Case, resp: Option<&Response>, errs: &[String]) -> String {
    let mut s = format!(
        "--- case `{}`\n  request: {:?}\n",
        case.name,
        show(&case.request)
    );
    for e in errs {
        let _ = writeln!(s, "  * {e}");
    }
    match resp {
        Some(r) => {
            let _ = writeln!(
                s,
                "  response:\n    {}",
                r.describe().replace("\r\n", "\n    ")
            );
        }
        None => s.push_str("  response: none\n"),
    }
    s
}

/// Runs every case, then panics once listing all failures.
pub fn run_cases(server: &Server, cases: &[Case]) {
    let mut failures = Vec::new();
    for c in cases {
        if let Some(f) = run_case(server, c) {
            failures.push(f);
        }
    }
    finish(server, cases.len(), failures);
}

/// Panics with all collected failures (if any).
pub fn finish(server: &Server, total: usize, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{} of {} cases failed against {:?}:\n{}\nserver stderr tail:\n{}",
            failures.len(),
            total,
            server.kind,
            failures.join("\n"),
            server.stderr_tail()
        );
    }
}

/// Writes `conf` (lighttpd syntax) into the fixture's base directory and
/// starts glint with `-f` on it.
pub fn start_conf(d: &Docroot, conf: &str) -> Server {
    let path = d.base.join("glint.conf");
    std::fs::write(&path, conf).unwrap();
    Server::start_with(d, &["-f", path.to_str().unwrap()])
}

/// One request on a fresh connection; panics with the server's log on failure.
pub fn fetch(s: &Server, request: &[u8]) -> Response {
    match exchange(s, request) {
        Ok((r, _)) => r,
        Err(e) => panic!(
            "request {:?} failed: {e}\n{}",
            show(request),
            s.stderr_tail()
        ),
    }
}
