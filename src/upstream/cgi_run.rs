//! CGI programs (mod_cgi): one process per request, started with its
//! environment, the request body written to its stdin and its answer read
//! from its stdout, both through non-blocking pipes registered in the same
//! loop as every socket. Its stderr goes to the error log, line by line.
//!
//! A process is a backend connection of the one CGI host ([`super::config::cgi_host`]),
//! so the gateways' cap and queue apply: at most `cgi.limits`' `max-procs`
//! run at once, and more requests wait instead of forking. A process whose
//! request is over is never waited for: it goes on a list that is looked at
//! with `try_wait` (at once, on each turn of the loop while a request waits
//! for its place, and once a second), and it keeps its place under the cap
//! until it is gone. One whose client went away or whose time-out passed
//! gets SIGTERM at once (as lighttpd sends), SIGKILL [`KILL_AFTER_SECS`]
//! later; one that closed its stdout and lingers gets the same after
//! [`LINGER_SECS`]. Each runs in a process group of its own, and the signals
//! go to the group, so a shell script's children go with it.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use mio::unix::pipe;
use mio::{Interest, Registry, Token};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::cgi::Env;
use super::Gateways;

/// A CGI process that closed its stdout may take this long to exit before
/// it is sent SIGTERM.
pub const LINGER_SECS: u64 = 5;
/// Between SIGTERM and SIGKILL.
pub const KILL_AFTER_SECS: u64 = 5;
/// Stderr bytes kept while waiting for the end of a line: a script that
/// writes a longer line has it logged in pieces.
const STDERR_LINE: usize = 4096;

/// What the exchange decided about a CGI request.
#[derive(Debug)]
pub struct CgiJob {
    /// `cgi.assign`'s interpreter, or `None` to run the script itself.
    pub program: Option<String>,
    /// The script's path (its argument).
    pub script: PathBuf,
    /// Where it runs: the script's directory.
    pub cwd: PathBuf,
    /// `cgi.x-sendfile` with `cgi.x-sendfile-docroot`.
    pub x_sendfile: Option<Vec<String>>,
    /// `cgi.upgrade` for a request that asks to upgrade: stdin stays open
    /// for the tunnel that a 101 starts.
    pub upgrade: bool,
    /// `cgi.limits`: seconds without output (read) or without taking
    /// input (write) before the request gets 504; 0 for none.
    pub read_timeout: u32,
    pub write_timeout: u32,
    /// Sent to the process when the client closes its side (0: none).
    pub fin_signal: i32,
}

/// A running CGI process: its pipes (all registered with one token).
#[derive(Debug)]
pub struct CgiProc {
    pub child: Option<Child>,
    /// `None` once the body was all written (the script sees its end) or
    /// when there was none.
    stdin: Option<pipe::Sender>,
    stdout: pipe::Receiver,
    stderr: Option<pipe::Receiver>,
    stderr_line: Vec<u8>,
    /// For the log lines.
    pub script: String,
    /// Stdin is kept open after the body: an upgrade may follow.
    pub hold_stdin: bool,
}

impl CgiProc {
    /// At shutdown: the running program (of host `host`) is killed; what
    /// is left to reap.
    pub(super) fn kill_now(&mut self, host: usize) -> Option<Exiting> {
        let c = self.child.take()?;
        signal_group(&c, Signal::SIGKILL);
        Some(Exiting {
            child: c,
            host,
            finished: false,
            since: None,
            termed: true,
            killed: true,
        })
    }

    /// Starts `job`'s program with `env` (and `CONTENT_LENGTH`); stdin is
    /// a pipe only when a body or a tunnel follows.
    pub fn spawn(job: &CgiJob, env: &Env, content_length: u64) -> io::Result<CgiProc> {
        let script = job.script.to_string_lossy().into_owned();
        let mut cmd = match &job.program {
            Some(p) => {
                let mut c = Command::new(p);
                c.arg(&job.script);
                c
            }
            None => Command::new(&job.script),
        };
        let wants_stdin = content_length > 0 || job.upgrade;
        cmd.env_clear()
            .env("CONTENT_LENGTH", content_length.to_string())
            .current_dir(&job.cwd)
            .stdin(if wants_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: the signals reach the children it starts.
            .process_group(0);
        for (k, v) in env.pairs() {
            use std::os::unix::ffi::OsStrExt;
            cmd.env(
                std::ffi::OsStr::from_bytes(k),
                std::ffi::OsStr::from_bytes(v),
            );
        }
        let mut child = cmd.spawn()?;
        let stdin = match child.stdin.take() {
            Some(s) => {
                let s = pipe::Sender::from(s);
                s.set_nonblocking(true)?;
                Some(s)
            }
            None => None,
        };
        let stdout = match child.stdout.take() {
            Some(s) => pipe::Receiver::from(s),
            None => return Err(io::Error::other("no stdout pipe")),
        };
        stdout.set_nonblocking(true)?;
        let stderr = match child.stderr.take() {
            Some(s) => {
                let s = pipe::Receiver::from(s);
                s.set_nonblocking(true)?;
                Some(s)
            }
            None => None,
        };
        Ok(CgiProc {
            child: Some(child),
            stdin,
            stdout,
            stderr,
            stderr_line: Vec::new(),
            script,
            hold_stdin: job.upgrade,
        })
    }

    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stdout.read(buf)
    }

    /// Writes to stdin; a closed stdin is a broken pipe (the script does
    /// not read any more).
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.stdin.as_mut() {
            Some(s) => s.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Closes stdin: the script reads the end of its body.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Logs what the script wrote to stderr, a line at a time.
    pub fn drain_stderr(&mut self) {
        let mut buf = [0u8; 4096];
        while let Some(err) = self.stderr.as_mut() {
            match err.read(&mut buf) {
                Ok(0) => self.stderr = None,
                Ok(n) => {
                    self.stderr_line.extend_from_slice(&buf[..n]);
                    self.log_lines(false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if self.stderr.is_none() {
            self.log_lines(true);
        }
    }

    fn log_lines(&mut self, all: bool) {
        while let Some(i) = self.stderr_line.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.stderr_line.drain(..=i).collect();
            log_stderr(&self.script, &line);
        }
        if all || self.stderr_line.len() >= STDERR_LINE {
            if !self.stderr_line.is_empty() {
                log_stderr(&self.script, &self.stderr_line);
            }
            self.stderr_line.clear();
        }
    }

    /// Sends `sig` to the program's process group.
    pub fn signal(&self, sig: i32) {
        if let (Some(c), Ok(sig)) = (self.child.as_ref(), Signal::try_from(sig)) {
            signal_group(c, sig);
        }
    }

    pub fn register(&mut self, r: &Registry, t: Token, writes: bool) -> io::Result<()> {
        r.register(&mut self.stdout, t, Interest::READABLE)?;
        if let Some(e) = self.stderr.as_mut() {
            r.register(e, t, Interest::READABLE)?;
        }
        if let Some(i) = self.stdin.as_mut() {
            if writes {
                r.register(i, t, Interest::WRITABLE)?;
            }
        }
        Ok(())
    }

    /// Watches stdin for room (a write blocked): registered then, not before.
    pub fn watch_stdin(&mut self, r: &Registry, t: Token) -> io::Result<()> {
        match self.stdin.as_mut() {
            Some(i) => r.register(i, t, Interest::WRITABLE),
            None => Ok(()),
        }
    }
}

fn log_stderr(script: &str, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    log::warn!("cgi {script}: {}", text.trim_end());
}

/// A CGI process whose request is over, until it exits.
#[derive(Debug)]
pub(super) struct Exiting {
    child: Child,
    pub(super) host: usize,
    /// It closed its stdout (its answer is complete): it gets
    /// [`LINGER_SECS`] before SIGTERM. Else SIGTERM was sent.
    finished: bool,
    /// The second it was first looked at, once it has been.
    since: Option<u64>,
    termed: bool,
    killed: bool,
}

fn signal_group(child: &Child, sig: Signal) {
    let _ = killpg(Pid::from_raw(child.id() as i32), sig);
}

impl Gateways {
    /// A CGI process's request is over (`finished`: its stdout ended).
    /// Gone already: nothing left. Else it keeps its place under the cap
    /// until it exits; one cut short is sent SIGTERM now.
    pub(super) fn retire_cgi(&mut self, mut child: Child, host: usize, finished: bool) {
        if let Ok(Some(status)) = child.try_wait() {
            note_exit(&child, status);
            return;
        }
        if !finished {
            signal_group(&child, Signal::SIGTERM);
        }
        if let Some(h) = self.hosts.get_mut(host) {
            h.active += 1;
        }
        self.exiting.push(Exiting {
            child,
            host,
            finished,
            since: None,
            termed: !finished,
            killed: false,
        });
    }

    /// Reaps the CGI processes that exited, without waiting, and signals
    /// those past their time; a place freed under the cap goes to a
    /// waiting request.
    pub(super) fn reap_cgi(&mut self, now: u64) {
        let mut i = 0;
        while i < self.exiting.len() {
            let e = &mut self.exiting[i];
            match e.child.try_wait() {
                Ok(Some(status)) => note_exit(&e.child, status),
                Ok(None) => {
                    let since = *e.since.get_or_insert(now);
                    let term_at = since + if e.finished { LINGER_SECS } else { 0 };
                    if !e.termed && now >= term_at {
                        e.termed = true;
                        signal_group(&e.child, Signal::SIGTERM);
                    } else if e.termed && !e.killed && now >= term_at + KILL_AFTER_SECS {
                        log::warn!(
                            "cgi pid {}: still running after SIGTERM; killing it",
                            e.child.id()
                        );
                        e.killed = true;
                        signal_group(&e.child, Signal::SIGKILL);
                    }
                    i += 1;
                    continue;
                }
                // Not a child any more (it cannot be waited for).
                Err(_) => {}
            }
            let e = self.exiting.swap_remove(i);
            if let Some(h) = self.hosts.get_mut(e.host) {
                h.active = h.active.saturating_sub(1);
            }
            self.freed += 1;
        }
    }

    /// Whether CGI processes are still to be reaped.
    pub fn cgi_exiting(&self) -> usize {
        self.exiting.len()
    }

    /// At shutdown, after [`CgiProc::kill_now`]: every process still
    /// exiting is killed and reaped.
    pub(super) fn reap_all_exiting(&mut self) {
        for e in &mut self.exiting {
            signal_group(&e.child, Signal::SIGKILL);
            let _ = e.child.wait();
        }
        self.exiting.clear();
    }
}

fn note_exit(child: &Child, status: std::process::ExitStatus) {
    use std::os::unix::process::ExitStatusExt;
    // A signal other than glint's own is worth a line (lighttpd logs it too).
    if let Some(sig) = status.signal() {
        if sig != libc_sigterm() && sig != 9 {
            log::warn!("cgi pid {} died with signal {sig}", child.id());
        }
    }
}

fn libc_sigterm() -> i32 {
    Signal::SIGTERM as i32
}
