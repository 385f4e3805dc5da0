//! SQLite (lighttpd's DBI with `dbtype` "sqlite3"), through rusqlite.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::{escape_standard, Client, FirstValue, IO_TIMEOUT};

/// An open database file.
pub struct Sqlite {
    conn: Connection,
    broken: bool,
}

impl Sqlite {
    /// Opens `path`, which must exist (glint creates no database).
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // A writer holding the file locked: wait for it as long as for a
        // network database.
        conn.busy_timeout(IO_TIMEOUT)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Sqlite {
            conn,
            broken: false,
        })
    }
}

impl Client for Sqlite {
    fn escape(&self, value: &str) -> Result<String, String> {
        // SQLite's string literals know no backslash escapes.
        escape_standard(value, false)
    }

    fn first_value(&mut self, sql: &str) -> Result<FirstValue, String> {
        let run = || -> rusqlite::Result<FirstValue> {
            let mut stmt = self.conn.prepare(sql)?;
            let mut rows = stmt.query([])?;
            let mut out = FirstValue::default();
            while let Some(row) = rows.next()? {
                if out.rows == 0 {
                    out.value = text(row.get_ref(0)?);
                }
                out.rows += 1;
            }
            Ok(out)
        };
        run().map_err(|e| {
            if matches!(e, rusqlite::Error::SqliteFailure(ref f, _) if f.code == rusqlite::ErrorCode::NotADatabase)
            {
                self.broken = true;
            }
            e.to_string()
        })
    }

    fn broken(&self) -> bool {
        self.broken
    }
}

/// A column's value as text, as libdbi's `dbi_result_get_string_idx`
/// gives it for text (other types: their text form).
fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqldb::substitute;

    #[test]
    fn a_quote_in_the_value_stays_inside_the_literal() {
        let dir = std::env::temp_dir().join(format!("glint-sqlite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v.db");
        let _ = std::fs::remove_file(&path);
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE v (h TEXT, d TEXT);
             INSERT INTO v VALUES ('a.test', '/srv/a'), ('b.test', '/srv/b');",
        )
        .unwrap();
        drop(c);
        let mut db = Sqlite::open(&path).unwrap();
        let t = "SELECT d FROM v WHERE h='?'";
        let q = substitute(&db, t, "a.test").unwrap();
        assert_eq!(db.first_value(&q).unwrap().value.as_deref(), Some("/srv/a"));
        let q = substitute(&db, t, "x' OR '1'='1").unwrap();
        assert_eq!(db.first_value(&q).unwrap(), FirstValue::default());
        let q = substitute(&db, t, "x'; DROP TABLE v; --").unwrap();
        assert_eq!(db.first_value(&q).unwrap().rows, 0);
        let q = substitute(&db, t, "b.test").unwrap();
        assert_eq!(db.first_value(&q).unwrap().value.as_deref(), Some("/srv/b"));
        assert!(Sqlite::open(&dir.join("missing.db")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
