//! The steps of building a [`Config`](super::Config) from parsed entries:
//! each option checked and applied, the conditional chains compiled, and
//! the tables every scope shares (gateway servers, auth rules) collected.

use super::lexer::Pos;
use super::options::{self, Applied};
use super::parser::{Block, Entry};
use super::*;

/// Each distinct value of one `*.server` option.
type Servers = Vec<Option<Value>>;

/// Each distinct `auth.require` value and its table.
type AuthTables = Vec<(Option<Value>, Rc<RequireTable>)>;

/// The distinct `scgi.server`, `fastcgi.server` and `proxy.server` values
/// of the global scope and of every block, each once, the global's first.
pub(super) fn server_tables(
    global: &Settings,
    assigns: &[Vec<Assign>],
) -> (Servers, Servers, Servers) {
    let mut scgi_servers = vec![global.backends.scgi_server.clone()];
    let mut fastcgi_servers = vec![global.backends.fastcgi_server.clone()];
    let mut proxy_servers = vec![global.backends.proxy_server.clone()];
    for a in assigns.iter().flatten() {
        let list = match a.key.as_str() {
            "scgi.server" => &mut scgi_servers,
            "fastcgi.server" => &mut fastcgi_servers,
            "proxy.server" => &mut proxy_servers,
            _ => continue,
        };
        // As the option stores it (the assignment was checked already).
        let mut s = Settings::default();
        let _ = options::apply(&mut s, &a.key, &a.value, &a.origin);
        let v = match a.key.as_str() {
            "scgi.server" => s.backends.scgi_server,
            "proxy.server" => s.backends.proxy_server,
            _ => s.backends.fastcgi_server,
        };
        if !list.contains(&v) {
            list.push(v);
        }
    }
    (scgi_servers, fastcgi_servers, proxy_servers)
}

/// The distinct `sockproxy.server`, `wstunnel.server` and `ajp13.server`
/// values of the global scope and of every block, each once, the global's
/// first.
pub(super) fn tunnel_tables(
    global: &Settings,
    assigns: &[Vec<Assign>],
) -> (Servers, Servers, Servers) {
    let mut sock = vec![global.tunnel.sockproxy_server.clone()];
    let mut ws = vec![global.tunnel.wstunnel_server.clone()];
    let mut ajp = vec![global.tunnel.ajp13_server.clone()];
    for a in assigns.iter().flatten() {
        let mut t = super::tunnel::TunnelSettings::default();
        let (list, v) = match a.key.as_str() {
            "sockproxy.server" => {
                let _ = t.apply(&a.key, &a.value);
                (&mut sock, t.sockproxy_server)
            }
            "wstunnel.server" => {
                let _ = t.apply(&a.key, &a.value);
                (&mut ws, t.wstunnel_server)
            }
            "ajp13.server" => {
                let _ = t.apply(&a.key, &a.value);
                (&mut ajp, t.ajp13_server)
            }
            _ => continue,
        };
        if !list.contains(&v) {
            list.push(v);
        }
    }
    (sock, ws, ajp)
}

/// The distinct `auth.require` tables: the global scope's first, then each
/// block's, parsed once.
pub(super) fn auth_tables(
    global: &Settings,
    assigns: &[Vec<Assign>],
    name: &str,
    warnings: &mut Vec<String>,
) -> Result<AuthTables, ConfigError> {
    let mut auth_requires = vec![auth_table(&global.auth.require, warnings)
        .map_err(|e| ConfigError::file(name, format!("auth.require: {e}")))?];
    for a in assigns.iter().flatten().filter(|a| a.key == "auth.require") {
        let v = Some(a.value.clone());
        if !auth_requires.iter().any(|(x, _)| *x == v) {
            let t = auth_table(&v, warnings).map_err(|e| {
                ConfigError::at(
                    &a.origin.file,
                    a.origin.line,
                    0,
                    format!("auth.require: {e}"),
                )
            })?;
            auth_requires.push(t);
        }
    }
    Ok(auth_requires)
}

/// One value of `auth.require` and its rules, parsed once. Parser
/// warnings (`host=` is not implemented) go to `warnings`.
pub(super) fn auth_table(
    v: &Option<Value>,
    warnings: &mut Vec<String>,
) -> Result<(Option<Value>, Rc<RequireTable>), String> {
    let table = match v {
        None => RequireTable::default(),
        Some(v) => {
            let (t, w) = parse_require(&options::auth_require_entries(v)?)?;
            warnings.extend(w);
            t
        }
    };
    Ok((v.clone(), Rc::new(table)))
}

/// The index of `v` in `values` (every value was collected while loading).
pub(super) fn scope_of(values: &[Option<Value>], v: &Option<Value>) -> u32 {
    values.iter().position(|x| x == v).unwrap_or(0) as u32
}

/// Applies one entry to `s`: `Ok(true)` when glint acts on the option,
/// `Ok(false)` when it accepts it without effect (with a warning where
/// that is worth saying), an error when glint cannot honour it
/// ([`support`]).
pub(super) fn check(
    s: &mut Settings,
    e: &Entry,
    warnings: &mut Vec<String>,
) -> Result<bool, ConfigError> {
    let origin = origin_of(&e.pos);
    let m = match options::apply(s, &e.key, &e.value, &origin) {
        Ok(Applied::Known) => return Ok(true),
        Ok(Applied::KnownWarn(w)) => {
            warnings.push(format!("{}:{}: {w}", e.pos.file, e.pos.line));
            return Ok(true);
        }
        Ok(Applied::Unknown) => match support::classify(&e.key, &e.value) {
            Ok(support::Support::DefaultValue) => return Ok(false),
            Ok(support::Support::Ignored(why)) => {
                warnings.push(format!(
                    "{}:{}: option {} ignored: {why}",
                    e.pos.file, e.pos.line, e.key
                ));
                return Ok(false);
            }
            Ok(support::Support::Unknown) => {
                warnings.push(format!(
                    "{}:{}: unknown option {}; ignored (lighttpd does not know it either)",
                    e.pos.file, e.pos.line, e.key
                ));
                return Ok(false);
            }
            Ok(support::Support::NotProvided(module)) => {
                return Err(e.pos.error(format!(
                    "option {}{} is not provided by glint",
                    e.key,
                    module_note(module)
                )));
            }
            Ok(support::Support::NotDefault(module)) => {
                return Err(e.pos.error(format!(
                    "option {} = {}{} is not provided by glint (only its default is)",
                    e.key,
                    e.value.to_conf(0),
                    module_note(module)
                )));
            }
            Err(m) => m,
        },
        Err(m) => m,
    };
    // (Messages of the modules' own parsers may name the option already.)
    let m = m
        .strip_prefix(e.key.as_str())
        .and_then(|r| r.strip_prefix(": "))
        .map_or(m.clone(), str::to_string);
    Err(e.pos.error(format!("{}: {m}", e.key)))
}

/// " (mod_x)" after an option's name, nothing for the server's own options.
fn module_note(module: &str) -> String {
    if module == "core" {
        String::new()
    } else {
        format!(" ({module})")
    }
}

pub(super) fn origin_of(p: &Pos) -> Origin {
    Origin {
        file: p.file.to_string(),
        line: p.line,
    }
}

/// Checks every block's options, keeps the known ones, and maps socket
/// conditions onto listener indexes.
pub(super) fn compile_chains(
    chains: Vec<Vec<Block>>,
    socket_map: &[usize],
    assigns: &mut Vec<Vec<Assign>>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Vec<CondBlock>>, ConfigError> {
    let mut out = Vec::with_capacity(chains.len());
    for chain in chains {
        let mut blocks = Vec::with_capacity(chain.len());
        for b in chain {
            let mut scratch = Settings::default();
            let mut kept = Vec::new();
            for e in &b.entries {
                if e.key.starts_with("var.") {
                    continue;
                }
                if options::GLOBAL_ONLY.contains(&e.key.as_str()) {
                    warnings.push(format!(
                        "{}:{}: option {} can only be set in the global scope; ignored",
                        e.pos.file, e.pos.line, e.key
                    ));
                    continue;
                }
                if check(&mut scratch, e, warnings)? {
                    kept.push(Assign {
                        key: e.key.clone(),
                        value: e.value.clone(),
                        origin: origin_of(&e.pos),
                    });
                }
            }
            let idx = b.id as usize;
            if assigns.len() <= idx {
                assigns.resize(idx + 1, Vec::new());
            }
            assigns[idx] = kept;
            let cond = b.cond.map(|mut c| {
                if let Test::OnListener(i) = c.test {
                    c.test = Test::OnListener(socket_map.get(i).copied().unwrap_or(usize::MAX));
                }
                c
            });
            blocks.push(CondBlock {
                id: b.id,
                cond,
                children: compile_chains(b.children, socket_map, assigns, warnings)?,
            });
        }
        out.push(blocks);
    }
    Ok(out)
}

/// Opens the `maxminddb.db` file of the global scope and of every block,
/// each once, when mod_maxminddb is loaded; a file that does not open
/// stops the load at its line, as lighttpd refuses to start. Without the
/// module, lighttpd ignores its options with a warning: so does glint.
pub(super) fn geo_databases(
    entries: &[Entry],
    global: &Settings,
    assigns: &[Vec<Assign>],
    warnings: &mut Vec<String>,
) -> Result<maxminddb::Databases, ConfigError> {
    let globals = entries
        .iter()
        .map(|e| (e.key.as_str(), origin_of(&e.pos), &e.value));
    let blocks = assigns
        .iter()
        .flatten()
        .map(|a| (a.key.as_str(), a.origin.clone(), &a.value));
    if !global.modules.iter().any(|m| m == maxminddb::MODULE) {
        for (k, o, _) in globals.chain(blocks) {
            if k.starts_with("maxminddb.") {
                warnings.push(format!(
                    "{o}: option {k} ignored: {} is not in server.modules (lighttpd ignores it too)",
                    maxminddb::MODULE
                ));
            }
        }
        return Ok(maxminddb::Databases::default());
    }
    // The global scope's file is the last one it names; each block's too.
    let last_global = globals.clone().rfind(|(k, _, _)| *k == "maxminddb.db");
    let named: Vec<(&str, Origin)> = last_global
        .into_iter()
        .chain(blocks.filter(|(k, _, _)| *k == "maxminddb.db"))
        .filter_map(|(_, o, v)| Some((v.as_str()?, o)))
        .filter(|(p, _)| !p.trim().is_empty())
        .collect();
    maxminddb::Databases::open(named.iter().map(|(p, o)| (*p, o.file.as_str(), o.line)))
}
