//! Dead properties and locks in SQLite, in lighttpd's own schema and with
//! its statements' meaning, so that a database file lighttpd's mod_webdav
//! wrote serves glint unchanged (and back).
//!
//! Each `webdav.sqlite-db-name` is opened once, at start (before chroot
//! and the switch of user), its tables made if missing (and the
//! `ownerinfo` column of older lighttpd databases added). A process other
//! than the one that opened it (a `server.max-worker` worker) opens its
//! own connection on first use: SQLite connections must not cross fork().
//! A statement that fails is the request's 500 (503 while another process
//! holds the database busy), logged; nothing else is affected.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

const CREATE_PROPERTIES: &str = "CREATE TABLE IF NOT EXISTS properties (  resource TEXT NOT NULL,  prop TEXT NOT NULL,  ns TEXT NOT NULL,  value TEXT NOT NULL,  PRIMARY KEY(resource, prop, ns))";
const CREATE_LOCKS: &str = "CREATE TABLE IF NOT EXISTS locks (  locktoken TEXT NOT NULL,  resource TEXT NOT NULL,  lockscope TEXT NOT NULL,  locktype TEXT NOT NULL,  owner TEXT NOT NULL,  ownerinfo TEXT NOT NULL,  depth INT NOT NULL,  timeout TIMESTAMP NOT NULL,  PRIMARY KEY(locktoken))";
const OWNERINFO_TEST: &str = "SELECT COUNT(*) FROM locks WHERE ownerinfo = \"\"";
const OWNERINFO_ADD: &str = "ALTER TABLE locks ADD COLUMN ownerinfo TEXT NOT NULL DEFAULT \"\"";

const LOCK_COLUMNS: &str =
    "locktoken,resource,lockscope,locktype,owner,ownerinfo,depth,timeout - CURRENT_TIME";

/// A statement failed: 503 when the database is busy or locked by another
/// process, else 500.
#[derive(Debug)]
pub struct DbError {
    pub status: u16,
    pub msg: String,
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> DbError {
        let busy = matches!(
            e.sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        );
        DbError {
            status: if busy { 503 } else { 500 },
            msg: e.to_string(),
        }
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// One lock as the `locks` table holds it (`timeout`: seconds left, as
/// lighttpd computes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockRow {
    pub token: String,
    pub resource: String,
    pub scope: String,
    pub locktype: String,
    pub owner: String,
    pub ownerinfo: String,
    pub depth: i64,
    pub timeout: i64,
}

/// One database file.
pub struct Store {
    name: String,
    conn: RefCell<Option<(u32, Connection)>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.name)
    }
}

/// Every database the configuration names, by name.
#[derive(Default, Debug)]
pub struct Stores {
    map: HashMap<String, Rc<Store>>,
}

impl Stores {
    /// Opens (creating if need be) each named database; an error names
    /// the file, as lighttpd's start-up error does.
    pub fn open<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Stores, String> {
        let mut map = HashMap::new();
        for name in names {
            if map.contains_key(name) {
                continue;
            }
            let conn = init(name).map_err(|e| format!("webdav.sqlite-db-name '{name}': {e}"))?;
            let store = Store {
                name: name.to_string(),
                conn: RefCell::new(Some((std::process::id(), conn))),
            };
            map.insert(name.to_string(), Rc::new(store));
        }
        Ok(Stores { map })
    }

    /// After a graceful restart: opens the databases the new
    /// configuration names that are not open yet (a failure is logged;
    /// its requests answer 500).
    pub fn open_missing(&mut self, names: &[String]) {
        for name in names {
            if self.map.contains_key(name.as_str()) {
                continue;
            }
            match Stores::open([name.as_str()]) {
                Ok(s) => self.map.extend(s.map),
                Err(e) => log::error!("(mod_webdav) {e}"),
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<Rc<Store>> {
        self.map.get(name).cloned()
    }
}

/// Opens a database read-write (creating it), with lighttpd's tables.
fn init(name: &str) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        name,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch(CREATE_PROPERTIES)?;
    conn.execute_batch(CREATE_LOCKS)?;
    if conn.execute_batch(OWNERINFO_TEST).is_err() {
        conn.execute_batch(OWNERINFO_ADD)?;
    }
    Ok(conn)
}

impl Store {
    /// Runs `f` on this process's connection.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> DbResult<T> {
        let mut slot = self.conn.borrow_mut();
        let pid = std::process::id();
        if slot.as_ref().is_none_or(|(p, _)| *p != pid) {
            let c = Connection::open_with_flags(
                &self.name,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            // The parent's connection is not closed here: its state is
            // the parent's (SQLite's advice for a connection across fork).
            if let Some(old) = slot.take() {
                std::mem::forget(old);
            }
            *slot = Some((pid, c));
        }
        let Some((_, c)) = slot.as_ref() else {
            return Err(DbError {
                status: 500,
                msg: "no connection".into(),
            });
        };
        f(c).map_err(DbError::from)
    }

    pub fn begin_immediate(&self) -> DbResult<()> {
        self.with(|c| c.execute_batch("BEGIN IMMEDIATE;"))
    }

    pub fn commit(&self) -> DbResult<()> {
        self.with(|c| c.execute_batch("COMMIT;"))
    }

    pub fn rollback(&self) -> DbResult<()> {
        self.with(|c| c.execute_batch("ROLLBACK;"))
    }

    /// The names (prop, ns) of a resource's dead properties.
    pub fn propnames(&self, uri: &str) -> DbResult<Vec<(String, String)>> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT prop, ns FROM properties WHERE resource = ?")?;
            let rows = st.query_map([uri], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
    }

    /// All of a resource's dead properties: (prop, ns, value).
    pub fn props(&self, uri: &str) -> DbResult<Vec<(String, String, String)>> {
        self.with(|c| {
            let mut st =
                c.prepare_cached("SELECT prop, ns, value FROM properties WHERE resource = ?")?;
            let rows = st.query_map([uri], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect()
        })
    }

    /// One dead property's value.
    pub fn prop(&self, uri: &str, name: &str, ns: &str) -> DbResult<Option<String>> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT value FROM properties WHERE resource = ? AND prop = ? AND ns = ?",
            )?;
            st.query_row([uri, name, ns], |r| r.get(0)).optional()
        })
    }

    pub fn prop_set(&self, uri: &str, name: &str, ns: &str, value: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached(
                "REPLACE INTO properties (resource, prop, ns, value) VALUES (?, ?, ?, ?)",
            )?
            .execute([uri, name, ns, value])
            .map(drop)
        })
    }

    pub fn prop_remove(&self, uri: &str, name: &str, ns: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM properties WHERE resource = ? AND prop = ? AND ns = ?")?
                .execute([uri, name, ns])
                .map(drop)
        })
    }

    /// A resource is gone: its properties go too.
    pub fn props_delete(&self, uri: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM properties WHERE resource = ?")?
                .execute([uri])
                .map(drop)
        })
    }

    pub fn props_copy(&self, src: &str, dst: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached(
                "INSERT INTO properties  SELECT ?, prop, ns, value FROM properties WHERE resource = ?",
            )?
            .execute([dst, src])
            .map(drop)
        })
    }

    pub fn props_move(&self, src: &str, dst: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached("UPDATE OR REPLACE properties SET resource = ? WHERE resource = ?")?
                .execute([dst, src])
                .map(drop)
        })
    }

    /// A collection moved: every resource below `src` (which ends in `/`).
    pub fn props_move_col(&self, src: &str, dst: &str) -> DbResult<()> {
        let n = src.len() as i64;
        self.with(|c| {
            c.prepare_cached(
                "UPDATE OR REPLACE properties SET resource = ? || SUBSTR(resource, ?)  WHERE SUBSTR(resource, 1, ?) = ?",
            )?
            .execute(params![dst, n + 1, n, src])
            .map(drop)
        })
    }

    /// Takes a lock for `timeout` seconds.
    pub fn lock_acquire(&self, l: &LockRow) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached(
                "INSERT INTO locks  (locktoken,resource,lockscope,locktype,owner,ownerinfo,depth,timeout)  VALUES (?,?,?,?,?,?,?, CURRENT_TIME + ?)",
            )?
            .execute(params![
                l.token, l.resource, l.scope, l.locktype, l.owner, l.ownerinfo, l.depth, l.timeout
            ])
            .map(drop)
        })
    }

    /// Refreshes a lock; whether the statement ran (as lighttpd, a token
    /// that names no lock refreshes nothing and still succeeds).
    pub fn lock_refresh(&self, token: &str, timeout: i64) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached("UPDATE locks SET timeout = CURRENT_TIME + ? WHERE locktoken = ?")?
                .execute(params![timeout, token])
                .map(drop)
        })
    }

    /// Releases a lock; whether there was one.
    pub fn lock_release(&self, token: &str) -> DbResult<bool> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM locks WHERE locktoken = ?")?
                .execute([token])
                .map(|n| n > 0)
        })
    }

    /// A lock's (resource, owner, depth).
    pub fn lock_read(&self, token: &str) -> DbResult<Option<(String, String, i64)>> {
        self.with(|c| {
            c.prepare_cached("SELECT resource, owner, depth  FROM locks WHERE locktoken = ?")?
                .query_row([token], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
    }

    /// Locks on exactly `uri`.
    pub fn locks_on(&self, uri: &str) -> DbResult<Vec<LockRow>> {
        let q = format!("SELECT  {LOCK_COLUMNS}  FROM locks WHERE resource = ?");
        self.lock_rows(&q, params![uri])
    }

    /// Depth-infinity locks on `uri` or a collection above it.
    pub fn locks_infinity_above(&self, uri: &str) -> DbResult<Vec<LockRow>> {
        let q = format!(
            "SELECT  {LOCK_COLUMNS}  FROM locks  WHERE depth = -1 AND resource = SUBSTR(?, 1, LENGTH(resource))"
        );
        self.lock_rows(&q, params![uri])
    }

    /// Locks on `uri` and everything below it.
    pub fn locks_below(&self, uri: &str) -> DbResult<Vec<LockRow>> {
        let q = format!("SELECT  {LOCK_COLUMNS}  FROM locks WHERE SUBSTR(resource, 1, ?) = ?");
        self.lock_rows(&q, params![uri.len() as i64, uri])
    }

    fn lock_rows(&self, q: &str, p: impl rusqlite::Params) -> DbResult<Vec<LockRow>> {
        self.with(|c| {
            let mut st = c.prepare_cached(q)?;
            let rows = st.query_map(p, |r| {
                Ok(LockRow {
                    token: r.get(0)?,
                    resource: r.get(1)?,
                    scope: r.get(2)?,
                    locktype: r.get(3)?,
                    owner: r.get(4)?,
                    ownerinfo: r.get(5)?,
                    depth: r.get(6)?,
                    timeout: r.get(7)?,
                })
            })?;
            rows.collect()
        })
    }

    pub fn locks_delete(&self, uri: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM locks WHERE resource = ?")?
                .execute([uri])
                .map(drop)
        })
    }

    /// Every lock on `uri` (a collection, ending in `/`) and below.
    pub fn locks_delete_col(&self, uri: &str) -> DbResult<()> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM locks WHERE SUBSTR(resource, 1, ?) = ?")?
                .execute(params![uri.len() as i64, uri])
                .map(drop)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp_db(tag: &str) -> String {
        let p = std::env::temp_dir().join(format!("glint-dav-{tag}-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn properties_round_trip_and_move_with_collections() {
        let name = tmp_db("props");
        let stores = Stores::open([name.as_str()]).unwrap();
        let s = stores.get(&name).unwrap();
        s.prop_set("/a/x", "p", "urn:x", "v1").unwrap();
        s.prop_set("/a/x", "p", "urn:x", "v2").unwrap();
        assert_eq!(s.prop("/a/x", "p", "urn:x").unwrap().as_deref(), Some("v2"));
        s.props_move_col("/a/", "/b/").unwrap();
        assert_eq!(
            s.props("/b/x").unwrap(),
            [("p".into(), "urn:x".into(), "v2".into())]
        );
        s.props_copy("/b/x", "/c").unwrap();
        s.props_delete("/b/x").unwrap();
        assert!(s.props("/b/x").unwrap().is_empty());
        assert_eq!(s.propnames("/c").unwrap(), [("p".into(), "urn:x".into())]);
        let _ = std::fs::remove_file(&name);
    }

    #[test]
    fn locks_are_found_above_and_below() {
        let name = tmp_db("locks");
        let stores = Stores::open([name.as_str()]).unwrap();
        let s = stores.get(&name).unwrap();
        let l = LockRow {
            token: "urn:uuid:1".into(),
            resource: "/d/".into(),
            scope: "exclusive".into(),
            locktype: "write".into(),
            owner: String::new(),
            ownerinfo: String::new(),
            depth: -1,
            timeout: 600,
        };
        s.lock_acquire(&l).unwrap();
        let above = s.locks_infinity_above("/d/f").unwrap();
        assert_eq!(above.len(), 1);
        assert!(above[0].timeout > 0);
        assert_eq!(s.locks_below("/").unwrap().len(), 1);
        assert!(s.locks_on("/d/f").unwrap().is_empty());
        assert_eq!(s.lock_read("urn:uuid:1").unwrap().unwrap().2, -1);
        assert!(s.lock_release("urn:uuid:1").unwrap());
        assert!(!s.lock_release("urn:uuid:1").unwrap());
        let _ = std::fs::remove_file(&name);
    }

    #[test]
    fn an_older_lighttpd_database_gets_its_ownerinfo_column() {
        let name = tmp_db("old");
        let c = Connection::open(&name).unwrap();
        c.execute_batch("CREATE TABLE locks (locktoken TEXT NOT NULL, resource TEXT NOT NULL, lockscope TEXT NOT NULL, locktype TEXT NOT NULL, owner TEXT NOT NULL, depth INT NOT NULL, timeout TIMESTAMP NOT NULL, PRIMARY KEY(locktoken))").unwrap();
        drop(c);
        let stores = Stores::open([name.as_str()]).unwrap();
        assert!(stores.get(&name).unwrap().locks_on("/").unwrap().is_empty());
        let _ = std::fs::remove_file(&name);
    }
}
