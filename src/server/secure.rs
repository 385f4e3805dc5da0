//! TLS listeners: which sockets speak TLS (`ssl.engine`), their
//! configuration built from lighttpd's `ssl.*` options (the socket's scope,
//! and `$HTTP["host"]` blocks for SNI), loaded before the switch of user
//! and chroot, reloaded on SIGUSR1, and kept up once a second.

use std::sync::Arc;

use crate::acme;
use crate::config::{Challenge, Config};
use crate::tls::modules::TlsModule;
use crate::tls::{Managed, ServerOptions, SocketOptions, TicketKeys, TlsContext, TlsSpec};

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
    if !s.tls.engine {
        return None;
    }
    let acme = match acme_spec(config) {
        Ok(a) => a,
        Err(e) => return Some(Err(e)),
    };
    let mut scope = s.ssl.clone();
    let mut managed = Vec::new();
    if let Some(a) = &acme {
        let dir = &a.settings.storage;
        // tls-alpn-01 answers come from the storage directory, unless
        // `ssl.acme-tls-1` names another (an outside client's).
        if a.challenges.contains(&Challenge::TlsAlpn01) && scope.acme_tls_1.is_none() {
            let d = dir.join(acme::store::TLSALPN01_DIR);
            scope.acme_tls_1 = Some(d.display().to_string());
        }
        managed = a
            .names
            .iter()
            .map(|n| Managed {
                name: n.clone(),
                pemfile: dir.join(format!("{n}.crt.pem")),
                privkey: dir.join(format!("{n}.key.pem")),
            })
            .collect();
    }
    let socket = SocketOptions {
        scope,
        cipher_list: s.tls.cipher_list.clone(),
        ssl_conf_cmd: s.tls.conf_cmd.clone(),
        honor_cipher_order: s.tls.honor_cipher_order,
        hosts: config.tls_hosts(i),
        // ALPN offers h2 where HTTP/2 is on (`server.h2proto`).
        h2: config.global.protocols.h2proto,
        managed,
        module: tls_module(config),
    };
    let server = server_options(config);
    let spec = config.listeners.get(i).map_or("", |l| l.spec.as_str());
    Some(TlsSpec::from_options(&socket, &server).map_err(|e| format!("{spec}: {e}")))
}

/// The TLS module in `server.modules` (the configuration layer lets one
/// at most through); `mod_openssl` when none is named.
fn tls_module(config: &Config) -> TlsModule {
    config
        .global
        .modules
        .iter()
        .find_map(|m| TlsModule::from_name(m))
        .unwrap_or_default()
}

fn server_options(config: &Config) -> ServerOptions {
    ServerOptions {
        stek_file: config.global.tls.stek_file.clone(),
        session_cache: config.global.tls.session_cache,
        refresh_certs: config.global.tls.refresh_certs,
    }
}

/// What glint's ACME client is to look after, when `glint.acme.activate`
/// is on: the names (`glint.acme.names`, else the TLS sockets' host
/// names) and the challenge types this server has a listener for
/// (http-01 a plain one, tls-alpn-01 a TLS one). An error stops the start.
pub(super) fn acme_spec(config: &Config) -> Result<Option<acme::Spec>, String> {
    let a = &config.global.acme;
    if !a.activate {
        return Ok(None);
    }
    if !a.agree_tos {
        return Err(
            "glint.acme.activate needs glint.acme.agree-tos = \"enable\": \
                    the CA's terms of service must be accepted to get certificates"
                .into(),
        );
    }
    let names = a
        .names
        .clone()
        .unwrap_or_else(|| config.acme_default_names());
    if names.is_empty() {
        return Err(
            "glint.acme.activate: no names to get certificates for: set \
                    glint.acme.names, or give a TLS socket $HTTP[\"host\"] == blocks"
                .into(),
        );
    }
    let n = config.listeners.len();
    let tls = (0..n)
        .filter(|&i| config.socket_settings(i).tls.engine)
        .count();
    let challenges: Vec<Challenge> = a
        .challenges
        .iter()
        .copied()
        .filter(|c| match c {
            Challenge::Http01 => tls < n,
            Challenge::TlsAlpn01 => tls > 0,
        })
        .collect();
    if challenges.is_empty() {
        return Err(
            "glint.acme.challenges: no listener to answer them on (http-01 needs \
                    a plain one on port 80, tls-alpn-01 a TLS one on port 443)"
                .into(),
        );
    }
    Ok(Some(acme::Spec {
        settings: (**a).clone(),
        names,
        challenges,
    }))
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
                let stek = config.global.tls.stek_file.as_deref();
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

    /// Once a second: ticket-key rotation, OCSP staples, certificate
    /// files that changed.
    pub(super) fn tick(&self, now: i64) {
        if let Some(keys) = &self.keys {
            keys.tick(now);
        }
        for c in self.contexts.iter().flatten() {
            c.tick(now);
        }
    }
}
