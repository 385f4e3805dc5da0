//! Two core options of lighttpd 1.4.69, on glint and on lighttpd from
//! the same configuration, answers compared:
//! - `server.protocol-http11 = "disable"`: every answer is HTTP/1.0; an
//!   HTTP/1.1 request's connection closes after it (a pipelined request
//!   behind it is not answered), a CGI answer of unknown length is
//!   delimited by the close, an HTTP/1.0 keep-alive stays, a scope that
//!   enables it again speaks HTTP/1.1; HTTP/2 (h2c upgrade or prior
//!   knowledge) is not affected.
//! - `mimetype.use-xattr`: a file's type from its `user.Content-Type`
//!   attribute (set with the syscall on the temporary docroot, whose file
//!   system must take user attributes), the name's type without one or
//!   where the option is off; an attribute that would inject a header is
//!   refused by glint (lighttpd sends it as it is).

mod common;

use std::ffi::CString;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use common::*;

/// glint and lighttpd on the same configuration (`{port}`, `{dir}`).
struct Both {
    _dir: TempDir,
    glint: Server,
    lighttpd: Child,
    lport: u16,
}

impl Drop for Both {
    fn drop(&mut self) {
        let _ = self.lighttpd.kill();
        let _ = self.lighttpd.wait();
    }
}

fn start(dir: TempDir, conf: &str) -> Both {
    let d = dir.path().display().to_string();
    let text = |port: u16, log: &str| {
        format!(
            "server.document-root = \"{d}/www\"\nserver.bind = \"127.0.0.1\"\n\
             server.port = {port}\nserver.errorlog = \"{d}/{log}\"\n{}",
            conf.replace("{dir}", &d).replace("{log}", log)
        )
    };
    let g = dir.join("glint.conf");
    std::fs::write(&g, text(0, "glint.log")).expect("conf");
    let glint = Launch::new().config_file(&g).start();
    let lport = free_port();
    let l = dir.join("lighttpd.conf");
    std::fs::write(&l, text(lport, "lighttpd.log")).expect("conf");
    let lighttpd =
        start_lighttpd(&l, lport).unwrap_or_else(|e| panic!("{e} (apt-get install lighttpd)"));
    Both {
        _dir: dir,
        glint,
        lighttpd,
        lport,
    }
}

/// What one connection got for `request`: the answers parsed in order,
/// and whether the server closed it (`wait` for a close at most).
fn exchange_all(addr: SocketAddr, request: &[u8], wait: Duration) -> (Vec<Response>, bool) {
    let mut c = Conn::wrap(TcpStream::connect(addr).expect("connect"));
    c.send(request).expect("send");
    let bytes = c.read_to_close(wait);
    let (buf, closed) = match bytes {
        Ok(b) => (b, true),
        Err(_) => (Vec::new(), false),
    };
    let mut out = Vec::new();
    let mut rest: &[u8] = &buf;
    // (Bounded: each round takes a whole response off the front.)
    for _ in 0..8 {
        match parse_response(rest, false, closed) {
            Parsed::Complete(r, used) => {
                out.push(r);
                rest = &rest[used..];
            }
            _ => break,
        }
    }
    (out, closed)
}

impl Both {
    fn laddr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.lport).into()
    }

    /// `request` on both; the same versions, statuses, bodies, framings,
    /// `Connection` values and fates of the connection. Returns glint's.
    fn same(&self, request: &[u8], wait: Duration) -> (Vec<Response>, bool) {
        let g = exchange_all(self.glint.addr(), request, wait);
        let l = exchange_all(self.laddr(), request, wait);
        let what = show(request);
        let sum = |(rs, closed): &(Vec<Response>, bool)| {
            let mut s: Vec<String> = rs
                .iter()
                .map(|r| {
                    format!(
                        "{} {} framing={} connection={:?} body={}",
                        r.version,
                        r.status,
                        r.framing,
                        r.header("connection").map(str::to_ascii_lowercase),
                        show(&r.body)
                    )
                })
                .collect();
            s.push(format!("closed={closed}"));
            s
        };
        assert_eq!(sum(&g), sum(&l), "glint vs lighttpd for {what}");
        g
    }
}

const SLOW_PY: &str = r#"import sys, time
sys.stdout.write("Content-Type: text/plain\r\n\r\nfirst\n")
sys.stdout.flush()
time.sleep(0.2)
sys.stdout.write("second\n")
"#;

#[test]
fn protocol_http11_disabled_answers_as_http10() {
    let dir = TempDir::new("http10");
    std::fs::create_dir_all(dir.join("www")).expect("www");
    std::fs::write(dir.join("www/a.txt"), "file a\n").expect("a.txt");
    std::fs::write(dir.join("www/slow.py"), SLOW_PY).expect("slow.py");
    let b = start(
        dir,
        "server.modules = ( \"mod_cgi\", \"mod_accesslog\" )\ncgi.assign = ( \".py\" => \"/usr/bin/python3\" )\n\
         accesslog.filename = \"{dir}/{log}.access\"\naccesslog.format = \"%r %H %s\"\n\
         mimetype.assign = ( \".txt\" => \"text/plain\" )\n\
         server.stream-response-body = 2\nserver.protocol-http11 = \"disable\"\n\
         $HTTP[\"host\"] == \"modern\" { server.protocol-http11 = \"enable\" }\n",
    );
    let quick = Duration::from_secs(3);
    // HTTP/1.1 with a request pipelined behind: one HTTP/1.0 answer, the close.
    let (rs, closed) = b.same(
        b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        quick,
    );
    assert!(closed && rs.len() == 1, "{rs:?}");
    assert_eq!(rs[0].version, "HTTP/1.0");
    assert_eq!(rs[0].header("connection"), Some("close"));
    assert_eq!(rs[0].body, b"file a\n");
    // HTTP/1.0 asking for keep-alive keeps it; its second request closes.
    let (rs, closed) = b.same(
        b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /a.txt HTTP/1.0\r\n\r\n",
        quick,
    );
    assert!(closed && rs.len() == 2, "{rs:?}");
    assert_eq!(rs[0].header("connection"), Some("keep-alive"));
    // A CGI answer of unknown length: no chunks, delimited by the close.
    let (rs, closed) = b.same(b"GET /slow.py HTTP/1.1\r\nHost: t\r\n\r\n", quick);
    assert!(closed && rs.len() == 1, "{rs:?}");
    assert_eq!(rs[0].framing, "close");
    assert_eq!(rs[0].body, b"first\nsecond\n");
    // A body still being sent when the answer is ready: it arrives whole.
    let mut c = Conn::wrap(TcpStream::connect(b.glint.addr()).expect("connect"));
    c.send(b"POST /slow.py HTTP/1.1\r\nHost: t\r\nContent-Length: 200000\r\n\r\nsome")
        .expect("send");
    let r = c.read_response(false).expect("the answer");
    assert_eq!(
        (r.version.as_str(), r.body.as_slice()),
        ("HTTP/1.0", &b"first\nsecond\n"[..])
    );
    // HTTP/2, by an h2c upgrade of an HTTP/1.1 request or by prior
    // knowledge, is not affected (curl, on both).
    for port in [b.glint.port, b.lport] {
        for how in ["--http2", "--http2-prior-knowledge"] {
            let out = std::process::Command::new("curl")
                .args(["-s", "-i", how])
                .arg(format!("http://127.0.0.1:{port}/a.txt"))
                .output()
                .expect("curl (apt-get install curl)");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("HTTP/2 200") && text.ends_with("file a\n"),
                "{how} on port {port}:\n{text}"
            );
        }
    }
    // The access log's request line says HTTP/1.0, as lighttpd's.
    let access = |name: &str| {
        let p = b._dir.join(name);
        let mut text = String::new();
        wait_for(TIMEOUT, || {
            text = std::fs::read_to_string(&p).unwrap_or_default();
            text.contains("GET /slow.py")
        });
        text.lines()
            .find(|l| l.starts_with("GET /slow.py"))
            .map(str::to_string)
    };
    assert_eq!(access("glint.log.access"), access("lighttpd.log.access"));
    assert_eq!(
        access("glint.log.access").as_deref(),
        Some("GET /slow.py HTTP/1.0 HTTP/1.0 200")
    );
    // A scope that enables HTTP/1.1 again: an HTTP/1.1 answer, kept open.
    let mut g = Conn::wrap(TcpStream::connect(b.glint.addr()).expect("connect"));
    let mut l = Conn::wrap(TcpStream::connect(b.laddr()).expect("connect"));
    for c in [&mut g, &mut l] {
        for _ in 0..2 {
            c.send(b"GET /a.txt HTTP/1.1\r\nHost: modern\r\n\r\n")
                .expect("send");
            let r = c.read_response(false).expect("answer");
            assert_eq!((r.version.as_str(), r.status), ("HTTP/1.1", 200));
        }
    }
}

/// Sets the extended attribute `name` of `path`; panics, naming the file
/// system's limit, when it takes no user attributes.
fn set_xattr(path: &Path, name: &str, value: &[u8]) {
    let p = CString::new(path.as_os_str().as_bytes()).expect("path");
    let n = CString::new(name).expect("name");
    // SAFETY: both are C strings; the kernel reads `value.len()` bytes.
    let rc = unsafe {
        nix::libc::setxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc != 0 {
        panic!(
            "setxattr {name} on {}: {} (the temporary directory's file system must take \
             user extended attributes; set TMPDIR to one that does)",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
}

#[test]
fn use_xattr_takes_the_type_from_the_files_attribute() {
    let dir = TempDir::new("xattr");
    for (f, body) in [
        ("www/a.txt", "a"),
        ("www/b.txt", "b"),
        ("www/evil.json", "{}"),
        ("www/plain/a.txt", "pa"),
    ] {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, body).expect("file");
    }
    set_xattr(
        &dir.join("www/a.txt"),
        "user.Content-Type",
        b"text/x-from-xattr",
    );
    set_xattr(
        &dir.join("www/plain/a.txt"),
        "user.Content-Type",
        b"text/x-from-xattr",
    );
    set_xattr(
        &dir.join("www/evil.json"),
        "user.Content-Type",
        b"text/html\r\nX-Injected: yes",
    );
    let b = start(
        dir,
        "mimetype.assign = ( \".txt\" => \"text/plain\", \".json\" => \"application/json\" )\n\
         mimetype.use-xattr = \"enable\"\nmimetype.xattr-name = \"user.Content-Type\"\n\
         $HTTP[\"url\"] =^ \"/plain/\" { mimetype.use-xattr = \"disable\" }\n",
    );
    let quick = Duration::from_secs(3);
    for (path, want) in [
        ("/a.txt", "text/x-from-xattr"),
        ("/b.txt", "text/plain"),
        ("/plain/a.txt", "text/plain"),
    ] {
        let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let (rs, _) = exchange_all(b.glint.addr(), req.as_bytes(), quick);
        let (ls, _) = exchange_all(b.laddr(), req.as_bytes(), quick);
        let ct = |rs: &[Response]| {
            rs.first()
                .and_then(|r| r.header("content-type").map(String::from))
        };
        assert_eq!(ct(&rs).as_deref(), Some(want), "glint {path}");
        assert_eq!(ct(&ls).as_deref(), Some(want), "lighttpd {path}");
    }
    // The attacker's attribute: glint sends the name's type, no header of its making.
    let (rs, _) = exchange_all(
        b.glint.addr(),
        b"GET /evil.json HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        quick,
    );
    let r = rs.first().expect("an answer");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-injected"), None, "{}", r.describe());
}
