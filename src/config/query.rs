//! What the rest of glint asks of a loaded configuration beside the
//! settings of a request: which features some scope uses (so that their
//! tables, processes and caches are made at start only when needed), the
//! TLS scopes of a socket, and the configuration in lighttpd syntax.

use super::cond::{self, Test};
use super::{options, value, CondBlock, Config, RequestFacts, Settings, Value};
use crate::authn::require::{BackendKind, RequireTable};

impl Config {
    /// Some scope has mod_status's page or glint's metrics: the table of
    /// open connections is kept (otherwise each connection would carry a
    /// row, and each request copy its host and URI into it, for nothing).
    pub fn shows_connections(&self) -> bool {
        self.global.status.status_url.is_some()
            || self.global.status.metrics_url.is_some()
            || self
                .block_values("status.status-url")
                .chain(self.block_values("glint.metrics-url"))
                .next()
                .is_some()
    }

    /// Every `rrdtool.db-name` some scope sets, the global scope's first,
    /// each once.
    pub fn rrdtool_dbs(&self) -> Vec<String> {
        let mut dbs: Vec<String> = self.global.rrdtool_db.iter().cloned().collect();
        for v in self.block_values("rrdtool.db-name") {
            if let Some(d) = v.as_str().filter(|d| !d.trim().is_empty()) {
                if !dbs.iter().any(|x| x == d) {
                    dbs.push(d.to_string());
                }
            }
        }
        dbs
    }

    /// `rrdtool.binary` (global).
    pub fn rrdtool_binary(&self) -> Option<&str> {
        let v = self
            .global
            .raw
            .iter()
            .rev()
            .find(|(k, _)| k == "rrdtool.binary");
        v.and_then(|(_, v)| v.as_str())
            .filter(|b| !b.trim().is_empty())
    }

    /// Some scope has a mod_maxminddb database: connections keep the
    /// answer of their client's lookup.
    pub fn geo_used(&self) -> bool {
        !self.geo_dbs.is_empty()
    }

    /// Some scope sets `sockproxy.server`.
    pub fn sockproxy_used(&self) -> bool {
        self.sockproxy_servers.iter().any(Option::is_some)
    }

    /// For listener `i`, the `$HTTP["host"] ==` and `=~` blocks (at the top
    /// level or inside `$SERVER["socket"]` blocks that name `i`) that set
    /// `ssl.*` options, each with only the values it sets: the certificates
    /// the TLS handshake picks by server name (SNI), as lighttpd does.
    pub fn tls_hosts(&self, i: usize) -> Vec<(crate::tls::HostMatch, crate::tls::ScopeOptions)> {
        let spec = self.listeners.get(i).map_or("", |l| l.spec.as_str());
        let facts = RequestFacts {
            listener: i,
            remote_ip: None,
            scheme: "",
            method: "",
            host: "",
            url: "",
            query: "",
            headers: &[],
        };
        let mut out = Vec::new();
        self.collect_tls_hosts(&self.chains, &facts, spec, &mut out);
        out
    }

    fn collect_tls_hosts(
        &self,
        chains: &[Vec<CondBlock>],
        facts: &RequestFacts<'_>,
        spec: &str,
        out: &mut Vec<(crate::tls::HostMatch, crate::tls::ScopeOptions)>,
    ) {
        let mut captures = Vec::new();
        for b in chains.iter().flatten() {
            let Some(c) = &b.cond else { continue };
            match (&c.field, &c.test) {
                (cond::Field::Socket, _) if c.matches(facts, spec, &mut captures) => {
                    self.collect_tls_hosts(&b.children, facts, spec, out);
                }
                (cond::Field::Host, Test::Eq(_) | Test::Match(_)) => {
                    let mut own = Settings::default();
                    for a in self.assigns.get(b.id as usize).into_iter().flatten() {
                        let _ = options::apply(&mut own, &a.key, &a.value, &a.origin);
                    }
                    if own.ssl != crate::tls::ScopeOptions::default() {
                        let m = match &c.test {
                            Test::Match(re) => {
                                crate::tls::HostMatch::Regex(re.as_str().to_string())
                            }
                            _ => crate::tls::HostMatch::Exact(c.pattern.clone()),
                        };
                        out.push((m, own.ssl));
                    }
                }
                _ => {}
            }
        }
    }

    /// Every `deflate.cache-dir` (or `compress.cache-dir`) some scope sets,
    /// the global scope's first, each once: made at start as lighttpd does.
    pub fn deflate_cache_dirs(&self) -> Vec<String> {
        let mut dirs: Vec<String> = self.global.deflate.cache_dir.iter().cloned().collect();
        for a in self.assigns.iter().flatten() {
            if a.key != "deflate.cache-dir" && a.key != "compress.cache-dir" {
                continue;
            }
            let mut s = Settings::default();
            let _ = options::apply(&mut s, &a.key, &a.value, &a.origin);
            if let Some(d) = s.deflate.cache_dir.clone() {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        dirs
    }

    /// The configuration in lighttpd syntax: every global option glint uses
    /// with its value, then the conditional blocks. Parsing the text again
    /// gives an equal configuration.
    pub fn dump(&self) -> String {
        let mut out = String::from("# glint: resolved configuration\n");
        for (k, v) in options::entries(&self.global) {
            out.push_str(&format!("{k} = {}\n", v.to_conf(0)));
        }
        self.dump_chains(&self.chains, 0, &mut out);
        out
    }

    fn dump_chains(&self, chains: &[Vec<CondBlock>], indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        for chain in chains {
            out.push('\n');
            for (i, b) in chain.iter().enumerate() {
                out.push_str(&pad);
                if i > 0 {
                    out.push_str("else ");
                }
                if let Some(c) = &b.cond {
                    let mut pat = String::new();
                    let _ = value::write_quoted(&mut pat, &c.pattern);
                    out.push_str(&format!("{} {} {pat} ", c.var, c.op));
                }
                out.push_str("{\n");
                for a in self.assigns.get(b.id as usize).into_iter().flatten() {
                    out.push_str(&format!(
                        "{pad}  {} = {}\n",
                        a.key,
                        a.value.to_conf(indent + 2)
                    ));
                }
                self.dump_chains(&b.children, indent + 2, out);
                out.push_str(&pad);
                out.push_str("}\n");
            }
        }
    }
}

impl Config {
    /// Every value option `key` is given in a conditional block, in order
    /// (the global scope's is in [`Config::global`]).
    pub fn block_values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.assigns
            .iter()
            .flatten()
            .filter(move |a| a.key == key)
            .map(|a| &a.value)
    }

    /// Some scope's `auth.backend` (global, or set in a block) is of a
    /// kind `pick` takes.
    fn auth_backend_used(&self, pick: impl Fn(BackendKind) -> bool) -> bool {
        let used = |b: &str| {
            crate::authn::require::parse_backend(b)
                .ok()
                .flatten()
                .is_some_and(&pick)
        };
        self.global.auth.backend.as_deref().is_some_and(used)
            || self
                .block_values("auth.backend")
                .any(|v| v.as_str().is_some_and(used))
    }

    /// Some scope's `auth.backend` blocks (`ldap`, `pam`, ...) or is an
    /// htpasswd file (whose libxcrypt hashes are checked off the loop):
    /// its checks run as local jobs, so the upstream needs its local route.
    pub fn blocking_auth_used(&self) -> bool {
        // (An htpasswd file's libxcrypt hashes are checked on the worker
        // threads too.)
        self.auth_backend_used(|k| k.is_blocking() || k == BackendKind::Htpasswd)
    }

    /// Some scope's `auth.backend` is `pam` (mod_authn_pam's library is
    /// then opened at start).
    pub fn pam_used(&self) -> bool {
        self.auth_backend_used(|k| k == BackendKind::Pam)
    }

    /// The `auth.require` rules in force under `s` (none when it sets none).
    pub fn auth_rules(&self, s: &Settings) -> Option<&RequireTable> {
        self.auth_requires
            .get(s.auth.scope as usize)
            .map(|(_, t)| &**t)
            .filter(|t| !t.rules.is_empty())
    }
}
