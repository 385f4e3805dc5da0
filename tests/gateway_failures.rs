//! Every way a backend can fail ends the client's request with a status in
//! bounded time, for FastCGI, SCGI and the proxy: a refused connect (with
//! the default `disable-time` and with `"disable-time" => 0`), a connect
//! that never completes (a listener whose backlog is full), a backend that
//! closes without answering, every backend of a route down, and a balance
//! over several backends of which some are dead. The backends here are
//! sockets the test holds: refusing (bound, never listening), silent (a
//! full backlog), closing at once, or answering one fixed page.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an answer that needs no time-out may take: it is decided at
/// once (a refused connect, a close), so a second is ample even for a
/// debug build on a loaded machine; a hang is what this bound catches.
const AT_ONCE: Duration = Duration::from_secs(1);

/// The three routes of a configuration, one per protocol, each to the
/// backend options `opts` (`"host" => ..., "port" => ...` and any more).
#[derive(Clone, Copy, Debug)]
enum Proto {
    FastCgi,
    Scgi,
    Proxy,
}

const PROTOS: [Proto; 3] = [Proto::FastCgi, Proto::Scgi, Proto::Proxy];

impl Proto {
    fn module(self) -> &'static str {
        match self {
            Proto::FastCgi => "fastcgi",
            Proto::Scgi => "scgi",
            Proto::Proxy => "proxy",
        }
    }

    /// `module.server = ( "/module/" => ( backends ) )`, each backend's
    /// options given whole.
    fn server(self, backends: &[String]) -> String {
        self.routes(&[(self.module(), backends)])
    }

    /// `module.server` with a route for each (prefix, backends).
    fn routes(self, routes: &[(&str, &[String])]) -> String {
        let local = match self {
            Proto::Proxy => "",
            _ => ", \"check-local\" => \"disable\"",
        };
        let routes: Vec<String> = routes
            .iter()
            .map(|(prefix, backends)| {
                let list: Vec<String> = backends
                    .iter()
                    .enumerate()
                    .map(|(i, o)| format!("\"b{i}\" => ( {o}{local} )"))
                    .collect();
                format!("\"/{prefix}/\" => ( {} )", list.join(", "))
            })
            .collect();
        format!("{}.server = ( {} )\n", self.module(), routes.join(", "))
    }

    fn path(self) -> String {
        format!("/{}/x", self.module())
    }
}

fn tcp(port: u16) -> String {
    format!("\"host\" => \"127.0.0.1\", \"port\" => {port}")
}

/// glint with `routes` (and the modules they need) on 127.0.0.1:0.
fn start(d: &Docroot, routes: &str) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules = ( \"mod_fastcgi\", \"mod_scgi\", \"mod_proxy\" )\n{routes}",
        d.root.display()
    );
    Launch::new().config(&conf).start()
}

/// GET `path` on a new connection: the answer and how long it took, or
/// why there was none within `limit`.
fn timed_get(s: &Server, path: &str, limit: Duration) -> Result<(Response, Duration), String> {
    let began = Instant::now();
    let mut c = s.connect();
    c.send(&get(path, &[])).map_err(|e| e.to_string())?;
    let r = c.read_response_by(false, began + limit)?;
    Ok((r, began.elapsed()))
}

/// Asserts that GET `path` is answered with one of `statuses` within `limit`.
#[track_caller]
fn answered(s: &Server, path: &str, statuses: &[u16], limit: Duration, what: &str) -> Duration {
    match timed_get(s, path, limit) {
        Ok((r, took)) if statuses.contains(&r.status) => took,
        Ok((r, took)) => panic!(
            "{what}: GET {path} got {} in {took:.2?}, wanted {statuses:?}\n{}",
            r.status,
            s.stderr_tail()
        ),
        Err(e) => panic!(
            "{what}: GET {path}: no answer within {limit:?}: {e}\n{}",
            s.stderr_tail()
        ),
    }
}

/// A backend the test plays on a listener of its own: each connection is
/// accepted and handed to `serve` in a thread of the backend's, until the
/// backend is dropped. Counts the connections it accepted.
struct Played {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Played {
    fn start(serve: fn(TcpStream)) -> Played {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        Played::on(l, port, serve)
    }

    fn on(l: TcpListener, port: u16, serve: fn(TcpStream)) -> Played {
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (n, halt) = (Arc::clone(&accepted), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            for c in l.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(c) = c else { continue };
                n.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(c));
            }
        });
        Played {
            port,
            accepted,
            stop,
            thread: Some(thread),
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Played {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop wakes for one more connection and sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Closes the connection at once, having read nothing.
fn close_at_once(c: TcpStream) {
    drop(c);
}

/// Reads the request's head (an SCGI netstring, or an HTTP head up to its
/// blank line), then answers `live` and closes.
fn answer_live(mut c: TcpStream) {
    let _ = c.set_read_timeout(Some(TIMEOUT));
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let whole = |b: &[u8]| -> Option<bool> {
        if b.starts_with(b"GET ") {
            return Some(find(b, b"\r\n\r\n").is_some());
        }
        // SCGI: `LEN:` then LEN bytes of fields and a comma.
        let colon = b.iter().position(|&x| x == b':')?;
        let len: usize = std::str::from_utf8(&b[..colon]).ok()?.parse().ok()?;
        Some(b.len() > colon + len + 1)
    };
    while whole(&got) != Some(true) {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let answer: &[u8] = if got.starts_with(b"GET ") {
        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlive"
    } else {
        b"Status: 200 OK\r\nContent-Type: text/plain\r\n\r\nlive"
    };
    let _ = c.write_all(answer);
}

/// A listener that accepts nothing and whose backlog is full: a connect to
/// it is never completed (the kernel drops its SYNs), as to a host that is
/// down. Returns the listener and the connections that fill it.
fn silent_listener() -> (OwnedFd, u16, Vec<TcpStream>) {
    use nix::sys::socket::{listen, Backlog};
    let (fd, port) = refusing_port();
    listen(&fd, Backlog::new(0).expect("backlog")).expect("listen");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut held = Vec::new();
    // Linux queues backlog + 1 connections; the next connect hangs. Fill
    // until one does, so that the listener is known to be full.
    for _ in 0..8 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(c) => held.push(c),
            Err(_) => return (fd, port, held),
        }
    }
    panic!(
        "a listener with backlog 0 took {} connections (fd {})",
        held.len(),
        fd.as_raw_fd()
    );
}

#[test]
fn a_refused_connect_is_503_at_once_whatever_the_disable_time() {
    let d = Docroot::new();
    let mut held = Vec::new();
    let mut routes = String::new();
    // Each protocol twice: the default disable-time, and 0 under `/module0/`.
    for p in PROTOS {
        let (fd, port) = refusing_port();
        let (fd0, port0) = refusing_port();
        held.extend([fd, fd0]);
        let zero = format!("{}0", p.module());
        routes += &p.routes(&[
            (p.module(), &[tcp(port)]),
            (&zero, &[format!("{}, \"disable-time\" => 0", tcp(port0))]),
        ]);
    }
    let s = start(&d, &routes);
    for p in PROTOS {
        for prefix in [p.module().to_string(), format!("{}0", p.module())] {
            // The second request finds the backend disabled (or, with
            // disable-time 0, tries it again): 503 at once either way.
            for round in 1..=2 {
                answered(
                    &s,
                    &format!("/{prefix}/x"),
                    &[503],
                    AT_ONCE,
                    &format!("{p:?} /{prefix}/, request {round}"),
                );
            }
        }
    }
}

#[test]
fn disable_time_0_takes_the_backend_back_the_next_second() {
    let d = Docroot::new();
    let (fd, port) = refusing_port();
    let s = start(
        &d,
        &Proto::Proxy.server(&[format!("{}, \"disable-time\" => 0", tcp(port))]),
    );
    answered(&s, "/proxy/x", &[503], AT_ONCE, "refused");
    // The backend comes up on the same port: it is asked again once the
    // second of its failure is over, not never and not in a loop.
    nix::sys::socket::listen(&fd, nix::sys::socket::Backlog::new(16).expect("backlog"))
        .expect("listen");
    let l = TcpListener::from(fd);
    let live = Played::on(l, port, answer_live);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut last = 0;
    while Instant::now() < deadline {
        let (r, _) = timed_get(&s, "/proxy/x", AT_ONCE).expect("an answer");
        last = r.status;
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503, "{}", r.describe());
        // The backend is disabled until the next second: nothing to wait on.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(last, 200, "the backend was not asked again within 3 s");
    assert!(live.accepted() >= 1);
}

#[test]
fn a_connect_that_never_completes_is_504_within_connect_timeout() {
    let d = Docroot::new();
    let mut held = Vec::new();
    let mut routes = String::new();
    for p in PROTOS {
        let (fd, port, fill) = silent_listener();
        held.push((fd, fill));
        routes += &p.server(&[format!("{}, \"connect-timeout\" => 1", tcp(port))]);
    }
    let s = start(&d, &routes);
    // All three at once: each waits its own time-out.
    std::thread::scope(|sc| {
        for p in PROTOS {
            let s = &s;
            sc.spawn(move || {
                // 1 s, checked on the once-a-second tick, whole seconds
                // past it (as lighttpd): 2-3 s; 4 s catches a hang.
                let took = answered(
                    s,
                    &p.path(),
                    &[504],
                    Duration::from_secs(4),
                    &format!("{p:?} connect time-out"),
                );
                assert!(took >= Duration::from_secs(1), "{p:?}: 504 after {took:?}");
            });
        }
    });
    // Disabled after its time-out: the next request is 503 at once.
    for p in PROTOS {
        answered(&s, &p.path(), &[503], AT_ONCE, &format!("{p:?} then"));
    }
}

#[test]
fn a_backend_that_closes_without_answering_is_a_status_at_once() {
    let d = Docroot::new();
    let mut backends = Vec::new();
    let mut routes = String::new();
    for p in PROTOS {
        let b = Played::start(close_at_once);
        let b0 = Played::start(close_at_once);
        let zero = format!("{}0", p.module());
        // FastCGI: no FCGI_GET_VALUES probe, whose connection would count.
        let opts = match p {
            Proto::FastCgi => ", \"keep-conn\" => \"disable\"",
            _ => "",
        };
        routes += &p.routes(&[
            (p.module(), &[format!("{}{opts}", tcp(b.port))]),
            (
                &zero,
                &[format!("{}, \"disable-time\" => 0{opts}", tcp(b0.port))],
            ),
        ]);
        backends.push((p, b, b0));
    }
    let s = start(&d, &routes);
    for (p, b, b0) in &backends {
        for (prefix, backend) in [
            (p.module().to_string(), b),
            (format!("{}0", p.module()), b0),
        ] {
            let before = backend.accepted();
            answered(
                &s,
                &format!("/{prefix}/x"),
                &[502, 503],
                AT_ONCE,
                &format!("{p:?} /{prefix}/"),
            );
            // One connection: a backend that failed is not asked again
            // for the same request (it is disabled for at least the rest of
            // this second).
            let asked = backend.accepted() - before;
            assert_eq!(
                asked, 1,
                "{p:?} /{prefix}/: {asked} connections for one request"
            );
        }
    }
}

#[test]
fn a_route_whose_backends_are_all_down_is_503_at_once() {
    let d = Docroot::new();
    let mut held = Vec::new();
    let mut routes = String::new();
    for p in PROTOS {
        let ports: Vec<String> = (0..3)
            .map(|_| {
                let (fd, port) = refusing_port();
                held.push(fd);
                format!("{}, \"disable-time\" => 0", tcp(port))
            })
            .collect();
        routes += &p.server(&ports);
    }
    let s = start(&d, &routes);
    for p in PROTOS {
        for round in 1..=3 {
            answered(
                &s,
                &p.path(),
                &[503],
                AT_ONCE,
                &format!("{p:?}, request {round}"),
            );
        }
    }
}

#[test]
fn a_balance_over_some_dead_backends_serves_every_request_from_the_live_one() {
    let d = Docroot::new();
    for balance in ["fair", "round-robin", "hash", "sticky"] {
        for p in [Proto::Scgi, Proto::Proxy] {
            let (dead_a, port_a) = refusing_port();
            let (dead_c, port_c) = refusing_port();
            let live = Played::start(answer_live);
            let routes = format!(
                "{}.balance = \"{balance}\"\n{}",
                p.module(),
                p.server(&[tcp(port_a), tcp(live.port), tcp(port_c)])
            );
            let s = start(&d, &routes);
            for i in 0..6 {
                // Different paths: `hash` starts at a different backend for each.
                let path = format!("/{}/{i}", p.module());
                let (r, _) = timed_get(&s, &path, AT_ONCE)
                    .unwrap_or_else(|e| panic!("{balance} {p:?} {path}: {e}\n{}", s.stderr_tail()));
                assert_eq!(
                    (r.status, r.body.as_slice()),
                    (200, &b"live"[..]),
                    "{balance} {p:?} {path}: {}",
                    r.describe()
                );
            }
            drop((dead_a, dead_c));
        }
    }
}
