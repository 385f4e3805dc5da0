//! The `ssl.*` option values as the configuration layer hands them over
//! (plain strings, booleans and lists), and [`TlsSpec`]: the same options
//! checked, defaulted as lighttpd defaults them, and mapped to what rustls
//! can do. Nothing here touches a file; [`super::TlsContext::load`] does.

use std::path::PathBuf;

use super::conf_cmd::Settings;
use super::module_conf;
use super::TlsError;

/// lighttpd's default for `ssl.verifyclient.depth` (mod_openssl.c sets 9).
pub const DEFAULT_VERIFY_DEPTH: u32 = 9;
/// lighttpd clamps `ssl.verifyclient.depth` to 255 ("absurdly large").
const MAX_VERIFY_DEPTH: u32 = 255;

/// The `ssl.*` options of one connection scope (the global scope, a
/// `$SERVER["socket"]` block or a `$HTTP["host"]` block): `None` where the
/// scope does not set the option. lighttpd reads all of these per
/// connection scope, so a `$HTTP["host"]` block may change each of them.
///
/// `ssl.verifyclient.ca-file`, `ssl.verifyclient.ca-dn-file` and
/// `ssl.verifyclient.ca-crl-file` are lighttpd's other names for
/// `ca_file`, `ca_dn_file` and `ca_crl_file` (mod_openssl remaps them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeOptions {
    /// `ssl.pemfile`: the certificate chain, leaf first, and the key too
    /// unless `ssl.privkey` is set. PEM, or a single DER certificate.
    pub pemfile: Option<String>,
    /// `ssl.privkey`: the private key (PEM or DER).
    pub privkey: Option<String>,
    /// `ssl.ca-file`: CAs for client certificates, and the chain sent to
    /// clients when `ssl.pemfile` holds only the leaf.
    pub ca_file: Option<String>,
    /// `ssl.ca-dn-file`: the CA names asked for in the CertificateRequest;
    /// a client certificate must then also be issued by one of them.
    pub ca_dn_file: Option<String>,
    /// `ssl.ca-crl-file`: CRLs (PEM) checked for the whole client chain.
    pub ca_crl_file: Option<String>,
    /// `ssl.stapling-file`: a DER OCSP response stapled to the handshake.
    pub stapling_file: Option<String>,
    /// `ssl.verifyclient.activate` (default off).
    pub verifyclient_activate: Option<bool>,
    /// `ssl.verifyclient.enforce` (default on).
    pub verifyclient_enforce: Option<bool>,
    /// `ssl.verifyclient.depth` (default 9).
    pub verifyclient_depth: Option<u32>,
    /// `ssl.verifyclient.username`: the name of the `SSL_CLIENT_S_DN_*`
    /// variable whose value becomes `REMOTE_USER`.
    pub verifyclient_username: Option<String>,
    /// `ssl.verifyclient.exportcert`: `SSL_CLIENT_CERT` in PEM.
    pub verifyclient_exportcert: Option<bool>,
    /// `ssl.acme-tls-1`: directory of `<name>.crt.pem` / `<name>.key.pem`.
    pub acme_tls_1: Option<String>,
    /// `ssl.read-ahead`: accepted; rustls takes whatever the socket read
    /// returns, so there is nothing to turn on or off.
    pub read_ahead: Option<bool>,
    /// `ssl.disable-client-renegotiation`: accepted; rustls never
    /// renegotiates (lighttpd 1.4.69 ignores it as well).
    pub disable_client_renegotiation: Option<bool>,
}

macro_rules! inherit_fields {
    ($inner:ident, $outer:ident, $($f:ident),*) => {
        ScopeOptions { $($f: $inner.$f.clone().or_else(|| $outer.$f.clone())),* }
    };
}

impl ScopeOptions {
    /// These options over `outer`: each one unset here takes the outer
    /// scope's value, as lighttpd patches a condition's values over the
    /// ones in force around it.
    pub fn inherit(&self, outer: &ScopeOptions) -> ScopeOptions {
        inherit_fields!(
            self,
            outer,
            pemfile,
            privkey,
            ca_file,
            ca_dn_file,
            ca_crl_file,
            stapling_file,
            verifyclient_activate,
            verifyclient_enforce,
            verifyclient_depth,
            verifyclient_username,
            verifyclient_exportcert,
            acme_tls_1,
            read_ahead,
            disable_client_renegotiation
        )
    }
}

/// Which server names a `$HTTP["host"]` block applies to during the
/// handshake (the SNI name stands in for the Host header, as in lighttpd).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostMatch {
    /// `$HTTP["host"] == "a.example"` (compared without case).
    Exact(String),
    /// `$HTTP["host"] =~ "..."` (a regex over the lower-cased name).
    Regex(String),
}

/// The options of one TLS listening socket.
#[derive(Clone, Debug, Default)]
pub struct SocketOptions {
    /// The per-connection options in force in the `$SERVER["socket"]`
    /// block (the global ones with the block's own over them): the
    /// socket's default certificate and client-certificate policy.
    pub scope: ScopeOptions,
    /// `ssl.cipher-list` (deprecated in lighttpd; sets server preference).
    pub cipher_list: Option<String>,
    /// `ssl.openssl.ssl-conf-cmd`, in configuration order.
    pub ssl_conf_cmd: Vec<(String, String)>,
    /// `ssl.honor-cipher-order` (removed in lighttpd 1.4.68, where
    /// `"Options" => "ServerPreference"` replaced it; still read).
    pub honor_cipher_order: Option<bool>,
    /// The `$HTTP["host"]` blocks inside or around this socket that set
    /// `ssl.*` options, in configuration order, each with only its own
    /// values (they are inherited from `scope` here).
    pub hosts: Vec<(HostMatch, ScopeOptions)>,
    /// Offer `h2` in ALPN (once the HTTP/2 session exists).
    pub h2: bool,
    /// Certificates glint's ACME client keeps for this socket's names.
    pub managed: Vec<Managed>,
    /// The TLS module loaded in `server.modules`, whose reading of
    /// `ssl.cipher-list` and `ssl.openssl.ssl-conf-cmd` applies.
    pub module: super::modules::TlsModule,
}

/// Options of the whole server.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// `ssl.stek-file`: session-ticket keys maintained by an outside job.
    pub stek_file: Option<String>,
    /// `server.feature-flags += ("ssl.session-cache" => "enable")`:
    /// a server-side session cache beside tickets (default off).
    pub session_cache: bool,
    /// `ssl.refresh-certs`: read certificate files again when they change.
    pub refresh_certs: bool,
}

/// The client-certificate policy of a scope with
/// `ssl.verifyclient.activate = "enable"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifySpec {
    pub enforce: bool,
    pub depth: u32,
    pub username: Option<String>,
    pub export_cert: bool,
}

/// One scope's files and client policy, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeSpec {
    /// `ssl.pemfile`; `None` only where glint's ACME client provides the
    /// certificates ([`TlsSpec::managed`]).
    pub pemfile: Option<PathBuf>,
    /// The key file: `ssl.privkey`, else `ssl.pemfile` itself.
    pub privkey: Option<PathBuf>,
    pub stapling_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
    pub ca_dn_file: Option<PathBuf>,
    pub ca_crl_file: Option<PathBuf>,
    pub verify: Option<VerifySpec>,
    pub acme_dir: Option<PathBuf>,
}

/// Everything needed to build one socket's TLS configuration.
#[derive(Clone, Debug)]
pub struct TlsSpec {
    pub settings: Settings,
    pub default: ScopeSpec,
    pub hosts: Vec<(HostMatch, ScopeSpec)>,
    pub h2: bool,
    pub session_cache: bool,
    pub stek_file: Option<PathBuf>,
    /// Certificates glint's ACME client keeps (one per name), served by
    /// name to every scope of the socket that has none of its own for it.
    pub managed: Vec<Managed>,
    /// `ssl.refresh-certs` (glint's default: on): certificate files are
    /// read again when their mtime changes (checked every second).
    pub refresh_certs: bool,
}

/// A certificate kept by glint's ACME client: the files it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Managed {
    pub name: String,
    pub pemfile: PathBuf,
    pub privkey: PathBuf,
}

fn path(v: &Option<String>) -> Option<PathBuf> {
    v.as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(PathBuf::from)
}

fn scope_spec(o: &ScopeOptions, what: &str, managed: bool) -> Result<ScopeSpec, TlsError> {
    let pemfile = path(&o.pemfile);
    if pemfile.is_none() && !managed {
        return Err(TlsError::Config(format!(
            "ssl.pemfile has to be set for {what}"
        )));
    }
    let privkey = path(&o.privkey).or_else(|| pemfile.clone());
    let ca_file = path(&o.ca_file);
    let ca_dn_file = path(&o.ca_dn_file);
    let verify = if o.verifyclient_activate.unwrap_or(false) {
        if ca_file.is_none() {
            return Err(TlsError::Config(format!(
                "ssl.verifyclient.activate needs ssl.ca-file (the CAs client \
                 certificates are checked against) for {what}"
            )));
        }
        let depth = o.verifyclient_depth.unwrap_or(DEFAULT_VERIFY_DEPTH);
        Some(VerifySpec {
            enforce: o.verifyclient_enforce.unwrap_or(true),
            depth: depth.min(MAX_VERIFY_DEPTH),
            username: o
                .verifyclient_username
                .clone()
                .filter(|s| !s.trim().is_empty()),
            export_cert: o.verifyclient_exportcert.unwrap_or(false),
        })
    } else {
        None
    };
    Ok(ScopeSpec {
        pemfile,
        privkey,
        stapling_file: path(&o.stapling_file),
        ca_file,
        ca_dn_file,
        ca_crl_file: path(&o.ca_crl_file),
        verify,
        acme_dir: path(&o.acme_tls_1),
    })
}

impl TlsSpec {
    /// Checks one TLS socket's options. Returns the spec and the warnings
    /// lighttpd would log (deprecated options); an option glint cannot
    /// honour is an error naming it and its value.
    pub fn from_options(
        socket: &SocketOptions,
        server: &ServerOptions,
    ) -> Result<(TlsSpec, Vec<String>), TlsError> {
        let mut warnings = Vec::new();
        if socket
            .cipher_list
            .as_deref()
            .is_some_and(|c| !c.trim().is_empty())
        {
            warnings.push(
                "ssl.cipher-list is deprecated; prefer the secure defaults or \
                 ssl.openssl.ssl-conf-cmd \"CipherString\""
                    .to_string(),
            );
        }
        let (settings, mut w) = module_conf::module_settings(
            socket.module,
            socket.cipher_list.as_deref(),
            socket.honor_cipher_order,
            &socket.ssl_conf_cmd,
        )
        .map_err(TlsError::Config)?;
        warnings.append(&mut w);
        let managed = !socket.managed.is_empty();
        let default = scope_spec(&socket.scope, "the socket", managed)?;
        let mut hosts = Vec::with_capacity(socket.hosts.len());
        for (m, o) in &socket.hosts {
            if let HostMatch::Regex(re) = m {
                regex::Regex::new(re)
                    .map_err(|e| TlsError::Config(format!("$HTTP[\"host\"] =~ \"{re}\": {e}")))?;
            }
            let merged = o.inherit(&socket.scope);
            let what = match m {
                HostMatch::Exact(h) => format!("$HTTP[\"host\"] == \"{h}\""),
                HostMatch::Regex(h) => format!("$HTTP[\"host\"] =~ \"{h}\""),
            };
            hosts.push((m.clone(), scope_spec(&merged, &what, managed)?));
        }
        Ok((
            TlsSpec {
                settings,
                default,
                hosts,
                h2: socket.h2,
                session_cache: server.session_cache,
                stek_file: path(&server.stek_file),
                managed: socket.managed.clone(),
                refresh_certs: server.refresh_certs,
            },
            warnings,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_pem(p: &str) -> ScopeOptions {
        ScopeOptions {
            pemfile: Some(p.into()),
            ..Default::default()
        }
    }

    #[test]
    fn key_defaults_to_the_pemfile_and_hosts_inherit_the_socket() {
        let socket = SocketOptions {
            scope: ScopeOptions {
                ca_file: Some("/ca.pem".into()),
                ..with_pem("/s.pem")
            },
            hosts: vec![(
                HostMatch::Exact("a.example".into()),
                ScopeOptions {
                    privkey: Some("/a.key".into()),
                    verifyclient_activate: Some(true),
                    verifyclient_depth: Some(1000),
                    ..with_pem("/a.pem")
                },
            )],
            ..Default::default()
        };
        let (spec, warnings) = TlsSpec::from_options(&socket, &ServerOptions::default()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(spec.default.privkey, Some(PathBuf::from("/s.pem")));
        assert_eq!(spec.default.verify, None);
        let host = &spec.hosts[0].1;
        assert_eq!(host.privkey, Some(PathBuf::from("/a.key")));
        assert_eq!(host.ca_file, Some(PathBuf::from("/ca.pem")));
        let v = host.verify.as_ref().unwrap();
        assert!(v.enforce, "lighttpd's default is enforce");
        assert_eq!(v.depth, 255, "clamped as lighttpd clamps it");
    }

    #[test]
    fn missing_pemfile_or_ca_file_fails_closed() {
        let err = TlsSpec::from_options(&SocketOptions::default(), &ServerOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("ssl.pemfile"), "{err}");
        let socket = SocketOptions {
            scope: ScopeOptions {
                verifyclient_activate: Some(true),
                ..with_pem("/s.pem")
            },
            ..Default::default()
        };
        let err = TlsSpec::from_options(&socket, &ServerOptions::default()).unwrap_err();
        assert!(err.to_string().contains("ssl.ca-file"), "{err}");
    }

    #[test]
    fn a_bad_host_regex_is_an_error_and_cipher_list_warns() {
        let socket = SocketOptions {
            scope: with_pem("/s.pem"),
            hosts: vec![(HostMatch::Regex("(".into()), ScopeOptions::default())],
            ..Default::default()
        };
        assert!(TlsSpec::from_options(&socket, &ServerOptions::default()).is_err());
        let socket = SocketOptions {
            scope: with_pem("/s.pem"),
            cipher_list: Some("HIGH".into()),
            ..Default::default()
        };
        let (spec, w) = TlsSpec::from_options(&socket, &ServerOptions::default()).unwrap();
        assert!(w[0].contains("deprecated"));
        assert!(
            spec.settings.server_preference,
            "ssl.cipher-list implies it"
        );
    }
}
