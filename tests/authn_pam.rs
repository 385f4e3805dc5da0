//! mod_authn_pam through the real libpam, with Debian's pam_wrapper
//! (libpam-wrapper): LD_PRELOAD'ed, it reads the PAM service from a temp
//! dir (PAM_WRAPPER_SERVICE_DIR) whose stack is pam_matrix over a passdb
//! file the test writes, so nothing under /etc changes. The same
//! configuration against lighttpd's own mod_authn_pam (Debian's
//! lighttpd-mod-authn-pam) must answer the same.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const WRAPPER: &str = "/usr/lib/x86_64-linux-gnu/libpam_wrapper.so";
const MATRIX: &str = "/usr/lib/x86_64-linux-gnu/pam_wrapper/pam_matrix.so";
const SERVICE: &str = "glinttest";

/// The service dir: `glinttest` authenticates and admits with pam_matrix.
fn services(dir: &TempDir) -> PathBuf {
    for f in [WRAPPER, MATRIX] {
        assert!(
            Path::new(f).exists(),
            "{f} is missing (apt-get install libpam-wrapper; .ci/run installs it)"
        );
    }
    let passdb = dir.join("passdb");
    std::fs::write(
        &passdb,
        format!("alice:alice-pw:{SERVICE}\nbob:bob-pw:{SERVICE}\ncarol:carol-pw:other\n"),
    )
    .expect("passdb");
    let sdir = dir.join("services");
    std::fs::create_dir_all(&sdir).expect("service dir");
    let line = |kind: &str| format!("{kind} required {MATRIX} passdb={}\n", passdb.display());
    std::fs::write(sdir.join(SERVICE), line("auth") + &line("account")).expect("service");
    sdir
}

fn config(d: &Docroot) -> String {
    let rule = |path: &str, require: &str| {
        format!("\"{path}\" => ( \"method\" => \"basic\", \"realm\" => \"pam\", \"require\" => \"{require}\" )")
    };
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\nserver.modules += ( \"mod_auth\", \"mod_authn_pam\" )\n\
         auth.backend = \"pam\"\nauth.backend.pam.opts = ( \"service\" => \"{SERVICE}\" )\n\
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
    ("/secret/a.txt", "alice", "", 401),
    ("/secret/a.txt", "nobody", "alice-pw", 401),
    // carol is in the passdb for another service only.
    ("/secret/a.txt", "carol", "carol-pw", 401),
    ("/alice/a.txt", "alice", "alice-pw", 200),
    ("/alice/a.txt", "bob", "bob-pw", 401),
    ("/open.txt", "", "", 200),
];

fn status_at(addr: std::net::SocketAddr, path: &str, user: &str, pw: &str) -> u16 {
    let mut c = Conn::open(addr).expect("connect");
    c.send(&get(path, &[&basic(user, pw)])).expect("send");
    c.read_response(false)
        .unwrap_or_else(|e| panic!("{path} as {user:?}: {e}"))
        .status
}

#[test]
fn logins_through_pam_answered_as_lighttpd_answers() {
    let dir = TempDir::new("pam");
    let sdir = services(&dir);
    let d = Docroot::new();
    for p in ["secret/a.txt", "alice/a.txt", "open.txt"] {
        d.file(p, b"content\n");
    }
    let conf = config(&d);
    let with_wrapper = |cmd: &mut Command| {
        cmd.env("LD_PRELOAD", WRAPPER)
            .env("PAM_WRAPPER", "1")
            .env("PAM_WRAPPER_SERVICE_DIR", &sdir);
    };
    let mut cmd = Command::new(glint_bin());
    cmd.arg("-D");
    with_wrapper(&mut cmd);
    let glint = Launch::command(cmd)
        .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    let ours: Vec<u16> = CASES
        .iter()
        .map(|(p, u, pw, _)| status_at(glint.addr(), p, u, pw))
        .collect();

    let port = free_port();
    let ldir = TempDir::new("lighttpd-pam");
    let text = conf.replace("{port}", &port.to_string()).replace(
        "{errorlog}",
        &format!("server.errorlog = \"{}\"", ldir.join("error.log").display()),
    );
    let path = ldir.join("lighttpd.conf");
    std::fs::write(&path, text).expect("conf");
    // start_lighttpd runs lighttpd with this process's environment.
    std::env::set_var("LD_PRELOAD", WRAPPER);
    std::env::set_var("PAM_WRAPPER", "1");
    std::env::set_var("PAM_WRAPPER_SERVICE_DIR", &sdir);
    let started = start_lighttpd(&path, port);
    std::env::remove_var("LD_PRELOAD");
    let mut child =
        started.unwrap_or_else(|e| panic!("{e} (apt-get install lighttpd lighttpd-mod-authn-pam)"));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
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

/// Whether the process maps libpam (its own file, not the wrapper's).
fn maps_libpam(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .expect("maps")
        .lines()
        .any(|l| l.contains("/libpam.so"))
}

/// libpam (and libaudit, libcap-ng behind it: ~140 kB of an idle
/// server) is opened only when some scope's `auth.backend` is `pam`, as
/// lighttpd loads mod_authn_pam.so only when configured.
#[test]
fn libpam_is_mapped_only_where_a_scope_uses_it() {
    let d = Docroot::new();
    d.file("open.txt", b"content\n");
    d.file("secret/a.txt", b"content\n");
    let plain = start_conf(&d, "");
    assert_eq!(status_at(plain.addr(), "/open.txt", "", ""), 200);
    assert!(
        !maps_libpam(plain.pid()),
        "a server without mod_authn_pam maps libpam"
    );
    let dir = TempDir::new("pam-maps");
    let sdir = services(&dir);
    let mut cmd = Command::new(glint_bin());
    cmd.arg("-D")
        .env("LD_PRELOAD", WRAPPER)
        .env("PAM_WRAPPER", "1")
        .env("PAM_WRAPPER_SERVICE_DIR", &sdir);
    let pam = Launch::command(cmd)
        .config(&config(&d).replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    // Opened at start, before the first login.
    assert!(
        maps_libpam(pam.pid()),
        "mod_authn_pam without libpam mapped:\n{}\n{}",
        std::fs::read_to_string(format!("/proc/{}/maps", pam.pid())).unwrap_or_default(),
        pam.stderr_tail()
    );
    assert_eq!(
        status_at(pam.addr(), "/secret/a.txt", "alice", "alice-pw"),
        200
    );
}
