use crate::httpup::balance::{djb_hash, host_hash, pick, Candidate, Key, DJB_INIT};
use crate::httpup::options::{
    parse_balance, parse_flag, parse_forwarded, parse_header, parse_map_extensions, parse_servers,
    Balance, Forwarded, UpstreamAddr,
};
use crate::httpup::retry::{may_retry, Failure};
use crate::httpup::ConfValue;

fn s(v: &str) -> ConfValue {
    ConfValue::Str(v.into())
}

fn arr(items: Vec<(Option<&str>, ConfValue)>) -> ConfValue {
    ConfValue::Array(
        items
            .into_iter()
            .map(|(k, v)| (k.map(str::to_string), v))
            .collect(),
    )
}

fn kv(items: Vec<(&str, ConfValue)>) -> ConfValue {
    arr(items.into_iter().map(|(k, v)| (Some(k), v)).collect())
}

#[test]
fn servers_parse_as_lighttpd() {
    // 10-proxy.conf's example and seed 003's two balanced servers.
    let v = kv(vec![
        (
            "/",
            arr(vec![
                (
                    None,
                    kv(vec![
                        ("host", s("127.0.0.1")),
                        ("port", ConfValue::Int(5000)),
                    ]),
                ),
                (
                    None,
                    kv(vec![("host", s("127.0.0.1")), ("port", s("5001"))]),
                ),
            ]),
        ),
        (
            ".php",
            kv(vec![(
                "php",
                kv(vec![
                    ("socket", s("/run/php.sock")),
                    ("connect-timeout", ConfValue::Int(3)),
                ]),
            )]),
        ),
        (
            "/v6",
            kv(vec![(
                "b",
                kv(vec![
                    ("host", s("[::1]")),
                    ("read-timeout", ConfValue::Int(30)),
                ]),
            )]),
        ),
        (
            "/h",
            kv(vec![(
                "h",
                kv(vec![
                    ("host", s("/run/h.sock")),
                    ("check-local", s("enable")),
                ]),
            )]),
        ),
    ]);
    let routes = parse_servers(&v).expect("valid");
    assert_eq!(routes.len(), 4);
    assert_eq!(routes[0].pattern, "/");
    assert_eq!(routes[0].hosts.len(), 2);
    assert_eq!(
        routes[0].hosts[1].addr,
        UpstreamAddr::Tcp {
            host: "127.0.0.1".into(),
            port: 5001
        }
    );
    assert_eq!(routes[0].hosts[0].label, "");
    assert_eq!(
        routes[1].hosts[0].addr,
        UpstreamAddr::Unix("/run/php.sock".into())
    );
    assert_eq!(
        (
            routes[1].hosts[0].label.as_str(),
            routes[1].hosts[0].connect_timeout
        ),
        ("php", 3)
    );
    assert_eq!(
        routes[2].hosts[0].addr,
        UpstreamAddr::Tcp {
            host: "::1".into(),
            port: 80
        }
    );
    assert_eq!(
        (
            routes[2].hosts[0].read_timeout,
            routes[2].hosts[0].disable_time
        ),
        (30, 1)
    );
    assert_eq!(
        routes[3].hosts[0].addr,
        UpstreamAddr::Unix("/run/h.sock".into())
    );
}

#[test]
fn servers_errors_name_the_option() {
    let host = |opts: Vec<(&str, ConfValue)>| kv(vec![("/", kv(vec![("x", kv(opts))]))]);
    let cases: Vec<(ConfValue, &str)> = vec![
        (s("nope"), "proxy.server"),
        (
            host(vec![("port", ConfValue::Int(80))]),
            "\"host\" or \"socket\"",
        ),
        (
            host(vec![("host", s("a")), ("socket", s("/s"))]),
            "not both",
        ),
        (
            host(vec![("host", s("a")), ("port", ConfValue::Int(70000))]),
            "\"port\"",
        ),
        (
            host(vec![("host", s("a")), ("port", s("eighty"))]),
            "\"port\"",
        ),
        (
            host(vec![("host", s("a")), ("mode", s("authorizer"))]),
            "responder",
        ),
        (
            host(vec![("host", s("a")), ("bin-path", s("/usr/bin/app"))]),
            "bin-path",
        ),
        (
            host(vec![
                ("host", s("a")),
                ("connect_timeout", ConfValue::Int(1)),
            ]),
            "'-'",
        ),
        (
            host(vec![("host", s("a")), ("colour", s("blue"))]),
            "colour",
        ),
        (host(vec![("socket", s(&"/x".repeat(60)))]), "socket path"),
        (kv(vec![("/", kv(vec![]))]), "no hosts"),
    ];
    for (v, want) in cases {
        let e = parse_servers(&v).expect_err(want);
        assert!(
            e.contains(want) && e.contains("proxy.server"),
            "{e} lacks {want}"
        );
    }
}

#[test]
fn small_options() {
    assert_eq!(parse_balance(&s("round-robin")), Ok(Balance::RoundRobin));
    assert_eq!(parse_balance(&s("least-connection")), Ok(Balance::Fair));
    assert_eq!(parse_balance(&s("")), Ok(Balance::Fair));
    assert!(parse_balance(&s("random"))
        .is_err_and(|e| e.contains("proxy.balance") && e.contains("random")));
    let f = parse_forwarded(&kv(vec![
        ("for", ConfValue::Int(1)),
        ("proto", s("enable")),
        ("host", s("disable")),
    ]));
    assert_eq!(
        f,
        Ok(Forwarded {
            for_: true,
            proto: true,
            ..Forwarded::default()
        })
    );
    assert!(parse_forwarded(&kv(vec![("server", ConfValue::Int(1))]))
        .is_err_and(|e| e.contains("server")));
    assert!(parse_forwarded(&kv(vec![("for", s("yes"))])).is_err_and(|e| e.contains("\"for\"")));
    assert_eq!(parse_flag("k", &s("Enabled")), Ok(true));
    assert!(parse_flag("proxy.replace-http-host", &s("on"))
        .is_err_and(|e| e.contains("replace-http-host")));
    let h = parse_header(&kv(vec![
        ("upgrade", s("enable")),
        ("map-urlpath", kv(vec![("/a", s("/b"))])),
        ("map-host-response", kv(vec![("-", s("-"))])),
    ]))
    .expect("valid");
    assert!(h.upgrade && !h.connect && h.map_urlpath == vec![("/a".into(), "/b".into())]);
    assert!(h.remaps_request() && h.remaps_response());
    assert!(
        parse_header(&kv(vec![("map-urlpath", s("/a"))])).is_err_and(|e| e.contains("map-urlpath"))
    );
    assert!(parse_header(&kv(vec![("rewrite", s("x"))])).is_err_and(|e| e.contains("rewrite")));
    assert!(parse_header(&kv(vec![("connect", s("maybe"))])).is_err_and(|e| e.contains("connect")));
    assert_eq!(
        parse_map_extensions(&kv(vec![(".php3", s(".php"))])),
        Ok(vec![(".php3".into(), ".php".into())])
    );
}

#[test]
fn djb_hash_is_lighttpds() {
    // h = 5381; h = h*33 ^ 'a' = 177573 ^ 97 = 177604.
    assert_eq!(djb_hash(b"a", DJB_INIT), 177_604);
    assert_eq!(djb_hash(b"", DJB_INIT), DJB_INIT);
}

#[test]
fn balance_table() {
    let c = |usable, load, name: &str, port| Candidate {
        usable,
        load,
        hash: host_hash(name, port),
    };
    let hosts = [
        c(true, 3, "127.0.0.1", 5000),
        c(true, 1, "127.0.0.1", 5001),
        c(true, 1, "127.0.0.1", 5002),
    ];
    let key = Key {
        path: b"/a",
        authority: b"example.com",
        client: b"192.0.2.7",
    };
    let mut last = None;
    assert_eq!(
        pick(Balance::Fair, &hosts, &mut last, key),
        Some(1),
        "fewest in progress, first of equals"
    );
    let rr: Vec<_> = (0..4)
        .map(|_| pick(Balance::RoundRobin, &hosts, &mut last, key))
        .collect();
    assert_eq!(rr, vec![Some(0), Some(1), Some(2), Some(0)]);
    let down = [c(false, 0, "a", 1), c(true, 0, "b", 1), c(false, 0, "c", 1)];
    let mut last = Some(1);
    assert_eq!(
        pick(Balance::RoundRobin, &down, &mut last, key),
        Some(1),
        "wraps to the only usable one"
    );
    let none = [c(false, 0, "a", 1), c(false, 0, "b", 1)];
    for b in [
        Balance::Fair,
        Balance::RoundRobin,
        Balance::Hash,
        Balance::Sticky,
    ] {
        assert_eq!(pick(b, &none, &mut None, key), None, "{b:?}");
        assert_eq!(pick(b, &hosts[..1], &mut None, key), Some(0), "{b:?}");
    }
    // Hash: the same URL always picks the same host; URLs spread over hosts.
    let mut seen = [0; 3];
    for i in 0..300 {
        let path = format!("/page/{i}");
        let k = Key {
            path: path.as_bytes(),
            ..key
        };
        let first = pick(Balance::Hash, &hosts, &mut None, k);
        assert_eq!(first, pick(Balance::Hash, &hosts, &mut None, k));
        seen[first.unwrap_or(9)] += 1;
    }
    assert!(
        seen.iter().all(|&n| n > 30),
        "hash spreads over one machine's ports: {seen:?}"
    );
    let mut seen = [0; 3];
    for i in 0..300 {
        let client = format!("10.0.{}.{}", i / 256, i % 256);
        let k = Key {
            client: client.as_bytes(),
            ..key
        };
        let first = pick(Balance::Sticky, &hosts, &mut None, k);
        assert_eq!(
            first,
            pick(
                Balance::Sticky,
                &hosts,
                &mut None,
                Key {
                    path: b"/other",
                    ..k
                }
            )
        );
        seen[first.unwrap_or(9)] += 1;
    }
    assert!(
        seen.iter().all(|&n| n > 30),
        "sticky spreads clients: {seen:?}"
    );
}

#[test]
fn retry_table() {
    let f = |reused, answer_started, body_replayable| Failure {
        reused,
        answer_started,
        body_replayable,
    };
    let cases: &[(&str, Failure, bool)] = &[
        ("GET", f(true, false, true), true),
        ("HEAD", f(true, false, true), true),
        ("PUT", f(true, false, true), true),
        ("DELETE", f(true, false, true), true),
        ("OPTIONS", f(true, false, true), true),
        ("PUT", f(true, false, false), false),
        ("POST", f(true, false, true), false),
        ("PATCH", f(true, false, true), false),
        ("get", f(true, false, true), false),
        ("GET", f(false, false, true), false),
        ("GET", f(true, true, true), false),
    ];
    for &(m, failure, want) in cases {
        assert_eq!(may_retry(m, failure), want, "{m} {failure:?}");
    }
}
