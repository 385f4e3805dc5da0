//! The ratchet of Debian's configuration snippets: every file of
//! `/etc/lighttpd/conf-available` (package `lighttpd` and the module
//! packages that add theirs: `lighttpd-mod-deflate`, `-mod-openssl`,
//! `-mod-webdav`, `-modules-lua`, and `javascript-common`), included with
//! the snippets it `depends:` on (as `lighty-enable-mod` enables them) into
//! a configuration shaped like Debian's `lighttpd.conf`, is started under
//! glint and under lighttpd 1.4.69: both must start or both refuse, and
//! answer a few requests alike.
//!
//! A snippet glint refuses because it lacks its module is listed in
//! [`EXPECTED_REFUSALS`]; the list can only shrink: a listed snippet that
//! starts fails the test until it is removed from the list.
//!
//! The snippets name system places (`/var/log/lighttpd`, `/var/cache/lighttpd`,
//! `/var/www`, `/run/lighttpd`, `/run/php`, `/srv`, `/etc/lighttpd/server.pem`,
//! port 443): each server gets a copy with those moved into a temporary
//! directory, so that the test writes nothing outside it and binds no
//! privileged port. Both servers run the same copy.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const DIR: &str = "/etc/lighttpd/conf-available";

/// Snippets glint refuses to start with, and why: only modules glint does
/// not provide yet belong here.
const EXPECTED_REFUSALS: &[(&str, &str)] = &[];

/// Every snippet Debian's packages installed in this test's setup (`.ci/run`
/// installs them): one missing means a package is missing, and the test
/// would prove less than it says.
const KNOWN: &[&str] = &[
    "05-auth.conf",
    "05-setenv.conf",
    "10-accesslog.conf",
    "10-cgi.conf",
    "10-dir-listing.conf",
    "10-evhost.conf",
    "10-expire.conf",
    "10-fastcgi.conf",
    "10-magnet.conf",
    "10-no-www.conf",
    "10-proxy.conf",
    "10-rewrite.conf",
    "10-rrdtool.conf",
    "10-simple-vhost.conf",
    "10-sockproxy.conf",
    "10-ssi.conf",
    "10-ssl.conf",
    "10-status.conf",
    "10-userdir.conf",
    "10-webdav.conf",
    "11-extforward.conf",
    "15-fastcgi-php-fpm.conf",
    "15-fastcgi-php.conf",
    "20-deflate.conf",
    "90-debian-doc.conf",
    "90-javascript-alias.conf",
    "99-unconfigured.conf",
];

/// The snippets present, sorted; fails naming the packages when the
/// directory or one of [`KNOWN`] is missing.
fn snippets() -> Vec<String> {
    let dir = std::fs::read_dir(DIR).unwrap_or_else(|e| {
        panic!(
            "{DIR}: {e}: apt-get install lighttpd lighttpd-mod-deflate lighttpd-mod-openssl \
             lighttpd-mod-webdav lighttpd-modules-lua javascript-common"
        )
    });
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".conf"))
        .collect();
    names.sort();
    for k in KNOWN {
        assert!(
            names.iter().any(|n| n == k),
            "{DIR}/{k} is missing: install the Debian package that ships it (dpkg -S on a \
             complete system; see .ci/run)"
        );
    }
    names
}

/// The module names a snippet `depends:` on (`# -*- depends: a, b -*-`).
fn depends(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split("-*- depends:").nth(1))
        .filter_map(|rest| rest.split("-*-").next())
        .flat_map(|list| list.split(',').map(|m| m.trim().to_string()))
        .filter(|m| !m.is_empty())
        .collect()
}

/// The snippet enabling module `name` (`NN-name.conf`), as lighty-enable-mod finds it.
fn snippet_of(all: &[String], name: &str) -> Option<String> {
    all.iter()
        .find(|f| {
            f.split_once('-')
                .is_some_and(|(_, rest)| rest == format!("{name}.conf"))
        })
        .cloned()
}

/// One run's directory: the rewritten snippets, the docroot, the places
/// the snippets write to.
struct Place {
    dir: TempDir,
    port: u16,
    tls_port: u16,
}

impl Place {
    fn new() -> Place {
        let dir = TempDir::new("confavail");
        for d in ["www/dir", "log", "cache", "varwww", "run", "runphp", "srv"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("www/index.html"), b"<p>index</p>\n").unwrap();
        std::fs::write(dir.join("www/hello.txt"), b"hello\n").unwrap();
        std::fs::write(dir.join("www/dir/a.txt"), b"a\n").unwrap();
        std::fs::write(
            dir.join("www/info.php"),
            b"<?php echo 'php says ', 6 * 7, \"\\n\";\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("www/page.shtml"),
            b"<!--#echo var=\"DOCUMENT_URI\" -->\n",
        )
        .unwrap();
        make_cert(dir.path());
        Place {
            dir,
            port: free_port(),
            tls_port: free_port(),
        }
    }

    /// `text` with the system places moved into this directory.
    fn localize(&self, text: &str) -> String {
        let d = self.dir.path().display().to_string();
        text.replace("/var/log/lighttpd/", &format!("{d}/log/"))
            .replace("/var/cache/lighttpd/", &format!("{d}/cache/"))
            .replace("/var/www/", &format!("{d}/varwww/"))
            .replace("/run/lighttpd/", &format!("{d}/run/"))
            .replace("/run/php/", &format!("{d}/runphp/"))
            .replace("\"/srv", &format!("\"{d}/srv"))
            .replace("/etc/lighttpd/server.pem", &format!("{d}/server.pem"))
            .replace("0.0.0.0:443", &format!("127.0.0.1:{}", self.tls_port))
            .replace("use-ipv6.pl 443", &format!("use-ipv6.pl {}", self.tls_port))
    }

    /// The configuration for `snippet` (with its dependencies), written
    /// for server `who`; its path.
    fn conf(&self, all: &[String], snippet: &str, who: &str) -> PathBuf {
        let text = std::fs::read_to_string(Path::new(DIR).join(snippet)).unwrap();
        let mut includes = String::new();
        for dep in depends(&text) {
            let f = snippet_of(all, &dep)
                .unwrap_or_else(|| panic!("{snippet} depends on {dep}, which has no snippet"));
            includes.push_str(&self.include(&f, who));
        }
        includes.push_str(&self.include(snippet, who));
        let d = self.dir.path().display();
        let conf = format!(
            "server.modules = ( \"mod_indexfile\", \"mod_access\", \"mod_alias\", \"mod_redirect\" )\n\
             server.document-root = \"{d}/www\"\n\
             server.errorlog = \"{d}/{who}-error.log\"\n\
             server.bind = \"127.0.0.1\"\n\
             server.port = {port}\n\
             index-file.names = ( \"index.php\", \"index.html\" )\n\
             url.access-deny = ( \"~\", \".inc\" )\n\
             static-file.exclude-extensions = ( \".php\", \".pl\", \".fcgi\" )\n\
             include_shell \"/usr/share/lighttpd/create-mime.conf.pl\"\n\
             {includes}\
             server.modules += ( \"mod_dirlisting\", \"mod_staticfile\" )\n",
            port = self.port
        );
        let path = self.dir.join(&format!("{who}.conf"));
        std::fs::write(&path, conf).unwrap();
        path
    }

    /// An include of the localized copy of `snippet`.
    fn include(&self, snippet: &str, who: &str) -> String {
        let text = std::fs::read_to_string(Path::new(DIR).join(snippet)).unwrap();
        let copy = self.dir.join(&format!("{who}-{snippet}"));
        std::fs::write(&copy, self.localize(&text)).unwrap();
        format!("include \"{}\"\n", copy.display())
    }
}

/// A server process started on a configuration: running (accepting on
/// the port) or refused, with what it said.
enum Started {
    Running(Child),
    Refused(String),
}

fn start(mut cmd: Command, port: u16, log: &Path) -> Started {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {:?} ({e}): apt-get install lighttpd",
                cmd.get_program()
            )
        });
    let up = wait_for(Duration::from_secs(15), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            || matches!(child.try_wait(), Ok(Some(_)))
    });
    if up && matches!(child.try_wait(), Ok(None)) {
        return Started::Running(child);
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("wait");
    let mut why = String::from_utf8_lossy(&out.stderr).into_owned();
    why.push_str(&std::fs::read_to_string(log).unwrap_or_default());
    Started::Refused(why)
}

/// Stops a server as an administrator would (SIGTERM: it stops the
/// FastCGI processes it spawned, where SIGKILL left php-cgi running
/// after the test), killed if it has not exited within 2 s.
fn stop(mut c: Child) {
    let pid = nix::unistd::Pid::from_raw(c.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let exited = wait_for(Duration::from_secs(2), || {
        matches!(c.try_wait(), Ok(Some(_)))
    });
    if !exited {
        let _ = c.kill();
    }
    let _ = c.wait();
}

/// The requests both servers answer, with the Host each names.
const REQUESTS: &[(&str, &str)] = &[
    ("/", "localhost"),
    ("/hello.txt", "localhost"),
    ("/missing.txt", "localhost"),
    ("/dir/", "localhost"),
    ("/dir", "localhost"),
    ("/hello.txt", "www.example.org"),
    ("/page.shtml", "localhost"),
    ("/info.php", "localhost"),
    ("/~root/", "localhost"),
    ("/cgi-bin/", "localhost"),
    ("/doc/", "localhost"),
    ("/javascript/", "localhost"),
    ("/server-status", "localhost"),
];

/// What is compared of an answer: the status, the `Location`, and the body
/// of a 200 that is no generated listing.
fn summary(r: &Response) -> String {
    let listing = r
        .header("Content-Type")
        .is_some_and(|t| t.starts_with("text/html"))
        && String::from_utf8_lossy(&r.body).contains("Index of");
    let body = if r.status == 200 && !listing {
        String::from_utf8_lossy(&r.body).into_owned()
    } else {
        String::new()
    };
    format!(
        "{} location={:?} {body:?}",
        r.status,
        r.header("Location").unwrap_or("")
    )
}

fn answers(port: u16) -> Vec<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    REQUESTS
        .iter()
        .map(|(path, host)| {
            let mut c = Conn::open(addr).expect("connect");
            c.send(
                format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .expect("send");
            let r = c.read_response(false);
            format!(
                "{host}{path}: {}",
                r.map_or_else(|e| format!("no answer ({e})"), |r| summary(&r))
            )
        })
        .collect()
}

/// One snippet under both servers: Ok(true) both started and answered
/// alike, Ok(false) both refused, Err with the difference.
fn compare(all: &[String], snippet: &str) -> Result<bool, String> {
    let p = Place::new();
    let lconf = p.conf(all, snippet, "lighttpd");
    let mut cmd = Command::new("lighttpd");
    cmd.arg("-D").arg("-f").arg(&lconf);
    let lighttpd = start(cmd, p.port, &p.dir.join("lighttpd-error.log"));
    let lighttpd_answers = match lighttpd {
        Started::Running(c) => {
            let a = answers(p.port);
            stop(c);
            Ok(a)
        }
        Started::Refused(why) => Err(why),
    };
    let gconf = p.conf(all, snippet, "glint");
    let mut cmd = Command::new(glint_bin());
    cmd.arg("-D").arg("-f").arg(&gconf);
    let glint = start(cmd, p.port, &p.dir.join("glint-error.log"));
    match (glint, lighttpd_answers) {
        (Started::Running(c), Ok(want)) => {
            let got = answers(p.port);
            stop(c);
            let diff: Vec<String> = got
                .iter()
                .zip(&want)
                .filter(|(g, w)| g != w)
                .map(|(g, w)| format!("glint    {g}\n    lighttpd {w}"))
                .collect();
            if diff.is_empty() {
                Ok(true)
            } else {
                Err(format!("answers differ:\n    {}", diff.join("\n    ")))
            }
        }
        (Started::Refused(_), Err(_)) => Ok(false),
        (Started::Running(c), Err(why)) => {
            stop(c);
            Err(format!("glint started, lighttpd refused: {why}"))
        }
        (Started::Refused(why), Ok(_)) => Err(format!("glint refused, lighttpd started: {why}")),
    }
}

#[test]
fn every_debian_snippet_starts_and_answers_as_under_lighttpd() {
    let all = snippets();
    let mut problems = Vec::new();
    let mut table = Vec::new();
    for s in &all {
        let expected_refusal = EXPECTED_REFUSALS.iter().find(|(n, _)| n == s);
        let outcome = compare(&all, s);
        table.push(format!("{s}: {outcome:?}"));
        match (outcome, expected_refusal) {
            (Ok(_), None) => {}
            (Ok(_), Some(_)) => problems.push(format!(
                "{s} now starts as under lighttpd: remove {s} from EXPECTED_REFUSALS"
            )),
            (Err(_), Some(_)) => {}
            (Err(e), None) => problems.push(format!("{s}: {e}")),
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// mod_simple_vhost (10-simple-vhost.conf, with its server root in a
/// temporary directory): the host's directory, else the default host's,
/// else `server.document-root`, under glint as under lighttpd.
#[test]
fn simple_vhost_falls_back_to_the_default_host_then_the_document_root() {
    let all = snippets();
    let p = Place::new();
    let srv = p.dir.join("srv");
    std::fs::create_dir_all(srv.join("known.test/htdocs")).unwrap();
    std::fs::write(srv.join("known.test/htdocs/hello.txt"), b"known\n").unwrap();
    let ask = |port: u16| -> Vec<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        ["known.test", "other.test"]
            .iter()
            .map(|host| {
                let mut c = Conn::open(addr).expect("connect");
                c.send(
                    format!("GET /hello.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .expect("send");
                let r = c.read_response(false).expect("answer");
                format!("{host}: {} {}", r.status, String::from_utf8_lossy(&r.body))
            })
            .collect()
    };
    let mut runs = Vec::new();
    for default_exists in [false, true] {
        if default_exists {
            std::fs::create_dir_all(srv.join("www.example.com/htdocs")).unwrap();
            std::fs::write(srv.join("www.example.com/htdocs/hello.txt"), b"default\n").unwrap();
        }
        let mut got = Vec::new();
        for who in ["lighttpd", "glint"] {
            let conf = p.conf(&all, "10-simple-vhost.conf", who);
            let bin = if who == "glint" {
                glint_bin()
            } else {
                "lighttpd".into()
            };
            let mut cmd = Command::new(bin);
            cmd.arg("-D").arg("-f").arg(&conf);
            match start(cmd, p.port, &p.dir.join(&format!("{who}-error.log"))) {
                Started::Running(c) => {
                    got.push(ask(p.port));
                    stop(c);
                }
                Started::Refused(why) => panic!("{who} refused 10-simple-vhost.conf: {why}"),
            }
        }
        assert_eq!(got[1], got[0], "glint (left) and lighttpd (right) differ");
        runs.push(got.remove(0));
    }
    // Without the default host's directory, the document root answers.
    assert_eq!(
        runs[0],
        ["known.test: 200 known\n", "other.test: 200 hello\n"]
    );
    assert_eq!(
        runs[1],
        ["known.test: 200 known\n", "other.test: 200 default\n"]
    );
}
