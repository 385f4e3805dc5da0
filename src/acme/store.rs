//! The storage directory (`glint.acme.storage`, made 0700): everything
//! glint's ACME client keeps across restarts, as files a person can read.
//!
//! ```text
//! lock                    flock(2): the one process that talks to the CA
//! account.key.pem         the account key (ECDSA P-256)
//! account.json            {"directory": URL, "url": the account's URL}
//! <name>.crt.pem          the certificate chain, leaf first  (ssl.pemfile)
//! <name>.key.pem          its key                            (ssl.privkey)
//! <name>.order.json       the order under way: {"url", "directory"}
//! <name>.order.key.pem    the key its CSR was made with
//! <name>.retry.json       failures in a row and the next try
//! http-01/<token>         key authorizations being validated
//! tls-alpn-01/<name>.crt.pem, .key.pem    the acme-tls/1 certificates
//! ```
//!
//! Every file is written whole under a temporary name and renamed into
//! place, so a reader (another worker, `ssl.pemfile`, the certificate
//! check) never sees half of one. Keys are written 0600.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde_json::Value;

/// The storage directory.
#[derive(Debug, Clone)]
pub struct Store {
    pub dir: PathBuf,
}

/// The directory (below the storage) of http-01 key authorizations.
pub const HTTP01_DIR: &str = "http-01";
/// The directory of tls-alpn-01 certificates, in `ssl.acme-tls-1`'s layout.
pub const TLSALPN01_DIR: &str = "tls-alpn-01";

/// Held while this process talks to the CA; released on drop.
pub struct Lock {
    _lock: Flock<File>,
}

impl Store {
    /// Makes the directory and its two challenge directories (0700) if
    /// missing, and tightens a wider mode on the top one.
    pub fn open(dir: &Path) -> Result<Store, String> {
        let mk = |d: &Path| {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(|e| format!("glint.acme.storage {}: {e}", d.display()))
        };
        mk(dir)?;
        // The http-01 answers are served by the web server process, which
        // is the owner: 0700 all the way.
        mk(&dir.join(HTTP01_DIR))?;
        mk(&dir.join(TLSALPN01_DIR))?;
        let meta = fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("glint.acme.storage {}: chmod 0700: {e}", dir.display()))?;
        }
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    /// The lock, if no other process holds it.
    pub fn try_lock(&self) -> Result<Option<Lock>, String> {
        let path = self.dir.join("lock");
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
            Ok(l) => Ok(Some(Lock { _lock: l })),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, e)) => Err(format!("{}: flock: {e}", path.display())),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn cert_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.crt.pem"))
    }

    pub fn key_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.key.pem"))
    }

    /// Writes `data` to `rel` whole (temporary file, fsync, rename).
    pub fn write(&self, rel: &str, data: &[u8], secret: bool) -> Result<(), String> {
        write_atomic(&self.dir.join(rel), data, secret)
    }

    pub fn read(&self, rel: &str) -> Option<Vec<u8>> {
        fs::read(self.dir.join(rel)).ok()
    }

    pub fn read_json(&self, rel: &str) -> Option<Value> {
        serde_json::from_slice(&self.read(rel)?).ok()
    }

    pub fn write_json(&self, rel: &str, v: &Value) -> Result<(), String> {
        self.write(rel, v.to_string().as_bytes(), false)
    }

    pub fn remove(&self, rel: &str) {
        let _ = fs::remove_file(self.dir.join(rel));
    }
}

/// `path` written whole: a reader sees the old file or the new one.
pub fn write_atomic(path: &Path, data: &[u8], secret: bool) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let res = (|| {
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(if secret { 0o600 } else { 0o644 })
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    res.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// An http-01 token as RFC 8555 8.3 allows it: base64url characters only
/// (so it can name a file and never a path).
pub fn token_ok(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_private_and_locked_once() {
        let base = std::env::temp_dir().join(format!("glint-acme-store-{}", std::process::id()));
        let dir = base.join("acme");
        let s = Store::open(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        Store::open(&dir).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let held = s.try_lock().unwrap();
        assert!(held.is_some());
        // flock is per open file: a second open in this process conflicts too.
        assert!(s.try_lock().unwrap().is_none());
        drop(held);
        assert!(s.try_lock().unwrap().is_some());
        s.write("k.pem", b"secret", true).unwrap();
        let mode = fs::metadata(dir.join("k.pem"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn tokens_name_no_path() {
        assert!(token_ok("Ab-_09"));
        assert!(!token_ok("../x"));
        assert!(!token_ok(""));
        assert!(!token_ok("a.b"));
    }
}
