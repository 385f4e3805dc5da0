//! Counters for the status page and the closing log line.

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
}
