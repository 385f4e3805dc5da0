//! Gateways with real backends: an SCGI application on the `scgi` package
//! and Quixote's demo over its SCGI server (seed 000), a WSGI application on
//! flup over FastCGI (seed 002) and on uWSGI over the uwsgi protocol, and
//! php-cgi spawned by glint itself (seed 004). `.ci/run` installs them.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `scgi_app.py` and returns it with the address it printed.
fn scgi_backend(args: &[&str]) -> (Backend, String) {
    scgi_backend_logging(args, None)
}

/// The same, writing each request's PATH_INFO to `log`.
fn scgi_backend_logging(args: &[&str], log: Option<&Path>) -> (Backend, String) {
    let mut cmd = Command::new("python3");
    if let Some(l) = log {
        cmd.env("SCGI_APP_LOG", l);
    }
    cmd.arg(backends_dir().join("scgi_app.py")).args(args);
    let b = start_ready(cmd, "scgi_app.py (pip install scgi)");
    let addr = b.addr.clone();
    (b, addr)
}

/// Starts the flup application on a unix socket and waits until it accepts.
fn flup_backend(sock: &Path) -> Backend {
    flup_script("fcgi_app.py", sock)
}

/// Starts a flup script of `tests/backends` on a unix socket and waits until it accepts.
fn flup_script(script: &str, sock: &Path) -> Backend {
    let child = Command::new("python3")
        .arg(backends_dir().join(script))
        .arg(sock)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 with flup (pip install flup)");
    let b = Backend::of(child);
    // The backend gives no readiness signal; poll its socket briefly.
    retry(TIMEOUT, Duration::from_millis(20), || {
        std::os::unix::net::UnixStream::connect(sock)
            .map_err(|_| format!("flup did not listen on {}", sock.display()))
    });
    b
}

fn body_text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// `KEY=value` lines of an echo backend.
fn env_of(r: &Response, key: &str) -> Option<String> {
    body_text(r)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
}

fn md5_hex(data: &[u8]) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "import hashlib,sys; print(hashlib.md5(sys.stdin.buffer.read()).hexdigest())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(data)?;
            c.wait_with_output()
        })
        .expect("python3");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The options of a backend at 127.0.0.1:`port`, with check-local off.
fn tcp_host(port: impl std::fmt::Display) -> String {
    format!("\"host\" => \"127.0.0.1\", \"port\" => {port}, \"check-local\" => \"disable\"")
}

/// The options of a backend on the unix socket `sock`, with check-local off.
fn unix_host(sock: &Path) -> String {
    format!(
        "\"socket\" => \"{}\", \"check-local\" => \"disable\"",
        sock.display()
    )
}

/// A configuration serving `d`'s docroot, with `rest` after that line.
fn conf_for(d: &Docroot, rest: &str) -> String {
    format!("server.document-root = \"{}\"\n{rest}", d.root.display())
}

/// A configuration serving `d` whose `server` (`scgi.server`,
/// `fastcgi.server`) sends `prefix` to one unnamed backend with the
/// options `host`.
fn one_route(d: &Docroot, server: &str, prefix: &str, host: &str) -> String {
    conf_for(
        d,
        &format!("{server} = ( \"{prefix}\" => ( ( {host} ) ) )\n"),
    )
}

/// A request: `head` (request line and headers, no blank line), a
/// Content-Length for `body`, then `body`.
fn with_body(head: &str, body: &[u8]) -> Vec<u8> {
    let mut req = format!("{head}\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(body);
    req
}

/// Runs `attempt` every `pause` until it gives `Ok`, for at most `limit`;
/// fails with its last `Err`. For what has no notification to wait on (a
/// backend's log or socket, a process going away).
fn retry<T>(limit: Duration, pause: Duration, mut attempt: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match attempt() {
            Ok(v) => return v,
            Err(e) => assert!(Instant::now() < deadline, "{e}"),
        }
        std::thread::sleep(pause);
    }
}

/// Waits (bounded) until the log file `log` has a line for which `pred`
/// holds, and returns the whole log; fails saying `what`.
fn wait_for_log(log: &Path, what: &str, pred: impl Fn(&str) -> bool) -> String {
    retry(TIMEOUT, Duration::from_millis(10), || {
        let seen = std::fs::read_to_string(log).unwrap_or_default();
        if seen.lines().any(&pred) {
            Ok(seen)
        } else {
            Err(format!("{what}; {}:\n{seen}", log.display()))
        }
    })
}

/// The php-cgi binary.
fn php_cgi() -> &'static str {
    ["/usr/bin/php-cgi", "/usr/local/bin/php-cgi"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("php-cgi (apt-get install php-cgi)")
}

/// The processes whose parent is `pid`.
fn children_of(pid: i32) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// After a graceful restart that changed a spawned backend: waits
/// (bounded) until glint's child `old` is gone and `path` is answered as
/// `answered` wants.
fn wait_for_replacement(s: &Server, old: &str, path: &str, answered: impl Fn(&Response) -> bool) {
    retry(TIMEOUT, Duration::from_millis(100), || {
        let r = fetch(s, &get(path, &[]));
        let now = children_of(s.pid());
        if answered(&r) && !now.iter().any(|p| p == old) {
            return Ok(());
        }
        Err(format!(
            "old backend {old} still there ({now:?}) or the new one not answering: {}\n{}",
            r.describe(),
            s.stderr_tail()
        ))
    })
}

#[test]
fn scgi_over_tcp_sees_the_cgi_environment() {
    let (_b, port) = scgi_backend(&["tcp"]);
    let d = Docroot::new();
    let host = tcp_host(&port);
    let conf = conf_for(
        &d,
        &format!(
            "server.modules += ( \"mod_scgi\" )\n\
             scgi.server = ( \"/scgi-test\" => ( \"localhost\" => ( {host} ) ),\n\
               \"/broken\" => ( ( {host}, \"broken-scriptfilename\" => \"enable\" ) ),\n\
               \"/remote\" => ( ( {host}, \"docroot\" => \"/srv/app\" ) ) )\n"
        ),
    );
    let s = start_conf(&d, &conf);
    let r = fetch(
        &s,
        b"GET /scgi-test/some/path?x=1&y=2 HTTP/1.1\r\nHost: app.test\r\nUser-Agent: t/1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.header("x-backend"), Some("scgi"));
    let want = [
        ("SCGI", "1"),
        ("REQUEST_METHOD", "GET"),
        ("SCRIPT_NAME", "/scgi-test"),
        ("PATH_INFO", "/some/path"),
        ("QUERY_STRING", "x=1&y=2"),
        ("REQUEST_URI", "/scgi-test/some/path?x=1&y=2"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("SERVER_NAME", "app.test"),
        ("HTTP_HOST", "app.test"),
        ("HTTP_USER_AGENT", "t/1"),
        ("REMOTE_ADDR", "127.0.0.1"),
        ("GATEWAY_INTERFACE", "CGI/1.1"),
        ("CONTENT_LENGTH", "0"),
    ];
    for (k, v) in want {
        assert_eq!(
            env_of(&r, k).as_deref(),
            Some(v),
            "{k} in\n{}",
            body_text(&r)
        );
    }
    // The backend gave no length: an HTTP/1.1 client gets chunked framing.
    assert_eq!(r.framing, "chunked", "{}", r.head);
    let root = d.root.display().to_string();
    let root = root.trim_end_matches('/');
    assert_eq!(env_of(&r, "SERVER_ADDR").as_deref(), Some("127.0.0.1"));
    assert_eq!(
        env_of(&r, "SERVER_PORT"),
        Some(s.port.to_string()),
        "{}",
        body_text(&r)
    );
    let remote_port: u16 = env_of(&r, "REMOTE_PORT")
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    assert!(remote_port > 0, "REMOTE_PORT in\n{}", body_text(&r));
    assert_eq!(
        env_of(&r, "SCRIPT_FILENAME"),
        Some(format!("{root}/scgi-test"))
    );

    // broken-scriptfilename: SCRIPT_FILENAME carries the PATH_INFO as well.
    let r = fetch(&s, &get("/broken/a/b", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(
        env_of(&r, "SCRIPT_FILENAME"),
        Some(format!("{root}/broken/a/b"))
    );
    assert_eq!(env_of(&r, "PATH_INFO").as_deref(), Some("/a/b"));
    // A backend's own docroot: DOCUMENT_ROOT and SCRIPT_FILENAME point there.
    let r = fetch(&s, &get("/remote/x", &[]));
    assert_eq!(env_of(&r, "DOCUMENT_ROOT").as_deref(), Some("/srv/app"));
    assert_eq!(
        env_of(&r, "SCRIPT_FILENAME").as_deref(),
        Some("/srv/app/remote/x")
    );
}

#[test]
fn map_extensions_send_another_extension_to_the_same_backend() {
    let (_b, port) = scgi_backend(&["tcp"]);
    let d = Docroot::new();
    let conf = format!(
        "{}scgi.map-extensions = ( \".cgi\" => \".py\", \".pl\" => \".nothere\" )\n",
        one_route(&d, "scgi.server", ".py", &tcp_host(&port))
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/dir/x.cgi/more?q=1", &[]));
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(env_of(&r, "SCRIPT_NAME").as_deref(), Some("/dir/x.cgi"));
    assert_eq!(env_of(&r, "PATH_INFO").as_deref(), Some("/more"));
    // Its own extension still goes there; an unmapped one does not.
    let r = fetch(&s, &get("/y.py", &[]));
    assert_eq!(env_of(&r, "SCRIPT_NAME").as_deref(), Some("/y.py"));
    let r = fetch(&s, &get("/z.pl", &[]));
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(
        logged(&s, "scgi.map-extensions: scgi.server has no \".nothere\""),
        "{}",
        s.stderr_tail()
    );
}

#[test]
fn scgi_over_unix_socket_with_bodies() {
    let d = Docroot::new();
    let sock = d.base.join("scgi.socket");
    let (_b, _) = scgi_backend(&["unix", sock.to_str().unwrap()]);
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/app", &unix_host(&sock)));

    // A large body with Content-Length.
    let body = pseudo_random(300_000, 7);
    let r = fetch(
        &s,
        &with_body(
            "POST /app/upload HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nConnection: close",
            &body,
        ),
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(env_of(&r, "BODY-LEN").as_deref(), Some("300000"));
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));
    assert_eq!(
        env_of(&r, "CONTENT_TYPE").as_deref(),
        Some("application/octet-stream")
    );

    // A chunked body arrives decoded, with its real length.
    let r = fetch(
        &s,
        b"POST /app/c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    );
    assert_eq!(
        env_of(&r, "CONTENT_LENGTH").as_deref(),
        Some("11"),
        "{}",
        body_text(&r)
    );
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(b"hello world")));

    // A large streamed answer arrives whole, through a slow reader.
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c.write_all(b"GET /app/big?3000000 HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    c.read_to_end(&mut all).unwrap();
    let at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(all.len() - at, 3_000_000, "HTTP/1.0: close-delimited body");
    let pattern: Vec<u8> = (0..=255u8).collect();
    assert!(all[at..].chunks(256).all(|c| c == &pattern[..c.len()]));

    // Keep-alive: two requests on one connection.
    let mut c = s.connect();
    for _ in 0..2 {
        c.send(b"GET /app/ka HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(r.status, 200, "{}", r.describe());
    }
}

#[test]
fn fastcgi_flup_answers_stream_and_statuses() {
    let d = Docroot::new();
    let sock = d.base.join("fcgi.socket");
    let _b = flup_backend(&sock);
    let conf = conf_for(
        &d,
        &format!(
            "fastcgi.server = ( \"/wsgi\" => ( \"flup\" => ( {} ) ) )\n",
            unix_host(&sock)
        ),
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/wsgi/hello?q=1", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(env_of(&r, "PATH_INFO").as_deref(), Some("/hello"));
    assert_eq!(env_of(&r, "QUERY_STRING").as_deref(), Some("q=1"));
    assert_eq!(r.framing, "length", "the app gave Content-Length");

    let r = fetch(&s, &get("/wsgi/stream", &[]));
    let want: String = (0..1000).map(|i| format!("line {i}\n")).collect();
    assert_eq!((r.status, body_text(&r)), (200, want));

    let r = fetch(&s, &get("/wsgi/missing", &[]));
    assert_eq!(r.status, 404, "the backend's status passes through");

    let body = pseudo_random(200_000, 3);
    let r = fetch(
        &s,
        &with_body(
            "PUT /wsgi/put HTTP/1.1\r\nHost: t\r\nConnection: close",
            &body,
        ),
    );
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));
}

#[test]
fn overload_waits_in_the_queue_instead_of_failing() {
    let d = Docroot::new();
    let sock = d.base.join("q.socket");
    let _b = flup_backend(&sock);
    // Two backend connections at most: 40 concurrent slow-ish requests must all succeed.
    let host = format!("{}, \"max-connections\" => 2", unix_host(&sock));
    let s = start_conf(&d, &one_route(&d, "fastcgi.server", "/q", &host));
    let port = s.port;
    let threads: Vec<_> = (0..40)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                c.write_all(b"GET /q/slow?0.05 HTTP/1.0\r\n\r\n").unwrap();
                let mut all = Vec::new();
                let _ = c.read_to_end(&mut all);
                String::from_utf8_lossy(&all[..all.len().min(12)]).into_owned()
            })
        })
        .collect();
    let statuses: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let ok = statuses
        .iter()
        .filter(|s| s.as_str() == "HTTP/1.1 200")
        .count();
    assert_eq!(ok, 40, "{statuses:?}\n{}", s.stderr_tail());
}

#[test]
fn a_client_that_hangs_up_leaves_the_queue() {
    let d = Docroot::new();
    let log = d.base.join("app.log");
    let (_b, port) = scgi_backend_logging(&["tcp"], Some(&log));
    // One backend connection at a time: the second request waits in glint's queue.
    let host = format!("{}, \"max-connections\" => 1", tcp_host(&port));
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/q", &host));
    let mut busy = s.connect();
    busy.send(b"GET /q/slow?1 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    // Let the slow request reach the backend before the next one queues.
    wait_for_log(&log, "the slow request never reached the backend", |l| {
        l.contains("/slow")
    });
    {
        let mut gone = s.connect();
        gone.send(b"GET /q/abandoned HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        // Dropped here: the client hangs up while its request waits.
    }
    let r = busy.read_response(false).unwrap();
    assert_eq!(r.status, 200, "{}", r.describe());
    let r = fetch(&s, &get("/q/after", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(seen.contains("/after"), "{seen}");
    assert!(
        !seen.contains("/abandoned"),
        "a request whose client left still went to the backend:\n{seen}"
    );
}

/// Waits (bounded) until `path` is answered 200 with `BACKEND=want`.
fn wait_for_backend(s: &Server, path: &str, want: &str) {
    retry(TIMEOUT, Duration::from_millis(50), || {
        let r = fetch(s, &get(path, &[]));
        if r.status == 200 && env_of(&r, "BACKEND").as_deref() == Some(want) {
            return Ok(());
        }
        Err(format!(
            "{path} still not served by {want}: {}\n{}",
            r.describe(),
            s.stderr_tail()
        ))
    })
}

#[test]
fn sigusr1_moves_routes_to_new_backends_and_finishes_old_requests() {
    let d = Docroot::new();
    let (_a, port_a) = scgi_backend(&["tcp"]);
    let (_b, port_b) = scgi_backend(&["tcp"]);
    let conf = |port: &str, extra: &str| {
        conf_for(
            &d,
            &format!(
                "scgi.server = ( \"/app\" => ( ( {} ) ){extra} )\n",
                tcp_host(port)
            ),
        )
    };
    let s = start_conf(&d, &conf(&port_a, ""));
    wait_for_backend(&s, "/app/x", &port_a);

    // A slow request under way on the old backend when the configuration changes.
    let mut slow = s.connect();
    slow.send(b"GET /app/slow?1 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let extra = format!(",\n  \"/added\" => ( ( {} ) )", tcp_host(&port_a));
    std::fs::write(d.base.join("glint.conf"), conf(&port_b, &extra)).unwrap();
    s.signal(SIGUSR1);
    wait_for_backend(&s, "/app/x", &port_b);
    wait_for_backend(&s, "/added/y", &port_a);
    let r = slow.read_response(false).unwrap();
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(env_of(&r, "BACKEND"), Some(port_a.clone()));

    // A configuration whose scgi.server is wrong is refused as a whole.
    std::fs::write(
        d.base.join("glint.conf"),
        conf(
            &port_a,
            ",\n  \"/bad\" => ( ( \"check-local\" => \"disable\" ) )",
        ),
    )
    .unwrap();
    refused_reload(&s);
    let r = fetch(&s, &get("/app/x", &[]));
    assert_eq!(
        env_of(&r, "BACKEND"),
        Some(port_b.clone()),
        "{}",
        r.describe()
    );
    assert!(
        s.stderr_tail()
            .contains("keeping the running configuration"),
        "{}",
        s.stderr_tail()
    );
}

#[test]
fn sigusr1_restarts_a_changed_spawned_backend() {
    let php = php_cgi();
    let d = Docroot::new();
    d.file("v.php", b"<?php echo getenv('GEN'), \"\\n\";");
    let sock = d.base.join("php.socket");
    let conf = |bin: &str, generation: &str| {
        conf_for(
            &d,
            &format!(
                "fastcgi.server = ( \".php\" => (( \"bin-path\" => \"{bin}\", \"socket\" => \"{sock}\",\n\
                   \"bin-environment\" => ( \"PHP_FCGI_CHILDREN\" => \"1\", \"GEN\" => \"{generation}\" ) )))\n",
                sock = sock.display()
            ),
        )
    };
    let s = start_conf(&d, &conf(php, "one"));
    let r = fetch(&s, &get("/v.php", &[]));
    assert_eq!(
        body_text(&r),
        "one\n",
        "{}\n{}",
        r.describe(),
        s.stderr_tail()
    );
    let before = children_of(s.pid());
    assert_eq!(before.len(), 1, "one php-cgi: {before:?}");

    std::fs::write(d.base.join("glint.conf"), conf(php, "two")).unwrap();
    s.signal(SIGUSR1);
    wait_for_replacement(&s, &before[0], "/v.php", |r| body_text(r) == "two\n");
    // A backend that cannot start: the running configuration stays.
    std::fs::write(
        d.base.join("glint.conf"),
        conf("/nonexistent/php-cgi", "three"),
    )
    .unwrap();
    refused_reload(&s);
    let r = fetch(&s, &get("/v.php", &[]));
    assert_eq!(
        body_text(&r),
        "two\n",
        "{}\n{}",
        r.describe(),
        s.stderr_tail()
    );
}

#[test]
fn failures_become_502_503_504() {
    let d = Docroot::new();
    let (_b, port) = scgi_backend(&["tcp"]);
    let missing = d.base.join("nobody.socket");
    let conf = conf_for(
        &d,
        &format!(
            "scgi.server = (\n\
               \"/down\" => ( ( {} ) ),\n\
               \"/up\" => ( ( {}, \"read-timeout\" => 1 ) )\n\
             )\n",
            unix_host(&missing),
            tcp_host(&port)
        ),
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/down/x", &[]));
    assert_eq!(r.status, 503, "no backend listening: {}", r.describe());

    let r = fetch(&s, &get("/up/slow?4", &[]));
    assert_eq!(r.status, 504, "read time-out: {}", r.describe());

    // The backend dies after the head and part of the body: the client gets
    // fewer bytes than announced and a closed connection, so it can tell.
    let mut c = s.connect();
    c.send(b"GET /up/die HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let all = c.read_to_close(TIMEOUT).unwrap_or_default();
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("Content-Length: 100\r\n"), "{text}");
    assert!(
        text.ends_with("\r\n\r\npartial"),
        "a cut answer must stay short: {text:?}"
    );

    // The server is still fine.
    let r = fetch(&s, &get("/up/ok", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        s.stderr_tail().contains("nobody.socket"),
        "the log names the backend"
    );
}

#[test]
fn balance_round_robin_and_sticky() {
    let (_a, pa) = scgi_backend(&["tcp"]);
    let (_b, pb) = scgi_backend(&["tcp"]);
    let d = Docroot::new();
    let start = |mode: &str| {
        let conf = conf_for(
            &d,
            &format!(
                "scgi.balance = \"{mode}\"\n\
                 scgi.server = ( \"/b\" => (\n\
                   \"a\" => ( {} ),\n\
                   \"b\" => ( {} ) ) )\n",
                tcp_host(&pa),
                tcp_host(&pb)
            ),
        );
        start_conf(&d, &conf)
    };
    // Which backend answered a request for `path` sent from the loopback address `from`.
    let backend = |s: &Server, from: &str, path: &str| -> String {
        use nix::sys::socket::{
            bind, connect, socket, AddressFamily, SockFlag, SockType, SockaddrStorage,
        };
        use std::os::fd::AsRawFd;
        let local: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
        let server = std::net::SocketAddr::from(([127, 0, 0, 1], s.port));
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .unwrap();
        bind(fd.as_raw_fd(), &SockaddrStorage::from(local)).unwrap();
        connect(fd.as_raw_fd(), &SockaddrStorage::from(server)).unwrap();
        let mut c = TcpStream::from(fd);
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        c.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
            .unwrap();
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        let text = String::from_utf8_lossy(&all).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("BACKEND=").map(str::to_string))
            .unwrap_or_else(|| panic!("no BACKEND line in {text:?}"))
    };
    use std::collections::{HashMap, HashSet};

    // round-robin: the same request alternates between the two.
    let s = start("round-robin");
    let seen: HashSet<String> = (0..6)
        .map(|_| backend(&s, "127.0.0.1", "/b/same"))
        .collect();
    assert_eq!(seen.len(), 2, "round-robin: backends seen {seen:?}");
    drop(s);

    // hash: each path keeps its backend, and the paths spread over both.
    let s = start("hash");
    let mut by_path: HashMap<String, HashSet<String>> = HashMap::new();
    for _ in 0..3 {
        for i in 0..8 {
            let path = format!("/b/p{i}");
            by_path
                .entry(path.clone())
                .or_default()
                .insert(backend(&s, "127.0.0.1", &path));
        }
    }
    assert!(
        by_path.values().all(|b| b.len() == 1),
        "hash: a path moved: {by_path:?}"
    );
    let used: HashSet<&String> = by_path.values().flatten().collect();
    assert_eq!(
        used.len(),
        2,
        "hash: every path on one backend: {by_path:?}"
    );
    drop(s);

    // sticky: each client address keeps its backend, and the addresses spread over both.
    let s = start("sticky");
    let mut by_ip: HashMap<String, HashSet<String>> = HashMap::new();
    for _ in 0..3 {
        for i in 1..9 {
            let ip = format!("127.0.0.{i}");
            // Different paths from one address: only the address decides.
            let path = format!("/b/q{}", by_ip.len());
            by_ip
                .entry(ip.clone())
                .or_default()
                .insert(backend(&s, &ip, &path));
        }
    }
    assert!(
        by_ip.values().all(|b| b.len() == 1),
        "sticky: an address moved: {by_ip:?}"
    );
    let used: HashSet<&String> = by_ip.values().flatten().collect();
    assert_eq!(
        used.len(),
        2,
        "sticky: every address on one backend: {by_ip:?}"
    );
}

#[test]
fn x_sendfile_serves_files_the_backend_names() {
    let (_b, port) = scgi_backend(&["tcp"]);
    let d = Docroot::new();
    let files = d.base.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let content = pseudo_random(100_000, 9);
    std::fs::write(files.join("report.bin"), &content).unwrap();
    let host = format!(
        "{}, \"x-sendfile\" => \"enable\", \"x-sendfile-docroot\" => ( \"{}\" )",
        tcp_host(&port),
        files.display()
    );
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/x", &host));
    let r = fetch(
        &s,
        &get(&format!("/x/xsend?{}/report.bin", files.display()), &[]),
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.header("x-sendfile"), None, "the header is not passed on");
    assert!(r.body == content, "the file, not the backend's body");
    let secret = d.base.join("secret.txt");
    let r = fetch(&s, &get(&format!("/x/xsend?{}", secret.display()), &[]));
    assert_eq!(
        r.status,
        403,
        "outside x-sendfile-docroot: {}",
        r.describe()
    );
    let r = fetch(
        &s,
        &get(&format!("/x/xsend?{}/../secret.txt", files.display()), &[]),
    );
    assert_eq!(
        r.status,
        403,
        "no way up: {}\n{}",
        r.describe(),
        s.stderr_tail()
    );

    // A refused file whose backend goes on answering after the 403 went
    // out: the rest of that answer must not reach the client's next
    // request (which takes the refused one's place in glint's tables), nor
    // follow the 403 page.
    let mut c = s.connect();
    c.send(
        format!(
            "GET /x/xsend-late?{} HTTP/1.1\r\nHost: t\r\n\r\n",
            secret.display()
        )
        .as_bytes(),
    )
    .unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!(r.status, 403, "{}", r.describe());
    c.send(b"GET /x/slow?0.6 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let rest = c.read_to_close(TIMEOUT).unwrap_or_default();
    let text = String::from_utf8_lossy(&rest);
    assert!(text.starts_with("HTTP/1.1 200 "), "after the 403: {text:?}");
    assert!(!text.contains("late body"), "{text:?}");
    drop(c);
    let r = fetch(&s, &get("/x/xsend-late?/nonexistent-dir/x", &[]));
    assert_eq!(r.status, 403, "{}", r.describe());
    let r = fetch(&s, &get("/x/slow?0.6", &[]));
    assert_eq!(
        r.status,
        200,
        "a new connection in the old one's place: {}",
        r.describe()
    );
}

#[test]
fn php_cgi_spawned_by_glint_and_respawned() {
    let d = Docroot::new();
    d.file(
        "hello.php",
        b"<?php header('X-Test: php'); echo 'Hello from PHP ', $_SERVER['SCRIPT_NAME'], ' ', $_GET['x'] ?? '', \"\\n\";",
    );
    let sock = d.base.join("php.socket");
    let conf = conf_for(
        &d,
        &format!(
            "fastcgi.server = ( \".php\" => (( \"bin-path\" => \"{php}\", \"socket\" => \"{sock}\", \"max-procs\" => 1,\n\
               \"bin-environment\" => ( \"PHP_FCGI_CHILDREN\" => \"2\", \"PHP_FCGI_MAX_REQUESTS\" => \"10000\" ),\n\
               \"bin-copy-environment\" => ( \"PATH\" ), \"broken-scriptfilename\" => \"enable\",\n\
               \"listen-backlog\" => 77 )))\n",
            php = php_cgi(),
            sock = sock.display()
        ),
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/hello.php?x=42", &[]));
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(body_text(&r), "Hello from PHP /hello.php 42\n");
    // listen-backlog: the queue of the socket glint made for php-cgi (for a
    // listening socket, ss shows it as Send-Q; under the name it was bound
    // to, beside its path, before glint renamed it there).
    let listing = Command::new("ss")
        .args(["-xl"])
        .output()
        .expect("ss (apt-get install iproute2)");
    let listing = String::from_utf8_lossy(&listing.stdout);
    let sock0 = format!("{}-0", sock.display());
    let line = listing
        .lines()
        .find(|l| {
            l.split_whitespace()
                .any(|w| w.strip_suffix(".glint-new").unwrap_or(w) == sock0)
        })
        .unwrap_or_else(|| panic!("{sock0} not listening:\n{listing}"));
    assert_eq!(
        line.split_whitespace().nth(3),
        Some("77"),
        "backlog of {sock0}: {line}"
    );
    assert_eq!(r.header("x-test"), Some("php"));
    let r = fetch(&s, &get("/nothere.php", &[]));
    assert_eq!(r.status, 404, "check-local: {}", r.describe());

    // Kill the php-cgi process: glint starts it again.
    let pids = children_of(s.pid());
    assert!(!pids.is_empty(), "php-cgi runs as glint's child");
    for p in &pids {
        let _ = Command::new("kill").args(["-9", p]).status();
    }
    retry(
        Duration::from_secs(15),
        Duration::from_millis(200),
        || match exchange(&s, &get("/hello.php", &[])) {
            Ok((r, _)) if r.status == 200 => Ok(()),
            r => Err(format!(
                "php-cgi was not restarted: {:?}\n{}",
                r.map(|x| x.0.describe()),
                s.stderr_tail()
            )),
        },
    );
    assert!(Path::new(&sock0).exists(), "socket {sock0}");
}

#[test]
fn answers_the_backend_chunk_encoded() {
    let (_b, port) = scgi_backend(&["tcp"]);
    let d = Docroot::new();
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/c", &tcp_host(&port)));
    let mut c = s.connect();
    // Decoded and framed anew; a HEAD answer without the chunks is whole too,
    // so the connection stays open for the next request.
    c.send(b"GET /c/chunked HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!((r.status, body_text(&r)), (200, "hello world".into()));
    c.send(b"HEAD /c/chunked HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = c.read_response(true).unwrap();
    assert_eq!(r.status, 200, "{}", r.describe());
    c.send(b"GET /c/chunked HTTP/1.0\r\n\r\n").unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!(body_text(&r), "hello world", "{}", r.describe());

    // Cut before the last chunk: the client sees the cut (no last chunk, closed).
    let mut c = s.connect();
    c.send(b"GET /c/chunked-cut HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let all = c.read_to_close(TIMEOUT).unwrap_or_default();
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("\r\n\r\n5\r\nhello\r\n"), "{text:?}");
    assert!(!text.ends_with("0\r\n\r\n"), "{text:?}");
    assert!(
        logged(&s, "inside its chunked answer"),
        "{}",
        s.stderr_tail()
    );
}

/// A backend that forks (uWSGI's master and workers, Quixote's SCGI server
/// and its children) in its own process group, killed whole on drop.
struct Group {
    child: Child,
}

impl Group {
    fn spawn(cmd: &mut Command, what: &str) -> Group {
        std::os::unix::process::CommandExt::process_group(cmd, 0);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        Group { child }
    }

    /// Waits until `file` has a line containing `needle` and returns it;
    /// fails with the file's text if the process exits or time runs out.
    fn wait_for_line(&mut self, file: &Path, needle: &str, what: &str) -> String {
        // The backend's only readiness signal is its log; poll it briefly.
        retry(TIMEOUT, Duration::from_millis(20), || {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.contains(needle)) {
                return Ok(line.to_string());
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("{what} exited ({st}) before {needle:?}:\n{text}");
            }
            Err(format!("{what}: no {needle:?} within {TIMEOUT:?}:\n{text}"))
        })
    }

    /// Waits until something listens on 127.0.0.1:`port`, without connecting
    /// (an empty connection costs an SCGI server a child).
    fn wait_listening(&mut self, port: u16, log: &Path, what: &str) {
        let want = format!("0100007F:{port:04X}");
        retry(TIMEOUT, Duration::from_millis(20), || {
            let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
            let listening = tcp.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[1] == want && f[3] == "0A"
            });
            if listening {
                return Ok(());
            }
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("{what} exited ({st}):\n{text}");
            }
            Err(format!("{what} did not listen on port {port}:\n{text}"))
        })
    }
}

impl Drop for Group {
    /// SIGTERM to the leader first, so uWSGI's master (--die-on-term) stops
    /// and reaps its workers; then SIGKILL to whatever is left of the group.
    fn drop(&mut self) {
        use nix::sys::signal::{kill, killpg, Signal};
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = killpg(pid, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Whether glint logged `needle`: its stderr is read by a thread, so a log
/// line may land just after the response it explains.
/// Sends SIGUSR1 and waits (bounded) until glint says it refused the new
/// configuration: what is asserted after it then shows that the running
/// configuration stayed, not that the reload had not happened yet.
fn refused_reload(s: &Server) {
    const REFUSED: &str = "keeping the running configuration";
    let before = s.log().matches(REFUSED).count();
    s.signal(SIGUSR1);
    assert!(
        wait_for(TIMEOUT, || s.log().matches(REFUSED).count() > before),
        "the reload was not refused\n{}",
        s.stderr_tail()
    );
}

fn logged(s: &Server, needle: &str) -> bool {
    wait_for(TIMEOUT, || s.stderr_tail().contains(needle))
}

/// Starts uWSGI (Debian's uwsgi-core and uwsgi-plugin-python3) serving
/// wsgi_app.py on `socket` (`127.0.0.1:0` or a unix path) with the uwsgi
/// protocol; returns it with its TCP port or path, once both workers run.
fn uwsgi_backend(d: &Docroot, socket: &str) -> (Group, String) {
    let log = d.base.join(format!("uwsgi-{}.log", free_port()));
    let mut cmd = Command::new("uwsgi");
    cmd.args(["--plugin", "python3", "--uwsgi-socket", socket])
        .arg("--wsgi-file")
        .arg(backends_dir().join("wsgi_app.py"))
        .args(["--master", "--processes", "2", "--die-on-term"])
        .arg("--logto")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut g = Group::spawn(
        &mut cmd,
        "uwsgi (apt-get install uwsgi-core uwsgi-plugin-python3)",
    );
    let bound = g.wait_for_line(&log, "bound to", "uwsgi");
    g.wait_for_line(&log, "spawned uWSGI worker 2", "uwsgi");
    let where_ = if socket.ends_with(":0") {
        // "uwsgi socket 0 bound to TCP address 127.0.0.1:40123 (port auto-assigned) fd 3"
        bound
            .split("127.0.0.1:")
            .nth(1)
            .map(|r| r.chars().take_while(char::is_ascii_digit).collect())
            .unwrap_or_else(|| panic!("no port in {bound:?}"))
    } else {
        socket.to_string()
    };
    (g, where_)
}

#[test]
fn uwsgi_over_tcp_sees_the_cgi_environment() {
    let d = Docroot::new();
    let (backend, port) = uwsgi_backend(&d, "127.0.0.1:0");
    let conf = conf_for(
        &d,
        &format!(
            "server.modules += ( \"mod_scgi\" )\n\
             scgi.protocol = \"uwsgi\"\n\
             scgi.server = ( \"/uw\" => ( \"uwsgi\" => ( {} ) ) )\n",
            tcp_host(&port)
        ),
    );
    let s = start_conf(&d, &conf);
    let r = fetch(
        &s,
        b"GET /uw/some/path?x=1&y=2 HTTP/1.1\r\nHost: app.test\r\nUser-Agent: t/1\r\nX-Multi: a\r\nX-Multi: b\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    let want = [
        ("REQUEST_METHOD", "GET"),
        ("SCRIPT_NAME", "/uw"),
        ("PATH_INFO", "/some/path"),
        ("QUERY_STRING", "x=1&y=2"),
        ("REQUEST_URI", "/uw/some/path?x=1&y=2"),
        ("SERVER_PROTOCOL", "HTTP/1.1"),
        ("SERVER_NAME", "app.test"),
        ("HTTP_HOST", "app.test"),
        ("HTTP_USER_AGENT", "t/1"),
        ("HTTP_X_MULTI", "a, b"),
        ("REMOTE_ADDR", "127.0.0.1"),
        ("GATEWAY_INTERFACE", "CGI/1.1"),
        ("CONTENT_LENGTH", "0"),
    ];
    for (k, v) in want {
        assert_eq!(
            env_of(&r, k).as_deref(),
            Some(v),
            "{k} in\n{}",
            body_text(&r)
        );
    }
    assert_eq!(env_of(&r, "SCGI"), None, "uwsgi is not SCGI");
    // uWSGI answers `HTTP/1.1 200 OK` with the app's Content-Length.
    assert_eq!(r.framing, "length", "{}", r.head);
    assert_eq!(r.header("content-type"), Some("text/plain"));

    // The status line's code passes through.
    let r = fetch(&s, &get("/uw/missing", &[]));
    assert_eq!(r.status, 404, "{}", r.describe());
    assert_eq!(body_text(&r), "no such thing\n");

    // A generator without a length: chunked to an HTTP/1.1 client.
    let r = fetch(&s, &get("/uw/stream", &[]));
    let want: String = (0..1000).map(|i| format!("line {i}\n")).collect();
    assert_eq!((r.status, r.framing), (200, "chunked"), "{}", r.head);
    assert!(body_text(&r) == want, "{}", r.describe());

    // HEAD gets the head alone.
    let r = fetch(&s, &head("/uw/env", &[]));
    assert_eq!((r.status, r.body.len()), (200, 0), "{}", r.describe());

    // The backend goes away: 503 while it is down, and the log names it.
    drop(backend);
    let r = fetch(&s, &get("/uw/after", &[]));
    assert!(
        r.status == 502 || r.status == 503,
        "backend down: {}",
        r.describe()
    );
    assert!(
        logged(&s, &format!("127.0.0.1:{port}")),
        "the log names the backend:\n{}",
        s.stderr_tail()
    );
}

#[test]
fn uwsgi_over_unix_socket_with_bodies() {
    let d = Docroot::new();
    let sock = d.base.join("uwsgi.socket");
    let (_b, _) = uwsgi_backend(&d, sock.to_str().unwrap());
    let (_scgi, scgi_port) = scgi_backend(&["tcp"]);
    // One backend list per protocol; scgi.protocol set for /uw alone, as a
    // conditional may.
    let conf = conf_for(
        &d,
        &format!(
            "url.rewrite-once = ( \"^/(uw|sc)/amp/(.*)$\" => \"/$1/amp/$2$2$2$2$2$2$2$2$2$2\" )\n\
             scgi.server = (\n\
               \"/uw\" => ( \"uw\" => ( {} ) ),\n\
               \"/sc\" => ( \"sc\" => ( {} ) )\n\
             )\n\
             $HTTP[\"url\"] =^ \"/uw/\" {{\n  scgi.protocol = \"uwsgi\"\n}}\n",
            unix_host(&sock),
            tcp_host(&scgi_port)
        ),
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/sc/plain", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(
        env_of(&r, "SCGI").as_deref(),
        Some("1"),
        "SCGI outside /uw/"
    );

    // A 300 KB body with Content-Length.
    let body = pseudo_random(300_000, 11);
    let r = fetch(
        &s,
        &with_body(
            "POST /uw/upload HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nConnection: close",
            &body,
        ),
    );
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(env_of(&r, "SCGI"), None, "uwsgi under /uw/");
    assert_eq!(env_of(&r, "BODY-LEN").as_deref(), Some("300000"));
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));
    assert_eq!(
        env_of(&r, "CONTENT_TYPE").as_deref(),
        Some("application/octet-stream")
    );

    // A chunked body arrives decoded, with its real length.
    let r = fetch(
        &s,
        b"POST /uw/c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(env_of(&r, "CONTENT_LENGTH").as_deref(), Some("11"));
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(b"hello world")));

    // A 3 MB streamed answer arrives whole, close-delimited for HTTP/1.0.
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c.write_all(b"GET /uw/big?3000000 HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    c.read_to_end(&mut all).unwrap();
    let at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(all.starts_with(b"HTTP/1.1 200"), "{}", show(&all[..at]));
    assert_eq!(all.len() - at, 3_000_000);
    let pattern: Vec<u8> = (0..=255u8).collect();
    assert!(all[at..].chunks(256).all(|c| c == &pattern[..c.len()]));

    // Keep-alive: two requests on one connection.
    let mut c = s.connect();
    for _ in 0..2 {
        c.send(b"GET /uw/ka HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(r.status, 200, "{}", r.describe());
    }

    // Variables over uwsgi's 16-bit size (a rewrite makes a 7 KB path ten
    // times longer; the path appears in several variables): refused with
    // 431 and a log line, the same request is fine over SCGI, and glint
    // serves on.
    let long = format!("/amp/{}", "p".repeat(7_000));
    let r = fetch(&s, &get(&format!("/uw{long}"), &[]));
    assert_eq!(r.status, 431, "{}", r.describe());
    assert!(logged(&s, "uwsgi variables"), "{}", s.stderr_tail());
    let r = fetch(&s, &get(&format!("/sc{long}"), &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(env_of(&r, "PATH_INFO").is_some_and(|p| p.len() > 70_000));
    let r = fetch(&s, &get("/uw/after", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
}

/// Seed 000's settings from conf/examples/seed000-scgi.conf, with the
/// backends' real port and socket and a temporary docroot.
fn seed000_conf(d: &Docroot, port: u16, sock: &Path) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/examples/seed000-scgi.conf");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = text.clone();
    for (from, to) in [
        (
            "server.document-root = var.CWD + \"/www\"".to_string(),
            format!("server.document-root = \"{}\"", d.root.display()),
        ),
        ("server.port = 8080".to_string(), String::new()),
        (
            "\"port\" => 3000".to_string(),
            format!("\"port\" => {port}"),
        ),
        ("/tmp/scgi.socket".to_string(), sock.display().to_string()),
    ] {
        assert!(
            out.contains(&from),
            "{} no longer has {from:?}",
            path.display()
        );
        out = out.replace(&from, &to);
    }
    out
}

#[test]
fn quixote_demo_over_scgi() {
    let d = Docroot::new();
    // The seed's stack: quixote's own SCGI server with the demo publisher.
    let port = free_port();
    let qlog = d.base.join("quixote.log");
    let logf = std::fs::File::create(&qlog).unwrap();
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "quixote.server.scgi_server", "--host", "127.0.0.1"])
        .args(["--port", &port.to_string(), "--script-name", "/scgi-test"])
        // No --max-children: quixote 3.8 passes it on as a string, and the
        // server's first request then fails comparing it; 5 is the default.
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf);
    let mut tcp = Group::spawn(
        &mut cmd,
        "python3 -m quixote.server.scgi_server (pip install quixote)",
    );
    tcp.wait_listening(port, &qlog, "quixote's SCGI server");
    // The same demo on a unix socket, as the seed's socket-file runs.
    let sock = d.base.join("scgi.socket");
    let ulog = d.base.join("quixote-unix.log");
    let logf = std::fs::File::create(&ulog).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(backends_dir().join("quixote_unix.py"))
        .arg(&sock)
        .arg("/scgi-unix")
        .stdin(Stdio::null())
        .stdout(logf.try_clone().unwrap())
        .stderr(logf);
    let mut unix = Group::spawn(&mut cmd, "quixote_unix.py");
    unix.wait_for_line(&ulog, "ready", "quixote_unix.py");

    let s = start_conf(&d, &seed000_conf(&d, port, &sock));
    for prefix in ["/scgi-test", "/scgi-unix"] {
        // The front page, as the seed's `ab ... /scgi-test/` fetched it.
        let r = fetch(&s, &get(&format!("{prefix}/"), &[]));
        assert_eq!(
            r.status,
            200,
            "{prefix}: {}\n{}",
            r.describe(),
            s.stderr_tail()
        );
        let page = body_text(&r);
        assert!(
            page.contains("<title>Quixote Demo</title>") && page.contains("<h1>Hello, world!</h1>"),
            "{prefix}: {page}"
        );
        assert_eq!(r.framing, "length", "{prefix}: {}", r.head);
        assert_eq!(r.content_length(), Some(r.body.len() as u64));
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));

        let r = fetch(&s, &get(&format!("{prefix}/simple"), &[]));
        assert_eq!(body_text(&r), "<html><body>Hello!</body></html>");

        // Quixote's own 404 passes through with its page.
        let r = fetch(&s, &get(&format!("{prefix}/no-such-page"), &[]));
        assert_eq!(r.status, 404, "{prefix}: {}", r.describe());
        assert!(body_text(&r).contains("Page not found"), "{}", r.describe());

        // For HTTP/1.1 Quixote chunk-encodes a stream itself: glint decodes
        // it and frames it anew, so the client sees the text once.
        let want: String =
            std::iter::once("The server does not know how long this will be.\n".to_string())
                .chain((0..30).map(|i| format!("line {i}\n")))
                .collect();
        let r = fetch(&s, &get(&format!("{prefix}/extras/chunked"), &[]));
        assert_eq!((r.status, r.framing), (200, "chunked"), "{}", r.head);
        assert_eq!(body_text(&r), want, "{prefix}: HTTP/1.1");
        let (r, _) = exchange(
            &s,
            format!("GET {prefix}/extras/chunked HTTP/1.0\r\n\r\n").as_bytes(),
        )
        .unwrap();
        assert_eq!(body_text(&r), want, "{prefix}: HTTP/1.0");
        let r = fetch(&s, &head(&format!("{prefix}/extras/chunked"), &[]));
        assert_eq!((r.status, r.body.len()), (200, 0), "{}", r.describe());

        // The demo's form, posted as a browser would (multipart, with a file).
        let upload = pseudo_random(20_000, 5);
        let boundary = "----glint-test-7d1e";
        let mut body = Vec::new();
        for (name, value) in [
            ("name", "Sancho Panza"),
            ("password", "rocinante"),
            ("confirm", "yes"),
            ("color", "blue"),
            ("size", "Large (14\")"),
            ("toppings", "mushrooms: $0.90"),
            ("go", "Go!"),
        ] {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"spec.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(&upload);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let r = fetch(
            &s,
            &with_body(
                &format!("POST {prefix}/extras/form HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nConnection: close"),
                &body,
            ),
        );
        let page = body_text(&r);
        assert_eq!(r.status, 200, "{prefix}: {}", r.describe());
        assert!(
            page.contains("<h2>Form data:</h2>"),
            "{prefix}: the form was not accepted:\n{page}"
        );
        assert!(page.contains("Sancho Panza"), "{page}");
        assert!(
            page.contains("(20000 bytes"),
            "the upload arrived whole:\n{page}"
        );
    }
    assert!(
        !s.stderr_tail().contains("(gateway) error"),
        "no backend failed:\n{}",
        s.stderr_tail()
    );
}

#[test]
fn fastcgi_authorizer_guards_files_and_responders() {
    let d = Docroot::new();
    d.file("private/page.txt", b"private page\n");
    d.file("public.txt", b"public page\n");
    d.file("vault/doc.txt", b"the docroot's copy\n");
    let alt = d.base.join("alt");
    std::fs::create_dir_all(alt.join("vault")).unwrap();
    std::fs::write(alt.join("vault/doc.txt"), b"the authorizer's docroot\n").unwrap();
    let auth_sock = d.base.join("auth.socket");
    let _auth = flup_script("fcgi_authorizer.py", &auth_sock);
    let (_app, port) = scgi_backend(&["tcp"]);
    let conf = conf_for(
        &d,
        &format!(
            "fastcgi.server = (\n\
               \"/private\" => ( \"auth\" => ( \"socket\" => \"{sock}\", \"mode\" => \"authorizer\", \"check-local\" => \"disable\" ) ),\n\
               \"/vault\" => ( \"auth\" => ( \"socket\" => \"{sock}\", \"mode\" => \"authorizer\", \"docroot\" => \"{alt}\" ) ) )\n\
             scgi.server = ( \"/private/app\" => ( ( {app} ) ) )\n",
            sock = auth_sock.display(),
            alt = alt.display(),
            app = tcp_host(&port)
        ),
    );
    let s = start_conf(&d, &conf);
    let good = ["X-Token: good"];

    // Allowed: the static file is served; nothing of the authorizer's 200 shows.
    let r = fetch(&s, &get("/private/page.txt", &good));
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(body_text(&r), "private page\n");
    assert_eq!(r.header("x-leak"), None, "only Variable- headers count");

    // Refused: the authorizer's status, headers and body go to the client.
    let r = fetch(&s, &get("/private/page.txt", &["X-Token: bad"]));
    assert_eq!(r.status, 401, "{}", r.describe());
    assert_eq!(
        r.header("www-authenticate"),
        Some("Token realm=\"glint-test\"")
    );
    let text = body_text(&r);
    assert!(text.starts_with("denied by the authorizer\n"), "{text}");
    assert!(!text.contains("private page"), "{text}");
    // What the authorizer saw: the head of the request, no body, no script split.
    let saw = |k: &str| env_of(&r, k);
    assert_eq!(saw("REQUEST_METHOD").as_deref(), Some("GET"));
    assert_eq!(saw("REQUEST_URI").as_deref(), Some("/private/page.txt"));
    assert_eq!(saw("CONTENT_LENGTH").as_deref(), Some("(none)"), "{text}");
    assert_eq!(saw("SCRIPT_NAME").as_deref(), Some(""), "{text}");
    let file = format!("{}/private/page.txt", d.root.display());
    assert_eq!(saw("SCRIPT_FILENAME"), Some(file));

    let r = fetch(&s, &get("/private/forbidden.txt", &good));
    assert_eq!(r.status, 403, "{}", r.describe());
    assert!(body_text(&r).starts_with("forbidden by the authorizer\n"));

    // Not guarded: no authorizer involved.
    let r = fetch(&s, &get("/public.txt", &[]));
    assert_eq!((r.status, body_text(&r).as_str()), (200, "public page\n"));

    // Allowed, then a responder answers, with the authorizer's variables.
    let r = fetch(&s, &get("/private/app/who?x=1", &good));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.header("x-backend"), Some("scgi"));
    for (k, v) in [
        ("AUTH_USER", "alice"),
        ("AUTH_METHOD", "token"),
        ("SCRIPT_NAME", "/private/app"),
        ("PATH_INFO", "/who"),
        ("REQUEST_URI", "/private/app/who?x=1"),
    ] {
        assert_eq!(env_of(&r, k).as_deref(), Some(v), "{k}:\n{}", body_text(&r));
    }
    assert_eq!(env_of(&r, "HTTP_X_LEAK"), None);
    let r = fetch(&s, &get("/private/app/who", &[]));
    assert_eq!(r.status, 401, "the responder is guarded too");

    // One keep-alive connection: an allowed POST's body reaches the
    // responder whole; a refused POST's body is dropped, and the
    // connection goes on.
    let mut c = s.connect();
    let body = pseudo_random(100_000, 11);
    for (token, want) in [("good", 200), ("bad", 401), ("good", 200)] {
        let head = format!("POST /private/app/upload HTTP/1.1\r\nHost: t\r\nX-Token: {token}");
        c.send(&with_body(&head, &body)).unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!(r.status, want, "{}\n{}", r.describe(), s.stderr_tail());
        if want == 200 {
            assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));
            assert_eq!(env_of(&r, "AUTH_USER").as_deref(), Some("alice"));
        }
    }
    c.send(b"GET /public.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!((r.status, body_text(&r).as_str()), (200, "public page\n"));

    // With `docroot`, the authorizer's docroot serves the allowed files.
    let r = fetch(&s, &get("/vault/doc.txt", &good));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(body_text(&r), "the authorizer's docroot\n");
    let r = fetch(&s, &get("/vault/doc.txt", &[]));
    assert_eq!(r.status, 401, "{}", r.describe());
}

#[test]
fn fastcgi_authorizer_down_answers_like_a_responder() {
    let d = Docroot::new();
    d.file("private/page.txt", b"private page\n");
    let missing = d.base.join("no-authorizer.socket");
    let host = format!(
        "\"socket\" => \"{}\", \"mode\" => \"authorizer\"",
        missing.display()
    );
    let s = start_conf(&d, &one_route(&d, "fastcgi.server", "/private", &host));
    let r = fetch(&s, &get("/private/page.txt", &["X-Token: good"]));
    assert_eq!(r.status, 503, "{}", r.describe());
    assert!(!body_text(&r).contains("private page"));
    assert!(
        logged(&s, "no-authorizer.socket"),
        "the log names the backend:\n{}",
        s.stderr_tail()
    );
}

/// A field of `/proc/PID/status` in KiB (VmRSS, VmHWM).
fn proc_kib(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// A large body made on the fly: `blocks` copies of a 1 MiB pseudo-random
/// block, each stamped with its index, so a lost, doubled or reordered
/// piece changes the MD5. Returns the block and the MD5 of the whole body
/// (computed by Python from the block written to `dir`).
fn big_body(dir: &Path, blocks: usize) -> (Vec<u8>, String) {
    let block = pseudo_random(1 << 20, 11);
    let file = dir.join("block.bin");
    std::fs::write(&file, &block).unwrap();
    let script = format!(
        "import hashlib,struct\nb=open({:?},'rb').read()\nm=hashlib.md5()\n\
         for i in range({blocks}):\n    m.update(struct.pack('<Q',i)+b[8:])\nprint(m.hexdigest())",
        file.display().to_string()
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3");
    (
        block,
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

/// Writes the blocks of [`big_body`] to `w`, one at a time.
fn write_big_body(w: &mut impl Write, block: &[u8], blocks: usize) -> std::io::Result<()> {
    let mut buf = block.to_vec();
    for i in 0..blocks {
        buf[..8].copy_from_slice(&(i as u64).to_le_bytes());
        w.write_all(&buf)?;
    }
    Ok(())
}

#[test]
fn a_large_upload_streams_through_a_queue_in_bounded_memory() {
    const BLOCKS: usize = 100; // 100 MiB
    let d = Docroot::new();
    let sock = d.base.join("up.socket");
    let log = d.base.join("app.log");
    let (_b, _) = scgi_backend_logging(&["unix", sock.to_str().unwrap()], Some(&log));
    // One backend connection: the upload starts while its request waits in
    // glint's queue, which must not read more than the window meanwhile.
    let host = format!("{}, \"max-connections\" => 1", unix_host(&sock));
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/app", &host));
    let (block, want_md5) = big_body(&d.base, BLOCKS);
    let mut busy = s.connect();
    busy.send(b"GET /app/slow?1 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    wait_for_log(&log, "the slow request never reached the backend", |l| {
        l == "start /slow"
    });

    let port = s.port;
    let started = Instant::now();
    let uploader = std::thread::spawn(move || -> Result<String, String> {
        let mut c = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        c.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = format!(
            "POST /app/upload HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            BLOCKS << 20
        );
        c.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
        write_big_body(&mut c, &block, BLOCKS).map_err(|e| format!("upload: {e}"))?;
        let mut all = Vec::new();
        c.read_to_end(&mut all).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&all).into_owned())
    });
    let r = busy.read_response(false).unwrap();
    assert_eq!(r.status, 200, "{}", r.describe());
    let answer = uploader.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let line = |k: &str| {
        answer
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
    };
    assert_eq!(
        line("BODY-LEN"),
        Some((BLOCKS << 20).to_string()),
        "{answer}"
    );
    assert_eq!(line("BODY-MD5"), Some(want_md5), "the body arrived altered");
    let hwm = proc_kib(s.pid(), "VmHWM");
    let rss = proc_kib(s.pid(), "VmRSS");
    eprintln!("100 MiB upload in {took:?}; glint VmHWM {hwm} KiB, VmRSS {rss} KiB");
    assert!(
        hwm < 30 * 1024,
        "glint's memory grew with the body: VmHWM {hwm} KiB for a {BLOCKS} MiB upload"
    );
}

#[test]
fn the_backend_gets_the_request_before_the_body_is_complete() {
    let d = Docroot::new();
    let log = d.base.join("app.log");
    let (_b, port) = scgi_backend_logging(&["tcp"], Some(&log));
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/app", &tcp_host(&port)));
    let body = pseudo_random(300_000, 5);
    let mut c = s.connect();
    c.send(
        format!(
            "POST /app/trickle HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    // Half the body: the backend already has the request and is reading it.
    c.send(&body[..150_000]).unwrap();
    wait_for_log(&log, "the backend never saw a partly sent request", |l| {
        l == "start /trickle"
    });
    // The rest slowly: 30 pieces, 10 ms apart.
    for piece in body[150_000..].chunks(5_000) {
        c.send(piece).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = c.read_response(false).unwrap();
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(env_of(&r, "BODY-LEN").as_deref(), Some("300000"));
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));

    // A backend that reads slowly (64 KiB per 20 ms): the body arrives
    // whole, and glint serves others meanwhile.
    let body = pseudo_random(2_000_000, 6);
    let req = with_body(
        "POST /app/slowread?0.02 HTTP/1.1\r\nHost: t\r\nConnection: close",
        &body,
    );
    let port = s.port;
    let slow = std::thread::spawn(move || {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        c.write_all(&req).unwrap();
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        String::from_utf8_lossy(&all).into_owned()
    });
    wait_for_log(&log, "the slow reader never started", |l| {
        l == "start /slowread"
    });
    d.file("ping.txt", b"pong");
    let t = Instant::now();
    let r = fetch(&s, &get("/ping.txt", &[]));
    assert_eq!((r.status, body_text(&r).as_str()), (200, "pong"));
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "a static file waited {:?} behind an upload",
        t.elapsed()
    );
    let answer = slow.join().unwrap();
    assert!(answer.contains("\nBODY-LEN=2000000\n"), "{answer}");
    assert!(
        answer.contains(&format!("\nBODY-MD5={}\n", md5_hex(&body))),
        "{answer}"
    );
}

#[test]
fn a_client_that_hangs_up_mid_upload_frees_the_backend() {
    let d = Docroot::new();
    let log = d.base.join("app.log");
    let (_b, port) = scgi_backend_logging(&["tcp"], Some(&log));
    // One backend connection: the next request is served only if the
    // abandoned upload gave it back.
    let host = format!("{}, \"max-connections\" => 1", tcp_host(&port));
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/q", &host));
    {
        let mut c = s.connect();
        c.send(b"POST /q/upload HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n")
            .unwrap();
        c.send(&pseudo_random(500_000, 8)).unwrap();
        wait_for_log(&log, "the upload never reached the backend", |l| {
            l == "start /upload"
        });
        // Dropped here: the client hangs up 9.5 MB short.
    }
    let seen = wait_for_log(&log, "the backend never saw the upload end", |l| {
        l.starts_with("/upload ")
    });
    let got: u64 = seen
        .lines()
        .find_map(|l| l.strip_prefix("/upload "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    assert!(got < 10_000_000, "the backend got {got} bytes\n{seen}");
    let r = fetch(&s, &get("/q/after", &[]));
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
}

#[test]
fn a_backend_that_takes_no_body_times_out_on_write() {
    let d = Docroot::new();
    let sock = d.base.join("slow.socket");
    let (_b, _) = scgi_backend(&["unix", sock.to_str().unwrap()]);
    let conf = conf_for(
        &d,
        &format!(
            "scgi.server = ( \"/app\" => ( \"sleepy\" => ( {}, \"write-timeout\" => 1 ) ) )\n",
            unix_host(&sock)
        ),
    );
    let s = start_conf(&d, &conf);
    // The backend sleeps 5 s before reading: 4 MB fill every buffer on the
    // way, and glint's write time-out answers first.
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut w = c.try_clone().unwrap();
    let t = Instant::now();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(
            b"POST /app/noread?5 HTTP/1.1\r\nHost: t\r\nContent-Length: 4000000\r\n\r\n",
        );
        // glint may close once it answered: the rest may not go through.
        let _ = w.write_all(&vec![b'x'; 4_000_000]);
    });
    let mut head = [0u8; 12];
    c.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 504", "{}", s.stderr_tail());
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "answered after {:?}: not the write time-out",
        t.elapsed()
    );
    let _ = writer.join();
    assert!(
        logged(&s, "backend sleepy") && logged(&s, "write time-out"),
        "no log line names the backend:\n{}",
        s.stderr_tail()
    );
}

#[test]
fn local_redirects_are_served_inside() {
    let (_b, port) = scgi_backend(&["tcp"]);
    let d = Docroot::new();
    d.file("static.txt", b"a static file\n");
    let host = tcp_host(&port);
    let access = d.base.join("access.log");
    let conf = conf_for(
        &d,
        &format!(
            "accesslog.filename = \"{access}\"\n\
             scgi.server = ( \"/app\" => ( ( {host} ) ),\n\
                             \"/plain\" => ( ( {host}, \"local-redir\" => \"disable\" ) ) )\n",
            access = access.display()
        ),
    );
    let s = start_conf(&d, &conf);

    // To a static file: its answer, not a 302.
    let r = fetch(&s, &get("/app/redirect?/static.txt", &[]));
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(body_text(&r), "a static file\n");
    assert_eq!(r.header("location"), None);
    let r = fetch(&s, &head("/app/redirect?/static.txt", &[]));
    assert_eq!((r.status, r.content_length()), (200, Some(14)));

    // To another gateway path: a GET for the new target, without the body
    // the first request had.
    let r = fetch(
        &s,
        b"POST /app/redirect?/app/echo?from=redir HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    for (k, v) in [
        ("REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/app/echo?from=redir"),
        ("PATH_INFO", "/echo"),
        ("QUERY_STRING", "from=redir"),
        ("CONTENT_LENGTH", "0"),
        ("BODY-LEN", "0"),
        ("HTTP_HOST", "t"),
    ] {
        assert_eq!(env_of(&r, k).as_deref(), Some(v), "{k}:\n{}", body_text(&r));
    }
    assert_eq!(env_of(&r, "CONTENT_TYPE"), None);

    // A Status with the Location, or an absolute URL: the client's redirect.
    let r = fetch(&s, &get("/app/redirect-302?/static.txt", &[]));
    assert_eq!(r.status, 302, "{}", r.describe());
    assert_eq!(r.header("location"), Some("/static.txt"));
    let r = fetch(&s, &get("/app/redirect?http://example.com/x", &[]));
    assert_eq!(r.status, 302, "{}", r.describe());
    assert_eq!(r.header("location"), Some("http://example.com/x"));
    // `"local-redir" => "disable"` passes even a bare Location on.
    let r = fetch(&s, &get("/plain/redirect?/static.txt", &[]));
    assert_eq!(r.status, 302, "{}", r.describe());
    assert_eq!(r.header("location"), Some("/static.txt"));

    // Redirected before the backend read the body: the rest of the body is
    // dropped (or, if it is still coming, the connection closes after the
    // answer); it is never taken for a next request.
    let mut c = s.connect();
    c.send(b"POST /app/early-redirect?/static.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        .unwrap();
    let chunk = [b'G'; 10_000];
    for _ in 0..100 {
        if c.send(&chunk).is_err() {
            break;
        }
    }
    let _ = c.send(b"GET /static.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c
        .read_response(false)
        .unwrap_or_else(|e| panic!("{e}\n{}", s.stderr_tail()));
    assert_eq!((r.status, body_text(&r).as_str()), (200, "a static file\n"));
    if r.has_token("connection", "close") {
        let rest = c.read_to_close(TIMEOUT).unwrap_or_default();
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    } else {
        let r = c.read_response(false).unwrap();
        assert_eq!((r.status, body_text(&r).as_str()), (200, "a static file\n"));
    }

    // The same with the body still on its way: the answer comes now; the
    // rest of the body is dropped as it comes (the bytes that look like a
    // request in it are body), and the connection then serves the next
    // request, or it closes after the answer.
    let mut c = s.connect();
    let inner = b"GET / HTTP/1.1\r\n\r\n";
    c.send(b"POST /app/early-redirect?/static.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n")
        .unwrap();
    c.send(inner).unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!((r.status, body_text(&r).as_str()), (200, "a static file\n"));
    if !r.has_token("connection", "close") {
        let rest = vec![b'G'; 1_000_000 - inner.len()];
        c.send(&rest).unwrap();
        c.send(b"GET /static.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = c.read_response(false).unwrap();
        assert_eq!((r.status, body_text(&r).as_str()), (200, "a static file\n"));
    }

    // A redirect loop ends in 500 and a log line, and the connection goes on.
    let mut c = s.connect();
    c.send(b"GET /app/loop HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!(r.status, 500, "{}", r.describe());
    c.send(b"GET /app/redirect?/static.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!((r.status, body_text(&r).as_str()), (200, "a static file\n"));
    assert!(
        logged(
            &s,
            &format!(
                "{port}): \"GET /app/loop HTTP/1.1\" ran 5 times inside glint (a redirect loop?)"
            )
        ),
        "the log names the loop and the backend:\n{}",
        s.stderr_tail()
    );
    // The access log shows the request the client sent, with the final status.
    // glint flushes its access log once a second; there is nothing to wait on.
    let want = "\"GET /app/redirect?/static.txt HTTP/1.1\" 200 14";
    wait_for_log(&access, &format!("no {want} in the access log"), |l| {
        l.contains(want)
    });
}

#[test]
fn a_failed_backend_is_retried_only_while_glint_holds_the_body() {
    let d = Docroot::new();
    let mute_log = d.base.join("mute.log");
    let ok_log = d.base.join("ok.log");
    let (_m, mute) = scgi_backend_logging(&["tcp", "--mute"], Some(&mute_log));
    let (_o, ok) = scgi_backend_logging(&["tcp"], Some(&ok_log));
    // Each route tries the mute backend first (least busy, first listed).
    let conf = conf_for(
        &d,
        &format!(
            "scgi.server = (\n\
               \"/small\" => ( \"mute-small\" => ( {mute} ), \"ok-small\" => ( {ok} ) ),\n\
               \"/big\" => ( \"mute-big\" => ( {mute} ), \"ok-big\" => ( {ok} ) )\n\
             )\n",
            mute = tcp_host(&mute),
            ok = tcp_host(&ok)
        ),
    );
    let s = start_conf(&d, &conf);
    let post = |path: &str, body: &[u8]| {
        let head = format!("POST {path} HTTP/1.1\r\nHost: t\r\nConnection: close");
        fetch(&s, &with_body(&head, body))
    };

    // 40 KB fit the window: the mute backend read them and closed, glint
    // still has them all and sends them to the other backend.
    let small = pseudo_random(40_000, 1);
    let r = post("/small/x", &small);
    assert_eq!(r.status, 200, "{}\n{}", r.describe(), s.stderr_tail());
    assert_eq!(env_of(&r, "BACKEND"), Some(ok.clone()));
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&small)));
    let muted = std::fs::read_to_string(&mute_log).unwrap_or_default();
    assert!(muted.contains("/x 40000"), "{muted}");

    // 1 MB do not: once the mute backend took them, glint no longer has
    // the start of the body, and a retry would send the other backend a
    // mangled request. 502, and the log says which backend failed.
    let big = pseudo_random(1_000_000, 2);
    let r = post("/big/y", &big);
    assert_eq!(r.status, 502, "{}", r.describe());
    assert!(
        logged(&s, "mute-big") && logged(&s, "instead of retrying"),
        "no log line names the backend that failed:\n{}",
        s.stderr_tail()
    );
    let okd = std::fs::read_to_string(&ok_log).unwrap_or_default();
    assert!(!okd.contains("/y"), "the big request was retried:\n{okd}");
}

#[test]
fn request_size_limits_answer_413_before_the_backend() {
    let d = Docroot::new();
    let log = d.base.join("app.log");
    let (_b, port) = scgi_backend_logging(&["tcp"], Some(&log));
    let conf = format!(
        "server.max-request-size = 100\n{}",
        one_route(&d, "scgi.server", "/app", &tcp_host(&port))
    );
    let s = start_conf(&d, &conf);
    // Content-Length over 100 KB: refused from the head alone.
    let r = fetch(
        &s,
        b"POST /app/too-big HTTP/1.1\r\nHost: t\r\nContent-Length: 200000\r\n\r\n",
    );
    assert_eq!(r.status, 413, "{}", r.describe());
    // Chunked over 100 KB: refused once it passes the limit.
    let mut req =
        b"POST /app/too-big-chunked HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for _ in 0..15 {
        req.extend_from_slice(format!("{:x}\r\n", 10_000).as_bytes());
        req.extend_from_slice(&[b'c'; 10_000]);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let r = fetch(&s, &req);
    assert_eq!(r.status, 413, "{}", r.describe());
    // Under the limit, both pass.
    let body = pseudo_random(90_000, 4);
    let r = fetch(
        &s,
        &with_body(
            "POST /app/fits HTTP/1.1\r\nHost: t\r\nConnection: close",
            &body,
        ),
    );
    assert_eq!(
        env_of(&r, "BODY-MD5"),
        Some(md5_hex(&body)),
        "{}",
        r.describe()
    );
    let mut req =
        b"POST /app/fits-chunked HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec();
    for part in body.chunks(7_000) {
        req.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        req.extend_from_slice(part);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let r = fetch(&s, &req);
    assert_eq!(env_of(&r, "CONTENT_LENGTH").as_deref(), Some("90000"));
    assert_eq!(
        env_of(&r, "BODY-MD5"),
        Some(md5_hex(&body)),
        "{}",
        r.describe()
    );
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !seen.contains("too-big"),
        "a refused request reached the backend:\n{seen}"
    );
}

#[test]
fn fastcgi_uploads_stream_as_stdin_records() {
    let d = Docroot::new();
    let sock = d.base.join("fcgi.socket");
    let _b = flup_backend(&sock);
    let s = start_conf(
        &d,
        &one_route(&d, "fastcgi.server", "/wsgi", &unix_host(&sock)),
    );
    for len in [65_535, 65_536 * 3 + 1, 3_000_000] {
        let body = pseudo_random(len, len as u64);
        let r = fetch(
            &s,
            &with_body(
                "PUT /wsgi/put HTTP/1.1\r\nHost: t\r\nConnection: close",
                &body,
            ),
        );
        assert_eq!(
            env_of(&r, "BODY-LEN"),
            Some(len.to_string()),
            "{}",
            r.describe()
        );
        assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));
    }
    // Keep-alive: a request pipelined right behind a streamed body is the
    // next request, not more body.
    let body = pseudo_random(500_000, 13);
    let mut req = with_body("PUT /wsgi/one HTTP/1.1\r\nHost: t", &body);
    req.extend_from_slice(b"GET /wsgi/two HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut c = s.connect();
    c.send(&req).unwrap();
    let r = c.read_response(false).unwrap();
    assert_eq!(env_of(&r, "PATH_INFO").as_deref(), Some("/one"));
    assert_eq!(env_of(&r, "BODY-MD5"), Some(md5_hex(&body)));
    let r = c.read_response(false).unwrap();
    assert_eq!(
        env_of(&r, "PATH_INFO").as_deref(),
        Some("/two"),
        "{}",
        r.describe()
    );
    assert_eq!(env_of(&r, "BODY-LEN").as_deref(), Some("0"));
}

#[test]
fn a_backend_may_answer_before_reading_the_body() {
    let d = Docroot::new();
    let (_b, port) = scgi_backend(&["tcp"]);
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/app", &tcp_host(&port)));
    d.file("after.txt", b"after");
    for len in [1_000_000usize, 30_000_000] {
        // The backend answers 403 at once and closes; glint passes the
        // answer on and drops the body as it comes (or closes after the
        // answer when too much of it is left).
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut w = c.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            let head =
                format!("POST /app/early HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n");
            w.write_all(head.as_bytes())?;
            for _ in 0..len / 100_000 {
                w.write_all(&[b'u'; 100_000])?;
            }
            w.write_all(b"GET /after.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        });
        let mut all = Vec::new();
        let _ = c.read_to_end(&mut all);
        let sent = writer.join().unwrap();
        let text = String::from_utf8_lossy(&all);
        assert!(
            text.starts_with("HTTP/1.1 403") && text.contains("\r\n\r\nearly"),
            "{len}: {text:?}\n{}",
            s.stderr_tail()
        );
        if len < 16_000_000 {
            assert!(sent.is_ok(), "{len}: {sent:?}");
            assert!(
                text.ends_with("\r\n\r\nafter"),
                "{len}: the body was not skipped on a kept connection: {text:?}"
            );
        }
    }
}

#[test]
fn expect_100_continue_gets_a_go_ahead_before_the_body() {
    let d = Docroot::new();
    let (_b, port) = scgi_backend(&["tcp"]);
    let s = start_conf(&d, &one_route(&d, "scgi.server", "/app", &tcp_host(&port)));
    let body = pseudo_random(2_000_000, 12);
    let mut chunked = Vec::new();
    for part in body.chunks(100_000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    for (framing, payload) in [
        (format!("Content-Length: {}", body.len()), &body),
        ("Transfer-Encoding: chunked".to_string(), &chunked),
    ] {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        // The client waits for the go-ahead at most 2 s (curl waits 1 s).
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        c.write_all(
            format!(
                "POST /app/up HTTP/1.1\r\nHost: t\r\n{framing}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
        let mut interim = Vec::new();
        let mut byte = [0u8; 1];
        while !interim.ends_with(b"\r\n\r\n") && interim.len() < 200 {
            match c.read(&mut byte) {
                Ok(1) => interim.push(byte[0]),
                other => panic!("{framing}: no 100 Continue: {other:?} after {interim:?}"),
            }
        }
        assert_eq!(interim, b"HTTP/1.1 100 Continue\r\n\r\n", "{framing}");
        c.write_all(payload).unwrap();
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        let text = String::from_utf8_lossy(&all);
        assert!(text.starts_with("HTTP/1.1 200"), "{framing}: {text}");
        assert!(
            text.contains(&format!("\nBODY-MD5={}\n", md5_hex(&body))),
            "{framing}: {text}"
        );
    }
}

// ---------------------------------------------------------------------------
// FastCGI keep-conn
// ---------------------------------------------------------------------------

/// A PHP script naming the php-cgi child that ran it, the FastCGI
/// connection the request came on, as the kernel names it
/// (`socket:[inode]`: fd 0 is the listening socket glint handed the
/// backend, the other socket is the connection it accepted), and the
/// length of the request body it read.
const CONN_PHP: &[u8] = br#"<?php
$socks = [];
foreach (scandir('/proc/self/fd') as $f) {
    if ($f === '.' || $f === '..' || $f === '0') continue;
    $l = @readlink("/proc/self/fd/$f");
    if ($l !== false && strncmp($l, 'socket:', 7) === 0) $socks[] = $l;
}
echo getmypid(), ' ', implode(',', $socks), ' ', strlen(file_get_contents('php://input')), "\n";
"#;

/// php-cgi spawned by glint with `children` children that each exit after
/// `max_requests` requests, serving CONN_PHP; `opts` are more host options.
fn php_keep_conf(d: &Docroot, children: u32, max_requests: u32, opts: &str) -> String {
    d.file("conn.php", CONN_PHP);
    conf_for(
        d,
        &format!(
            "fastcgi.server = ( \".php\" => (( \"bin-path\" => \"{php}\", \"socket\" => \"{sock}\",\n\
               \"bin-environment\" => ( \"PHP_FCGI_CHILDREN\" => \"{children}\", \"PHP_FCGI_MAX_REQUESTS\" => \"{max_requests}\" ),\n\
               \"bin-copy-environment\" => ( \"PATH\" ){opts} )))\n",
            php = php_cgi(),
            sock = d.base.join("php.socket").display(),
        ),
    )
}

/// The (php-cgi pid, FastCGI connection, body length) of a CONN_PHP answer.
fn php_answer(r: &Response) -> (String, String, usize) {
    let text = body_text(r);
    let f: Vec<&str> = text.split_whitespace().collect();
    assert!(
        r.status == 200 && f.len() == 3 && f[1].starts_with("socket:["),
        "{}",
        r.describe()
    );
    (
        f[0].to_string(),
        f[1].to_string(),
        f[2].parse().unwrap_or(0),
    )
}

/// The FastCGI connection of a CONN_PHP answer.
fn php_conn(r: &Response) -> String {
    php_answer(r).1
}

/// How many distinct connections, and a few of them, for a failure message.
fn some<T: std::fmt::Debug>(set: impl IntoIterator<Item = T>) -> String {
    let all: Vec<T> = set.into_iter().collect();
    format!(
        "{} connections, e.g. {:?}",
        all.len(),
        &all[..all.len().min(5)]
    )
}

/// `n` requests for `path` at once, each on its own client connection,
/// each bounded by the harness's read deadline.
fn concurrently(addr: std::net::SocketAddr, path: &str, n: usize) -> Vec<Result<Response, String>> {
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                sc.spawn(move || {
                    let mut c = Conn::open(addr).map_err(|e| e.to_string())?;
                    c.send(&get(path, &[])).map_err(|e| e.to_string())?;
                    c.read_response(false)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    })
}

#[test]
fn php_cgi_connections_are_kept_but_never_more_than_its_children() {
    let d = Docroot::new();
    let s = start_conf(&d, &php_keep_conf(&d, 2, 10_000, ""));
    // Spawned backends are asked at start; php-cgi says PHP_FCGI_CHILDREN.
    assert!(
        logged(&s, "keep-conn on, at most 2 connections"),
        "{}",
        s.stderr_tail()
    );
    let mut seen = std::collections::HashSet::new();
    let mut c = s.connect();
    for i in 0..200 {
        c.send(b"GET /conn.php HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = c
            .read_response(false)
            .unwrap_or_else(|e| panic!("request {i}: {e}\n{}", s.stderr_tail()));
        seen.insert(php_conn(&r));
    }
    assert!(
        seen.len() <= 2,
        "200 requests one after the other came on {}",
        some(&seen)
    );
    // 40 at once against 2 children: glint holds at most 2 connections, so
    // none waits in php's listen queue behind an idle kept one.
    let start = Instant::now();
    for (i, r) in concurrently(s.addr(), "/conn.php", 40)
        .into_iter()
        .enumerate()
    {
        let r = r.unwrap_or_else(|e| panic!("request {i} of 40: {e}\n{}", s.stderr_tail()));
        seen.insert(php_conn(&r));
    }
    assert!(start.elapsed() < TIMEOUT, "{:?}", start.elapsed());
    assert!(seen.len() <= 2, "240 requests came on {}", some(&seen));

    // A graceful restart that changes the backend: the old php-cgi's kept
    // connections are closed, so it finishes and is stopped.
    let old = children_of(s.pid());
    assert_eq!(old.len(), 1, "one php-cgi: {old:?}");
    std::fs::write(d.base.join("glint.conf"), php_keep_conf(&d, 2, 9_999, "")).unwrap();
    s.signal(SIGUSR1);
    wait_for_replacement(&s, &old[0], "/conn.php", |r| r.status == 200);
}

#[test]
fn php_cgi_children_that_exit_after_max_requests_close_kept_connections() {
    let d = Docroot::new();
    let s = start_conf(&d, &php_keep_conf(&d, 2, 3, ""));
    assert!(logged(&s, "keep-conn on"), "{}", s.stderr_tail());
    let mut per_conn: std::collections::HashMap<String, u32> = Default::default();
    let mut c = s.connect();
    for i in 0..50 {
        let r = exchange(&s, &get("/conn.php", &[]))
            .unwrap_or_else(|e| panic!("request {i}: {e}\n{}", s.stderr_tail()))
            .0;
        *per_conn.entry(php_conn(&r)).or_default() += 1;
        // Bodies too, on a keep-alive client connection: a small one may
        // go on a kept connection (glint holds it whole, to send again),
        // one larger than glint's window goes on a new connection.
        let len = if i % 2 == 0 { 1_000 } else { 300_000 };
        let body = pseudo_random(len, i);
        c.send(&with_body(
            "POST /conn.php HTTP/1.1\r\nHost: t\r\nContent-Type: application/octet-stream",
            &body,
        ))
        .unwrap();
        let r = c
            .read_response(false)
            .unwrap_or_else(|e| panic!("POST {i}: {e}\n{}", s.stderr_tail()));
        let (_, conn, got) = php_answer(&r);
        assert_eq!(got, len, "POST {i}");
        *per_conn.entry(conn).or_default() += 1;
    }
    // Each child serves 3 requests, on the connection glint kept, then
    // exits and closes it: the next request goes on a new connection (or
    // is sent again on one, had it found the kept one closed).
    assert!(
        per_conn.values().all(|&n| n <= 3),
        "a php-cgi child served more than PHP_FCGI_MAX_REQUESTS: {per_conn:?}"
    );
    assert!(
        per_conn.len() < 70,
        "100 requests came on {}",
        some(&per_conn)
    );
}

#[test]
fn keep_conn_disable_opens_a_connection_per_request() {
    let d = Docroot::new();
    let s = start_conf(
        &d,
        &php_keep_conf(&d, 2, 10_000, ", \"keep-conn\" => \"disable\""),
    );
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20 {
        seen.insert(php_conn(&fetch(&s, &get("/conn.php", &[]))));
    }
    for r in concurrently(s.addr(), "/conn.php", 10) {
        seen.insert(php_conn(&r.unwrap()));
    }
    assert_eq!(seen.len(), 30, "30 requests on {}", some(&seen));
    assert!(
        !s.stderr_tail().contains("keep-conn"),
        "the backend is not asked: {}",
        s.stderr_tail()
    );
}

#[test]
fn flup_connections_are_kept_when_enabled() {
    let d = Docroot::new();
    let auto_sock = d.base.join("auto.socket");
    let on_sock = d.base.join("on.socket");
    let _auto = flup_backend(&auto_sock);
    let _on = flup_backend(&on_sock);
    let conf = conf_for(
        &d,
        &format!(
            "fastcgi.server = ( \"/auto\" => ( \"auto\" => ( {} ) ),\n\
               \"/on\" => ( \"on\" => ( {}, \"keep-conn\" => \"enable\", \"max-connections\" => 4 ) ) )\n",
            unix_host(&auto_sock),
            unix_host(&on_sock)
        ),
    );
    let s = start_conf(&d, &conf);
    let conn_of = |r: &Response| {
        assert_eq!(r.status, 200, "{}", r.describe());
        env_of(r, "FCGI_CONN").unwrap_or_else(|| panic!("{}", body_text(r)))
    };
    // flup 1.0.3 on Python 3 answers FCGI_GET_VALUES without values: glint
    // keeps nothing unless told.
    fetch(&s, &get("/auto/x", &[]));
    assert!(logged(&s, "has no FCGI_MAX_CONNS"), "{}", s.stderr_tail());
    let mut auto = std::collections::HashSet::new();
    for _ in 0..10 {
        auto.insert(conn_of(&fetch(&s, &get("/auto/x", &[]))));
    }
    assert_eq!(auto.len(), 10, "{auto:?}");
    // Enabled: 40 at once stay within max-connections, and the connections
    // are used again. (flup's thread pool starts a thread per connection
    // only while it has fewer than one idle: of a burst of new connections,
    // those beyond its 5 idle threads wait for a thread to finish one, which
    // a kept connection never does. Hence 4, not the default 16.)
    let mut on = std::collections::HashSet::new();
    for (i, r) in concurrently(s.addr(), "/on/slow?0.05", 40)
        .into_iter()
        .enumerate()
    {
        let r = r.unwrap_or_else(|e| panic!("request {i} of 40: {e}\n{}", s.stderr_tail()));
        on.insert(conn_of(&r));
    }
    for _ in 0..20 {
        on.insert(conn_of(&fetch(&s, &get("/on/x", &[]))));
    }
    assert!(on.len() <= 4, "60 requests on {} connections", on.len());
}

/// Starts fcgi_plain.py in `mode` on `sock`, once it listens.
fn plain_backend(sock: &Path, mode: &str) -> Backend {
    let mut child = Command::new("python3")
        .arg(backends_dir().join("fcgi_plain.py"))
        .arg(sock)
        .arg(mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    let out = child.stdout.take().expect("stdout");
    BufReader::new(out)
        .read_line(&mut line)
        .expect("ready line");
    assert_eq!(line.trim(), "ready", "fcgi_plain.py did not start");
    Backend::of(child)
}

/// `conn=C served=S open=O most=M` of a fcgi_plain.py answer.
fn plain_field(r: &Response, name: &str) -> u32 {
    assert_eq!(r.status, 200, "{}", r.describe());
    body_text(r)
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {}", body_text(r)))
}

#[test]
fn backends_that_do_not_answer_get_values_get_a_connection_per_request() {
    let d = Docroot::new();
    let mut backends = Vec::new();
    let mut routes = Vec::new();
    for mode in ["close", "ignore", "garbage"] {
        let sock = d.base.join(format!("{mode}.socket"));
        backends.push(plain_backend(&sock, mode));
        routes.push(format!(
            "\"/{mode}\" => ( \"{mode}\" => ( {}, \"read-timeout\" => 2 ) )",
            unix_host(&sock)
        ));
    }
    let conf = conf_for(
        &d,
        &format!("fastcgi.server = ( {} )\n", routes.join(",\n")),
    );
    let s = start_conf(&d, &conf);
    let mut conns: std::collections::HashMap<&str, Vec<u32>> = Default::default();
    // The first requests go while the backends are being asked (the one
    // that ignores the question is for 2 s): they do not wait for it.
    for round in 0..3 {
        for mode in ["close", "ignore", "garbage"] {
            let t = Instant::now();
            let r = fetch(&s, &get(&format!("/{mode}/x"), &[]));
            assert!(
                t.elapsed() < Duration::from_secs(1),
                "{mode} round {round} took {:?}",
                t.elapsed()
            );
            conns.entry(mode).or_default().push(plain_field(&r, "conn"));
        }
    }
    for needle in [
        "closed the connection without answering",
        "did not answer within 2 s",
        "not a FastCGI record",
    ] {
        assert!(logged(&s, needle), "{needle}: {}", s.stderr_tail());
    }
    for _ in 0..5 {
        for mode in ["close", "ignore", "garbage"] {
            let r = fetch(&s, &get(&format!("/{mode}/x"), &[]));
            assert_eq!(plain_field(&r, "served"), 1, "{mode}: {}", body_text(&r));
            conns.entry(mode).or_default().push(plain_field(&r, "conn"));
        }
    }
    // fcgi_plain.py keeps a connection when asked to: every request on its
    // own connection means glint never asked.
    for (mode, ids) in &conns {
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{mode}: {ids:?}");
    }
}

#[test]
fn keep_conn_enable_without_an_answer_stays_within_max_connections() {
    let d = Docroot::new();
    let sock = d.base.join("plain.socket");
    let _b = plain_backend(&sock, "close");
    let host = format!(
        "{}, \"keep-conn\" => \"enable\", \"max-connections\" => 3",
        unix_host(&sock)
    );
    let s = start_conf(&d, &one_route(&d, "fastcgi.server", "/p", &host));
    let mut most = 0;
    let mut ids = std::collections::HashSet::new();
    for (i, r) in concurrently(s.addr(), "/p/x?sleep=0.05", 30)
        .into_iter()
        .enumerate()
    {
        let r = r.unwrap_or_else(|e| panic!("request {i} of 30: {e}\n{}", s.stderr_tail()));
        most = most.max(plain_field(&r, "most"));
        ids.insert(plain_field(&r, "conn"));
    }
    assert!(most <= 3, "the backend saw {most} connections open at once");
    assert!(ids.len() <= 3, "30 requests on {} connections", ids.len());
}

/// `GET path` with `Host: host` (and `Connection: close`).
fn get_on(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").into_bytes()
}

/// Which backend answered `path` on `host` (its `BACKEND=` line), or the status.
fn answered_by(s: &Server, host: &str, path: &str) -> String {
    let r = fetch(s, &get_on(host, path));
    if r.status != 200 {
        return format!("status {}", r.status);
    }
    env_of(&r, "BACKEND").unwrap_or_else(|| format!("no BACKEND line: {}", r.describe()))
}

/// `scgi.server` in conditional blocks: the backends of the configuration
/// at `ports` (global, vhost b, url block, vhost d).
fn scoped_conf(d: &Docroot, ports: [&str; 4]) -> String {
    let route = |prefix: &str, port: &str| {
        format!(
            "scgi.server = ( \"{prefix}\" => ( ( {} ) ) )",
            tcp_host(port)
        )
    };
    conf_for(
        d,
        &format!(
            "{}\n\
             $HTTP[\"host\"] == \"b.test\" {{ {} }}\n\
             $HTTP[\"host\"] == \"c.test\" {{ server.tag = \"c\" }}\n\
             $HTTP[\"url\"] =~ \"^/app/special\" {{ {} }}\n\
             $HTTP[\"host\"] == \"d.test\" {{ {} }}\n",
            route("/app", ports[0]),
            route("/app", ports[1]),
            route("/app", ports[2]),
            route("/other", ports[3]),
        ),
    )
}

#[test]
fn scgi_server_in_conditional_blocks_picks_the_backend() {
    let d = Docroot::new();
    let (_a, a) = scgi_backend(&["tcp"]);
    let (_b, b) = scgi_backend(&["tcp"]);
    let (_c, c) = scgi_backend(&["tcp"]);
    let s = start_conf(&d, &scoped_conf(&d, [&a, &b, &c, &c]));
    let cases = [
        // The global route.
        ("test", "/app/x", a.clone()),
        // A virtual host's own scgi.server replaces the global one.
        ("b.test", "/app/x", b.clone()),
        // A block that does not set scgi.server keeps the global routes.
        ("c.test", "/app/x", a.clone()),
        // A `$HTTP["url"]` block overrides the global route...
        ("test", "/app/special", c.clone()),
        // ...and, coming later, the virtual host's.
        ("b.test", "/app/special", c.clone()),
        // Replaced, not merged: /app is not a route of d.test.
        ("d.test", "/app/x", "status 404".to_string()),
        ("d.test", "/other/y", c.clone()),
        ("test", "/other/y", "status 404".to_string()),
    ];
    for (host, path, want) in cases {
        assert_eq!(
            answered_by(&s, host, path),
            want,
            "{host}{path}\n{}",
            s.stderr_tail()
        );
    }
}

#[test]
fn sigusr1_switches_a_virtual_hosts_backend() {
    let d = Docroot::new();
    let (_a, a) = scgi_backend(&["tcp"]);
    let (_b, b) = scgi_backend(&["tcp"]);
    let (_c, c) = scgi_backend(&["tcp"]);
    let s = start_conf(&d, &scoped_conf(&d, [&a, &b, &c, &c]));
    assert_eq!(
        answered_by(&s, "b.test", "/app/x"),
        b,
        "{}",
        s.stderr_tail()
    );
    // A slow request under way on vhost b's backend when it is replaced.
    let mut slow = s.connect();
    slow.send(b"GET /app/slow?1 HTTP/1.1\r\nHost: b.test\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(d.base.join("glint.conf"), scoped_conf(&d, [&a, &c, &c, &b])).unwrap();
    s.signal(SIGUSR1);
    retry(TIMEOUT, Duration::from_millis(50), || {
        match answered_by(&s, "b.test", "/app/x") {
            x if x == c => Ok(()),
            x => Err(format!("b.test still answered by {x}\n{}", s.stderr_tail())),
        }
    });
    assert_eq!(answered_by(&s, "test", "/app/x"), a);
    assert_eq!(answered_by(&s, "d.test", "/other/y"), b);
    let r = slow.read_response(false).unwrap();
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(env_of(&r, "BACKEND"), Some(b.clone()));
}

#[test]
fn a_spawned_backend_in_two_virtual_hosts_runs_once() {
    let d = Docroot::new();
    d.file(
        "v.php",
        b"<?php echo 'php ', $_SERVER['HTTP_HOST'], \"\\n\";",
    );
    let sock = d.base.join("php.socket");
    let php = format!(
        "\".php\" => (( \"bin-path\" => \"{}\", \"socket\" => \"{}\", \"max-procs\" => 1,\n\
           \"bin-environment\" => ( \"PHP_FCGI_CHILDREN\" => \"1\" ) ))",
        php_cgi(),
        sock.display()
    );
    // Two different fastcgi.server values that share the php-cgi backend.
    let unused = unix_host(&d.base.join("unused.socket"));
    let conf = conf_for(
        &d,
        &format!(
            "$HTTP[\"host\"] == \"a.test\" {{ fastcgi.server = ( {php} ) }}\n\
             $HTTP[\"host\"] == \"b.test\" {{ fastcgi.server = ( \"/unused\" => ( ( {unused} ) ), {php} ) }}\n"
        ),
    );
    let s = start_conf(&d, &conf);
    for host in ["a.test", "b.test"] {
        let r = fetch(&s, &get_on(host, "/v.php"));
        assert_eq!(
            body_text(&r),
            format!("php {host}\n"),
            "{}\n{}",
            r.describe(),
            s.stderr_tail()
        );
    }
    // Not a route outside the two virtual hosts.
    let r = fetch(&s, &get_on("test", "/v.php"));
    assert_ne!(body_text(&r), "php test\n", "{}", r.describe());
    let children = children_of(s.pid());
    assert_eq!(children.len(), 1, "one php-cgi: {children:?}");
}

/// SERVER_NAME is the Host without its port, an IPv6 literal with its
/// brackets (`Host: [::1]` gave `[:`), for SCGI, FastCGI and CGI alike, as
/// lighttpd sets it.
#[test]
fn server_name_is_the_host_without_its_port_brackets_and_all() {
    let d = Docroot::new();
    let (_scgi, port) = scgi_backend(&["tcp"]);
    let sock = d.base.join("fcgi.socket");
    let _flup = flup_backend(&sock);
    d.file("env.sh", b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nSERVER_NAME=%s\\n' \"$SERVER_NAME\"\n");
    set_mode(&d.path("env.sh"), 0o755);
    let conf = conf_for(
        &d,
        &format!(
            "server.modules += ( \"mod_scgi\", \"mod_fastcgi\", \"mod_cgi\" )\n\
             scgi.server = ( \"/scgi\" => ( ( {} ) ) )\n\
             fastcgi.server = ( \"/wsgi\" => ( ( {} ) ) )\n\
             cgi.assign = ( \".sh\" => \"\" )\n",
            tcp_host(&port),
            unix_host(&sock)
        ),
    );
    let s = start_conf(&d, &conf);
    let hosts = [
        ("[::1]", "[::1]"),
        ("[::1]:8080", "[::1]"),
        ("app.test:8080", "app.test"),
        ("app.test", "app.test"),
    ];
    for path in ["/scgi/x", "/wsgi/x", "/env.sh"] {
        for (host, name) in hosts {
            let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
            let r = fetch(&s, req.as_bytes());
            assert_eq!(r.status, 200, "{path} Host {host}: {}", r.describe());
            assert_eq!(
                env_of(&r, "SERVER_NAME").as_deref(),
                Some(name),
                "{path} Host {host}:\n{}",
                body_text(&r)
            );
        }
    }
}
