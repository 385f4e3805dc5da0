//! mod_wstunnel: WebSocket clients (Python's `websockets`, and raw frames
//! from the attacker's side) against a plain TCP echo backend the test
//! runs on 127.0.0.1 port 0; against glint, and against lighttpd with
//! `GLINT_BLACKBOX_SERVER=lighttpd`.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn start(d: &Docroot, extra: &str, echo: u16) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.modules += ( \"mod_wstunnel\" )\n\
         wstunnel.server = ( \"/ws/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {echo} ) ) )\n\
         {extra}\n",
        d.root.display()
    );
    Server::start_config(&conf)
}

/// tests/backends/wstunnel_client.py's JSON line.
fn client(url: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("python3");
    if server_kind() == Kind::Lighttpd {
        // lighttpd 1.4.69 cuts multi-byte characters between text frames
        // (the client then fails the connection with 1007): ASCII for it.
        cmd.env("WS_ASCII", "1");
    }
    let out = cmd
        .arg(backends_dir().join("wstunnel_client.py"))
        .arg(url)
        .args(args)
        .output()
        .expect("python3");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

#[test]
fn text_messages_go_to_the_backend_and_back_whole() {
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    let s = start(&d, "", echo.port);
    let said = client(&format!("ws://127.0.0.1:{}/ws/chat", s.port), &[]);
    // The multi-byte characters arrive whole however the backend's reads
    // cut them: the client checks every text frame's UTF-8.
    assert!(said.contains("\"echoed\": true"), "{said}");
    assert!(said.contains("\"kinds\": [\"str\"]"), "{said}");
    assert!(said.contains("\"pong\": true"), "{said}");
    if s.kind == Kind::Glint {
        // The close answered with the client's own code (RFC 6455 5.5.1);
        // lighttpd answers with the text "1000" as its payload.
        assert!(said.contains("\"close_code\": 1000"), "{said}");
    }
    assert_eq!(echo.connections(), 1);
}

#[test]
fn binary_frames_when_configured_or_asked_for() {
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    let s = start(&d, "wstunnel.frame-type = \"binary\"", echo.port);
    let said = client(&format!("ws://127.0.0.1:{}/ws/x", s.port), &["binary"]);
    assert!(said.contains("\"echoed\": true"), "{said}");
    assert!(said.contains("\"kinds\": [\"bytes\"]"), "{said}");
    assert!(said.contains("\"subprotocol\": \"binary\""), "{said}");
    // Text configured, but the client offers the "binary" subprotocol.
    let t = start(&d, "", echo.port);
    let said = client(&format!("ws://127.0.0.1:{}/ws/x", t.port), &["binary"]);
    assert!(said.contains("\"kinds\": [\"bytes\"]"), "{said}");
}

#[test]
fn origins_are_checked_when_listed() {
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    // An origin as a whole, or a name whose subdomains are allowed (an
    // origin ending in "." and the name), as lighttpd compares them.
    let s = start(
        &d,
        "wstunnel.origins = ( \"https://example.org\", \"example.net\" )",
        echo.port,
    );
    let url = format!("ws://127.0.0.1:{}/ws/x", s.port);
    for ok in ["https://example.org", "https://app.example.net"] {
        let said = client(&url, &["text", ok]);
        assert!(said.contains("\"echoed\": true"), "{ok}: {said}");
    }
    // From the attacker's side: a page elsewhere, another scheme, a
    // look-alike name, none.
    for (origin, status) in [
        (Some("http://evil.test"), 403),
        (Some("http://example.org"), 403),
        (Some("https://notexample.net"), 403),
        (None, 400),
    ] {
        let r = handshake(s.port, "/ws/x", origin);
        assert!(
            r.starts_with(&format!("HTTP/1.1 {status}")),
            "{origin:?}: {r}"
        );
    }
}

#[test]
fn requests_that_are_not_websocket_go_elsewhere() {
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    d.file("ws/page.txt", b"static");
    let s = start(&d, "", echo.port);
    // A plain GET on the route's prefix is not the module's.
    let r = s.get("/ws/page.txt").expect("GET");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"static"[..]));
    // A version of the drafts before RFC 6455: 503, as lighttpd answers.
    let mut c = Conn::connect(s.port);
    let _ = c.send(
        b"GET /ws/x HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 7\r\n\r\n",
    );
    let r = c.read_response(false).expect("answer");
    assert_eq!(r.status, 503, "{}", r.describe());
    assert_eq!(echo.connections(), 0);
}

/// A raw handshake for `path`; the answer's head as text (the socket is
/// dropped).
fn handshake(port: u16, path: &str, origin: Option<&str>) -> String {
    let (head, _) = open_ws(port, path, origin);
    head
}

/// Opens a WebSocket by hand: the 101's head, and the socket after it.
fn open_ws(port: u16, path: &str, origin: Option<&str>) -> (String, TcpStream) {
    let mut s = connect_tcp(([127, 0, 0, 1], port).into()).expect("connect");
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{origin}\r\n"
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => break,
        }
    }
    (String::from_utf8_lossy(&head).into_owned(), s)
}

/// Reads frames until a Close (its payload) or the end; the opcodes seen.
fn read_until_close(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, Option<Vec<u8>>) {
    let _ = s.set_read_timeout(Some(limit));
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let mut at = 0;
        let mut ops = Vec::new();
        while at + 2 <= all.len() {
            let len = (all[at + 1] & 0x7f) as usize;
            if len > 125 || at + 2 + len > all.len() {
                break;
            }
            let op = all[at] & 0x0f;
            ops.push(op);
            if op == 8 {
                return (ops, Some(all[at + 2..at + 2 + len].to_vec()));
            }
            at += 2 + len;
        }
        if Instant::now() > deadline {
            return (ops, None);
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return (ops, None),
            Ok(n) => all.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn broken_frames_close_the_websocket() {
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    let s = start(&d, "", echo.port);
    let cases: &[(&str, Vec<u8>)] = &[
        ("an unmasked frame", vec![0x81, 0x02, b'h', b'i']),
        ("a ping of 126 bytes", {
            let mut f = vec![0x89, 0x80 | 126, 0, 126, 1, 2, 3, 4];
            f.extend_from_slice(&[0u8; 126]);
            f
        }),
        ("an unknown opcode", vec![0x83, 0x80, 1, 2, 3, 4]),
    ];
    for (why, frame) in cases {
        if s.kind == Kind::Lighttpd && why.contains("126") {
            // lighttpd answers a ping of any length up to 1 MiB.
            continue;
        }
        let (head, mut c) = open_ws(s.port, "/ws/x", None);
        assert!(head.starts_with("HTTP/1.1 101"), "{why}: {head}");
        c.write_all(frame).expect("send");
        let (_, close) = read_until_close(&mut c, Duration::from_secs(5));
        let close = close.unwrap_or_else(|| panic!("{why}: no Close frame"));
        if s.kind == Kind::Glint {
            assert_eq!(close, 1002u16.to_be_bytes(), "{why}: protocol error");
        }
        // Then the server ends the connection.
        let mut rest = Vec::new();
        let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
        assert!(c.read_to_end(&mut rest).is_ok(), "{why}: not closed");
    }
}

#[test]
fn pings_at_the_interval_and_the_close_answered() {
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    let s = start(&d, "wstunnel.ping-interval = 1", echo.port);
    let (head, mut c) = open_ws(s.port, "/ws/x", None);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    let mut b = [0u8; 2];
    c.read_exact(&mut b).expect("a frame within 5 s");
    assert_eq!(b[0], 0x89, "a ping from the server");
    let mut payload = vec![0u8; usize::from(b[1] & 0x7f)];
    c.read_exact(&mut payload).expect("its payload");
    // A masked close from the client is answered with a Close.
    c.write_all(&[0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8])
        .expect("close");
    let (_, close) = read_until_close(&mut c, Duration::from_secs(5));
    assert!(close.is_some(), "the close was answered");
}

#[test]
fn the_backend_closing_closes_the_websocket() {
    // A backend that says one line and hangs up.
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        if let Some(Ok(mut s)) = l.incoming().next() {
            let _ = s.write_all(b"gone");
        }
    });
    let d = Docroot::new();
    let s = start(&d, "", port);
    let (head, mut c) = open_ws(s.port, "/ws/x", None);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let (ops, close) = read_until_close(&mut c, Duration::from_secs(5));
    assert_eq!(ops.first(), Some(&1), "the backend's words in a text frame");
    if s.kind == Kind::Glint {
        assert_eq!(close, Some(1001u16.to_be_bytes().to_vec()), "going away");
    }
    let mut rest = Vec::new();
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    assert!(c.read_to_end(&mut rest).is_ok(), "not closed");
}

/// From the attacker's side: pings sent without reading a pong are not
/// answered into memory without bound; glint stops reading the client
/// until it reads, and then answers every one.
#[test]
fn a_ping_flood_that_reads_nothing_is_held_off() {
    if server_kind() == Kind::Lighttpd {
        // (lighttpd queues every pong in memory.)
        return;
    }
    let echo = TcpEcho::start("");
    let d = Docroot::new();
    let s = start(&d, "", echo.port);
    let (head, c) = open_ws(s.port, "/ws/x", None);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let before = s.rss_kb();
    let n = 200_000;
    let mut ping = vec![0x89, 0x80 | 125, 1, 2, 3, 4];
    ping.extend_from_slice(&[0u8; 125]);
    let mut w = c.try_clone().expect("clone");
    let writer = std::thread::spawn(move || {
        for _ in 0..n {
            if w.write_all(&ping).is_err() {
                return false;
            }
        }
        true
    });
    // 26 MB of pings sent (as far as glint takes them), none of their
    // pongs read yet: what the sockets' buffers do not hold, glint would.
    std::thread::sleep(Duration::from_secs(3));
    let grown = s.rss_kb().saturating_sub(before);
    assert!(grown < 4 * 1024, "glint grew by {grown} KiB");
    // Reading now, every pong comes.
    let mut r = c;
    let _ = r.set_read_timeout(Some(Duration::from_secs(10)));
    let want = n * (2 + 125);
    let mut got = 0;
    let mut buf = vec![0u8; 64 * 1024];
    while got < want {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => got += k,
        }
    }
    assert!(writer.join().expect("writer"), "the writes failed");
    assert_eq!(got, want, "every pong");
}
