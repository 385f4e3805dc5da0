//! mod_vhostdb: the document root of a request looked up by its host in
//! a real database, on glint and on lighttpd 1.4.69 with the same
//! configuration (Debian's lighttpd-modules-dbi with libdbd-sqlite3,
//! lighttpd-mod-vhostdb-pgsql and lighttpd-modules-mysql), answers
//! compared. SQLite: a file the test writes. PostgreSQL: Debian's
//! `postgresql` server, started by the test in a temporary directory (as
//! the `postgres` user, through setpriv, when the test runs as root),
//! logins by scram-sha-256, md5 and trust. MariaDB: Debian's
//! `mariadb-server`, started by the test on a unix socket and a TCP port.
//! Then what glint adds: a database stopped with SIGSTOP holds up its
//! lookups only (a static file of another host answers at once; past the
//! queue, 503), and a database that went down and came back is used again.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The same configuration on glint and on lighttpd.
struct Both {
    glint: Server,
    lighttpd: Child,
    lighttpd_port: u16,
    _dir: TempDir,
}

impl Drop for Both {
    fn drop(&mut self) {
        let _ = self.lighttpd.kill();
        let _ = self.lighttpd.wait();
    }
}

fn ask(port: u16, host: &str, path: &str) -> Response {
    let mut c = Conn::connect(port);
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    c.send(req.as_bytes()).expect("send");
    c.read_response(false)
        .unwrap_or_else(|e| panic!("{host}{path}: {e}"))
}

impl Both {
    /// `conf` has `{port}` and `{modules}`; glint and lighttpd get it alike.
    fn start(dir: TempDir, conf: &str, modules: &str) -> Both {
        let lport = free_port();
        let lconf = dir.join("lighttpd.conf");
        let log = dir.join("lighttpd.log");
        let text = conf.replace("{modules}", modules);
        let ltext = text
            .replace(
                "{errorlog}",
                &format!("server.errorlog = \"{}\"", log.display()),
            )
            .replace("{port}", &lport.to_string());
        std::fs::write(&lconf, ltext).unwrap();
        let lighttpd = start_lighttpd(&lconf, lport).unwrap_or_else(|e| {
            panic!(
                "{e}: {} (apt-get install lighttpd lighttpd-modules-dbi libdbd-sqlite3 lighttpd-mod-vhostdb-pgsql lighttpd-modules-mysql)",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        let glint = Launch::new()
            .config(&text.replace("{errorlog}", "").replace("{port}", "0"))
            .start();
        Both {
            glint,
            lighttpd,
            lighttpd_port: lport,
            _dir: dir,
        }
    }

    /// The same status and body from both; glint's answer.
    fn same(&self, host: &str, path: &str) -> Response {
        let g = ask(self.glint.port, host, path);
        let l = ask(self.lighttpd_port, host, path);
        assert_eq!(
            (g.status, &g.body),
            (l.status, &l.body),
            "Host: {host} {path}\nglint: {}\nlighttpd: {}",
            g.describe(),
            l.describe()
        );
        g
    }
}

/// Sites: `www/` (the default document root), `sites/a`, `sites/b`.
fn sites(dir: &TempDir) {
    for (d, body) in [
        ("www", "default\n"),
        ("sites/a", "site a\n"),
        ("sites/b", "site b\n"),
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
        std::fs::write(dir.join(d).join("index.html"), body).unwrap();
    }
    std::fs::write(dir.join("sites/file"), "not a directory").unwrap();
}

fn sqlite_db(path: &Path, rows: &[(&str, String)]) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS vhosts (host TEXT, docroot TEXT); DELETE FROM vhosts;",
    )
    .unwrap();
    for (h, d) in rows {
        c.execute("INSERT INTO vhosts VALUES (?1, ?2)", [h, &d.as_str()])
            .unwrap();
    }
}

fn sqlite_conf(dir: &TempDir, cache: &str) -> String {
    format!(
        r#"server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {{port}}
{{errorlog}}
server.modules += ( {{modules}} )
index-file.names = ( "index.html" )
vhostdb.backend = "dbi"
{cache}
vhostdb.dbi = ( "sql" => "SELECT docroot FROM vhosts WHERE host='?'",
                "dbtype" => "sqlite3", "dbname" => "v.db", "sqlite3_dbdir" => "{dbdir}" )
$HTTP["host"] == "static.test" {{ vhostdb.backend = "" }}
"#,
        www = dir.join("www").display(),
        dbdir = dir.path().display(),
    )
}

const DBI_MODULES: &str = r#""mod_vhostdb", "mod_vhostdb_dbi", "mod_indexfile", "mod_staticfile""#;

#[test]
fn sqlite_hosts_answer_as_on_lighttpd() {
    let dir = TempDir::new("vhostdb-sqlite");
    sites(&dir);
    let a = dir.join("sites/a").display().to_string();
    let rows = [
        ("a.test", a.clone()),
        ("b.test:8080", dir.join("sites/b").display().to_string()),
        ("file.test", dir.join("sites/file").display().to_string()),
        ("gone.test", dir.join("sites/gone").display().to_string()),
        ("blank.test", String::new()),
    ];
    sqlite_db(&dir.join("v.db"), &rows);
    let conf = sqlite_conf(&dir, "");
    let both = Both::start(dir, &conf, DBI_MODULES);
    let cases = [
        ("a.test", "/", 200, "site a\n"),
        ("A.Test", "/index.html", 200, "site a\n"),
        ("a.test.", "/", 200, "site a\n"),
        ("a.test:80", "/", 200, "site a\n"),
        ("b.test:8080", "/", 200, "site b\n"),
        ("b.test", "/", 200, "default\n"),
        ("nosuch.test", "/", 200, "default\n"),
        ("blank.test", "/", 200, "default\n"),
        ("static.test", "/", 200, "default\n"),
    ];
    for (host, path, status, body) in cases {
        let r = both.same(host, path);
        assert_eq!(
            (r.status, r.body.as_slice()),
            (status, body.as_bytes()),
            "{host}"
        );
    }
    // A document root that is not a directory: 500 on both.
    assert_eq!(both.same("file.test", "/").status, 500);
    assert_eq!(both.same("gone.test", "/").status, 500);
    // An attacker's Host: refused before any query, and the table intact.
    for host in [
        "x' OR '1'='1",
        "a.test' --",
        "x\\' OR 1=1 --",
        "x'; DROP TABLE vhosts; --",
    ] {
        let r = both.same(host, "/");
        assert_eq!(r.status, 400, "{host}");
    }
    assert_eq!(both.same("a.test", "/").body, b"site a\n");
    assert_eq!(a, rows[0].1);
}

#[test]
fn sqlite_cache_keeps_found_hosts_as_lighttpd_does() {
    for cache in ["", "vhostdb.cache = ( \"max-age\" => 600 )"] {
        let dir = TempDir::new("vhostdb-cache");
        sites(&dir);
        let db = dir.join("v.db");
        sqlite_db(
            &db,
            &[("a.test", dir.join("sites/a").display().to_string())],
        );
        let conf = sqlite_conf(&dir, cache);
        let b_root = dir.join("sites/b").display().to_string();
        let both = Both::start(dir, &conf, DBI_MODULES);
        assert_eq!(both.same("a.test", "/").body, b"site a\n");
        // The row changes: without a cache the next request sees it, with
        // one the host keeps its document root.
        sqlite_db(&db, &[("a.test", b_root.clone())]);
        let r = both.same("a.test", "/");
        let want: &[u8] = if cache.is_empty() {
            b"site b\n"
        } else {
            b"site a\n"
        };
        assert_eq!(r.body, want, "cache {cache:?}");
    }
}

#[test]
fn unprovided_back_ends_are_refused_with_their_line() {
    let dir = TempDir::new("vhostdb-refused");
    for (opt, word) in [
        ("vhostdb.backend = \"ldap\"", "ldap"),
        ("vhostdb.ldap = ( \"host\" => \"x\" )", "vhostdb.ldap"),
        ("vhostdb.backend = \"nosuch\"", "not supported"),
        (
            "vhostdb.dbi = ( \"sql\" => \"x\", \"dbtype\" => \"mysql\", \"dbname\" => \"v\" )",
            "dbtype",
        ),
    ] {
        let path = dir.join("g.conf");
        std::fs::write(&path, format!("server.document-root = \"/tmp\"\n{opt}\n")).unwrap();
        let out = Command::new(glint_bin())
            .arg("-t")
            .arg("-f")
            .arg(&path)
            .output()
            .expect("glint -t");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{opt}: accepted");
        assert!(
            err.contains("g.conf:2") && err.contains(word),
            "{opt}: {err}"
        );
    }
}

// ------------------------------------------------------------ PostgreSQL

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
struct Postgres {
    child: Option<Child>,
    data: PathBuf,
    sock: PathBuf,
    port: u16,
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
    fn init(dir: &TempDir) -> Postgres {
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

    fn start(&mut self) {
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
    fn pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.data.join("postmaster.pid")).ok()?;
        text.lines().next().and_then(|l| l.trim().parse().ok())
    }

    /// `sig` to the whole server: the postmaster and every process it
    /// forked (each backend is a session of its own, out of its group).
    fn signal_all(&self, sig: nix::sys::signal::Signal) {
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
    fn stop(&mut self) {
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

    fn psql(&self, db: &str, sql: &str) {
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

fn pgsql_conf(dir: &TempDir, pg: &Postgres) -> String {
    let sql = "SELECT docroot FROM vhosts WHERE host='?'";
    let sock = pg.sock.display();
    let port = pg.port;
    format!(
        r#"server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {{port}}
{{errorlog}}
server.modules += ( {{modules}} )
index-file.names = ( "index.html" )
vhostdb.backend = "pgsql"
vhostdb.pgsql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "scram", "password" => "scrampw",
                  "host" => "{sock}", "port" => "{port}" )
$HTTP["host"] =~ "^md5\." {{
  vhostdb.pgsql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "md5user", "password" => "md5pw",
                    "host" => "127.0.0.1", "port" => "{port}" )
}}
$HTTP["host"] =~ "^trust\." {{
  vhostdb.pgsql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "trusty", "host" => "{sock}", "port" => "{port}" )
}}
$HTTP["host"] == "static.test" {{ vhostdb.backend = "" }}
"#,
        www = dir.join("www").display(),
    )
}

const PG_MODULES: &str = r#""mod_vhostdb", "mod_vhostdb_pgsql", "mod_indexfile", "mod_staticfile""#;

fn pg_rows(pg: &Postgres, dir: &TempDir) {
    let a = dir.join("sites/a").display().to_string();
    let b = dir.join("sites/b").display().to_string();
    pg.psql(
        "vhosts",
        &format!(
            "INSERT INTO vhosts VALUES ('scram.test', '{a}'), ('md5.test', '{b}'), ('trust.test', '{a}'),
             ('two.test', '{a}'), ('two.test', '{b}'), ('file.test', '{}');",
            dir.join("sites/file").display()
        ),
    );
}

#[test]
fn pgsql_logins_and_answers_as_on_lighttpd() {
    let dir = TempDir::new("vhostdb-pgsql");
    sites(&dir);
    let pg = Postgres::init(&dir);
    pg_rows(&pg, &dir);
    let conf = pgsql_conf(&dir, &pg);
    let both = Both::start(dir, &conf, PG_MODULES);
    let cases = [
        ("scram.test", 200, "site a\n"),
        ("md5.test", 200, "site b\n"),
        ("trust.test", 200, "site a\n"),
        ("nosuch.test", 200, "default\n"),
        // Two rows: PostgreSQL's back end wants exactly one.
        ("two.test", 200, "default\n"),
        ("static.test", 200, "default\n"),
        ("file.test", 500, ""),
        ("x'or'1'='1", 400, ""),
    ];
    for (host, status, body) in cases {
        let r = both.same(host, "/");
        assert_eq!(r.status, status, "{host}");
        if status == 200 {
            assert_eq!(r.body, body.as_bytes(), "{host}");
        }
    }
    drop(both);
    drop(pg);
}

#[test]
fn a_stopped_database_holds_up_its_lookups_only_and_a_restarted_one_is_used_again() {
    let dir = TempDir::new("vhostdb-pgstop");
    sites(&dir);
    let mut pg = Postgres::init(&dir);
    pg_rows(&pg, &dir);
    let conf = pgsql_conf(&dir, &pg)
        .replace("{port}", "0")
        .replace("{errorlog}", "")
        .replace("{modules}", PG_MODULES);
    let glint = Launch::new().config(&conf).start();
    let port = glint.port;
    assert_eq!(ask(port, "scram.test", "/").body, b"site a\n");

    // Stopped: lookups wait (each for at most its I/O time-out), past the
    // queue they get 503 at once, and a host without a lookup answers at
    // once all the while.
    pg.signal_all(nix::sys::signal::Signal::SIGSTOP);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiting: Vec<_> = (0..80)
        .map(|i| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut c = Conn::connect(port);
                let req = format!("GET / HTTP/1.1\r\nHost: q{i}.test\r\nConnection: close\r\n\r\n");
                c.send(req.as_bytes()).expect("send");
                let status = c
                    .read_response_by(false, Instant::now() + Duration::from_secs(40))
                    .map(|r| r.status);
                let _ = tx.send(status.clone());
                status
            })
        })
        .collect();
    let t = Instant::now();
    let r = ask(port, "static.test", "/");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, b"default\n".as_slice())
    );
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "static answer took {:?}",
        t.elapsed()
    );
    // While the database is stopped, only the requests past the queue are
    // answered (503, at once).
    let first = rx.recv_timeout(Duration::from_secs(5));
    assert_eq!(
        first,
        Ok(Ok(503)),
        "the first answer while the database is stopped"
    );
    pg.signal_all(nix::sys::signal::Signal::SIGCONT);
    let statuses: Vec<u16> = waiting
        .into_iter()
        .map(|h| h.join().expect("client").expect("an answer"))
        .collect();
    let n503 = statuses.iter().filter(|&&s| s == 503).count();
    assert!((1..80).contains(&n503), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| matches!(s, 200 | 503)),
        "{statuses:?}"
    );

    // Down: 500, as lighttpd; back up: found again.
    pg.stop();
    assert_eq!(ask(port, "md5.test", "/").status, 500);
    assert_eq!(ask(port, "static.test", "/").status, 200);
    pg.start();
    let back = wait_for(Duration::from_secs(20), || {
        ask(port, "md5.test", "/").body == b"site b\n"
    });
    assert!(back, "glint did not use the restarted database");
    assert_eq!(ask(port, "scram.test", "/").body, b"site a\n");
    drop(glint);
}

// --------------------------------------------------------------- MariaDB

/// A MariaDB server of the test's own (Debian's mariadb-server): unix
/// socket in `dir`, TCP on 127.0.0.1:`port`. Killed on drop.
struct Mariadb {
    child: Option<Child>,
    base: PathBuf,
    port: u16,
}

impl Mariadb {
    fn init(dir: &TempDir) -> Mariadb {
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
        let out = install
            .output()
            .expect("mariadb-install-db (apt-get install mariadb-server)");
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

    fn sock(&self) -> PathBuf {
        self.base.join("my.sock")
    }

    fn start(&mut self) {
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

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id() as i32, nix::sys::signal::Signal::SIGTERM);
            let gone = wait_for(Duration::from_secs(30), || {
                matches!(c.try_wait(), Ok(Some(_)))
            });
            assert!(gone, "mariadbd did not stop");
        }
    }

    fn sql(&self, sql: &str) {
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

fn mysql_conf(dir: &TempDir, my: &Mariadb) -> String {
    let sql = "SELECT docroot FROM vhosts WHERE host='?'";
    format!(
        r#"server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {{port}}
{{errorlog}}
server.modules += ( {{modules}} )
index-file.names = ( "index.html" )
vhostdb.backend = "mysql"
vhostdb.mysql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "vh", "password" => "vhpw",
                  "sock" => "{sock}" )
$HTTP["host"] =~ "^tcp\." {{
  vhostdb.mysql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "vh", "password" => "vhpw",
                    "host" => "127.0.0.1", "port" => "{port}" )
}}
$HTTP["host"] == "static.test" {{ vhostdb.backend = "" }}
"#,
        www = dir.join("www").display(),
        sock = my.sock().display(),
        port = my.port,
    )
}

const MYSQL_MODULES: &str =
    r#""mod_vhostdb", "mod_vhostdb_mysql", "mod_indexfile", "mod_staticfile""#;

#[test]
fn mariadb_answers_as_on_lighttpd_and_is_used_again_after_a_restart() {
    let dir = TempDir::new("vhostdb-mariadb");
    sites(&dir);
    let mut my = Mariadb::init(&dir);
    my.sql(&format!(
        "INSERT INTO vhosts.vhosts VALUES ('a.test', '{a}'), ('tcp.test', '{b}'), ('file.test', '{f}'),
         ('null.test', NULL);",
        a = dir.join("sites/a").display(),
        b = dir.join("sites/b").display(),
        f = dir.join("sites/file").display(),
    ));
    let conf = mysql_conf(&dir, &my);
    let both = Both::start(dir, &conf, MYSQL_MODULES);
    let cases = [
        ("a.test", 200, "site a\n"),
        ("tcp.test", 200, "site b\n"),
        ("nosuch.test", 200, "default\n"),
        ("null.test", 200, "default\n"),
        ("static.test", 200, "default\n"),
        ("file.test", 500, ""),
        ("x\\' OR 1=1 -- ", 400, ""),
    ];
    for (host, status, body) in cases {
        let r = both.same(host, "/");
        assert_eq!(r.status, status, "{host}");
        if status == 200 {
            assert_eq!(r.body, body.as_bytes(), "{host}");
        }
    }
    // Down: 500, and the other hosts still answer; back up: used again.
    let port = both.glint.port;
    my.stop();
    assert_eq!(ask(port, "a.test", "/").status, 500);
    assert_eq!(ask(port, "static.test", "/").status, 200);
    my.start();
    let back = wait_for(Duration::from_secs(20), || {
        ask(port, "a.test", "/").body == b"site a\n"
    });
    assert!(back, "glint did not use the restarted database");
}
