//! User files: lines, messages, lookups, dummies, reloads.

use crate::authn::crypt::{PasswordHash, Scheme};
use crate::authn::digest::DigestAlgorithm;
use crate::authn::require::BackendKind;
use crate::authn::userfile::UserFile;

const MD5: DigestAlgorithm = DigestAlgorithm::Md5;

fn parse(kind: BackendKind, text: &[u8]) -> (UserFile, Vec<String>) {
    UserFile::parse(kind, "users", text)
}

#[test]
fn lines_are_read_the_way_lighttpd_reads_them() {
    let long = format!("long:{}\n", "x".repeat(1100));
    let mut text =
        b"# comment\n\nagent007:secret\r\ncolon:pa:ss:word\nnocolon\nagent007:second\n".to_vec();
    text.extend_from_slice(long.as_bytes());
    text.extend_from_slice(b"latin1:\xe9t\xe9\nempty:\nlast:no-newline");
    let (f, msgs) = parse(BackendKind::Plain, &text);
    // (user, password, accepted?)
    let cases: &[(&str, &str, bool)] = &[
        ("agent007", "secret", true),
        ("agent007", "secret\r", false),
        ("agent007", "second", false),
        ("colon", "pa:ss:word", true),
        ("colon", "pa", false),
        ("empty", "", true),
        ("last", "no-newline", true),
        ("long", &"x".repeat(1100), false),
        ("nocolon", "", false),
    ];
    for (user, pw, ok) in cases {
        assert_eq!(
            f.verify_password(user, pw.as_bytes(), "", MD5),
            *ok,
            "{user}:{pw}"
        );
    }
    assert_eq!(f.len(), 4);
    let want: &[&str] = &[
        "users:5: parse error, expected 'username:password'",
        "users:6: user 'agent007' listed again",
        "users:7: line longer than 1024 bytes",
        "users:8: line is not UTF-8",
        "users:9: user 'empty' has an empty password",
    ];
    assert_eq!(msgs.len(), want.len(), "{msgs:#?}");
    for (m, w) in msgs.iter().zip(want) {
        assert!(m.starts_with(w), "{m:?} should start {w:?}");
    }
}

#[test]
fn htpasswd_reports_each_unusable_hash_once_naming_user_and_line() {
    let text = b"alice:$2y$05$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1iS\n\
old:abJnggxhB/yWI\n\
carol:$apr1$UZZIQKhI$QEyWzb69lgQRn8RIkijPa0\n\
yes:$y$j9T$Dj0BRsREa/n9n9kkT6RQc0$tYlMfpxlgSFuKKGkuFTqm.VkJheSiAlY99Yly3wCkU.\n\
dave:{SHA}87u9ZqY9S/F0eUBXjsPQEDUw4h0=\n";
    let (f, msgs) = parse(BackendKind::Htpasswd, text);
    assert_eq!(
        msgs,
        vec![
            "users:2: user 'old' has a DES crypt(3) hash: only the first 8 bytes of the password count (htpasswd -B makes a bcrypt one)"
                .to_string(),
        ]
    );
    let cases: &[(&str, &str, bool)] = &[
        ("alice", "correct horse", true),
        ("alice", "Correct horse", false),
        ("carol", "s3cret:with:colons", true),
        ("dave", "hunter2", true),
        ("old", "password12345", true), // mkpasswd -m descrypt, salt "ab"
        ("old", "password", true),      // DES reads 8 bytes: "password" is all it checks
        ("old", "passwore", false),
        ("yes", "password", true), // by libxcrypt
        ("yes", "passwore", false),
        ("nobody", "correct horse", false),
    ];
    for (user, pw, ok) in cases {
        assert_eq!(
            f.verify_password(user, pw.as_bytes(), "", MD5),
            *ok,
            "{user}:{pw}"
        );
    }
}

#[test]
fn unknown_users_are_checked_against_a_dummy_of_the_commonest_kind() {
    // (file, dummy scheme): the most common kind and cost; the first seen on a tie.
    let bc5 = "$2y$05$JTSsiWoH9qCZ2.cDz8ZPAu5VTHGNfZBYrV4nYFiAA.sTRDpahR1iS";
    let bc4 = "$2y$04$eBxUhJxvjhg4UXhWQ4XDzO41v.Jg6GhcCKnOSlH.ADiReBlN2piJ.";
    let apr = "$apr1$UZZIQKhI$QEyWzb69lgQRn8RIkijPa0";
    let s6 = "$6$rounds=1234$rounds1234$wIRnlJcQZRCWcEDbkzkFYh7c0RN1G8HNuuw/eRMolAZR39F34FECuhgXPNrGR19GDwpqHfIsPu6cPDFtWuX5F0";
    let cases: Vec<(String, Option<Scheme>)> = vec![
        (
            format!("a:{apr}\nb:{bc5}\nc:{bc5}\n"),
            Some(Scheme::Bcrypt { cost: 5 }),
        ),
        (
            format!("a:{bc4}\nb:{bc5}\nc:{bc4}\n"),
            Some(Scheme::Bcrypt { cost: 4 }),
        ),
        (format!("a:{apr}\nb:{bc5}\n"), Some(Scheme::Apr1)),
        (
            format!("a:{s6}\n"),
            Some(Scheme::Sha512Crypt { rounds: 1234 }),
        ),
        ("a:abJnggxhB/yWI\n".to_string(), Some(Scheme::DesCrypt)),
        (
            "a:$y$j9T$Dj0BRsREa/n9n9kkT6RQc0$tYlMfpxlgSFuKKGkuFTqm.VkJheSiAlY99Yly3wCkU.\n"
                .to_string(),
            PasswordHash::parse(
                "$y$j9T$9QwHghd13Odi/dg.VDkbd1$2Ltr8yED.nI.XBgDISp1BSl2Z5lZOXEQLbG8K/Wa/u7",
            )
            .ok()
            .map(|h| h.scheme()),
        ),
        (
            "a:_J9..8YNW/4qpckSRB2o\n".to_string(),
            PasswordHash::parse("_J9..SeyPaNdWfqfNJYY")
                .ok()
                .map(|h| h.scheme()),
        ),
    ];
    for (text, scheme) in cases {
        let (f, _) = parse(BackendKind::Htpasswd, text.as_bytes());
        assert_eq!(f.dummy_scheme(), scheme, "{text}");
        let before = f.dummy_checks();
        assert!(!f.verify_password("nobody", b"correct horse", "", MD5));
        assert!(!f.verify_password("a", b"wrong", "", MD5));
        // The unknown user ran the dummy; the known one did not.
        assert_eq!(
            f.dummy_checks() - before,
            u64::from(scheme.is_some()),
            "{text}"
        );
    }
}

#[test]
fn plain_and_htdigest_unknown_users_take_the_dummy_path_too() {
    let (plain, _) = parse(BackendKind::Plain, b"agent007:secret\n");
    assert!(!plain.verify_password("agent008", b"secret", "", MD5));
    assert!(plain.verify_password("agent007", b"secret", "", MD5));
    assert_eq!(plain.dummy_checks(), 1);
    let ha1 = plain.digest_ha1("agent008", "r", MD5);
    assert!(!ha1.known);
    assert_eq!(plain.dummy_checks(), 2);

    let (htd, _) = parse(
        BackendKind::Htdigest,
        b"agent007:download area:8364d0044ef57b3defcfa141e8f77b65\n",
    );
    assert!(htd.verify_password("agent007", b"secret", "download area", MD5));
    assert_eq!(htd.dummy_checks(), 0);
    assert!(!htd.verify_password("agent008", b"secret", "download area", MD5));
    assert!(!htd.verify_password("agent007", b"secret", "other realm", MD5));
    assert_eq!(htd.dummy_checks(), 2);
}

#[test]
fn htdigest_lines_by_realm_and_length() {
    // 8364d0...: the lighttpd docs' agent007 / "download area" / secret.
    // 7987c6...: RFC 7616's Mufasa / http-auth@example.org / Circle of Life, SHA-256.
    let text = b"agent007:download area:8364d0044ef57b3defcfa141e8f77b65\n\
Mufasa:http-auth@example.org:3d78807defe7de2157e2b0b6573a855f\n\
Mufasa:http-auth@example.org:7987c64c30e25f1b74be53f966b49b90f2808aa92faf9a00262392d7b4794232\n\
short:r:8364d0044ef57b3defcfa141e8f77b6\n\
nothex:r:zz64d0044ef57b3defcfa141e8f77b65\n\
norealm:8364d0044ef57b3defcfa141e8f77b65\n\
agent007:download area:00000000000000000000000000000000\n\
uh:r:8364d0044ef57b3defcfa141e8f77b65:0123456789abcdef0123456789abcdef\n";
    let (f, msgs) = parse(BackendKind::Htdigest, text);
    let starts: &[&str] = &[
        "users:4: user 'short': digest is not 32",
        "users:5: user 'nothex': digest is not 32",
        "users:6: parse error, expected 'username:realm:digest[:userhash]'",
        "users:7: user 'agent007' realm 'download area' listed again",
        "users:8: user 'uh': userhash field is not H(user:realm)",
    ];
    assert_eq!(msgs.len(), starts.len(), "{msgs:#?}");
    for (m, s) in msgs.iter().zip(starts) {
        assert!(m.starts_with(s), "{m:?} should start {s:?}");
    }
    let sha = DigestAlgorithm::Sha256;
    let cases: &[(&str, &str, &str, DigestAlgorithm, bool)] = &[
        ("agent007", "download area", "secret", MD5, true),
        ("agent007", "download area", "secret", sha, false), // no SHA-256 line
        (
            "Mufasa",
            "http-auth@example.org",
            "Circle of Life",
            MD5,
            true,
        ),
        (
            "Mufasa",
            "http-auth@example.org",
            "Circle of Life",
            sha,
            true,
        ),
        (
            "Mufasa",
            "http-auth@example.org",
            "circle of life",
            sha,
            false,
        ),
    ];
    for (user, realm, pw, algo, ok) in cases {
        assert_eq!(
            f.verify_password(user, pw.as_bytes(), realm, *algo),
            *ok,
            "{user} {realm} {algo:?}"
        );
    }
    // userhash: computed H(user:realm) for every line, plus a given 4th field.
    let uh = MD5.hash(&[b"agent007:download area"]).hex();
    assert_eq!(
        f.resolve_userhash("download area", MD5, &uh).as_deref(),
        Some("agent007")
    );
    assert_eq!(f.resolve_userhash("other", MD5, &uh), None);
    assert_eq!(
        f.resolve_userhash("r", MD5, "0123456789abcdef0123456789abcdef")
            .as_deref(),
        Some("uh")
    );
}

/// A user file's path in a directory of its own, removed with it.
struct TempUsers(std::path::PathBuf);

impl TempUsers {
    fn path(&self) -> std::path::PathBuf {
        self.0.join("users")
    }
}

impl Drop for TempUsers {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_path(name: &str) -> TempUsers {
    let dir = std::env::temp_dir().join(format!("glint-authn-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempUsers(dir)
}

#[test]
fn reload_if_changed_picks_up_edits_and_survives_a_missing_file() {
    let dir = temp_path("reload");
    let path = dir.path();
    std::fs::write(&path, "a:one\n").expect("write");
    let (mut f, msgs) = UserFile::load(BackendKind::Plain, &path).expect("load");
    assert!(msgs.is_empty());
    let g0 = f.generation();
    assert!(f.verify_password("a", b"one", "", MD5));

    assert!(
        f.reload_if_changed(100).is_empty(),
        "unchanged: nothing to say"
    );
    assert_eq!(f.generation(), g0);
    // A rewrite (new inode, as htpasswd does it) with another size.
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, "a:two\nb:three\nbad\n").expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
    assert!(f.reload_if_changed(100).is_empty(), "same second: no stat");
    let msgs = f.reload_if_changed(101);
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(msgs[0].ends_with("changed on disk, reloaded"));
    assert!(msgs[1].contains(":3: parse error"));
    assert!(f.generation() > g0);
    assert!(!f.verify_password("a", b"one", "", MD5));
    assert!(f.verify_password("b", b"three", "", MD5));

    std::fs::remove_file(&path).expect("rm");
    let msgs = f.reload_if_changed(102);
    assert!(
        msgs.len() == 1 && msgs[0].contains("nobody can log in"),
        "{msgs:?}"
    );
    assert!(!f.verify_password("b", b"three", "", MD5));
    assert!(
        f.reload_if_changed(103).is_empty(),
        "said once, not every second"
    );

    std::fs::write(&path, "c:four\n").expect("write");
    assert_eq!(f.reload_if_changed(104).len(), 1);
    assert!(f.verify_password("c", b"four", "", MD5));
}

#[test]
fn load_refuses_missing_and_oversized_files() {
    let dir = temp_path("big");
    let path = dir.path();
    let err = UserFile::load(BackendKind::Plain, &path).expect_err("missing");
    assert!(err.contains("cannot read user file"), "{err}");
    let file = std::fs::File::create(&path).expect("create");
    // Sparse: no 64 MiB is written.
    file.set_len(64 * 1024 * 1024 + 1).expect("set_len");
    let err = UserFile::load(BackendKind::Plain, &path).expect_err("too big");
    assert!(err.contains("over the 67108864-byte limit"), "{err}");
}
