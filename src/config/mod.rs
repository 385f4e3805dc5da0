//! Configuration: the typed [`Settings`], the listeners, and the conditional
//! blocks that pick per-request settings.
//!
//! The server asks two things of a [`Config`]: which sockets to listen on
//! ([`Config::listeners`]) and which settings apply to one request
//! ([`Config::resolve`]).

mod settings;

pub use settings::{Origin, Settings, DEFAULT_ACCESSLOG_FORMAT};

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::rc::Rc;

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

/// What conditionals may test about one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// Index into [`Config::listeners`] of the socket that accepted the connection.
    pub listener: usize,
    pub remote_ip: Option<IpAddr>,
    /// `http` (glint has no TLS).
    pub scheme: &'a str,
    pub method: &'a str,
    /// The Host header as sent, lowercased (empty when absent).
    pub host: &'a str,
    /// The decoded, normalised path.
    pub url: &'a str,
    /// The query string, without `?`.
    pub query: &'a str,
    /// The request headers, for `$HTTP["useragent"]`, `$REQUEST_HEADER["..."]`, ...
    pub headers: &'a [httparse::Header<'a>],
}

impl RequestFacts<'_> {
    /// The first header named `name` (case-insensitive), as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    }
}

/// The settings for one request, and the captures of the last regex
/// conditional that matched (`%1`.. in redirects and rewrites).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub settings: Rc<Settings>,
    pub captures: Vec<String>,
}

/// A loaded configuration.
#[derive(Debug)]
pub struct Config {
    /// The global scope.
    pub global: Rc<Settings>,
    /// Every socket to listen on; the first comes from `server.bind` / `server.port`.
    pub listeners: Vec<Listen>,
    /// Options glint parsed but does not act on, and similar notices.
    pub warnings: Vec<String>,
    /// Settings merged for each combination of matched conditionals, built on first use.
    cache: RefCell<HashMap<Vec<u32>, Rc<Settings>>>,
}

impl Config {
    /// A configuration with no conditionals: one listener from `bind` and `port`.
    pub fn from_settings(settings: Settings) -> Config {
        let listeners = vec![listen_from_settings(&settings)];
        Config {
            global: Rc::new(settings),
            listeners,
            warnings: Vec::new(),
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// The settings that apply to one request.
    pub fn resolve(&self, _facts: &RequestFacts<'_>) -> Resolved {
        let _ = &self.cache;
        Resolved {
            settings: Rc::clone(&self.global),
            captures: Vec::new(),
        }
    }
}

/// The listener named by `server.bind` and `server.port`.
pub fn listen_from_settings(s: &Settings) -> Listen {
    match &s.bind {
        Some(b) if b.starts_with('/') => Listen {
            addr: ListenAddr::Unix(PathBuf::from(b)),
            spec: b.clone(),
        },
        Some(b) => Listen {
            addr: ListenAddr::Tcp {
                host: b.clone(),
                port: s.port,
            },
            spec: if b.contains(':') {
                format!("[{}]:{}", b, s.port)
            } else {
                format!("{}:{}", b, s.port)
            },
        },
        None => Listen {
            addr: ListenAddr::Tcp {
                host: String::new(),
                port: s.port,
            },
            spec: format!(":{}", s.port),
        },
    }
}
