//! The client's real address behind trusted forwarders: lighttpd's
//! `mod_extforward` and HAProxy's PROXY protocol, as pure functions.
//!
//! The event loop calls:
//!
//! - on accept, [`options::Trust::trusts_peer`] with the socket peer; if it
//!   is trusted and [`options::ExtForward::hap_proxy`] is on, the
//!   connection's first bytes go through [`proxy_protocol::parse`] until
//!   it answers (`Ok(None)`: read more; an error: close). The header's
//!   [`proxy_protocol::Endpoints`] replace the connection's addresses, its
//!   TLS flag makes the scheme https, and [`proxy_protocol::Header::env`]
//!   is set on every request of the connection. The PROXY source then is
//!   "the peer" for everything below (lighttpd keeps no trace of the hop).
//! - per request, after the head is parsed and before conditionals on
//!   `$HTTP["remoteip"]` or `$HTTP["scheme"]` are evaluated,
//!   [`client::resolve`]: a new client address (and port), scheme, Host
//!   and REMOTE_USER, or nothing; `Err` is a 400. The address is the
//!   request's only (lighttpd restores the connection's own after each
//!   HTTP/1.x request, and keeps it for an HTTP/2 connection's life).
//!
//! [`options`] parses the `extforward.*` options.

pub mod client;
pub mod options;
pub mod proxy_protocol;

#[cfg(test)]
mod tests;
