//! Tests with real clients (curl, `openssl s_client`, Python's `ssl`)
//! against certificates made here with the `openssl` command, served by a
//! tiny mio loop driving [`TlsConn`] on 127.0.0.1:0. Each test is bounded
//! in time; a missing tool fails the test.

mod clients;
mod hostile;
mod x509;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::*;

/// No client command may take longer than this.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);

/// Fails the test when `tool` is missing: a TLS test that cannot run its
/// client must not pass (`.ci/run` installs openssl, curl and python3).
pub(super) fn need(tool: &str) {
    let ok = Command::new(tool)
        .arg(if tool == "openssl" {
            "version"
        } else {
            "--version"
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{tool} is needed for this test and is not installed");
}

/// Runs a client with `input` on stdin; returns (success, stdout+stderr).
/// Output is read while the client runs (a full pipe would stall it).
pub(super) fn run(cmd: &mut Command, input: &[u8]) -> (bool, String) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn client");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut text = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
    text.push_str(&String::from_utf8_lossy(&err.join().unwrap_or_default()));
    (status.is_some_and(|s| s.success()), text)
}

/// A directory of test certificates.
pub(super) struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn new(tag: &str) -> Pki {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("glint-tls-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Pki { dir };
        pki.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "30",
            "-subj",
            "/CN=glint test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        pki
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `name.pem` / `name.key`, issued by the test CA (or self-signed
    /// when `issuer` is None), valid for `days`.
    pub fn cert(
        &self,
        name: &str,
        subj: &str,
        sans: &[&str],
        eku: &str,
        days: u32,
        issuer: Option<&str>,
    ) {
        let key = format!("{name}.key");
        let pem = format!("{name}.pem");
        let days = days.to_string();
        let mut args = vec![
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &pem,
            "-days",
            &days,
            "-subj",
            subj,
            "-addext",
            "basicConstraints=CA:FALSE",
        ];
        let eku = format!("extendedKeyUsage={eku}");
        args.extend(["-addext", &eku]);
        let san = format!(
            "subjectAltName={}",
            sans.iter()
                .map(|s| format!("DNS:{s}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        if !sans.is_empty() {
            args.extend(["-addext", &san]);
        }
        let (ca, cakey) = issuer
            .map(|i| (format!("{i}.pem"), format!("{i}.key")))
            .unzip();
        if let (Some(ca), Some(cakey)) = (&ca, &cakey) {
            args.extend(["-CA", ca, "-CAkey", cakey]);
        }
        self.openssl(&args);
    }

    pub fn server(&self, name: &str, host: &str) {
        self.cert(
            name,
            &format!("/CN={host}"),
            &[host],
            "serverAuth",
            // Past the 30 days within which `-tt` warns: a test that
            // crosses a second boundary must not get a warning.
            90,
            Some("ca"),
        );
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(super) fn scope(pki: &Pki, name: &str) -> ScopeOptions {
    ScopeOptions {
        pemfile: Some(pki.p(&format!("{name}.pem"))),
        privkey: Some(pki.p(&format!("{name}.key"))),
        ..Default::default()
    }
}

pub(super) fn context(socket: &SocketOptions, server: &ServerOptions) -> TlsContext {
    let (spec, _) = TlsSpec::from_options(socket, server).expect("spec");
    let keys = TicketKeys::new(spec.stek_file.as_deref(), tickets::unix_now());
    TlsContext::load(spec, &keys).expect("load").0
}

/// What the test server saw, per connection, for assertions.
pub(super) type Log = Arc<Mutex<Vec<String>>>;

struct Conn {
    sock: TcpStream,
    tls: TlsConn,
    request: Vec<u8>,
    /// A file range still to send: (file, offset, end).
    file: Option<(std::fs::File, u64, u64)>,
    closing: bool,
    /// Our side is shut down; waiting for the peer's EOF before closing,
    /// so unread client bytes cannot turn the close into a reset.
    shut: bool,
}

/// The test server: a mio loop on its own thread.
pub(super) struct Server {
    pub addr: SocketAddr,
    pub ctx: Arc<Mutex<TlsContext>>,
    pub log: Log,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `ctx`: `GET /` answers a line describing the TLS session,
/// `GET /file` answers `file` through `send_file`, `GET /short` claims
/// 1000 bytes more than `file` holds.
pub(super) fn serve(ctx: TlsContext, file: Option<PathBuf>) -> Server {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let ctx = Arc::new(Mutex::new(ctx));
    let log: Log = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (c, l, s) = (Arc::clone(&ctx), Arc::clone(&log), Arc::clone(&stop));
    let thread =
        std::thread::spawn(move || event_loop(TcpListener::from_std(std_listener), c, l, s, file));
    Server {
        addr,
        ctx,
        log,
        stop,
        thread: Some(thread),
    }
}

fn event_loop(
    mut listener: TcpListener,
    ctx: Arc<Mutex<TlsContext>>,
    log: Log,
    stop: Arc<AtomicBool>,
    file: Option<PathBuf>,
) {
    const LISTENER: Token = Token(0);
    let mut poll = Poll::new().unwrap();
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .unwrap();
    let mut events = Events::with_capacity(64);
    let mut conns: HashMap<Token, Conn> = HashMap::new();
    let mut next = 1;
    while !stop.load(Ordering::SeqCst) {
        let _ = poll.poll(&mut events, Some(Duration::from_millis(20)));
        for ev in events.iter() {
            if ev.token() == LISTENER {
                while let Ok((mut sock, _)) = listener.accept() {
                    let t = Token(next);
                    next += 1;
                    poll.registry()
                        .register(&mut sock, t, Interest::READABLE)
                        .unwrap();
                    let tls = TlsConn::new(&ctx.lock().unwrap());
                    conns.insert(
                        t,
                        Conn {
                            sock,
                            tls,
                            request: Vec::new(),
                            file: None,
                            closing: false,
                            shut: false,
                        },
                    );
                }
                continue;
            }
            let Some(c) = conns.get_mut(&ev.token()) else {
                continue;
            };
            let done = drive(c, &log, file.as_deref());
            if done {
                if let Some(mut c) = conns.remove(&ev.token()) {
                    let _ = poll.registry().deregister(&mut c.sock);
                }
            } else {
                let mut interest = Interest::READABLE;
                if c.tls.wants_write() || c.file.is_some() {
                    interest = interest.add(Interest::WRITABLE);
                }
                let _ = poll
                    .registry()
                    .reregister(&mut c.sock, ev.token(), interest);
            }
        }
    }
}

/// One readiness event; true when the connection is finished.
fn drive(c: &mut Conn, log: &Log, file: Option<&Path>) -> bool {
    if c.shut {
        let mut buf = [0u8; 4096];
        loop {
            match c.sock.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                Err(_) => return true,
            }
        }
    }
    let peer_closed;
    loop {
        let st = match c.tls.read_tls_from(&mut c.sock) {
            Ok(st) => st,
            Err(TlsError::PlainHttp) => {
                let _ = c.sock.write_all(PLAIN_HTTP_RESPONSE);
                log.lock().unwrap().push("plain-http".into());
                return true;
            }
            Err(e) => {
                log.lock().unwrap().push(format!("error: {e}"));
                return true;
            }
        };
        let mut buf = [0u8; 4096];
        loop {
            let n = c.tls.read_plain(&mut buf);
            if n == 0 {
                break;
            }
            c.request.extend_from_slice(&buf[..n]);
        }
        if st.socket_drained || st.peer_closed {
            peer_closed = st.peer_closed;
            break;
        }
    }
    if let Some(info) = c.tls.info() {
        if info.is_acme_challenge() && !c.closing {
            log.lock()
                .unwrap()
                .push(format!("acme {}", info.sni.clone().unwrap_or_default()));
            c.tls.close_notify();
            c.closing = true;
        }
    }
    if !c.closing && c.request.windows(4).any(|w| w == b"\r\n\r\n") {
        respond(c, file);
    }
    if peer_closed && !c.closing {
        return true;
    }
    if let Some((f, off, end)) = c.file.take() {
        match c.tls.send_file(&f, off, end - off) {
            Ok(n) if off + n == end => {
                c.tls.close_notify();
            }
            Ok(n) => c.file = Some((f, off + n, end)),
            Err(e) => {
                log.lock().unwrap().push(format!("send_file: {e}"));
                return true;
            }
        }
    }
    match c.tls.write_tls_to(&mut c.sock) {
        Ok(true) if c.closing && c.file.is_none() => {
            c.shut = true;
            c.sock.shutdown(std::net::Shutdown::Write).is_err()
        }
        Ok(_) => false,
        Err(_) => true,
    }
}

fn respond(c: &mut Conn, file: Option<&Path>) {
    c.closing = true;
    let path = c
        .request
        .split(|b| *b == b' ')
        .nth(1)
        .unwrap_or(b"/")
        .to_vec();
    if let (Some(f), b"/file" | b"/short") = (file, path.as_slice()) {
        let fh = std::fs::File::open(f).unwrap();
        let mut len = fh.metadata().unwrap().len();
        if path == b"/short" {
            len += 1000;
        }
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n");
        assert_eq!(c.tls.write_plain(head.as_bytes()), head.len());
        c.file = Some((fh, 0, len));
        return;
    }
    let info = c.tls.info();
    let cert = c.tls.client_cert();
    let body = format!(
        "sni={} alpn={} version={} cipher={} resumed={} verify={} user={} dn={} exported={}\n",
        info.as_ref()
            .and_then(|i| i.sni.clone())
            .unwrap_or_default(),
        info.as_ref()
            .and_then(|i| i.alpn.clone())
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .unwrap_or_default(),
        info.as_ref().map(|i| i.version).unwrap_or_default(),
        info.as_ref().map(|i| i.cipher.clone()).unwrap_or_default(),
        info.as_ref().is_some_and(|i| i.resumed),
        cert.as_ref().map(|c| c.verify.clone()).unwrap_or_default(),
        cert.as_ref()
            .and_then(|c| c.username.clone())
            .unwrap_or_default(),
        cert.as_ref()
            .map(|c| c.subject_dn.clone())
            .unwrap_or_default(),
        cert.as_ref().is_some_and(|c| c.cert_pem.is_some()),
    );
    let msg = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(c.tls.write_plain(msg.as_bytes()), msg.len());
    c.tls.close_notify();
}

/// A raw TCP client for hostile input: sends `bytes`, returns what the
/// server answered before closing (bounded in time).
pub(super) fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}
