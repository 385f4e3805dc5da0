//! Helpers shared by the `robust_*` tests: a glint process on 127.0.0.1 with
//! a port of its own, temporary directories, a minimal HTTP/1.1 client, and
//! what /proc says about the server process. Standard library only.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "glint-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic bytes for fixtures (xorshift), so that a mismatch shows.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

extern "C" {
    fn setrlimit(resource: i32, rlim: *const [u64; 2]) -> i32;
    fn getrlimit(resource: i32, rlim: *mut [u64; 2]) -> i32;
    fn setsockopt(fd: i32, level: i32, name: i32, val: *const i32, len: u32) -> i32;
}
const RLIMIT_NOFILE: i32 = 7;
const SOL_SOCKET: i32 = 1;
const SO_LINGER: i32 = 13;

/// Raises this process's soft descriptor limit towards `want`; returns the new soft limit.
pub fn raise_own_nofile(want: u64) -> u64 {
    let mut lim = [0u64; 2];
    // SAFETY: getrlimit/setrlimit read and write one `struct rlimit` (two u64 on Linux).
    unsafe {
        if getrlimit(RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim[0] < want {
            let new = [want.min(lim[1]), lim[1]];
            if setrlimit(RLIMIT_NOFILE, &new) == 0 {
                lim[0] = new[0];
            }
        }
    }
    lim[0]
}

/// Makes closing `s` send a reset instead of a FIN (SO_LINGER with a zero time-out).
pub fn set_linger_zero(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger: [i32; 2] = [1, 0];
    // SAFETY: `struct linger` is two ints; the fd is open for the call.
    let rc = unsafe { setsockopt(s.as_raw_fd(), SOL_SOCKET, SO_LINGER, linger.as_ptr(), 8) };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
}

/// How to start glint.
#[derive(Default)]
pub struct Opts {
    /// lighttpd-syntax configuration text, written to a file and given with -f.
    pub config: Option<String>,
    pub max_connections: Option<u32>,
    /// RLIMIT_NOFILE (soft and hard) for the server process.
    pub nofile: Option<u64>,
}

/// A running glint, killed on drop.
pub struct Glint {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr: Arc<Mutex<String>>,
    _conf_dir: TempDir,
}

impl Glint {
    pub fn start(docroot: &Path, opts: Opts) -> Glint {
        let conf_dir = TempDir::new("conf");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_glint"));
        cmd.arg("-D");
        let conf = conf_dir.path().join("glint.conf");
        std::fs::write(&conf, opts.config.as_deref().unwrap_or("")).expect("write config");
        cmd.arg("-f").arg(&conf);
        cmd.arg("--document-root")
            .arg(docroot)
            .args(["--bind", "127.0.0.1", "--port", "0"]);
        if let Some(n) = opts.max_connections {
            cmd.arg("--max-connections").arg(n.to_string());
        }
        if let Some(n) = opts.nofile {
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if setrlimit(RLIMIT_NOFILE, &[n, n]) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn glint");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("glint: listening on ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(rest.to_string());
                    }
                }
                let mut l = log2.lock().unwrap_or_else(|e| e.into_inner());
                l.push_str(&line);
                l.push('\n');
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a.parse().expect("listening address"),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "glint did not start: {}",
                    log.lock().unwrap_or_else(|e| e.into_inner())
                );
            }
        };
        Glint {
            child,
            addr,
            stderr: log,
            _conf_dir: conf_dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Still running?
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Open descriptors of the server process.
    pub fn fd_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Open sockets of the server process (listeners, clients, the waker's
    /// pair), leaving out files such as those in glint's open-file cache.
    pub fn socket_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        std::fs::read_link(e.path())
                            .is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    /// The numbers of the open descriptors of the server process.
    pub fn fd_numbers(&self) -> Vec<u32> {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Resident memory in KiB.
    pub fn rss_kb(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// CPU time used so far (user + system), in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        let after = s.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 of stat; `after` starts at field 3.
        let get = |i: usize| {
            f.get(i - 3)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        get(14) + get(15)
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        s.set_write_timeout(Some(Duration::from_secs(10))).ok();
        s
    }

    /// A connection that has sent a request line and no more: glint's
    /// listeners use TCP_DEFER_ACCEPT, so a connection that sends nothing
    /// stays in the kernel and never takes one of glint's slots.
    pub fn connect_started(&self) -> TcpStream {
        let mut s = self.connect();
        s.write_all(b"GET /index.html HTTP/1.1\r\n")
            .expect("request line");
        s
    }

    /// One GET on a fresh connection; the response.
    pub fn get(&self, path: &str) -> io::Result<Response> {
        let mut s = self.connect();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )?;
        read_response(&mut BufReader::new(s), false)
    }
}

impl Drop for Glint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// The status line and header lines as sent, without CRLFs.
    pub head_lines: Vec<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response; the body by Content-Length, else to EOF.
/// `head_only` is for responses to HEAD.
pub fn read_response<R: BufRead>(r: &mut R, head_only: bool) -> io::Result<Response> {
    let mut lines = Vec::new();
    loop {
        let mut raw = Vec::new();
        let n = r.read_until(b'\n', &mut raw)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("connection closed in the head after {lines:?}"),
            ));
        }
        let line = String::from_utf8_lossy(&raw)
            .trim_end_matches('\n')
            .trim_end_matches('\r')
            .to_string();
        if line.is_empty() {
            break;
        }
        lines.push(line);
        if lines.len() > 200 {
            return Err(io::Error::other("too many header lines"));
        }
    }
    let status = lines
        .first()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {:?}", lines.first())))?;
    let headers: Vec<(String, String)> = lines[1..]
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_string(), v.trim().to_string()))
        .collect();
    let mut resp = Response {
        status,
        head_lines: lines,
        headers,
        body: Vec::new(),
    };
    if head_only || status == 304 || status == 204 || (100..200).contains(&status) {
        return Ok(resp);
    }
    match resp.header("content-length").map(|v| v.parse::<usize>()) {
        Some(Ok(n)) => {
            resp.body = vec![0; n];
            r.read_exact(&mut resp.body)?;
        }
        Some(Err(_)) => return Err(io::Error::other("bad Content-Length")),
        None => {
            r.read_to_end(&mut resp.body)?;
        }
    }
    Ok(resp)
}

/// Waits until `f` holds, polling every 50 ms, for at most `limit`.
pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// Reads until EOF or error, for at most `limit`; returns bytes read and
/// whether the connection ended (EOF or reset) rather than timing out.
pub fn drain(s: &mut TcpStream, limit: Duration) -> (u64, bool) {
    let start = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    s.set_read_timeout(Some(Duration::from_millis(200))).ok();
    while start.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return (total, true),
            Ok(n) => total += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return (total, true),
        }
    }
    (total, false)
}
