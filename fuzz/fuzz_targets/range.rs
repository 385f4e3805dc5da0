//! The Range parser never panics, and every range it returns lies inside
//! the file: first <= last < len.
#![no_main]

use glint::msg::range::{parse_range, RangeRequest, MAX_RANGES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Eight bytes of file length (small lengths are the interesting ones),
    // then the header value.
    if data.len() < 8 {
        return;
    }
    let (len, header) = data.split_at(8);
    let raw = u64::from_le_bytes(len.try_into().unwrap_or([0; 8]));
    let len = match raw & 3 {
        0 => raw >> 2 & 0xff,
        1 => raw >> 2 & 0xffff,
        2 => raw >> 2,
        _ => u64::MAX - (raw >> 2 & 0xff),
    };
    if let RangeRequest::Ranges(parts) = parse_range(header, len) {
        assert!(!parts.is_empty());
        assert!(parts.len() <= MAX_RANGES);
        for (first, last) in parts {
            assert!(first <= last && last < len, "{first}-{last} of {len}");
        }
    }
});
