//! QUIC's attacks against glint's HTTP/3, each from the attacker's side
//! with a scripted aioquic client (`tests/h3/h3attack.py`, which bends
//! aioquic past its own rules where the attack needs it): what glint
//! answers, and that it stays bounded (its resident memory from
//! /proc/PID/status, its CPU time from /proc/PID/stat) and serves an
//! honest client after. docs/http3.md's Limits table lists what is held.

mod common;

#[path = "h3/json.rs"]
mod serde_like;

use common::*;
use serde_like::Value;
use std::path::Path;
use std::process::Command;

/// Memory an attack may leave behind in glint, KiB (after one honest
/// connection has made what the first one allocates once).
const RSS_GROWTH_KIB: u64 = 8 * 1024;

struct H3 {
    s: Server,
    _d: Docroot,
    _certs: TempDir,
    port: u16,
}

/// glint with a TLS socket that serves HTTP/3, `extra` configuration
/// after.
fn start(extra: &str) -> H3 {
    let certs = TempDir::new("h3-certs");
    make_cert(certs.path());
    let d = Docroot::new();
    d.file("index.html", b"<h1>glint over HTTP/3</h1>\n")
        .file("a.txt", b"a\n");
    // The one listener is the TLS socket, on a port the kernel picks (no
    // race with other tests for a port picked beforehand).
    let conf = format!(
        "server.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += ( \"mod_openssl\" )\nssl.pemfile = \"{certs}/server.pem\"\n\
         $SERVER[\"socket\"] == \"127.0.0.1:0\" {{\n  ssl.engine = \"enable\"\n  glint.h3 = \"enable\"\n}}\n{extra}",
        root = d.root.display(),
        certs = certs.path().display(),
    );
    let s = Launch::new().config(&conf).start();
    let port = s.port;
    H3 {
        s,
        _d: d,
        _certs: certs,
        port,
    }
}

/// Runs `tests/h3/h3attack.py` with `spec` (JSON) and returns its JSON.
fn attack(spec: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h3/h3attack.py");
    let o = Command::new("timeout")
        .arg("90")
        .arg("python3")
        .arg(script)
        .arg(spec)
        .output()
        .expect("python3 (pip install aioquic)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "h3attack.py {spec} failed: {}\n{out}",
        String::from_utf8_lossy(&o.stderr),
    );
    serde_like::parse(&out)
}

/// glint's resident memory, KiB.
fn rss_kib(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// glint's CPU time (user + system), in clock ticks (1/100 s).
fn cpu_ticks(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of stat; `after` starts at field 3.
    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
}

/// Runs `spec` against `h` and checks that glint's memory grew by less
/// than [`RSS_GROWTH_KIB`] and its CPU time by less than `cpu_ticks_max`.
fn bounded(h: &H3, spec: &str, cpu_ticks_max: u64) -> Value {
    let pid = h.s.pid();
    served(attack(&format!(r#"{{"attack": "warm", "port": {}}}"#, h.port)).get("after"));
    let (rss0, cpu0) = (rss_kib(pid), cpu_ticks(pid));
    let r = attack(spec);
    let (rss1, cpu1) = (rss_kib(pid), cpu_ticks(pid));
    eprintln!(
        "{spec}: RSS {rss0} -> {rss1} KiB, CPU {} ticks",
        cpu1 - cpu0
    );
    assert!(
        rss1 < rss0 + RSS_GROWTH_KIB,
        "memory grew from {rss0} to {rss1} KiB: {r:?}"
    );
    assert!(
        cpu1 - cpu0 < cpu_ticks_max,
        "CPU {} ticks: {r:?}",
        cpu1 - cpu0
    );
    r
}

/// The honest request after an attack: `[status, close, retries]`.
fn served(after: &Value) {
    assert_eq!(after.at(0).num(), Some(200), "an honest client: {after:?}");
}

#[test]
fn an_unvalidated_address_gets_at_most_three_times_what_it_sent() {
    // The server's first flight (its certificate and handshake) is more
    // than 3 times a client's Initial, so only the limit holds it back.
    let h = start("");
    let r = bounded(
        &h,
        &format!(
            r#"{{"attack": "amplification", "port": {}, "stall": 3}}"#,
            h.port
        ),
        200,
    );
    let sent = r.get("sent").num().expect("sent");
    let stalled = r.get("stalled_in").num().expect("stalled_in");
    assert!(sent >= 1200, "an Initial is padded to 1200 bytes: {r:?}");
    assert!(stalled > 0, "the server answered the Initial: {r:?}");
    assert!(
        stalled <= 3 * sent,
        "{stalled} bytes to an address that sent {sent} and proved nothing: {r:?}"
    );
    assert_eq!(
        r.get("status").num(),
        Some(200),
        "the handshake goes on: {r:?}"
    );
    let total = r.get("total_in").num().expect("total_in");
    assert!(
        total > 3 * sent,
        "the whole flight ({total} bytes) came once the address was proved: {r:?}"
    );
}

#[test]
fn past_64_handshakes_under_way_a_new_client_must_echo_a_retry_token() {
    let h = start("");
    let r = bounded(
        &h,
        &format!(r#"{{"attack": "retry", "port": {}, "n": 80}}"#, h.port),
        500,
    );
    let retried: Vec<u64> = r
        .get("retried")
        .list()
        .iter()
        .filter_map(|v| v.num())
        .collect();
    assert_eq!(
        retried,
        (64..80).collect::<Vec<u64>>(),
        "the first 64 are answered, the rest get a Retry: {r:?}"
    );
    assert_eq!(r.get("status").num(), Some(200), "{r:?}");
    assert_eq!(
        r.get("client_retries").num(),
        Some(1),
        "the honest client echoed a Retry token: {r:?}"
    );
}

#[test]
fn handshakes_that_do_not_finish_are_dropped_after_ten_seconds() {
    // Four hanging handshakes fill a connection cap of four.
    let h = start("server.max-connections = 4\n");
    let r = bounded(
        &h,
        &format!(
            r#"{{"attack": "hang", "port": {}, "n": 4, "every": 1, "for": 16}}"#,
            h.port
        ),
        300,
    );
    let tries = r.get("tries").list();
    let first = &tries[0];
    assert_eq!(
        first.get("close").num(),
        Some(2),
        "refused while the hanging ones hold the cap (CONNECTION_REFUSED): {r:?}"
    );
    let last = tries.last().expect("a try");
    assert_eq!(last.get("status").num(), Some(200), "served at last: {r:?}");
    let at = match last.get("at") {
        Value::Num(n) => *n,
        _ => 0.0,
    };
    assert!(
        (9.0..25.0).contains(&at),
        "served once the handshakes timed out (10 s, then closed): {r:?}"
    );
}

#[test]
fn past_server_max_connections_a_client_is_refused() {
    let h = start("server.max-connections = 3\n");
    let r = bounded(
        &h,
        &format!(r#"{{"attack": "conn_cap", "port": {}, "n": 3}}"#, h.port),
        300,
    );
    let held = r.get("held").list();
    assert_eq!(held.len(), 3);
    assert!(held.iter().all(|s| s.num() == Some(200)), "{r:?}");
    let over = r.get("over");
    assert_eq!(over.at(0), &Value::Null, "{r:?}");
    assert_eq!(over.at(1).num(), Some(2), "CONNECTION_REFUSED: {r:?}");
    served(r.get("after_close"));
}

#[test]
fn a_client_opening_more_than_100_streams_is_closed_with_stream_limit_error() {
    let h = start("");
    let r = bounded(
        &h,
        &format!(
            r#"{{"attack": "streams", "port": {}, "honest": 250, "greedy": 150}}"#,
            h.port
        ),
        500,
    );
    assert_eq!(
        r.get("honest_ok").num(),
        Some(250),
        "a client within the limit gets every answer: {r:?}"
    );
    assert!(
        r.get("peer_limit").num().unwrap_or(0) >= 250,
        "MAX_STREAMS gave credit as streams ended: {r:?}"
    );
    assert_eq!(
        r.get("greedy_close").num(),
        Some(4),
        "STREAM_LIMIT_ERROR: {r:?}"
    );
    served(r.get("after"));
}

#[test]
fn connection_ids_are_capped_both_ways() {
    let h = start("");
    let r = bounded(
        &h,
        &format!(r#"{{"attack": "cids", "port": {}, "extra": 20}}"#, h.port),
        300,
    );
    let issued = r.get("issued").num().unwrap_or(0);
    assert!(
        (2..=8).contains(&issued),
        "glint issues at most 8 IDs to a client that takes 100: {r:?}"
    );
    let limit = r.get("server_limit").num().unwrap_or(0);
    assert!((2..=8).contains(&limit), "{r:?}");
    assert_eq!(
        r.get("flood_close").num(),
        Some(9),
        "CONNECTION_ID_LIMIT_ERROR: {r:?}"
    );
    served(r.get("after"));
}

#[test]
fn qpack_dynamic_table_use_closes_the_connection() {
    let h = start("");
    let r = bounded(
        &h,
        &format!(r#"{{"attack": "qpack", "port": {}}}"#, h.port),
        300,
    );
    assert_eq!(
        r.get("insert_close").num(),
        Some(0x201),
        "QPACK_ENCODER_STREAM_ERROR: {r:?}"
    );
    assert_eq!(
        r.get("reference_close").num(),
        Some(0x200),
        "QPACK_DECOMPRESSION_FAILED: {r:?}"
    );
    served(r.get("after"));
}

#[test]
fn an_oversize_request_head_is_answered_431_and_the_connection_goes_on() {
    let h = start("");
    let r = bounded(
        &h,
        &format!(
            r#"{{"attack": "headers", "port": {}, "sizes": [100, 20000, 300000]}}"#,
            h.port
        ),
        300,
    );
    let st: Vec<Option<u64>> = r.get("statuses").list().iter().map(|v| v.num()).collect();
    // 100 bytes pass; 20,000 are past server.max-request-field-size
    // (8192); 300,000 are past twice that and more than QUIC's stream
    // window, answered without being read.
    assert_eq!(
        st,
        vec![Some(200), Some(431), Some(431), Some(200)],
        "{r:?}"
    );
    assert_eq!(r.get("close"), &Value::Null, "{r:?}");
}

#[test]
fn an_idle_connection_is_forgotten_and_its_packets_get_rate_limited_stateless_resets() {
    let h = start("server.max-read-idle = 2\nserver.max-keep-alive-idle = 30\n");
    let r = bounded(
        &h,
        &format!(
            r#"{{"attack": "idle", "port": {}, "quiet": 4, "n": 300, "size": 100, "gap": 0.005}}"#,
            h.port
        ),
        300,
    );
    assert_eq!(r.get("first").num(), Some(200), "{r:?}");
    assert_eq!(
        r.get("late"),
        &Value::Null,
        "no answer after the idle time-out: {r:?}"
    );
    let token = r.get("token").str().to_string();
    let replies = r.get("replies").list();
    assert!(
        replies.iter().any(|d| {
            let d = d.str();
            d.ends_with(&token) && u8::from_str_radix(&d[..2], 16).is_ok_and(|b| b & 0xc0 == 0x40)
        }),
        "a stateless reset with the token glint issued ({token}): {r:?}"
    );
    // A flood for that connection ID: resets, at most one per 20 ms, each
    // smaller than the packet that incited it.
    let f = r.get("flood");
    let n = f.get("replies").num().unwrap_or(0);
    let secs = match f.get("secs") {
        Value::Num(s) => *s,
        _ => 0.0,
    };
    assert!(n >= 1, "{r:?}");
    assert_eq!(f.get("with_token").num(), Some(n), "{r:?}");
    assert!(
        (n as f64) <= secs / 0.020 + 2.0,
        "at most one per 20 ms: {r:?}"
    );
    assert!(
        f.get("sizes").list().iter().all(|s| s.num() < Some(100)),
        "{r:?}"
    );
    served(r.get("after"));
}

#[test]
fn packets_for_connection_ids_glint_never_issued_get_no_answer() {
    // glint's connection IDs carry a keyed check: a packet for one it did
    // not issue reflects nothing to a spoofed source, not even a reset.
    let h = start("");
    let r = bounded(
        &h,
        &format!(
            r#"{{"attack": "unknown", "port": {}, "n": 200, "size": 100, "gap": 0.002}}"#,
            h.port
        ),
        300,
    );
    assert_eq!(r.get("replies").num(), Some(0), "{r:?}");
}
