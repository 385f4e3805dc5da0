use std::net::SocketAddr;

use crate::forwarded::proxy_protocol::{
    crc32c, parse, Endpoints, Header, ProxyError, V1_MAX, V2_MAX,
};

const SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

fn sa(s: &str) -> SocketAddr {
    s.parse().expect("test address")
}

fn ok(buf: &[u8]) -> Header {
    match parse(buf) {
        Ok(Some(h)) => h,
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(buf)),
    }
}

#[test]
fn v1_table() {
    let max = b"PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_eq!(max.len(), V1_MAX);
    let cases: &[(&[u8], Endpoints, usize)] = &[
        (
            b"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1\r\n",
            Endpoints::Tcp {
                src: sa("192.168.0.1:56324"),
                dst: sa("192.168.0.11:443"),
            },
            47,
        ),
        (
            b"PROXY TCP6 2001:db8::1 2001:db8::2 0 65535\r\n",
            Endpoints::Tcp {
                src: sa("[2001:db8::1]:0"),
                dst: sa("[2001:db8::2]:65535"),
            },
            44,
        ),
        (b"PROXY UNKNOWN\r\n", Endpoints::Keep, 15),
        (max, Endpoints::Keep, 107),
    ];
    for (buf, endpoints, len) in cases {
        let h = ok(buf);
        assert_eq!(
            (h.version, &h.endpoints, h.len),
            (1, endpoints, *len),
            "{:?}",
            String::from_utf8_lossy(buf)
        );
        for n in 0..*len {
            assert_eq!(
                parse(&buf[..n]),
                Ok(None),
                "{n} bytes of {:?}",
                String::from_utf8_lossy(buf)
            );
        }
    }
}

#[test]
fn v1_refusals() {
    let long = [b"PROXY UNKNOWN ".as_slice(), &[b'x'; 100]].concat();
    let cases: &[(&str, &[u8])] = &[
        ("not PROXY", b"GET / HTTP/1.1\r\n\r\n"),
        ("PROXYX", b"PROXYX TCP4 1.2.3.4 5.6.7.8 1 2\r\n"),
        ("LF only", b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"),
        ("CR only", b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rx"),
        ("TCP5", b"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n"),
        ("lower case", b"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n"),
        ("v6 address for TCP4", b"PROXY TCP4 ::1 ::1 1 2\r\n"),
        ("v4 address for TCP6", b"PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n"),
        (
            "leading zero in address",
            b"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",
        ),
        ("port too large", b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"),
        (
            "leading zero in port",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n",
        ),
        ("signed port", b"PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n"),
        ("two spaces", b"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n"),
        ("missing port", b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"),
        ("extra field", b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n"),
        ("trailing space", b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n"),
        ("no protocol", b"PROXY \r\n"),
        ("longer than 107 bytes", &long),
        ("NUL in line", b"PROXY TCP4 1.2.3.4\0 5.6.7.8 1 2\r\n"),
    ];
    for &(what, buf) in cases {
        assert!(parse(buf).is_err(), "{what}: {:?}", parse(buf));
    }
}

/// A v2 header: command, family, address block and TLVs.
fn v2(ver_cmd: u8, fam: u8, block: &[u8]) -> Vec<u8> {
    let mut h = SIG.to_vec();
    h.push(ver_cmd);
    h.push(fam);
    h.extend_from_slice(&(block.len() as u16).to_be_bytes());
    h.extend_from_slice(block);
    h
}

fn tlv(t: u8, v: &[u8]) -> Vec<u8> {
    let mut o = vec![t];
    o.extend_from_slice(&(v.len() as u16).to_be_bytes());
    o.extend_from_slice(v);
    o
}

const IP4: &[u8] = &[10, 1, 2, 3, 10, 0, 0, 1, 0x13, 0x88, 0x01, 0xbb];

#[test]
fn v2_addresses() {
    let mut ip6 = Vec::new();
    ip6.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    ip6.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    ip6.extend_from_slice(&[0xd4, 0x31, 0x00, 0x50]);
    let mut unix = vec![0u8; 216];
    unix[..12].copy_from_slice(b"/run/a.sock\0");
    unix[108..120].copy_from_slice(b"/run/b.sock\0");
    let cases: Vec<(&str, Vec<u8>, Endpoints)> = vec![
        (
            "TCP4",
            v2(0x21, 0x11, IP4),
            Endpoints::Tcp {
                src: sa("10.1.2.3:5000"),
                dst: sa("10.0.0.1:443"),
            },
        ),
        (
            "TCP6",
            v2(0x21, 0x21, &ip6),
            Endpoints::Tcp {
                src: sa("[2001:db8::1]:54321"),
                dst: sa("[2001:db8::2]:80"),
            },
        ),
        (
            "UNIX",
            v2(0x21, 0x31, &unix),
            Endpoints::Unix {
                src: b"/run/a.sock".to_vec(),
                dst: b"/run/b.sock".to_vec(),
            },
        ),
        (
            "LOCAL ignores its block",
            v2(0x20, 0x11, b"anything at all"),
            Endpoints::Keep,
        ),
        ("LOCAL UNSPEC", v2(0x20, 0x00, b""), Endpoints::Keep),
        ("PROXY UNSPEC", v2(0x21, 0x00, b"ignored"), Endpoints::Keep),
        (
            "UDP4 keeps the connection's",
            v2(0x21, 0x12, IP4),
            Endpoints::Keep,
        ),
        ("UDP6", v2(0x21, 0x22, &ip6), Endpoints::Keep),
        ("UNIX datagram", v2(0x21, 0x32, &unix), Endpoints::Keep),
    ];
    for (what, buf, want) in cases {
        let mut with_data = buf.clone();
        with_data.extend_from_slice(b"GET / HTTP/1.1\r\n");
        let h = ok(&with_data);
        assert_eq!((h.version, h.len), (2, buf.len()), "{what}");
        assert_eq!(h.endpoints, want, "{what}");
        for n in 0..buf.len() {
            assert_eq!(parse(&buf[..n]), Ok(None), "{what}: {n} bytes");
        }
    }
}

#[test]
fn v2_refusals() {
    let mut bad_sig = v2(0x21, 0x11, IP4);
    bad_sig[11] = b'X';
    let mut huge = SIG.to_vec();
    huge.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
    let mut unix = vec![b'a'; 216];
    unix[108] = 0;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("signature", bad_sig),
        ("version 1 in the binary form", v2(0x11, 0x11, IP4)),
        ("version 3", v2(0x31, 0x11, IP4)),
        ("command 2", v2(0x22, 0x11, IP4)),
        ("family 4", v2(0x21, 0x41, IP4)),
        ("transport 3", v2(0x21, 0x13, IP4)),
        ("block too short for TCP4", v2(0x21, 0x11, &IP4[..8])),
        ("longer than glint accepts", huge),
        ("unix path without NUL", v2(0x21, 0x31, &unix)),
        (
            "truncated TLV header",
            v2(0x21, 0x11, &[IP4, &[0x04, 0x00]].concat()),
        ),
        (
            "TLV longer than the header",
            v2(0x21, 0x11, &[IP4, &[0x04, 0x00, 0x05, 1, 2]].concat()),
        ),
        (
            "unique ID over 128",
            v2(0x21, 0x11, &[IP4, &tlv(0x05, &[7; 129])].concat()),
        ),
        (
            "authority not UTF-8",
            v2(0x21, 0x11, &[IP4, &tlv(0x02, b"\xff\xfe")].concat()),
        ),
        (
            "SSL TLV too short",
            v2(0x21, 0x11, &[IP4, &tlv(0x20, &[1, 0, 0])].concat()),
        ),
        (
            "SSL sub-TLV truncated",
            v2(
                0x21,
                0x11,
                &[IP4, &tlv(0x20, &[1, 0, 0, 0, 0, 0x21, 0, 9, b'T'])].concat(),
            ),
        ),
        (
            "CRC TLV of 3 bytes",
            v2(0x21, 0x11, &[IP4, &tlv(0x03, &[0, 0, 0])].concat()),
        ),
    ];
    for (what, buf) in cases {
        assert!(parse(&buf).is_err(), "{what}: {:?}", parse(&buf));
    }
    assert_eq!(V2_MAX, 2048);
}

#[test]
fn v2_tlvs_and_environment() {
    let mut ssl = vec![0x07, 0, 0, 0, 0];
    ssl.extend(tlv(0x21, b"TLSv1.3"));
    ssl.extend(tlv(0x22, b"alice"));
    ssl.extend(tlv(0x23, b"TLS_AES_128_GCM_SHA256"));
    ssl.extend(tlv(0x25, b"RSA2048"));
    ssl.extend(tlv(0x7f, b"unknown sub-TLV"));
    let block = [
        IP4,
        &tlv(0x01, b"h2"),
        &tlv(0x02, b"www.example.com"),
        &tlv(0x04, b"noop"),
        &tlv(0x05, b"id-1"),
        &tlv(0x20, &ssl),
        &tlv(0xea, b"\x01vpce-0123"),
    ]
    .concat();
    let h = ok(&v2(0x21, 0x11, &block));
    assert_eq!(h.alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(h.authority.as_deref(), Some("www.example.com"));
    assert!(h.client_tls());
    let s = h.ssl.clone().expect("SSL TLV");
    assert!(s.client_verified() && s.cert_conn && s.cert_sess);
    let env = h.env(true);
    let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_slice());
    assert_eq!(get("SSL_PROTOCOL"), Some(&b"TLSv1.3"[..]));
    assert_eq!(get("SSL_CIPHER"), Some(&b"TLS_AES_128_GCM_SHA256"[..]));
    assert_eq!(get("SSL_SERVER_A_KEY"), Some(&b"RSA2048"[..]));
    assert_eq!(get("PP2_UNIQUE_ID"), Some(&b"id-1"[..]));
    assert_eq!(get("SSL_CLIENT_VERIFY"), Some(&b"SUCCESS"[..]));
    assert_eq!(get("REMOTE_USER"), Some(&b"alice"[..]));
    assert_eq!(get("AUTH_TYPE"), Some(&b"SSL_CLIENT_VERIFY"[..]));
    assert!(h
        .env(false)
        .iter()
        .all(|(k, _)| *k != "SSL_CLIENT_VERIFY" && *k != "REMOTE_USER"));

    // A certificate that failed verification, or none: NONE, no user.
    let mut failed = ssl.clone();
    failed[4] = 1;
    let h = ok(&v2(0x21, 0x11, &[IP4, &tlv(0x20, &failed)].concat()));
    let env = h.env(true);
    assert!(env.contains(&("SSL_CLIENT_VERIFY", b"NONE".to_vec())));
    assert!(env.iter().all(|(k, _)| *k != "REMOTE_USER"));
    let h = ok(&v2(
        0x21,
        0x11,
        &[IP4, &tlv(0x20, &[0x01, 0, 0, 0, 0])].concat(),
    ));
    assert!(h.client_tls() && !h.ssl.as_ref().is_some_and(|s| s.client_verified()));
    let h = ok(&v2(0x21, 0x11, IP4));
    assert!(!h.client_tls() && h.env(false).is_empty());
}

#[test]
fn v2_checksum() {
    assert_eq!(
        crc32c(b"123456789"),
        0xE306_9283,
        "RFC 3720 B.4 check value"
    );
    let mut buf = v2(
        0x21,
        0x11,
        &[IP4, &tlv(0x03, &[0; 4]), &tlv(0x05, b"x")].concat(),
    );
    let at = 16 + IP4.len() + 3;
    let sum = crc32c(&buf);
    buf[at..at + 4].copy_from_slice(&sum.to_be_bytes());
    assert!(parse(&buf).is_ok_and(|h| h.is_some()));
    buf[at + 3] ^= 1;
    assert_eq!(parse(&buf), Err(ProxyError("v2 CRC32C does not match")));
    let mut buf = v2(
        0x21,
        0x11,
        &[IP4, &tlv(0x03, &sum.to_be_bytes()), &tlv(0x05, b"x")].concat(),
    );
    buf[20] ^= 0x40; // the claimed source address changed on the way
    assert!(parse(&buf).is_err());
}
