use std::net::IpAddr;

use crate::forwarded::options::{parse_headers, parse_params, ExtForward, Params, Trust};

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

#[test]
fn trust_table() {
    let t = Trust::parse(&[
        ("10.0.0.1", "trust"),
        ("10.1.0.0/16", "Trust"),
        ("10.1.2.3", "untrusted"),
        ("[2001:db8::]/32", "trust"),
        ("::ffff:172.16.0.0/108", "trust"),
        ("[::1]", "trust"),
        ("_edge", "trust"),
    ])
    .expect("valid");
    let cases: &[(&[u8], bool)] = &[
        (b"10.0.0.1", true),
        (b"10.0.0.2", false),
        (b"10.1.200.7", true),
        (b"10.1.2.3", false),
        (b"10.2.0.1", false),
        (b"2001:db8:1::5", true),
        (b"2001:db9::5", false),
        (b"::1", true),
        (b"[::1]", true),
        (b"::ffff:10.0.0.1", true),
        (b"172.16.9.9", true),
        (b"172.32.0.1", false),
        (b"_edge", true),
        (b"_other", false),
        (b"unknown", false),
        (b"", false),
        (b"10.0.0.1:80", false),
    ];
    for &(a, want) in cases {
        assert_eq!(t.trusts(a), want, "{}", String::from_utf8_lossy(a));
    }
    assert!(t.trusts_peer(Some(ip("10.0.0.1"))) && !t.trusts_peer(Some(ip("10.1.2.3"))));
    assert!(!t.trusts_peer(None), "a unix peer needs \"all\"");
}

#[test]
fn all_decides_for_the_peer_only() {
    let all = Trust::parse(&[("all", "trust")]).expect("valid");
    assert!(all.trusts_peer(Some(ip("203.0.113.1"))) && all.trusts_peer(None));
    assert!(!all.trusts(b"203.0.113.1"));
    // lighttpd: "all" => anything else distrusts every peer, listed ones too.
    let none = Trust::parse(&[("all", "untrusted"), ("10.0.0.1", "trust")]).expect("valid");
    assert!(!none.trusts_peer(Some(ip("10.0.0.1"))));
}

#[test]
fn trust_errors_name_the_entry() {
    let cases: &[(&str, &str)] = &[
        ("10.0.0.1", "maybe"),
        ("example.com", "trust"),
        ("10.0.0.0/33", "trust"),
        ("10.0.0.0/0", "trust"),
        ("10.0.0.0/x", "trust"),
        ("10.0.0.0/", "trust"),
        ("10.0.0.0/+8", "trust"),
        ("::ffff:10.0.0.0/90", "trust"),
        ("10.0.0.0/8", "untrusted"),
        ("_", "trust"),
    ];
    for &(k, v) in cases {
        let e = Trust::parse(&[(k, v)]).expect_err(k);
        assert!(
            e.starts_with("extforward.forwarder") && e.contains(k),
            "{e}"
        );
    }
}

#[test]
fn params_and_headers() {
    assert_eq!(
        parse_params(&[("host", "enable"), ("remote_user", "0")]),
        Ok(Params {
            host: true,
            remote_user: false
        })
    );
    assert!(parse_params(&[("for", "enable")])
        .is_err_and(|e| e.contains("extforward.params") && e.contains("for")));
    assert!(parse_params(&[("host", "yes")]).is_err_and(|e| e.contains("host")));
    assert_eq!(
        parse_headers(None, false),
        Ok(vec![
            "X-Forwarded-For".to_string(),
            "Forwarded-For".to_string()
        ])
    );
    assert_eq!(parse_headers(Some(&[]), false).map(|h| h.len()), Ok(2));
    assert_eq!(parse_headers(None, true), Ok(vec![]));
    assert_eq!(
        parse_headers(Some(&["Forwarded", "X-Real-IP"]), true).map(|h| h.len()),
        Ok(2)
    );
    assert!(parse_headers(Some(&["X Bad"]), false).is_err_and(|e| e.contains("X Bad")));
    let e = ExtForward::parse(&[("10.0.0.1", "trust")], None, &[], true, true).expect("valid");
    assert!(e.hap_proxy && e.hap_proxy_ssl_client_verify && e.headers.is_empty());
}
