//! The typed settings of one scope, named after lighttpd's options.
//!
//! Every field documents the lighttpd option it carries and its default. The
//! command line and the configuration file both fill this one struct; a
//! conditional block (`$HTTP["host"] == ... { }`) produces a copy of its
//! parent's settings with the block's assignments applied.

use super::limits::Limits;
use super::modules::{
    Access, Accesslog, Auth, DirListing, Expire, ExtforwardOptions, Listener, Magnet, Process,
    Rewrite, SetEnv, SimpleVhost, Ssi, StaticFile, Status, TlsSettings, UserDir,
};
use super::server_options::{ErrorLog, ErrorPages, FileOptions, Identity, PathMapping, Protocols};
use super::value::Value;
use crate::compress::DeflateSpec;
use crate::forwarded::options::ExtForward;
use crate::httpup::options::ProxyOptions;
use std::path::PathBuf;
use std::rc::Rc;

/// A number unique to each [`Settings`] value this process made (built,
/// cloned, defaulted): caches key their entries by it, never by an
/// address, which a later configuration's settings may reuse after a
/// reload. It takes no part in comparing settings.
#[derive(Debug)]
pub struct Stamp(u64);

impl Stamp {
    fn fresh() -> Stamp {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Stamp(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    pub fn get(&self) -> u64 {
        self.0
    }
}

impl Clone for Stamp {
    /// A copy of settings is another value: it may be changed apart.
    fn clone(&self) -> Stamp {
        Stamp::fresh()
    }
}

impl Default for Stamp {
    fn default() -> Stamp {
        Stamp::fresh()
    }
}

impl PartialEq for Stamp {
    fn eq(&self, _: &Stamp) -> bool {
        true
    }
}

/// The settings in force for one request (or, before any request, the
/// global scope). Each group's `Default` holds lighttpd's defaults.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// What caches key their entries by (see [`Stamp`]).
    pub stamp: Stamp,
    /// Where a request's files are: `server.document-root` (and where it was
    /// set), `evhost.path-pattern`, `alias.url`.
    pub paths: PathMapping,
    /// The connection limits and time-outs: `server.max-*`,
    /// `connection.kbytes-per-second`, `server.kbytes-per-second`.
    pub limits: Limits,
    /// How glint names itself and its host in answers: `server.tag`,
    /// `server.name`, `server.feature-flags` `"server.absolute-dir-redirect"`.
    pub identity: Identity,
    /// The error log: `server.errorlog`, `server.errorlog-use-syslog`,
    /// `server.syslog-facility`.
    pub error_log: ErrorLog,
    /// `server.modules`.
    pub modules: Vec<String>,
    /// How files are found and sent: `server.follow-symlink`,
    /// `server.range-requests`, `server.force-lowercase-filenames`,
    /// `index-file.names`, `mimetype.assign`.
    pub files: FileOptions,
    /// glint's own error answers: `server.errorfile-prefix`,
    /// `server.error-handler`, `server.error-handler-404`, `server.error-intercept`.
    pub errors: ErrorPages,
    /// mod_dirlisting: `dir-listing.*`.
    pub dir_listing: DirListing,
    /// mod_staticfile and the ETag: `static-file.*`, `etag.*`.
    pub static_file: StaticFile,
    /// mod_accesslog: `accesslog.*`.
    pub accesslog: Accesslog,
    /// mod_access: `url.access-deny`, `url.access-allow`.
    pub access: Access,
    /// Where and how the listeners of this scope are made (`server.port`,
    /// `server.bind`, `server.listen-backlog`, ...).
    pub listener: Listener,
    /// mod_openssl's options beside the certificates (`ssl.engine`, `ssl.cipher-list`, `ssl.openssl.ssl-conf-cmd`, `ssl.honor-cipher-order`, `ssl.stek-file`, `ssl.refresh-certs`, the session cache flag).
    pub tls: TlsSettings,
    /// The HTTP versions offered: `server.protocol-http11`, `server.h2proto`,
    /// `server.h2c`, `glint.h3`.
    pub protocols: Protocols,
    /// The `ssl.*` options of a connection scope (certificate, key, CAs,
    /// client certificates, OCSP, ACME), `None` where unset.
    pub ssl: crate::tls::ScopeOptions,
    /// mod_setenv: `setenv.*`.
    pub setenv: SetEnv,
    /// mod_expire: `expire.*`.
    pub expire: Expire,
    /// mod_magnet: `magnet.*`.
    pub magnet: Magnet,
    /// mod_rewrite and mod_redirect: `url.rewrite-*`, `url.redirect*`.
    pub rewrite: Rewrite,
    /// mod_simple_vhost: `simple-vhost.*`.
    pub simple_vhost: SimpleVhost,
    /// mod_ssi: `ssi.*`.
    pub ssi: Ssi,
    /// The process: user, chroot, pid file, workers (global only).
    pub process: Process,
    /// mod_status: `status.*`.
    pub status: Status,
    /// mod_auth: `auth.*`.
    pub auth: Auth,
    /// The `extforward.*` options as they were set (for `-p`, and to
    /// make [`Settings::extforward`] from).
    pub extforward_options: ExtforwardOptions,
    /// The five `extforward.*` options parsed together, when a forwarder
    /// is trusted (derived once per scope by `options::finish`).
    pub extforward: Option<Rc<ExtForward>>,
    /// mod_userdir: `userdir.*`.
    pub userdir: UserDir,
    /// Options glint keeps for later work without a typed field
    /// (`scgi.protocol`, `fastcgi.balance`, ...), in the order they were set.
    pub raw: Vec<(String, Value)>,
    /// mod_deflate's `deflate.*` options, mod_compress's `compress.*` names
    /// for them, `deflate.sync-flush` and `glint.static-precompressed`,
    /// resolved (see [`crate::compress::spec`]); shared, as most scopes
    /// never change them. Off by default: `deflate.mimetypes` is empty.
    pub deflate: Rc<DeflateSpec>,
    /// Those options as they were set, in order, for `-p`.
    pub deflate_options: Vec<(String, Value)>,
    /// `proxy.forwarded`, `proxy.header`, `proxy.replace-http-host`: how a
    /// request goes upstream (shared: most scopes never change them).
    pub proxy: Rc<ProxyOptions>,
    /// The `cgi.*` options (shared for the same reason).
    pub cgi: Rc<CgiSettings>,
    /// glint's `glint.acme.*` options (global).
    pub acme: Rc<super::options::acme::AcmeSettings>,
    /// mod_webdav's `webdav.*` options (shared for the same reason).
    pub webdav: Rc<super::webdav::WebdavSettings>,
    /// mod_vhostdb's `vhostdb.*` options.
    pub vhostdb: Rc<super::vhostdb::VhostDbSettings>,
    /// `scgi.server`, `fastcgi.server`, `proxy.server`: the arrays and
    /// which scope's each is.
    pub backends: super::gateway::Backends,
    /// `*.balance` and `scgi.protocol`.
    pub gateway: super::gateway::GatewaySettings,
    /// mod_sockproxy's and mod_wstunnel's options (shared: most scopes
    /// never change them).
    pub tunnel: Rc<super::tunnel::TunnelSettings>,
    /// `rrdtool.db-name`: the round-robin database this scope's requests
    /// are counted in (mod_rrdtool; none by default).
    pub rrdtool_db: Option<String>,
    /// mod_maxminddb: `maxminddb.*` and the open database.
    pub maxminddb: super::maxminddb::GeoSettings,
}

/// mod_cgi's options of one scope.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CgiSettings {
    /// `cgi.assign`: (suffix of the file's path, interpreter; "" runs the
    /// file itself), in order; the first suffix that matches wins.
    pub assign: Vec<(String, String)>,
    /// `cgi.execute-x-only` (default disable): only files with an execute bit run.
    pub execute_x_only: bool,
    /// `cgi.x-sendfile` (default disable) and `cgi.x-sendfile-docroot`.
    pub x_sendfile: bool,
    pub x_sendfile_docroot: Vec<String>,
    /// `cgi.local-redir` (default disable, as lighttpd): a `Location: /path`
    /// answer alone is served by glint itself.
    pub local_redir: bool,
    /// `cgi.upgrade` (default disable): a script may answer an `Upgrade`
    /// request with 101 and then talk to the client both ways.
    pub upgrade: bool,
    /// `cgi.limits`.
    pub limits: CgiLimits,
}

/// `cgi.limits = ( "read-timeout" => s, "write-timeout" => s,
/// "tcp-fin-propagate" => "SIGTERM", "max-procs" => n )`. 0 means none for
/// the time-outs (lighttpd's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgiLimits {
    pub read_timeout: u32,
    pub write_timeout: u32,
    /// The signal sent to the script when the client half-closes (0: none).
    pub fin_signal: i32,
    /// glint's own `max-procs`: most CGI processes running at once
    /// (global scope only); more requests wait in the gateways' queue.
    pub max_procs: u32,
}

/// CGI processes at once unless `cgi.limits` says otherwise: each is a
/// process (a Python one starts at about 10 MB) and three pipes; 32 keep
/// a 2-core machine busy with CPU-bound scripts and leave room for slow
/// ones, while a burst of 1000 requests queues instead of forking 1000.
pub const CGI_MAX_PROCS: u32 = 32;

impl Default for CgiLimits {
    fn default() -> Self {
        CgiLimits {
            read_timeout: 0,
            write_timeout: 0,
            fin_signal: 0,
            max_procs: CGI_MAX_PROCS,
        }
    }
}

/// lighttpd's default access log format.
pub const DEFAULT_ACCESSLOG_FORMAT: &str =
    "%h %V %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"";

impl Settings {
    /// Stores an option in [`Settings::raw`], replacing an earlier value.
    pub fn keep_raw(&mut self, k: &str, v: &Value) {
        if let Some(slot) = self.raw.iter_mut().find(|(rk, _)| rk == k) {
            slot.1 = v.clone();
        } else {
            self.raw.push((k.to_string(), v.clone()));
        }
    }

    /// Sets `server.document-root` and its UTF-8 form.
    pub fn set_document_root(&mut self, root: Option<PathBuf>) {
        self.paths.document_root_utf8 = root.as_deref().and_then(|p| p.to_str()).map(String::from);
        self.paths.document_root = root;
    }

    /// The document root as a `&str` (None when unset or not UTF-8).
    /// Checking the path's UTF-8 on every request cost 90 to 200
    /// instructions of the 8,100 of a keep-alive request (callgrind), so
    /// the setter keeps it converted; a root set otherwise is converted here.
    pub fn docroot_str(&self) -> Option<&str> {
        match &self.paths.document_root_utf8 {
            Some(s) => Some(s),
            None => self.paths.document_root.as_deref().and_then(|p| p.to_str()),
        }
    }
}
