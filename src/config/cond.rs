//! Conditions (`$HTTP["host"] == "example.org"`) and how they test a request.

use super::RequestFacts;
use regex::Regex;
use std::net::IpAddr;

/// What a condition looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// `$SERVER["socket"]`: the listener that accepted the connection.
    Socket,
    Host,
    Url,
    RemoteIp,
    Scheme,
    QueryString,
    Method,
    /// A request header: `$REQUEST_HEADER["Name"]`, or `$HTTP["useragent"]` and friends.
    Header(String),
}

impl Field {
    /// The field named by `$var["name"]`, or `None` when glint does not know it.
    pub fn from_names(var: &str, name: &str) -> Option<Field> {
        match var {
            "SERVER" if name == "socket" => Some(Field::Socket),
            "REQUEST_HEADER" if !name.is_empty() => Some(Field::Header(name.to_string())),
            "HTTP" => Some(match name {
                "host" => Field::Host,
                "url" => Field::Url,
                "remoteip" | "remote-ip" => Field::RemoteIp,
                "scheme" => Field::Scheme,
                "querystring" | "query-string" => Field::QueryString,
                "request-method" => Field::Method,
                "useragent" | "user-agent" => Field::Header("User-Agent".into()),
                "referer" => Field::Header("Referer".into()),
                "cookie" => Field::Header("Cookie".into()),
                "language" => Field::Header("Accept-Language".into()),
                _ => return None,
            }),
            _ => None,
        }
    }
}

/// An IP network for `$HTTP["remoteip"] == "10.0.0.0/8"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Net {
    pub addr: IpAddr,
    pub bits: u8,
}

impl Net {
    /// Parses `ip` or `ip/bits`.
    pub fn parse(s: &str) -> Option<Net> {
        let (ip, bits) = match s.split_once('/') {
            Some((ip, b)) => (ip, Some(b.parse::<u8>().ok()?)),
            None => (s, None),
        };
        let addr: IpAddr = ip
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let bits = bits.unwrap_or(max);
        (bits <= max).then_some(Net { addr, bits })
    }

    /// Whether `ip` is inside the network (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The comparison a condition makes.
#[derive(Debug, Clone)]
pub enum Test {
    Eq(String),
    Ne(String),
    Prefix(String),
    Suffix(String),
    Match(Regex),
    NoMatch(Regex),
    InNet(Net),
    NotInNet(Net),
    /// `$SERVER["socket"] == ...`: the index of the listener it created.
    OnListener(usize),
}

/// One compiled condition, with its text for `-p`.
#[derive(Debug, Clone)]
pub struct Cond {
    pub field: Field,
    pub test: Test,
    /// The condition as written: `$HTTP["host"]`.
    pub var: String,
    pub op: &'static str,
    pub pattern: String,
}

/// The value of a field for a request; `None` when it has none (no header, no address).
fn field_value<'a>(
    field: &Field,
    facts: &'a RequestFacts<'a>,
    listener_spec: &'a str,
    ip_buf: &'a mut String,
) -> &'a str {
    match field {
        Field::Socket => listener_spec,
        Field::Host => facts.host,
        Field::Url => facts.url,
        Field::Scheme => facts.scheme,
        Field::QueryString => facts.query,
        Field::Method => facts.method,
        Field::Header(name) => facts.header(name).unwrap_or(""),
        Field::RemoteIp => {
            if let Some(ip) = facts.remote_ip {
                use std::fmt::Write;
                let _ = write!(ip_buf, "{ip}");
            }
            ip_buf.as_str()
        }
    }
}

/// `$HTTP["host"] == pattern` as lighttpd 1.4.69 compares: the names
/// match whether or not either side has a `:port` (a port is compared only
/// when both have one); letters in any case.
fn host_eq(host: &str, pattern: &str) -> bool {
    let (h, p) = (host.as_bytes(), pattern.as_bytes());
    if h.is_empty() || h.len() == p.len() || pattern.starts_with('/') {
        return h.eq_ignore_ascii_case(p);
    }
    let (long, short) = if h.len() > p.len() { (h, p) } else { (p, h) };
    let port = &long[short.len()..];
    port[0] == b':'
        && (h.len() < p.len() || port.len() <= 6)
        && long[..short.len()].eq_ignore_ascii_case(short)
}

impl Cond {
    /// Whether the condition holds; a matching regex stores its captures in `captures`.
    pub fn matches(
        &self,
        facts: &RequestFacts<'_>,
        listener_spec: &str,
        captures: &mut Vec<String>,
    ) -> bool {
        match &self.test {
            Test::OnListener(i) => return facts.listener == *i,
            Test::InNet(net) => return facts.remote_ip.is_some_and(|ip| net.contains(ip)),
            Test::NotInNet(net) => return !facts.remote_ip.is_some_and(|ip| net.contains(ip)),
            _ => {}
        }
        let mut ip_buf = String::new();
        let value = field_value(&self.field, facts, listener_spec, &mut ip_buf);
        let host = self.field == Field::Host;
        match &self.test {
            Test::Eq(p) if host => host_eq(value, p),
            Test::Ne(p) if host => !host_eq(value, p),
            Test::Eq(p) => value == p,
            Test::Ne(p) => value != p,
            Test::Prefix(p) => value.starts_with(p.as_str()),
            Test::Suffix(p) => value.ends_with(p.as_str()),
            Test::Match(re) => match re.captures(value) {
                Some(c) => {
                    captures.clear();
                    captures.extend(
                        c.iter()
                            .map(|m| m.map_or(String::new(), |m| m.as_str().to_string())),
                    );
                    true
                }
                None => false,
            },
            Test::NoMatch(re) => !re.is_match(value),
            // Handled above.
            Test::InNet(_) | Test::NotInNet(_) | Test::OnListener(_) => false,
        }
    }
}
