//! lighttpd 1.4.69's core options glint once refused at any value but the
//! default, each with lighttpd's meaning: against glint, and where the
//! setup allows against lighttpd (`GLINT_BLACKBOX_SERVER=lighttpd`).

mod common;

use common::*;
use std::net::TcpStream;

fn conf(d: &Docroot, extra: &str) -> String {
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n{{errorlog}}\n\
         server.modules += (\"mod_indexfile\", \"mod_staticfile\")\n{extra}\n",
        d.root.display()
    )
}

/// `server.feature-flags` `"server.absolute-dir-redirect"`: the
/// directory's redirect names scheme and host; without it, a path.
#[test]
fn absolute_dir_redirect_feature_flag() {
    let d = Docroot::new();
    d.file("sub/index.html", b"in sub\n");
    let ask = |s: &Server| {
        fetch(
            s,
            b"GET /sub?x=1 HTTP/1.1\r\nHost: example.test:8080\r\nConnection: close\r\n\r\n",
        )
    };
    let s = Server::start_config(&conf(&d, ""));
    let r = ask(&s);
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/sub/?x=1"));
    drop(s);
    let s = Server::start_config(&conf(
        &d,
        "server.feature-flags += (\"server.absolute-dir-redirect\" => \"enable\")",
    ));
    let r = ask(&s);
    assert_eq!(r.status, 301);
    assert_eq!(
        r.header("Location"),
        Some("http://example.test:8080/sub/?x=1")
    );
}

/// Where it is lighttpd 1.4.69's meaning: `server.absolute-dir-redirect`
/// on its own is no option (a warning), so it changes nothing.
#[test]
fn absolute_dir_redirect_alone_is_ignored_as_lighttpd_ignores_it() {
    let d = Docroot::new();
    d.file("sub/index.html", b"in sub\n");
    let s = Server::start_config(&conf(&d, "server.absolute-dir-redirect = \"enable\""));
    let r = fetch(&s, &get("/sub", &[]));
    assert_eq!(r.header("Location"), Some("/sub/"));
}

/// `server.v4mapped` on an IPv6 wildcard listener: enable takes IPv4
/// clients (as ::ffff:127.0.0.1), disable refuses them; IPv6 clients
/// connect either way. (glint only: the harness finds a lighttpd by
/// connecting to 127.0.0.1.)
#[test]
fn v4mapped_decides_whether_ipv4_clients_reach_an_ipv6_listener() {
    if !std::path::Path::new("/proc/net/if_inet6").exists() {
        eprintln!("skipped: no IPv6 on this machine");
        return;
    }
    let d = Docroot::new();
    d.file("index.html", b"hello\n");
    for (v4mapped, ipv4_ok) in [("enable", true), ("disable", false)] {
        let text = format!(
            "server.document-root = \"{}\"\nserver.bind = \"[::]\"\nserver.port = 0\n\
             server.v4mapped = \"{v4mapped}\"\n",
            d.root.display()
        );
        let s = Launch::new().config(&text).start();
        let v4 = TcpStream::connect(("127.0.0.1", s.port));
        assert_eq!(v4.is_ok(), ipv4_ok, "server.v4mapped = {v4mapped}: {v4:?}");
        assert!(
            TcpStream::connect(("::1", s.port)).is_ok(),
            "IPv6 clients connect with server.v4mapped = {v4mapped}"
        );
    }
}

/// `server.reject-expect-100-with-417`: read and ignored by lighttpd
/// 1.4.69 and by glint; a request with `Expect: 100-continue` is answered.
#[test]
fn reject_expect_100_with_417_is_ignored_as_lighttpd_ignores_it() {
    let d = Docroot::new();
    d.file("index.html", b"hello\n");
    let s = Server::start_config(&conf(&d, "server.reject-expect-100-with-417 = \"enable\""));
    let r = fetch(
        &s,
        b"POST /index.html HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.head);
}

/// `accesslog.escaping`: lighttpd 1.4.69's default form (`\"`, `\\`,
/// `\t`, `\xHH`) and "json" (`\u00HH` for controls, other bytes as they
/// are), the same lines from glint and lighttpd.
#[test]
fn access_log_escaping_default_and_json() {
    let d = Docroot::new();
    d.file("e.txt", b"e\n");
    let cases: [(&str, &[u8]); 2] = [
        ("default", b"GET /e.txt?q HTTP/1.1|a\\\"b\\\\c\\td\\xE9\n"),
        ("json", b"GET /e.txt?q HTTP/1.1|a\\\"b\\\\c\\td\xe9\n"),
    ];
    for (esc, want) in cases {
        let log = d.base.join(format!("access-{esc}.log"));
        let mut s = Server::start_config(&conf(
            &d,
            &format!(
                "server.modules += (\"mod_accesslog\")\naccesslog.filename = \"{}\"\n\
                 accesslog.format = \"%r|%{{User-Agent}}i\"\naccesslog.escaping = \"{esc}\"",
                log.display()
            ),
        ));
        let r = fetch(
            &s,
            b"GET /e.txt?q HTTP/1.1\r\nHost: t\r\nUser-Agent: a\"b\\c\td\xe9\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(r.status, 200);
        s.stop();
        let got = std::fs::read(&log).unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "accesslog.escaping = {esc}"
        );
    }
}

/// `server.errorlog-use-syslog`, `server.syslog-facility`,
/// `accesslog.use-syslog` and `accesslog.syslog-level`: a unix datagram
/// socket in a temporary directory stands in for /dev/log
/// (`GLINT_SYSLOG_SOCKET`, which exists for tests only). glint only:
/// lighttpd always writes to /dev/log.
#[test]
fn error_and_access_logs_go_to_the_system_log() {
    use std::os::unix::net::UnixDatagram;
    let d = Docroot::new();
    d.file("index.html", b"hello\n");
    let dir = TempDir::new("syslog");
    let path = dir.join("log");
    let sock = UnixDatagram::bind(&path).expect("bind the stand-in for /dev/log");
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let text = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.errorlog-use-syslog = \"enable\"\nserver.syslog-facility = \"local3\"\n\
         accesslog.use-syslog = \"enable\"\naccesslog.syslog-level = 5\n\
         accesslog.format = \"%r %>s %{{User-Agent}}i\"\nserver.modules += (\"mod_accesslog\")\n",
        d.root.display()
    );
    let mut cmd = std::process::Command::new(glint_bin());
    cmd.arg("-D").env("GLINT_SYSLOG_SOCKET", &path);
    let s = Launch::command(cmd).config(&text).start();
    assert_eq!(
        fetch(&s, &get("/index.html", &["User-Agent: t\"1"])).status,
        200
    );
    // local3 is 19: <19*8+5> for the access log, <19*8+3> for errors.
    let mut buf = [0u8; 2048];
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while std::time::Instant::now() < deadline {
        let Ok(n) = sock.recv(&mut buf) else { break };
        let line = String::from_utf8_lossy(&buf[..n]).into_owned();
        let done = line.starts_with("<157>");
        seen.push(line);
        if done {
            break;
        }
    }
    let access = seen
        .iter()
        .find(|l| l.starts_with("<157>"))
        .unwrap_or_else(|| panic!("no access log line: {seen:?}"));
    assert!(
        access.ends_with(&format!(
            " glint[{}]: GET /index.html HTTP/1.1 200 t\\\"1",
            s.pid()
        )),
        "{access}"
    );
    // The error log goes there too (every line at LOG_ERR, as lighttpd
    // sends it): SIGHUP makes glint log that it reopens its logs.
    s.signal(SIGHUP);
    let mut got = None;
    while got.is_none() {
        let Ok(n) = sock.recv(&mut buf) else { break };
        let line = String::from_utf8_lossy(&buf[..n]).into_owned();
        if line.contains("reopening log files") {
            got = Some(line);
        }
    }
    let line = got.expect("the error log line on the system log");
    assert!(line.starts_with("<155>"), "{line}");
    assert!(line.contains(&format!(" glint[{}]: (", s.pid())), "{line}");
}
