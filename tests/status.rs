//! mod_status as its consumers see it: `?auto` and `?json` with every
//! field lighttpd 1.4.69 writes, the HTML page's sections and its table
//! of open connections (one in the middle of its request head, one kept
//! alive, the one asking), `status.enable-sort`.
//!
//! `GLINT_BLACKBOX_SERVER=lighttpd cargo test --test status` runs the
//! same checks against lighttpd (except those glint's own options need).

mod common;

use common::*;
use std::time::{Duration, Instant};

fn start(extra: &str) -> (Docroot, Server) {
    let d = Docroot::new();
    d.file("index.html", b"hello status\n");
    let conf = format!(
        "server.document-root = \"{}\"\n\
         server.bind = \"127.0.0.1\"\n\
         server.port = {{port}}\n\
         {{errorlog}}\n\
         server.max-connections = 64\n\
         server.modules = ( \"mod_status\" )\n\
         status.status-url = \"/server-status\"\n{extra}",
        d.root.display()
    );
    let s = Server::start_config(&conf);
    (d, s)
}

fn ok(s: &Server, path: &str) -> Response {
    let r = s.get(path).unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert_eq!(r.status, 200, "{}", r.describe());
    r
}

/// The `Name: value` lines of `?auto`.
fn auto_fields(s: &Server) -> Vec<(String, String)> {
    let r = ok(s, "/server-status?auto");
    assert!(
        r.header("Content-Type")
            .is_some_and(|t| t.starts_with("text/plain")),
        "{}",
        r.describe()
    );
    String::from_utf8_lossy(&r.body)
        .lines()
        .map(|l| {
            let (k, v) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("not `Name: value`: {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn num(fields: &[(String, String)], name: &str) -> u64 {
    let v = &fields
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
        .1;
    v.parse()
        .unwrap_or_else(|_| panic!("{name}: {v:?} is not a number"))
}

#[test]
fn auto_has_every_line_lighttpd_writes_with_a_scoreboard_of_every_slot() {
    let (_d, s) = start("");
    for _ in 0..3 {
        assert_eq!(ok(&s, "/index.html").body, b"hello status\n");
    }
    // lighttpd adds to its totals once a second: wait until they show.
    let mut fields = Vec::new();
    assert!(
        wait_for(Duration::from_secs(3), || {
            fields = auto_fields(&s);
            num(&fields, "Total Accesses") >= 3
        }),
        "{fields:?}"
    );
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "Total Accesses",
            "Total kBytes",
            "Uptime",
            "BusyServers",
            "IdleServers",
            "Scoreboard"
        ]
    );
    let (busy, idle) = (num(&fields, "BusyServers"), num(&fields, "IdleServers"));
    assert_eq!(busy + idle, 64, "server.max-connections slots: {fields:?}");
    assert!(busy >= 1, "the asking connection is busy: {fields:?}");
    let board = &fields[5].1;
    assert_eq!(board.len() as u64, busy + idle, "{board}");
    assert!(
        board.contains('h'),
        "the asking connection handles its request: {board}"
    );
    assert_eq!(board.matches('_').count() as u64, idle, "{board}");
    assert!(
        board.chars().all(|c| ".qrQRhsWSECk_".contains(c)),
        "{board}"
    );
}

#[test]
fn json_parses_with_lighttpd_fields_and_jsonp_wraps_it() {
    let (_d, s) = start("");
    ok(&s, "/index.html");
    let r = ok(&s, "/server-status?json");
    let v: serde_json::Value = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.describe()));
    for k in [
        "RequestsTotal",
        "TrafficTotal",
        "Uptime",
        "BusyServers",
        "IdleServers",
        "RequestAverage5s",
        "TrafficAverage5s",
    ] {
        assert!(v[k].is_u64(), "{k} in {v}");
    }
    assert_eq!(
        v["BusyServers"].as_u64().unwrap() + v["IdleServers"].as_u64().unwrap(),
        64
    );
    let r = ok(&s, "/server-status?jsonp=show_it");
    let body = String::from_utf8_lossy(&r.body);
    let inner = body
        .strip_prefix("show_it(")
        .and_then(|b| b.strip_suffix(");"))
        .unwrap_or_else(|| panic!("not a call of show_it: {body}"));
    assert!(
        serde_json::from_str::<serde_json::Value>(inner).is_ok(),
        "{inner}"
    );
    // A name that is not a plain identifier is never echoed into the page.
    let r = ok(&s, "/server-status?jsonp=alert(1)//");
    assert!(find(&r.body, b"alert").is_none(), "{}", r.describe());
}

const KEEP_ALIVE_GET: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: test\r\n\r\n";

/// A connection that has sent half a request head, and one kept alive
/// after its answer.
fn reading_and_idle(s: &Server) -> (Conn, Conn) {
    let mut reading = s.connect();
    reading
        .send(b"GET /index.html HTTP/1.1\r\nHost: half.example\r\n")
        .unwrap();
    let mut idle = s.connect();
    idle.send(KEEP_ALIVE_GET).unwrap();
    let r = idle.read_response(false).unwrap();
    assert_eq!(r.status, 200);
    (reading, idle)
}

#[test]
fn html_page_has_lighttpd_sections_and_a_row_per_connection() {
    let (_d, s) = start("");
    let (_reading, _idle) = reading_and_idle(&s);
    let mut page = String::new();
    // The partial head is read in the loop's next turn: ask until it shows.
    assert!(
        wait_for(Duration::from_secs(3), || {
            page = String::from_utf8_lossy(&ok(&s, "/server-status?x=1").body).into_owned();
            page.contains(">read</td>") && page.contains(">keep-alive</td>")
        }),
        "{page}"
    );
    for section in [
        "<h1>Server-Status",
        "<td>Hostname</td>",
        "<td>Uptime</td>",
        "<td>Started at</td>",
        "absolute (since start)",
        "average (since start)",
        "average (5s sliding average)",
        "3 connections</b>",
        "k = keep-alive",
        "h = handle-req",
        "W = write",
        "<h2>Connections</h2>",
        "Client IP",
        "resort(this)",
    ] {
        assert!(page.contains(section), "no {section:?} in {page}");
    }
    // The asking connection's row: its Host, its URI with the query.
    assert!(page.contains(">handle-req</td>"), "{page}");
    assert!(page.contains(">/server-status?x=1"), "{page}");
    let rows = page
        .matches("<tr><td class=\"string\">127.0.0.1</td>")
        .count();
    assert_eq!(rows, 3, "{page}");
}

#[test]
fn html_escapes_what_clients_sent() {
    let (_d, s) = start("");
    let mut c = s.connect();
    c.send(b"GET /%3Cb%3E?<script>x</script> HTTP/1.1\r\nHost: a<i>\r\n")
        .unwrap();
    let mut page = String::new();
    let _ = wait_for(Duration::from_secs(2), || {
        page = String::from_utf8_lossy(&ok(&s, "/server-status").body).into_owned();
        page.contains(">read</td>")
    });
    assert!(!page.contains("<script>x"), "{page}");
    assert!(!page.contains("<i>"), "{page}");
}

#[test]
fn enable_sort_disabled_leaves_out_the_script() {
    let (_d, s) = start("status.enable-sort = \"disable\"\n");
    let page = ok(&s, "/server-status").body;
    assert!(find(&page, b"resort(").is_none(), "{}", show(&page));
    assert!(
        find(&page, b"<th class=\"status\">Client IP</th>").is_some(),
        "{}",
        show(&page)
    );
}

#[test]
fn averages_are_sane_in_the_first_second_and_follow_the_last_five() {
    if server_kind() == Kind::Lighttpd {
        // lighttpd prints -9223372036854775808 Yreq/s at uptime 0.
        return;
    }
    let (_d, s) = start("");
    let page = String::from_utf8_lossy(&ok(&s, "/server-status").body).into_owned();
    assert!(!page.contains("Yreq") && !page.contains(">-"), "{page}");
    // 40 requests, then the 5 s average must be above zero at the next tick.
    let mut c = s.connect();
    for _ in 0..40 {
        c.send(KEEP_ALIVE_GET).unwrap();
        c.read_response(false).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut v = serde_json::Value::Null;
    while Instant::now() < deadline {
        v = serde_json::from_slice(&ok(&s, "/server-status?json").body).unwrap();
        if v["RequestAverage5s"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let avg = v["RequestAverage5s"].as_u64().unwrap_or(0);
    // (The status requests asked meanwhile count too.)
    assert!((1..=100).contains(&avg), "{v}");
}

/// An HTTP/2 stream the client resets while its backend has not answered
/// leaves the connection table at once, while the connection stays open:
/// the table shows what is being answered, not what was given up.
#[test]
fn a_reset_http2_stream_leaves_the_connection_table() {
    if server_kind() == Kind::Lighttpd {
        // The scripted client speaks h2c with prior knowledge.
        return;
    }
    let (d, s) = start(
        "server.modules += ( \"mod_cgi\" )\n\
         cgi.assign = ( \".sh\" => \"/bin/sh\" )\n",
    );
    d.file(
        "slow.sh",
        b"sleep 20\nprintf 'Content-Type: text/plain\\r\\n\\r\\nlate\\n'\n",
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h2/h2client.py");
    let mut client = std::process::Command::new("timeout")
        .args(["30", "python3"])
        .arg(script)
        .arg(s.port.to_string())
        .args(["reset_after", "/slow.sh?held", "3", "5"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 (pip install h2)");
    let listed = |s: &Server| {
        String::from_utf8_lossy(&ok(s, "/server-status").body).contains("/slow.sh?held")
    };
    assert!(
        wait_for(Duration::from_millis(2800), || listed(&s)),
        "the waiting stream is in the table"
    );
    // The client says when it has reset the stream; its connection stays
    // open 5 s more.
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        client.stdout.take().expect("stdout"),
    ));
    let mut facts = Vec::new();
    for l in lines.by_ref() {
        let l = l.expect("h2client output");
        let reset = l == "reset=1";
        facts.push(l);
        if reset {
            break;
        }
    }
    let gone = wait_for(Duration::from_secs(2), || !listed(&s));
    facts.extend(lines.map_while(Result::ok));
    let status = client.wait().expect("h2client");
    let facts = facts.join("\n");
    assert!(status.success(), "{facts}");
    assert!(facts.contains("answered=false"), "{facts}");
    assert!(gone, "the reset stream's row lingers: {facts}");
}
