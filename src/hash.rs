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

/// A fast hash for tables keyed by strings the configuration or the file
/// system gives (script files, opened paths), never by what a client
/// sends: FxHash (rustc's: a rotate, xor and multiply per 8 bytes), with
/// the well-mixed high bits rotated down for hashbrown's bucket index.
/// std's SipHash cost 170 of the 8,100 instructions of a keep-alive
/// request for a small file (callgrind). It is no defence against
/// flooding.
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

const FX_K: u64 = 0xf135_7aea_2e62_a9c5;

impl std::hash::Hasher for WordHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(FX_K);
        }
        for &b in words.remainder() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
        self.0 = h;
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

/// A map from strings of the configuration or the file system (see
/// [`WordHasher`]).
pub type StrMap<V> =
    std::collections::HashMap<String, V, std::hash::BuildHasherDefault<WordHasher>>;

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
