//! Challenges, and the extern method with auth.extern-authn.

use super::flow::{rule, NOW, REALM};
use crate::authn::digest::digest_challenge;
use crate::authn::digest::DigestAlgorithm::{Md5, Sha256};
use crate::authn::nonce::{NonceCheck, NonceKey};
use crate::authn::require::{BackendKind, Method, Require};
use crate::authn::userfile::UserFile;
use crate::authn::{challenge, check, AuthRequest, Backend, Context, Outcome};

#[test]
fn challenges_carry_what_lighttpd_sends() {
    let key = NonceKey::from_bytes([1; 32]);
    let r = rule(&[("algorithm", "MD5|SHA-256"), ("userhash", "enable")]);
    let ch = challenge(&r, &key, NOW);
    assert_eq!(ch.len(), 2);
    for (value, algo) in ch.iter().zip([Sha256, Md5]) {
        let head = format!(
            "Digest realm=\"{REALM}\", charset=\"UTF-8\", algorithm={}, nonce=\"",
            algo.name()
        );
        let rest = value
            .strip_prefix(&head)
            .unwrap_or_else(|| panic!("{value}"));
        let (nonce, tail) = rest.split_once('"').expect("nonce closes");
        assert_eq!(tail, ", qop=\"auth\", userhash=true");
        assert_eq!(
            key.check(nonce.as_bytes(), algo, REALM, NOW),
            NonceCheck::Valid { age: 0 }
        );
    }
    let stale = digest_challenge(&r, &key, NOW, Some(Md5));
    assert!(
        stale.len() == 1
            && stale[0].contains("algorithm=MD5,")
            && stale[0].ends_with("userhash=true, stale=true"),
        "{stale:?}"
    );
    let basic = rule(&[("method", "basic"), ("realm", "a \"q\" \\ b")]);
    assert_eq!(
        challenge(&basic, &key, NOW),
        vec!["Basic realm=\"a \\\"q\\\" \\\\ b\", charset=\"UTF-8\"".to_string()]
    );
    assert!(challenge(&rule(&[("method", "extern")]), &key, NOW).is_empty());
}

#[test]
fn extern_and_extern_authn_use_remote_user() {
    let key = NonceKey::from_bytes([1; 32]);
    let ext = rule(&[("method", "extern"), ("require", "user=cert-user")]);
    let basic = rule(&[("method", "basic"), ("require", "user=cert-user")]);
    let (plain, _) = UserFile::parse(BackendKind::Plain, "p", b"");
    let cases: &[(&str, &Require, Option<&str>, bool, Option<u16>)] = &[
        ("extern, allowed", &ext, Some("cert-user"), false, None),
        (
            "extern, not listed: bare 401",
            &ext,
            Some("other"),
            false,
            Some(401),
        ),
        ("extern, none set", &ext, None, false, Some(401)),
        (
            "basic + extern-authn, allowed",
            &basic,
            Some("cert-user"),
            true,
            None,
        ),
        (
            "basic + extern-authn, not listed: ask",
            &basic,
            Some("other"),
            true,
            Some(401),
        ),
        (
            "basic without extern-authn: ask",
            &basic,
            Some("cert-user"),
            false,
            Some(401),
        ),
    ];
    for (what, rule, remote, extern_authn, status) in cases {
        let req = AuthRequest {
            path: "/",
            method: "GET",
            target: b"/",
            authorization: None,
            remote_user: *remote,
            now: NOW,
        };
        let mut ctx = Context {
            backend: Some(Backend {
                kind: BackendKind::Plain,
                users: Some(&plain),
            }),
            cache: None,
            key: &key,
            extern_authn: *extern_authn,
        };
        let got = check(rule, &mut ctx, &req);
        assert_eq!(got.status(), *status, "{what}: {got:?}");
        if let Outcome::Granted(g) = got {
            assert_eq!(
                (g.user.as_str(), g.auth_type),
                ("cert-user", None),
                "{what}: REMOTE_USER is already set"
            );
        }
        if let Outcome::Unauthorized {
            www_authenticate, ..
        } = check(rule, &mut ctx, &req)
        {
            assert_eq!(
                www_authenticate.is_empty(),
                rule.method == Method::Extern,
                "{what}"
            );
        }
    }
}
