//! mod_vhostdb's options: `vhostdb.backend`, `vhostdb.cache` and each
//! back end's table (`vhostdb.dbi`, `vhostdb.pgsql`, `vhostdb.mysql`,
//! `vhostdb.ldap`), checked and typed when the file is read.

use std::sync::Arc;

use super::dbi::{table, text};
use super::value::Value;
use crate::sqldb::mysql::MyParams;
use crate::sqldb::pgsql::PgParams;
use crate::sqldb::{Db, Query};

pub use super::vhostdb_ldap::LdapQuery;

/// lighttpd's `vhostdb.cache` `max-age` when none (or no number) is given.
pub const CACHE_MAX_AGE: u64 = 600;

/// The back end `vhostdb.backend` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Dbi,
    Pgsql,
    Mysql,
    Ldap,
}

/// What a lookup asks: an SQL query or an LDAP search (the key of the
/// cache and of each lookup thread's connections).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    Sql(Arc<Query>),
    Ldap(Arc<LdapQuery>),
}

/// mod_vhostdb's settings in one scope.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VhostDbSettings {
    /// None: no lookup (a blank `vhostdb.backend` keeps the one of the
    /// scopes around, as lighttpd).
    pub backend: Option<Backend>,
    /// `vhostdb.cache`: found hosts are kept this many seconds.
    pub cache_max_age: Option<u64>,
    /// `vhostdb.dbi`: None when it lacks `sql`, `dbname` or `dbtype`
    /// (lighttpd then looks nothing up).
    pub dbi: Option<Arc<Query>>,
    /// `vhostdb.pgsql`: None when it lacks `sql` or `dbname`.
    pub pgsql: Option<Arc<Query>>,
    /// `vhostdb.mysql`: None when it lacks `sql`, `dbname` or `user`.
    pub mysql: Option<Arc<Query>>,
    /// `vhostdb.ldap`: None when it lacks `filter`, `host` or `base-dn`.
    pub ldap: Option<Arc<LdapQuery>>,
}

impl VhostDbSettings {
    /// The query of the back end in force, if it has one.
    pub fn query(&self) -> Option<Source> {
        let sql = match self.backend? {
            Backend::Dbi => self.dbi.as_ref(),
            Backend::Pgsql => self.pgsql.as_ref(),
            Backend::Mysql => self.mysql.as_ref(),
            Backend::Ldap => return self.ldap.clone().map(Source::Ldap),
        };
        sql.cloned().map(Source::Sql)
    }

    /// Sets one `vhostdb.*` option; false for a key that is not one.
    pub fn apply(&mut self, key: &str, v: &Value) -> Result<bool, String> {
        match key {
            // Blank changes nothing: lighttpd keeps the back end of the
            // scopes around (so a blank one in a condition does not turn
            // the lookup off there).
            "vhostdb.backend" => {
                if let Some(b) = backend(v)? {
                    self.backend = Some(b);
                }
            }
            "vhostdb.cache" => self.cache_max_age = Some(cache(v)?),
            "vhostdb.dbi" => self.dbi = dbi(&table(v)?)?.map(Arc::new),
            "vhostdb.pgsql" => self.pgsql = pgsql(&table(v)?)?.map(Arc::new),
            "vhostdb.mysql" => self.mysql = mysql(&table(v)?)?.map(Arc::new),
            "vhostdb.ldap" => self.ldap = super::vhostdb_ldap::ldap(&table(v)?)?.map(Arc::new),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl super::Config {
    /// Some scope sets `vhostdb.backend` (its lookups are local jobs,
    /// which need their route).
    pub fn vhostdb_used(&self) -> bool {
        self.global.vhostdb.backend.is_some()
            || self
                .assigns
                .iter()
                .flatten()
                .any(|a| a.key == "vhostdb.backend")
    }
}

fn backend(v: &Value) -> Result<Option<Backend>, String> {
    let Value::Str(s) = v else {
        return Err(format!("expects a string, not {}", v.type_name()));
    };
    match s.as_str() {
        s if s.trim().is_empty() => Ok(None),
        "dbi" => Ok(Some(Backend::Dbi)),
        "pgsql" => Ok(Some(Backend::Pgsql)),
        "mysql" => Ok(Some(Backend::Mysql)),
        "ldap" => Ok(Some(Backend::Ldap)),
        other => Err(format!("vhostdb.backend not supported: {other}")),
    }
}

/// `vhostdb.cache = ( "max-age" => N )`; a value that is not a number
/// gives the default, as lighttpd's `config_plugin_value_to_int32`.
fn cache(v: &Value) -> Result<u64, String> {
    let mut max_age = CACHE_MAX_AGE;
    for (k, val) in table(v)? {
        if k == "max-age" {
            max_age = match val {
                Value::Int(n) => u64::try_from(*n).unwrap_or(CACHE_MAX_AGE),
                Value::Str(s) => s.trim().parse().unwrap_or(CACHE_MAX_AGE),
                Value::Array(_) => CACHE_MAX_AGE,
            };
        }
    }
    Ok(max_age)
}

/// `vhostdb.dbi`: libdbi's table (see [`super::dbi::connection`]).
fn dbi(t: &[(&str, &Value)]) -> Result<Option<Query>, String> {
    let found = super::dbi::connection(t).map_err(|e| format!("vhostdb.dbi: {e}"))?;
    Ok(found.map(|(sql, db)| Query {
        sql: sql.to_string(),
        db,
        exactly_one: false,
    }))
}

/// `vhostdb.pgsql`: `sql`, `dbname`, `user`, `password`, `host`, `port`.
fn pgsql(t: &[(&str, &Value)]) -> Result<Option<Query>, String> {
    let (Some(sql), Some(dbname)) = (text(t, "sql"), text(t, "dbname")) else {
        return Ok(None);
    };
    if sql.trim().is_empty() {
        return Ok(None);
    }
    if dbname.contains('=') || dbname.starts_with("postgres") && dbname.contains("://") {
        return Err(
            "vhostdb.pgsql: a connection string in \"dbname\" is not provided by glint; give host, port, user and password".into(),
        );
    }
    let port = match text(t, "port").filter(|p| !p.is_empty()) {
        None => None,
        Some(p) => Some(
            p.trim()
                .parse::<u16>()
                .map_err(|_| format!("vhostdb.pgsql: port \"{p}\" is not a port number"))?,
        ),
    };
    let user = match text(t, "user").filter(|u| !u.is_empty()) {
        Some(u) => u.to_string(),
        // libpq's default: PGUSER, else the user glint runs as.
        None => crate::sqldb::pgsql::default_user(),
    };
    Ok(Some(Query {
        sql: sql.to_string(),
        db: Db::Pgsql(PgParams {
            host: text(t, "host")
                .filter(|h| !h.is_empty())
                .map(str::to_string),
            port,
            dbname: dbname.to_string(),
            user,
            password: text(t, "password").map(str::to_string),
        }),
        // lighttpd's pgsql back end takes a root only from a single row.
        exactly_one: true,
    }))
}

/// `vhostdb.mysql`: `sql`, `dbname`, `user`, `password`, `host`, `port`,
/// `sock`; blank values count as unset, as lighttpd.
fn mysql(t: &[(&str, &Value)]) -> Result<Option<Query>, String> {
    let get = |k: &str| text(t, k).filter(|v| !v.is_empty());
    let (Some(sql), Some(dbname), Some(user)) = (get("sql"), get("dbname"), get("user")) else {
        return Ok(None);
    };
    // lighttpd reads the port with strtoul: leading digits, else 0 (the default).
    let port = get("port").map_or(0, |p| {
        let digits: String = p
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<u16>().unwrap_or(0)
    });
    Ok(Some(Query {
        sql: sql.to_string(),
        db: Db::Mysql(MyParams {
            host: get("host").map(str::to_string),
            port,
            sock: get("sock").map(str::to_string),
            dbname: dbname.to_string(),
            user: user.to_string(),
            password: get("password").map(str::to_string),
        }),
        exactly_one: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(s: &VhostDbSettings) -> Arc<Query> {
        match s.query() {
            Some(Source::Sql(q)) => q,
            other => panic!("{other:?}"),
        }
    }

    fn arr(kv: &[(&str, &str)]) -> Value {
        Value::Array(
            kv.iter()
                .map(|(k, v)| (Some(k.to_string()), Value::Str(v.to_string())))
                .collect(),
        )
    }

    #[test]
    fn options_as_lighttpd_reads_them() {
        let mut s = VhostDbSettings::default();
        assert!(s
            .apply("vhostdb.backend", &Value::Str("dbi".into()))
            .unwrap());
        let d = arr(&[
            ("sql", "SELECT d FROM v WHERE h='?'"),
            ("dbtype", "sqlite3"),
            ("dbname", "v.db"),
            ("sqlite3_dbdir", "/srv/db"),
        ]);
        s.apply("vhostdb.dbi", &d).unwrap();
        let q = sql(&s);
        assert_eq!(q.db, Db::Sqlite(std::path::PathBuf::from("/srv/db/v.db")));
        // Without dbtype: no lookup, as lighttpd.
        s.apply("vhostdb.dbi", &arr(&[("sql", "x"), ("dbname", "v.db")]))
            .unwrap();
        assert!(s.query().is_none());
        assert!(s
            .apply(
                "vhostdb.dbi",
                &arr(&[("sql", "x"), ("dbname", "v"), ("dbtype", "oracle")])
            )
            .is_err());
        let d = arr(&[
            ("sql", "x"),
            ("dbname", "v"),
            ("dbtype", "pgsql"),
            ("host", "/run/pg"),
            ("port", "5433"),
            ("username", "u"),
        ]);
        s.apply("vhostdb.dbi", &d).unwrap();
        let q = sql(&s);
        let Db::Pgsql(p) = &q.db else { panic!() };
        let got = (p.port, p.host.as_deref(), p.user.as_str(), q.exactly_one);
        assert_eq!(got, (Some(5433), Some("/run/pg"), "u", false));
        assert!(s
            .apply("vhostdb.backend", &Value::Str("nosuch".into()))
            .is_err());
        s.apply("vhostdb.backend", &Value::Str("".into())).unwrap();
        assert_eq!(s.backend, Some(Backend::Dbi));
        s.apply("vhostdb.backend", &Value::Str("pgsql".into()))
            .unwrap();
        s.apply(
            "vhostdb.pgsql",
            &arr(&[
                ("sql", "x"),
                ("dbname", "v"),
                ("user", "u"),
                ("port", "5433"),
                ("host", "/tmp"),
            ]),
        )
        .unwrap();
        let Db::Pgsql(p) = &sql(&s).db else { panic!() };
        assert_eq!(
            (p.port, p.host.as_deref(), p.user.as_str()),
            (Some(5433), Some("/tmp"), "u")
        );
        assert!(s
            .apply(
                "vhostdb.pgsql",
                &arr(&[("sql", "x"), ("dbname", "host=a dbname=b")])
            )
            .is_err());
        assert!(s
            .apply(
                "vhostdb.pgsql",
                &arr(&[("sql", "x"), ("dbname", "v"), ("port", "x")])
            )
            .is_err());
        s.apply("vhostdb.cache", &Value::Array(vec![])).unwrap();
        assert_eq!(s.cache_max_age, Some(600));
        s.apply(
            "vhostdb.cache",
            &Value::Array(vec![(Some("max-age".into()), Value::Int(5))]),
        )
        .unwrap();
        assert_eq!(s.cache_max_age, Some(5));
    }
}
