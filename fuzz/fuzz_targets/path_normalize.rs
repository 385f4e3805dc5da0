//! The path normaliser never panics, and every path it accepts stays below
//! the docroot: it starts with '/', has no `..` segment, no NUL, no backslash.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let mut scratch = Vec::new();
    let mut out = String::from("left over");
    if glint::path::normalize(raw, &mut scratch, &mut out).is_ok() {
        assert!(out.starts_with('/'), "{raw:?} -> {out:?}");
        assert!(!out.split('/').any(|s| s == ".."), "{raw:?} -> {out:?}");
        assert!(
            !out.contains('\0') && !out.contains('\\'),
            "{raw:?} -> {out:?}"
        );
        assert!(
            !out.bytes().any(|b| b < 0x20 || b == 0x7f),
            "{raw:?} -> {out:?}"
        );
        assert!(!out.contains("//"), "{raw:?} -> {out:?}");
        // Normalising is idempotent once the escapes are gone.
        if !out.contains('%') {
            let mut again = String::new();
            glint::path::normalize(&out, &mut scratch, &mut again).expect("re-normalise");
            assert_eq!(again, out, "{raw:?}");
        }
    }
});
