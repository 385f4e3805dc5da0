//! The HPACK decoder never panics, never stores past the list cap, keeps
//! its table within its size, and whatever it decodes round-trips through
//! glint's encoder; a Huffman string that decodes encodes back to the same
//! bytes (the code is canonical and padding is fixed, so there is one
//! encoding per string).
#![no_main]

use glint::proto::h2::hpack::{Decoder, Encoder, HeaderList};
use glint::proto::h2::huffman;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, mut rest)) = data.split_first() else {
        return;
    };
    if ctl & 0x80 != 0 {
        let mut out = Vec::new();
        let bound = rest.len() * 2;
        if huffman::decode(rest, &mut out, bound) == Ok(()) {
            let mut back = Vec::new();
            huffman::encode(&out, &mut back);
            assert_eq!(back, rest, "one encoding per string");
            assert_eq!(huffman::encoded_len(&out), rest.len());
        }
        return;
    }
    let cap = [40usize, 300, 4096, 1 << 16][ctl as usize & 3];
    let table = if ctl & 4 != 0 { 256 } else { 4096 };
    let mut dec = Decoder::new(table);
    let mut enc = Encoder::new();
    let mut dec2 = Decoder::default();
    let (mut list, mut list2, mut out) = (HeaderList::default(), HeaderList::default(), Vec::new());
    // Blocks, each after its length byte, as one connection sends them.
    while let Some((&len, r)) = rest.split_first() {
        let n = (len as usize).min(r.len());
        let (block, r) = r.split_at(n);
        rest = r;
        let got = dec.decode(block, cap, &mut list);
        assert!(list.size() <= cap, "stored {} past the cap {cap}", list.size());
        assert!(dec.table().size() <= dec.table().max_size());
        assert!(dec.table().max_size() <= table);
        if got.is_err() {
            if matches!(got, Err(glint::proto::h2::hpack::DecodeError::Compression(_))) {
                return;
            }
            continue;
        }
        out.clear();
        enc.encode_fields(&mut out, list.iter());
        assert_eq!(dec2.decode(&out, 1 << 24, &mut list2), Ok(()), "our own encoding");
        assert_eq!(list.len(), list2.len());
        for ((n1, v1), (n2, v2)) in list.iter().zip(list2.iter()) {
            assert_eq!(n1.to_ascii_lowercase(), n2);
            assert_eq!(v1, v2);
        }
    }
});
