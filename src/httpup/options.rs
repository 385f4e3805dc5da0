//! lighttpd's `proxy.*` options as plain types (lighttpd `src/mod_proxy.c`
//! `mod_proxy_set_defaults`, `src/gw_backend.c` `gw_set_defaults_backend`).
//!
//! Every invalid value is an error naming the option: glint refuses to start
//! instead of guessing (lighttpd logs some of these and goes on).
//!
//! | option | type here | lighttpd default |
//! |---|---|---|
//! | `proxy.server` | [`parse_servers`] -> `Vec<Route>` | none |
//! | `proxy.balance` | [`parse_balance`] -> [`Balance`] | `fair` |
//! | `proxy.forwarded` | [`parse_forwarded`] -> [`Forwarded`] | nothing sent |
//! | `proxy.header` | [`parse_header`] -> [`HeaderOptions`] | all off |
//! | `proxy.replace-http-host` | [`parse_flag`] | disable |
//! | `proxy.map-extensions` | [`parse_map_extensions`] | none |
//! | `proxy.debug` | an integer, not parsed here | 0 |
//!
//! lighttpd's `server.feature-flags = ( "proxy.force-http10" => "enable" )`
//! is the default of [`HeaderOptions::force_http10`].

use super::ConfValue;

/// How a backend is chosen among a route's hosts (`proxy.balance`,
/// lighttpd `gw_backend.c` `gw_host_get`); see [`super::balance::pick`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// `fair` or `least-connection` (the default): the host with the fewest
    /// requests in progress, the first of equals.
    #[default]
    Fair,
    /// `round-robin`: the next usable host after the last one chosen.
    RoundRobin,
    /// `hash`: a hash of the URL path and the authority picks the host, so
    /// one URL always goes to the same backend (a cache per backend).
    Hash,
    /// `sticky`: a hash of the client's address picks the host, so one
    /// client always goes to the same backend (sessions kept in memory).
    Sticky,
}

/// The `Forwarded` parameters glint adds (`proxy.forwarded`). All off by
/// default: then no `Forwarded` header is added, while `X-Forwarded-For`,
/// `X-Forwarded-Proto` and (with a Host) `X-Forwarded-Host` and `X-Host`
/// always are, as lighttpd does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Forwarded {
    pub for_: bool,
    pub proto: bool,
    pub host: bool,
    pub by: bool,
    pub remote_user: bool,
}

impl Forwarded {
    pub fn any(&self) -> bool {
        self.for_ || self.proto || self.host || self.by || self.remote_user
    }
}

/// `proxy.header`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderOptions {
    /// `map-urlpath`: `( "/client/prefix" => "/upstream/prefix" )`, tried in
    /// order, first match wins; reversed in answers.
    pub map_urlpath: Vec<(String, String)>,
    /// `map-host-request`: `( "client.host" => "upstream.host" )`; the key
    /// `"-"` stands for the client's Host, a value `"-"` for the client's
    /// Host, an empty value for "leave as is".
    pub map_host_request: Vec<(String, String)>,
    /// `map-host-response`: the same for hosts in answers; the key `"-"`
    /// stands for the host the request was mapped to.
    pub map_host_response: Vec<(String, String)>,
    /// `https-remap`: with a client on https, `https://` URLs sent upstream
    /// become `http://` and `http://` URLs in answers become `https://`
    /// (only where a host was mapped).
    pub https_remap: bool,
    /// `upgrade`: pass `Upgrade` (WebSocket and friends) and relay bytes
    /// both ways after a 101.
    pub upgrade: bool,
    /// `connect`: accept CONNECT and tunnel it to the backend.
    pub connect: bool,
    /// `force-http10`: send HTTP/1.0 requests (no chunked request bodies,
    /// no upgrade, no kept connections).
    pub force_http10: bool,
}

impl HeaderOptions {
    /// Whether request URLs and hosts are remapped at all (lighttpd's
    /// `remap_headers` in `proxy_create_env`).
    pub fn remaps_request(&self) -> bool {
        !self.map_urlpath.is_empty() || !self.map_host_request.is_empty()
    }

    /// Whether `Location`, `Content-Location` and `Set-Cookie` in answers
    /// are remapped (lighttpd's test in `proxy_response_headers`).
    pub fn remaps_response(&self) -> bool {
        !self.map_urlpath.is_empty() || !self.map_host_response.is_empty()
    }
}

/// The options that shape each request, merged for its conditions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyOptions {
    pub forwarded: Forwarded,
    pub header: HeaderOptions,
    /// `proxy.replace-http-host`: the chosen host's label becomes the Host.
    pub replace_http_host: bool,
}

/// Where a backend listens. The host name is kept as written: resolving it
/// is the caller's (lighttpd resolves at start too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamAddr {
    Tcp { host: String, port: u16 },
    Unix(String),
}

/// One backend of a `proxy.server` route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The key naming the host in `proxy.server`, or `""` when it has none;
    /// `proxy.replace-http-host` sends it as the Host.
    pub label: String,
    pub addr: UpstreamAddr,
    /// `connect-timeout` (lighttpd default 8 s).
    pub connect_timeout: u32,
    /// `write-timeout` and `read-timeout` in seconds; 0 (lighttpd's
    /// default) means none beyond the server's own idle limits.
    pub write_timeout: u32,
    pub read_timeout: u32,
    /// `disable-time`: seconds a failed backend is left out (default 1).
    pub disable_time: u32,
    /// `tcp-fin-propagate`: a client's half-close is passed on.
    pub tcp_fin_propagate: bool,
    /// glint's `max-connections` (as for scgi.server, default 16): more
    /// requests wait in glint's queue.
    pub max_conns: u32,
}

/// One `"prefix or extension" => ( hosts )` entry of `proxy.server`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `/prefix` (starts with `/`) or `.ext`.
    pub pattern: String,
    pub hosts: Vec<Host>,
}

/// `"enable"`, `"disable"` and their spellings, or an integer, as lighttpd's
/// `config_plugin_value_tobool`; `key` names the option in the error.
pub fn parse_flag(key: &str, v: &ConfValue) -> Result<bool, String> {
    match v {
        ConfValue::Int(i) => Ok(*i != 0),
        ConfValue::Str(s) => {
            let s = s.to_ascii_lowercase();
            match s.as_str() {
                "enable" | "enabled" | "true" | "1" => Ok(true),
                "disable" | "disabled" | "false" | "0" => Ok(false),
                _ => Err(format!(
                    "{key}: expected \"enable\" or \"disable\", not \"{s}\""
                )),
            }
        }
        ConfValue::Array(_) => Err(format!(
            "{key}: expected \"enable\" or \"disable\", not an array"
        )),
    }
}

/// `proxy.balance`.
pub fn parse_balance(v: &ConfValue) -> Result<Balance, String> {
    let ConfValue::Str(s) = v else {
        return Err("proxy.balance: expected a string".into());
    };
    match s.as_str() {
        "" | "fair" | "least-connection" => Ok(Balance::Fair),
        "round-robin" => Ok(Balance::RoundRobin),
        "hash" => Ok(Balance::Hash),
        "sticky" => Ok(Balance::Sticky),
        _ => Err(format!(
            "proxy.balance: has to be one of fair, least-connection, round-robin, hash, sticky, not \"{s}\""
        )),
    }
}

fn entries<'a>(key: &str, v: &'a ConfValue) -> Result<&'a [(Option<String>, ConfValue)], String> {
    match v {
        ConfValue::Array(items) => Ok(items),
        _ => Err(format!(
            "{key}: expected an array ( \"key\" => value, ... )"
        )),
    }
}

/// `proxy.forwarded = ( "for" => 1, "proto" => "enable", ... )`.
pub fn parse_forwarded(v: &ConfValue) -> Result<Forwarded, String> {
    let mut f = Forwarded::default();
    for (k, val) in entries("proxy.forwarded", v)? {
        let k = k.as_deref().unwrap_or("");
        let slot = match k {
            "for" => &mut f.for_,
            "proto" => &mut f.proto,
            "host" => &mut f.host,
            "by" => &mut f.by,
            "remote_user" => &mut f.remote_user,
            _ => {
                return Err(format!(
                    "proxy.forwarded: keys must be one of by, for, host, proto, remote_user, not \"{k}\""
                ))
            }
        };
        *slot = parse_flag(&format!("proxy.forwarded \"{k}\""), val)?;
    }
    Ok(f)
}

/// A `( "key" => "value", ... )` list of strings.
fn string_pairs(key: &str, v: &ConfValue) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (k, val) in entries(key, v)? {
        match (k, val) {
            (Some(k), ConfValue::Str(s)) => out.push((k.clone(), s.clone())),
            _ => return Err(format!("{key}: expected ( \"key\" => \"value\", ... )")),
        }
    }
    Ok(out)
}

/// `proxy.header`.
pub fn parse_header(v: &ConfValue) -> Result<HeaderOptions, String> {
    let mut h = HeaderOptions::default();
    for (k, val) in entries("proxy.header", v)? {
        let k = k.as_deref().unwrap_or("");
        let name = format!("proxy.header \"{k}\"");
        match k {
            "https-remap" => h.https_remap = parse_flag(&name, val)?,
            "force-http10" => h.force_http10 = parse_flag(&name, val)?,
            "upgrade" => h.upgrade = parse_flag(&name, val)?,
            "connect" => h.connect = parse_flag(&name, val)?,
            "map-urlpath" => h.map_urlpath = string_pairs(&name, val)?,
            "map-host-request" => h.map_host_request = string_pairs(&name, val)?,
            "map-host-response" => h.map_host_response = string_pairs(&name, val)?,
            _ => {
                return Err(format!(
                    "proxy.header: unexpected key \"{k}\" (map-urlpath, map-host-request, \
                     map-host-response, https-remap, upgrade, connect, force-http10)"
                ))
            }
        }
    }
    Ok(h)
}

/// `proxy.map-extensions = ( ".php3" => ".php" )`.
pub fn parse_map_extensions(v: &ConfValue) -> Result<Vec<(String, String)>, String> {
    string_pairs("proxy.map-extensions", v)
}

/// The longest unix socket path: `sun_path` is 108 bytes with its NUL, and
/// lighttpd keeps two more spare (`gw_set_defaults_backend`).
const MAX_SOCKET_PATH: usize = 108 - 3;

/// `proxy.server = ( "/prefix" => ( "label" => ( "host" => ..., "port" => ... ) ) )`,
/// also with unlabelled hosts `( ( "host" => ... ), ... )`.
pub fn parse_servers(v: &ConfValue) -> Result<Vec<Route>, String> {
    let mut routes = Vec::new();
    for (pattern, hosts) in entries("proxy.server", v)? {
        // `""` is the prefix of every path (Debian's 10-proxy.conf uses it).
        let Some(pattern) = pattern.clone() else {
            return Err(
                "proxy.server: each entry needs a \"/prefix\" or \".extension\" key".into(),
            );
        };
        let mut list = Vec::new();
        for (label, opts) in entries(&format!("proxy.server \"{pattern}\""), hosts)? {
            let label = label.clone().unwrap_or_default();
            let host = parse_host(&label, opts)
                .map_err(|e| format!("proxy.server \"{pattern}\" => \"{label}\": {e}"))?;
            list.push(host);
        }
        if list.is_empty() {
            return Err(format!("proxy.server \"{pattern}\": no hosts"));
        }
        routes.push(Route {
            pattern,
            hosts: list,
        });
    }
    Ok(routes)
}

fn text(k: &str, v: &ConfValue) -> Result<String, String> {
    match v {
        ConfValue::Str(s) => Ok(s.clone()),
        _ => Err(format!("\"{k}\" expects a string")),
    }
}

fn number(k: &str, v: &ConfValue, max: u64) -> Result<u64, String> {
    let n = match v {
        ConfValue::Int(i) => u64::try_from(*i).map_err(|_| format!("\"{k}\" must not be negative")),
        ConfValue::Str(s) => s
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("\"{k}\" expects a number, not \"{s}\"")),
        ConfValue::Array(_) => Err(format!("\"{k}\" expects a number")),
    }?;
    if n > max {
        return Err(format!("\"{k}\" is {n}, more than {max}"));
    }
    Ok(n)
}

fn parse_host(label: &str, opts: &ConfValue) -> Result<Host, String> {
    let ConfValue::Array(items) = opts else {
        return Err("expected ( \"key\" => \"value\", ... )".into());
    };
    let mut host: Option<String> = None;
    let mut port: Option<u16> = None;
    let mut socket: Option<String> = None;
    let mut h = Host {
        label: label.to_string(),
        addr: UpstreamAddr::Unix(String::new()),
        connect_timeout: 8,
        write_timeout: 0,
        read_timeout: 0,
        disable_time: 1,
        tcp_fin_propagate: false,
        max_conns: 16,
    };
    for (k, v) in items {
        let Some(k) = k.as_deref() else {
            return Err("options are \"key\" => value pairs".into());
        };
        const DAY: u64 = 86_400;
        match k {
            "host" => host = Some(text(k, v)?).filter(|s| !s.is_empty()),
            // 0 is lighttpd's "unset": port 80 below.
            "port" => port = Some(number(k, v, 65_535)? as u16),
            "socket" => socket = Some(text(k, v)?).filter(|s| !s.is_empty()),
            "connect-timeout" => h.connect_timeout = number(k, v, DAY)? as u32,
            "write-timeout" => h.write_timeout = number(k, v, DAY)? as u32,
            "read-timeout" => h.read_timeout = number(k, v, DAY)? as u32,
            "disable-time" => h.disable_time = number(k, v, DAY)? as u32,
            "tcp-fin-propagate" => h.tcp_fin_propagate = parse_flag(k, v)?,
            "max-connections" => h.max_conns = number(k, v, 65_536)?.max(1) as u32,
            "mode" => match text(k, v)?.as_str() {
                "" | "responder" => {}
                // lighttpd: "proxy.server must not define any hosts with
                // attribute "mode" = "authorizer"".
                other => {
                    return Err(format!(
                        "\"mode\" => \"{other}\": a proxy can only be a responder"
                    ))
                }
            },
            // lighttpd turns check-local off for every proxy host.
            "check-local" => {
                parse_flag(k, v)?;
            }
            // Only meaningful for a backend lighttpd spawns itself.
            "bin-path"
            | "bin-environment"
            | "bin-copy-environment"
            | "kill-signal"
            | "min-procs"
            | "max-procs"
            | "max-load-per-proc"
            | "idle-timeout"
            | "listen-backlog"
            | "docroot"
            | "strip-request-uri"
            | "fix-root-scriptname"
            | "broken-scriptfilename"
            | "x-sendfile"
            | "allow-x-send-file"
            | "x-sendfile-docroot" => {
                return Err(format!(
                    "\"{k}\" is not supported by glint for proxy.server"
                ))
            }
            _ if k.contains('_') => {
                return Err(format!("\"{k}\": options are written with '-', not '_'"))
            }
            _ => return Err(format!("unknown option \"{k}\"")),
        }
    }
    h.addr = address(socket, host, port)?;
    Ok(h)
}

/// Where a proxy host is: `socket`, or `host` and `port` (80 when unset or
/// 0); a `host` that starts with '/' is a socket path.
fn address(
    mut socket: Option<String>,
    mut host: Option<String>,
    port: Option<u16>,
) -> Result<UpstreamAddr, String> {
    // A host starting with '/' is a socket path (gw_set_defaults_backend).
    if socket.is_none() && host.as_deref().is_some_and(|s| s.starts_with('/')) {
        socket = host.take();
    }
    Ok(match (socket, host, port) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err("either \"host\"/\"port\" or \"socket\" has to be set, not both".into())
        }
        (Some(path), None, None) => {
            if path.len() > MAX_SOCKET_PATH {
                return Err(format!(
                    "socket path is longer than {MAX_SOCKET_PATH} bytes"
                ));
            }
            UpstreamAddr::Unix(path)
        }
        (None, Some(host), port) => {
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .map_or(host.clone(), str::to_string);
            let port = port.filter(|&p| p != 0).unwrap_or(80);
            UpstreamAddr::Tcp { host, port }
        }
        (None, None, _) => return Err("\"host\" or \"socket\" has to be set".into()),
    })
}
