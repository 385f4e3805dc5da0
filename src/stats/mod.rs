//! Counters for the status page, the metrics and the closing log line:
//! plain integers, added to where things happen (no allocation, no lock);
//! the connection table ([`board`]) and the last seconds' figures
//! ([`Recent`]) beside them.

pub mod board;

use std::sync::atomic::AtomicU64;

/// The protocols answers are counted by: HTTP/1.x, HTTP/2, HTTP/3.
pub const PROTOCOLS: [&str; 3] = ["http1", "http2", "http3"];

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
    /// Answers by protocol ([`PROTOCOLS`]) and status class (1xx to 5xx).
    pub answers: [[u64; 5]; 3],
    /// Bytes read from clients (after TLS).
    pub bytes_in: u64,
    /// TLS handshakes completed, those that resumed a session, and those
    /// that failed (or were given up), since start.
    pub tls_full: u64,
    pub tls_resumed: u64,
    pub tls_failed: u64,
    /// Times accepting paused at `server.max-connections`.
    pub conn_limit_reached: u64,
    /// Bytes compression left out of answers compressed as they were sent.
    pub compress_saved: u64,
}

impl Stats {
    /// One answer with `status`, over HTTP/`major`.
    pub fn answered(&mut self, status: u16, major: u8) {
        self.requests += 1;
        let p = usize::from(major.clamp(1, 3) - 1);
        let class = usize::from((status / 100).clamp(1, 5) - 1);
        self.answers[p][class] += 1;
    }
}

/// Requests and bytes out at each of the last seconds' ticks, for
/// averages over the last five seconds.
#[derive(Debug, Default)]
pub struct Recent {
    /// (requests, bytes out) at the last six ticks, the newest at `at`.
    ring: [(u64, u64); 6],
    at: usize,
    ticks: u64,
}

impl Recent {
    /// A second passed: the counters now.
    pub fn tick(&mut self, s: &Stats) {
        self.at = (self.at + 1) % self.ring.len();
        self.ring[self.at] = (s.requests, s.bytes_out);
        self.ticks += 1;
    }

    /// Requests and bytes per second over the last five whole seconds
    /// (fewer just after start; zero before the first second ends).
    pub fn per_second(&self) -> (f64, f64) {
        let span = self.ticks.min(5);
        if span == 0 {
            return (0.0, 0.0);
        }
        let n = self.ring.len();
        let then = self.ring[(self.at + n - span as usize) % n];
        let now = self.ring[self.at];
        let d = span as f64;
        (
            now.0.saturating_sub(then.0) as f64 / d,
            now.1.saturating_sub(then.1) as f64 / d,
        )
    }
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

/// Bytes compression left out of answers compressed as they were sent
/// (added to as each answer's encoder ends; one thread adds, the status
/// page reads).
pub static COMPRESS_SAVED: AtomicU64 = AtomicU64::new(0);

pub static ACME: AcmeCounters = AcmeCounters {
    obtained: AtomicU64::new(0),
    failures: AtomicU64::new(0),
    certs_at_risk: AtomicU64::new(0),
};
