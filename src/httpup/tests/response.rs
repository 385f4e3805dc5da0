use super::{build, req, sent_get};
use crate::httpup::options::{HeaderOptions, ProxyOptions};
use crate::httpup::remap::Remap;
use crate::httpup::request::{Sent, Version};
use crate::httpup::response::{
    forward_interim, parse_head, write_client_headers, Field, Framing, Head, Kind, UpstreamError,
    MAX_HEAD,
};

fn parse(buf: &[u8], sent: &Sent) -> Result<Option<Head>, UpstreamError> {
    parse_head(buf, sent, &mut Vec::new())
}

fn head_sent() -> Sent {
    build(
        &req("HEAD", "/", Some("h"), &[]),
        &ProxyOptions::default(),
        true,
    )
    .1
}

fn upgrade_sent() -> Sent {
    let ws: &[(&str, &[u8])] = &[("Connection", b"Upgrade"), ("Upgrade", b"websocket")];
    let o = ProxyOptions {
        header: HeaderOptions {
            upgrade: true,
            ..HeaderOptions::default()
        },
        ..ProxyOptions::default()
    };
    build(&req("GET", "/", Some("h"), ws), &o, true).1
}

#[test]
fn framing_and_reuse_table() {
    let get = sent_get();
    let mut close_sent = sent_get();
    close_sent.keep_alive = false;
    let cases: &[(&str, &[u8], &Sent, Framing, bool)] = &[
        (
            "length",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            &get,
            Framing::Length(5),
            true,
        ),
        (
            "chunked",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            &get,
            Framing::Chunked,
            true,
        ),
        (
            "chunked, any case",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n",
            &get,
            Framing::Chunked,
            true,
        ),
        (
            "until close",
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
            &get,
            Framing::UntilClose,
            false,
        ),
        (
            "1.1 close",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
            &get,
            Framing::Length(1),
            false,
        ),
        (
            "1.0 default",
            b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
            &get,
            Framing::Length(1),
            false,
        ),
        (
            "1.0 keep-alive",
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\n",
            &get,
            Framing::Length(1),
            true,
        ),
        (
            "sent close",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n",
            &close_sent,
            Framing::Length(1),
            false,
        ),
        (
            "204",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            &get,
            Framing::None,
            true,
        ),
        (
            "204 announcing a body",
            b"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
            &get,
            Framing::None,
            false,
        ),
        (
            "304 with length",
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n",
            &get,
            Framing::None,
            true,
        ),
        (
            "HEAD with length",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
            &head_sent(),
            Framing::None,
            true,
        ),
        (
            "HEAD chunked",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            &head_sent(),
            Framing::None,
            true,
        ),
        (
            "equal lengths",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
            &get,
            Framing::Length(5),
            true,
        ),
        (
            "length list",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
            &get,
            Framing::Length(5),
            true,
        ),
        (
            "no reason",
            b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
            &get,
            Framing::Length(0),
            true,
        ),
        (
            "bare LF lines",
            b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
            &get,
            Framing::Length(2),
            true,
        ),
        (
            "999",
            b"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n",
            &get,
            Framing::Length(0),
            true,
        ),
    ];
    for (what, buf, sent, framing, reusable) in cases {
        let h = parse(buf, sent)
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .unwrap_or_else(|| panic!("{what}: partial"));
        assert_eq!(h.kind, Kind::Final, "{what}");
        assert_eq!(h.framing, *framing, "{what}");
        assert_eq!(h.reusable, *reusable, "{what}");
        assert!(h.head_len <= buf.len(), "{what}");
    }
}

#[test]
fn hostile_answers_are_refused() {
    let get = sent_get();
    let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
    while big.len() <= MAX_HEAD {
        big.extend_from_slice(b"X-Filler: ");
        big.extend_from_slice(&[b'a'; 1000]);
        big.extend_from_slice(b"\r\n");
    }
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..300 {
        many.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let cases: &[(&str, &[u8], UpstreamError)] = &[
        ("two lengths", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", UpstreamError::BadContentLength),
        ("length list differs", b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", UpstreamError::BadContentLength),
        ("plus sign", b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", UpstreamError::BadContentLength),
        ("negative", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", UpstreamError::BadContentLength),
        ("hex", b"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n", UpstreamError::BadContentLength),
        ("empty", b"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", UpstreamError::BadContentLength),
        ("overflow", b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", UpstreamError::BadContentLength),
        ("CL and TE", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", UpstreamError::LengthAndTransferEncoding),
        ("TE and CL", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", UpstreamError::LengthAndTransferEncoding),
        ("gzip, chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", UpstreamError::BadTransferEncoding),
        ("chunked twice", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", UpstreamError::BadTransferEncoding),
        ("identity", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n", UpstreamError::BadTransferEncoding),
        ("chunked with params", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", UpstreamError::BadTransferEncoding),
        ("TE in 1.0", b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", UpstreamError::TransferEncodingInHttp10),
        ("too large", &big, UpstreamError::TooLarge),
        ("status 099", b"HTTP/1.1 099 Low\r\n\r\n", UpstreamError::BadStatus),
        ("unasked 101", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", UpstreamError::UnexpectedSwitch),
    ];
    for (what, buf, want) in cases {
        assert_eq!(parse(buf, &get), Err(*want), "{what}");
    }
    let malformed: &[(&str, &[u8])] = &[
        (
            "obs-fold",
            b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n",
        ),
        ("NUL in value", b"HTTP/1.1 200 OK\r\nX-A: a\0b\r\n\r\n"),
        (
            "bare CR",
            b"HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 0\r\n\r\n",
        ),
        (
            "space before colon",
            b"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n",
        ),
        ("HTTP/2.0", b"HTTP/2.0 200 OK\r\n\r\n"),
        ("no status line", b"Content-Length: 0\r\n\r\n"),
        ("ICY", b"ICY 200 OK\r\n\r\n"),
        ("two-digit status", b"HTTP/1.1 20 OK\r\n\r\n"),
        ("too many fields", &many),
    ];
    for (what, buf) in malformed {
        assert!(
            matches!(parse(buf, &get), Err(UpstreamError::Malformed(_))),
            "{what}: {:?}",
            parse(buf, &get)
        );
    }
}

#[test]
fn partial_heads_ask_for_more() {
    let full = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    let get = sent_get();
    for n in 0..full.len() {
        assert_eq!(parse(&full[..n], &get), Ok(None), "{n} bytes");
    }
    assert!(parse(full, &get).is_ok_and(|h| h.is_some_and(|h| h.head_len == full.len())));
    // A head of MAX_HEAD bytes parses; one byte more is refused, whole or partial.
    let mut fit = b"HTTP/1.1 200 OK\r\nX-A: ".to_vec();
    fit.resize(MAX_HEAD - 4, b'a');
    fit.extend_from_slice(b"\r\n\r\n");
    assert!(parse(&fit, &get).is_ok_and(|h| h.is_some_and(|h| h.head_len == MAX_HEAD)));
    fit.insert(30, b'a');
    assert_eq!(parse(&fit, &get), Err(UpstreamError::TooLarge));
    assert_eq!(parse(&fit[..MAX_HEAD], &get), Err(UpstreamError::TooLarge));
    assert_eq!(parse(&fit[..MAX_HEAD - 1], &get), Ok(None));
}

#[test]
fn interim_and_switching() {
    let get = sent_get();
    let buf = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let h = parse(buf, &get).ok().flatten().expect("103 parses");
    assert_eq!(
        (h.kind, h.status, h.framing),
        (Kind::Interim, 103, Framing::None)
    );
    let h2 = parse(&buf[h.head_len..], &get)
        .ok()
        .flatten()
        .expect("200 follows");
    assert_eq!((h2.kind, h2.status), (Kind::Final, 200));
    assert!(forward_interim(103, Version::Http11) && !forward_interim(103, Version::Http10));
    assert!(!forward_interim(100, Version::Http11));

    let up = upgrade_sent();
    let buf = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x05hello";
    let h = parse(buf, &up).ok().flatten().expect("101 parses");
    assert_eq!(
        (h.kind, h.framing, h.reusable),
        (Kind::Switching, Framing::Tunnel, false)
    );
    assert_eq!(&buf[h.head_len..], b"\x81\x05hello");
    let no_upgrade_field = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n";
    assert_eq!(
        parse(no_upgrade_field, &up),
        Err(UpstreamError::UnexpectedSwitch)
    );
    // An upgrade request answered with a 200: an ordinary answer.
    let h = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &up)
        .ok()
        .flatten()
        .expect("200");
    assert_eq!(h.kind, Kind::Final);
}

#[test]
fn keep_alive_timeout_is_read() {
    let buf = b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n";
    let h = parse(buf, &sent_get()).ok().flatten().expect("parses");
    assert_eq!(h.keep_alive_timeout, Some(5));
}

fn client_headers(buf: &[u8], sent: &Sent, opts: &HeaderOptions) -> String {
    let mut fields: Vec<Field> = Vec::new();
    let head = parse_head(buf, sent, &mut fields)
        .ok()
        .flatten()
        .expect("parses");
    let mut out = Vec::new();
    let mut remap: Remap = sent.remap.clone();
    write_client_headers(buf, &head, &fields, opts, &mut remap, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn client_sees_no_hop_by_hop_fields() {
    let buf = b"HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Internal\r\nX-Internal: secret\r\n\
        Keep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\nUpgrade: h2c\r\nTE: trailers\r\n\
        Proxy-Connection: close\r\nHTTP2-Settings: AAMA\r\nContent-Type: text/html\r\nServer: app\r\n\r\n";
    let out = client_headers(buf, &sent_get(), &HeaderOptions::default());
    assert_eq!(out, "Content-Type: text/html\r\nServer: app\r\n");
    let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\nX-A:  b  \r\n\r\n";
    let out = client_headers(buf, &sent_get(), &HeaderOptions::default());
    assert_eq!(out, "X-A: b\r\nContent-Length: 5\r\n");
    let up = upgrade_sent();
    let buf = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n";
    let out = client_headers(buf, &up, &HeaderOptions::default());
    assert_eq!(
        out,
        "Upgrade: websocket\r\nSec-WebSocket-Accept: x\r\nConnection: upgrade\r\n"
    );
}

#[test]
fn answers_are_remapped_back() {
    let o = HeaderOptions {
        map_urlpath: vec![("/app/".into(), "/".into())],
        map_host_request: vec![("www.example.com".into(), "backend.internal".into())],
        map_host_response: vec![("backend.internal".into(), "www.example.com".into())],
        https_remap: true,
        ..HeaderOptions::default()
    };
    let popts = ProxyOptions {
        header: o.clone(),
        ..ProxyOptions::default()
    };
    let mut r = req("GET", "/app/x", Some("www.example.com"), &[]);
    r.scheme = "https";
    let sent = build(&r, &popts, true).1;
    let buf = b"HTTP/1.1 302 Found\r\nLocation: http://backend.internal/login?next=/x\r\n\
        Content-Location: /x.html\r\n\
        Set-Cookie: sid=1; Secure; Path=/; Domain=.backend.internal; HttpOnly\r\n\
        Set-Cookie: other=2; path=\"/other\"\r\nContent-Length: 0\r\n\r\n";
    let out = client_headers(buf, &sent, &o);
    assert_eq!(
        out,
        "Location: https://www.example.com/app/login?next=/x\r\nContent-Location: /app/x.html\r\n\
         Set-Cookie: sid=1; Secure; Path=/app/; Domain=.www.example.com; HttpOnly\r\n\
         Set-Cookie: other=2; path=\"/app/other\"\r\nContent-Length: 0\r\n"
    );
}
