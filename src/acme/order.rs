//! One certificate obtained (RFC 8555 7.4): an order for one name, its
//! authorization proven by http-01 or tls-alpn-01, the CSR, the
//! certificate. An order under way is kept in the storage directory
//! (`<name>.order.json` and the key its CSR uses), so a restart takes it
//! up where it was instead of asking again.

use std::time::{Duration, Instant};

use rcgen::{CertificateParams, CustomExtension, KeyPair};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::client::{AcmeError, Client, Result};
use super::jws::{b64, new_key};
use super::store::{token_ok, Store, HTTP01_DIR, TLSALPN01_DIR};
use crate::config::{Challenge, KeyType};

/// How long one authorization or the order may stay "processing" before
/// the attempt is given up (and retried later): Let's Encrypt validates
/// in seconds; its own clients wait about a minute.
const POLL_LIMIT: Duration = Duration::from_secs(90);
/// The wait between polls when the CA names none (Retry-After).
const POLL_EVERY: Duration = Duration::from_millis(500);

fn other(m: impl Into<String>) -> AcmeError {
    AcmeError::Other(m.into())
}

/// What obtaining needs besides the client.
pub struct Ask<'a> {
    pub name: &'a str,
    pub key_type: KeyType,
    /// The challenge types this server can answer, preferred first.
    pub challenges: &'a [Challenge],
    /// RFC 9773: the certificate this one replaces (its ARI id).
    pub replaces: Option<String>,
}

/// Obtains a certificate for `ask.name` and writes it (chain and key)
/// to the storage directory.
pub fn obtain(c: &mut Client, store: &Store, ask: &Ask<'_>) -> Result<()> {
    let (url, order, key) = match resume(c, store, ask)? {
        Some(found) => found,
        None => new_order(c, store, ask)?,
    };
    let order = authorize_all(c, store, ask, &url, order)?;
    let order = finalize(c, ask.name, &url, order, &key)?;
    let cert_url = order["certificate"]
        .as_str()
        .ok_or_else(|| other("valid order without a certificate URL"))?;
    let chain = c.post(cert_url, None)?.body;
    check_chain(&chain, ask.name)?;
    // The key first: the certificate check reloads once both have changed.
    store
        .write(
            &format!("{}.key.pem", ask.name),
            key.serialize_pem().as_bytes(),
            true,
        )
        .map_err(other)?;
    store
        .write(&format!("{}.crt.pem", ask.name), &chain, false)
        .map_err(other)?;
    store.remove(&format!("{}.order.json", ask.name));
    store.remove(&format!("{}.order.key.pem", ask.name));
    Ok(())
}

/// Only the first step of [`obtain`]: places the order and keeps it in
/// the storage directory (as a run that stops right after does); returns
/// its URL.
pub fn place(c: &mut Client, store: &Store, ask: &Ask<'_>) -> Result<String> {
    new_order(c, store, ask).map(|(url, _, _)| url)
}

/// The order a previous run left, if the CA still has it usable.
fn resume(
    c: &mut Client,
    store: &Store,
    ask: &Ask<'_>,
) -> Result<Option<(String, Value, KeyPair)>> {
    let Some(saved) = store.read_json(&format!("{}.order.json", ask.name)) else {
        return Ok(None);
    };
    let key = store
        .read(&format!("{}.order.key.pem", ask.name))
        .and_then(|k| KeyPair::from_pem(&String::from_utf8_lossy(&k)).ok());
    let (Some(url), Some(key)) = (saved["url"].as_str(), key) else {
        return Ok(None);
    };
    if saved["directory"].as_str() != Some(c.dir.url.as_str()) {
        return Ok(None);
    }
    let order = match c.post(url, None) {
        Ok(r) => r.json()?,
        // Gone or refused: a new order.
        Err(AcmeError::Problem { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    match order["status"].as_str() {
        Some("pending" | "ready" | "processing" | "valid") => {
            log::info!("acme: {}: taking up the order {url}", ask.name);
            Ok(Some((url.to_string(), order, key)))
        }
        _ => Ok(None),
    }
}

fn new_order(c: &mut Client, store: &Store, ask: &Ask<'_>) -> Result<(String, Value, KeyPair)> {
    let mut payload = json!({"identifiers": [{"type": "dns", "value": ask.name}]});
    if let Some(r) = &ask.replaces {
        payload["replaces"] = json!(r);
    }
    let url = c.dir.new_order.clone();
    let r = match c.post(&url, Some(&payload)) {
        // A CA that does not take "replaces" for this certificate (RFC
        // 9773 7: it may refuse) gets the plain order.
        Err(AcmeError::Problem { kind, .. })
            if ask.replaces.is_some() && kind.ends_with(":malformed") =>
        {
            payload.as_object_mut().map(|o| o.remove("replaces"));
            c.post(&url, Some(&payload))?
        }
        other => other?,
    };
    let order_url = r
        .location
        .clone()
        .ok_or_else(|| other("newOrder answered without the order's URL"))?;
    let key = new_key(ask.key_type).map_err(other)?;
    store
        .write(
            &format!("{}.order.key.pem", ask.name),
            key.serialize_pem().as_bytes(),
            true,
        )
        .map_err(other)?;
    let saved = json!({"url": order_url, "directory": c.dir.url});
    store
        .write_json(&format!("{}.order.json", ask.name), &saved)
        .map_err(other)?;
    log::info!("acme: {}: new order {order_url}", ask.name);
    Ok((order_url, r.json()?, key))
}

/// Proves every authorization of the order; returns the order once ready.
fn authorize_all(
    c: &mut Client,
    store: &Store,
    ask: &Ask<'_>,
    url: &str,
    order: Value,
) -> Result<Value> {
    if order["status"] == "pending" {
        let authzs: Vec<String> = order["authorizations"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|u| u.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        for a in authzs {
            authorize(c, store, ask, &a)?;
        }
    }
    poll(c, url, |o| o["status"] != "pending")
}

/// One authorization: the challenge answered, then waited for.
fn authorize(c: &mut Client, store: &Store, ask: &Ask<'_>, url: &str) -> Result<()> {
    let authz = c.post(url, None)?.json()?;
    if authz["status"] == "valid" {
        return Ok(());
    }
    let offered = authz["challenges"].as_array().cloned().unwrap_or_default();
    let (kind, ch) = ask
        .challenges
        .iter()
        .find_map(|k| {
            offered
                .iter()
                .find(|o| o["type"] == k.name())
                .map(|o| (*k, o.clone()))
        })
        .ok_or_else(|| {
            other(format!(
                "{}: the CA offers no challenge glint can answer",
                ask.name
            ))
        })?;
    let token = ch["token"]
        .as_str()
        .filter(|t| token_ok(t))
        .ok_or_else(|| other("challenge without a usable token"))?;
    let ch_url = ch["url"]
        .as_str()
        .ok_or_else(|| other("challenge without a URL"))?;
    let key_authz = c.key.key_authorization(token);
    let cleanup = place_answer(store, kind, ask.name, token, &key_authz)?;
    log::info!("acme: {}: answering {} for {url}", ask.name, kind.name());
    let result = c
        .post(ch_url, Some(&json!({})))
        .and_then(|_| poll(c, url, |a| a["status"] != "pending"));
    for f in cleanup {
        store.remove(&f);
    }
    let authz = result?;
    match authz["status"].as_str() {
        Some("valid") => Ok(()),
        s => {
            let why = authz["challenges"]
                .as_array()
                .and_then(|l| l.iter().find_map(|c| c["error"]["detail"].as_str()))
                .unwrap_or("no reason given");
            Err(other(format!(
                "{}: {} validation failed ({}): {why}",
                ask.name,
                kind.name(),
                s.unwrap_or("?")
            )))
        }
    }
}

/// Writes what the CA will fetch or see; returns the files to remove.
fn place_answer(
    store: &Store,
    kind: Challenge,
    name: &str,
    token: &str,
    key_authz: &str,
) -> Result<Vec<String>> {
    match kind {
        Challenge::Http01 => {
            let f = format!("{HTTP01_DIR}/{token}");
            store
                .write(&f, key_authz.as_bytes(), false)
                .map_err(other)?;
            Ok(vec![f])
        }
        Challenge::TlsAlpn01 => {
            let (crt, key) = alpn_certificate(name, key_authz)?;
            let c = format!("{TLSALPN01_DIR}/{name}.crt.pem");
            let k = format!("{TLSALPN01_DIR}/{name}.key.pem");
            store.write(&k, key.as_bytes(), true).map_err(other)?;
            store.write(&c, crt.as_bytes(), false).map_err(other)?;
            Ok(vec![c, k])
        }
    }
}

/// RFC 8737 3: a self-signed certificate for `name` whose critical
/// acmeIdentifier extension holds SHA-256 of the key authorization.
pub fn alpn_certificate(name: &str, key_authz: &str) -> Result<(String, String)> {
    let key = new_key(KeyType::EcdsaP256).map_err(other)?;
    let mut params =
        CertificateParams::new(vec![name.to_string()]).map_err(|e| other(e.to_string()))?;
    let digest = Sha256::digest(key_authz.as_bytes());
    params.custom_extensions = vec![CustomExtension::new_acme_identifier(&digest)];
    let cert = params.self_signed(&key).map_err(|e| other(e.to_string()))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Sends the CSR once the order is ready; returns the order once valid.
fn finalize(c: &mut Client, name: &str, url: &str, order: Value, key: &KeyPair) -> Result<Value> {
    let order = match order["status"].as_str() {
        Some("ready") => {
            let params =
                CertificateParams::new(vec![name.to_string()]).map_err(|e| other(e.to_string()))?;
            let csr = params
                .serialize_request(key)
                .map_err(|e| other(e.to_string()))?;
            let fin = order["finalize"]
                .as_str()
                .ok_or_else(|| other("order without finalize"))?;
            c.post(fin, Some(&json!({"csr": b64(csr.der())})))?;
            poll(c, url, |o| {
                o["status"] != "processing" && o["status"] != "ready"
            })?
        }
        Some("processing") => poll(c, url, |o| o["status"] != "processing")?,
        _ => order,
    };
    match order["status"].as_str() {
        Some("valid") => Ok(order),
        s => Err(other(format!(
            "{name}: the order is {} ({})",
            s.unwrap_or("?"),
            order["error"]["detail"]
                .as_str()
                .unwrap_or("no reason given")
        ))),
    }
}

/// POST-as-GET `url` until `done` says so, waiting as `Retry-After` asks
/// (at most [`POLL_LIMIT`] in all).
fn poll(c: &mut Client, url: &str, done: impl Fn(&Value) -> bool) -> Result<Value> {
    let end = Instant::now() + POLL_LIMIT;
    loop {
        let r = c.post(url, None)?;
        let v = r.json()?;
        if done(&v) {
            return Ok(v);
        }
        let wait = r
            .retry_after
            .map(|s| Duration::from_secs(s.clamp(1, 10)))
            .unwrap_or(POLL_EVERY);
        if Instant::now() + wait > end {
            return Err(other(format!(
                "{url}: still {} after {POLL_LIMIT:?}",
                v["status"]
            )));
        }
        std::thread::sleep(wait);
    }
}

/// The chain parses, and its leaf covers `name`.
fn check_chain(pem: &[u8], name: &str) -> Result<()> {
    use rustls::pki_types::pem::PemObject;
    let leaf = rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .next()
        .and_then(|c| c.ok())
        .ok_or_else(|| other("the CA's certificate does not parse"))?;
    let s = crate::tls::cert_summary(leaf.as_ref())
        .ok_or_else(|| other("the CA's certificate does not parse"))?;
    if !s.dns_names.iter().any(|n| n == name) {
        return Err(other(format!("the CA's certificate does not name {name}")));
    }
    Ok(())
}
