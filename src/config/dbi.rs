//! libdbi's connection table (`sql`, `dbtype`, `dbname`, `host`, `port`,
//! `username`, `password`, `sqlite3_dbdir`, `mysql_unix_socket`), read once
//! for `auth.backend.dbi` (into [`DbiSpec`]; the checks are in
//! [`crate::authn::dbi`]) and for `vhostdb.dbi`.

use std::path::PathBuf;

use super::Value;
use crate::authn::dbi::DbiSpec;
use crate::sqldb::mysql::MyParams;
use crate::sqldb::pgsql::PgParams;
use crate::sqldb::Db;

/// libdbi's sqlite3 driver's default `sqlite3_dbdir` (Debian's build of
/// libdbd-sqlite3).
pub const SQLITE3_DBDIR: &str = "/usr/var/lib/libdbi/sqlite3";

/// The query and the database of a libdbi table. `None` when `sql` (not
/// blank), `dbname` or `dbtype` is missing: lighttpd then sets nothing
/// up. A `dbtype` glint has no client for is refused, as lighttpd refuses
/// one libdbi has no driver for.
pub(super) fn connection<'a>(t: &[(&str, &'a Value)]) -> Result<Option<(&'a str, Db)>, String> {
    let (Some(sql), Some(dbname), Some(dbtype)) =
        (text(t, "sql"), text(t, "dbname"), text(t, "dbtype"))
    else {
        return Ok(None);
    };
    if sql.trim().is_empty() {
        return Ok(None);
    }
    let get = |k: &str| text(t, k).filter(|v| !v.is_empty()).map(str::to_string);
    let db = match dbtype {
        "sqlite3" => {
            let dir = text(t, "sqlite3_dbdir").unwrap_or(SQLITE3_DBDIR);
            Db::Sqlite(PathBuf::from(dir).join(dbname))
        }
        "pgsql" => Db::Pgsql(PgParams {
            host: get("host"),
            port: number(t, "port")?,
            dbname: dbname.to_string(),
            user: get("username").unwrap_or_else(crate::sqldb::pgsql::default_user),
            password: get("password"),
        }),
        "mysql" => Db::Mysql(MyParams {
            host: get("host"),
            port: number(t, "port")?.unwrap_or(0),
            sock: get("mysql_unix_socket"),
            dbname: dbname.to_string(),
            user: get("username").unwrap_or_else(crate::sqldb::os_user),
            password: get("password"),
        }),
        other => {
            return Err(format!(
                "dbtype \"{other}\" is not provided by glint (\"sqlite3\", \"pgsql\" and \"mysql\" are)"
            ))
        }
    };
    Ok(Some((sql, db)))
}

/// Reads `auth.backend.dbi` (see [`connection`]; without a connection
/// every login under it is refused).
pub fn parse(v: &Value) -> Result<Option<DbiSpec>, String> {
    let t = table(v)?;
    // lighttpd's second query, for Digest clients that send a userhash
    // (its second column the user name): glint's lookups read one column.
    if text(&t, "sql-userhash").is_some() {
        return Err("\"sql-userhash\" (the Digest userhash query) is not provided by glint; remove it (clients that send a userhash are then refused, as lighttpd refuses them without it)".into());
    }
    Ok(connection(&t)?.map(|(sql, db)| DbiSpec {
        sql: sql.to_string(),
        db,
    }))
}

/// A `( "key" => value, ... )` table.
pub(super) fn table(v: &Value) -> Result<Vec<(&str, &Value)>, String> {
    let Value::Array(items) = v else {
        return Err(format!("expects an array, not {}", v.type_name()));
    };
    items
        .iter()
        .map(|(k, val)| match k {
            Some(k) => Ok((k.as_str(), val)),
            None => Err("expects \"key\" => value entries".to_string()),
        })
        .collect()
}

/// The string value of `key` (case-insensitive, as lighttpd), if it is a string.
pub(super) fn text<'a>(t: &[(&str, &'a Value)], key: &str) -> Option<&'a str> {
    t.iter().rev().find_map(|(k, v)| match v {
        Value::Str(s) if k.eq_ignore_ascii_case(key) => Some(s.as_str()),
        _ => None,
    })
}

/// A port given as a number or a numeric string.
pub(super) fn number(t: &[(&str, &Value)], key: &str) -> Result<Option<u16>, String> {
    let v = t.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(key));
    match v.map(|(_, v)| *v) {
        None => Ok(None),
        Some(Value::Int(n)) => u16::try_from(*n)
            .map(Some)
            .map_err(|_| format!("{key} {n} is not a port number")),
        Some(Value::Str(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::Str(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{key} \"{s}\" is not a port number")),
        Some(Value::Array(_)) => Err(format!("{key} must be a number")),
    }
}
