//! mod_proxy with a real browser: headless Chromium loads a page from
//! glint whose script joins a WebSocket chat room (two sockets through
//! glint's proxy to a `websockets` chat server: what one says, both hear)
//! and follows a server-sent event stream (EventSource through the proxy
//! to an HTTP application), then reports what it saw with a request to
//! glint, which the test reads in the access log. And HTTP/3: Chromium
//! forced onto QUIC loads the seed page (www/index.html) and JPEG
//! (www/test.jpg) and a 2 MB file from glint, whose access log must say
//! HTTP/3.0 for each. `.ci/run` installs Debian's chromium.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> &'static str {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            return c;
        }
    }
    panic!("no chromium: `apt-get install chromium` (.ci/run does)");
}

/// The page: two chat sockets (the second speaks once the first heard
/// its own line, so both must hear both), and five events; the verdict
/// goes to `/report?...` when all arrived, or what arrived after 8 s.
const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>glint browser test</title></head>
<body><pre id="result">pending</pre>
<script>
const seen = { a: [], b: [], sse: [], errors: [] };
const done = () => seen.a.length >= 2 && seen.b.length >= 2 && seen.sse.length >= 5;
let reported = false;
const report = () => {
  if (reported) { return; }
  reported = true;
  fetch('/report?' + encodeURIComponent(JSON.stringify(seen)));
};
const finish = () => { if (done()) { report(); } };
const url = (p) => 'ws://' + location.host + p;
const a = new WebSocket(url('/room'));
const b = new WebSocket(url('/room'));
let bOpen = false, aSaid = false;
a.onmessage = (e) => { seen.a.push(e.data); finish(); };
b.onmessage = (e) => {
  seen.b.push(e.data);
  if (seen.b.length === 1) { b.send('hello from b'); }
  finish();
};
a.onerror = () => seen.errors.push('a');
b.onerror = () => seen.errors.push('b');
b.onopen = () => { bOpen = true; if (a.readyState === 1) { a.send('hello from a'); aSaid = true; } };
a.onopen = () => { if (bOpen && !aSaid) { a.send('hello from a'); aSaid = true; } };
const es = new EventSource('/sse?n=5&ms=100');
es.onmessage = (e) => {
  seen.sse.push(e.data.split(' ')[0]);
  if (seen.sse.length >= 5) { es.close(); }
  finish();
};
es.onerror = () => { if (seen.sse.length < 5) { seen.errors.push('sse'); } };
setTimeout(report, 8000);
</script></body></html>
"#;

#[test]
fn a_websocket_chat_and_server_sent_events_in_headless_chromium() {
    let browser = chromium();
    let chat = python(&[backends_dir().join("ws_chat.py").to_str().expect("path")]);
    let app = python(&[
        backends_dir().join("http_app.py").to_str().expect("path"),
        "0",
        "app",
        "5",
    ]);
    let d = Docroot::new();
    d.file("chat.html", PAGE.as_bytes());
    d.file("report", b"thanks");
    let log = d.base.join("access.log");
    let conf = format!(
        "server.document-root = \"{}\"\nserver.modules = ( \"mod_proxy\", \"mod_accesslog\" )\n\
         accesslog.filename = \"{}\"\naccesslog.format = \"%r\"\n\
         $HTTP[\"url\"] =~ \"^/room\" {{\n  proxy.server = ( \"\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {} ) ) )\n  proxy.header = ( \"upgrade\" => \"enable\" )\n}}\n\
         $HTTP[\"url\"] =~ \"^/sse\" {{\n  proxy.server = ( \"\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {} ) ) )\n}}\n",
        d.root.display(),
        log.display(),
        chat.port,
        app.port
    );
    let s = Launch::new()
        .config(&conf)
        .args(&["--bind", "127.0.0.1", "--port", "0"])
        .start();
    let profile = TempDir::new("chromium");
    let started = Instant::now();
    let mut browser = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("http://127.0.0.1:{}/chat.html", s.port))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium");
    // The page reports once all arrived, or after 8 s with what did.
    let report = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("GET /report?"))
            .map(|l| l.trim_end_matches(" HTTP/1.1").to_string())
    };
    let reported = wait_for(Duration::from_secs(40), || report().is_some());
    let took = started.elapsed();
    let _ = browser.kill();
    let stderr = browser
        .wait_with_output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    let result = percent_decode(&report().unwrap_or_default());
    let why = format!(
        "after {took:?}: {result}\nchromium stderr: {}\nglint: {}",
        stderr.lines().rev().take(10).collect::<Vec<_>>().join("\n"),
        s.stderr_tail()
    );
    assert!(reported, "no report {why}");
    // Both sockets heard both lines, in the room's order.
    for who in ["a", "b"] {
        let key = format!("\"{who}\":[\"1: hello from a\",\"2: hello from b\"]");
        assert!(result.contains(&key), "{who} {why}");
    }
    assert!(
        result.contains("\"sse\":[\"0\",\"1\",\"2\",\"3\",\"4\"]"),
        "events {why}"
    );
    assert!(result.contains("\"errors\":[]"), "{why}");
}

/// `%XX` escapes of the report's query.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The HTTP/3 page: the seed page in a frame, the seed JPEG, and a 2 MB
/// file fetched whole; the verdict goes to `/report?...`.
const H3_PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>glint HTTP/3</title></head>
<body><iframe id="f" src="/index.html"></iframe><img id="i" src="/test.jpg">
<script>
const seen = {};
const report = () => fetch('/report?' + encodeURIComponent(JSON.stringify(seen)));
const frame = new Promise((ok) => { document.getElementById('f').onload = ok; });
const img = document.getElementById('i');
const image = img.complete ? Promise.resolve() : new Promise((ok) => { img.onload = ok; img.onerror = ok; });
const big = fetch('/big.bin').then((r) => r.arrayBuffer()).then((b) => {
  let sum = 0;
  const v = new Uint8Array(b);
  for (let k = 0; k < v.length; k++) { sum = (sum + v[k]) % 65521; }
  seen.big = [v.length, sum];
}).catch((e) => { seen.bigError = String(e); });
Promise.all([frame, image, big]).then(() => {
  seen.page = (document.getElementById('f').contentDocument.body.innerText || '').includes('Test Ok!');
  seen.jpeg = [img.naturalWidth, img.naturalHeight];
  report();
});
setTimeout(report, 15000);
</script></body></html>
"#;

/// The SHA-256 of the certificate's public key, base64: what
/// `--ignore-certificate-errors-spki-list` takes.
fn spki_hash(cert: &std::path::Path) -> String {
    let o = Command::new("sh")
        .arg("-c")
        .arg(
            "openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der \
             | openssl dgst -sha256 -binary | openssl base64",
        )
        .arg("sh")
        .arg(cert)
        .output()
        .expect("openssl");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn chromium_loads_the_seed_page_and_jpeg_over_http3() {
    let browser = chromium();
    let certs = TempDir::new("h3-certs");
    make_cert(certs.path());
    let d = Docroot::new();
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("www");
    let read = |n: &str| std::fs::read(seeds.join(n)).expect("www/ seed file");
    let big = pseudo_random(2 * 1024 * 1024, 5);
    let want_sum = big.iter().fold(0u32, |s, &b| (s + b as u32) % 65521);
    d.file("index.html", &read("index.html"))
        .file("test.jpg", &read("test.jpg"))
        .file("big.bin", &big)
        .file("h3.html", H3_PAGE.as_bytes())
        .file("report", b"thanks");
    let log = d.base.join("access.log");
    let conf = format!(
        "server.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += ( \"mod_openssl\", \"mod_accesslog\" )\n\
         accesslog.filename = \"{log}\"\naccesslog.format = \"%r %>s %b\"\n\
         ssl.pemfile = \"{certs}/server.pem\"\n\
         $SERVER[\"socket\"] == \"127.0.0.1:0\" {{\n  ssl.engine = \"enable\"\n  glint.h3 = \"enable\"\n}}\n",
        root = d.root.display(),
        log = log.display(),
        certs = certs.path().display(),
    );
    // One listener, the TLS socket, on a port the kernel picks.
    let s = Launch::new().config(&conf).start();
    let port = s.port;
    let profile = TempDir::new("chromium-h3");
    let origin = format!("localhost:{port}");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--enable-quic",
            "--host-resolver-rules=MAP localhost 127.0.0.1",
        ])
        .arg(format!("--origin-to-force-quic-on={origin}"))
        .arg(format!(
            "--ignore-certificate-errors-spki-list={}",
            spki_hash(&certs.join("server.pem"))
        ))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("https://{origin}/h3.html"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium");
    let report = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("GET /report?"))
            .map(str::to_string)
    };
    let reported = wait_for(Duration::from_secs(40), || report().is_some());
    let _ = child.kill();
    let stderr = child
        .wait_with_output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let why = format!(
        "access log:\n{text}\nchromium stderr: {}\nglint: {}",
        stderr.lines().rev().take(10).collect::<Vec<_>>().join("\n"),
        s.stderr_tail()
    );
    assert!(reported, "no report {why}");
    let result = percent_decode(&report().unwrap_or_default());
    assert!(result.contains("\"page\":true"), "{result} {why}");
    assert!(
        result.contains(&format!("\"big\":[2097152,{want_sum}]")),
        "{result} {why}"
    );
    assert!(!result.contains("\"jpeg\":[0,"), "{result} {why}");
    // Every request went over HTTP/3, the seed files whole.
    for line in [
        "GET /h3.html HTTP/3.0 200",
        "GET /index.html HTTP/3.0 200 469",
        "GET /test.jpg HTTP/3.0 200 25190",
        "GET /big.bin HTTP/3.0 200 2097152",
    ] {
        assert!(text.contains(line), "{line} {why}");
    }
    assert!(
        !text.contains("HTTP/1.1") && !text.contains("HTTP/2"),
        "{why}"
    );
}
