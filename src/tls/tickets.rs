//! Session-ticket encryption keys (STEKs) kept and rotated as lighttpd's
//! mod_openssl keeps them, behind rustls's [`ProducesTickets`].
//!
//! Three keys live at once, newest first. Without `ssl.stek-file` a random
//! key is made at start and every 8 hours (28800 s), active at once and
//! valid for 24 hours, so a ticket stays usable for up to a day. Keys made
//! before the workers fork are shared by all of them until the first
//! rotation; after that each worker rotates on its own, as in lighttpd.
//! With `ssl.stek-file` an outside job writes the keys and every worker
//! loads the file when its mtime moves, so all workers (and machines) agree.
//! The file is lighttpd's: 92 bytes, native byte order,
//!
//! ```text
//!  4  format version (0)     4  activation time (Unix s, i32)
//!  4  expiry time (i32)     16  key name   32  HMAC key   32  AES key
//! ```
//!
//! e.g. `dd if=/dev/random bs=1 count=80 status=none | perl -e
//! 'print pack("iii",0,time()+300,time()+86400),<>' > stek.$$ && mv stek.$$ stek`.
//!
//! A ticket is `key name (16) || nonce (12) || AES-256-GCM(state) || tag (16)`
//! under the file's AES key with the key name as associated data; GCM
//! authenticates, so the HMAC key is not needed. Random 96-bit nonces are
//! safe for 2^32 tickets per key (NIST SP 800-38D), 149,000 a second for a
//! key's 8 hours as the newest. glint's tickets cannot be read by lighttpd
//! or the reverse: the sealed session state is each library's own format.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::crypto::SecureRandom;
use rustls::server::ProducesTickets;

use super::provider::aead;

/// lighttpd rotates the self-made key every 8 hours...
const ROTATE_SECS: i64 = 28800;
/// ...and keeps each for 24 hours.
const KEY_LIFETIME_SECS: i64 = 86400;
/// lighttpd checks keys (and staples) once every 64 seconds.
pub const CHECK_INTERVAL_SECS: i64 = 64;
/// The ticket lifetime hint: OpenSSL's default session timeout for TLS,
/// which is what lighttpd's tickets advertise.
const TICKET_LIFETIME_SECS: u32 = 7200;
const STEK_FILE_LEN: usize = 92;
const NAME_LEN: usize = 16;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

struct Stek {
    active: i64,
    expire: i64,
    name: [u8; NAME_LEN],
    key: aead::LessSafeKey,
}

struct State {
    /// Newest first.
    slots: [Option<Stek>; 3],
    rotated_at: i64,
    last_check: i64,
    /// The last `now` seen, to notice the clock going back (lighttpd resets
    /// the rotation when it jumps back more than 8 hours).
    last_now: i64,
}

/// The keys of one server process, shared by every TLS socket and kept
/// across reloads (so tickets survive a SIGUSR1).
pub struct TicketKeys {
    state: Mutex<State>,
    stek_file: Option<PathBuf>,
    random: &'static dyn SecureRandom,
}

impl fmt::Debug for TicketKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TicketKeys")
            .field("stek_file", &self.stek_file)
            .finish_non_exhaustive()
    }
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl TicketKeys {
    /// Makes (or, with `stek_file`, loads) the first key at `now`.
    pub fn new(stek_file: Option<&Path>, now: i64) -> Arc<TicketKeys> {
        let keys = TicketKeys {
            state: Mutex::new(State {
                slots: [None, None, None],
                rotated_at: 0,
                last_check: 0,
                last_now: now,
            }),
            stek_file: stek_file.map(Path::to_path_buf),
            random: super::provider::default_provider().secure_random,
        };
        keys.check(now);
        Arc::new(keys)
    }

    /// Call from the once-a-second tick; does lighttpd's check every 64 s.
    pub fn tick(&self, now: i64) {
        let due = match self.state.lock() {
            Ok(s) => now - s.last_check >= CHECK_INTERVAL_SECS || now < s.last_check,
            Err(_) => false,
        };
        if due {
            self.check(now);
        }
    }

    /// mod_openssl_session_ticket_key_check.
    fn check(&self, now: i64) {
        let Ok(mut s) = self.state.lock() else { return };
        s.last_check = now;
        if s.last_now > now && s.last_now - now > ROTATE_SECS {
            s.rotated_at = 0;
        }
        s.last_now = now;
        let new = match &self.stek_file {
            Some(path) => {
                let changed = std::fs::metadata(path)
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                    .is_some_and(|t| t.as_secs() as i64 > s.rotated_at);
                let new = if changed { read_stek_file(path) } else { None };
                for slot in &mut s.slots {
                    if slot.as_ref().is_some_and(|k| k.expire < now) {
                        *slot = None;
                    }
                }
                new
            }
            None if s.rotated_at == 0 || now - ROTATE_SECS >= s.rotated_at => {
                self.generate(now, now + KEY_LIFETIME_SECS)
            }
            None => None,
        };
        if let Some(k) = new {
            s.slots.rotate_right(1);
            s.slots[0] = Some(k);
            s.rotated_at = now;
        }
    }

    fn generate(&self, active: i64, expire: i64) -> Option<Stek> {
        let mut raw = [0u8; NAME_LEN + 32];
        self.random.fill(&mut raw).ok()?;
        let stek = stek(active, expire, &raw[..NAME_LEN], &raw[NAME_LEN..]);
        raw.fill(0);
        stek
    }

    /// Key names of the slots, newest first (for tests and logs).
    pub fn key_names(&self) -> Vec<[u8; NAME_LEN]> {
        match self.state.lock() {
            Ok(s) => s.slots.iter().flatten().map(|k| k.name).collect(),
            Err(_) => Vec::new(),
        }
    }

    fn seal(&self, plain: &[u8], now: i64) -> Option<Vec<u8>> {
        let s = self.state.lock().ok()?;
        // tlsext_ticket_key_get: the newest key that is active and unexpired.
        let k = s
            .slots
            .iter()
            .flatten()
            .find(|k| k.active <= now && now <= k.expire)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.random.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(NAME_LEN + NONCE_LEN + plain.len() + TAG_LEN);
        out.extend_from_slice(&k.name);
        out.extend_from_slice(&nonce);
        let mut body = plain.to_vec();
        k.key
            .seal_in_place_append_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(k.name),
                &mut body,
            )
            .ok()?;
        out.extend_from_slice(&body);
        Some(out)
    }

    fn open(&self, ticket: &[u8], now: i64) -> Option<Vec<u8>> {
        if ticket.len() < NAME_LEN + NONCE_LEN + TAG_LEN {
            return None;
        }
        let (name, rest) = ticket.split_at(NAME_LEN);
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let s = self.state.lock().ok()?;
        // tlsext_ticket_key_find: any unexpired key with this name.
        let k = s
            .slots
            .iter()
            .flatten()
            .find(|k| k.expire >= now && k.name == name)?;
        let nonce = aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = sealed.to_vec();
        let plain_len = k
            .key
            .open_in_place(nonce, aead::Aad::from(k.name), &mut body)
            .ok()?
            .len();
        body.truncate(plain_len);
        Some(body)
    }
}

fn stek(active: i64, expire: i64, name: &[u8], aes: &[u8]) -> Option<Stek> {
    let key = aead::UnboundKey::new(&aead::AES_256_GCM, aes).ok()?;
    Some(Stek {
        active,
        expire,
        name: name.try_into().ok()?,
        key: aead::LessSafeKey::new(key),
    })
}

/// mod_openssl_session_ticket_key_file: exactly the first 92 bytes, version 0.
fn read_stek_file(path: &Path) -> Option<Stek> {
    let mut raw = std::fs::read(path).ok()?;
    let k = parse_stek(&raw);
    raw.fill(0);
    k
}

fn parse_stek(raw: &[u8]) -> Option<Stek> {
    let raw = raw.get(..STEK_FILE_LEN)?;
    let int = |i: usize| i32::from_ne_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
    if int(0) != 0 {
        return None;
    }
    // raw[28..60] is the HMAC key, unused with GCM (see the module notes).
    stek(int(4) as i64, int(8) as i64, &raw[12..28], &raw[60..92])
}

impl ProducesTickets for TicketKeys {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        TICKET_LIFETIME_SECS
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.seal(plain, unix_now())
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        self.open(cipher, unix_now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stek_bytes(active: i32, expire: i32, fill: u8) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&0i32.to_ne_bytes());
        v.extend_from_slice(&active.to_ne_bytes());
        v.extend_from_slice(&expire.to_ne_bytes());
        v.extend(std::iter::repeat_n(fill, 80));
        v
    }

    #[test]
    fn self_made_keys_rotate_every_8_hours_and_keep_three() {
        let t0 = 1_700_000_000;
        let keys = TicketKeys::new(None, t0);
        let first = keys.key_names();
        assert_eq!(first.len(), 1);
        let ticket = keys.seal(b"session", t0).unwrap();
        assert_eq!(
            keys.open(&ticket, t0 + 10).as_deref(),
            Some(&b"session"[..])
        );
        keys.tick(t0 + 100);
        assert_eq!(keys.key_names().len(), 1, "no rotation before 8 hours");
        for i in 1..=3 {
            keys.tick(t0 + i * ROTATE_SECS);
        }
        let names = keys.key_names();
        assert_eq!(names.len(), 3);
        assert!(!names.contains(&first[0]), "the oldest key is gone");
        assert_eq!(keys.open(&ticket, t0 + 3 * ROTATE_SECS), None);
    }

    #[test]
    fn tickets_resist_tampering_and_expire_with_their_key() {
        let t0 = 1_700_000_000;
        let keys = TicketKeys::new(None, t0);
        let mut ticket = keys.seal(b"state", t0).unwrap();
        assert_eq!(keys.open(&ticket, t0 + KEY_LIFETIME_SECS + 1), None);
        let last = ticket.len() - 1;
        ticket[last] ^= 1;
        assert_eq!(keys.open(&ticket, t0), None);
        assert_eq!(keys.open(&ticket[..20], t0), None);
        assert_eq!(keys.open(b"", t0), None);
    }

    #[test]
    fn stek_file_keys_are_shared_and_activate_on_time() {
        let dir = std::env::temp_dir().join(format!("glint-stek-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stek");
        let t0 = unix_now();
        std::fs::write(&path, stek_bytes(t0 as i32 - 10, t0 as i32 + 3600, 7)).unwrap();
        // Two "workers" reading the same file seal and open each other's tickets.
        let a = TicketKeys::new(Some(&path), t0);
        let b = TicketKeys::new(Some(&path), t0);
        assert_eq!(a.key_names(), vec![[7u8; 16]]);
        let ticket = a.seal(b"shared", t0).unwrap();
        assert_eq!(b.open(&ticket, t0).as_deref(), Some(&b"shared"[..]));
        // A new key not active yet: the old one keeps sealing until then.
        std::fs::write(&path, stek_bytes(t0 as i32 + 300, t0 as i32 + 7200, 9)).unwrap();
        let later = t0 + CHECK_INTERVAL_SECS;
        let mtime = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(later as u64);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        a.tick(later);
        assert_eq!(a.key_names(), vec![[9u8; 16], [7u8; 16]]);
        assert_eq!(&a.seal(b"x", later).unwrap()[..16], &[7u8; 16]);
        assert_eq!(&a.seal(b"x", t0 + 301).unwrap()[..16], &[9u8; 16]);
        // Expired keys are wiped at the next check.
        a.tick(t0 + 3601 + CHECK_INTERVAL_SECS);
        assert_eq!(a.key_names(), vec![[9u8; 16]]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_stek_files_are_refused() {
        assert!(parse_stek(&stek_bytes(0, 1, 1)[..91]).is_none());
        let mut v = stek_bytes(0, 1, 1);
        v[0] = 1; // format version 1
        assert!(parse_stek(&v).is_none());
        assert!(parse_stek(&stek_bytes(0, 1, 1)).is_some());
    }
}
