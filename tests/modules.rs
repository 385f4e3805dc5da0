//! lighttpd's everyday modules through the real server: mod_extforward
//! (headers and the PROXY protocol) seen by conditionals and the access
//! log, mod_evhost, mod_alias, `${url.*}` and `${qsa}` in redirects,
//! mod_setenv's response headers, and a listing with its options.

mod common;

use common::*;
use std::io::{Read, Write};

/// Sends `raw` on a new connection and reads until the server closes.
fn raw_exchange(s: &Server, raw: &[u8]) -> String {
    let mut t = s.tcp();
    t.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    t.write_all(raw).expect("send");
    let mut out = Vec::new();
    let _ = t.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_trusted_forwarder_names_the_client_for_conditionals_and_the_log() {
    let d = Docroot::new();
    d.file("index.html", b"page\n");
    let log = d.base.join("access.log");
    let conf = format!(
        "server.modules = ( \"mod_extforward\", \"mod_setenv\", \"mod_accesslog\" )\n\
         accesslog.filename = \"{}\"\n\
         extforward.forwarder = ( \"127.0.0.1\" => \"trust\" )\n\
         extforward.headers = ( \"X-Forwarded-For\", \"Forwarded\" )\n\
         $HTTP[\"remoteip\"] == \"198.51.100.0/24\" {{ setenv.set-response-header = ( \"X-Client\" => \"outside\" ) }}\n\
         $HTTP[\"scheme\"] == \"https\" {{ setenv.add-response-header = ( \"X-Scheme\" => \"https\" ) }}\n",
        log.display()
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/index.html", &["X-Forwarded-For: 198.51.100.7"]));
    assert_eq!(r.header("x-client"), Some("outside"), "{}", r.describe());
    assert_eq!(r.header("x-scheme"), None);
    // The forwarded client, two proxies deep: the rightmost untrusted hop.
    let r = fetch(
        &s,
        &get(
            "/index.html",
            &["X-Forwarded-For: 203.0.113.1, 198.51.100.9, 127.0.0.1"],
        ),
    );
    assert_eq!(r.header("x-client"), Some("outside"), "{}", r.describe());
    let r = fetch(
        &s,
        &get("/index.html", &["Forwarded: for=198.51.100.8;proto=https"]),
    );
    assert_eq!(r.header("x-client"), Some("outside"), "{}", r.describe());
    assert_eq!(r.header("x-scheme"), Some("https"), "{}", r.describe());
    // Without the header, the connection's own address.
    let r = fetch(&s, &get("/index.html", &[]));
    assert_eq!(r.header("x-client"), None, "{}", r.describe());
    drop(s);
    let lines = std::fs::read_to_string(&log).expect("access log");
    let hosts: Vec<&str> = lines.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(
        hosts,
        ["198.51.100.7", "198.51.100.9", "198.51.100.8", "127.0.0.1"],
        "{lines}"
    );
}

#[test]
fn the_proxy_protocol_from_a_trusted_peer_sets_the_client_and_a_bad_header_closes() {
    let d = Docroot::new();
    d.file("index.html", b"page\n");
    let conf = "server.modules = ( \"mod_extforward\", \"mod_setenv\" )\n\
         extforward.forwarder = ( \"127.0.0.1\" => \"trust\" )\n\
         extforward.hap-PROXY = \"enable\"\n\
         $HTTP[\"remoteip\"] == \"2001:db8::7\" { setenv.set-response-header = ( \"X-Client\" => \"v6\" ) }\n\
         $HTTP[\"remoteip\"] == \"198.51.100.7\" { setenv.set-response-header = ( \"X-Client\" => \"v1\" ) }\n";
    let s = start_conf(&d, conf);
    let mut v1 = b"PROXY TCP4 198.51.100.7 127.0.0.1 40000 80\r\n".to_vec();
    v1.extend_from_slice(&get("/index.html", &[]));
    let out = raw_exchange(&s, &v1);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("X-Client: v1\r\n"), "{out}");
    // PROXY v2: signature, version 2 / PROXY, AF_INET6 + STREAM, 36 bytes.
    let mut v2 = b"\r\n\r\n\0\r\nQUIT\n\x21\x21\x00\x24".to_vec();
    let src: std::net::Ipv6Addr = "2001:db8::7".parse().unwrap();
    let dst: std::net::Ipv6Addr = "::1".parse().unwrap();
    v2.extend_from_slice(&src.octets());
    v2.extend_from_slice(&dst.octets());
    v2.extend_from_slice(&40000u16.to_be_bytes());
    v2.extend_from_slice(&80u16.to_be_bytes());
    v2.extend_from_slice(&get("/index.html", &[]));
    let out = raw_exchange(&s, &v2);
    assert!(out.contains("X-Client: v6\r\n"), "{out}");
    // A trusted peer that sends no PROXY header gets no answer.
    let out = raw_exchange(&s, &get("/index.html", &[]));
    assert!(!out.contains("page"), "{out}");
}

#[test]
fn evhost_alias_and_url_substitutions() {
    let d = Docroot::new();
    d.file("index.html", b"default docroot\n");
    let hosts = d.base.join("hosts");
    std::fs::create_dir_all(hosts.join("example.org/blog")).unwrap();
    std::fs::write(hosts.join("example.org/blog/index.html"), b"the blog\n").unwrap();
    let shared = d.base.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("lib.js"), b"// js\n").unwrap();
    let conf = format!(
        "server.modules = ( \"mod_evhost\", \"mod_alias\", \"mod_redirect\" )\n\
         evhost.path-pattern = \"{}/%0/%3/\"\n\
         alias.url = ( \"/js/\" => \"{}/\" )\n\
         url.redirect = ( \"^/old(/[^?]*)\" => \"${{url.scheme}}://${{url.authority}}/new${{1}}${{qsa}}\" )\n",
        hosts.display(),
        shared.display()
    );
    let s = start_conf(&d, &conf);
    let host = |h: &str, path: &str| {
        let raw = format!("GET {path} HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n");
        fetch(&s, raw.as_bytes())
    };
    assert_eq!(host("blog.example.org", "/").body, b"the blog\n");
    assert_eq!(host("other.example.org", "/").body, b"default docroot\n");
    assert_eq!(host("blog.example.org", "/js/lib.js").body, b"// js\n");
    let r = host("t.example", "/old/a%20b?x=1");
    assert_eq!(r.status, 301, "{}", r.describe());
    assert_eq!(
        r.header("location"),
        Some("http://t.example/new/a%20b?x=1"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_listing_with_its_options() {
    let d = Docroot::new();
    d.file("pub/a.txt", b"a\n");
    d.file("pub/README.txt", b"about <this>\n");
    let conf = "server.modules = ( \"mod_dirlisting\" )\n\
         dir-listing.activate = \"enable\"\n\
         dir-listing.show-readme = \"enable\"\n\
         dir-listing.hide-readme-file = \"enable\"\n\
         dir-listing.set-footer = \"served by us\"\n";
    let s = start_conf(&d, conf);
    let r = fetch(&s, &get("/pub/", &[]));
    assert_eq!(r.status, 200, "{}", r.describe());
    let page = String::from_utf8_lossy(&r.body);
    assert!(page.contains("href=\"a.txt\""), "{page}");
    assert!(!page.contains("href=\"README.txt\""), "{page}");
    assert!(page.contains("about &lt;this&gt;"), "{page}");
    assert!(page.contains("served by us"), "{page}");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
}

#[test]
fn the_access_log_names_the_user_mod_auth_let_in() {
    let d = Docroot::new();
    d.file("private/index.html", b"members\n");
    let log = d.base.join("access.log");
    let users = d.base.join("users");
    std::fs::write(&users, b"alice:secret\n").unwrap();
    let conf = format!(
        "server.modules = ( \"mod_auth\", \"mod_authn_file\", \"mod_accesslog\" )\n\
         accesslog.filename = \"{}\"\n\
         auth.backend = \"plain\"\n\
         auth.backend.plain.userfile = \"{}\"\n\
         auth.require = ( \"/private/\" => ( \"method\" => \"basic\", \"realm\" => \"m\", \"require\" => \"valid-user\" ) )\n",
        log.display(),
        users.display()
    );
    let s = start_conf(&d, &conf);
    let r = fetch(&s, &get("/private/", &[]));
    assert_eq!(r.status, 401, "{}", r.describe());
    assert_eq!(
        r.header("www-authenticate"),
        Some("Basic realm=\"m\", charset=\"UTF-8\"")
    );
    // alice:secret
    let r = fetch(
        &s,
        &get("/private/", &["Authorization: Basic YWxpY2U6c2VjcmV0"]),
    );
    assert_eq!(r.body, b"members\n", "{}", r.describe());
    drop(s);
    let lines = std::fs::read_to_string(&log).expect("access log");
    let users: Vec<&str> = lines.lines().filter_map(|l| l.split(' ').nth(2)).collect();
    assert_eq!(users, ["-", "alice"], "{lines}");
}
