//! Where glint listens: `server.bind`/`server.port` and each
//! `$SERVER["socket"]`, parsed into addresses once.

use std::path::PathBuf;

use super::lexer::Pos;
use super::{ConfigError, Settings};

/// An address to listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// `host:port`, `ip:port`, `[v6]:port` or `:port`, resolved at bind time.
    Tcp { host: String, port: u16 },
    /// A unix socket path.
    Unix(PathBuf),
}

/// One listening socket and the text that named it (`$SERVER["socket"]` compares against it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub addr: ListenAddr,
    /// The socket as written in the configuration, e.g. `127.0.0.1:8080` or `:80`.
    pub spec: String,
}

/// The listeners: the global one first, then each `$SERVER["socket"]`
/// not already named; and for each socket condition, its listener's index.
pub(super) fn listeners(
    global: &Settings,
    sockets: &[(String, Pos)],
) -> Result<(Vec<Listen>, Vec<usize>), ConfigError> {
    let mut listeners = vec![listen_from_settings(global)];
    let mut socket_map = Vec::with_capacity(sockets.len());
    for (spec, pos) in sockets {
        let addr = parse_socket(spec).map_err(|m| pos.error(m))?;
        let idx = match listeners
            .iter()
            .position(|l| l.spec == *spec || l.addr == addr)
        {
            Some(i) => i,
            None => {
                listeners.push(Listen {
                    addr,
                    spec: spec.clone(),
                });
                listeners.len() - 1
            }
        };
        socket_map.push(idx);
    }
    Ok((listeners, socket_map))
}

/// Parses a `$SERVER["socket"]` value: `ip:port`, `[v6]:port`, `:port`,
/// `host:port`, a bare address (port 80), or a unix socket path.
pub fn parse_socket(spec: &str) -> Result<ListenAddr, String> {
    if spec.starts_with('/') {
        return Ok(ListenAddr::Unix(PathBuf::from(spec)));
    }
    let bad =
        || format!("invalid socket \"{spec}\" (expected ip:port, [v6]:port, :port or a path)");
    let (host, port) = if let Some(rest) = spec.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or_else(bad)?;
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match spec.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => return Err(bad()),
            Some((h, p)) => (h, Some(p)),
            None => (spec, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| bad())?,
        None => 80,
    };
    if spec.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok(ListenAddr::Tcp {
        host: host.to_string(),
        port,
    })
}

/// The listener named by `server.bind` and `server.port`.
pub fn listen_from_settings(s: &Settings) -> Listen {
    match &s.listener.bind {
        Some(b) if b.starts_with('/') => Listen {
            addr: ListenAddr::Unix(PathBuf::from(b)),
            spec: b.clone(),
        },
        Some(b) => Listen {
            addr: ListenAddr::Tcp {
                host: b.clone(),
                port: s.listener.port,
            },
            spec: if b.contains(':') {
                format!("[{}]:{}", b, s.listener.port)
            } else {
                format!("{}:{}", b, s.listener.port)
            },
        },
        None => Listen {
            addr: ListenAddr::Tcp {
                host: String::new(),
                port: s.listener.port,
            },
            spec: format!(":{}", s.listener.port),
        },
    }
}
