//! HTTPS: rustls configured from lighttpd's `ssl.*` options, and a
//! sans-loop TLS connection for glint's event loop.
//!
//! The pieces, in the order start-up meets them:
//! - [`options`]: the option values as plain Rust ([`SocketOptions`],
//!   [`ScopeOptions`], [`ServerOptions`]) and [`TlsSpec`], the same
//!   checked; [`conf_cmd`] and [`ciphers`] map `ssl.openssl.ssl-conf-cmd`
//!   and OpenSSL cipher strings.
//! - [`TicketKeys`]: session-ticket keys, `ssl.stek-file`, rotation.
//! - [`TlsContext`]: one socket's loaded configuration: SNI, ACME, OCSP,
//!   client certificates; `reload`, `tick`, and [`check`] for `-tt`.
//! - [`TlsConn`]: one connection over a non-blocking socket.
//!
//! Start-up: `TlsSpec::from_options` per TLS socket, `TicketKeys::new` once
//! (before forking workers and before chroot/setuid, like the keys), then
//! `TlsContext::load` per socket. On SIGUSR1: `TlsContext::reload`. Each
//! second: `TicketKeys::tick` and `TlsContext::tick`.
//!
//! # lighttpd's options
//!
//! | option | lighttpd 1.4.69 (mod_openssl) | glint |
//! |---|---|---|
//! | `ssl.engine` | TLS on this socket | the caller decides which sockets are TLS |
//! | `ssl.pemfile` | cert chain, leaf first; the key too unless `ssl.privkey` | same (PEM or one DER cert); key checked against the cert |
//! | `ssl.privkey` | the key | same (PEM or DER, PKCS#8/PKCS#1/SEC1) |
//! | `ssl.ca-file` | client-cert CAs; completes the chain sent when `ssl.pemfile` has only the leaf | same; chain built by issuer name, root left out |
//! | `ssl.ca-dn-file` | CA names in the CertificateRequest; the client cert's issuer must be one | same |
//! | `ssl.ca-crl-file` | CRLs, whole chain (CRL_CHECK_ALL) | same via webpki: every certificate, a missing or expired CRL fails |
//! | `ssl.verifyclient.activate` | ask for a client cert (default off) | same; needs `ssl.ca-file` (an error at start, not at handshake) |
//! | `ssl.verifyclient.enforce` | refuse without a valid cert (default on) | same; off lets failures in with `SSL_CLIENT_VERIFY=FAILED:...` |
//! | `ssl.verifyclient.depth` | chain depth, default 9, clamped to 255 | same, over the chain the client sends (webpki itself stops at 6 intermediates) |
//! | `ssl.verifyclient.username` | `REMOTE_USER` from an `SSL_CLIENT_S_DN_*` value | same ([`ClientCertInfo`]) |
//! | `ssl.verifyclient.exportcert` | `SSL_CLIENT_CERT` in PEM | same |
//! | `ssl.verifyclient.ca-file` etc. | other names of `ssl.ca-*` | the caller maps them to `ca_file` etc. |
//! | `ssl.cipher-list` | OpenSSL cipher string; deprecated; turns on server preference | evaluated as OpenSSL does over rustls's six TLS 1.2 suites; none left is an error |
//! | `ssl.honor-cipher-order` | removed in 1.4.68 (was default on) | read: server preference on/off |
//! | `ssl.openssl.ssl-conf-cmd` | `SSL_CONF_cmd` pairs | `MinProtocol`/`MaxProtocol`/`Protocol` (1.2 and 1.3 only), `CipherString`, `Ciphersuites`, `Curves`/`Groups`/`ECDHParameters`, `Options` (`SessionTicket`, `ServerPreference`, `KTLS`, and those rustls fixes), `SecurityLevel` 0-2, `NumTickets`, `MaxSendFragment`; anything else is an error naming key and value ([`conf_cmd`]) |
//! | `ssl.disable-client-renegotiation` | ignored (always off) | accepted: rustls never renegotiates |
//! | `ssl.read-ahead` | OpenSSL read-ahead | accepted: no meaning for rustls |
//! | `ssl.stek-file` | shared ticket keys, re-read when changed | same format and rotation ([`TicketKeys`]) |
//! | `ssl.stapling-file` | DER OCSP response, refreshed near nextUpdate or when the file changes, dropped once expired | same |
//! | `ssl.acme-tls-1` | dir of `<name>.crt.pem`/`<name>.key.pem` for ALPN `acme-tls/1` | same, read at each challenge handshake |
//! | `server.feature-flags` `ssl.session-cache` | server session cache (default off: tickets) | same, 20480 sessions as OpenSSL |
//!
//! lighttpd's other TLS modules (`mod_gnutls`, `mod_mbedtls`, `mod_wolfssl`,
//! `mod_nss`) take the same options; [`modules`] reads `ssl.cipher-list` and
//! `ssl.openssl.ssl-conf-cmd` as each of them does.
//!
//! TLS 1.2 and 1.3 only, no compression, no renegotiation, no 0-RTT.
//! ALPN: `h2` (when [`SocketOptions::h2`]), `http/1.1`, `http/1.0`, and
//! `acme-tls/1` where configured.

pub mod ciphers;
pub mod conf_cmd;
mod conn;
mod context;
mod load;
pub mod module_conf;
pub mod modules;
pub mod options;
mod slot;
mod tickets;
mod verify;
mod x509;

#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::path::PathBuf;

pub use conn::{
    HandshakeInfo, ReadStatus, TlsConn, PLAIN_HTTP_RESPONSE, RECORD_SIZE, SEND_BUFFER_LIMIT,
};
pub use context::{check, TlsContext};
pub use options::{HostMatch, Managed, ScopeOptions, ServerOptions, SocketOptions, TlsSpec};
pub use tickets::TicketKeys;
pub use verify::ClientCertInfo;

pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_H3: &[u8] = b"h3";
pub const ALPN_HTTP11: &[u8] = b"http/1.1";
pub const ALPN_HTTP10: &[u8] = b"http/1.0";
pub const ALPN_ACME_TLS_1: &[u8] = b"acme-tls/1";

/// The crypto provider: ring with the `ring` feature, else aws-lc-rs.
#[cfg(feature = "ring")]
mod provider {
    pub(crate) use ring::aead;
    pub(crate) use rustls::crypto::ring::{default_provider, ALL_CIPHER_SUITES, ALL_KX_GROUPS};
    pub(crate) const NAME: &str = "ring";
}
#[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
mod provider {
    pub(crate) use aws_lc_rs::aead;
    pub(crate) use rustls::crypto::aws_lc_rs::{
        default_provider, ALL_CIPHER_SUITES, ALL_KX_GROUPS,
    };
    pub(crate) const NAME: &str = "aws-lc-rs";
}
#[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
compile_error!("glint needs a TLS crypto provider: the aws-lc-rs (default) or ring feature");

/// What glint's ACME client needs to know of a certificate it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertSummary {
    pub not_before: i64,
    pub not_after: i64,
    /// The serial number's content octets (DER INTEGER, sign byte kept).
    pub serial: Vec<u8>,
    /// The authorityKeyIdentifier's keyIdentifier.
    pub aki: Option<Vec<u8>>,
    /// DNS names of subjectAltName, lower case.
    pub dns_names: Vec<String>,
}

/// The validity, serial, issuer key id and names of a DER certificate.
pub fn cert_summary(der: &[u8]) -> Option<CertSummary> {
    let c = x509::cert(der)?;
    Some(CertSummary {
        not_before: c.not_before,
        not_after: c.not_after,
        serial: c.serial,
        aki: c.aki,
        dns_names: c.dns_names.iter().map(|n| n.to_ascii_lowercase()).collect(),
    })
}

/// The crypto provider glint's TLS uses (also for glint's ACME client's
/// own HTTPS connections).
pub fn crypto_provider() -> rustls::crypto::CryptoProvider {
    provider::default_provider()
}

/// The provider glint was built with ("aws-lc-rs" or "ring").
pub fn provider_name() -> &'static str {
    provider::NAME
}

/// Kernel TLS is offered by this kernel (`tls` in
/// `/proc/sys/net/ipv4/tcp_available_ulp`). Only reported: glint encrypts
/// in user space.
pub fn ktls_available() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_ulp")
        .is_ok_and(|s| s.split_whitespace().any(|w| w == "tls"))
}

#[derive(Debug)]
pub enum TlsError {
    /// An option glint cannot honour; the message names it and its value.
    Config(String),
    /// A certificate, key, CA, CRL or OCSP file that does not load.
    File { path: PathBuf, reason: String },
    /// Plain HTTP on the TLS port: write [`PLAIN_HTTP_RESPONSE`] in clear, close.
    PlainHttp,
    /// The peer broke the TLS protocol (the alert went out where it could).
    Protocol(rustls::Error),
    /// A socket or file read error.
    Io(io::Error),
    /// The file being sent is shorter than its range: close the connection.
    FileTruncated,
    /// The connection already failed.
    Closed,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Config(m) => write!(f, "SSL: {m}"),
            TlsError::File { path, reason } => write!(f, "SSL: {}: {reason}", path.display()),
            TlsError::PlainHttp => write!(f, "SSL: plain HTTP request sent to the HTTPS port"),
            TlsError::Protocol(e) => write!(f, "SSL: {e}"),
            TlsError::Io(e) => write!(f, "SSL: {e}"),
            TlsError::FileTruncated => write!(f, "SSL: file shrank while being sent"),
            TlsError::Closed => write!(f, "SSL: connection already failed"),
        }
    }
}

impl std::error::Error for TlsError {}
