//! mod_authn_gssapi against a real Kerberos realm the test makes itself
//! (MIT krb5's KDC from Debian's krb5-kdc, kadmin.local, kinit; see
//! authn_gssapi/realm.rs), with curl's SPNEGO (`--negotiate`) and Basic
//! as the clients, a CGI that shows `REMOTE_USER`, `AUTH_TYPE` and the
//! stored credentials cache, and the same configuration run by lighttpd
//! 1.4.69 with Debian's lighttpd-mod-authn-gssapi: statuses, challenges
//! and what the CGI sees must agree.

mod common;

#[path = "authn_gssapi/realm.rs"]
mod realm;

use common::*;
use realm::{need, Realm, REALM};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How a request authenticates.
#[derive(Clone, Debug)]
enum How {
    None,
    /// `curl --negotiate` with this user's ticket cache; delegating or not.
    Negotiate(&'static str, bool),
    Basic(&'static str, &'static str),
    /// An `Authorization` header as given.
    Header(String),
}

/// What came back (the last answer, after curl's Negotiate round).
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    www_authenticate: Vec<String>,
    /// The CGI's lines with the cache's path replaced by `<ccache>`.
    body: String,
    /// That path.
    ccache: Option<String>,
}

const CGI: &str = "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\n\
echo \"REMOTE_USER=$REMOTE_USER\"\necho \"AUTH_TYPE=$AUTH_TYPE\"\n\
echo \"KRB5CCNAME=$KRB5CCNAME\"\necho \"X_FORWARDED_KEYTAB=$HTTP_X_FORWARDED_KEYTAB\"\n\
if [ -n \"$KRB5CCNAME\" ] && [ -s \"$KRB5CCNAME\" ]; then echo CCACHE=filled; fi\n";

fn docroot() -> Docroot {
    let d = Docroot::new();
    d.file("open.txt", b"open\n");
    for dir in ["neg", "alice", "nodeleg", "basic", "bob"] {
        let p = format!("{dir}/env.cgi");
        d.file(&p, CGI.as_bytes());
        set_mode(&d.path(&p), 0o755);
    }
    d
}

fn config(d: &Docroot, keytab: &Path) -> String {
    config_with(d, keytab, None)
}

/// With `proxy`: `/echo` goes to that HTTP back end (tests/backends/
/// http_app.py, which shows the request headers it got).
fn config_with(d: &Docroot, keytab: &Path, proxy: Option<u16>) -> String {
    let rule = |path: &str, method: &str, require: &str| {
        format!("\"{path}\" => ( \"method\" => \"{method}\", \"realm\" => \"{REALM}\", \"require\" => \"{require}\" )")
    };
    format!(
        "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {{port}}\n\
         {{errorlog}}\nserver.feature-flags = ( \"auth.delay-invalid-creds\" => \"disable\" )\nserver.modules += ( \"mod_auth\", \"mod_authn_gssapi\", \"mod_cgi\" )\n\
         cgi.assign = ( \".cgi\" => \"\" )\n\
         auth.backend = \"gssapi\"\nauth.backend.gssapi.keytab = \"{}\"\n\
         auth.backend.gssapi.principal = \"HTTP\"\n\
         auth.require = ( {}, {}, {}, {} )\n\
         $HTTP[\"url\"] =^ \"/nodeleg/\" {{\n  auth.backend.gssapi.store-creds = \"disable\"\n  \
         auth.require = ( {} )\n}}\n{}",
        d.root.display(),
        keytab.display(),
        rule("/neg/", "gssapi", "valid-user"),
        rule("/alice/", "gssapi", &format!("user=alice@{REALM}")),
        rule("/basic/", "basic", "valid-user"),
        rule("/bob/", "basic", "user=bob"),
        rule("/nodeleg/", "gssapi", "valid-user"),
        proxy.map_or(String::new(), |port| format!(
            "server.modules += ( \"mod_proxy\" )\n$HTTP[\"url\"] =^ \"/echo\" {{\n  \
             proxy.server = ( \"\" => (( \"host\" => \"127.0.0.1\", \"port\" => {port} )) )\n  \
             auth.require = ( {} )\n}}\n",
            rule("/echo", "gssapi", "valid-user")
        )),
    )
}

/// Asks `port` for `path` with curl, as `how` says.
fn curl(realm: &Realm, port: u16, path: &str, how: &How) -> Answer {
    let bin = need("/usr/bin/curl", "curl");
    let out_dir = TempDir::new("curl");
    let (heads, body) = (out_dir.join("heads"), out_dir.join("body"));
    let mut c = Command::new(bin);
    c.args(["-s", "--max-time", "60", "-o"])
        .arg(&body)
        .arg("-D")
        .arg(&heads)
        .args(["-w", "%{http_code}"])
        .envs(realm.env());
    match how {
        How::None => {}
        How::Negotiate(user, delegate) => {
            let cc = realm.dir.join(&format!("cc-{user}"));
            c.env("KRB5CCNAME", format!("FILE:{}", cc.display()))
                .args(["--negotiate", "-u", ":"]);
            if *delegate {
                c.args(["--delegation", "always"]);
            }
        }
        How::Basic(u, p) => {
            c.arg("-u").arg(format!("{u}:{p}"));
        }
        How::Header(h) => {
            c.arg("-H").arg(format!("Authorization: {h}"));
        }
    }
    // A client's own header of that name must not reach a back end when
    // a cache is stored (without one, both servers pass it on).
    c.args(["-H", "X-Forwarded-Keytab: /etc/passwd"]);
    let out = c
        .arg(format!("http://localhost:{port}{path}"))
        .stdin(Stdio::null())
        .output()
        .expect("curl");
    let status: u16 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let heads = std::fs::read_to_string(&heads).unwrap_or_default();
    let last = heads.rsplit("HTTP/").next().unwrap_or("");
    let www_authenticate = last
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, v)| v.trim().to_string())
        .collect();
    let mut text = if status == 200 {
        std::fs::read_to_string(&body).unwrap_or_default()
    } else {
        String::new()
    };
    if path.starts_with("/echo") {
        // What the proxied back end got of the stored credentials.
        text = text
            .lines()
            .filter(|l| l.contains("keytab"))
            .map(|l| format!("{l}\n"))
            .collect();
    }
    let ccache = text.find("/tmp/krb5cc_gssapi_").map(|i| {
        text[i..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string()
    });
    let body = match &ccache {
        Some(p) => {
            assert!(p.starts_with("/tmp/krb5cc_gssapi_"), "{path}: cache at {p}");
            text.replace(p.as_str(), "<ccache>")
        }
        None => text,
    };
    Answer {
        status,
        www_authenticate,
        body,
        ccache,
    }
}

/// lighttpd with `conf`, in the realm's environment, once it accepts.
fn lighttpd(realm: &Realm, conf: &Path, port: u16) -> Child {
    need(
        "/usr/lib/lighttpd/mod_authn_gssapi.so",
        "lighttpd-mod-authn-gssapi",
    );
    let mut child = Command::new("lighttpd")
        .arg("-D")
        .arg("-f")
        .arg(conf)
        .envs(realm.env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("lighttpd (apt-get install lighttpd lighttpd-mod-authn-gssapi)");
    let up = wait_for(TIMEOUT, || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            || matches!(child.try_wait(), Ok(Some(_)))
    });
    assert!(
        up && matches!(child.try_wait(), Ok(None)),
        "lighttpd did not start"
    );
    child
}

struct Both {
    glint: Server,
    lighttpd: Child,
    lport: u16,
    ldir: TempDir,
}

impl Drop for Both {
    fn drop(&mut self) {
        let _ = self.lighttpd.kill();
        let _ = self.lighttpd.wait();
    }
}

fn start_both(realm: &Realm, conf: &str) -> Both {
    let mut cmd = Command::new(glint_bin());
    cmd.arg("-D").envs(realm.env());
    let glint = Launch::command(cmd)
        .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    let lport = free_port();
    let ldir = TempDir::new("lighttpd-gssapi");
    let text = conf.replace("{port}", &lport.to_string()).replace(
        "{errorlog}",
        &format!("server.errorlog = \"{}\"", ldir.join("error.log").display()),
    );
    let path = ldir.join("lighttpd.conf");
    std::fs::write(&path, text).expect("conf");
    let lighttpd = lighttpd(realm, &path, lport);
    Both {
        glint,
        lighttpd,
        lport,
        ldir,
    }
}

impl Both {
    /// Runs every case on both; each must answer `want` on both and the
    /// two answers agree. Returns glint's answers.
    fn compare(&self, realm: &Realm, cases: &[(&str, How, u16)]) -> Vec<Answer> {
        let mut bad = Vec::new();
        let mut ours = Vec::new();
        for (path, how, want) in cases {
            let g = curl(realm, self.glint.addr().port(), path, how);
            let l = curl(realm, self.lport, path, how);
            if g.status != *want
                || (g.status, &g.www_authenticate, &g.body)
                    != (l.status, &l.www_authenticate, &l.body)
            {
                bad.push(format!(
                    "{path} {how:?} (want {want}):\n  glint    {g:?}\n  lighttpd {l:?}"
                ));
            }
            ours.push(g);
        }
        assert!(
            bad.is_empty(),
            "{}\nglint:\n{}\nlighttpd:\n{}",
            bad.join("\n"),
            self.glint.stderr_tail(),
            std::fs::read_to_string(self.ldir.join("error.log")).unwrap_or_default()
        );
        ours
    }
}

/// base64 of a token that starts as SPNEGO does and stops short.
fn truncated_token() -> String {
    let bytes = [
        0x60u8, 0x82, 0x02, 0x40, 0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02, 0xa0, 0x82, 0x02,
        0x34, 0x30, 0x82,
    ];
    b64(&bytes)
}

fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for ch in bytes.chunks(3) {
        let n = ch
            .iter()
            .enumerate()
            .fold(0u32, |a, (i, &b)| a | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= ch.len() {
                s.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// The requests compared, and what both servers must answer; the
/// checks below read answers 3, 7 and 15.
fn cases() -> Vec<(&'static str, How, u16)> {
    vec![
        ("/open.txt", How::None, 200),
        ("/neg/env.cgi", How::None, 401),
        // store-creds is on by default: nothing delegated is refused.
        ("/neg/env.cgi", How::Negotiate("alice", false), 401),
        ("/neg/env.cgi", How::Negotiate("alice", true), 200),
        ("/neg/env.cgi", How::Negotiate("bob", true), 200),
        ("/alice/env.cgi", How::Negotiate("alice", true), 200),
        ("/alice/env.cgi", How::Negotiate("bob", true), 401),
        ("/nodeleg/env.cgi", How::Negotiate("alice", false), 200),
        ("/neg/env.cgi", How::Header("Negotiate !!!!".into()), 400),
        ("/neg/env.cgi", How::Header("Negotiate".into()), 400),
        (
            "/neg/env.cgi",
            How::Header("Basic YWxpY2U6YWxpY2UtcHc=".into()),
            400,
        ),
        (
            "/neg/env.cgi",
            How::Header(format!("Negotiate {}", b64(b"garbage, not a token at all"))),
            401,
        ),
        (
            "/neg/env.cgi",
            How::Header(format!("Negotiate {}", truncated_token())),
            401,
        ),
        (
            "/neg/env.cgi",
            How::Header(format!("Negotiate {}", b64(&[0xff; 300]))),
            401,
        ),
        ("/basic/env.cgi", How::None, 401),
        ("/basic/env.cgi", How::Basic("alice", "alice-pw"), 200),
        (
            "/basic/env.cgi",
            How::Basic("alice@GLINT.TEST", "alice-pw"),
            200,
        ),
        ("/basic/env.cgi", How::Basic("alice", "wrong"), 401),
        ("/basic/env.cgi", How::Basic("alice", ""), 401),
        ("/basic/env.cgi", How::Basic("nobody", "alice-pw"), 401),
        ("/basic/env.cgi", How::Basic("alice", "bob-pw"), 401),
        ("/bob/env.cgi", How::Basic("bob", "bob-pw"), 200),
        ("/bob/env.cgi", How::Basic("alice", "alice-pw"), 401),
        // A principal of no one the rule names, and one of another realm.
        ("/basic/env.cgi", How::Basic("HTTP/localhost", "x"), 401),
        (
            "/basic/env.cgi",
            How::Basic("alice@OTHER.TEST", "alice-pw"),
            401,
        ),
        // Through mod_proxy: the cache named in X-Forwarded-Keytab.
        ("/echo", How::Negotiate("alice", true), 200),
    ]
}

#[test]
fn negotiate_and_basic_answered_as_lighttpd_answers() {
    let realm = Realm::new();
    realm.kinit("alice", "alice-pw");
    realm.kinit("bob", "bob-pw");
    let d = docroot();
    let be = python(&[
        backends_dir().join("http_app.py").to_str().expect("path"),
        "0",
        "app",
    ]);
    let both = start_both(&realm, &config_with(&d, &realm.keytab(), Some(be.port)));
    let ours = both.compare(&realm, &cases());
    let echo = &ours[ours.len() - 1].body;
    assert_eq!(echo, "h:x-forwarded-keytab=<ccache>\n", "{echo}");
    let shown = |i: usize| ours[i].body.clone();
    assert!(
        shown(3).contains(&format!(
            "REMOTE_USER=alice@{REALM}\nAUTH_TYPE=GSSAPI\nKRB5CCNAME=<ccache>\n\
             X_FORWARDED_KEYTAB=<ccache>\n"
        )) && shown(3).contains("CCACHE=filled"),
        "{}",
        shown(3)
    );
    assert!(
        shown(7).contains("KRB5CCNAME=\nX_FORWARDED_KEYTAB=/etc/passwd\n"),
        "{}",
        shown(7)
    );
    assert!(
        shown(15).contains("REMOTE_USER=alice\nAUTH_TYPE=Basic\nKRB5CCNAME=<ccache>"),
        "{}",
        shown(15)
    );
    // Every cache file glint made is gone once its request is over.
    let files: Vec<PathBuf> = ours
        .iter()
        .filter_map(|a| a.ccache.clone())
        .map(PathBuf::from)
        .collect();
    assert!(files.len() >= 5, "{ours:?}");
    assert!(
        wait_for(TIMEOUT, || files.iter().all(|f| !f.exists())),
        "left behind: {files:?}"
    );
    assert!(
        both.glint
            .stderr_tail()
            .lines()
            .all(|l| !l.contains("panic")),
        "{}",
        both.glint.stderr_tail()
    );
}

#[test]
fn a_kdc_down_refuses_and_one_back_is_used_again() {
    let mut realm = Realm::new();
    realm.kinit("alice", "alice-pw");
    let d = docroot();
    let both = start_both(&realm, &config(&d, &realm.keytab()));
    let up = [
        ("/basic/env.cgi", How::Basic("alice", "alice-pw"), 200),
        ("/nodeleg/env.cgi", How::Negotiate("alice", false), 200),
    ];
    both.compare(&realm, &up);
    realm.stop_kdc();
    // Basic needs the KDC; Negotiate with a service ticket in hand needs
    // only the keytab.
    both.compare(
        &realm,
        &[
            ("/basic/env.cgi", How::Basic("alice", "alice-pw"), 401),
            ("/nodeleg/env.cgi", How::Negotiate("alice", false), 200),
            ("/open.txt", How::None, 200),
        ],
    );
    realm.start_kdc();
    both.compare(&realm, &up);
}

#[test]
fn without_a_keytab_option_negotiate_uses_the_default_keytab() {
    let mut realm = Realm::new();
    realm.default_keytab = true;
    realm.kinit("alice", "alice-pw");
    let d = docroot();
    let conf = config(&d, &realm.keytab()).replace(
        &format!(
            "auth.backend.gssapi.keytab = \"{}\"\n",
            realm.keytab().display()
        ),
        "",
    );
    assert!(!conf.contains("keytab"), "{conf}");
    let both = start_both(&realm, &conf);
    both.compare(
        &realm,
        &[
            ("/neg/env.cgi", How::Negotiate("alice", true), 200),
            ("/nodeleg/env.cgi", How::Negotiate("alice", false), 200),
            // Basic needs the option: refused, as lighttpd refuses it.
            ("/basic/env.cgi", How::Basic("alice", "alice-pw"), 401),
        ],
    );
}

#[test]
fn a_stalled_kdc_stalls_no_static_file() {
    let realm = Realm::new();
    let d = docroot();
    let conf = config(&d, &realm.keytab());
    let mut cmd = Command::new(glint_bin());
    cmd.arg("-D").envs(realm.env());
    let glint = Launch::command(cmd)
        .config(&conf.replace("{port}", "0").replace("{errorlog}", ""))
        .start();
    let port = glint.addr().port();
    realm.pause_kdc(true);
    let (tx, rx) = std::sync::mpsc::channel();
    let r2 = realm.env();
    let bin = need("/usr/bin/curl", "curl");
    std::thread::spawn(move || {
        let out = Command::new(bin)
            .args([
                "-s",
                "-o",
                "/dev/null",
                "--max-time",
                "120",
                "-w",
                "%{http_code}",
            ])
            .args(["-u", "alice:alice-pw"])
            .arg(format!("http://localhost:{port}/basic/env.cgi"))
            .envs(r2)
            .output();
        let _ = tx.send(out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()));
    });
    // For two seconds, with the Kerberos check hanging on the stopped
    // KDC, static files keep coming at once.
    let start = Instant::now();
    let mut served = 0;
    while start.elapsed() < Duration::from_secs(2) && served < 100_000 {
        let t = Instant::now();
        let r = glint.get("/open.txt").expect("static file");
        assert_eq!(r.status, 200);
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "a static file took {:?}",
            t.elapsed()
        );
        served += 1;
    }
    assert!(
        rx.try_recv().is_err(),
        "the Kerberos check did not wait for the stopped KDC"
    );
    realm.pause_kdc(false);
    let status = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the Kerberos check ends")
        .expect("curl");
    assert!(
        status == "200" || status == "401",
        "after the KDC went on: {status}\n{}",
        glint.stderr_tail()
    );
}

#[test]
fn gssapi_without_its_library_stops_the_start() {
    assert!(
        is_root(),
        "this test hides the library in a mount namespace: run it as root"
    );
    let lib = "/usr/lib/x86_64-linux-gnu/libgssapi_krb5.so.2";
    need(lib, "libgssapi-krb5-2");
    let unshare = need("/usr/bin/unshare", "util-linux");
    let dir = TempDir::new("gssapi-nolib");
    let conf = dir.join("t.conf");
    std::fs::write(
        &conf,
        format!(
            "server.document-root = \"{}\"\nserver.modules += ( \"mod_auth\" )\n\
             auth.backend = \"gssapi\"\n",
            dir.path().display()
        ),
    )
    .expect("conf");
    let out = Command::new(unshare)
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount --bind /dev/null {lib} && exec \"$0\" -t -f \"$1\""
        ))
        .arg(glint_bin())
        .arg(&conf)
        .output()
        .expect("unshare");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started without the library: {err}");
    assert!(
        err.contains("t.conf:3:") && err.contains("libgssapi_krb5.so.2"),
        "{err}"
    );
}
