//! User files, read into memory: `plain` (`user:password`), `htpasswd`
//! (`user:hash`) and `htdigest` (`user:realm:HA1[:userhash]`).
//!
//! Line rules are lighttpd's: `\n`-separated, a trailing `\r` dropped, blank
//! lines and lines starting with `#` skipped, lines over 1024 bytes skipped,
//! the first `:` ends the user name (a plain password or a hash may hold
//! more), the first line for a user wins, a file over 64 MiB is refused.
//! Every skipped line is reported with file, line and reason; nothing in a
//! file can make the loader panic. Names and values must be UTF-8 (a line
//! that is not is reported and skipped).
//!
//! An unknown user is checked against a dummy of the same kind and cost as
//! the file's most common entry, so the time a check takes does not tell an
//! attacker whether the user exists; [`UserFile::dummy_checks`] counts them.

use std::collections::HashMap;
use std::hint::black_box;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256, Sha512};

use super::algorithm::{DigestAlgorithm, Hashed};
use super::crypt::{PasswordHash, Scheme};
use super::require::BackendKind;

/// Process-wide, so a file loaded anew never reuses an old generation.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// lighttpd's cap on a user file: 64 MiB ("expect < 1 MB").
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// lighttpd skips lines longer than this.
pub const MAX_LINE_BYTES: usize = 1024;

/// An HA1 as a Digest check needs it; `known` is false for the dummy that
/// stands in for an unknown user.
#[derive(Clone, Copy, Debug)]
pub struct Ha1 {
    pub ha1: Hashed,
    pub known: bool,
}

#[derive(Debug)]
enum Table {
    Plain(HashMap<String, Vec<u8>>),
    /// `None`: a format glint cannot verify; that user never logs in.
    Htpasswd(HashMap<String, Option<PasswordHash>>),
    /// `(user, realm)` -> HA1s; a 32-hex line gives `md5`, a 64-hex one `sha`
    /// (used for SHA-256 and SHA-512-256 alike, as lighttpd matches by length).
    Htdigest(HashMap<(String, String), Ha1s>),
}

#[derive(Debug, Default)]
struct Ha1s {
    md5: Option<Hashed>,
    sha: Option<Hashed>,
}

/// What the file looked like when it was read: a change to any of these
/// means it was rewritten (htpasswd writes a new file and renames it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
}

/// One user file in memory.
#[derive(Debug)]
pub struct UserFile {
    kind: BackendKind,
    name: String,
    path: Option<PathBuf>,
    stamp: Option<Stamp>,
    checked_at: i64,
    generation: u64,
    table: Table,
    /// `(realm, algorithm, lowercase hex H(user:realm))` -> user, for htdigest userhash.
    userhash: HashMap<(String, DigestAlgorithm, String), String>,
    dummy_hash: Option<PasswordHash>,
    dummy_secret: [u8; 32],
    dummy_checks: AtomicU64,
}

/// The hash on an htpasswd line (`None`: the user can never log in) and
/// the message the line earns, if any.
fn htpasswd_hash(at: &str, user: &str, rest: &str) -> (Option<PasswordHash>, Option<String>) {
    match PasswordHash::parse(rest) {
        Ok(h) => {
            let note = (h.scheme() == Scheme::DesCrypt).then(|| format!(
                "{at}: user '{user}' has a DES crypt(3) hash: only the first 8 bytes of the password count (htpasswd -B makes a bcrypt one)"
            ));
            (Some(h), note)
        }
        Err(why) => (
            None,
            Some(format!("{at}: user '{user}' can never log in: {}", why.0)),
        ),
    }
}

impl UserFile {
    /// Reads and parses `path`. `Err` when it cannot be read (the caller
    /// decides whether that stops start-up; lighttpd only notices per request).
    pub fn load(kind: BackendKind, path: &Path) -> Result<(UserFile, Vec<String>), String> {
        let (data, stamp) = read(path)?;
        let (mut f, msgs) = UserFile::parse(kind, &path.display().to_string(), &data);
        f.path = Some(path.to_path_buf());
        f.stamp = Some(stamp);
        Ok((f, msgs))
    }

    /// An empty table for `path`, which could not be read at start: nobody
    /// logs in with it, and [`UserFile::reload_if_changed`] reads it once
    /// it is there (lighttpd reads the file per request, and fails each
    /// request while it is missing).
    pub fn missing(kind: BackendKind, path: &Path) -> UserFile {
        let (mut f, _) = UserFile::parse(kind, &path.display().to_string(), b"");
        f.path = Some(path.to_path_buf());
        f
    }

    /// Parses file contents; `name` labels the messages (`name:line: ...`).
    pub fn parse(kind: BackendKind, name: &str, data: &[u8]) -> (UserFile, Vec<String>) {
        let mut f = UserFile {
            kind,
            name: name.to_string(),
            path: None,
            stamp: None,
            checked_at: i64::MIN,
            generation: 0,
            table: Table::Plain(HashMap::new()),
            userhash: HashMap::new(),
            dummy_hash: None,
            dummy_secret: [0; 32],
            dummy_checks: AtomicU64::new(0),
        };
        let msgs = f.fill(data);
        (f, msgs)
    }

    fn fill(&mut self, data: &[u8]) -> Vec<String> {
        let mut msgs = Vec::new();
        let mut plain = HashMap::new();
        let mut htpasswd = HashMap::new();
        let mut htdigest: HashMap<(String, String), Ha1s> = HashMap::new();
        // Each kind and cost, how often, and its first hash.
        let mut schemes: Vec<(Scheme, usize, PasswordHash)> = Vec::new();
        self.userhash.clear();
        for (n, raw) in data.split(|&b| b == b'\n').enumerate() {
            let (at, user, rest) = match self.line_fields(n, raw) {
                Ok(Some(fields)) => fields,
                Ok(None) => continue,
                Err(msg) => {
                    msgs.push(msg);
                    continue;
                }
            };
            match self.kind {
                BackendKind::Plain => {
                    if plain.contains_key(user) {
                        msgs.push(format!(
                            "{at}: user '{user}' listed again; the first line counts"
                        ));
                        continue;
                    }
                    if rest.is_empty() {
                        msgs.push(format!("{at}: user '{user}' has an empty password"));
                    }
                    plain.insert(user.to_string(), rest.as_bytes().to_vec());
                }
                BackendKind::Htpasswd => {
                    if htpasswd.contains_key(user) {
                        msgs.push(format!(
                            "{at}: user '{user}' listed again; the first line counts"
                        ));
                        continue;
                    }
                    let (hash, note) = htpasswd_hash(&at, user, rest);
                    msgs.extend(note);
                    if let Some(h) = &hash {
                        match schemes.iter_mut().find(|(s, _, _)| *s == h.scheme()) {
                            Some((_, c, _)) => *c += 1,
                            None => schemes.push((h.scheme(), 1, h.clone())),
                        }
                    }
                    htpasswd.insert(user.to_string(), hash);
                }
                BackendKind::Htdigest => {
                    self.htdigest_line(&at, user, rest, &mut htdigest, &mut msgs)
                }
                // (No user file: never loaded for these.)
                BackendKind::Ldap
                | BackendKind::Pam
                | BackendKind::Sasl
                | BackendKind::Dbi
                | BackendKind::Gssapi => {}
            }
        }
        self.set_dummy(&schemes);
        self.table = match self.kind {
            BackendKind::Plain => Table::Plain(plain),
            BackendKind::Htpasswd => Table::Htpasswd(htpasswd),
            BackendKind::Htdigest
            | BackendKind::Ldap
            | BackendKind::Pam
            | BackendKind::Sasl
            | BackendKind::Dbi
            | BackendKind::Gssapi => Table::Htdigest(htdigest),
        };
        self.generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        msgs
    }

    /// Line `n` (from 0) as its `name:line` label, the user and the rest
    /// after the first `:`; `Ok(None)` for a blank line or a comment, `Err`
    /// the message for a line that is skipped.
    fn line_fields<'d>(
        &self,
        n: usize,
        raw: &'d [u8],
    ) -> Result<Option<(String, &'d str, &'d str)>, String> {
        let at = format!("{}:{}", self.name, n + 1);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.is_empty() || raw[0] == b'#' || raw[0] == b'\r' {
            return Ok(None);
        }
        if raw.len() > MAX_LINE_BYTES {
            return Err(format!(
                "{at}: line longer than {MAX_LINE_BYTES} bytes skipped"
            ));
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            return Err(format!("{at}: line is not UTF-8, skipped"));
        };
        let Some((user, rest)) = line.split_once(':') else {
            let want = if self.kind == BackendKind::Htdigest {
                "username:realm:digest[:userhash]"
            } else {
                "username:password"
            };
            return Err(format!(
                "{at}: parse error, expected '{want}'; line skipped"
            ));
        };
        Ok(Some((at, user, rest)))
    }

    /// The dummy secret and hash an unknown user is checked against, so that
    /// the work matches a known one's: deterministic, since an unknown user
    /// is refused whatever the dummy check says.
    fn set_dummy(&mut self, schemes: &[(Scheme, usize, PasswordHash)]) {
        let seed: [u8; 64] = Sha512::new()
            .chain_update(b"glint dummy\0")
            .chain_update(self.name.as_bytes())
            .finalize()
            .into();
        self.dummy_secret.copy_from_slice(&seed[..32]);
        // The most common kind and cost; the first seen wins a tie.
        let mut best: Option<&(Scheme, usize, PasswordHash)> = None;
        for e in schemes {
            if best.is_none_or(|b| e.1 > b.1) {
                best = Some(e);
            }
        }
        self.dummy_hash = best.and_then(|(s, _, example)| {
            PasswordHash::dummy(*s, &seed).or_else(|| example.dummy_like(&seed))
        });
    }

    fn htdigest_line(
        &mut self,
        at: &str,
        user: &str,
        rest: &str,
        table: &mut HashMap<(String, String), Ha1s>,
        msgs: &mut Vec<String>,
    ) {
        let Some((realm, rest)) = rest.split_once(':') else {
            msgs.push(format!(
                "{at}: parse error, expected 'username:realm:digest[:userhash]'; line skipped"
            ));
            return;
        };
        let (hex, given_userhash) = match rest.split_once(':') {
            Some((h, u)) => (h, Some(u)),
            None => (rest, None),
        };
        let mut buf = [0u8; 32];
        let n = hex.len() / 2;
        if !(n == 16 || n == 32)
            || crate::syntax::hex_decode_into(hex.as_bytes(), &mut buf[..n]).is_none()
        {
            msgs.push(format!("{at}: user '{user}': digest is not 32 (MD5) or 64 (SHA-256) hex digits; line skipped"));
            return;
        }
        let ha1 = Hashed::from_slice(&buf[..n]);
        let entry = table
            .entry((user.to_string(), realm.to_string()))
            .or_default();
        let slot = if n == 16 {
            &mut entry.md5
        } else {
            &mut entry.sha
        };
        if slot.is_some() {
            msgs.push(format!(
                "{at}: user '{user}' realm '{realm}' listed again; the first line counts"
            ));
            return;
        }
        *slot = ha1;
        let algos: &[DigestAlgorithm] = if n == 16 {
            &[DigestAlgorithm::Md5]
        } else {
            &[DigestAlgorithm::Sha256, DigestAlgorithm::Sha512_256]
        };
        for &a in algos {
            let uh = a.hash(&[user.as_bytes(), b":", realm.as_bytes()]).hex();
            self.userhash
                .insert((realm.to_string(), a, uh), user.to_string());
        }
        // lighttpd reads userhash only from this 4th field; glint computes it,
        // and still honours a given one that differs (with a note).
        if let Some(given) = given_userhash.map(str::to_ascii_lowercase) {
            if !self
                .userhash
                .contains_key(&(realm.to_string(), algos[0], given.clone()))
            {
                msgs.push(format!(
                    "{at}: user '{user}': userhash field is not H(user:realm); both are accepted"
                ));
                self.userhash
                    .insert((realm.to_string(), algos[0], given), user.to_string());
            }
        }
    }

    /// Re-reads the file when it changed on disk, at most one `stat` per
    /// second of `now` (Unix seconds). Returns the messages to log. An
    /// unreadable file empties the table (nobody logs in, as with lighttpd,
    /// which fails each request then); it is read again once it is back.
    pub fn reload_if_changed(&mut self, now: i64) -> Vec<String> {
        let Some(path) = self.path.clone() else {
            return Vec::new();
        };
        if now == self.checked_at {
            return Vec::new();
        }
        self.checked_at = now;
        let current = std::fs::metadata(&path).ok().map(|m| stamp(&m));
        if current.is_some() && current == self.stamp {
            return Vec::new();
        }
        match read(&path) {
            Ok((data, st)) => {
                self.stamp = Some(st);
                let mut msgs = vec![format!("{}: changed on disk, reloaded", self.name)];
                msgs.extend(self.fill(&data));
                msgs
            }
            Err(e) if self.stamp.is_some() => {
                self.stamp = None;
                self.fill(b"");
                vec![format!(
                    "{e}; nobody can log in with this file until it is readable again"
                )]
            }
            Err(_) => Vec::new(),
        }
    }

    /// Which backend's format this is.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// New on every (re)load, unique in the process: the auth cache keys on
    /// it, so a changed password invalidates what was cached.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The kind and cost unknown users are checked against (htpasswd).
    pub fn dummy_scheme(&self) -> Option<Scheme> {
        self.dummy_hash.as_ref().map(PasswordHash::scheme)
    }

    /// How many checks ran against the dummy because the user was unknown.
    pub fn dummy_checks(&self) -> u64 {
        self.dummy_checks.load(Ordering::Relaxed)
    }

    fn note_dummy(&self) {
        self.dummy_checks.fetch_add(1, Ordering::Relaxed);
    }

    /// Basic: does `password` belong to `user`? For htdigest the HA1 of
    /// `realm` and `algo` is compared (lighttpd: the rule's one algorithm,
    /// SHA-256 if offered). Same work whether or not the user exists.
    pub fn verify_password(
        &self,
        user: &str,
        password: &[u8],
        realm: &str,
        algo: DigestAlgorithm,
    ) -> bool {
        match &self.table {
            Table::Plain(t) => {
                // Compare SHA-256 digests, so the compare does not depend on
                // the lengths of the stored and given passwords.
                let given = Sha256::digest(password);
                match t.get(user) {
                    Some(stored) => super::ct_eq(&Sha256::digest(stored), &given),
                    None => {
                        self.note_dummy();
                        black_box(super::ct_eq(&Sha256::digest(self.dummy_secret), &given));
                        false
                    }
                }
            }
            Table::Htpasswd(t) => match (t.get(user), &self.dummy_hash) {
                (Some(Some(h)), _) => h.verify(password),
                (_, Some(dummy)) => {
                    self.note_dummy();
                    black_box(dummy.verify(black_box(password)));
                    false
                }
                (_, None) => false,
            },
            Table::Htdigest(_) => {
                let lookup = self.digest_ha1(user, realm, algo);
                let ha1 = algo.ha1(user.as_bytes(), realm.as_bytes(), password);
                super::ct_eq(ha1.as_slice(), lookup.ha1.as_slice()) && lookup.known
            }
        }
    }

    /// htpasswd: whether `user`'s check (or the unknown user's dummy) is
    /// one libxcrypt makes, which takes tens to hundreds of milliseconds
    /// (yescrypt, scrypt): it then runs on the worker threads
    /// ([`UserFile::offloaded_hash`]), not on the loop.
    pub fn is_offloaded(&self, user: &str) -> bool {
        self.htpasswd_entry(user)
            .is_some_and(|(h, _)| matches!(h.scheme(), Scheme::Libcrypt(_)))
    }

    /// The hash [`UserFile::is_offloaded`] found for `user`, for a worker
    /// thread, and whether the user is known (else it is the dummy, whose
    /// check is counted as [`UserFile::verify_password`] counts it).
    pub fn offloaded_hash(&self, user: &str) -> Option<(PasswordHash, bool)> {
        let (h, known) = self.htpasswd_entry(user)?;
        if !matches!(h.scheme(), Scheme::Libcrypt(_)) {
            return None;
        }
        if !known {
            self.note_dummy();
        }
        Some((h.clone(), known))
    }

    /// The hash [`UserFile::verify_password`] checks `user` against.
    fn htpasswd_entry(&self, user: &str) -> Option<(&PasswordHash, bool)> {
        let Table::Htpasswd(t) = &self.table else {
            return None;
        };
        match (t.get(user), &self.dummy_hash) {
            (Some(Some(h)), _) => Some((h, true)),
            (_, Some(dummy)) => Some((dummy, false)),
            (_, None) => None,
        }
    }

    /// Digest: HA1 for `user` in `realm`. plain computes it from the
    /// password; htdigest looks it up; otherwise (and for an unknown user) a
    /// dummy HA1 with `known: false`, so the caller does the same work.
    pub fn digest_ha1(&self, user: &str, realm: &str, algo: DigestAlgorithm) -> Ha1 {
        let found = match &self.table {
            Table::Plain(t) => t
                .get(user)
                .map(|pw| algo.ha1(user.as_bytes(), realm.as_bytes(), pw)),
            Table::Htdigest(t) => {
                t.get(&(user.to_string(), realm.to_string()))
                    .and_then(|e| match algo {
                        DigestAlgorithm::Md5 => e.md5,
                        _ => e.sha,
                    })
            }
            Table::Htpasswd(_) => None,
        };
        match found {
            Some(ha1) => Ha1 { ha1, known: true },
            None => {
                self.note_dummy();
                let ha1 = algo.ha1(user.as_bytes(), realm.as_bytes(), &self.dummy_secret);
                Ha1 { ha1, known: false }
            }
        }
    }

    /// htdigest userhash: the user whose `H(user:realm)` is `hash_hex`
    /// (lowercase). plain files have no realm to hash with: `None`, as in lighttpd.
    pub fn resolve_userhash(
        &self,
        realm: &str,
        algo: DigestAlgorithm,
        hash_hex: &str,
    ) -> Option<String> {
        self.userhash
            .get(&(realm.to_string(), algo, hash_hex.to_string()))
            .cloned()
    }

    /// Number of users (htdigest: user and realm pairs).
    pub fn len(&self) -> usize {
        match &self.table {
            Table::Plain(t) => t.len(),
            Table::Htpasswd(t) => t.len(),
            Table::Htdigest(t) => t.len(),
        }
    }

    /// True when no line was usable.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn stamp(m: &std::fs::Metadata) -> Stamp {
    Stamp {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime: m.mtime(),
        mtime_nsec: m.mtime_nsec(),
    }
}

fn read(path: &Path) -> Result<(Vec<u8>, Stamp), String> {
    let shown = path.display();
    let m = std::fs::metadata(path).map_err(|e| format!("{shown}: cannot read user file: {e}"))?;
    if m.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{shown}: user file is {} bytes, over the {MAX_FILE_BYTES}-byte limit",
            m.len()
        ));
    }
    let data = std::fs::read(path).map_err(|e| format!("{shown}: cannot read user file: {e}"))?;
    Ok((data, stamp(&m)))
}
