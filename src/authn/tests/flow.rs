//! The Digest flow and extern, through `check`, against what lighttpd answers.

use crate::authn::digest::expected_response;
use crate::authn::digest::DigestAlgorithm::{self, Md5, Sha256};
use crate::authn::nonce::{NonceCheck, NonceKey};
use crate::authn::require::{parse_require, BackendKind, OptValue, Require};
use crate::authn::userfile::UserFile;
use crate::authn::{check, AuthRequest, AuthType, Backend, Context, Grant, Outcome};

pub(super) const NOW: i64 = 1_700_000_000;
pub(super) const REALM: &str = "http-auth@example.org";

pub(super) fn rule(pairs: &[(&str, &str)]) -> Require {
    let mut opts: Vec<(String, OptValue)> = vec![
        ("method".into(), OptValue::Str("digest".into())),
        ("realm".into(), OptValue::Str(REALM.into())),
    ];
    for (k, v) in pairs {
        opts.retain(|(kk, _)| kk != k);
        opts.push((k.to_string(), OptValue::Str(v.to_string())));
    }
    if !pairs.iter().any(|(k, _)| *k == "require") {
        opts.push(("require".into(), OptValue::Str("valid-user".into())));
    }
    parse_require(&[("/".into(), opts)]).expect("rule").0.rules[0]
        .1
        .clone()
}

/// What a client sends: defaults are a correct MD5 qop=auth answer for
/// Mufasa / "Circle of Life" to a nonce issued 10 s ago.
#[derive(Clone)]
struct Client {
    user: String,
    password: &'static str,
    algo: &'static str,
    qop: Option<&'static str>,
    uri: &'static str,
    nonce_age: i64,
    realm: &'static str,
    extra: &'static str,
    drop: &'static str,
}

impl Default for Client {
    fn default() -> Client {
        Client {
            user: "Mufasa".into(),
            password: "Circle of Life",
            algo: "MD5",
            qop: Some("auth"),
            uri: "/dir/index.html",
            nonce_age: 10,
            realm: REALM,
            extra: "",
            drop: "",
        }
    }
}

impl Client {
    fn header(&self, rule: &Require, key: &NonceKey) -> String {
        let (algo, sess) = DigestAlgorithm::parse(self.algo).unwrap_or((Md5, false));
        let nonce = rule
            .nonce_key
            .as_ref()
            .unwrap_or(key)
            .make(NOW - self.nonce_age, algo, REALM);
        let ha1 = algo.ha1(
            self.user.as_bytes(),
            self.realm.as_bytes(),
            self.password.as_bytes(),
        );
        let r = expected_response(
            algo,
            sess,
            &ha1,
            nonce.as_bytes(),
            b"0a4f113b",
            b"00000001",
            self.qop.map(str::as_bytes),
            b"GET",
            self.uri.as_bytes(),
        );
        let mut fields = vec![
            ("username", format!("\"{}\"", self.user)),
            ("realm", format!("\"{}\"", self.realm)),
            ("nonce", format!("\"{nonce}\"")),
            ("uri", format!("\"{}\"", self.uri)),
            ("algorithm", self.algo.to_string()),
            ("response", format!("\"{}\"", r.hex())),
        ];
        if let Some(q) = self.qop {
            fields.extend([
                ("qop", q.to_string()),
                ("nc", "00000001".into()),
                ("cnonce", "\"0a4f113b\"".into()),
            ]);
        }
        let mut h = String::from("Digest ");
        for (k, v) in fields
            .iter()
            .filter(|(k, _)| !self.drop.split(',').any(|d| d == *k))
        {
            h.push_str(&format!("{k}={v}, "));
        }
        h.push_str(self.extra);
        h.trim_end_matches([',', ' ']).to_string()
    }
}

enum Want {
    Grant(&'static str),
    /// 401: close?, stale?
    Denied(bool, bool),
    Bad(&'static str),
}

fn run(
    rule: &Require,
    users: Option<&UserFile>,
    kind: BackendKind,
    header: Option<&str>,
    key: &NonceKey,
) -> Outcome {
    let req = AuthRequest {
        path: "/dir/index.html",
        method: "GET",
        target: b"/dir/index.html",
        authorization: header.map(str::as_bytes),
        remote_user: None,
        now: NOW,
    };
    let mut ctx = Context {
        backend: Some(Backend { kind, users }),
        cache: None,
        key,
        extern_authn: false,
    };
    check(rule, &mut ctx, &req)
}

#[test]
fn digest_flow_answers_as_lighttpd() {
    let key = NonceKey::from_bytes([1; 32]);
    let (plain, _) = UserFile::parse(BackendKind::Plain, "p", b"Mufasa:Circle of Life\nother:x\n");
    let md5 = rule(&[]);
    let both = rule(&[("algorithm", "SHA-256|MD5")]);
    let only_a = rule(&[("require", "user=other")]);
    let c = Client::default;
    let cases: Vec<(&str, &Require, Option<Client>, Want)> = vec![
        ("no header", &md5, None, Want::Denied(false, false)),
        ("MD5 qop=auth", &md5, Some(c()), Want::Grant("Mufasa")),
        (
            "MD5-sess",
            &md5,
            Some(Client {
                algo: "MD5-sess",
                ..c()
            }),
            Want::Grant("Mufasa"),
        ),
        (
            "no algorithm: MD5",
            &md5,
            Some(Client {
                drop: "algorithm",
                ..c()
            }),
            Want::Grant("Mufasa"),
        ),
        (
            "RFC 2069, no qop",
            &md5,
            Some(Client { qop: None, ..c() }),
            Want::Grant("Mufasa"),
        ),
        (
            "SHA-256",
            &both,
            Some(Client {
                algo: "SHA-256",
                ..c()
            }),
            Want::Grant("Mufasa"),
        ),
        (
            "SHA-256-sess",
            &both,
            Some(Client {
                algo: "SHA-256-sess",
                ..c()
            }),
            Want::Grant("Mufasa"),
        ),
        (
            "SHA-256 not offered",
            &md5,
            Some(Client {
                algo: "SHA-256",
                ..c()
            }),
            Want::Denied(false, false),
        ),
        (
            "unknown algorithm",
            &md5,
            Some(Client {
                algo: "SHA-1",
                ..c()
            }),
            Want::Denied(false, false),
        ),
        (
            "wrong password: close",
            &md5,
            Some(Client {
                password: "circle of life",
                ..c()
            }),
            Want::Denied(true, false),
        ),
        (
            "unknown user: close",
            &md5,
            Some(Client {
                user: "Scar".into(),
                ..c()
            }),
            Want::Denied(true, false),
        ),
        (
            "realm mismatch",
            &md5,
            Some(Client {
                realm: "other",
                ..c()
            }),
            Want::Denied(false, false),
        ),
        (
            "not in require: 401, no 403",
            &only_a,
            Some(c()),
            Want::Denied(false, false),
        ),
        (
            "stale nonce",
            &md5,
            Some(Client {
                nonce_age: 601,
                ..c()
            }),
            Want::Denied(false, true),
        ),
        (
            "missing nonce",
            &md5,
            Some(Client {
                drop: "nonce",
                ..c()
            }),
            Want::Bad("digest: missing field"),
        ),
        (
            "qop without cnonce",
            &md5,
            Some(Client {
                drop: "cnonce",
                ..c()
            }),
            Want::Bad("digest: missing field"),
        ),
        (
            "username and username*",
            &md5,
            Some(Client {
                extra: "username*=UTF-8''x",
                ..c()
            }),
            Want::Bad("digest: missing field"),
        ),
        (
            "-sess without cnonce",
            &md5,
            Some(Client {
                algo: "MD5-sess",
                qop: None,
                ..c()
            }),
            Want::Bad("digest: (MD5-sess): missing field"),
        ),
        (
            "qop=auth-int",
            &md5,
            Some(Client {
                qop: Some("auth-int"),
                ..c()
            }),
            Want::Bad("digest: qop=auth-int not supported"),
        ),
        (
            "qop=other",
            &md5,
            Some(Client {
                qop: Some("bogus"),
                ..c()
            }),
            Want::Bad("digest: qop=bogus not supported"),
        ),
        (
            "uri of another request",
            &md5,
            Some(Client {
                uri: "/other",
                ..c()
            }),
            Want::Bad("digest: auth failed: uri mismatch"),
        ),
        (
            "syntax error",
            &md5,
            Some(Client {
                extra: "junk",
                ..c()
            }),
            Want::Bad("digest: malformed Authorization header"),
        ),
    ];
    for (what, rule, client, want) in cases {
        let header = client.map(|cl| cl.header(rule, &key));
        let got = run(
            rule,
            Some(&plain),
            BackendKind::Plain,
            header.as_deref(),
            &key,
        );
        match (want, got) {
            (Want::Grant(u), Outcome::Granted(g)) => {
                assert_eq!(
                    g,
                    Grant {
                        user: u.into(),
                        auth_type: Some(AuthType::Digest),
                        authentication_info: None
                    },
                    "{what}"
                )
            }
            (
                Want::Denied(close, stale),
                Outcome::Unauthorized {
                    www_authenticate,
                    close: c,
                    ..
                },
            ) => {
                assert_eq!(c, close, "{what}: close");
                let n = if stale { 1 } else { rule.algorithms.len() };
                assert_eq!(www_authenticate.len(), n, "{what}: {www_authenticate:?}");
                assert!(
                    www_authenticate
                        .iter()
                        .all(|w| w.ends_with(", stale=true") == stale),
                    "{what}: {www_authenticate:?}"
                );
            }
            (Want::Bad(why), Outcome::BadRequest { log }) => {
                assert!(log.starts_with(why), "{what}: {log}")
            }
            (_, got) => panic!("{what}: got {got:?}"),
        }
    }
    assert!(
        plain.dummy_checks() >= 1,
        "the unknown user took the dummy path"
    );
    let bad_resp = Client::default()
        .header(&md5, &key)
        .replace("response=\"", "response=\"00");
    assert!(
        matches!(
            run(
                &md5,
                Some(&plain),
                BackendKind::Plain,
                Some(&bad_resp),
                &key
            ),
            Outcome::BadRequest { .. }
        ),
        "response of the wrong length"
    );
    let forged = Client::default().header(&md5, &NonceKey::from_bytes([2; 32]));
    assert!(
        matches!(
            run(&md5, Some(&plain), BackendKind::Plain, Some(&forged), &key),
            Outcome::Unauthorized { close: false, .. }
        ),
        "a nonce from another key"
    );
    let htpasswd = run(
        &md5,
        None,
        BackendKind::Htpasswd,
        Some(&Client::default().header(&md5, &key)),
        &key,
    );
    assert!(
        matches!(&htpasswd, Outcome::Misconfigured { log } if log.contains("try \"basic\"")),
        "{htpasswd:?}"
    );
}

#[test]
fn htdigest_userhash_nonce_secret_and_nextnonce() {
    let key = NonceKey::from_bytes([1; 32]);
    let line = format!(
        "Mufasa:{REALM}:{}\n",
        Sha256
            .ha1(b"Mufasa", REALM.as_bytes(), b"Circle of Life")
            .hex()
    );
    let (htd, _) = UserFile::parse(BackendKind::Htdigest, "d", line.as_bytes());
    let r = rule(&[("algorithm", "SHA-256"), ("userhash", "enable")]);
    let sha = || Client {
        algo: "SHA-256",
        ..Client::default()
    };
    let grant = |o: Outcome| match o {
        Outcome::Granted(g) => g,
        other => panic!("{other:?}"),
    };

    let g = grant(run(
        &r,
        Some(&htd),
        BackendKind::Htdigest,
        Some(&sha().header(&r, &key)),
        &key,
    ));
    assert_eq!((g.user.as_str(), g.authentication_info), ("Mufasa", None));

    // userhash=true: username is H(user:realm), in either case; the real name comes back.
    let uh = Sha256
        .hash(&[b"Mufasa:", REALM.as_bytes()])
        .hex()
        .to_uppercase();
    let h = sha().header(&r, &key).replace(
        "username=\"Mufasa\"",
        &format!("username=\"{uh}\", userhash=true"),
    );
    // The response was computed over the HA1, which does not involve the hashed name.
    assert_eq!(
        grant(run(&r, Some(&htd), BackendKind::Htdigest, Some(&h), &key)).user,
        "Mufasa"
    );
    let h = sha()
        .header(&r, &key)
        .replace("username=\"Mufasa\"", "username=\"00\", userhash=true");
    assert!(matches!(
        run(&r, Some(&htd), BackendKind::Htdigest, Some(&h), &key),
        Outcome::Unauthorized { close: true, .. }
    ));

    // username* (RFC 8187).
    let h = sha()
        .header(&r, &key)
        .replace("username=\"Mufasa\"", "username*=UTF-8''Mufas%61");
    assert_eq!(
        grant(run(&r, Some(&htd), BackendKind::Htdigest, Some(&h), &key)).user,
        "Mufasa"
    );

    // Older than 540 s: still good, and a nextnonce to switch to.
    let g = grant(run(
        &r,
        Some(&htd),
        BackendKind::Htdigest,
        Some(
            &Client {
                nonce_age: 541,
                ..sha()
            }
            .header(&r, &key),
        ),
        &key,
    ));
    let next = g.authentication_info.expect("nextnonce");
    let n = next
        .strip_prefix("nextnonce=\"")
        .and_then(|s| s.strip_suffix('"'))
        .expect("quoted");
    assert_eq!(
        key.check(n.as_bytes(), Sha256, REALM, NOW),
        NonceCheck::Valid { age: 0 }
    );

    // A rule with a nonce-secret accepts its own nonces, not the process key's.
    let s = rule(&[
        ("algorithm", "SHA-256"),
        ("nonce-secret", "shared by all workers"),
    ]);
    assert!(matches!(
        run(
            &s,
            Some(&htd),
            BackendKind::Htdigest,
            Some(&sha().header(&s, &key)),
            &key
        ),
        Outcome::Granted(_)
    ));
    let with_process_key = sha().header(&r, &key);
    assert!(matches!(
        run(
            &s,
            Some(&htd),
            BackendKind::Htdigest,
            Some(&with_process_key),
            &key
        ),
        Outcome::Unauthorized { close: false, .. }
    ));
}

/// lighttpd's own test of a stale nonce sends a nonce in lighttpd's form:
/// glint cannot check it, and asks for a fresh one as lighttpd does (401
/// with `stale=true`); under a nonce-secret it is a bad request, as there.
#[test]
fn a_nonce_of_another_form_is_stale() {
    let key = NonceKey::from_bytes([3; 32]);
    let (plain, _) = UserFile::parse(BackendKind::Plain, "p", b"jan:jan\n");
    let header = "Digest username=\"Mufasa\", realm=\"http-auth@example.org\", \
        nonce=\"b3b26457000000003a9b34a3cd56d26e48a52a498ac9765d4b\", \
        uri=\"/dir/index.html\", qop=auth, nc=00000001, cnonce=\"65ee1b37\", \
        algorithm=\"md5\", response=\"049b000fb00ab51dddea6f093a96aa2e\"";
    match run(
        &rule(&[]),
        Some(&plain),
        BackendKind::Plain,
        Some(header),
        &key,
    ) {
        Outcome::Unauthorized {
            www_authenticate,
            close,
            ..
        } => {
            assert!(!close);
            assert!(
                www_authenticate.iter().all(|v| v.ends_with(", stale=true")),
                "{www_authenticate:?}"
            );
        }
        other => panic!("expected a stale 401, got {other:?}"),
    }
    let with_secret = rule(&[("nonce-secret", "s3cret")]);
    assert!(matches!(
        run(
            &with_secret,
            Some(&plain),
            BackendKind::Plain,
            Some(header),
            &key
        ),
        Outcome::BadRequest { .. }
    ));
}
