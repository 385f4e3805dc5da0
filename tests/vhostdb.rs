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
#[path = "vhostdb/servers.rs"]
mod servers;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;
use servers::{Mariadb, Postgres};

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
{cache}
vhostdb.dbi = ( "sql" => "SELECT docroot FROM vhosts WHERE host='?'",
                "dbtype" => "sqlite3", "dbname" => "v.db", "sqlite3_dbdir" => "{dbdir}" )
$HTTP["host"] != "static.test" {{ vhostdb.backend = "dbi" }}
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

/// `nghttp` (nghttp2-client) with `:authority` = `host`, data from
/// `body` when given: the answer's body.
fn nghttp(port: u16, host: &str, path: &str, body: Option<&Path>) -> String {
    let mut c = Command::new("nghttp");
    c.arg("-H").arg(format!(":authority: {host}"));
    if let Some(b) = body {
        c.arg("-d").arg(b);
    }
    let out = c
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("nghttp (apt-get install nghttp2-client)");
    assert!(
        out.status.success(),
        "nghttp: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_request_body_waits_for_the_lookup_and_reaches_the_handler_over_h1_and_h2() {
    let dir = TempDir::new("vhostdb-body");
    sites(&dir);
    std::fs::write(
        dir.join("sites/a/echo.sh"),
        "printf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf 'site a got: '\ncat\n",
    )
    .unwrap();
    sqlite_db(
        &dir.join("v.db"),
        &[("a.test", dir.join("sites/a").display().to_string())],
    );
    let conf = format!(
        "{}cgi.assign = ( \".sh\" => \"/bin/sh\" )\n",
        sqlite_conf(&dir, "")
    );
    let body_file = dir.join("body");
    std::fs::write(&body_file, "hello-body").unwrap();
    // (mod_cgi before mod_staticfile: lighttpd asks its modules in order.)
    let modules =
        r#""mod_vhostdb", "mod_vhostdb_dbi", "mod_indexfile", "mod_cgi", "mod_staticfile""#;
    let both = Both::start(dir, &conf, modules);
    for port in [both.glint.port, both.lighttpd_port] {
        let mut c = Conn::connect(port);
        let req = "POST /echo.sh HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\nConnection: close\r\n\r\nhello-body";
        c.send(req.as_bytes()).expect("send");
        let r = c.read_response(false).expect("answer");
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, b"site a got: hello-body".as_slice()),
            "port {port}"
        );
        assert_eq!(nghttp(port, "a.test", "/", None), "site a\n", "port {port}");
        assert_eq!(
            nghttp(port, "nosuch.test", "/", None),
            "default\n",
            "port {port}"
        );
        let posted = nghttp(port, "a.test", "/echo.sh", Some(&body_file));
        assert_eq!(posted, "site a got: hello-body", "port {port}");
    }
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
        ("vhostdb.backend = \"nosuch\"", "not supported"),
        (
            "vhostdb.dbi = ( \"sql\" => \"x\", \"dbtype\" => \"oracle\", \"dbname\" => \"v\" )",
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
vhostdb.pgsql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "scram", "password" => "scrampw",
                  "host" => "{sock}", "port" => "{port}" )
$HTTP["host"] =~ "^md5\." {{
  vhostdb.pgsql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "md5user", "password" => "md5pw",
                    "host" => "127.0.0.1", "port" => "{port}" )
}}
$HTTP["host"] =~ "^trust\." {{
  vhostdb.pgsql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "trusty", "host" => "{sock}", "port" => "{port}" )
}}
$HTTP["host"] != "static.test" {{ vhostdb.backend = "pgsql" }}
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

fn mysql_conf(dir: &TempDir, my: &Mariadb) -> String {
    let sql = "SELECT docroot FROM vhosts WHERE host='?'";
    format!(
        r#"server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {{port}}
{{errorlog}}
server.modules += ( {{modules}} )
index-file.names = ( "index.html" )
vhostdb.mysql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "vh", "password" => "vhpw",
                  "sock" => "{sock}" )
$HTTP["host"] =~ "^tcp\." {{
  vhostdb.mysql = ( "sql" => "{sql}", "dbname" => "vhosts", "user" => "vh", "password" => "vhpw",
                    "host" => "127.0.0.1", "port" => "{port}" )
}}
$HTTP["host"] != "static.test" {{ vhostdb.backend = "mysql" }}
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

#[test]
fn dbi_pgsql_and_mysql_drivers_answer_as_on_lighttpd() {
    let dir = TempDir::new("vhostdb-dbi-net");
    sites(&dir);
    let pg = Postgres::init(&dir);
    pg_rows(&pg, &dir);
    let my = Mariadb::init(&dir);
    my.sql(&format!(
        "INSERT INTO vhosts.vhosts VALUES ('my.test', '{b}'), ('my2.test', '{a}'), ('my2.test', '{b}');",
        a = dir.join("sites/a").display(),
        b = dir.join("sites/b").display(),
    ));
    let sql = "SELECT docroot FROM vhosts WHERE host='?'";
    let conf = format!(
        r#"server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {{port}}
{{errorlog}}
server.modules += ( {{modules}} )
index-file.names = ( "index.html" )
vhostdb.backend = "dbi"
vhostdb.dbi = ( "sql" => "{sql}", "dbtype" => "pgsql", "dbname" => "vhosts",
                "host" => "{pgsock}", "port" => {pgport}, "username" => "scram", "password" => "scrampw" )
$HTTP["host"] =~ "^my" {{
  vhostdb.dbi = ( "sql" => "{sql}", "dbtype" => "mysql", "dbname" => "vhosts",
                  "username" => "vh", "password" => "vhpw", "mysql_unix_socket" => "{mysock}" )
}}
"#,
        www = dir.join("www").display(),
        pgsock = pg.sock.display(),
        pgport = pg.port,
        mysock = my.sock().display(),
    );
    let both = Both::start(dir, &conf, DBI_MODULES);
    let cases = [
        ("scram.test", "site a\n"),
        // Two rows: DBI takes the first (lighttpd's pgsql back end, none).
        ("two.test", "site a\n"),
        ("nosuch.test", "default\n"),
        ("my.test", "site b\n"),
        ("my2.test", "site a\n"),
        ("mynosuch.test", "default\n"),
    ];
    for (host, body) in cases {
        let r = both.same(host, "/");
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, body.as_bytes()),
            "{host}"
        );
    }
    drop(both);
}
