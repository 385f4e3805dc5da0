//! Accept-Encoding, the compress decision, Vary, variant ETags, If-None-Match.

use super::negotiate::*;
use super::*;

const DEFAULT_GROUPS: &[u8] = &[1, 2, 4 | 8 | 16];

#[test]
fn accept_encoding_table() {
    use Coding::*;
    let cases: &[(&str, Option<Coding>, &str)] = &[
        (
            "gzip, deflate, br, zstd",
            Some(Zstd),
            "Chrome: lighttpd's order puts zstd first",
        ),
        ("gzip, deflate, br", Some(Br), "Firefox before zstd"),
        (
            "gzip, deflate",
            Some(Gzip),
            "curl --compressed without brotli",
        ),
        ("deflate", Some(Deflate), "deflate alone"),
        ("x-gzip", Some(XGzip), "answered under the client's name"),
        ("x-gzip, gzip", Some(Gzip), "gzip named too: gzip"),
        ("GZip", Some(Gzip), "tokens are case-insensitive"),
        (
            "br;q=0, gzip",
            Some(Gzip),
            "q=0 refuses (lighttpd would send br)",
        ),
        ("zstd;q=0.5, gzip", Some(Gzip), "weight beats preference"),
        (
            "br;q=0.9, gzip;q=0.9",
            Some(Br),
            "a tie goes to the preference order",
        ),
        (
            "gzip ; q=0.001",
            Some(Gzip),
            "spaces and the smallest weight",
        ),
        ("*", Some(Zstd), "* takes the first preference"),
        ("*;q=0", None, "nothing acceptable"),
        ("gzip;q=0, *", Some(Zstd), "* covers what is not named"),
        ("*;q=0.1, gzip", Some(Gzip), "named beats *"),
        ("gzip;q=0, *;q=0.5", Some(Zstd), ""),
        (
            "zstd;q=0, br;q=0, *",
            Some(Gzip),
            "* reaches gzip once zstd and br are refused",
        ),
        ("identity", None, "identity only"),
        ("gzip;q=0.5, identity", None, "identity weighed higher"),
        ("gzip, identity;q=0", Some(Gzip), ""),
        ("", None, "empty: no coding wanted"),
        ("gzip;q=1.5", None, "a malformed weight drops the element"),
        ("gzip;q=0.1234", None, "four decimals are malformed"),
        ("gzip;level=9", Some(Gzip), "other parameters are ignored"),
        ("compress, bzip2", None, "codings glint does not make"),
        (" , ,gzip,, ", Some(Gzip), "empty elements"),
    ];
    for (header, want, why) in cases {
        assert_eq!(
            parse_accept_encoding(header).choose(DEFAULT_GROUPS),
            *want,
            "{header:?}: {why}"
        );
    }
}

#[test]
fn configured_order_breaks_ties() {
    let ae = parse_accept_encoding("br, gzip, zstd");
    assert_eq!(
        ae.choose(&[4 | 8, 2]),
        Some(Coding::Gzip),
        "allowed-encodings = (\"gzip\", \"br\")"
    );
    assert_eq!(ae.choose(&[16]), None, "only deflate allowed, not accepted");
    assert_eq!(ae.choose(&[]), None);
    let ae = parse_accept_encoding("br;q=0.5, gzip");
    assert_eq!(
        ae.choose_among(&[Coding::Br, Coding::Gzip]),
        Some(Coding::Gzip)
    );
    let ae = parse_accept_encoding("x-gzip, br");
    assert_eq!(ae.choose_among(&[Coding::Gzip]), Some(Coding::XGzip));
}

#[test]
fn identity_acceptability() {
    let cases = [
        ("identity;q=0", false),
        ("*;q=0", false),
        ("*;q=0, identity", true),
        ("gzip", true),
        ("", true),
    ];
    for (h, want) in cases {
        assert_eq!(parse_accept_encoding(h).identity_acceptable(), want, "{h}");
    }
}

fn spec() -> DeflateSpec {
    let mut s = DeflateSpec::default();
    let types = OptValue::List(vec![(None, OptValue::Str("text/".into()))]);
    s.apply(&[
        ("deflate.mimetypes", &types),
        ("deflate.max-loadavg", &OptValue::Str("4".into())),
    ])
    .unwrap();
    s
}

#[test]
fn decision_table() {
    let base = ResponseFacts {
        status: 200,
        content_type: Some("text/html; charset=utf-8"),
        length: Some(25_000),
        ..Default::default()
    };
    let ae = Some("gzip, br");
    let f = |g: fn(&mut ResponseFacts)| {
        let mut x = base;
        g(&mut x);
        x
    };
    let cases: &[(ResponseFacts, Option<&str>, f64, Decision, &str)] = &[
        (
            base,
            ae,
            0.0,
            Decision::Compress(Coding::Br),
            "the plain case",
        ),
        (
            base,
            None,
            0.0,
            Decision::Identity,
            "no Accept-Encoding: identity, still Vary",
        ),
        (base, Some("identity"), 0.0, Decision::Identity, ""),
        (
            base,
            ae,
            4.5,
            Decision::Identity,
            "over deflate.max-loadavg",
        ),
        (
            f(|x| x.content_encoding = Some("gzip")),
            ae,
            0.0,
            Decision::Skip,
            "already encoded",
        ),
        (f(|x| x.status = 204), ae, 0.0, Decision::Skip, "no body"),
        (f(|x| x.status = 101), ae, 0.0, Decision::Skip, "no body"),
        (
            f(|x| x.status = 304),
            ae,
            0.0,
            Decision::Identity,
            "304 carries the 200's Vary",
        ),
        (
            f(|x| x.status = 206),
            ae,
            0.0,
            Decision::Identity,
            "a range of identity bytes",
        ),
        (
            f(|x| x.request_has_range = true),
            ae,
            0.0,
            Decision::Identity,
            "Range requested",
        ),
        (
            f(|x| x.status = 404),
            ae,
            0.0,
            Decision::Compress(Coding::Br),
            "error pages compress, as lighttpd",
        ),
        (
            f(|x| x.cache_control = Some("max-age=60, No-Transform")),
            ae,
            0.0,
            Decision::Skip,
            "no-transform",
        ),
        (
            f(|x| x.cache_control = Some("no-cache")),
            ae,
            0.0,
            Decision::Compress(Coding::Br),
            "",
        ),
        (
            f(|x| x.length = Some(256)),
            ae,
            0.0,
            Decision::Skip,
            "at min-compress-size",
        ),
        (
            f(|x| x.length = Some(257)),
            ae,
            0.0,
            Decision::Compress(Coding::Br),
            "above it",
        ),
        (
            f(|x| x.length = None),
            ae,
            0.0,
            Decision::Compress(Coding::Br),
            "a stream of unknown length",
        ),
        (
            f(|x| x.content_type = Some("image/png")),
            ae,
            0.0,
            Decision::Skip,
            "type not listed",
        ),
        (
            f(|x| x.content_type = None),
            ae,
            0.0,
            Decision::Skip,
            "no type, first entry not \"\"",
        ),
    ];
    let spec = spec();
    for (facts, ae, load, want, why) in cases {
        let got = decide(&spec, facts, *ae, *load);
        assert_eq!(got, *want, "{facts:?} {ae:?}: {why}");
        assert_eq!(got.vary(), *want != Decision::Skip);
    }
    assert_eq!(
        decide(&DeflateSpec::default(), &base, ae, 0.0),
        Decision::Skip,
        "mimetypes unset"
    );
}

#[test]
fn cacheable_follows_lighttpd() {
    let mut spec = spec();
    let ok = |s: &DeflateSpec| cacheable(s, false, Some("\"a1\""), None, true, 200);
    assert!(!ok(&spec), "no cache-dir");
    spec.cache_dir = Some("/tmp/c".into());
    assert!(ok(&spec));
    assert!(
        !cacheable(&spec, true, Some("\"a1\""), None, true, 200),
        "had its own Vary"
    );
    assert!(
        !cacheable(&spec, false, Some("\"\""), None, true, 200),
        "empty ETag"
    );
    assert!(!cacheable(&spec, false, None, None, true, 200), "no ETag");
    assert!(
        !cacheable(&spec, false, Some("\"a1\""), None, false, 200),
        "not a whole file"
    );
    assert!(!cacheable(&spec, false, Some("\"a1\""), None, true, 206));
    assert!(!cacheable(
        &spec,
        false,
        Some("\"a1\""),
        Some("public, private"),
        true,
        200
    ));
    assert!(!cacheable(
        &spec,
        false,
        Some("\"a1\""),
        Some("no-store"),
        true,
        200
    ));
    assert!(cacheable(
        &spec,
        false,
        Some("\"a1\""),
        Some("max-age=600"),
        true,
        200
    ));
}

#[test]
fn vary_values() {
    assert_eq!(
        vary_with_accept_encoding(None).as_deref(),
        Some("Accept-Encoding")
    );
    assert_eq!(
        vary_with_accept_encoding(Some("")).as_deref(),
        Some("Accept-Encoding")
    );
    assert_eq!(
        vary_with_accept_encoding(Some("Cookie")).as_deref(),
        Some("Cookie,Accept-Encoding")
    );
    assert_eq!(
        vary_with_accept_encoding(Some("cookie, accept-encoding")),
        None
    );
    assert_eq!(vary_with_accept_encoding(Some("*")), None);
    assert!(has_token("a, b=1, c", "B") && !has_token("abc", "b"));
}

#[test]
fn variant_etags() {
    assert_eq!(
        variant_etag("\"3f2a\"", Coding::Gzip).as_deref(),
        Some("\"3f2a-gzip\"")
    );
    assert_eq!(
        variant_etag("W/\"3f2a\"", Coding::Br).as_deref(),
        Some("W/\"3f2a-br\"")
    );
    assert_eq!(
        variant_etag("\"3f2a\"", Coding::XGzip).as_deref(),
        Some("\"3f2a-x-gzip\"")
    );
    assert_eq!(variant_etag("3f2a", Coding::Gzip), None, "unquoted");
    assert_eq!(
        variant_etag("\"3f2a", Coding::Gzip),
        None,
        "no closing quote"
    );
    assert_eq!(variant_etag("\"", Coding::Gzip), None);
}

#[test]
fn if_none_match_against_the_variant() {
    let v = "\"3f2a-gzip\"";
    let cases: &[(&str, bool, &str)] = &[
        ("\"3f2a-gzip\"", true, "exact"),
        ("\"x\", \"3f2a-gzip\"", true, "in a list"),
        ("W/\"3f2a-gzip\"", true, "weak comparison"),
        ("*", true, "any"),
        (" * ", true, ""),
        (
            "\"3f2a\"",
            false,
            "the identity tag is another representation",
        ),
        ("\"3f2a-br\"", false, "another coding"),
        (
            "\"3f2a-gzipx\"",
            false,
            "lighttpd's prefix compare would match; glint does not",
        ),
        ("\"a,b\", \"3f2a-gzip\"", true, "a comma inside a tag"),
        (
            "junk, \"3f2a-gzip\"",
            true,
            "a malformed element is skipped",
        ),
        ("\"3f2a-gzip", false, "unterminated"),
        ("", false, ""),
    ];
    for (header, want, why) in cases {
        assert_eq!(if_none_match(header, v), *want, "{header:?}: {why}");
    }
    assert!(if_none_match("\"3f2a-gzip\"", "W/\"3f2a-gzip\""));
    assert_eq!(variant_precondition(Some(v), v, "GET", 200), Some(304));
    assert_eq!(variant_precondition(Some(v), v, "HEAD", 200), Some(304));
    assert_eq!(variant_precondition(Some(v), v, "POST", 200), Some(412));
    assert_eq!(
        variant_precondition(Some(v), v, "GET", 404),
        None,
        "only 2xx"
    );
    assert_eq!(variant_precondition(Some("\"other\""), v, "GET", 200), None);
    assert_eq!(variant_precondition(None, v, "GET", 200), None);
}

#[test]
fn brotli_modes() {
    let cases = [
        (Some("text/css"), 1),
        (Some("application/javascript"), 1),
        (Some("application/json; charset=utf-8"), 1),
        (Some("application/xhtml+xml"), 1),
        (Some("application/ld+json"), 1),
        (Some("application/ld+json; charset=utf-8"), 0),
        (Some("font/woff2"), 2),
        (Some("image/svg+xml"), 1),
        (Some("application/wasm"), 0),
        (None, 0),
    ];
    for (ct, mode) in cases {
        assert_eq!(brotli_mode_for(ct), mode, "{ct:?}");
    }
}
