//! Backend processes of the gateway, proxy and browser tests (the scripts
//! of `tests/backends/`): started, their `ready WHERE` line read, killed
//! on drop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A backend process, killed on drop.
pub struct Backend {
    pub child: Child,
    /// What its `ready` line named: a port, `host:port` or a socket path
    /// (empty for a process started without one).
    pub addr: String,
    /// The port at the end of `addr` (0 when it names none).
    pub port: u16,
}

impl Backend {
    /// A process that announces nothing (it listens where it was told).
    pub fn of(child: Child) -> Backend {
        Backend {
            child,
            addr: String::new(),
            port: 0,
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn backends_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/backends")
}

/// Runs `cmd` with its stdout piped and waits for its `ready WHERE` line;
/// `what` names the program (and what it needs) when it does not start.
pub fn start_ready(mut cmd: Command, what: &str) -> Backend {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut line = String::new();
    let out = child.stdout.take().expect("stdout");
    BufReader::new(out)
        .read_line(&mut line)
        .expect("ready line");
    let addr = line
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("{what} did not start: {line:?}"))
        .trim()
        .to_string();
    let port = addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Backend { child, addr, port }
}

/// `python3 ARGS`, a script that prints `ready PORT` once it listens.
pub fn python(args: &[&str]) -> Backend {
    let mut cmd = Command::new("python3");
    cmd.args(args);
    start_ready(cmd, &format!("python3 {args:?}"))
}

/// A plain TCP echo server on 127.0.0.1 port 0, in threads of the test:
/// each connection gets `greeting` first (a server that speaks first),
/// then every byte back as it comes; at the client's end of stream it
/// writes `bye\n` and closes. Counts the connections it took. Stops
/// accepting on drop.
pub struct TcpEcho {
    pub port: u16,
    pub accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl TcpEcho {
    pub fn start(greeting: &str) -> TcpEcho {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind echo");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (stop2, accepted2) = (Arc::clone(&stop), Arc::clone(&accepted));
        let greeting = greeting.as_bytes().to_vec();
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        accepted2.fetch_add(1, Ordering::Relaxed);
                        let g = greeting.clone();
                        std::thread::spawn(move || echo_conn(s, &g));
                    }
                    // Nothing to wait on but the stop flag: poll it.
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        });
        TcpEcho {
            port,
            accepted,
            stop,
        }
    }

    pub fn connections(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for TcpEcho {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn echo_conn(mut s: std::net::TcpStream, greeting: &[u8]) {
    use std::io::{Read, Write};
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(30)));
    if !greeting.is_empty() && s.write_all(greeting).is_err() {
        return;
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if s.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
    let _ = s.write_all(b"bye\n");
}
