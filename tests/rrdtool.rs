//! mod_rrdtool through Debian's real `rrdtool -`: the requests and bytes
//! of a scope reach its database, read back with `rrdtool info` and
//! `rrdtool fetch`; an rrdtool that never answers holds nothing up. Against
//! glint (which also writes what it counted when it stops), and against
//! lighttpd with `GLINT_BLACKBOX_SERVER=lighttpd` (which writes only on
//! the minute: the test then waits for it).

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn rrdtool() -> String {
    let ok = Command::new("sh")
        .args(["-c", "command -v rrdtool"])
        .output()
        .expect("sh");
    let path = String::from_utf8_lossy(&ok.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "rrdtool is not installed (.ci/run installs it)"
    );
    path
}

fn unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Waits, if need be, until a minute has at least 15 s left: the test's
/// requests then all fall before the next minute's update.
fn away_from_the_minute() {
    let left = 60 - unix() % 60;
    if left < 15 {
        std::thread::sleep(Duration::from_secs(left + 1));
    }
}

fn start(d: &Docroot, binary: &str, db: &Path) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.modules += ( \"mod_rrdtool\" )\n\
         rrdtool.binary = \"{binary}\"\n\
         $HTTP[\"url\"] =~ \"^/counted/\" {{ rrdtool.db-name = \"{}\" }}\n",
        d.root.display(),
        db.display()
    );
    Server::start_config(&conf)
}

/// `rrdtool info`'s `key = value` lines.
fn info(db: &Path) -> Vec<(String, String)> {
    let out = Command::new(rrdtool())
        .arg("info")
        .arg(db)
        .output()
        .expect("rrdtool info");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

fn value<'a>(info: &'a [(String, String)], key: &str) -> Option<&'a str> {
    info.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[test]
fn requests_and_bytes_reach_the_database_through_rrdtool() {
    let d = Docroot::new();
    d.file("counted/page.txt", &[b'x'; 1000]);
    d.file("other.txt", b"not counted");
    let dir = TempDir::new("rrd");
    let db = dir.join("traffic.rrd");
    away_from_the_minute();
    let mut s = start(&d, &rrdtool(), &db);
    let mut sent = 0;
    for i in 0..5 {
        let req = format!("GET /counted/page.txt?{i} HTTP/1.0\r\n\r\n");
        sent += req.len();
        let r = fetch(&s, req.as_bytes());
        assert_eq!(r.status, 200);
    }
    // Another scope: no database, not counted.
    assert_eq!(s.get("/other.txt").expect("GET").status, 200);
    match s.kind {
        Kind::Glint => s.signal_and_exit_cleanly(SIGINT, Duration::from_secs(10)),
        Kind::Lighttpd => {
            // lighttpd writes on the minute only.
            let written = wait_for(Duration::from_secs(70), || {
                value(&info(&db), "ds[Requests].last_ds").is_some_and(|v| v != "U")
            });
            assert!(written, "no update within the minute");
        }
    }
    let i = info(&db);
    assert_eq!(value(&i, "step"), Some("60"), "lighttpd's layout");
    for ds in ["InOctets", "OutOctets", "Requests"] {
        assert_eq!(value(&i, &format!("ds[{ds}].type")), Some("ABSOLUTE"));
    }
    assert_eq!(value(&i, "rra[11].cf"), Some("MIN"), "12 archives");
    assert_eq!(value(&i, "ds[Requests].last_ds"), Some("5"), "{i:?}");
    assert_eq!(
        value(&i, "ds[InOctets].last_ds"),
        Some(sent.to_string().as_str())
    );
    let out: u64 = value(&i, "ds[OutOctets].last_ds")
        .and_then(|v| v.parse().ok())
        .expect("OutOctets");
    assert!((5 * 1000..5 * 1400).contains(&out), "{out} bytes out");
    // And it is a database rrdtool reads.
    let f = Command::new(rrdtool())
        .arg("fetch")
        .arg(&db)
        .args(["AVERAGE", "--start", "-300"])
        .output()
        .expect("rrdtool fetch");
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
    assert!(String::from_utf8_lossy(&f.stdout).contains("InOctets"));
}

/// rrdtool must not hold up the event loop: one that takes its commands
/// and never answers leaves requests answered at once, and the stop
/// bounded. (glint only: lighttpd 1.4.69 waits for each answer, so such
/// an rrdtool stops it at the first minute.)
#[test]
fn an_rrdtool_that_never_answers_holds_nothing_up() {
    if server_kind() == Kind::Lighttpd {
        return;
    }
    let d = Docroot::new();
    d.file("counted/page.txt", b"counted");
    let dir = TempDir::new("rrd");
    let mute = dir.join("mute-rrdtool");
    std::fs::write(&mute, "#!/bin/sh\nexec cat >/dev/null\n").expect("script");
    set_mode(&mute, 0o755);
    let mut s = start(&d, mute.to_str().expect("path"), &dir.join("x.rrd"));
    for _ in 0..10 {
        let t = Instant::now();
        assert_eq!(s.get("/counted/page.txt").expect("GET").status, 200);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
    let t = Instant::now();
    s.signal_and_exit_cleanly(SIGINT, Duration::from_secs(8));
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "stop took {:?}",
        t.elapsed()
    );
}
