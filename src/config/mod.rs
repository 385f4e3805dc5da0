//! Configuration: the typed [`Settings`], the listeners, and the conditional
//! blocks that pick per-request settings.
//!
//! The server asks two things of a [`Config`]: which sockets to listen on
//! ([`Config::listeners`]) and which settings apply to one request
//! ([`Config::resolve`]).
//!
//! A configuration comes from lighttpd's language ([`Config::load`],
//! [`Config::parse_str`], [`Config::load_stdin`]) or from the command line
//! ([`Config::from_settings`]); [`Config::dump`] prints it back for `-p`.
//! Loading evaluates the whole file (variables, `include`, `+=`), checks
//! every option's type, compiles every condition (a regex the `regex` crate
//! rejects is an error) and keeps options glint does not implement as
//! [`Config::warnings`]. Captures of `=~` conditions (for `%1` in redirects
//! and rewrites) come from the last regex condition that matched.

mod acme_names;
mod build;
mod cond;
pub mod dbi;
mod error;
mod gateway;
mod lexer;
mod limits;
mod listen;
pub mod maxminddb;
mod modules;
mod options;
mod origin;
mod parser;
mod pattern;
mod query;
mod server_options;
mod settings;
mod support;
pub mod tunnel;
mod value;
pub mod vhostdb;
pub mod vhostdb_ldap;
pub mod webdav;

#[cfg(test)]
mod tests;

pub use error::ConfigError;
pub use gateway::{Backends, Balance, GatewaySettings};
pub use limits::{Limits, ScopeRate};
pub use listen::{listen_from_settings, parse_socket, Listen, ListenAddr};
pub use modules::{
    Access, Accesslog, Auth, DirListing, Expire, ExtforwardOptions, Listener, Magnet, Process,
    Rewrite, SetEnv, SimpleVhost, Ssi, StaticFile, Status, TlsSettings, UserDir,
};
pub use options::acme::{AcmeSettings, Challenge, KeyType, KEYS as ACME_OPTIONS};
pub use options::{conf_value, KEPT_OPTIONS, PROVIDED_MODULES};
pub use origin::Origin;
pub use pattern::Pattern;
pub use server_options::{ErrorLog, ErrorPages, FileOptions, Identity, PathMapping, Protocols};
pub use settings::{CgiLimits, CgiSettings, Settings, Stamp, DEFAULT_ACCESSLOG_FORMAT};
pub use support::IGNORED as IGNORED_OPTIONS;
pub use value::Value;

use crate::authn::require::{parse_require, RequireTable};
use crate::tls::modules::TlsModule;
use build::{auth_table, check, compile_chains, scope_of};
use cond::{Cond, Test};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// What conditionals may test about one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// Index into [`Config::listeners`] of the socket that accepted the connection.
    pub listener: usize,
    pub remote_ip: Option<IpAddr>,
    /// `http` (glint has no TLS).
    pub scheme: &'a str,
    pub method: &'a str,
    /// The Host header as sent, lowercased (empty when absent).
    pub host: &'a str,
    /// The decoded, normalised path.
    pub url: &'a str,
    /// The query string, without `?`.
    pub query: &'a str,
    /// The request headers, for `$HTTP["useragent"]`, `$REQUEST_HEADER["..."]`, ...
    pub headers: &'a [httparse::Header<'a>],
}

impl RequestFacts<'_> {
    /// The first header named `name` (case-insensitive), as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    }
}

/// The settings for one request, and the captures of the last regex
/// conditional that matched (`%1`.. in redirects and rewrites).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub settings: Rc<Settings>,
    pub captures: Vec<String>,
}

/// A loaded configuration.
#[derive(Debug)]
pub struct Config {
    /// The global scope.
    pub global: Rc<Settings>,
    /// Every socket to listen on; the first comes from `server.bind` / `server.port`.
    pub listeners: Vec<Listen>,
    /// Options glint parsed but does not act on, and similar notices.
    pub warnings: Vec<String>,
    /// Settings merged for each combination of matched conditionals, built on first use.
    cache: RefCell<HashMap<Vec<u32>, Rc<Settings>>>,
    /// The conditional blocks: chains of `if / else if / else` at the top level.
    chains: Vec<Vec<CondBlock>>,
    /// The options each block sets, indexed by block id.
    assigns: Vec<Vec<Assign>>,
    /// Every distinct value `scgi.server` has in some scope: the global
    /// scope's first, then those conditional blocks set, in order. Each is
    /// one table of gateway routes; [`Settings::scgi_scope`] says which
    /// applies to a request.
    pub scgi_servers: Vec<Option<Value>>,
    /// The same for `fastcgi.server` ([`Settings::fastcgi_scope`]).
    pub fastcgi_servers: Vec<Option<Value>>,
    /// Every distinct value `auth.require` has in some scope (the global
    /// scope's first), each with its rules parsed once at load;
    /// [`Settings::auth_scope`] says which applies to a request.
    pub auth_requires: Vec<(Option<Value>, Rc<RequireTable>)>,
    /// Some scope trusts a forwarder (`extforward.forwarder`): requests
    /// look for forwarded headers (and connections for a PROXY header).
    pub extforward_anywhere: bool,
    /// The same for `proxy.server` ([`Settings::proxy_scope`]).
    pub proxy_servers: Vec<Option<Value>>,
    /// `cgi.assign` is set in some scope: CGI programs may run.
    pub cgi_used: bool,
    /// The same for `sockproxy.server` ([`tunnel::TunnelSettings::sockproxy_scope`]).
    pub sockproxy_servers: Vec<Option<Value>>,
    /// The same for `wstunnel.server` ([`tunnel::TunnelSettings::wstunnel_scope`]).
    pub wstunnel_servers: Vec<Option<Value>>,
    /// The `maxminddb.db` files of every scope, opened at load.
    geo_dbs: maxminddb::Databases,
    /// Some scope sets `server.protocol-http11 = "disable"`: an HTTP/1.1
    /// request's scope is asked before it is answered.
    pub http11_off_anywhere: bool,
    /// The same for `ajp13.server` ([`tunnel::TunnelSettings::ajp13_scope`]).
    pub ajp13_servers: Vec<Option<Value>>,
}

/// One option a conditional block sets (already checked to apply cleanly).
#[derive(Debug, Clone)]
struct Assign {
    key: String,
    value: Value,
    origin: Origin,
}

/// A compiled conditional block; `cond` is `None` for a plain `else`.
#[derive(Debug)]
struct CondBlock {
    id: u32,
    cond: Option<Cond>,
    children: Vec<Vec<CondBlock>>,
}

thread_local! {
    /// The ids of the matched blocks of the request being resolved, reused between calls.
    static MATCHED: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

impl Config {
    /// A configuration with no conditionals: one listener from `bind` and `port`.
    pub fn from_settings(settings: Settings) -> Config {
        let listeners = vec![listen_from_settings(&settings)];
        let mut settings = settings;
        settings.backends.scgi_scope = 0;
        settings.backends.fastcgi_scope = 0;
        settings.auth.scope = 0;
        options::finish(&mut settings);
        let mut warnings = Vec::new();
        let auth_requires = match auth_table(&settings.auth.require, &mut warnings) {
            Ok(t) => vec![t],
            Err(e) => {
                // (The command line sets no auth.require; settings built in
                // code with a broken one protect everything: every path
                // answers 500, with no backend to check a password against.)
                warnings.push(format!("auth.require: {e}; every request answers 500"));
                settings.auth.backend = None;
                let all = vec![(
                    String::new(),
                    ["method", "realm", "require"]
                        .iter()
                        .zip(["basic", "auth.require does not parse", "valid-user"])
                        .map(|(k, v)| {
                            (
                                k.to_string(),
                                crate::authn::require::OptValue::Str(v.into()),
                            )
                        })
                        .collect(),
                )];
                let table = parse_require(&all).map(|(t, _)| t).unwrap_or_default();
                vec![(settings.auth.require.clone(), Rc::new(table))]
            }
        };
        settings.backends.proxy_scope = 0;
        reset_tunnel_scopes(&mut settings);
        let geo_dbs = maxminddb::Databases::default();
        settings.maxminddb.finish(&settings.modules, &geo_dbs);
        Config {
            geo_dbs,
            http11_off_anywhere: !settings.protocols.protocol_http11,
            extforward_anywhere: settings.extforward.is_some(),
            auth_requires,
            scgi_servers: vec![settings.backends.scgi_server.clone()],
            fastcgi_servers: vec![settings.backends.fastcgi_server.clone()],
            proxy_servers: vec![settings.backends.proxy_server.clone()],
            cgi_used: !settings.cgi.assign.is_empty(),
            sockproxy_servers: vec![settings.tunnel.sockproxy_server.clone()],
            wstunnel_servers: vec![settings.tunnel.wstunnel_server.clone()],
            ajp13_servers: vec![settings.tunnel.ajp13_server.clone()],
            global: Rc::new(settings),
            listeners,
            warnings,
            cache: RefCell::new(HashMap::new()),
            chains: Vec::new(),
            assigns: Vec::new(),
        }
    }

    /// Reads and evaluates the configuration file at `path`; includes are
    /// relative to its directory.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::file(&name, format!("cannot read: {e}")))?;
        let base = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Config::parse_str(&text, &name, &base)
    }

    /// Reads the configuration from standard input (`-f -`); includes are
    /// relative to the current directory.
    pub fn load_stdin() -> Result<Config, ConfigError> {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| ConfigError::file("<stdin>", format!("cannot read: {e}")))?;
        Config::parse_str(&text, "<stdin>", Path::new("."))
    }

    /// Evaluates configuration `text`, named `name` in errors and warnings;
    /// relative includes are looked up in `base_dir`.
    pub fn parse_str(text: &str, name: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        let parsed = parser::parse(text, name, base_dir)?;
        let mut warnings = Vec::new();
        let mut global = Settings::default();
        // lighttpd refuses to start when a module cannot be loaded; glint
        // refuses a module it does not provide, at the line that named it.
        for (m, pos) in &parsed.modules {
            if !PROVIDED_MODULES.contains(&m.as_str()) {
                return Err(pos.error(format!("module {m} is not provided by glint")));
            }
        }
        // One TLS module: lighttpd 1.4.69 starts with two, and then both
        // take hold of each TLS connection; glint refuses that at the line.
        let mut tls = parsed
            .modules
            .iter()
            .filter(|(m, _)| TlsModule::from_name(m).is_some());
        if let (Some((first, _)), Some((second, pos))) = (tls.next(), tls.next()) {
            return Err(pos.error(format!(
                "module {second}: {first} is loaded already; one TLS module serves the ssl.* options"
            )));
        }
        let tls_module = parsed
            .modules
            .iter()
            .find_map(|(m, _)| TlsModule::from_name(m));
        if let Some(m) = tls_module.filter(|m| *m != TlsModule::OpenSsl) {
            options::tls_lines::check(m, &parsed.entries, &parsed.chains)?;
        }
        for e in &parsed.entries {
            if e.key.starts_with("var.") {
                continue;
            }
            check(&mut global, e, &mut warnings)?;
        }
        let (listeners, socket_map) = listen::listeners(&global, &parsed.sockets)?;
        let mut assigns = Vec::new();
        let chains = compile_chains(parsed.chains, &socket_map, &mut assigns, &mut warnings)?;
        let (scgi_servers, fastcgi_servers, proxy_servers) =
            build::server_tables(&global, &assigns);
        global.backends.scgi_scope = 0;
        global.backends.fastcgi_scope = 0;
        global.auth.scope = 0;
        options::finish(&mut global);
        // (`options::apply` checked every value at its line already.)
        let auth_requires = build::auth_tables(&global, &assigns, name, &mut warnings)?;
        let extforward_anywhere = global.extforward.is_some()
            || assigns
                .iter()
                .flatten()
                .any(|a| a.key == "extforward.forwarder");
        global.backends.proxy_scope = 0;
        let (sockproxy_servers, wstunnel_servers, ajp13_servers) =
            build::tunnel_tables(&global, &assigns);
        reset_tunnel_scopes(&mut global);
        let cgi_used = !global.cgi.assign.is_empty()
            || assigns.iter().flatten().any(|a| a.key == "cgi.assign");
        let geo_dbs = build::geo_databases(&parsed.entries, &global, &assigns, &mut warnings)?;
        global.maxminddb.finish(&global.modules, &geo_dbs);
        let http11_off_anywhere = !global.protocols.protocol_http11
            || assigns
                .iter()
                .flatten()
                .any(|a| a.key == "server.protocol-http11");
        Ok(Config {
            geo_dbs,
            http11_off_anywhere,
            extforward_anywhere,
            auth_requires,
            global: Rc::new(global),
            listeners,
            warnings,
            cache: RefCell::new(HashMap::new()),
            chains,
            assigns,
            scgi_servers,
            fastcgi_servers,
            proxy_servers,
            cgi_used,
            sockproxy_servers,
            wstunnel_servers,
            ajp13_servers,
        })
    }

    /// The settings that apply to one request.
    ///
    /// Walks the conditional blocks, then returns the settings merged for the
    /// blocks that matched: the global settings when none did, otherwise a
    /// cached merge (built once per combination of blocks).
    pub fn resolve(&self, facts: &RequestFacts<'_>) -> Resolved {
        let mut captures = Vec::new();
        if self.chains.is_empty() {
            return Resolved {
                settings: Rc::clone(&self.global),
                captures,
            };
        }
        let spec = self
            .listeners
            .get(facts.listener)
            .map_or("", |l| l.spec.as_str());
        let settings = MATCHED.with(|cell| match cell.try_borrow_mut() {
            Ok(mut ids) => {
                ids.clear();
                walk(&self.chains, facts, spec, &mut ids, &mut captures);
                self.merged(&ids)
            }
            Err(_) => {
                let mut ids = Vec::new();
                walk(&self.chains, facts, spec, &mut ids, &mut captures);
                self.merged(&ids)
            }
        });
        Resolved { settings, captures }
    }

    /// The settings of listener `i` before any request: the global scope
    /// with the `$SERVER["socket"]` blocks that name it (and their nested
    /// socket blocks) applied. Listener options (`server.listen-backlog`,
    /// `server.use-ipv6`, `server.set-v6only`, `server.socket-perms`) come
    /// from here; a block on anything else is a request's business.
    pub fn socket_settings(&self, i: usize) -> Rc<Settings> {
        self.settings_before_request(i, None, false)
    }

    /// The settings of a connection before its first byte is read (those
    /// mod_sockproxy reads): the blocks on `$SERVER["socket"]` and
    /// `$HTTP["remote-ip"]` applied, as lighttpd evaluates them at accept;
    /// a chain stops at its first condition on anything else.
    pub fn connection_settings(&self, i: usize, remote_ip: Option<IpAddr>) -> Rc<Settings> {
        self.settings_before_request(i, remote_ip, true)
    }

    /// The blocks of listener `i` that apply before a request exists;
    /// `remote_ip`: also those on `$HTTP["remote-ip"]`.
    fn settings_before_request(
        &self,
        i: usize,
        remote_ip: Option<IpAddr>,
        with_remote: bool,
    ) -> Rc<Settings> {
        let spec = self.listeners.get(i).map_or("", |l| l.spec.as_str());
        let facts = RequestFacts {
            listener: i,
            remote_ip,
            scheme: "",
            method: "",
            host: "",
            url: "",
            query: "",
            headers: &[],
        };
        let mut ids = Vec::new();
        walk_sockets(&self.chains, &facts, spec, &mut ids, with_remote);
        self.merged(&ids)
    }

    /// The settings for a combination of matched blocks, from the cache when possible.
    fn merged(&self, ids: &[u32]) -> Rc<Settings> {
        if ids.is_empty() {
            return Rc::clone(&self.global);
        }
        if let Some(s) = self.cache.borrow().get(ids) {
            return Rc::clone(s);
        }
        let mut s = (*self.global).clone();
        for id in ids {
            for a in self.assigns.get(*id as usize).into_iter().flatten() {
                // Every assignment was applied once while loading; it cannot fail now.
                let _ = options::apply(&mut s, &a.key, &a.value, &a.origin);
            }
        }
        // Once per combination: which gateway route tables apply.
        s.backends.scgi_scope = scope_of(&self.scgi_servers, &s.backends.scgi_server);
        s.backends.fastcgi_scope = scope_of(&self.fastcgi_servers, &s.backends.fastcgi_server);
        s.auth.scope = self
            .auth_requires
            .iter()
            .position(|(v, _)| *v == s.auth.require)
            .unwrap_or(0) as u32;
        options::finish(&mut s);
        s.maxminddb.finish(&s.modules, &self.geo_dbs);
        s.backends.proxy_scope = scope_of(&self.proxy_servers, &s.backends.proxy_server);
        let sock = scope_of(&self.sockproxy_servers, &s.tunnel.sockproxy_server);
        let ws = scope_of(&self.wstunnel_servers, &s.tunnel.wstunnel_server);
        let ajp = scope_of(&self.ajp13_servers, &s.tunnel.ajp13_server);
        let t = &s.tunnel;
        if (sock, ws, ajp) != (t.sockproxy_scope, t.wstunnel_scope, t.ajp13_scope) {
            let t = Rc::make_mut(&mut s.tunnel);
            t.sockproxy_scope = sock;
            t.wstunnel_scope = ws;
            t.ajp13_scope = ajp;
        }
        let s = Rc::new(s);
        self.cache.borrow_mut().insert(ids.to_vec(), Rc::clone(&s));
        s
    }
}

/// The global scope's tunnel tables are the first of each.
fn reset_tunnel_scopes(s: &mut Settings) {
    let t = &s.tunnel;
    if t.sockproxy_scope != 0 || t.wstunnel_scope != 0 || t.ajp13_scope != 0 {
        let t = Rc::make_mut(&mut s.tunnel);
        t.sockproxy_scope = 0;
        t.wstunnel_scope = 0;
        t.ajp13_scope = 0;
    }
}

/// Like [`walk`], for the blocks that test only `$SERVER["socket"]` (and
/// with `remote`, `$HTTP["remote-ip"]`): a chain stops at its first
/// condition on anything else.
fn walk_sockets(
    chains: &[Vec<CondBlock>],
    facts: &RequestFacts<'_>,
    spec: &str,
    ids: &mut Vec<u32>,
    remote: bool,
) {
    let mut captures = Vec::new();
    for chain in chains {
        for b in chain {
            let hit = match &b.cond {
                None => true,
                Some(c) if c.field == cond::Field::Socket => c.matches(facts, spec, &mut captures),
                Some(c) if remote && c.field == cond::Field::RemoteIp => {
                    c.matches(facts, spec, &mut captures)
                }
                Some(_) => break,
            };
            if hit {
                ids.push(b.id);
                walk_sockets(&b.children, facts, spec, ids, remote);
                break;
            }
        }
    }
}

/// Collects the ids of the blocks that match, in configuration order.
fn walk(
    chains: &[Vec<CondBlock>],
    facts: &RequestFacts<'_>,
    spec: &str,
    ids: &mut Vec<u32>,
    captures: &mut Vec<String>,
) {
    for chain in chains {
        for b in chain {
            let hit = match &b.cond {
                None => true,
                Some(c) => c.matches(facts, spec, captures),
            };
            if hit {
                ids.push(b.id);
                walk(&b.children, facts, spec, ids, captures);
                break;
            }
        }
    }
}
