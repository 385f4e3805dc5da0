//! Hostile requests: traversal, symlinks out of the docroot, response-header
//! injection, request smuggling, and what error pages reveal. Every request
//! goes to glint on 127.0.0.1.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Conn, Launch, Response, Server, TempDir};

const SECRET: &str = "GLINT-TEST-SECRET-7f3a9c";
const SMUGGLED: &str = "GLINT-TEST-SMUGGLED-41d2";

/// tmp/secret.txt outside the docroot tmp/www; symlinks in the docroot point out.
struct Site {
    dir: TempDir,
}

impl Site {
    fn new() -> Site {
        let dir = TempDir::new("security");
        let www = dir.path().join("www");
        std::fs::create_dir_all(www.join("dir")).expect("www/dir");
        std::fs::write(dir.path().join("secret.txt"), SECRET).expect("secret");
        std::fs::write(www.join("index.html"), "<p>index</p>\n").expect("index");
        std::fs::write(www.join("smuggled.html"), SMUGGLED).expect("smuggled");
        std::fs::write(www.join("dir/index.html"), "dir index\n").expect("dir index");
        // A directory whose name carries a header line, in case a path with
        // CR LF ever reached the redirect.
        let _ = std::fs::create_dir(www.join("dir\r\nSet-Cookie: injected=1"));
        std::os::unix::fs::symlink("../secret.txt", www.join("out.txt")).expect("symlink");
        std::os::unix::fs::symlink("..", www.join("up")).expect("symlink");
        std::os::unix::fs::symlink("index.html", www.join("in.html")).expect("symlink");
        Site { dir }
    }
    fn www(&self) -> std::path::PathBuf {
        self.dir.path().join("www")
    }
}

/// Sends `raw` on a fresh connection; reads responses until the server
/// closes (true) or goes quiet for a while (false).
fn exchange(g: &Server, raw: &[u8]) -> (Vec<Response>, bool) {
    let mut s = g.tcp();
    s.write_all(raw).expect("send");
    read_all(s)
}

fn read_all(s: TcpStream) -> (Vec<Response>, bool) {
    let mut c = Conn::wrap(s);
    let mut out = Vec::new();
    for _ in 0..10 {
        match c.read_response_by(false, Instant::now() + Duration::from_millis(1500)) {
            Ok(resp) => out.push(resp),
            // Quiet: the connection was left open.
            Err(_) if c.timed_out => return (out, false),
            // Closed, reset, or something that is no response.
            Err(_) => return (out, true),
        }
    }
    (out, false)
}

fn text(r: &Response) -> String {
    format!(
        "{}\n\n{}",
        r.head_lines().join("\n"),
        String::from_utf8_lossy(&r.body)
    )
}

#[test]
fn traversal_never_reaches_a_file_outside_the_docroot() {
    let site = Site::new();
    let g = Launch::new()
        .config("server.follow-symlink = \"disable\"\n")
        .docroot(&site.www())
        .start();
    let targets: &[&[u8]] = &[
        b"/../secret.txt",
        b"/../../secret.txt",
        b"/dir/../../secret.txt",
        b"//../secret.txt",
        b"/./../secret.txt",
        b"/%2e%2e/secret.txt",
        b"/%2E%2E/secret.txt",
        b"/.%2e/secret.txt",
        b"/%2e%2e%2fsecret.txt",
        b"/dir/..%2f..%2fsecret.txt",
        b"/%252e%252e/secret.txt",
        b"/%252e%252e%252fsecret.txt",
        b"/%25252e%25252e/secret.txt",
        b"/%c0%ae%c0%ae/secret.txt",
        b"/%c0%ae%c0%ae%c0%afsecret.txt",
        b"/%e0%80%ae%e0%80%ae/secret.txt",
        b"/..%c0%afsecret.txt",
        b"/..%c1%9csecret.txt",
        b"/%u002e%u002e/secret.txt",
        b"/..\\secret.txt",
        b"/..%5csecret.txt",
        b"/dir\\..\\..\\secret.txt",
        b"/%5c..%5c..%5csecret.txt",
        b"/index.html%00/../../secret.txt",
        b"/..%00/secret.txt",
        b"/%00../secret.txt",
        b"/..;/secret.txt",
        b"/out.txt",
        b"/up/secret.txt",
        b"/up/www/index.html/../../secret.txt",
        b"http://t/../secret.txt",
        b"http://t/%2e%2e/secret.txt",
        b"../secret.txt",
        b"secret.txt",
        b"*",
        b"/..",
        b"/.../secret.txt",
    ];
    for t in targets {
        let mut raw = b"GET ".to_vec();
        raw.extend_from_slice(t);
        raw.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let (resps, _) = exchange(&g, &raw);
        let shown = String::from_utf8_lossy(t);
        assert!(!resps.is_empty(), "{shown}: no answer");
        for r in &resps {
            assert!(!text(r).contains(SECRET), "{shown}: the secret leaked");
            assert!(
                matches!(r.status, 400 | 403 | 404),
                "{shown}: status {}",
                r.status
            );
        }
    }
    // Raw bytes in the request line itself: NUL, backslash, high bytes.
    for raw in [
        &b"GET /..\0/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n"[..],
        b"GET /\xc0\xae\xc0\xae/secret.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /\xff/../../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        b"GET /..%2fsecret.txt%23 HTTP/1.1\r\nHost: t\r\n\r\n",
    ] {
        let (resps, _) = exchange(&g, raw);
        for r in &resps {
            assert!(!text(r).contains(SECRET), "{raw:?}: the secret leaked");
            assert!(r.status >= 400, "{raw:?}: status {}", r.status);
        }
    }
    // Still serving.
    let r = g.get("/index.html").expect("index");
    assert_eq!(r.status, 200);
}

#[test]
fn symlinks_out_of_the_docroot_follow_the_setting() {
    let site = Site::new();
    let off = Launch::new()
        .config("server.follow-symlink = \"disable\"\n")
        .docroot(&site.www())
        .start();
    for p in ["/out.txt", "/up/secret.txt", "/in.html"] {
        let r = off.get(p).expect(p);
        assert_eq!(r.status, 403, "{p} with follow-symlink disabled");
        assert!(!text(&r).contains(SECRET), "{p}");
    }
    assert_eq!(off.get("/index.html").expect("index").status, 200);

    let on = Launch::new()
        .config("server.follow-symlink = \"enable\"\n")
        .docroot(&site.www())
        .start();
    for p in ["/out.txt", "/up/secret.txt"] {
        let r = on.get(p).expect(p);
        assert_eq!(r.status, 200, "{p} with follow-symlink enabled");
        assert_eq!(r.body, SECRET.as_bytes(), "{p}");
    }
    assert_eq!(on.get("/in.html").expect("in.html").status, 200);
}

#[test]
fn no_header_line_is_injected_through_a_redirect() {
    let site = Site::new();
    let g = Launch::new().config("").docroot(&site.www()).start();
    // The plain case redirects: the Location is the path, encoded anew.
    let r = g.get("/dir").expect("dir");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("/dir/"));
    for t in [
        "/dir%0d%0aSet-Cookie:%20injected=1",
        "/dir%0aSet-Cookie:%20injected=1",
        "/dir%0dSet-Cookie:%20injected=1",
        "/dir%0D%0ASet-Cookie:%20injected=1",
        "/dir%250d%250aSet-Cookie:%20injected=1",
        "/dir?%0d%0aSet-Cookie:%20injected=1",
        "/dir/..%0d%0aSet-Cookie:%20injected=1",
        "/dir%e5%98%8a%e5%98%8dSet-Cookie:%20injected=1",
    ] {
        let raw = format!("GET {t} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let (resps, _) = exchange(&g, raw.as_bytes());
        assert_eq!(resps.len(), 1, "{t}");
        let r = &resps[0];
        for line in &r.head_lines()[1..] {
            assert!(
                !line.to_ascii_lowercase().starts_with("set-cookie"),
                "{t}: injected header line {line:?}"
            );
            assert!(line.contains(": "), "{t}: malformed header line {line:?}");
        }
        if let Some(loc) = r.header("location") {
            assert!(
                !loc.contains('\r') && !loc.contains('\n'),
                "{t}: Location {loc:?}"
            );
        }
    }
}

/// What glint does with one ambiguous framing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// One error response with this status, then the connection closes.
    Reject(u16),
    /// Answered, then closed: the bytes after the head are never read as a request.
    AnswerThenClose,
    /// Unambiguous after all: the request and the one pipelined behind it are both answered.
    Pipeline,
}

#[test]
fn smuggling_attempts_are_refused_or_framed_consistently() {
    let site = Site::new();
    let g = Launch::new().config("").docroot(&site.www()).start();
    let next = "GET /smuggled.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    use Expect::*;
    let cases: &[(&str, &str, Expect)] = &[
        (
            "CL and TE",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            Reject(400),
        ),
        (
            "TE and CL",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
            Reject(400),
        ),
        (
            "two differing CL",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\nhello",
            Reject(400),
        ),
        (
            "CL list",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 0, 5\r\n\r\nhello",
            Reject(400),
        ),
        (
            "CL with a sign",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello",
            Reject(400),
        ),
        (
            "CL overflowing u64",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            Reject(400),
        ),
        (
            "TE chunked, identity",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
            Reject(501),
        ),
        (
            "TE identity",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\n",
            Reject(501),
        ),
        (
            "TE xchunked",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
            Reject(501),
        ),
        (
            "TE twice",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            Reject(400),
        ),
        (
            "TE in HTTP/1.0",
            "POST /index.html HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            Reject(400),
        ),
        (
            "space before the colon",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
            Reject(400),
        ),
        (
            "obs-fold",
            "GET /index.html HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\n\r\n",
            Reject(400),
        ),
        (
            "obs-fold of TE",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
            Reject(400),
        ),
        (
            "NUL in a header value",
            "GET /index.html HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n",
            Reject(400),
        ),
        (
            "bare CR in a header value",
            "GET /index.html HTTP/1.1\r\nHost: t\r\nX-A: a\rContent-Length: 5\r\n\r\n",
            Reject(400),
        ),
        (
            "TE with leading space (OWS)",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:  chunked\r\n\r\n0\r\n\r\n",
            AnswerThenClose,
        ),
        (
            "TE Chunked",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
            AnswerThenClose,
        ),
        (
            "TE chunked with tab",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\tchunked\t\r\n\r\n0\r\n\r\n",
            AnswerThenClose,
        ),
        (
            "two equal CL",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            Pipeline,
        ),
        (
            "bare LF line ends",
            "GET /index.html HTTP/1.1\nHost: t\nX-A: b\n\n",
            Pipeline,
        ),
        (
            "bare LF before Content-Length",
            "POST /index.html HTTP/1.1\r\nHost: t\r\nX-A: b\nContent-Length: 5\r\n\r\nhello",
            Pipeline,
        ),
    ];
    let mut report = Vec::new();
    for (what, head, want) in cases {
        let raw = format!("{head}{next}");
        let (resps, closed) = exchange(&g, raw.as_bytes());
        let statuses: Vec<u16> = resps.iter().map(|r| r.status).collect();
        report.push(format!("{what}: {statuses:?} closed={closed}"));
        let smuggled_served = resps
            .iter()
            .any(|r| String::from_utf8_lossy(&r.body).contains(SMUGGLED));
        match want {
            Reject(status) => {
                assert_eq!(statuses, [*status], "{what}");
                assert!(closed, "{what}: connection left open");
                assert!(!smuggled_served, "{what}");
            }
            AnswerThenClose => {
                assert_eq!(resps.len(), 1, "{what}: {statuses:?}");
                assert!(closed, "{what}: connection left open");
                assert!(!smuggled_served, "{what}: the body was read as a request");
            }
            Pipeline => {
                assert_eq!(resps.len(), 2, "{what}: {statuses:?}");
                assert!(smuggled_served, "{what}: the second request was lost");
                assert!(closed, "{what}");
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    // None of it hurt the server.
    assert_eq!(g.get("/index.html").expect("index").status, 200);
}

#[test]
fn error_pages_reveal_no_paths_or_versions() {
    let site = Site::new();
    let g = Launch::new().config("").docroot(&site.www()).start();
    let root = site.dir.path().to_string_lossy().into_owned();
    let long = "a".repeat(9000);
    let big_header = format!("X-Big: {}\r\n", "b".repeat(9000));
    let requests: Vec<(String, u16)> = vec![
        ("GET /missing.html HTTP/1.1\r\nHost: t\r\n\r\n".into(), 404),
        ("GET /dir/missing/x HTTP/1.1\r\nHost: t\r\n\r\n".into(), 404),
        ("GET /%2e%2e/ HTTP/1.1\r\nHost: t\r\n\r\n".into(), 400),
        ("GET /a%zz HTTP/1.1\r\nHost: t\r\n\r\n".into(), 400),
        (
            "PUT /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n".into(),
            405,
        ),
        ("BREW /index.html HTTP/1.1\r\nHost: t\r\n\r\n".into(), 501),
        ("GET / HTTP/3.0\r\nHost: t\r\n\r\n".into(), 505),
        (
            "GET /index.html HTTP/1.1\r\nHost: t\r\nRange: bytes=999999-\r\n\r\n".into(),
            416,
        ),
        (
            "GET /index.html HTTP/1.1\r\nHost: t\r\nIf-Match: \"x\"\r\n\r\n".into(),
            412,
        ),
        (format!("GET /{long} HTTP/1.1\r\nHost: t\r\n\r\n"), 414),
        (
            format!("GET / HTTP/1.1\r\nHost: t\r\n{big_header}\r\n"),
            431,
        ),
        ("\x01\x02 garbage\r\n\r\n".into(), 400),
        // The request line the fuzzer found crashing the parser.
        ("GET http:/\u{444}DhDh/ HTTP/1.1\r\n\r\n".into(), 400),
    ];
    let version = env!("CARGO_PKG_VERSION");
    for (raw, want) in &requests {
        let (resps, _) = exchange(&g, raw.as_bytes());
        let shown = &raw[..raw.len().min(60)];
        assert_eq!(resps.len(), 1, "{shown:?}");
        let r = &resps[0];
        assert_eq!(r.status, *want, "{shown:?}");
        let body = String::from_utf8_lossy(&r.body).to_ascii_lowercase();
        for leak in [
            root.to_ascii_lowercase().as_str(),
            "/tmp",
            // (the docroot's name as a path; the page's DTD is at www.w3.org)
            "www/",
            "glint",
            version,
            "rust",
            "mio",
        ] {
            assert!(
                !body.contains(leak),
                "{shown:?}: the page says {leak:?}:\n{body}"
            );
        }
        for (name, value) in &r.headers {
            if name.eq_ignore_ascii_case("server") {
                continue;
            }
            let v = value.to_ascii_lowercase();
            assert!(
                !v.contains("glint") && !v.contains(version) && !v.contains(&root),
                "{shown:?}: header {name}: {value}"
            );
        }
    }
    assert_eq!(g.get("/index.html").expect("index").status, 200);
}

/// Where the executable's first mapping starts in the process `pid`.
fn load_address(pid: i32, exe: &std::path::Path) -> Option<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let exe = exe.to_string_lossy();
    let line = maps.lines().find(|l| l.ends_with(&*exe))?;
    let start = line.split('-').next()?;
    u64::from_str_radix(start, 16).ok()
}

/// The executable is position-independent and loads at a random address,
/// as every hardened distribution's lighttpd and nginx do: a memory error
/// in the C code glint links (TLS, Lua, SQLite) must not find glint's code
/// and data at addresses read from the file.
#[test]
fn the_executable_loads_at_a_random_address() {
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_glint")).expect("glint binary");
    let head = std::fs::read(&exe).expect("read the binary");
    assert_eq!(head.get(..4), Some(&b"\x7fELF"[..]), "an ELF file");
    // e_type at offset 16: 2 is a fixed-address executable, 3 a
    // position-independent one.
    let e_type = head.get(16..18).map(|b| u16::from_le_bytes([b[0], b[1]]));
    assert_eq!(
        e_type,
        Some(3),
        "{}: linked position-dependent",
        exe.display()
    );
    let randomized = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
        .map(|s| s.trim() != "0")
        .unwrap_or(false);
    if !randomized {
        eprintln!("kernel.randomize_va_space is 0 here: load addresses not compared");
        return;
    }
    let site = Site::new();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..3 {
        let g = Launch::new().docroot(&site.www()).start();
        let at = load_address(g.pid(), &exe).expect("the executable in /proc/PID/maps");
        seen.insert(at);
    }
    assert!(
        seen.len() > 1,
        "three starts loaded the executable at the same address: {seen:x?}"
    );
}
