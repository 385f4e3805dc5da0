//! What an upstream HTTP server answers never panics glint, and what glint
//! passes on to the client is well-formed: the answer head parser asks for
//! more or answers with offsets inside the bytes it was given, its framing
//! agrees with its own rules, the header lines for the client hold no
//! hop-by-hop field and no stray CR or LF; the chunked decoder gives the
//! same body whether the bytes arrive whole or split in two.
#![no_main]

use glint::httpup::chunked::Dechunker;
use glint::httpup::options::HeaderOptions;
use glint::httpup::remap::Remap;
use glint::httpup::request::Sent;
use glint::httpup::response::{parse_head, write_client_headers, Framing, Kind, MAX_HEAD};
use libfuzzer_sys::fuzz_target;

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if flags & 0x80 != 0 {
        let split = usize::from(flags).wrapping_mul(7) % (rest.len() + 1);
        let mut whole = Dechunker::default();
        let mut a = Vec::new();
        let ra = whole.feed(rest, |s| a.extend_from_slice(s));
        let mut parts = Dechunker::default();
        let mut b = Vec::new();
        let rb = parts
            .feed(&rest[..split], |s| b.extend_from_slice(s))
            .and_then(|n| {
                if n < split || parts.is_done() {
                    Ok(n)
                } else {
                    parts
                        .feed(&rest[split..], |s| b.extend_from_slice(s))
                        .map(|m| n + m)
                }
            });
        assert_eq!(ra.is_ok(), rb.is_ok(), "{ra:?} {rb:?}");
        if let (Ok(na), Ok(nb)) = (ra, rb) {
            assert_eq!(na, nb);
            assert!(na <= rest.len());
            assert_eq!(a, b);
            assert!(a.len() <= rest.len());
            assert_eq!(whole.is_done(), parts.is_done());
            assert_eq!(whole.trailers(), parts.trailers());
        }
        return;
    }
    let sent = Sent {
        head: flags & 1 != 0,
        upgrade: flags & 2 != 0,
        keep_alive: flags & 4 != 0,
        http10: false,
        chunked_body: false,
        remap: Remap {
            client_host: Some("www.example.com".into()),
            forwarded_host: (flags & 8 != 0).then(|| "backend".into()),
            forwarded_urlpath: (flags & 16 != 0).then_some(0),
            https_remap: flags & 32 != 0,
        },
    };
    let opts = HeaderOptions {
        map_urlpath: pairs(&[("/app/", "/"), ("/x", "")]),
        map_host_request: pairs(&[("-", "backend")]),
        map_host_response: pairs(&[("-", "-"), ("other", "other.example")]),
        https_remap: flags & 32 != 0,
        ..HeaderOptions::default()
    };
    let mut fields = Vec::new();
    let Ok(Some(head)) = parse_head(rest, &sent, &mut fields) else {
        if rest.len() >= MAX_HEAD {
            assert!(
                parse_head(rest, &sent, &mut fields).is_err(),
                "need-more past the bound"
            );
        }
        return;
    };
    assert!(head.head_len <= rest.len() && head.head_len <= MAX_HEAD);
    assert!((100..=999).contains(&head.status));
    assert!(head.version <= 1);
    for f in &fields {
        assert!(f.name.end <= head.head_len && f.value.end <= head.head_len);
        assert!(!f.name(rest).is_empty());
    }
    assert_eq!(
        head.kind == Kind::Switching,
        head.framing == Framing::Tunnel
    );
    if head.kind == Kind::Switching {
        assert!(sent.upgrade && head.status == 101 && !head.reusable);
    }
    if let Framing::Length(n) = head.framing {
        assert_eq!(head.content_length, Some(n));
    }
    if head.reusable {
        assert!(sent.keep_alive && head.framing != Framing::UntilClose);
    }
    if head.framing == Framing::Chunked {
        assert!(head.version == 1 && head.content_length.is_none());
    }
    // A prefix of a complete head is never complete, nor an error.
    let cut = head
        .head_len
        .saturating_sub(1 + usize::from(flags & 0x40 != 0));
    assert!(
        matches!(parse_head(&rest[..cut], &sent, &mut Vec::new()), Ok(None)),
        "prefix {cut}"
    );

    let mut out = Vec::new();
    let mut remap = sent.remap.clone();
    write_client_headers(rest, &head, &fields, &opts, &mut remap, &mut out);
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = line
            .strip_suffix(b"\r")
            .unwrap_or_else(|| panic!("line without CRLF: {line:?}"));
        assert!(!line.contains(&b'\r'), "stray CR in {line:?}");
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .unwrap_or_else(|| panic!("no colon in {line:?}"));
        let name = &line[..colon];
        assert!(!name.is_empty());
        for hop in ["transfer-encoding", "keep-alive", "te", "proxy-connection"] {
            assert!(
                !name.eq_ignore_ascii_case(hop.as_bytes()),
                "{hop} passed to the client"
            );
        }
        if name.eq_ignore_ascii_case(b"connection") {
            assert!(head.kind == Kind::Switching && line == b"Connection: upgrade");
        }
    }
});
