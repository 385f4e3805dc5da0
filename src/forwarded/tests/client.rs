use std::net::IpAddr;

use crate::forwarded::client::{normalized_host, resolve, BadForwarded, Request, Resolved, Scheme};
use crate::forwarded::options::ExtForward;

type H<'a> = &'a [(&'a str, &'a [u8])];

const FORWARDER: &[(&str, &str)] = &[
    ("10.0.0.1", "trust"),
    ("10.0.0.2", "trust"),
    ("192.168.0.0/16", "trust"),
    ("10.9.0.0/16", "trust"),
    ("10.9.0.9", "untrusted"),
    ("2001:db8:ffff::/48", "trust"),
];

fn cfg(headers: Option<&[&str]>, params: &[(&str, &str)]) -> ExtForward {
    ExtForward::parse(FORWARDER, headers, params, false, false).expect("valid configuration")
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

fn run(c: &ExtForward, peer: &str, scheme: &str, headers: H) -> Result<Resolved, BadForwarded> {
    resolve(
        c,
        &Request {
            peer: Some(ip(peer)),
            scheme,
            headers,
        },
    )
}

#[test]
fn x_forwarded_for_table() {
    let c = cfg(None, &[]);
    // (what, peer, headers, client address, scheme)
    type Case<'a> = (&'a str, &'a str, H<'a>, Option<&'a str>, Option<Scheme>);
    let cases: &[Case] = &[
        (
            "untrusted peer: spoofing changes nothing",
            "203.0.113.5",
            &[
                ("X-Forwarded-For", b"1.2.3.4"),
                ("X-Forwarded-Proto", b"https"),
            ],
            None,
            None,
        ),
        (
            "untrusted peer inside a trusted network",
            "10.9.0.9",
            &[("X-Forwarded-For", b"1.2.3.4")],
            None,
            None,
        ),
        (
            "one hop",
            "10.0.0.1",
            &[("X-Forwarded-For", b"198.51.100.7")],
            Some("198.51.100.7"),
            None,
        ),
        (
            "trusted hops skipped",
            "10.0.0.1",
            &[("X-Forwarded-For", b"198.51.100.7, 10.0.0.2, 192.168.3.4")],
            Some("198.51.100.7"),
            None,
        ),
        (
            "client's own spoofed entries on the left",
            "10.0.0.1",
            &[(
                "X-Forwarded-For",
                b"6.6.6.6, 10.0.0.2, 198.51.100.7, 10.0.0.2",
            )],
            Some("198.51.100.7"),
            None,
        ),
        (
            "trust ends at the first stranger",
            "10.0.0.1",
            &[(
                "X-Forwarded-For",
                b"198.51.100.7, 10.0.0.2, 203.0.113.9, 10.0.0.1",
            )],
            Some("203.0.113.9"),
            None,
        ),
        (
            "every hop trusted: no change",
            "10.0.0.1",
            &[("X-Forwarded-For", b"10.0.0.2, 192.168.1.1")],
            None,
            None,
        ),
        (
            "several lines are one list",
            "10.0.0.1",
            &[
                ("X-Forwarded-For", b"198.51.100.7"),
                ("x-forwarded-for", b"10.0.0.2"),
            ],
            Some("198.51.100.7"),
            None,
        ),
        (
            "garbage on the right: no change",
            "10.0.0.1",
            &[("X-Forwarded-For", b"198.51.100.7, nonsense")],
            None,
            None,
        ),
        (
            "a port makes no address",
            "10.0.0.1",
            &[("X-Forwarded-For", b"198.51.100.7:4711")],
            None,
            None,
        ),
        (
            "IPv6",
            "10.0.0.1",
            &[("X-Forwarded-For", b"2001:db8::5, 2001:db8:ffff::1")],
            Some("2001:db8::5"),
            None,
        ),
        (
            "mapped IPv4 peer",
            "::ffff:10.0.0.1",
            &[("X-Forwarded-For", b"198.51.100.7")],
            Some("198.51.100.7"),
            None,
        ),
        (
            "proto https",
            "10.0.0.1",
            &[
                ("X-Forwarded-For", b"198.51.100.7"),
                ("X-Forwarded-Proto", b"HTTPS"),
            ],
            Some("198.51.100.7"),
            Some(Scheme::Https),
        ),
        (
            "proto list ignored",
            "10.0.0.1",
            &[
                ("X-Forwarded-For", b"198.51.100.7"),
                ("X-Forwarded-Proto", b"https, http"),
            ],
            Some("198.51.100.7"),
            None,
        ),
        (
            "proto other ignored",
            "10.0.0.1",
            &[
                ("X-Forwarded-For", b"198.51.100.7"),
                ("X-Forwarded-Proto", b"ftp"),
            ],
            Some("198.51.100.7"),
            None,
        ),
        (
            "proto without a client: ignored",
            "10.0.0.1",
            &[
                ("X-Forwarded-For", b"10.0.0.2"),
                ("X-Forwarded-Proto", b"https"),
            ],
            None,
            None,
        ),
        (
            "Forwarded-For, the second default",
            "10.0.0.1",
            &[("Forwarded-For", b"198.51.100.7")],
            Some("198.51.100.7"),
            None,
        ),
        (
            "X-Forwarded-For wins over Forwarded-For",
            "10.0.0.1",
            &[
                ("Forwarded-For", b"198.51.100.8"),
                ("X-Forwarded-For", b"198.51.100.7"),
            ],
            Some("198.51.100.7"),
            None,
        ),
        (
            "Forwarded is not a default header",
            "10.0.0.1",
            &[("Forwarded", b"for=198.51.100.7")],
            None,
            None,
        ),
        (
            "X-Real-IP is not a default header",
            "10.0.0.1",
            &[("X-Real-IP", b"198.51.100.7")],
            None,
            None,
        ),
    ];
    for &(what, peer, headers, addr, scheme) in cases {
        let r = run(&c, peer, "http", headers).unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(r.addr, addr.map(ip), "{what}");
        assert_eq!(r.scheme, scheme, "{what}");
    }
    let https = run(
        &c,
        "10.0.0.1",
        "https",
        &[
            ("X-Forwarded-For", b"1.2.3.4"),
            ("X-Forwarded-Proto", b"http"),
        ],
    );
    assert_eq!(https.map(|r| r.scheme), Ok(Some(Scheme::Http)));
}

#[test]
fn configured_headers_and_trust_all() {
    let real_ip = cfg(Some(&["X-Real-IP"]), &[]);
    let r = run(
        &real_ip,
        "10.0.0.1",
        "http",
        &[
            ("X-Real-IP", b"198.51.100.7"),
            ("X-Forwarded-For", b"1.1.1.1"),
        ],
    );
    assert_eq!(r.map(|r| r.addr), Ok(Some(ip("198.51.100.7"))));
    let all = ExtForward::parse(
        &[("all", "trust"), ("10.0.0.2", "trust")],
        None,
        &[],
        false,
        false,
    )
    .expect("valid");
    // "all" trusts the connecting peer, not the addresses in the list.
    let h: H = &[("X-Forwarded-For", b"198.51.100.7, 10.0.0.3")];
    assert_eq!(
        run(&all, "203.0.113.1", "http", h).map(|r| r.addr),
        Ok(Some(ip("10.0.0.3")))
    );
    let unix = resolve(
        &all,
        &Request {
            peer: None,
            scheme: "http",
            headers: h,
        },
    );
    assert_eq!(unix.map(|r| r.addr), Ok(Some(ip("10.0.0.3"))));
    let none = resolve(
        &cfg(None, &[]),
        &Request {
            peer: None,
            scheme: "http",
            headers: h,
        },
    );
    assert_eq!(none, Ok(Resolved::default()));
    let nobody = ExtForward::parse(&[], None, &[], false, false).expect("valid");
    assert_eq!(run(&nobody, "10.0.0.1", "http", h), Ok(Resolved::default()));
}

#[test]
fn forwarded_table() {
    let c = cfg(
        Some(&["Forwarded"]),
        &[("host", "enable"), ("remote_user", "1")],
    );
    let named = ExtForward::parse(
        &[("10.0.0.1", "trust"), ("_gw2", "trust")],
        Some(&["Forwarded"]),
        &[],
        false,
        false,
    )
    .expect("valid");
    // (what, config, header value, address, port, scheme, host, user)
    type Case<'a> = (
        &'a str,
        &'a ExtForward,
        &'a [u8],
        Option<&'a str>,
        Option<u16>,
        Option<Scheme>,
        Option<&'a str>,
        Option<&'a str>,
    );
    let cases: &[Case] = &[
        (
            "one element",
            &c,
            b"for=198.51.100.7;proto=https;host=Example.COM",
            Some("198.51.100.7"),
            None,
            Some(Scheme::Https),
            Some("example.com"),
            None,
        ),
        (
            "key case",
            &c,
            b"For=198.51.100.7",
            Some("198.51.100.7"),
            None,
            None,
            None,
            None,
        ),
        (
            "chain",
            &c,
            b"for=198.51.100.7, for=10.0.0.2",
            Some("198.51.100.7"),
            None,
            None,
            None,
            None,
        ),
        (
            "spoofed left",
            &c,
            b"for=6.6.6.6, for=198.51.100.7;proto=https, for=10.0.0.2",
            Some("198.51.100.7"),
            None,
            Some(Scheme::Https),
            None,
            None,
        ),
        (
            "quoted IPv6 with port",
            &c,
            b"for=\"[2001:db8:cafe::17]:4711\"",
            Some("2001:db8:cafe::17"),
            Some(4711),
            None,
            None,
            None,
        ),
        (
            "quoted IPv4 with port",
            &c,
            b"for=\"198.51.100.7:8080\"",
            Some("198.51.100.7"),
            Some(8080),
            None,
            None,
            None,
        ),
        (
            "unquoted port is no address",
            &c,
            b"for=198.51.100.7:80",
            None,
            None,
            None,
            None,
            None,
        ),
        (
            "obfuscated hop ends trust",
            &c,
            b"for=198.51.100.7, for=_hidden, for=10.0.0.2",
            Some("10.0.0.2"),
            None,
            None,
            None,
            None,
        ),
        (
            "trusted name passes",
            &named,
            b"for=198.51.100.7, for=_gw2, for=10.0.0.1",
            Some("198.51.100.7"),
            None,
            None,
            None,
            None,
        ),
        (
            "unknown ends trust",
            &c,
            b"for=198.51.100.7, for=unknown, for=10.0.0.2",
            Some("10.0.0.2"),
            None,
            None,
            None,
            None,
        ),
        (
            "every hop trusted: the furthest",
            &c,
            b"for=10.0.0.2;proto=https",
            Some("10.0.0.2"),
            None,
            Some(Scheme::Https),
            None,
            None,
        ),
        (
            "element without for is skipped",
            &c,
            b"for=198.51.100.7, proto=https, for=10.0.0.2",
            Some("198.51.100.7"),
            None,
            None,
            None,
            None,
        ),
        (
            "last for of an element",
            &c,
            b"for=6.6.6.6;for=198.51.100.7",
            Some("198.51.100.7"),
            None,
            None,
            None,
            None,
        ),
        (
            "quoted proto",
            &c,
            b"for=198.51.100.7;proto=\"https\"",
            Some("198.51.100.7"),
            None,
            Some(Scheme::Https),
            None,
            None,
        ),
        (
            "host from a later hop",
            &c,
            b"for=198.51.100.7, for=10.0.0.2;host=a.example, for=10.0.0.1;host=b.example",
            Some("198.51.100.7"),
            None,
            None,
            Some("a.example"),
            None,
        ),
        (
            "host escaped",
            &c,
            b"for=198.51.100.7;host=\"Ex\\ample.COM:8080\"",
            Some("198.51.100.7"),
            None,
            None,
            Some("example.com:8080"),
            None,
        ),
        (
            "user from the nearest hop",
            &c,
            b"for=198.51.100.7;remote_user=\"a\", for=10.0.0.2;remote_user=\"b\\\"c\"",
            Some("198.51.100.7"),
            None,
            None,
            None,
            Some("b\"c"),
        ),
        (
            "params off",
            &named,
            b"for=198.51.100.7;host=x.example;remote_user=u",
            Some("198.51.100.7"),
            None,
            None,
            None,
            None,
        ),
        (
            "commas inside quotes",
            &c,
            b"for=198.51.100.7;remote_user=\"a,b;c\"",
            Some("198.51.100.7"),
            None,
            None,
            None,
            Some("a,b;c"),
        ),
        ("empty", &c, b"", None, None, None, None, None),
        ("no pairs", &c, b"token, ;;, ", None, None, None, None, None),
    ];
    for &(what, cfg, value, addr, port, scheme, host, user) in cases {
        let r = run(cfg, "10.0.0.1", "http", &[("Forwarded", value)])
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(r.addr, addr.map(ip), "{what}");
        assert_eq!(r.port, port, "{what}");
        assert_eq!(r.scheme, scheme, "{what}");
        assert_eq!(r.host.as_deref(), host, "{what}");
        assert_eq!(r.remote_user.as_deref(), user, "{what}");
    }
    let untrusted = run(
        &c,
        "203.0.113.5",
        "http",
        &[("Forwarded", b"for=198.51.100.7;host=evil;proto=https")],
    );
    assert_eq!(untrusted, Ok(Resolved::default()));
}

#[test]
fn hostile_forwarded_is_a_400() {
    let c = cfg(
        Some(&["Forwarded"]),
        &[("host", "enable"), ("remote_user", "enable")],
    );
    let many = "a=b;".repeat(70);
    let cases: &[(&str, &[u8])] = &[
        ("unterminated quote", b"for=\"198.51.100.7"),
        ("unterminated quote in a key", b"\"for=198.51.100.7"),
        ("backslash at the end of a quote", b"for=\"198.51.100.7\\\""),
        ("empty brackets", b"for=\"[]\""),
        ("no closing bracket", b"for=\"[2001:db8::1\""),
        ("too many params", many.as_bytes()),
        ("bad host", b"for=198.51.100.7;host=\"bad host\""),
        ("host with a slash", b"for=198.51.100.7;host=a/b"),
        (
            "host ending in a backslash",
            b"for=198.51.100.7;host=\"a\\\\\\\"",
        ),
    ];
    for &(what, value) in cases {
        assert!(
            run(&c, "10.0.0.1", "http", &[("Forwarded", value)]).is_err(),
            "{what}"
        );
    }
    // The same headers from a stranger are not even read.
    for &(what, value) in cases {
        assert_eq!(
            run(&c, "203.0.113.5", "http", &[("Forwarded", value)]),
            Ok(Resolved::default()),
            "{what}"
        );
    }
}

#[test]
fn host_values() {
    let cases: &[(&[u8], Option<&str>)] = &[
        (b"Example.COM", Some("example.com")),
        (b"example.com.", Some("example.com")),
        (b"example.com:8080", Some("example.com:8080")),
        (b"example.com:", Some("example.com")),
        (b"a-b.example", Some("a-b.example")),
        (b"192.0.2.1", Some("192.0.2.1")),
        (b"[2001:DB8::1]:443", Some("[2001:db8::1]:443")),
        (b"", None),
        (b".", None),
        (b"-a.example", None),
        (b"a.-b.example", None),
        (b"a..b", None),
        (b"a_b.example", None),
        (b"1.2.3", None),
        (b"example.123", None),
        (b"example.com:80a", None),
        (b"[]", None),
        (b"[::1", None),
        (b"[::1]x", None),
        (b"[1:2:3:4:5:6:7:8:9]", None),
    ];
    for &(h, want) in cases {
        assert_eq!(
            normalized_host(h).as_deref(),
            want,
            "{}",
            String::from_utf8_lossy(h)
        );
    }
}
