//! crypt(3) hashes in an htpasswd file (mod_authn_file's `htpasswd`
//! back end), made here by Python's `crypt` module on the system's
//! libxcrypt (as `mkpasswd -m <scheme>` makes them): the schemes glint
//! checks itself (SHA-crypt, MD5-crypt, bcrypt, DES) and those it hands to
//! libxcrypt (yescrypt `$y$`, Debian's default, gost-yescrypt `$gy$`,
//! scrypt `$7$`, BSDi DES `_`, SunMD5, sha1crypt). The same file is
//! served by glint and by lighttpd 1.4.69 (whose crypt() call is
//! libxcrypt's) and the answers compared: right password 200, wrong 401,
//! unknown user 401.

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command};

use common::*;

/// (user, stored hash): each user's password is `<user>-pw`, hashed by
/// crypt(3) with a setting libxcrypt's crypt_gensalt makes for `prefix`.
fn hashes() -> Vec<(String, String)> {
    let schemes = [
        ("yves", "$y$"),
        ("gosta", "$gy$"),
        ("scott", "$7$"),
        ("bsdi", "_"),
        ("sun", "$md5"),
        ("shaun", "$sha1"),
        ("sixten", "$6$"),
        ("md", "$1$"),
        ("blow", "$2b$"),
    ];
    let script = "import crypt,ctypes,sys\n\
        lc=ctypes.CDLL('libcrypt.so.1')\n\
        lc.crypt_gensalt.restype=ctypes.c_char_p\n\
        lc.crypt_gensalt.argtypes=[ctypes.c_char_p,ctypes.c_ulong,ctypes.c_char_p,ctypes.c_int]\n\
        for a in sys.argv[1:]:\n\
        \x20   u,p=a.split('=',1)\n\
        \x20   s=lc.crypt_gensalt(p.encode(),0,None,0)\n\
        \x20   print(u, crypt.crypt(u+'-pw', s.decode()))\n";
    let out = Command::new("python3")
        .args(["-W", "ignore", "-c", script])
        .args(schemes.iter().map(|(u, p)| format!("{u}={p}")))
        .output()
        .expect("python3 (apt-get install python3)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let got: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(u, h)| (u.to_string(), h.to_string()))
        .collect();
    assert_eq!(got.len(), schemes.len(), "{text}");
    for (u, h) in &got {
        assert!(h.len() >= 13, "{u}: no hash: {h}");
    }
    got
}

fn status(addr: SocketAddr, user: &str, pw: &str) -> u16 {
    let mut c = Conn::open(addr).expect("connect");
    c.send(&get("/secret/a.txt", &[&basic_auth(user, pw)]))
        .expect("send");
    c.read_response(false).map(|r| r.status).unwrap_or(0)
}

struct Lighttpd(Child);

impl Drop for Lighttpd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn libcrypt_schemes_in_htpasswd_answered_as_lighttpd_answers() {
    let users = hashes();
    let d = Docroot::new();
    d.file("secret/a.txt", b"content\n");
    let dir = TempDir::new("authn-crypt");
    let file = dir.join("htpasswd");
    let lines: String = users.iter().map(|(u, h)| format!("{u}:{h}\n")).collect();
    std::fs::write(&file, lines).expect("htpasswd");
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         server.modules += ( \"mod_auth\", \"mod_authn_file\" )\n\
         auth.backend = \"htpasswd\"\nauth.backend.htpasswd.userfile = \"{}\"\n\
         auth.require = ( \"/secret/\" => ( \"method\" => \"basic\", \"realm\" => \"r\", \"require\" => \"valid-user\" ) )\n",
        d.root.display(),
        file.display()
    );
    let lport = free_port();
    let lconf = dir.join("lighttpd.conf");
    std::fs::write(&lconf, conf.replace("{port}", &lport.to_string())).expect("conf");
    let _lighttpd = Lighttpd(
        start_lighttpd(&lconf, lport).unwrap_or_else(|e| panic!("{e} (apt-get install lighttpd)")),
    );
    let glint = Launch::new().config(&conf.replace("{port}", "0")).start();
    let servers = [
        ("glint", glint.addr()),
        ("lighttpd", SocketAddr::from(([127, 0, 0, 1], lport))),
    ];
    let mut bad = Vec::new();
    for (user, hash) in &users {
        let right = format!("{user}-pw");
        let cases = [
            (right.as_str(), 200),
            ("wrong", 401),
            ("", 401),
            // One byte more: schemes that read the whole password.
            (&*format!("{right}x"), 401),
        ];
        for (pw, want) in cases {
            for (name, addr) in servers {
                let got = status(addr, user, pw);
                if got != want {
                    bad.push(format!(
                        "{name}: {user} ({hash}) / {pw:?}: {got}, expected {want}"
                    ));
                }
            }
        }
    }
    for (name, addr) in servers {
        let got = status(addr, "nobody", "yves-pw");
        if got != 401 {
            bad.push(format!("{name}: unknown user: {got}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{}\nglint:\n{}",
        bad.join("\n"),
        glint.stderr_tail()
    );
}
