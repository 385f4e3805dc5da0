//! Talking to the CA: the directory, nonces, signed POSTs (and
//! POST-as-GET), problem documents, `Retry-After`. Blocking, with ureq on
//! glint's own rustls and crypto provider; it runs on the ACME thread,
//! never on the event loop.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::Value;

use super::jws::AccountKey;

/// Debian's bundle of the system's trusted CAs.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";
/// A whole exchange with the CA; Let's Encrypt answers in well under a
/// second, and a CA that takes longer is treated as down.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read: a certificate chain is 3-6 KiB, an order or
/// authorization well under 4 KiB.
const MAX_BODY: u64 = 1 << 20;
/// badNonce answers retried in a row (RFC 8555 6.5: the client should
/// retry with the nonce that came with the error).
const NONCE_RETRIES: usize = 3;

/// Why a call to the CA did not give what was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum AcmeError {
    /// The CA could not be reached, or its answer could not be read.
    Transport(String),
    /// The CA answered with an error (RFC 7807 problem document).
    Problem {
        status: u16,
        kind: String,
        detail: String,
        /// Seconds, from `Retry-After` (rate limits, 503).
        retry_after: Option<u64>,
    },
    /// Anything else: a bad answer, a failed validation, a local error.
    Other(String),
}

impl std::fmt::Display for AcmeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcmeError::Transport(m) => write!(f, "CA unreachable: {m}"),
            AcmeError::Problem {
                status,
                kind,
                detail,
                ..
            } => write!(f, "CA said {status} {kind}: {detail}"),
            AcmeError::Other(m) => f.write_str(m),
        }
    }
}

impl AcmeError {
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            AcmeError::Problem { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, AcmeError>;

fn other(m: impl Into<String>) -> AcmeError {
    AcmeError::Other(m.into())
}

/// An answer from the CA.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub location: Option<String>,
    pub retry_after: Option<u64>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body).map_err(|e| other(format!("CA sent bad JSON: {e}")))
    }
}

/// The URLs of the CA's directory (RFC 8555 7.1.1).
#[derive(Debug, Clone)]
pub struct Directory {
    pub url: String,
    pub new_nonce: String,
    pub new_account: String,
    pub new_order: String,
    /// RFC 9773's renewalInfo, if the CA offers it.
    pub renewal_info: Option<String>,
}

/// A connection to one CA with one account key.
pub struct Client {
    agent: ureq::Agent,
    pub dir: Directory,
    pub key: AccountKey,
    /// The account's URL, once known: signs as `kid` from then on.
    pub kid: Option<String>,
    nonce: Option<String>,
}

/// The roots trusted for the CA's own HTTPS: `ca_file`, else the system's.
fn roots(ca_file: Option<&std::path::Path>) -> Result<Vec<ureq::tls::Certificate<'static>>> {
    let path = ca_file.unwrap_or(std::path::Path::new(SYSTEM_ROOTS));
    let pem = std::fs::read(path).map_err(|e| other(format!("{}: {e}", path.display())))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .filter_map(|c| c.ok())
        .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    if certs.is_empty() {
        return Err(other(format!("{}: no certificate", path.display())));
    }
    Ok(certs)
}

fn agent(ca_file: Option<&std::path::Path>) -> Result<ureq::Agent> {
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::Specific(Arc::new(roots(ca_file)?)))
        .unversioned_rustls_crypto_provider(Arc::new(crate::tls::crypto_provider()))
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .https_only(true)
        .timeout_global(Some(CALL_TIMEOUT))
        .user_agent(concat!("glint/", env!("CARGO_PKG_VERSION"), " acme"))
        .build();
    Ok(config.into())
}

fn header(r: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl Client {
    /// Reads the CA's directory.
    pub fn connect(
        directory: &str,
        ca_file: Option<&std::path::Path>,
        key: AccountKey,
    ) -> Result<Client> {
        let agent = agent(ca_file)?;
        let mut c = Client {
            agent,
            dir: Directory {
                url: directory.to_string(),
                new_nonce: String::new(),
                new_account: String::new(),
                new_order: String::new(),
                renewal_info: None,
            },
            key,
            kid: None,
            nonce: None,
        };
        let d = c.get(directory)?;
        if d.status != 200 {
            return Err(problem(&d));
        }
        let d = d.json()?;
        let url = |k: &str| d[k].as_str().map(str::to_string);
        c.dir.new_nonce = url("newNonce").ok_or_else(|| other("directory: no newNonce"))?;
        c.dir.new_account = url("newAccount").ok_or_else(|| other("directory: no newAccount"))?;
        c.dir.new_order = url("newOrder").ok_or_else(|| other("directory: no newOrder"))?;
        c.dir.renewal_info = url("renewalInfo");
        Ok(c)
    }

    fn finish(
        &mut self,
        r: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Reply> {
        let mut r = r.map_err(|e| AcmeError::Transport(e.to_string()))?;
        if let Some(n) = header(&r, "replay-nonce") {
            self.nonce = Some(n);
        }
        let body = r
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| AcmeError::Transport(e.to_string()))?;
        Ok(Reply {
            status: r.status().as_u16(),
            location: header(&r, "location"),
            retry_after: header(&r, "retry-after").and_then(|v| v.trim().parse().ok()),
            body,
        })
    }

    /// A plain GET (the directory, renewal information).
    pub fn get(&mut self, url: &str) -> Result<Reply> {
        let r = self.agent.get(url).call();
        self.finish(r)
    }

    fn fresh_nonce(&mut self) -> Result<String> {
        if let Some(n) = self.nonce.take() {
            return Ok(n);
        }
        let url = self.dir.new_nonce.clone();
        let r = self.agent.head(&url).call();
        self.finish(r)?;
        self.nonce
            .take()
            .ok_or_else(|| other("newNonce gave no Replay-Nonce"))
    }

    /// A signed POST of `payload` (`None`: POST-as-GET); a problem
    /// document is an error, a badNonce retried with the nonce it brought.
    pub fn post(&mut self, url: &str, payload: Option<&Value>) -> Result<Reply> {
        let mut tries = 0;
        loop {
            let nonce = self.fresh_nonce()?;
            let body = self
                .key
                .sign(url, &nonce, self.kid.as_deref(), payload)
                .map_err(other)?;
            let r = self
                .agent
                .post(url)
                .header("Content-Type", "application/jose+json")
                .send(body.as_bytes());
            let reply = self.finish(r)?;
            if reply.status < 400 {
                return Ok(reply);
            }
            let err = problem(&reply);
            tries += 1;
            match &err {
                AcmeError::Problem { kind, .. }
                    if kind.ends_with(":badNonce") && tries < NONCE_RETRIES => {}
                _ => return Err(err),
            }
        }
    }

    /// The account for this key: made (RFC 8555 7.3) or found again
    /// (newAccount with the same key answers 200 and its URL).
    pub fn account(&mut self, contact: &[String], agree_tos: bool) -> Result<String> {
        let payload = serde_json::json!({
            "termsOfServiceAgreed": agree_tos,
            "contact": contact,
        });
        let url = self.dir.new_account.clone();
        let r = self.post(&url, Some(&payload))?;
        let kid = r
            .location
            .ok_or_else(|| other("newAccount answered without the account's URL"))?;
        self.kid = Some(kid.clone());
        Ok(kid)
    }
}

/// The problem document of an error answer.
fn problem(r: &Reply) -> AcmeError {
    let doc: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    AcmeError::Problem {
        status: r.status,
        kind: doc["type"].as_str().unwrap_or("").to_string(),
        detail: doc["detail"].as_str().unwrap_or("").to_string(),
        retry_after: r.retry_after,
    }
}
