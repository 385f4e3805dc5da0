//! Password hash vectors, each made by a real tool on Debian 13 (the tool
//! is named per case) and committed as a literal.

use crate::authn::crypt::{md5_crypt, PasswordHash, Scheme};

/// (source, stored hash, right password, scheme it parses to)
const VECTORS: &[(&str, &str, &str, Scheme)] = &[
    ("htpasswd -nbB", "$2y$05$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1iS", "correct horse", Scheme::Bcrypt { cost: 5 }),
    ("htpasswd -nbB -C 4, UTF-8 password", "$2y$04$eBxUhJxvjhg4UXhWQ4XDzO41v.Jg6GhcCKnOSlH.ADiReBlN2piJ.", "pässwörd", Scheme::Bcrypt { cost: 4 }),
    ("mkpasswd -m bcrypt -R 4", "$2b$05$jWpANz/ZlZFKUZ4sFAG/neF1bvxvFO3/LxTdyDypsdcnemlVINdMq", "correct horse", Scheme::Bcrypt { cost: 5 }),
    ("mkpasswd -m bcrypt-a", "$2a$05$.oycM5m8XLnFXnk4pGfopO/SnlZNIY5kN46mu8f.TrENKdKFYEVNm", "tr0ub4dor&3", Scheme::Bcrypt { cost: 5 }),
    ("htpasswd -nbm, ':' in password", "$apr1$UZZIQKhI$QEyWzb69lgQRn8RIkijPa0", "s3cret:with:colons", Scheme::Apr1),
    ("htpasswd -nbm, empty password", "$apr1$i/kwbcpB$aNb6YMzjAVZbvCQtSKues0", "", Scheme::Apr1),
    ("openssl passwd -apr1 -salt 12345678", "$apr1$12345678$9pHAGSBYtlmFtid2xxNog0", "password", Scheme::Apr1),
    ("openssl passwd -apr1 -salt ab", "$apr1$ab$0iE1Uw5jyIcuhGRkN3tEJ.", "short salt", Scheme::Apr1),
    ("openssl passwd -apr1, 71-byte password", "$apr1$longpw$gAwJ79seSs8LS4E/t.tY//", LONG, Scheme::Apr1),
    ("openssl passwd -1 -salt abcdefgh", "$1$abcdefgh$G//4keteveJp0qb8z2DxG/", "password", Scheme::Md5Crypt),
    ("openssl passwd -1 -salt x", "$1$x$P8VObTrxaqT4VBmnH06P8.", "a", Scheme::Md5Crypt),
    ("mkpasswd -m md5crypt, empty password", "$1$saltsalt$5Jhcit4zN9UlGiA0txPkO0", "", Scheme::Md5Crypt),
    ("openssl passwd -1, 71-byte password", "$1$longpw$dtz3jezIDnDV8S3UJOUVA1", LONG, Scheme::Md5Crypt),
    ("htpasswd -nbs", "{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=", "hunter2", Scheme::Sha1),
    ("htpasswd -nbs, empty password", "{SHA}2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "", Scheme::Sha1),
    ("openssl passwd -5 -salt saltstring", "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5", "Hello world!", Scheme::Sha256Crypt { rounds: 5000 }),
    ("mkpasswd -R 5000: rounds= spelled out", "$5$rounds=5000$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5", "Hello world!", Scheme::Sha256Crypt { rounds: 5000 }),
    ("mkpasswd -m sha256crypt -R 1000", "$5$rounds=1000$roundsalt$cknmB4iY4fPgGHuxMWKKOYKtkh7IlIf2XIAaGzAi0U.", "rounds test", Scheme::Sha256Crypt { rounds: 1000 }),
    ("openssl passwd -5, random salt", "$5$VtGJOGT7G38FFdys$JIiySAK4o9VWk5m1Mwx7LytX/dMDcxHNIU/haBfFEy/", "x", Scheme::Sha256Crypt { rounds: 5000 }),
    ("openssl passwd -5, 21-char salt cut to 16", "$5$saltsaltsaltsalt$IQ0N6RK2au3e1ZIwmwiPPApabNT2vPdu/yM1ENpq4b/", "truncated salt", Scheme::Sha256Crypt { rounds: 5000 }),
    ("openssl passwd -5, 71-byte password", "$5$longpw$qmzQIB3qbhQKmCOu9B027dmi5RcO2/WZ0cz5Fv9a2oD", LONG, Scheme::Sha256Crypt { rounds: 5000 }),
    ("openssl passwd -6 -salt saltsalt", "$6$saltsalt$pauPrmdmG4BTE9h2HPmywiw152IFch6BJCEsaY6D.PLTfpV8sqvXwWdyfsgVgozkYH9B80bAip/08R2BPH2xk/", "pw", Scheme::Sha512Crypt { rounds: 5000 }),
    ("mkpasswd -m sha512crypt -R 10000", "$6$rounds=10000$sixteencharsalt.$wZmiCCX8kyY0zXwkRPM2GgToKN1EIjdisca7px3yZW6NdcRMQ5GXUNhdjFImTPmxzU6VjDqwc.iOdFbEYfjXz/", "long password with spaces and more than sixteen bytes", Scheme::Sha512Crypt { rounds: 10000 }),
    ("mkpasswd -m sha512crypt -R 1234", "$6$rounds=1234$rounds1234$wIRnlJcQZRCWcEDbkzkFYh7c0RN1G8HNuuw/eRMolAZR39F34FECuhgXPNrGR19GDwpqHfIsPu6cPDFtWuX5F0", "rounds 1234", Scheme::Sha512Crypt { rounds: 1234 }),
    ("mkpasswd -m sha512crypt, empty password", "$6$emptypwsalt$AzcGJVAIwWNgdKQ.zAmYlPGLnSJul80r.xmh5FMY0tgKwrSS3l6Si/gsiBbVjF.HNVj9ou0s7WGNrDZ7sAQ6w0", "", Scheme::Sha512Crypt { rounds: 5000 }),
    ("mkpasswd -m sha512crypt, UTF-8 password", "$6$utf8salt$YooZ9inTimOFF9jMRnLZfKAzNjsKDivxCEhrSfyGVhqrqAcci7KDElGuHqcn9rAVKUGIvFtsqIzzsUKo3SUa2/", "pässwörd€", Scheme::Sha512Crypt { rounds: 5000 }),
    ("openssl passwd -6, 71-byte password", "$6$longpw$LIM.z2AswD/E7jLCHg2W6vBpnMUKczFnMOTrv6WcwVJLj2UIiOfDI0zzFzdZ9gS33G51Znb0dl29v8RyiisGh/", LONG, Scheme::Sha512Crypt { rounds: 5000 }),
];

/// 71 bytes: longer than one SHA-512 block of output (64), so every
/// "for each whole digest" loop in the crypt algorithms runs more than once.
const LONG: &str = "a password that is longer than sixty-four bytes, to cover every branch!";

#[test]
fn real_vectors_verify_and_near_misses_do_not() {
    for &(source, stored, pw, scheme) in VECTORS {
        let h = PasswordHash::parse(stored)
            .unwrap_or_else(|e| panic!("{source}: {stored} refused: {e:?}"));
        assert_eq!(h.scheme(), scheme, "{source}");
        assert!(h.verify(pw.as_bytes()), "{source}: right password refused");
        let mut wrong = pw.as_bytes().to_vec();
        wrong.push(b'x');
        assert!(!h.verify(&wrong), "{source}: password + 'x' accepted");
        if !pw.is_empty() {
            wrong[0] ^= 1;
            assert!(
                !h.verify(&wrong[..pw.len()]),
                "{source}: first byte flipped accepted"
            );
        }
    }
}

#[test]
fn crypt_functions_reproduce_the_tools_strings() {
    // The whole string, as crypt(3) would return it (rounds= kept iff given).
    let cases: &[(&str, String, &str)] = &[
        (
            "openssl -1",
            md5_crypt("$1$", b"password", b"abcdefgh"),
            "$1$abcdefgh$G//4keteveJp0qb8z2DxG/",
        ),
        (
            "openssl -apr1",
            md5_crypt("$apr1$", b"password", b"12345678"),
            "$apr1$12345678$9pHAGSBYtlmFtid2xxNog0",
        ),
        (
            "salt over 8 is cut",
            md5_crypt("$1$", b"password", b"abcdefghXYZ"),
            "$1$abcdefgh$G//4keteveJp0qb8z2DxG/",
        ),
    ];
    for (what, got, want) in cases {
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn bcrypt_truncates_at_72_bytes_like_crypt_blowfish() {
    // htpasswd -nbB grace <72 a's>XYZ
    let h = PasswordHash::parse("$2y$05$IUoyEW5NoAz3K5dlwL.epeS2KJ1cXj5I.HcoTH0J.0CHB1hQiF97u")
        .expect("parses");
    let a72 = "a".repeat(72);
    assert!(h.verify(format!("{a72}XYZ").as_bytes()));
    assert!(
        h.verify(format!("{a72}anything").as_bytes()),
        "bytes past 72 do not count"
    );
    assert!(!h.verify("a".repeat(71).as_bytes()));
}

/// Hashes made by the system's libxcrypt (crypt_gensalt + crypt, as
/// `mkpasswd -m <scheme>` makes them), all of the password "password".
const LIBCRYPT: &[(&str, &str)] = &[
    (
        "yescrypt",
        "$y$j9T$9QwHghd13Odi/dg.VDkbd1$2Ltr8yED.nI.XBgDISp1BSl2Z5lZOXEQLbG8K/Wa/u7",
    ),
    (
        "gost-yescrypt",
        "$gy$j9T$ZxkZvgjU07tsEL6/3kFhA.$rfVFHzyFR/hegM1wXAp8u2WZ51PkAsor9d0rXO8ZQl1",
    ),
    (
        "scrypt",
        "$7$CU..../....g8LHGsCn8LXCqUf4mlRTM0$DqmHe4R7EiYUTA7HfHG2b3YSqqbby4OZnjt8uDvCHuC",
    ),
    (
        "sunmd5",
        "$md5,rounds=71269$hBqg3DgQ$$kXTyqnzOImXPWiCU/.pVG/",
    ),
    ("nt", "$3$$8846f7eaee8fb117ad06bdd830b7586c"),
    ("bsdicrypt", "_J9..SeyPaNdWfqfNJYY"),
    (
        "sha1crypt",
        "$sha1$229881$lBwb1u7mzXggax2tMPIp$Tay0t.jxoD23CdNZGUHhbMNx92Te",
    ),
    (
        "yescrypt (mkpasswd)",
        "$y$j9T$Dj0BRsREa/n9n9kkT6RQc0$tYlMfpxlgSFuKKGkuFTqm.VkJheSiAlY99Yly3wCkU.",
    ),
];

#[test]
fn schemes_only_libcrypt_has_are_checked_by_it() {
    for (what, stored) in LIBCRYPT {
        let h = PasswordHash::parse(stored).unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert!(matches!(h.scheme(), Scheme::Libcrypt(_)), "{what}");
        assert!(h.verify(b"password"), "{what}: right password");
        assert!(!h.verify(b"passwore"), "{what}: wrong password");
        assert!(!h.verify(b""), "{what}: empty password");
        assert!(!h.verify(b"pass\0word"), "{what}: NUL");
        // The dummy costs the same (same setting) and never matches.
        let d = h
            .dummy_like(&[7u8; 64])
            .unwrap_or_else(|| panic!("{what}: dummy"));
        assert_eq!(d.scheme(), h.scheme(), "{what}");
        assert!(!d.verify(b"password"), "{what}: dummy matched");
    }
    // Same cost, other salt: the same kind for the dummy's choice.
    let a = PasswordHash::parse(LIBCRYPT[0].1).expect("yescrypt");
    let b = PasswordHash::parse(LIBCRYPT[7].1).expect("yescrypt");
    assert_eq!(a.scheme(), b.scheme());
}

#[test]
fn formats_glint_cannot_verify_are_named() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "a scheme neither has",
            "$9$abcdefghijklmnop$qrstuvwxyz",
            "unrecognised",
        ),
        ("yescrypt cut short", "$y$j9T", "yescrypt"),
        ("empty", "", "empty"),
        ("junk", "not a hash at all", "unrecognised"),
        (
            "rounds below glibc's clamp",
            "$5$rounds=999$saltsalt$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5",
            "rounds=999",
        ),
        (
            "rounds not a number",
            "$5$rounds=lots$saltsalt$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5",
            "rounds=lots",
        ),
        (
            "SHA salt of 17",
            "$5$saltsaltsaltsaltX$IQ0N6RK2au3e1ZIwmwiPPApabNT2vPdu/yM1ENpq4b/",
            "salt is 17",
        ),
        (
            "SHA digest cut short",
            "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc",
            "not 43",
        ),
        (
            "SHA-512 digest of SHA-256 length",
            "$6$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5",
            "not 86",
        ),
        ("MD5-crypt without digest", "$1$abcdefgh", "no '$'"),
        (
            "MD5-crypt salt of 9",
            "$1$abcdefghi$G//4keteveJp0qb8z2DxG/",
            "salt(<=8)",
        ),
        (
            "{SHA} of 19 bytes",
            "{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4g==",
            "20 bytes",
        ),
        ("{SHA} not base64", "{SHA}***", "20 bytes"),
        (
            "bcrypt cost 03",
            "$2y$03$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1iS",
            "cost",
        ),
        (
            "bcrypt one char short",
            "$2y$05$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1i",
            "60 bytes",
        ),
        (
            "bcrypt stray low bits",
            "$2y$05$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1iT",
            "does not decode",
        ),
        (
            "bcrypt bad character",
            "$2y$05$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1i!",
            "outside",
        ),
    ];
    for (what, stored, needle) in cases {
        match PasswordHash::parse(stored) {
            Ok(h) => panic!("{what}: accepted as {:?}", h.scheme()),
            Err(e) => assert!(
                e.0.contains(needle),
                "{what}: message {:?} lacks {needle:?}",
                e.0
            ),
        }
    }
}

#[test]
fn dummies_have_the_scheme_asked_for_and_never_verify() {
    let random = [0x5au8; 64];
    let schemes = [
        Scheme::Bcrypt { cost: 4 },
        Scheme::Apr1,
        Scheme::Md5Crypt,
        Scheme::Sha1,
        Scheme::Sha256Crypt { rounds: 5000 },
        Scheme::Sha256Crypt { rounds: 1000 },
        Scheme::Sha512Crypt { rounds: 5000 },
    ];
    for s in schemes {
        let d = PasswordHash::dummy(s, &random).unwrap_or_else(|| panic!("{s:?}: no dummy"));
        assert_eq!(d.scheme(), s);
        if let Scheme::Bcrypt { .. } = s {
            // The bcrypt crate must run the hash, not refuse the string early.
            assert_eq!(
                d.stored().map(|t| bcrypt::verify(b"x", t).is_ok()),
                Some(true)
            );
        }
        assert!(!d.verify(b"password"), "{s:?}");
        assert!(!d.verify(b""), "{s:?}");
    }
}

#[test]
fn sha_crypt_dummies_reach_the_digest_compare() {
    use sha_crypt::{Algorithm, PasswordVerifier, ShaCrypt};
    // Every value the last character can take (below 16): it
    // must decode, or the crate refuses before hashing (a faster "no").
    for fill in 0..16u8 {
        let random = [fill; 64];
        for (scheme, algorithm) in [
            (Scheme::Sha256Crypt { rounds: 1000 }, Algorithm::Sha256Crypt),
            (Scheme::Sha512Crypt { rounds: 1000 }, Algorithm::Sha512Crypt),
        ] {
            let d = PasswordHash::dummy(scheme, &random).unwrap_or_else(|| panic!("{fill}"));
            let stored = d.stored().unwrap_or_default();
            let r = ShaCrypt::from(algorithm).verify_password(b"x", stored);
            assert_eq!(
                r,
                Err(sha_crypt::password_hash::Error::PasswordInvalid),
                "{stored}"
            );
        }
    }
}

#[test]
fn sha_crypt_strings_crypt3_never_writes_are_refused_at_load() {
    // The vector "openssl -5" with its last character's unused bits set.
    let bad = "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEcz";
    assert!(PasswordHash::parse(bad).is_err());
    let bad512 = "$6$saltsalt$pauPrmdmG4BTE9h2HPmywiw152IFch6BJCEsaY6D.PLTfpV8sqvXwWdyfsgVgozkYH9B80bAip/08R2BPH2xk5";
    assert!(PasswordHash::parse(bad512).is_err());
}

/// Traditional DES crypt(3) against glibc's: each expected string is what
/// Debian's perl `crypt(PASSWORD, SALT)` (libxcrypt) printed.
#[test]
fn des_crypt_matches_libc() {
    use crate::authn::crypt::des_crypt;
    let cases: &[(&[u8], &[u8], &str)] = &[
        (b"des", b"12", "12tMnfw882VDQ"), // lighttpd's tests/lighttpd.htpasswd
        (b"", b"..", "..X8NBuQ4l6uQ"),
        (b"password12345", b"ab", "abJnggxhB/yWI"),
        (b"password", b"ab", "abJnggxhB/yWI"), // only 8 bytes count
        (b"x", b"zZ", "zZ7ZiWSxfqAtU"),
        (b"\xff\x80abc", b"./", "./Bs2h6RrUuh2"), // the 8th bit of each byte is dropped
    ];
    for (pw, salt, want) in cases {
        assert_eq!(
            des_crypt(pw, salt).as_deref(),
            Some(*want),
            "{:?}",
            String::from_utf8_lossy(pw)
        );
    }
    assert_eq!(des_crypt(b"x", b"a!"), None, "a salt outside the alphabet");
    let h = PasswordHash::parse("12tMnfw882VDQ").expect("a DES hash parses");
    assert_eq!(h.scheme(), Scheme::DesCrypt);
    assert!(h.verify(b"des"));
    assert!(!h.verify(b"det"));
}
