//! What a backend sends never panics glint: FastCGI records decode to pieces
//! inside the bytes they came in, the CGI head parser answers with a status
//! a client may see (or asks for more), and the chunked decoder gives the
//! same body whether the bytes arrive whole or split in two; the answer to
//! FCGI_GET_VALUES decodes or is refused.
#![no_main]

use glint::upstream::cgi::parse_head;
use glint::upstream::fastcgi::{decode, decode_values, Piece};
use glint::proto::h1::chunked::Decoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        3 => {
            // GET_VALUES_RESULT: any answer, or none, never a panic.
            let _ = decode_values(rest);
        }
        0 => {
            let mut used = 0;
            while let Ok(Some((piece, n))) = decode(&rest[used..]) {
                assert!(n >= 8 && used + n <= rest.len(), "record of {n} at {used}");
                if let Piece::Stdout(d) | Piece::Stderr(d) = piece {
                    assert!(d.len() + 8 <= n);
                }
                used += n;
            }
        }
        1 => {
            if let Ok(Some((head, n))) = parse_head(rest) {
                assert!(n <= rest.len());
                assert!((100..=999).contains(&head.status), "{}", head.status);
                for (name, value) in &head.headers {
                    assert!(!name.is_empty());
                    assert!(!value.iter().any(|&b| b == b'\r' || b == b'\n'));
                }
            }
        }
        _ => {
            let split = (which as usize).wrapping_mul(7) % (rest.len() + 1);
            let mut whole = Decoder::default();
            let mut a = Vec::new();
            let ra = whole.decode(rest, &mut a);
            let mut parts = Decoder::default();
            let mut b = Vec::new();
            let rb = parts.decode(&rest[..split], &mut b).and_then(|n| {
                if n < split || parts.is_done() {
                    Ok(n)
                } else {
                    parts.decode(&rest[split..], &mut b).map(|m| n + m)
                }
            });
            assert_eq!(ra.is_ok(), rb.is_ok(), "{ra:?} {rb:?}");
            if let (Ok(na), Ok(nb)) = (ra, rb) {
                assert_eq!(na, nb);
                assert_eq!(a, b);
                assert_eq!(whole.is_done(), parts.is_done());
            }
        }
    }
});
