//! The configuration parser never panics on any text.
//!
//! `include_shell` runs a shell command, so inputs naming it are skipped;
//! relative includes resolve in an empty temporary directory, and inputs that
//! could include a device or kernel file (an endless `/dev/zero`) are skipped.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn base_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("glint-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp base dir");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.contains("include_shell") {
        return;
    }
    if text.contains("include")
        && ["/dev", "/proc", "/sys", "~", ".."]
            .iter()
            .any(|p| text.contains(p))
    {
        return;
    }
    if let Ok(c) = glint::config::Config::parse_str(text, "fuzz.conf", base_dir()) {
        // Printing back what was parsed must not panic either.
        let _ = c.dump();
    }
});
