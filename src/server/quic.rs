//! HTTP/3 in the server: a UDP endpoint beside each TLS listener with
//! `glint.h3` on, bound at start with the listener's address and port,
//! its readiness and timers in the loop, and the `Alt-Svc` value its TCP
//! answers carry.

use std::io;
use std::time::Duration;

use super::listen::Listener;
use super::Server;
use crate::config::Config;
use crate::conn::h3::{EndpointSpec, Quic};
use crate::tls::TlsContext;

/// Tokens of the UDP sockets: below the backends' (`BACKEND_BASE`, 2^29)
/// and far above any connection's slot.
pub(super) const QUIC_TOKEN_BASE: usize = 1 << 28;

/// `ma` of the `Alt-Svc` header: clients remember the HTTP/3 endpoint a
/// day (RFC 7838 §3.1's default), as Caddy announces it.
pub const ALT_SVC_MAX_AGE: u32 = 86_400;

/// The endpoints `config` asks for, given the bound listeners and their
/// TLS contexts; an error names the socket that cannot have HTTP/3.
pub(super) fn endpoint_specs(
    config: &Config,
    listeners: &[Option<Listener>],
    contexts: &[Option<TlsContext>],
) -> io::Result<Vec<EndpointSpec>> {
    let mut specs = Vec::new();
    for (i, ctx) in contexts.iter().enumerate() {
        let Some(ctx) = ctx else { continue };
        if !config.socket_settings(i).protocols.h3 {
            continue;
        }
        let name = config.listeners.get(i).map_or("", |l| l.spec.as_str());
        let refuse = |why: String| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: glint.h3: {why}"),
            )
        };
        if let Some(why) = ctx.quic_unsupported() {
            return Err(refuse(format!("HTTP/3 cannot be offered with {why}")));
        }
        if config.global.process.max_worker > 1 {
            // Each worker would read some of a connection's datagrams.
            return Err(refuse(
                "HTTP/3 needs one process (server.max-worker 0 or 1)".into(),
            ));
        }
        let Some(Some(Listener::Tcp(t, _))) = listeners.get(i) else {
            return Err(refuse("HTTP/3 needs a TCP socket".into()));
        };
        specs.push(EndpointSpec {
            listener: i,
            addr: t.local_addr()?,
            tls: ctx.quic_config(),
            idle: Duration::from_secs(u64::from(config.global.limits.max_read_idle.max(1))),
        });
    }
    Ok(specs)
}

impl Server {
    /// Opens the HTTP/3 endpoints and sets the `Alt-Svc` values.
    pub(super) fn open_quic(&mut self) -> io::Result<()> {
        let specs = endpoint_specs(&self.sv.config, &self.listeners, &self.tls.contexts)?;
        let mut quic = Quic::bind(specs, self.max_connections)?;
        quic.register(self.poll.registry(), QUIC_TOKEN_BASE)?;
        self.sv.alt_svc = (0..self.listeners.len())
            .map(|i| {
                quic.port_of(i)
                    .map(|p| format!("h3=\":{p}\"; ma={ALT_SVC_MAX_AGE}").into())
            })
            .collect();
        self.quic = quic;
        Ok(())
    }

    /// The UDP addresses serving HTTP/3.
    pub fn quic_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.quic.local_addrs()
    }
}
