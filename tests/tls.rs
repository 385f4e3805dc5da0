//! HTTPS with real clients: curl, `openssl s_client` and Python's `ssl`,
//! against certificates each test makes with the `openssl` command (a CA,
//! server certificates for SNI, a wildcard, a client certificate).

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Makes `ca.pem`, server certificates `a.pem` (a.test), `b.pem` (b.test),
/// `wild.pem` (*.wild.test) — each with its key in the same file, as
/// lighttpd's ssl.pemfile takes them — and `client.crt`/`client.key`
/// (CN=alice), all signed by the CA, in `dir`.
fn make_certs(dir: &Path) {
    let script = r#"
set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 \
  -subj /CN=glint-test-ca -keyout ca.key -out ca.pem 2>/dev/null
leaf() { # name cn san
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
    -keyout $1.key -out $1.csr 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$3" "$4" > $1.ext
  openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 \
    -extfile $1.ext -out $1.crt 2>/dev/null
}
leaf a a.test DNS:a.test serverAuth
leaf b b.test DNS:b.test serverAuth
leaf wild wild.test DNS:*.wild.test serverAuth
leaf client alice email:alice@example.org clientAuth
for n in a b wild; do cat $n.crt $n.key > $n.pem; done
"#;
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(ok.success(), "openssl could not make the test certificates");
}

/// curl over HTTPS to `host:port` (resolved to 127.0.0.1), trusting the
/// test CA; extra arguments after.
fn curl(dir: &Path, host: &str, port: u16, path: &str, extra: &[&str]) -> Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(dir.join("ca.pem"))
        .arg("--resolve")
        .arg(format!("{host}:{port}:127.0.0.1"))
        .args(extra)
        .arg(format!("https://{host}:{port}{path}"))
        .output()
        .expect("curl")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A server with a plain listener (from --port 0) and a TLS one on
/// `tls_port`, with `extra` configuration lines.
fn tls_server(d: &Docroot, certs: &Path, tls_port: u16, extra: &str) -> Server {
    let conf = format!(
        "server.document-root = \"{root}\"\n\
         server.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules += ( \"mod_openssl\" )\n\
         ssl.pemfile = \"{certs}/a.pem\"\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{tls_port}\" {{\n  ssl.engine = \"enable\"\n}}\n{extra}\n",
        root = d.root.display(),
        certs = certs.display()
    );
    Launch::new().config(&conf).listeners(2).start()
}

fn fixture() -> Docroot {
    let d = Docroot::new();
    d.file("index.html", b"hello over tls\n")
        .file("dir/f.txt", b"f\n");
    d
}

#[test]
fn https_serves_files_and_picks_the_certificate_by_name() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    let c = certs.path().display().to_string();
    let _s = tls_server(
        &d,
        certs.path(),
        port,
        &format!(
            "$HTTP[\"host\"] == \"b.test\" {{ ssl.pemfile = \"{c}/b.pem\" }}\n\
             $HTTP[\"host\"] =~ \"\\.wild\\.test$\" {{ ssl.pemfile = \"{c}/wild.pem\" }}\n"
        ),
    );
    // Each name verifies only if glint sent that name's certificate.
    for host in ["a.test", "b.test", "x.wild.test"] {
        let o = curl(
            certs.path(),
            host,
            port,
            "/index.html",
            &["-w", "|%{http_version}"],
        );
        assert!(o.status.success(), "{host}: {}", text(&o.stderr));
        // ALPN picks HTTP/2 (server.h2proto, on by default as in lighttpd).
        assert_eq!(text(&o.stdout), "hello over tls\n|2", "{host}");
    }
    // A wildcard covers one label only.
    let o = curl(certs.path(), "y.x.wild.test", port, "/index.html", &[]);
    assert!(!o.status.success(), "a wildcard must not cover two labels");
}

#[test]
fn tls_versions_resumption_and_a_large_file() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let big = pseudo_random(3 * 1024 * 1024 + 17, 3);
    d.file("big.bin", &big);
    let port = free_port();
    let _s = tls_server(&d, certs.path(), port, "");
    let sess = certs.join("sess.pem");
    for v in ["-tls1_2", "-tls1_3"] {
        let _ = std::fs::remove_file(&sess);
        for (round, flag) in [(0, "-sess_out"), (1, "-sess_in")] {
            let o = Command::new("openssl")
                .args(["s_client", v, "-ign_eof", "-connect"])
                .arg(format!("127.0.0.1:{port}"))
                .args(["-servername", "a.test", "-CAfile"])
                .arg(certs.join("ca.pem"))
                .arg(flag)
                .arg(&sess)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    if let Some(mut i) = c.stdin.take() {
                        let _ = i.write_all(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
                    }
                    c.wait_with_output()
                })
                .expect("openssl s_client");
            let out = text(&o.stdout);
            assert!(out.contains("hello over tls"), "{v} round {round}: {out}");
            assert!(out.contains("Verify return code: 0"), "{v}: {out}");
            if round == 1 {
                assert!(
                    out.contains("Reused"),
                    "{v}: the session was not resumed: {out}"
                );
            }
        }
    }
    // 3 MiB through TLS records, read from the file in pieces.
    let o = curl(certs.path(), "a.test", port, "/big.bin", &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        o.stdout == big,
        "the file arrived changed ({} bytes)",
        o.stdout.len()
    );
}

/// Sends `bytes` to the TLS port and reads what comes back until the close
/// (or `limit`).
fn poke(port: u16, bytes: &[u8], limit: Duration) -> (Vec<u8>, bool) {
    let mut s = connect_tcp(std::net::SocketAddr::from(([127, 0, 0, 1], port))).expect("connect");
    use std::io::Write;
    let _ = s.write_all(bytes);
    drain_all(&mut s, limit)
}

fn drain_all(s: &mut std::net::TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    use std::io::Read;
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let end = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

#[test]
fn hostile_input_on_the_tls_port_ends_only_its_own_connection() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    let _s = tls_server(&d, certs.path(), port, "server.max-read-idle = 2\n");
    // Plain HTTP: a short 400 in clear, then the close.
    let (got, closed) = poke(
        port,
        b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n",
        TIMEOUT,
    );
    assert!(
        closed && text(&got).starts_with("HTTP/1.1 400"),
        "{:?}",
        text(&got)
    );
    // Garbage that is not HTTP: an alert or nothing, and the close.
    let (got, closed) = poke(port, b"\x16\x03\x01\x00\x05hello-not-tls", TIMEOUT);
    assert!(closed, "garbage left the connection open");
    assert!(!text(&got).contains("hello over tls"));
    // A handshake that stalls is cut at the time-out, while others are served.
    let mut stalled =
        connect_tcp(std::net::SocketAddr::from(([127, 0, 0, 1], port))).expect("connect");
    {
        use std::io::Write;
        let _ = stalled.write_all(b"\x16\x03\x01");
    }
    let o = curl(certs.path(), "a.test", port, "/index.html", &[]);
    assert_eq!(text(&o.stdout), "hello over tls\n", "{}", text(&o.stderr));
    let t0 = Instant::now();
    let (_, closed) = drain_all(&mut stalled, Duration::from_secs(8));
    assert!(closed, "a stalled handshake was kept");
    assert!(
        t0.elapsed() < Duration::from_secs(6),
        "closed only after {:?}",
        t0.elapsed()
    );
    // A ClientHello written one byte at a time still completes.
    let script = format!(
        r#"
import socket, ssl, time
ctx = ssl.create_default_context(cafile="{ca}")
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inc, out, server_hostname="a.test")
s = socket.create_connection(("127.0.0.1", {port}))
s.settimeout(5)
while True:
    try:
        obj.do_handshake(); break
    except ssl.SSLWantReadError:
        data = out.read()
        for i in range(len(data)):
            s.sendall(data[i:i+1]); time.sleep(0.001)
        got = s.recv(65536)
        if not got: raise SystemExit("closed during the handshake")
        inc.write(got)
obj.write(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
s.sendall(out.read())
resp = b""
while True:
    d = s.recv(65536)
    if not d: break
    inc.write(d)
    try:
        while True:
            chunk = obj.read(65536)
            if not chunk: break
            resp += chunk
    except (ssl.SSLWantReadError, ssl.SSLZeroReturnError): pass
print(resp.decode(errors="replace"))
"#,
        ca = certs.join("ca.pem").display()
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("python3");
    assert!(
        text(&o.stdout).contains("hello over tls"),
        "{} {}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

#[test]
fn client_certificates_and_gateways_see_https() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    let backend = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/backends/scgi_app.py"))
        .arg("tcp")
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 scgi_app.py");
    let mut backend = KillOnDrop(backend);
    let be_port = {
        use std::io::BufRead;
        let mut line = String::new();
        let out = backend.0.stdout.take().expect("stdout");
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .expect("ready line");
        line.trim().trim_start_matches("ready ").to_string()
    };
    let c = certs.path().display();
    let _s = tls_server(
        &d,
        certs.path(),
        port,
        &format!(
            "server.modules += ( \"mod_scgi\" )\n\
             $SERVER[\"socket\"] == \"127.0.0.1:{port}\" {{\n\
               ssl.ca-file = \"{c}/ca.pem\"\n\
               ssl.verifyclient.activate = \"enable\"\n\
               ssl.verifyclient.enforce = \"enable\"\n\
               ssl.verifyclient.username = \"SSL_CLIENT_S_DN_CN\"\n}}\n\
             scgi.server = ( \"/app\" => (( \"host\" => \"127.0.0.1\", \"port\" => {be_port}, \"check-local\" => \"disable\" )) )\n\
             $HTTP[\"scheme\"] == \"https\" {{ setenv.add-response-header = ( \"X-Scheme\" => \"https\" ) }}\n"
        ),
    );
    // Without a certificate the handshake is refused.
    let o = curl(certs.path(), "a.test", port, "/index.html", &[]);
    assert!(!o.status.success(), "served without a client certificate");
    let cert = certs.join("client.crt").display().to_string();
    let key = certs.join("client.key").display().to_string();
    let with_cert = ["--cert", cert.as_str(), "--key", key.as_str()];
    let o = curl(
        certs.path(),
        "a.test",
        port,
        "/index.html",
        &[&with_cert[..], &["-i"]].concat(),
    );
    let out = text(&o.stdout);
    assert!(out.contains("hello over tls"), "{out} {}", text(&o.stderr));
    assert!(
        out.to_ascii_lowercase().contains("x-scheme: https"),
        "$HTTP[\"scheme\"]: {out}"
    );
    // A directory redirect is a path (as lighttpd's without
    // server.absolute-dir-redirect): the client resolves it against https.
    let o = curl(
        certs.path(),
        "a.test",
        port,
        "/dir",
        &[&with_cert[..], &["-i"]].concat(),
    );
    // (HTTP/2 by ALPN: field names are lowercase.)
    let out = text(&o.stdout).to_ascii_lowercase();
    assert!(out.contains("location: /dir/\r\n"), "{out}");
    // The backend sees the scheme, the TLS variables and the client's name.
    let o = curl(certs.path(), "a.test", port, "/app/env", &with_cert);
    let env = text(&o.stdout);
    for want in [
        "HTTPS=on",
        "REQUEST_SCHEME=https",
        "SSL_PROTOCOL=TLSv1.3",
        "SSL_CLIENT_VERIFY=SUCCESS",
        "SSL_CLIENT_S_DN_CN=alice",
        "REMOTE_USER=alice",
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing in:\n{env}");
    }
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sigusr1_renews_the_certificate_without_a_failed_request() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    let live = certs.join("live.pem");
    std::fs::copy(certs.join("a.pem"), &live).expect("copy");
    let conf = format!(
        "server.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{port}\" {{\n  ssl.engine = \"enable\"\n  ssl.pemfile = \"{live}\"\n}}\n",
        root = d.root.display(),
        live = live.display()
    );
    let s = Launch::new().config(&conf).listeners(2).start();
    // A client making new TLS connections all along, counting failures;
    // it prints the serial of the last certificate it saw.
    let script = format!(
        r#"
import socket, ssl, time
ctx = ssl.create_default_context(cafile="{ca}")
fails = 0; n = 0; last = None
end = time.time() + 4
while time.time() < end and n < 2000:
    try:
        with socket.create_connection(("127.0.0.1", {port}), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="{host}") as t:
                t.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    d = t.recv(65536)
                    if not d: break
                    data += d
                if b"hello over tls" not in data: fails += 1
                last = t.getpeercert()["serialNumber"]
    except Exception as e:
        fails += 1
    n += 1
print(n, fails, last)
"#,
        ca = certs.join("ca.pem").display(),
        host = "a.test"
    );
    let client = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    std::thread::sleep(Duration::from_millis(1200));
    // Renew: a new certificate for the same name, then SIGUSR1.
    let renew = "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=a.test \
         -keyout r.key -out r.csr 2>/dev/null && printf 'subjectAltName=DNS:a.test\\n' > r.ext && \
         openssl x509 -req -in r.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 -extfile r.ext \
         -out r.crt 2>/dev/null && cat r.crt r.key > live.new && mv live.new live.pem";
    assert!(Command::new("sh")
        .arg("-c")
        .arg(renew)
        .current_dir(certs.path())
        .status()
        .expect("sh")
        .success());
    let new_serial = {
        let o = Command::new("openssl")
            .args(["x509", "-noout", "-serial", "-in"])
            .arg(certs.join("r.crt"))
            .output()
            .expect("openssl x509");
        text(&o.stdout)
            .trim()
            .trim_start_matches("serial=")
            .to_string()
    };
    s.signal(SIGUSR1);
    let o = client.wait_with_output().expect("client");
    let out = text(&o.stdout);
    let parts: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(parts.len(), 3, "{out}");
    assert!(
        parts[0].parse::<u32>().unwrap_or(0) > 20,
        "too few requests: {out}"
    );
    assert_eq!(parts[1], "0", "requests failed across the reload: {out}");
    assert_eq!(
        parts[2].to_ascii_uppercase(),
        new_serial.to_ascii_uppercase(),
        "the renewed certificate is not served: {out}"
    );
}

#[test]
fn debians_10_ssl_conf_works() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    // /etc/lighttpd/conf-available/10-ssl.conf of Debian's lighttpd
    // 1.4.69, with the test's certificate and a loopback socket (its
    // include_shell for [::]:443 left out).
    let ssl_conf = format!(
        "# /usr/share/doc/lighttpd/ssl.txt\n\
         # -*- conflicts: mbedtls, gnutls, nss, wolfssl -*-\n\n\
         server.modules += ( \"mod_openssl\" )\n\n\
         # ssl.* in global scope gets inherited by\n\
         #   $SERVER[\"socket\"] == \"...\" {{ ssl.engine = \"enable\" }}\n\
         ssl.pemfile = \"{}/a.pem\"\n\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{port}\" {{\n\tssl.engine  = \"enable\"\n}}\n",
        certs.path().display()
    );
    let dir = TempDir::new("debconf");
    std::fs::write(dir.join("10-ssl.conf"), ssl_conf).expect("write");
    let main = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.modules = ( \"mod_indexfile\", \"mod_access\", \"mod_redirect\" )\n\
         include \"{}/10-ssl.conf\"\n",
        d.root.display(),
        dir.path().display()
    );
    let _s = Launch::new().config(&main).listeners(2).start();
    let o = curl(certs.path(), "a.test", port, "/", &[]);
    assert_eq!(text(&o.stdout), "hello over tls\n", "{}", text(&o.stderr));
}

/// Python's `ssl` client of the tests below: `fetch()` sends one
/// `GET /index.html` with `Connection: close` to the TLS port (argv 1,
/// verified against the CA in argv 2) and returns the whole answer.
const PY_FETCH: &str = r#"
import socket, ssl, sys, threading, time
port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)
def fetch(timeout):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        with ctx.wrap_socket(raw, server_hostname="a.test") as s:
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
            got = b""
            while True:
                d = s.recv(65536)
                if not d:
                    return got
                got += d
"#;

/// Runs [`PY_FETCH`] then `script` (bounded by `timeout 90`) against
/// `port` with the CA of `certs` and `more` arguments; its standard output.
fn py_tls_client(script: &str, port: u16, certs: &Path, more: &[String]) -> String {
    let o = Command::new("timeout")
        .arg("90")
        .arg("python3")
        .arg("-c")
        .arg(format!("{PY_FETCH}{script}"))
        .arg(port.to_string())
        .arg(certs.join("ca.pem"))
        .args(more)
        .output()
        .expect("python3");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}\n{out}", text(&o.stderr));
    out
}

/// A burst of new TLS clients past the handshakes' share of the slots
/// (half of `server.max-connections`) waits in the backlog for a handshake
/// to end instead of being refused: 40 clients at once on 16 slots (8
/// handshakes at a time), one request each with `Connection: close`, every
/// one answered 200 (Python's `ssl`, a thread per client).
#[test]
fn a_burst_of_tls_clients_past_the_handshake_share_is_answered_in_full() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    let _s = tls_server(&d, certs.path(), port, "server.max-connections = 16\n");
    let script = r#"
ok, failed, start = [], [], threading.Barrier(40)
def one():
    start.wait()
    try:
        got = fetch(20)
        if got.startswith(b"HTTP/1.1 200") and got.endswith(b"hello over tls\n"):
            ok.append(1)
        else:
            failed.append(repr(got[:60]))
    except Exception as e:
        failed.append(repr(e))
ts = [threading.Thread(target=one) for _ in range(40)]
for t in ts: t.start()
for t in ts: t.join(60)
print("ok=%d failed=%d first=%s" % (len(ok), len(failed), failed[:1]))
"#;
    let out = py_tls_client(script, port, certs.path(), &[]);
    assert!(
        out.starts_with("ok=40 failed=0"),
        "every client of the burst must be answered: {out}"
    );
}

/// Connections to the TLS port that never send a byte (a flood that holds
/// slots) give them up to real clients waiting behind them after
/// `SILENT_HANDSHAKE_US` (2 s), not after the handshake time-out (10 s):
/// 8 silent ones fill the handshakes' share of 16 slots (a real client,
/// Python's `ssl`, answered within 5 s; 9.6 s before), then 16 silent ones
/// come in two batches, the second accepted as the first goes (within 9 s;
/// 19.5 s before). Each silent connection's 2 s count from its accept.
#[test]
fn silent_connections_on_the_tls_port_give_their_slots_to_waiting_clients() {
    let certs = TempDir::new("certs");
    make_certs(certs.path());
    let d = fixture();
    let port = free_port();
    let _s = tls_server(&d, certs.path(), port, "server.max-connections = 16\n");
    let script = r#"
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(int(sys.argv[3]))]
time.sleep(0.3)
t0 = time.monotonic()
got = fetch(30)
print("status=%s secs=%.2f" % (got[9:12].decode(), time.monotonic() - t0))
"#;
    for (silent, bound) in [(8, 5.0), (16, 9.0)] {
        let out = py_tls_client(script, port, certs.path(), &[silent.to_string()]);
        let secs: f64 = out
            .split("secs=")
            .nth(1)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no time in {out:?}"));
        assert!(out.starts_with("status=200"), "{silent} silent: {out}");
        assert!(
            secs < bound,
            "behind {silent} silent connections a client waited {secs} s: {out}"
        );
    }
}
