//! The ACME thread: looks at each name's certificate, obtains the missing
//! and renews the due ones under the storage directory's lock, records
//! failures with their back-off, and sleeps until the next thing is due.
//!
//! The event loop never waits for it: the certificates it writes are
//! picked up by the TLS contexts' certificate check (each second), which
//! swaps them in for new handshakes only.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::json;

use super::client::{AcmeError, Client};
use super::jws::AccountKey;
use super::order::{obtain, Ask};
use super::renew::{self, LOUD_BEFORE};
use super::store::Store;
use super::Spec;
use crate::stats;

/// While another process holds the lock, look again this often.
const LOCKED_RECHECK: i64 = 5;
/// The longest sleep: a new ARI window or a changed file is noticed
/// within the hour.
const MAX_SLEEP: i64 = 3600;

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// What is known of one name's certificate.
struct Held {
    summary: Option<crate::tls::CertSummary>,
    failures: u32,
    next_try: i64,
}

impl Held {
    fn read(store: &Store, name: &str) -> Held {
        let summary = std::fs::read(store.cert_path(name)).ok().and_then(|pem| {
            let leaf = CertificateDer::pem_slice_iter(&pem).next()?.ok()?;
            crate::tls::cert_summary(leaf.as_ref())
        });
        let retry = store.read_json(&format!("{name}.retry.json"));
        let retry = retry.as_ref();
        Held {
            summary,
            failures: retry.and_then(|r| r["failures"].as_u64()).unwrap_or(0) as u32,
            next_try: retry.and_then(|r| r["next"].as_i64()).unwrap_or(0),
        }
    }

    fn lifetime(&self) -> i64 {
        self.summary
            .as_ref()
            .map_or(0, |s| (s.not_after - s.not_before).max(0))
    }

    /// When this name is next due: now without a certificate, else at two
    /// thirds of its life or the renewal window's pick (whichever is
    /// first), and never before the back-off allows.
    fn due(&self, store: &Store, name: &str) -> i64 {
        let at = match &self.summary {
            None => 0,
            Some(s) => {
                let ari = store
                    .read_json(&format!("{name}.ari.json"))
                    .filter(|a| a["serial"].as_str() == Some(&super::jws::b64(&s.serial)))
                    .and_then(|a| a["pick"].as_i64());
                let t = renew::two_thirds(s.not_before, s.not_after);
                ari.map_or(t, |p| p.min(t))
            }
        };
        if self.failures > 0 {
            at.max(self.next_try)
        } else {
            at
        }
    }
}

/// Runs until `stop` says so (or its sender is gone).
pub fn run(spec: Spec, stop: Receiver<()>) {
    let store = match Store::open(&spec.settings.storage) {
        Ok(s) => s,
        Err(e) => {
            log::error!("acme: {e}; no certificates will be obtained");
            return;
        }
    };
    log::info!(
        "acme: looking after {} from {}",
        spec.names.join(", "),
        spec.settings.directory
    );
    loop {
        let wait = pass(&spec, &store).clamp(1, MAX_SLEEP);
        match stop.recv_timeout(Duration::from_secs(wait as u64)) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return,
        }
    }
}

/// One look at every name; returns the seconds until the next is due.
fn pass(spec: &Spec, store: &Store) -> i64 {
    let now = unix_now();
    let held: Vec<(String, Held)> = spec
        .names
        .iter()
        .map(|n| (n.clone(), Held::read(store, n)))
        .collect();
    count_at_risk(&held, now);
    let due: Vec<&str> = held
        .iter()
        .filter(|(n, h)| h.due(store, n) <= now)
        .map(|(n, _)| n.as_str())
        .collect();
    let next = || {
        held.iter()
            .map(|(n, h)| h.due(store, n) - unix_now())
            .min()
            .unwrap_or(MAX_SLEEP)
    };
    if due.is_empty() {
        refresh_ari(spec, store, &held, now);
        return next();
    }
    let lock = match store.try_lock() {
        Ok(Some(l)) => l,
        Ok(None) => return LOCKED_RECHECK,
        Err(e) => {
            log::error!("acme: {e}");
            return renew::BACKOFF_FIRST;
        }
    };
    let mut client = None;
    for name in due {
        // Another process may have renewed it while we waited for the lock.
        let h = Held::read(store, name);
        if h.due(store, name) > unix_now() {
            continue;
        }
        attempt(spec, store, &mut client, name, &h);
    }
    drop(lock);
    let held: Vec<(String, Held)> = spec
        .names
        .iter()
        .map(|n| (n.clone(), Held::read(store, n)))
        .collect();
    count_at_risk(&held, unix_now());
    held.iter()
        .map(|(n, h)| h.due(store, n) - unix_now())
        .min()
        .unwrap_or(MAX_SLEEP)
}

/// Certificates missing, expired, or within 14 days of expiry while their
/// renewal fails: the status page's "at risk" count.
fn count_at_risk(held: &[(String, Held)], now: i64) {
    let n = held
        .iter()
        .filter(|(_, h)| {
            h.failures > 0
                && h.summary
                    .as_ref()
                    .is_none_or(|s| s.not_after - now < LOUD_BEFORE)
        })
        .count();
    stats::ACME.certs_at_risk.store(n as u64, Ordering::Relaxed);
}

/// The client, connected and with its account, made once per pass.
fn client<'a>(
    spec: &Spec,
    store: &Store,
    slot: &'a mut Option<Client>,
) -> Result<&'a mut Client, AcmeError> {
    if slot.is_none() {
        let key = match store.read("account.key.pem") {
            Some(pem) => {
                AccountKey::from_pem(&String::from_utf8_lossy(&pem)).map_err(AcmeError::Other)?
            }
            None => {
                let k = AccountKey::generate().map_err(AcmeError::Other)?;
                store
                    .write("account.key.pem", k.to_pem().as_bytes(), true)
                    .map_err(AcmeError::Other)?;
                k
            }
        };
        let s = &spec.settings;
        let mut c = Client::connect(&s.directory, s.ca_file.as_deref(), key)?;
        // newAccount with a known key finds its account again (200), so
        // the stored URL only says whether this is news.
        let kid = c.account(&s.contact, s.agree_tos)?;
        let saved = store.read_json("account.json");
        let known = saved.as_ref().is_some_and(|a| {
            a["url"].as_str() == Some(kid.as_str())
                && a["directory"].as_str() == Some(s.directory.as_str())
        });
        if !known {
            log::info!("acme: account {kid} at {}", s.directory);
            store
                .write_json(
                    "account.json",
                    &json!({"directory": s.directory, "url": kid}),
                )
                .map_err(AcmeError::Other)?;
        }
        *slot = Some(c);
    }
    slot.as_mut()
        .ok_or_else(|| AcmeError::Other("no client".into()))
}

/// One try at `name`'s certificate; the outcome is logged and recorded.
fn attempt(spec: &Spec, store: &Store, slot: &mut Option<Client>, name: &str, h: &Held) {
    let replaces = h
        .summary
        .as_ref()
        .and_then(|s| Some(renew::ari_id(s.aki.as_deref()?, &s.serial)));
    let result = client(spec, store, slot).and_then(|c| {
        let replaces = replaces.filter(|_| c.dir.renewal_info.is_some());
        let ask = Ask {
            name,
            key_type: spec.settings.key_type,
            challenges: &spec.challenges,
            replaces,
        };
        obtain(c, store, &ask)
    });
    let now = unix_now();
    match result {
        Ok(()) => {
            store.remove(&format!("{name}.retry.json"));
            stats::ACME.obtained.fetch_add(1, Ordering::Relaxed);
            let until = Held::read(store, name).summary.map_or(0, |s| s.not_after);
            log::info!(
                "acme: {name}: new certificate, valid for {} s more",
                until - now
            );
        }
        Err(e) => {
            // A client that failed may hold a stale nonce or connection.
            *slot = None;
            stats::ACME.failures.fetch_add(1, Ordering::Relaxed);
            let failures = h.failures.saturating_add(1);
            let next = renew::next_try(now, failures, h.lifetime(), e.retry_after());
            let _ = store.write_json(
                &format!("{name}.retry.json"),
                &json!({"failures": failures, "next": next, "error": e.to_string()}),
            );
            report_failure(name, h, &e, next - now, now);
        }
    }
}

fn report_failure(name: &str, h: &Held, e: &AcmeError, wait: i64, now: i64) {
    match &h.summary {
        Some(s) if s.not_after - now >= LOUD_BEFORE => log::warn!(
            "acme: {name}: renewal failed ({e}); the current certificate serves on, trying again in {wait} s"
        ),
        Some(s) if s.not_after > now => log::error!(
            "acme: {name}: RENEWAL FAILING: the certificate expires in {} s ({e}); keeping it, trying again in {wait} s",
            s.not_after - now
        ),
        Some(s) => log::error!(
            "acme: {name}: RENEWAL FAILING: the certificate EXPIRED {} s ago ({e}); trying again in {wait} s",
            now - s.not_after
        ),
        None => log::error!(
            "acme: {name}: no certificate yet ({e}); trying again in {wait} s"
        ),
    }
}

/// RFC 9773: asks the CA's renewalInfo for each certificate whose last
/// answer is older than its Retry-After (or six hours), and keeps the
/// time picked in its window. Only where the CA offers it; errors are
/// quiet (two thirds of the lifetime still applies).
fn refresh_ari(spec: &Spec, store: &Store, held: &[(String, Held)], now: i64) {
    let stale: Vec<(&String, String, String)> = held
        .iter()
        .filter_map(|(n, h)| {
            let s = h.summary.as_ref()?;
            let id = renew::ari_id(s.aki.as_deref()?, &s.serial);
            let serial = super::jws::b64(&s.serial);
            let a = store.read_json(&format!("{n}.ari.json"));
            let fresh = a.as_ref().is_some_and(|a| {
                a["serial"].as_str() == Some(serial.as_str())
                    && a["next"].as_i64().is_some_and(|t| t > now)
            });
            (!fresh).then_some((n, id, serial))
        })
        .collect();
    if stale.is_empty() || store.read_json("account.json").is_none() {
        return;
    }
    let Ok(key) = AccountKey::generate() else {
        return;
    };
    let s = &spec.settings;
    let Ok(mut c) = Client::connect(&s.directory, s.ca_file.as_deref(), key) else {
        return;
    };
    let Some(base) = c.dir.renewal_info.clone() else {
        return;
    };
    for (name, id, serial) in stale {
        let Ok(r) = c.get(&format!("{}/{id}", base.trim_end_matches('/'))) else {
            continue;
        };
        let Some(w) = r.json().ok().as_ref().and_then(renew::ari_window) else {
            continue;
        };
        let mut rnd = [0u8; 8];
        let _ = getrandom::fill(&mut rnd);
        let pick = renew::pick_in(w, u64::from_le_bytes(rnd));
        let every = r
            .retry_after
            .map_or(renew::ARI_EVERY, |s| s.clamp(60, 86400) as i64);
        let _ = store.write_json(
            &format!("{name}.ari.json"),
            &json!({"serial": serial, "start": w.0, "end": w.1, "pick": pick, "next": now + every}),
        );
    }
}
