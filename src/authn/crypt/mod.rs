//! Password hashes as htpasswd files hold them: parsed once when the file is
//! loaded, verified per request.
//!
//! lighttpd's htpasswd backend handles `{SHA}` and `$apr1$` itself and hands
//! everything of 13 bytes or more to the C library's `crypt(3)`. glint
//! implements the formats `htpasswd`, `openssl passwd` and `mkpasswd` write
//! that crypt(3) on Linux verifies: bcrypt (`$2y$`, `$2a$`, `$2b$`), SHA-crypt
//! (`$5$`, `$6$`, with `rounds=`), MD5-crypt (`$1$`) and traditional DES
//! (13 characters; `htpasswd -d`, and lighttpd's own test files). DES counts
//! only a password's first 8 bytes: the loader warns for each such line.
//! The others that the system's libxcrypt knows (yescrypt `$y$`, Debian's
//! default, `$gy$`, scrypt `$7$`, BSDi DES, `$2x$`, ...) are checked by it
//! ([`libcrypt`]), as lighttpd's crypt() call checks them; what it does not
//! know either parses to [`Unsupported`]: that user never logs in and the
//! loader reports the line once.
//!
//! Every verification computes the full hash and compares the result in
//! constant time ([`super::ct_eq`]): no early exit on the first differing byte.

use base64::Engine as _;
use md5::Md5;
use sha1::Sha1;
use sha2::digest::Digest;
use sha_crypt::PasswordVerifier as _;

mod des;
pub mod libcrypt;

pub use des::des_crypt;

/// The crypt(3) alphabet: 64 characters, 6 bits each.
const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// glibc's SHA-crypt bounds (the same as `sha_crypt::Params`'s): `rounds=` below 1000 or above 999,999,999 is
/// clamped, so a stored string holding such a value never matches crypt(3)'s output.
pub const SHA_CRYPT_ROUNDS_MIN: u32 = 1_000;
/// See [`SHA_CRYPT_ROUNDS_MIN`].
pub const SHA_CRYPT_ROUNDS_MAX: u32 = 999_999_999;
/// SHA-crypt's rounds when the string names none.
pub const SHA_CRYPT_ROUNDS_DEFAULT: u32 = 5_000;
/// SHA-crypt uses at most 16 salt characters; MD5-crypt and apr1 at most 8.
/// MD5-crypt stays here: no maintained crate has it (RustCrypto's
/// password-hashes have SHA-crypt, bcrypt's in `bcrypt`), and it is 50
/// lines that the vectors of htpasswd and openssl check.
const SHA_CRYPT_SALT_MAX: usize = 16;
const MD5_CRYPT_SALT_MAX: usize = 8;

/// The kind and cost of a hash: what an attacker's stopwatch can tell apart.
/// The loader picks the most common one in a file for the unknown-user dummy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `$2y$`, `$2a$`, `$2b$` with its cost (log2 of the rounds).
    Bcrypt { cost: u32 },
    /// Apache's `$apr1$`: MD5-crypt with another magic string, 1000 rounds.
    Apr1,
    /// `$1$`: MD5-crypt, 1000 rounds.
    Md5Crypt,
    /// `{SHA}`: base64 of an unsalted SHA-1.
    Sha1,
    /// `$5$` with its rounds.
    Sha256Crypt { rounds: u32 },
    /// `$6$` with its rounds.
    Sha512Crypt { rounds: u32 },
    /// Traditional DES crypt(3): 2 salt characters and 11 of hash.
    DesCrypt,
    /// A scheme libxcrypt checks, with what sets its cost.
    Libcrypt(CostKey),
}

/// What sets the cost of a hash libxcrypt checks: its scheme and
/// parameters (`$y$j9T$`, `$7$CU..../....`, `$2x$05$`, `_J9..`), the salt
/// left out where it can be told apart, at most 24 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CostKey {
    bytes: [u8; 24],
    len: u8,
}

impl CostKey {
    fn of(s: &str) -> CostKey {
        let dollars: Vec<usize> = s.match_indices('$').map(|(i, _)| i).collect();
        let end = if s.starts_with('_') {
            5
        } else if s.starts_with("$7$") {
            14
        } else if s.starts_with("$2") {
            7
        } else if dollars.len() >= 4 {
            dollars[dollars.len() - 2] + 1
        } else if dollars.len() >= 2 {
            dollars[1] + 1
        } else {
            0
        };
        let key = &s.as_bytes()[..end.min(s.len()).min(24)];
        let mut bytes = [0u8; 24];
        bytes[..key.len()].copy_from_slice(key);
        CostKey {
            bytes,
            len: key.len() as u8,
        }
    }
}

/// Why a stored hash can never authenticate, for the load-time report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// One parsed htpasswd hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasswordHash {
    scheme: Scheme,
    form: Form,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Form {
    /// The whole 60-byte string; the bcrypt crate parses it again per check.
    Bcrypt(String),
    /// The raw SHA-1 digest.
    Sha1([u8; 20]),
    /// MD5-crypt and apr1: recompute the whole string and compare it.
    Md5 { salt: String, stored: String },
    /// Traditional DES: the 13 characters (salt first).
    Des(String),
    /// SHA-crypt: the whole string, which RustCrypto's `sha-crypt` reads
    /// (rounds, salt, digest) and checks in constant time.
    Sha(String),
    /// The whole string, for libxcrypt's crypt_rn.
    Libcrypt(String),
}

impl PasswordHash {
    /// Parses the text after `user:` in an htpasswd line.
    pub fn parse(s: &str) -> Result<PasswordHash, Unsupported> {
        let bad = |why: &str| Err(Unsupported(why.to_string()));
        if s.is_empty() {
            return bad("empty password hash");
        }
        if let Some(b64) = s.strip_prefix("{SHA}") {
            let mut digest = [0u8; 20];
            return match base64::engine::general_purpose::STANDARD.decode(b64) {
                Ok(v) if v.len() == 20 => {
                    digest.copy_from_slice(&v);
                    Ok(PasswordHash {
                        scheme: Scheme::Sha1,
                        form: Form::Sha1(digest),
                    })
                }
                _ => bad("{SHA} hash is not base64 of 20 bytes"),
            };
        }
        if let Some(rest) = s.strip_prefix("$apr1$") {
            return parse_md5(s, rest, Scheme::Apr1);
        }
        if let Some(rest) = s.strip_prefix("$1$") {
            return parse_md5(s, rest, Scheme::Md5Crypt);
        }
        if let Some(rest) = s.strip_prefix("$5$") {
            return parse_sha(s, rest, false);
        }
        if let Some(rest) = s.strip_prefix("$6$") {
            return parse_sha(s, rest, true);
        }
        if s.starts_with("$2a$") || s.starts_with("$2b$") || s.starts_with("$2y$") {
            return parse_bcrypt(s);
        }
        if s.len() == 13 && s.bytes().all(|b| ITOA64.contains(&b)) {
            return Ok(PasswordHash {
                scheme: Scheme::DesCrypt,
                form: Form::Des(s.to_string()),
            });
        }
        // lighttpd hands 13 bytes or more to crypt(); only the characters
        // crypt(3) strings are made of (a line of junk is reported, not
        // hashed as a DES setting).
        let crypt_like = |b: u8| ITOA64.contains(&b) || b"$,=_".contains(&b);
        if s.len() >= 13 && s.bytes().all(crypt_like) && libcrypt::knows(s) {
            return Ok(PasswordHash {
                scheme: Scheme::Libcrypt(CostKey::of(s)),
                form: Form::Libcrypt(s.to_string()),
            });
        }
        bad(describe_unsupported(s))
    }

    /// The kind and cost of this hash.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// True when `password` hashes to this value. Always computes the whole
    /// hash; the final compare is constant-time.
    pub fn verify(&self, password: &[u8]) -> bool {
        match &self.form {
            // bcrypt::verify compares with subtle's ct_eq; a string that got
            // past parse_bcrypt does not fail to parse, and if it did, `false`.
            Form::Bcrypt(stored) => bcrypt::verify(password, stored).unwrap_or(false),
            Form::Sha1(digest) => super::ct_eq(&Sha1::digest(password), digest),
            Form::Des(stored) => match des_crypt(password, stored.as_bytes()) {
                Some(c) => super::ct_eq(c.as_bytes(), stored.as_bytes()),
                None => false,
            },
            Form::Md5 { salt, stored } => {
                let magic = if self.scheme == Scheme::Apr1 {
                    "$apr1$"
                } else {
                    "$1$"
                };
                super::ct_eq(
                    md5_crypt(magic, password, salt.as_bytes()).as_bytes(),
                    stored.as_bytes(),
                )
            }
            Form::Sha(stored) => {
                let algorithm = match self.scheme {
                    Scheme::Sha512Crypt { .. } => sha_crypt::Algorithm::Sha512Crypt,
                    _ => sha_crypt::Algorithm::Sha256Crypt,
                };
                sha_crypt::ShaCrypt::from(algorithm)
                    .verify_password(password, stored.as_str())
                    .is_ok()
            }
            Form::Libcrypt(stored) => libcrypt::verify(password, stored),
        }
    }

    /// For a hash libxcrypt checks: one with this hash's setting (scheme,
    /// cost and salt) and a random digest, so checking a password against
    /// it costs what this one costs and never succeeds. `None` for the
    /// other kinds ([`PasswordHash::dummy`] makes those).
    pub fn dummy_like(&self, random: &[u8; 64]) -> Option<PasswordHash> {
        let Form::Libcrypt(s) = &self.form else {
            return None;
        };
        let keep = match s.rfind('$') {
            Some(i) => i + 1,
            None if s.starts_with('_') => 9,
            None => 2,
        };
        let mut t = s.get(..keep)?.to_string();
        for i in 0..s.len() - keep {
            t.push(ITOA64[usize::from(random[i % 64] & 63)] as char);
        }
        PasswordHash::parse(&t)
            .ok()
            .filter(|h| h.scheme == self.scheme && h.stored() != Some(s))
    }

    /// A hash of `scheme`'s kind and cost with random salt and random digest:
    /// verifying any password against it costs what a real entry costs and
    /// never succeeds (2^-128 or less). Built from random bytes alone, so
    /// making it costs nothing at load time even for bcrypt; it goes through
    /// [`PasswordHash::parse`] so it is well-formed (a malformed one would
    /// fail fast and give the timing away). `None` only if that check fails.
    pub fn dummy(scheme: Scheme, random: &[u8; 64]) -> Option<PasswordHash> {
        let crypt_chars = |n: usize, from: usize| -> String {
            (0..n)
                .map(|i| ITOA64[usize::from(random[(from + i) % 64] & 63)] as char)
                .collect()
        };
        let text = match scheme {
            Scheme::Bcrypt { cost } => {
                let b64 = base64::engine::GeneralPurpose::new(
                    &base64::alphabet::BCRYPT,
                    base64::engine::general_purpose::NO_PAD,
                );
                let salt = b64.encode(&random[..16]);
                let digest = b64.encode(&random[16..39]);
                format!("$2y${cost:02}${salt}{digest}")
            }
            Scheme::Sha1 => format!(
                "{{SHA}}{}",
                base64::engine::general_purpose::STANDARD.encode(&random[..20])
            ),
            Scheme::Apr1 => format!("$apr1${}${}", crypt_chars(8, 0), crypt_chars(22, 8)),
            Scheme::Md5Crypt => format!("$1${}${}", crypt_chars(8, 0), crypt_chars(22, 8)),
            Scheme::DesCrypt => crypt_chars(13, 0),
            // (Made from a real entry's setting: see `dummy_like`.)
            Scheme::Libcrypt(_) => return None,
            Scheme::Sha256Crypt { rounds } | Scheme::Sha512Crypt { rounds } => {
                let sha512 = matches!(scheme, Scheme::Sha512Crypt { .. });
                let mut t = String::from(if sha512 { "$6$" } else { "$5$" });
                if rounds != SHA_CRYPT_ROUNDS_DEFAULT {
                    t.push_str(&format!("rounds={rounds}$"));
                }
                let len = if sha512 { 86 } else { 43 };
                t.push_str(&format!(
                    "{}${}",
                    crypt_chars(16, 0),
                    crypt_chars(len - 1, 16)
                ));
                // The last character carries the digest's last bits only.
                let last = random[63] % sha_last_char_limit(sha512);
                t.push(ITOA64[usize::from(last)] as char);
                t
            }
        };
        PasswordHash::parse(&text)
            .ok()
            .filter(|h| h.scheme == scheme)
    }

    /// The stored text for the formats kept as text (bcrypt, MD5-crypt,
    /// SHA-crypt); `None` for `{SHA}`, kept as its digest.
    pub fn stored(&self) -> Option<&str> {
        match &self.form {
            Form::Bcrypt(s)
            | Form::Md5 { stored: s, .. }
            | Form::Sha(s)
            | Form::Des(s)
            | Form::Libcrypt(s) => Some(s),
            Form::Sha1(_) => None,
        }
    }
}

/// Names the formats neither glint nor the system's libxcrypt checks, for
/// the load report.
fn describe_unsupported(s: &str) -> &'static str {
    match s {
        _ if s.starts_with('_') && s.len() == 20 => "BSDi extended DES crypt(3) is not supported",
        _ if s.starts_with("$y$") => "yescrypt ($y$) is not supported",
        _ if s.starts_with("$gy$") => "gost-yescrypt ($gy$) is not supported",
        _ if s.starts_with("$7$") => "scrypt ($7$) is not supported",
        _ if s.starts_with("$2x$") => {
            "bcrypt $2x$ (crypt_blowfish's 8-bit bug mode) is not supported"
        }
        _ if s.starts_with("$1+ntlm$") => "CRYPT-MD5-NTLM ($1+ntlm$) is not supported",
        _ if s.starts_with("$3$") => "NT-Hash ($3$) is not supported",
        _ if s.starts_with("$md5") => "SunMD5 is not supported",
        _ if s.starts_with("$argon2") => "argon2 is not supported",
        _ => "unrecognised password hash format",
    }
}

fn parse_bcrypt(s: &str) -> Result<PasswordHash, Unsupported> {
    let bad = |why: &str| Err(Unsupported(format!("bcrypt hash {why}")));
    let b = s.as_bytes();
    if b.len() != 60 || b[6] != b'$' {
        return bad("is not 60 bytes of $2y$NN$ + 53 characters");
    }
    let cost = match s.get(4..6).and_then(|c| c.parse::<u32>().ok()) {
        Some(c) if (4..=31).contains(&c) => c,
        _ => return bad("cost is not 04..31"),
    };
    let bcrypt_alphabet = |c: &u8| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'/';
    if !b[7..].iter().all(bcrypt_alphabet) {
        return bad("has a character outside [./A-Za-z0-9]");
    }
    // The bcrypt crate rejects base64 with stray low bits; check now so the
    // report happens at load, not as a silent failure per request.
    if !bcrypt_tail_ok(&b[7..]) {
        return bad("does not decode");
    }
    Ok(PasswordHash {
        scheme: Scheme::Bcrypt { cost },
        form: Form::Bcrypt(s.to_string()),
    })
}

/// The 22-character salt and 31-character digest each end on a character
/// whose unused low bits must be zero (16 bytes = 21⅓ chars, 23 = 30⅔).
fn bcrypt_tail_ok(t: &[u8]) -> bool {
    let b64 = base64::engine::GeneralPurpose::new(
        &base64::alphabet::BCRYPT,
        base64::engine::general_purpose::NO_PAD,
    );
    let (salt, digest) = t.split_at(22);
    b64.decode(salt).is_ok_and(|v| v.len() == 16) && b64.decode(digest).is_ok_and(|v| v.len() == 23)
}

fn parse_md5(s: &str, rest: &str, scheme: Scheme) -> Result<PasswordHash, Unsupported> {
    let (salt, digest) = match rest.split_once('$') {
        Some(p) => p,
        None => {
            return Err(Unsupported(
                "MD5-crypt hash has no '$' after the salt".into(),
            ))
        }
    };
    if salt.len() > MD5_CRYPT_SALT_MAX
        || digest.len() != 22
        || !digest.bytes().all(|b| ITOA64.contains(&b))
    {
        return Err(Unsupported(
            "MD5-crypt hash is not magic + salt(<=8) + '$' + 22 characters".into(),
        ));
    }
    Ok(PasswordHash {
        scheme,
        form: Form::Md5 {
            salt: salt.to_string(),
            stored: s.to_string(),
        },
    })
}

fn parse_sha(s: &str, rest: &str, sha512: bool) -> Result<PasswordHash, Unsupported> {
    let bad = |why: String| Err(Unsupported(format!("SHA-crypt hash {why}")));
    let mut rest = rest;
    let mut rounds = None;
    if let Some(after) = rest.strip_prefix("rounds=") {
        if let Some((n, tail)) = after.split_once('$') {
            match n.parse::<u32>() {
                Ok(r) if (SHA_CRYPT_ROUNDS_MIN..=SHA_CRYPT_ROUNDS_MAX).contains(&r) => {
                    rounds = Some(r);
                    rest = tail;
                }
                _ => return bad(format!("rounds={n} is outside {SHA_CRYPT_ROUNDS_MIN}..{SHA_CRYPT_ROUNDS_MAX}: crypt(3) clamps it, so the stored text never matches")),
            }
        }
    }
    let (salt, digest) = match rest.split_once('$') {
        Some(p) => p,
        None => return bad("has no '$' after the salt".into()),
    };
    let want = if sha512 { 86 } else { 43 };
    if salt.len() > SHA_CRYPT_SALT_MAX {
        return bad(format!(
            "salt is {} characters; crypt(3) uses 16, so the stored text never matches",
            salt.len()
        ));
    }
    if digest.len() != want || !digest.bytes().all(|b| ITOA64.contains(&b)) {
        return bad(format!("digest is not {want} characters of [./0-9A-Za-z]"));
    }
    let last = digest.as_bytes()[want - 1];
    let last_value = ITOA64.iter().position(|&c| c == last).unwrap_or(0);
    if last_value >= usize::from(sha_last_char_limit(sha512)) {
        return bad("digest's last character has bits crypt(3) never sets".into());
    }
    // What the verifier will read must read now: a string it refuses would
    // fail fast at every login, so the loader reports it instead.
    if sha_crypt::PasswordHashRef::new(s).is_err() {
        return bad("is not in the modular crypt format".into());
    }
    let r = rounds.unwrap_or(SHA_CRYPT_ROUNDS_DEFAULT);
    let scheme = if sha512 {
        Scheme::Sha512Crypt { rounds: r }
    } else {
        Scheme::Sha256Crypt { rounds: r }
    };
    Ok(PasswordHash {
        scheme,
        form: Form::Sha(s.to_string()),
    })
}

/// The last character of a SHA-crypt digest encodes 4 bits (SHA-256: 256 =
/// 42 * 6 + 4) or 2 (SHA-512: 512 = 85 * 6 + 2), so its value is below 16
/// or 4; the verifier refuses other strings before hashing, which would
/// make a dummy hash fail faster than a real one.
fn sha_last_char_limit(sha512: bool) -> u8 {
    if sha512 {
        4
    } else {
        16
    }
}

/// Appends `n` crypt(3) characters for the 24-bit value `b2 b1 b0`, low 6 bits first.
fn to64(out: &mut String, b2: u8, b1: u8, b0: u8, n: usize) {
    let mut w = (u32::from(b2) << 16) | (u32::from(b1) << 8) | u32::from(b0);
    for _ in 0..n {
        out.push(ITOA64[(w & 0x3f) as usize] as char);
        w >>= 6;
    }
}

/// MD5-crypt (FreeBSD's, `$1$`) and Apache's apr1 (the same with `$apr1$`),
/// as the whole string `magic salt $ digest`.
pub fn md5_crypt(magic: &str, pw: &[u8], salt: &[u8]) -> String {
    let salt = &salt[..salt.len().min(MD5_CRYPT_SALT_MAX)];
    let alt = Md5::new()
        .chain_update(pw)
        .chain_update(salt)
        .chain_update(pw)
        .finalize();
    let mut ctx = Md5::new();
    ctx.update(pw);
    ctx.update(magic.as_bytes());
    ctx.update(salt);
    for chunk in pw.chunks(16) {
        ctx.update(&alt[..chunk.len()]);
    }
    // "Then something really weird": per bit of the length, a NUL byte or the
    // first password byte.
    let mut i = pw.len();
    while i != 0 {
        ctx.update(if i & 1 == 1 { &[0u8][..] } else { &pw[..1] });
        i >>= 1;
    }
    let mut f = ctx.finalize();
    for i in 0..1000 {
        let mut c = Md5::new();
        if i & 1 == 1 {
            c.update(pw)
        } else {
            c.update(f)
        }
        if i % 3 != 0 {
            c.update(salt)
        }
        if i % 7 != 0 {
            c.update(pw)
        }
        if i & 1 == 1 {
            c.update(f)
        } else {
            c.update(pw)
        }
        f = c.finalize();
    }
    let mut out = format!("{magic}{}$", String::from_utf8_lossy(salt));
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        to64(&mut out, f[a], f[b], f[c], 4);
    }
    to64(&mut out, 0, 0, f[11], 2);
    out
}
