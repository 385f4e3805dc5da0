//! `connection.kbytes-per-second` and `server.kbytes-per-second`: downloads
//! timed against the limit, byte-exact, over HTTP/1.0 and 1.1, TLS,
//! HTTP/2 and HTTP/3 (aioquic's client, `tests/h3/h3client.py`), for
//! static files (sendfile) and a CGI program's answer. Run against
//! lighttpd too with `GLINT_BLACKBOX_SERVER=lighttpd` (the TLS, HTTP/2 and
//! HTTP/3 cases start glint only).
//!
//! lighttpd's accounting, which glint follows: a connection may be sent its
//! limit per second (and never more than the limit times the seconds since
//! its accept, on average); the connections under one `server.kbytes-per-second`
//! share its limit; the budgets are renewed by the once-a-second tick. So
//! `n` bytes at `r` bytes a second take at least `ceil(n / r) - 1` seconds.

mod common;
#[path = "h3/json.rs"]
mod serde_like;

use common::*;
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

/// 200 KiB of a pattern that shows any byte out of place.
fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ (i / 251) as u8).collect()
}

const SIZE: usize = 200 * 1024;

fn conf(d: &Docroot, extra: &str) -> String {
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n{{errorlog}}\n\
         server.modules += (\"mod_indexfile\", \"mod_cgi\", \"mod_staticfile\")\n{extra}\n",
        d.root.display()
    )
}

fn docroot() -> Docroot {
    let d = Docroot::new();
    d.file("slow/big.bin", &body(SIZE));
    d.file("fast/big.bin", &body(SIZE));
    d
}

/// Sends `request` and reads the answer whole (to the close when the
/// answer is close-delimited); the answer and the time it took.
fn timed(s: &Server, request: &[u8]) -> (Response, Duration) {
    let t = Instant::now();
    let mut c = s.connect();
    c.send(request).expect("send");
    let r = c
        .read_response_by(false, Instant::now() + Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("no whole answer: {e}"));
    (r, t.elapsed())
}

fn assert_whole(r: &Response, want: &[u8], what: &str) {
    assert_eq!(r.status, 200, "{what}: {}", r.head);
    assert_eq!(
        r.body.len(),
        want.len(),
        "{what}: body length; {:?}",
        String::from_utf8_lossy(&r.body[..r.body.len().min(300)])
    );
    assert!(r.body == want, "{what}: the body differs from the file");
}

/// 200 KiB at 50 KiB/s: at least 3 s (4 budgets, the first at once), the
/// answer whole and byte-exact; HTTP/1.1 with `Connection: close`, and
/// HTTP/1.0.
#[test]
fn a_connection_limit_slows_a_static_file() {
    let d = docroot();
    let s = Server::start_config(&conf(&d, "connection.kbytes-per-second = 50"));
    let want = body(SIZE);
    let ticks = s.cpu_ticks();
    for (what, req) in [
        (
            "HTTP/1.1, Connection: close",
            &b"GET /slow/big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"[..],
        ),
        ("HTTP/1.0", &b"GET /slow/big.bin HTTP/1.0\r\n\r\n"[..]),
    ] {
        let (r, took) = timed(&s, req);
        assert_whole(&r, &want, what);
        let rate = SIZE as f64 / took.as_secs_f64() / 1024.0;
        eprintln!("{what}: {SIZE} bytes in {took:?} = {rate:.1} KiB/s (limit 50)");
        assert!(
            took >= Duration::from_millis(2900),
            "{what}: too fast, {took:?}"
        );
        assert!(took < Duration::from_secs(10), "{what}: too slow, {took:?}");
    }
    // Held connections wait for the tick, not in a loop: about 10 s of
    // downloads cost the server well under a second of CPU (ticks of 10 ms).
    let used = s.cpu_ticks() - ticks;
    eprintln!("server CPU for both downloads: {used} ticks");
    assert!(
        used < 50,
        "the server spun while throttled: {used} ticks of CPU"
    );
}

/// A limit set in a conditional block applies to its requests only: a
/// download of the same size elsewhere, at the same time, is not slowed.
#[test]
fn a_limit_in_a_block_leaves_other_urls_alone() {
    let d = docroot();
    let s = Server::start_config(&conf(
        &d,
        "$HTTP[\"url\"] =^ \"/slow/\" { connection.kbytes-per-second = 50 }",
    ));
    let want = body(SIZE);
    let addr = s.addr();
    let slow = std::thread::spawn(move || {
        let t = Instant::now();
        let mut c = Conn::open(addr).expect("connect");
        c.send(b"GET /slow/big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .expect("send");
        let r = c
            .read_response_by(false, Instant::now() + Duration::from_secs(30))
            .expect("slow answer");
        (r, t.elapsed())
    });
    let (r, took) = timed(
        &s,
        b"GET /fast/big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_whole(&r, &want, "/fast/");
    assert!(took < Duration::from_secs(1), "/fast/ was slowed: {took:?}");
    let (r, took) = slow.join().expect("slow client");
    assert_whole(&r, &want, "/slow/");
    assert!(
        took >= Duration::from_millis(2900),
        "/slow/ too fast: {took:?}"
    );
}

/// `server.kbytes-per-second` is shared: two downloads of 200 KiB at once
/// under 100 KiB/s take 3 s or more together, where one alone takes ~1 s.
#[test]
fn the_server_limit_is_shared_by_concurrent_connections() {
    let d = docroot();
    let s = Server::start_config(&conf(&d, "server.kbytes-per-second = 100"));
    let want = body(SIZE);
    let t = Instant::now();
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let addr = s.addr();
            std::thread::spawn(move || {
                let mut c = Conn::open(addr).expect("connect");
                c.send(b"GET /slow/big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    .expect("send");
                c.read_response_by(false, Instant::now() + Duration::from_secs(30))
                    .expect("answer")
            })
        })
        .collect();
    for c in clients {
        let r = c.join().expect("client");
        assert_whole(&r, &want, "shared");
    }
    let took = t.elapsed();
    let rate = 2.0 * SIZE as f64 / took.as_secs_f64() / 1024.0;
    eprintln!("2 x {SIZE} bytes in {took:?} = {rate:.1} KiB/s together (limit 100)");
    assert!(took >= Duration::from_millis(2900), "not shared: {took:?}");
    assert!(took < Duration::from_secs(12), "too slow: {took:?}");
}

/// A CGI program's answer is throttled too, and reaches a client that is
/// still sending its request body whole (the rest of the body comes while
/// the answer is under way).
#[test]
fn a_generated_answer_is_throttled_and_whole_while_the_body_still_comes() {
    let d = docroot();
    let data = d.root.join("slow/big.bin");
    d.file(
        "gen.cgi",
        format!(
            "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\nexec cat '{}'\n",
            data.display()
        )
        .as_bytes(),
    );
    set_mode(&d.root.join("gen.cgi"), 0o755);
    let s = Server::start_config(&conf(
        &d,
        "cgi.assign = (\".cgi\" => \"\")\nconnection.kbytes-per-second = 50",
    ));
    let want = body(SIZE);
    let t = Instant::now();
    let mut c = s.connect();
    let len = 20_000;
    c.send(
        format!(
            "POST /gen.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .expect("head");
    c.send(&vec![b'x'; len / 2]).expect("half the body");
    let rest = c.stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        let mut rest = rest;
        std::thread::sleep(Duration::from_millis(500));
        // (The server may have closed its reading side: not an error here.)
        let _ = rest.write_all(&vec![b'y'; len / 2]);
    });
    let r = c
        .read_response_by(false, Instant::now() + Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("no whole answer: {e}"));
    let took = t.elapsed();
    sender.join().expect("sender");
    assert_whole(&r, &want, "CGI");
    assert!(
        took >= Duration::from_millis(2900),
        "CGI answer too fast: {took:?}"
    );
}

/// Keep-alive: the connection's budget goes on from one answer to the
/// next (two 100 KiB answers at 50 KiB/s: 3 s or more in all).
#[test]
fn the_budget_is_the_connections_across_keep_alive_requests() {
    let d = Docroot::new();
    d.file("half.bin", &body(SIZE / 2));
    let s = Server::start_config(&conf(&d, "connection.kbytes-per-second = 50"));
    let t = Instant::now();
    let mut c = s.connect();
    let want = body(SIZE / 2);
    for last in [false, true] {
        let close = if last { "Connection: close\r\n" } else { "" };
        c.send(format!("GET /half.bin HTTP/1.1\r\nHost: t\r\n{close}\r\n").as_bytes())
            .expect("send");
        let r = c
            .read_response_by(false, Instant::now() + Duration::from_secs(30))
            .expect("answer");
        assert_whole(&r, &want, "keep-alive");
    }
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(2900), "too fast: {took:?}");
}

/// curl over TLS (HTTP/1.1 and HTTP/2): the limit holds and the file
/// arrives whole (glint only; lighttpd limits HTTP/2 at the connection's
/// scope as glint does).
#[test]
fn throttled_over_tls_and_http2() {
    let d = docroot();
    let certs = TempDir::new("certs");
    make_cert(certs.path());
    let text = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += (\"mod_openssl\")\nssl.engine = \"enable\"\n\
         ssl.pemfile = \"{}\"\nconnection.kbytes-per-second = 50\n",
        d.root.display(),
        certs.join("server.pem").display()
    );
    let s = Launch::new().config(&text).start();
    let want = body(SIZE);
    let ticks = s.cpu_ticks();
    for proto in ["--http1.1", "--http2"] {
        let out = certs.join("got.bin");
        let t = Instant::now();
        let o = Command::new("curl")
            .args(["-sS", "--max-time", "30", proto, "--cacert"])
            .arg(certs.join("ca.pem"))
            .arg("--resolve")
            .arg(format!("localhost:{}:127.0.0.1", s.port))
            .arg("-o")
            .arg(&out)
            .args(["-w", "%{http_code} %{http_version}"])
            .arg(format!("https://localhost:{}/slow/big.bin", s.port))
            .output()
            .expect("curl (apt-get install curl)");
        let took = t.elapsed();
        let info = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success(),
            "{proto}: curl: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut got = Vec::new();
        std::fs::File::open(&out)
            .and_then(|mut f| f.read_to_end(&mut got))
            .expect("read the download");
        assert!(info.starts_with("200"), "{proto}: {info}");
        assert!(
            got == want,
            "{proto}: the download differs ({} bytes)",
            got.len()
        );
        eprintln!("{proto} ({info}): {SIZE} bytes in {took:?}");
        assert!(
            took >= Duration::from_millis(2900),
            "{proto}: too fast, {took:?}"
        );
    }
    let used = s.cpu_ticks() - ticks;
    assert!(
        used < 50,
        "the server spun while throttled: {used} ticks of CPU"
    );
}

/// A backend's `X-LIGHTTPD-KBytes-per-second` lowers the limit for its
/// answer; like every `X-LIGHTTPD-*` header it does not reach the client.
#[test]
fn a_backend_may_lower_the_limit_with_x_lighttpd_kbytes_per_second() {
    let d = docroot();
    let data = d.root.join("slow/big.bin");
    d.file(
        "lower.cgi",
        format!(
            "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\r\\nX-LIGHTTPD-KBytes-per-second: 50\\r\\nX-LIGHTTPD-Other: x\\r\\n\\r\\n'\nexec cat '{}'\n",
            data.display()
        )
        .as_bytes(),
    );
    set_mode(&d.root.join("lower.cgi"), 0o755);
    let s = Server::start_config(&conf(
        &d,
        "cgi.assign = (\".cgi\" => \"\")\nconnection.kbytes-per-second = 1000",
    ));
    let (r, took) = timed(
        &s,
        b"GET /lower.cgi HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_whole(&r, &body(SIZE), "lowered");
    assert_eq!(r.header("X-LIGHTTPD-KBytes-per-second"), None);
    assert_eq!(r.header("X-LIGHTTPD-Other"), None);
    eprintln!("lowered to 50 KiB/s: {SIZE} bytes in {took:?}");
    assert!(took >= Duration::from_millis(2900), "not lowered: {took:?}");
}

/// `server.kbytes-per-second` in a `$SERVER["socket"]` block limits the
/// connections of that socket together; the main socket is not slowed.
#[test]
fn a_socket_scope_limit_leaves_other_sockets_alone() {
    let d = docroot();
    let limited = free_port();
    let s = Server::start_config(&conf(
        &d,
        &format!(
            "$SERVER[\"socket\"] == \"127.0.0.1:{limited}\" {{ server.kbytes-per-second = 100 }}"
        ),
    ));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], limited));
    assert!(
        wait_for(TIMEOUT, || std::net::TcpStream::connect(addr).is_ok()),
        "the second socket does not accept"
    );
    let want = body(SIZE);
    let t = Instant::now();
    let slow: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr).expect("connect");
                c.send(b"GET /slow/big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    .expect("send");
                c.read_response_by(false, Instant::now() + Duration::from_secs(30))
                    .expect("answer")
            })
        })
        .collect();
    let (r, took) = timed(
        &s,
        b"GET /fast/big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_whole(&r, &want, "main socket");
    assert!(
        took < Duration::from_secs(1),
        "the main socket was slowed: {took:?}"
    );
    for c in slow {
        assert_whole(&c.join().expect("client"), &want, "limited socket");
    }
    let took = t.elapsed();
    eprintln!("2 x {SIZE} bytes on the limited socket in {took:?} (limit 100 KiB/s)");
    assert!(took >= Duration::from_millis(2900), "not shared: {took:?}");
}

/// Downloads `paths` at once on one HTTP/3 connection (aioquic) from
/// glint's UDP `port`; each answer's status, length and SHA-256, and the
/// time it all took.
fn h3_download(port: u16, paths: &[&str]) -> (Vec<(u64, u64, String)>, Duration) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h3/h3client.py");
    let reqs: Vec<String> = paths
        .iter()
        .map(|p| format!("{{\"path\": \"{p}\"}}"))
        .collect();
    let spec = format!(
        "{{\"port\": {port}, \"timeout\": 30, \"requests\": [{}]}}",
        reqs.join(", ")
    );
    let t = Instant::now();
    let o = Command::new("timeout")
        .arg("60")
        .arg("python3")
        .arg(script)
        .arg(&spec)
        .output()
        .expect("python3 (pip install aioquic)");
    let took = t.elapsed();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "h3client.py {spec}: {}\n{out}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = serde_like::parse(&out);
    let answers = v
        .get("answers")
        .list()
        .iter()
        .map(|a| {
            (
                a.get("status").num().unwrap_or(0),
                a.get("body_len").num().unwrap_or(0),
                a.get("sha256").str().to_string(),
            )
        })
        .collect();
    (answers, took)
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// HTTP/3 answers are throttled with the same accounting: 200 KiB at
/// `connection.kbytes-per-second = 50`, and two 200 KiB answers at once
/// (two streams of one connection) under `server.kbytes-per-second =
/// 100`, each about 4 s; the bodies byte-exact, and no CPU spent while
/// held.
#[test]
fn throttled_over_http3() {
    let d = docroot();
    let certs = TempDir::new("h3-certs");
    make_cert(certs.path());
    let want = sha256_hex(&body(SIZE));
    for (limit, paths) in [
        ("connection.kbytes-per-second = 50", &["/slow/big.bin"][..]),
        (
            "server.kbytes-per-second = 100",
            &["/slow/big.bin", "/fast/big.bin"][..],
        ),
    ] {
        let port = free_port();
        let text = format!(
            "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
             server.modules += (\"mod_openssl\")\nssl.pemfile = \"{}\"\n\
             $SERVER[\"socket\"] == \"127.0.0.1:{port}\" {{\n  ssl.engine = \"enable\"\n  glint.h3 = \"enable\"\n}}\n{limit}\n",
            d.root.display(),
            certs.join("server.pem").display()
        );
        let s = Launch::new().config(&text).listeners(2).start();
        let ticks = s.cpu_ticks();
        let (answers, took) = h3_download(port, paths);
        assert_eq!(answers.len(), paths.len(), "{limit}: {answers:?}");
        for (status, len, sha) in &answers {
            assert_eq!(*status, 200, "{limit}");
            assert_eq!(*len, SIZE as u64, "{limit}: body length");
            assert_eq!(sha, &want, "{limit}: the body differs from the file");
        }
        let used = s.cpu_ticks() - ticks;
        eprintln!(
            "HTTP/3, {limit}: {} x {SIZE} bytes in {took:?}; server CPU {used} ticks",
            paths.len()
        );
        assert!(
            took >= Duration::from_millis(2900),
            "{limit}: too fast, {took:?}"
        );
        assert!(
            took < Duration::from_secs(10),
            "{limit}: too slow, {took:?}"
        );
        assert!(
            used < 50,
            "{limit}: the server spun while throttled: {used} ticks of CPU"
        );
    }
}
