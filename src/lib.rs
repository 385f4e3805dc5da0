//! glint: a single-process, single-event-loop web server that reads
//! lighttpd's configuration.
//!
//! Map of the crate, in the order a request meets it:
//! - [`config`]: typed settings, listeners, per-request conditionals.
pub mod config;
