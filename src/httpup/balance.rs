//! lighttpd's choice of a backend among a route's hosts (`proxy.balance`,
//! `src/gw_backend.c` `gw_host_get`).

use super::options::Balance;

/// What the pool knows of one host at the moment of choosing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Usable now (not disabled after a failure).
    pub usable: bool,
    /// Requests in progress on it (lighttpd's `host->load`).
    pub load: u32,
    /// [`host_hash`] of its address, computed once at configuration time.
    pub hash: u32,
}

/// lighttpd's `djbhash`: `h = h * 33 ^ byte`, from 5381.
pub fn djb_hash(bytes: &[u8], mut h: u32) -> u32 {
    for &b in bytes {
        h = (h << 5).wrapping_add(h) ^ u32::from(b);
    }
    h
}

pub const DJB_INIT: u32 = 5381;

/// The hash of a host for `hash` and `sticky`: lighttpd hashes the host
/// name (or socket path) and, for `sticky` only, mixes in the port; two
/// backends on one machine then never split `hash` traffic (every URL goes
/// to the first). glint mixes the port into the host hash for both.
pub fn host_hash(host_or_socket: &str, port: u16) -> u32 {
    djb_hash(host_or_socket.as_bytes(), DJB_INIT) ^ u32::from(port)
}

/// Which request this choice is for.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    /// The URL path (lighttpd `r->uri.path`), for `hash`.
    pub path: &'a [u8],
    /// The authority (Host), for `hash`.
    pub authority: &'a [u8],
    /// The client's address as text, for `sticky`.
    pub client: &'a [u8],
}

/// The index of the host to use, or `None` when none is usable (the caller
/// queues the request or answers 503). `last` is the route's round-robin
/// state (lighttpd's `last_used_ndx`, starting at `None`).
pub fn pick(
    balance: Balance,
    hosts: &[Candidate],
    last: &mut Option<usize>,
    key: Key,
) -> Option<usize> {
    if hosts.len() <= 1 {
        return hosts.first().filter(|h| h.usable).map(|_| 0);
    }
    let usable = || hosts.iter().enumerate().filter(|(_, h)| h.usable);
    match balance {
        Balance::Fair => usable().min_by_key(|(_, h)| h.load).map(|(i, _)| i),
        Balance::Hash => {
            let base = djb_hash(key.authority, djb_hash(key.path, DJB_INIT));
            highest(usable().map(|(i, h)| (i, base ^ h.hash)))
        }
        Balance::Sticky => {
            let base = djb_hash(key.client, DJB_INIT);
            highest(usable().map(|(i, h)| (i, base ^ h.hash)))
        }
        Balance::RoundRobin => {
            let start = last.map_or(0, |l| l + 1);
            let n = hosts.len();
            let found = (0..n).map(|k| (start + k) % n).find(|&i| hosts[i].usable);
            *last = found;
            found
        }
    }
}

/// The first of the highest scores (lighttpd keeps the first on ties).
fn highest(scores: impl Iterator<Item = (usize, u32)>) -> Option<usize> {
    let mut best: Option<(usize, u32)> = None;
    for (i, s) in scores {
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((i, s));
        }
    }
    best.map(|(i, _)| i)
}
