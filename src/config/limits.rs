//! The limits of a connection and its requests: keep-alive, idle
//! time-outs, sizes, how many connections and files, and the rate at which
//! answers are sent (`server.max-*`, `connection.kbytes-per-second`,
//! `server.kbytes-per-second`).

use super::origin::Origin;

/// The connection limits and time-outs of one scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// `server.max-keep-alive-requests` (default 1000; 0 disables keep-alive).
    pub max_keep_alive_requests: u32,
    /// `server.max-keep-alive-idle` in seconds (default 5).
    pub max_keep_alive_idle: u32,
    /// `server.max-read-idle` in seconds (default 60).
    pub max_read_idle: u32,
    /// `server.max-write-idle` in seconds (default 360).
    pub max_write_idle: u32,
    /// `server.max-connections` (default: a third of `server.max-fds`, 1365).
    pub max_connections: u32,
    /// `server.max-fds` (default 4096): glint raises RLIMIT_NOFILE to this.
    pub max_fds: u32,
    /// `server.max-request-size` in kbytes: the largest request body (default 0 = no limit).
    pub max_request_size_kb: u64,
    /// `server.max-request-field-size` in bytes: the largest request head (default 8192).
    pub max_request_field_size: u32,
    /// `connection.kbytes-per-second` in bytes (default 0: no limit): what
    /// one connection may be sent per second.
    pub conn_bytes_per_second: u64,
    /// `server.kbytes-per-second` (default unset: no limit): what all the
    /// connections under the block that set it may be sent per second
    /// together.
    pub scope_rate: Option<ScopeRate>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_keep_alive_requests: 1000,
            max_keep_alive_idle: 5,
            max_read_idle: 60,
            max_write_idle: 360,
            max_connections: 1365,
            max_fds: 4096,
            max_request_size_kb: 0,
            max_request_field_size: 8192,
            conn_bytes_per_second: 0,
            scope_rate: None,
        }
    }
}

/// One assignment of `server.kbytes-per-second`: the connections whose
/// settings come from it share one count of bytes per second (a nested
/// block that does not set it again shares its parent's), as lighttpd
/// keeps one counter per assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeRate {
    /// The assignment's place (file and line): every scope merged from it
    /// has the same.
    pub id: u64,
    /// The limit in bytes per second (`kbytes * 1024`, never 0).
    pub bytes_per_second: u64,
}

impl ScopeRate {
    /// The limit `kbytes` assigned at `origin` (None for 0: no limit).
    pub fn assigned(kbytes: u16, origin: &Origin) -> Option<ScopeRate> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&origin.file, origin.line).hash(&mut h);
        (kbytes > 0).then(|| ScopeRate {
            id: h.finish(),
            bytes_per_second: u64::from(kbytes) << 10,
        })
    }
}
