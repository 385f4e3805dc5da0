//! mod_ajp13 against a real Apache Tomcat 10 (Debian's `tomcat10`): one
//! JVM per test binary, in a CATALINA_BASE of the test's own with only an
//! AJP connector on 127.0.0.1 (tests/ajp13/server.xml) and three JSPs
//! (tests/ajp13/ROOT). glint and lighttpd 1.4.69's mod_ajp13 get the same
//! configuration and their answers are compared; a scripted AJP backend of
//! the test's own sends what Tomcat never would (malformed packets).

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const CATALINA_HOME: &str = "/usr/share/tomcat10";
/// Tomcat's start on two busy cores takes 5-20 s.
const START_LIMIT: Duration = Duration::from_secs(60);
/// A JSP's first request compiles it (a few seconds each).
const FIRST_ANSWER: Duration = Duration::from_secs(90);

/// The one Tomcat of this test binary. It runs under `sh`, which kills the
/// JVM when its stdin closes: the write end is held here and closes when
/// the test process ends, however it ends (a failed test too).
struct Tomcat {
    port: u16,
    _base: TempDir,
    _guard: Mutex<(Child, ChildStdin)>,
}

fn tomcat() -> &'static Tomcat {
    static T: OnceLock<Tomcat> = OnceLock::new();
    T.get_or_init(start_tomcat)
}

fn start_tomcat() -> Tomcat {
    let bootstrap = Path::new(CATALINA_HOME).join("bin/bootstrap.jar");
    assert!(
        bootstrap.exists(),
        "Tomcat is not installed (apt-get install tomcat10; .ci/run does)"
    );
    let base = TempDir::new("tomcat");
    for d in ["conf", "logs", "temp", "work", "webapps/ROOT"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    let port = free_port();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ajp13");
    let xml = std::fs::read_to_string(fixtures.join("server.xml")).unwrap();
    std::fs::write(
        base.join("conf/server.xml"),
        xml.replace("{port}", &port.to_string()),
    )
    .unwrap();
    std::fs::copy(
        Path::new(CATALINA_HOME).join("etc/web.xml"),
        base.join("conf/web.xml"),
    )
    .unwrap();
    for jsp in ["echo.jsp", "status.jsp", "big.jsp"] {
        std::fs::copy(
            fixtures.join("ROOT").join(jsp),
            base.join("webapps/ROOT").join(jsp),
        )
        .unwrap();
    }
    let b = base.path().display().to_string();
    let java = format!(
        "java -Xmx192m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
         -Dcatalina.home={CATALINA_HOME} -Dcatalina.base={b} -Djava.io.tmpdir={b}/temp \
         -cp {CATALINA_HOME}/bin/bootstrap.jar:{CATALINA_HOME}/bin/tomcat-juli.jar \
         org.apache.catalina.startup.Bootstrap start"
    );
    let script = format!(
        "{java} >{b}/logs/out.log 2>&1 </dev/null & j=$!\n\
         read _ || true\nkill $j 2>/dev/null\nwait $j"
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh");
    let stdin = child.stdin.take().expect("piped stdin");
    let up = wait_for(START_LIMIT, || {
        TcpStream::connect(("127.0.0.1", port)).is_ok() || matches!(child.try_wait(), Ok(Some(_)))
    });
    if !up || !matches!(child.try_wait(), Ok(None)) {
        let log = std::fs::read_to_string(base.join("logs/out.log")).unwrap_or_default();
        panic!("Tomcat did not listen on 127.0.0.1:{port} within {START_LIMIT:?}:\n{log}");
    }
    Tomcat {
        port,
        _base: base,
        _guard: Mutex::new((child, stdin)),
    }
}

/// A port nothing listens on (bound a moment ago and let go).
fn dead_port() -> u16 {
    free_port()
}

/// The configuration both servers run: everything to Tomcat, `/dead/` (a
/// conditional block) to a port where nothing listens, `/fake/` to the
/// scripted backend.
fn conf(docroot: &Path, fake: u16, dead: u16) -> String {
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.modules += ( \"mod_ajp13\" )\n\
         ajp13.server = ( \"/\" => ( \"tomcat\" => ( \"host\" => \"127.0.0.1\", \"port\" => {} ) ) )\n\
         $HTTP[\"url\"] =^ \"/dead/\" {{\n\
           ajp13.server = ( \"/dead/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {dead}, \"disable-time\" => 1 ) ) )\n\
         }}\n\
         $HTTP[\"url\"] =^ \"/fake/\" {{\n\
           ajp13.server = ( \"/fake/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {fake} ) ) )\n\
         }}\n",
        docroot.display(),
        tomcat().port,
    )
}

/// glint and lighttpd on the same configuration.
struct Pair {
    glint: Server,
    lighttpd: Child,
    lighttpd_port: u16,
    /// The port of `/dead/`'s backend, where nothing listens.
    dead: u16,
    _dir: TempDir,
    _root: Docroot,
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = self.lighttpd.kill();
        let _ = self.lighttpd.wait();
    }
}

fn start_pair(fake: u16) -> Pair {
    let root = Docroot::new();
    let dead = dead_port();
    let text = conf(&root.root, fake, dead);

    let glint = Launch::new()
        .config(&text.replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    let dir = TempDir::new("lighttpd-ajp13");
    let lport = free_port();
    let ltext = text.replace("{port}", &lport.to_string()).replace(
        "{errorlog}",
        &format!("server.errorlog = \"{}\"", dir.join("error.log").display()),
    );
    let path = dir.join("lighttpd.conf");
    std::fs::write(&path, ltext).unwrap();
    let lighttpd = start_lighttpd(&path, lport).expect("lighttpd with mod_ajp13");
    warm(glint.port);
    Pair {
        glint,
        lighttpd,
        lighttpd_port: lport,
        dead,
        _dir: dir,
        _root: root,
    }
}

/// Once per binary: each JSP compiled by a first request (with a long
/// deadline), so that the tests' own requests get answers within seconds.
fn warm(port: u16) {
    static WARM: OnceLock<()> = OnceLock::new();
    WARM.get_or_init(|| {
        for path in ["/echo.jsp", "/status.jsp?code=200", "/big.jsp?n=1"] {
            let mut c = Conn::connect(port);
            // (With a user: a test's glint may guard echo.jsp with mod_auth.)
            c.send(&get(path, &["Authorization: Basic YWxpY2U6c2VjcmV0"]))
                .unwrap();
            let deadline = Instant::now() + FIRST_ANSWER;
            match c.read_response_by(false, deadline) {
                Ok(r) if r.status == 200 => {}
                other => panic!("warming {path}: {other:?}"),
            }
        }
    });
}

/// One request on a new connection to `port`; the answer (HEAD: no body).
fn ask(port: u16, request: &[u8]) -> Response {
    let mut c = Conn::connect(port);
    let _ = c.send(request);
    c.read_response(request.starts_with(b"HEAD "))
        .unwrap_or_else(|e| panic!("{}: {e}", show(request)))
}

/// The echo's lines as (name, value), without those that name the port
/// the client connected to (the two servers listen on different ones).
fn echo_lines(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .lines()
        .filter(|l| !l.starts_with("server-port:") && !l.starts_with("header host:"))
        .map(str::to_string)
        .collect()
}

fn line<'a>(r: &'a Response, name: &str) -> &'a str {
    let body = std::str::from_utf8(&r.body).unwrap_or("");
    body.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(": ")))
        .unwrap_or_else(|| panic!("no {name} in {}", show(&r.body)))
}

#[test]
fn get_with_query_and_headers_both_ways_as_lighttpd() {
    let p = start_pair(dead_port());
    let request = req(
        "GET",
        "/echo.jsp?a=1&b=%20x",
        &["X-Foo: bar", "Accept-Language: de", "Cookie: c=1"],
    );
    let g = ask(p.glint.port, &request);
    let l = ask(p.lighttpd_port, &request);
    assert_eq!(g.status, 200, "{}", g.describe());
    assert_eq!(line(&g, "method"), "GET");
    assert_eq!(line(&g, "query"), "a=1&b=%20x");
    assert_eq!(line(&g, "uri"), "/echo.jsp");
    assert_eq!(line(&g, "remote-addr"), "127.0.0.1");
    assert_eq!(line(&g, "server-name"), "test");
    assert_eq!(line(&g, "header X-Foo"), "bar");
    assert_eq!(line(&g, "header accept-language"), "de");
    assert_eq!(line(&g, "header cookie"), "c=1");
    assert_eq!(g.header("X-Echo"), Some("yes"));
    assert_eq!(g.headers_named("X-Multi"), ["one", "two"]);
    assert_eq!(g.header("Content-Type"), Some("text/plain;charset=UTF-8"));
    // The same request, the same answer from lighttpd's mod_ajp13.
    assert_eq!(l.status, g.status);
    assert_eq!(echo_lines(&g.body), echo_lines(&l.body));
    for h in ["X-Echo", "Content-Type", "Content-Length"] {
        assert_eq!(g.header(h), l.header(h), "{h}");
    }
    assert_eq!(g.headers_named("X-Multi"), l.headers_named("X-Multi"));
}

#[test]
fn head_has_the_get_head_and_no_body() {
    let p = start_pair(dead_port());
    let g = ask(p.glint.port, &head("/status.jsp?code=200", &[]));
    let l = ask(p.lighttpd_port, &head("/status.jsp?code=200", &[]));
    assert_eq!((g.status, l.status), (200, 200));
    assert!(g.body.is_empty());
    assert_eq!(g.header("Content-Type"), l.header("Content-Type"));
    assert_eq!(g.header("Content-Length"), l.header("Content-Length"));
}

#[test]
fn statuses_pass_through_as_lighttpd() {
    let p = start_pair(dead_port());
    for code in [201u16, 204, 302, 404, 500, 503] {
        let path = format!("/status.jsp?code={code}");
        let g = ask(p.glint.port, &get(&path, &[]));
        let l = ask(p.lighttpd_port, &get(&path, &[]));
        assert_eq!(g.status, code, "{}", g.describe());
        assert_eq!(l.status, code, "lighttpd: {}", l.describe());
        assert_eq!(g.body, l.body, "{code}");
        assert_eq!(g.header("Location"), l.header("Location"), "{code}");
    }
    // Not in the webapp: Tomcat's own 404.
    let g = ask(p.glint.port, &get("/nothing-here.jsp", &[]));
    assert_eq!(g.status, 404);
}

#[test]
fn post_bodies_reach_tomcat_whole() {
    let p = start_pair(dead_port());
    // Empty, small, one packet's worth, and many packets (GET_BODY_CHUNK
    // for each one after the first).
    for (n, seed) in [(0usize, 1u64), (100, 2), (8186, 3), (8187, 4), (300_000, 5)] {
        let body = pseudo_random(n, seed);
        let sum: u64 = body.iter().map(|&b| u64::from(b)).sum::<u64>() & 0xffff_ffff;
        let mut request = format!(
            "POST /echo.jsp HTTP/1.1\r\nHost: test\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: {n}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        request.extend_from_slice(&body);
        let g = ask(p.glint.port, &request);
        assert_eq!(g.status, 200, "{n} bytes: {}", g.describe());
        assert_eq!(line(&g, "method"), "POST");
        assert_eq!(line(&g, "content-length"), n.to_string());
        assert_eq!(line(&g, "body-length"), n.to_string());
        assert_eq!(line(&g, "body-sum"), sum.to_string());
        // lighttpd 1.4.69 sends its data packets without the length the
        // protocol puts before the bytes: Tomcat takes the body's first
        // two bytes for it, and fails (500) or waits for bytes that never
        // come. Only the empty body compares.
        if n == 0 {
            let l = ask(p.lighttpd_port, &request);
            assert_eq!(echo_lines(&l.body), echo_lines(&g.body));
        }
    }
}

#[test]
fn chunked_post_is_collected_and_sent_with_its_length() {
    let p = start_pair(dead_port());
    let body = pseudo_random(20_000, 9);
    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum::<u64>() & 0xffff_ffff;
    let mut request =
        b"POST /echo.jsp HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec();
    for part in body.chunks(7000) {
        request.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        request.extend_from_slice(part);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let g = ask(p.glint.port, &request);
    assert_eq!(g.status, 200, "{}", g.describe());
    assert_eq!(line(&g, "content-length"), "20000");
    assert_eq!(line(&g, "body-length"), "20000");
    assert!(
        !String::from_utf8_lossy(&g.body)
            .to_ascii_lowercase()
            .contains("transfer-encoding"),
        "the container sees the length only"
    );
    assert_eq!(line(&g, "body-sum"), sum.to_string());
}

/// `big.jsp?n=`'s bytes.
fn big(n: usize) -> Vec<u8> {
    (0..n)
        .map(|j| {
            if j % 64 == 63 {
                b'\n'
            } else {
                b'a' + (j % 26) as u8
            }
        })
        .collect()
}

#[test]
fn a_large_answer_streams_whole_as_lighttpd() {
    let p = start_pair(dead_port());
    let n = 3_000_000;
    let path = format!("/big.jsp?n={n}");
    let g = ask(p.glint.port, &get(&path, &[]));
    assert_eq!(g.status, 200);
    assert_eq!(g.body.len(), n);
    assert!(g.body == big(n), "the bytes differ");
    let l = ask(p.lighttpd_port, &get(&path, &[]));
    assert!(l.body == g.body, "lighttpd's differ");
}

#[test]
fn keep_alive_http10_and_connection_close() {
    let p = start_pair(dead_port());
    // Three requests on one HTTP/1.1 connection (each on a new AJP one).
    let mut c = Conn::connect(p.glint.port);
    for i in 0..3 {
        let r = format!("GET /echo.jsp?i={i} HTTP/1.1\r\nHost: test\r\n\r\n");
        c.send(r.as_bytes()).unwrap();
        let a = c.read_response(false).unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(line(&a, "query"), format!("i={i}"));
    }
    // HTTP/1.0: closed after the answer; Tomcat is told HTTP/1.0.
    let mut c = Conn::connect(p.glint.port);
    c.send(b"GET /echo.jsp HTTP/1.0\r\n\r\n").unwrap();
    let a = c.read_response(false).unwrap();
    assert_eq!(line(&a, "protocol"), "HTTP/1.0");
    assert_eq!(c.expect_close(TIMEOUT).unwrap(), b"");
    // Connection: close.
    let mut c = Conn::connect(p.glint.port);
    c.send(&get("/status.jsp?code=200", &[])).unwrap();
    assert_eq!(c.read_response(false).unwrap().status, 200);
    assert_eq!(c.expect_close(TIMEOUT).unwrap(), b"");
}

#[test]
fn the_answer_comes_while_the_client_still_sends_its_body() {
    let p = start_pair(dead_port());
    // status.jsp never reads the body: Tomcat answers after the first
    // packet, while most of the 5 MB are still to come.
    let mut c = Conn::connect(p.glint.port);
    let head =
        "POST /status.jsp?code=200 HTTP/1.1\r\nHost: test\r\nContent-Length: 5000000\r\n\r\n";
    c.send(head.as_bytes()).unwrap();
    c.send(&vec![b'x'; 64 * 1024]).unwrap();
    let a = c.read_response(false).unwrap();
    assert_eq!(a.status, 200);
    assert_eq!(a.body, b"status 200\n");
}

#[test]
fn a_dead_backend_is_503_as_lighttpd() {
    let p = start_pair(dead_port());
    let g = ask(p.glint.port, &get("/dead/x.jsp", &[]));
    let l = ask(p.lighttpd_port, &get("/dead/x.jsp", &[]));
    assert_eq!((g.status, l.status), (503, 503));
    // The other routes still answer.
    assert_eq!(
        ask(p.glint.port, &get("/status.jsp?code=200", &[])).status,
        200
    );
    // The backend comes up: once its disable-time (1 s) is over, glint
    // sends it requests again.
    let Ok(l) = TcpListener::bind(("127.0.0.1", p.dead)) else {
        panic!("port {} was taken meanwhile", p.dead);
    };
    serve_fake_on(l);
    let back = wait_for(Duration::from_secs(5), || {
        ask(p.glint.port, &get("/dead/ok", &[])).status == 200
    });
    assert!(back, "the backend was not used again");
}

#[test]
fn a_method_ajp_cannot_name_is_400_as_lighttpd() {
    let p = start_pair(dead_port());
    let g = ask(p.glint.port, &req("PATCH", "/echo.jsp", &[]));
    let l = ask(p.lighttpd_port, &req("PATCH", "/echo.jsp", &[]));
    assert_eq!((g.status, l.status), (400, 400));
}

/// A container's packet: `AB`, the length, the payload.
fn packet(payload: &[u8]) -> Vec<u8> {
    let mut p = b"AB".to_vec();
    p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    p.extend_from_slice(payload);
    p
}

fn headers_200() -> Vec<u8> {
    packet(b"\x04\x00\xc8\x00\x02OK\x00\x00\x01\xa0\x01\x00\x0atext/plain\x00")
}

/// What the scripted backend answers to a request for `/fake/<name>`.
fn scripted(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    match name {
        "ok" => {
            out.extend(headers_200());
            out.extend(packet(b"\x03\x00\x02hi\x00"));
            out.extend(packet(b"\x05\x00"));
        }
        "http" => out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"),
        "lf-in-header" => {
            out.extend(packet(
                b"\x04\x00\xc8\xff\xff\x00\x01\x00\x03X-A\x00\x00\x0bx\r\nSet-A: b\x00",
            ));
            out.extend(packet(b"\x05\x00"));
        }
        "body-first" => {
            out.extend(packet(b"\x03\x00\x02hi\x00"));
            out.extend(packet(b"\x05\x00"));
        }
        "short-body" => {
            out.extend(headers_200());
            out.extend(packet(b"\x03\x01\x00hi"));
        }
        "end-first" => out.extend(packet(b"\x05\x00")),
        // A length far past what follows, then the close.
        "truncated" => out.extend_from_slice(b"AB\xff\xff\x04\x00"),
        // Headers, then the close without END_RESPONSE.
        "no-end" => out.extend(headers_200()),
        _ => {}
    }
    out
}

/// The scripted AJP backend: reads a FORWARD_REQUEST, answers what
/// [`scripted`] has for its path, closes. Runs until the test ends.
fn start_fake() -> u16 {
    serve_fake_on(TcpListener::bind("127.0.0.1:0").unwrap())
}

fn serve_fake_on(l: TcpListener) -> u16 {
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve_fake(s));
        }
    });
    port
}

fn serve_fake(mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(TIMEOUT));
    let mut buf = vec![0u8; 8192];
    let mut got = Vec::new();
    // The FORWARD_REQUEST: a 4-byte header and its length.
    for _ in 0..100 {
        if got.len() >= 4 && got.len() >= 4 + usize::from(u16::from_be_bytes([got[2], got[3]])) {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    // The URI's last segment (`/fake/<name>`, `/dead/<name>`).
    let name = ["/fake/", "/dead/"]
        .iter()
        .find_map(|p| text.split(p).nth(1))
        .map(|r| r.split('\0').next().unwrap_or(""))
        .unwrap_or("");
    let _ = s.write_all(&scripted(name));
}

#[test]
fn malformed_answers_are_502_never_a_hang() {
    let fake = start_fake();
    let p = start_pair(fake);
    let g = ask(p.glint.port, &get("/fake/ok", &[]));
    assert_eq!(
        (g.status, g.body.as_slice()),
        (200, &b"hi"[..]),
        "{}",
        g.describe()
    );
    for name in [
        "http",
        "lf-in-header",
        "body-first",
        "short-body",
        "end-first",
        "truncated",
    ] {
        let path = format!("/fake/{name}");
        let g = ask(p.glint.port, &get(&path, &[]));
        assert_eq!(g.status, 502, "{name}: {}", g.describe());
        assert!(g.header("Set-A").is_none(), "{name}: a header got through");
    }
    // The head went out before the backend closed: the answer is cut,
    // never completed as if whole.
    let mut c = Conn::connect(p.glint.port);
    c.send(&get("/fake/no-end", &[])).unwrap();
    let cut = c.read_response(false);
    assert!(
        cut.is_err() || cut.as_ref().is_ok_and(|r| r.status == 502),
        "{cut:?}"
    );
    // And glint still answers.
    assert_eq!(ask(p.glint.port, &get("/fake/ok", &[])).status, 200);
}

/// curl's answer over HTTPS to `localhost:port`, trusting the test CA.
fn curl_https(certs: &Path, port: u16, path: &str, extra: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(certs.join("ca.pem"))
        .arg("--resolve")
        .arg(format!("localhost:{port}:127.0.0.1"))
        .args(extra)
        .arg(format!("https://localhost:{port}{path}"))
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tls_and_the_authenticated_user_reach_tomcat() {
    let root = Docroot::new();
    let dir = TempDir::new("ajp13-tls");
    make_cert(dir.path());
    let users = dir.join("users");
    std::fs::write(&users, "alice:secret\n").unwrap();
    let tls_port = free_port();
    let text = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.modules += ( \"mod_auth\", \"mod_authn_file\", \"mod_openssl\", \"mod_ajp13\" )\n\
         auth.backend = \"plain\"\nauth.backend.plain.userfile = \"{}\"\n\
         auth.require = ( \"/echo.jsp\" => ( \"method\" => \"basic\", \"realm\" => \"ajp\", \"require\" => \"valid-user\" ) )\n\
         ajp13.server = ( \"/\" => ( ( \"host\" => \"127.0.0.1\", \"port\" => {} ) ) )\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{tls_port}\" {{\n\
           ssl.engine = \"enable\"\n  ssl.pemfile = \"{}\"\n}}\n",
        root.root.display(),
        users.display(),
        tomcat().port,
        dir.join("server.pem").display(),
    );
    let glint = Launch::new()
        .config(&text.replace("{port}", "0").replace("{errorlog}", ""))
        .listeners(2)
        .start();
    warm(glint.port);
    // Who mod_auth let in, and how: Tomcat's getRemoteUser() and
    // getAuthType() (with tomcatAuthentication="false").
    let r = ask(
        glint.port,
        &get("/echo.jsp", &["Authorization: Basic YWxpY2U6c2VjcmV0"]),
    );
    assert_eq!(line(&r, "remote-user"), "alice");
    assert_eq!(line(&r, "auth-type"), "Basic");
    assert_eq!(line(&r, "secure"), "false");
    // The wrong password never reaches Tomcat.
    let r = ask(
        glint.port,
        &get("/echo.jsp", &["Authorization: Basic YWxpY2U6d3Jvbmc="]),
    );
    assert_eq!(r.status, 401);
    // Over TLS: is_ssl, the cipher and its key size.
    let body = curl_https(
        dir.path(),
        tls_port,
        "/echo.jsp?x=1",
        &["-u", "alice:secret"],
    );
    assert!(body.contains("secure: true\n"), "{body}");
    assert!(body.contains("query: x=1\n"), "{body}");
    assert!(body.contains("remote-user: alice\n"), "{body}");
    assert!(body.contains("cipher: TLS_"), "{body}");
    assert!(
        body.contains("key-size: 128\n") || body.contains("key-size: 256\n"),
        "{body}"
    );
    // lighttpd (plain HTTP) tells Tomcat the same user.
    let lport = free_port();
    let ltext = text
        .replace("{port}", &lport.to_string())
        .replace(
            "{errorlog}",
            &format!("server.errorlog = \"{}\"", dir.join("error.log").display()),
        )
        .replace(
            &format!("127.0.0.1:{tls_port}"),
            &format!("127.0.0.1:{}", free_port()),
        );
    let conf = dir.join("lighttpd.conf");
    std::fs::write(&conf, ltext).unwrap();
    let mut l = start_lighttpd(&conf, lport).expect("lighttpd");
    let lr = ask(
        lport,
        &get("/echo.jsp", &["Authorization: Basic YWxpY2U6c2VjcmV0"]),
    );
    let _ = l.kill();
    let _ = l.wait();
    assert_eq!(line(&lr, "remote-user"), "alice");
    assert_eq!(line(&lr, "auth-type"), "Basic");
}
