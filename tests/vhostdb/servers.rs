//! The database servers of tests/vhostdb.rs, each started by the test in
//! its temporary directory and stopped on drop: Debian's PostgreSQL (as
//! the `postgres` user when the test runs as root) and MariaDB.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;

/// Debian's PostgreSQL server binaries (the newest under /usr/lib/postgresql).
fn pg_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed (apt-get install postgresql)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("postgres").exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .expect("no /usr/lib/postgresql/*/bin/postgres (apt-get install postgresql)")
}

/// A PostgreSQL server of the test's own: unix socket in `dir`, TCP on
/// 127.0.0.1:`port`. Killed on drop.
pub struct Postgres {
    child: Option<Child>,
    pub data: PathBuf,
    pub sock: PathBuf,
    pub port: u16,
}

/// Runs `cmd` as the `postgres` user when the test runs as root
/// (PostgreSQL refuses to run as root). setpriv execs the program itself
/// (runuser would stay as its parent, and stop itself when it is stopped).
fn as_pg_user(bin: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=postgres",
            "--regid=postgres",
            "--init-groups",
            "--",
        ])
        .arg(bin);
        c
    } else {
        Command::new(bin)
    }
}

impl Postgres {
    pub fn init(dir: &TempDir) -> Postgres {
        let base = dir.join("pg");
        std::fs::create_dir_all(&base).unwrap();
        if is_root() {
            let st = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&base)
                .status()
                .expect("chown");
            assert!(st.success(), "chown postgres {}", base.display());
        }
        let pw = base.join("pw");
        std::fs::write(&pw, "adminpw\n").unwrap();
        let data = base.join("data");
        let out = as_pg_user(&pg_bin().join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "admin",
                "-E",
                "UTF8",
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
            ])
            .arg(format!("--pwfile={}", pw.display()))
            .output()
            .expect("initdb");
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // trust for one user, md5 (over TCP) for another, SCRAM for the rest.
        let hba = data.join("pg_hba.conf");
        let rest = std::fs::read_to_string(&hba).unwrap();
        std::fs::write(
            &hba,
            format!("local all trusty trust\nhost all md5user 127.0.0.1/32 md5\n{rest}"),
        )
        .unwrap();
        let mut pg = Postgres {
            child: None,
            data,
            sock: base,
            port: free_port(),
        };
        pg.start();
        pg.psql("postgres", "CREATE DATABASE vhosts");
        pg.psql(
            "vhosts",
            "SET password_encryption = 'md5'; CREATE USER md5user PASSWORD 'md5pw';
             SET password_encryption = 'scram-sha-256'; CREATE USER scram PASSWORD 'scrampw';
             CREATE USER trusty;
             CREATE TABLE vhosts (host text, docroot text);
             GRANT SELECT ON vhosts TO md5user, scram, trusty;",
        );
        pg
    }

    pub fn start(&mut self) {
        let child = as_pg_user(&pg_bin().join("postgres"))
            .arg("-D")
            .arg(&self.data)
            .arg("-k")
            .arg(&self.sock)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.sock.join("pg.log")).expect("pg.log"))
            .spawn()
            .expect("postgres");
        self.child = Some(child);
        let sock = self.sock.join(format!(".s.PGSQL.{}", self.port));
        let up = wait_for(Duration::from_secs(30), || {
            sock.exists() && std::os::unix::net::UnixStream::connect(&sock).is_ok()
        });
        assert!(up, "postgres did not start on {}", sock.display());
    }

    /// The postmaster's pid, from its pid file.
    pub fn pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.data.join("postmaster.pid")).ok()?;
        text.lines().next().and_then(|l| l.trim().parse().ok())
    }

    /// `sig` to the whole server: the postmaster and every process it
    /// forked (each backend is a session of its own, out of its group).
    pub fn signal_all(&self, sig: nix::sys::signal::Signal) {
        let pm = self.pid().expect("postmaster.pid");
        signal(pm, sig);
        for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1));
            if ppid == Some(pm.to_string().as_str()) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
        }
    }

    /// A fast shutdown (SIGINT), waited for.
    pub fn stop(&mut self) {
        let pid = self.pid().expect("postmaster.pid");
        signal(pid, nix::sys::signal::Signal::SIGINT);
        if let Some(mut c) = self.child.take() {
            let gone = wait_for(Duration::from_secs(30), || {
                matches!(c.try_wait(), Ok(Some(_)))
            });
            let log = std::fs::read_to_string(self.sock.join("pg.log")).unwrap_or_default();
            assert!(gone, "postgres did not stop: {log}");
        }
    }

    pub fn psql(&self, db: &str, sql: &str) {
        let out = Command::new("psql")
            .env("PGPASSWORD", "adminpw")
            .arg("-h")
            .arg(&self.sock)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "admin",
                "-d",
                db,
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .expect("psql (apt-get install postgresql-client)");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            use nix::sys::signal::{kill, Signal};
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = kill(pid, Signal::SIGCONT);
            let _ = kill(pid, Signal::SIGQUIT);
        }
        if let Some(mut c) = self.child.take() {
            let _ = wait_for(Duration::from_secs(10), || {
                matches!(c.try_wait(), Ok(Some(_)))
            });
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A MariaDB server of the test's own (Debian's mariadb-server): unix
/// socket in `dir`, TCP on 127.0.0.1:`port`. Killed on drop.
pub struct Mariadb {
    child: Option<Child>,
    pub base: PathBuf,
    pub port: u16,
}

impl Mariadb {
    pub fn init(dir: &TempDir) -> Mariadb {
        let base = dir.join("my");
        std::fs::create_dir_all(&base).unwrap();
        let mut install = Command::new("mariadb-install-db");
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", base.join("data").display()))
            .arg("--auth-root-authentication-method=socket");
        if is_root() {
            install.arg("--user=root");
        }
        // Two bootstraps at once (tests of one binary run in parallel)
        // trip over each other's temporary tables: one at a time.
        static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let out = {
            let _one = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
            install
                .output()
                .expect("mariadb-install-db (apt-get install mariadb-server)")
        };
        assert!(
            out.status.success(),
            "mariadb-install-db: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut my = Mariadb {
            child: None,
            base,
            port: free_port(),
        };
        my.start();
        my.sql(
            "CREATE DATABASE vhosts;
             CREATE USER 'vh'@'localhost' IDENTIFIED BY 'vhpw';
             CREATE USER 'vh'@'127.0.0.1' IDENTIFIED BY 'vhpw';
             GRANT SELECT ON vhosts.* TO 'vh'@'localhost', 'vh'@'127.0.0.1';
             CREATE TABLE vhosts.vhosts (host VARCHAR(255), docroot VARCHAR(255));",
        );
        my
    }

    pub fn sock(&self) -> PathBuf {
        self.base.join("my.sock")
    }

    pub fn start(&mut self) {
        let mut cmd = Command::new("mariadbd");
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", self.base.join("data").display()))
            .arg(format!("--socket={}", self.sock().display()))
            .arg(format!("--pid-file={}", self.base.join("my.pid").display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg("--skip-log-bin");
        if is_root() {
            cmd.arg("--user=root");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.base.join("my.log")).expect("my.log"))
            .spawn()
            .expect("mariadbd (apt-get install mariadb-server)");
        self.child = Some(child);
        let sock = self.sock();
        let up = wait_for(Duration::from_secs(30), || {
            std::os::unix::net::UnixStream::connect(&sock).is_ok()
        });
        let log = std::fs::read_to_string(self.base.join("my.log")).unwrap_or_default();
        assert!(up, "mariadbd did not start: {log}");
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id() as i32, nix::sys::signal::Signal::SIGTERM);
            let gone = wait_for(Duration::from_secs(30), || {
                matches!(c.try_wait(), Ok(Some(_)))
            });
            assert!(gone, "mariadbd did not stop");
        }
    }

    pub fn sql(&self, sql: &str) {
        let out = Command::new("mariadb")
            .arg("--no-defaults")
            .arg("-S")
            .arg(self.sock())
            .args(["-u", "root", "-e", sql])
            .output()
            .expect("mariadb (the client)");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Mariadb {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
