use super::*;

#[test]
fn addresses_as_the_formatter_writes_them() {
    for ip in [
        "0.0.0.0",
        "127.0.0.1",
        "10.20.255.9",
        "::1",
        "2001:db8::8:800:200c:417a",
    ] {
        let addr: IpAddr = ip.parse().unwrap();
        let mut env = Env::default();
        env.put_ip(b"A", addr);
        assert_eq!(env.get("A"), Some(addr.to_string().as_bytes()), "{ip}");
    }
}

#[test]
fn environment_pairs() {
    let buf = b"GET /app/x?q=1 HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Type: t/p\r\nx-a: 2\r\nProxy: evil\r\n\r\n";
    let mut hs = [httparse::EMPTY_HEADER; crate::msg::MAX_HEADERS];
    let req = crate::proto::h1::parse(buf, &mut hs, 8192)
        .unwrap()
        .unwrap();
    let env = environment(&EnvInput {
        req: &req,
        path: "/app/x",
        query: "q=1",
        script_name: "/app",
        path_info: "/x",
        document_root: "/srv/",
        script_filename_whole_path: false,
        remote: Some("127.0.0.1".parse().unwrap()),
        remote_port: 0,
        server_addr: None,
        server_port: 80,
        server_name: "h",
        server_software: "glint",
        scgi: true,
        authorizer: false,
    });
    let cases: &[(&str, Option<&[u8]>)] = &[
        ("SCGI", Some(b"1")),
        ("SCRIPT_NAME", Some(b"/app")),
        ("PATH_INFO", Some(b"/x")),
        ("PATH_TRANSLATED", Some(b"/srv/x")),
        ("SCRIPT_FILENAME", Some(b"/srv/app")),
        ("SERVER_PORT", Some(b"80")),
        ("CONTENT_TYPE", Some(b"t/p")),
        ("HTTP_X_A", Some(b"1, 2")),
        ("HTTP_HOST", Some(b"h")),
        ("HTTP_PROXY", None),
        ("CONTENT_LENGTH", None),
    ];
    for (k, want) in cases {
        assert_eq!(env.get(k), *want, "{k}");
    }
    assert_eq!(env.pairs().filter(|(k, _)| *k == b"HTTP_X_A").count(), 1);

    // An authorizer sees no script split, and the whole path as the file.
    let env = environment(&EnvInput {
        req: &req,
        path: "/app/x",
        query: "q=1",
        script_name: "/app",
        path_info: "/x",
        document_root: "/srv/",
        remote: None,
        remote_port: 0,
        server_addr: None,
        server_port: 80,
        server_name: "h",
        server_software: "glint",
        scgi: false,
        script_filename_whole_path: false,
        authorizer: true,
    });
    for k in [
        "SCRIPT_NAME",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "CONTENT_LENGTH",
    ] {
        assert_eq!(env.get(k), None, "{k}");
    }
    assert_eq!(env.get("SCRIPT_FILENAME"), Some(&b"/srv/app/x"[..]));
}

#[test]
fn set_replaces_and_variables() {
    let mut env = Env::from_pairs(&[("A", "1"), ("HTTP_X_USER", "client"), ("B", "2")]);
    env.set(b"HTTP_X_USER", b"alice");
    env.set(b"C", b"3");
    let pairs: Vec<_> = env.pairs().collect();
    assert_eq!(
        pairs,
        [
            (&b"A"[..], &b"1"[..]),
            (b"B", b"2"),
            (b"HTTP_X_USER", b"alice"),
            (b"C", b"3")
        ]
    );
    let cases = [
        ("Variable-AUTH_USER", Some("AUTH_USER")),
        ("variable-auth-method", Some("AUTH_METHOD")),
        ("VARIABLE-x.y", Some("X_Y")),
        ("Variable-", None),
        ("Variables", None),
        ("X-Variable-A", None),
        ("Content-Type", None),
    ];
    for (h, want) in cases {
        assert_eq!(authorizer_variable(h).as_deref(), want, "{h}");
    }
}

#[test]
fn heads() {
    /// status, Content-Length, headers kept, head length
    type Want = Result<Option<(u16, Option<u64>, usize, usize)>, ()>;
    let cases: &[(&str, &[u8], Want)] = &[
        (
            "plain",
            b"Content-Type: text/html\r\n\r\nbody",
            Ok(Some((200, None, 1, 27))),
        ),
        (
            "status and length",
            b"Status: 404 Not Found\r\nContent-Length: 4\r\n\r\nnope",
            Ok(Some((404, Some(4), 0, 44))),
        ),
        (
            "bare LF",
            b"Content-Type: a\n\nx",
            Ok(Some((200, None, 1, 17))),
        ),
        (
            "location means 302",
            b"Location: http://x/\r\n\r\n",
            Ok(Some((302, None, 1, 23))),
        ),
        ("incomplete", b"Content-Type: text/html\r\n", Ok(None)),
        ("no colon", b"garbage\r\n\r\n", Err(())),
        ("bad status", b"Status: abc\r\n\r\n", Err(())),
        (
            "hop-by-hop dropped",
            b"Connection: close\r\nTransfer-Encoding: chunked\r\nX: y\r\n\r\n",
            Ok(Some((200, None, 1, 55))),
        ),
        (
            "uWSGI's status line",
            b"HTTP/1.1 404 Not Found\r\nContent-Type: t\r\nContent-Length: 3\r\n\r\nnop",
            Ok(Some((404, Some(3), 1, 62))),
        ),
        (
            "an HTTP/1.0 status line without a reason",
            b"HTTP/1.0 204\r\n\r\n",
            Ok(Some((204, None, 0, 16))),
        ),
        (
            "a status line keeps its code despite Location",
            b"HTTP/1.1 201 Created\nLocation: /n\n\n",
            Ok(Some((201, None, 1, 35))),
        ),
        (
            "chunked overrides Content-Length",
            b"Content-Length: 9\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            Ok(Some((200, None, 0, 55))),
        ),
        ("bad status line code", b"HTTP/1.1 2x0 OK\r\n\r\n", Err(())),
        ("bad status line version", b"HTTP/x 200 OK\r\n\r\n", Err(())),
        ("status line alone", b"HTTP/1.1\r\n\r\n", Err(())),
        ("incomplete status line", b"HTTP/1.1 200 OK\r\n", Ok(None)),
    ];
    for (what, buf, want) in cases {
        let got = parse_head(buf)
            .map(|o| o.map(|(h, n)| (h.status, h.content_length, h.headers.len(), n)))
            .map_err(|_| ());
        assert_eq!(&got, want, "{what}");
    }
}

#[test]
fn chunked_answers() {
    let chunked = |b: &[u8]| parse_head(b).ok().flatten().map(|(h, _)| h.chunked);
    assert_eq!(chunked(b"Transfer-Encoding: chunked\r\n\r\n"), Some(true));
    assert_eq!(chunked(b"Transfer-Encoding: Chunked\r\n\r\n"), Some(true));
    assert_eq!(
        chunked(b"Transfer-Encoding: chunked, gzip\r\n\r\n"),
        Some(false)
    );
    assert_eq!(chunked(b"Content-Length: 1\r\n\r\n"), Some(false));
}
