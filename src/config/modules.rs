//! The settings of one module each, as `Settings` holds them per scope:
//! `settings.dir_listing.*`, `settings.rewrite.*`, ... Each has its
//! defaults (lighttpd 1.4.69's) beside its fields.

use super::pattern::Pattern;
use super::value::Value;

/// mod_dirlisting: `dir-listing.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct DirListing {
    /// `server.dir-listing` / `dir-listing.activate` (default disable).
    pub activate: bool,
    /// `dir-listing.hide-dotfiles` (default enable).
    pub hide_dotfiles: bool,
    /// `dir-listing.exclude`: regular expressions of names left out of listings.
    pub exclude: Vec<Pattern>,
    /// `dir-listing.hide-readme-file` (default disable): leave README.txt out.
    pub hide_readme_file: bool,
    /// `dir-listing.hide-header-file` (default disable): leave HEADER.txt out.
    pub hide_header_file: bool,
    /// `dir-listing.encoding`: the charset named in listings (default
    /// unset: UTF-8).
    pub encoding: Option<String>,
    /// `dir-listing.external-css`: a stylesheet URL instead of the built-in style.
    pub external_css: Option<String>,
    /// `dir-listing.external-js`: a script URL added to listings.
    pub external_js: Option<String>,
    /// `dir-listing.show-readme`: a file of the directory shown below the
    /// listing (`enable` is `README.txt`).
    pub show_readme: Option<String>,
    /// `dir-listing.show-header`: a file shown above the listing
    /// (`enable` is `HEADER.txt`).
    pub show_header: Option<String>,
    /// `dir-listing.set-footer`: the text at the foot of listings.
    pub set_footer: Option<String>,
    /// `dir-listing.encode-readme` (default enable): the readme is shown
    /// as text, HTML-escaped, rather than as HTML.
    pub encode_readme: bool,
    /// `dir-listing.encode-header` (default enable).
    pub encode_header: bool,
    /// `dir-listing.auto-layout` (default enable): the built-in style and
    /// sorting script when no external one is set.
    pub auto_layout: bool,
}

impl Default for DirListing {
    fn default() -> DirListing {
        DirListing {
            activate: false,
            hide_dotfiles: true,
            exclude: Vec::new(),
            hide_readme_file: false,
            hide_header_file: false,
            encoding: None,
            external_css: None,
            external_js: None,
            show_readme: None,
            show_header: None,
            set_footer: None,
            encode_readme: true,
            encode_header: true,
            auto_layout: true,
        }
    }
}

/// mod_rewrite and mod_redirect: `url.rewrite-*`, `url.redirect*`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// `url.redirect`: regex => target with `$1` / `%1` substitutions.
    pub redirect: Vec<(Pattern, String)>,
    /// `url.redirect-code` (default 301).
    pub redirect_code: u16,
    /// `url.rewrite-once` / `url.rewrite`.
    pub once: Vec<(Pattern, String)>,
    /// `url.rewrite-repeat`.
    pub repeat: Vec<(Pattern, String)>,
    /// `url.rewrite-if-not-file`.
    pub if_not_file: Vec<(Pattern, String)>,
    /// `url.rewrite-repeat-if-not-file`: `url.rewrite-repeat` rules applied
    /// only when the path is not a file.
    pub repeat_if_not_file: Vec<(Pattern, String)>,
}

impl Default for Rewrite {
    fn default() -> Rewrite {
        Rewrite {
            redirect: Vec::new(),
            redirect_code: 301,
            once: Vec::new(),
            repeat: Vec::new(),
            if_not_file: Vec::new(),
            repeat_if_not_file: Vec::new(),
        }
    }
}

/// mod_access: `url.access-deny`, `url.access-allow`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Access {
    /// `url.access-deny`: path suffixes answered with 403 (`""` denies all).
    pub deny: Vec<String>,
    /// `url.access-allow`: when set, only paths with one of these suffixes
    /// are served; every other path is answered 403 (`url.access-deny` is
    /// then not consulted, as in lighttpd).
    pub allow: Vec<String>,
}

/// mod_setenv: `setenv.*`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SetEnv {
    /// `setenv.add-response-header`.
    pub add_response_header: Vec<(String, String)>,
    /// `setenv.set-response-header`.
    pub set_response_header: Vec<(String, String)>,
    /// `setenv.add-request-header`: headers added to the request the
    /// backends see (after one of the same name, joined with ", ").
    pub add_request_header: Vec<(String, String)>,
    /// `setenv.set-request-header`: headers set (replaced; an empty value
    /// removes the header) in the request the backends see.
    pub set_request_header: Vec<(String, String)>,
    /// `setenv.add-environment`: variables added to the backends'
    /// environment (after one of the same name, joined with ", ").
    pub add_environment: Vec<(String, String)>,
    /// `setenv.set-environment`: variables set in the backends' environment.
    pub set_environment: Vec<(String, String)>,
}

/// mod_userdir: `userdir.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct UserDir {
    /// `userdir.path`: the directory below a user's home served for
    /// `/~user/` (unset: mod_userdir does nothing, as lighttpd).
    pub path: Option<String>,
    /// `userdir.basepath`: homes are `basepath/user` (or `basepath/u/user`
    /// with `letterhomes`) instead of the password database's.
    pub basepath: Option<String>,
    /// `userdir.exclude-user`: users never served.
    pub exclude_user: Vec<String>,
    /// `userdir.include-user`: when set, only these users are served.
    pub include_user: Option<Vec<String>>,
    /// `userdir.letterhomes` (default disable).
    pub letterhomes: bool,
    /// `userdir.active` (default enable, as lighttpd).
    pub active: bool,
}

impl Default for UserDir {
    fn default() -> UserDir {
        UserDir {
            path: None,
            basepath: None,
            exclude_user: Vec::new(),
            include_user: None,
            letterhomes: false,
            active: true,
        }
    }
}

/// mod_simple_vhost: `simple-vhost.*`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimpleVhost {
    /// `simple-vhost.server-root`.
    pub server_root: Option<String>,
    /// `simple-vhost.default-host`.
    pub default_host: Option<String>,
    /// `simple-vhost.document-root`.
    pub document_root: Option<String>,
}

/// mod_ssi: `ssi.*`, with lighttpd 1.4.69's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Ssi {
    /// `ssi.extension`: suffixes of the files parsed for directives
    /// (none: the module is off).
    pub extension: Vec<String>,
    /// `ssi.content-type` (unset or blank: `text/html`).
    pub content_type: Option<String>,
    /// `ssi.conditional-requests`: ETag and Last-Modified from the newest
    /// of the page and its includes, and 304 answers (default disable).
    pub conditional_requests: bool,
    /// `ssi.exec`: `<!--#exec cmd=... -->` runs (lighttpd 1.4.69's default:
    /// enable).
    pub exec: bool,
    /// `ssi.recursion-max`: how deep `#include virtual` pages are parsed
    /// in turn (default 0: included as they are).
    pub recursion_max: u16,
}

impl Default for Ssi {
    fn default() -> Ssi {
        Ssi {
            extension: Vec::new(),
            content_type: None,
            conditional_requests: false,
            exec: true,
            recursion_max: 0,
        }
    }
}

/// mod_status: `status.*`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Status {
    /// `status.status-url`.
    pub status_url: Option<String>,
    /// `status.statistics-url`.
    pub statistics_url: Option<String>,
    /// `status.config-url`.
    pub config_url: Option<String>,
    /// `status.enable-sort` set to disable: the connection table's
    /// headers do not sort it.
    pub no_sort: bool,
    /// glint's `glint.metrics-url`: the counters in the Prometheus text
    /// format (docs/mod_status.md).
    pub metrics_url: Option<String>,
}

/// mod_expire: `expire.*`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expire {
    /// `expire.url`: URL prefix => "access plus 1 hours" style rule.
    pub url: Vec<(String, String)>,
    /// `expire.mimetypes`: MIME type prefix => rule.
    pub mimetypes: Vec<(String, String)>,
}

/// mod_staticfile and the ETag: `static-file.*`, `etag.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticFile {
    /// `static-file.exclude-extensions`: suffixes never served as static files.
    pub exclude_extensions: Vec<String>,
    /// `static-file.etags` (default enable).
    pub etags: bool,
    /// `etag.use-inode` (default enable).
    pub use_inode: bool,
    /// `etag.use-mtime` (default enable).
    pub use_mtime: bool,
    /// `etag.use-size` (default enable).
    pub use_size: bool,
    /// `mimetype.use-xattr` (default disable): a regular file's type is
    /// its extended attribute [`StaticFile::xattr_name`] when it has one.
    pub use_xattr: bool,
    /// `mimetype.xattr-name` (global; default `Content-Type`): the
    /// attribute's name as the system call takes it (Linux wants the
    /// namespace in it: `user.Content-Type`).
    pub xattr_name: String,
}

impl Default for StaticFile {
    fn default() -> StaticFile {
        StaticFile {
            exclude_extensions: Vec::new(),
            etags: true,
            use_inode: true,
            use_mtime: true,
            use_size: true,
            use_xattr: false,
            // lighttpd's default.
            xattr_name: "Content-Type".to_string(),
        }
    }
}

/// mod_auth: `auth.*`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Auth {
    /// `auth.backend`: `plain`, `htpasswd`, `htdigest`, `ldap`, `pam`, `sasl`, `dbi` or `gssapi` (default unset:
    /// a rule that needs a password answers 500, as lighttpd).
    pub backend: Option<String>,
    /// `auth.backend.plain.userfile`: `user:password` lines.
    pub plain_userfile: Option<String>,
    /// `auth.backend.plain.groupfile`: accepted and never read, as lighttpd
    /// 1.4.69 (no file backend reports groups).
    pub plain_groupfile: Option<String>,
    /// `auth.backend.htpasswd.userfile`: `user:hash` lines.
    pub htpasswd_userfile: Option<String>,
    /// `auth.backend.htdigest.userfile`: `user:realm:HA1` lines.
    pub htdigest_userfile: Option<String>,
    /// `auth.require`: the array as written (checked at load); its parsed
    /// rules are [`crate::config::Config::auth_rules`].
    pub require: Option<Value>,
    /// Which of [`crate::config::Config::auth_requires`] `auth_require` is.
    pub scope: u32,
    /// `auth.cache = ( "max-age" => "600" )`: seconds a right Basic
    /// password is remembered (default unset: no cache).
    pub cache_max_age: Option<i64>,
    /// `auth.extern-authn` (default disable): a `REMOTE_USER` set before
    /// mod_auth (by extforward's `remote_user`) that the rule allows lets
    /// the request through.
    pub extern_authn: bool,
    /// mod_authn_ldap's `auth.backend.ldap.*`.
    pub ldap: crate::authn::ldap_check::LdapOptions,
    /// mod_authn_pam's `auth.backend.pam.opts`: `"service"` (lighttpd
    /// reads no other key).
    pub pam_opts: Option<Vec<(String, String)>>,
    /// mod_authn_sasl's `auth.backend.sasl.opts` (`service`, `fqdn`,
    /// `pwcheck_method`, `sasldb_path`).
    pub sasl_opts: Option<Vec<(String, String)>>,
    /// mod_authn_dbi's `auth.backend.dbi` as written (for `-p`).
    pub dbi: Option<crate::config::Value>,
    /// The same, read when the configuration is loaded
    /// ([`crate::config::dbi::parse`]); None when it lacks `sql`,
    /// `dbname` or `dbtype` (every login under it is refused then).
    pub dbi_spec: Option<std::sync::Arc<crate::authn::dbi::DbiSpec>>,
    /// mod_authn_gssapi's `auth.backend.gssapi.keytab`, `.principal` and
    /// `.store-creds`.
    pub gssapi: crate::authn::gssapi::GssOptions,
    /// `server.feature-flags` `"auth.delay-invalid-creds" => "disable"`:
    /// a refused login is answered at once. By default (false here) its
    /// 401 is held back for a second, as lighttpd holds it, so that each
    /// guess costs the guesser a second and a new connection.
    pub undelayed_invalid_creds: bool,
}

/// mod_accesslog's options.
#[derive(Debug, Clone, PartialEq)]
pub struct Accesslog {
    /// `accesslog.filename`: a file, or `|command` for a pipe (default: no access log).
    pub filename: Option<String>,
    /// `accesslog.format` (default lighttpd's `%h %V %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"`).
    pub format: Option<String>,
    /// `accesslog.escaping`: "json" writes client bytes as JSON string
    /// escapes; anything else is lighttpd's default `\\xHH` form.
    pub escaping_json: bool,
    /// `accesslog.use-syslog` (default disable): lines go to the system
    /// log instead of `accesslog.filename`.
    pub use_syslog: bool,
    /// `accesslog.syslog-level` (default 6, info): their severity.
    pub syslog_level: u8,
}

impl Default for Accesslog {
    fn default() -> Self {
        Accesslog {
            filename: None,
            format: None,
            escaping_json: false,
            use_syslog: false,
            syslog_level: 6,
        }
    }
}

/// mod_extforward's options as they were set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtforwardOptions {
    /// `extforward.forwarder`: address (or network, or `all`) => `trust` /
    /// `untrusted` (default: nobody is trusted; the module does nothing).
    pub forwarder: Vec<(String, String)>,
    /// `extforward.headers` (default `X-Forwarded-For`, `Forwarded-For`;
    /// none with the PROXY protocol).
    pub headers: Option<Vec<String>>,
    /// `extforward.params`: `host`, `remote_user` => enable/disable.
    pub params: Vec<(String, String)>,
    /// `extforward.hap-PROXY` (default disable).
    pub hap_proxy: bool,
    /// `extforward.hap-PROXY-ssl-client-verify` (default disable).
    pub hap_proxy_ssl_client_verify: bool,
}

/// How the listeners of a `$SERVER["socket"]` scope are made.
#[derive(Debug, Clone, PartialEq)]
pub struct Listener {
    /// `server.port` (default 80).
    pub port: u16,
    /// `server.bind`: address, host name or unix socket path (default: all addresses).
    pub bind: Option<String>,
    /// `server.listen-backlog` (default 1024): `listen(2)` backlog of each listener.
    pub listen_backlog: u32,
    /// `server.use-ipv6` (default disable): `server.bind` unset listens on `[::]`.
    pub use_ipv6: bool,
    /// `server.set-v6only` (default enable): IPv6 listeners take IPv6 only.
    pub set_v6only: bool,
    /// `server.v4mapped` (default unset): when set, IPv6 listeners take
    /// IPv4 clients as mapped addresses (enable) or not (disable), over
    /// `server.set-v6only`.
    pub v4mapped: Option<bool>,
    /// `server.socket-perms`: octal mode of unix socket listeners (e.g. "0660").
    pub socket_perms: Option<u32>,
    /// `server.defer-accept` (default disable, as lighttpd): TCP_DEFER_ACCEPT
    /// on the listeners of this scope.
    pub defer_accept: bool,
}

impl Default for Listener {
    fn default() -> Self {
        Listener {
            port: 80,
            bind: None,
            listen_backlog: 1024,
            use_ipv6: false,
            set_v6only: true,
            v4mapped: None,
            socket_perms: None,
            defer_accept: false,
        }
    }
}

/// The process's options (global only; a reload keeps the values glint
/// started with and says so).
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    /// `server.username`.
    pub username: Option<String>,
    /// `server.groupname`.
    pub groupname: Option<String>,
    /// `server.chroot`.
    pub chroot: Option<String>,
    /// `server.pid-file`.
    pub pid_file: Option<String>,
    /// `server.max-worker` (default 0: one process).
    pub max_worker: u32,
    /// `server.graceful-shutdown-timeout` in seconds (default 8).
    pub graceful_shutdown_timeout: u32,
    /// `server.systemd-socket-activation` (default disable).
    pub systemd_socket_activation: bool,
}

impl Default for Process {
    fn default() -> Self {
        Process {
            username: None,
            groupname: None,
            chroot: None,
            pid_file: None,
            max_worker: 0,
            graceful_shutdown_timeout: 8,
            systemd_socket_activation: false,
        }
    }
}

/// mod_openssl's options beside the certificates (`ssl.engine`, `ssl.cipher-list`, `ssl.openssl.ssl-conf-cmd`, `ssl.honor-cipher-order`, `ssl.stek-file`, `ssl.refresh-certs`, the session cache flag).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsSettings {
    /// `ssl.engine` (default disable): TLS on the sockets of this scope.
    pub engine: bool,
    /// `ssl.cipher-list` (per socket).
    pub cipher_list: Option<String>,
    /// `ssl.openssl.ssl-conf-cmd` (per socket), in configuration order.
    pub conf_cmd: Vec<(String, String)>,
    /// `ssl.honor-cipher-order` (per socket).
    pub honor_cipher_order: Option<bool>,
    /// `ssl.stek-file`: session-ticket keys an outside job maintains (global).
    pub stek_file: Option<String>,
    /// `server.feature-flags` `"ssl.session-cache"`: a server-side session
    /// cache beside tickets (default off).
    pub session_cache: bool,
    /// `ssl.refresh-certs` (lighttpd 1.4.78's option; glint's default:
    /// enable): certificate and key files are read again when their mtime
    /// changes (checked every second, read once settled for a second), so
    /// that certbot's or dehydrated's renewals need no hook (global).
    pub refresh_certs: bool,
}

impl Default for TlsSettings {
    fn default() -> TlsSettings {
        TlsSettings {
            engine: false,
            cipher_list: None,
            conf_cmd: Vec::new(),
            honor_cipher_order: None,
            stek_file: None,
            session_cache: false,
            refresh_certs: true,
        }
    }
}

/// mod_magnet: `magnet.*`, the Lua scripts run at three points of a request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Magnet {
    /// `magnet.attract-raw-url-to`: run once the URL is parsed and rewritten.
    pub raw_url: Vec<String>,
    /// `magnet.attract-physical-path-to`: run once the file system path is known.
    pub physical_path: Vec<String>,
    /// `magnet.attract-response-start-to`: run when the response head is ready.
    pub response_start: Vec<String>,
    /// `magnet.cache-timeout` (seconds; lighttpd before 1.4.69): accepted;
    /// a script is checked for changes on every run whatever it says.
    pub cache_timeout: Option<u32>,
}

impl Magnet {
    /// No script at any point: the request never touches Lua.
    pub fn is_empty(&self) -> bool {
        self.raw_url.is_empty() && self.physical_path.is_empty() && self.response_start.is_empty()
    }
}
