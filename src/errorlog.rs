//! The error log: a small `log::Log` that writes one line per record,
//! `YYYY-MM-DD HH:MM:SS: (module) message`, to stderr or to the file named by
//! `server.errorlog`.
//!
//! Each record is one `write` on a file opened with `O_APPEND`, so lines from
//! several worker processes do not interleave. SIGHUP calls [`reopen`]: the
//! next line goes to a file opened anew by name (after logrotate renamed the
//! old one); a line is written either before the reopen, to the old file, or
//! after it, to the new one.
//!
//! The level filter comes from `RUST_LOG` (default `info`), as with `env_logger`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use log::{Log, Metadata, Record};

enum Sink {
    Stderr,
    File { path: PathBuf, file: File },
    Syslog(crate::syslog::Syslog),
}

static SINK: Mutex<Sink> = Mutex::new(Sink::Stderr);

struct ErrorLog {
    /// Used only for its `RUST_LOG` filter.
    filter: env_logger::Logger,
}

impl Log for ErrorLog {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.filter.filter()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.filter.matches(record) {
            return;
        }
        let module = record
            .module_path()
            .map(|m| m.rsplit("::").next().unwrap_or(m))
            .unwrap_or("glint");
        let level = match record.level() {
            log::Level::Error => "error: ",
            log::Level::Warn => "warning: ",
            _ => "",
        };
        let Ok(mut sink) = SINK.lock() else {
            return;
        };
        if let Sink::Syslog(s) = &*sink {
            // syslog stamps the time itself.
            let msg = format!("({module}) {level}{}", record.args());
            return s.send(crate::syslog::LOG_ERR, msg.as_bytes());
        }
        let line = format!(
            "{}: ({module}) {level}{}\n",
            local_timestamp(),
            record.args()
        );
        write_line(&mut sink, line.as_bytes());
    }

    fn flush(&self) {}
}

fn write_line(sink: &mut Sink, line: &[u8]) {
    match sink {
        Sink::Syslog(_) => {}
        Sink::Stderr => {
            let _ = io::stderr().write_all(line);
        }
        Sink::File { file, .. } => {
            if file.write_all(line).is_err() {
                let _ = io::stderr().write_all(line);
            }
        }
    }
}

/// Installs the logger, writing to stderr until [`open_file`] names a file.
pub fn init() {
    let filter =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).build();
    let max = filter.filter();
    if log::set_boxed_logger(Box::new(ErrorLog { filter })).is_ok() {
        log::set_max_level(max);
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().append(true).create(true).open(path)
}

/// Sends the log to `path` from now on (`server.errorlog`). Opened before
/// privileges are dropped, so a root-owned log directory works.
pub fn open_file(path: &Path) -> io::Result<()> {
    let file = open_append(path)?;
    if let Ok(mut sink) = SINK.lock() {
        *sink = Sink::File {
            path: path.to_path_buf(),
            file,
        };
    }
    Ok(())
}

/// Sends the log to the system log from now on
/// (`server.errorlog-use-syslog`), under `facility`.
pub fn open_syslog(facility: u8) -> io::Result<()> {
    let s = crate::syslog::Syslog::open(facility)?;
    if let Ok(mut sink) = SINK.lock() {
        *sink = Sink::Syslog(s);
    }
    Ok(())
}

/// Opens the log file again by name (SIGHUP). On failure the old file stays
/// in use and the error is returned.
pub fn reopen() -> io::Result<()> {
    let Ok(mut sink) = SINK.lock() else {
        return Ok(());
    };
    if let Sink::File { path, file } = &mut *sink {
        *file = open_append(path)?;
    }
    Ok(())
}

/// The local time as `YYYY-MM-DD HH:MM:SS`.
fn local_timestamp() -> String {
    use nix::libc;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let t = now as libc::time_t;
    // SAFETY: `tm` is plain data; localtime_r writes it and reads only `t`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if !ok {
        return format!("@{now}");
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}
