//! [`Settings`] back into `(option, value)` pairs, for `-p`.

use crate::config::settings::Settings;
use crate::config::value::Value;

/// `ssl.*` options for `-p`.
fn ssl_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    if s.tls.engine {
        put("ssl.engine", bool_value(true));
    }
    let o = &s.ssl;
    for (k, v) in [
        ("ssl.pemfile", &o.pemfile),
        ("ssl.privkey", &o.privkey),
        ("ssl.ca-file", &o.ca_file),
        ("ssl.ca-dn-file", &o.ca_dn_file),
        ("ssl.ca-crl-file", &o.ca_crl_file),
        ("ssl.stapling-file", &o.stapling_file),
        ("ssl.verifyclient.username", &o.verifyclient_username),
        ("ssl.acme-tls-1", &o.acme_tls_1),
        ("ssl.cipher-list", &s.tls.cipher_list),
        ("ssl.stek-file", &s.tls.stek_file),
    ] {
        if let Some(v) = v {
            put(k, Value::Str(v.clone()));
        }
    }
    for (k, b) in [
        ("ssl.verifyclient.activate", o.verifyclient_activate),
        ("ssl.verifyclient.enforce", o.verifyclient_enforce),
        ("ssl.verifyclient.exportcert", o.verifyclient_exportcert),
        ("ssl.read-ahead", o.read_ahead),
        (
            "ssl.disable-client-renegotiation",
            o.disable_client_renegotiation,
        ),
        ("ssl.honor-cipher-order", s.tls.honor_cipher_order),
    ] {
        if let Some(b) = b {
            put(k, bool_value(b));
        }
    }
    put("ssl.refresh-certs", bool_value(s.tls.refresh_certs));
    if let Some(d) = o.verifyclient_depth {
        put("ssl.verifyclient.depth", Value::Int(i64::from(d)));
    }
    if !s.tls.conf_cmd.is_empty() {
        put("ssl.openssl.ssl-conf-cmd", pairs_value(&s.tls.conf_cmd));
    }
}

fn bool_value(b: bool) -> Value {
    Value::Str(if b { "enable" } else { "disable" }.into())
}

fn list_value<T: AsRef<str>>(l: &[T]) -> Value {
    Value::Array(
        l.iter()
            .map(|s| (None, Value::Str(s.as_ref().to_string())))
            .collect(),
    )
}

fn pairs_value<K: AsRef<str>>(l: &[(K, String)]) -> Value {
    Value::Array(
        l.iter()
            .map(|(k, v)| (Some(k.as_ref().to_string()), Value::Str(v.clone())))
            .collect(),
    )
}

/// Every option of `s` as `(key, value)`, in the order of [`super::apply`]'s
/// options; unset optional options are left out. Applying them all to
/// `Settings::default()` gives back `s` (bar `document_root_origin`).
pub fn entries(s: &Settings) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut put = |k: &str, v: Value| out.push((k.to_string(), v));
    server_entries(s, &mut put);
    static_entries(s, &mut put);
    ssl_entries(s, &mut put);
    module_entries(s, &mut put);
    auth_forward_entries(s, &mut put);
    super::authn::entries(s, &mut put);
    userdir_proxy_entries(s, &mut put);
    for (k, v) in &s.raw {
        put(k, v.clone());
    }
    for (k, v) in &s.deflate_options {
        put(k, v.clone());
    }
    s.acme.entries(&mut put);
    s.tunnel.entries(&mut put);
    if let Some(d) = &s.rrdtool_db {
        put("rrdtool.db-name", Value::Str(d.clone()));
    }
    geo_core_entries(s, &mut put);
    out
}

/// mod_maxminddb's options, `mimetype.use-xattr`, `mimetype.xattr-name`
/// and `server.protocol-http11`.
fn geo_core_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    let g = &s.maxminddb;
    if g.activate {
        put("maxminddb.activate", bool_value(true));
    }
    if let Some(db) = &g.db {
        put("maxminddb.db", Value::Str(db.clone()));
    }
    if let Some(env) = &g.env {
        let pairs = env
            .iter()
            .map(|v| (Some(v.name.clone()), Value::Str(v.path.join("/"))))
            .collect();
        put("maxminddb.env", Value::Array(pairs));
    }
    put("mimetype.use-xattr", bool_value(s.static_file.use_xattr));
    put(
        "mimetype.xattr-name",
        Value::Str(s.static_file.xattr_name.clone()),
    );
    put(
        "server.protocol-http11",
        bool_value(s.protocols.protocol_http11),
    );
}

/// An optional string option's value, if set.
fn opt(o: &Option<String>) -> Option<Value> {
    o.as_ref().map(|s| Value::Str(s.clone()))
}

fn int(n: u64) -> Value {
    Value::Int(n as i64)
}

/// The core's `server.*` options.
fn server_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    if let Some(d) = &s.paths.document_root {
        put(
            "server.document-root",
            Value::Str(d.to_string_lossy().into_owned()),
        );
    }
    put("server.port", int(u64::from(s.listener.port)));
    if let Some(v) = opt(&s.listener.bind) {
        put("server.bind", v);
    }
    put("server.tag", Value::Str(s.identity.tag.clone()));
    for (k, o) in [
        ("server.name", &s.identity.server_name),
        ("server.errorlog", &s.error_log.file),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("server.modules", list_value(&s.modules));
    for (k, n) in [
        (
            "server.max-keep-alive-requests",
            s.limits.max_keep_alive_requests,
        ),
        ("server.max-keep-alive-idle", s.limits.max_keep_alive_idle),
        ("server.max-read-idle", s.limits.max_read_idle),
        ("server.max-write-idle", s.limits.max_write_idle),
        ("server.max-connections", s.limits.max_connections),
        ("server.max-fds", s.limits.max_fds),
    ] {
        put(k, int(u64::from(n)));
    }
    put("server.max-request-size", int(s.limits.max_request_size_kb));
    put(
        "server.max-request-field-size",
        int(u64::from(s.limits.max_request_field_size)),
    );
    put("server.h2proto", bool_value(s.protocols.h2proto));
    put("server.h2c", bool_value(s.protocols.h2c));
    put("server.follow-symlink", bool_value(s.files.follow_symlink));
    put("server.range-requests", bool_value(s.files.range_requests));
    put(
        "server.error-intercept",
        bool_value(s.errors.error_intercept),
    );
    put(
        "connection.kbytes-per-second",
        int(s.limits.conn_bytes_per_second >> 10),
    );
    if let Some(r) = s.limits.scope_rate {
        put("server.kbytes-per-second", int(r.bytes_per_second >> 10));
    }
    for (k, o) in [
        ("server.errorfile-prefix", &s.errors.errorfile_prefix),
        ("server.error-handler-404", &s.errors.error_handler_404),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
}

/// Listings, index files, types, ETags, the access log and mod_access, and
/// the listening sockets' options.
fn static_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    put("dir-listing.activate", bool_value(s.dir_listing.activate));
    put(
        "dir-listing.hide-dotfiles",
        bool_value(s.dir_listing.hide_dotfiles),
    );
    put("index-file.names", list_value(&s.files.index_file_names));
    put("mimetype.assign", pairs_value(&s.files.mimetype_assign));
    put(
        "static-file.exclude-extensions",
        list_value(&s.static_file.exclude_extensions),
    );
    put("static-file.etags", bool_value(s.static_file.etags));
    put("etag.use-inode", bool_value(s.static_file.use_inode));
    put("etag.use-mtime", bool_value(s.static_file.use_mtime));
    put("etag.use-size", bool_value(s.static_file.use_size));
    for (k, o) in [
        ("accesslog.filename", &s.accesslog.filename),
        ("accesslog.format", &s.accesslog.format),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("url.access-deny", list_value(&s.access.deny));
    put("url.access-allow", list_value(&s.access.allow));
    put(
        "server.force-lowercase-filenames",
        bool_value(s.files.force_lowercase_filenames),
    );
    if let Some(v) = opt(&s.errors.error_handler) {
        put("server.error-handler", v);
    }
    put("dir-listing.exclude", list_value(&s.dir_listing.exclude));
    put(
        "dir-listing.hide-readme-file",
        bool_value(s.dir_listing.hide_readme_file),
    );
    put(
        "dir-listing.hide-header-file",
        bool_value(s.dir_listing.hide_header_file),
    );
    put(
        "server.listen-backlog",
        int(u64::from(s.listener.listen_backlog)),
    );
    put("server.use-ipv6", bool_value(s.listener.use_ipv6));
    put("server.set-v6only", bool_value(s.listener.set_v6only));
    if let Some(m) = s.listener.v4mapped {
        put("server.v4mapped", bool_value(m));
    }
    if let Some(m) = s.listener.socket_perms {
        put("server.socket-perms", Value::Str(format!("{m:04o}")));
    }
    put("server.defer-accept", bool_value(s.listener.defer_accept));
    put("glint.h3", bool_value(s.protocols.h3));
}

/// Headers, expiry, redirects and rewrites, virtual hosts, the daemon's
/// options, mod_status and the SCGI/FastCGI tables.
fn module_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    for (k, p) in [
        ("setenv.add-response-header", &s.setenv.add_response_header),
        ("setenv.set-response-header", &s.setenv.set_response_header),
        ("expire.url", &s.expire.url),
        ("expire.mimetypes", &s.expire.mimetypes),
    ] {
        put(k, pairs_value(p));
    }
    put("ssi.extension", list_value(&s.ssi.extension));
    put(
        "ssi.conditional-requests",
        bool_value(s.ssi.conditional_requests),
    );
    put("ssi.exec", bool_value(s.ssi.exec));
    put("ssi.recursion-max", int(u64::from(s.ssi.recursion_max)));
    for (k, l) in [
        ("magnet.attract-raw-url-to", &s.magnet.raw_url),
        ("magnet.attract-physical-path-to", &s.magnet.physical_path),
        ("magnet.attract-response-start-to", &s.magnet.response_start),
    ] {
        if !l.is_empty() {
            put(k, list_value(l));
        }
    }
    put("url.redirect", pairs_value(&s.rewrite.redirect));
    put("url.redirect-code", int(u64::from(s.rewrite.redirect_code)));
    for (k, p) in [
        ("url.rewrite-once", &s.rewrite.once),
        ("url.rewrite-repeat", &s.rewrite.repeat),
        ("url.rewrite-if-not-file", &s.rewrite.if_not_file),
    ] {
        put(k, pairs_value(p));
    }
    for (k, o) in [
        ("simple-vhost.server-root", &s.simple_vhost.server_root),
        ("simple-vhost.default-host", &s.simple_vhost.default_host),
        ("simple-vhost.document-root", &s.simple_vhost.document_root),
        ("ssi.content-type", &s.ssi.content_type),
        ("server.username", &s.process.username),
        ("server.groupname", &s.process.groupname),
        ("server.chroot", &s.process.chroot),
        ("server.pid-file", &s.process.pid_file),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("server.max-worker", int(u64::from(s.process.max_worker)));
    put(
        "server.graceful-shutdown-timeout",
        int(u64::from(s.process.graceful_shutdown_timeout)),
    );
    put(
        "server.systemd-socket-activation",
        bool_value(s.process.systemd_socket_activation),
    );
    for (k, o) in [
        ("status.status-url", &s.status.status_url),
        ("status.statistics-url", &s.status.statistics_url),
        ("status.config-url", &s.status.config_url),
        ("glint.metrics-url", &s.status.metrics_url),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    if s.status.no_sort {
        put("status.enable-sort", bool_value(false));
    }
    if let Some(v) = &s.backends.scgi_server {
        put("scgi.server", v.clone());
    }
    if let Some(v) = &s.backends.fastcgi_server {
        put("fastcgi.server", v.clone());
    }
}

/// mod_auth, mod_extforward, mod_alias, request headers and environment.
fn auth_forward_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    for (k, o) in [
        ("auth.backend", &s.auth.backend),
        ("auth.backend.plain.userfile", &s.auth.plain_userfile),
        ("auth.backend.plain.groupfile", &s.auth.plain_groupfile),
        ("auth.backend.htpasswd.userfile", &s.auth.htpasswd_userfile),
        ("auth.backend.htdigest.userfile", &s.auth.htdigest_userfile),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    if let Some(v) = &s.auth.require {
        put("auth.require", v.clone());
    }
    if let Some(n) = s.auth.cache_max_age {
        put(
            "auth.cache",
            Value::Array(vec![(Some("max-age".into()), Value::Int(n))]),
        );
    }
    put("auth.extern-authn", bool_value(s.auth.extern_authn));
    if !s.extforward_options.forwarder.is_empty() {
        put(
            "extforward.forwarder",
            pairs_value(&s.extforward_options.forwarder),
        );
    }
    if let Some(h) = &s.extforward_options.headers {
        put("extforward.headers", list_value(h));
    }
    if !s.extforward_options.params.is_empty() {
        put(
            "extforward.params",
            pairs_value(&s.extforward_options.params),
        );
    }
    put(
        "url.rewrite-repeat-if-not-file",
        pairs_value(&s.rewrite.repeat_if_not_file),
    );
    for (k, p) in [
        ("alias.url", &s.paths.alias_url),
        ("setenv.add-request-header", &s.setenv.add_request_header),
        ("setenv.set-request-header", &s.setenv.set_request_header),
        ("setenv.add-environment", &s.setenv.add_environment),
        ("setenv.set-environment", &s.setenv.set_environment),
    ] {
        if !p.is_empty() {
            put(k, pairs_value(p));
        }
    }
}

/// mod_userdir, mod_evhost, the rest of mod_dirlisting, the PROXY
/// protocol and mod_proxy.
fn userdir_proxy_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    for (k, o) in [
        ("userdir.path", &s.userdir.path),
        ("userdir.basepath", &s.userdir.basepath),
        ("evhost.path-pattern", &s.paths.evhost_path_pattern),
        ("dir-listing.encoding", &s.dir_listing.encoding),
        ("dir-listing.external-css", &s.dir_listing.external_css),
        ("dir-listing.external-js", &s.dir_listing.external_js),
        ("dir-listing.show-readme", &s.dir_listing.show_readme),
        ("dir-listing.show-header", &s.dir_listing.show_header),
        ("dir-listing.set-footer", &s.dir_listing.set_footer),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("userdir.exclude-user", list_value(&s.userdir.exclude_user));
    if let Some(l) = &s.userdir.include_user {
        put("userdir.include-user", list_value(l));
    }
    put("userdir.letterhomes", bool_value(s.userdir.letterhomes));
    put("userdir.active", bool_value(s.userdir.active));
    put(
        "dir-listing.encode-readme",
        bool_value(s.dir_listing.encode_readme),
    );
    put(
        "dir-listing.encode-header",
        bool_value(s.dir_listing.encode_header),
    );
    put(
        "dir-listing.auto-layout",
        bool_value(s.dir_listing.auto_layout),
    );
    put(
        "extforward.hap-PROXY",
        bool_value(s.extforward_options.hap_proxy),
    );
    put(
        "extforward.hap-PROXY-ssl-client-verify",
        bool_value(s.extforward_options.hap_proxy_ssl_client_verify),
    );
    if let Some(v) = &s.backends.proxy_server {
        put("proxy.server", v.clone());
    }
}
