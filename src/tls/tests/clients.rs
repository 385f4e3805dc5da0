//! curl, `openssl s_client` and Python's `ssl` against the test server.

use std::process::Command;

use super::*;

fn curl(pki: &Pki, srv: &Server, host: &str, extra: &[&str]) -> (bool, String) {
    let port = srv.addr.port();
    let resolve = format!("{host}:{port}:127.0.0.1");
    let url = format!("https://{host}:{port}/");
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "--max-time",
        "10",
        "--cacert",
        &pki.p("ca.pem"),
        "--resolve",
        &resolve,
    ]);
    cmd.args(extra).arg(&url);
    run(&mut cmd, b"")
}

fn s_client(srv: &Server, pki: &Pki, args: &[&str]) -> (bool, String) {
    let connect = format!("127.0.0.1:{}", srv.addr.port());
    let mut cmd = Command::new("openssl");
    cmd.args([
        "s_client",
        "-connect",
        &connect,
        "-CAfile",
        &pki.p("ca.pem"),
        "-ign_eof",
    ]);
    cmd.args(args);
    run(&mut cmd, b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n")
}

fn basic_pki(tag: &str) -> Pki {
    let pki = Pki::new(tag);
    pki.server("a", "a.example");
    pki
}

#[test]
fn curl_sni_picks_certificates_and_wildcards_cover_one_label() {
    need("openssl");
    need("curl");
    let pki = basic_pki("sni");
    pki.server("b", "b.example");
    pki.cert(
        "wild",
        "/CN=wild",
        &["*.wild.example"],
        "serverAuth",
        30,
        Some("ca"),
    );
    let socket = SocketOptions {
        scope: scope(&pki, "a"),
        hosts: vec![
            (HostMatch::Exact("B.example".into()), scope(&pki, "b")),
            (
                HostMatch::Exact("www.wild.example".into()),
                scope(&pki, "wild"),
            ),
        ],
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    for host in [
        "a.example",
        "b.example",
        "www.wild.example",
        "other.wild.example",
    ] {
        let (ok, out) = curl(&pki, &srv, host, &["--http1.1"]);
        assert!(ok, "{host}: {out}");
        assert!(
            out.contains(&format!("sni={host} alpn=http/1.1 ")),
            "{host}: {out}"
        );
    }
    // The wildcard covers one label only: the socket's a.example answers,
    // and curl refuses it for this name.
    let (ok, out) = curl(&pki, &srv, "deep.x.wild.example", &[]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("subject name") || out.contains("certificate"),
        "{out}"
    );
    // Offered h2 and http/1.1 with h2 off: http/1.1.
    let (ok, out) = curl(&pki, &srv, "a.example", &["--http2"]);
    assert!(ok && out.contains("alpn=http/1.1"), "{out}");
}

#[test]
fn openssl_tls12_and_tls13_resume_with_tickets() {
    need("openssl");
    let pki = basic_pki("resume");
    let socket = SocketOptions {
        scope: scope(&pki, "a"),
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    for (flag, version) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
        let sess = pki.p(&format!("sess{flag}"));
        let base = ["-servername", "a.example", "-verify_return_error", flag];
        let (ok, out) = s_client(&srv, &pki, &[&base[..], &["-sess_out", &sess]].concat());
        assert!(ok, "{out}");
        assert!(
            out.contains(&format!("New, {version}")) || out.contains("New, TLSv1/SSLv3"),
            "{out}"
        );
        assert!(
            out.contains(&format!("version={version} ")) && out.contains("resumed=false"),
            "{out}"
        );
        assert!(out.contains("Verify return code: 0 (ok)"), "{out}");
        let (ok, out) = s_client(&srv, &pki, &[&base[..], &["-sess_in", &sess]].concat());
        assert!(ok, "{out}");
        assert!(out.contains("Reused, "), "{version} not resumed: {out}");
        assert!(out.contains("resumed=true"), "{out}");
    }
    // lighttpd's default cipher order, server preference off: the client's
    // first choice (OpenSSL prefers AES-256-GCM).
    let (ok, out) = s_client(&srv, &pki, &["-servername", "a.example", "-tls1_2"]);
    assert!(
        ok && out.contains("cipher=ECDHE-ECDSA-AES256-GCM-SHA384"),
        "{out}"
    );
}

#[test]
fn openssl_alpn_h2_when_enabled_and_tickets_off() {
    need("openssl");
    let pki = basic_pki("alpn");
    let socket = SocketOptions {
        scope: scope(&pki, "a"),
        h2: true,
        ssl_conf_cmd: vec![("Options".into(), "-SessionTicket".into())],
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    let (ok, out) = s_client(
        &srv,
        &pki,
        &["-servername", "a.example", "-alpn", "h2,http/1.1"],
    );
    assert!(ok && out.contains("ALPN protocol: h2"), "{out}");
    let sess = pki.p("sess");
    for v in ["-tls1_2", "-tls1_3"] {
        let (ok, out) = s_client(
            &srv,
            &pki,
            &["-servername", "a.example", v, "-sess_out", &sess],
        );
        assert!(ok, "{out}");
        // With no ticket and no cache s_client may have nothing to save;
        // if it saved a session, it must not resume.
        if std::path::Path::new(&sess).exists() {
            let (_, out) = s_client(
                &srv,
                &pki,
                &["-servername", "a.example", v, "-sess_in", &sess],
            );
            assert!(
                out.contains("New, ") && !out.contains("Reused, "),
                "{v}: {out}"
            );
        }
    }
}

fn client_pki() -> Pki {
    let pki = basic_pki("client");
    pki.cert(
        "alice",
        "/C=DE/O=Glint Test/CN=alice/emailAddress=alice@example.org",
        &[],
        "clientAuth",
        30,
        Some("ca"),
    );
    pki.cert("bob", "/CN=bob", &[], "clientAuth", 30, Some("ca"));
    pki.cert("mallory", "/CN=mallory", &[], "clientAuth", 30, None);
    pki
}

fn verify_scope(pki: &Pki, enforce: bool) -> ScopeOptions {
    ScopeOptions {
        ca_file: Some(pki.p("ca.pem")),
        verifyclient_activate: Some(true),
        verifyclient_enforce: Some(enforce),
        verifyclient_username: Some("SSL_CLIENT_S_DN_CN".into()),
        verifyclient_exportcert: Some(true),
        ..scope(pki, "a")
    }
}

fn with_cert(pki: &Pki, who: &str) -> Vec<String> {
    vec![
        "-cert".into(),
        pki.p(&format!("{who}.pem")),
        "-key".into(),
        pki.p(&format!("{who}.key")),
    ]
}

fn s_client_as(srv: &Server, pki: &Pki, who: Option<&str>, version: &str) -> (bool, String) {
    let mut args: Vec<String> = vec!["-servername".into(), "a.example".into(), version.into()];
    if let Some(w) = who {
        args.extend(with_cert(pki, w));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    s_client(srv, pki, &refs)
}

#[test]
fn openssl_client_certificates_enforced() {
    need("openssl");
    let pki = client_pki();
    let socket = SocketOptions {
        scope: verify_scope(&pki, true),
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    for v in ["-tls1_2", "-tls1_3"] {
        let (ok, out) = s_client_as(&srv, &pki, Some("alice"), v);
        assert!(ok, "{out}");
        assert!(out.contains("verify=SUCCESS user=alice "), "{v}: {out}");
        assert!(
            out.contains("dn=C = DE, O = Glint Test, CN = alice, emailAddress = alice@example.org exported=true"),
            "{out}"
        );
        assert!(
            out.contains("Acceptable client certificate CA names\nCN = glint test CA"),
            "{out}"
        );
        for who in [None, Some("mallory")] {
            let (_, out) = s_client_as(&srv, &pki, who, v);
            assert!(!out.contains("HTTP/1.1 200"), "{v} {who:?} got in: {out}");
        }
    }
}

#[test]
fn openssl_client_certificates_optional_report_none_and_failed() {
    need("openssl");
    let pki = client_pki();
    let socket = SocketOptions {
        scope: verify_scope(&pki, false),
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    let (ok, out) = s_client_as(&srv, &pki, None, "-tls1_3");
    assert!(ok && out.contains("verify=NONE user= "), "{out}");
    let (ok, out) = s_client_as(&srv, &pki, Some("mallory"), "-tls1_3");
    assert!(
        ok && out.contains("verify=FAILED:") && out.contains("user= "),
        "{out}"
    );
}

#[test]
fn openssl_client_certificate_revoked_by_crl() {
    need("openssl");
    let pki = client_pki();
    std::fs::write(pki.path("index.txt"), "").unwrap();
    std::fs::write(pki.path("crlnumber"), "01\n").unwrap();
    let cnf = format!(
        "[ca]\ndefault_ca = d\n[d]\ndatabase = {}\ncrlnumber = {}\ndefault_md = sha256\ndefault_crl_days = 7\n",
        pki.p("index.txt"),
        pki.p("crlnumber")
    );
    std::fs::write(pki.path("ca.cnf"), cnf).unwrap();
    pki.openssl(&[
        "ca",
        "-config",
        "ca.cnf",
        "-keyfile",
        "ca.key",
        "-cert",
        "ca.pem",
        "-revoke",
        "alice.pem",
    ]);
    pki.openssl(&[
        "ca", "-config", "ca.cnf", "-keyfile", "ca.key", "-cert", "ca.pem", "-gencrl", "-out",
        "crl.pem",
    ]);
    let socket = SocketOptions {
        scope: ScopeOptions {
            ca_crl_file: Some(pki.p("crl.pem")),
            ..verify_scope(&pki, true)
        },
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    let (_, out) = s_client_as(&srv, &pki, Some("alice"), "-tls1_2");
    assert!(!out.contains("HTTP/1.1 200"), "revoked alice got in: {out}");
    let (ok, out) = s_client_as(&srv, &pki, Some("bob"), "-tls1_2");
    assert!(ok && out.contains("verify=SUCCESS user=bob "), "{out}");
}

#[test]
fn openssl_ocsp_staple_served_and_refreshed() {
    need("openssl");
    let pki = basic_pki("ocsp");
    std::fs::write(pki.path("index.txt"), "").unwrap();
    let ocsp = |days: &str, out: &str| {
        pki.openssl(&[
            "ocsp",
            "-index",
            "index.txt",
            "-rsigner",
            "ca.pem",
            "-rkey",
            "ca.key",
            "-CA",
            "ca.pem",
            "-issuer",
            "ca.pem",
            "-cert",
            "a.pem",
            "-respout",
            out,
            "-ndays",
            days,
        ])
    };
    ocsp("2", "a.ocsp");
    let socket = SocketOptions {
        scope: ScopeOptions {
            stapling_file: Some(pki.p("a.ocsp")),
            ..scope(&pki, "a")
        },
        ..Default::default()
    };
    let ctx = context(&socket, &ServerOptions::default());
    let srv = serve(ctx.clone(), None);
    let next_update = |out: &str| {
        out.lines()
            .find(|l| l.contains("Next Update:"))
            .map(str::trim)
            .map(String::from)
    };
    let (ok, out) = s_client(&srv, &pki, &["-servername", "a.example", "-status"]);
    assert!(
        ok && out.contains("OCSP Response Status: successful"),
        "{out}"
    );
    let first = next_update(&out).expect("a Next Update line");
    // A renewed response (newer mtime) is picked up at the next check.
    ocsp("3", "a.new");
    std::fs::rename(pki.path("a.new"), pki.path("a.ocsp")).unwrap();
    let later = tickets::unix_now() + 64;
    std::fs::File::options()
        .write(true)
        .open(pki.path("a.ocsp"))
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(later as u64))
        .unwrap();
    ctx.refresh_staples(later);
    let (ok, out) = s_client(&srv, &pki, &["-servername", "a.example", "-status"]);
    assert!(ok, "{out}");
    assert_ne!(next_update(&out).as_deref(), Some(first.as_str()), "{out}");
    // Past nextUpdate the staple is dropped.
    ctx.refresh_staples(later + 4 * 86400);
    let (ok, out) = s_client(&srv, &pki, &["-servername", "a.example", "-status"]);
    assert!(
        ok && out.contains("OCSP response: no response sent"),
        "{out}"
    );
}

#[test]
fn openssl_acme_tls_alpn_challenge() {
    need("openssl");
    let pki = basic_pki("acme");
    std::fs::create_dir_all(pki.path("acme")).unwrap();
    pki.cert(
        "acme/a.example",
        "/CN=acme-challenge",
        &["a.example"],
        "serverAuth",
        1,
        None,
    );
    std::fs::rename(
        pki.path("acme/a.example.pem"),
        pki.path("acme/a.example.crt.pem"),
    )
    .unwrap();
    std::fs::rename(
        pki.path("acme/a.example.key"),
        pki.path("acme/a.example.key.pem"),
    )
    .unwrap();
    let socket = SocketOptions {
        scope: ScopeOptions {
            acme_tls_1: Some(pki.p("acme")),
            ..scope(&pki, "a")
        },
        ..Default::default()
    };
    let srv = serve(context(&socket, &ServerOptions::default()), None);
    let (_, out) = s_client(
        &srv,
        &pki,
        &["-servername", "a.example", "-alpn", "acme-tls/1"],
    );
    assert!(out.contains("ALPN protocol: acme-tls/1"), "{out}");
    assert!(out.contains("subject=CN = acme-challenge"), "{out}");
    assert!(!out.contains("HTTP/1.1 200"), "{out}");
    assert!(srv
        .log
        .lock()
        .unwrap()
        .contains(&"acme a.example".to_string()));
    let (ok, out) = s_client(&srv, &pki, &["-servername", "a.example"]);
    assert!(ok && out.contains("subject=CN = a.example"), "{out}");
    // No challenge certificate for that name: the handshake fails.
    let (_, out) = s_client(
        &srv,
        &pki,
        &["-servername", "b.example", "-alpn", "acme-tls/1"],
    );
    assert!(!out.contains("ALPN protocol: acme-tls/1"), "{out}");
}

const PY_CLIENT: &str = r#"
import hashlib, socket, ssl, sys
cafile, port, host, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=cafile)
ctx.set_alpn_protocols(["http/1.1"])
with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
    with ctx.wrap_socket(s, server_hostname=host) as t:
        t.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n")
        data = b""
        while True:
            d = t.recv(65536)
            if not d:
                break
            data += d
        head, _, body = data.partition(b"\r\n\r\n")
        print(t.version(), t.selected_alpn_protocol(), len(body), hashlib.sha256(body).hexdigest())
        print(body[:200].decode(errors="replace"))
"#;

#[test]
fn python_ssl_client_and_a_file_sent_in_records() {
    need("openssl");
    need("python3");
    let pki = basic_pki("python");
    // 1 MiB + 123 bytes: many records, and more than the send buffer, so
    // back-pressure is exercised.
    let data: Vec<u8> = (0..(1u32 << 20) + 123)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(pki.path("body.bin"), &data).unwrap();
    let socket = SocketOptions {
        scope: scope(&pki, "a"),
        ..Default::default()
    };
    let srv = serve(
        context(&socket, &ServerOptions::default()),
        Some(pki.path("body.bin")),
    );
    let port = srv.addr.port().to_string();
    let py = |path: &str| {
        run(
            Command::new("python3").args([
                "-c",
                PY_CLIENT,
                &pki.p("ca.pem"),
                &port,
                "a.example",
                path,
            ]),
            b"",
        )
    };
    let (ok, out) = py("/");
    assert!(ok, "{out}");
    assert!(out.starts_with("TLSv1.3 http/1.1 "), "{out}");
    assert!(
        out.contains("sni=a.example alpn=http/1.1 version=TLSv1.3"),
        "{out}"
    );
    let (ok, out) = py("/file");
    assert!(ok, "{out}");
    let sha = {
        let o = Command::new("sha256sum")
            .arg(pki.path("body.bin"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string()
    };
    assert!(out.contains(&format!(" {} {sha}", data.len())), "{out}");
}

#[test]
fn openssl_ssl_conf_cmd_reaches_the_handshake() {
    need("openssl");
    let pki = basic_pki("confcmd");
    let server = |cmds: &[(&str, &str)]| {
        let socket = SocketOptions {
            scope: scope(&pki, "a"),
            ssl_conf_cmd: cmds
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        serve(context(&socket, &ServerOptions::default()), None)
    };
    let suites = "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256";
    let client_order = [
        "-tls1_2",
        "-cipher",
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305",
    ];
    let srv = server(&[("CipherString", suites), ("Options", "ServerPreference")]);
    let (ok, out) = s_client(&srv, &pki, &client_order);
    assert!(
        ok && out.contains("cipher=ECDHE-ECDSA-CHACHA20-POLY1305 "),
        "server order: {out}"
    );
    let srv = server(&[("CipherString", suites)]);
    let (ok, out) = s_client(&srv, &pki, &client_order);
    assert!(
        ok && out.contains("cipher=ECDHE-ECDSA-AES128-GCM-SHA256 "),
        "client order: {out}"
    );
    let srv = server(&[("MinProtocol", "TLSv1.3"), ("Groups", "P-384")]);
    let (_, out) = s_client(&srv, &pki, &["-tls1_2"]);
    assert!(!out.contains("HTTP/1.1 200"), "TLS 1.2 refused: {out}");
    let (ok, out) = s_client(&srv, &pki, &["-tls1_3", "-groups", "X25519:P-384"]);
    assert!(
        ok && out.contains("Server Temp Key: ECDH, secp384r1"),
        "{out}"
    );
}
