//! mod_sockproxy: a listener whose connections go whole to a TCP backend
//! (a plain echo server the test runs on 127.0.0.1 port 0), beside an HTTP
//! listener of the same server. Against glint, and against lighttpd with
//! `GLINT_BLACKBOX_SERVER=lighttpd`: the same bytes both ways.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// The server of [`server_kind`]: HTTP on its first port, and on a second
/// one (returned) `block` in a `$SERVER["socket"]` block.
fn start(d: &Docroot, block: &str) -> (Server, u16) {
    let p2 = free_port();
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.modules += ( \"mod_sockproxy\" )\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{p2}\" {{\n{block}\n}}\n",
        d.root.display()
    );
    (Server::start_config(&conf), p2)
}

fn backend(port: u16) -> String {
    format!("( \"host\" => \"127.0.0.1\", \"port\" => {port} )")
}

/// Reads from `c` until `want` bytes came (or the deadline).
fn read_n(c: &mut std::net::TcpStream, want: usize) -> Vec<u8> {
    let mut got = Vec::with_capacity(want);
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + TIMEOUT;
    while got.len() < want && Instant::now() < deadline {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read after {} of {want} bytes: {e}", got.len()),
        }
    }
    got
}

#[test]
fn a_whole_connection_goes_to_the_backend_and_back() {
    let echo = TcpEcho::start("hello\n");
    let d = Docroot::new();
    d.file("page.txt", b"a page");
    let (s, p2) = start(
        &d,
        &format!("sockproxy.server = ( \"\" => ( {} ) )", backend(echo.port)),
    );
    let mut c = connect_tcp(([127, 0, 0, 1], p2).into()).expect("connect");
    // The backend speaks first: it was connected as the client was accepted.
    assert_eq!(read_n(&mut c, 6), b"hello\n");
    // Bytes that look like HTTP are not HTTP here, and 1 MiB of every
    // byte value comes back unchanged, the writer and the reader in step.
    let mut data = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    data.extend((0..1 << 20).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    let mut w = c.try_clone().expect("clone");
    let sent = data.clone();
    let writer = std::thread::spawn(move || w.write_all(&sent).map(|()| w));
    let back = read_n(&mut c, data.len());
    let w = writer.join().expect("writer").expect("write");
    assert!(
        back == data,
        "{} of {} bytes came back, not the same",
        back.len(),
        data.len()
    );
    // The client's half-close reaches the backend, whose last words and
    // close reach the client. (lighttpd 1.4.69 ends the whole connection
    // at the client's half-close: the backend's last words are lost.)
    w.shutdown(std::net::Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).expect("to the end");
    let last: &[u8] = match s.kind {
        Kind::Glint => b"bye\n",
        Kind::Lighttpd => b"",
    };
    assert_eq!(show(&rest), show(last));
    // The other listener is HTTP as before.
    let r = s.get("/page.txt").expect("HTTP on the first port");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"a page"[..]));
}

#[test]
fn the_backend_closing_ends_the_client_connection() {
    // A backend that says one line and hangs up, once per connection.
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut s in l.incoming().take(2).flatten() {
            let _ = s.write_all(b"gone\n");
        }
    });
    let d = Docroot::new();
    let (_s, p2) = start(
        &d,
        &format!("sockproxy.server = ( \"/\" => ( {} ) )", backend(port)),
    );
    let mut c = Conn::open(([127, 0, 0, 1], p2).into()).expect("connect");
    let started = Instant::now();
    let got = c.read_to_close(Duration::from_secs(5)).expect("closed");
    assert_eq!(got, b"gone\n", "{}", show(&got));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn round_robin_between_two_backends() {
    let a = TcpEcho::start("a\n");
    let b = TcpEcho::start("b\n");
    let d = Docroot::new();
    let (_s, p2) = start(
        &d,
        &format!(
            "sockproxy.balance = \"round-robin\"\nsockproxy.server = ( \"\" => ( {}, {} ) )",
            backend(a.port),
            backend(b.port)
        ),
    );
    let names: Vec<Vec<u8>> = (0..4)
        .map(|_| {
            let mut c = connect_tcp(([127, 0, 0, 1], p2).into()).expect("connect");
            let name = read_n(&mut c, 2);
            c.shutdown(std::net::Shutdown::Write).expect("shutdown");
            let mut rest = Vec::new();
            let _ = c.read_to_end(&mut rest);
            name
        })
        .collect();
    assert_ne!(names[0], names[1], "{names:?}");
    assert_eq!(names[0], names[2], "{names:?}");
    assert_eq!(names[1], names[3], "{names:?}");
    assert_eq!((a.connections(), b.connections()), (2, 2));
}

/// From the attacker's side: with the backend down nothing is answered as
/// HTTP on the tunnel's port (no error page, no file), and the server goes
/// on. glint closes the connection; lighttpd 1.4.69 leaves it open without
/// a word (until the client gives up), so only glint is held to the close.
#[test]
fn a_backend_that_is_down_closes_the_connection_without_http() {
    let (_hold, dead) = refusing_port();
    let d = Docroot::new();
    d.file("secret.html", b"not for the tunnel's clients");
    let (s, p2) = start(
        &d,
        &format!("sockproxy.server = ( \"\" => ( {} ) )", backend(dead)),
    );
    for _ in 0..2 {
        let mut c = Conn::open(([127, 0, 0, 1], p2).into()).expect("connect");
        let _ = c.send(b"GET /secret.html HTTP/1.0\r\n\r\n");
        let got = c.read_to_close(Duration::from_secs(3));
        match s.kind {
            Kind::Glint => assert_eq!(got.map(|b| show(&b)), Ok(String::new())),
            Kind::Lighttpd => assert!(c.buf.is_empty(), "answered: {}", show(&c.buf)),
        }
    }
    let r = s.get("/secret.html").expect("HTTP still served");
    assert_eq!(r.status, 200, "{}", r.describe());
}
