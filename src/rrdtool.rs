//! mod_rrdtool: the server's traffic in round-robin databases, through
//! one `rrdtool -` process (RRDtool's pipe mode: a command a line, each
//! answered with output ending in an `OK ...` or `ERROR: ...` line).
//!
//! Each request, as it is logged, adds to the counters of the database its
//! scope names (`rrdtool.db-name`): one request, the bytes of its request
//! head and `Content-Length` body, the bytes of its answer. Once a minute
//! (when the Unix time is a whole minute, as lighttpd writes), each
//! database is sent `update FILE N:in:out:requests`, after a `create` with
//! lighttpd's layout when the file is missing or empty; the counters start
//! again once rrdtool said `OK`. glint also sends what was counted since
//! the last minute when it stops, so that no traffic is lost.
//!
//! rrdtool never holds up the event loop: its pipes are non-blocking, the
//! commands wait in a buffer of at most [`MAX_QUEUED`] bytes (an update is
//! skipped, and its counts kept for the next, while rrdtool does not take
//! them), and its answers are read as they come, once a second. At the
//! stop, the last update is given [`STOP_WAIT`] to be answered. A process
//! that died is started again at the next minute.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::process::{Child, Command, Stdio};

use mio::unix::pipe::{Receiver, Sender};
use std::time::{Duration, Instant};

/// Most command bytes waiting for rrdtool: a few minutes' worth of updates.
pub const MAX_QUEUED: usize = 64 * 1024;
/// How long the stop waits for rrdtool to answer the last update.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// lighttpd's layout of a new database: a step of a minute, three
/// `ABSOLUTE` data sources, averages, maxima and minima over a day, a
/// week, a month and a year.
const CREATE_LAYOUT: &str =
    " --step 60 DS:InOctets:ABSOLUTE:600:U:U DS:OutOctets:ABSOLUTE:600:U:U \
DS:Requests:ABSOLUTE:600:U:U RRA:AVERAGE:0.5:1:600 RRA:AVERAGE:0.5:6:700 RRA:AVERAGE:0.5:24:775 \
RRA:AVERAGE:0.5:288:797 RRA:MAX:0.5:1:600 RRA:MAX:0.5:6:700 RRA:MAX:0.5:24:775 \
RRA:MAX:0.5:288:797 RRA:MIN:0.5:1:600 RRA:MIN:0.5:6:700 RRA:MIN:0.5:24:775 RRA:MIN:0.5:288:797\n";

/// The counts of one database since its last update rrdtool took.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub requests: u64,
}

#[derive(Debug)]
struct Db {
    path: String,
    counts: Counts,
}

/// What an answer of rrdtool is for.
#[derive(Debug)]
enum Asked {
    Create(usize),
    /// An update of database `.0` with these counts (taken off on `OK`).
    Update(usize, Counts),
}

/// The running `rrdtool -`.
struct Proc {
    child: Child,
    stdin: Sender,
    stdout: Receiver,
    /// Commands not yet taken by the pipe.
    out: Vec<u8>,
    /// Answer bytes not yet a whole line.
    line: Vec<u8>,
    asked: VecDeque<Asked>,
}

/// mod_rrdtool's state: the databases, their counters, the process.
pub struct RrdTool {
    binary: String,
    dbs: Vec<Db>,
    proc: Option<Proc>,
    /// The minute last written (Unix seconds / 60).
    minute: i64,
}

impl RrdTool {
    /// For `binary` (`rrdtool.binary`, default `/usr/bin/rrdtool`) and the
    /// databases some scope names; `None` when none does.
    pub fn new(binary: Option<&str>, dbs: &[String]) -> Option<RrdTool> {
        if dbs.is_empty() {
            return None;
        }
        let mut r = RrdTool {
            binary: binary.unwrap_or("/usr/bin/rrdtool").to_string(),
            dbs: Vec::new(),
            proc: None,
            minute: 0,
        };
        r.set_dbs(dbs);
        Some(r)
    }

    /// The databases of a new configuration: counts of those it keeps stay.
    pub fn set_dbs(&mut self, dbs: &[String]) {
        let mut next = Vec::with_capacity(dbs.len());
        for p in dbs {
            let counts = self
                .dbs
                .iter()
                .find(|d| d.path == *p)
                .map_or_else(Counts::default, |d| d.counts);
            if !next.iter().any(|d: &Db| d.path == *p) {
                next.push(Db {
                    path: p.clone(),
                    counts,
                });
            }
        }
        self.dbs = next;
        self.minute = 0;
    }

    /// Starts `rrdtool -` (lighttpd refuses to start when it cannot).
    pub fn start(&mut self) -> Result<(), String> {
        let mut child = Command::new(&self.binary)
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("rrdtool.binary {}: {e}", self.binary))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("rrdtool: no pipes".into());
        };
        let (stdin, stdout) = (Sender::from(stdin), Receiver::from(stdout));
        stdin
            .set_nonblocking(true)
            .and_then(|()| stdout.set_nonblocking(true))
            .map_err(|e| format!("rrdtool pipe: {e}"))?;
        self.proc = Some(Proc {
            child,
            stdin,
            stdout,
            out: Vec::new(),
            line: Vec::new(),
            asked: VecDeque::new(),
        });
        Ok(())
    }

    /// A request of a scope whose `rrdtool.db-name` is `db` is done.
    pub fn account(&mut self, db: &str, bytes_in: u64, bytes_out: u64) {
        if let Some(d) = self.dbs.iter_mut().find(|d| d.path == db) {
            d.counts.requests += 1;
            d.counts.bytes_in += bytes_in;
            d.counts.bytes_out += bytes_out;
        }
    }

    /// The counts of database `db` not yet taken by rrdtool.
    pub fn counts(&self, db: &str) -> Option<Counts> {
        self.dbs.iter().find(|d| d.path == db).map(|d| d.counts)
    }

    /// Once a second, at Unix time `unix`: rrdtool's answers read, waiting
    /// commands written; on a whole minute, the updates.
    pub fn on_tick(&mut self, unix: i64) {
        self.pump();
        if unix % 60 != 0 || unix / 60 == self.minute {
            return;
        }
        self.minute = unix / 60;
        if self.proc.is_none() {
            // Died: started again, at most once a minute.
            if let Err(e) = self.start() {
                log::error!("{e}");
                return;
            }
        }
        self.queue_updates();
        self.pump();
    }

    /// The server stops: the counts since the last minute are sent, and
    /// answered within [`STOP_WAIT`]; then rrdtool is let go (it ends at
    /// the end of its input).
    pub fn stop(&mut self) {
        if self.proc.is_none() {
            return;
        }
        self.queue_updates();
        let until = Instant::now() + STOP_WAIT;
        while Instant::now() < until {
            self.pump();
            match &self.proc {
                Some(p) if !p.asked.is_empty() => {}
                _ => break,
            }
            // Nothing to wait on but the pipe, and the loop is over.
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(mut p) = self.proc.take() {
            if !p.asked.is_empty() {
                log::warn!("rrdtool did not answer within {STOP_WAIT:?}; its counts are lost");
            }
            drop(p.stdin);
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }

    /// Queues an update of every database (a create first where the file
    /// is missing or empty), unless rrdtool has not taken what it had.
    fn queue_updates(&mut self) {
        let Some(p) = self.proc.as_mut() else {
            return;
        };
        for (i, d) in self.dbs.iter().enumerate() {
            if p.out.len() > MAX_QUEUED {
                log::warn!("rrdtool takes no commands; the update of {} waits", d.path);
                continue;
            }
            let exists = std::fs::metadata(&d.path).is_ok_and(|m| m.len() > 0);
            if !exists
                && !p
                    .asked
                    .iter()
                    .any(|a| matches!(a, Asked::Create(j) if *j == i))
            {
                p.out
                    .extend_from_slice(format!("create {}{CREATE_LAYOUT}", d.path).as_bytes());
                p.asked.push_back(Asked::Create(i));
            }
            let c = d.counts;
            let cmd = format!(
                "update {} N:{}:{}:{}\n",
                d.path, c.bytes_in, c.bytes_out, c.requests
            );
            p.out.extend_from_slice(cmd.as_bytes());
            p.asked.push_back(Asked::Update(i, c));
        }
    }

    /// Writes what waits and reads what rrdtool answered, never blocking.
    fn pump(&mut self) {
        let Some(p) = self.proc.as_mut() else {
            return;
        };
        let gone = write_some(p).is_err() | read_some(p, &mut self.dbs).is_err();
        if gone {
            log::error!(
                "rrdtool ({}) went away; started again at the next minute",
                self.binary
            );
            if let Some(mut p) = self.proc.take() {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

/// Writes waiting commands until the pipe is full.
fn write_some(p: &mut Proc) -> std::io::Result<()> {
    while !p.out.is_empty() {
        match p.stdin.write(&p.out) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => {
                p.out.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads rrdtool's answers as far as they came, acting on each.
fn read_some(p: &mut Proc, dbs: &mut [Db]) -> std::io::Result<()> {
    let mut buf = [0u8; 4096];
    loop {
        match p.stdout.read(&mut buf) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                for &b in &buf[..n] {
                    if b != b'\n' {
                        // An answer line is short; a runaway one is cut.
                        if p.line.len() < 4096 {
                            p.line.push(b);
                        }
                        continue;
                    }
                    let line = std::mem::take(&mut p.line);
                    answered(p, dbs, &line);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// One line of rrdtool's output: an `OK` or `ERROR` ends the answer to
/// the oldest command.
fn answered(p: &mut Proc, dbs: &mut [Db], line: &[u8]) {
    let ok = line.starts_with(b"OK");
    if !ok && !line.starts_with(b"ERROR") {
        return;
    }
    let Some(asked) = p.asked.pop_front() else {
        return;
    };
    match (asked, ok) {
        (Asked::Update(i, sent), true) => {
            if let Some(d) = dbs.get_mut(i) {
                let c = &mut d.counts;
                c.bytes_in = c.bytes_in.saturating_sub(sent.bytes_in);
                c.bytes_out = c.bytes_out.saturating_sub(sent.bytes_out);
                c.requests = c.requests.saturating_sub(sent.requests);
            }
        }
        (Asked::Create(_), true) => {}
        (a, false) => {
            let what = match a {
                Asked::Create(i) | Asked::Update(i, _) => dbs.get(i).map_or("", |d| &d.path),
            };
            log::error!(
                "rrdtool-response for {what}: {}",
                String::from_utf8_lossy(line)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_go_to_their_database_and_survive_a_new_configuration() {
        let mut r = RrdTool::new(None, &["/a.rrd".into(), "/b.rrd".into(), "/a.rrd".into()])
            .expect("databases");
        assert_eq!(r.dbs.len(), 2, "one counter per file");
        r.account("/a.rrd", 10, 100);
        r.account("/a.rrd", 5, 50);
        r.account("/elsewhere.rrd", 1, 1);
        let a = Counts {
            bytes_in: 15,
            bytes_out: 150,
            requests: 2,
        };
        assert_eq!(r.counts("/a.rrd"), Some(a));
        r.set_dbs(&["/a.rrd".into()]);
        assert_eq!(r.counts("/a.rrd"), Some(a));
        assert_eq!(r.counts("/b.rrd"), None);
        assert!(RrdTool::new(None, &[]).is_none());
    }
}
