//! Blocking SQL clients for the modules that look a value up in a
//! database (mod_vhostdb's document roots, mod_authn_dbi's stored
//! passwords). Each client is driven from a worker
//! thread, never from the event loop: a query may take as long as its
//! database does, up to [`IO_TIMEOUT`].
//!
//! A query is lighttpd's: the configured SQL with every `?` replaced by
//! the value, escaped by the rules of the database it goes to
//! ([`Client::escape`]), so that a value can never end the string literal
//! it is placed in.

pub mod mysql;
pub mod pgsql;
pub mod sqlite;

use std::path::PathBuf;
use std::time::Duration;

/// How long a network client waits for its database to connect, to
/// answer, or to take a request, before it gives the connection up (and
/// connects anew for the next query). lighttpd waits without limit; a
/// stopped database then holds a worker, never the event loop.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// What a query returned: its first row's first column (`None` for SQL
/// NULL or no row), and how many rows there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FirstValue {
    pub value: Option<String>,
    pub rows: usize,
}

/// A connection to one database.
pub trait Client: Send {
    /// `value` escaped for the inside of a string literal of this
    /// database (the `?` in `'?'`); Err when it cannot be (a NUL byte).
    fn escape(&self, value: &str) -> Result<String, String>;
    /// Runs `sql`; Err with the database's message. A failed connection
    /// says so in [`Client::broken`] afterwards.
    fn first_value(&mut self, sql: &str) -> Result<FirstValue, String>;
    /// The connection is no longer usable: connect anew.
    fn broken(&self) -> bool;
}

/// A database to connect to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Db {
    /// An SQLite file.
    Sqlite(PathBuf),
    Pgsql(pgsql::PgParams),
    Mysql(mysql::MyParams),
}

impl Db {
    /// Connects (opens the file): the client for the queries.
    pub fn connect(&self) -> Result<Box<dyn Client>, String> {
        Ok(match self {
            Db::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            Db::Pgsql(p) => Box::new(pgsql::Pg::connect(p)?),
            Db::Mysql(p) => Box::new(mysql::My::connect(p)?),
        })
    }
}

/// A query to run in a database: lighttpd's `sql` with its `?`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Query {
    pub sql: String,
    pub db: Db,
    /// A value only from a result of exactly one row (lighttpd's pgsql
    /// back end); otherwise the first row's.
    pub exactly_one: bool,
}

/// The user this process runs as (`USER`, else the password database's
/// name of the effective uid): the client libraries' default login.
pub fn os_user() -> String {
    if let Ok(u) = std::env::var("USER") {
        if !u.is_empty() {
            return u;
        }
    }
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_string(), |u| u.name)
}

/// `template` with each `?` replaced by `value` escaped by `client`.
pub fn substitute(client: &dyn Client, template: &str, value: &str) -> Result<String, String> {
    if !template.contains('?') {
        return Ok(template.to_string());
    }
    let esc = client.escape(value)?;
    let mut sql = String::with_capacity(template.len() + esc.len());
    for (i, part) in template.split('?').enumerate() {
        if i > 0 {
            sql.push_str(&esc);
        }
        sql.push_str(part);
    }
    Ok(sql)
}

/// Escapes for a string literal where only `'` is special (SQL's
/// standard, SQLite's and PostgreSQL's with `standard_conforming_strings`);
/// with `backslash`, `\` is an escape character too and is doubled.
pub fn escape_standard(value: &str, backslash: bool) -> Result<String, String> {
    if value.contains('\0') {
        return Err("the value has a NUL byte".into());
    }
    let mut out = String::with_capacity(value.len() + 2);
    for c in value.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' if backslash => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Std;
    impl Client for Std {
        fn escape(&self, v: &str) -> Result<String, String> {
            escape_standard(v, false)
        }
        fn first_value(&mut self, _: &str) -> Result<FirstValue, String> {
            Ok(FirstValue::default())
        }
        fn broken(&self) -> bool {
            false
        }
    }

    #[test]
    fn every_question_mark_is_the_escaped_value() {
        let cases = [
            (
                "SELECT d FROM v WHERE h='?'",
                "a.test",
                "SELECT d FROM v WHERE h='a.test'",
            ),
            ("SELECT '?' || '?'", "x", "SELECT 'x' || 'x'"),
            ("SELECT 1", "x", "SELECT 1"),
            ("h='?'", "x' OR '1'='1", "h='x'' OR ''1''=''1'"),
        ];
        for (t, v, want) in cases {
            assert_eq!(substitute(&Std, t, v).as_deref(), Ok(want), "{t} {v}");
        }
    }

    #[test]
    fn backslashes_are_doubled_only_where_they_escape() {
        assert_eq!(escape_standard("a\\'b", false).as_deref(), Ok("a\\''b"));
        assert_eq!(escape_standard("a\\'b", true).as_deref(), Ok("a\\\\''b"));
        assert!(escape_standard("a\0b", false).is_err());
    }
}
