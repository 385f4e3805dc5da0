//! glint: a single-process, single-event-loop web server that reads
//! lighttpd's configuration.
//!
//! The modules form layers, listed here from the top. **A module imports
//! only modules of layers below its own; modules of one layer do not import
//! each other.** Where a lower layer must reach a higher one, it does so
//! through a value or a trait the lower layer defines (a handler returns a
//! [`msg::Reply`]; an upstream answers through a [`msg::Sink`]; time-outs
//! come back as values). Inside a module no two files import each other
//! (a `mod.rs` and the files below it excepted). `tests/layers.rs` checks
//! both, from every `use` item and path in the code.
//!
//! 1. [`service`]: running as a daemon: pid file, privileges, socket activation, workers.
//! 2. [`server`]: the `mio` loop: listeners, a slab of connections, backends' sockets, the tick, reload.
//! 3. [`conn`]: one client connection: socket, HTTP/1 session, output queue; says when it is done.
//! 4. [`exchange`]: one request: settings, rewrite, redirect, access, index files, error handlers, access log.
//! 5. [`handler`] (static files, listings, the status page) and [`upstream`]
//!    (SCGI, uwsgi and FastCGI backends: pool, queue, codecs, processes).
//! 6. [`proto`] (HTTP/1.x request parsing and response encoding, WebSocket
//!    frames), [`accesslog`] and [`rrdtool`] (mod_rrdtool's counters and
//!    its `rrdtool -` process).
//! 7. [`msg`] (requests, replies, the upstream sink, statuses, ranges),
//!    [`output`] (the write queue and its one writer), [`net`] (sockets),
//!    [`acme`] (glint's ACME client: its thread, the storage directory,
//!    the http-01 answers).
//! 8. The base: [`config`], [`clock`], and below them [`path`],
//!    [`date`], [`stats`], [`buf`], [`errorlog`], [`signals`], and pure
//!    modules that import nothing of glint but the layers below:
//!    [`authn`] (mod_auth, mod_authn_file: user files, Basic,
//!    Digest; mod_authn_ldap, _pam, _sasl, _dbi, _gssapi on worker threads), [`compress`] (mod_deflate's
//!    options, Accept-Encoding, streaming encoders, the cache), [`tls`]
//!    (rustls: ssl.* options, certificates, SNI, the TLS connection),
//!    [`httpup`] (HTTP/1.1 to an upstream: heads, framing, mod_proxy's
//!    options), [`forwarded`] (mod_extforward, the PROXY protocol),
//!    [`geo`] (mod_maxminddb's database and lookups),
//!    [`sockopt`] (the TCP options nix has no wrapper for) and [`sqldb`]
//!    (blocking SQL clients for lookups on worker threads).
//! 9. [`syslog`], the system log's socket (the error log and the access
//!    log use it); [`ldap`], a small synchronous LDAPv3 client
//!    (mod_authn_ldap's); and [`hash`] (FNV-1a, the one stable hash, and
//!    the fast hash of tables keyed by configuration strings).
//! 10. Under all of them, [`syntax`]: HTTP's small syntax (tokens, OWS,
//!     hex, percent-encoding, the Host check), once.
pub mod service;

pub mod server;

pub mod conn;

pub mod exchange;

pub mod handler;
pub mod upstream;

pub mod accesslog;
pub mod proto;
pub mod rrdtool;

pub mod acme;
pub mod msg;
pub mod net;
pub mod output;

pub mod clock;
pub mod config;

pub mod authn;
pub mod buf;
pub mod compress;
pub mod date;
pub mod errorlog;
pub mod forwarded;
pub mod geo;
pub mod hash;
pub mod httpup;
pub mod ldap;
pub mod magnet;
pub mod path;
pub mod signals;
pub mod sockopt;
pub mod sqldb;
pub mod stats;
pub mod syntax;
pub mod syslog;
pub mod tls;
