//! TLS listeners: which sockets speak TLS (`ssl.engine`), their
//! configuration built from lighttpd's `ssl.*` options (the socket's scope,
//! and `$HTTP["host"]` blocks for SNI), loaded before the switch of user
//! and chroot, reloaded on SIGUSR1, and kept up once a second.

use std::sync::Arc;

use crate::config::Config;
use crate::tls::{ServerOptions, SocketOptions, TicketKeys, TlsContext, TlsSpec};

/// The TLS state of a server: one context per listener that speaks TLS.
pub(super) struct Tls {
    /// Indexed like the listeners; `None` for plain ones.
    pub contexts: Vec<Option<TlsContext>>,
    /// Made when the first TLS listener needs them: making a key seeds
    /// aws-lc's random generator, whose jitter-entropy collector keeps
    /// 128 KiB of heap for the life of the process (valgrind massif) — all
    /// of a plain server's idle heap growth since TLS was linked in.
    keys: Option<Arc<TicketKeys>>,
}

/// The spec of listener `i`, or `None` when it does not speak TLS.
fn spec_for(config: &Config, i: usize) -> Option<Result<(TlsSpec, Vec<String>), String>> {
    let s = config.socket_settings(i);
    if !s.ssl_engine {
        return None;
    }
    let socket = SocketOptions {
        scope: s.ssl.clone(),
        cipher_list: s.ssl_cipher_list.clone(),
        ssl_conf_cmd: s.ssl_conf_cmd.clone(),
        honor_cipher_order: s.ssl_honor_cipher_order,
        hosts: config.tls_hosts(i),
        // ALPN offers h2 where HTTP/2 is on (`server.h2proto`).
        h2: config.global.h2proto,
    };
    let server = server_options(config);
    let spec = config.listeners.get(i).map_or("", |l| l.spec.as_str());
    Some(TlsSpec::from_options(&socket, &server).map_err(|e| format!("{spec}: {e}")))
}

fn server_options(config: &Config) -> ServerOptions {
    ServerOptions {
        stek_file: config.global.ssl_stek_file.clone(),
        session_cache: config.global.ssl_session_cache,
    }
}

impl Tls {
    /// Loads the TLS configuration of every listener of `config` (the
    /// ticket keys once, for all of them). Warnings are logged; an option
    /// or file glint cannot use is an error naming the socket.
    pub(super) fn load(config: &Config, now: i64) -> Result<Tls, String> {
        let mut keys = None;
        let contexts = Tls::contexts(config, &mut keys, now)?;
        Ok(Tls { contexts, keys })
    }

    fn contexts(
        config: &Config,
        keys: &mut Option<Arc<TicketKeys>>,
        now: i64,
    ) -> Result<Vec<Option<TlsContext>>, String> {
        let mut out = Vec::with_capacity(config.listeners.len());
        for i in 0..config.listeners.len() {
            let Some(spec) = spec_for(config, i) else {
                out.push(None);
                continue;
            };
            let (spec, mut warnings) = spec?;
            let name = config.listeners[i].spec.clone();
            let keys = keys.get_or_insert_with(|| {
                let stek = config.global.ssl_stek_file.as_deref();
                TicketKeys::new(stek.map(std::path::Path::new), now)
            });
            let (ctx, w) = TlsContext::load(spec, keys).map_err(|e| format!("{name}: {e}"))?;
            warnings.extend(w);
            warnings.extend(ctx.expiry_warnings(now));
            for w in warnings {
                log::warn!("{name}: {w}");
            }
            out.push(Some(ctx));
        }
        Ok(out)
    }

    /// The contexts of a new configuration (a graceful restart); the
    /// running ones stay when one does not load.
    pub(super) fn reloaded(
        &mut self,
        config: &Config,
        now: i64,
    ) -> Result<Vec<Option<TlsContext>>, String> {
        Tls::contexts(config, &mut self.keys, now)
    }

    /// Once a second: ticket-key rotation, OCSP staples.
    pub(super) fn tick(&self, now: i64) {
        if let Some(keys) = &self.keys {
            keys.tick(now);
        }
        for c in self.contexts.iter().flatten() {
            c.tick(now);
        }
    }
}
