//! glint's HTTP/2 core against real clients: `nghttp` and `h2load` (Debian's
//! nghttp2-client) talk to a tiny blocking-socket driver of
//! `proto::h2::conn::Connection` on 127.0.0.1:0 over cleartext prior
//! knowledge. A missing tool fails the test (`.ci/run` installs them);
//! every process runs under `timeout` and every socket has a read timeout,
//! so nothing here can hang.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use glint::proto::h2::conn::{Config, Connection, Event};

/// Fails the test when `tool` is missing (Debian's nghttp2-client, which
/// `.ci/run` installs): an interop test without its client proves nothing.
fn need(tool: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok();
    assert!(found, "{tool} is needed (apt-get install nghttp2-client)");
}

/// What one response still has to send.
struct Body {
    bytes: Vec<u8>,
    at: usize,
}

/// The response to a finished request: `/size/N` is N bytes, `/echo` the
/// request body, anything else a line naming the path.
fn respond(path: &[u8], body: Vec<u8>) -> Vec<u8> {
    let path = String::from_utf8_lossy(path);
    if let Some(n) = path.strip_prefix("/size/") {
        let n: usize = n.parse().unwrap_or(0);
        return (0..n).map(|i| b'a' + (i % 26) as u8).collect();
    }
    if path == "/echo" {
        return body;
    }
    format!("hello from glint h2: {path}\n").into_bytes()
}

/// Drives one connection with blocking I/O until it is done or idle 10 s.
fn serve(mut sock: TcpStream) {
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = sock.set_nodelay(true);
    let start = Instant::now();
    let mut conn = Connection::new(Config::default());
    let mut inbuf = Vec::new();
    let mut paths: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut uploads: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut out: HashMap<u32, Body> = HashMap::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // Write: the connection's own frames first, then DATA by priority.
        loop {
            if !conn.output().is_empty() {
                let n = conn.output().len();
                if sock.write_all(conn.output()).is_err() {
                    return;
                }
                conn.advance_output(n);
            }
            let Some(s) = conn.next_stream_to_send() else {
                break;
            };
            let Some(b) = out.get_mut(&s) else {
                conn.set_ready(s, false);
                continue;
            };
            let left = b.bytes.len() - b.at;
            let n = left.min(conn.send_window(s));
            if n == 0 && left > 0 {
                break;
            }
            let Ok(head) = conn.data_header(s, n, n == left) else {
                return;
            };
            if sock.write_all(&head).is_err() || sock.write_all(&b.bytes[b.at..b.at + n]).is_err() {
                return;
            }
            b.at += n;
            if b.at == b.bytes.len() {
                out.remove(&s);
            }
        }
        if conn.is_done() || start.elapsed() > Duration::from_secs(30) {
            return;
        }
        let n = match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        inbuf.extend_from_slice(&chunk[..n]);
        let now = start.elapsed().as_millis() as u64;
        match conn.recv(&inbuf, now) {
            Ok(used) => {
                inbuf.drain(..used);
            }
            Err(e) => {
                eprintln!("connection error: {e}");
                let _ = sock.write_all(conn.output());
                return;
            }
        }
        while let Some(ev) = conn.poll_event() {
            let done = match ev {
                Event::Request {
                    stream,
                    head,
                    end_stream,
                } => {
                    paths.insert(stream, head.path().unwrap_or_default().to_vec());
                    end_stream.then_some(stream)
                }
                Event::Data {
                    stream, end_stream, ..
                } => {
                    let body = conn.body(stream).to_vec();
                    conn.consume_body(stream, body.len());
                    uploads.entry(stream).or_default().extend(body);
                    end_stream.then_some(stream)
                }
                Event::Trailers { stream, .. } => Some(stream),
                Event::Reset { stream, .. } => {
                    out.remove(&stream);
                    None
                }
                Event::Rejected { .. } | Event::GoAway { .. } => None,
            };
            if let Some(s) = done {
                let body = respond(
                    &paths.remove(&s).unwrap_or_default(),
                    uploads.remove(&s).unwrap_or_default(),
                );
                let len = body.len().to_string();
                let fields: [(&[u8], &[u8]); 3] = [
                    (b"server", b"glint-interop"),
                    (b"content-type", b"text/plain"),
                    (b"content-length", len.as_bytes()),
                ];
                if conn.send_headers(s, 200, fields, body.is_empty()).is_ok() && !body.is_empty() {
                    out.insert(s, Body { bytes: body, at: 0 });
                    conn.set_ready(s, true);
                }
            }
        }
    }
}

/// A server on 127.0.0.1:0 taking connections until the test ends.
fn server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    thread::spawn(move || {
        for s in l.incoming().flatten() {
            thread::spawn(move || serve(s));
        }
    });
    port
}

fn run(tool: &str, args: &[String]) -> (bool, String, String) {
    let out = Command::new("timeout")
        .arg("30")
        .arg(tool)
        .args(args)
        .output()
        .expect("run");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn nghttp_get_shows_decoded_heads() {
    need("nghttp");
    let port = server();
    let url = format!("http://127.0.0.1:{port}/hello");
    // Two requests on one connection: the second head uses the dynamic table.
    let (ok, out, err) = run("nghttp", &["-v".into(), "-m".into(), "2".into(), url]);
    assert!(ok, "nghttp failed: {err}\n{out}");
    // H2_SHOW=1 prints nghttp's frame trace.
    if std::env::var_os("H2_SHOW").is_some() {
        eprintln!("{out}");
    }
    assert_eq!(out.matches(":status: 200").count(), 2, "{out}");
    assert_eq!(out.matches("server: glint-interop").count(), 2, "{out}");
    assert_eq!(
        out.matches("hello from glint h2: /hello").count(),
        2,
        "{out}"
    );
    assert!(out.contains("recv SETTINGS frame"), "{out}");
    // The second head is mostly indexes into the dynamic table the first
    // one filled (26 bytes, then 8, when this was written).
    let lens: Vec<usize> = out
        .split("recv HEADERS frame <length=")
        .skip(1)
        .filter_map(|s| s.split(',').next()?.parse().ok())
        .collect();
    assert_eq!(lens.len(), 2, "{out}");
    assert!(lens[1] * 2 < lens[0], "{lens:?}");
}

#[test]
fn nghttp_with_small_windows_and_no_header_table() {
    need("nghttp");
    let port = server();
    // 2^14-1 stream and 2^15-1 connection windows: 1 MB needs many
    // WINDOW_UPDATEs; a header table of 0 makes the encoder send a size update.
    let url = format!("http://127.0.0.1:{port}/size/1000000");
    let args = ["-w", "14", "-W", "15", "-c", "0", &url].map(String::from);
    let (ok, out, err) = run("nghttp", &args);
    assert!(ok, "nghttp failed: {err}");
    assert_eq!(out.len(), 1_000_000);
    assert!(out
        .bytes()
        .enumerate()
        .all(|(i, b)| b == b'a' + (i % 26) as u8));
}

#[test]
fn nghttp_upload_larger_than_the_connection_window() {
    need("nghttp");
    let port = server();
    let dir = std::env::temp_dir().join(format!("glint-h2-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("upload");
    // 600 KB > 256 KiB: the upload only completes if consumed credit returns.
    let body: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &body).expect("write");
    let url = format!("http://127.0.0.1:{port}/echo");
    let args = ["-d".into(), file.display().to_string(), url];
    let out = Command::new("timeout")
        .arg("30")
        .arg("nghttp")
        .args(&args)
        .output()
        .expect("run");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == body,
        "echo differs: {} bytes back",
        out.stdout.len()
    );
}

#[test]
fn h2load_many_streams() {
    need("h2load");
    let port = server();
    let url = format!("http://127.0.0.1:{port}/size/5000");
    let args = ["-n", "1000", "-c", "2", "-m", "50", &url].map(String::from);
    let (ok, out, err) = run("h2load", &args);
    assert!(ok, "h2load failed: {err}\n{out}");
    assert!(
        out.contains("1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored"),
        "{out}"
    );
    assert!(out.contains("status codes: 1000 2xx"), "{out}");
}

/// Python's `h2` package as the client, for what the tools above do not
/// send: request trailers, PING, a `priority` field, a reset in the middle
/// of a download, and GOAWAY from the client.
const PY_CLIENT: &str = r#"
import socket, sys
import h2.config, h2.connection, h2.events

s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
c.initiate_connection()
up = c.get_next_available_stream_id()
c.send_headers(up, [(":method", "POST"), (":scheme", "http"), (":authority", "x"),
                    (":path", "/echo"), ("te", "trailers"), ("priority", "u=1")])
c.send_data(up, b"abc" * 5000)
c.send_headers(up, [("x-trailer", "1")], end_stream=True)
big = c.get_next_available_stream_id()
c.send_headers(big, [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                     (":path", "/size/3000000")], end_stream=True)
c.ping(b"12345678")
s.sendall(c.data_to_send())
body, pinged, reset_sent, status = b"", False, False, None
done = False
# Until the echo ended, the ping came back and the big stream was reset (its
# first DATA may come after the echo's end: urgency 1 goes first).
while not (done and pinged and reset_sent):
    data = s.recv(65536)
    if not data:
        break
    for ev in c.receive_data(data):
        if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == up:
            status = dict(ev.headers)[":status"]
        elif isinstance(ev, h2.events.DataReceived):
            c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if ev.stream_id == up:
                body += ev.data
            elif not reset_sent:
                c.reset_stream(big)
                reset_sent = True
        elif isinstance(ev, h2.events.PingAckReceived):
            assert ev.ping_data == b"12345678", ev
            pinged = True
        elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == up:
            done = True
    s.sendall(c.data_to_send())
assert status == "200", status
assert body == b"abc" * 5000, len(body)
assert pinged and reset_sent
c.close_connection()
s.sendall(c.data_to_send())
s.settimeout(5)
# The server closes once both sides said GOAWAY and no stream is left.
while s.recv(65536):
    pass
print("python h2 client ok")
"#;

#[test]
fn python_h2_client() {
    let ok = Command::new("python3")
        .args(["-c", "import h2"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "python3 with the h2 package is needed (pip install h2)");
    let port = server();
    let (ok, out, err) = run(
        "python3",
        &["-c".into(), PY_CLIENT.into(), port.to_string()],
    );
    assert!(ok, "python client failed: {err}\n{out}");
    assert!(out.contains("python h2 client ok"), "{out}");
}
