//! The reverse proxy (mod_proxy) with real upstreams: Python's http.server
//! (tests/backends/http_app.py), waitress serving a WSGI application, glint
//! itself, and the `websockets` package for WebSocket echo. Each test
//! starts its backends on 127.0.0.1 port 0 and glint in front of them.

mod common;

use common::*;
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// tests/backends/http_app.py named `name`, closing idle connections after `keep` s.
fn http_app(name: &str, keep: &str) -> Backend {
    let script = backends_dir().join("http_app.py");
    python(&[script.to_str().expect("path"), "0", name, keep])
}

fn host(port: u16) -> String {
    format!("( \"host\" => \"127.0.0.1\", \"port\" => {port} )")
}

fn start_proxy(d: &Docroot, rest: &str) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\nserver.modules = ( \"mod_proxy\" )\n{rest}",
        d.root.display()
    );
    Launch::new()
        .config(&conf)
        .args(&["--bind", "127.0.0.1", "--port", "0"])
        .start()
}

fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// A request on an open keep-alive connection.
fn ask(c: &mut Conn, request: &str) -> Response {
    c.send(request.as_bytes()).expect("send");
    c.read_response(request.starts_with("HEAD "))
        .unwrap_or_else(|e| panic!("{request:?}: {e}"))
}

#[test]
fn requests_and_answers_pass_through_with_kept_upstream_connections() {
    let app = http_app("a", "5");
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!("proxy.server = ( \"/\" => ( {} ) )", host(app.port)),
    );
    let mut c = s.connect();

    // The head as the backend sees it: hop-by-hop fields gone, X-Forwarded-*.
    let r = ask(
        &mut c,
        "GET /echo?x=1 HTTP/1.1\r\nHost: example.test\r\nConnection: keep-alive, X-Hop\r\nX-Hop: secret\r\nX-Kept: yes\r\nTE: gzip\r\n\r\n",
    );
    let body = text(&r);
    assert_eq!(r.status, 200, "{}", r.describe());
    for want in [
        "target=/echo?x=1",
        "h:host=example.test",
        "h:x-kept=yes",
        "h:x-forwarded-for=127.0.0.1",
        "h:x-forwarded-proto=http",
        "h:x-forwarded-host=example.test",
        "h:connection=keep-alive",
    ] {
        assert!(body.contains(want), "{want} missing in {body}");
    }
    for gone in ["x-hop", "h:te="] {
        assert!(!body.contains(gone), "{gone} passed on: {body}");
    }
    assert_eq!(r.headers_named("date").len(), 1, "one Date: {}", r.head);
    assert_eq!(r.headers_named("server").len(), 1, "one Server: {}", r.head);

    // One upstream connection carries request after request.
    let first = text(&ask(&mut c, "GET /conn HTTP/1.1\r\nHost: t\r\n\r\n"));
    for _ in 0..5 {
        let again = text(&ask(&mut c, "GET /conn HTTP/1.1\r\nHost: t\r\n\r\n"));
        assert_eq!(again, first, "the upstream connection was not kept");
    }

    // A body with Content-Length, and a chunked one (chunked on anew).
    let r = ask(
        &mut c,
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world",
    );
    assert!(text(&r).ends_with("body=hello world"), "{}", r.describe());
    let r = ask(
        &mut c,
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    );
    let body = text(&r);
    assert!(body.contains("h:transfer-encoding=chunked"), "{body}");
    assert!(body.ends_with("body=hello world"), "{body}");

    // Chunked and close-delimited answers reach an HTTP/1.1 client chunked.
    let r = ask(&mut c, "GET /chunked HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.framing, text(&r).as_str()), ("chunked", "one,two,three"));
    let r = ask(&mut c, "GET /close HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.framing, text(&r).as_str()), ("chunked", "until the end"));
    // HEAD: the length of the GET's body, and no body.
    let r = ask(&mut c, "HEAD /echo HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(
        r.body.is_empty() && r.content_length().is_some(),
        "{}",
        r.describe()
    );
    // Statuses pass on as they are.
    let r = ask(&mut c, "GET /status?code=418 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 418);
    // The client's connection stayed open through all of it.
    let r = ask(&mut c, "GET /name HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(text(&r), "a");

    // An HTTP/1.0 client gets a close-delimited answer, then the close.
    let mut c10 = s.connect();
    c10.send(b"GET /close HTTP/1.0\r\n\r\n").expect("send");
    let raw = c10.read_to_close(TIMEOUT).expect("close");
    assert!(
        raw.starts_with(b"HTTP/1.1 200") && raw.ends_with(b"until the end"),
        "{}",
        show(&raw)
    );
}

#[test]
fn a_large_download_streams_in_bounded_memory() {
    let app = http_app("a", "5");
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!("proxy.server = ( \"/\" => ( {} ) )", host(app.port)),
    );
    let before = s.rss_kb();
    let mut t = s.tcp();
    t.write_all(b"GET /big?mb=64 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("send");
    // A slow reader: glint must stop reading the backend, not buffer it all.
    let mut got = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    let mut most_rss = 0;
    t.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    loop {
        match t.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(e) => panic!("read: {e}"),
        }
        if got % (8 << 20) < 65536 {
            most_rss = most_rss.max(s.rss_kb());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(got > 64 << 20, "{got} bytes");
    let grew = most_rss.saturating_sub(before);
    assert!(
        grew < 16 * 1024,
        "glint grew by {grew} KiB for a 64 MiB download"
    );
}

#[test]
fn server_sent_events_arrive_as_they_are_sent() {
    let app = http_app("a", "5");
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!("proxy.server = ( \"/\" => ( {} ) )", host(app.port)),
    );
    let mut t = s.tcp();
    t.write_all(b"GET /sse?n=5&ms=150 HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("send");
    t.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut late = Vec::new();
    let mut seen = 0;
    while seen < 5 {
        let n = t.read(&mut chunk).expect("read");
        assert!(n > 0, "closed after {seen} events");
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        buf.extend_from_slice(&chunk[..n]);
        // Each event carries the second it was written at.
        let text = String::from_utf8_lossy(&buf).into_owned();
        let events: Vec<f64> = text
            .split("data: ")
            .skip(1)
            .filter_map(|e| e.split_whitespace().nth(1)?.parse().ok())
            .collect();
        for sent in events.iter().skip(seen) {
            late.push(now - sent);
        }
        seen = events.len();
    }
    let worst = late.iter().cloned().fold(0.0, f64::max);
    let mut sorted = late.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    // Milliseconds on loopback. Each event must be out before the next is
    // written (150 ms later): an answer held back in a buffer fails that,
    // while a machine busy with other tests may still delay one event.
    assert!(
        median < 0.02 && worst < 0.1,
        "events took {late:?} s (median {median:.3})"
    );
}

#[test]
fn websocket_echo_through_the_proxy() {
    let echo = python(&[backends_dir().join("ws_echo.py").to_str().expect("path")]);
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!(
            "proxy.server = ( \"/\" => ( {} ) )\nproxy.header = ( \"upgrade\" => \"enable\" )",
            host(echo.port)
        ),
    );
    let url = format!("ws://127.0.0.1:{}/chat", s.port);
    let out = Command::new("python3")
        .arg(backends_dir().join("ws_client.py"))
        .arg(&url)
        .output()
        .expect("python3");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("echoed 3"),
        "{said}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr_tail()
    );

    // Without "upgrade" => "enable" the Upgrade is not passed on.
    let plain = start_proxy(
        &d,
        &format!("proxy.server = ( \"/\" => ( {} ) )", host(echo.port)),
    );
    let url = format!("ws://127.0.0.1:{}/chat", plain.port);
    let out = Command::new("python3")
        .arg(backends_dir().join("ws_client.py"))
        .arg(&url)
        .output()
        .expect("python3");
    assert!(
        !out.status.success(),
        "the upgrade went through without being enabled"
    );
}

#[test]
fn two_application_servers_balanced_and_one_going_down() {
    // Seed 003: two application servers behind one proxy.server.
    let a = http_app("a", "5");
    let b = http_app("b", "5");
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!(
            "proxy.balance = \"round-robin\"\nproxy.server = ( \"/\" => ( \"a\" => {}, \"b\" => {} ) )",
            host(a.port),
            host(b.port)
        ),
    );
    let names: Vec<String> = (0..6)
        .map(|_| text(&fetch(&s, &get("/name", &[]))))
        .collect();
    assert_eq!(names, ["a", "b", "a", "b", "a", "b"], "round-robin");

    // One goes away: its requests go to the other, and the log names it.
    let b_port = b.port;
    drop(b);
    let names: Vec<String> = (0..6)
        .map(|_| text(&fetch(&s, &get("/name", &[]))))
        .collect();
    assert!(names.iter().all(|n| n == "a"), "{names:?}");
    let named = wait_for(TIMEOUT, || s.log().contains(&format!("127.0.0.1:{b_port}")));
    assert!(
        named,
        "no log line names the backend that went away:\n{}",
        s.log()
    );

    // Both gone: 503 at once (every backend disabled), never a hang.
    drop(a);
    let r = fetch(&s, &get("/name", &[]));
    assert!(matches!(r.status, 502 | 503), "{}", r.describe());
}

#[test]
fn a_kept_connection_closed_under_a_request_is_retried_only_when_idempotent() {
    // A backend that answers the first request on a connection and closes
    // the connection when a second one comes, without answering it: the
    // race of a backend's idle time-out with glint's next request.
    let dir = TempDir::new("once");
    let log = dir.join("requests.log");
    let be = python(&[
        backends_dir().join("http_once.py").to_str().expect("path"),
        log.to_str().expect("path"),
    ]);
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!("proxy.server = ( \"/\" => ( {} ) )", host(be.port)),
    );
    let mut c = s.connect();
    let r = ask(&mut c, "GET /one HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 200);
    // The kept connection is closed under it: sent again on a new one.
    let r = ask(&mut c, "GET /two HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(
        (r.status, text(&r).as_str()),
        (200, "answered GET /two"),
        "{}",
        s.stderr_tail()
    );
    // A POST is never sent twice: answered on a new connection, or 502.
    let r = ask(
        &mut c,
        "POST /three HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert!(matches!(r.status, 200 | 502), "{}", r.describe());
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(seen.matches("GET /two").count(), 2, "{seen}");
    assert_eq!(seen.matches("POST /three").count(), 1, "{seen}");
    if r.status == 502 {
        // (stderr is read by a thread of the harness: it may lag.)
        let said = wait_for(TIMEOUT, || s.log().contains("is not sent twice"));
        assert!(said, "{}", s.log());
    }
}

#[test]
fn time_outs_caps_and_the_queue() {
    let app = http_app("a", "5");
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!(
            "proxy.server = ( \"/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {}, \"read-timeout\" => 1, \"max-connections\" => 2 ) ) )",
            app.port
        ),
    );
    // An answer slower than read-timeout: 504, and the log says which backend.
    // (1 s limit: fired within 1-2 s; the answer would come at 5 s.)
    let r = fetch(&s, &get("/slow?s=5", &[]));
    assert_eq!(r.status, 504, "{}", r.describe());
    // (stderr is read by a thread of the harness: it may lag.)
    let said = wait_for(TIMEOUT, || s.log().contains("read time-out"));
    assert!(said, "{}", s.log());
    // Eight at once over two connections: all wait their turn, none fails.
    let addr = s.addr();
    let clients: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || get_at(addr, "/slow?s=0.2").map(|r| r.status)))
        .collect();
    for c in clients {
        assert_eq!(c.join().expect("thread"), Ok(200));
    }
}

#[test]
fn glint_behind_glint() {
    let d = Docroot::new();
    d.file("page.html", b"the upstream glint's page");
    let upstream = Server::start(&d);
    let front = Docroot::new();
    let s = start_proxy(
        &front,
        &format!("proxy.server = ( \"/\" => ( {} ) )", host(upstream.port)),
    );
    let r = fetch(&s, &get("/page.html", &[]));
    assert_eq!(text(&r), "the upstream glint's page");
    let r = fetch(&s, &get("/page.html", &["Range: bytes=4-11"]));
    assert_eq!((r.status, text(&r).as_str()), (206, "upstream"));
    let etag = fetch(&s, &get("/page.html", &[]))
        .header("etag")
        .map(str::to_string)
        .expect("ETag");
    let r = fetch(&s, &get("/page.html", &[&format!("If-None-Match: {etag}")]));
    assert_eq!(r.status, 304);
    let r = fetch(&s, &get("/missing", &[]));
    assert_eq!(r.status, 404);
}

#[test]
fn a_wsgi_application_under_waitress() {
    let app = python(&[backends_dir()
        .join("waitress_app.py")
        .to_str()
        .expect("path")]);
    let d = Docroot::new();
    let s = start_proxy(
        &d,
        &format!("proxy.server = ( \"/app\" => ( {} ) )", host(app.port)),
    );
    let mut c = s.connect();
    for i in 0..3 {
        let body = format!("n={i}");
        let r = ask(
            &mut c,
            &format!(
                "POST /app/form HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert_eq!(
            text(&r),
            format!("POST /app/form {body}"),
            "{}",
            r.describe()
        );
    }
    // Outside the prefix: glint's own files.
    d.file("index.html", b"glint's own");
    let r = fetch(&s, &get("/index.html", &[]));
    assert_eq!(text(&r), "glint's own");
}

#[test]
fn debian_10_proxy_conf() {
    // Debian's conf-available/10-proxy.conf with its examples filled in:
    // ".php" to one host, and a virtual host hashed over four.
    let php = http_app("php", "5");
    let d = Docroot::new();
    d.file("index.html", b"glint's own");
    let hosts: Vec<Backend> = (0..4).map(|i| http_app(&format!("h{i}"), "5")).collect();
    let conf = format!(
        r#"server.document-root = "{root}"
server.modules   += ( "mod_proxy" )

## Balance algorithm, possible values are: "hash", "round-robin" or "fair" (default)
# proxy.balance     = "hash"

## Redirect all queries to files ending with ".php" to 192.168.0.101:80
proxy.server     = ( ".php" =>
                     (
                       ( "host" => "127.0.0.1",
                         "port" => {php}
                       )
                     )
                    )

## Redirect all connections on www.example.com to 10.0.0.1{{0,1,2,3}}
$HTTP["host"] == "www.example.com" {{
  proxy.balance = "hash"
  proxy.server  = ( "" => ( ( "host" => "127.0.0.1", "port" => {h0} ),
                            ( "host" => "127.0.0.1", "port" => {h1} ),
                            ( "host" => "127.0.0.1", "port" => {h2} ),
                            ( "host" => "127.0.0.1", "port" => {h3} ) ) )
}}
"#,
        root = d.root.display(),
        php = php.port,
        h0 = hosts[0].port,
        h1 = hosts[1].port,
        h2 = hosts[2].port,
        h3 = hosts[3].port,
    );
    let s = Launch::new()
        .config(&conf)
        .args(&["--bind", "127.0.0.1", "--port", "0"])
        .start();
    let r = fetch(&s, &get("/x.php", &[]));
    assert_eq!(r.header("x-backend"), Some("php"), "{}", r.describe());
    let r = fetch(&s, &get("/index.html", &[]));
    assert_eq!(r.status, 200, "glint's own file: {}", r.describe());
    assert_eq!(r.header("x-backend"), None);
    // hash: one path always goes to one host; different paths spread.
    let name_for = |path: &str| {
        let r = fetch(
            &s,
            format!("GET {path} HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        r.header("x-backend").unwrap_or("none").to_string()
    };
    let first = name_for("/a/path");
    assert!(first.starts_with('h'), "{first}");
    for _ in 0..3 {
        assert_eq!(name_for("/a/path"), first, "hash moved a path");
    }
    let mut names: Vec<String> = (0..16).map(|i| name_for(&format!("/p{i}"))).collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 2, "16 paths all went to {names:?}");
}
