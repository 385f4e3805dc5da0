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
