//! FastCGI keep-conn (see the [module doc](super)): which backends keep
//! connections, their idle lists, and the probe connection that asks a
//! backend FCGI_GET_VALUES how many connections it serves.

use std::io;

use mio::Registry;

use super::backend::{BackendConn, Use};
use super::{fastcgi, Gateways, Keep, Protocol};
use crate::net::connect;

/// How asking a backend FCGI_GET_VALUES ended.
pub(super) enum ProbeEnd {
    /// Its answer.
    Answer(fastcgi::Values),
    /// It could not be reached: asked again when next needed.
    Unreachable(String),
    /// No usable answer: keep-conn stays off.
    Failed(String),
}

impl BackendConn {
    /// An idle kept connection stirred: whether it is still good. Data, an
    /// end of stream or an error from a backend that has no request of
    /// ours all end it; only "nothing to read" (a spurious or writability
    /// wake-up) keeps it.
    pub(super) fn still_idle(&mut self) -> bool {
        if !self.readable && !self.peer_closed {
            return true;
        }
        let mut buf = [0u8; 64];
        loop {
            match self.stream.read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.readable = false;
                    return !self.peer_closed;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                _ => return false,
            }
        }
    }

    /// Moves a probe on: sends GET_VALUES and reads the answer; `Some` once
    /// the exchange is over.
    fn probe_step(&mut self) -> Option<ProbeEnd> {
        let Use::Probe { question: out } = &mut self.state else {
            return None;
        };
        while self.writable && !out.is_empty() {
            match self.stream.write(out) {
                Ok(n) => {
                    out.drain(..n);
                    self.connected = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if !self.connected => {
                    return Some(ProbeEnd::Unreachable(format!("connect: {e}")))
                }
                Err(e) => return Some(ProbeEnd::Failed(format!("write: {e}"))),
            }
        }
        let mut buf = [0u8; 1024];
        while self.readable {
            match self.stream.read(&mut buf) {
                Ok(0) if !self.connected => {
                    return Some(ProbeEnd::Unreachable("connect: closed".into()))
                }
                Ok(0) => {
                    return Some(ProbeEnd::Failed(
                        "it closed the connection without answering".into(),
                    ))
                }
                Ok(n) => {
                    self.records.extend_from_slice(&buf[..n]);
                    match fastcgi::decode_values(&self.records) {
                        Ok(Some(v)) => return Some(ProbeEnd::Answer(v)),
                        Ok(None) => {}
                        Err(e) => return Some(ProbeEnd::Failed(e.into())),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if !self.connected => {
                    return Some(ProbeEnd::Unreachable(format!("connect: {e}")))
                }
                Err(e) => return Some(ProbeEnd::Failed(format!("read: {e}"))),
            }
        }
        None
    }
}

impl Gateways {
    /// A spawned backend died: its kept connections went with it, and its
    /// next process is asked again how many connections it serves.
    pub(super) fn forget_keep(&mut self, h: usize) {
        self.close_idle(h);
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        if let Keep::Probing(k) = host.keep {
            self.conns.try_remove(k);
        }
        if host.spec.protocol == Protocol::FastCgi && host.spec.keep_conn.is_none() {
            host.keep = Keep::Unknown;
            host.limit = host.spec.max_conns;
            host.probe_at = 0;
        }
    }

    /// Closes the idle kept connections of host `h`.
    fn close_idle(&mut self, h: usize) {
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        for k in std::mem::take(&mut host.idle) {
            self.remove_conn(k);
        }
    }

    /// Closes every idle kept connection (a graceful shutdown: none is
    /// kept from now on).
    pub fn close_all_idle(&mut self) {
        self.closing = true;
        for h in 0..self.hosts.len() {
            self.close_idle(h);
        }
    }

    /// This is a worker process (`server.max-worker`).
    pub fn set_workers(&mut self) {
        self.workers = true;
        self.settle_keep();
    }

    /// Keep-conn off (unless configured on) where glint cannot know the
    /// backend's whole load, so that kept connections could hold every
    /// worker of the backend while more connections wait: another backend
    /// entry on the same address (each would keep its own), or several
    /// glint worker processes. And off for a backend retired by a graceful
    /// restart. Closes the idle connections of those.
    pub(super) fn settle_keep(&mut self) {
        for i in 0..self.hosts.len() {
            let h = &self.hosts[i];
            if h.keep == Keep::Off {
                continue;
            }
            // An idle HTTP connection holds no worker: the FastCGI concern
            // below is not its; only a retired backend keeps none.
            if h.spec.protocol == Protocol::Http && !h.retired {
                continue;
            }
            let why = if h.retired {
                None
            } else if h.spec.keep_conn == Some(true) {
                continue;
            } else if self.workers {
                Some("server.max-worker runs several processes".to_string())
            } else if let Some(o) = self
                .hosts
                .iter()
                .enumerate()
                .find(|&(j, o)| j != i && !o.retired && o.spec.addr == h.spec.addr)
            {
                Some(format!("backend {} has the same address", o.1.spec.label))
            } else {
                continue;
            };
            if let Some(why) = why {
                log::info!(
                    "backend {}: keep-conn off ({why}): one connection per request",
                    h.name()
                );
            }
            let h = &mut self.hosts[i];
            if let Keep::Probing(k) = h.keep {
                self.conns.try_remove(k);
            }
            h.keep = Keep::Off;
            h.limit = h.spec.max_conns;
            self.close_idle(i);
        }
    }

    /// Asks the spawned backends that are due how many connections they
    /// serve: at start, and after one was started again.
    pub fn start_probes(&mut self, now: u64, registry: &Registry) {
        for h in 0..self.hosts.len() {
            let host = &self.hosts[h];
            if host.keep == Keep::Unknown
                && host.spec.spawn.is_some()
                && host.child.is_some()
                && !host.retired
                && now >= host.probe_at
            {
                self.start_probe(h, now, registry);
            }
        }
    }

    /// Opens a probe connection to host `h` and sends it FCGI_GET_VALUES.
    /// It is no client's, is not counted in `active`, and glint closes it
    /// once the answer is read (php-cgi 8.2 and flup answer and then wait
    /// for more records on it, holding a worker); requests meanwhile go one
    /// connection each.
    pub(super) fn start_probe(&mut self, h: usize, now: u64, registry: &Registry) {
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        let stream = match connect(&host.spec.addr) {
            Ok(s) => s,
            Err(e) => {
                log::debug!(
                    "backend {}: cannot ask FCGI_GET_VALUES yet: {e}",
                    host.name()
                );
                host.probe_at = now + host.spec.disable_time.max(1);
                return;
            }
        };
        let mut question = Vec::with_capacity(56);
        fastcgi::encode_get_values(&mut question);
        let mut b = BackendConn::new(
            super::backend::Link::Sock(stream),
            Use::Probe { question },
            h,
            Protocol::FastCgi,
        );
        b.watches_writes = true;
        let Some(bkey) = self.insert_conn(registry, b, now) else {
            self.hosts[h].probe_at = now + 1;
            return;
        };
        self.hosts[h].keep = Keep::Probing(bkey);
        self.probe_event(bkey, now);
    }

    /// Readiness of a probe connection.
    pub(super) fn probe_event(&mut self, bkey: usize, now: u64) {
        let Some(end) = self.conns.get_mut(bkey).and_then(|b| b.probe_step()) else {
            return;
        };
        self.end_probe(bkey, end, now);
    }

    /// A probe is over: keep-conn is decided for its backend.
    pub(super) fn end_probe(&mut self, bkey: usize, end: ProbeEnd, now: u64) {
        // Not in `active`: removed directly.
        let Some(b) = self.conns.try_remove(bkey) else {
            return;
        };
        drop(b.stream);
        let Some(host) = self.hosts.get_mut(b.host) else {
            return;
        };
        if host.keep != Keep::Probing(bkey) {
            // Its backend was restarted or retired meanwhile.
            return;
        }
        let name = host.name();
        match end {
            ProbeEnd::Answer(v) => {
                // glint sends one request at a time per connection: both
                // limits bound the connections it may hold.
                let most = match (v.max_conns, v.max_reqs) {
                    (Some(c), Some(r)) if r > 0 => Some(c.min(r)),
                    (c, _) => c,
                };
                match most.filter(|&n| n > 0) {
                    Some(n) => {
                        let n = usize::try_from(n).unwrap_or(usize::MAX);
                        host.limit = host.spec.max_conns.min(n);
                        host.cap = host.cap.min(host.limit);
                        host.keep = Keep::On;
                        log::info!(
                            "backend {name}: serves {n} connections at once (FCGI_MAX_CONNS); \
                             keep-conn on, at most {} connections",
                            host.limit
                        );
                    }
                    None => {
                        host.keep = Keep::Off;
                        log::info!(
                            "backend {name}: its FCGI_GET_VALUES answer has no FCGI_MAX_CONNS; \
                             keep-conn off: one connection per request"
                        );
                    }
                }
            }
            ProbeEnd::Unreachable(why) => {
                log::debug!("backend {name}: cannot ask FCGI_GET_VALUES yet: {why}");
                host.keep = Keep::Unknown;
                host.probe_at = now + host.spec.disable_time.max(1);
            }
            ProbeEnd::Failed(why) => {
                host.keep = Keep::Off;
                log::info!(
                    "backend {name}: asked FCGI_GET_VALUES, {why}; \
                     keep-conn off: one connection per request"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateways(text: &str) -> Gateways {
        let c = crate::config::Config::parse_str(text, "test.conf", std::path::Path::new("/"))
            .expect("configuration");
        Gateways::from_config(&c).expect("gateways")
    }

    fn keeps(g: &Gateways) -> Vec<(String, Keep)> {
        g.hosts
            .iter()
            .map(|h| (h.spec.label.clone(), h.keep))
            .collect()
    }

    #[test]
    fn keep_conn_is_asked_only_where_glint_counts_every_connection() {
        let g = gateways(
            r#"fastcgi.server = (
                 "/a" => ( "a" => ( "socket" => "/tmp/a.sock" ) ),
                 "/on" => ( "on" => ( "socket" => "/tmp/on.sock", "keep-conn" => "enable" ) ),
                 "/off" => ( "off" => ( "socket" => "/tmp/off.sock", "keep-conn" => "disable" ) ),
                 "/s1" => ( "s1" => ( "socket" => "/tmp/shared.sock" ) ),
                 "/s2" => ( "s2" => ( "socket" => "/tmp/shared.sock" ) ) )
               scgi.server = ( "/scgi" => ( "scgi" => ( "socket" => "/tmp/scgi.sock" ) ) )"#,
        );
        let want = [
            ("scgi", Keep::Off),
            ("a", Keep::Unknown),
            ("on", Keep::On),
            ("off", Keep::Off),
            ("s1", Keep::Off),
            ("s2", Keep::Off),
        ];
        let want: Vec<(String, Keep)> = want.iter().map(|(l, k)| (l.to_string(), *k)).collect();
        assert_eq!(keeps(&g), want);
        assert!(g.hosts.iter().all(|h| h.limit == 16 && h.cap == 16));

        // Worker processes each hold their own: only a configured "enable" stays.
        let mut g = g;
        g.set_workers();
        let on: Vec<_> = keeps(&g)
            .into_iter()
            .filter(|(_, k)| *k != Keep::Off)
            .collect();
        assert_eq!(on, [("on".to_string(), Keep::On)]);
    }

    #[test]
    fn a_retired_backend_keeps_nothing() {
        let mut g = gateways(
            r#"fastcgi.server = ( "/a" => ( "a" => ( "socket" => "/tmp/a.sock", "keep-conn" => "enable" ) ) )"#,
        );
        // A request under way keeps the old host until it is done.
        g.hosts[0].active = 1;
        let c = crate::config::Config::parse_str(
            r#"fastcgi.server = ( "/a" => ( "a" => ( "socket" => "/tmp/a.sock", "max-connections" => 4 ) ) )"#,
            "test.conf",
            std::path::Path::new("/"),
        )
        .expect("configuration");
        g.reconfigure(&c, 0).expect("reconfigure");
        let old = g.hosts.iter().find(|h| h.retired).expect("retired host");
        assert_eq!(old.keep, Keep::Off);
        let new = g.hosts.iter().find(|h| !h.retired).expect("new host");
        assert_eq!((new.keep, new.limit), (Keep::Unknown, 4));
    }

    #[test]
    fn a_backend_in_two_scopes_is_one_host() {
        let g = gateways(
            r#"fastcgi.server = ( "/g" => ( "g" => ( "socket" => "/tmp/g.sock" ) ) )
               $HTTP["host"] == "a" {
                 fastcgi.server = ( ".php" => ( "php" => ( "socket" => "/tmp/php.sock" ) ) )
               }
               $HTTP["host"] == "b" {
                 fastcgi.server = (
                   "/b" => ( "b" => ( "socket" => "/tmp/b.sock" ) ),
                   ".php" => ( "php" => ( "socket" => "/tmp/php.sock" ) ) )
               }"#,
        );
        let labels: Vec<&str> = g.hosts.iter().map(|h| h.spec.label.as_str()).collect();
        assert_eq!(labels, ["g", "php", "b"]);
        let php: Vec<&super::super::Route> =
            g.routes.iter().filter(|r| r.pattern == ".php").collect();
        assert_eq!(php.len(), 2);
        assert!(php.iter().all(|r| r.hosts == [1]));
        // Its only host: keep-conn is asked, as for a backend in one scope.
        assert_eq!(g.hosts[1].keep, Keep::Unknown);
    }
}
