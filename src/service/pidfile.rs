//! `server.pid-file`: the supervisor's (or the only process's) pid, written
//! once the listeners are bound, removed at a clean exit.
//!
//! The file is opened before privileges are dropped and kept open, so that
//! glint can at least empty it at exit when it may no longer unlink it (a
//! root-owned directory, or a path outside `server.chroot`). An empty file,
//! or one naming a process that is gone or is not glint, is stale and is
//! replaced.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::{getpid, Pid};

/// An open pid file.
pub struct PidFile {
    path: PathBuf,
    file: File,
    written: Option<i32>,
}

/// Fails when `path` names a running glint other than this process (or
/// `upgrading`, the glint this one takes over from).
pub fn check_not_running(path: &Path, upgrading: Option<i32>) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("server.pid-file {}: {e}", path.display())),
    };
    let Ok(pid) = text.trim().parse::<i32>() else {
        return Ok(());
    };
    if pid <= 0 || pid == getpid().as_raw() || Some(pid) == upgrading {
        return Ok(());
    }
    let alive = match kill(Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(Errno::EPERM) => true,
        Err(_) => false,
    };
    if alive && is_glint(pid) {
        return Err(format!(
            "another glint is running with pid {pid} (server.pid-file {})",
            path.display()
        ));
    }
    Ok(())
}

/// Whether process `pid` runs glint, from /proc. Without /proc (not Linux),
/// a live process is taken to be glint: refusing to start is the safe side.
fn is_glint(pid: i32) -> bool {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if let Ok(comm) = std::fs::read_to_string(proc_dir.join("comm")) {
        if comm.trim() == "glint" {
            return true;
        }
    }
    if let Ok(cmdline) = std::fs::read(proc_dir.join("cmdline")) {
        let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
        let name = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
        return name == b"glint";
    }
    !Path::new("/proc/self").exists()
}

impl PidFile {
    /// Opens (creating) the pid file; nothing is written yet.
    pub fn open(path: &Path) -> Result<PidFile, String> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(path)
            .map_err(|e| format!("server.pid-file {}: {e}", path.display()))?;
        Ok(PidFile {
            path: path.to_path_buf(),
            file,
            written: None,
        })
    }

    /// Writes this process's pid (call it in the process that stays).
    pub fn write_pid(&mut self) -> io::Result<()> {
        let pid = getpid().as_raw();
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(format!("{pid}\n").as_bytes())?;
        self.file.flush()?;
        self.written = Some(pid);
        Ok(())
    }

    /// Removes the file at a clean exit, if it still names this process;
    /// when it cannot be removed, empties it.
    pub fn remove(mut self) {
        let Some(pid) = self.written else {
            return;
        };
        let ours = std::fs::read_to_string(&self.path)
            .map(|t| t.trim().parse::<i32>().ok() == Some(pid))
            .unwrap_or(false);
        if ours && std::fs::remove_file(&self.path).is_ok() {
            return;
        }
        let mut current = String::new();
        let _ = self.file.seek(SeekFrom::Start(0));
        let _ = io::Read::read_to_string(&mut self.file, &mut current);
        if current.trim().parse::<i32>().ok() == Some(pid) {
            let _ = self.file.set_len(0);
        }
    }
}
