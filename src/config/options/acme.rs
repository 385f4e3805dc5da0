//! glint's own `glint.acme.*` options: certificates obtained and renewed
//! by glint itself from an ACME CA (RFC 8555). lighttpd has no such
//! options; they are glint's, global only, and off by default.

use std::path::PathBuf;

use super::values::{boolean, list, string};
use crate::config::value::Value;

/// Let's Encrypt's production directory: the default CA.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Let's Encrypt's staging directory (untrusted certificates, high limits).
pub const LETS_ENCRYPT_STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";
/// Where certificates, keys and the account live unless set.
pub const DEFAULT_STORAGE: &str = "/var/lib/glint/acme";

/// The key type of the certificates glint asks for (the account key is
/// always ECDSA P-256, ES256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    EcdsaP256,
    EcdsaP384,
}

impl KeyType {
    pub fn name(self) -> &'static str {
        match self {
            KeyType::EcdsaP256 => "ecdsa-p256",
            KeyType::EcdsaP384 => "ecdsa-p384",
        }
    }
}

/// An ACME challenge type glint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    /// `http-01`: a file under `/.well-known/acme-challenge/` on port 80.
    Http01,
    /// `tls-alpn-01`: a certificate offered for ALPN `acme-tls/1` on 443.
    TlsAlpn01,
}

impl Challenge {
    pub fn name(self) -> &'static str {
        match self {
            Challenge::Http01 => "http-01",
            Challenge::TlsAlpn01 => "tls-alpn-01",
        }
    }
}

/// The `glint.acme.*` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcmeSettings {
    /// `glint.acme.activate` (default disable).
    pub activate: bool,
    /// `glint.acme.directory`: the CA's directory URL (default Let's
    /// Encrypt production; `"letsencrypt-staging"` names its staging one).
    pub directory: String,
    /// `glint.acme.contact`: e-mail addresses (`mailto:` added where missing).
    pub contact: Vec<String>,
    /// `glint.acme.agree-tos` (default disable): the CA's terms of service
    /// are accepted; required to create the account.
    pub agree_tos: bool,
    /// `glint.acme.names`: the names to get certificates for (default:
    /// every `$HTTP["host"] == "name"` of the TLS sockets).
    pub names: Option<Vec<String>>,
    /// `glint.acme.key-type` (default `ecdsa-p256`; or `ecdsa-p384`).
    pub key_type: KeyType,
    /// `glint.acme.storage` (default `/var/lib/glint/acme`): made 0700;
    /// holds the account, and `<name>.crt.pem` / `<name>.key.pem` that
    /// `ssl.pemfile` / `ssl.privkey` may name.
    pub storage: PathBuf,
    /// `glint.acme.challenges`: the types glint may answer, preferred first
    /// (default `( "http-01", "tls-alpn-01" )`).
    pub challenges: Vec<Challenge>,
    /// `glint.acme.ca-file`: the CAs trusted for the connection to the ACME
    /// server (default: the system's, `/etc/ssl/certs/ca-certificates.crt`).
    pub ca_file: Option<PathBuf>,
}

impl Default for AcmeSettings {
    fn default() -> Self {
        AcmeSettings {
            activate: false,
            directory: LETS_ENCRYPT.into(),
            contact: Vec::new(),
            agree_tos: false,
            names: None,
            key_type: KeyType::EcdsaP256,
            storage: PathBuf::from(DEFAULT_STORAGE),
            challenges: vec![Challenge::Http01, Challenge::TlsAlpn01],
            ca_file: None,
        }
    }
}

/// The option names, for `GLOBAL_ONLY` and `-p`.
pub const KEYS: &[&str] = &[
    "glint.acme.activate",
    "glint.acme.directory",
    "glint.acme.contact",
    "glint.acme.agree-tos",
    "glint.acme.names",
    "glint.acme.key-type",
    "glint.acme.storage",
    "glint.acme.challenges",
    "glint.acme.ca-file",
];

/// A DNS name as a CA takes it: letters, digits, hyphens and dots, a
/// wildcard only as the whole first label (which http-01 and tls-alpn-01
/// cannot validate, so it is refused here).
fn check_name(n: &str) -> Result<String, String> {
    let n = n.trim_end_matches('.').to_ascii_lowercase();
    let ok = !n.is_empty()
        && n.len() <= 253
        && n.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if !ok {
        return Err(format!(
            "\"{n}\" is not a DNS name glint can validate (no wildcards, no addresses)"
        ));
    }
    Ok(n)
}

impl AcmeSettings {
    /// Sets option `key`; an error is about the value.
    pub fn set(&mut self, key: &str, v: &Value) -> Result<(), String> {
        match key {
            "glint.acme.activate" => self.activate = boolean(v)?,
            "glint.acme.directory" => {
                let d = string(v)?;
                self.directory = match d.as_str() {
                    "letsencrypt" => LETS_ENCRYPT.into(),
                    "letsencrypt-staging" => LETS_ENCRYPT_STAGING.into(),
                    u if u.starts_with("https://") => d,
                    _ => return Err("expects an https:// URL".into()),
                };
            }
            "glint.acme.contact" => {
                self.contact = list(v)?
                    .into_iter()
                    .map(|c| match c.starts_with("mailto:") {
                        true => c,
                        false => format!("mailto:{c}"),
                    })
                    .collect()
            }
            "glint.acme.agree-tos" => self.agree_tos = boolean(v)?,
            "glint.acme.names" => {
                let names = list(v)?
                    .iter()
                    .map(|n| check_name(n))
                    .collect::<Result<Vec<_>, _>>()?;
                self.names = Some(names);
            }
            "glint.acme.key-type" => {
                self.key_type = match string(v)?.to_ascii_lowercase().as_str() {
                    "ecdsa-p256" | "p-256" | "ec256" => KeyType::EcdsaP256,
                    "ecdsa-p384" | "p-384" | "ec384" => KeyType::EcdsaP384,
                    _ => return Err("expects \"ecdsa-p256\" or \"ecdsa-p384\"".into()),
                }
            }
            "glint.acme.storage" => {
                let p = string(v)?;
                if !p.starts_with('/') {
                    return Err("expects an absolute path".into());
                }
                self.storage = PathBuf::from(p);
            }
            "glint.acme.challenges" => {
                let mut out = Vec::new();
                for c in list(v)? {
                    out.push(match c.as_str() {
                        "http-01" => Challenge::Http01,
                        "tls-alpn-01" => Challenge::TlsAlpn01,
                        _ => {
                            return Err(format!("\"{c}\": expects \"http-01\" or \"tls-alpn-01\""))
                        }
                    });
                }
                if out.is_empty() {
                    return Err("names no challenge type".into());
                }
                self.challenges = out;
            }
            "glint.acme.ca-file" => self.ca_file = Some(PathBuf::from(string(v)?)),
            _ => return Err("is not an option of glint.acme".into()),
        }
        Ok(())
    }

    /// The options as set, for `-p` (all of them once activated).
    pub fn entries(&self, put: &mut dyn FnMut(&str, Value)) {
        if !self.activate {
            return;
        }
        let strs =
            |l: &[String]| Value::Array(l.iter().map(|s| (None, Value::Str(s.clone()))).collect());
        let on = |b: bool| Value::Str(if b { "enable" } else { "disable" }.into());
        put("glint.acme.activate", on(true));
        put("glint.acme.directory", Value::Str(self.directory.clone()));
        put("glint.acme.contact", strs(&self.contact));
        put("glint.acme.agree-tos", on(self.agree_tos));
        if let Some(n) = &self.names {
            put("glint.acme.names", strs(n));
        }
        put(
            "glint.acme.key-type",
            Value::Str(self.key_type.name().into()),
        );
        put(
            "glint.acme.storage",
            Value::Str(self.storage.display().to_string()),
        );
        let c: Vec<String> = self.challenges.iter().map(|c| c.name().into()).collect();
        put("glint.acme.challenges", strs(&c));
        if let Some(f) = &self.ca_file {
            put("glint.acme.ca-file", Value::Str(f.display().to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    #[test]
    fn values_are_checked() {
        let mut a = AcmeSettings::default();
        assert_eq!(a.directory, LETS_ENCRYPT);
        a.set("glint.acme.directory", &s("letsencrypt-staging"))
            .unwrap();
        assert_eq!(a.directory, LETS_ENCRYPT_STAGING);
        assert!(a.set("glint.acme.directory", &s("http://x/")).is_err());
        a.set("glint.acme.contact", &s("admin@example.org"))
            .unwrap();
        assert_eq!(a.contact, ["mailto:admin@example.org"]);
        assert!(a.set("glint.acme.names", &s("*.example.org")).is_err());
        assert!(a.set("glint.acme.names", &s("a..b")).is_err());
        a.set("glint.acme.names", &s("WWW.Example.org.")).unwrap();
        assert_eq!(
            a.names.as_deref(),
            Some(&["www.example.org".to_string()][..])
        );
        assert!(a.set("glint.acme.key-type", &s("rsa2048")).is_err());
        assert!(a.set("glint.acme.storage", &s("relative")).is_err());
        assert!(a.set("glint.acme.challenges", &s("dns-01")).is_err());
        assert!(a.set("glint.acme.nonsense", &s("x")).is_err());
    }

    #[test]
    fn every_option_is_global_only() {
        for k in KEYS {
            assert!(super::super::GLOBAL_ONLY.contains(k), "{k}");
        }
    }
}
