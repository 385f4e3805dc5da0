//! Basic credentials, the auth cache, and the Basic flow end to end.

use base64::Engine as _;

use crate::authn::basic::{encode, parse_basic, BasicError, Credentials, MAX_BASE64};
use crate::authn::cache::{AuthCache, CacheOptions};
use crate::authn::nonce::NonceKey;
use crate::authn::require::{parse_require, BackendKind, OptValue, Require};
use crate::authn::userfile::UserFile;
use crate::authn::{check, AuthRequest, AuthType, Backend, Context, Grant, Outcome};

fn b64(s: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn basic_header_grammar() {
    // 1360 characters of "AAA" triples and "Ojo" ("::"): exactly 1363.
    let long_ok = format!("Basic {}Ojo", "QUFB".repeat(340));
    type Want = Result<(&'static str, &'static [u8]), BasicError>;
    let cases: Vec<(&str, String, Want)> = vec![
        (
            "RFC 7617 example",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==".into(),
            Ok(("Aladdin", b"open sesame")),
        ),
        (
            "scheme case-blind",
            "bAsIc QWxhZGRpbjpvcGVuIHNlc2FtZQ==".into(),
            Ok(("Aladdin", b"open sesame")),
        ),
        (
            "padding optional",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ".into(),
            Ok(("Aladdin", b"open sesame")),
        ),
        (
            "spaces inside skipped",
            "Basic QWxh ZGRp bjpv cGVu IHNl c2FtZQ==".into(),
            Ok(("Aladdin", b"open sesame")),
        ),
        (
            "':' in password",
            format!("Basic {}", b64(b"u:a:b")),
            Ok(("u", b"a:b")),
        ),
        (
            "empty user and password",
            format!("Basic {}", b64(b":")),
            Ok(("", b"")),
        ),
        (
            "UTF-8 user",
            format!("Basic {}", b64("jürgen:pw".as_bytes())),
            Ok(("jürgen", b"pw")),
        ),
        (
            "not Basic",
            "Digest username=\"a\"".into(),
            Err(BasicError::NotBasic),
        ),
        ("no space", "BasicQWxh".into(), Err(BasicError::NotBasic)),
        ("too short", "Basi".into(), Err(BasicError::NotBasic)),
        (
            "over 1363 chars: 401",
            format!("Basic {}", "A".repeat(MAX_BASE64 + 1)),
            Err(BasicError::TooLong),
        ),
        (
            "empty",
            "Basic ".into(),
            Err(BasicError::Malformed("decoding base64-string failed")),
        ),
        (
            "junk",
            "Basic QWxh*GRp".into(),
            Err(BasicError::Malformed("decoding base64-string failed")),
        ),
        (
            "no colon",
            format!("Basic {}", b64(b"nocolon")),
            Err(BasicError::Malformed("missing ':' in credentials")),
        ),
        (
            "NUL in password",
            format!("Basic {}", b64(b"u:p\0w")),
            Err(BasicError::Malformed("NUL in credentials")),
        ),
        (
            "NUL in user",
            format!("Basic {}", b64(b"u\0:pw")),
            Err(BasicError::Malformed("NUL in credentials")),
        ),
        (
            "Latin-1 user",
            format!("Basic {}", b64(b"j\xfcrgen:pw")),
            Err(BasicError::Malformed("user name is not UTF-8")),
        ),
    ];
    for (what, header, want) in cases {
        let got = parse_basic(header.as_bytes());
        match want {
            Ok((u, p)) => assert_eq!(
                got,
                Ok(Credentials {
                    user: u.into(),
                    password: p.to_vec()
                }),
                "{what}"
            ),
            Err(e) => assert_eq!(got, Err(e), "{what}"),
        }
    }
    assert_eq!(long_ok.len() - 6, MAX_BASE64);
    let got = parse_basic(long_ok.as_bytes()).expect("1363 characters are still decoded");
    assert_eq!((got.user.len(), &got.password[..]), (1020, &b":"[..]));
}

fn rule(method: &str, require: &str) -> Require {
    let opts = [
        ("method", method),
        ("realm", "Ré\"alm"),
        ("require", require),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), OptValue::Str(v.to_string())))
    .collect();
    parse_require(&[("/".into(), opts)]).expect("rule").0.rules[0]
        .1
        .clone()
}

fn req(auth: Option<&str>) -> AuthRequest<'_> {
    AuthRequest {
        path: "/x",
        method: "GET",
        target: b"/x",
        authorization: auth.map(str::as_bytes),
        remote_user: None,
        now: 1_700_000_000,
    }
}

#[test]
fn basic_flow_answers_as_lighttpd() {
    let htpasswd = "alice:$2y$04$eBxUhJxvjhg4UXhWQ4XDzO41v.Jg6GhcCKnOSlH.ADiReBlN2piJ.\n\
carol:$apr1$UZZIQKhI$QEyWzb69lgQRn8RIkijPa0\n";
    let (users, _) = UserFile::parse(BackendKind::Htpasswd, "h", htpasswd.as_bytes());
    let key = NonceKey::from_bytes([7; 32]);
    let challenge = vec!["Basic realm=\"Ré\\\"alm\", charset=\"UTF-8\"".to_string()];
    let alice = encode("alice", "pässwörd");
    let carol = encode("carol", "s3cret:with:colons");
    let wrong = encode("alice", "passwörd");
    let nobody = encode("nobody", "pässwörd");
    enum Want {
        Grant(&'static str),
        Denied { close: bool },
        Bad(&'static str),
        Broken,
    }
    let cases: Vec<(&str, Require, Option<&str>, bool, Want)> = vec![
        (
            "no header: challenge, keep-alive",
            rule("basic", "valid-user"),
            None,
            true,
            Want::Denied { close: false },
        ),
        (
            "other scheme: challenge",
            rule("basic", "valid-user"),
            Some("Bearer x"),
            true,
            Want::Denied { close: false },
        ),
        (
            "right password",
            rule("basic", "valid-user"),
            Some(&alice),
            true,
            Want::Grant("alice"),
        ),
        (
            "apr1 user",
            rule("basic", "valid-user"),
            Some(&carol),
            true,
            Want::Grant("carol"),
        ),
        (
            "wrong password: close",
            rule("basic", "valid-user"),
            Some(&wrong),
            true,
            Want::Denied { close: true },
        ),
        (
            "unknown user: close",
            rule("basic", "valid-user"),
            Some(&nobody),
            true,
            Want::Denied { close: true },
        ),
        (
            "listed user",
            rule("basic", "user=carol|user=alice"),
            Some(&alice),
            true,
            Want::Grant("alice"),
        ),
        (
            "right password, not listed: 401 not 403",
            rule("basic", "user=carol"),
            Some(&alice),
            true,
            Want::Denied { close: true },
        ),
        (
            "group rules never match a file user",
            rule("basic", "group=alice"),
            Some(&alice),
            true,
            Want::Denied { close: true },
        ),
        (
            "malformed: 400",
            rule("basic", "valid-user"),
            Some("Basic !!!!"),
            true,
            Want::Bad("decoding base64-string failed"),
        ),
        (
            "no auth.backend: 500",
            rule("basic", "valid-user"),
            Some(&alice),
            false,
            Want::Broken,
        ),
    ];
    for (what, rule, auth, with_backend, want) in cases {
        let backend = with_backend.then_some(Backend {
            kind: BackendKind::Htpasswd,
            users: Some(&users),
        });
        let mut ctx = Context {
            backend,
            cache: None,
            key: &key,
            extern_authn: false,
        };
        let got = check(&rule, &mut ctx, &req(auth));
        match (want, got) {
            (Want::Grant(u), Outcome::Granted(g)) => {
                assert_eq!(
                    g,
                    Grant {
                        user: u.into(),
                        auth_type: Some(AuthType::Basic),
                        authentication_info: None
                    },
                    "{what}"
                )
            }
            (
                Want::Denied { close },
                Outcome::Unauthorized {
                    www_authenticate,
                    close: c,
                    log,
                },
            ) => {
                assert_eq!((&www_authenticate, c), (&challenge, close), "{what}");
                assert_eq!(log.is_some(), close, "{what}: a failed try is logged");
            }
            (Want::Bad(why), Outcome::BadRequest { log }) => assert_eq!(log, why, "{what}"),
            (Want::Broken, o @ Outcome::Misconfigured { .. }) => assert_eq!(o.status(), Some(500)),
            (_, got) => panic!("{what}: got {got:?}"),
        }
    }
}

#[test]
fn basic_over_plain_and_htdigest() {
    let key = NonceKey::from_bytes([7; 32]);
    let (plain, _) = UserFile::parse(BackendKind::Plain, "p", b"agent007:secret\n");
    let (htd, _) = UserFile::parse(
        BackendKind::Htdigest,
        "d",
        "agent007:Ré\"alm:2f3d991faf3e32c1c65a1478a00c6320\n".as_bytes(),
    );
    let r = rule("basic", "valid-user");
    for (what, kind, users) in [
        ("plain", BackendKind::Plain, &plain),
        ("htdigest", BackendKind::Htdigest, &htd),
    ] {
        for (pw, ok) in [("secret", true), ("Secret", false)] {
            let mut ctx = Context {
                backend: Some(Backend {
                    kind,
                    users: Some(users),
                }),
                cache: None,
                key: &key,
                extern_authn: false,
            };
            let auth = encode("agent007", pw);
            let got = check(&r, &mut ctx, &req(Some(&auth)));
            assert_eq!(
                matches!(got, Outcome::Granted(_)),
                ok,
                "{what} {pw}: {got:?}"
            );
        }
    }
}

/// A hash only libxcrypt checks (yescrypt: ~45 ms) goes to the worker
/// threads, for a known user and for an unknown one (the dummy has the
/// file's commonest setting), whatever the password; bcrypt stays here.
#[test]
fn libxcrypt_hashes_are_checked_off_the_loop() {
    let key = NonceKey::from_bytes([7; 32]);
    let yes = "$y$j9T$9QwHghd13Odi/dg.VDkbd1$2Ltr8yED.nI.XBgDISp1BSl2Z5lZOXEQLbG8K/Wa/u7";
    let text = format!(
        "y:{yes}\nz:{yes}\nb:$2y$04$eBxUhJxvjhg4UXhWQ4XDzO41v.Jg6GhcCKnOSlH.ADiReBlN2piJ.\n"
    );
    let (users, _) = UserFile::parse(BackendKind::Htpasswd, "h", text.as_bytes());
    let r = rule("basic", "valid-user");
    for (user, pw, offloaded) in [
        ("y", "password", true),
        ("y", "wrong", true),
        ("nobody", "password", true),
        ("b", "wrong", false),
    ] {
        let mut ctx = Context {
            backend: Some(Backend {
                kind: BackendKind::Htpasswd,
                users: Some(&users),
            }),
            cache: None,
            key: &key,
            extern_authn: false,
        };
        let got = check(&r, &mut ctx, &req(Some(&encode(user, pw))));
        assert_eq!(
            matches!(got, Outcome::Blocking(_)),
            offloaded,
            "{user}/{pw}: {got:?}"
        );
        assert_eq!(users.offloaded_hash(user).is_some(), offloaded, "{user}");
    }
    let (h, known) = users.offloaded_hash("y").expect("y");
    assert!(known && h.verify(b"password"));
    let (d, known) = users.offloaded_hash("nobody").expect("dummy");
    assert!(!known && !d.verify(b"password"));
}

#[test]
fn the_cache_skips_the_hash_for_a_right_password_only() {
    let text = "alice:$2y$04$eBxUhJxvjhg4UXhWQ4XDzO41v.Jg6GhcCKnOSlH.ADiReBlN2piJ.\n";
    let (mut users, _) = UserFile::parse(BackendKind::Htpasswd, "h", text.as_bytes());
    let key = NonceKey::from_bytes([7; 32]);
    let r = rule("basic", "valid-user");
    let mut cache = AuthCache::with_key(CacheOptions { max_age: 600 }, 16, [9; 32]);
    let right = encode("alice", "pässwörd");
    let wrong = encode("alice", "wrong");
    let run = |cache: &mut AuthCache, users: &UserFile, auth: &str, now: i64| {
        let mut ctx = Context {
            backend: Some(Backend {
                kind: BackendKind::Htpasswd,
                users: Some(users),
            }),
            cache: Some(cache),
            key: &key,
            extern_authn: false,
        };
        matches!(
            check(
                &r,
                &mut ctx,
                &AuthRequest {
                    now,
                    ..req(Some(auth))
                }
            ),
            Outcome::Granted(_)
        )
    };
    assert!(!run(&mut cache, &users, &wrong, 0));
    assert!(cache.is_empty(), "failures are not cached");
    assert!(run(&mut cache, &users, &right, 0));
    assert_eq!(cache.len(), 1);
    assert!(
        !run(&mut cache, &users, &wrong, 1),
        "a wrong password never hits the right one's entry"
    );
    let g = users.generation();
    assert!(
        cache.hit(r.id, g, "alice", "pässwörd".as_bytes(), 600),
        "within max-age"
    );
    assert!(
        !cache.hit(r.id, g, "alice", "pässwörd".as_bytes(), 601),
        "past max-age"
    );
    assert!(
        !cache.hit(r.id + 1, g, "alice", "pässwörd".as_bytes(), 1),
        "another rule"
    );

    // A file whose password changed: the old password stops working at once.
    assert!(run(&mut cache, &users, &right, 10));
    users = UserFile::parse(
        BackendKind::Htpasswd,
        "h",
        b"alice:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\n",
    )
    .0;
    assert_ne!(users.generation(), g);
    assert!(
        !run(&mut cache, &users, &right, 11),
        "the old entry must not grant"
    );
    assert!(run(&mut cache, &users, &encode("alice", "hunter2"), 11));
}

#[test]
fn the_cache_is_bounded_and_expires() {
    let mut c = AuthCache::with_key(CacheOptions { max_age: 10 }, 3, [1; 32]);
    for (i, user) in ["a", "b", "c", "d"].iter().enumerate() {
        c.insert(1, 1, user, b"pw", i as i64);
    }
    assert_eq!(c.len(), 3, "bounded");
    assert!(!c.hit(1, 1, "a", b"pw", 4), "the oldest went first");
    assert!(c.hit(1, 1, "d", b"pw", 4));
    assert!(!c.hit(1, 2, "d", b"pw", 4), "another file generation");
    c.expire(12);
    assert_eq!(c.len(), 2, "b (t=1) expired at 12, c and d stay");
    c.expire(100);
    assert!(c.is_empty());
}
