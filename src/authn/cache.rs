//! `auth.cache = ( "max-age" => "600" )`: remember successful Basic checks
//! so bcrypt (or SHA-crypt at high rounds) is not recomputed on every request.
//!
//! An entry is keyed by HMAC-SHA-256, under a per-process random key, of the
//! rule, the user file's generation, the user name and the password. A wrong
//! password gives another key, so it can never hit a cached right one, and
//! the cache holds neither names nor passwords (lighttpd keeps the password
//! itself and compares it). A reloaded user file has a new generation, so a
//! changed password stops matching at once.
//!
//! Digest needs no cache here: the HA1 comes from an in-memory table
//! already, which is what lighttpd's digest cache saves it from re-reading.
//!
//! The one timing difference this opts into: a cached right password skips
//! the hash, a wrong one never does.

use std::collections::HashMap;

use super::require::OptValue;

/// lighttpd's default `max-age`: 10 minutes.
pub const DEFAULT_MAX_AGE: i64 = 600;

/// Entries kept at most. An entry is a 32-byte key and a timestamp (about
/// 60 bytes with the map's overhead), so 4096 is ~256 KiB: a few thousand users
/// active within `max-age`. lighttpd's splay tree is unbounded.
pub const DEFAULT_CAPACITY: usize = 4096;

/// Parsed `auth.cache` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// Seconds an entry stays valid.
    pub max_age: i64,
}

/// Parses the `auth.cache` array. lighttpd reads `max-age` (integer or
/// numeric string) and falls back to 600 silently on junk; glint reports
/// junk, and an unknown key, as an error naming it.
pub fn parse_cache_options(opts: &[(String, OptValue)]) -> Result<CacheOptions, String> {
    let mut o = CacheOptions {
        max_age: DEFAULT_MAX_AGE,
    };
    for (key, value) in opts {
        if key != "max-age" {
            return Err(format!(
                "auth.cache: unknown key \"{key}\" (expected \"max-age\")"
            ));
        }
        let n = match value {
            OptValue::Int(n) => Some(*n),
            OptValue::Str(s) => s.trim().parse::<i64>().ok(),
            OptValue::Array => None,
        };
        o.max_age = match n {
            Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => n,
            _ => {
                return Err(format!(
                    "auth.cache: \"max-age\" => {value:?} is not a number of seconds from 0 to {}",
                    i32::MAX
                ))
            }
        };
    }
    Ok(o)
}

/// The cache of successful Basic verifications.
pub struct AuthCache {
    key: [u8; 32],
    max_age: i64,
    capacity: usize,
    entries: HashMap<[u8; 32], i64>,
}

impl std::fmt::Debug for AuthCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthCache")
            .field("max_age", &self.max_age)
            .field("len", &self.entries.len())
            .finish()
    }
}

impl AuthCache {
    /// A cache with a fresh random key.
    pub fn new(opts: CacheOptions) -> std::io::Result<AuthCache> {
        Ok(AuthCache::with_key(
            opts,
            DEFAULT_CAPACITY,
            super::random_key()?,
        ))
    }

    /// A cache with a given key and bound (tests).
    pub fn with_key(opts: CacheOptions, capacity: usize, key: [u8; 32]) -> AuthCache {
        AuthCache {
            key,
            max_age: opts.max_age,
            capacity: capacity.max(1),
            entries: HashMap::new(),
        }
    }

    fn slot(&self, rule: u32, generation: u64, user: &str, password: &[u8]) -> [u8; 32] {
        // Lengths first, so no two (user, password) pairs hash the same bytes.
        let ulen = (user.len() as u64).to_be_bytes();
        super::hmac_sha256(
            &self.key,
            &[
                &rule.to_be_bytes(),
                &generation.to_be_bytes(),
                &ulen,
                user.as_bytes(),
                password,
            ],
        )
    }

    /// True when this exact user and password passed `rule` within `max-age`.
    pub fn hit(
        &mut self,
        rule: u32,
        generation: u64,
        user: &str,
        password: &[u8],
        now: i64,
    ) -> bool {
        let k = self.slot(rule, generation, user, password);
        match self.entries.get(&k) {
            Some(&at) if now.saturating_sub(at) <= self.max_age && now >= at => true,
            Some(_) => {
                self.entries.remove(&k);
                false
            }
            None => false,
        }
    }

    /// Remembers a success. When full, expired entries go first, then the oldest.
    pub fn insert(&mut self, rule: u32, generation: u64, user: &str, password: &[u8], now: i64) {
        let k = self.slot(rule, generation, user, password);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&k) {
            self.expire(now);
            if self.entries.len() >= self.capacity {
                // O(capacity) scan, paid only after a full hash check has just
                // run (bcrypt's milliseconds dwarf 4096 compares).
                if let Some(oldest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, &at)| at)
                    .map(|(k, _)| *k)
                {
                    self.entries.remove(&oldest);
                }
            }
        }
        self.entries.insert(k, now);
    }

    /// Drops entries older than `max-age`; the tick calls this (lighttpd
    /// every 8 seconds).
    pub fn expire(&mut self, now: i64) {
        let max_age = self.max_age;
        self.entries
            .retain(|_, at| now.saturating_sub(*at) <= max_age && now >= *at);
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
