use super::*;

fn arr(items: Vec<(Option<&str>, Value)>) -> Value {
    Value::Array(
        items
            .into_iter()
            .map(|(k, v)| (k.map(str::to_string), v))
            .collect(),
    )
}
fn s(v: &str) -> Value {
    Value::Str(v.into())
}

#[test]
fn seed_configurations() {
    // seed 000: scgi.server = ( "/scgi-test" => ( "localhost" => ( "host" => "127.0.0.1", "port" => 3000, "check-local" => "disable" ) ) )
    let v = arr(vec![(
        Some("/scgi-test"),
        arr(vec![(
            Some("localhost"),
            arr(vec![
                (Some("host"), s("127.0.0.1")),
                (Some("port"), Value::Int(3000)),
                (Some("check-local"), s("disable")),
            ]),
        )]),
    )]);
    let r = parse_servers(&v, Protocol::Scgi).unwrap();
    assert_eq!(r.len(), 1);
    assert!(!r[0].is_extension());
    assert_eq!(
        r[0].hosts[0].addr,
        BackendAddr::Tcp("127.0.0.1:3000".parse().unwrap())
    );
    assert!(!r[0].hosts[0].check_local);

    // seed 004: php-cgi spawned twice on /tmp/php.socket-0 and -1
    let v = arr(vec![(
        Some(".php"),
        arr(vec![(
            None,
            arr(vec![
                (Some("bin-path"), s("/usr/local/bin/php-cgi")),
                (Some("socket"), s("/tmp/php.socket")),
                (Some("max-procs"), Value::Int(2)),
                (
                    Some("bin-environment"),
                    arr(vec![(Some("PHP_FCGI_CHILDREN"), s("16"))]),
                ),
                (Some("bin-copy-environment"), arr(vec![(None, s("PATH"))])),
                (Some("broken-scriptfilename"), s("enable")),
            ]),
        )]),
    )]);
    let r = parse_servers(&v, Protocol::FastCgi).unwrap();
    assert!(r[0].is_extension());
    let addrs: Vec<_> = r[0].hosts.iter().map(|h| h.addr.to_string()).collect();
    assert_eq!(addrs, ["unix:/tmp/php.socket-0", "unix:/tmp/php.socket-1"]);
    let sp = r[0].hosts[0].spawn.as_ref().unwrap();
    assert_eq!(sp.argv, ["/usr/local/bin/php-cgi"]);
    assert_eq!(
        sp.env,
        [("PHP_FCGI_CHILDREN".to_string(), "16".to_string())]
    );
    assert_eq!(sp.copy_env, ["PATH"]);
}

#[test]
fn errors_name_the_problem() {
    let no_addr = arr(vec![(Some("/x"), arr(vec![(None, arr(vec![]))]))]);
    assert!(parse_servers(&no_addr, Protocol::Scgi)
        .unwrap_err()
        .contains("needs \"socket\""));
    assert!(parse_servers(&s("x"), Protocol::Scgi).is_err());
    let bad_mode = arr(vec![(
        Some("/x"),
        arr(vec![(
            None,
            arr(vec![
                (Some("socket"), s("/tmp/a")),
                (Some("mode"), s("authoriser")),
            ]),
        )]),
    )]);
    assert!(parse_servers(&bad_mode, Protocol::FastCgi)
        .unwrap_err()
        .contains("authoriser"));
}

#[test]
fn modes() {
    let host = |opts: Vec<(Option<&str>, Value)>| {
        let v = arr(vec![(Some("/x"), arr(vec![(None, arr(opts))]))]);
        parse_servers(&v, Protocol::FastCgi).unwrap()[0].hosts[0].clone()
    };
    let plain = host(vec![(Some("socket"), s("/tmp/a"))]);
    assert!(
        !plain.authorizer && plain.local_redir,
        "responder, local redirects on"
    );
    let auth = host(vec![
        (Some("socket"), s("/tmp/a")),
        (Some("mode"), s("authorizer")),
        (Some("local-redir"), s("disable")),
    ]);
    assert!(auth.authorizer && !auth.local_redir);
    assert_eq!(
        plain.keep_conn, None,
        "keep-conn: decided by the backend's answer"
    );
    let on = host(vec![
        (Some("socket"), s("/tmp/a")),
        (Some("keep-conn"), s("enable")),
    ]);
    assert_eq!(on.keep_conn, Some(true));
    let off = host(vec![
        (Some("socket"), s("/tmp/a")),
        (Some("keep-conn"), s("disable")),
    ]);
    assert_eq!(off.keep_conn, Some(false));
    let v = arr(vec![(
        Some("/x"),
        arr(vec![(
            None,
            arr(vec![
                (Some("socket"), s("/tmp/a")),
                (Some("keep-conn"), s("sometimes")),
            ]),
        )]),
    )]);
    assert!(parse_servers(&v, Protocol::FastCgi).is_err());
}
