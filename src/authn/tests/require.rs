//! auth.require, auth.backend and auth.cache parsing.

use crate::authn::cache::{parse_cache_options, CacheOptions};
use crate::authn::digest::DigestAlgorithm::{Md5, Sha256, Sha512_256};
use crate::authn::require::{
    parse_backend, parse_require, parse_rule, BackendKind, Method, OptValue, Require,
};

fn s(v: &str) -> OptValue {
    OptValue::Str(v.to_string())
}

type Opts = Vec<(String, OptValue)>;

fn kv(pairs: &[(&str, OptValue)]) -> Opts {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn rule(opts: &Opts) -> Result<Require, String> {
    parse_require(&[("/p".to_string(), opts.clone())]).map(|(t, _)| t.rules[0].1.clone())
}

/// A valid digest rule with `extra` keys replaced or added.
fn base(extra: &[(&str, OptValue)]) -> Opts {
    let mut v = kv(&[
        ("method", s("digest")),
        ("realm", s("R")),
        ("require", s("valid-user")),
    ]);
    for (k, val) in extra {
        v.retain(|(kk, _)| kk != k);
        v.push((k.to_string(), val.clone()));
    }
    v
}

#[test]
fn good_rules_parse_into_types() {
    let r = rule(&base(&[])).expect("minimal");
    assert_eq!(
        (r.method, r.realm.as_str(), r.algorithms.clone(), r.userhash),
        (Method::Digest, "R", vec![Md5], false)
    );
    assert!(r.rule.valid_user && r.nonce_key.is_none());

    let cases: &[(&str, &str, Vec<crate::authn::digest::DigestAlgorithm>)] = &[
        ("MD5", "default spelled out", vec![Md5]),
        ("md5-sess", "-sess adds nothing, case-blind", vec![Md5]),
        ("MD5|SHA-256", "strongest first", vec![Sha256, Md5]),
        (
            "SHA-256|MD5|SHA-256-sess",
            "deduplicated",
            vec![Sha256, Md5],
        ),
        ("SHA-512-256|MD5", "SHA-512-256", vec![Sha512_256, Md5]),
        ("", "blank is MD5", vec![Md5]),
    ];
    for (algos, what, want) in cases {
        let r = rule(&base(&[("algorithm", s(algos))])).expect(what);
        assert_eq!(&r.algorithms, want, "{what}");
    }
    let r = rule(&base(&[
        ("method", s("basic")),
        ("userhash", s("Enable")),
        ("nonce-secret", s("k")),
    ]))
    .expect("all keys");
    assert_eq!(r.method, Method::Basic);
    assert!(r.userhash && r.nonce_key.is_some());
    assert_eq!(
        rule(&base(&[("method", s("extern"))])).map(|r| r.method),
        Ok(Method::Extern)
    );
    assert_eq!(
        rule(&base(&[("method", s("gssapi"))])).map(|r| r.method),
        Ok(Method::Gssapi)
    );
    assert!(rule(&base(&[("nonce_secret", s("k"))]))
        .expect("underscore")
        .nonce_key
        .is_some());
}

#[test]
fn every_bad_value_names_its_key() {
    let cases: Vec<(&str, Opts, &str)> = vec![
        (
            "no method",
            kv(&[("realm", s("R")), ("require", s("valid-user"))]),
            "method field is missing",
        ),
        (
            "blank method",
            base(&[("method", s(" "))]),
            "method field is missing or blank",
        ),
        (
            "unknown method",
            base(&[("method", s("ntlm"))]),
            "unknown method \"ntlm\"",
        ),
        (
            "no realm",
            kv(&[("method", s("basic")), ("require", s("valid-user"))]),
            "realm field is missing",
        ),
        (
            "CR in realm",
            base(&[("realm", s("a\r\nX-Evil: 1"))]),
            "control character",
        ),
        (
            "no require",
            kv(&[("method", s("basic")), ("realm", s("R"))]),
            "require field is missing",
        ),
        (
            "blank require",
            base(&[("require", s(""))]),
            "require field is missing or blank",
        ),
        (
            "bad algorithm",
            base(&[("algorithm", s("MD5|SHA-1"))]),
            "invalid algorithm \"SHA-1\"",
        ),
        (
            "bad userhash",
            base(&[("userhash", s("yes"))]),
            "userhash \"yes\"",
        ),
        (
            "unknown key",
            base(&[("realms", s("R"))]),
            "unknown field \"realms\"",
        ),
        (
            "integer value",
            base(&[("realm", OptValue::Int(1))]),
            "a string was expected",
        ),
        (
            "array value",
            base(&[("require", OptValue::Array)]),
            "( \"require\" => ... )",
        ),
        (
            "bad require",
            base(&[("require", s("user=a|bob"))]),
            "missing '='",
        ),
    ];
    for (what, opts, needle) in cases {
        match rule(&opts) {
            Ok(r) => panic!("{what}: accepted {r:?}"),
            Err(e) => {
                assert!(e.contains(needle), "{what}: {e:?} lacks {needle:?}");
                assert!(
                    e.contains("auth.require = ( \"/p\""),
                    "{what}: {e:?} does not name the rule"
                );
            }
        }
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn require_field_grammar() {
    // (value, users, groups, hosts, or the error's words)
    type Lists = (
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );
    let cases: &[(&str, Result<Lists, &str>)] = &[
        ("user=a", Ok((&["a"], &[], &[]))),
        (
            "user=a|user=b|group=g|host=h",
            Ok((&["a", "b"], &["g"], &["h"])),
        ),
        ("user=a|", Ok((&["a"], &[], &[]))),
        ("user=a=b", Ok((&["a=b"], &[], &[]))),
        ("user=", Err("missing token after '='")),
        ("user=|user=b", Err("missing token after '='")),
        ("user=a||user=b", Err("missing '='")),
        ("valid-user|user=a", Err("missing '='")),
        ("valid-user=x", Err("can not be combined")),
        ("users=a", Err("invalid/unsupported token \"users\"")),
        ("User=a", Err("invalid/unsupported token \"User\"")),
    ];
    for (v, want) in cases {
        match (parse_rule(v), want) {
            (Ok(r), Ok((u, g, h))) => {
                assert_eq!(
                    (&r.users, &r.groups, &r.hosts),
                    (&strings(u), &strings(g), &strings(h)),
                    "{v}"
                );
                assert!(!r.valid_user);
            }
            (Err(e), Err(needle)) => assert!(e.contains(needle), "{v}: {e:?} lacks {needle:?}"),
            (got, _) => panic!("{v}: got {got:?}"),
        }
    }
    assert!(parse_rule("valid-user").expect("valid-user").valid_user);
}

#[test]
fn host_rules_warn_as_lighttpd_does() {
    let entry = (
        "/p".to_string(),
        base(&[("require", s("user=a|host=example.org"))]),
    );
    let (_, warnings) = parse_require(&[entry]).expect("parses");
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("'host' not implemented"),
        "{warnings:?}"
    );
}

#[test]
fn matches_users_groups_hosts() {
    let r = rule(&base(&[(
        "require",
        s("user=alice|user=Bob|group=staff|host=h1"),
    )]))
    .expect("parses");
    type Case = (
        Option<&'static str>,
        &'static [&'static str],
        Option<&'static str>,
        bool,
    );
    let cases: &[Case] = &[
        (Some("alice"), &[], None, true),
        (Some("Bob"), &[], None, true),
        (Some("bob"), &[], None, false), // case-sensitive
        (Some("carol"), &["staff"], None, true),
        (Some("carol"), &["other", "staff"], None, true),
        (Some("carol"), &["other"], None, false),
        (None, &[], Some("h1"), true),
        (Some("carol"), &[], Some("h2"), false),
        (None, &[], None, false),
    ];
    for (user, groups, host, want) in cases {
        assert_eq!(
            r.matches(*user, groups, *host),
            *want,
            "{user:?} {groups:?} {host:?}"
        );
    }
    let any = rule(&base(&[])).expect("valid-user");
    assert!(any.matches(Some("anyone"), &[], None));
    assert!(!any.matches(None, &[], None));
}

#[test]
fn lookup_is_first_prefix_match_in_config_order() {
    let entries: Vec<(String, Vec<(String, OptValue)>)> = ["/a/b", "/a", "/A/c"]
        .iter()
        .map(|p| (p.to_string(), base(&[("realm", s(p))])))
        .collect();
    let (t, _) = parse_require(&entries).expect("parses");
    let cases: &[(&str, bool, Option<&str>)] = &[
        ("/a/b/x", false, Some("/a/b")),
        ("/a/c", false, Some("/a")),
        ("/ab", false, Some("/a")), // a plain string prefix, as lighttpd
        ("/A/c", false, Some("/A/c")),
        ("/A/B/x", true, Some("/a/b")),
        ("/b", false, None),
        ("/", false, None),
    ];
    for (path, blind, want) in cases {
        assert_eq!(
            t.lookup(path, *blind).map(|r| r.realm.as_str()),
            *want,
            "{path} blind={blind}"
        );
    }
    assert_ne!(
        t.rules[0].1.id, t.rules[1].1.id,
        "each rule has its own cache id"
    );
}

#[test]
fn backend_and_cache_options() {
    let cases: &[(&str, Result<Option<BackendKind>, &str>)] = &[
        ("", Ok(None)),
        ("plain", Ok(Some(BackendKind::Plain))),
        ("htpasswd", Ok(Some(BackendKind::Htpasswd))),
        ("htdigest", Ok(Some(BackendKind::Htdigest))),
        ("ldap", Ok(Some(BackendKind::Ldap))),
        ("pam", Ok(Some(BackendKind::Pam))),
        ("sasl", Ok(Some(BackendKind::Sasl))),
        ("gssapi", Ok(Some(BackendKind::Gssapi))),
        ("kerberos", Err("auth.backend not supported: \"kerberos\"")),
    ];
    for (v, want) in cases {
        match (parse_backend(v), want) {
            (Ok(a), Ok(b)) => assert_eq!(a, *b, "{v}"),
            (Err(e), Err(needle)) => assert!(e.contains(needle), "{v}: {e}"),
            (got, _) => panic!("{v}: {got:?}"),
        }
    }
    let opts = |k: &str, v: OptValue| vec![(k.to_string(), v)];
    let cases: Vec<(Opts, Result<i64, &str>)> = vec![
        (vec![], Ok(600)),
        (opts("max-age", s("600")), Ok(600)),
        (opts("max-age", s("30")), Ok(30)),
        (opts("max-age", OptValue::Int(0)), Ok(0)),
        (
            opts("max-age", s("ten")),
            Err("\"max-age\" => Str(\"ten\")"),
        ),
        (
            opts("max-age", OptValue::Int(-1)),
            Err("not a number of seconds"),
        ),
        (
            opts("max-age", OptValue::Array),
            Err("not a number of seconds"),
        ),
        (opts("maxage", s("1")), Err("unknown key \"maxage\"")),
    ];
    for (o, want) in cases {
        match (parse_cache_options(&o), want) {
            (Ok(CacheOptions { max_age }), Ok(w)) => assert_eq!(max_age, w, "{o:?}"),
            (Err(e), Err(needle)) => assert!(e.contains(needle), "{o:?}: {e}"),
            (got, _) => panic!("{o:?}: {got:?}"),
        }
    }
}
