//! `scgi.server` and `fastcgi.server` in lighttpd's syntax:
//! `( "<.ext or /prefix>" => ( ["<label>" =>] ( options ) , ... ) )`.

use std::net::ToSocketAddrs;
use std::path::PathBuf;

use crate::config::{Settings, Value};

/// The wire protocol of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Scgi,
    FastCgi,
    /// uWSGI's own protocol: `scgi.server` backends with `scgi.protocol = "uwsgi"`.
    Uwsgi,
    /// HTTP/1.1 to an application server (`proxy.server`, mod_proxy).
    Http,
    /// A CGI program glint runs for the request (`cgi.assign`, mod_cgi):
    /// the body on its stdin, its answer on its stdout.
    Cgi,
    /// A whole client connection's bytes, both ways, unchanged
    /// (`sockproxy.server`, mod_sockproxy).
    SockProxy,
    /// A WebSocket's messages as bytes, both ways (`wstunnel.server`,
    /// mod_wstunnel): the client's side decodes and encodes the frames.
    WsTunnel,
    /// AJP/1.3 to a servlet container (`ajp13.server`, mod_ajp13).
    Ajp13,
}

impl Protocol {
    /// A byte tunnel from the start: no request head, no answer head.
    pub fn is_raw(self) -> bool {
        matches!(self, Protocol::SockProxy | Protocol::WsTunnel)
    }

    /// What an `scgi.server` backend speaks for a request with settings `s`:
    /// `scgi.protocol` may be set globally or in a conditional block, so
    /// one backend list can serve both (the value was checked at load).
    pub fn of_scgi_server(s: &Settings) -> Protocol {
        if s.gateway.scgi_uwsgi {
            Protocol::Uwsgi
        } else {
            Protocol::Scgi
        }
    }
}

/// Where a backend listens.
pub use crate::net::Addr as BackendAddr;

/// How glint starts a backend itself (`bin-path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    /// The command line (split on whitespace, as lighttpd does).
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub copy_env: Vec<String>,
    /// `kill-signal` (default SIGTERM).
    pub kill_signal: i32,
}

/// One backend process or address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    pub label: String,
    pub protocol: Protocol,
    pub addr: BackendAddr,
    pub spawn: Option<SpawnSpec>,
    /// `check-local` (default enable): the script must exist below the docroot.
    pub check_local: bool,
    /// `docroot`: the DOCUMENT_ROOT the backend sees.
    pub docroot: Option<String>,
    /// `strip-request-uri`: a prefix removed from REQUEST_URI.
    pub strip_request_uri: Option<String>,
    /// `fix-root-scriptname`: SCRIPT_NAME "" and the whole path as PATH_INFO for a "/" prefix.
    pub fix_root_scriptname: bool,
    /// `broken-scriptfilename`: SCRIPT_FILENAME carries the PATH_INFO too
    /// (PHP's `cgi.fix_pathinfo` splits it again itself).
    pub broken_scriptfilename: bool,
    /// `listen-backlog` of the socket glint opens for a `bin-path` backend.
    pub listen_backlog: i32,
    /// Most requests glint sends this backend at once (`max-connections`,
    /// default 16); more wait in glint's queue instead of failing.
    pub max_conns: usize,
    /// `disable-time` in seconds after a failure (default 1).
    pub disable_time: u64,
    /// `connect-timeout` (default 8 s), `write-timeout` (default 60 s: the
    /// backend takes no request bytes while glint has some), and
    /// `read-timeout` (default 60 s).
    pub connect_timeout: u64,
    pub write_timeout: u64,
    pub read_timeout: u64,
    /// `x-sendfile`: the backend may answer with `X-Sendfile: path`.
    pub x_sendfile: bool,
    pub x_sendfile_docroot: Vec<String>,
    /// `"mode" => "authorizer"`: the backend decides whether a request may
    /// go on (FastCGI's Authorizer role) instead of answering it.
    pub authorizer: bool,
    /// `local-redir` (default enable): an answer that is only a
    /// `Location: /path` (CGI/1.1's local redirect) makes glint serve that
    /// path itself instead of passing a 302 on.
    pub local_redir: bool,
    /// glint's own `keep-conn` (FastCGI only): `Some(true)` keeps backend
    /// connections for further requests without asking the backend,
    /// `Some(false)` never does; `None` (the default) asks the backend
    /// how many connections it serves (FCGI_GET_VALUES) and keeps them
    /// only when it says.
    pub keep_conn: Option<bool>,
    /// `proxy.server`: the host's key as written (`""` when it has none),
    /// the Host `proxy.replace-http-host` sends.
    pub http_label: String,
}

/// Most connections glint opens to one tunnel backend at once by default
/// (`max-connections` sets another): each is a client's for as long as it
/// stays, so the gateways' 16 would leave the 17th client waiting.
pub const RAW_MAX_CONNS: usize = 4096;

/// One mapping from a URL prefix or an extension to backends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    /// `.php` (an extension) or `/app` (a prefix).
    pub pattern: String,
    pub hosts: Vec<HostSpec>,
}

impl RouteSpec {
    /// `""` is a prefix too: that of every path.
    pub fn is_extension(&self) -> bool {
        !self.pattern.is_empty() && !self.pattern.starts_with('/')
    }
}

/// Parses `scgi.server` / `fastcgi.server`. `max-procs` spawned processes
/// become that many hosts, each with its own socket (`socket-0`, `socket-1`,
/// ...) or port, as lighttpd does.
pub fn parse_servers(v: &Value, protocol: Protocol) -> Result<Vec<RouteSpec>, String> {
    let Value::Array(routes) = v else {
        return Err("expects an array of \"<prefix or extension>\" => ( backends )".into());
    };
    let mut out = Vec::new();
    for (key, hosts_v) in routes {
        let pattern = key
            .clone()
            .ok_or("each entry needs a \"/prefix\" or \".extension\" key")?;
        let Value::Array(hosts) = hosts_v else {
            return Err(format!("{pattern}: expects an array of backends"));
        };
        let mut specs = Vec::new();
        for (i, (label, opts)) in hosts.iter().enumerate() {
            let label = label.clone().unwrap_or_else(|| format!("{pattern}#{i}"));
            specs.extend(parse_host(&label, opts, protocol).map_err(|e| format!("{label}: {e}"))?);
        }
        if specs.is_empty() {
            return Err(format!("{pattern}: no backends"));
        }
        out.push(RouteSpec {
            pattern,
            hosts: specs,
        });
    }
    Ok(out)
}

fn text(v: &Value, what: &str) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        Value::Int(i) => Ok(i.to_string()),
        _ => Err(format!("{what} expects a string")),
    }
}

fn number(v: &Value, what: &str) -> Result<u64, String> {
    match v {
        Value::Int(i) if *i >= 0 => Ok(*i as u64),
        Value::Str(s) => s
            .parse()
            .map_err(|_| format!("{what} expects a number, got {s:?}")),
        _ => Err(format!("{what} expects a number")),
    }
}

fn flag(v: &Value, what: &str) -> Result<bool, String> {
    match v {
        Value::Str(s) if s.eq_ignore_ascii_case("enable") || s == "true" || s == "1" => Ok(true),
        Value::Str(s) if s.eq_ignore_ascii_case("disable") || s == "false" || s == "0" => Ok(false),
        Value::Int(i) => Ok(*i != 0),
        _ => Err(format!("{what} expects \"enable\" or \"disable\"")),
    }
}

fn parse_host(label: &str, opts: &Value, protocol: Protocol) -> Result<Vec<HostSpec>, String> {
    let Value::Array(items) = opts else {
        return Err("expects an array of options".into());
    };
    let mut place = Place::new();
    let mut spec = default_spec(label, protocol);
    for (k, v) in items {
        let Some(k) = k.as_deref() else {
            return Err("options are \"name\" => value pairs".into());
        };
        if !place.set(k, v)? {
            set_option(&mut spec, label, protocol, k, v)?;
        }
    }
    if protocol.is_raw() || protocol == Protocol::Ajp13 {
        // No script to look for on a tunnel's way, nor below a servlet
        // container's paths (lighttpd clears it for both).
        spec.check_local = false;
    }
    place.hosts(&spec)
}

/// A host of `scgi.server` / `fastcgi.server` before its options.
fn default_spec(label: &str, protocol: Protocol) -> HostSpec {
    // A tunnel lasts as long as its client: no read or write time-out by
    // default (lighttpd's 0), and a cap high enough that clients do not
    // queue behind long-lived tunnels.
    let (timeout, max_conns) = match protocol.is_raw() {
        true => (u64::MAX, RAW_MAX_CONNS),
        false => (60, 16),
    };
    HostSpec {
        label: label.to_string(),
        protocol,
        addr: BackendAddr::Unix(PathBuf::new()),
        spawn: None,
        check_local: true,
        docroot: None,
        strip_request_uri: None,
        fix_root_scriptname: false,
        broken_scriptfilename: false,
        listen_backlog: 1024,
        max_conns,
        disable_time: 1,
        connect_timeout: 8,
        write_timeout: timeout,
        read_timeout: timeout,
        x_sendfile: false,
        x_sendfile_docroot: Vec::new(),
        authorizer: false,
        local_redir: true,
        keep_conn: None,
        http_label: String::new(),
    }
}

/// Sets the backend option `k` (other than where the backend is and how
/// it is started: [`Place`]) on `spec`. A table of lighttpd's option names.
fn set_option(
    spec: &mut HostSpec,
    label: &str,
    protocol: Protocol,
    k: &str,
    v: &Value,
) -> Result<(), String> {
    match k {
        "min-procs" | "idle-timeout" | "max-load-per-proc" | "tcp-fin-propagate" | "proto" => {}
        "check-local" => spec.check_local = flag(v, k)?,
        "docroot" => spec.docroot = Some(text(v, k)?),
        "strip-request-uri" => spec.strip_request_uri = Some(text(v, k)?),
        "fix-root-scriptname" => spec.fix_root_scriptname = flag(v, k)?,
        "max-connections" => spec.max_conns = number(v, k)?.clamp(1, 65_536) as usize,
        "disable-time" => spec.disable_time = number(v, k)?,
        "connect-timeout" => spec.connect_timeout = number(v, k)?.max(1),
        // (A tunnel's 0 is lighttpd's: none.)
        "write-timeout" | "read-timeout" if protocol.is_raw() && number(v, k)? == 0 => {}
        "write-timeout" => spec.write_timeout = number(v, k)?.max(1),
        "read-timeout" => spec.read_timeout = number(v, k)?.max(1),
        // `allow-x-send-file` is the option's older name.
        "x-sendfile" | "allow-x-send-file" => spec.x_sendfile = flag(v, k)?,
        "broken-scriptfilename" => spec.broken_scriptfilename = flag(v, k)?,
        "listen-backlog" => {
            spec.listen_backlog = i32::try_from(number(v, k)?.clamp(1, 65_535)).unwrap_or(1024)
        }
        "mode" => {
            spec.authorizer = match text(v, k)?.as_str() {
                "authorizer" => true,
                "responder" => false,
                // A mistyped mode must not quietly turn an authorizer
                // into a responder: refuse the configuration.
                other => {
                    return Err(format!(
                        "mode \"{other}\" is not known (\"responder\" or \"authorizer\")"
                    ))
                }
            }
        }
        "local-redir" => spec.local_redir = flag(v, k)?,
        "keep-conn" if protocol == Protocol::FastCgi => spec.keep_conn = Some(flag(v, k)?),
        "keep-conn" => {
            log::warn!("{label}: keep-conn is a FastCGI option; SCGI closes every connection")
        }
        "x-sendfile-docroot" => {
            if let Value::Array(list) = v {
                for (_, d) in list {
                    spec.x_sendfile_docroot.push(text(d, k)?);
                }
            } else {
                spec.x_sendfile_docroot.push(text(v, k)?);
            }
        }
        other => log::warn!("{label}: backend option {other} is not supported; ignored"),
    }
    Ok(())
}

/// Where a backend listens and how glint starts it (`bin-path`): the
/// options that make one `( options )` block one host per process.
struct Place {
    host: Option<String>,
    port: Option<u64>,
    socket: Option<String>,
    bin_path: Option<String>,
    env: Vec<(String, String)>,
    copy_env: Vec<String>,
    max_procs: u64,
    kill_signal: i32,
}

impl Place {
    fn new() -> Place {
        Place {
            host: None,
            port: None,
            socket: None,
            bin_path: None,
            env: Vec::new(),
            copy_env: Vec::new(),
            max_procs: 1,
            kill_signal: 15,
        }
    }

    /// Takes option `k` if it is one of these; whether it was.
    fn set(&mut self, k: &str, v: &Value) -> Result<bool, String> {
        match k {
            "host" => self.host = Some(text(v, k)?),
            "port" => self.port = Some(number(v, k)?),
            "socket" => self.socket = Some(text(v, k)?),
            "bin-path" => self.bin_path = Some(text(v, k)?),
            "bin-environment" => {
                let Value::Array(pairs) = v else {
                    return Err("bin-environment expects ( \"NAME\" => \"value\", ... )".into());
                };
                for (name, val) in pairs {
                    let name = name.clone().ok_or("bin-environment entries need names")?;
                    self.env.push((name, text(val, "bin-environment")?));
                }
            }
            "bin-copy-environment" => {
                let Value::Array(names) = v else {
                    return Err("bin-copy-environment expects ( \"NAME\", ... )".into());
                };
                for (_, n) in names {
                    self.copy_env.push(text(n, k)?);
                }
            }
            "max-procs" => self.max_procs = number(v, k)?.clamp(1, 256),
            "kill-signal" => self.kill_signal = number(v, k)? as i32,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The hosts `spec` becomes: one, or one per spawned process, each
    /// with its own socket (`socket-0`, ...) or port.
    fn hosts(self, spec: &HostSpec) -> Result<Vec<HostSpec>, String> {
        let spawn = self.bin_path.map(|p| SpawnSpec {
            argv: p.split_whitespace().map(str::to_string).collect(),
            env: self.env,
            copy_env: self.copy_env,
            kill_signal: self.kill_signal,
        });
        let procs = if spawn.is_some() { self.max_procs } else { 1 };
        let mut out = Vec::new();
        for n in 0..procs {
            let addr = match (&self.socket, &self.host, self.port) {
                (Some(s), _, _) => {
                    let path = if spawn.is_some() {
                        format!("{s}-{n}")
                    } else {
                        s.clone()
                    };
                    BackendAddr::Unix(PathBuf::from(path))
                }
                (None, h, Some(p)) => tcp_addr(h.as_deref().unwrap_or("127.0.0.1"), p + n)?,
                _ => return Err("needs \"socket\", or \"host\" and \"port\"".into()),
            };
            let mut s = spec.clone();
            s.addr = addr;
            s.spawn = spawn.clone();
            out.push(s);
        }
        Ok(out)
    }
}

/// Host `h` (a name, an address, `[v6]`) and port `p`, resolved now.
fn tcp_addr(h: &str, p: u64) -> Result<BackendAddr, String> {
    let p = u16::try_from(p).map_err(|_| format!("port {p} is out of range"))?;
    let a = (h.trim_start_matches('[').trim_end_matches(']'), p)
        .to_socket_addrs()
        .map_err(|e| format!("host {h}: {e}"))?
        .next()
        .ok_or_else(|| format!("host {h}: no address"))?;
    Ok(BackendAddr::Tcp(a))
}

/// `proxy.server` (checked by [`crate::httpup::options::parse_servers`]
/// when the option was set): each host an HTTP backend, its name resolved
/// now (as lighttpd does at start). A `read-timeout` or `write-timeout` of
/// 0, lighttpd's default, is none: an answer may take as long as it takes
/// (a server-sent event stream is quiet for minutes).
pub fn parse_proxy_servers(v: &Value) -> Result<Vec<RouteSpec>, String> {
    use crate::httpup::options::{parse_servers, UpstreamAddr};
    let routes = parse_servers(&crate::config::conf_value(v))?;
    let never = |t: u32| if t == 0 { u64::MAX } else { u64::from(t) };
    let mut out = Vec::with_capacity(routes.len());
    for r in routes {
        let mut hosts = Vec::with_capacity(r.hosts.len());
        for (i, h) in r.hosts.into_iter().enumerate() {
            let addr = match &h.addr {
                UpstreamAddr::Unix(p) => BackendAddr::Unix(PathBuf::from(p)),
                UpstreamAddr::Tcp { host, port } => {
                    let a = (host.as_str(), *port)
                        .to_socket_addrs()
                        .map_err(|e| format!("{}: host {host}: {e}", r.pattern))?
                        .next()
                        .ok_or_else(|| format!("{}: host {host}: no address", r.pattern))?;
                    BackendAddr::Tcp(a)
                }
            };
            let label = if h.label.is_empty() {
                format!("{}#{i}", r.pattern)
            } else {
                h.label.clone()
            };
            hosts.push(HostSpec {
                label,
                protocol: Protocol::Http,
                addr,
                spawn: None,
                check_local: false,
                docroot: None,
                strip_request_uri: None,
                fix_root_scriptname: false,
                broken_scriptfilename: false,
                listen_backlog: 1024,
                max_conns: h.max_conns.max(1) as usize,
                disable_time: u64::from(h.disable_time),
                connect_timeout: u64::from(h.connect_timeout.max(1)),
                write_timeout: never(h.write_timeout),
                read_timeout: never(h.read_timeout),
                x_sendfile: false,
                x_sendfile_docroot: Vec::new(),
                authorizer: false,
                local_redir: false,
                keep_conn: None,
                http_label: h.label,
            });
        }
        out.push(RouteSpec {
            pattern: r.pattern,
            hosts,
        });
    }
    Ok(out)
}

/// The one host every CGI request runs under: its cap is `cgi.limits`'
/// `max-procs` (processes running at once), its queue the gateways' own.
pub fn cgi_host(max_procs: u32) -> HostSpec {
    HostSpec {
        label: "cgi".into(),
        protocol: Protocol::Cgi,
        addr: BackendAddr::Unix(PathBuf::new()),
        spawn: None,
        check_local: false,
        docroot: None,
        strip_request_uri: None,
        fix_root_scriptname: false,
        broken_scriptfilename: false,
        listen_backlog: 0,
        max_conns: max_procs.max(1) as usize,
        disable_time: 0,
        connect_timeout: u64::MAX,
        write_timeout: u64::MAX,
        read_timeout: u64::MAX,
        x_sendfile: false,
        x_sendfile_docroot: Vec::new(),
        authorizer: false,
        local_redir: false,
        keep_conn: Some(false),
        http_label: String::new(),
    }
}

#[cfg(test)]
mod tests;
