//! QUIC variable-length integers (RFC 9000 §16): HTTP/3 frames and
//! stream types are written with them.

/// The largest value a varint holds: 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// Reads a varint from the front of `buf`: the value and the bytes it took,
/// or `None` when `buf` ends before it does.
pub fn decode(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, len))
}

/// The bytes `v` takes as a varint (values past [`MAX`] are written as MAX).
pub fn len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16383 => 2,
        16384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` as a varint, in its shortest form.
pub fn encode(v: u64, out: &mut Vec<u8>) {
    let v = v.min(MAX);
    match len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc9000_appendix_a_samples() {
        // (bytes, value): the four examples of RFC 9000 §A.1.
        let cases: &[(&[u8], u64)] = &[
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            // A two-byte encoding of 37 is valid too (not the shortest).
            (&[0x40, 0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(decode(bytes), Some((*value, bytes.len())), "{bytes:02x?}");
            if bytes.len() == len(*value) {
                let mut out = Vec::new();
                encode(*value, &mut out);
                assert_eq!(&out[..], *bytes);
            }
        }
    }

    #[test]
    fn cut_short_needs_more() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0x7b]), None);
        assert_eq!(decode(&[0x9d, 0x7f, 0x3e]), None);
    }

    #[test]
    fn every_length_round_trips() {
        for v in [0, 63, 64, 16383, 16384, 1_073_741_823, 1_073_741_824, MAX] {
            let mut out = Vec::new();
            encode(v, &mut out);
            assert_eq!(out.len(), len(v));
            assert_eq!(decode(&out), Some((v, out.len())));
        }
    }
}
