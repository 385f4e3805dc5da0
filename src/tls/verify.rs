//! Client certificates (`ssl.verifyclient.*`): a rustls verifier around
//! [`WebPkiClientVerifier`] with lighttpd's depth limit, `ssl.ca-dn-file`
//! issuer rule and non-enforcing mode, and the `SSL_CLIENT_*` values
//! lighttpd gives a request.
//!
//! With `enforce` off lighttpd lets a client whose certificate fails
//! verification in and reports `SSL_CLIENT_VERIFY=FAILED:...`; so does
//! this verifier (the signature proving the client holds the key is still
//! checked). The verdict is taken again after the handshake from the
//! presented chain, since a rustls verifier keeps no per-connection state.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};

use super::options::VerifySpec;
use super::x509;

#[derive(Debug)]
pub(crate) struct ClientVerifier {
    inner: Arc<dyn ClientCertVerifier>,
    enforce: bool,
    depth: u32,
    /// Subjects from `ssl.ca-dn-file`: the leaf's issuer must be one.
    dn_issuers: Option<Vec<Vec<u8>>>,
}

impl ClientVerifier {
    pub fn new(
        inner: Arc<dyn ClientCertVerifier>,
        spec: &VerifySpec,
        dn_issuers: Option<Vec<Vec<u8>>>,
    ) -> Self {
        ClientVerifier {
            inner,
            enforce: spec.enforce,
            depth: spec.depth,
            dn_issuers,
        }
    }

    /// Builds the webpki verifier lighttpd's options describe.
    pub fn webpki(
        roots: rustls::RootCertStore,
        hints: Option<Vec<DistinguishedName>>,
        crls: Vec<rustls::pki_types::CertificateRevocationListDer<'static>>,
    ) -> Result<Arc<dyn ClientCertVerifier>, String> {
        let provider = Arc::new(super::provider::default_provider());
        let mut b = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        if let Some(h) = hints {
            b = b.clear_root_hint_subjects().add_root_hint_subjects(h);
        }
        if !crls.is_empty() {
            // OpenSSL's X509_V_FLAG_CRL_CHECK_ALL: every certificate of the
            // chain, a missing CRL fails, an expired CRL fails.
            b = b.with_crls(crls).enforce_revocation_expiration();
        }
        // Optional certificates are handled here (enforce off), so webpki
        // is always asked to verify what was presented.
        b.allow_unauthenticated().build().map_err(|e| e.to_string())
    }

    /// lighttpd's checks, strictest first: chain depth, the webpki path,
    /// the `ssl.ca-dn-file` issuer.
    pub fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<(), Error> {
        // OpenSSL counts the leaf as depth 0 and its issuer chain upwards,
        // the root included; webpki does not say which path it built, so
        // the intermediates the client sent stand for it (an upper bound).
        if intermediates.len() as u64 + 1 > self.depth as u64 {
            return Err(Error::General(format!(
                "certificate chain longer than ssl.verifyclient.depth {}",
                self.depth
            )));
        }
        self.inner
            .verify_client_cert(end_entity, intermediates, now)?;
        if let Some(dn) = &self.dn_issuers {
            let issuer = x509::cert(end_entity.as_ref()).map(|c| c.issuer);
            if !issuer.is_some_and(|i| dn.contains(&i)) {
                return Err(Error::General(
                    "certificate not issued by a CA in ssl.ca-dn-file".to_string(),
                ));
            }
        }
        Ok(())
    }
}

impl ClientCertVerifier for ClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.enforce
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match self.check(end_entity, intermediates, now) {
            Ok(()) => Ok(ClientCertVerified::assertion()),
            Err(e) if self.enforce => Err(e),
            Err(_) => Ok(ClientCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// What lighttpd's `https_add_ssl_client_entries` exports for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCertInfo {
    /// `SSL_CLIENT_VERIFY`: `SUCCESS`, `NONE` or `FAILED:<reason>`.
    pub verify: String,
    /// `SSL_CLIENT_S_DN` in OpenSSL's one-line form (`C = US, CN = x`).
    pub subject_dn: String,
    /// `SSL_CLIENT_S_DN_<short name>` pairs, in certificate order.
    pub subject: Vec<(String, String)>,
    /// `SSL_CLIENT_M_SERIAL`: upper-case hex as OpenSSL's BN_bn2hex.
    pub serial: String,
    /// `REMOTE_USER` from `ssl.verifyclient.username`.
    pub username: Option<String>,
    /// `SSL_CLIENT_CERT` (with `ssl.verifyclient.exportcert`).
    pub cert_pem: Option<String>,
}

impl ClientCertInfo {
    fn verdict(verify: String) -> Self {
        ClientCertInfo {
            verify,
            subject_dn: String::new(),
            subject: Vec::new(),
            serial: String::new(),
            username: None,
            cert_pem: None,
        }
    }

    pub(crate) fn new(
        chain: Option<&[CertificateDer<'static>]>,
        verifier: &ClientVerifier,
        spec: &VerifySpec,
    ) -> Self {
        let Some((leaf, rest)) = chain.and_then(|c| c.split_first()) else {
            return Self::verdict("NONE".to_string());
        };
        if let Err(e) = verifier.check(leaf, rest, UnixTime::now()) {
            // lighttpd stops at the verdict when verification failed.
            return Self::verdict(format!("FAILED:{e}"));
        }
        let Some(c) = x509::cert(leaf.as_ref()) else {
            return Self::verdict("FAILED:unparsable certificate".to_string());
        };
        let mut subject = Vec::new();
        let mut oneline = Vec::new();
        for a in c.subject_entries() {
            match a.short_name {
                Some(sn) => {
                    oneline.push(format!("{sn} = {}", oneline_value(&a.value)));
                    subject.push((sn.to_string(), a.value));
                }
                None => oneline.push(format!("{} = {}", a.dotted, oneline_value(&a.value))),
            }
        }
        let mut info = ClientCertInfo {
            verify: "SUCCESS".to_string(),
            subject_dn: oneline.join(", "),
            subject,
            serial: serial_hex(&c.serial),
            username: None,
            cert_pem: spec.export_cert.then(|| pem(leaf.as_ref())),
        };
        if let Some(var) = &spec.username {
            info.username = info.env_value(var);
        }
        info
    }

    fn env_value(&self, var: &str) -> Option<String> {
        let sn = var.strip_prefix("SSL_CLIENT_S_DN_")?;
        self.subject
            .iter()
            .find(|(k, _)| k == sn)
            .map(|(_, v)| v.clone())
    }

    /// The request variables lighttpd sets: `SSL_CLIENT_*`, and
    /// `REMOTE_USER` / `AUTH_TYPE` when a username was configured and found.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut out = vec![("SSL_CLIENT_VERIFY".to_string(), self.verify.clone())];
        if self.verify != "SUCCESS" {
            return out;
        }
        out.push(("SSL_CLIENT_S_DN".to_string(), self.subject_dn.clone()));
        for (k, v) in &self.subject {
            out.push((format!("SSL_CLIENT_S_DN_{k}"), v.clone()));
        }
        out.push(("SSL_CLIENT_M_SERIAL".to_string(), self.serial.clone()));
        if let Some(u) = &self.username {
            out.push(("REMOTE_USER".to_string(), u.clone()));
            out.push(("AUTH_TYPE".to_string(), "SSL_CLIENT_VERIFY".to_string()));
        }
        if let Some(p) = &self.cert_pem {
            out.push(("SSL_CLIENT_CERT".to_string(), p.clone()));
        }
        out
    }
}

/// XN_FLAG_ONELINE quotes a value holding an RFC 2253 special character.
fn oneline_value(v: &str) -> String {
    if v.contains([',', '+', '"', '\\', '<', '>', ';']) {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        v.to_string()
    }
}

fn serial_hex(serial: &[u8]) -> String {
    let start = serial.iter().position(|b| *b != 0).unwrap_or(serial.len());
    if start == serial.len() {
        return "0".to_string();
    }
    crate::syntax::hex_upper_string(&serial[start..])
}

/// PEM encoding of a certificate, 64 base64 characters a line.
pub(crate) fn pem(der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_and_pem_encoding() {
        assert_eq!(serial_hex(&[0x00, 0x8f, 0x01]), "8F01");
        assert_eq!(serial_hex(&[0x00]), "0");
        let p = pem(b"hello world!x");
        assert!(p.contains("\naGVsbG8gd29ybGQheA==\n"), "{p}");
        let der: Vec<u8> = (0..=255u8).collect();
        let p = pem(&der);
        let back: Vec<_> = rustls::pki_types::pem::PemObject::pem_slice_iter(p.as_bytes())
            .collect::<Result<Vec<CertificateDer<'static>>, _>>()
            .unwrap();
        assert_eq!(back[0].as_ref(), der.as_slice());
    }

    #[test]
    fn oneline_quotes_specials() {
        assert_eq!(oneline_value("a, b"), "\"a, b\"");
        assert_eq!(oneline_value("plain"), "plain");
    }
}
