//! A real Kerberos realm in a temp dir, made with MIT krb5's own tools
//! (Debian's krb5-kdc, krb5-admin-server, krb5-user): `kdb5_util create`,
//! principals and the service keytab with `kadmin.local`, `krb5kdc -n` on
//! a loopback port of its own, tickets with `kinit`. Nothing under /etc
//! is read or changed: every tool and server gets `KRB5_CONFIG`,
//! `KRB5_KDC_PROFILE` and `KRB5RCACHEDIR` pointing into the temp dir.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::common::*;

pub const REALM: &str = "GLINT.TEST";

/// `path` of a tool the test needs, or a failure naming its package.
pub fn need(path: &str, package: &str) -> String {
    assert!(
        Path::new(path).exists(),
        "{path} is missing (apt-get install {package}; .ci/run installs it)"
    );
    path.to_string()
}

pub struct Realm {
    pub dir: TempDir,
    pub port: u16,
    kdc: Option<Child>,
    /// Name the service keytab in `KRB5_KTNAME` (the default keytab).
    pub default_keytab: bool,
}

impl Drop for Realm {
    fn drop(&mut self) {
        self.stop_kdc();
    }
}

impl Realm {
    /// The realm with users `alice` (alice-pw) and `bob` (bob-pw), the
    /// service `HTTP/localhost` in `<dir>/http.keytab`, and its KDC up.
    pub fn new() -> Realm {
        let dir = TempDir::new("krb5");
        let port = free_port();
        let d = dir.path().display().to_string();
        std::fs::write(
            dir.join("krb5.conf"),
            format!(
                "[libdefaults]\n default_realm = {REALM}\n dns_lookup_realm = false\n\
                 dns_lookup_kdc = false\n dns_canonicalize_hostname = false\n rdns = false\n\
                 forwardable = true\n\
                 [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n\
                 [domain_realm]\n localhost = {REALM}\n"
            ),
        )
        .expect("krb5.conf");
        std::fs::write(
            dir.join("kdc.conf"),
            format!(
                "[kdcdefaults]\n kdc_ports = {port}\n kdc_tcp_ports = {port}\n\
                 [realms]\n {REALM} = {{\n  database_name = {d}/principal\n\
                 key_stash_file = {d}/stash\n  acl_file = {d}/kadm5.acl\n\
                 kdc_ports = {port}\n  kdc_tcp_ports = {port}\n }}\n\
                 [logging]\n kdc = FILE:{d}/kdc.log\n"
            ),
        )
        .expect("kdc.conf");
        let mut r = Realm {
            dir,
            port,
            kdc: None,
            default_keytab: false,
        };
        let kdb = need("/usr/sbin/kdb5_util", "krb5-kdc");
        r.run(&kdb, &["create", "-s", "-r", REALM, "-P", "master-pw"]);
        for q in [
            "addprinc -pw alice-pw alice".to_string(),
            "addprinc -pw bob-pw bob".to_string(),
            "addprinc -randkey HTTP/localhost".to_string(),
            format!("ktadd -k {d}/http.keytab HTTP/localhost"),
        ] {
            let kadmin = need("/usr/sbin/kadmin.local", "krb5-admin-server");
            r.run(&kadmin, &["-r", REALM, "-q", &q]);
        }
        r.start_kdc();
        r
    }

    /// The environment every Kerberos user here gets.
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let mut env = vec![
            ("KRB5_CONFIG", self.dir.join("krb5.conf")),
            ("KRB5_KDC_PROFILE", self.dir.join("kdc.conf")),
            ("KRB5RCACHEDIR", self.dir.path().to_path_buf()),
        ];
        if self.default_keytab {
            env.push(("KRB5_KTNAME", self.keytab()));
        }
        env
    }

    pub fn keytab(&self) -> PathBuf {
        self.dir.join("http.keytab")
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = Command::new(program)
            .args(args)
            .envs(self.env())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `krb5kdc -n` on [`Realm::port`], once it accepts there.
    pub fn start_kdc(&mut self) {
        let bin = need("/usr/sbin/krb5kdc", "krb5-kdc");
        let child = Command::new(bin)
            .args(["-n", "-r", REALM])
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("krb5kdc");
        self.kdc = Some(child);
        let port = self.port;
        assert!(
            wait_for(TIMEOUT, || std::net::TcpStream::connect((
                "127.0.0.1",
                port
            ))
            .is_ok()),
            "krb5kdc does not answer on {port}: {}",
            std::fs::read_to_string(self.dir.join("kdc.log")).unwrap_or_default()
        );
    }

    pub fn stop_kdc(&mut self) {
        if let Some(mut c) = self.kdc.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP (true) or SIGCONT (false) to the KDC.
    pub fn pause_kdc(&self, stop: bool) {
        let c = self.kdc.as_ref().expect("a running KDC");
        let sig = if stop {
            nix::sys::signal::Signal::SIGSTOP
        } else {
            nix::sys::signal::Signal::SIGCONT
        };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.id() as i32), sig).expect("signal");
    }

    /// A forwardable ticket for `user` in a cache file of its own.
    pub fn kinit(&self, user: &str, password: &str) -> PathBuf {
        let cc = self.dir.join(&format!("cc-{user}"));
        let bin = need("/usr/bin/kinit", "krb5-user");
        let mut child = Command::new(bin)
            .args(["-f", user])
            .envs(self.env())
            .env("KRB5CCNAME", format!("FILE:{}", cc.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kinit");
        if let Some(mut i) = child.stdin.take() {
            use std::io::Write;
            let _ = writeln!(i, "{password}");
        }
        let out = child.wait_with_output().expect("kinit");
        assert!(
            out.status.success(),
            "kinit {user}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cc
    }
}
