//! lighttpd option names mapped onto [`Settings`] fields, and back for `-p`.

pub mod acme;
mod authn;
mod cgi;
mod entries;
pub(super) mod tls_lines;
mod values;
mod webdav;

use super::limits::ScopeRate;
use super::origin::Origin;
use super::settings::Settings;
use super::value::Value;
use crate::authn::require::{parse_backend, parse_require, BackendKind, Method};
use crate::forwarded::options::{parse_headers, parse_params, ExtForward, Trust};
use cgi::cgi_limits;
pub use entries::entries;
use std::path::PathBuf;
use std::rc::Rc;
use values::{
    alias_url, array, auth_cache, boolean, borrowed_pairs, deflate_value, feature_flag,
    header_pairs, integer, list, nonblank, octal_mode, pairs, regex_list, regex_pairs, shown_file,
    string, text_pairs, uint16, uint32,
};
pub use values::{auth_require_entries, conf_value};

/// The modules glint provides; `server.modules` naming another yields a warning.
pub const PROVIDED_MODULES: &[&str] = &[
    "mod_indexfile",
    "mod_staticfile",
    "mod_dirlisting",
    "mod_access",
    "mod_accesslog",
    "mod_setenv",
    "mod_expire",
    "mod_redirect",
    "mod_rewrite",
    "mod_simple_vhost",
    "mod_status",
    "mod_scgi",
    "mod_fastcgi",
    "mod_deflate",
    // lighttpd 1.4.69 loads mod_deflate in its place (configfile.c,
    // config_deprecate_module_compress()); its `compress.*` names are
    // mod_deflate's options under their old names.
    "mod_compress",
    "mod_auth",
    "mod_authn_file",
    "mod_authn_ldap",
    "mod_authn_pam",
    "mod_authn_sasl",
    "mod_authn_dbi",
    "mod_authn_gssapi",
    "mod_extforward",
    "mod_alias",
    "mod_userdir",
    "mod_evhost",
    "mod_proxy",
    "mod_cgi",
    "mod_openssl",
    // lighttpd's other TLS modules: the same `ssl.*` options, each read as
    // that module reads them (src/tls/modules.rs).
    "mod_gnutls",
    "mod_mbedtls",
    "mod_wolfssl",
    "mod_nss",
    "mod_webdav",
    "mod_ssi",
    "mod_magnet",
    "mod_sockproxy",
    "mod_wstunnel",
    "mod_rrdtool",
    "mod_maxminddb",
    "mod_ajp13",
    "mod_vhostdb",
    "mod_vhostdb_dbi",
    "mod_vhostdb_pgsql",
    "mod_vhostdb_mysql",
    "mod_vhostdb_ldap",
];

/// Options glint parses and keeps in [`Settings::raw`] for later work.
pub const KEPT_OPTIONS: &[&str] = &[
    "scgi.protocol",
    "scgi.balance",
    "scgi.debug",
    "scgi.map-extensions",
    "fastcgi.balance",
    "fastcgi.debug",
    "fastcgi.map-extensions",
    "proxy.map-extensions",
    "sockproxy.balance",
    "wstunnel.balance",
    "rrdtool.binary",
    "wstunnel.map-extensions",
    "ajp13.balance",
    "ajp13.debug",
    "ajp13.map-extensions",
];

/// Options that only mean something in the global scope; in a conditional
/// block they are ignored with a warning.
pub const GLOBAL_ONLY: &[&str] = &[
    "server.port",
    "server.bind",
    "server.modules",
    "server.errorlog",
    "server.username",
    "server.groupname",
    "server.chroot",
    "server.pid-file",
    "server.max-fds",
    "server.max-connections",
    "server.max-worker",
    "server.graceful-shutdown-timeout",
    "server.systemd-socket-activation",
    "mimetype.xattr-name",
    "rrdtool.binary",
    "ssl.refresh-certs",
    "glint.acme.activate",
    "glint.acme.directory",
    "glint.acme.contact",
    "glint.acme.agree-tos",
    "glint.acme.names",
    "glint.acme.key-type",
    "glint.acme.storage",
    "glint.acme.challenges",
    "glint.acme.ca-file",
];

/// What applying an option did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Stored in a typed field or in [`Settings::raw`].
    Known,
    /// glint does not know the option: the caller warns and ignores it.
    Unknown,
    /// Stored, with a note to log (lighttpd's "DEPRECATED: compress.x
    /// replaced with deflate.y").
    KnownWarn(String),
}

/// Computes what is derived from several options at once, once per scope
/// (the global one, and each combination of conditional blocks): the
/// `extforward.*` options parsed together. [`apply`] checked each of them
/// with the same parsers, and no pair of valid values is invalid together,
/// so the combination cannot fail here.
pub fn finish(s: &mut Settings) {
    s.extforward = combined_extforward(s).ok().flatten().map(Rc::new);
}

/// The `extforward.*` options of `s` together: `None` when nobody is trusted.
fn combined_extforward(s: &Settings) -> Result<Option<ExtForward>, String> {
    let trust = Trust::parse(&borrowed_pairs(&s.extforward_options.forwarder))?;
    if trust.is_empty() {
        return Ok(None);
    }
    let headers: Option<Vec<&str>> = s
        .extforward_options
        .headers
        .as_ref()
        .map(|h| h.iter().map(String::as_str).collect());
    let xf = ExtForward::parse(
        &borrowed_pairs(&s.extforward_options.forwarder),
        headers.as_deref(),
        &borrowed_pairs(&s.extforward_options.params),
        s.extforward_options.hap_proxy,
        s.extforward_options.hap_proxy_ssl_client_verify,
    )?;
    Ok(Some(xf))
}

/// Sets option `key` to `v` in `s`. An error is a message about the value.
///
/// The groups below are runs of one `match` in lighttpd's order of
/// modules; each answers `None` for a key that is not its own. They are
/// asked in that order, so a key that a literal arm and a guard both take
/// (`proxy.map-extensions` is also in [`KEPT_OPTIONS`]) goes to the arm.
pub fn apply(s: &mut Settings, key: &str, v: &Value, origin: &Origin) -> Result<Applied, String> {
    if let Some(a) = apply_server(s, key, v, origin)? {
        return Ok(a);
    }
    if key.starts_with("ssl.") {
        return apply_ssl(s, key, v);
    }
    if let Some(a) = apply_modules(s, key, v)? {
        return Ok(a);
    }
    if let Some(a) = apply_auth_forward(s, key, v)? {
        return Ok(a);
    }
    if authn::apply(s, key, v)? {
        return Ok(Applied::Known);
    }
    if let Some(a) = apply_proxy_cgi(s, key, v)? {
        return Ok(a);
    }
    if let Some(a) = apply_geo_core(s, key, v)? {
        return Ok(a);
    }
    Ok(apply_kept(s, key, v)?.unwrap_or(Applied::Unknown))
}

/// The core's `server.*` options and those of the static-file modules.
fn apply_server(
    s: &mut Settings,
    key: &str,
    v: &Value,
    origin: &Origin,
) -> Result<Option<Applied>, String> {
    match key {
        "server.document-root" => {
            s.set_document_root(Some(PathBuf::from(string(v)?)));
            s.paths.document_root_origin = Some(origin.clone());
        }
        "server.port" => s.listener.port = uint16(v)?,
        "server.bind" => s.listener.bind = Some(string(v)?),
        "server.tag" => s.identity.tag = string(v)?,
        "server.name" => s.identity.server_name = Some(string(v)?),
        "server.errorlog" => s.error_log.file = Some(string(v)?),
        "server.modules" => s.modules = list(v)?,
        "server.max-keep-alive-requests" => s.limits.max_keep_alive_requests = uint32(v)?,
        "server.max-keep-alive-idle" => s.limits.max_keep_alive_idle = uint32(v)?,
        "server.max-read-idle" => s.limits.max_read_idle = uint32(v)?,
        "server.max-write-idle" => s.limits.max_write_idle = uint32(v)?,
        "server.max-connections" => s.limits.max_connections = uint32(v)?,
        "server.max-fds" => s.limits.max_fds = uint32(v)?,
        "server.max-request-size" => s.limits.max_request_size_kb = integer(v, u64::MAX)?,
        "server.max-request-field-size" => s.limits.max_request_field_size = uint32(v)?,
        "server.follow-symlink" => s.files.follow_symlink = boolean(v)?,
        "server.range-requests" => s.files.range_requests = boolean(v)?,
        "server.errorfile-prefix" => s.errors.errorfile_prefix = Some(string(v)?),
        "server.error-handler-404" => s.errors.error_handler_404 = Some(string(v)?),
        "server.dir-listing" | "dir-listing.activate" => s.dir_listing.activate = boolean(v)?,
        "dir-listing.hide-dotfiles" => s.dir_listing.hide_dotfiles = boolean(v)?,
        "index-file.names" | "server.indexfiles" => s.files.index_file_names = list(v)?,
        "mimetype.assign" => s.files.mimetype_assign = pairs(v)?,
        "static-file.exclude-extensions" => s.static_file.exclude_extensions = list(v)?,
        "static-file.etags" => s.static_file.etags = boolean(v)?,
        "etag.use-inode" => s.static_file.use_inode = boolean(v)?,
        "etag.use-mtime" => s.static_file.use_mtime = boolean(v)?,
        "etag.use-size" => s.static_file.use_size = boolean(v)?,
        "accesslog.filename" => s.accesslog.filename = Some(string(v)?),
        "accesslog.format" => s.accesslog.format = Some(string(v)?),
        "accesslog.escaping" => s.accesslog.escaping_json = string(v)? == "json",
        "accesslog.use-syslog" => s.accesslog.use_syslog = boolean(v)?,
        "accesslog.syslog-level" => s.accesslog.syslog_level = integer(v, 7)? as u8,
        "server.errorlog-use-syslog" => s.error_log.use_syslog = boolean(v)?,
        "server.syslog-facility" => s.error_log.syslog_facility = Some(string(v)?),
        "url.access-deny" => s.access.deny = list(v)?,
        "url.access-allow" => s.access.allow = list(v)?,
        "server.force-lowercase-filenames" => s.files.force_lowercase_filenames = boolean(v)?,
        "server.error-handler" => s.errors.error_handler = Some(string(v)?),
        "server.error-intercept" => s.errors.error_intercept = boolean(v)?,
        "connection.kbytes-per-second" => {
            s.limits.conn_bytes_per_second = u64::from(uint16(v)?) << 10;
        }
        "server.kbytes-per-second" => s.limits.scope_rate = ScopeRate::assigned(uint16(v)?, origin),
        "dir-listing.exclude" => s.dir_listing.exclude = regex_list(v)?,
        "dir-listing.hide-readme-file" => s.dir_listing.hide_readme_file = boolean(v)?,
        "dir-listing.hide-header-file" => s.dir_listing.hide_header_file = boolean(v)?,
        "server.listen-backlog" => {
            s.listener.listen_backlog = match integer(v, i32::MAX as u64)? {
                0 => return Err("must be at least 1".into()),
                n => n as u32,
            }
        }
        "server.h2proto" => s.protocols.h2proto = boolean(v)?,
        "server.h2c" => s.protocols.h2c = boolean(v)?,
        "server.use-ipv6" => s.listener.use_ipv6 = boolean(v)?,
        "server.set-v6only" => s.listener.set_v6only = boolean(v)?,
        "server.v4mapped" => s.listener.v4mapped = Some(boolean(v)?),
        "server.socket-perms" => s.listener.socket_perms = Some(octal_mode(v)?),
        "server.defer-accept" => s.listener.defer_accept = boolean(v)?,
        "glint.h3" => s.protocols.h3 = boolean(v)?,
        // (Blank: no database, as lighttpd takes it.)
        "rrdtool.db-name" => s.rrdtool_db = Some(string(v)?).filter(|d| !d.trim().is_empty()),
        _ => return Ok(None),
    }
    Ok(Some(Applied::Known))
}

/// Feature flags, headers, expiry, redirects and rewrites, virtual hosts,
/// the daemon's options, mod_status and the SCGI/FastCGI tables.
fn apply_modules(s: &mut Settings, key: &str, v: &Value) -> Result<Option<Applied>, String> {
    match key {
        "server.feature-flags" => {
            super::support::feature_flags(v)?;
            s.tls.session_cache = feature_flag(v, "ssl.session-cache")?.unwrap_or(false);
            if let Some(on) = feature_flag(v, "server.h2proto")? {
                s.protocols.h2proto = on;
            }
            if let Some(on) = feature_flag(v, "server.h2c")? {
                s.protocols.h2c = on;
            }
            s.identity.absolute_dir_redirect =
                feature_flag(v, "server.absolute-dir-redirect")?.unwrap_or(false);
            s.auth.undelayed_invalid_creds =
                !feature_flag(v, "auth.delay-invalid-creds")?.unwrap_or(true);
            s.keep_raw(key, v);
        }
        "setenv.add-response-header" => s.setenv.add_response_header = pairs(v)?,
        "setenv.set-response-header" => s.setenv.set_response_header = pairs(v)?,
        "expire.url" => s.expire.url = pairs(v)?,
        "expire.mimetypes" => s.expire.mimetypes = pairs(v)?,
        "magnet.attract-raw-url-to" => s.magnet.raw_url = list(v)?,
        "magnet.attract-physical-path-to" => s.magnet.physical_path = list(v)?,
        "magnet.attract-response-start-to" => s.magnet.response_start = list(v)?,
        "magnet.cache-timeout" => s.magnet.cache_timeout = Some(uint32(v)?),
        "url.redirect" => s.rewrite.redirect = regex_pairs(v)?,
        "url.redirect-code" => s.rewrite.redirect_code = uint16(v)?,
        "url.rewrite-once" | "url.rewrite" | "url.rewrite-final" => {
            s.rewrite.once = regex_pairs(v)?
        }
        "url.rewrite-repeat-if-not-file" => s.rewrite.repeat_if_not_file = regex_pairs(v)?,
        "url.rewrite-repeat" => s.rewrite.repeat = regex_pairs(v)?,
        "url.rewrite-if-not-file" => s.rewrite.if_not_file = regex_pairs(v)?,
        "simple-vhost.server-root" => s.simple_vhost.server_root = Some(string(v)?),
        "simple-vhost.default-host" => s.simple_vhost.default_host = Some(string(v)?),
        "simple-vhost.document-root" => s.simple_vhost.document_root = Some(string(v)?),
        "ssi.extension" => s.ssi.extension = list(v)?,
        "ssi.content-type" => s.ssi.content_type = nonblank(v)?,
        "ssi.conditional-requests" => s.ssi.conditional_requests = boolean(v)?,
        "ssi.exec" => s.ssi.exec = boolean(v)?,
        "ssi.recursion-max" => s.ssi.recursion_max = uint16(v)?,
        "server.username" => s.process.username = Some(string(v)?),
        "server.groupname" => s.process.groupname = Some(string(v)?),
        "server.chroot" => s.process.chroot = Some(string(v)?),
        "server.pid-file" => s.process.pid_file = Some(string(v)?),
        "server.max-worker" => s.process.max_worker = uint32(v)?,
        "server.graceful-shutdown-timeout" => s.process.graceful_shutdown_timeout = uint32(v)?,
        "server.systemd-socket-activation" => s.process.systemd_socket_activation = boolean(v)?,
        "status.status-url" => s.status.status_url = Some(string(v)?),
        "status.statistics-url" => s.status.statistics_url = Some(string(v)?),
        "status.config-url" => s.status.config_url = Some(string(v)?),
        "status.enable-sort" => s.status.no_sort = !boolean(v)?,
        "glint.metrics-url" => s.status.metrics_url = Some(string(v)?),
        "scgi.server" => s.backends.scgi_server = Some(array(v)?),
        "fastcgi.server" => s.backends.fastcgi_server = Some(array(v)?),
        "scgi.protocol" => match v {
            Value::Str(p) if p == "scgi" || p == "uwsgi" => {
                s.gateway.set(key, Some(p));
                s.keep_raw(key, v)
            }
            _ => return Err("expects \"scgi\" or \"uwsgi\"".into()),
        },
        _ => return Ok(None),
    }
    Ok(Some(Applied::Known))
}

/// mod_auth, mod_extforward, request headers and environment, mod_alias,
/// mod_userdir, mod_evhost and the rest of mod_dirlisting.
fn apply_auth_forward(s: &mut Settings, key: &str, v: &Value) -> Result<Option<Applied>, String> {
    match key {
        "auth.backend" => {
            let b = string(v)?;
            if parse_backend(&b)? == Some(BackendKind::Gssapi) {
                crate::authn::gssapi::ffi::lib()?;
            }
            s.auth.backend = Some(b);
        }
        "auth.backend.plain.userfile" => s.auth.plain_userfile = Some(string(v)?),
        "auth.backend.plain.groupfile" => s.auth.plain_groupfile = Some(string(v)?),
        "auth.backend.htpasswd.userfile" => s.auth.htpasswd_userfile = Some(string(v)?),
        "auth.backend.htdigest.userfile" => s.auth.htdigest_userfile = Some(string(v)?),
        "auth.require" => {
            // Checked now, for the error's file and line; parsed once per
            // distinct value at the end of loading.
            let (table, _) = parse_require(&auth_require_entries(v)?)?;
            if table.rules.iter().any(|(_, r)| r.method == Method::Gssapi) {
                crate::authn::gssapi::ffi::lib()?;
            }
            s.auth.require = Some(v.clone());
        }
        "auth.cache" => s.auth.cache_max_age = Some(auth_cache(v)?),
        "auth.extern-authn" => s.auth.extern_authn = boolean(v)?,
        "extforward.forwarder" => {
            let p = pairs(v)?;
            Trust::parse(&borrowed_pairs(&p))?;
            s.extforward_options.forwarder = p;
        }
        "extforward.headers" => {
            let l = list(v)?;
            let b: Vec<&str> = l.iter().map(String::as_str).collect();
            parse_headers(Some(&b), false)?;
            s.extforward_options.headers = Some(l);
        }
        "extforward.params" => {
            let p = text_pairs(v)?;
            parse_params(&borrowed_pairs(&p))?;
            s.extforward_options.params = p;
        }
        "setenv.add-request-header" => s.setenv.add_request_header = header_pairs(v)?,
        "setenv.set-request-header" => s.setenv.set_request_header = header_pairs(v)?,
        "setenv.add-environment" => s.setenv.add_environment = pairs(v)?,
        "setenv.set-environment" => s.setenv.set_environment = pairs(v)?,
        "alias.url" => s.paths.alias_url = alias_url(v)?,
        "userdir.path" => s.userdir.path = Some(string(v)?),
        "userdir.basepath" => {
            s.userdir.basepath = Some(string(v)?).filter(|b| !b.trim().is_empty())
        }
        "userdir.exclude-user" => s.userdir.exclude_user = list(v)?,
        "userdir.include-user" => s.userdir.include_user = Some(list(v)?),
        "userdir.letterhomes" => s.userdir.letterhomes = boolean(v)?,
        "userdir.active" => s.userdir.active = boolean(v)?,
        "evhost.path-pattern" => s.paths.evhost_path_pattern = Some(string(v)?),
        "dir-listing.encoding" => s.dir_listing.encoding = nonblank(v)?,
        "dir-listing.external-css" => s.dir_listing.external_css = nonblank(v)?,
        "dir-listing.external-js" => s.dir_listing.external_js = nonblank(v)?,
        "dir-listing.show-readme" => s.dir_listing.show_readme = shown_file(v, "README.txt")?,
        "dir-listing.show-header" => s.dir_listing.show_header = shown_file(v, "HEADER.txt")?,
        "dir-listing.set-footer" => s.dir_listing.set_footer = nonblank(v)?,
        "dir-listing.encode-readme" => s.dir_listing.encode_readme = boolean(v)?,
        "dir-listing.encode-header" => s.dir_listing.encode_header = boolean(v)?,
        "dir-listing.auto-layout" => s.dir_listing.auto_layout = boolean(v)?,
        "extforward.hap-PROXY" => s.extforward_options.hap_proxy = boolean(v)?,
        "extforward.hap-PROXY-ssl-client-verify" => {
            s.extforward_options.hap_proxy_ssl_client_verify = boolean(v)?
        }
        _ => return Ok(None),
    }
    Ok(Some(Applied::Known))
}

/// mod_proxy, mod_cgi and mod_webdav: checked now, kept raw for `-p`.
fn apply_proxy_cgi(s: &mut Settings, key: &str, v: &Value) -> Result<Option<Applied>, String> {
    match key {
        "proxy.server" => {
            // Checked whole now, so that a request never meets a bad one.
            crate::httpup::options::parse_servers(&conf_value(v))?;
            s.backends.proxy_server = Some(array(v)?);
        }
        "proxy.balance" => {
            crate::httpup::options::parse_balance(&conf_value(v))?;
            s.gateway.set(key, v.as_str());
            s.keep_raw(key, v);
        }
        "proxy.forwarded" => {
            Rc::make_mut(&mut s.proxy).forwarded =
                crate::httpup::options::parse_forwarded(&conf_value(v))?;
            s.keep_raw(key, v);
        }
        "proxy.header" => {
            Rc::make_mut(&mut s.proxy).header =
                crate::httpup::options::parse_header(&conf_value(v))?;
            s.keep_raw(key, v);
        }
        "proxy.replace-http-host" => {
            Rc::make_mut(&mut s.proxy).replace_http_host = boolean(v)?;
            s.keep_raw(key, v);
        }
        "proxy.map-extensions" => {
            crate::httpup::options::parse_map_extensions(&conf_value(v))?;
            s.keep_raw(key, v);
        }
        "cgi.assign" => {
            Rc::make_mut(&mut s.cgi).assign = pairs(v)?;
            s.keep_raw(key, v);
        }
        "cgi.execute-x-only" => {
            Rc::make_mut(&mut s.cgi).execute_x_only = boolean(v)?;
            s.keep_raw(key, v);
        }
        "cgi.x-sendfile" => {
            Rc::make_mut(&mut s.cgi).x_sendfile = boolean(v)?;
            s.keep_raw(key, v);
        }
        "cgi.x-sendfile-docroot" => {
            Rc::make_mut(&mut s.cgi).x_sendfile_docroot = list(v)?;
            s.keep_raw(key, v);
        }
        "cgi.local-redir" => {
            Rc::make_mut(&mut s.cgi).local_redir = boolean(v)?;
            s.keep_raw(key, v);
        }
        "cgi.upgrade" => {
            Rc::make_mut(&mut s.cgi).upgrade = boolean(v)?;
            s.keep_raw(key, v);
        }
        "cgi.limits" => {
            Rc::make_mut(&mut s.cgi).limits = cgi_limits(v)?;
            s.keep_raw(key, v);
        }
        _ => return Ok(webdav::apply(s, key, v)?.then_some(Applied::Known)),
    }
    Ok(Some(Applied::Known))
}

/// mod_maxminddb, and the core's `mimetype.use-xattr`,
/// `mimetype.xattr-name` and `server.protocol-http11`.
fn apply_geo_core(s: &mut Settings, key: &str, v: &Value) -> Result<Option<Applied>, String> {
    match key {
        "maxminddb.activate" => s.maxminddb.activate = boolean(v)?,
        "maxminddb.db" => s.maxminddb.set_db(&string(v)?),
        "maxminddb.env" => s.maxminddb.set_env(v)?,
        "mimetype.use-xattr" => s.static_file.use_xattr = boolean(v)?,
        // (As lighttpd, a blank name is taken as it is: no attribute has it.)
        "mimetype.xattr-name" => s.static_file.xattr_name = string(v)?,
        "server.protocol-http11" => s.protocols.protocol_http11 = boolean(v)?,
        _ => return Ok(None),
    }
    Ok(Some(Applied::Known))
}

/// Options kept raw for later work, and mod_deflate's (under both names).
fn apply_kept(s: &mut Settings, key: &str, v: &Value) -> Result<Option<Applied>, String> {
    match key {
        k if KEPT_OPTIONS.contains(&k) => {
            s.gateway.set(k, v.as_str());
            s.keep_raw(k, v)
        }
        k if k.starts_with("glint.acme.") => Rc::make_mut(&mut s.acme).set(k, v)?,
        k if k.starts_with("vhostdb.") => {
            if !Rc::make_mut(&mut s.vhostdb).apply(k, v)? {
                return Ok(None);
            }
            s.keep_raw(k, v);
        }
        k if k.starts_with("sockproxy.")
            || k.starts_with("wstunnel.")
            || k.starts_with("ajp13.") =>
        {
            if !Rc::make_mut(&mut s.tunnel).apply(k, v)? {
                return Ok(None);
            }
        }
        k if crate::compress::spec::KEYS.contains(&k) => {
            let warning = Rc::make_mut(&mut s.deflate).set(k, &deflate_value(v))?;
            match s.deflate_options.iter_mut().find(|(rk, _)| rk == k) {
                Some(slot) => slot.1 = v.clone(),
                None => s.deflate_options.push((k.to_string(), v.clone())),
            }
            if let Some(w) = warning {
                return Ok(Some(Applied::KnownWarn(w)));
            }
        }
        _ => return Ok(None),
    }
    Ok(Some(Applied::Known))
}

/// The `ssl.*` options (mod_openssl); `ssl.verifyclient.ca-*` are
/// lighttpd's other names for `ssl.ca-*`.
fn apply_ssl(s: &mut Settings, key: &str, v: &Value) -> Result<Applied, String> {
    let o = &mut s.ssl;
    match key {
        "ssl.engine" => s.tls.engine = boolean(v)?,
        "ssl.pemfile" => o.pemfile = Some(string(v)?),
        "ssl.privkey" => o.privkey = Some(string(v)?),
        "ssl.ca-file" | "ssl.verifyclient.ca-file" => o.ca_file = Some(string(v)?),
        "ssl.ca-dn-file" | "ssl.verifyclient.ca-dn-file" => o.ca_dn_file = Some(string(v)?),
        "ssl.ca-crl-file" | "ssl.verifyclient.ca-crl-file" => o.ca_crl_file = Some(string(v)?),
        "ssl.stapling-file" => o.stapling_file = Some(string(v)?),
        "ssl.verifyclient.activate" => o.verifyclient_activate = Some(boolean(v)?),
        "ssl.verifyclient.enforce" => o.verifyclient_enforce = Some(boolean(v)?),
        "ssl.verifyclient.depth" => o.verifyclient_depth = Some(uint32(v)?),
        "ssl.verifyclient.username" => o.verifyclient_username = Some(string(v)?),
        "ssl.verifyclient.exportcert" => o.verifyclient_exportcert = Some(boolean(v)?),
        "ssl.acme-tls-1" => o.acme_tls_1 = Some(string(v)?),
        "ssl.read-ahead" => o.read_ahead = Some(boolean(v)?),
        "ssl.disable-client-renegotiation" => o.disable_client_renegotiation = Some(boolean(v)?),
        "ssl.cipher-list" => s.tls.cipher_list = Some(string(v)?),
        "ssl.openssl.ssl-conf-cmd" => s.tls.conf_cmd = pairs(v)?,
        "ssl.honor-cipher-order" => s.tls.honor_cipher_order = Some(boolean(v)?),
        "ssl.stek-file" => s.tls.stek_file = Some(string(v)?),
        "ssl.refresh-certs" => s.tls.refresh_certs = boolean(v)?,
        _ => return Ok(Applied::Unknown),
    }
    Ok(Applied::Known)
}
