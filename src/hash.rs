//! FNV-1a (64-bit), glint's one stable hash: the same value in every
//! process and every run, for what must not change between them (ETags,
//! multipart boundaries, the backend a `hash` or `sticky` balancer picks).
//! Not for tables a client fills: it is no defence against flooding.

/// FNV-1a's offset basis: where a hash of nothing starts.
pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

const PRIME: u64 = 0x100_0000_01b3;

/// FNV-1a over `bytes`.
#[inline]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(OFFSET, bytes)
}

/// FNV-1a over `bytes`, continuing from `h` (a hash so far, or a seed):
/// hashing `a` then `b` this way is hashing `a` followed by `b`.
#[inline]
pub fn fnv1a_from(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // The published FNV-1a 64-bit test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a_from(fnv1a(b"foo"), b"bar"), fnv1a(b"foobar"));
    }
}
