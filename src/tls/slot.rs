//! One certificate and key as served: loaded from its files, swapped whole
//! when the files change (certbot or dehydrated replacing them, or glint's
//! own ACME client writing a renewal) or when its OCSP staple changes.
//!
//! A handshake takes the `Arc<CertifiedKey>` in force when it starts, so a
//! swap never disturbs a connection. A file that does not parse keeps the
//! running certificate and is logged; it is read again once its mtime
//! changes once more.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::sign::CertifiedKey;

use super::load::{self, LoadedCert};
use super::TlsError;

/// A response without nextUpdate is kept for an hour (lighttpd's rule).
/// lighttpd only looks at the file within 256 s of nextUpdate; glint
/// stats it at every staple check (64 s), so a renewed response is served
/// from the next check on.
const STAPLE_RETRY_SECS: i64 = 3600;

/// What a slot serves now.
#[derive(Debug, Default)]
struct Served {
    key: Option<Arc<CertifiedKey>>,
    /// DNS names of the leaf (for an ACME slot without a certificate
    /// yet: the name it is for).
    names: Vec<String>,
    not_before: i64,
    not_after: i64,
    must_staple: bool,
    /// The mtimes of the certificate and key files when last read.
    stamp: Option<(SystemTime, SystemTime)>,
    /// The mtimes seen at the last settled check ([`CertSlot::refresh_settled`]).
    seen: Option<(SystemTime, SystemTime)>,
}

#[derive(Debug)]
struct StapleState {
    path: PathBuf,
    loaded_at: i64,
    next_update: i64,
    present: bool,
}

/// A certificate and key, swapped whole when their files or the OCSP
/// staple change.
#[derive(Debug)]
pub(crate) struct CertSlot {
    served: Mutex<Served>,
    pub(crate) pemfile: PathBuf,
    privkey: PathBuf,
    /// `ssl.ca-file`, to complete a chain that holds only the leaf.
    ca: Option<Vec<CertificateDer<'static>>>,
    provider: Arc<CryptoProvider>,
    staple: Option<Mutex<StapleState>>,
    /// Kept by glint's ACME client: looked at every second, so that a
    /// certificate it writes is served at once.
    pub(crate) managed: bool,
}

pub(crate) fn name_covers(pattern: &str, name: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => name
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest == suffix),
        None => pattern == name,
    }
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn unix(t: Option<SystemTime>) -> Option<i64> {
    t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
}

impl CertSlot {
    /// Loads `pemfile` and `privkey`; an error is the caller's to report.
    pub(crate) fn load(
        pemfile: &Path,
        privkey: &Path,
        ca: Option<&[CertificateDer<'static>]>,
        provider: &Arc<CryptoProvider>,
        stapling_file: Option<PathBuf>,
    ) -> Result<CertSlot, TlsError> {
        let slot = CertSlot::empty(pemfile, privkey, ca, provider, stapling_file, Vec::new());
        let stamp = slot.stamp();
        let loaded = load::certified_key(pemfile, privkey, ca, provider)?;
        slot.install(loaded, stamp);
        Ok(slot)
    }

    /// A slot for files that may not exist yet (a certificate glint's ACME
    /// client is to obtain for `names`): it serves nothing until they load.
    pub(crate) fn empty(
        pemfile: &Path,
        privkey: &Path,
        ca: Option<&[CertificateDer<'static>]>,
        provider: &Arc<CryptoProvider>,
        stapling_file: Option<PathBuf>,
        names: Vec<String>,
    ) -> CertSlot {
        let managed = !names.is_empty();
        CertSlot {
            served: Mutex::new(Served {
                names,
                ..Served::default()
            }),
            pemfile: pemfile.to_path_buf(),
            privkey: privkey.to_path_buf(),
            ca: ca.map(<[_]>::to_vec),
            provider: Arc::clone(provider),
            staple: stapling_file.map(|path| {
                Mutex::new(StapleState {
                    path,
                    loaded_at: 0,
                    next_update: 0,
                    present: false,
                })
            }),
            managed,
        }
    }

    fn served(&self) -> Option<MutexGuard<'_, Served>> {
        self.served.lock().ok()
    }

    fn stamp(&self) -> Option<(SystemTime, SystemTime)> {
        Some((mtime(&self.pemfile)?, mtime(&self.privkey)?))
    }

    fn install(&self, loaded: LoadedCert, stamp: Option<(SystemTime, SystemTime)>) {
        let Some(mut s) = self.served() else { return };
        let mut key = loaded.key;
        // The staple belongs to the certificate it was issued for: a new
        // certificate starts without one, until the staple check.
        if s.not_after == loaded.not_after && s.names == loaded.names {
            key.ocsp = s.key.as_ref().and_then(|k| k.ocsp.clone());
        }
        *s = Served {
            key: Some(Arc::new(key)),
            names: loaded.names,
            not_before: loaded.not_before,
            not_after: loaded.not_after,
            must_staple: loaded.must_staple,
            stamp,
            seen: stamp,
        };
    }

    pub(crate) fn get(&self) -> Option<Arc<CertifiedKey>> {
        self.served().and_then(|s| s.key.clone())
    }

    pub(crate) fn has_key(&self) -> bool {
        self.served().is_some_and(|s| s.key.is_some())
    }

    pub(crate) fn covers(&self, name: &str) -> bool {
        self.served()
            .is_some_and(|s| s.names.iter().any(|p| name_covers(p, name)))
    }

    /// `(not_before, not_after, must_staple)` of what is served, if anything.
    pub(crate) fn dates(&self) -> Option<(i64, i64, bool)> {
        let s = self.served()?;
        s.key.as_ref()?;
        Some((s.not_before, s.not_after, s.must_staple))
    }

    /// Reads the files again when their mtimes differ from those of the
    /// last read. Returns whether a new certificate is now served. A file
    /// that does not load keeps the running certificate, logged once per
    /// change of the files.
    pub(crate) fn refresh(&self) -> bool {
        self.refresh_when(false)
    }

    /// [`CertSlot::refresh`] once the files have settled: read only when
    /// their mtimes are those of the previous check as well, so that the
    /// per-second check does not read a certificate renamed into place
    /// before its key (certbot renames one file after the other).
    pub(crate) fn refresh_settled(&self) -> bool {
        self.refresh_when(true)
    }

    fn refresh_when(&self, settled: bool) -> bool {
        let stamp = self.stamp();
        let (old, had_key) = match self.served() {
            Some(mut s) => {
                let seen = std::mem::replace(&mut s.seen, stamp);
                if settled && stamp != seen {
                    return false;
                }
                (s.stamp, s.key.is_some())
            }
            None => return false,
        };
        if stamp.is_none() || stamp == old {
            return false;
        }
        match load::certified_key(
            &self.pemfile,
            &self.privkey,
            self.ca.as_deref(),
            &self.provider,
        ) {
            Ok(loaded) => {
                self.install(loaded, stamp);
                self.refresh_staple(super::tickets::unix_now(), true);
                log::info!("SSL: certificate {} (re)loaded", self.pemfile.display());
                true
            }
            Err(e) => {
                if let Some(mut s) = self.served() {
                    s.stamp = stamp;
                }
                let keeps = if had_key {
                    "keeping the certificate in use"
                } else {
                    "no certificate to serve yet"
                };
                log::error!("{e}; {keeps}");
                false
            }
        }
    }

    fn set_ocsp(&self, ocsp: Option<Vec<u8>>) {
        let Some(mut s) = self.served() else { return };
        if let Some(cur) = &s.key {
            let mut k = CertifiedKey::new(cur.cert.clone(), Arc::clone(&cur.key));
            k.ocsp = ocsp;
            s.key = Some(Arc::new(k));
        }
    }

    /// mod_openssl_refresh_stapling_file, looking at the file every time.
    pub(crate) fn refresh_staple(&self, now: i64, force: bool) {
        let Some(st) = &self.staple else { return };
        let Ok(mut st) = st.lock() else { return };
        let mtime = unix(mtime(&st.path));
        if !force && mtime.is_none_or(|m| m <= st.loaded_at) {
            if st.present && st.next_update < now {
                self.expire_staple(&mut st);
            }
            return;
        }
        match load::staple(&st.path) {
            Err(e) => log::error!("SSL: OCSP stapling file read error: {e}"),
            Ok((der, next)) => {
                st.loaded_at = now;
                match next {
                    None => {
                        // No nextUpdate: keep it and look again in an hour.
                        st.next_update = now + STAPLE_RETRY_SECS;
                        st.loaded_at = 0;
                    }
                    Some(t) if t < now => {
                        st.present = true;
                        self.expire_staple(&mut st);
                        return;
                    }
                    Some(t) => st.next_update = t,
                }
                self.set_ocsp(Some(der));
                st.present = true;
            }
        }
    }

    fn expire_staple(&self, st: &mut StapleState) {
        if !st.present {
            return;
        }
        self.set_ocsp(None);
        st.present = false;
        if self.dates().is_some_and(|(_, _, must)| must) {
            log::error!(
                "certificate {} marked OCSP Must-Staple, but OCSP response expired from ssl.stapling-file {}",
                self.pemfile.display(),
                st.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cover_one_label() {
        assert!(name_covers("*.example.com", "a.example.com"));
        assert!(!name_covers("*.example.com", "b.a.example.com"));
        assert!(!name_covers("*.example.com", "example.com"));
        assert!(!name_covers("*.example.com", ".example.com"));
        assert!(name_covers("example.com", "example.com"));
    }
}
