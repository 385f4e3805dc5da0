//! mod_authn_ldap against a real OpenLDAP `slapd` (Debian's slapd and
//! ldap-utils), started by the test on 127.0.0.1 from a slapd.conf it
//! writes (mdb database loaded with slapadd): right and wrong passwords,
//! user names that try to widen the search filter, empty passwords,
//! `group=` rules (which lighttpd 1.4.69 never grants); the same configuration against lighttpd's own
//! mod_authn_ldap (Debian's lighttpd-mod-authn-ldap) must answer the same.
//! A directory that stops answering (SIGSTOP) holds up only the logins:
//! a static file is answered meanwhile, the login gets 401 after the
//! time-out, and once the directory is back logins work again.

mod common;

use common::*;
use nix::sys::signal::Signal::{SIGCONT, SIGSTOP};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

#[path = "authn_ldap/slapd.rs"]
mod slapd;
use slapd::{need, Slapd, STAFF, SUFFIX};

fn config(d: &Docroot, port: u16, extra: &str) -> String {
    let rule = |path: &str, require: &str| {
        format!("\"{path}\" => ( \"method\" => \"basic\", \"realm\" => \"dir\", \"require\" => \"{require}\" )")
    };
    format!(
        "server.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\nserver.modules += ( \"mod_auth\", \"mod_authn_ldap\" )\n\
         auth.backend = \"ldap\"\n\
         auth.backend.ldap.hostname = \"127.0.0.1:{port}\"\n\
         auth.backend.ldap.base-dn = \"ou=people,{SUFFIX}\"\n\
         auth.backend.ldap.filter = \"(&(objectClass=inetOrgPerson)(uid=$))\"\n\
         auth.backend.ldap.timeout = \"1000000\"\n\
         auth.require = ( {a}, {b}, {c}, {e}, {g}, {n} )\n\
         $HTTP[\"url\"] =~ \"^/dn/\" {{ auth.backend.ldap.filter = \",ou=people,{SUFFIX}\" }}\n\
         $HTTP[\"url\"] =~ \"^/empty/\" {{ auth.backend.ldap.allow-empty-pw = \"enable\" }}\n{extra}",
        root = d.root.display(),
        a = rule("/secret/", "valid-user"),
        b = rule("/staff/", &format!("group={STAFF}")),
        c = rule("/alice/", "user=alice"),
        e = rule("/empty/", "valid-user"),
        g = rule("/digest/", "valid-user").replace("\"basic\"", "\"digest\""),
        n = rule("/dn/", "valid-user"),
    )
}

fn docroot() -> Docroot {
    let d = Docroot::new();
    for p in [
        "secret/a.txt",
        "staff/a.txt",
        "alice/a.txt",
        "empty/a.txt",
        "digest/a.txt",
        "dn/a.txt",
        "open.txt",
    ] {
        d.file(p, b"content\n");
    }
    d
}

fn basic(user: &str, pw: &str) -> String {
    basic_auth(user, pw)
}

fn status(s: &Server, path: &str, user: &str, pw: &str) -> u16 {
    let auth = basic(user, pw);
    let mut c = s.connect();
    c.send(&get(path, &[&auth])).expect("send");
    c.read_response(false)
        .unwrap_or_else(|e| panic!("{path} as {user:?}: {e}"))
        .status
}

/// (path, user, password, status) as lighttpd answers.
const CASES: &[(&str, &str, &str, u16)] = &[
    ("/secret/a.txt", "alice", "alice-pw", 200),
    ("/secret/a.txt", "bob", "bob-pw", 200),
    ("/secret/a.txt", "alice", "wrong", 401),
    ("/secret/a.txt", "nobody", "alice-pw", 401),
    // The user name is one literal value: a filter unescaped would find
    // alice ("al*" is alice and albert: ambiguous; "ali*" only alice).
    ("/secret/a.txt", "ali*", "alice-pw", 401),
    ("/secret/a.txt", "*", "alice-pw", 401),
    ("/secret/a.txt", "alice)(uid=*", "alice-pw", 401),
    ("/secret/a.txt", "x)(|(uid=alice", "alice-pw", 401),
    ("/secret/a.txt", "alice\\", "alice-pw", 401),
    ("/secret/a.txt", "(alice)", "alice-pw", 401),
    // An empty password would be an anonymous bind: refused.
    ("/secret/a.txt", "alice", "", 401),
    ("/empty/a.txt", "alice", "", 401),
    ("/empty/a.txt", "alice", "alice-pw", 200),
    // lighttpd 1.4.69 searches groups with an empty base: a group=
    // rule never lets a member in.
    ("/staff/a.txt", "alice", "alice-pw", 401),
    ("/staff/a.txt", "bob", "bob-pw", 401),
    ("/alice/a.txt", "alice", "alice-pw", 200),
    ("/alice/a.txt", "bob", "bob-pw", 401),
    // The directory checks passwords, not digests: Digest is misconfigured.
    ("/digest/a.txt", "alice", "alice-pw", 500),
    // A filter starting with ',' names the DN: uid=<user, DN-escaped>,...
    ("/dn/a.txt", "alice", "alice-pw", 200),
    ("/dn/a.txt", "alice", "bob-pw", 401),
    ("/dn/a.txt", "bob,ou=people", "bob-pw", 401),
    ("/dn/a.txt", "bob+cn=bob", "bob-pw", 401),
    ("/dn/a.txt", "*", "alice-pw", 401),
    ("/open.txt", "", "", 200),
];

fn start_lighttpd_with(conf: &str) -> (Child, u16, TempDir) {
    let port = free_port();
    let dir = TempDir::new("lighttpd-ldap");
    let log = format!("server.errorlog = \"{}\"", dir.join("error.log").display());
    let text = conf
        .replace("{port}", &port.to_string())
        .replace("{errorlog}", &log);
    let path = dir.join("lighttpd.conf");
    std::fs::write(&path, text).expect("conf");
    let child = start_lighttpd(&path, port).unwrap_or_else(|e| {
        panic!(
            "{e} (apt-get install lighttpd lighttpd-mod-authn-ldap); error.log:\n{}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        )
    });
    (child, port, dir)
}

fn answers(get_status: impl Fn(&str, &str, &str) -> u16) -> Vec<u16> {
    CASES
        .iter()
        .map(|(path, user, pw, _)| get_status(path, user, pw))
        .collect()
}

#[test]
fn logins_answered_as_lighttpd_answers() {
    let dir = TempDir::new("slapd");
    let slapd = Slapd::start(&dir);
    let d = docroot();
    let conf = config(&d, slapd.port, "");
    let glint = Launch::new()
        .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    let ours = answers(|p, u, pw| status(&glint, p, u, pw));
    let (mut child, port, ldir) = start_lighttpd_with(&conf);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let theirs = answers(|p, u, pw| {
        let mut c = Conn::open(addr).expect("connect lighttpd");
        c.send(&get(p, &[&basic(u, pw)])).expect("send");
        c.read_response(false).expect("lighttpd answer").status
    });
    let _ = child.kill();
    let _ = child.wait();
    let mut bad = Vec::new();
    for (i, (path, user, pw, want)) in CASES.iter().enumerate() {
        if ours[i] != *want || theirs[i] != *want {
            bad.push(format!(
                "{path} as {user:?}/{pw:?}: glint {}, lighttpd {}, expected {want}",
                ours[i], theirs[i]
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{}\nglint:\n{}\nlighttpd:\n{}",
        bad.join("\n"),
        glint.stderr_tail(),
        std::fs::read_to_string(ldir.join("error.log")).unwrap_or_default()
    );
}

#[test]
fn a_stopped_directory_holds_up_only_the_logins() {
    let dir = TempDir::new("slapd");
    let mut slapd = Slapd::start(&dir);
    let d = docroot();
    let glint = Launch::new()
        .config(
            &config(&d, slapd.port, "")
                .replace("{port}", "0")
                .replace("{errorlog}", ""),
        )
        .start();
    assert_eq!(status(&glint, "/secret/a.txt", "alice", "alice-pw"), 200);
    signal(slapd.pid(), SIGSTOP);
    // Logins wait for the directory's time-out (1 s) on the worker threads.
    let addr = glint.addr();
    let waiting: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr).expect("connect");
                c.send(&get("/secret/a.txt", &[&basic("bob", "bob-pw")]))
                    .expect("send");
                let t = Instant::now();
                let r = c.read_response(false).map(|r| r.status);
                (r, t.elapsed())
            })
        })
        .collect();
    // Meanwhile the loop answers everyone else at once.
    for _ in 0..5 {
        let t = Instant::now();
        let r = glint.get("/open.txt").expect("static file");
        assert_eq!(r.status, 200);
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "a static file took {:?} while the directory hung",
            t.elapsed()
        );
    }
    for w in waiting {
        let (r, took) = w.join().expect("client thread");
        assert_eq!(r, Ok(401), "a login while the directory hangs");
        assert!(took < Duration::from_secs(8), "the time-out took {took:?}");
    }
    signal(slapd.pid(), SIGCONT);
    assert!(
        wait_for(TIMEOUT, || status(
            &glint,
            "/secret/a.txt",
            "alice",
            "alice-pw"
        ) == 200),
        "logins work again once the directory answers"
    );
    // Gone entirely: 401 at once; started again: logins work.
    slapd.kill();
    assert_eq!(status(&glint, "/secret/a.txt", "alice", "alice-pw"), 401);
    slapd.run(&need("slapd"));
    assert!(
        wait_for(TIMEOUT, || status(
            &glint,
            "/secret/a.txt",
            "alice",
            "alice-pw"
        ) == 200),
        "logins work again once the directory is back"
    );
}

#[test]
fn a_right_password_is_cached_with_auth_cache() {
    let dir = TempDir::new("slapd");
    let mut slapd = Slapd::start(&dir);
    let d = docroot();
    let glint = Launch::new()
        .config(
            &config(&d, slapd.port, "auth.cache = ( \"max-age\" => \"60\" )\n")
                .replace("{port}", "0")
                .replace("{errorlog}", ""),
        )
        .start();
    assert_eq!(status(&glint, "/secret/a.txt", "alice", "alice-pw"), 200);
    slapd.kill();
    // Cached: no directory needed; a wrong password is not cached.
    assert_eq!(status(&glint, "/secret/a.txt", "alice", "alice-pw"), 200);
    assert_eq!(status(&glint, "/secret/a.txt", "alice", "wrong"), 401);
    assert_eq!(status(&glint, "/secret/a.txt", "bob", "bob-pw"), 401);
}

#[test]
fn a_waiting_request_keeps_its_connection_and_body() {
    let dir = TempDir::new("slapd");
    let slapd = Slapd::start(&dir);
    let d = docroot();
    let glint = Launch::new()
        .config(
            &config(&d, slapd.port, "")
                .replace("{port}", "0")
                .replace("{errorlog}", ""),
        )
        .start();
    let auth = basic("alice", "alice-pw");
    let mut c = glint.connect();
    // Keep-alive across waits, a HEAD, and a body left unread while the
    // directory is asked, then dropped with the answer.
    let body = "x".repeat(3000);
    let post = format!(
        "POST /secret/a.txt HTTP/1.1\r\nHost: t\r\n{auth}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let keep = |m: &str| format!("{m} /secret/a.txt HTTP/1.1\r\nHost: t\r\n{auth}\r\n\r\n");
    c.send(keep("GET").as_bytes()).expect("send");
    let r = c.read_response(false).expect("first");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"content\n"[..]));
    c.send(keep("HEAD").as_bytes()).expect("send");
    let r = c.read_response(true).expect("head");
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty(), "HEAD has no body");
    c.send(post.as_bytes()).expect("send");
    let r = c.read_response(false).expect("post");
    let post_status = r.status;
    assert!(post_status >= 200, "{post_status}");
    c.send(keep("GET").as_bytes()).expect("send");
    let r = c.read_response(false).expect("after the post");
    assert_eq!(r.status, 200, "the connection goes on after a waited POST");
    // Pipelined: two requests in one write, both wait and are answered in order.
    let two = keep("GET") + &keep("GET");
    c.send(two.as_bytes()).expect("send");
    for i in 0..2 {
        let r = c
            .read_response(false)
            .unwrap_or_else(|e| panic!("pipelined {i}: {e}"));
        assert_eq!(r.status, 200, "pipelined {i}");
    }
}

#[test]
fn a_full_queue_answers_503_at_once() {
    let dir = TempDir::new("slapd");
    let slapd = Slapd::start(&dir);
    let d = docroot();
    // 6 s per check while the directory hangs: 4 run, 64 wait, more get 503.
    let conf = config(&d, slapd.port, "")
        .replace("\"1000000\"", "\"6000000\"")
        .replace("{port}", "0")
        .replace("{errorlog}", "");
    let glint = Launch::new().config(&conf).start();
    signal(slapd.pid(), SIGSTOP);
    let addr = glint.addr();
    let mut conns = Vec::new();
    for _ in 0..4 + 64 {
        let mut c = Conn::open(addr).expect("connect");
        c.send(&get("/secret/a.txt", &[&basic("bob", "bob-pw")]))
            .expect("send");
        conns.push(c);
    }
    // Each of those is queued once glint has read it; then one more is refused.
    let refused = wait_for(TIMEOUT, || {
        let t = Instant::now();
        let mut c = Conn::open(addr).expect("connect");
        c.send(&get("/secret/a.txt", &[&basic("bob", "bob-pw")]))
            .expect("send");
        let r = c.read_response_by(false, Instant::now() + Duration::from_secs(2));
        matches!(r, Ok(ref r) if r.status == 503 && t.elapsed() < Duration::from_secs(2))
    });
    signal(slapd.pid(), SIGCONT);
    assert!(
        refused,
        "no 503 with the queue full\n{}",
        glint.stderr_tail()
    );
    drop(conns);
    assert_eq!(glint.get("/open.txt").map(|r| r.status), Ok(200));
}

/// A CA and a certificate for `localhost` and for this machine's name
/// (libldap checks a loopback server's certificate against that name).
fn ldap_cert(dir: &Path) {
    let back = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let script = format!(
        "set -e\n\
         openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3 -subj /CN=ldap-test-ca -keyout ca.key -out ca.pem 2>/dev/null\n\
         openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -keyout s.key -out s.csr 2>/dev/null\n\
         printf 'subjectAltName=DNS:localhost,DNS:{back}\\nextendedKeyUsage=serverAuth\\n' > s.ext\n\
         openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 -extfile s.ext -out s.crt 2>/dev/null\n"
    );
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .expect("sh");
    assert!(ok.success(), "openssl could not make the test certificate");
}

/// StartTLS and ldaps:// with the directory's certificate checked against
/// `ca-file`; a CA that did not sign it refuses every login. lighttpd
/// answers the same over StartTLS.
#[test]
fn starttls_and_ldaps_check_the_directory_certificate() {
    let dir = TempDir::new("slapd");
    let certs = TempDir::new("ldap-certs");
    ldap_cert(certs.path());
    let other = TempDir::new("ldap-other-ca");
    ldap_cert(other.path());
    let slapd = Slapd::start_tls(&dir, Some(certs.path()));
    let tls_port = slapd.tls_port.unwrap_or(0);
    let d = docroot();
    let with = |host: String, starttls: bool, ca: &Path| {
        let extra = format!(
            "auth.backend.ldap.ca-file = \"{}\"\nauth.backend.ldap.starttls = \"{}\"\n",
            ca.join("ca.pem").display(),
            if starttls { "enable" } else { "disable" }
        );
        config(&d, slapd.port, &extra).replace(
            &format!("auth.backend.ldap.hostname = \"127.0.0.1:{}\"", slapd.port),
            &format!("auth.backend.ldap.hostname = \"{host}\""),
        )
    };
    let cases = [
        (
            format!("localhost:{}", slapd.port),
            true,
            certs.path(),
            200,
            "StartTLS",
        ),
        (
            format!("ldaps://localhost:{tls_port}"),
            false,
            certs.path(),
            200,
            "ldaps",
        ),
        (
            format!("localhost:{}", slapd.port),
            true,
            other.path(),
            401,
            "StartTLS, wrong CA",
        ),
        (
            format!("ldaps://localhost:{tls_port}"),
            false,
            other.path(),
            401,
            "ldaps, wrong CA",
        ),
    ];
    for (host, starttls, ca, want, what) in cases {
        let conf = with(host, starttls, ca);
        let glint = Launch::new()
            .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
            .start();
        let got = status(&glint, "/secret/a.txt", "alice", "alice-pw");
        assert_eq!(got, want, "glint, {what}\n{}", glint.stderr_tail());
        if starttls {
            let (mut child, port, ldir) = start_lighttpd_with(&conf);
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            let mut c = Conn::open(addr).expect("connect lighttpd");
            c.send(&get("/secret/a.txt", &[&basic("alice", "alice-pw")]))
                .expect("send");
            let theirs = c.read_response(false).expect("lighttpd answer").status;
            let _ = child.kill();
            let _ = child.wait();
            let probe = Command::new("ldapsearch")
                .args(["-x", "-ZZ", "-d", "1", "-H"])
                .arg(format!("ldap://localhost:{}", slapd.port))
                .args(["-b", "", "-s", "base"])
                .env("LDAPTLS_CACERT", ca.join("ca.pem"))
                .output()
                .expect("ldapsearch");
            assert_eq!(
                theirs,
                want,
                "lighttpd, {what}\n{}\nldapsearch -ZZ: {}{}",
                std::fs::read_to_string(ldir.join("error.log")).unwrap_or_default(),
                String::from_utf8_lossy(&probe.stdout),
                String::from_utf8_lossy(&probe.stderr)
            );
        }
    }
}

/// Over HTTP/2 (curl, prior knowledge) the stream waits the same way.
#[test]
fn a_waiting_stream_over_http2() {
    let dir = TempDir::new("slapd");
    let slapd = Slapd::start(&dir);
    let d = docroot();
    let glint = Launch::new()
        .config(
            &config(&d, slapd.port, "")
                .replace("{port}", "0")
                .replace("{errorlog}", ""),
        )
        .start();
    let port = glint.addr().port();
    let curl = |creds: Option<&str>, path: &str| {
        let mut c = Command::new("curl");
        c.args([
            "-s",
            "--http2-prior-knowledge",
            "-w",
            "%{http_code} %{http_version}",
        ]);
        if let Some(u) = creds {
            c.args(["-u", u]);
        }
        let out = c
            .arg(format!("http://127.0.0.1:{port}{path}"))
            .output()
            .expect("curl (apt-get install curl)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(
        curl(Some("alice:alice-pw"), "/secret/a.txt"),
        "content\n200 2"
    );
    assert!(curl(Some("alice:wrong"), "/secret/a.txt").ends_with("401 2"));
    assert_eq!(curl(None, "/open.txt"), "content\n200 2");
}
