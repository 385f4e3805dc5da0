//! The account key and the JSON Web Signatures of RFC 8555 6.2: ES256
//! (ECDSA P-256 with SHA-256, RFC 7518 3.4), the public key as a JWK, and
//! its thumbprint (RFC 7638) for key authorizations.
//!
//! Keys are made and signed with rcgen, over the crypto provider glint's
//! TLS already uses (aws-lc-rs or ring). rcgen signs as X.509 does, an
//! ECDSA signature DER-encoded; JWS wants the two integers as fixed
//! 32-byte halves, which [`der_to_fixed`] makes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rcgen::{KeyPair, SigningKey, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::KeyType;

/// base64url without padding, as every JOSE field is.
pub fn b64(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

/// A new key of `kind` (PKCS#8), for a certificate.
pub fn new_key(kind: KeyType) -> Result<KeyPair, String> {
    let alg = match kind {
        KeyType::EcdsaP256 => &PKCS_ECDSA_P256_SHA256,
        KeyType::EcdsaP384 => &PKCS_ECDSA_P384_SHA384,
    };
    KeyPair::generate_for(alg).map_err(|e| format!("making a key: {e}"))
}

/// The ACME account's key: ECDSA P-256, signing ES256.
pub struct AccountKey {
    key: KeyPair,
}

impl AccountKey {
    pub fn generate() -> Result<AccountKey, String> {
        Ok(AccountKey {
            key: new_key(KeyType::EcdsaP256)?,
        })
    }

    pub fn from_pem(pem: &str) -> Result<AccountKey, String> {
        let key = KeyPair::from_pem(pem).map_err(|e| format!("account key: {e}"))?;
        if key.public_key_raw().len() != 65 {
            return Err("account key: not an ECDSA P-256 key".into());
        }
        Ok(AccountKey { key })
    }

    pub fn to_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// The public key's coordinates, base64url.
    fn xy(&self) -> (String, String) {
        // An uncompressed P-256 point: 0x04, then x and y of 32 bytes each
        // (checked when the key was made or read).
        let raw = self.key.public_key_raw();
        let point = raw.get(1..).unwrap_or_default();
        let (x, y) = point.split_at(point.len() / 2);
        (b64(x), b64(y))
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        let (x, y) = self.xy();
        json!({"crv": "P-256", "kty": "EC", "x": x, "y": y})
    }

    /// RFC 7638: SHA-256 over the JWK's required members, written with
    /// no whitespace in lexicographic order.
    pub fn thumbprint(&self) -> String {
        let (x, y) = self.xy();
        let canonical = format!("{{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"{x}\",\"y\":\"{y}\"}}");
        b64(&Sha256::digest(canonical.as_bytes()))
    }

    /// `token.thumbprint`: what a challenge proves (RFC 8555 8.1).
    pub fn key_authorization(&self, token: &str) -> String {
        format!("{token}.{}", self.thumbprint())
    }

    /// A flattened JWS (RFC 8555 6.2) of `payload` (`None`: POST-as-GET,
    /// an empty payload) for `url`, naming the account by `kid` or, before
    /// it exists, by its JWK.
    pub fn sign(
        &self,
        url: &str,
        nonce: &str,
        kid: Option<&str>,
        payload: Option<&Value>,
    ) -> Result<String, String> {
        let mut protected = json!({"alg": "ES256", "nonce": nonce, "url": url});
        match kid {
            Some(k) => protected["kid"] = json!(k),
            None => protected["jwk"] = self.jwk(),
        }
        let protected = b64(protected.to_string().as_bytes());
        let payload = payload
            .map(|p| b64(p.to_string().as_bytes()))
            .unwrap_or_default();
        let der = self
            .key
            .sign(format!("{protected}.{payload}").as_bytes())
            .map_err(|e| format!("signing: {e}"))?;
        let sig = der_to_fixed(&der, 32).ok_or("signing: unexpected signature encoding")?;
        Ok(json!({"protected": protected, "payload": payload, "signature": b64(&sig)}).to_string())
    }
}

/// An ECDSA signature, `SEQUENCE { INTEGER r, INTEGER s }`, as the two
/// integers in `size` bytes each, big-endian (RFC 7518 3.4).
pub fn der_to_fixed(der: &[u8], size: usize) -> Option<Vec<u8>> {
    let (tag, body) = (der.first()?, der.get(2..)?);
    let len = *der.get(1)? as usize;
    if *tag != 0x30 || len != body.len() || len >= 0x80 {
        return None;
    }
    let mut out = Vec::with_capacity(size * 2);
    let mut rest = body;
    for _ in 0..2 {
        let (tag, len) = (*rest.first()?, *rest.get(1)? as usize);
        let int = rest.get(2..2 + len)?;
        if tag != 0x02 {
            return None;
        }
        // Leading zeros (the sign byte) off, then left-padded to `size`.
        let start = int.iter().position(|&b| b != 0).unwrap_or(int.len());
        let int = &int[start..];
        if int.len() > size {
            return None;
        }
        out.extend(std::iter::repeat_n(0u8, size - int.len()));
        out.extend_from_slice(int);
        rest = &rest[2 + len..];
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_signatures_become_fixed_halves() {
        // r with a sign byte, s short: both come out 32 bytes.
        let mut der = vec![0x30, 0, 0x02, 33, 0x00];
        der.extend([0x80; 32]);
        der.extend([0x02, 2, 0x01, 0x02]);
        der[1] = (der.len() - 2) as u8;
        let f = der_to_fixed(&der, 32).unwrap();
        assert_eq!(f.len(), 64);
        assert_eq!(&f[..32], &[0x80; 32]);
        assert_eq!(&f[62..], &[1, 2]);
        assert!(der_to_fixed(&der[..der.len() - 1], 32).is_none());
        assert!(der_to_fixed(b"\x31\x00", 32).is_none());
    }

    #[test]
    fn signatures_verify_with_the_jwk() {
        let k = AccountKey::generate().unwrap();
        let again = AccountKey::from_pem(&k.to_pem()).unwrap();
        assert_eq!(k.thumbprint(), again.thumbprint());
        let jws: Value = serde_json::from_str(
            &k.sign("https://ca/x", "n0nce", Some("https://ca/acct/1"), None)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(jws["payload"], "");
        let sig = URL_SAFE_NO_PAD
            .decode(jws["signature"].as_str().unwrap())
            .unwrap();
        assert_eq!(sig.len(), 64);
        // The signature checks against the public key, in the fixed form.
        let msg = format!("{}.", jws["protected"].as_str().unwrap());
        assert!(verify_p256(k.key.public_key_raw(), msg.as_bytes(), &sig));
        let (x, y) = k.xy();
        let jwk = format!("{{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"{x}\",\"y\":\"{y}\"}}");
        assert_eq!(k.thumbprint(), b64(&Sha256::digest(jwk.as_bytes())));
    }

    #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
    fn verify_p256(public: &[u8], msg: &[u8], sig: &[u8]) -> bool {
        use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
            .verify(msg, sig)
            .is_ok()
    }

    #[cfg(feature = "ring")]
    fn verify_p256(public: &[u8], msg: &[u8], sig: &[u8]) -> bool {
        use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
            .verify(msg, sig)
            .is_ok()
    }
}
