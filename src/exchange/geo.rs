//! mod_maxminddb in a request: the variables `maxminddb.env` names, from
//! the record of the request's client (the address mod_extforward found
//! behind a trusted forwarder, as lighttpd, which looks the address up
//! when a backend's environment is built), for CGI, FastCGI, SCGI, uwsgi
//! and SSI. The answer is kept for the connection, as lighttpd keeps it:
//! the next request of the same client under the same settings looks
//! nothing up.

use std::cell::RefCell;
use std::net::IpAddr;
use std::rc::Rc;

use super::ConnInfo;
use crate::config::Settings;
use crate::geo::GeoValue;
use crate::upstream::cgi::Env;

/// The variables of one connection's last lookup (shared by its HTTP/2
/// streams); none for a connection made before mod_maxminddb was in use.
#[derive(Debug, Clone, Default)]
pub struct GeoCache(Option<Rc<RefCell<Option<Looked>>>>);

impl GeoCache {
    /// A cache for a new connection.
    pub fn new() -> GeoCache {
        GeoCache(Some(Rc::default()))
    }

    /// Answers are kept (not so for a connection made while no scope
    /// had a database).
    pub fn is_kept(&self) -> bool {
        self.0.is_some()
    }
}

/// What one lookup found, and what it was for.
#[derive(Debug)]
pub struct Looked {
    /// The settings it was made under ([`crate::config::Stamp`]).
    stamp: u64,
    addr: IpAddr,
    vars: Rc<[GeoValue]>,
}

/// The variables for the client of `info` under `settings` (empty when
/// mod_maxminddb is off there, on a unix socket, or for an address the
/// database does not hold).
pub(super) fn vars(settings: &Settings, info: &ConnInfo) -> Rc<[GeoValue]> {
    let (Some((db, wanted)), Some(addr)) = (settings.maxminddb.active(), info.peer) else {
        return Rc::new([]);
    };
    let stamp = settings.stamp.get();
    let cell = info.geo.0.as_deref();
    if let Some(Some(l)) = cell.map(RefCell::borrow).as_deref() {
        if l.stamp == stamp && l.addr == addr {
            return Rc::clone(&l.vars);
        }
    }
    let vars: Rc<[GeoValue]> = db.lookup(addr, wanted).into();
    if let Some(cell) = cell {
        *cell.borrow_mut() = Some(Looked {
            stamp,
            addr,
            vars: Rc::clone(&vars),
        });
    }
    vars
}

/// Sets the variables in `env` (replacing a value already there, as
/// lighttpd does).
pub(super) fn set_vars(env: &mut Env, settings: &Settings, info: &ConnInfo) {
    for v in vars(settings, info).iter() {
        env.set(v.cgi_name.as_bytes(), &v.value);
    }
}
