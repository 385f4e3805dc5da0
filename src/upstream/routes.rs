//! The route tables: built from `scgi.server`, `fastcgi.server`,
//! `proxy.server` and `cgi.assign`, and looked up for each request.

use super::{config, Gateways, Host, Protocol, Route};
use crate::config::{Config, Settings, Value};

impl Gateways {
    /// The routes of `scgi.server` and `fastcgi.server`: one table for
    /// each value they have in some scope of `c` (the global one and each
    /// conditional block that sets them). A backend configured alike in
    /// several tables is one [`Host`]: one cap, one process, one set of
    /// kept connections.
    pub fn from_config(c: &Config) -> Result<Gateways, String> {
        let mut g = Gateways::default();
        for (values, p, name, balance_key) in [
            (
                &c.scgi_servers,
                Protocol::Scgi,
                "scgi.server",
                "scgi.balance",
            ),
            (
                &c.fastcgi_servers,
                Protocol::FastCgi,
                "fastcgi.server",
                "fastcgi.balance",
            ),
            (
                &c.proxy_servers,
                Protocol::Http,
                "proxy.server",
                "proxy.balance",
            ),
            (
                &c.sockproxy_servers,
                Protocol::SockProxy,
                "sockproxy.server",
                "sockproxy.balance",
            ),
            (
                &c.wstunnel_servers,
                Protocol::WsTunnel,
                "wstunnel.server",
                "wstunnel.balance",
            ),
            (
                &c.ajp13_servers,
                Protocol::Ajp13,
                "ajp13.server",
                "ajp13.balance",
            ),
        ] {
            // Said once here; requests read it quietly from their settings.
            super::check_balance(&c.global, balance_key);
            let tables = g.build_tables(c, values, p, name, balance_key)?;
            match p {
                Protocol::FastCgi => g.fastcgi_tables = tables,
                Protocol::Http => g.proxy_tables = tables,
                Protocol::SockProxy => g.sockproxy_tables = tables,
                Protocol::WsTunnel => g.wstunnel_tables = tables,
                Protocol::Ajp13 => g.ajp13_tables = tables,
                _ => g.scgi_tables = tables,
            }
        }
        g.no_request_tables = [
            &g.scgi_tables,
            &g.fastcgi_tables,
            &g.proxy_tables,
            &g.ajp13_tables,
        ]
        .iter()
        .all(|scopes| scopes.iter().all(Vec::is_empty));
        if c.cgi_used {
            g.add_cgi_route(c);
        }
        // (mod_magnet: a long script run parks its request as a local job.)
        let magnet = c.global.modules.iter().any(|m| m == "mod_magnet");
        if c.webdav_used() || c.blocking_auth_used() || c.vhostdb_used() || magnet {
            g.add_local_route();
        }
        g.settle_keep();
        Ok(g)
    }

    /// The route tables of one of `scgi.server`, `fastcgi.server` and
    /// `proxy.server`, one for each of its `values` (one per scope).
    fn build_tables(
        &mut self,
        c: &Config,
        values: &[Option<Value>],
        p: Protocol,
        name: &str,
        balance_key: &str,
    ) -> Result<Vec<Vec<usize>>, String> {
        // `*.map-extensions = ( ".php3" => ".php" )` (global): the other
        // extension goes to the same backends, after every extension of
        // its own, in each table.
        let map_key = balance_key.replace("balance", "map-extensions");
        let used = values.iter().any(Option::is_some);
        let maps = match used {
            true => map_extensions(&c.global, &map_key)?,
            false => Vec::new(),
        };
        let mut mapped = vec![false; maps.len()];
        let mut tables = Vec::with_capacity(values.len());
        for (scope, v) in values.iter().enumerate() {
            let mut table = Vec::new();
            if let Some(v) = v {
                self.add_table(v, p, scope, &mut table)
                    .map_err(|e| format!("{name}: {e}"))?;
            }
            self.add_aliases(&maps, &mut mapped, &mut table);
            tables.push(table);
        }
        for ((from, to), done) in maps.iter().zip(&mapped) {
            if !done {
                log::warn!("{map_key}: {name} has no \"{to}\" for \"{from}\"; ignored");
            }
        }
        Ok(tables)
    }

    /// Adds to `table` a route for each `(from, to)` of `maps` whose `to`
    /// extension it routes: `from` goes to the same backends. `mapped`
    /// notes which pairs found their extension.
    fn add_aliases(
        &mut self,
        maps: &[(String, String)],
        mapped: &mut [bool],
        table: &mut Vec<usize>,
    ) {
        for ((from, to), done) in maps.iter().zip(mapped) {
            let aliases: Vec<Route> = table
                .iter()
                .filter_map(|&i| self.routes.get(i))
                .filter(|r| r.extension && r.pattern == *to)
                .map(|r| Route {
                    pattern: from.clone(),
                    next: 0,
                    ..r.clone()
                })
                .collect();
            *done |= !aliases.is_empty();
            for r in aliases {
                table.push(self.routes.len());
                self.routes.push(r);
            }
        }
    }

    /// The route of local jobs and its one host (whose cap bounds how
    /// many run at once).
    pub(super) fn add_local_route(&mut self) {
        let mut spec = config::cgi_host(super::local::LOCAL_MAX_JOBS as u32);
        spec.label = "local".into();
        self.hosts.push(Host::new(spec));
        self.local_route = Some(self.routes.len());
        self.routes.push(Route {
            pattern: String::new(),
            extension: false,
            protocol: Protocol::Cgi,
            authorizer: false,
            hosts: vec![self.hosts.len() - 1],
            scope: 0,
            next: 0,
        });
    }

    /// The route of CGI requests and its one host.
    fn add_cgi_route(&mut self, c: &Config) {
        // One host for every CGI program: its cap is the number of
        // processes running at once.
        let spec = config::cgi_host(c.global.cgi.limits.max_procs);
        self.hosts.push(Host::new(spec));
        self.cgi_route = Some(self.routes.len());
        self.routes.push(Route {
            pattern: String::new(),
            extension: false,
            protocol: Protocol::Cgi,
            authorizer: false,
            hosts: vec![self.hosts.len() - 1],
            scope: 0,
            next: 0,
        });
    }

    /// Adds the routes of one `scgi.server` / `fastcgi.server` value; their
    /// indexes go to `table`, in lookup order.
    fn add_table(
        &mut self,
        v: &crate::config::Value,
        p: Protocol,
        scope: usize,
        table: &mut Vec<usize>,
    ) -> Result<(), String> {
        // Hosts of earlier tables this one may share, each at most once
        // (a backend named twice in one table stays two hosts).
        let before = self.hosts.len();
        let mut shared = vec![false; before];
        let specs = match p {
            Protocol::Http => config::parse_proxy_servers(v)?,
            _ => config::parse_servers(v, p)?,
        };
        let no_authorizer = p.is_raw() || p == Protocol::Ajp13;
        if no_authorizer && specs.iter().flat_map(|r| &r.hosts).any(|h| h.authorizer) {
            // A tunnel has no request to authorize; glint's AJP requests
            // are never an authorizer's.
            return Err("must not define any hosts with \"mode\" = \"authorizer\"".into());
        }
        for r in specs {
            // Authorizers and responders under one pattern are two
            // routes: the authorizer's is looked up first.
            for authorizer in [true, false] {
                let mut ids = Vec::new();
                for h in r.hosts.iter().filter(|h| h.authorizer == authorizer) {
                    let same = (0..before).find(|&i| !shared[i] && self.hosts[i].spec == *h);
                    match same {
                        Some(i) => {
                            shared[i] = true;
                            ids.push(i);
                        }
                        None => {
                            ids.push(self.hosts.len());
                            self.hosts.push(Host::new(h.clone()));
                        }
                    }
                }
                if ids.is_empty() {
                    continue;
                }
                table.push(self.routes.len());
                self.routes.push(Route {
                    extension: r.is_extension(),
                    protocol: p,
                    authorizer,
                    scope,
                    next: 0,
                    pattern: r.pattern.clone(),
                    hosts: ids,
                });
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The responder route for a path under settings `s` and where its
    /// script name ends.
    pub fn route_for(&self, s: &Settings, path: &str) -> Option<(usize, usize)> {
        self.find_route(s, path, false)
    }

    /// The authorizer route that guards a path under settings `s`, if any.
    pub fn authorizer_for(&self, s: &Settings, path: &str) -> Option<(usize, usize)> {
        self.find_route(s, path, true)
    }

    /// The `sockproxy.server` route of a connection whose settings are `s`:
    /// its patterns are matched against "/", as lighttpd does (`""` and
    /// `"/"` take every connection).
    pub fn sockproxy_route(&self, s: &Settings) -> Option<usize> {
        let table = self
            .sockproxy_tables
            .get(s.tunnel.sockproxy_scope as usize)?;
        self.match_route(table.iter().copied(), "/", false)
            .map(|(i, _)| i)
    }

    /// The `wstunnel.server` route for a path under settings `s`.
    pub fn wstunnel_route(&self, s: &Settings, path: &str) -> Option<usize> {
        let table = self.wstunnel_tables.get(s.tunnel.wstunnel_scope as usize)?;
        self.match_route(table.iter().copied(), path, false)
            .map(|(i, _)| i)
    }

    /// Looks in the SCGI routes of the scope of `s`, then in its FastCGI ones.
    fn find_route(&self, s: &Settings, path: &str, authorizer: bool) -> Option<(usize, usize)> {
        // No gateway configured (a static server): walking the three
        // empty tables cost 130 instructions per lookup, two per request.
        if self.routes.is_empty() || self.no_request_tables {
            return None;
        }
        let tables = [
            self.scgi_tables.get(s.backends.scgi_scope as usize),
            self.fastcgi_tables.get(s.backends.fastcgi_scope as usize),
            self.proxy_tables.get(s.backends.proxy_scope as usize),
            self.ajp13_tables.get(s.tunnel.ajp13_scope as usize),
        ];
        // A scope none of these serves (a server whose routes are CGI's or
        // the local jobs' of mod_magnet, WebDAV or a blocking auth backend,
        // which are not in these tables): walking the chain of four empty
        // tables cost ~250 instructions per lookup, two per request.
        if tables.iter().all(|t| t.is_none_or(|v| v.is_empty())) {
            return None;
        }
        let ids = tables.into_iter().flatten().flatten().copied();
        self.match_route(ids, path, authorizer)
    }

    fn match_route(
        &self,
        ids: impl Iterator<Item = usize>,
        path: &str,
        authorizer: bool,
    ) -> Option<(usize, usize)> {
        for i in ids {
            let Some(r) = self.routes.get(i) else {
                continue;
            };
            if r.authorizer != authorizer {
                continue;
            }
            if r.extension {
                // `.php` matches `/a.php` and `/a.php/more` (the rest is PATH_INFO).
                let mut from = 0;
                while let Some(pos) = path[from..].find(r.pattern.as_str()) {
                    let end = from + pos + r.pattern.len();
                    if end == path.len() || path.as_bytes()[end] == b'/' {
                        return Some((i, end));
                    }
                    from = end;
                }
            } else if let Some(rest) = path.strip_prefix(r.pattern.as_str()) {
                if rest.is_empty() || rest.starts_with('/') || r.pattern.ends_with('/') {
                    return Some((i, r.pattern.trim_end_matches('/').len()));
                }
            }
        }
        None
    }
}

/// The pairs of `scgi.map-extensions` / `fastcgi.map-extensions`.
fn map_extensions(s: &Settings, key: &str) -> Result<Vec<(String, String)>, String> {
    let Some((_, v)) = s.raw.iter().rev().find(|(k, _)| k == key) else {
        return Ok(Vec::new());
    };
    let crate::config::Value::Array(items) = v else {
        return Err(format!("{key} expects ( \".ext\" => \".ext\", ... )"));
    };
    let mut pairs = Vec::new();
    for (from, to) in items {
        let (Some(from), Some(to)) = (from, to.as_str()) else {
            return Err(format!("{key} expects ( \".ext\" => \".ext\", ... )"));
        };
        if from.is_empty() || to.is_empty() {
            return Err(format!("{key}: an empty extension"));
        }
        pairs.push((from.clone(), to.to_string()));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse_str(text, "test.conf", std::path::Path::new("/")).expect("configuration")
    }

    #[test]
    fn ajp13_routes_with_mapped_extensions_and_no_check_local() {
        let c = config(
            r#"ajp13.server = ( ".jsp" => ( "tc" => ( "host" => "127.0.0.1", "port" => 8009,
                                                      "check-local" => "enable" ) ) )
               ajp13.map-extensions = ( ".jspx" => ".jsp" )
               ajp13.balance = "round-robin""#,
        );
        let g = Gateways::from_config(&c).expect("gateways");
        for path in ["/a/x.jsp", "/a/x.jspx", "/x.jsp/more"] {
            let (r, _) = g.route_for(&c.global, path).expect(path);
            assert_eq!(g.routes[r].protocol, Protocol::Ajp13, "{path}");
        }
        assert!(g.route_for(&c.global, "/x.php").is_none());
        let host = &g.hosts[0];
        assert!(
            !host.spec.check_local,
            "lighttpd clears check-local for AJP"
        );
        assert_eq!(
            host.keep,
            super::super::Keep::Off,
            "one connection per request"
        );
        assert_eq!(
            super::super::balance_of(&c.global, Protocol::Ajp13),
            crate::config::Balance::RoundRobin
        );
    }

    #[test]
    fn an_ajp13_authorizer_is_refused() {
        let c = config(
            r#"ajp13.server = ( "/" => ( ( "host" => "127.0.0.1", "port" => 8009,
                                          "mode" => "authorizer" ) ) )"#,
        );
        let e = Gateways::from_config(&c).err().unwrap_or_default();
        assert!(e.contains("authorizer"), "{e}");
    }
}
