//! Digest nonces that need no server-side table.
//!
//! A nonce is `TIMESTAMP:RANDOM:MAC`: the issue time (hex Unix seconds), 32
//! random bits (hex) so two nonces of one second differ, and a keyed hash
//! (HMAC-SHA-256, first 16 bytes in hex) over both, the algorithm and the
//! realm. The server checks a nonce by recomputing the MAC: a forged or
//! altered one fails, one made for another realm or algorithm fails, and one
//! older than [`NONCE_LIFETIME`] is stale.
//!
//! This is lighttpd's form with a `"nonce-secret"` (timestamp, random, hash
//! with the secret). Without one, lighttpd only checks the timestamp; glint
//! always has a key: the rule's secret, or else a random per-process key.

use std::sync::atomic::{AtomicU32, Ordering};

use super::algorithm::DigestAlgorithm;

/// How long a nonce is accepted, in seconds: lighttpd's 10 minutes. After
/// that the client gets 401 with `stale=true` and retries without asking the user.
pub const NONCE_LIFETIME: i64 = 600;

/// After this many seconds a successful response carries
/// `Authentication-Info: nextnonce="..."` (lighttpd: 9 minutes), so a busy
/// client switches before the nonce goes stale.
pub const NEXTNONCE_AFTER: i64 = 540;

/// Bytes of HMAC kept: 128 bits is past guessing, and the nonce stays short.
const MAC_LEN: usize = 16;

/// The key nonces are made and checked with.
#[derive(Clone)]
pub struct NonceKey([u8; 32]);

impl std::fmt::Debug for NonceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NonceKey(..)")
    }
}

impl NonceKey {
    /// A random per-process key from getrandom(2).
    pub fn generate() -> std::io::Result<NonceKey> {
        super::random_key().map(NonceKey)
    }

    /// A key from a configured `"nonce-secret"`: the same on every start and
    /// in every worker.
    pub fn from_secret(secret: &str) -> NonceKey {
        let mut k = [0u8; 32];
        k.copy_from_slice(&super::hmac_sha256(
            &[0u8; 32],
            &[b"glint nonce-secret\0", secret.as_bytes()],
        ));
        NonceKey(k)
    }

    /// A fixed key, for tests.
    pub fn from_bytes(k: [u8; 32]) -> NonceKey {
        NonceKey(k)
    }

    fn mac(&self, ts: u64, rnd: u32, algo: DigestAlgorithm, realm: &str) -> String {
        let full = super::hmac_sha256(
            &self.0,
            &[
                &ts.to_be_bytes(),
                &rnd.to_be_bytes(),
                algo.name().as_bytes(),
                b"\0",
                realm.as_bytes(),
            ],
        );
        crate::syntax::hex_string(&full[..MAC_LEN])
    }

    /// A new nonce issued at `now` (Unix seconds).
    pub fn make(&self, now: i64, algo: DigestAlgorithm, realm: &str) -> String {
        self.make_with(now, fresh_random(), algo, realm)
    }

    /// A nonce with a given random part (tests, and `make`).
    pub fn make_with(&self, now: i64, rnd: u32, algo: DigestAlgorithm, realm: &str) -> String {
        let ts = u64::try_from(now).unwrap_or(0);
        format!("{ts:x}:{rnd:08x}:{}", self.mac(ts, rnd, algo, realm))
    }

    /// Checks a nonce the client sent back.
    pub fn check(&self, nonce: &[u8], algo: DigestAlgorithm, realm: &str, now: i64) -> NonceCheck {
        let Some((ts, rnd, mac)) = split(nonce) else {
            return NonceCheck::Malformed;
        };
        if !super::ct_eq(self.mac(ts, rnd, algo, realm).as_bytes(), mac) {
            return NonceCheck::Forged;
        }
        let age = now.saturating_sub(i64::try_from(ts).unwrap_or(i64::MAX));
        // A nonce from the future (clock stepped back) is as useless as an old one.
        if !(0..=NONCE_LIFETIME).contains(&age) {
            return NonceCheck::Stale;
        }
        NonceCheck::Valid { age }
    }
}

/// What [`NonceKey::check`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonceCheck {
    /// Ours, `age` seconds old.
    Valid { age: i64 },
    /// Ours but too old (or from the future): 401 with `stale=true`.
    Stale,
    /// Well-formed but not made with this key, realm and algorithm: 401.
    Forged,
    /// Not `hex:hex8:hex32`: 400, as lighttpd answers a nonce without its secret field.
    Malformed,
}

fn split(nonce: &[u8]) -> Option<(u64, u32, &[u8])> {
    let s = std::str::from_utf8(nonce).ok()?;
    let mut it = s.splitn(3, ':');
    let (ts, rnd, mac) = (it.next()?, it.next()?, it.next()?);
    let hex = |t: &str| crate::syntax::is_hex(t.as_bytes());
    // 16 hex digits is all of a u64; lighttpd reads at most 16 too.
    if ts.len() > 16
        || !hex(ts)
        || rnd.len() != 8
        || !hex(rnd)
        || mac.len() != MAC_LEN * 2
        || !hex(mac)
    {
        return None;
    }
    Some((
        u64::from_str_radix(ts, 16).ok()?,
        u32::from_str_radix(rnd, 16).ok()?,
        mac.as_bytes(),
    ))
}

/// 32 bits for a nonce's random part. Uniqueness is all it needs (the MAC
/// carries the authenticity), so if getrandom(2) fails a counter stands in.
fn fresh_random() -> u32 {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let mut b = [0u8; 4];
    match getrandom::fill(&mut b) {
        Ok(()) => u32::from_be_bytes(b),
        Err(_) => COUNTER.fetch_add(1, Ordering::Relaxed),
    }
}
