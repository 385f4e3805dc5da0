//! What glint does with a lighttpd option it has no typed field for: the
//! one rule that keeps a lighttpd configuration from serving with less
//! protection under glint than under lighttpd.
//!
//! - An option of lighttpd 1.4.69 that glint does not implement stops the
//!   start with `file:line:col: option X (mod_Y) is not provided by glint`,
//!   unless it is on [`IGNORED`] (it changes no protection and no content)
//!   or set to the value that is lighttpd's default and glint's behaviour
//!   ([`DEFAULT_ONLY`]).
//! - An option lighttpd 1.4.69 does not know either is a warning and
//!   ignored, as lighttpd does ("unknown config-key").
//!
//! A module glint does not provide, named in `server.modules`, is refused
//! by [`crate::config`] itself. When glint implements an option it moves
//! from here to `options::apply`.

use super::value::Value;

/// What to do with an option `options::apply` did not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Accepted without effect: the reason says why that is safe.
    Ignored(&'static str),
    /// Set to the value glint behaves as anyway.
    DefaultValue,
    /// A lighttpd option of this module, which glint does not implement: refuse to start.
    NotProvided(&'static str),
    /// A value other than the default of an option glint knows only at its default.
    NotDefault(&'static str),
    /// Not a lighttpd 1.4.69 option: warn and ignore it, as lighttpd does.
    Unknown,
}

/// Options glint accepts and ignores, by exact name or by prefix (ending
/// in `.` or `-`), each with why ignoring it can neither expose a file, send
/// something in clear that lighttpd would encrypt, nor run or serve
/// something differently. docs/configuration.md lists them.
pub const IGNORED: &[(&str, &str)] = &[
    ("debug.", "log verbosity only"),
    (
        "server.breakagelog",
        "where CGI programs' stderr goes; glint logs it to the error log",
    ),
    (
        "server.compat-module-load",
        "glint's modules are built in: there is nothing to load",
    ),
    ("server.event-handler", "glint always uses epoll"),
    (
        "server.network-backend",
        "glint always sends with writev and sendfile",
    ),
    (
        "server.stat-cache-engine",
        "glint's own cache of open files lives at most 2 seconds",
    ),
    (
        "server.core-files",
        "process setting with no effect on what is served",
    ),
    (
        "server.clock-jump-restart",
        "glint's time-outs use the monotonic clock",
    ),
    (
        "server.graceful-restart-bg",
        "process setting with no effect on what is served",
    ),
    ("server.chunkqueue-chunk-sz", "buffer size tuning only"),
    (
        "server.bsd-accept-filter",
        "a BSD kernel option; glint runs on Linux",
    ),
    (
        "server.errorlog-high-precision",
        "timestamp precision of the error log",
    ),
    (
        "server.metrics-high-precision",
        "timestamp precision of mod_status figures",
    ),
    (
        "server.stream-request-body",
        "glint streams request bodies to backends with bounded buffers",
    ),
    (
        "server.stream-response-body",
        "glint streams backend answers with bounded buffers",
    ),
    (
        "server.upload-dirs",
        "glint keeps request bodies in bounded memory, not temporary files",
    ),
    (
        "server.upload-temp-file-size",
        "glint keeps request bodies in bounded memory, not temporary files",
    ),
    (
        "server.h1-discard-backend-1xx",
        "glint never passes a backend's 1xx answers on",
    ),
    (
        "server.h2-discard-backend-1xx",
        "glint never passes a backend's 1xx answers on",
    ),
    (
        "server.http-parseopt-",
        "glint always parses request heads and Host strictly",
    ),
    (
        "static-file.disable-pathinfo",
        "glint never serves a static file for a path with more after its name",
    ),
    ("simple-vhost.debug", "log verbosity only"),
    (
        "server.reject-expect-100-with-417",
        "lighttpd 1.4.69 reads it and ignores it too: Expect: 100-continue is answered as RFC 9110 says",
    ),
    ("proxy.debug", "log verbosity only"),
    ("dir-listing.cache", "listings are built for each request"),
    (
        "gzip.",
        "not an option of lighttpd's own: it reads gzip.* only as keys of deflate.params, which glint honours",
    ),
    ("ssl.dh-file", "glint offers no finite-field DHE: TLS 1.2 uses ECDHE, TLS 1.3 its own groups"),
    ("ssl.ec-curve", "rustls negotiates X25519, P-256 or P-384 (set ssl.openssl.ssl-conf-cmd \"Groups\" to choose)"),
    ("ssl.empty-fragments", "a TLS 1.0 workaround; glint speaks TLS 1.2 and 1.3 only"),
];

/// Options accepted only with the value that is both lighttpd's default
/// and what glint does; any other value is refused like an option glint
/// does not provide. Values compare as lighttpd's booleans do.
const DEFAULT_ONLY: &[(&str, Default)] = &[
    // Protocols glint never speaks, at the value that turns them off.
    ("ssl.use-sslv2", Default::Bool(false)),
    ("ssl.use-sslv3", Default::Bool(false)),
    ("ssl.use-compression", Default::Bool(false)),
];

#[derive(Debug, Clone, Copy)]
enum Default {
    Bool(bool),
}

impl Default {
    fn is(&self, v: &Value) -> bool {
        match (self, v) {
            (Default::Bool(b), Value::Int(i)) => (*i != 0) == *b,
            (Default::Bool(b), Value::Str(s)) => {
                let on = s.eq_ignore_ascii_case("enable") || s.eq_ignore_ascii_case("true");
                let off = s.eq_ignore_ascii_case("disable") || s.eq_ignore_ascii_case("false");
                (*b && on) || (!*b && off)
            }
            _ => false,
        }
    }
}

/// Keys of `server.http-parseopts` and whether glint's fixed handling of
/// request targets is what the key asks for with any value (`None`), or
/// only with this one. glint decodes a path once, removes dot segments,
/// refuses control characters, backslashes and bytes that are not UTF-8
/// (400), keeps `%2F` inside a segment, and never rewrites the query.
const PARSEOPTS: &[(&str, Option<bool>)] = &[
    ("header-strict", None),
    ("host-strict", None),
    ("host-normalize", None),
    ("method-get-body", None),
    ("url-normalize", None),
    ("url-normalize-unreserved", None),
    ("url-normalize-required", None),
    ("url-ctrls-reject", None),
    ("url-path-backslash-trans", None),
    ("url-path-2f-decode", None),
    ("url-path-2f-reject", None),
    ("url-path-dotseg-remove", None),
    ("url-path-dotseg-reject", None),
    ("url-invalid-utf8-reject", None),
    // `+` for `%20` changes the query string a backend sees.
    ("url-query-20-plus", Some(false)),
];

/// Keys of `server.feature-flags` glint accepts (`server.h2proto`,
/// `server.h2c`, `ssl.session-cache`, `server.absolute-dir-redirect` and
/// `auth.delay-invalid-creds` are read by `options::apply`; the others
/// change neither what is served nor how it is protected).
const FEATURE_FLAGS: &[&str] = &[
    "server.graceful-restart-bg",
    "server.graceful-shutdown-timeout",
    "server.clock-jump-restart",
    "server.metrics-high-precision",
    "server.errorlog-high-precision",
    "server.h1-discard-backend-1xx",
    "server.h2-discard-backend-1xx",
    "server.h2proto",
    "server.h2c",
    "server.absolute-dir-redirect",
    "server.pcre_jit",
    "ssl.session-cache",
    "auth.http-goaway-invalid-creds",
    "auth.delay-invalid-creds",
];

/// Decides about option `key` set to `v`, which `options::apply` does not
/// take. `Err` is a message about the value (for options glint accepts
/// only partly).
pub fn classify(key: &str, v: &Value) -> Result<Support, String> {
    if key == "server.http-parseopts" {
        return parseopts(v).map(|()| Support::DefaultValue);
    }
    if let Some((_, reason)) = IGNORED.iter().find(|(k, _)| {
        if k.ends_with('.') || k.ends_with('-') {
            key.starts_with(k)
        } else {
            key == *k
        }
    }) {
        return Ok(Support::Ignored(reason));
    }
    if let Some((_, d)) = DEFAULT_ONLY.iter().find(|(k, _)| *k == key) {
        if d.is(v) {
            return Ok(Support::DefaultValue);
        }
        return Ok(Support::NotDefault(module_of(key).unwrap_or("core")));
    }
    Ok(match module_of(key) {
        Some(m) => Support::NotProvided(m),
        None => Support::Unknown,
    })
}

fn parseopts(v: &Value) -> Result<(), String> {
    let Value::Array(items) = v else {
        return Err("expects an array of \"option\" => \"enable\"|\"disable\"".into());
    };
    for (k, val) in items {
        let Some(k) = k else {
            return Err("expects an array of \"option\" => \"enable\"|\"disable\"".into());
        };
        let on = match val {
            Value::Str(s) if s.eq_ignore_ascii_case("enable") => true,
            Value::Str(s) if s.eq_ignore_ascii_case("disable") => false,
            Value::Int(i) => *i != 0,
            _ => return Err(format!("{k}: expects \"enable\" or \"disable\"")),
        };
        match PARSEOPTS.iter().find(|(name, _)| name == k) {
            None => return Err(format!("unrecognized key {k}")),
            Some((_, Some(want))) if *want != on => {
                return Err(format!(
                    "\"{k}\" => \"{}\" is not provided by glint",
                    if on { "enable" } else { "disable" }
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Checks `server.feature-flags`: every flag must be one glint knows.
pub(super) fn feature_flags(v: &Value) -> Result<(), String> {
    let Value::Array(items) = v else {
        return Err("expects an array of \"flag\" => value".into());
    };
    for (k, _) in items {
        match k {
            Some(k) if FEATURE_FLAGS.contains(&k.as_str()) => {}
            Some(k) => return Err(format!("feature flag \"{k}\" is not provided by glint")),
            None => return Err("expects an array of \"flag\" => value".into()),
        }
    }
    Ok(())
}

/// The lighttpd 1.4.69 module that reads `key` ("core" for the server's
/// own options), or `None` when lighttpd does not know the option.
pub fn module_of(key: &str) -> Option<&'static str> {
    LIGHTTPD_OPTIONS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, m)| *m)
        .or_else(|| {
            // Every name in these modules' namespaces belongs to them,
            // including names of later lighttpd versions.
            LIGHTTPD_NAMESPACES
                .iter()
                .find(|(p, _)| key.starts_with(p))
                .map(|(_, m)| *m)
        })
}

/// Option prefixes owned by one lighttpd module.
const LIGHTTPD_NAMESPACES: &[(&str, &str)] = &[
    ("ssl.", "mod_openssl"),
    ("auth.", "mod_auth"),
    ("cgi.", "mod_cgi"),
    ("alias.", "mod_alias"),
    ("extforward.", "mod_extforward"),
    ("proxy.", "mod_proxy"),
    ("magnet.", "mod_magnet"),
    ("userdir.", "mod_userdir"),
    ("evhost.", "mod_evhost"),
    ("ssi.", "mod_ssi"),
    ("secdownload.", "mod_secdownload"),
    ("wstunnel.", "mod_wstunnel"),
    ("sockproxy.", "mod_sockproxy"),
    ("ajp13.", "mod_ajp13"),
    ("vhostdb.", "mod_vhostdb"),
    ("maxminddb.", "mod_maxminddb"),
    ("evasive.", "mod_evasive"),
    ("usertrack.", "mod_usertrack"),
    ("trigger-before-download.", "mod_trigger_b4_dl"),
    ("upload-progress.", "mod_uploadprogress"),
    ("flv-streaming.", "mod_flv_streaming"),
    ("geoip.", "mod_geoip"),
];

/// Every option lighttpd 1.4.69 reads that glint has no field for, with
/// the module that reads it (from the `config_plugin_keys_t` tables of
/// its sources).
const LIGHTTPD_OPTIONS: &[(&str, &str)] = &[
    ("mimetype.use-xattr", "core"),
    ("mimetype.xattr-name", "core"),
    ("server.protocol-http11", "core"),
    ("connection.kbytes-per-second", "core"),
    ("server.error-intercept", "core"),
    ("server.kbytes-per-second", "core"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    #[test]
    fn classification_table() {
        let cases: &[(&str, Value, Support, &str)] = &[
            (
                "auth.backend.ldap.hostname",
                s("x"),
                Support::NotProvided("mod_auth"),
                "LDAP is not provided",
            ),
            (
                "ssl.use-sslv3",
                s("enable"),
                Support::NotDefault("mod_openssl"),
                "SSLv3 is not provided",
            ),
            (
                "ssl.use-sslv3",
                s("disable"),
                Support::DefaultValue,
                "SSLv3 off is what glint does",
            ),
            (
                "ssl.some-later-option",
                s("x"),
                Support::NotProvided("mod_openssl"),
                "an unknown ssl.* option is refused",
            ),
            (
                "extforward.later-option",
                s("x"),
                Support::NotProvided("mod_extforward"),
                "an extforward option of a later lighttpd is refused",
            ),
            (
                "alias.later-option",
                s("x"),
                Support::NotProvided("mod_alias"),
                "an alias option of a later lighttpd is refused",
            ),
            (
                "secdownload.secret",
                s("x"),
                Support::NotProvided("mod_secdownload"),
                "by namespace",
            ),
            (
                "debug.log-request-handling",
                s("enable"),
                Support::Ignored("log verbosity only"),
                "debug ignored",
            ),
            (
                "ssl.use-sslv3",
                Value::Int(0),
                Support::DefaultValue,
                "SSLv3 off is the default",
            ),
            (
                "server.documnet-root",
                s("/x"),
                Support::Unknown,
                "a typo is unknown to lighttpd too",
            ),
        ];
        for (key, v, want, why) in cases {
            assert_eq!(classify(key, v), Ok(*want), "{why}: {key}");
        }
    }

    /// The table of ignored options (docs/configuration.md) names every one of them.
    #[test]
    fn readme_lists_every_ignored_option() {
        let readme = include_str!("../../docs/configuration.md");
        for (key, _) in IGNORED {
            let name = key.trim_end_matches(['.', '-']);
            assert!(
                readme.contains(name),
                "README.md does not list the ignored option {key}"
            );
        }
    }

    #[test]
    fn parseopts_and_feature_flags() {
        let opts = |k: &str, v: &str| Value::Array(vec![(Some(k.into()), s(v))]);
        assert!(classify(
            "server.http-parseopts",
            &opts("url-path-2f-decode", "enable")
        )
        .is_ok());
        assert!(classify(
            "server.http-parseopts",
            &opts("url-query-20-plus", "enable")
        )
        .is_err());
        assert!(classify(
            "server.http-parseopts",
            &opts("url-query-20-plus", "disable")
        )
        .is_ok());
        assert!(classify("server.http-parseopts", &opts("no-such", "enable")).is_err());
        assert!(feature_flags(&opts("server.h2proto", "enable")).is_ok());
        assert!(feature_flags(&opts("server.unknown", "enable")).is_err());
    }
}
