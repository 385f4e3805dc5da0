//! `extforward.*` options as plain types (lighttpd `src/mod_extforward.c`
//! `mod_extforward_set_defaults`, `mod_extforward_parse_forwarder`).
//!
//! | option | here | lighttpd default |
//! |---|---|---|
//! | `extforward.forwarder` | [`Trust::parse`] | nobody trusted: the module does nothing |
//! | `extforward.headers` | [`parse_headers`] | `X-Forwarded-For`, `Forwarded-For` (none with hap-PROXY) |
//! | `extforward.params` | [`parse_params`] | `for` and `proto` always; `host`, `remote_user` off |
//! | `extforward.hap-PROXY` | [`ExtForward::hap_proxy`] | disable |
//! | `extforward.hap-PROXY-ssl-client-verify` | [`ExtForward::hap_proxy_ssl_client_verify`] | disable |
//!
//! Values come in as text: `( "10.0.0.1" => "trust" )` as `&[("10.0.0.1",
//! "trust")]`, an integer as its decimal text.

use std::net::IpAddr;

/// Who is believed when they say who the client is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// `"all" => "trust"` (`Some(true)`) or `"all" => "untrusted"`
    /// (`Some(false)`): decides for the connecting peer only; addresses
    /// inside `X-Forwarded-For` must still be listed.
    pub all: Option<bool>,
    /// Addresses marked `"trust"`.
    pub addrs: Vec<IpAddr>,
    /// Addresses marked `"untrusted"`: an exact entry wins over a network.
    pub untrusted: Vec<IpAddr>,
    /// Networks (`"10.0.0.0/8" => "trust"`).
    pub nets: Vec<(IpAddr, u8)>,
    /// Obfuscated identifiers of RFC 7239 6.3 (`"_gw1" => "trust"`), for
    /// `Forwarded: for=_gw1` chains; matched exactly.
    pub names: Vec<String>,
}

/// An IPv4-mapped IPv6 address compares as the IPv4 address it carries
/// (a dual-stack socket reports IPv4 peers that way).
fn canonical(a: IpAddr) -> IpAddr {
    a.to_canonical()
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    let s = s
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(s);
    s.parse::<IpAddr>().ok().map(canonical)
}

fn in_net(a: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

impl Trust {
    /// `extforward.forwarder`. lighttpd treats an unknown value as
    /// "untrusted" and ignores untrusted networks, logging both; glint
    /// refuses them, as it refuses keys that are not addresses.
    pub fn parse(entries: &[(&str, &str)]) -> Result<Trust, String> {
        let mut t = Trust::default();
        for &(key, value) in entries {
            let trusted = if value.eq_ignore_ascii_case("trust") {
                true
            } else if value.eq_ignore_ascii_case("untrusted") {
                false
            } else {
                return Err(format!(
                    "extforward.forwarder: expected \"trust\" or \"untrusted\", not \"{key}\" => \"{value}\""
                ));
            };
            if key.eq_ignore_ascii_case("all") {
                t.all = Some(trusted);
            } else if let Some((addr, bits)) = key.split_once('/') {
                let net = parse_ip(addr)
                    .ok_or_else(|| format!("extforward.forwarder: \"{key}\" is not a network"))?;
                let max = if net.is_ipv4() { 32 } else { 128 };
                // A mapped IPv4 network: its prefix counts the 96 bits before.
                let mapped = addr.contains(':') && net.is_ipv4();
                let bits: u8 = bits
                    .parse::<u8>()
                    .ok()
                    .filter(|b| bits.bytes().all(|c| c.is_ascii_digit()) && *b > 0)
                    .map(|b| if mapped { b.saturating_sub(96) } else { b })
                    .filter(|b| *b > 0 && *b <= max)
                    .ok_or_else(|| format!("extforward.forwarder: invalid netmask in \"{key}\""))?;
                if !trusted {
                    return Err(format!(
                        "extforward.forwarder: \"{key}\" => \"{value}\": only single addresses can be untrusted"
                    ));
                }
                t.nets.push((net, bits));
            } else if let Some(a) = parse_ip(key) {
                if trusted {
                    &mut t.addrs
                } else {
                    &mut t.untrusted
                }
                .push(a);
            } else if key.starts_with('_') && key.len() > 1 {
                if trusted {
                    t.names.push(key.to_string());
                }
            } else {
                return Err(format!(
                    "extforward.forwarder: \"{key}\" is not an address, a network or \"all\""
                ));
            }
        }
        Ok(t)
    }

    /// Whether `addr` (an address as written in a header) is a trusted
    /// proxy (lighttpd `is_proxy_trusted`: "all" does not count here).
    pub fn trusts(&self, addr: &[u8]) -> bool {
        if addr.first() == Some(&b'_') {
            return self.names.iter().any(|n| n.as_bytes() == addr);
        }
        match std::str::from_utf8(addr).ok().and_then(parse_ip) {
            Some(a) => self.trusts_ip(a),
            None => false,
        }
    }

    pub fn trusts_ip(&self, a: IpAddr) -> bool {
        let a = canonical(a);
        if self.untrusted.contains(&a) {
            return false;
        }
        self.addrs.contains(&a) || self.nets.iter().any(|&(n, b)| in_net(a, n, b))
    }

    /// Whether the connecting peer may speak for clients (lighttpd
    /// `is_connection_trusted`). `None`: a unix socket peer, trusted only
    /// through "all".
    pub fn trusts_peer(&self, peer: Option<IpAddr>) -> bool {
        match (self.all, peer) {
            (Some(all), _) => all,
            (None, Some(a)) => self.trusts_ip(a),
            (None, None) => false,
        }
    }

    /// Nothing is trusted: the module does nothing (lighttpd without
    /// `extforward.forwarder`).
    pub fn is_empty(&self) -> bool {
        self.all.is_none() && self.addrs.is_empty() && self.nets.is_empty() && self.names.is_empty()
    }
}

/// `extforward.params`: which `Forwarded` parameters beyond `for` and
/// `proto` (always used) are believed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Params {
    /// `host=` replaces the request's Host.
    pub host: bool,
    /// `remote_user=` sets REMOTE_USER.
    pub remote_user: bool,
}

fn flag(key: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "enable" | "enabled" | "true" | "1" => Ok(true),
        "disable" | "disabled" | "false" | "0" => Ok(false),
        _ => Err(format!(
            "extforward.params: values must be one of 0, 1, enable, disable; error for key: {key}"
        )),
    }
}

/// `extforward.params = ( "host" => "enable", "remote_user" => 1 )`.
pub fn parse_params(entries: &[(&str, &str)]) -> Result<Params, String> {
    let mut p = Params::default();
    for &(k, v) in entries {
        match k {
            "host" => p.host = flag(k, v)?,
            "remote_user" => p.remote_user = flag(k, v)?,
            _ => {
                return Err(format!(
                    "extforward.params: keys must be one of host, remote_user, not: {k}"
                ))
            }
        }
    }
    Ok(p)
}

/// `extforward.headers`: the fields looked at, in order; the first one the
/// request has is the only one used. Unset or empty: `X-Forwarded-For` and
/// `Forwarded-For`, unless the PROXY protocol is on (then none).
pub fn parse_headers(list: Option<&[&str]>, hap_proxy: bool) -> Result<Vec<String>, String> {
    match list {
        Some(l) if !l.is_empty() => l
            .iter()
            .map(|h| {
                if !h.is_empty()
                    && h.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
                {
                    Ok(h.to_string())
                } else {
                    Err(format!("extforward.headers: \"{h}\" is not a header name"))
                }
            })
            .collect(),
        _ if hap_proxy => Ok(Vec::new()),
        _ => Ok(vec!["X-Forwarded-For".into(), "Forwarded-For".into()]),
    }
}

/// All of mod_extforward's settings for one request's conditions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtForward {
    pub trust: Trust,
    pub headers: Vec<String>,
    pub params: Params,
    /// `extforward.hap-PROXY`: a trusted peer's connections start with a
    /// PROXY protocol header ([`super::proxy_protocol::parse`]).
    pub hap_proxy: bool,
    /// `extforward.hap-PROXY-ssl-client-verify`: the PROXY header's TLS
    /// client certificate result sets SSL_CLIENT_VERIFY and REMOTE_USER.
    pub hap_proxy_ssl_client_verify: bool,
}

impl ExtForward {
    pub fn parse(
        forwarder: &[(&str, &str)],
        headers: Option<&[&str]>,
        params: &[(&str, &str)],
        hap_proxy: bool,
        hap_proxy_ssl_client_verify: bool,
    ) -> Result<ExtForward, String> {
        Ok(ExtForward {
            trust: Trust::parse(forwarder)?,
            headers: parse_headers(headers, hap_proxy)?,
            params: parse_params(params)?,
            hap_proxy,
            hap_proxy_ssl_client_verify,
        })
    }
}
