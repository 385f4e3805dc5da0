//! crypt(3) hashes in an htpasswd file (mod_authn_file's `htpasswd`
//! back end), made here by Python's `crypt` module on the system's
//! libxcrypt (as `mkpasswd -m <scheme>` makes them): the schemes glint
//! checks itself (SHA-crypt, MD5-crypt, bcrypt, DES) and those it hands to
//! libxcrypt (yescrypt `$y$`, Debian's default, gost-yescrypt `$gy$`,
//! scrypt `$7$`, BSDi DES `_`, SunMD5, sha1crypt). The same file is
//! served by glint and by lighttpd 1.4.69 (whose crypt() call is
//! libxcrypt's) and the answers compared: right password 200, wrong 401,
//! unknown user 401. Then a hash that takes over a second (sha1crypt,
//! 600,000 rounds): while two such logins are checked, static files are
//! still served at once (libxcrypt's checks run on the worker threads).

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command};

use common::*;

/// (user, stored hash): each user's password is `<user>-pw`, hashed by
/// crypt(3) with a setting libxcrypt's crypt_gensalt makes for `prefix`.
fn hashes() -> Vec<(String, String)> {
    // (The lowest costs the schemes take where crypt_gensalt has one:
    // every hash is checked dozens of times on two servers, and scrypt's
    // and sha1crypt's defaults take 0.4 s each.)
    let schemes = [
        ("yves", "$y$", 1),
        ("gosta", "$gy$", 1),
        ("scott", "$7$", 6),
        ("bsdi", "_", 0),
        ("sun", "$md5", 0),
        ("shaun", "$sha1", 1000),
        ("sixten", "$6$", 0),
        ("md", "$1$", 0),
        ("blow", "$2b$", 0),
    ];
    let script = "import crypt,ctypes,sys\n\
        lc=ctypes.CDLL('libcrypt.so.1')\n\
        lc.crypt_gensalt.restype=ctypes.c_char_p\n\
        lc.crypt_gensalt.argtypes=[ctypes.c_char_p,ctypes.c_ulong,ctypes.c_char_p,ctypes.c_int]\n\
        for a in sys.argv[1:]:\n\
        \x20   u,p,n=a.split('=',2)\n\
        \x20   s=lc.crypt_gensalt(p.encode(),int(n),None,0)\n\
        \x20   print(u, crypt.crypt(u+'-pw', s.decode()))\n";
    let out = Command::new("python3")
        .args(["-W", "ignore", "-c", script])
        .args(schemes.iter().map(|(u, p, n)| format!("{u}={p}={n}")))
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
         server.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\nserver.modules += ( \"mod_auth\", \"mod_authn_file\" )\n\
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

#[test]
fn a_slow_libcrypt_hash_does_not_hold_up_other_requests() {
    let slow = {
        let out = Command::new("python3")
            .args(["-W", "ignore", "-c"])
            .arg(
                "import crypt; print(crypt.crypt('slow-pw', '$sha1$600000$lBwb1u7mzXggax2tMPIp$'))",
            )
            .output()
            .expect("python3");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    };
    assert!(slow.starts_with("$sha1$600000$"), "{slow}");
    let d = Docroot::new();
    d.file("secret/a.txt", b"content\n")
        .file("open.txt", b"open\n");
    let dir = TempDir::new("authn-crypt-slow");
    let file = dir.join("htpasswd");
    std::fs::write(&file, format!("slow:{slow}\n")).expect("htpasswd");
    let conf = format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = 0\n\
         server.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\nserver.modules += ( \"mod_auth\", \"mod_authn_file\" )\n\
         auth.backend = \"htpasswd\"\nauth.backend.htpasswd.userfile = \"{}\"\n\
         auth.require = ( \"/secret/\" => ( \"method\" => \"basic\", \"realm\" => \"r\", \"require\" => \"valid-user\" ) )\n",
        d.root.display(),
        file.display()
    );
    let glint = Launch::new().config(&conf).start();
    let addr = glint.addr();
    let logins: Vec<_> = [("slow-pw", 200), ("wrong", 401)]
        .into_iter()
        .map(|(pw, want)| {
            std::thread::spawn(move || {
                let t = std::time::Instant::now();
                let got = status(addr, "slow", pw);
                (got, want, t.elapsed())
            })
        })
        .collect();
    // Static files while the logins are checked: each answered at once.
    let mut worst = std::time::Duration::ZERO;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for _ in 0..2000 {
        if logins.iter().all(|l| l.is_finished()) || std::time::Instant::now() > until {
            break;
        }
        let t = std::time::Instant::now();
        let r = get_at(addr, "/open.txt").expect("static file");
        assert_eq!(r.status, 200);
        worst = worst.max(t.elapsed());
    }
    let mut fastest = std::time::Duration::MAX;
    for l in logins {
        let (got, want, took) = l.join().expect("login");
        assert_eq!(got, want, "{}", glint.stderr_tail());
        eprintln!("a sha1crypt login ({want}) took {took:?}");
        fastest = fastest.min(took);
    }
    // A check run on the event loop would hold each static file up for
    // about as long as a login takes; on a worker, for a small part of it.
    assert!(
        fastest > std::time::Duration::from_millis(300),
        "the hash was not slow ({fastest:?}): the test shows nothing"
    );
    eprintln!("slowest static file meanwhile: {worst:?}");
    assert!(
        worst < fastest / 3,
        "a static file waited {worst:?} for a password check taking {fastest:?}"
    );
}
