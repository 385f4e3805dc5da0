//! mod_authn_sasl (pwcheck_method saslauthd) against Debian's real
//! saslauthd (sasl2-bin), started by the test with `-a pam` over
//! pam_wrapper's pam_matrix (a passdb in a temp dir) and its socket in a
//! temp dir. libsasl2, and so lighttpd, looks for saslauthd at
//! /var/run/saslauthd/mux only: both servers run in a mount namespace of
//! their own (`unshare -m`, root) where the temp dir is mounted there,
//! so nothing outside changes. The same configuration against lighttpd's
//! own mod_authn_sasl (lighttpd-mod-authn-sasl) must answer the same.
//!
//! `pwcheck_method` `auxprop` and `sasldb`: a sasldb in a temp dir made by
//! `saslpasswd2 -f` (sasl2-bin), read through libsasl2's sasldb plugin
//! (libsasl2-modules-db) by both servers; no daemon, no namespace.

mod common;

use common::*;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const WRAPPER: &str = "/usr/lib/x86_64-linux-gnu/libpam_wrapper.so";
const MATRIX: &str = "/usr/lib/x86_64-linux-gnu/pam_wrapper/pam_matrix.so";
const SERVICE: &str = "glinttest";

fn need(p: &str, pkg: &str) -> String {
    assert!(
        Path::new(p).exists(),
        "{p} is missing (apt-get install {pkg}; .ci/run installs it)"
    );
    p.to_string()
}

/// saslauthd on `<dir>/mux`, checking passwords with PAM (pam_matrix),
/// in a process group of its own: its pre-forked workers outlive a
/// parent killed alone, so the whole group is killed.
struct Saslauthd(Child);

impl Drop for Saslauthd {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(-(self.0.id() as i32));
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn saslauthd(dir: &TempDir) -> (Saslauthd, PathBuf) {
    let bin = need("/usr/sbin/saslauthd", "sasl2-bin");
    need(WRAPPER, "libpam-wrapper");
    need(MATRIX, "libpam-wrapper");
    let passdb = dir.join("passdb");
    std::fs::write(
        &passdb,
        format!("alice:alice-pw:{SERVICE}\nbob:bob-pw:{SERVICE}\n"),
    )
    .expect("passdb");
    let sdir = dir.join("services");
    std::fs::create_dir_all(&sdir).expect("service dir");
    let line = |kind: &str| format!("{kind} required {MATRIX} passdb={}\n", passdb.display());
    std::fs::write(sdir.join(SERVICE), line("auth") + &line("account")).expect("service");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let child = Command::new(bin)
        .args(["-a", "pam", "-d", "-n", "2", "-m"])
        .arg(&run)
        .env("LD_PRELOAD", WRAPPER)
        .env("PAM_WRAPPER", "1")
        .env("PAM_WRAPPER_SERVICE_DIR", &sdir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("saslauthd");
    let mux = run.join("mux");
    assert!(
        wait_for(TIMEOUT, || mux.exists()),
        "saslauthd made no socket"
    );
    (Saslauthd(child), run)
}

/// `program args...` in a mount namespace where `run` is /run/saslauthd.
fn in_namespace(run: &Path, program: &str) -> Command {
    assert!(
        is_root(),
        "the SASL test mounts in a namespace of its own: run it as root"
    );
    need("/usr/bin/unshare", "util-linux");
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mkdir -p /run/saslauthd && mount --bind '{}' /run/saslauthd && exec \"$0\" \"$@\"",
            run.display()
        ))
        .arg(program);
    c
}

fn config(d: &Docroot) -> String {
    let rule = |path: &str, require: &str| {
        format!("\"{path}\" => ( \"method\" => \"basic\", \"realm\" => \"sasl\", \"require\" => \"{require}\" )")
    };
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\nserver.modules += ( \"mod_auth\", \"mod_authn_sasl\" )\n\
         auth.backend = \"sasl\"\n\
         auth.backend.sasl.opts = ( \"service\" => \"{SERVICE}\", \"pwcheck_method\" => \"saslauthd\" )\n\
         auth.require = ( {}, {} )\n",
        d.root.display(),
        rule("/secret/", "valid-user"),
        rule("/alice/", "user=alice"),
    )
}

fn basic(user: &str, pw: &str) -> String {
    basic_auth(user, pw)
}

const CASES: &[(&str, &str, &str, u16)] = &[
    ("/secret/a.txt", "alice", "alice-pw", 200),
    ("/secret/a.txt", "bob", "bob-pw", 200),
    ("/secret/a.txt", "alice", "wrong", 401),
    ("/secret/a.txt", "nobody", "alice-pw", 401),
    ("/alice/a.txt", "alice", "alice-pw", 200),
    ("/alice/a.txt", "bob", "bob-pw", 401),
    ("/open.txt", "", "", 200),
];

fn status_at(addr: SocketAddr, path: &str, user: &str, pw: &str) -> u16 {
    let mut c = Conn::open(addr).expect("connect");
    c.send(&get(path, &[&basic(user, pw)])).expect("send");
    c.read_response(false)
        .unwrap_or_else(|e| panic!("{path} as {user:?}: {e}"))
        .status
}

#[test]
fn logins_through_saslauthd_answered_as_lighttpd_answers() {
    let dir = TempDir::new("sasl");
    let (_daemon, run) = saslauthd(&dir);
    let d = Docroot::new();
    for p in ["secret/a.txt", "alice/a.txt", "open.txt"] {
        d.file(p, b"content\n");
    }
    let conf = config(&d);
    let mut cmd = in_namespace(&run, &glint_bin());
    cmd.arg("-D");
    let glint = Launch::command(cmd)
        .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    let ours: Vec<u16> = CASES
        .iter()
        .map(|(p, u, pw, _)| status_at(glint.addr(), p, u, pw))
        .collect();

    let port = free_port();
    let ldir = TempDir::new("lighttpd-sasl");
    let text = conf.replace("{port}", &port.to_string()).replace(
        "{errorlog}",
        &format!("server.errorlog = \"{}\"", ldir.join("error.log").display()),
    );
    let path = ldir.join("lighttpd.conf");
    std::fs::write(&path, text).expect("conf");
    let mut child = in_namespace(&run, "lighttpd")
        .arg("-D")
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("lighttpd (apt-get install lighttpd lighttpd-mod-authn-sasl)");
    assert!(
        wait_for(TIMEOUT, || std::net::TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_ok()),
        "lighttpd did not start: {}",
        std::fs::read_to_string(ldir.join("error.log")).unwrap_or_default()
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let theirs: Vec<u16> = CASES
        .iter()
        .map(|(p, u, pw, _)| status_at(addr, p, u, pw))
        .collect();
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

/// A sasldb at `<dir>/sasldb2` with alice and bob in realm `sasl`, and a
/// "carol" of another realm.
fn sasldb(dir: &TempDir) -> PathBuf {
    let bin = need("/usr/sbin/saslpasswd2", "sasl2-bin");
    need(
        "/usr/lib/x86_64-linux-gnu/sasl2/libsasldb.so",
        "libsasl2-modules-db",
    );
    let db = dir.join("sasldb2");
    for (user, realm, pw) in [
        ("alice", "sasl", "alice-pw"),
        ("bob", "sasl", "bob-pw"),
        ("carol", "other", "carol-pw"),
    ] {
        let mut c = Command::new(&bin)
            .args(["-p", "-c", "-u", realm, "-f"])
            .arg(&db)
            .arg(user)
            .stdin(Stdio::piped())
            .spawn()
            .expect("saslpasswd2");
        if let Some(mut i) = c.stdin.take() {
            std::io::Write::write_all(&mut i, pw.as_bytes()).expect("password");
        }
        assert!(
            c.wait().expect("saslpasswd2").success(),
            "saslpasswd2 {user}"
        );
    }
    db
}

/// Basic logins against a sasldb: (path, user, password, status).
const SASLDB_CASES: &[(&str, &str, &str, u16)] = &[
    ("/secret/a.txt", "alice", "alice-pw", 200),
    ("/secret/a.txt", "bob", "bob-pw", 200),
    ("/secret/a.txt", "alice", "wrong", 401),
    ("/secret/a.txt", "alice", "", 401),
    ("/secret/a.txt", "alice", "alice-pwx", 401),
    ("/secret/a.txt", "bob", "alice-pw", 401),
    ("/secret/a.txt", "nobody", "alice-pw", 401),
    // carol is in another realm than the rule's.
    ("/secret/a.txt", "carol", "carol-pw", 401),
    // Names made to reach another entry or realm of the database.
    ("/secret/a.txt", "carol@other", "carol-pw", 200),
    ("/secret/a.txt", "alice@other", "alice-pw", 401),
    ("/secret/a.txt", "alice@sasl@x", "alice-pw", 401),
    ("/secret/a.txt", "alice\u{1}", "alice-pw", 401),
    ("/secret/a.txt", "alice userPassword", "alice-pw", 401),
    ("/secret/a.txt", "' OR '1'='1", "alice-pw", 401),
    ("/alice/a.txt", "alice", "alice-pw", 200),
    ("/alice/a.txt", "bob", "bob-pw", 401),
    ("/open.txt", "", "", 200),
];

#[test]
fn logins_from_a_sasldb_answered_as_lighttpd_answers() {
    let dir = TempDir::new("sasldb");
    let db = sasldb(&dir);
    let d = Docroot::new();
    for p in ["secret/a.txt", "alice/a.txt", "open.txt"] {
        d.file(p, b"content\n");
    }
    for method in ["auxprop", "sasldb"] {
        let conf = config(&d).replace(
            "\"pwcheck_method\" => \"saslauthd\"",
            &format!(
                "\"pwcheck_method\" => \"{method}\", \"sasldb_path\" => \"{}\"",
                db.display()
            ),
        );
        let glint = Launch::new()
            .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
            .start();
        let port = free_port();
        let ldir = TempDir::new("lighttpd-sasldb");
        let text = conf.replace("{port}", &port.to_string()).replace(
            "{errorlog}",
            &format!("server.errorlog = \"{}\"", ldir.join("error.log").display()),
        );
        let path = ldir.join("lighttpd.conf");
        std::fs::write(&path, text).expect("conf");
        let mut child = start_lighttpd(&path, port).unwrap_or_else(|e| {
            panic!("{e} (apt-get install lighttpd lighttpd-mod-authn-sasl libsasl2-modules-db)")
        });
        let laddr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut bad = Vec::new();
        for (p, u, pw, want) in SASLDB_CASES {
            let ours = status_at(glint.addr(), p, u, pw);
            let theirs = status_at(laddr, p, u, pw);
            if ours != *want || theirs != *want {
                bad.push(format!(
                    "{method}: {p} as {u:?}/{pw:?}: glint {ours}, lighttpd {theirs}, expected {want}"
                ));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        // lighttpd 1.4.69 crashes (SIGSEGV) now and then on a user named
        // "*" after a wrong password (seen here by hand, one run in two);
        // glint alone is asked.
        for (u, pw) in [("*", "alice-pw"), ("*", "")] {
            let ours = status_at(glint.addr(), "/secret/a.txt", u, pw);
            if ours != 401 {
                bad.push(format!(
                    "{method}: {u:?}/{pw:?}: glint {ours}, expected 401"
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
}
