use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use super::{build, req};
use crate::httpup::options::{Forwarded, HeaderOptions, ProxyOptions};
use crate::httpup::request::{build_request, Body, BuildError, Local, Peer, Plan, Version};

type H<'a> = &'a [(&'a str, &'a [u8])];

fn opts_fwd(f: Forwarded) -> ProxyOptions {
    ProxyOptions {
        forwarded: f,
        ..ProxyOptions::default()
    }
}

fn opts_hdr(h: HeaderOptions) -> ProxyOptions {
    ProxyOptions {
        header: h,
        ..ProxyOptions::default()
    }
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn plain_get_exact_head() {
    let h: H = &[("Host", b"example.com"), ("Accept", b"*/*")];
    let (head, sent) = build(
        &req("GET", "/a?b", Some("example.com"), h),
        &ProxyOptions::default(),
        true,
    );
    assert_eq!(
        head,
        "GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-Forwarded-For: 192.0.2.7\r\n\
         X-Forwarded-Proto: http\r\nX-Forwarded-Host: example.com\r\nX-Host: example.com\r\n\
         Connection: keep-alive\r\n\r\n"
    );
    assert!(sent.keep_alive && !sent.upgrade && !sent.http10 && !sent.chunked_body && !sent.head);
}

#[test]
fn pool_says_close() {
    let (head, sent) = build(
        &req("GET", "/", Some("h"), &[]),
        &ProxyOptions::default(),
        false,
    );
    assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
    assert!(!sent.keep_alive);
}

#[test]
fn hop_by_hop_fields_never_go_upstream() {
    let h: H = &[
        ("Connection", b"keep-alive, X-Secret"),
        ("X-Secret", b"1"),
        ("Keep-Alive", b"300"),
        ("Proxy-Connection", b"keep-alive"),
        ("Proxy", b"http://evil.example/"),
        ("TE", b"gzip"),
        ("Transfer-Encoding", b"chunked"),
        ("Content-Length", b"5"),
        ("Upgrade", b"websocket"),
        ("Set-Cookie", b"a=b"),
        ("Expect", b"100-continue"),
        ("HTTP2-Settings", b"AAMAAABkAAQAAP__"),
        ("X-Kept", b"yes"),
    ];
    let (head, _) = build(
        &req("GET", "/", Some("h"), h),
        &ProxyOptions::default(),
        true,
    );
    for gone in [
        "X-Secret",
        "Keep-Alive:",
        "Proxy",
        "TE:",
        "Transfer-Encoding",
        "Content-Length",
        "Upgrade",
        "Set-Cookie",
        "Expect",
        "HTTP2-Settings",
    ] {
        assert!(!head.contains(gone), "{gone} passed: {head}");
    }
    assert!(head.contains("X-Kept: yes\r\n"));
    assert_eq!(head.matches("Connection:").count(), 1);
}

#[test]
fn x_forwarded_for_appends_to_every_line_the_client_sent() {
    let h: H = &[
        ("X-Forwarded-For", b"203.0.113.1"),
        ("Accept", b"*/*"),
        ("x-forwarded-for", b" 198.51.100.2 "),
    ];
    let (head, _) = build(
        &req("GET", "/", Some("h"), h),
        &ProxyOptions::default(),
        true,
    );
    assert!(
        head.contains(
            "\r\nX-Forwarded-For: 203.0.113.1, 198.51.100.2, 192.0.2.7\r\nAccept: */*\r\n"
        ),
        "{head}"
    );
    assert_eq!(
        head.to_ascii_lowercase().matches("x-forwarded-for").count(),
        1
    );
}

#[test]
fn client_x_forwarded_proto_and_host_are_replaced() {
    let h: H = &[
        ("X-Forwarded-Proto", b"https"),
        ("X-Forwarded-Host", b"spoofed.example"),
        ("X-Host", b"spoofed.example"),
    ];
    let (head, _) = build(
        &req("GET", "/", Some("real.example"), h),
        &ProxyOptions::default(),
        true,
    );
    assert!(head.contains("X-Forwarded-Proto: http\r\n"), "{head}");
    assert!(head.contains("X-Forwarded-Host: real.example\r\n"));
    assert!(head.contains("X-Host: real.example\r\n"));
    assert!(!head.contains("spoofed") && !head.contains("https"));
}

#[test]
fn forwarded_with_every_parameter() {
    let mut r = req("GET", "/", Some("example.com"), &[]);
    r.conn.local = Some(Local::Inet(SocketAddr::from(([10, 0, 0, 1], 80))));
    r.remote_user = Some("a\"b\r\nX-Injected: 1");
    let all = Forwarded {
        for_: true,
        proto: true,
        host: true,
        by: true,
        remote_user: true,
    };
    let (head, _) = build(&r, &opts_fwd(all), true);
    assert!(
        head.contains(
            "\r\nForwarded: for=192.0.2.7;by=\"10.0.0.1:80\";proto=http;host=\"example.com\";\
             remote_user=\"a\\\"bX-Injected: 1\"\r\n"
        ),
        "{head}"
    );
    assert!(!head.contains("\r\nX-Injected"));
}

#[test]
fn forwarded_quotes_ipv6_and_unix_peers() {
    let f = opts_fwd(Forwarded {
        for_: true,
        ..Forwarded::default()
    });
    let mut r = req("GET", "/", Some("h"), &[]);
    r.conn.peer = Peer::Ip(IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)));
    let (head, _) = build(&r, &f, true);
    assert!(
        head.contains("Forwarded: for=\"[2001:db8::1]\"\r\n"),
        "{head}"
    );
    assert!(head.contains("X-Forwarded-For: 2001:db8::1\r\n"));
    r.conn.peer = Peer::Unix("/run/a \"b\".sock");
    let (head, _) = build(&r, &f, true);
    assert!(
        head.contains("Forwarded: for=\"/run/a \\\"b\\\".sock\"\r\n"),
        "{head}"
    );
}

#[test]
fn forwarded_is_seeded_from_x_forwarded_for_or_appended() {
    let f = opts_fwd(Forwarded {
        for_: true,
        ..Forwarded::default()
    });
    let h: H = &[("X-Forwarded-For", b"203.0.113.1, 2001:db8::2")];
    let (head, _) = build(&req("GET", "/", Some("h"), h), &f, true);
    assert!(
        head.contains("Forwarded: for=\"203.0.113.1\", for=\"[2001:db8::2]\", for=192.0.2.7\r\n"),
        "{head}"
    );
    let h: H = &[
        ("Forwarded", b"for=203.0.113.1;proto=https"),
        ("X-Forwarded-For", b"203.0.113.1"),
    ];
    let (head, _) = build(&req("GET", "/", Some("h"), h), &f, true);
    assert!(
        head.contains("Forwarded: for=203.0.113.1;proto=https, for=192.0.2.7\r\n"),
        "{head}"
    );
    assert_eq!(head.matches("Forwarded:").count(), 1);
    // Without proxy.forwarded a client's Forwarded passes as it came.
    let (head, _) = build(
        &req("GET", "/", Some("h"), h),
        &ProxyOptions::default(),
        true,
    );
    assert!(
        head.contains("Forwarded: for=203.0.113.1;proto=https\r\n"),
        "{head}"
    );
}

#[test]
fn host_choices() {
    let o = ProxyOptions {
        replace_http_host: true,
        ..ProxyOptions::default()
    };
    let (head, _) = build(&req("GET", "/", Some("example.com"), &[]), &o, true);
    assert!(
        head.starts_with("GET / HTTP/1.1\r\nHost: backend-label\r\n"),
        "{head}"
    );
    assert!(head.contains("X-Forwarded-Host: example.com\r\n"));
    // No Host known: an HTTP/1.0 request, as lighttpd sends; no X-Forwarded-Host.
    let h: H = &[("X-Forwarded-Host", b"spoofed")];
    let mut r = req("GET", "/", None, h);
    r.version = Version::Http10;
    let (head, sent) = build(&r, &ProxyOptions::default(), true);
    assert!(
        head.starts_with("GET / HTTP/1.0\r\nX-Forwarded-For"),
        "{head}"
    );
    assert!(!head.contains("Host:") && !head.contains("spoofed"));
    assert!(sent.http10 && !sent.keep_alive && head.ends_with("Connection: close\r\n\r\n"));
}

#[test]
fn body_framing() {
    let cases: &[(&str, Body, Option<&str>, bool)] = &[
        ("GET", Body::Length(0), None, false),
        ("HEAD", Body::Length(0), None, false),
        ("POST", Body::Length(0), Some("Content-Length: 0"), false),
        ("DELETE", Body::Length(0), Some("Content-Length: 0"), false),
        ("POST", Body::Length(5), Some("Content-Length: 5"), false),
        ("GET", Body::Length(5), Some("Content-Length: 5"), false),
        (
            "POST",
            Body::Streamed,
            Some("Transfer-Encoding: chunked"),
            true,
        ),
    ];
    for &(method, body, want, chunked) in cases {
        let mut r = req(method, "/", Some("h"), &[("Content-Length", b"999")]);
        r.body = body;
        let (head, sent) = build(&r, &ProxyOptions::default(), true);
        assert!(!head.contains("999"), "{method} {body:?}: {head}");
        match want {
            Some(w) => assert_eq!(head.matches(w).count(), 1, "{method} {body:?}: {head}"),
            None => {
                assert!(!head.contains("Content-Length") && !head.contains("Transfer-Encoding"))
            }
        }
        assert_eq!(sent.chunked_body, chunked);
        assert_eq!(sent.head, method == "HEAD");
    }
    let mut r = req("POST", "/", Some("h"), &[]);
    r.body = Body::Streamed;
    let o = opts_hdr(HeaderOptions {
        force_http10: true,
        ..HeaderOptions::default()
    });
    let e = build_request(&r, &o, "", true, &mut Vec::new());
    assert_eq!(e, Err(BuildError::LengthRequired));
    assert_eq!(BuildError::LengthRequired.status(), 411);
}

#[test]
fn te_trailers_only_exactly() {
    let h: H = &[("TE", b"Trailers")];
    let (head, _) = build(
        &req("GET", "/", Some("h"), h),
        &ProxyOptions::default(),
        true,
    );
    assert!(
        head.ends_with("TE: trailers\r\nConnection: keep-alive, te\r\n\r\n"),
        "{head}"
    );
    let h: H = &[("TE", b"trailers, deflate")];
    let (head, _) = build(
        &req("GET", "/", Some("h"), h),
        &ProxyOptions::default(),
        true,
    );
    assert!(!head.contains("TE:") && !head.contains(", te"), "{head}");
    let mut r = req("GET", "/", Some("h"), &[("TE", b"trailers")]);
    r.version = Version::Http10;
    let (head, _) = build(&r, &ProxyOptions::default(), true);
    assert!(!head.contains("TE:"), "{head}");
}

#[test]
fn upgrade_passes_only_when_enabled_and_asked_for() {
    let ws: H = &[
        ("Connection", b"keep-alive, Upgrade"),
        ("Upgrade", b"websocket"),
        ("Sec-WebSocket-Key", b"dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", b"13"),
    ];
    let on = opts_hdr(HeaderOptions {
        upgrade: true,
        ..HeaderOptions::default()
    });
    let (head, sent) = build(&req("GET", "/chat", Some("h"), ws), &on, true);
    assert!(
        head.contains("\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"),
        "{head}"
    );
    assert!(head.ends_with("\r\nConnection: upgrade\r\n\r\n"), "{head}");
    assert!(sent.upgrade && !sent.keep_alive);

    let (head, sent) = build(
        &req("GET", "/chat", Some("h"), ws),
        &ProxyOptions::default(),
        true,
    );
    assert!(!head.contains("Upgrade:") && !sent.upgrade, "{head}");
    // Upgrade not named in Connection: not an upgrade request (RFC 9110 7.8).
    let bare: H = &[("Upgrade", b"websocket")];
    let (head, sent) = build(&req("GET", "/chat", Some("h"), bare), &on, true);
    assert!(!head.contains("Upgrade:") && !sent.upgrade, "{head}");
    let mut r = req("GET", "/chat", Some("h"), ws);
    r.version = Version::Http10;
    let (head, sent) = build(&r, &on, true);
    assert!(!head.contains("Upgrade:") && !sent.upgrade, "{head}");
}

#[test]
fn connect_is_a_tunnel_or_405() {
    let r = req("CONNECT", "example.com:443", Some("example.com:443"), &[]);
    let mut out = Vec::new();
    let e = build_request(&r, &ProxyOptions::default(), "", true, &mut out);
    assert_eq!(e, Err(BuildError::ConnectNotAllowed));
    assert_eq!(BuildError::ConnectNotAllowed.status(), 405);
    let on = opts_hdr(HeaderOptions {
        connect: true,
        ..HeaderOptions::default()
    });
    assert_eq!(build_request(&r, &on, "", true, &mut out), Ok(Plan::Tunnel));
    assert!(out.is_empty());
}

#[test]
fn map_urlpath_and_hosts_on_the_request() {
    let o = opts_hdr(HeaderOptions {
        map_urlpath: pairs(&[("/other/", "/x/"), ("/app/", "/")]),
        map_host_request: pairs(&[("www.example.com", "backend.internal")]),
        ..HeaderOptions::default()
    });
    let h: H = &[
        ("Destination", b"http://www.example.com/app/b"),
        ("Referer", b"http://www.example.com/app/"),
    ];
    let (head, sent) = build(
        &req("MOVE", "/app/a?q=/app/", Some("www.example.com"), h),
        &o,
        true,
    );
    assert!(
        head.starts_with("MOVE /a?q=/app/ HTTP/1.1\r\nHost: backend.internal\r\n"),
        "{head}"
    );
    assert!(
        head.contains("Destination: http://backend.internal/b\r\n"),
        "{head}"
    );
    assert!(
        head.contains("Referer: http://www.example.com/app/\r\n"),
        "{head}"
    );
    assert!(head.contains("X-Forwarded-Host: www.example.com\r\n"));
    assert_eq!(sent.remap.forwarded_urlpath, Some(1));
    assert_eq!(
        sent.remap.forwarded_host.as_deref(),
        Some("backend.internal")
    );
}

#[test]
fn https_remap_on_request_urls() {
    let o = opts_hdr(HeaderOptions {
        map_host_request: pairs(&[("-", "backend")]),
        https_remap: true,
        ..HeaderOptions::default()
    });
    let h: H = &[("Destination", b"https://example.com/b")];
    let mut r = req("COPY", "/a", Some("example.com"), h);
    r.scheme = "https";
    let (head, sent) = build(&r, &o, true);
    assert!(
        head.contains("Host: backend\r\n") && head.contains("Destination: http://backend/b\r\n"),
        "{head}"
    );
    assert!(head.contains("X-Forwarded-Proto: https\r\n"));
    assert!(sent.remap.https_remap);
}

#[test]
fn refuses_what_cannot_be_passed() {
    let bad: &[H] = &[
        &[("X-A", b"1\r\nX-Injected: 2")],
        &[("X-A", b"a\nb")],
        &[("X-A", b"nul\0")],
        &[("Bad Name", b"1")],
        &[("", b"1")],
    ];
    for h in bad {
        let e = build_request(
            &req("GET", "/", Some("h"), h),
            &ProxyOptions::default(),
            "",
            true,
            &mut Vec::new(),
        );
        assert_eq!(e, Err(BuildError::BadHeader), "{h:?}");
    }
    let e = build_request(
        &req("GET", "/a b", Some("h"), &[]),
        &ProxyOptions::default(),
        "",
        true,
        &mut Vec::new(),
    );
    assert_eq!(e, Err(BuildError::BadHeader));
}
