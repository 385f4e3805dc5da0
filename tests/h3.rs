//! HTTP/3 end to end: glint's binary with real QUIC clients. aioquic's
//! HTTP/3 client (`tests/h3/h3client.py`), Debian's ngtcp2 client
//! (`gtlsclient`), and curl over TCP for the `Alt-Svc` that announces the
//! endpoint; every case of a static file, a range, a CGI reading a body,
//! 100 concurrent streams, a 2 MB file byte for byte, and the GOAWAY of a
//! graceful shutdown. `.ci/run` installs the tools (`pip install aioquic`,
//! `apt-get install ngtcp2-client`).

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The CGI that answers with its body's length and SHA-256.
const ECHO_CGI: &str = "import hashlib, os, sys\n\
n = int(os.environ.get('CONTENT_LENGTH') or 0)\n\
body = sys.stdin.buffer.read(n)\n\
sys.stdout.write('Content-Type: text/plain\\r\\n\\r\\n')\n\
sys.stdout.write('%d %s %s\\n' % (len(body), hashlib.sha256(body).hexdigest(), os.environ.get('SERVER_PROTOCOL')))\n";

struct H3 {
    s: Server,
    d: Docroot,
    _certs: TempDir,
    certs: std::path::PathBuf,
    /// The TLS port, TCP and UDP.
    port: u16,
    big: Vec<u8>,
}

/// glint with a plain listener and a TLS one with `glint.h3` on, a docroot
/// with a page, an image-sized file, a 2 MB file and the echo CGI; `extra`
/// configuration after.
fn start(extra: &str) -> H3 {
    let certs = TempDir::new("h3-certs");
    make_cert(certs.path());
    let d = Docroot::new();
    let big = pseudo_random(2 * 1024 * 1024, 3);
    d.file("index.html", b"<h1>glint over HTTP/3</h1>\n")
        .file("a.txt", b"0123456789abcdefghij")
        .file("big.bin", &big)
        .file("echo.py", ECHO_CGI.as_bytes());
    let port = free_port();
    let conf = format!(
        "server.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += ( \"mod_openssl\", \"mod_accesslog\", \"mod_cgi\" )\n\
         cgi.assign = ( \".py\" => \"/usr/bin/python3\" )\n\
         accesslog.filename = \"{root}/../access.log\"\n\
         ssl.pemfile = \"{certs}/server.pem\"\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{port}\" {{\n  ssl.engine = \"enable\"\n  glint.h3 = \"enable\"\n}}\n{extra}",
        root = d.root.display(),
        certs = certs.path().display(),
    );
    let s = Launch::new().config(&conf).listeners(2).start();
    let certs_path = certs.path().to_path_buf();
    H3 {
        s,
        d,
        _certs: certs,
        certs: certs_path,
        port,
        big,
    }
}

/// Runs `tests/h3/h3client.py` with `spec` (JSON) and returns its JSON.
fn h3client(spec: &str) -> serde_like::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h3/h3client.py");
    let o = Command::new("timeout")
        .arg("60")
        .arg("python3")
        .arg(script)
        .arg(spec)
        .output()
        .expect("python3 (pip install aioquic)");
    assert!(
        o.status.success(),
        "h3client.py {spec} failed: {}\n{}",
        text(&o.stderr),
        text(&o.stdout)
    );
    serde_like::parse(&text(&o.stdout))
}

#[path = "h3/json.rs"]
mod serde_like;

fn sha256_hex(data: &[u8]) -> String {
    let o = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().expect("stdin").write_all(data)?;
            c.wait_with_output()
        })
        .expect("sha256sum");
    text(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn aioquic_get_head_range_post_big_and_100_streams() {
    let h = start("");
    let p = h.port;
    let spec = format!(
        r#"{{"port": {p}, "requests": [
        {{"path": "/index.html"}},
        {{"method": "HEAD", "path": "/index.html"}},
        {{"path": "/a.txt", "headers": [["range", "bytes=5-9"]]}},
        {{"method": "POST", "path": "/echo.py", "body_len": 300000}},
        {{"path": "/big.bin"}},
        {{"path": "/missing"}}]}}"#
    );
    let r = h3client(&spec);
    assert_eq!(r.get("alpn").str(), "h3");
    let a = r.get("answers");
    let get = a.at(0);
    assert_eq!(get.get("status").num(), Some(200), "{get:?}");
    assert_eq!(get.get("body").str(), "<h1>glint over HTTP/3</h1>\n");
    assert_eq!(get.header("content-length"), Some("27"));
    assert!(
        get.header("alt-svc").is_none(),
        "no Alt-Svc over HTTP/3 itself"
    );
    let head = a.at(1);
    assert_eq!(head.get("status").num(), Some(200));
    assert_eq!(head.get("body_len").num(), Some(0), "HEAD has no body");
    assert_eq!(
        head.header("content-length"),
        Some("27"),
        "HEAD keeps the GET's length"
    );
    let range = a.at(2);
    assert_eq!(range.get("status").num(), Some(206));
    assert_eq!(range.get("body").str(), "56789");
    assert_eq!(range.header("content-range"), Some("bytes 5-9/20"));
    let post = a.at(3);
    let sent: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(post.get("status").num(), Some(200), "{post:?}");
    assert_eq!(
        post.get("body").str(),
        format!("300000 {} HTTP/3.0\n", sha256_hex(&sent)),
        "the CGI got the body whole"
    );
    let big = a.at(4);
    assert_eq!(big.get("status").num(), Some(200));
    assert_eq!(big.get("body_len").num(), Some(h.big.len() as u64));
    assert_eq!(
        big.get("sha256").str(),
        sha256_hex(&h.big),
        "2 MB byte for byte"
    );
    assert_eq!(a.at(5).get("status").num(), Some(404));
    assert!(
        r.get("close").get("code").num().is_none(),
        "no connection error: {r:?}"
    );

    // 100 requests at once on one connection: QUIC's stream limit.
    let reqs: Vec<String> = (0..100)
        .map(|i| format!(r#"{{"path": "/a.txt?{i}"}}"#))
        .collect();
    let r = h3client(&format!(
        r#"{{"port": {p}, "requests": [{}]}}"#,
        reqs.join(",")
    ));
    let answers = r.get("answers").list();
    assert_eq!(answers.len(), 100);
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a.get("status").num(), Some(200), "stream {i}: {a:?}");
        assert_eq!(a.get("body").str(), "0123456789abcdefghij");
    }

    // The access log says HTTP/3.0.
    let log_path = h.d.root.join("../access.log");
    assert!(wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(&log_path)
            .map(|l| l.matches("HTTP/3.0\" 200").count() >= 103)
            .unwrap_or(false)
    }));
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        log.contains("\"GET /big.bin HTTP/3.0\" 200 2097152"),
        "{log}"
    );
    assert!(log.contains("\"POST /echo.py HTTP/3.0\" 200"), "{log}");
}

#[test]
fn alt_svc_announces_the_endpoint_over_tcp_tls_only_for_files_and_backends() {
    let app = python(&[backends_dir().join("http_app.py").to_str().expect("path")]);
    let h = start(&format!(
        "server.modules += ( \"mod_proxy\" )\n$HTTP[\"url\"] =~ \"^/name\" {{\n  \
         proxy.server = ( \"\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {} ) ) )\n}}\n",
        app.port
    ));
    let curl = |args: &[&str]| {
        let o = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-D", "-"])
            .args(args)
            .output()
            .expect("curl");
        text(&o.stdout).to_ascii_lowercase()
    };
    let ca = h.certs.join("ca.pem");
    let tls = curl(&[
        "--cacert",
        &ca.display().to_string(),
        "--resolve",
        &format!("localhost:{}:127.0.0.1", h.port),
        &format!("https://localhost:{}/index.html", h.port),
    ]);
    let want = format!("alt-svc: h3=\":{}\"; ma=86400", h.port);
    assert!(tls.contains(&want), "HTTPS answer: {tls}");
    // A backend's answer (the CGI) says it too, once.
    let cgi = curl(&[
        "--cacert",
        &ca.display().to_string(),
        "--resolve",
        &format!("localhost:{}:127.0.0.1", h.port),
        &format!("https://localhost:{}/echo.py", h.port),
    ]);
    assert!(cgi.starts_with("http/2 200"), "{cgi}");
    assert_eq!(
        cgi.matches(&want).count(),
        1,
        "CGI answer over HTTPS: {cgi}"
    );
    // And a proxied one.
    let proxied = curl(&[
        "--cacert",
        &ca.display().to_string(),
        "--resolve",
        &format!("localhost:{}:127.0.0.1", h.port),
        &format!("https://localhost:{}/name", h.port),
    ]);
    assert!(proxied.contains("x-backend: app"), "{proxied}");
    assert_eq!(
        proxied.matches(&want).count(),
        1,
        "proxied answer: {proxied}"
    );
    let plain = curl(&[&format!("http://127.0.0.1:{}/index.html", h.s.port)]);
    assert!(plain.starts_with("http/1.1 200"), "{plain}");
    assert!(
        !plain.contains("alt-svc"),
        "plain HTTP announces nothing: {plain}"
    );
}

#[test]
fn gtlsclient_get_head_post_big_and_100_streams() {
    let h = start("");
    let dl = TempDir::new("h3-dl");
    let url = |p: &str| format!("https://localhost:{}{p}", h.port);
    let run = |args: &[&str]| {
        let o = Command::new("timeout")
            .arg("60")
            .arg("gtlsclient")
            .args(["--exit-on-all-streams-close", "-q"])
            .args(args)
            .output()
            .expect("gtlsclient (apt-get install ngtcp2-client)");
        assert!(
            o.status.success(),
            "gtlsclient {args:?}: {}",
            text(&o.stderr)
        );
        text(&o.stdout)
    };
    let port = h.port.to_string();
    let dls = dl.path().display().to_string();
    run(&[
        &format!("--download={dls}"),
        "127.0.0.1",
        &port,
        &url("/index.html"),
        &url("/big.bin"),
    ]);
    assert_eq!(
        std::fs::read(dl.join("index.html")).ok().as_deref(),
        Some(&b"<h1>glint over HTTP/3</h1>\n"[..])
    );
    let got = std::fs::read(dl.join("big.bin")).unwrap_or_default();
    assert!(got == h.big, "2 MB byte for byte ({} bytes)", got.len());
    // HEAD: the head with the GET's length, no body.
    let out = run(&[
        "-m",
        "HEAD",
        "--no-quic-dump",
        "127.0.0.1",
        &port,
        &url("/a.txt"),
    ]);
    let _ = out;
    // POST with a body from a file, to the CGI.
    let body_file = dl.join("body");
    let body = pseudo_random(100_000, 9);
    std::fs::write(&body_file, &body).expect("write");
    let post_dir = TempDir::new("h3-post");
    let pds = post_dir.path().display().to_string();
    run(&[
        "-m",
        "POST",
        "-d",
        &body_file.display().to_string(),
        &format!("--download={pds}"),
        "127.0.0.1",
        &port,
        &url("/echo.py"),
    ]);
    let echoed = std::fs::read_to_string(post_dir.join("echo.py")).unwrap_or_default();
    assert_eq!(echoed, format!("100000 {} HTTP/3.0\n", sha256_hex(&body)));
    // 100 streams of one request each.
    run(&["-n", "100", "127.0.0.1", &port, &url("/a.txt")]);
    let log_path = h.d.root.join("../access.log");
    assert!(wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(&log_path)
            .map(|l| l.matches("\"GET /a.txt HTTP/3.0\" 200").count() >= 100)
            .unwrap_or(false)
    }));
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(log.contains("\"HEAD /a.txt HTTP/3.0\" 200"), "{log}");
    assert!(log.contains("\"POST /echo.py HTTP/3.0\" 200"), "{log}");
}

#[test]
fn sigint_says_goaway_and_finishes_the_answer_in_flight() {
    let mut h = start("");
    let pid = h.s.pid();
    let r = h3client(&format!(
        r#"{{"port": {}, "sigint_pid": {pid}, "new_after_goaway": true, "wait_close": 5,
            "requests": [{{"path": "/big.bin"}}]}}"#,
        h.port
    ));
    let a = r.get("answers");
    assert_eq!(a.at(0).get("status").num(), Some(200));
    assert_eq!(
        a.at(0).get("sha256").str(),
        sha256_hex(&h.big),
        "the answer in flight is whole"
    );
    assert_eq!(
        r.get("goaway").num(),
        Some(4),
        "GOAWAY names the stream after the one open: {r:?}"
    );
    let late = a.at(1);
    assert!(
        late.get("status").num().is_none(),
        "a request after GOAWAY is not answered: {late:?}"
    );
    assert_eq!(
        r.get("close").get("code").num(),
        Some(0x100),
        "H3_NO_ERROR: {r:?}"
    );
    let exit =
        h.s.wait_exit(Duration::from_secs(10))
            .expect("glint exited after the GOAWAY");
    assert!(exit.success(), "{exit:?}");
}

/// An HTTP/3 connection has its row in mod_status's connection table, as
/// a TCP connection has: the page asked for over HTTP/3 lists its own
/// request, and the scoreboard counts the connection.
#[test]
fn an_http3_connection_has_its_row_on_the_status_page() {
    let h = start("server.modules += ( \"mod_status\" )\nstatus.status-url = \"/server-status\"\n");
    let p = h.port;
    let spec = format!(
        r#"{{"port": {p}, "requests": [
        {{"path": "/server-status?from=h3", "keep": 1000000}}]}}"#
    );
    let r = h3client(&spec);
    let page = r.get("answers").at(0);
    assert_eq!(page.get("status").num(), Some(200), "{page:?}");
    let body = page.get("body").str();
    assert!(
        body.contains(">/server-status?from=h3<"),
        "the asking HTTP/3 request is in the table: {body}"
    );
    assert!(
        body.contains(">handle-req</td>"),
        "its state while it is answered: {body}"
    );
    // The connection's own row: writing (a stream is open), with the bytes
    // its datagrams brought (the handshake alone is over a kilobyte).
    let counted = body.split("<tr>").any(|row| {
        let cells: Vec<&str> = row
            .split("</td>")
            .filter_map(|c| c.rsplit('>').next())
            .collect();
        cells.len() > 3 && cells[3] == "write" && cells[1].parse::<u64>().unwrap_or(0) > 1000
    });
    assert!(
        counted,
        "the QUIC connection's bytes are in its row: {body}"
    );
}

/// A refused login over HTTP/3 waits a second, as over HTTP/1 and HTTP/2
/// (tests/auth_delay.rs), and the connection ends with GOAWAY: the next
/// guess costs a new QUIC handshake. A right password is answered at once
/// and the connection stays.
#[test]
fn a_refused_login_over_http3_waits_and_gets_goaway() {
    let users = TempDir::new("h3-users");
    std::fs::write(users.join("users"), "alice:alice-pw\n").expect("userfile");
    let h = start(&format!(
        "server.modules += ( \"mod_auth\", \"mod_authn_file\" )\n\
         auth.backend = \"plain\"\nauth.backend.plain.userfile = \"{}\"\n\
         auth.require = ( \"/a.txt\" => ( \"method\" => \"basic\", \"realm\" => \"r\", \"require\" => \"valid-user\" ) )\n",
        users.join("users").display()
    ));
    let p = h.port;
    let run = |creds: &str| {
        let spec = format!(
            r#"{{"port": {p}, "requests": [
            {{"path": "/a.txt", "headers": [["authorization", "{}"]]}}]}}"#,
            basic_auth(
                creds.split(':').next().unwrap_or(""),
                creds.split(':').nth(1).unwrap_or("")
            )
            .trim_start_matches("Authorization: ")
        );
        let t = std::time::Instant::now();
        let r = h3client(&spec);
        (r, t.elapsed())
    };
    let (ok, ok_took) = run("alice:alice-pw");
    assert_eq!(
        ok.get("answers").at(0).get("status").num(),
        Some(200),
        "{ok:?}"
    );
    assert!(ok.get("goaway").num().is_none(), "{ok:?}");
    let (bad, bad_took) = run("alice:wrong");
    assert_eq!(
        bad.get("answers").at(0).get("status").num(),
        Some(401),
        "{bad:?}"
    );
    assert!(
        bad.get("goaway").num().is_some(),
        "GOAWAY after the refusal: {bad:?}"
    );
    assert!(
        bad_took >= ok_took + std::time::Duration::from_millis(700),
        "refused in {bad_took:?}, granted in {ok_took:?}"
    );
}
