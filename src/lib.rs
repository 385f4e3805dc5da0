//! glint: a single-process, single-event-loop web server that reads
//! lighttpd's configuration.
//!
//! Map of the crate, in the order a request meets it:
//! - [`server`]: the `mio` loop: listeners, a slab of connections, the tick.
//! - [`connection`]: one client: a state enum, buffers, readiness.
//! - [`http`]: request-head parsing, ranges, dates, status pages, response heads.
//! - [`path`]: percent-decoding and normalisation, the one place that refuses traversal.
//! - [`config`]: typed settings, listeners, per-request conditionals.
//! - [`handler`]: from a parsed request to a queued response (static files).
//! - [`gateway`]: SCGI, uwsgi and FastCGI backends in the same event loop.
//! - [`output`]: the write queue of memory and file chunks; `send` and `sendfile`.
//! - [`accesslog`], [`clock`], [`signals`], [`errorlog`]: logs, time, signals.
//! - [`service`]: running as a daemon: pid file, privileges, socket activation, workers.
pub mod accesslog;
pub mod clock;
pub mod config;
pub mod connection;
pub mod errorlog;
pub mod gateway;
pub mod handler;
pub mod http;
pub mod output;
pub mod path;
pub mod proto;
pub mod server;
pub mod service;
pub mod signals;
