//! A graceful restart (SIGUSR1): a new configuration takes over without a
//! connection dropped.

use std::io;

use mio::{Interest, Token};

use super::listen::{bind_listener, describe, Listener};
use super::{Server, LISTENER_BASE};
use crate::config::Config;

/// For each new listener, the old one it reuses (`Ok`, by index) or the
/// socket bound for it (`Err`).
type Plan = Vec<Result<usize, Listener>>;

impl Server {
    /// Reads the configuration again and applies it; a configuration that
    /// does not load or whose listeners cannot be opened is logged and the
    /// running one stays. Returns whether the new one is in force.
    pub fn reload_from_source(&mut self) -> bool {
        let Some(reloader) = self.reloader.as_mut() else {
            log::warn!("graceful restart requested, but there is no configuration file to read");
            return false;
        };
        log::info!("graceful restart: reading the configuration again");
        let config = match reloader() {
            Ok(c) => c,
            Err(e) => {
                log::error!("graceful restart: {e}; keeping the running configuration");
                return false;
            }
        };
        match self.reload(config) {
            Ok(()) => {
                log::info!("graceful restart: new configuration in force");
                true
            }
            Err(e) => {
                log::error!("graceful restart: {e}; keeping the running configuration");
                false
            }
        }
    }

    /// Switches to `config` without dropping a connection: listening
    /// sockets whose address is unchanged are kept (same descriptor), new
    /// ones are opened, removed ones closed. Responses under way finish as
    /// they started; the next request on any connection uses `config`.
    /// On error (a new listener cannot be opened) nothing changes.
    pub fn reload(&mut self, config: Config) -> io::Result<()> {
        if self.sv.shutting_down {
            return Err(io::Error::other("shutting down"));
        }
        let old_n = self.sv.config.listeners.len();
        let (plan, used) = self.plan_listeners(&config)?;
        // mod_deflate's cache dirs are made before anything changes.
        let cache_dirs = config.deflate_cache_dirs();
        for d in &cache_dirs {
            crate::compress::cache::prepare_cache_dir(d).map_err(io::Error::other)?;
        }
        // Certificates and keys read again (a renewal needs no restart); a
        // file that does not load keeps the running configuration.
        let tls = self
            .tls
            .reloaded(&config, self.sv.clock.unix)
            .map_err(io::Error::other)?;
        let acme_spec = super::secure::acme_spec(&config).map_err(io::Error::other)?;
        // The gateways last: starting a new backend is the last step that may fail.
        self.sv
            .upstream
            .reconfigure(&config, self.sv.clock.mono_secs)
            .map_err(io::Error::other)?;
        let (mut next, remap) = self.take_listeners(plan, &used, old_n);
        let (ports, bound_ips) = self.register_listeners(&mut next);
        for (_, conn) in self.conns.iter_mut() {
            conn.listener = remap.get(conn.listener).copied().unwrap_or(usize::MAX);
        }
        self.listeners = next;
        self.tls.contexts = tls;
        let acme_changed = format!("{acme_spec:?}") != format!("{:?}", self.acme_spec);
        self.acme_spec = acme_spec;
        if acme_changed && self.acme.is_some() {
            self.start_acme();
        }
        self.sv.ports = ports;
        self.sv.bound_ips = bound_ips;
        self.max_connections = config.global.limits.max_connections.max(1) as usize;
        self.sv.auth.reconfigure(&config);
        self.sv.webdav.open_missing(&config.webdav_db_names());
        self.reload_rrdtool(&config);
        self.sv.board.keep(config.shows_connections());
        self.sv.config = config;
        self.watch_scripts();
        self.sv.deflate.set_cache_dirs(&cache_dirs);
        if let Err(e) = self.open_logs() {
            log::error!("graceful restart: {e}");
        }
        // No accepting here: a supervisor reloads too, and must not. A
        // listener with connections waiting is reported ready when it is
        // registered again.
        Ok(())
    }

    /// Which old listener each of `config`'s reuses (`Ok`), or the socket
    /// bound for it (`Err`); and which old listeners are reused. Nothing
    /// running changes yet.
    fn plan_listeners(&self, config: &Config) -> io::Result<(Plan, Vec<bool>)> {
        let mut plan: Plan = Vec::with_capacity(config.listeners.len());
        let mut used = vec![false; self.listeners.len()];
        for (li, l) in config.listeners.iter().enumerate() {
            // The same configured address, or a socket bound there
            // (inherited sockets no listener named included).
            let same = (0..self.listeners.len()).find(|&i| {
                !used[i]
                    && self.listeners[i].as_ref().is_some_and(|x| {
                        self.sv
                            .config
                            .listeners
                            .get(i)
                            .is_some_and(|o| o.addr == l.addr)
                            || x.is_at(&l.addr)
                    })
            });
            match same {
                Some(i) => {
                    used[i] = true;
                    plan.push(Ok(i));
                }
                None => {
                    let lst = bind_listener(l, &config.socket_settings(li)).map_err(|e| {
                        io::Error::new(e.kind(), format!("cannot listen on {}: {e}", l.spec))
                    })?;
                    plan.push(Err(lst));
                }
            }
        }
        Ok((plan, used))
    }

    /// The new listener list from `plan`, deregistered old ones moved in,
    /// and where each old index went (`usize::MAX`: closed). Inherited
    /// sockets no listener names (from `old_n` on) stay, after the
    /// configured ones.
    fn take_listeners(
        &mut self,
        plan: Plan,
        used: &[bool],
        old_n: usize,
    ) -> (Vec<Option<Listener>>, Vec<usize>) {
        let extras: Vec<usize> = (old_n..self.listeners.len())
            .filter(|&i| !used[i])
            .collect();
        let mut old = std::mem::take(&mut self.listeners);
        for lst in old.iter_mut().flatten() {
            let _ = self.poll.registry().deregister(lst.source());
        }
        let mut remap = vec![usize::MAX; old.len()];
        let mut next = Vec::with_capacity(plan.len() + extras.len());
        for p in plan {
            match p {
                Ok(i) => {
                    remap[i] = next.len();
                    next.push(old[i].take());
                }
                Err(lst) => next.push(Some(lst)),
            }
        }
        for i in extras {
            remap[i] = next.len();
            next.push(old[i].take());
        }
        for l in old.iter().flatten() {
            log::info!("graceful restart: closing listener {}", describe(l));
        }
        drop(old);
        (next, remap)
    }

    /// Registers each listener under its new token; their ports and bound
    /// addresses, by index.
    fn register_listeners(
        &mut self,
        next: &mut [Option<Listener>],
    ) -> (Vec<u16>, Vec<Option<std::net::IpAddr>>) {
        let mut ports = Vec::with_capacity(next.len());
        let mut bound_ips = Vec::with_capacity(next.len());
        for (i, lst) in next.iter_mut().enumerate() {
            match lst {
                Some(l) => {
                    // Past the point of no return: a failure is logged, not undone.
                    if let Err(e) = self.poll.registry().register(
                        l.source(),
                        Token(LISTENER_BASE + i),
                        Interest::READABLE,
                    ) {
                        log::error!("graceful restart: listener {}: {e}", describe(l));
                    }
                    ports.push(l.port());
                    bound_ips.push(l.bound_ip());
                }
                None => {
                    ports.push(0);
                    bound_ips.push(None);
                }
            }
        }
        (ports, bound_ips)
    }

    /// mod_rrdtool under a new configuration: the databases it names (the
    /// counts of those it keeps go on), the process started when it is the
    /// first to name one, stopped (with a last update) when it names none.
    fn reload_rrdtool(&mut self, config: &crate::config::Config) {
        let dbs = config.rrdtool_dbs();
        match (self.sv.rrd.as_mut(), dbs.is_empty()) {
            (Some(r), false) => r.set_dbs(&dbs),
            (Some(r), true) => {
                r.stop();
                self.sv.rrd = None;
            }
            (None, false) => {
                let mut r = crate::rrdtool::RrdTool::new(config.rrdtool_binary(), &dbs);
                if let Some(Err(e)) = r.as_mut().map(crate::rrdtool::RrdTool::start) {
                    log::error!("graceful restart: {e}");
                }
                self.sv.rrd = r;
            }
            (None, true) => {}
        }
    }
}
