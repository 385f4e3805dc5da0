//! Helpers for the service tests: temporary directories, spawning the
//! `glint` binary, plain HTTP/1.0 requests on loopback, signals.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_glint");

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "glint-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        set_mode(&p, 0o755);
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `glint -D`, killed on drop if still there.
pub struct Glint {
    pub child: Child,
    pub addrs: Vec<String>,
    /// The rest of stderr, line by line.
    pub stderr: mpsc::Receiver<String>,
}

impl Glint {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0].parse().unwrap()
    }
    pub fn signal(&self, sig: i32) {
        signal(self.pid(), sig);
    }
    /// Waits for the exit, at most `limit`.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let end = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < end, "glint did not exit within {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Glint {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `cmd` (stderr piped) and waits for its `listening on` lines: as
/// many as `listeners`.
pub fn start(mut cmd: Command, listeners: usize) -> Glint {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut addrs = Vec::new();
    let end = Instant::now() + Duration::from_secs(10);
    while addrs.len() < listeners {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(a) = line.strip_prefix("glint: listening on ") {
                    addrs.push(a.to_string());
                } else {
                    eprintln!("glint stderr: {line}");
                }
            }
            Err(_) => {
                let _ = child.kill();
                panic!("glint did not report its listeners: {:?}", child.wait());
            }
        }
    }
    Glint {
        child,
        addrs,
        stderr: rx,
    }
}

/// `glint -D -f conf`, waiting for `listeners` listeners.
pub fn start_foreground(conf: &Path, listeners: usize) -> Glint {
    let mut cmd = Command::new(BIN);
    cmd.arg("-D").arg("-f").arg(conf);
    start(cmd, listeners)
}

/// A response: status and body.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub body: Vec<u8>,
}

/// One HTTP/1.0 GET on a new connection.
pub fn get(addr: SocketAddr, path: &str) -> std::io::Result<Resp> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    parse(&buf)
}

pub fn parse(buf: &[u8]) -> std::io::Result<Resp> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad response");
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| bad())?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    Ok(Resp {
        status,
        body: buf[end + 4..].to_vec(),
    })
}

pub const SIGHUP: i32 = nix::libc::SIGHUP;
pub const SIGINT: i32 = nix::libc::SIGINT;
pub const SIGKILL: i32 = nix::libc::SIGKILL;
pub const SIGTERM: i32 = nix::libc::SIGTERM;
pub const SIGUSR1: i32 = nix::libc::SIGUSR1;

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects.
    let r = unsafe { nix::libc::kill(pid, sig) };
    assert_eq!(r, 0, "kill({pid}, {sig})");
}

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits until `cond` holds, at most `limit`; returns whether it did.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no memory effects.
    unsafe { nix::libc::geteuid() == 0 }
}

/// A document root with `index.html` = `body`, and a config serving it on
/// 127.0.0.1:`port` plus `extra` lines.
pub fn write_conf(dir: &TempDir, docroot: &Path, port: u16, extra: &str) -> PathBuf {
    let conf = dir.join("glint.conf");
    std::fs::write(
        &conf,
        format!(
            "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {port}\n{extra}\n",
            docroot.display()
        ),
    )
    .unwrap();
    conf
}

pub fn docroot(dir: &TempDir, name: &str, index: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    set_mode(&d, 0o755);
    std::fs::write(d.join("index.html"), index).unwrap();
    d
}

/// A client GETting `/` on new connections in a thread until stopped (at
/// most 20 s or 20 000 requests), recording the distinct bodies it saw.
pub struct ClientLoop {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<(u32, Vec<String>, Vec<Vec<u8>>)>,
}

pub fn client_loop(addr: SocketAddr) -> ClientLoop {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let (mut ok, mut failed, mut seen) = (0u32, Vec::new(), Vec::<Vec<u8>>::new());
        let end = Instant::now() + Duration::from_secs(20);
        while !flag.load(Ordering::SeqCst) && Instant::now() < end && ok < 20_000 {
            match get(addr, "/") {
                Ok(r) if r.status == 200 => {
                    ok += 1;
                    if seen.last() != Some(&r.body) {
                        seen.push(r.body);
                    }
                }
                Ok(r) => failed.push(format!("status {}", r.status)),
                Err(e) => failed.push(e.to_string()),
            }
        }
        (ok, failed, seen)
    });
    ClientLoop { stop, thread }
}

impl ClientLoop {
    /// Stops the loop, asserts that no request failed and that it made
    /// progress, and returns the distinct bodies in the order seen.
    pub fn finish_without_failures(self) -> Vec<Vec<u8>> {
        self.stop.store(true, Ordering::SeqCst);
        let (ok, failed, seen) = self.thread.join().expect("client loop");
        assert!(
            failed.is_empty(),
            "{} failed: {:?}",
            failed.len(),
            &failed[..failed.len().min(5)]
        );
        assert!(ok > 10, "only {ok} requests");
        seen
    }
}
