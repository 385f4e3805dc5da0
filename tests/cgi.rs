//! mod_cgi with real programs: Python and sh scripts run by glint, their
//! body in, their answer streamed out, stderr in the error log, killed
//! when the client goes, the cap on processes running at once.

mod common;

use common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const PY: &str = "/usr/bin/python3";

fn start_cgi(d: &Docroot, rest: &str) -> Server {
    let conf = format!(
        "server.document-root = \"{}\"\nserver.modules = ( \"mod_cgi\" )\ncgi.assign = ( \".py\" => \"{PY}\", \".sh\" => \"\" )\n{rest}",
        d.root.display()
    );
    Launch::new()
        .config(&conf)
        .args(&["--bind", "127.0.0.1", "--port", "0"])
        .start()
}

fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// A shell script, executable.
fn script(d: &Docroot, rel: &str, body: &str) {
    d.file(rel, body.as_bytes());
    set_mode(&d.path(rel), 0o755);
}

const ENV_PY: &str = r#"import os, sys
body = sys.stdin.buffer.read()
sys.stderr.write("env.py says hello on stderr\n")
sys.stdout.write("Content-Type: text/plain\r\nX-Script: env\r\n\r\n")
for k in ("REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_LENGTH",
          "SCRIPT_FILENAME", "HTTP_X_TEST", "SERVER_PROTOCOL", "REMOTE_ADDR", "HTTP_UPGRADE"):
    sys.stdout.write(f"{k}={os.environ.get(k, '-')}\n")
sys.stdout.write(f"CWD={os.getcwd()}\n")
sys.stdout.write("BODY=" + body.decode())
"#;

#[test]
fn a_script_gets_its_environment_and_body_and_its_stderr_is_logged() {
    let d = Docroot::new();
    d.file("cgi-bin/env.py", ENV_PY.as_bytes());
    let s = start_cgi(&d, "");
    let r = fetch(
        &s,
        b"POST /cgi-bin/env.py/more/info?a=1 HTTP/1.1\r\nHost: t\r\nX-Test: yes\r\nUpgrade: websocket\r\nConnection: close\r\nContent-Length: 9\r\n\r\nthe body!",
    );
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(r.header("x-script"), Some("env"));
    let body = text(&r);
    let root = d.root.display().to_string();
    for want in [
        "REQUEST_METHOD=POST".to_string(),
        "SCRIPT_NAME=/cgi-bin/env.py".into(),
        "PATH_INFO=/more/info".into(),
        "QUERY_STRING=a=1".into(),
        "CONTENT_LENGTH=9".into(),
        format!("SCRIPT_FILENAME={root}/cgi-bin/env.py"),
        format!("CWD={root}/cgi-bin"),
        "HTTP_X_TEST=yes".into(),
        "SERVER_PROTOCOL=HTTP/1.1".into(),
        "REMOTE_ADDR=127.0.0.1".into(),
        // cgi.upgrade is off: the script does not see the wish.
        "HTTP_UPGRADE=-".into(),
        "BODY=the body!".into(),
    ] {
        assert!(body.contains(&want), "{want} missing:\n{body}");
    }
    let logged = wait_for(TIMEOUT, || s.log().contains("env.py says hello on stderr"));
    assert!(logged, "stderr not in the error log:\n{}", s.log());

    // A chunked body is collected and given with its length.
    let r = fetch(
        &s,
        b"POST /cgi-bin/env.py HTTP/1.1\r\nHost: t\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n",
    );
    let body = text(&r);
    assert!(
        body.contains("CONTENT_LENGTH=6") && body.ends_with("BODY=abcdef"),
        "{body}"
    );

    // The source is never shown, whatever the request.
    let r = fetch(&s, &get("/cgi-bin/env.py", &[]));
    assert!(!text(&r).contains("import os"), "{}", r.describe());
    // A file no suffix takes is a file.
    d.file("cgi-bin/readme.txt", b"just text");
    assert_eq!(
        text(&fetch(&s, &get("/cgi-bin/readme.txt", &[]))),
        "just text"
    );
}

#[test]
fn output_streams_as_the_script_writes_it() {
    let d = Docroot::new();
    script(
        &d,
        "tick.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nfor i in 1 2 3; do echo tick $i; sleep 0.3; done\n",
    );
    let s = start_cgi(&d, "");
    let mut t = s.tcp();
    t.write_all(b"GET /tick.sh HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("send");
    t.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    // The first tick comes long before the script ends (0.9 s).
    while !String::from_utf8_lossy(&got).contains("tick 1") {
        let n = t.read(&mut buf).expect("read");
        assert!(n > 0, "closed early: {}", show(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "the first tick waited"
    );
    let mut rest = Vec::new();
    let _ = t.read_to_end(&mut rest);
    got.extend_from_slice(&rest);
    let all = String::from_utf8_lossy(&got);
    assert!(
        all.contains("tick 3") && all.ends_with("0\r\n\r\n"),
        "{all}"
    );
}

#[test]
fn nph_x_sendfile_and_local_redirects() {
    let d = Docroot::new();
    d.file(
        "nph-status.py",
        b"import sys\nsys.stdout.write('HTTP/1.1 202 Accepted\\r\\nContent-Type: text/plain\\r\\nContent-Length: 4\\r\\n\\r\\nnph!')\n",
    );
    d.file("data/file.txt", b"sent by glint");
    d.file(
        "send.py",
        b"import os\nprint('X-Sendfile: ' + os.environ['DOCUMENT_ROOT'] + '/data/file.txt')\nprint()\n",
    );
    d.file("redir.py", b"print('Location: /data/file.txt')\nprint()\n");
    let s = start_cgi(
        &d,
        &format!(
            "cgi.x-sendfile = \"enable\"\ncgi.x-sendfile-docroot = ( \"{}/data\" )\ncgi.local-redir = \"enable\"",
            d.root.display()
        ),
    );
    let r = fetch(&s, &get("/nph-status.py", &[]));
    assert_eq!(
        (r.status, text(&r).as_str()),
        (202, "nph!"),
        "{}",
        r.describe()
    );
    let r = fetch(&s, &get("/send.py", &[]));
    assert_eq!(
        (r.status, text(&r).as_str()),
        (200, "sent by glint"),
        "{}",
        r.describe()
    );
    let r = fetch(&s, &get("/redir.py", &[]));
    assert_eq!(
        (r.status, text(&r).as_str()),
        (200, "sent by glint"),
        "{}",
        r.describe()
    );
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn a_script_is_killed_when_its_client_goes_or_its_time_is_up() {
    let d = Docroot::new();
    let dir = TempDir::new("cgikill");
    let pidfile = dir.join("pid");
    script(
        &d,
        "forever.sh",
        &format!(
            "#!/bin/sh\necho $$ > {}\nprintf 'Content-Type: text/plain\\r\\n\\r\\nstarted\\n'\nexec sleep 60\n",
            pidfile.display()
        ),
    );
    script(&d, "silent.sh", "#!/bin/sh\nexec sleep 60\n");
    let s = start_cgi(
        &d,
        "$HTTP[\"url\"] == \"/silent.sh\" { cgi.limits = ( \"read-timeout\" => 1 ) }",
    );
    let mut t = s.tcp();
    t.write_all(b"GET /forever.sh HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("send");
    t.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    let mut buf = [0u8; 512];
    let n = t.read(&mut buf).expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("started"));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .expect("pid");
    assert!(running(pid));
    drop(t);
    assert!(
        wait_for(Duration::from_secs(5), || !running(pid)),
        "the script still runs after its client went away"
    );

    // No output within cgi.limits' read-timeout: 504, and it is killed.
    let start = Instant::now();
    let r = fetch(&s, &get("/silent.sh", &[]));
    assert_eq!(r.status, 504, "{}", r.describe());
    assert!(start.elapsed() < Duration::from_secs(4));
}

#[test]
fn at_most_max_procs_run_at_once_and_the_rest_wait() {
    let d = Docroot::new();
    let dir = TempDir::new("cgicap");
    // Each run notes itself in a directory while it runs and writes the
    // number it saw there.
    let runs = dir.join("running");
    std::fs::create_dir_all(&runs).expect("dir");
    d.file(
        "busy.py",
        format!(
            "import os, time\nd = '{}'\np = os.path.join(d, str(os.getpid()))\nopen(p, 'w').close()\nn = len(os.listdir(d))\ntime.sleep(0.3)\nn = max(n, len(os.listdir(d)))\nos.remove(p)\nprint('Content-Type: text/plain')\nprint()\nprint(n)\n",
            runs.display()
        )
        .as_bytes(),
    );
    let s = start_cgi(&d, "cgi.limits = ( \"max-procs\" => 2 )");
    let addr = s.addr();
    let clients: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || get_at(addr, "/busy.py")))
        .collect();
    let mut most = 0;
    for c in clients {
        let r = c.join().expect("thread").expect("answer");
        assert_eq!(r.status, 200, "{}", r.describe());
        let n: usize = text(&r).trim().parse().expect("a number");
        most = most.max(n);
    }
    assert!(most <= 2, "{most} scripts ran at once with max-procs 2");
    assert!(most >= 1);
}

/// A script's own `Date` and `Server` are passed on in place of glint's
/// (lighttpd's behaviour): one value of each, never two.
#[test]
fn a_scripts_date_and_server_replace_glints() {
    let d = Docroot::new();
    script(
        &d,
        "own.sh",
        "#!/bin/sh\nprintf 'Status: 200\\r\\nServer: backend/1\\r\\nDate: Mon, 01 Jan 2024 00:00:00 GMT\\r\\nContent-Type: text/plain\\r\\n\\r\\nhi\\n'\n",
    );
    script(
        &d,
        "plain.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nhi\\n'\n",
    );
    let s = start_cgi(&d, "");
    let r = fetch(
        &s,
        b"GET /own.sh HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.headers_named("server"), vec!["backend/1"], "{}", r.head);
    assert_eq!(
        r.headers_named("date"),
        vec!["Mon, 01 Jan 2024 00:00:00 GMT"],
        "{}",
        r.head
    );
    let r = fetch(
        &s,
        b"GET /plain.sh HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.headers_named("server").len(), 1, "{}", r.head);
    assert_eq!(r.headers_named("date").len(), 1, "{}", r.head);
    assert!(
        r.headers_named("server")[0].starts_with("glint"),
        "{}",
        r.head
    );
}

/// A script that writes its text with no header block at all is served
/// as the body of a 200 (lighttpd's special case for CGI); one whose first
/// line looks like a header but never ends its block is still a 502.
#[test]
fn output_without_a_header_block_is_the_body() {
    let d = Docroot::new();
    script(&d, "bare.sh", "#!/bin/sh\necho found here\necho and more\n");
    script(
        &d,
        "cut.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n'\n",
    );
    let s = start_cgi(&d, "");
    let r = fetch(&s, b"GET /bare.sh HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(text(&r), "found here\nand more\n");
    let r = fetch(&s, b"GET /cut.sh HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 502, "{}", r.describe());
}

/// A script whose whole answer is there when glint reads it gets a
/// `Content-Length` (the connection stays open on HTTP/1.0 keep-alive and
/// 1.1 without chunks), as lighttpd sends it; one still writing streams.
#[test]
fn a_small_finished_answer_has_a_length_and_a_running_one_streams() {
    let d = Docroot::new();
    script(
        &d,
        "small.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nwww.example.org'\n",
    );
    script(
        &d,
        "slow.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nfirst\\n'\nsleep 1\nprintf 'second\\n'\n",
    );
    let s = start_cgi(&d, "");
    let mut c = s.connect();
    for _ in 0..3 {
        c.send(b"GET /small.sh HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(r.status, 200, "{}", r.describe());
        assert_eq!(r.framing, "length", "{}", r.describe());
        assert_eq!(r.header("content-length"), Some("15"));
        assert_eq!(text(&r), "www.example.org");
    }
    let r = fetch(&s, b"GET /small.sh HTTP/1.0\r\n\r\n");
    assert_eq!(
        (r.framing, text(&r).as_str()),
        ("length", "www.example.org")
    );
    let started = Instant::now();
    let mut t = s.tcp();
    t.write_all(b"GET /slow.sh HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("first") {
        let n = t.read(&mut buf).unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "the first line waited for the end: {:?}",
        started.elapsed()
    );
    let head = String::from_utf8_lossy(&got).to_lowercase();
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
}

/// A CGI answer without a length ends with the program's output, on
/// HTTP/1.0 by closing the connection: every time, also when the output's
/// end comes in one readiness event with its last bytes (about one request
/// in 50 of this script, one after another, used to leave its client
/// waiting for the end).
#[test]
fn a_close_delimited_answer_ends_every_time() {
    let d = Docroot::new();
    script(&d, "bare.sh", "#!/bin/sh\necho found here\necho and more\n");
    let s = start_cgi(&d, "");
    const RUNS: usize = 300;
    let mut hung = 0;
    for _ in 0..RUNS {
        let mut c = s.connect();
        c.send(b"GET /bare.sh HTTP/1.0\r\n\r\n").expect("send");
        match c.read_to_close(Duration::from_secs(3)) {
            Ok(all) if all.ends_with(b"\r\n\r\nfound here\nand more\n") => {}
            _ => hung += 1,
        }
    }
    assert_eq!(hung, 0, "{hung} of {RUNS} answers did not end");
}
