use std::borrow::Cow;

use super::*;

#[test]
fn values_are_written_as_lighttpd_writes_them() {
    let cases: &[(Leaf<'_>, &[u8], &str)] = &[
        (Leaf::Str(Cow::Borrowed("NZ")), b"NZ", "a string"),
        (Leaf::Str(Cow::Borrowed("a\0b")), b"a", "up to a NUL"),
        (
            Leaf::Bytes(Cow::Borrowed(b"ab\x01c")),
            b"ab\x01c",
            "bytes as they are",
        ),
        (Leaf::Bool(true), b"1", "true"),
        (Leaf::Bool(false), b"0", "false"),
        (Leaf::Int(-7), b"-7", "int32"),
        (
            Leaf::UInt(18_446_744_073_709_551_615),
            b"18446744073709551615",
            "uint64",
        ),
        (Leaf::Float(-41.28664), b"-41.28664", "double, %.5f"),
        (
            Leaf::Float(174.775_570_1),
            b"174.77557",
            "rounded to five decimals",
        ),
        (
            Leaf::Float(f64::from(0.1f32)),
            b"0.10000",
            "a float widened",
        ),
        (
            Leaf::Float(-0.0),
            b"-0.00000",
            "negative zero keeps its sign",
        ),
        (Leaf::Float(f64::INFINITY), b"inf", "infinity"),
        (Leaf::Float(f64::NAN), b"nan", "not a number"),
        (
            Leaf::U128(1),
            b"0x01000000000000000000000000000000",
            "uint128: its bytes in memory order",
        ),
    ];
    for (leaf, want, why) in cases {
        assert_eq!(format(leaf), want.to_vec(), "{why}");
    }
}

#[test]
fn names_are_cgi_names_and_paths_are_checked() {
    assert_eq!(cgi_name("GEOIP_COUNTRY_CODE"), "GEOIP_COUNTRY_CODE");
    assert_eq!(cgi_name("g-lower.x9"), "G_LOWER_X9");
    assert_eq!(cgi_name("é"), "__", "each byte of a non-ASCII letter");
    let v = GeoVar::parse("cc", "country/iso_code").expect("a path");
    assert_eq!((v.name.as_str(), v.cgi_name.as_str()), ("cc", "CC"));
    assert_eq!(v.path, ["country", "iso_code"]);
    for bad in ["", "/country", "country/"] {
        assert!(GeoVar::parse("x", bad).is_err(), "{bad:?}");
    }
    assert!(
        GeoVar::parse("x", "a//b").is_ok(),
        "an empty step is lighttpd's too"
    );
}

#[test]
fn only_mmdb_files_open() {
    let e = GeoDb::open("/nonexistent/GeoLite2.dat").expect_err("not .mmdb");
    assert!(e.contains("unsupported type"), "{e}");
    let e = GeoDb::open("/nonexistent/GeoLite2.mmdb").expect_err("missing");
    assert!(e.contains("failed to open GeoIP2 database"), "{e}");
}
