//! MySQL and MariaDB through the `mysql` crate's synchronous client (its
//! own blocking sockets, with read and write time-outs).

use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, Value};

use super::{Client, FirstValue, IO_TIMEOUT};

/// Where and as whom to connect, as lighttpd hands it to
/// `mysql_real_connect`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct MyParams {
    /// None or `localhost`: the unix socket (`sock`, else the server's
    /// default); otherwise TCP to this host.
    pub host: Option<String>,
    /// TCP port; 0: 3306.
    pub port: u16,
    pub sock: Option<String>,
    pub dbname: String,
    pub user: String,
    pub password: Option<String>,
}

/// Debian's MariaDB and MySQL socket when none is named.
pub const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

/// One session with the server.
pub struct My {
    conn: Conn,
    broken: bool,
}

impl My {
    pub fn connect(p: &MyParams) -> Result<My, String> {
        let local = p.host.as_deref().is_none_or(|h| h == "localhost");
        let timeout: Option<Duration> = Some(IO_TIMEOUT);
        let mut opts = OptsBuilder::new()
            .user(Some(p.user.as_str()))
            .pass(p.password.as_deref())
            .db_name(Some(p.dbname.as_str()))
            .read_timeout(timeout)
            .write_timeout(timeout)
            .tcp_connect_timeout(timeout)
            .prefer_socket(false);
        opts = if local {
            opts.socket(Some(p.sock.as_deref().unwrap_or(DEFAULT_SOCKET)))
        } else {
            opts.ip_or_hostname(p.host.as_deref())
                .tcp_port(if p.port == 0 { 3306 } else { p.port })
        };
        let conn = Conn::new(opts).map_err(|e| format!("cannot connect: {e}"))?;
        Ok(My {
            conn,
            broken: false,
        })
    }
}

/// `mysql_real_escape_string`: backslash escapes, unless the server runs
/// with NO_BACKSLASH_ESCAPES (then `'` is doubled, and `\` is plain).
pub fn escape_mysql(value: &str, no_backslash: bool) -> Result<String, String> {
    if no_backslash {
        return super::escape_standard(value, false);
    }
    let mut out = String::with_capacity(value.len() + 2);
    for c in value.chars() {
        match c {
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '\x1a' => out.push_str("\\Z"),
            c => out.push(c),
        }
    }
    Ok(out)
}

impl Client for My {
    fn escape(&self, value: &str) -> Result<String, String> {
        escape_mysql(value, self.conn.no_backslash_escape())
    }

    /// The first row of the first result set, as lighttpd reads it.
    fn first_value(&mut self, sql: &str) -> Result<FirstValue, String> {
        let run = |conn: &mut Conn| -> mysql::Result<FirstValue> {
            let mut out = FirstValue::default();
            let mut result = conn.query_iter(sql)?;
            if let Some(set) = result.iter() {
                for row in set {
                    let row = row?;
                    if out.rows == 0 {
                        out.value = row.as_ref(0).and_then(text);
                    }
                    out.rows += 1;
                }
            }
            // The other result sets are read and dropped with `result`.
            Ok(out)
        };
        run(&mut self.conn).map_err(|e| {
            if !matches!(e, mysql::Error::MySqlError(_)) {
                self.broken = true;
            }
            e.to_string()
        })
    }

    fn broken(&self) -> bool {
        self.broken
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::escape_mysql;

    #[test]
    fn escaped_as_mysql_real_escape_string() {
        assert_eq!(
            escape_mysql("a'b\\c\"\n", false).as_deref(),
            Ok("a\\'b\\\\c\\\"\\n")
        );
        assert_eq!(escape_mysql("a'b\\c", true).as_deref(), Ok("a''b\\c"));
    }
}
