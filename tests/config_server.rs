//! The server driven by lighttpd configuration files: listeners from
//! `$SERVER["socket"]`, virtual hosts, the everyday modules, and the command
//! line's `-t`, `-tt`, `-p`.

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Waits for the server's stderr to show a listener on `ip`, returns its port.
fn listener_port(s: &Server, ip: &str) -> u16 {
    let mark = format!("glint: listening on {ip}:");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = s.stderr.lock().unwrap().iter().find_map(|l| {
            l.find(&mark).and_then(|i| {
                l[i + mark.len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
                    .parse()
                    .ok()
            })
        });
        if let Some(p) = found {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "no listener on {ip}: {}",
            s.stderr_tail()
        );
        // stderr is drained by a thread; there is no readiness to wait on.
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn server_socket_blocks_listen_with_their_own_docroot() {
    let d = Docroot::new();
    d.file("index.html", b"main site\n");
    let other = d.base.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("index.html"), b"second listener\n").unwrap();
    let conf = format!(
        "server.document-root = \"{}\"\n\
         $SERVER[\"socket\"] == \"127.0.0.2:0\" {{\n  server.document-root = \"{}\"\n}}\n",
        d.root.display(),
        other.display()
    );
    let s = start_conf(&d, &conf);
    assert_eq!(fetch(&s, &get("/", &[])).body, b"main site\n");
    let p2 = listener_port(&s, "127.0.0.2");
    let mut c = std::net::TcpStream::connect(("127.0.0.2", p2)).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    use std::io::{Read, Write};
    c.write_all(&get("/", &[])).unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("\r\n\r\nsecond listener\n"),
        "{text}"
    );
}

#[test]
fn host_conditionals_pick_the_docroot() {
    let d = Docroot::new();
    d.file("index.html", b"default\n");
    for (dir, body) in [("a", "site a\n"), ("b", "site b\n")] {
        let p = d.base.join(dir);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("index.html"), body).unwrap();
    }
    let conf = format!(
        "server.document-root = \"{root}\"\n\
         $HTTP[\"host\"] == \"a.example\" {{\n  server.document-root = \"{base}/a\"\n}}\n\
         else $HTTP[\"host\"] =~ \"^(www\\.)?b\\.example(:[0-9]+)?$\" {{\n  server.document-root = \"{base}/b\"\n}}\n",
        root = d.root.display(),
        base = d.base.display()
    );
    let s = start_conf(&d, &conf);
    let cases = [
        ("a.example", "site a\n"),
        ("A.Example", "site a\n"),
        ("www.b.example", "site b\n"),
        ("b.example:8080", "site b\n"),
        ("c.example", "default\n"),
    ];
    for (host, want) in cases {
        let r = fetch(
            &s,
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(String::from_utf8_lossy(&r.body), want, "Host: {host}");
    }
}

#[test]
fn modules_behave_as_configured() {
    let d = Docroot::new();
    d.file("index.html", b"index\n")
        .file("secret.inc", b"no\n")
        .file("notes.txt~", b"no\n")
        .file("new/page.txt", b"rewritten\n")
        .file("static/s.css", b"body{}\n")
        .file("404.html", b"custom not found\n")
        .file("list/one.txt", b"1")
        .file("list/two.txt", b"22");
    let conf = format!(
        r#"server.document-root = "{root}"
server.modules = ( "mod_access", "mod_redirect", "mod_rewrite", "mod_setenv", "mod_expire", "mod_dirlisting", "mod_status" )
url.access-deny = ( "~", ".inc" )
url.rewrite-once = ( "^/old/(.*)$" => "/new/$1" )
$HTTP["host"] =~ "^www\.(.*)$" {{
  url.redirect = ( "^/(.*)$" => "http://%1/$1" )
}}
setenv.add-response-header = ( "X-Served-By" => "glint-test" )
expire.url = ( "/static/" => "access plus 1 hours" )
server.error-handler-404 = "/404.html"
$HTTP["url"] =^ "/list/" {{
  dir-listing.activate = "enable"
}}
status.status-url = "/server-status"
"#,
        root = d.root.display()
    );
    let s = start_conf(&d, &conf);

    // A denied file is never sent; with server.error-handler-404 the
    // handler's page answers the 403, with its own status (200), as in
    // lighttpd.
    for path in ["/secret.inc", "/notes.txt~"] {
        let r = fetch(&s, &get(path, &[]));
        assert_eq!(
            (r.status, &r.body[..]),
            (200, &b"custom not found\n"[..]),
            "access-deny {path}: {}",
            r.describe()
        );
    }

    let r = fetch(&s, &get("/old/page.txt", &[]));
    assert_eq!(
        (r.status, &r.body[..]),
        (200, &b"rewritten\n"[..]),
        "{}",
        r.describe()
    );

    let r = fetch(
        &s,
        b"GET /a/b?c=1 HTTP/1.1\r\nHost: www.example.org\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 301, "{}", r.describe());
    assert_eq!(r.header("location"), Some("http://example.org/a/b?c=1"));

    let r = fetch(&s, &get("/index.html", &[]));
    assert_eq!(
        r.header("x-served-by"),
        Some("glint-test"),
        "{}",
        r.describe()
    );
    assert_eq!(r.header("expires"), None, "no expiry outside /static/");

    let r = fetch(&s, &get("/static/s.css", &[]));
    assert_eq!(
        r.header("cache-control"),
        Some("max-age=3600"),
        "{}",
        r.describe()
    );
    assert!(
        r.header("expires").is_some_and(is_imf_fixdate),
        "{}",
        r.describe()
    );

    // A static 404 handler answers with its own status, as in lighttpd
    // (a dynamic one may set Status: 404).
    let r = fetch(&s, &get("/missing.html", &[]));
    assert_eq!(
        (r.status, &r.body[..]),
        (200, &b"custom not found\n"[..]),
        "{}",
        r.describe()
    );

    let r = fetch(&s, &get("/list/", &[]));
    let page = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        page.contains("href=\"one.txt\"") && page.contains("href=\"two.txt\""),
        "{page}"
    );
    let r = fetch(&s, &get("/new/", &[]));
    assert_eq!(
        (r.status, &r.body[..]),
        (200, &b"custom not found\n"[..]),
        "no listing outside /list/ (the 403 goes to the handler): {}",
        r.describe()
    );

    let r = fetch(&s, &get("/server-status?auto", &[]));
    let text = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 200);
    assert!(text.contains("Total Accesses: "), "{text}");
}

#[test]
fn simple_vhost_maps_hosts_to_directories() {
    let d = Docroot::new();
    d.file("index.html", b"plain\n");
    for (host, body) in [("one.test", "one\n"), ("default.test", "fallback\n")] {
        let p = d.base.join("vhosts").join(host).join("htdocs");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("index.html"), body).unwrap();
    }
    let conf = format!(
        "server.document-root = \"{}\"\n\
         simple-vhost.server-root = \"{}/vhosts/\"\n\
         simple-vhost.document-root = \"htdocs\"\n\
         simple-vhost.default-host = \"default.test\"\n",
        d.root.display(),
        d.base.display()
    );
    let s = start_conf(&d, &conf);
    for (host, want) in [("one.test:80", "one\n"), ("unknown.test", "fallback\n")] {
        let r = fetch(
            &s,
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(String::from_utf8_lossy(&r.body), want, "Host: {host}");
    }
}

/// Neither the host's directory nor the default host's exists: the
/// document root stays `server.document-root`, as lighttpd keeps it (Debian's
/// 10-simple-vhost.conf on a machine without /srv/www.example.com). Runs
/// against lighttpd too (`GLINT_BLACKBOX_SERVER=lighttpd`).
#[test]
fn simple_vhost_without_any_directory_keeps_the_document_root() {
    let d = Docroot::new();
    d.file("index.html", b"plain\n");
    let vhosts = d.base.join("vhosts");
    std::fs::create_dir_all(vhosts.join("one.test/htdocs")).unwrap();
    std::fs::write(vhosts.join("one.test/htdocs/index.html"), b"one\n").unwrap();
    let conf = format!(
        "server.document-root = \"{}\"\n\
         server.bind = \"127.0.0.1\"\nserver.port = {{port}}\n{{errorlog}}\n\
         server.modules += (\"mod_simple_vhost\", \"mod_indexfile\", \"mod_staticfile\")\n\
         index-file.names = (\"index.html\")\n\
         simple-vhost.server-root = \"{}\"\n\
         simple-vhost.document-root = \"htdocs\"\n\
         simple-vhost.default-host = \"www.example.com\"\n",
        d.root.display(),
        vhosts.display()
    );
    let s = Server::start_config(&conf);
    for (host, status, want) in [
        ("one.test", 200, "one\n"),
        ("unknown.test", 200, "plain\n"),
        ("www.example.com", 200, "plain\n"),
    ] {
        let r = fetch(
            &s,
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.status, status, "Host: {host}");
        assert_eq!(String::from_utf8_lossy(&r.body), want, "Host: {host}");
    }
}

#[test]
fn access_log_lines_in_lighttpd_format() {
    let d = Docroot::new();
    d.file("index.html", b"0123456789");
    let log = d.base.join("access.log");
    let conf = format!(
        "server.document-root = \"{}\"\naccesslog.filename = \"{}\"\n",
        d.root.display(),
        log.display()
    );
    let s = start_conf(&d, &conf);
    fetch(
        &s,
        b"GET /index.html?q=1 HTTP/1.1\r\nHost: log.test\r\nUser-Agent: tester/1\r\nReferer: http://r/\r\nConnection: close\r\n\r\n",
    );
    fetch(&s, &get("/nope", &[]));
    // The log is flushed once a second.
    let deadline = Instant::now() + Duration::from_secs(5);
    let text = loop {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        if t.lines().count() >= 2 || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("127.0.0.1 log.test - ["),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with("] \"GET /index.html?q=1 HTTP/1.1\" 200 10 \"http://r/\" \"tester/1\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("\"GET /nope HTTP/1.1\" 404 "),
        "{}",
        lines[1]
    );
}

fn glint(args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_glint"));
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start glint");
    if let Some(text) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().expect("glint output");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn test_flags_report_problems_with_file_and_line() {
    let d = Docroot::new();
    let good = d.base.join("good.conf");
    std::fs::write(
        &good,
        format!(
            "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n",
            d.root.display()
        ),
    )
    .unwrap();
    let good = good.to_str().unwrap();
    let (ok, out, err) = glint(&["-t", "-f", good], None);
    assert!(ok && out.trim() == "Syntax OK", "{out}{err}");
    let (ok, out, err) = glint(&["-tt", "-f", good], None);
    assert!(ok && out.trim() == "Syntax OK", "{out}{err}");

    let bad = d.base.join("bad.conf");
    std::fs::write(&bad, "server.port = 80\nserver.document-root = (\n").unwrap();
    let (ok, _, err) = glint(&["-t", "-f", bad.to_str().unwrap()], None);
    assert!(!ok, "a syntax error must fail");
    assert!(
        err.contains("bad.conf:3:") || err.contains("bad.conf:2:"),
        "{err}"
    );

    let missing = d.base.join("missing.conf");
    std::fs::write(
        &missing,
        "server.bind = \"127.0.0.1\"\nserver.port = 0\n\nserver.document-root = \"/nonexistent/glint-docroot\"\n",
    )
    .unwrap();
    let (ok, _, err) = glint(&["-tt", "-f", missing.to_str().unwrap()], None);
    assert!(!ok, "a missing docroot fails -tt");
    assert!(
        err.contains("/nonexistent/glint-docroot") && err.contains("missing.conf:4"),
        "the message names the path and the line: {err}"
    );
    let (ok, _, err) = glint(&["-D", "-f", missing.to_str().unwrap()], None);
    assert!(
        !ok && err.contains("doesn't exist"),
        "start fails too: {err}"
    );
}

#[test]
fn print_flag_round_trips() {
    let d = Docroot::new();
    let conf = d.base.join("p.conf");
    std::fs::write(
        &conf,
        format!(
            "server.document-root = \"{}\"\nserver.port = 8081\n\
             $HTTP[\"host\"] =~ \"^x\\.(test)$\" {{ url.redirect = ( \"^/(.*)\" => \"http://%1/$1\" ) }}\n",
            d.root.display()
        ),
    )
    .unwrap();
    let (ok, printed, err) = glint(&["-p", "-f", conf.to_str().unwrap()], None);
    assert!(ok, "{err}");
    assert!(printed.contains("server.port = 8081"), "{printed}");
    let (ok, again, err) = glint(&["-p", "-f", "-"], Some(&printed));
    assert!(ok, "{err}");
    assert_eq!(printed, again, "-p output parses to the same configuration");
}
