//! mod_vhostdb: a request's document root looked up by its host in a
//! database, off the event loop.
//!
//! A lookup is a local job of the upstream ([`Lookup`]): the request waits
//! for it as for an authorizer (its body held), a small bounded pool of
//! threads runs the query ([`Pool`]), and the worker's signal wakes the
//! loop through the job's pipe. The job's answer is never the client's: it
//! runs the request again with the document root found (`Rerun::Vhost`).
//! Found hosts are kept in [`VhostDb::cache`] when `vhostdb.cache` is set,
//! as lighttpd keeps them.

use std::collections::HashMap;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::config::vhostdb::Source;
use crate::msg::local::{LocalWork, Wake, VHOST_DOCROOT};
use crate::sqldb::{substitute, Client, Db, Query};

use super::vhostdb_ldap::LdapConns;
use super::vhostdb_root::checked_root;
pub use super::vhostdb_root::Found;

/// Threads running lookups: each holds its own connection to each
/// database. Lookups wait on the network, not the CPU; 4 let a slow
/// database hold some while others answer.
pub const THREADS: usize = 4;

/// Lookups waiting beyond those running; past it a request gets 503 at
/// once rather than waiting behind a database that does not answer.
pub const QUEUE: usize = 64;

struct Task {
    query: Source,
    host: String,
    slot: Arc<Mutex<Option<Found>>>,
    ready: Wake,
}

type Queue = Arc<Mutex<Receiver<Task>>>;

/// The lookup threads.
pub struct Pool {
    tx: Option<SyncSender<Task>>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    pub fn new(threads: usize, queue: usize) -> io::Result<Pool> {
        let (tx, rx) = sync_channel::<Task>(queue);
        let rx: Queue = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let handle = std::thread::Builder::new()
                .name(format!("glint-vhostdb-{i}"))
                .spawn(move || worker(rx))?;
            workers.push(handle);
        }
        Ok(Pool {
            tx: Some(tx),
            workers,
        })
    }

    /// Queues a task; never blocks. Err gives it back (the queue is full).
    fn submit(&self, task: Task) -> Result<(), Task> {
        let Some(tx) = self.tx.as_ref() else {
            return Err(task);
        };
        tx.try_send(task).map_err(|e| match e {
            TrySendError::Full(t) | TrySendError::Disconnected(t) => t,
        })
    }
}

impl Drop for Pool {
    /// Takes no more lookups. The threads are not waited for: one may be
    /// blocked on a database for up to [`crate::sqldb::IO_TIMEOUT`], and
    /// a stop must not wait for it; each ends when the queue is empty.
    fn drop(&mut self) {
        self.tx = None;
        self.workers.clear();
    }
}

fn worker(rx: Queue) {
    let mut conns: HashMap<Db, Box<dyn Client>> = HashMap::new();
    let mut ldap = LdapConns::default();
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(task) = next else { return };
        let found = catch_unwind(AssertUnwindSafe(|| match &task.query {
            Source::Sql(q) => lookup(&mut conns, q, &task.host),
            Source::Ldap(q) => ldap.lookup(q, &task.host),
        }))
        .unwrap_or_else(|_| {
            // A client that panicked may have left its connection half used.
            conns.clear();
            ldap = LdapConns::default();
            Err(500)
        });
        *task.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(found);
        (task.ready)();
    }
}

/// Runs `q` for `host` on this thread's connection to its database
/// (connecting when it has none, or when the last one broke). A query
/// that fails on a connection that broke is tried once more on a new one
/// (the database was restarted since), as lighttpd's DBI does.
fn lookup(conns: &mut HashMap<Db, Box<dyn Client>>, q: &Query, host: &str) -> Found {
    for attempt in 0..2 {
        let fresh = !conns.contains_key(&q.db);
        if fresh {
            match q.db.connect() {
                Ok(c) => {
                    conns.insert(q.db.clone(), c);
                }
                Err(e) => {
                    log::error!("{}: {e}", describe(&q.db));
                    return Err(500);
                }
            }
        }
        let Some(client) = conns.get_mut(&q.db) else {
            return Err(500);
        };
        let sql = match substitute(client.as_ref(), &q.sql, host) {
            Ok(s) => s,
            Err(e) => {
                log::error!("{host:?}: {e}");
                return Err(500);
            }
        };
        let result = client.first_value(&sql);
        let broken = client.broken();
        if broken {
            conns.remove(&q.db);
        }
        match result {
            Ok(v) => return docroot(q, v),
            Err(e) if broken && !fresh && attempt == 0 => {
                log::debug!("{}: {e}; connecting again", describe(&q.db));
            }
            Err(e) => {
                log::error!("{}: {e}", describe(&q.db));
                return Err(500);
            }
        }
    }
    Err(500)
}

/// The document root a query's result gives, checked as lighttpd checks
/// it: lighttpd's pgsql back end's only when there is exactly one row,
/// the others' from the first; blank is no such host; it must be a directory (else 500).
fn docroot(q: &Query, v: crate::sqldb::FirstValue) -> Found {
    let one = if q.exactly_one {
        v.rows == 1
    } else {
        v.rows >= 1
    };
    let Some(root) = v.value.filter(|r| one && !r.is_empty()) else {
        return Ok(None);
    };
    checked_root(root)
}

fn describe(db: &Db) -> String {
    match db {
        Db::Sqlite(p) => format!("sqlite3 {}", p.display()),
        Db::Pgsql(p) => format!(
            "pgsql {}@{}:{}/{}",
            p.user,
            p.host.as_deref().unwrap_or("/var/run/postgresql"),
            p.port.unwrap_or(5432),
            p.dbname
        ),
        Db::Mysql(p) => match p.host.as_deref().filter(|h| *h != "localhost") {
            Some(h) => format!("mysql {}@{h}:{}/{}", p.user, p.port, p.dbname),
            None => format!(
                "mysql {}@{}/{}",
                p.user,
                p.sock
                    .as_deref()
                    .unwrap_or(crate::sqldb::mysql::DEFAULT_SOCKET),
                p.dbname
            ),
        },
    }
}

/// mod_vhostdb's state on the loop: the pool (made with the first
/// lookup, in the process that serves) and the cache of found hosts.
#[derive(Default)]
pub struct VhostDb {
    pool: Option<Arc<Pool>>,
    pool_failed: bool,
    /// (query, host) -> (document root, when it was found).
    cache: HashMap<(Source, String), (String, u64)>,
    inserts: u64,
}

/// Entries kept between two sweeps of the cache.
const SWEEP_EVERY: u64 = 256;

impl VhostDb {
    /// The cached document root of `host` under `q`, if it is younger
    /// than `max_age` seconds.
    pub fn cached(&self, q: &Source, host: &str, now: u64, max_age: u64) -> Option<&str> {
        let (root, at) = self.cache.get(&(q.clone(), host.to_string()))?;
        (now.saturating_sub(*at) <= max_age).then_some(root.as_str())
    }

    /// Keeps a found document root for `max_age` seconds; every
    /// [`SWEEP_EVERY`] entries kept, those older than that are dropped
    /// (lighttpd sweeps every 8 s).
    pub fn remember(&mut self, q: &Source, host: &str, root: &str, now: u64, max_age: u64) {
        self.inserts += 1;
        if self.inserts.is_multiple_of(SWEEP_EVERY) {
            self.cache
                .retain(|_, (_, at)| now.saturating_sub(*at) <= max_age);
        }
        self.cache
            .insert((q.clone(), host.to_string()), (root.to_string(), now));
    }

    /// The work of a local job that looks `host` up with `q`.
    pub fn lookup(&mut self, q: &Source, host: &str) -> Lookup {
        if self.pool.is_none() && !self.pool_failed {
            match Pool::new(THREADS, QUEUE) {
                Ok(p) => self.pool = Some(Arc::new(p)),
                Err(e) => {
                    log::error!("cannot start the lookup threads: {e}");
                    self.pool_failed = true;
                }
            }
        }
        Lookup {
            pool: self.pool.clone(),
            query: q.clone(),
            host: host.to_string(),
            slot: Arc::new(Mutex::new(None)),
            answer: Vec::new(),
            sent: 0,
        }
    }
}

/// One lookup as a local job: queued when the job finishes sending (it
/// has no body), answered when the worker signals.
pub struct Lookup {
    pool: Option<Arc<Pool>>,
    query: Source,
    host: String,
    slot: Arc<Mutex<Option<Found>>>,
    /// The answer, once the result is in.
    answer: Vec<u8>,
    sent: usize,
}

impl Lookup {
    fn set(&self, found: Found) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(found);
    }
}

/// The answer the upstream reads for `found` (see `upstream::answer`).
fn answer_bytes(found: &Found) -> Vec<u8> {
    match found {
        Ok(Some(root)) => format!("Status: 200\r\n{VHOST_DOCROOT}: {root}\r\n\r\n").into_bytes(),
        Ok(None) => b"Status: 200\r\n\r\n".to_vec(),
        Err(status) => format!("Status: {status}\r\n\r\n").into_bytes(),
    }
}

impl LocalWork for Lookup {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // The request's body is held for the run after the lookup.
        Ok(data.len())
    }

    fn finish(&mut self) {}

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.answer.is_empty() {
            let found = self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            match found {
                Some(f) => self.answer = answer_bytes(&f),
                None => return Err(io::ErrorKind::WouldBlock.into()),
            }
        }
        let rest = self.answer.get(self.sent..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.sent += n;
        Ok(n)
    }

    fn wake_when_ready(&mut self, wake: Wake) -> Option<Wake> {
        let Some(pool) = self.pool.clone() else {
            self.set(Err(500));
            return Some(wake);
        };
        let task = Task {
            query: self.query.clone(),
            host: std::mem::take(&mut self.host),
            slot: Arc::clone(&self.slot),
            ready: wake,
        };
        match pool.submit(task) {
            Ok(()) => None,
            Err(task) => {
                log::warn!("{} lookups are waiting already; answering 503", QUEUE);
                self.set(Err(503));
                Some(task.ready)
            }
        }
    }

    fn is_vhost_lookup(&self) -> bool {
        true
    }
}
