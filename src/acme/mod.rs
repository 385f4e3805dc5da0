//! glint's own ACME client (RFC 8555): certificates obtained from a CA
//! (Let's Encrypt by default) and renewed before they expire, for the
//! names of the TLS sockets, with `glint.acme.*` options.
//!
//! **A thread, not the event loop.** The client runs on one dedicated
//! thread with a blocking HTTPS client (ureq on glint's own rustls and
//! crypto provider). An ACME exchange is a dozen sequential requests with
//! waits between them, a few times in 60 days; as a state machine on the
//! loop it would need its own outgoing TLS connections, DNS resolution
//! (which has no non-blocking call in libc) and timers, all on the path
//! that serves requests. On a thread it is straight-line code that can
//! block as it likes, and the loop only ever sees files: the thread writes
//! certificates and challenge answers into the storage directory, and the
//! loop reads them (the certificate check swaps a new certificate in for
//! new handshakes; http-01 answers are read per request, tls-alpn-01
//! certificates per handshake). Files also work across the processes of
//! `server.max-worker`, of which the one holding the storage directory's
//! lock talks to the CA.
//!
//! - [`jws`]: the account key, ES256 signatures, JWK thumbprints.
//! - [`client`]: the directory, nonces, signed requests, problems.
//! - [`order`]: one certificate: order, challenges, CSR, download.
//! - [`renew`]: when to renew (two thirds, RFC 9773 windows) and back off.
//! - [`store`]: the storage directory and its lock.
//! - [`worker`]: the thread's loop.

pub mod client;
pub mod jws;
pub mod order;
pub mod renew;
pub mod store;
mod worker;

use std::path::Path;
use std::sync::mpsc::{channel, Sender};

use crate::config::{AcmeSettings, Challenge};

/// Where http-01 validation requests ask (RFC 8555 8.3).
pub const HTTP01_PREFIX: &str = "/.well-known/acme-challenge/";

/// What the ACME thread looks after.
#[derive(Debug, Clone)]
pub struct Spec {
    pub settings: AcmeSettings,
    /// The names, one certificate each.
    pub names: Vec<String>,
    /// The challenge types this server can answer (of those allowed, the
    /// ones it has a listener for), preferred first.
    pub challenges: Vec<Challenge>,
}

/// The running ACME thread; it stops when this is dropped (at the next
/// wake-up: an exchange under way finishes first, bounded by its
/// time-outs).
pub struct Running {
    _stop: Sender<()>,
}

/// Starts the ACME thread.
pub fn start(spec: Spec) -> std::io::Result<Running> {
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("glint-acme".into())
        .spawn(move || worker::run(spec, rx))?;
    Ok(Running { _stop: tx })
}

/// The http-01 answer for request target `target` (RFC 8555 8.3: the key
/// authorization as `application/octet-stream`), if it asks for a token
/// glint's ACME client is being validated for. Read from the storage
/// directory, so every worker answers.
pub fn http01_answer(storage: &Path, target: &str) -> Option<Vec<u8>> {
    let token = target.strip_prefix(HTTP01_PREFIX)?;
    if !store::token_ok(token) {
        return None;
    }
    std::fs::read(storage.join(store::HTTP01_DIR).join(token)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http01_answers_only_tokens_it_holds() {
        let dir = std::env::temp_dir().join(format!("glint-acme-h01-{}", std::process::id()));
        let s = store::Store::open(&dir).unwrap();
        s.write("http-01/tok_en-1", b"tok_en-1.thumb", false)
            .unwrap();
        assert_eq!(
            http01_answer(&dir, "/.well-known/acme-challenge/tok_en-1").as_deref(),
            Some(&b"tok_en-1.thumb"[..])
        );
        assert!(http01_answer(&dir, "/.well-known/acme-challenge/other").is_none());
        assert!(http01_answer(&dir, "/.well-known/acme-challenge/../account.key.pem").is_none());
        assert!(http01_answer(&dir, "/.well-known/acme-challenge/").is_none());
        assert!(http01_answer(&dir, "/.well-known/acme-challenge/tok_en-1?x").is_none());
        assert!(http01_answer(&dir, "/index.html").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
