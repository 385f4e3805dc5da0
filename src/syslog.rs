//! The system log, for `server.errorlog-use-syslog` and
//! `accesslog.use-syslog`: one datagram per message on the local syslog
//! socket, in the form syslog(3) sends (RFC 3164):
//! `<PRI>Mmm dd hh:mm:ss glint[pid]: message`, PRI being the facility
//! (`server.syslog-facility`, default `daemon`) times 8 plus the severity.
//!
//! The socket is `/dev/log`. `GLINT_SYSLOG_SOCKET` names another one: it
//! exists for the tests only (a datagram socket in a temporary directory
//! standing in for the system's), not as a setting.

use std::io;
use std::os::unix::net::UnixDatagram;

/// The socket syslog daemons read.
const DEV_LOG: &str = "/dev/log";

/// The environment variable that points glint's tests at their own socket.
pub const TEST_SOCKET_ENV: &str = "GLINT_SYSLOG_SOCKET";

/// syslog(3)'s severities glint uses.
pub const LOG_ERR: u8 = 3;
pub const LOG_INFO: u8 = 6;

/// The facility names lighttpd's `server.syslog-facility` takes.
const FACILITIES: &[(&str, u8)] = &[
    ("kern", 0),
    ("user", 1),
    ("mail", 2),
    ("daemon", 3),
    ("auth", 4),
    ("security", 4),
    ("syslog", 5),
    ("lpr", 6),
    ("news", 7),
    ("uucp", 8),
    ("cron", 9),
    ("authpriv", 10),
    ("ftp", 11),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// The facility named `name` (case-insensitive), if syslog has one.
pub fn facility(name: &str) -> Option<u8> {
    FACILITIES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, f)| *f)
}

/// A connection to the system log.
pub struct Syslog {
    sock: UnixDatagram,
    facility: u8,
}

impl Syslog {
    /// Connects to the log socket (`/dev/log`, or the tests' own).
    pub fn open(facility: u8) -> io::Result<Syslog> {
        let path = std::env::var(TEST_SOCKET_ENV).unwrap_or_else(|_| DEV_LOG.to_string());
        let sock = UnixDatagram::unbound()?;
        sock.connect(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        // A log that cannot keep up drops lines; it never stalls the loop.
        sock.set_nonblocking(true)?;
        Ok(Syslog { sock, facility })
    }

    /// Sends `msg` (one line, without its newline) at `severity`; a
    /// message the log does not take now is dropped.
    pub fn send(&self, severity: u8, msg: &[u8]) {
        let pri = u32::from(self.facility) * 8 + u32::from(severity & 7);
        let mut d = format!("<{pri}>{} glint[{}]: ", stamp(), std::process::id()).into_bytes();
        d.extend_from_slice(msg.strip_suffix(b"\n").unwrap_or(msg));
        let _ = self.sock.send(&d);
    }
}

/// The local time as RFC 3164 has it: `Mmm dd hh:mm:ss` (day padded with a space).
fn stamp() -> String {
    use nix::libc;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as libc::time_t;
    // SAFETY: an all-zero `struct tm` is valid; localtime_r fills it and
    // returns NULL (checked) on failure.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return "Jan  1 00:00:00".to_string();
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {:2} {:02}:{:02}:{:02}",
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facilities_and_the_datagram() {
        assert_eq!(facility("daemon"), Some(3));
        assert_eq!(facility("LOCAL7"), Some(23));
        assert_eq!(facility("nope"), None);
        let dir = std::env::temp_dir().join(format!("glint-syslog-unit-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("log");
        let _ = std::fs::remove_file(&path);
        let server = UnixDatagram::bind(&path).expect("bind");
        let client = UnixDatagram::unbound().expect("socket");
        client.connect(&path).expect("connect");
        let s = Syslog {
            sock: client,
            facility: 3,
        };
        s.send(LOG_ERR, b"hello\n");
        let mut buf = [0u8; 256];
        let n = server.recv(&mut buf).expect("recv");
        let got = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(got.starts_with("<27>"), "{got}");
        assert!(
            got.ends_with(&format!(" glint[{}]: hello", std::process::id())),
            "{got}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
