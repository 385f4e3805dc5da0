//! The request-head parser never panics, and a complete head never claims
//! more bytes than it was given.
#![no_main]

use glint::msg::MAX_HEADERS;
use glint::proto::h1::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the head limit, so both the 414/431 paths and
    // complete heads are reached with short inputs.
    let (max_head, input) = match data.split_first() {
        Some((&b, rest)) if b & 1 == 1 => (16 + b as usize * 4, rest),
        Some((_, rest)) => (8192, rest),
        None => (8192, data),
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match parse(input, &mut headers, max_head) {
        Ok(Some(r)) => {
            assert!(r.head_len <= input.len(), "head_len past the input");
            assert!(r.head_len <= max_head, "head_len past max_head");
            assert!(
                r.target.starts_with('/') || r.target == "*",
                "target {:?}",
                r.target
            );
            assert!(r.request_line.len() <= r.head_len);
            assert!(!r
                .host
                .iter()
                .any(|&b| b == b'\r' || b == b'\n' || b == b'/'));
            // The helpers used by the handler must not panic either.
            let _ = (r.path(), r.query(), r.header("range"));
        }
        Ok(None) => assert!(input.len() < max_head, "partial head past max_head"),
        Err(e) => assert!(
            matches!(e.status, 400 | 414 | 417 | 431 | 501 | 505),
            "status {}",
            e.status
        ),
    }
});
