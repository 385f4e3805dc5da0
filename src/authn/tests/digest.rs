//! Digest: the header grammar, RFC 7616's vectors, nonces, the flow.

use crate::authn::digest::DigestAlgorithm::{self, Md5, Sha256, Sha512_256};
use crate::authn::digest::{decode_ext_value, expected_response, parse_params, Hashed, MAX_PARAMS};
use crate::authn::nonce::{NonceCheck, NonceKey};

fn v(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

#[test]
fn auth_param_grammar() {
    // RFC 7616 section 3.9.1's request, as a browser sends it.
    let rfc = r#"username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", algorithm=MD5, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, response="8ca523f5e9506fed4657c9700eebdbec", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#;
    let p = parse_params(rfc.as_bytes()).expect("RFC example");
    assert_eq!(
        (p.username, p.realm, p.uri),
        (
            v("Mufasa"),
            v("http-auth@example.org"),
            v("/dir/index.html")
        )
    );
    assert_eq!(
        (p.algorithm, p.nc, p.qop),
        (v("MD5"), v("00000001"), v("auth"))
    );
    assert_eq!(p.response, v("8ca523f5e9506fed4657c9700eebdbec"));

    let ok: &[(
        &str,
        &str,
        fn(&crate::authn::digest::DigestParams) -> Option<Vec<u8>>,
        &str,
    )] = &[
        (
            "escapes undone",
            r#"username="a\"b\\c""#,
            |p| p.username.clone(),
            "a\"b\\c",
        ),
        (
            "comma inside quotes",
            r#"username="a, realm=x""#,
            |p| p.username.clone(),
            "a, realm=x",
        ),
        (
            "names case-blind",
            r#"UserName="u""#,
            |p| p.username.clone(),
            "u",
        ),
        (
            "whitespace around =",
            "realm = \"r\" ,nonce\t=\tn",
            |p| p.nonce.clone(),
            "n",
        ),
        (
            "empty list items",
            ",, realm=\"r\",,",
            |p| p.realm.clone(),
            "r",
        ),
        (
            "empty quoted value",
            r#"cnonce="""#,
            |p| p.cnonce.clone(),
            "",
        ),
        (
            "username*",
            "username*=UTF-8''J%C3%A4s%C3%B8n%20Doe",
            |p| p.username_star.clone(),
            "UTF-8''J%C3%A4s%C3%B8n%20Doe",
        ),
        (
            "unknown skipped",
            r#"opaque="x", foo=bar, realm=r"#,
            |p| p.realm.clone(),
            "r",
        ),
    ];
    for (what, text, get, want) in ok {
        let p = parse_params(text.as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(get(&p), v(want), "{what}");
    }
    let many = (0..=MAX_PARAMS)
        .map(|i| format!("x{i}=1"))
        .collect::<Vec<_>>()
        .join(",");
    let bad: &[(&str, String, &str)] = &[
        (
            "given twice",
            r#"realm="a", realm="b""#.into(),
            "given twice",
        ),
        (
            "twice across case",
            r#"realm="a", REALM="b""#.into(),
            "given twice",
        ),
        ("no =", "realm \"a\"".into(), "no '='"),
        ("no value", "realm=, nonce=x".into(), "no value"),
        ("unterminated", "realm=\"abc".into(), "unterminated"),
        (
            "CR in quotes",
            "realm=\"a\r\nb\"".into(),
            "control character",
        ),
        ("junk after value", "realm=\"a\" b=c".into(), "expected ','"),
        ("not a token", "=x".into(), "parameter name"),
        ("too many", many, "more than 32"),
        (
            "too long",
            format!("realm=\"{}\"", "a".repeat(16 * 1024)),
            "longer than",
        ),
    ];
    for (what, text, needle) in bad {
        match parse_params(text.as_bytes()) {
            Ok(p) => panic!("{what}: accepted {p:?}"),
            Err(e) => assert!(e.contains(needle), "{what}: {e:?} lacks {needle:?}"),
        }
    }
}

#[test]
fn ext_value_usernames() {
    let cases: &[(&[u8], Result<&str, &str>)] = &[
        (b"UTF-8''J%C3%A4s%C3%B8n%20Doe", Ok("Jäsøn Doe")),
        (b"utf-8'en'plain", Ok("plain")),
        (b"ISO-8859-1''J%E4s%F8n", Ok("Jäsøn")),
        (b"UTF-8''%E4", Err("invalid UTF-8")),
        (b"UTF-8''a%0Ab", Err("ctrl chars")),
        (b"UTF-8''a%zz", Err("%-escape")),
        (b"UTF-8''a%4", Err("%-escape")),
        (b"KOI8-R''x", Err("charset")),
        (b"UTF-8'x", Err("ext-value")),
    ];
    for (input, want) in cases {
        match (decode_ext_value(input), want) {
            (Ok(got), Ok(w)) => assert_eq!(&got, w),
            (Err(e), Err(needle)) => assert!(e.contains(needle), "{e} lacks {needle}"),
            (got, _) => panic!("{}: got {got:?}", String::from_utf8_lossy(input)),
        }
    }
    let long = format!("UTF-8''{}", "a".repeat(257));
    assert_eq!(
        decode_ext_value(long.as_bytes()),
        Err("invalid \"username*\" too long")
    );
}

#[test]
fn responses_match_rfc_7616_and_python_hashlib() {
    // RFC 7616 section 3.9.1 (MD5 and SHA-256 values printed in the RFC);
    // the -sess, no-qop and SHA-512-256 values come from Python's hashlib
    // (the RFC's printed SHA-512-256 example values do not match SHA-512/256).
    let mufasa = |a: DigestAlgorithm| a.ha1(b"Mufasa", b"http-auth@example.org", b"Circle of Life");
    let (n, c) = (
        &b"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v"[..],
        &b"f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"[..],
    );
    let q = Some(&b"auth"[..]);
    let cases: &[(&str, DigestAlgorithm, bool, Option<&[u8]>, &str)] = &[
        ("RFC MD5", Md5, false, q, "8ca523f5e9506fed4657c9700eebdbec"),
        (
            "RFC SHA-256",
            Sha256,
            false,
            q,
            "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
        ),
        ("MD5-sess", Md5, true, q, "e783283f46242139c486a698fec7211d"),
        (
            "RFC 2069, no qop",
            Md5,
            false,
            None,
            "7b2cc3b30e75b4777ea31027084363fd",
        ),
    ];
    for (what, algo, sess, qop, want) in cases {
        let got = expected_response(
            *algo,
            *sess,
            &mufasa(*algo),
            n,
            c,
            b"00000001",
            *qop,
            b"GET",
            b"/dir/index.html",
        );
        assert_eq!(got.hex(), *want, "{what}");
    }
    assert_eq!(
        mufasa(Sha256).hex(),
        "7987c64c30e25f1b74be53f966b49b90f2808aa92faf9a00262392d7b4794232"
    );
    let jason = "Jäsøn Doe".as_bytes();
    let uh = Sha512_256.hash(&[jason, b":api@example.org"]);
    assert_eq!(
        uh.hex(),
        "793263caabb707a56211940d90411ea4a575adeccb7e360aeb624ed06ece9b0b"
    );
    let ha1 = Sha512_256.ha1(jason, b"api@example.org", b"Secret, or not?");
    let got = expected_response(
        Sha512_256,
        false,
        &ha1,
        b"5TsQWLVdgBdmrQ0XsxbDODV+57QdFR34I9HAbC/RVvkK",
        b"NTg6RKcb9boFIAS3KrFK9BGeh+iDa/sm6jUMp2wds69v",
        b"00000001",
        q,
        b"GET",
        b"/doe.json",
    );
    assert_eq!(
        got.hex(),
        "3798d4131c277846293534c3edc11bd8a5e4cdcbff78b05db9d95eeb1cec68a5"
    );
    assert_eq!(Hashed::from_slice(&[0; 33]), None);
}

#[test]
fn hmac_sha256_matches_rfc_4231() {
    // Test case 2 has a 4-byte key; HMAC pads keys with zeros to the block,
    // so it equals the same key zero-padded to 32 bytes. Test case 1: 20 x 0x0b.
    let mut k1 = [0u8; 32];
    k1[..20].fill(0x0b);
    let mut k2 = [0u8; 32];
    k2[..4].copy_from_slice(b"Jefe");
    let cases: &[([u8; 32], &[&[u8]], &str)] = &[
        (
            k1,
            &[b"Hi There"],
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        ),
        (
            k2,
            &[b"what do ya want ", b"for nothing?"],
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        ),
    ];
    for (key, parts, want) in cases {
        assert_eq!(
            crate::syntax::hex_string(&crate::authn::hmac_sha256(key, parts)),
            *want
        );
    }
}

#[test]
fn nonces_need_no_table() {
    let key = NonceKey::from_bytes([3; 32]);
    let t = 1_700_000_000;
    let n = key.make_with(t, 0xdead_beef, Sha256, "R");
    assert!(
        n.starts_with("6553f100:deadbeef:") && n.len() == 8 + 1 + 8 + 1 + 32,
        "{n}"
    );
    let mut tampered_ts = n.clone().into_bytes();
    tampered_ts[7] = b'1';
    let other_key = NonceKey::from_bytes([4; 32]);
    let cases: Vec<(
        &str,
        &NonceKey,
        Vec<u8>,
        DigestAlgorithm,
        &str,
        i64,
        NonceCheck,
    )> = vec![
        (
            "fresh",
            &key,
            n.clone().into(),
            Sha256,
            "R",
            t,
            NonceCheck::Valid { age: 0 },
        ),
        (
            "600 s old",
            &key,
            n.clone().into(),
            Sha256,
            "R",
            t + 600,
            NonceCheck::Valid { age: 600 },
        ),
        (
            "601 s old",
            &key,
            n.clone().into(),
            Sha256,
            "R",
            t + 601,
            NonceCheck::Stale,
        ),
        (
            "from the future",
            &key,
            n.clone().into(),
            Sha256,
            "R",
            t - 1,
            NonceCheck::Stale,
        ),
        (
            "timestamp edited",
            &key,
            tampered_ts,
            Sha256,
            "R",
            t,
            NonceCheck::Forged,
        ),
        (
            "other realm",
            &key,
            n.clone().into(),
            Sha256,
            "R2",
            t,
            NonceCheck::Forged,
        ),
        (
            "other algorithm",
            &key,
            n.clone().into(),
            Md5,
            "R",
            t,
            NonceCheck::Forged,
        ),
        (
            "other key",
            &other_key,
            n.clone().into(),
            Sha256,
            "R",
            t,
            NonceCheck::Forged,
        ),
        (
            "lighttpd's form",
            &key,
            b"6553f100:0123456789abcdef0123456789abcdef".to_vec(),
            Sha256,
            "R",
            t,
            NonceCheck::Malformed,
        ),
        (
            "empty",
            &key,
            Vec::new(),
            Sha256,
            "R",
            t,
            NonceCheck::Malformed,
        ),
        (
            "17 hex of time",
            &key,
            format!("000000000{n}").into(),
            Sha256,
            "R",
            t,
            NonceCheck::Malformed,
        ),
    ];
    for (what, k, nonce, algo, realm, now, want) in cases {
        assert_eq!(k.check(&nonce, algo, realm, now), want, "{what}");
    }
    assert_ne!(
        key.make(t, Md5, "R"),
        key.make(t, Md5, "R"),
        "random part differs"
    );
    let s1 = NonceKey::from_secret("s");
    assert_eq!(
        NonceKey::from_secret("s").check(s1.make(t, Md5, "R").as_bytes(), Md5, "R", t),
        NonceCheck::Valid { age: 0 }
    );
}
