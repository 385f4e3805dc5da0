//! At the connection limit nobody starves (issue 19), at a scale a small
//! machine takes in seconds: `server.max-connections` of 16, a burst of
//! closes that linger, then a burst of keep-alive clients ten times the
//! limit, each of whose requests must be answered within [`DEADLINE`];
//! idle connections (keep-alive, or nothing sent) that make way for a
//! client with a request; and busy keep-alive clients twice the limit that
//! take turns without giving up keep-alive. Every loop is bounded in count and time and talks
//! only to glint on 127.0.0.1.

mod common;

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use common::{h2client, num, pseudo_random, Conn, Launch, Server, TempDir};

/// `server.max-connections` of these tests.
const MAX: usize = 16;

/// Longest wait for one answer, from its request sent: a client's patience,
/// below the 10 s keep-alive idle time-out the servers here get (how long a
/// newcomer waits when idle keep-alive connections keep their slots). While
/// clients wait, glint's slots rotate four times a second, in steps of
/// 100 ms, and a connection whose turn came is closed once idle for 250 ms:
/// each wave of [`MAX`] clients that hold their slots idle takes about
/// 0.3 s, the ten waves of the storm test 2.4-2.8 s. This leaves room for a
/// loaded machine.
const DEADLINE: Duration = Duration::from_secs(8);

/// These tests fill glint's slots and time the waits: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn body() -> Vec<u8> {
    pseudo_random(469, 19)
}

fn start(www: &TempDir) -> Server {
    std::fs::write(www.path().join("index.html"), body()).expect("index.html");
    Launch::new()
        .config(&format!(
            "server.max-connections = {MAX}\nserver.max-keep-alive-idle = 10\n"
        ))
        .docroot(www.path())
        .start()
}

/// Sockets glint holds with no client: the listener, the signal pair.
fn base_sockets(g: &Server) -> usize {
    std::thread::sleep(Duration::from_millis(100));
    g.socket_count()
}

/// What one keep-alive client of the storm saw.
#[derive(Default)]
struct Outcome {
    answered: usize,
    /// Answers that kept the connection.
    kept: usize,
    failures: Vec<String>,
    slowest: Duration,
}

/// Fails the test with the first failures the clients saw, if any.
fn assert_no_failures(failures: &[&String], g: &Server) {
    assert!(
        failures.is_empty(),
        "{} failures, the first: {:?}\n{}",
        failures.len(),
        &failures[..failures.len().min(5)],
        g.stderr_tail()
    );
}

/// `n` requests for /index.html over keep-alive, on a new connection
/// whenever glint answers `Connection: close`; each answer is checked and
/// timed. Returns what it saw and the connection it holds at the end.
fn keep_alive_client(g: &Server, n: usize) -> (Outcome, Option<Conn>) {
    keep_alive_client_until(g, n, None)
}

/// [`keep_alive_client`], ending early at `until`.
fn keep_alive_client_until(
    g: &Server,
    n: usize,
    until: Option<Instant>,
) -> (Outcome, Option<Conn>) {
    let mut out = Outcome::default();
    let mut conn: Option<Conn> = None;
    for i in 0..n {
        if until.is_some_and(|u| Instant::now() >= u) {
            break;
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match Conn::open(g.addr()) {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    out.failures.push(format!("request {i}: connect: {e}"));
                    return (out, None);
                }
            },
        };
        let sent = Instant::now();
        if let Err(e) = c.send(b"GET /index.html HTTP/1.1\r\nHost: storm\r\n\r\n") {
            out.failures.push(format!("request {i}: send: {e}"));
            return (out, None);
        }
        match c.read_response_by(false, sent + DEADLINE) {
            Ok(r) if r.status == 200 && r.body == body() => {
                out.answered += 1;
                out.slowest = out.slowest.max(sent.elapsed());
                if r.header("connection") == Some("close") {
                    conn = None;
                } else {
                    out.kept += 1;
                }
            }
            Ok(r) => {
                out.failures.push(format!("request {i}: {}", r.describe()));
                return (out, None);
            }
            Err(e) => {
                out.failures.push(format!(
                    "request {i}: no answer {:?} after it was sent: {e}",
                    sent.elapsed()
                ));
                return (out, None);
            }
        }
    }
    (out, conn)
}

#[test]
fn a_keep_alive_storm_past_the_limit_after_lingering_closes_is_answered_in_full() {
    let _s = serial();
    let www = TempDir::new("storm-www");
    let g = start(&www);
    let base = base_sockets(&g);

    // 1. A burst of short connections whose closes linger: each request comes
    // with bytes glint will not read, so glint shuts its side after the
    // answer and waits for the client's end, which does not come: the
    // clients read their answer and keep their sockets.
    let lingering: Vec<Conn> = std::thread::scope(|s| {
        let g = &g;
        let hs: Vec<_> = (0..MAX)
            .map(|i| {
                s.spawn(move || {
                    let mut c = g.connect();
                    c.send(
                        b"GET /index.html HTTP/1.1\r\nHost: storm\r\nConnection: close\r\n\r\nunread",
                    )
                    .expect("send");
                    let r = c
                        .read_response(false)
                        .unwrap_or_else(|e| panic!("lingering client {i}: {e}"));
                    assert_eq!(r.status, 200, "lingering client {i}");
                    c
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("lingering client"))
            .collect()
    });
    // The scenario holds: glint keeps those sockets open, lingering.
    let held = g.socket_count() - base;
    assert!(
        held >= MAX / 2,
        "only {held} lingering sockets: the test saw nothing"
    );

    // 2. At once, a storm of keep-alive clients ten times the limit, three
    // requests each; those done keep their connection (idle keep-alive)
    // until all are done.
    const CLIENTS: usize = 10 * MAX;
    const REQUESTS: usize = 3;
    let done = AtomicBool::new(false);
    let all_done = Barrier::new(CLIENTS + 1);
    let started = Instant::now();
    let (outcomes, most_held) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..CLIENTS)
            .map(|_| {
                s.spawn(|| {
                    let (out, held) = keep_alive_client(&g, REQUESTS);
                    all_done.wait();
                    drop(held);
                    out
                })
            })
            .collect();
        // Meanwhile: glint never holds more than the limit plus as many
        // lingering sockets.
        let watcher = s.spawn(|| {
            let mut most = 0;
            let end = Instant::now() + Duration::from_secs(30);
            while !done.load(Ordering::SeqCst) && Instant::now() < end {
                most = most.max(g.socket_count().saturating_sub(base));
                std::thread::sleep(Duration::from_millis(20));
            }
            most
        });
        all_done.wait();
        done.store(true, Ordering::SeqCst);
        let outcomes: Vec<Outcome> = hs
            .into_iter()
            .map(|h| h.join().expect("storm client"))
            .collect();
        (outcomes, watcher.join().expect("watcher"))
    });
    drop(lingering);
    let took = started.elapsed();
    let answered: usize = outcomes.iter().map(|o| o.answered).sum();
    let slowest = outcomes.iter().map(|o| o.slowest).max().unwrap_or_default();
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    eprintln!(
        "storm: {CLIENTS} clients, {answered} of {} answered in {took:.1?}, slowest {slowest:.2?}, \
         at most {most_held} sockets held",
        CLIENTS * REQUESTS
    );
    assert_no_failures(&failures, &g);
    assert_eq!(answered, CLIENTS * REQUESTS);
    assert!(
        most_held <= 2 * MAX,
        "glint held {most_held} sockets with max-connections = {MAX}"
    );
}

#[test]
fn idle_connections_make_way_for_clients_with_a_request() {
    let _s = serial();
    let www = TempDir::new("storm-idle");
    let g = start(&www);
    let base = base_sockets(&g);
    // Half the slots: keep-alive clients that were answered and stay idle.
    let mut kept: Vec<Conn> = (0..MAX / 2)
        .map(|i| {
            let (out, conn) = keep_alive_client(&g, 1);
            assert!(
                out.failures.is_empty(),
                "idle client {i}: {:?}",
                out.failures
            );
            conn.unwrap_or_else(|| panic!("idle client {i}: glint closed its connection"))
        })
        .collect();
    // The other half: connections that send nothing.
    let silent: Vec<TcpStream> = (0..MAX / 2).map(|_| g.tcp()).collect();
    assert!(
        common::wait_for(Duration::from_secs(2), || g.socket_count() - base >= MAX),
        "glint holds {} of the {MAX} idle connections",
        g.socket_count() - base
    );
    // Clients with a request, more than the limit again: each is answered
    // within the deadline, as the idle connections give way.
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..MAX)
            .map(|_| s.spawn(|| keep_alive_client(&g, 2).0))
            .collect();
        hs.into_iter().map(|h| h.join().expect("client")).collect()
    });
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    let slowest = outcomes.iter().map(|o| o.slowest).max().unwrap_or_default();
    eprintln!("idle: {MAX} waiting clients answered, slowest {slowest:.2?}");
    assert_no_failures(&failures, &g);
    // An idle keep-alive connection glint closed ended with a FIN, not a reset.
    for (i, c) in kept.iter_mut().enumerate() {
        if let Ok(extra) = c.expect_close(Duration::from_millis(100)) {
            assert!(!c.reset, "idle client {i}: reset");
            assert!(
                extra.is_empty(),
                "idle client {i}: {} stray bytes",
                extra.len()
            );
        }
    }
    drop(silent);
    // Still usable afterwards.
    let mut c = g.connect();
    c.send(b"GET /index.html HTTP/1.1\r\nHost: storm\r\nConnection: close\r\n\r\n")
        .expect("send");
    let r = c.read_response(false).expect("answer after the storm");
    assert_eq!(r.status, 200);
}

/// Twice as many busy keep-alive clients as slots: the slots rotate, so
/// every client is served within the deadline, while a connection keeps
/// keep-alive until its turn comes (most answers keep the connection, not
/// `Connection: close` on every answer while others wait).
#[test]
fn busy_keep_alive_connections_take_turns_and_keep_keep_alive() {
    let _s = serial();
    let www = TempDir::new("storm-rotate");
    let g = start(&www);
    let until = Instant::now() + Duration::from_secs(3);
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2 * MAX)
            .map(|_| s.spawn(|| keep_alive_client_until(&g, 1_000_000, Some(until)).0))
            .collect();
        hs.into_iter().map(|h| h.join().expect("client")).collect()
    });
    let failures: Vec<&String> = outcomes.iter().flat_map(|o| &o.failures).collect();
    let answers: usize = outcomes.iter().map(|o| o.answered).sum();
    let kept: usize = outcomes.iter().map(|o| o.kept).sum();
    let served = outcomes.iter().filter(|o| o.answered > 0).count();
    let slowest = outcomes.iter().map(|o| o.slowest).max().unwrap_or_default();
    eprintln!(
        "rotation: {served} of {} clients served, {answers} answers, {kept} kept the connection, \
         slowest {slowest:.2?}",
        2 * MAX
    );
    assert_no_failures(&failures, &g);
    assert_eq!(served, 2 * MAX, "a client was never served");
    assert!(
        kept * 2 > answers,
        "only {kept} of {answers} answers kept their connection while clients waited"
    );
}

/// Busy HTTP/2 clients twice the limit, each keeping four requests open on
/// its connection for 4 s (`tests/h2/h2client.py turns`): a connection never
/// idles, so before its turn ended with GOAWAY the first sixteen held their
/// slots for the whole run and the other sixteen were never answered. Now
/// each client is served, none waits for an answer anywhere near the run's
/// length, and a connection serves many requests before its turn ends.
#[test]
fn busy_http2_connections_take_turns_by_goaway() {
    let _s = serial();
    let www = TempDir::new("storm-h2-turns");
    let g = start(&www);
    let clients = 2 * MAX;
    let facts = h2client(
        g.addr().port(),
        &["turns", &clients.to_string(), "/index.html", "4", "4"],
    );
    let fact = |i: usize, key: &str| num(&facts, &format!("client.{i}.{key}"));
    let sum = |key: &str| (0..clients).map(|i| fact(i, key)).sum::<u64>();
    let served = (0..clients).filter(|&i| fact(i, "answered") > 0).count();
    let longest = (0..clients)
        .map(|i| fact(i, "longest_ms"))
        .max()
        .unwrap_or(0);
    let (answers, conns, goaways) = (sum("answered"), sum("conns"), sum("goaways"));
    eprintln!(
        "HTTP/2 turns: {served} of {clients} clients served, {answers} answers on {conns} \
         connections, {goaways} GOAWAYs, longest wait {longest} ms"
    );
    assert_eq!(served, clients, "a client was never served\n{facts:?}");
    assert!(goaways > 0, "no turn ended with GOAWAY\n{facts:?}");
    assert!(
        longest < 3_000,
        "a request waited {longest} ms of the 4 s run\n{facts:?}\n{}",
        g.stderr_tail()
    );
    assert!(
        answers > 4 * conns,
        "{answers} answers on {conns} connections: the slots churned"
    );
}
