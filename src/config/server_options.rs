//! Core `server.*` options of one scope, grouped by what they decide: how
//! files are found and sent, glint's own error answers, which HTTP versions
//! are offered, where the error log goes, where a request's files are.

use std::path::PathBuf;

use super::origin::Origin;

/// How files are found and sent: symlinks, ranges, case, index files,
/// content types.
#[derive(Debug, Clone, PartialEq)]
pub struct FileOptions {
    /// `server.follow-symlink` (default enable).
    pub follow_symlink: bool,
    /// `server.range-requests` (default enable).
    pub range_requests: bool,
    /// `server.force-lowercase-filenames` (default disable): file system
    /// paths are looked up in lowercase and access suffixes match without case.
    pub force_lowercase_filenames: bool,
    /// `index-file.names` (default `index.html`, `index.htm`).
    pub index_file_names: Vec<String>,
    /// `mimetype.assign`: suffix => type, checked before mime_guess (longest suffix wins).
    pub mimetype_assign: Vec<(String, String)>,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            follow_symlink: true,
            range_requests: true,
            force_lowercase_filenames: false,
            index_file_names: vec!["index.html".into(), "index.htm".into()],
            mimetype_assign: Vec::new(),
        }
    }
}

/// glint's own error answers: their page files, the handlers run instead,
/// and whether a backend's error is replaced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorPages {
    /// `server.errorfile-prefix`: `<prefix><status>.html` is the body of an error.
    pub errorfile_prefix: Option<String>,
    /// `server.error-handler-404`: a URL served instead of a 404.
    pub error_handler_404: Option<String>,
    /// `server.error-handler`: a URL run instead of any error answer
    /// (4xx, 5xx) glint itself would give, as a GET; the status stays.
    pub error_handler: Option<String>,
    /// `server.error-intercept` (default disable): a backend's 4xx or 5xx
    /// answer is replaced by glint's own error answer for its status
    /// (`server.errorfile-prefix`, `server.error-handler`).
    pub error_intercept: bool,
}

/// `glint.h3`'s default (docs/http3.md).
pub const DEFAULT_H3: bool = false;

/// The HTTP versions offered: HTTP/1.1, HTTP/2 (by ALPN, preface or
/// Upgrade) and HTTP/3.
#[derive(Debug, Clone, PartialEq)]
pub struct Protocols {
    /// glint's `glint.h3` (per socket; see docs/http3.md): HTTP/3 over
    /// QUIC on a UDP socket beside each TLS socket of this scope.
    pub h3: bool,
    /// `server.h2proto` (or `server.feature-flags` `"server.h2proto"`):
    /// HTTP/2 is offered, by ALPN `h2` over TLS and to a client that opens
    /// a cleartext connection with the HTTP/2 preface (lighttpd's default:
    /// on; global).
    pub h2proto: bool,
    /// `server.h2c` (or its `server.feature-flags` form): HTTP/1.1's
    /// `Upgrade: h2c` is followed on cleartext connections; needs
    /// `h2proto` (lighttpd's default: on; global).
    pub h2c: bool,
    /// `server.protocol-http11` (default enable): disabled, an HTTP/1.1
    /// request is answered as HTTP/1.0 and the connection closes after it.
    pub protocol_http11: bool,
}

impl Default for Protocols {
    fn default() -> Self {
        Protocols {
            h3: DEFAULT_H3,
            h2proto: true,
            h2c: true,
            protocol_http11: true,
        }
    }
}

/// Where the error log goes: a file, a pipe, or syslog (global).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorLog {
    /// `server.errorlog`: file for the error log (default stderr).
    pub file: Option<String>,
    /// `server.errorlog-use-syslog` (default disable; global).
    pub use_syslog: bool,
    /// `server.syslog-facility` (default `daemon`; global).
    pub syslog_facility: Option<String>,
}

/// Where a request's files are: the document root, mod_evhost's pattern,
/// mod_alias's prefixes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PathMapping {
    /// `server.document-root`: the directory files are served from.
    pub document_root: Option<PathBuf>,
    /// Where `server.document-root` was set, for the start-up error.
    pub document_root_origin: Option<Origin>,
    /// `evhost.path-pattern`: the docroot built from the Host's parts
    /// (`%0` domain, `%1` tld, `%2` domain without tld, `%3`.. subdomains,
    /// `%_` the whole name).
    pub evhost_path_pattern: Option<String>,
    /// `alias.url`: URL prefix => file system path; the longest prefix
    /// that starts the path maps it below its directory.
    pub alias_url: Vec<(String, String)>,
    /// `document_root` as UTF-8, set beside it by
    /// [`super::Settings::set_document_root`] (see
    /// [`super::Settings::docroot_str`]).
    pub document_root_utf8: Option<String>,
}

/// How glint names itself and its host in answers: the `Server` header,
/// the host of a redirect.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// `server.tag`: the `Server` response header (default `glint/<version>`).
    pub tag: String,
    /// `server.name`: used in redirects when the request has no Host.
    pub server_name: Option<String>,
    /// `server.feature-flags` `"server.absolute-dir-redirect"` (default
    /// disable): a directory's redirect names scheme and host too.
    pub absolute_dir_redirect: bool,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            tag: concat!("glint/", env!("CARGO_PKG_VERSION")).to_string(),
            server_name: None,
            absolute_dir_redirect: false,
        }
    }
}
