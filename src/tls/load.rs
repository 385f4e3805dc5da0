//! Reading certificates, keys, CA lists, CRLs and OCSP responses from the
//! files the options name, with `rustls::pki_types::pem::PemObject`.
//! PEM files may hold anything else as well (lighttpd's combined
//! `ssl.pemfile`); a file without "-----" is read as one DER object, as
//! mod_openssl does. Buffers that held key material are zeroed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use super::{x509, TlsError};

/// Largest certificate, key, CA or CRL file read. lighttpd allows 512 MB
/// and "expects < 1 MB"; a full CA bundle is some 220 kB.
const MAX_PEM_FILE: u64 = 32 << 20;
/// Largest OCSP response read (lighttpd: 1 MB, "expect < 1 KB").
const MAX_OCSP_FILE: u64 = 1 << 20;
/// Certificates followed when building a chain from `ssl.ca-file`.
const MAX_CHAIN: usize = 10;

fn file_err(path: &Path, reason: impl Into<String>) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>, TlsError> {
    let meta = std::fs::metadata(path).map_err(|e| file_err(path, e.to_string()))?;
    if meta.len() > limit {
        return Err(file_err(path, format!("larger than {limit} bytes")));
    }
    std::fs::read(path).map_err(|e| file_err(path, e.to_string()))
}

fn wipe(buf: &mut [u8]) {
    buf.fill(0);
    // Keeps the zeroing from being dropped as a dead store before the free.
    std::hint::black_box(buf);
}

fn is_pem(data: &[u8]) -> bool {
    data.windows(5).any(|w| w == b"-----")
}

/// Every certificate in a PEM file, or the one in a DER file.
pub(crate) fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let data = read_file(path, MAX_PEM_FILE)?;
    if !is_pem(&data) {
        return Ok(vec![CertificateDer::from(data)]);
    }
    CertificateDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(path, format!("couldn't read X509 certificates: {e}")))
}

/// The first private key of a PEM file, or the DER key a file holds.
pub(crate) fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let mut data = read_file(path, MAX_PEM_FILE)?;
    let key = if is_pem(&data) {
        PrivateKeyDer::from_pem_slice(&data).map_err(|e| e.to_string())
    } else {
        PrivateKeyDer::try_from(data.as_slice())
            .map(|k| k.clone_key())
            .map_err(|e| e.to_string())
    };
    wipe(&mut data);
    key.map_err(|e| file_err(path, format!("couldn't read private key: {e}")))
}

/// A certificate and key as loaded, with what the resolver and `-tt` need.
pub(crate) struct LoadedCert {
    pub key: CertifiedKey,
    /// DNS names of the leaf (subjectAltName), lower case.
    pub names: Vec<String>,
    pub not_before: i64,
    pub not_after: i64,
    pub must_staple: bool,
}

/// Loads `ssl.pemfile` (+ `ssl.privkey`), checks the key matches the
/// certificate and, when the file holds only the leaf, completes the chain
/// from `ca` (`ssl.ca-file`) up to but not including the root, as
/// mod_openssl does with SSL_BUILD_CHAIN_FLAG_NO_ROOT.
pub(crate) fn certified_key(
    pemfile: &Path,
    privkey: &Path,
    ca: Option<&[CertificateDer<'static>]>,
    provider: &CryptoProvider,
) -> Result<LoadedCert, TlsError> {
    let mut chain = certs(pemfile)?;
    let Some(leaf) = chain.first() else {
        return Err(file_err(pemfile, "no certificate in the file"));
    };
    let fields = x509::cert(leaf.as_ref())
        .ok_or_else(|| file_err(pemfile, "the certificate does not parse"))?;
    let names = fields
        .dns_names
        .iter()
        .map(|n| n.to_ascii_lowercase())
        .collect();
    let (not_before, not_after, must_staple) =
        (fields.not_before, fields.not_after, fields.must_staple);
    if chain.len() == 1 && fields.subject != fields.issuer {
        if let Some(ca) = ca {
            let mut extra = Vec::new();
            let mut issuer = fields.issuer.clone();
            while extra.len() < MAX_CHAIN {
                let Some((c, f)) = ca
                    .iter()
                    .filter_map(|c| x509::cert(c.as_ref()).map(|f| (c, f)))
                    .find(|(_, f)| f.subject == issuer)
                else {
                    break;
                };
                if f.subject == f.issuer {
                    break; // the root stays out
                }
                issuer = f.issuer;
                extra.push(c.clone());
            }
            chain.extend(extra);
        }
    }
    let key_der = private_key(privkey)?;
    let signing = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| file_err(privkey, format!("unusable private key: {e}")))?;
    let key = CertifiedKey::new(chain, signing);
    key.keys_match().map_err(|e| TlsError::File {
        path: pemfile.to_path_buf(),
        reason: format!(
            "private key {} does not match the certificate public key: {e}",
            privkey.display()
        ),
    })?;
    Ok(LoadedCert {
        key,
        names,
        not_before,
        not_after,
        must_staple,
    })
}

/// The certificates of `ssl.ca-file`; an empty file is an error, as in
/// lighttpd ("ssl.verifyclient.ca-file is empty").
pub(crate) fn ca_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = certs(path)?;
    if certs.is_empty() {
        return Err(file_err(path, "no certificate in the CA file"));
    }
    Ok(certs)
}

pub(crate) fn root_store(
    path: &Path,
    certs: &[CertificateDer<'static>],
) -> Result<rustls::RootCertStore, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for c in certs {
        store
            .add(c.clone())
            .map_err(|e| file_err(path, format!("not a usable CA certificate: {e}")))?;
    }
    Ok(store)
}

/// The subjects (DER Names) of the certificates of `ssl.ca-dn-file`.
pub(crate) fn dn_subjects(path: &Path) -> Result<Vec<Vec<u8>>, TlsError> {
    let certs = ca_certs(path)?;
    certs
        .iter()
        .map(|c| {
            x509::cert(c.as_ref())
                .map(|f| f.subject)
                .ok_or_else(|| file_err(path, "a certificate does not parse"))
        })
        .collect()
}

pub(crate) fn crls(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let data = read_file(path, MAX_PEM_FILE)?;
    let crls = CertificateRevocationListDer::pem_slice_iter(&data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(path, format!("couldn't read CRLs: {e}")))?;
    if crls.is_empty() {
        return Err(file_err(path, "no X509 CRL in the file"));
    }
    Ok(crls)
}

/// An OCSP response (DER) and its nextUpdate.
pub(crate) fn staple(path: &Path) -> Result<(Vec<u8>, Option<i64>), TlsError> {
    let data = read_file(path, MAX_OCSP_FILE)?;
    let next = x509::ocsp_next_update(&data)
        .map_err(|()| file_err(path, "not a successful DER OCSP response"))?;
    Ok((data, next))
}

/// The files of an ACME tls-alpn-01 challenge for `name` in `dir`, after
/// lighttpd's checks: a name, no '/', no leading '.'.
pub(crate) fn acme_paths(dir: &Path, name: &str) -> Option<(PathBuf, PathBuf)> {
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    Some((
        dir.join(format!("{name}.crt.pem")),
        dir.join(format!("{name}.key.pem")),
    ))
}

pub(crate) fn acme_key(
    dir: &Path,
    name: &str,
    provider: &CryptoProvider,
) -> Option<Arc<CertifiedKey>> {
    let (crt, key) = acme_paths(dir, name)?;
    let loaded = certs(&crt).and_then(|chain| {
        let signing = provider
            .key_provider
            .load_private_key(private_key(&key)?)
            .map_err(|e| file_err(&key, format!("unusable private key: {e}")))?;
        // No keys_match(): it parses the certificate with webpki, which
        // refuses the critical acmeIdentifier extension (RFC 8737 3) every
        // acme-tls/1 certificate carries. The CA checks the key itself.
        Ok(CertifiedKey::new(chain, signing))
    });
    match loaded {
        Ok(c) => Some(Arc::new(c)),
        Err(e) => {
            log::error!("SSL: Failed to load acme-tls/1 certificate for {name}: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acme_names_are_checked() {
        let d = Path::new("/acme");
        assert!(acme_paths(d, "").is_none());
        assert!(acme_paths(d, "../etc").is_none());
        assert!(acme_paths(d, "a/b").is_none());
        assert_eq!(
            acme_paths(d, "a.example").unwrap().0,
            PathBuf::from("/acme/a.example.crt.pem")
        );
    }

    #[test]
    fn missing_and_empty_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("glint-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "-----BEGIN NOTHING-----\n").unwrap();
        assert!(ca_certs(&empty).is_err());
        assert!(private_key(&empty).is_err());
        assert!(crls(&empty).is_err());
        assert!(certs(&dir.join("missing.pem")).is_err());
        std::fs::write(&empty, b"\x30\x03\x02\x01\x01").unwrap();
        assert!(staple(&empty).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
