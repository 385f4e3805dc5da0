//! `server.error-intercept`: a backend's 4xx or 5xx answer is replaced by
//! the server's own error answer (`server.errorfile-prefix`'s page or the
//! built-in one; `server.error-handler`, `server.error-handler-404`). The
//! backend is the WSGI application of `tests/backends` on flup over
//! FastCGI, as in tests/gateway.rs, and a CGI program. Run against lighttpd
//! with `GLINT_BLACKBOX_SERVER=lighttpd`: the same expectations hold
//! (but for the error handlers, see [`start_glint`]).

mod common;

use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Setup {
    d: Docroot,
    _backend: Backend,
    sock: std::path::PathBuf,
}

fn setup() -> Setup {
    let d = Docroot::new();
    let sock = d.base.join("fcgi.socket");
    let child = Command::new("python3")
        .arg(backends_dir().join("fcgi_app.py"))
        .arg(&sock)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 with flup (pip install flup)");
    let backend = Backend::of(child);
    assert!(
        wait_for(TIMEOUT, || std::os::unix::net::UnixStream::connect(&sock)
            .is_ok()),
        "flup did not listen on {} (pip install flup)",
        sock.display()
    );
    std::fs::write(d.base.join("err-500.html"), b"<p>our own 500 page</p>\n").unwrap();
    std::fs::write(d.base.join("err-404.html"), b"<p>our own 404 page</p>\n").unwrap();
    d.file("gone.cgi", b"#!/bin/sh\nprintf 'Status: 410\\r\\nContent-Type: text/plain\\r\\nX-Backend: cgi\\r\\n\\r\\nthe script says gone\\n'\n");
    set_mode(&d.root.join("gone.cgi"), 0o755);
    d.file("handler.cgi", b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\necho \"REDIRECT_STATUS=$REDIRECT_STATUS\"\necho \"REQUEST_METHOD=$REQUEST_METHOD\"\necho \"SCRIPT_NAME=$SCRIPT_NAME\"\n");
    set_mode(&d.root.join("handler.cgi"), 0o755);
    Setup {
        d,
        _backend: backend,
        sock,
    }
}

fn conf(s: &Setup, extra: &str) -> String {
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n{{errorlog}}\n\
         server.modules += (\"mod_fastcgi\", \"mod_cgi\")\n\
         fastcgi.server = ( \"/wsgi\" => ( \"flup\" => ( \"socket\" => \"{}\", \"check-local\" => \"disable\" ) ) )\n\
         cgi.assign = ( \".cgi\" => \"\" )\n{extra}\n",
        s.d.root.display(),
        s.sock.display()
    )
}

fn prefix(base: &Path) -> String {
    format!("server.errorfile-prefix = \"{}/err-\"", base.display())
}

fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The page the server builds itself for `status` (no errorfile).
fn builtin_page(r: &Response, status: u16) -> bool {
    let t = text(r);
    t.contains(&format!("<title>{status}")) && !t.contains("from the app")
}

#[test]
fn without_intercept_the_backends_errors_pass_through() {
    let st = setup();
    let s = Server::start_config(&conf(&st, &prefix(&st.d.base)));
    let r = fetch(&s, &get("/wsgi/status?500", &[]));
    assert_eq!(r.status, 500);
    assert_eq!(text(&r), "status 500 from the app\n");
    assert_eq!(r.header("X-Backend"), Some("yes"));
}

#[test]
fn intercepted_errors_get_the_errorfile_or_the_builtin_page() {
    let st = setup();
    let extra = format!(
        "server.error-intercept = \"enable\"\n{}",
        prefix(&st.d.base)
    );
    let s = Server::start_config(&conf(&st, &extra));
    for (status, page) in [
        (500, Some("<p>our own 500 page</p>\n")),
        (404, Some("<p>our own 404 page</p>\n")),
        (503, None),
        (403, None),
    ] {
        let r = fetch(&s, &get(&format!("/wsgi/status?{status}"), &[]));
        assert_eq!(r.status, status, "{}", r.describe());
        assert_eq!(
            r.header("X-Backend"),
            None,
            "{status}: the backend's headers are dropped"
        );
        match page {
            Some(p) => assert_eq!(text(&r), p, "{status}"),
            None => assert!(builtin_page(&r, status), "{status}: {}", text(&r)),
        }
    }
    // A 401 keeps its challenge (and only that).
    let r = fetch(&s, &get("/wsgi/status?401", &[]));
    assert_eq!(r.status, 401);
    assert_eq!(r.header("WWW-Authenticate"), Some("Basic realm=\"app\""));
    assert_eq!(r.header("X-Backend"), None);
    assert!(builtin_page(&r, 401), "{}", text(&r));
    // Success and redirects are the backend's.
    let r = fetch(&s, &get("/wsgi/status?200", &[]));
    assert_eq!(
        (r.status, text(&r)),
        (200, "status 200 from the app\n".into())
    );
    let r = fetch(&s, &get("/wsgi/status?302", &[]));
    assert_eq!(r.status, 302);
    assert_eq!(r.header("X-Backend"), Some("yes"));
    // HEAD: the status, no body.
    let r = fetch(&s, &head("/wsgi/status?500", &[]));
    assert_eq!(r.status, 500);
    assert!(r.body.is_empty());
    // Over HTTP/2 (prior knowledge, curl) alike.
    let o = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "--http2-prior-knowledge",
            "-w",
            "\n%{http_code} %{http_version}",
        ])
        .arg(format!("http://127.0.0.1:{}/wsgi/status?500", s.port))
        .output()
        .expect("curl (apt-get install curl)");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "<p>our own 500 page</p>\n\n500 2",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A CGI program's error too.
    let r = fetch(&s, &get("/gone.cgi", &[]));
    assert_eq!(r.status, 410);
    assert_eq!(r.header("X-Backend"), None);
    assert!(builtin_page(&r, 410), "{}", text(&r));
}

/// Keep-alive goes on after an intercepted answer; HTTP/1.0 and
/// `Connection: close` get it whole before the close.
#[test]
fn intercepted_answers_reach_the_client_whole() {
    let st = setup();
    let extra = format!(
        "server.error-intercept = \"enable\"\n{}",
        prefix(&st.d.base)
    );
    let s = Server::start_config(&conf(&st, &extra));
    let mut c = s.connect();
    for _ in 0..2 {
        c.send(b"GET /wsgi/status?500 HTTP/1.1\r\nHost: t\r\n\r\n")
            .expect("send");
        let r = c.read_response(false).expect("answer");
        assert_eq!(
            (r.status, text(&r)),
            (500, "<p>our own 500 page</p>\n".into())
        );
    }
    for req in [
        &b"GET /wsgi/status?404 HTTP/1.0\r\n\r\n"[..],
        &b"GET /wsgi/status?404 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"[..],
    ] {
        let mut c = s.connect();
        c.send(req).expect("send");
        let r = c.read_response(false).expect("answer");
        assert_eq!(
            (r.status, text(&r)),
            (404, "<p>our own 404 page</p>\n".into())
        );
        assert!(c.expect_close(TIMEOUT).expect("close").is_empty());
    }
}

/// The client is still sending its body when the backend's error comes
/// back: the replacement still reaches it whole.
#[test]
fn an_intercepted_answer_to_a_body_still_coming_is_whole() {
    let st = setup();
    let extra = format!(
        "server.error-intercept = \"enable\"\n{}",
        prefix(&st.d.base)
    );
    let s = Server::start_config(&conf(&st, &extra));
    let mut c = s.connect();
    let len = 200_000;
    c.send(
        format!("POST /wsgi/status?500 HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n")
            .as_bytes(),
    )
    .expect("head");
    c.send(&vec![b'a'; len / 2]).expect("half");
    let mut rest = c.stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        // A slow client: the rest of its body a moment later.
        std::thread::sleep(Duration::from_millis(300));
        let _ = rest.write_all(&vec![b'b'; len / 2]);
    });
    let r = c
        .read_response_by(false, Instant::now() + Duration::from_secs(20))
        .expect("answer");
    sender.join().expect("sender");
    assert_eq!(
        (r.status, text(&r)),
        (500, "<p>our own 500 page</p>\n".into())
    );
}

/// glint alone, for the error handlers: lighttpd 1.4.69 sends only the
/// head of an intercepted backend error when an error handler is set (a
/// static page, a CGI program or the backend alike) and never its body,
/// so it cannot be compared there; glint answers as its own errors are
/// answered by the handler.
fn start_glint(conf: &str) -> Server {
    Launch::new()
        .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
        .start()
}

/// `server.error-handler` runs for an intercepted error as a GET, with
/// `REDIRECT_STATUS`; the client gets the error's status.
#[test]
fn the_error_handler_answers_an_intercepted_error() {
    let st = setup();
    let s = start_glint(&conf(
        &st,
        "server.error-intercept = \"enable\"\nserver.error-handler = \"/handler.cgi\"",
    ));
    let r = fetch(&s, &req("POST", "/wsgi/status?502", &["Content-Length: 0"]));
    assert_eq!(r.status, 502, "{}", r.describe());
    let t = text(&r);
    assert!(t.contains("REDIRECT_STATUS=502"), "{t}");
    assert!(t.contains("REQUEST_METHOD=GET"), "{t}");
    assert!(t.contains("SCRIPT_NAME=/handler.cgi"), "{t}");
    assert_eq!(r.header("X-Backend"), None);
    // A backend's 400 is no verdict on the request's syntax: the handler too.
    let r = fetch(&s, &get("/wsgi/status?400", &[]));
    assert_eq!(r.status, 400);
    assert!(text(&r).contains("REDIRECT_STATUS=400"), "{}", text(&r));
    // A 401 keeps its challenge: the page, not the handler.
    let r = fetch(&s, &get("/wsgi/status?401", &[]));
    assert_eq!(r.status, 401);
    assert_eq!(r.header("WWW-Authenticate"), Some("Basic realm=\"app\""));
    assert!(builtin_page(&r, 401), "{}", text(&r));
}

/// `server.error-handler-404` takes an intercepted 404 (and 403); its
/// answer's own status stands, as lighttpd gives it.
#[test]
fn the_error_handler_404_answers_an_intercepted_404() {
    let st = setup();
    let s = start_glint(&conf(
        &st,
        "server.error-intercept = \"enable\"\nserver.error-handler-404 = \"/handler.cgi\"",
    ));
    let r = fetch(&s, &get("/wsgi/status?404", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(text(&r).contains("REDIRECT_STATUS=404"), "{}", text(&r));
    // Other errors get the page.
    let r = fetch(&s, &get("/wsgi/status?500", &[]));
    assert_eq!(r.status, 500);
    assert!(builtin_page(&r, 500), "{}", text(&r));
}

/// mod_proxy's backend (tests/backends/http_app.py): its 5xx is replaced,
/// the body it sent is read and dropped, and the kept backend connection
/// answers the next request.
#[test]
fn a_proxied_error_is_intercepted() {
    let st = setup();
    let app = python(&[
        backends_dir().join("http_app.py").to_str().expect("path"),
        "0",
        "app",
        "5",
    ]);
    let extra = format!(
        "server.modules += (\"mod_proxy\")\n\
         proxy.server = ( \"/p/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {} ) ) )\n\
         proxy.header = ( \"map-urlpath\" => ( \"/p/\" => \"/\" ) )\n\
         server.error-intercept = \"enable\"\n{}",
        app.port,
        prefix(&st.d.base)
    );
    let s = Server::start_config(&conf(&st, &extra));
    let mut c = s.connect();
    for (path, status, body) in [
        ("/p/status?code=500", 500, "<p>our own 500 page</p>\n"),
        ("/p/status?code=200", 200, "status 200"),
        ("/p/status?code=404", 404, "<p>our own 404 page</p>\n"),
    ] {
        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .expect("send");
        let r = c.read_response(false).expect("answer");
        assert_eq!((r.status, text(&r)), (status, body.to_string()), "{path}");
        assert_eq!(r.header("X-Backend").is_some(), status == 200, "{path}");
    }
}
