//! lighttpd option names mapped onto [`Settings`] fields, and back for `-p`.

use super::settings::{Origin, Settings};
use super::value::Value;
use crate::authn::require::{parse_backend, parse_require, OptValue};
use crate::forwarded::options::{parse_headers, parse_params, ExtForward, Trust};
use std::path::PathBuf;
use std::rc::Rc;

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
    "mod_extforward",
    "mod_alias",
    "mod_userdir",
    "mod_evhost",
    "mod_proxy",
    "mod_cgi",
    "mod_openssl",
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

fn string(v: &Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(format!("expects a string, got {}", other.type_name())),
    }
}

fn integer(v: &Value, max: u64) -> Result<u64, String> {
    let n = match v {
        Value::Int(i) => u64::try_from(*i).map_err(|_| "must not be negative".to_string())?,
        Value::Str(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s
            .parse::<u64>()
            .map_err(|_| format!("integer {s} is too large"))?,
        other => return Err(format!("expects an integer, got {}", other.type_name())),
    };
    if n > max {
        return Err(format!("value {n} is out of range (at most {max})"));
    }
    Ok(n)
}

fn uint16(v: &Value) -> Result<u16, String> {
    integer(v, u64::from(u16::MAX)).map(|n| n as u16)
}

fn uint32(v: &Value) -> Result<u32, String> {
    integer(v, u64::from(u32::MAX)).map(|n| n as u32)
}

/// lighttpd's booleans: "enable"/"disable" (also "true"/"false", any case) or an integer.
fn boolean(v: &Value) -> Result<bool, String> {
    match v {
        Value::Int(i) => Ok(*i != 0),
        Value::Str(s) if s.eq_ignore_ascii_case("enable") || s.eq_ignore_ascii_case("true") => {
            Ok(true)
        }
        Value::Str(s) if s.eq_ignore_ascii_case("disable") || s.eq_ignore_ascii_case("false") => {
            Ok(false)
        }
        Value::Str(s) => Err(format!("expects \"enable\" or \"disable\", got \"{s}\"")),
        Value::Array(_) => Err("expects \"enable\" or \"disable\", got an array".into()),
    }
}

/// A list of strings: an array of strings (keys ignored) or one string.
fn list(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Str(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|(_, v)| match v {
                Value::Str(s) => Ok(s.clone()),
                other => Err(format!(
                    "expects an array of strings, found {}",
                    other.type_name()
                )),
            })
            .collect(),
        Value::Int(_) => Err("expects an array of strings, got an integer".into()),
    }
}

/// A list of `"key" => "value"` pairs.
fn pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|(k, v)| match (k, v) {
                (Some(k), Value::Str(s)) => Ok((k.clone(), s.clone())),
                (None, _) => Err("expects an array of \"key\" => \"value\" pairs".to_string()),
                (Some(k), other) => Err(format!(
                    "expects a string for key \"{k}\", found {}",
                    other.type_name()
                )),
            })
            .collect(),
        other => Err(format!(
            "expects an array of \"key\" => \"value\" pairs, got {}",
            other.type_name()
        )),
    }
}

/// Pairs whose keys are regular expressions (`url.redirect`, `url.rewrite-*`).
fn regex_pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    let p = pairs(v)?;
    for (re, _) in &p {
        regex::Regex::new(re).map_err(|e| format!("invalid regex \"{re}\": {e}"))?;
    }
    Ok(p)
}

/// A list of regular expressions (`dir-listing.exclude`).
fn regex_list(v: &Value) -> Result<Vec<String>, String> {
    let l = list(v)?;
    for re in &l {
        regex::Regex::new(re).map_err(|e| format!("invalid regex \"{re}\": {e}"))?;
    }
    Ok(l)
}

/// A file mode written in octal, as `chmod` takes it (`"0660"`, `"600"`).
fn octal_mode(v: &Value) -> Result<u32, String> {
    let s = string(v)?;
    match u32::from_str_radix(&s, 8) {
        Ok(m) if !s.is_empty() && m <= 0o7777 => Ok(m),
        _ => Err(format!(
            "expects an octal file mode such as \"0660\", got \"{s}\""
        )),
    }
}

/// `"key" => value` pairs whose values are strings or integers, as text
/// (`extforward.params = ( "remote_user" => 1 )`).
fn text_pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|(k, v)| match (k, v) {
                (Some(k), Value::Str(s)) => Ok((k.clone(), s.clone())),
                (Some(k), Value::Int(i)) => Ok((k.clone(), i.to_string())),
                (None, _) => Err("expects an array of \"key\" => \"value\" pairs".to_string()),
                (Some(k), other) => Err(format!(
                    "expects a string for key \"{k}\", found {}",
                    other.type_name()
                )),
            })
            .collect(),
        other => Err(format!(
            "expects an array of \"key\" => \"value\" pairs, got {}",
            other.type_name()
        )),
    }
}

/// Pairs naming request headers: a name must be a header token and a value
/// hold no CR, LF or NUL (it reaches a backend as a header or a variable).
fn header_pairs(v: &Value) -> Result<Vec<(String, String)>, String> {
    let p = pairs(v)?;
    for (k, val) in &p {
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
        {
            return Err(format!("\"{k}\" is not a header name"));
        }
        if val.bytes().any(|c| c == b'\r' || c == b'\n' || c == 0) {
            return Err(format!("the value for \"{k}\" holds CR, LF or NUL"));
        }
    }
    Ok(p)
}

/// A string option where a blank value means unset (lighttpd's
/// `buffer_is_blank` checks).
fn nonblank(v: &Value) -> Result<Option<String>, String> {
    Ok(Some(string(v)?).filter(|s| !s.trim().is_empty()))
}

/// `dir-listing.show-readme` / `show-header`: `enable` names the usual
/// file, `disable` (or blank) none, anything else is the file's name,
/// which must be a plain name in the directory.
fn shown_file(v: &Value, usual: &str) -> Result<Option<String>, String> {
    let t = match v {
        Value::Int(i) => {
            if *i != 0 {
                return Ok(Some(usual.to_string()));
            }
            return Ok(None);
        }
        _ => string(v)?,
    };
    match t.as_str() {
        "" | "disable" => Ok(None),
        "enable" => Ok(Some(usual.to_string())),
        name if name.contains('/') || name == "." || name == ".." => Err(format!(
            "\"{name}\" must be the name of a file in the listed directory"
        )),
        name => Ok(Some(name.to_string())),
    }
}

/// `alias.url`: prefix => path pairs. As lighttpd (`mod_alias_check_order`),
/// a prefix listed after a shorter one that starts it is an error: it could
/// never match, since the first matching prefix wins there.
fn alias_url(v: &Value) -> Result<Vec<(String, String)>, String> {
    let p = pairs(v)?;
    for (i, (k, t)) in p.iter().enumerate() {
        if k.is_empty() {
            return Err("an empty URL prefix would alias every path".into());
        }
        if t.is_empty() {
            return Err(format!("the path for \"{k}\" is empty"));
        }
        if let Some((short, _)) = p[..i].iter().find(|(s, _)| k.starts_with(s.as_str())) {
            return Err(format!(
                "url-prefix \"{k}\" is never used: \"{short}\" before it matches first (list the longer prefix first)"
            ));
        }
    }
    Ok(p)
}

/// A config value as mod_auth's parser takes it.
fn opt_value(v: &Value) -> OptValue {
    match v {
        Value::Str(s) => OptValue::Str(s.clone()),
        Value::Int(i) => OptValue::Int(*i),
        Value::Array(_) => OptValue::Array,
    }
}

/// One `auth.require` entry: its prefix and its options.
pub type AuthRule = (String, Vec<(String, OptValue)>);

/// `auth.require = ( "/prefix" => ( "method" => ..., ... ), ... )` as
/// [`parse_require`] takes it.
pub fn auth_require_entries(v: &Value) -> Result<Vec<AuthRule>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expects ( \"/prefix\" => ( \"method\" => ..., ... ) ), got {}",
            v.type_name()
        ));
    };
    items
        .iter()
        .map(|(k, rule)| {
            let Some(prefix) = k else {
                return Err("each rule needs a \"/prefix\" => ( ... ) key".to_string());
            };
            let Value::Array(opts) = rule else {
                return Err(format!(
                    "the rule for \"{prefix}\" must be an array of \"key\" => \"value\""
                ));
            };
            let opts = opts
                .iter()
                .map(|(k, v)| match k {
                    Some(k) => Ok((k.clone(), opt_value(v))),
                    None => Err(format!(
                        "the rule for \"{prefix}\" must be an array of \"key\" => \"value\""
                    )),
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok((prefix.clone(), opts))
        })
        .collect()
}

/// `auth.cache = ( "max-age" => "600" )`: the seconds an entry lives.
fn auth_cache(v: &Value) -> Result<i64, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expects ( \"max-age\" => \"600\" ), got {}",
            v.type_name()
        ));
    };
    let opts: Vec<(String, OptValue)> = items
        .iter()
        .map(|(k, v)| (k.clone().unwrap_or_default(), opt_value(v)))
        .collect();
    crate::authn::cache::parse_cache_options(&opts).map(|o| o.max_age)
}

/// The pairs of an `extforward.forwarder`, as [`Trust::parse`] takes them.
fn borrowed_pairs(p: &[(String, String)]) -> Vec<(&str, &str)> {
    p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
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
    let trust = Trust::parse(&borrowed_pairs(&s.extforward_forwarder))?;
    if trust.is_empty() {
        return Ok(None);
    }
    let headers: Option<Vec<&str>> = s
        .extforward_headers
        .as_ref()
        .map(|h| h.iter().map(String::as_str).collect());
    let xf = ExtForward::parse(
        &borrowed_pairs(&s.extforward_forwarder),
        headers.as_deref(),
        &borrowed_pairs(&s.extforward_params),
        s.extforward_hap_proxy,
        s.extforward_hap_proxy_ssl_client_verify,
    )?;
    Ok(Some(xf))
}

fn array(v: &Value) -> Result<Value, String> {
    match v {
        Value::Array(_) => Ok(v.clone()),
        other => Err(format!("expects an array, got {}", other.type_name())),
    }
}

/// Sets option `key` to `v` in `s`. An error is a message about the value.
pub fn apply(s: &mut Settings, key: &str, v: &Value, origin: &Origin) -> Result<Applied, String> {
    match key {
        "server.document-root" => {
            s.set_document_root(Some(PathBuf::from(string(v)?)));
            s.document_root_origin = Some(origin.clone());
        }
        "server.port" => s.port = uint16(v)?,
        "server.bind" => s.bind = Some(string(v)?),
        "server.tag" => s.tag = string(v)?,
        "server.name" => s.server_name = Some(string(v)?),
        "server.errorlog" => s.errorlog = Some(string(v)?),
        "server.modules" => s.modules = list(v)?,
        "server.max-keep-alive-requests" => s.max_keep_alive_requests = uint32(v)?,
        "server.max-keep-alive-idle" => s.max_keep_alive_idle = uint32(v)?,
        "server.max-read-idle" => s.max_read_idle = uint32(v)?,
        "server.max-write-idle" => s.max_write_idle = uint32(v)?,
        "server.max-connections" => s.max_connections = uint32(v)?,
        "server.max-fds" => s.max_fds = uint32(v)?,
        "server.max-request-size" => s.max_request_size_kb = integer(v, u64::MAX)?,
        "server.max-request-field-size" => s.max_request_field_size = uint32(v)?,
        "server.follow-symlink" => s.follow_symlink = boolean(v)?,
        "server.range-requests" => s.range_requests = boolean(v)?,
        "server.errorfile-prefix" => s.errorfile_prefix = Some(string(v)?),
        "server.error-handler-404" => s.error_handler_404 = Some(string(v)?),
        "server.dir-listing" | "dir-listing.activate" => s.dir_listing = boolean(v)?,
        "dir-listing.hide-dotfiles" => s.dir_listing_hide_dotfiles = boolean(v)?,
        "index-file.names" | "server.indexfiles" => s.index_file_names = list(v)?,
        "mimetype.assign" => s.mimetype_assign = pairs(v)?,
        "static-file.exclude-extensions" => s.static_file_exclude_extensions = list(v)?,
        "static-file.etags" => s.static_file_etags = boolean(v)?,
        "etag.use-inode" => s.etag_use_inode = boolean(v)?,
        "etag.use-mtime" => s.etag_use_mtime = boolean(v)?,
        "etag.use-size" => s.etag_use_size = boolean(v)?,
        "accesslog.filename" => s.accesslog_filename = Some(string(v)?),
        "accesslog.format" => s.accesslog_format = Some(string(v)?),
        "url.access-deny" => s.url_access_deny = list(v)?,
        "url.access-allow" => s.url_access_allow = list(v)?,
        "server.force-lowercase-filenames" => s.force_lowercase_filenames = boolean(v)?,
        "server.error-handler" => s.error_handler = Some(string(v)?),
        "dir-listing.exclude" => s.dir_listing_exclude = regex_list(v)?,
        "dir-listing.hide-readme-file" => s.dir_listing_hide_readme_file = boolean(v)?,
        "dir-listing.hide-header-file" => s.dir_listing_hide_header_file = boolean(v)?,
        "server.listen-backlog" => {
            s.listen_backlog = match integer(v, i32::MAX as u64)? {
                0 => return Err("must be at least 1".into()),
                n => n as u32,
            }
        }
        "server.h2proto" => s.h2proto = boolean(v)?,
        "server.h2c" => s.h2c = boolean(v)?,
        "server.use-ipv6" => s.use_ipv6 = boolean(v)?,
        "server.set-v6only" => s.set_v6only = boolean(v)?,
        "server.socket-perms" => s.socket_perms = Some(octal_mode(v)?),
        "server.defer-accept" => s.defer_accept = boolean(v)?,
        k if k.starts_with("ssl.") => return apply_ssl(s, k, v),
        "server.feature-flags" => {
            super::support::feature_flags(v)?;
            s.ssl_session_cache = feature_flag(v, "ssl.session-cache")?.unwrap_or(false);
            if let Some(on) = feature_flag(v, "server.h2proto")? {
                s.h2proto = on;
            }
            if let Some(on) = feature_flag(v, "server.h2c")? {
                s.h2c = on;
            }
            keep_raw(s, key, v);
        }
        "setenv.add-response-header" => s.setenv_add_response_header = pairs(v)?,
        "setenv.set-response-header" => s.setenv_set_response_header = pairs(v)?,
        "expire.url" => s.expire_url = pairs(v)?,
        "expire.mimetypes" => s.expire_mimetypes = pairs(v)?,
        "url.redirect" => s.url_redirect = regex_pairs(v)?,
        "url.redirect-code" => s.url_redirect_code = uint16(v)?,
        "url.rewrite-once" | "url.rewrite" | "url.rewrite-final" => {
            s.url_rewrite_once = regex_pairs(v)?
        }
        "url.rewrite-repeat-if-not-file" => s.url_rewrite_repeat_if_not_file = regex_pairs(v)?,
        "url.rewrite-repeat" => s.url_rewrite_repeat = regex_pairs(v)?,
        "url.rewrite-if-not-file" => s.url_rewrite_if_not_file = regex_pairs(v)?,
        "simple-vhost.server-root" => s.simple_vhost_server_root = Some(string(v)?),
        "simple-vhost.default-host" => s.simple_vhost_default_host = Some(string(v)?),
        "simple-vhost.document-root" => s.simple_vhost_document_root = Some(string(v)?),
        "server.username" => s.username = Some(string(v)?),
        "server.groupname" => s.groupname = Some(string(v)?),
        "server.chroot" => s.chroot = Some(string(v)?),
        "server.pid-file" => s.pid_file = Some(string(v)?),
        "server.max-worker" => s.max_worker = uint32(v)?,
        "server.graceful-shutdown-timeout" => s.graceful_shutdown_timeout = uint32(v)?,
        "server.systemd-socket-activation" => s.systemd_socket_activation = boolean(v)?,
        "status.status-url" => s.status_url = Some(string(v)?),
        "status.statistics-url" => s.status_statistics_url = Some(string(v)?),
        "status.config-url" => s.status_config_url = Some(string(v)?),
        "scgi.server" => s.scgi_server = Some(array(v)?),
        "fastcgi.server" => s.fastcgi_server = Some(array(v)?),
        "scgi.protocol" => match v {
            Value::Str(p) if p == "scgi" || p == "uwsgi" => keep_raw(s, key, v),
            _ => return Err("expects \"scgi\" or \"uwsgi\"".into()),
        },
        "auth.backend" => {
            let b = string(v)?;
            parse_backend(&b)?;
            s.auth_backend = Some(b);
        }
        "auth.backend.plain.userfile" => s.auth_plain_userfile = Some(string(v)?),
        "auth.backend.plain.groupfile" => s.auth_plain_groupfile = Some(string(v)?),
        "auth.backend.htpasswd.userfile" => s.auth_htpasswd_userfile = Some(string(v)?),
        "auth.backend.htdigest.userfile" => s.auth_htdigest_userfile = Some(string(v)?),
        "auth.require" => {
            // Checked now, for the error's file and line; parsed once per
            // distinct value at the end of loading.
            parse_require(&auth_require_entries(v)?)?;
            s.auth_require = Some(v.clone());
        }
        "auth.cache" => s.auth_cache_max_age = Some(auth_cache(v)?),
        "auth.extern-authn" => s.auth_extern_authn = boolean(v)?,
        "extforward.forwarder" => {
            let p = pairs(v)?;
            Trust::parse(&borrowed_pairs(&p))?;
            s.extforward_forwarder = p;
        }
        "extforward.headers" => {
            let l = list(v)?;
            let b: Vec<&str> = l.iter().map(String::as_str).collect();
            parse_headers(Some(&b), false)?;
            s.extforward_headers = Some(l);
        }
        "extforward.params" => {
            let p = text_pairs(v)?;
            parse_params(&borrowed_pairs(&p))?;
            s.extforward_params = p;
        }
        "setenv.add-request-header" => s.setenv_add_request_header = header_pairs(v)?,
        "setenv.set-request-header" => s.setenv_set_request_header = header_pairs(v)?,
        "setenv.add-environment" => s.setenv_add_environment = pairs(v)?,
        "setenv.set-environment" => s.setenv_set_environment = pairs(v)?,
        "alias.url" => s.alias_url = alias_url(v)?,
        "userdir.path" => s.userdir_path = Some(string(v)?),
        "userdir.basepath" => {
            s.userdir_basepath = Some(string(v)?).filter(|b| !b.trim().is_empty())
        }
        "userdir.exclude-user" => s.userdir_exclude_user = list(v)?,
        "userdir.include-user" => s.userdir_include_user = Some(list(v)?),
        "userdir.letterhomes" => s.userdir_letterhomes = boolean(v)?,
        "userdir.active" => s.userdir_active = boolean(v)?,
        "evhost.path-pattern" => s.evhost_path_pattern = Some(string(v)?),
        "dir-listing.encoding" => s.dir_listing_encoding = nonblank(v)?,
        "dir-listing.external-css" => s.dir_listing_external_css = nonblank(v)?,
        "dir-listing.external-js" => s.dir_listing_external_js = nonblank(v)?,
        "dir-listing.show-readme" => s.dir_listing_show_readme = shown_file(v, "README.txt")?,
        "dir-listing.show-header" => s.dir_listing_show_header = shown_file(v, "HEADER.txt")?,
        "dir-listing.set-footer" => s.dir_listing_set_footer = nonblank(v)?,
        "dir-listing.encode-readme" => s.dir_listing_encode_readme = boolean(v)?,
        "dir-listing.encode-header" => s.dir_listing_encode_header = boolean(v)?,
        "dir-listing.auto-layout" => s.dir_listing_auto_layout = boolean(v)?,
        "extforward.hap-PROXY" => s.extforward_hap_proxy = boolean(v)?,
        "extforward.hap-PROXY-ssl-client-verify" => {
            s.extforward_hap_proxy_ssl_client_verify = boolean(v)?
        }
        "proxy.server" => {
            // Checked whole now, so that a request never meets a bad one.
            crate::httpup::options::parse_servers(&conf_value(v))?;
            s.proxy_server = Some(array(v)?);
        }
        "proxy.balance" => {
            crate::httpup::options::parse_balance(&conf_value(v))?;
            keep_raw(s, key, v);
        }
        "proxy.forwarded" => {
            Rc::make_mut(&mut s.proxy).forwarded =
                crate::httpup::options::parse_forwarded(&conf_value(v))?;
            keep_raw(s, key, v);
        }
        "proxy.header" => {
            Rc::make_mut(&mut s.proxy).header =
                crate::httpup::options::parse_header(&conf_value(v))?;
            keep_raw(s, key, v);
        }
        "proxy.replace-http-host" => {
            Rc::make_mut(&mut s.proxy).replace_http_host = boolean(v)?;
            keep_raw(s, key, v);
        }
        "proxy.map-extensions" => {
            crate::httpup::options::parse_map_extensions(&conf_value(v))?;
            keep_raw(s, key, v);
        }
        "cgi.assign" => {
            Rc::make_mut(&mut s.cgi).assign = pairs(v)?;
            keep_raw(s, key, v);
        }
        "cgi.execute-x-only" => {
            Rc::make_mut(&mut s.cgi).execute_x_only = boolean(v)?;
            keep_raw(s, key, v);
        }
        "cgi.x-sendfile" => {
            Rc::make_mut(&mut s.cgi).x_sendfile = boolean(v)?;
            keep_raw(s, key, v);
        }
        "cgi.x-sendfile-docroot" => {
            Rc::make_mut(&mut s.cgi).x_sendfile_docroot = list(v)?;
            keep_raw(s, key, v);
        }
        "cgi.local-redir" => {
            Rc::make_mut(&mut s.cgi).local_redir = boolean(v)?;
            keep_raw(s, key, v);
        }
        "cgi.upgrade" => {
            Rc::make_mut(&mut s.cgi).upgrade = boolean(v)?;
            keep_raw(s, key, v);
        }
        "cgi.limits" => {
            Rc::make_mut(&mut s.cgi).limits = cgi_limits(v)?;
            keep_raw(s, key, v);
        }
        k if KEPT_OPTIONS.contains(&k) => keep_raw(s, k, v),
        k if crate::compress::spec::KEYS.contains(&k) => {
            let warning = Rc::make_mut(&mut s.deflate).set(k, &deflate_value(v))?;
            match s.deflate_options.iter_mut().find(|(rk, _)| rk == k) {
                Some(slot) => slot.1 = v.clone(),
                None => s.deflate_options.push((k.to_string(), v.clone())),
            }
            if let Some(w) = warning {
                return Ok(Applied::KnownWarn(w));
            }
        }
        _ => return Ok(Applied::Unknown),
    }
    Ok(Applied::Known)
}

/// A configuration value as [`crate::compress`] takes it.
fn deflate_value(v: &Value) -> crate::compress::OptValue {
    use crate::compress::OptValue as D;
    match v {
        Value::Str(s) => D::Str(s.clone()),
        Value::Int(i) => D::Int(*i),
        Value::Array(items) => D::List(
            items
                .iter()
                .map(|(k, v)| (k.clone(), deflate_value(v)))
                .collect(),
        ),
    }
}

/// A configuration value in the shape [`crate::httpup`] reads (one to one).
pub fn conf_value(v: &Value) -> crate::httpup::ConfValue {
    use crate::httpup::ConfValue;
    match v {
        Value::Str(s) => ConfValue::Str(s.clone()),
        Value::Int(i) => ConfValue::Int(*i),
        Value::Array(items) => ConfValue::Array(
            items
                .iter()
                .map(|(k, v)| (k.clone(), conf_value(v)))
                .collect(),
        ),
    }
}

/// `cgi.limits`: lighttpd's `read-timeout`, `write-timeout` and
/// `tcp-fin-propagate` (a signal name, or enable for SIGTERM), and glint's
/// `max-procs`. An unknown key is refused (lighttpd logs it and goes on).
fn cgi_limits(v: &Value) -> Result<super::settings::CgiLimits, String> {
    let Value::Array(items) = v else {
        return Err("expects ( \"read-timeout\" => n, ... )".into());
    };
    let mut l = super::settings::CgiLimits::default();
    for (k, val) in items {
        let k = k.as_deref().unwrap_or("");
        match k.to_ascii_lowercase().as_str() {
            "read-timeout" => l.read_timeout = uint32(val)?,
            "write-timeout" => l.write_timeout = uint32(val)?,
            "max-procs" => l.max_procs = uint32(val)?.max(1),
            "tcp-fin-propagate" => {
                l.fin_signal = match val {
                    Value::Int(n) => {
                        i32::try_from(*n).map_err(|_| "tcp-fin-propagate: not a signal")?
                    }
                    Value::Str(s) if s.eq_ignore_ascii_case("enable") => 15,
                    Value::Str(s) if s.eq_ignore_ascii_case("disable") => 0,
                    Value::Str(s) => signal_number(s)
                        .ok_or_else(|| format!("tcp-fin-propagate: unknown signal \"{s}\""))?,
                    Value::Array(_) => return Err("tcp-fin-propagate: expects a signal".into()),
                }
            }
            _ => {
                return Err(format!(
                "unknown key \"{k}\" (read-timeout, write-timeout, tcp-fin-propagate, max-procs)"
            ))
            }
        }
    }
    Ok(l)
}

/// A signal by name, with or without `SIG` (`"TERM"`, `"SIGHUP"`).
fn signal_number(s: &str) -> Option<i32> {
    let up = s.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    const SIGNALS: &[(&str, i32)] = &[
        ("HUP", 1),
        ("INT", 2),
        ("QUIT", 3),
        ("KILL", 9),
        ("USR1", 10),
        ("USR2", 12),
        ("PIPE", 13),
        ("ALRM", 14),
        ("TERM", 15),
        ("CONT", 18),
        ("STOP", 19),
    ];
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// The `ssl.*` options (mod_openssl); `ssl.verifyclient.ca-*` are
/// lighttpd's other names for `ssl.ca-*`.
fn apply_ssl(s: &mut Settings, key: &str, v: &Value) -> Result<Applied, String> {
    let o = &mut s.ssl;
    match key {
        "ssl.engine" => s.ssl_engine = boolean(v)?,
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
        "ssl.cipher-list" => s.ssl_cipher_list = Some(string(v)?),
        "ssl.openssl.ssl-conf-cmd" => s.ssl_conf_cmd = pairs(v)?,
        "ssl.honor-cipher-order" => s.ssl_honor_cipher_order = Some(boolean(v)?),
        "ssl.stek-file" => s.ssl_stek_file = Some(string(v)?),
        _ => return Ok(Applied::Unknown),
    }
    Ok(Applied::Known)
}

/// The value of flag `name` in `server.feature-flags`, if set.
fn feature_flag(v: &Value, name: &str) -> Result<Option<bool>, String> {
    let Value::Array(items) = v else {
        return Ok(None);
    };
    match items.iter().find(|(k, _)| k.as_deref() == Some(name)) {
        Some((_, v)) => boolean(v).map(Some).map_err(|e| format!("{name}: {e}")),
        None => Ok(None),
    }
}

/// `ssl.*` options for `-p`.
fn ssl_entries(s: &Settings, put: &mut dyn FnMut(&str, Value)) {
    if s.ssl_engine {
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
        ("ssl.cipher-list", &s.ssl_cipher_list),
        ("ssl.stek-file", &s.ssl_stek_file),
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
        ("ssl.honor-cipher-order", s.ssl_honor_cipher_order),
    ] {
        if let Some(b) = b {
            put(k, bool_value(b));
        }
    }
    if let Some(d) = o.verifyclient_depth {
        put("ssl.verifyclient.depth", Value::Int(i64::from(d)));
    }
    if !s.ssl_conf_cmd.is_empty() {
        put("ssl.openssl.ssl-conf-cmd", pairs_value(&s.ssl_conf_cmd));
    }
}

/// Stores an option in [`Settings::raw`], replacing an earlier value.
fn keep_raw(s: &mut Settings, k: &str, v: &Value) {
    if let Some(slot) = s.raw.iter_mut().find(|(rk, _)| rk == k) {
        slot.1 = v.clone();
    } else {
        s.raw.push((k.to_string(), v.clone()));
    }
}

fn bool_value(b: bool) -> Value {
    Value::Str(if b { "enable" } else { "disable" }.into())
}

fn list_value(l: &[String]) -> Value {
    Value::Array(l.iter().map(|s| (None, Value::Str(s.clone()))).collect())
}

fn pairs_value(l: &[(String, String)]) -> Value {
    Value::Array(
        l.iter()
            .map(|(k, v)| (Some(k.clone()), Value::Str(v.clone())))
            .collect(),
    )
}

/// Every option of `s` as `(key, value)`, in the order of [`apply`]'s
/// options; unset optional options are left out. Applying them all to
/// `Settings::default()` gives back `s` (bar `document_root_origin`).
pub fn entries(s: &Settings) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut put = |k: &str, v: Value| out.push((k.to_string(), v));
    let opt = |o: &Option<String>| o.as_ref().map(|s| Value::Str(s.clone()));
    let int = |n: u64| Value::Int(n as i64);
    if let Some(d) = &s.document_root {
        put(
            "server.document-root",
            Value::Str(d.to_string_lossy().into_owned()),
        );
    }
    put("server.port", int(u64::from(s.port)));
    if let Some(v) = opt(&s.bind) {
        put("server.bind", v);
    }
    put("server.tag", Value::Str(s.tag.clone()));
    for (k, o) in [
        ("server.name", &s.server_name),
        ("server.errorlog", &s.errorlog),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("server.modules", list_value(&s.modules));
    for (k, n) in [
        ("server.max-keep-alive-requests", s.max_keep_alive_requests),
        ("server.max-keep-alive-idle", s.max_keep_alive_idle),
        ("server.max-read-idle", s.max_read_idle),
        ("server.max-write-idle", s.max_write_idle),
        ("server.max-connections", s.max_connections),
        ("server.max-fds", s.max_fds),
    ] {
        put(k, int(u64::from(n)));
    }
    put("server.max-request-size", int(s.max_request_size_kb));
    put(
        "server.max-request-field-size",
        int(u64::from(s.max_request_field_size)),
    );
    put("server.h2proto", bool_value(s.h2proto));
    put("server.h2c", bool_value(s.h2c));
    put("server.follow-symlink", bool_value(s.follow_symlink));
    put("server.range-requests", bool_value(s.range_requests));
    for (k, o) in [
        ("server.errorfile-prefix", &s.errorfile_prefix),
        ("server.error-handler-404", &s.error_handler_404),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("dir-listing.activate", bool_value(s.dir_listing));
    put(
        "dir-listing.hide-dotfiles",
        bool_value(s.dir_listing_hide_dotfiles),
    );
    put("index-file.names", list_value(&s.index_file_names));
    put("mimetype.assign", pairs_value(&s.mimetype_assign));
    put(
        "static-file.exclude-extensions",
        list_value(&s.static_file_exclude_extensions),
    );
    put("static-file.etags", bool_value(s.static_file_etags));
    put("etag.use-inode", bool_value(s.etag_use_inode));
    put("etag.use-mtime", bool_value(s.etag_use_mtime));
    put("etag.use-size", bool_value(s.etag_use_size));
    for (k, o) in [
        ("accesslog.filename", &s.accesslog_filename),
        ("accesslog.format", &s.accesslog_format),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("url.access-deny", list_value(&s.url_access_deny));
    put("url.access-allow", list_value(&s.url_access_allow));
    put(
        "server.force-lowercase-filenames",
        bool_value(s.force_lowercase_filenames),
    );
    if let Some(v) = opt(&s.error_handler) {
        put("server.error-handler", v);
    }
    put("dir-listing.exclude", list_value(&s.dir_listing_exclude));
    put(
        "dir-listing.hide-readme-file",
        bool_value(s.dir_listing_hide_readme_file),
    );
    put(
        "dir-listing.hide-header-file",
        bool_value(s.dir_listing_hide_header_file),
    );
    put("server.listen-backlog", int(u64::from(s.listen_backlog)));
    put("server.use-ipv6", bool_value(s.use_ipv6));
    put("server.set-v6only", bool_value(s.set_v6only));
    if let Some(m) = s.socket_perms {
        put("server.socket-perms", Value::Str(format!("{m:04o}")));
    }
    put("server.defer-accept", bool_value(s.defer_accept));
    ssl_entries(s, &mut put);
    for (k, p) in [
        ("setenv.add-response-header", &s.setenv_add_response_header),
        ("setenv.set-response-header", &s.setenv_set_response_header),
        ("expire.url", &s.expire_url),
        ("expire.mimetypes", &s.expire_mimetypes),
        ("url.redirect", &s.url_redirect),
    ] {
        put(k, pairs_value(p));
    }
    put("url.redirect-code", int(u64::from(s.url_redirect_code)));
    for (k, p) in [
        ("url.rewrite-once", &s.url_rewrite_once),
        ("url.rewrite-repeat", &s.url_rewrite_repeat),
        ("url.rewrite-if-not-file", &s.url_rewrite_if_not_file),
    ] {
        put(k, pairs_value(p));
    }
    for (k, o) in [
        ("simple-vhost.server-root", &s.simple_vhost_server_root),
        ("simple-vhost.default-host", &s.simple_vhost_default_host),
        ("simple-vhost.document-root", &s.simple_vhost_document_root),
        ("server.username", &s.username),
        ("server.groupname", &s.groupname),
        ("server.chroot", &s.chroot),
        ("server.pid-file", &s.pid_file),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("server.max-worker", int(u64::from(s.max_worker)));
    put(
        "server.graceful-shutdown-timeout",
        int(u64::from(s.graceful_shutdown_timeout)),
    );
    put(
        "server.systemd-socket-activation",
        bool_value(s.systemd_socket_activation),
    );
    for (k, o) in [
        ("status.status-url", &s.status_url),
        ("status.statistics-url", &s.status_statistics_url),
        ("status.config-url", &s.status_config_url),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    if let Some(v) = &s.scgi_server {
        put("scgi.server", v.clone());
    }
    if let Some(v) = &s.fastcgi_server {
        put("fastcgi.server", v.clone());
    }
    for (k, o) in [
        ("auth.backend", &s.auth_backend),
        ("auth.backend.plain.userfile", &s.auth_plain_userfile),
        ("auth.backend.plain.groupfile", &s.auth_plain_groupfile),
        ("auth.backend.htpasswd.userfile", &s.auth_htpasswd_userfile),
        ("auth.backend.htdigest.userfile", &s.auth_htdigest_userfile),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    if let Some(v) = &s.auth_require {
        put("auth.require", v.clone());
    }
    if let Some(n) = s.auth_cache_max_age {
        put(
            "auth.cache",
            Value::Array(vec![(Some("max-age".into()), Value::Int(n))]),
        );
    }
    put("auth.extern-authn", bool_value(s.auth_extern_authn));
    if !s.extforward_forwarder.is_empty() {
        put("extforward.forwarder", pairs_value(&s.extforward_forwarder));
    }
    if let Some(h) = &s.extforward_headers {
        put("extforward.headers", list_value(h));
    }
    if !s.extforward_params.is_empty() {
        put("extforward.params", pairs_value(&s.extforward_params));
    }
    for (k, p) in [
        ("alias.url", &s.alias_url),
        (
            "url.rewrite-repeat-if-not-file",
            &s.url_rewrite_repeat_if_not_file,
        ),
        ("setenv.add-request-header", &s.setenv_add_request_header),
        ("setenv.set-request-header", &s.setenv_set_request_header),
        ("setenv.add-environment", &s.setenv_add_environment),
        ("setenv.set-environment", &s.setenv_set_environment),
    ] {
        if !p.is_empty() {
            put(k, pairs_value(p));
        }
    }
    for (k, o) in [
        ("userdir.path", &s.userdir_path),
        ("userdir.basepath", &s.userdir_basepath),
        ("evhost.path-pattern", &s.evhost_path_pattern),
        ("dir-listing.encoding", &s.dir_listing_encoding),
        ("dir-listing.external-css", &s.dir_listing_external_css),
        ("dir-listing.external-js", &s.dir_listing_external_js),
        ("dir-listing.show-readme", &s.dir_listing_show_readme),
        ("dir-listing.show-header", &s.dir_listing_show_header),
        ("dir-listing.set-footer", &s.dir_listing_set_footer),
    ] {
        if let Some(v) = opt(o) {
            put(k, v);
        }
    }
    put("userdir.exclude-user", list_value(&s.userdir_exclude_user));
    if let Some(l) = &s.userdir_include_user {
        put("userdir.include-user", list_value(l));
    }
    put("userdir.letterhomes", bool_value(s.userdir_letterhomes));
    put("userdir.active", bool_value(s.userdir_active));
    put(
        "dir-listing.encode-readme",
        bool_value(s.dir_listing_encode_readme),
    );
    put(
        "dir-listing.encode-header",
        bool_value(s.dir_listing_encode_header),
    );
    put(
        "dir-listing.auto-layout",
        bool_value(s.dir_listing_auto_layout),
    );
    put("extforward.hap-PROXY", bool_value(s.extforward_hap_proxy));
    put(
        "extforward.hap-PROXY-ssl-client-verify",
        bool_value(s.extforward_hap_proxy_ssl_client_verify),
    );
    if let Some(v) = &s.proxy_server {
        put("proxy.server", v.clone());
    }
    for (k, v) in &s.raw {
        put(k, v.clone());
    }
    for (k, v) in &s.deflate_options {
        put(k, v.clone());
    }
    out
}
