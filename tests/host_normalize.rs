//! `$HTTP["host"]` sees the Host as lighttpd 1.4.69's default
//! `server.http-parseopts` (`host-strict`, `host-normalize`) leave it:
//! lowercased, without a trailing dot, without the scheme's own port. A
//! `==` and `!=` compare the names whatever the port (either side's). A
//! block that guards a host guards every spelling of it: the requests below
//! must not get past `url.access-deny` by writing the name another way.
//! Each is sent to glint and to lighttpd on the same configuration, and the
//! answers compared.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::process::Child;

use common::*;

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

const CONF: &str = r#"
server.modules += ("mod_access", "mod_setenv")
$HTTP["host"] == "admin.example.com" {
    url.access-deny = ("")
}
$HTTP["host"] == "pay.example.com:8443" {
    url.access-deny = ("")
}
$HTTP["host"] =~ "^shop\.example\.com$" {
    setenv.add-response-header = ("X-Shop" => "yes")
}
"#;

fn start() -> Both {
    let dir = TempDir::new("host-normalize");
    std::fs::create_dir_all(dir.join("www")).expect("www");
    std::fs::write(dir.join("www/index.html"), "hello\n").expect("index");
    let d = dir.path().display().to_string();
    let text = |port: u16, log: &str| {
        format!(
            "server.document-root = \"{d}/www\"\nserver.bind = \"127.0.0.1\"\n\
             server.port = {port}\nserver.errorlog = \"{d}/{log}\"\n{CONF}"
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

/// Status and X-Shop of `GET /index.html` with `host` from `addr`.
fn ask(addr: SocketAddr, host: &str) -> (u16, Option<String>) {
    let mut c = Conn::wrap(TcpStream::connect(addr).expect("connect"));
    let req = format!("GET /index.html HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    c.send(req.as_bytes()).expect("send");
    let r = c
        .read_response(false)
        .unwrap_or_else(|e| panic!("Host {host}: {e}"));
    (r.status, r.header("x-shop").map(str::to_string))
}

#[test]
fn a_guarded_host_is_guarded_in_every_spelling() {
    let b = start();
    let laddr: SocketAddr = ([127, 0, 0, 1], b.lport).into();
    // (Host, glint's status, X-Shop): the port is http's own, 80.
    let cases: &[(&str, u16, Option<&str>)] = &[
        ("admin.example.com", 403, None),
        ("ADMIN.Example.Com", 403, None),
        ("admin.example.com.", 403, None),
        ("admin.example.com:80", 403, None),
        ("Admin.Example.com.:80", 403, None),
        ("admin.example.com:", 403, None),
        // `==` compares the names whatever the port.
        ("admin.example.com:8080", 403, None),
        ("admin.example.com.:443", 403, None),
        ("admin.example.com.evil", 200, None),
        ("admin.example.co", 200, None),
        ("other.example.com", 200, None),
        ("pay.example.com", 403, None),
        ("pay.example.com.:8443", 403, None),
        ("pay.example.com:9443", 200, None),
        ("shop.example.com", 200, Some("yes")),
        ("shop.example.com.:80", 200, Some("yes")),
        ("SHOP.example.com.", 200, Some("yes")),
        ("shop.example.com:81", 200, None),
        ("[::1]:80", 200, None),
        ("127.0.0.1:80", 200, None),
    ];
    for &(host, status, shop) in cases {
        let g = ask(b.glint.addr(), host);
        let l = ask(laddr, host);
        assert_eq!(g, l, "glint vs lighttpd for Host {host}");
        assert_eq!(
            g,
            (status, shop.map(str::to_string)),
            "glint for Host {host}"
        );
    }
}
