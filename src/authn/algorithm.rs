//! Digest's hash functions (MD5, SHA-256, SHA-512/256) and their
//! digests: what the user files, the nonces and the rules name, below the
//! Digest exchange itself.

use md5::Md5;
use sha2::digest::Digest;
use sha2::{Sha256, Sha512_256};

/// A Digest hash function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DigestAlgorithm {
    Md5,
    Sha256,
    Sha512_256,
}

/// A digest of up to 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hashed {
    buf: [u8; 32],
    len: usize,
}

impl Hashed {
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    pub fn hex(&self) -> String {
        crate::syntax::hex_string(self.as_slice())
    }
    /// A digest from raw bytes (an HA1 read from a file); `None` past 32 bytes.
    pub fn from_slice(b: &[u8]) -> Option<Hashed> {
        let mut buf = [0u8; 32];
        buf.get_mut(..b.len())?.copy_from_slice(b);
        Some(Hashed { buf, len: b.len() })
    }
}

impl DigestAlgorithm {
    /// `MD5`, `SHA-256`, `SHA-512-256`, each optionally `-sess`, ASCII
    /// case-blind; returns the algorithm and whether `-sess` was given.
    pub fn parse(s: &str) -> Option<(DigestAlgorithm, bool)> {
        let (base, sess) = match s
            .len()
            .checked_sub(5)
            .and_then(|i| s.get(i..).map(|t| (i, t)))
        {
            Some((i, t)) if t.eq_ignore_ascii_case("-sess") => (&s[..i], true),
            _ => (s, false),
        };
        let algo = if base.eq_ignore_ascii_case("MD5") {
            DigestAlgorithm::Md5
        } else if base.eq_ignore_ascii_case("SHA-256") {
            DigestAlgorithm::Sha256
        } else if base.eq_ignore_ascii_case("SHA-512-256") {
            DigestAlgorithm::Sha512_256
        } else {
            return None;
        };
        Some((algo, sess))
    }

    /// The name in challenges.
    pub fn name(self) -> &'static str {
        match self {
            DigestAlgorithm::Md5 => "MD5",
            DigestAlgorithm::Sha256 => "SHA-256",
            DigestAlgorithm::Sha512_256 => "SHA-512-256",
        }
    }

    /// Digest length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            DigestAlgorithm::Md5 => 16,
            DigestAlgorithm::Sha256 | DigestAlgorithm::Sha512_256 => 32,
        }
    }

    /// Challenge order, strongest first (lighttpd: SHA-512-256, SHA-256, MD5).
    pub fn strength(self) -> u8 {
        match self {
            DigestAlgorithm::Md5 => 0,
            DigestAlgorithm::Sha256 => 1,
            DigestAlgorithm::Sha512_256 => 2,
        }
    }

    /// The hash of the concatenation of `parts`.
    pub fn hash(self, parts: &[&[u8]]) -> Hashed {
        fn run<D: Digest>(parts: &[&[u8]]) -> Hashed {
            let mut d = D::new();
            for p in parts {
                d.update(p);
            }
            let out = d.finalize();
            let mut buf = [0u8; 32];
            buf[..out.len()].copy_from_slice(&out);
            Hashed {
                buf,
                len: out.len(),
            }
        }
        match self {
            DigestAlgorithm::Md5 => run::<Md5>(parts),
            DigestAlgorithm::Sha256 => run::<Sha256>(parts),
            DigestAlgorithm::Sha512_256 => run::<Sha512_256>(parts),
        }
    }

    /// HA1 = H(username ":" realm ":" password).
    pub fn ha1(self, user: &[u8], realm: &[u8], password: &[u8]) -> Hashed {
        self.hash(&[user, b":", realm, b":", password])
    }
}
