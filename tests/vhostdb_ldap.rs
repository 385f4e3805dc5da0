//! mod_vhostdb's LDAP back end against a real OpenLDAP `slapd` (Debian's
//! slapd and ldap-utils, started by the test on 127.0.0.1), with the
//! same configuration on lighttpd 1.4.69 (Debian's
//! lighttpd-mod-vhostdb-ldap), answers compared: unknown hosts, entries
//! without the attribute, Host headers built to widen the filter. Hosts
//! whose entry has a root are served from it by glint; lighttpd 1.4.69
//! asks for no attribute and serves them from the default root (checked
//! too, as the one known difference). A directory stopped with
//! SIGSTOP holds up only its lookups on glint (a static file of another
//! host answers at once); its lookups fail with 500 on both after the
//! time-out, and both find hosts again once it is back.

mod common;

use common::*;
use nix::sys::signal::Signal::{SIGCONT, SIGSTOP};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

#[allow(dead_code)]
#[path = "authn_ldap/slapd.rs"]
mod slapd;
use slapd::{need, Slapd, SUFFIX};

const MODULES: &str = r#""mod_vhostdb", "mod_vhostdb_ldap", "mod_indexfile", "mod_staticfile""#;

/// The same configuration on glint and on lighttpd.
struct Both {
    glint: Server,
    lighttpd: Child,
    lighttpd_port: u16,
}

impl Drop for Both {
    fn drop(&mut self) {
        let _ = self.lighttpd.kill();
        let _ = self.lighttpd.wait();
    }
}

fn ask_by(port: u16, host: &str, path: &str, limit: Duration) -> Response {
    let mut c = Conn::connect(port);
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    c.send(req.as_bytes()).expect("send");
    c.read_response_by(false, Instant::now() + limit)
        .unwrap_or_else(|e| panic!("{host}{path}: {e}"))
}

fn ask(port: u16, host: &str, path: &str) -> Response {
    ask_by(port, host, path, TIMEOUT)
}

impl Both {
    fn start(dir: &TempDir, conf: &str) -> Both {
        let lport = free_port();
        let lconf = dir.join("lighttpd.conf");
        let log = dir.join("lighttpd.log");
        let ltext = conf
            .replace(
                "{errorlog}",
                &format!("server.errorlog = \"{}\"", log.display()),
            )
            .replace("{port}", &lport.to_string());
        std::fs::write(&lconf, ltext).unwrap();
        let lighttpd = start_lighttpd(&lconf, lport).unwrap_or_else(|e| {
            panic!(
                "{e}: {} (apt-get install lighttpd lighttpd-mod-vhostdb-ldap)",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        });
        let glint = Launch::new()
            .config(&conf.replace("{errorlog}", "").replace("{port}", "0"))
            .start();
        Both {
            glint,
            lighttpd,
            lighttpd_port: lport,
        }
    }

    /// The same status and body from both (each given `limit`); glint's answer.
    fn same_by(&self, host: &str, path: &str, limit: Duration) -> Response {
        let g = ask_by(self.glint.port, host, path, limit);
        let l = ask_by(self.lighttpd_port, host, path, limit);
        assert_eq!(
            (g.status, &g.body),
            (l.status, &l.body),
            "Host: {host} {path}\nglint: {}\nlighttpd: {}",
            g.describe(),
            l.describe()
        );
        g
    }

    fn same(&self, host: &str, path: &str) -> Response {
        self.same_by(host, path, TIMEOUT)
    }

    /// A host whose entry has a root: glint answers from it; lighttpd
    /// 1.4.69 asks its search for no attribute ("1.1") and so never gets
    /// the root, and answers from the default one. This checks that it
    /// still does (the one difference, see docs/mod_vhostdb.md).
    fn found(&self, host: &str, path: &str) -> Response {
        let l = ask(self.lighttpd_port, host, path);
        assert_eq!(
            (l.status, l.body.as_slice()),
            (200, b"default\n".as_slice()),
            "lighttpd, Host: {host}: {}",
            l.describe()
        );
        ask(self.glint.port, host, path)
    }
}

/// Sites `www/` (the default root), `sites/a`, `sites/b`, and the hosts'
/// entries added to the directory (cn: the host; labeledURI: the root).
fn sites_and_entries(dir: &TempDir, slapd: &Slapd) {
    for (d, body) in [
        ("www", "default\n"),
        ("sites/a", "site a\n"),
        ("sites/b", "site b\n"),
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
        std::fs::write(dir.join(d).join("index.html"), body).unwrap();
    }
    std::fs::write(dir.join("sites/file"), "not a directory").unwrap();
    let entry = |cn: &str, ou: &str, root: Option<&str>| {
        let uri = root.map_or(String::new(), |r| {
            format!("objectClass: labeledURIObject\nlabeledURI: {r}\n")
        });
        format!("dn: cn={cn},ou={ou},{SUFFIX}\nobjectClass: applicationProcess\n{uri}cn: {cn}\n\n")
    };
    let root = |d: &str| dir.join(d).display().to_string();
    let mut ldif = format!(
        "dn: ou=hosts,{SUFFIX}\nobjectClass: organizationalUnit\nou: hosts\n\n\
         dn: ou=more,{SUFFIX}\nobjectClass: organizationalUnit\nou: more\n\n"
    );
    ldif += &entry("a.test", "hosts", Some(&root("sites/a")));
    ldif += &entry("b.test", "hosts", Some(&root("sites/b")));
    ldif += &entry("b.test:8080", "hosts", Some(&root("sites/a")));
    ldif += &entry("noattr.test", "hosts", None);
    ldif += &entry("file.test", "hosts", Some(&root("sites/file")));
    ldif += &entry("gone.test", "hosts", Some(&root("sites/gone")));
    // Two entries: the first one's root, as lighttpd takes it.
    ldif += &entry("two.test", "hosts", Some(&root("sites/b")));
    ldif += &entry("two.test", "more", Some(&root("sites/b")));
    let path = dir.join("hosts.ldif");
    std::fs::write(&path, ldif).unwrap();
    let st = Command::new(need("ldapadd"))
        .args(["-x", "-H"])
        .arg(format!("ldap://127.0.0.1:{}/", slapd.port))
        .args(["-D", &format!("cn=admin,{SUFFIX}"), "-w", "admin-pw", "-f"])
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("ldapadd");
    assert!(st.success(), "ldapadd failed");
}

/// `extra`: lines at the top.
fn conf(dir: &TempDir, slapd: &Slapd, extra: &str) -> String {
    format!(
        r#"server.document-root = "{www}"
{extra}
server.bind = "127.0.0.1"
server.port = {{port}}
{{errorlog}}
server.modules += ( {MODULES} )
index-file.names = ( "index.html" )
vhostdb.ldap = ( "host" => "127.0.0.1:{lport}",
                 "base-dn" => "{SUFFIX}",
                 "filter" => "(&(objectClass=applicationProcess)(cn=?))",
                 "attr" => "labeledURI",
                 "timeout" => "1000000" )
$HTTP["host"] != "static.test" {{ vhostdb.backend = "ldap" }}
# Blank changes nothing (the lookup goes on here, as on lighttpd).
$HTTP["host"] == "blank.test" {{ vhostdb.backend = "" }}
"#,
        www = dir.join("www").display(),
        lport = slapd.port,
    )
}

#[test]
fn hosts_found_in_the_directory_answer_as_on_lighttpd() {
    let dir = TempDir::new("vhostdb-ldap");
    let slapd = Slapd::start(&dir);
    sites_and_entries(&dir, &slapd);
    let both = Both::start(&dir, &conf(&dir, &slapd, ""));
    let found = [
        ("a.test", "/", 200, "site a\n"),
        ("A.Test", "/index.html", 200, "site a\n"),
        ("a.test.", "/", 200, "site a\n"),
        ("b.test", "/", 200, "site b\n"),
        ("b.test:8080", "/", 200, "site a\n"),
        ("two.test", "/", 200, "site b\n"),
    ];
    for (host, path, status, body) in found {
        let r = both.found(host, path);
        assert_eq!(
            (r.status, r.body.as_slice()),
            (status, body.as_bytes()),
            "{host}"
        );
    }
    // A root that is not a directory: 500 (lighttpd never gets the root).
    assert_eq!(both.found("file.test", "/").status, 500);
    assert_eq!(both.found("gone.test", "/").status, 500);
    for host in ["nosuch.test", "noattr.test", "static.test", "b.test:81"] {
        let r = both.same(host, "/");
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, b"default\n".as_slice()),
            "{host}"
        );
    }
    // Host headers built to widen the filter match no other entry.
    for host in [
        "*",
        "a*",
        "*.test",
        "a.test)(cn=*",
        "x)(|(cn=a.test",
        "a.test\\",
        "\\2a",
        "a.test)",
        "nosuch)(objectClass=*",
    ] {
        let r = both.same(host, "/");
        assert_ne!(r.body, b"site a\n", "{host}");
        assert_ne!(r.body, b"site b\n", "{host}");
    }
}

/// Without host-strict and host-normalize, a Host with `*`, `(`, `)` and
/// `\` reaches lighttpd's filter (and, where glint's parser takes it,
/// glint's); escaped, it matches no entry.
#[test]
fn hosts_built_to_widen_the_filter_match_nothing_when_the_parser_lets_them_through() {
    let dir = TempDir::new("vhostdb-ldap-inject");
    let slapd = Slapd::start(&dir);
    sites_and_entries(&dir, &slapd);
    let opts =
        r#"server.http-parseopts = ( "host-strict" => "disable", "host-normalize" => "disable" )"#;
    let both = Both::start(&dir, &conf(&dir, &slapd, opts));
    assert_eq!(both.found("a.test", "/").body, b"site a\n");
    for host in [
        "*",
        "a*",
        "*.test",
        "a.test)(cn=*",
        "x)(|(cn=a.test",
        "a.test\\",
        "\\2a",
        "a.test)",
        "nosuch)(objectClass=*",
        "*)(objectClass=*",
    ] {
        let l = ask(both.lighttpd_port, host, "/");
        assert_eq!(
            (l.status, l.body.as_slice()),
            (200, b"default\n".as_slice()),
            "{host}"
        );
        // glint's request parser refuses some of these outright (400).
        let g = ask(both.glint.port, host, "/");
        let ok = g.status == 400 || (g.status, g.body.as_slice()) == (200, b"default\n".as_slice());
        assert!(ok, "Host: {host}: {}", g.describe());
    }
}

/// glint's parser refuses those Host values (400), so its back end is
/// asked directly here, against the same slapd: escaped, each is one
/// literal value and finds nothing, where the same text unescaped would
/// match every entry.
#[test]
fn the_back_end_escapes_what_would_widen_the_filter() {
    use glint::config::Value;
    use std::sync::Arc;
    let dir = TempDir::new("vhostdb-ldap-escape");
    let slapd = Slapd::start(&dir);
    sites_and_entries(&dir, &slapd);
    let opts = [
        ("host", format!("127.0.0.1:{}", slapd.port)),
        ("base-dn", SUFFIX.to_string()),
        ("filter", "(&(objectClass=applicationProcess)(cn=?))".into()),
        ("attr", "labeledURI".into()),
    ];
    let values: Vec<(&str, Value)> = opts
        .iter()
        .map(|(k, v)| (*k, Value::Str(v.clone())))
        .collect();
    let table: Vec<(&str, &Value)> = values.iter().map(|(k, v)| (*k, v)).collect();
    let q = glint::config::vhostdb_ldap::ldap(&table)
        .expect("options")
        .expect("a lookup");
    let q = Arc::new(q);
    let mut conns = glint::handler::vhostdb_ldap::LdapConns::default();
    let a = dir.join("sites/a").display().to_string();
    assert_eq!(conns.lookup(&q, "a.test"), Ok(Some(a)));
    for host in [
        "*",
        "a*",
        "*.test",
        "a.test)(cn=*",
        "x)(|(cn=a.test",
        "a.test\\",
        "\\61.test",
        "*)(objectClass=*",
        "a.test\0",
    ] {
        assert_eq!(conns.lookup(&q, host), Ok(None), "{host}");
    }
}

#[test]
fn a_stopped_directory_holds_up_its_lookups_only_and_is_used_again() {
    let dir = TempDir::new("vhostdb-ldap-stop");
    let mut slapd = Slapd::start(&dir);
    sites_and_entries(&dir, &slapd);
    let both = Both::start(&dir, &conf(&dir, &slapd, ""));
    assert_eq!(both.found("a.test", "/").body, b"site a\n");

    // Stopped: glint answers another host's static file at once, and the
    // lookup fails after the 1 s time-out with 500, as on lighttpd.
    signal(slapd.pid(), SIGSTOP);
    let port = both.glint.port;
    let waiting = std::thread::spawn(move || {
        let t = Instant::now();
        let r = ask_by(port, "b.test", "/", Duration::from_secs(20));
        (r.status, t.elapsed())
    });
    let t = Instant::now();
    let r = ask(port, "static.test", "/");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, b"default\n".as_slice())
    );
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "static took {:?}",
        t.elapsed()
    );
    let (status, took) = waiting.join().expect("client");
    assert_eq!(status, 500);
    assert!(took < Duration::from_secs(5), "the lookup took {took:?}");
    assert_eq!(
        both.same_by("a.test", "/", Duration::from_secs(30)).status,
        500
    );

    // Back: found again on both.
    signal(slapd.pid(), SIGCONT);
    let back = wait_for(Duration::from_secs(20), || {
        ask(both.glint.port, "a.test", "/").body == b"site a\n"
            && ask(both.lighttpd_port, "a.test", "/").status == 200
    });
    assert!(back, "the directory was not used again after SIGCONT");

    // Down: 500 on both; restarted on its port: found again.
    slapd.kill();
    assert_eq!(both.same("b.test", "/").status, 500);
    assert_eq!(both.same("static.test", "/").status, 200);
    assert_eq!(both.same("blank.test", "/").status, 500);
    slapd.run(&need("slapd"));
    let back = wait_for(Duration::from_secs(20), || {
        ask(both.glint.port, "b.test", "/").body == b"site b\n"
            && ask(both.lighttpd_port, "b.test", "/").status == 200
    });
    assert!(back, "the restarted directory was not used again");
    drop(both);
}

#[test]
fn a_filter_without_a_replace_operator_is_refused_with_its_line() {
    let dir = TempDir::new("vhostdb-ldap-refused");
    for (opt, word) in [
        (
            "vhostdb.ldap = ( \"host\" => \"h\", \"base-dn\" => \"dc=x\", \"filter\" => \"(cn=x)\" )",
            "replace-operator",
        ),
        (
            "vhostdb.ldap = ( \"host\" => \"ldapi://x\", \"base-dn\" => \"dc=x\", \"filter\" => \"(cn=?)\" )",
            "ldapi",
        ),
    ] {
        let path = dir.join("g.conf");
        std::fs::write(&path, format!("server.document-root = \"/tmp\"\n{opt}\n")).unwrap();
        let out = Command::new(glint_bin())
            .arg("-t")
            .arg("-f")
            .arg(&path)
            .output()
            .expect("glint -t");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{opt}: accepted");
        assert!(err.contains("g.conf:2") && err.contains(word), "{opt}: {err}");
    }
}

/// A CA and a certificate for `localhost` and for this machine's name
/// (libldap checks a loopback server's certificate against that name).
fn ldap_cert(dir: &std::path::Path) {
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
/// `ca-file`: with the right CA the host is found; with a CA that did not
/// sign it every lookup fails (500). lighttpd answers the same statuses
/// over StartTLS (200 from its default root, see `Both::found`).
#[test]
fn starttls_and_ldaps_check_the_directory_certificate() {
    let dir = TempDir::new("vhostdb-ldap-tls");
    let certs = TempDir::new("vhostdb-ldap-certs");
    ldap_cert(certs.path());
    let other = TempDir::new("vhostdb-ldap-other-ca");
    ldap_cert(other.path());
    let slapd = Slapd::start_tls(&dir, Some(certs.path()));
    sites_and_entries(&dir, &slapd);
    let tls_port = slapd.tls_port.unwrap_or(0);
    let plain = format!("\"host\" => \"127.0.0.1:{}\",", slapd.port);
    let cases = [
        (
            format!("localhost:{}", slapd.port),
            true,
            certs.path(),
            true,
        ),
        (
            format!("ldaps://localhost:{tls_port}"),
            false,
            certs.path(),
            true,
        ),
        (
            format!("localhost:{}", slapd.port),
            true,
            other.path(),
            false,
        ),
        (
            format!("ldaps://localhost:{tls_port}"),
            false,
            other.path(),
            false,
        ),
    ];
    for (host, starttls, ca, good) in cases {
        let what = format!("{host} starttls={starttls} good CA={good}");
        let tls = format!(
            "\"host\" => \"{host}\", \"ca-file\" => \"{}\", \"starttls\" => \"{}\",",
            ca.join("ca.pem").display(),
            if starttls { "enable" } else { "disable" }
        );
        let text = conf(&dir, &slapd, "").replace(&plain, &tls);
        assert!(text.contains("ca-file"), "{text}");
        if starttls {
            let both = Both::start(&dir, &text);
            if good {
                assert_eq!(both.found("a.test", "/").body, b"site a\n", "{what}");
            } else {
                assert_eq!(both.same("a.test", "/").status, 500, "{what}");
            }
        } else {
            let glint = Launch::new()
                .config(&text.replace("{errorlog}", "").replace("{port}", "0"))
                .start();
            let r = ask(glint.port, "a.test", "/");
            let want: (u16, &[u8]) = if good { (200, b"site a\n") } else { (500, b"") };
            assert_eq!(r.status, want.0, "{what}: {}", r.describe());
            if good {
                assert_eq!(r.body, want.1, "{what}");
            }
        }
    }
}

/// With `vhostdb.cache`, a host found is answered from memory while the
/// directory is down; a host never found is asked for (500). (lighttpd
/// never finds a root, so it has nothing to keep: glint only.)
#[test]
fn found_hosts_are_kept_per_vhostdb_cache() {
    let dir = TempDir::new("vhostdb-ldap-cache");
    let mut slapd = Slapd::start(&dir);
    sites_and_entries(&dir, &slapd);
    let text = conf(&dir, &slapd, "vhostdb.cache = ( \"max-age\" => 600 )")
        .replace("{errorlog}", "")
        .replace("{port}", "0");
    let glint = Launch::new().config(&text).start();
    assert_eq!(ask(glint.port, "a.test", "/").body, b"site a\n");
    slapd.kill();
    let r = ask(glint.port, "a.test", "/");
    assert_eq!((r.status, r.body.as_slice()), (200, b"site a\n".as_slice()));
    assert_eq!(ask(glint.port, "b.test", "/").status, 500);
}
