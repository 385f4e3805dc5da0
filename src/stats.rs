//! Counters for the status page and the closing log line.

use std::sync::atomic::AtomicU64;

/// What the server has done since start.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub requests: u64,
    pub bytes_out: u64,
    /// Connections accepted since start.
    pub connections: u64,
    /// Connections open now.
    pub active: u64,
    /// Backend connections opened for gateway requests, and gateway
    /// requests sent on a kept FastCGI connection instead, since start.
    pub backend_opened: u64,
    pub backend_reused: u64,
    /// TLS connections still in their handshake now.
    pub tls_handshaking: u64,
    /// TLS connections accepted since start.
    pub tls_connections: u64,
    /// Connections that spoke HTTP/2, since start, and open now.
    pub h2_connections: u64,
    pub h2_open: u64,
    /// HTTP/2 streams that carried a request, since start, and open now.
    pub h2_streams: u64,
    pub h2_streams_open: u64,
    /// glint's ACME client ([`ACME`]): certificates obtained, failed
    /// attempts, certificates at risk.
    pub acme_obtained: u64,
    pub acme_failures: u64,
    pub acme_certs_at_risk: u64,
    /// QUIC connections accepted for HTTP/3, since start; clients asked to
    /// prove their address with a Retry first; UDP datagrams received.
    pub h3_connections: u64,
    pub h3_retries: u64,
    pub h3_datagrams: u64,
    /// HTTP/3 request streams, since start.
    pub h3_streams: u64,
}

/// What glint's ACME client has done, shared by its thread and the status
/// page (the thread's process's figures, with `server.max-worker` those
/// of the worker holding the storage directory's lock).
#[derive(Debug, Default)]
pub struct AcmeCounters {
    /// Certificates obtained (first or renewed) since start.
    pub obtained: AtomicU64,
    /// Failed attempts since start.
    pub failures: AtomicU64,
    /// Certificates missing, expired, or within 14 days of expiry while
    /// their renewal fails: non-zero means someone should look.
    pub certs_at_risk: AtomicU64,
}

pub static ACME: AcmeCounters = AcmeCounters {
    obtained: AtomicU64::new(0),
    failures: AtomicU64::new(0),
    certs_at_risk: AtomicU64::new(0),
};
