//! The per-scope choices of mod_fastcgi, mod_scgi and mod_proxy that a
//! request's job reads: its balancing and whether `scgi.server` speaks
//! uwsgi, typed when the configuration is read (a request once scanned the
//! raw options for them), and the `*.server` arrays they route to.

use super::value::Value;

/// How a route picks one of its backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// `fair` / `least-connection` (default): the least busy.
    #[default]
    LeastBusy,
    /// `round-robin`: each in turn.
    RoundRobin,
    /// `hash`: by URL path, so one path keeps its backend (caches).
    Hash,
    /// `sticky`: by client address.
    Sticky,
}

impl Balance {
    /// lighttpd's names; `None` for one it does not know (the gateway
    /// tables warn about it once; requests get least-connection).
    pub fn parse(s: &str) -> Option<Balance> {
        match s {
            "fair" | "least-connection" => Some(Balance::LeastBusy),
            "round-robin" => Some(Balance::RoundRobin),
            "hash" => Some(Balance::Hash),
            "sticky" => Some(Balance::Sticky),
            _ => None,
        }
    }
}

/// The gateways' server arrays of one scope, as parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Backends {
    /// `scgi.server`: the parsed array, read by the SCGI gateway.
    pub scgi_server: Option<Value>,
    /// `fastcgi.server`: the parsed array, read by the FastCGI gateway.
    pub fastcgi_server: Option<Value>,
    /// Which of [`crate::config::Config::scgi_servers`] `scgi_server` is
    /// (0: the global scope's): picks the gateway routes of a request
    /// without comparing the values.
    pub scgi_scope: u32,
    /// Which of [`crate::config::Config::fastcgi_servers`] `fastcgi_server` is.
    pub fastcgi_scope: u32,
    /// `proxy.server`: the parsed array, read by the HTTP proxy.
    pub proxy_server: Option<Value>,
    /// Which of [`crate::config::Config::proxy_servers`] `proxy_server` is.
    pub proxy_scope: u32,
}

/// `*.balance` and `scgi.protocol` of one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GatewaySettings {
    pub fastcgi_balance: Balance,
    pub scgi_balance: Balance,
    pub proxy_balance: Balance,
    /// `sockproxy.balance`.
    pub sockproxy_balance: Balance,
    /// `wstunnel.balance`.
    pub wstunnel_balance: Balance,
    /// `ajp13.balance`.
    pub ajp13_balance: Balance,
    /// `scgi.protocol = "uwsgi"`.
    pub scgi_uwsgi: bool,
}

impl GatewaySettings {
    /// Takes `key` (with its string value) when it is one of these options.
    pub fn set(&mut self, key: &str, value: Option<&str>) {
        let balance = value.and_then(Balance::parse).unwrap_or_default();
        match key {
            "fastcgi.balance" => self.fastcgi_balance = balance,
            "scgi.balance" => self.scgi_balance = balance,
            "proxy.balance" => self.proxy_balance = balance,
            "sockproxy.balance" => self.sockproxy_balance = balance,
            "wstunnel.balance" => self.wstunnel_balance = balance,
            "ajp13.balance" => self.ajp13_balance = balance,
            "scgi.protocol" => self.scgi_uwsgi = value == Some("uwsgi"),
            _ => {}
        }
    }
}
