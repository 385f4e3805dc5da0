//! Hostile input, truncated files, reload and `-tt`.

use std::collections::VecDeque;
use std::io;
use std::process::Command;

use super::*;

fn pki_and_server(tag: &str, file: Option<PathBuf>) -> (Pki, Server) {
    let pki = Pki::new(tag);
    pki.server("a", "a.example");
    let socket = SocketOptions {
        scope: scope(&pki, "a"),
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), file);
    (pki, srv)
}

fn curl_ok(pki: &Pki, srv: &Server, path: &str) -> (bool, String) {
    let port = srv.addr.port();
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "10", "--cacert", &pki.p("ca.pem")]);
    cmd.args(["--resolve", &format!("a.example:{port}:127.0.0.1")]);
    cmd.arg(format!("https://a.example:{port}{path}"));
    run(&mut cmd, b"")
}

#[test]
fn garbage_and_plain_http_end_only_their_own_connection() {
    need("openssl");
    need("curl");
    let (pki, srv) = pki_and_server("hostile", None);
    // Keep a real TLS connection open across the hostile ones.
    let mut held = std::net::TcpStream::connect(srv.addr).unwrap();
    let answer = raw_exchange(srv.addr, b"\x00\x01\x02\x03 this is no TLS at all \xff\xfe");
    assert!(
        answer.is_empty() || answer[0] == 0x15,
        "an alert or nothing: {answer:?}"
    );
    // A handshake record whose body is junk: rustls answers with an alert.
    let answer = raw_exchange(srv.addr, b"\x16\x03\x01\x00\x08\x01\x00\x00\x04junk");
    assert_eq!(answer.first(), Some(&0x15), "{answer:?}");
    let answer = raw_exchange(srv.addr, b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(
        head.contains(&format!("Content-Length: {}", body.len())),
        "{text}"
    );
    {
        let log = srv.log.lock().unwrap();
        assert_eq!(
            log.iter().filter(|l| l.starts_with("error: ")).count(),
            2,
            "{log:?}"
        );
        assert!(log.contains(&"plain-http".to_string()), "{log:?}");
    }
    let (ok, out) = curl_ok(&pki, &srv, "/");
    assert!(ok && out.contains("sni=a.example"), "{out}");
    // The held connection still gets its handshake.
    held.write_all(&client_hello()).unwrap();
    held.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut first = [0u8; 1];
    held.read_exact(&mut first).unwrap();
    assert_eq!(first[0], 0x16, "a ServerHello record");
}

fn client_config(pki: &Pki) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in load::certs(&pki.path("ca.pem")).unwrap() {
        roots.add(c).unwrap();
    }
    let provider = Arc::new(provider::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A real ClientHello (from a throwaway rustls client).
fn client_hello() -> Vec<u8> {
    let pki = Pki::new("hello");
    let name = "a.example".try_into().unwrap();
    let mut c = rustls::ClientConnection::new(client_config(&pki), name).unwrap();
    let mut out = Vec::new();
    c.write_tls(&mut out).unwrap();
    out
}

/// A socket that hands over one byte per read, with a would-block between.
#[derive(Default)]
struct Trickle {
    inbox: VecDeque<u8>,
    outbox: Vec<u8>,
    blocked: bool,
    reads: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.blocked = !self.blocked;
        match (self.blocked, self.inbox.pop_front()) {
            (true, Some(b)) if !buf.is_empty() => {
                buf[0] = b;
                self.reads += 1;
                Ok(1)
            }
            (_, b) => {
                if let Some(b) = b {
                    self.inbox.push_front(b);
                }
                Err(io::ErrorKind::WouldBlock.into())
            }
        }
    }
}

impl Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.outbox.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_client_hello_in_one_byte_reads_completes_the_handshake() {
    need("openssl");
    let pki = Pki::new("trickle");
    pki.server("a", "a.example");
    let ctx = context(
        &SocketOptions {
            scope: scope(&pki, "a"),
            ..Default::default()
        },
        &ServerOptions::default(),
    );
    let mut server = TlsConn::new(&ctx);
    let mut client =
        rustls::ClientConnection::new(client_config(&pki), "a.example".try_into().unwrap())
            .unwrap();
    let mut sock = Trickle::default();
    let mut hello_len = 0;
    client.writer().write_all(b"ping").unwrap();
    let mut got = Vec::new();
    for _ in 0..100_000 {
        let mut to_server = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut to_server).unwrap();
        }
        if hello_len == 0 {
            hello_len = to_server.len();
        }
        sock.inbox.extend(to_server);
        let st = server.read_tls_from(&mut sock).unwrap();
        assert!(st.plaintext <= 4);
        let mut buf = [0u8; 16];
        let n = server.read_plain(&mut buf);
        got.extend_from_slice(&buf[..n]);
        server.write_tls_to(&mut sock).unwrap();
        let out = std::mem::take(&mut sock.outbox);
        if !out.is_empty() {
            client.read_tls(&mut out.as_slice()).unwrap();
            client.process_new_packets().unwrap();
        }
        if got == b"ping" {
            break;
        }
    }
    assert_eq!(got, b"ping");
    assert!(
        sock.reads >= hello_len,
        "{} reads for a {hello_len}-byte hello",
        sock.reads
    );
    let info = server.info().unwrap();
    assert_eq!(info.sni.as_deref(), Some("a.example"));
    assert_eq!(info.version, "TLSv1.3");
}

#[test]
fn a_file_truncated_while_sent_closes_the_connection() {
    need("openssl");
    need("curl");
    let dir = std::env::temp_dir().join(format!("glint-tls-body-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("body");
    std::fs::write(&body, vec![b'x'; 100_000]).unwrap();
    let (pki, srv) = pki_and_server("short", Some(body.clone()));
    let (ok, out) = curl_ok(&pki, &srv, "/short");
    assert!(!ok, "curl must see the short body: {out}");
    let log = srv.log.lock().unwrap().clone();
    assert!(log.iter().any(|l| l.contains("file shrank")), "{log:?}");
    let (ok, out) = curl_ok(&pki, &srv, "/file");
    assert!(
        ok && out.len() == 100_000,
        "ok={ok} len={} tail={}",
        out.len(),
        &out[out.len().saturating_sub(300)..]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn served_cert(pki: &Pki, srv: &Server) -> String {
    let connect = format!("127.0.0.1:{}", srv.addr.port());
    let (_, out) = run(
        Command::new("openssl").args([
            "s_client",
            "-connect",
            &connect,
            "-servername",
            "a.example",
        ]),
        b"",
    );
    let _ = pki;
    let start = out
        .find("-----BEGIN CERTIFICATE-----")
        .expect("a certificate");
    let end = out.find("-----END CERTIFICATE-----").expect("its end");
    out[start..end].to_string()
}

fn pem_of(pki: &Pki, name: &str) -> String {
    let s = std::fs::read_to_string(pki.path(name)).unwrap();
    let end = s.find("-----END CERTIFICATE-----").unwrap();
    s[..end].to_string()
}

#[test]
fn reload_takes_new_files_and_keeps_the_old_on_failure() {
    need("openssl");
    need("curl");
    let (pki, srv) = pki_and_server("reload", None);
    let old = pem_of(&pki, "a.pem");
    assert_eq!(served_cert(&pki, &srv), old);
    pki.server("a", "a.example"); // renewed: same paths, new key and cert
    let new = pem_of(&pki, "a.pem");
    assert_ne!(old, new);
    srv.ctx.lock().unwrap().reload(None).expect("reload");
    assert_eq!(served_cert(&pki, &srv), new);
    // A broken key: the reload fails and the running config stays.
    std::fs::write(
        pki.path("a.key"),
        "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let err = srv.ctx.lock().unwrap().reload(None).unwrap_err();
    assert!(err.to_string().contains("a.key"), "{err}");
    assert_eq!(served_cert(&pki, &srv), new);
    let (ok, out) = curl_ok(&pki, &srv, "/");
    assert!(ok, "{out}");
}

#[test]
fn check_warns_of_expiry_and_refuses_a_mismatched_key() {
    need("openssl");
    let pki = Pki::new("check");
    // 90 days: a 30-day certificate is within the 30-day warning as soon
    // as a second passes between openssl and the check (a loaded machine).
    pki.cert(
        "a",
        "/CN=a.example",
        &["a.example"],
        "serverAuth",
        90,
        Some("ca"),
    );
    pki.cert(
        "soon",
        "/CN=soon.example",
        &["soon.example"],
        "serverAuth",
        10,
        Some("ca"),
    );
    let socket = SocketOptions {
        scope: scope(&pki, "a"),
        hosts: vec![(HostMatch::Exact("soon.example".into()), scope(&pki, "soon"))],
        ..Default::default()
    };
    let (spec, _) = TlsSpec::from_options(&socket, &ServerOptions::default()).unwrap();
    let warnings = check(&spec, tickets::unix_now()).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    // A staple that does not parse and a missing ACME directory warn too
    // (lighttpd goes on without the staple).
    std::fs::write(pki.path("bad.ocsp"), "not DER").unwrap();
    let noisy = SocketOptions {
        scope: ScopeOptions {
            stapling_file: Some(pki.p("bad.ocsp")),
            acme_tls_1: Some(pki.p("no-such-dir")),
            ..scope(&pki, "a")
        },
        ..Default::default()
    };
    let (spec2, _) = TlsSpec::from_options(&noisy, &ServerOptions::default()).unwrap();
    let w = check(&spec2, tickets::unix_now()).unwrap();
    assert!(
        w.iter().any(|l| l.contains("bad.ocsp")) && w.iter().any(|l| l.contains("no-such-dir")),
        "{w:?}"
    );
    // Issued for 10 days a moment ago: 9 or 10 whole days left.
    assert!(
        warnings[0].contains("soon.pem expires in 9 days")
            || warnings[0].contains("soon.pem expires in 10 days"),
        "{warnings:?}"
    );
    let bad = SocketOptions {
        scope: ScopeOptions {
            privkey: Some(pki.p("soon.key")),
            ..scope(&pki, "a")
        },
        ..Default::default()
    };
    let (spec, _) = TlsSpec::from_options(&bad, &ServerOptions::default()).unwrap();
    let err = check(&spec, tickets::unix_now()).unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
    // A combined pemfile (chain and key in one file) loads without ssl.privkey.
    let both = [
        std::fs::read(pki.path("a.pem")).unwrap(),
        std::fs::read(pki.path("a.key")).unwrap(),
    ]
    .concat();
    std::fs::write(pki.path("both.pem"), both).unwrap();
    let one = SocketOptions {
        scope: ScopeOptions {
            pemfile: Some(pki.p("both.pem")),
            ..Default::default()
        },
        ..Default::default()
    };
    let (spec, _) = TlsSpec::from_options(&one, &ServerOptions::default()).unwrap();
    assert_eq!(
        check(&spec, tickets::unix_now()).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn ktls_is_only_reported() {
    let listed =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_ulp").unwrap_or_default();
    assert_eq!(
        ktls_available(),
        listed.split_whitespace().any(|w| w == "tls")
    );
}

fn curl_name(pki: &Pki, srv: &Server, host: &str) -> (bool, String) {
    let port = srv.addr.port();
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "10", "--cacert", &pki.p("ca.pem")]);
    cmd.args(["--resolve", &format!("{host}:{port}:127.0.0.1")]);
    cmd.arg(format!("https://{host}:{port}/"));
    run(&mut cmd, b"")
}

/// `ssl.refresh-certs`: files replaced under a running server are served
/// from the next check on; a file that does not parse keeps the
/// certificate in use, and a later good one is read again.
#[test]
fn changed_certificate_files_are_picked_up_and_broken_ones_keep_the_old() {
    let (pki, srv) = pki_and_server("refresh", None);
    pki.server("b", "b.example");
    assert!(curl_name(&pki, &srv, "a.example").0);
    let refresh = || srv.ctx.lock().unwrap().refresh_certs();
    assert!(!refresh(), "unchanged files are not read again");
    // certbot's way: the new files are renamed over the old ones.
    for ext in ["pem", "key"] {
        std::fs::copy(
            pki.path(&format!("b.{ext}")),
            pki.path(&format!("new.{ext}")),
        )
        .unwrap();
        std::fs::rename(
            pki.path(&format!("new.{ext}")),
            pki.path(&format!("a.{ext}")),
        )
        .unwrap();
    }
    assert!(refresh(), "the new files are read");
    let (ok, out) = curl_name(&pki, &srv, "b.example");
    assert!(ok, "the new certificate is served: {out}");
    assert!(!curl_name(&pki, &srv, "a.example").0, "the old one is not");
    std::fs::write(pki.path("a.pem"), "-----BEGIN CERTIFICATE-----\nbroken\n").unwrap();
    assert!(!refresh(), "a broken file is not installed");
    assert!(
        curl_name(&pki, &srv, "b.example").0,
        "the running certificate stays"
    );
    std::fs::copy(pki.path("b.pem"), pki.path("a.pem")).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    let f = std::fs::File::options()
        .write(true)
        .open(pki.path("a.pem"))
        .unwrap();
    f.set_modified(later).unwrap();
    assert!(refresh(), "a repaired file is read again");
}
