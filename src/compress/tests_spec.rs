//! lighttpd's compression options: defaults, each key's values, the
//! resolution of encoder parameters.

use super::spec::{parse_loadavg, LoadAvg, Params, KEYS};
use super::*;

fn s(v: &str) -> OptValue {
    OptValue::Str(v.to_string())
}

fn list(items: &[&str]) -> OptValue {
    OptValue::List(items.iter().map(|i| (None, s(i))).collect())
}

fn kv(items: &[(&str, OptValue)]) -> OptValue {
    OptValue::List(
        items
            .iter()
            .map(|(k, v)| (Some(k.to_string()), v.clone()))
            .collect(),
    )
}

fn with(key: &str, value: OptValue) -> Result<DeflateSpec, String> {
    let mut spec = DeflateSpec::default();
    spec.apply(&[(key, &value)])?;
    Ok(spec)
}

const G: u8 = 4 | 8; // gzip | x-gzip

#[test]
fn defaults_are_lighttpds() {
    let d = DeflateSpec::default();
    assert!(!d.enabled(), "deflate.mimetypes unset: compression off");
    assert_eq!(d.min_compress_size, 256);
    assert_eq!(d.max_compress_kib, 128 * 1024);
    assert_eq!(d.compression_level, -1);
    assert_eq!(d.work_block_kib, 2048);
    assert_eq!(
        d.allowed,
        vec![
            Coding::Zstd.bit(),
            Coding::Br.bit(),
            G | Coding::Deflate.bit()
        ]
    );
    assert_eq!(d.cache_dir, None);
    assert_eq!(d.out_budget(), 64 * 1024);
    assert!(!d.sync_flush(false));
}

#[test]
fn mimetypes_are_rewritten_and_matched_by_prefix() {
    let spec = with(
        "deflate.mimetypes",
        list(&["text/*", "application/javascript", "*", "image/svg+xml"]),
    )
    .unwrap();
    assert_eq!(
        spec.mimetypes,
        ["text/", "text/javascript", "*", "image/svg+xml"]
    );
    let cases: &[(Option<&str>, bool, &str)] = &[
        (
            Some("text/html; charset=utf-8"),
            true,
            "text/ prefix takes parameters",
        ),
        (Some("text/javascript"), true, "rewritten entry"),
        (
            Some("application/javascript"),
            false,
            "lighttpd rewrote the entry away",
        ),
        (Some("image/svg+xml"), true, "exact"),
        (Some("image/png"), false, "not listed"),
        (Some("Text/html"), false, "byte-exact, as lighttpd"),
        (
            None,
            false,
            "no Content-Type: only when the first entry is \"\"",
        ),
    ];
    for (ct, want, why) in cases {
        assert_eq!(spec.mimetype_matches(*ct), *want, "{ct:?}: {why}");
    }
    let all = with("deflate.mimetypes", list(&["", "text/"])).unwrap();
    assert!(all.mimetype_matches(None) && all.mimetype_matches(Some("image/png")));
    assert!(!with("deflate.mimetypes", list(&[])).unwrap().enabled());
}

#[test]
fn mod_compress_names_map_and_win_in_their_block() {
    let (filetype, mimetypes) = (list(&["text/css"]), list(&["text/html"]));
    let mut spec = DeflateSpec::default();
    // Given in either order, compress.filetype applies after deflate.mimetypes.
    let warnings = spec
        .apply(&[
            ("compress.filetype", &filetype),
            ("deflate.mimetypes", &mimetypes),
        ])
        .unwrap();
    assert_eq!(spec.mimetypes, ["text/css"]);
    assert_eq!(
        warnings,
        ["DEPRECATED: compress.filetype replaced with deflate.mimetypes"]
    );

    let spec = with("compress.max-filesize", OptValue::Int(64)).unwrap();
    assert_eq!(spec.max_compress_kib, 64);
    let spec = with("compress.cache-dir", s("/var/cache/x/")).unwrap();
    assert_eq!(spec.cache_dir.as_deref(), Some("/var/cache/x"));
    let spec = with("compress.max-loadavg", s("3.5")).unwrap();
    assert_eq!(spec.max_loadavg, 3.5);
    let spec = with("compress.allowed-encodings", list(&["gzip"])).unwrap();
    assert_eq!(spec.allowed, vec![G]);
}

#[test]
fn allowed_encodings_as_lighttpd_reads_them() {
    let cases: &[(&[&str], Vec<u8>)] = &[
        (&["brotli", "gzip", "deflate"], vec![2, G, 16]),
        (&["gzip, deflate"], vec![G, 16]),
        (&["x-gzip"], vec![G]),
        (&["zstd", "br"], vec![1, 2]),
        (&[], DeflateSpec::default().allowed),
    ];
    for (names, want) in cases {
        assert_eq!(
            &with("deflate.allowed-encodings", list(names))
                .unwrap()
                .allowed,
            want,
            "{names:?}"
        );
    }
    let e = with("deflate.allowed-encodings", list(&["lzma"])).unwrap_err();
    assert!(
        e.starts_with("deflate.allowed-encodings: unknown encoding \"lzma\""),
        "{e}"
    );
    let mut spec = DeflateSpec::default();
    let w = spec
        .apply(&[("deflate.allowed-encodings", &list(&["bzip2", "gzip"]))])
        .unwrap();
    assert_eq!(spec.allowed, vec![G]);
    assert!(w[0].contains("no bzip2"), "{w:?}");
    assert!(with("deflate.allowed-encodings", s("gzip"))
        .unwrap_err()
        .contains("should have been a list"));
}

#[test]
fn numbers_are_checked_and_named() {
    let bad: &[(&str, OptValue, &str)] = &[
        (
            "deflate.compression-level",
            OptValue::Int(0),
            "between 1 and 9",
        ),
        (
            "deflate.compression-level",
            OptValue::Int(10),
            "out of range",
        ),
        (
            "deflate.compression-level",
            s("high"),
            "expected an integer",
        ),
        (
            "deflate.min-compress-size",
            OptValue::Int(70000),
            "out of range 0 ... 65535",
        ),
        (
            "deflate.max-compress-size",
            OptValue::Int(-1),
            "out of range",
        ),
        (
            "deflate.output-buffer-size",
            OptValue::Int(65536),
            "out of range",
        ),
        ("deflate.work-block-size", list(&["1"]), "got a list"),
        ("deflate.max-loadavg", s("busy"), "expected a load average"),
        ("deflate.max-loadavg", s("-2"), "expected a load average"),
        (
            "deflate.cache-dir",
            OptValue::Int(1),
            "should have been a string",
        ),
        ("deflate.sync-flush", s("sometimes"), "enable"),
        (
            "glint.static-precompressed",
            list(&["deflate"]),
            "unknown coding",
        ),
    ];
    for (key, value, part) in bad {
        let e = with(key, value.clone()).unwrap_err();
        assert!(e.starts_with(key) && e.contains(part), "{key}: {e}");
    }
    assert_eq!(
        with("deflate.compression-level", s("7"))
            .unwrap()
            .compression_level,
        7
    );
    assert_eq!(
        with("deflate.compression-level", OptValue::Int(-1))
            .unwrap()
            .compression_level,
        -1
    );
    assert_eq!(with("deflate.max-loadavg", s("")).unwrap().max_loadavg, 0.0);
    assert_eq!(with("deflate.cache-dir", s("")).unwrap().cache_dir, None);
    let spec = with("glint.static-precompressed", list(&["br", "gzip", "br"])).unwrap();
    assert_eq!(spec.precompressed, [Coding::Br, Coding::Gzip]);
    assert_eq!(
        DeflateSpec::default()
            .set("deflate.bogus", &s("1"))
            .unwrap_err(),
        "deflate.bogus: not a compression option"
    );
    assert_eq!(KEYS.len(), 17);
}

#[test]
fn params_as_lighttpd_parses_them() {
    let spec = with(
        "deflate.params",
        kv(&[
            ("BROTLI_PARAM_QUALITY", OptValue::Int(7)),
            ("brotli_param_lgwin", s("20")),
            ("BROTLI_PARAM_MODE", OptValue::Int(1)),
            ("ZSTD_c_compressionLevel", OptValue::Int(-5)),
            ("ZSTD_c_strategy", OptValue::Int(4)),
            ("ZSTD_c_windowLog", OptValue::Int(18)),
            ("gzip.level", OptValue::Int(4)),
            ("gzip.windowBits", OptValue::Int(12)),
            ("gzip.memLevel", OptValue::Int(5)),
            ("gzip.strategy", OptValue::Int(1)),
        ]),
    )
    .unwrap();
    let want = Params {
        gzip_level: 4,
        gzip_window_bits: 12,
        gzip_mem_level: 5,
        gzip_strategy: 1,
        brotli_quality: 7,
        brotli_lgwin: 20,
        brotli_mode: 1,
        zstd_level: -5,
        zstd_strategy: 4,
        zstd_window_log: 18,
    };
    assert_eq!(spec.params, Some(want));
    let bad: &[(&str, OptValue, &str)] = &[
        (
            "BROTLI_PARAM_QUALITY",
            OptValue::Int(12),
            "invalid value for BROTLI_PARAM_QUALITY",
        ),
        ("BROTLI_PARAM_LGWIN", OptValue::Int(9), "invalid value"),
        ("ZSTD_c_strategy", OptValue::Int(0), "invalid value"),
        ("ZSTD_c_windowLog", OptValue::Int(32), "invalid value"),
        ("gzip.windowBits", OptValue::Int(8), "invalid value"),
        ("gzip.memLevel", OptValue::Int(10), "invalid value"),
        ("gzip.strategy", OptValue::Int(5), "invalid value"),
        ("gzip.level", s("fast"), "expected an integer"),
        (
            "lzma.preset",
            OptValue::Int(1),
            "unrecognized param: lzma.preset",
        ),
    ];
    for (k, v, part) in bad {
        let e = with("deflate.params", kv(&[(k, v.clone())])).unwrap_err();
        assert!(
            e.starts_with("deflate.params") && e.contains(part),
            "{k}: {e}"
        );
    }
    assert!(with("deflate.params", list(&["gzip.level"]))
        .unwrap_err()
        .contains("key => values"));
    let mut spec = DeflateSpec::default();
    let w = spec
        .apply(&[(
            "deflate.params",
            &kv(&[("bzip2.blockSize100k", OptValue::Int(9))]),
        )])
        .unwrap();
    assert!(w[0].contains("no bzip2"), "{w:?}");
}

#[test]
fn encoder_params_resolve_as_lighttpds_stream_init() {
    // compression-level unset, no params: each library's lighttpd default.
    let p = DeflateSpec::default().encoder_params();
    assert_eq!(
        (
            p.gzip_level,
            p.brotli_quality,
            p.zstd_level,
            p.zstd_strategy
        ),
        (6, 5, None, None)
    );
    assert_eq!(
        (
            p.gzip_window_bits,
            p.gzip_mem_level,
            p.gzip_strategy,
            p.brotli_lgwin
        ),
        (15, 8, 0, 22)
    );
    // compression-level 9: gzip level, brotli quality, zstd *strategy*.
    let p = with("deflate.compression-level", OptValue::Int(9))
        .unwrap()
        .encoder_params();
    assert_eq!(
        (
            p.gzip_level,
            p.brotli_quality,
            p.zstd_level,
            p.zstd_strategy
        ),
        (9, 9, None, Some(9))
    );
    // deflate.params present (even empty): compression-level no longer applies.
    let mut spec = DeflateSpec::default();
    spec.apply(&[
        ("deflate.compression-level", &OptValue::Int(9)),
        ("deflate.params", &kv(&[])),
    ])
    .unwrap();
    let p = spec.encoder_params();
    assert_eq!(
        (
            p.gzip_level,
            p.brotli_quality,
            p.zstd_level,
            p.zstd_strategy
        ),
        (6, 5, Some(3), None)
    );
    spec.apply(&[("deflate.params", &kv(&[("gzip.level", OptValue::Int(2))]))])
        .unwrap();
    assert_eq!(spec.encoder_params().gzip_level, 2);
    let p = with("deflate.output-buffer-size", OptValue::Int(100))
        .unwrap()
        .encoder_params();
    assert_eq!(p.out_budget, spec::MIN_OUT_BUDGET);
}

#[test]
fn sizes_flush_and_load() {
    let spec = DeflateSpec::default();
    assert!(
        !spec.size_in_range(256) && spec.size_in_range(257),
        "min is exclusive"
    );
    assert!(spec.size_in_range(128 << 20) && !spec.size_in_range((128 << 20) + 1));
    let small = with("deflate.max-compress-size", OptValue::Int(1)).unwrap();
    assert!(small.size_in_range(1024) && !small.size_in_range(1025));
    let unlimited = with("deflate.max-compress-size", OptValue::Int(0)).unwrap();
    assert!(unlimited.size_in_range(u64::MAX));

    assert!(spec.sync_flush(true), "streamed body, output-buffer-size 0");
    assert!(!with("deflate.output-buffer-size", OptValue::Int(8192))
        .unwrap()
        .sync_flush(true));
    assert!(with("deflate.sync-flush", s("enable"))
        .unwrap()
        .sync_flush(false));
    assert!(!with("deflate.sync-flush", s("disable"))
        .unwrap()
        .sync_flush(true));

    let limited = with("deflate.max-loadavg", s("2.0")).unwrap();
    assert!(!limited.overloaded(2.0) && limited.overloaded(2.01));
    assert!(!spec.overloaded(1e9), "0 = no limit");
}

#[test]
fn loadavg_is_parsed_and_cached() {
    assert_eq!(parse_loadavg("0.52 0.58 0.59 1/389 12345\n"), Some(0.52));
    assert_eq!(parse_loadavg(""), None);
    static READS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut load = LoadAvg::with_source(|| {
        Some(READS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as f64)
    });
    assert_eq!(load.get(100), 0.0);
    assert_eq!(load.get(104), 0.0, "within REFRESH_SECS: cached");
    assert_eq!(load.get(105), 1.0, "refreshed");
    assert_eq!(load.get(50), 2.0, "a clock going back refreshes too");
    let mut failing = LoadAvg::with_source(|| None);
    assert_eq!(failing.get(1), 0.0);
    assert!(LoadAvg::default().get(0) >= 0.0);
}
