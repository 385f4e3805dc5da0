//! The directory of the LDAP tests: Debian's slapd on 127.0.0.1, from a
//! slapd.conf the test writes (mdb, loaded with slapadd): three people
//! and a group.

use super::common::*;
use nix::sys::signal::Signal::SIGCONT;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const SUFFIX: &str = "dc=example,dc=com";
pub const STAFF: &str = "cn=staff,ou=groups,dc=example,dc=com";

pub fn need(tool: &str) -> String {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(dir).join(tool);
        if p.exists() {
            return p.display().to_string();
        }
    }
    panic!("{tool} is not installed (apt-get install slapd ldap-utils; .ci/run installs them)");
}

fn ldif() -> String {
    let mut s = format!(
        "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n\
         dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: ou=groups,{SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n\n"
    );
    for (uid, pw) in [
        ("alice", "alice-pw"),
        ("bob", "bob-pw"),
        ("albert", "albert-pw"),
    ] {
        s.push_str(&format!(
            "dn: uid={uid},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: {uid}\n\
             cn: {uid}\nsn: {uid}\nuserPassword: {pw}\n\n"
        ));
    }
    s.push_str(&format!(
        "dn: {STAFF}\nobjectClass: posixGroup\ncn: staff\ngidNumber: 100\nmemberUid: alice\n\n"
    ));
    s
}

/// A running slapd, killed (and continued first, if stopped) on drop.
pub struct Slapd {
    child: Option<Child>,
    pub port: u16,
    /// The ldaps:// port, when started with TLS.
    pub tls_port: Option<u16>,
    conf: std::path::PathBuf,
}

impl Slapd {
    pub fn start(dir: &TempDir) -> Slapd {
        Slapd::start_tls(dir, None)
    }

    /// With `certs` (a dir of [`make_cert`]'s): StartTLS on the plain
    /// port and an ldaps:// port, with that certificate for `localhost`.
    pub fn start_tls(dir: &TempDir, certs: Option<&Path>) -> Slapd {
        let slapd = need("slapd");
        let slapadd = need("slapadd");
        need("ldapsearch");
        let db = dir.join("db");
        std::fs::create_dir_all(&db).expect("db dir");
        let conf = dir.join("slapd.conf");
        let text = format!(
            "include /etc/ldap/schema/core.schema\n\
             include /etc/ldap/schema/cosine.schema\n\
             include /etc/ldap/schema/inetorgperson.schema\n\
             include /etc/ldap/schema/nis.schema\n\
             pidfile {pid}\nmodulepath /usr/lib/ldap\nmoduleload back_mdb\n\
             database mdb\nmaxsize 10485760\nsuffix \"{SUFFIX}\"\n\
             rootdn \"cn=admin,{SUFFIX}\"\nrootpw admin-pw\ndirectory {db}\n\
             access to attrs=userPassword by anonymous auth by * none\n\
             access to * by * read\n{tls}",
            pid = dir.join("slapd.pid").display(),
            db = db.display(),
            tls = certs.map_or(String::new(), |c| format!(
                "TLSCertificateFile {}\nTLSCertificateKeyFile {}\nTLSCACertificateFile {}\n",
                c.join("s.crt").display(),
                c.join("s.key").display(),
                c.join("ca.pem").display()
            )),
        );
        // (Global TLS lines must come before the database: move them up.)
        let text = match text.find("TLSCertificateFile") {
            Some(i) => {
                let (head, tls) = text.split_at(i);
                format!("{tls}{head}")
            }
            None => text,
        };
        std::fs::write(&conf, text).expect("slapd.conf");
        let data = dir.join("data.ldif");
        std::fs::write(&data, ldif()).expect("ldif");
        let st = Command::new(&slapadd)
            .arg("-f")
            .arg(&conf)
            .arg("-l")
            .arg(&data)
            .status()
            .expect("slapadd");
        assert!(st.success(), "slapadd failed");
        let mut s = Slapd {
            child: None,
            port: free_port(),
            tls_port: certs.map(|_| free_port()),
            conf,
        };
        s.run(&slapd);
        s
    }

    pub fn run(&mut self, slapd: &str) {
        let child = Command::new(slapd)
            .arg("-f")
            .arg(&self.conf)
            .arg("-h")
            .arg(match self.tls_port {
                Some(t) => format!("ldap://127.0.0.1:{}/ ldaps://127.0.0.1:{t}/", self.port),
                None => format!("ldap://127.0.0.1:{}/", self.port),
            })
            .args(["-d", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("slapd");
        self.child = Some(child);
        let port = self.port;
        assert!(
            wait_for(TIMEOUT, || std::net::TcpStream::connect((
                "127.0.0.1",
                port
            ))
            .is_ok()),
            "slapd did not listen on {port}"
        );
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id() as i32, SIGCONT);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Slapd {
    fn drop(&mut self) {
        self.kill();
    }
}
