use super::ber::{self, BerError, Reader};
use super::filter::{encode, escape_dn_value, escape_value};
use super::{parse_urls, LdapUrl};

#[test]
fn lengths_short_and_long_form() {
    let cases: &[(usize, &[u8], &str)] = &[
        (0, &[0x00], "zero"),
        (127, &[0x7f], "largest short form"),
        (128, &[0x81, 0x80], "smallest long form"),
        (300, &[0x82, 0x01, 0x2c], "two bytes"),
    ];
    for (len, want, what) in cases {
        let mut out = Vec::new();
        ber::put_len(&mut out, *len);
        assert_eq!(&out, want, "{what}");
    }
}

#[test]
fn integers_minimal_twos_complement() {
    let cases: &[(i64, &[u8])] = &[
        (0, &[2, 1, 0]),
        (3, &[2, 1, 3]),
        (127, &[2, 1, 0x7f]),
        (128, &[2, 2, 0, 0x80]),
        (256, &[2, 2, 1, 0]),
        (-1, &[2, 1, 0xff]),
    ];
    for (v, want) in cases {
        let mut out = Vec::new();
        ber::put_int(&mut out, ber::INTEGER, *v);
        assert_eq!(&out, want, "{v}");
        assert_eq!(Reader::new(&out).int(ber::INTEGER), Ok(*v), "{v} back");
    }
}

#[test]
fn anonymous_bind_is_the_well_known_bytes() {
    // As every LDAP client sends it (and Wireshark shows it).
    let mut msg = Vec::new();
    ber::put_with(&mut msg, ber::SEQUENCE, |o| {
        ber::put_int(o, ber::INTEGER, 1);
        ber::put_with(o, 0x60, |o| {
            ber::put_int(o, ber::INTEGER, 3);
            ber::put(o, ber::OCTET_STRING, b"");
            ber::put(o, 0x80, b"");
        });
    });
    assert_eq!(
        msg,
        [0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00]
    );
}

#[test]
fn decoding_refuses_what_it_must() {
    let cases: &[(&[u8], Result<(), BerError>, &str)] = &[
        (&[0x30], Err(BerError::Short), "no length yet"),
        (&[0x30, 0x03, 1], Err(BerError::Short), "content cut"),
        (
            &[0x30, 0x80],
            Err(BerError::Bad("indefinite length")),
            "indefinite",
        ),
        (
            &[0x30, 0x85, 1, 1, 1, 1, 1],
            Err(BerError::Bad("length too long")),
            "5-byte length",
        ),
        (
            &[0x30, 0x84, 0x7f, 0xff, 0xff, 0xff],
            Err(BerError::Bad("element larger than 1 MiB")),
            "2 GiB claimed",
        ),
        (&[0x30, 0x00], Ok(()), "empty sequence"),
    ];
    for (bytes, want, what) in cases {
        assert_eq!(&ber::element(bytes).map(|_| ()), want, "{what}");
    }
}

#[test]
fn filters_encode_as_rfc4511() {
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "(uid=bob)",
            &[0xa3, 0x0a, 4, 3, b'u', b'i', b'd', 4, 3, b'b', b'o', b'b'],
            "equality",
        ),
        ("(cn=*)", &[0x87, 2, b'c', b'n'], "presence"),
        (
            "(&(a=b)(c=d))",
            &[
                0xa0, 0x10, 0xa3, 6, 4, 1, b'a', 4, 1, b'b', 0xa3, 6, 4, 1, b'c', 4, 1, b'd',
            ],
            "and",
        ),
        (
            "(!(a=b))",
            &[0xa2, 0x08, 0xa3, 6, 4, 1, b'a', 4, 1, b'b'],
            "not",
        ),
        (
            "(a=x*y)",
            &[
                0xa4, 0x0b, 4, 1, b'a', 0x30, 0x06, 0x80, 1, b'x', 0x82, 1, b'y',
            ],
            "substrings",
        ),
        (
            "(uid=\\2a)",
            &[0xa3, 0x08, 4, 3, b'u', b'i', b'd', 4, 1, b'*'],
            "an escaped star is a literal star",
        ),
        (
            "uid=bob",
            &[0xa3, 0x0a, 4, 3, b'u', b'i', b'd', 4, 3, b'b', b'o', b'b'],
            "outer parentheses left out",
        ),
    ];
    for (text, want, what) in cases {
        assert_eq!(encode(text).as_deref(), Ok(*want), "{what}");
    }
    for bad in ["(uid=bob", "(=x)", "(a=b))", "(&)", "(a:dn:=x)", "(a=\\zz)"] {
        assert!(encode(bad).is_err(), "{bad} refused");
    }
}

#[test]
fn user_names_cannot_change_a_filter() {
    let cases: &[(&str, &str)] = &[
        ("bob", "bob"),
        ("*", "\\2a"),
        ("bob)(uid=*", "bob\\29\\28uid=\\2a"),
        ("a\\b", "a\\5cb"),
        ("é", "\\c3\\a9"),
    ];
    for (user, want) in cases {
        let mut out = String::new();
        escape_value(&mut out, user);
        assert_eq!(out, *want, "{user}");
        // Whatever the name, the filter is one equality match on uid.
        let f = encode(&format!("(uid={out})")).expect("escaped filter parses");
        assert_eq!(f[0], 0xa3, "{user}: still one equality match");
    }
}

#[test]
fn dn_values_escaped() {
    let cases: &[(&str, &str)] = &[
        ("bob", "bob"),
        ("a,b", "a\\,b"),
        (" x ", "\\ x\\ "),
        ("#x", "\\#x"),
        ("a+b=c", "a\\+b=c"),
    ];
    for (v, want) in cases {
        let mut out = String::new();
        escape_dn_value(&mut out, v);
        assert_eq!(out, *want, "{v}");
    }
}

#[test]
fn urls() {
    let u = |tls, host: &str, port| LdapUrl {
        tls,
        host: host.into(),
        port,
    };
    assert_eq!(
        parse_urls("ldap.example"),
        Ok(vec![u(false, "ldap.example", 389)])
    );
    assert_eq!(
        parse_urls("ldaps://127.0.0.1:1636/ ldap://[::1]:10389"),
        Ok(vec![u(true, "127.0.0.1", 1636), u(false, "::1", 10389)])
    );
    assert!(parse_urls("ldapi://%2frun%2fslapd").is_err());
    assert!(parse_urls("host:notaport").is_err());
    assert!(parse_urls("  ").is_err());
}
