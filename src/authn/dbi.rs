//! mod_authn_dbi's check, as lighttpd 1.4.69 makes it for Basic auth:
//! `auth.backend.dbi = ( "sql" => ..., "dbtype" => ..., "dbname" => ...,
//! ... )` names a database ([`crate::sqldb`]'s SQLite, PostgreSQL or
//! MariaDB/MySQL client) and a query whose first `?` is the user name,
//! second the rule's realm and third the digest algorithm (`NONE` for
//! Basic), each escaped by the rules of that database; a fourth `?` makes
//! the query fail. The first column of the first row is the stored
//! password:
//!
//! - starting with `$` (and at least 3 long): a crypt(3) hash, checked
//!   with glint's own crypt (`$1$`, `$5$`, `$6$`, `$2a$`/`$2b$`/`$2y$`)
//!   or, for the other schemes the system's libxcrypt knows (yescrypt
//!   `$y$`, `$gy$`, `$7$`, ...), by libxcrypt's crypt_rn (on this worker
//!   thread, as the rest of the check);
//! - 32 hex digits: MD5 of `user:realm:password` (the Digest HA1);
//! - 64 hex digits: SHA-256 of `user:realm:password`;
//! - anything else: refused.
//!
//! For Digest (`"method" => "digest"`) the third `?` is the client's
//! algorithm (`MD5` or `SHA-256`; lighttpd builds no query for
//! SHA-512-256, so such a login is refused) and the first column must be
//! the HA1 in hex of exactly that algorithm's length (either case): a
//! crypt(3) hash or a plain password cannot give it, and refuses the
//! login. A client's `userhash` needs lighttpd's `sql-userhash` query,
//! which glint refuses at start-up, so it is refused too (as lighttpd
//! refuses it without that query).
//!
//! No row, a database error or a bad stored value refuse the login (401,
//! as lighttpd); the next request connects anew, so a database that comes
//! back is used at once. Each worker thread keeps its own connection.

use std::cell::RefCell;
use std::collections::HashMap;

use md5::Md5;
use sha2::{Digest as _, Sha256};

use crate::sqldb::{Client, Db};

use super::algorithm::{DigestAlgorithm, Hashed};
use super::ask::{Ask, Verdict};
use super::crypt::PasswordHash;
use super::digest::DigestWork;

/// lighttpd's limit on the user name and realm put into the query.
const VALUE_MAX: usize = 1023;

/// One scope's `auth.backend.dbi`, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbiSpec {
    /// `sql`: the query with its `?`.
    pub sql: String,
    pub db: Db,
}

/// The query for `user` under `realm`: the first `?` the user, the second
/// the realm, the third `algorithm` (`NONE`: Basic; `MD5`, `SHA-256`:
/// Digest), each escaped by `client`; a fourth `?`, an empty or over-long
/// value is an error.
pub fn build_query(
    client: &dyn Client,
    sql: &str,
    user: &str,
    realm: &str,
    algorithm: &str,
) -> Result<String, String> {
    let mut out = String::with_capacity(sql.len() + user.len() + realm.len());
    for (i, part) in sql.split('?').enumerate() {
        let value = match i {
            0 => None,
            1 => Some(user),
            2 => Some(realm),
            3 => Some(algorithm),
            _ => return Err("more than three '?' in the query".into()),
        };
        if let Some(v) = value {
            if v.is_empty() || v.len() > VALUE_MAX {
                return Err("a value for the query is empty or too long".into());
            }
            out.push_str(&client.escape(v)?);
        }
        out.push_str(part);
    }
    Ok(out)
}

/// Whether `password` matches the stored value `stored` for `user` in
/// `realm`; see the module doc for the forms.
pub fn password_matches(stored: &str, user: &str, realm: &str, password: &[u8]) -> bool {
    if stored.len() >= 3 && stored.starts_with('$') {
        // `$apr1$` is Apache's, not crypt(3)'s: lighttpd's crypt() fails it.
        if stored.starts_with("$apr1$") {
            return false;
        }
        return PasswordHash::parse(stored).is_ok_and(|h| h.verify(password));
    }
    let parts: [&[u8]; 5] = [user.as_bytes(), b":", realm.as_bytes(), b":", password];
    match stored.len() {
        32 => {
            let mut want = [0u8; 16];
            let mut h = Md5::new();
            parts.iter().for_each(|p| h.update(p));
            crate::syntax::hex_decode_into(stored.as_bytes(), &mut want).is_some()
                && super::ct_eq(&h.finalize(), &want)
        }
        64 => {
            let mut want = [0u8; 32];
            let mut h = Sha256::new();
            parts.iter().for_each(|p| h.update(p));
            crate::syntax::hex_decode_into(stored.as_bytes(), &mut want).is_some()
                && super::ct_eq(&h.finalize(), &want)
        }
        _ => false,
    }
}

thread_local! {
    /// This worker thread's connections, one per database.
    static CONNS: RefCell<HashMap<Db, Box<dyn Client>>> = RefCell::new(HashMap::new());
}

/// The stored password for `ask` (`None`: no row, or SQL NULL);
/// `algorithm` the third `?` (see [`build_query`]).
fn stored_password(s: &DbiSpec, ask: &Ask, algorithm: &str) -> Result<Option<String>, String> {
    CONNS.with(|c| {
        let mut conns = c.borrow_mut();
        // As lighttpd: a failed query is tried once more (on a new
        // connection when the old one broke).
        let mut last = String::new();
        for _ in 0..2 {
            if !conns.contains_key(&s.db) {
                let client = s.db.connect()?;
                conns.insert(s.db.clone(), client);
            }
            let Some(client) = conns.get_mut(&s.db) else {
                return Err("no connection".into());
            };
            let sql = build_query(client.as_ref(), &s.sql, &ask.user, &ask.realm, algorithm)?;
            match client.first_value(&sql) {
                Ok(v) => return Ok(v.value),
                Err(e) => {
                    last = e;
                    if client.broken() {
                        conns.remove(&s.db);
                    }
                }
            }
        }
        Err(last)
    })
}

/// Checks `ask` against the database; see the module doc.
pub fn verify(s: &DbiSpec, ask: &Ask) -> Verdict {
    let stored = match stored_password(s, ask, "NONE") {
        Ok(Some(v)) => v,
        Ok(None) => return Verdict::Denied("dbi: no such user".into()),
        Err(e) => return Verdict::Denied(format!("dbi: {e}")),
    };
    if !password_matches(&stored, &ask.user, &ask.realm, &ask.password) {
        return Verdict::Denied("dbi: wrong password".into());
    }
    allowed(ask)
}

fn allowed(ask: &Ask) -> Verdict {
    if ask.rule.valid_user || ask.rule.users.contains(&ask.user) {
        Verdict::Granted
    } else {
        Verdict::Denied("not allowed by auth.require".into())
    }
}

/// The HA1 `stored` holds for `algo`: hex of exactly its length.
pub fn stored_ha1(stored: &str, algo: DigestAlgorithm) -> Option<Hashed> {
    let mut buf = [0u8; 32];
    let out = buf.get_mut(..algo.digest_len())?;
    crate::syntax::hex_decode_into(stored.as_bytes(), out)?;
    Hashed::from_slice(out)
}

/// Finishes the Digest check `work` (the loop checked all up to the
/// nonce) with the HA1 the database holds for `ask`'s user and realm.
pub fn verify_digest(s: &DbiSpec, ask: &Ask, work: &DigestWork) -> Verdict {
    if work.userhash {
        return Verdict::Denied("dbi: userhash needs \"sql-userhash\"".into());
    }
    let algorithm = match work.algo {
        DigestAlgorithm::Md5 => "MD5",
        DigestAlgorithm::Sha256 => "SHA-256",
        // (lighttpd builds no query for it.)
        DigestAlgorithm::Sha512_256 => {
            return Verdict::Denied("dbi: no query for SHA-512-256".into())
        }
    };
    let stored = match stored_password(s, ask, algorithm) {
        Ok(Some(v)) => v,
        Ok(None) => return Verdict::Denied("dbi: no such user".into()),
        Err(e) => return Verdict::Denied(format!("dbi: {e}")),
    };
    let Some(ha1) = stored_ha1(&stored, work.algo) else {
        return Verdict::Denied(format!("dbi: the stored value is no {algorithm} HA1"));
    };
    if !work.matches(&ha1) {
        return Verdict::Denied("dbi: wrong password".into());
    }
    allowed(ask)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Std;
    impl Client for Std {
        fn escape(&self, v: &str) -> Result<String, String> {
            crate::sqldb::escape_standard(v, false)
        }
        fn first_value(&mut self, _: &str) -> Result<crate::sqldb::FirstValue, String> {
            Ok(Default::default())
        }
        fn broken(&self) -> bool {
            false
        }
    }

    #[test]
    fn user_realm_and_algorithm_in_order() {
        let q = "SELECT p FROM u WHERE user='?' AND realm='?' AND a='?'";
        assert_eq!(
            build_query(&Std, q, "o'x", "R", "NONE").as_deref(),
            Ok("SELECT p FROM u WHERE user='o''x' AND realm='R' AND a='NONE'")
        );
        assert!(build_query(&Std, "? ? ? ?", "a", "b", "MD5").is_err());
        assert!(build_query(&Std, "'?'", "", "b", "MD5").is_err());
        assert_eq!(
            build_query(&Std, "? ? ?", "a", "b", "SHA-256").as_deref(),
            Ok("a b SHA-256")
        );
    }

    #[test]
    fn stored_forms() {
        // MD5("alice:R:secret") and SHA-256 of the same.
        let md5 = crate::syntax::hex_string(&Md5::digest(b"alice:R:secret"));
        let sha = crate::syntax::hex_string(&Sha256::digest(b"alice:R:secret"));
        assert!(password_matches(&md5, "alice", "R", b"secret"));
        assert!(password_matches(
            &md5.to_uppercase(),
            "alice",
            "R",
            b"secret"
        ));
        assert!(!password_matches(&md5, "alice", "R", b"wrong"));
        assert!(!password_matches(&md5, "alice", "S", b"secret"));
        assert!(password_matches(&sha, "alice", "R", b"secret"));
        assert!(!password_matches("secret", "alice", "R", b"secret"));
        let md5crypt = crate::authn::crypt::md5_crypt("$1$", b"secret", b"saltsalt");
        assert!(password_matches(&md5crypt, "alice", "R", b"secret"));
        assert!(!password_matches(&md5crypt, "alice", "R", b"secreT"));
        assert!(!password_matches("$y$j9T$abc$def", "alice", "R", b"x"));
        let yes = "$y$j9T$9QwHghd13Odi/dg.VDkbd1$2Ltr8yED.nI.XBgDISp1BSl2Z5lZOXEQLbG8K/Wa/u7";
        assert!(password_matches(yes, "alice", "R", b"password"));
        assert!(!password_matches(yes, "alice", "R", b"passwore"));
    }

    #[test]
    fn digest_takes_only_the_ha1_of_its_algorithm() {
        let md5 = crate::syntax::hex_string(&Md5::digest(b"alice:R:secret"));
        let sha = crate::syntax::hex_string(&Sha256::digest(b"alice:R:secret"));
        let want = DigestAlgorithm::Md5.ha1(b"alice", b"R", b"secret");
        assert_eq!(stored_ha1(&md5, DigestAlgorithm::Md5), Some(want));
        assert_eq!(
            stored_ha1(&md5.to_uppercase(), DigestAlgorithm::Md5),
            Some(want)
        );
        assert_eq!(stored_ha1(&md5, DigestAlgorithm::Sha256), None);
        assert!(stored_ha1(&sha, DigestAlgorithm::Sha256).is_some());
        assert_eq!(stored_ha1(&sha, DigestAlgorithm::Md5), None);
        assert_eq!(stored_ha1("secret", DigestAlgorithm::Md5), None);
        let md5crypt = crate::authn::crypt::md5_crypt("$1$", b"secret", b"saltsalt");
        assert_eq!(stored_ha1(&md5crypt, DigestAlgorithm::Md5), None);
    }
}
