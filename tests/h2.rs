//! HTTP/2 end to end: glint's binary with real clients. curl with
//! `--http2` over TLS (ALPN) and `--http2-prior-knowledge` on cleartext,
//! curl's `Upgrade: h2c`, `nghttp` and `h2load` (Debian's nghttp2-client),
//! for every kind of response glint serves; and `tests/h2/h2client.py`
//! (the Python `hpack` package of `h2`) for the protocol's abuse cases,
//! each shown at its bound with glint's CPU time and memory measured
//! before and after. `.ci/run` installs the tools.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A response as curl saw it.
#[derive(Debug)]
struct Got {
    status: u16,
    /// `%{http_version}`: "2" for HTTP/2.
    version: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    stderr: String,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        text(&self.body)
    }
}

/// Runs curl with `args` on `url`; the headers and body go through files
/// of `tmp`, the status and protocol version through `-w`.
fn curl(tmp: &TempDir, args: &[&str], url: &str) -> Got {
    let hdr = tmp.join("curl-headers");
    let body = tmp.join("curl-body");
    let _ = std::fs::remove_file(&hdr);
    let _ = std::fs::remove_file(&body);
    let o = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-D"])
        .arg(&hdr)
        .arg("-o")
        .arg(&body)
        .args(["-w", "%{http_code} %{http_version}"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl");
    let w = text(&o.stdout);
    let mut it = w.split_whitespace();
    let status = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let version = it.next().unwrap_or("").to_string();
    // The last head (after a 101 or a 100) is the response's.
    let raw = std::fs::read_to_string(&hdr).unwrap_or_default();
    let last = raw
        .split("\r\n\r\n")
        .filter(|h| !h.trim().is_empty())
        .last()
        .unwrap_or("")
        .to_string();
    let headers = last
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Got {
        status,
        version,
        headers,
        body: std::fs::read(&body).unwrap_or_default(),
        stderr: text(&o.stderr),
    }
}

fn h2c(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// curl's arguments for HTTPS to `localhost:port` with the test CA.
fn tls_args(certs: &Path, port: u16) -> Vec<String> {
    vec![
        "--cacert".into(),
        certs.join("ca.pem").display().to_string(),
        "--resolve".into(),
        format!("localhost:{port}:127.0.0.1"),
    ]
}

/// curl's two ways to glint over HTTP/2: prior knowledge on the plain
/// port, ALPN on the TLS one (`certs` from [`make_cert`]); each with its
/// name and base URL.
fn transports(certs: &Path, port: u16, tls_port: u16) -> [(&'static str, Vec<String>, String); 2] {
    let mut on_tls = vec!["--http2".to_string()];
    on_tls.extend(tls_args(certs, tls_port));
    [
        (
            "h2c",
            vec!["--http2-prior-knowledge".to_string()],
            h2c(port),
        ),
        ("tls", on_tls, format!("https://localhost:{tls_port}")),
    ]
}

/// The fixture of most tests: index files, a directory to list, a file
/// for ranges, a large one.
fn fixture() -> Docroot {
    let d = Docroot::new();
    d.file("index.html", b"<h1>glint over HTTP/2</h1>\n")
        .file("a.txt", b"0123456789abcdefghij")
        .file("sub/index.html", b"sub index\n")
        .file("list/one.txt", b"1")
        .file("list/two.txt", b"22")
        .file("big.bin", &pseudo_random(5_000_000, 7))
        .file("mid.bin", &pseudo_random(25_000, 3));
    d
}

/// A server on plain 127.0.0.1:0 (HTTP/1 and h2c) and, with `tls_port`,
/// HTTPS there; `extra` configuration lines after.
fn server(d: &Docroot, certs: Option<(&Path, u16)>, extra: &str) -> Server {
    let mut conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += ( \"mod_status\", \"mod_redirect\", \"mod_rewrite\", \"mod_accesslog\" )\n",
        d.root.display()
    );
    let mut listeners = 1;
    if let Some((dir, port)) = certs {
        conf += &format!(
            "server.modules += ( \"mod_openssl\" )\nssl.pemfile = \"{}/server.pem\"\n\
             $SERVER[\"socket\"] == \"127.0.0.1:{port}\" {{\n  ssl.engine = \"enable\"\n}}\n",
            dir.display()
        );
        listeners = 2;
    }
    conf += extra;
    Launch::new().config(&conf).listeners(listeners).start()
}

fn have(tool: &str) -> bool {
    let ok = Command::new(tool).arg("--version").output().is_ok();
    assert!(
        ok,
        "{tool} is needed (apt-get install nghttp2-client; pip install h2)"
    );
    ok
}

/// glint's CPU time (ms) and resident memory (KiB) across `f`.
struct Cost {
    cpu_ms: u64,
    rss_before: u64,
    rss_after: u64,
}

fn measure<T>(s: &Server, f: impl FnOnce() -> T) -> (T, Cost) {
    // One HTTP/2 exchange first, so that what the first connection costs
    // any server (the pools, the allocator's arenas) is not the attack's.
    h2client(s.port, &["order", "/index.html", "/index.html", "2"]);
    let ticks = 100; // USER_HZ on Linux
    let (c0, r0) = (s.cpu_ticks(), s.rss_kb());
    let v = f();
    let (c1, r1) = (s.cpu_ticks(), s.rss_kb());
    (
        v,
        Cost {
            cpu_ms: (c1 - c0) * 1000 / ticks,
            rss_before: r0,
            rss_after: r1,
        },
    )
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "glint CPU {} ms, RSS {} -> {} KiB",
            self.cpu_ms, self.rss_before, self.rss_after
        )
    }
}

/// The counters of `status.statistics-url` (`/stats`).
fn stats(tmp: &TempDir, port: u16) -> String {
    curl(tmp, &[], &format!("http://127.0.0.1:{port}/stats")).text()
}

fn stat(page: &str, key: &str) -> u64 {
    page.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(u64::MAX)
}

#[test]
fn static_files_over_h2c_and_tls() {
    let tmp = TempDir::new("h2");
    make_cert(tmp.path());
    let d = fixture();
    let tls_port = free_port();
    let s = server(
        &d,
        Some((tmp.path(), tls_port)),
        "dir-listing.activate = \"enable\"\nindex-file.names = ( \"index.html\" )\n",
    );
    for (name, args, base) in &transports(tmp.path(), s.port, tls_port) {
        let get = |path: &str, more: &[&str]| {
            let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
            a.extend(more);
            curl(&tmp, &a, &format!("{base}{path}"))
        };
        let r = get("/index.html", &[]);
        assert_eq!((r.status, r.version.as_str()), (200, "2"), "{name}: {r:?}");
        assert_eq!(r.text(), "<h1>glint over HTTP/2</h1>\n", "{name}");
        assert_eq!(r.header("content-length"), Some("27"), "{name}");
        assert!(r.header("date").is_some() && r.header("server").is_some());
        assert!(
            r.header("connection").is_none(),
            "{name}: no connection field in h2"
        );
        // The index file of a directory, and a listing.
        let r = get("/sub/", &[]);
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "sub index\n"),
            "{name}"
        );
        let r = get("/list/", &[]);
        assert_eq!(r.status, 200, "{name}");
        assert!(
            r.text().contains("one.txt") && r.text().contains("two.txt"),
            "{name}"
        );
        // A range, and a conditional that is not modified.
        let r = get("/a.txt", &["-H", "Range: bytes=2-5"]);
        assert_eq!((r.status, r.text().as_str()), (206, "2345"), "{name}");
        assert_eq!(r.header("content-range"), Some("bytes 2-5/20"), "{name}");
        let etag = get("/a.txt", &[]).header("etag").unwrap_or("").to_string();
        assert!(!etag.is_empty());
        let r = get("/a.txt", &["-H", &format!("If-None-Match: {etag}")]);
        assert_eq!((r.status, r.body.len()), (304, 0), "{name}");
        // HEAD: the length a GET has, no body.
        let r = get("/a.txt", &["-I"]);
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.header("content-length"), Some("20"), "{name}");
        // An error page.
        let r = get("/missing", &[]);
        assert_eq!(r.status, 404, "{name}");
        assert!(r.text().contains("404"), "{name}");
        // A file between 16 and 32 KiB: kept in memory for connections
        // that copy file bytes (both here), still whole, in ranges and
        // HEAD, and twice in a row (the second from the cache).
        let mid = pseudo_random(25_000, 3);
        for _ in 0..2 {
            let r = get("/mid.bin", &[]);
            assert_eq!(r.status, 200, "{name}: {}", r.stderr);
            assert!(r.body == mid, "{name}: 25,000 bytes intact");
            assert_eq!(r.header("content-length"), Some("25000"), "{name}");
        }
        let r = get("/mid.bin", &["-H", "Range: bytes=16380-16389"]);
        assert_eq!(r.status, 206, "{name}");
        assert!(r.body == mid[16380..16390], "{name}: range across a frame");
        let r = get("/mid.bin", &["-I"]);
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.header("content-length"), Some("25000"), "{name}");
        // A large file: sendfile on h2c, records on TLS.
        let r = get("/big.bin", &[]);
        assert_eq!(r.status, 200, "{name}: {}", r.stderr);
        assert!(r.body == pseudo_random(5_000_000, 7), "{name}: 5 MB intact");
    }
}

#[test]
fn nghttp_and_h2load_over_both_transports() {
    have("nghttp");
    have("h2load");
    let tmp = TempDir::new("h2");
    make_cert(tmp.path());
    let d = fixture();
    let tls_port = free_port();
    let s = server(&d, Some((tmp.path(), tls_port)), "");
    for url in [
        format!("{}/index.html", h2c(s.port)),
        format!("https://127.0.0.1:{tls_port}/index.html"),
    ] {
        // Several streams at once, with their dependencies and priorities.
        let o = Command::new("timeout")
            .args(["20", "nghttp", "-nas", "-m", "5"])
            .arg(&url)
            .output()
            .expect("nghttp");
        assert!(o.status.success(), "nghttp {url}: {}", text(&o.stderr));
        let o = Command::new("timeout")
            .args(["60", "h2load", "-n", "5000", "-c", "10", "-m", "10"])
            .arg(&url)
            .output()
            .expect("h2load");
        let out = text(&o.stdout);
        assert!(o.status.success(), "h2load {url}: {out}");
        assert!(
            out.contains("5000 succeeded, 0 failed, 0 errored, 0 timeout"),
            "h2load {url}:\n{out}"
        );
        assert!(out.contains("status codes: 5000 2xx"), "{out}");
    }
}

#[test]
fn upgrade_h2c_and_the_options_that_turn_http2_off() {
    let tmp = TempDir::new("h2");
    make_cert(tmp.path());
    let d = fixture();
    let s = server(&d, None, "");
    let url = format!("{}/a.txt", h2c(s.port));
    // curl --http2 on cleartext asks with Upgrade: h2c; the answer is on stream 1.
    let r = curl(&tmp, &["--http2"], &url);
    assert_eq!((r.status, r.version.as_str()), (200, "2"), "{r:?}");
    assert_eq!(r.text(), "0123456789abcdefghij");
    // With a body there is no upgrade (as lighttpd): HTTP/1.1 answers.
    let r = curl(&tmp, &["--http2", "-d", "x=1"], &url);
    assert_eq!(r.version, "1.1", "{r:?}");
    // nghttp -u: the upgrade, then more streams on the same connection.
    let o = Command::new("timeout")
        .args(["20", "nghttp", "-nvu", "-m", "3"])
        .arg(&url)
        .output()
        .expect("nghttp");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("HTTP Upgrade success"), "{out}");
    assert_eq!(out.matches(":status: 200").count(), 3, "{out}");
    drop(s);

    // server.h2c off: the upgrade is ignored; prior knowledge still works.
    let s = server(
        &d,
        None,
        "server.feature-flags = ( \"server.h2c\" => \"disable\" )\n",
    );
    let r = curl(&tmp, &["--http2"], &format!("{}/a.txt", h2c(s.port)));
    assert_eq!((r.status, r.version.as_str()), (200, "1.1"), "{r:?}");
    let r = curl(
        &tmp,
        &["--http2-prior-knowledge"],
        &format!("{}/a.txt", h2c(s.port)),
    );
    assert_eq!((r.status, r.version.as_str()), (200, "2"), "{r:?}");
    drop(s);

    // server.h2proto off: no HTTP/2 at all, ALPN offers HTTP/1.1 only.
    let tls_port = free_port();
    let s = server(
        &d,
        Some((tmp.path(), tls_port)),
        "server.h2proto = \"disable\"\n",
    );
    let r = curl(&tmp, &["--http2"], &format!("{}/a.txt", h2c(s.port)));
    assert_eq!((r.status, r.version.as_str()), (200, "1.1"), "{r:?}");
    let r = curl(
        &tmp,
        &["--http2-prior-knowledge"],
        &format!("{}/a.txt", h2c(s.port)),
    );
    assert_ne!(r.version, "2", "the preface is not HTTP/2 here: {r:?}");
    let mut a = vec!["--http2".to_string()];
    a.extend(tls_args(tmp.path(), tls_port));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = curl(&tmp, &a, &format!("https://localhost:{tls_port}/a.txt"));
    assert_eq!((r.status, r.version.as_str()), (200, "1.1"), "{r:?}");
}

#[test]
fn status_redirects_rewrites_and_the_access_log() {
    let tmp = TempDir::new("h2");
    let d = fixture();
    let log = d.base.join("access.log");
    let s = server(
        &d,
        None,
        &format!(
            "status.statistics-url = \"/stats\"\nstatus.status-url = \"/status\"\n\
             url.redirect = ( \"^/old/(.*)$\" => \"/new/$1\" )\n\
             url.rewrite-once = ( \"^/pretty$\" => \"/a.txt\" )\n\
             accesslog.filename = \"{}\"\naccesslog.format = \"%h %r %s %b %H\"\n",
            log.display()
        ),
    );
    let pk = ["--http2-prior-knowledge"];
    let r = curl(&tmp, &pk, &format!("{}/old/x?y", h2c(s.port)));
    assert_eq!(r.status, 301, "{r:?}");
    assert_eq!(r.header("location"), Some("/new/x?y"));
    let r = curl(&tmp, &pk, &format!("{}/pretty", h2c(s.port)));
    assert_eq!((r.status, r.text().as_str()), (200, "0123456789abcdefghij"));
    let r = curl(&tmp, &pk, &format!("{}/status", h2c(s.port)));
    assert_eq!(r.status, 200);
    assert!(
        r.text().contains("HTTP/2"),
        "the status page counts HTTP/2: {}",
        r.text()
    );
    // The statistics page, asked over HTTP/2: its own connection and stream count.
    let page = curl(&tmp, &pk, &format!("{}/stats", h2c(s.port))).text();
    assert_eq!(stat(&page, "glint.h2-connections-open"), 1, "{page}");
    assert_eq!(stat(&page, "glint.h2-streams-open"), 1, "{page}");
    assert!(stat(&page, "glint.h2-connections") >= 4, "{page}");
    assert!(stat(&page, "glint.h2-streams") >= 4, "{page}");
    // Over HTTP/1 afterwards: nothing open any more.
    let page = stats(&tmp, s.port);
    assert_eq!(stat(&page, "glint.h2-connections-open"), 0, "{page}");
    assert_eq!(stat(&page, "glint.h2-streams-open"), 0, "{page}");
    let seen = wait_for(TIMEOUT, || {
        std::fs::read_to_string(&log)
            .is_ok_and(|l| l.contains("GET /pretty HTTP/2.0 200 20 HTTP/2.0"))
    });
    assert!(
        seen,
        "access log: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

#[test]
fn a_large_download_does_not_starve_small_streams() {
    let d = fixture();
    let s = server(&d, None, "");
    // One connection: the 5 MB file first, then 20 small files.
    let f = h2client(s.port, &["order", "/big.bin", "/index.html", "20"]);
    let ended: Vec<&str> = fact(&f, "ended").split(',').collect();
    assert_eq!(ended.len(), 21, "{f:?}");
    assert_eq!(ended.last(), Some(&"1"), "the large one ends last: {f:?}");
    assert_eq!(num(&f, "sizes.1"), 5_000_000, "{f:?}");
    for i in 0..20 {
        assert_eq!(num(&f, &format!("sizes.{}", 3 + 2 * i)), 27, "{f:?}");
    }
}

/// The gateways of tests/gateway.rs's backends, answering over HTTP/2.
mod gateways {
    use super::*;

    /// A backend process, killed on drop.
    struct Backend(Child);

    impl Drop for Backend {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn backends() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/backends")
    }

    /// scgi_app.py on a free port.
    fn scgi() -> (Backend, String) {
        let mut child = Command::new("python3")
            .arg(backends().join("scgi_app.py"))
            .arg("tcp")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 with scgi (pip install scgi)");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out).read_line(&mut line).expect("ready");
        let port = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("scgi_app.py: {line:?}"))
            .trim()
            .to_string();
        (Backend(child), port)
    }

    /// flup's FastCGI server on a unix socket.
    fn flup(sock: &Path) -> Backend {
        let child = Command::new("python3")
            .arg(backends().join("fcgi_app.py"))
            .arg(sock)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 with flup (pip install flup)");
        let end = Instant::now() + TIMEOUT;
        while std::os::unix::net::UnixStream::connect(sock).is_err() {
            assert!(Instant::now() < end, "flup did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Backend(child)
    }

    fn env_of(body: &str, key: &str) -> Option<String> {
        body.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
    }

    fn md5_hex(data: &[u8]) -> String {
        use std::io::Write;
        let mut c = Command::new("md5sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("md5sum");
        c.stdin
            .take()
            .expect("stdin")
            .write_all(data)
            .expect("write");
        let o = c.wait_with_output().expect("md5sum");
        text(&o.stdout)
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string()
    }

    #[test]
    fn scgi_fastcgi_and_php_with_request_bodies() {
        let tmp = TempDir::new("h2");
        make_cert(tmp.path());
        let (_scgi, port) = scgi();
        let sock = tmp.join("fcgi.sock");
        let _flup = flup(&sock);
        let d = fixture();
        d.file(
            "p.php",
            b"<?php header('X-Php: 1'); echo $_SERVER['SERVER_PROTOCOL'], ' ', strlen(file_get_contents('php://input')), ' ', $_SERVER['REQUEST_METHOD'];",
        );
        let php = ["/usr/bin/php-cgi", "/usr/local/bin/php-cgi"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("php-cgi (apt-get install php-cgi)");
        let tls_port = free_port();
        let s = server(
            &d,
            Some((tmp.path(), tls_port)),
            &format!(
                "server.modules += ( \"mod_scgi\", \"mod_fastcgi\" )\n\
                 scgi.server = ( \"/scgi\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {port}, \"check-local\" => \"disable\" ) ) )\n\
                 fastcgi.server = ( \"/fcgi\" => ( ( \"socket\" => \"{}\", \"check-local\" => \"disable\" ) ),\n\
                   \".php\" => ( ( \"bin-path\" => \"{php}\", \"socket\" => \"{}\" ) ) )\n",
                sock.display(),
                tmp.join("php.sock").display()
            ),
        );
        let upload = pseudo_random(3_000_000, 11);
        let up_path = tmp.join("upload.bin");
        std::fs::write(&up_path, &upload).expect("upload");
        let at_up = format!("@{}", up_path.display());
        let want_md5 = md5_hex(&upload);
        for (name, args, base) in &transports(tmp.path(), s.port, tls_port) {
            let go = |path: &str, more: &[&str]| {
                let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
                a.extend(more);
                curl(&tmp, &a, &format!("{base}{path}"))
            };
            // SCGI: the environment says HTTP/2.0; a body with a length,
            // and one without (curl -T - sends none), both whole.
            let r = go("/scgi/env?q=1", &[]);
            assert_eq!((r.status, r.version.as_str()), (200, "2"), "{name}: {r:?}");
            let body = r.text();
            assert_eq!(
                env_of(&body, "SERVER_PROTOCOL").as_deref(),
                Some("HTTP/2.0")
            );
            assert_eq!(
                env_of(&body, "REQUEST_URI").as_deref(),
                Some("/scgi/env?q=1")
            );
            assert_eq!(
                env_of(&body, "HTTP_HOST")
                    .as_deref()
                    .map(|h| h.split(':').next()),
                Some(Some(if *name == "tls" {
                    "localhost"
                } else {
                    "127.0.0.1"
                }))
            );
            if *name == "tls" {
                assert_eq!(env_of(&body, "HTTPS").as_deref(), Some("on"));
            }
            let r = go("/scgi/up", &["--data-binary", &at_up]);
            let body = r.text();
            assert_eq!(r.status, 200, "{name}: {r:?}");
            assert_eq!(env_of(&body, "CONTENT_LENGTH").as_deref(), Some("3000000"));
            assert_eq!(
                env_of(&body, "BODY-MD5").as_deref(),
                Some(want_md5.as_str())
            );
            let r = go(
                "/scgi/up",
                &[
                    "-T",
                    &up_path.display().to_string(),
                    "-H",
                    "Content-Length:",
                ],
            );
            let body = r.text();
            assert_eq!(r.status, 200, "{name}: {r:?}");
            assert_eq!(
                env_of(&body, "BODY-LEN").as_deref(),
                Some("3000000"),
                "{name}: unframed body"
            );
            assert_eq!(
                env_of(&body, "BODY-MD5").as_deref(),
                Some(want_md5.as_str())
            );
            // A large answer through back-pressure, intact.
            let r = go("/scgi/big?20000000", &[]);
            assert_eq!(
                (r.status, r.body.len()),
                (200, 20_000_000),
                "{name}: {}",
                r.stderr
            );
            let chunk: Vec<u8> = (0..=255u8).collect::<Vec<_>>().repeat(256);
            assert!(
                r.body.chunks(65536).all(|c| c == &chunk[..c.len()]),
                "{name}: bytes intact"
            );
            // Local redirect, and a backend's own redirect.
            let r = go("/scgi/redirect?/a.txt", &[]);
            assert_eq!(
                (r.status, r.text().as_str()),
                (200, "0123456789abcdefghij"),
                "{name}"
            );
            let r = go("/scgi/redirect-302?/x", &[]);
            assert_eq!(
                (r.status, r.header("location")),
                (302, Some("/x")),
                "{name}"
            );
            // A backend that promises more than it sends: the stream is reset.
            let r = go("/scgi/die", &[]);
            assert!(r.stderr.contains("INTERNAL_ERROR"), "{name}: {r:?}");
            // FastCGI (flup) with a body.
            let r = go("/fcgi/x", &["--data-binary", &at_up]);
            assert_eq!(r.status, 200, "{name}: {r:?}");
            assert_eq!(
                env_of(&r.text(), "SERVER_PROTOCOL").as_deref(),
                Some("HTTP/2.0")
            );
            // php-cgi spawned by glint, with a body.
            let r = go("/p.php", &["--data-binary", &at_up]);
            assert_eq!(r.status, 200, "{name}: {r:?}");
            assert_eq!(r.header("x-php"), Some("1"));
            assert_eq!(r.text(), "HTTP/2.0 3000000 POST", "{name}");
            // HEAD: a DATA frame would be curl's error.
            let r = go("/p.php", &["-I"]);
            assert_eq!((r.status, r.stderr.as_str()), (200, ""), "{name}: HEAD");
        }
        // An answer before the body was read (the backend refuses the
        // upload): the answer, then RST_STREAM(NO_ERROR) for the rest.
        let f = h2client(s.port, &["post", "/scgi/early", "3000000"]);
        assert_eq!(fact(&f, "status"), "403", "{f:?}");
        assert_eq!(fact(&f, "ended"), "true", "{f:?}");
        // A gateway that is down: 503.
        drop(_flup);
        let _ = std::fs::remove_file(&sock);
        let r = curl(
            &tmp,
            &["--http2-prior-knowledge"],
            &format!("{}/fcgi/x", h2c(s.port)),
        );
        assert_eq!(r.status, 503, "{r:?}");
    }

    #[test]
    fn uwsgi_over_http2() {
        let d = fixture();
        let log = d.base.join("uwsgi.log");
        let mut child = Command::new("uwsgi")
            .args(["--plugin", "python3", "--uwsgi-socket", "127.0.0.1:0"])
            .arg("--wsgi-file")
            .arg(backends().join("wsgi_app.py"))
            .args(["--master", "--processes", "1", "--die-on-term"])
            .arg("--logto")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("uwsgi (apt-get install uwsgi-core uwsgi-plugin-python3)");
        let mut port = String::new();
        let ok = wait_for(TIMEOUT, || {
            let l = std::fs::read_to_string(&log).unwrap_or_default();
            if !l.contains("spawned uWSGI worker 1") {
                return false;
            }
            port = l
                .split("127.0.0.1:")
                .nth(1)
                .map(|r| r.chars().take_while(char::is_ascii_digit).collect())
                .unwrap_or_default();
            !port.is_empty()
        });
        assert!(ok, "uwsgi did not start");
        let tmp = TempDir::new("h2");
        let s = server(
            &d,
            None,
            &format!(
                "server.modules += ( \"mod_scgi\" )\nscgi.protocol = \"uwsgi\"\n\
                 scgi.server = ( \"/uw\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {port}, \"check-local\" => \"disable\" ) ) )\n"
            ),
        );
        let r = curl(
            &tmp,
            &["--http2-prior-knowledge", "-d", "abc"],
            &format!("{}/uw/x", h2c(s.port)),
        );
        assert_eq!((r.status, r.version.as_str()), (200, "2"), "{r:?}");
        assert_eq!(
            env_of(&r.text(), "SERVER_PROTOCOL").as_deref(),
            Some("HTTP/2.0")
        );
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = child.wait();
    }
}

/// Each attack of RFC 9113 §10.5 and the CVEs since, shown at its bound,
/// with glint's CPU time and memory across it.
mod attacks {
    use super::*;

    /// `eprintln` of what an attack cost, for the test log.
    fn report(what: &str, c: &Cost, facts: &[(String, String)]) {
        eprintln!("{what}: {c}; {facts:?}");
    }

    #[test]
    fn hpack_bomb_is_answered_431() {
        let d = fixture();
        let s = server(&d, None, "");
        // 50 requests each decoding to 16 MB (4000 references to a 4 KB field).
        let (f, c) = measure(&s, || h2client(s.port, &["hpack_bomb", "50"]));
        report("HPACK bomb", &c, &f);
        assert_eq!(num(&f, "statuses.431"), 50, "{f:?}");
        assert_eq!(num(&f, "statuses.200"), 1, "{f:?}");
        // 50 x 16 MB were never built.
        assert!(c.rss_after < c.rss_before + 8 * 1024, "{c}");
        assert!(c.cpu_ms < 3000, "{c}");
    }

    #[test]
    fn continuation_flood_ends_the_connection() {
        let d = fixture();
        let s = server(&d, None, "");
        let (f, c) = measure(&s, || h2client(s.port, &["continuation", "10000"]));
        report("CONTINUATION flood", &c, &f);
        assert_eq!(fact(&f, "goaway.code"), "ENHANCE_YOUR_CALM", "{f:?}");
        assert_eq!(fact(&f, "closed"), "true");
        assert!(c.rss_after < c.rss_before + 4 * 1024, "{c}");
        assert!(c.cpu_ms < 2000, "{c}");
    }

    #[test]
    fn rapid_reset_is_bounded() {
        let d = fixture();
        let log = d.base.join("access.log");
        let s = server(
            &d,
            None,
            &format!("accesslog.filename = \"{}\"\n", log.display()),
        );
        let lines = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let mut before = 0;
        let (f, c) = measure(&s, || {
            // The warm-up's three requests, once the log (flushed each
            // second) has them.
            assert!(wait_for(TIMEOUT, || lines() == 3), "warm-up logged");
            before = lines();
            h2client(s.port, &["rapid_reset", "20000"])
        });
        // A second for the log to be flushed.
        std::thread::sleep(Duration::from_millis(1500));
        report("rapid reset (CVE-2023-44487)", &c, &f);
        assert_eq!(fact(&f, "goaway.code"), "ENHANCE_YOUR_CALM", "{f:?}");
        // The budget: 200 resets per 10 s; every request after GOAWAY's
        // last stream is ignored, and none was answered.
        assert!(num(&f, "goaway.last") <= 2 * 201 + 1, "{f:?}");
        assert_eq!(num(&f, "answered"), 0, "{f:?}");
        assert_eq!(lines(), before, "no exchange ran for a reset request");
        assert!(c.cpu_ms < 2000, "{c}");
        assert!(c.rss_after < c.rss_before + 4 * 1024, "{c}");
    }

    #[test]
    fn made_you_reset_is_bounded() {
        let d = fixture();
        let s = server(&d, None, "");
        let (f, c) = measure(&s, || h2client(s.port, &["made_you_reset", "20000"]));
        report("MadeYouReset (CVE-2025-8671)", &c, &f);
        assert_eq!(fact(&f, "goaway.code"), "ENHANCE_YOUR_CALM", "{f:?}");
        assert!(num(&f, "resets") <= 201, "{f:?}");
        assert!(c.cpu_ms < 2000, "{c}");
        assert!(c.rss_after < c.rss_before + 4 * 1024, "{c}");
    }

    #[test]
    fn ping_and_settings_floods_from_a_client_that_does_not_read() {
        let d = fixture();
        let s = server(&d, None, "");
        for mode in ["ping_flood", "settings_flood"] {
            // 4 million frames (68 MB of acks) offered, nothing read.
            let (f, c) = measure(&s, || h2client(s.port, &[mode, "4000000"]));
            report(mode, &c, &f);
            assert_eq!(fact(&f, "closed"), "true", "{mode}: {f:?}");
            assert!(
                num(&f, "sent") < 4_000_000,
                "{mode}: glint stopped reading: {f:?}"
            );
            // Unbounded, the acks would be 68 MB; the bound is the core's
            // 64 KiB of control frames plus the output queue's 64 KiB.
            assert!(c.rss_after < c.rss_before + 8 * 1024, "{mode}: {c}");
            assert!(c.cpu_ms < 5000, "{mode}: {c}");
        }
    }

    #[test]
    fn a_client_that_never_opens_its_window_is_timed_out_with_bounded_memory() {
        let d = fixture();
        // A directory whose listing is about 400 KB.
        for i in 0..2500 {
            d.file(&format!("many/file-with-a-long-name-{i:05}.txt"), b"x");
        }
        let s = server(
            &d,
            None,
            "dir-listing.activate = \"enable\"\nserver.max-write-idle = 3\n",
        );
        // 100 streams for the listing, the window 0 throughout: 40 MB of
        // answers if glint built them all; it stops at the connection's cap.
        let (f, c) = measure(&s, || h2client(s.port, &["stall", "/many/", "100", "6"]));
        report("window never opened", &c, &f);
        assert_eq!(num(&f, "data"), 0, "{f:?}");
        assert!(
            num(&f, "heads") >= 1 && num(&f, "heads") < 100,
            "held back: {f:?}"
        );
        // server.max-write-idle: the streams that could not move are reset.
        assert!(num(&f, "resets") >= 1, "{f:?}");
        assert!(c.rss_after < c.rss_before + 6 * 1024, "the cap holds: {c}");
    }

    #[test]
    fn stream_ids_run_out_gracefully() {
        let d = fixture();
        let s = server(&d, None, "");
        let f = h2client(s.port, &["max_stream_id", "/index.html"]);
        assert_eq!(fact(&f, "status"), "200", "{f:?}");
        assert_eq!(fact(&f, "goaway.code"), "NO_ERROR", "{f:?}");
        assert_eq!(num(&f, "goaway.last"), 0x7fff_ffff, "{f:?}");
        assert_eq!(fact(&f, "closed"), "true", "{f:?}");
    }

    #[test]
    fn settings_ack_and_idle_time_outs() {
        let d = fixture();
        // The SETTINGS ack is due within max-read-idle when that is below 10 s.
        let s = server(
            &d,
            None,
            "server.max-keep-alive-idle = 30\nserver.max-read-idle = 3\n",
        );
        let f = h2client(s.port, &["no_ack", "15"]);
        assert_eq!(fact(&f, "goaway.code"), "SETTINGS_TIMEOUT", "{f:?}");
        let secs: f64 = fact(&f, "secs").parse().unwrap_or(99.0);
        assert!((2.0..8.0).contains(&secs), "{f:?}");
        drop(s);
        let s = server(&d, None, "server.max-keep-alive-idle = 2\n");
        let f = h2client(s.port, &["idle", "15"]);
        assert_eq!(fact(&f, "goaway.code"), "NO_ERROR", "{f:?}");
        assert_eq!(fact(&f, "closed"), "true", "{f:?}");
        let after: f64 = fact(&f, "goaway_after").parse().unwrap_or(99.0);
        assert!((1.0..5.0).contains(&after), "max-keep-alive-idle 2: {f:?}");
    }

    #[test]
    fn graceful_shutdown_says_goaway_and_finishes_the_stream() {
        let (mut backend, port) = {
            let mut child = Command::new("python3")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/backends/scgi_app.py"))
                .arg("tcp")
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("python3 with scgi");
            let mut line = String::new();
            BufReader::new(child.stdout.take().expect("stdout"))
                .read_line(&mut line)
                .expect("ready");
            let port = line.trim().strip_prefix("ready ").unwrap_or("").to_string();
            (child, port)
        };
        let d = fixture();
        let mut s = server(
            &d,
            None,
            &format!(
                "server.modules += ( \"mod_scgi\" )\n\
                 scgi.server = ( \"/scgi\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {port}, \"check-local\" => \"disable\" ) ) )\n"
            ),
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h2/h2client.py");
        // The backend answers after 2 s; the shutdown comes meanwhile.
        let mut client = Command::new("python3")
            .arg(script)
            .arg(s.port.to_string())
            .args(["goaway", "/scgi/slow?2", "10"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3");
        // The shutdown comes once the request is on its way (the client
        // says "sent"; Python's start-up takes a second on a loaded machine).
        let mut err = BufReader::new(client.stderr.take().expect("stderr"));
        let mut said = String::new();
        while err.read_line(&mut said).map(|n| n > 0).unwrap_or(false) && !said.contains("sent") {}
        std::thread::sleep(Duration::from_millis(300));
        s.signal(SIGINT);
        let o: Output = client.wait_with_output().expect("client");
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        let out = text(&o.stdout);
        assert!(out.contains("goaway.code=NO_ERROR"), "{out}\n{said}{rest}");
        assert!(out.contains("goaway_before_end=true"), "{out}");
        assert!(
            out.contains("status=200") && out.contains("ended=true"),
            "{out}"
        );
        assert!(s
            .wait_exit(Duration::from_secs(10))
            .is_some_and(|st| st.success()));
        let _ = backend.kill();
        let _ = backend.wait();
    }
}

/// mod_deflate on HTTP/2: a large file compressed as it is sent (no cache
/// dir), a small one compressed whole, a listing, over h2c and TLS; curl
/// decodes each and the bytes must be the file's.
#[test]
fn compressed_answers_over_h2c_and_tls() {
    let tmp = TempDir::new("h2-deflate");
    make_cert(tmp.path());
    let d = fixture();
    let mut page = Vec::new();
    let mut i = 0u64;
    while page.len() < 900_000 {
        page.extend_from_slice(format!("line {i} of a text that compresses well\n").as_bytes());
        i += 1;
    }
    d.file("big.txt", &page).file("small.txt", &page[..4000]);
    let tls_port = free_port();
    let s = server(
        &d,
        Some((tmp.path(), tls_port)),
        "server.modules += ( \"mod_deflate\" )\ndeflate.mimetypes = ( \"text/\" )\n\
         deflate.allowed-encodings = ( \"br\", \"gzip\", \"zstd\" )\ndir-listing.activate = \"enable\"\n",
    );
    for (name, args, base) in &transports(tmp.path(), s.port, tls_port) {
        for coding in ["gzip", "br", "zstd"] {
            let ae = format!("Accept-Encoding: {coding}");
            let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
            a.extend(["--compressed", "-H", &ae]);
            for (path, want) in [("/big.txt", &page[..]), ("/small.txt", &page[..4000])] {
                let r = curl(&tmp, &a, &format!("{base}{path}"));
                assert_eq!(
                    (r.status, r.version.as_str()),
                    (200, "2"),
                    "{name} {coding} {path}: {r:?}"
                );
                assert_eq!(r.header("content-encoding"), Some(coding), "{name} {path}");
                assert!(
                    r.body == want,
                    "{name} {coding} {path}: {} bytes decoded",
                    r.body.len()
                );
            }
            let r = curl(&tmp, &a, &format!("{base}/list/"));
            assert_eq!(r.status, 200, "{name} {coding}");
            assert!(
                r.text().contains("two.txt"),
                "{name} {coding}: {}",
                r.text()
            );
        }
    }
    // Still one server, answering.
    let r = curl(
        &tmp,
        &["--http2-prior-knowledge"],
        &format!("{}/a.txt", h2c(s.port)),
    );
    assert_eq!(r.text(), "0123456789abcdefghij");
}
