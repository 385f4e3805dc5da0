//! What a WebDAV method needs of its request, owned (a job outlives the
//! parsed request): the paths, the headers mod_webdav reads, the user
//! mod_auth let in, the database.

use std::rc::Rc;

use super::store::Store;
use crate::config::Settings;

/// The methods mod_webdav handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DavMethod {
    Propfind,
    Proppatch,
    Mkcol,
    Delete,
    Put,
    Copy,
    Move,
    Lock,
    Unlock,
}

impl DavMethod {
    pub fn of(method: &str) -> Option<DavMethod> {
        Some(match method {
            "PROPFIND" => DavMethod::Propfind,
            "PROPPATCH" => DavMethod::Proppatch,
            "MKCOL" => DavMethod::Mkcol,
            "DELETE" => DavMethod::Delete,
            "PUT" => DavMethod::Put,
            "COPY" => DavMethod::Copy,
            "MOVE" => DavMethod::Move,
            "LOCK" => DavMethod::Lock,
            "UNLOCK" => DavMethod::Unlock,
            _ => return None,
        })
    }

    /// Refused on a read-only share (`webdav.is-readonly`). LOCK and
    /// UNLOCK are not, as lighttpd.
    pub fn writes(self) -> bool {
        !matches!(
            self,
            DavMethod::Propfind | DavMethod::Lock | DavMethod::Unlock
        )
    }

    /// A body here is refused with 415 (RFC 4918 8.4).
    pub fn rejects_body(self) -> bool {
        matches!(
            self,
            DavMethod::Unlock
                | DavMethod::Delete
                | DavMethod::Move
                | DavMethod::Copy
                | DavMethod::Mkcol
        )
    }

    /// The request's own resource must not be locked by someone else.
    pub fn locks_source(self) -> bool {
        matches!(
            self,
            DavMethod::Delete | DavMethod::Move | DavMethod::Proppatch | DavMethod::Put
        )
    }
}

/// One WebDAV request, as its method sees it.
pub struct Ctx {
    pub method: DavMethod,
    pub settings: Rc<Settings>,
    /// The URL path, decoded and normalised (lighttpd's `rel_path`): the
    /// resource's name in hrefs and in the database.
    pub rel: String,
    /// Its file system path.
    pub path: String,
    /// The directory the path lives below (the docroot, or where mod_alias
    /// or mod_userdir put it): symlink checks stop here.
    pub base: String,
    /// `server.document-root` (for a Destination mod_alias does not map).
    pub docroot: String,
    /// `http` or `https`, and the Host, for Destination.
    pub scheme: String,
    pub authority: String,
    /// The request target as sent had a fragment (`#`).
    pub has_fragment: bool,
    /// The user mod_auth let in (a lock's owner).
    pub user: Option<String>,
    /// The body's length (`None`: chunked).
    pub body_len: Option<u64>,
    /// The request headers mod_webdav reads: (lowercase name, value).
    pub headers: Vec<(String, String)>,
    pub store: Option<Rc<Store>>,
}

/// The request headers mod_webdav reads.
pub const READ_HEADERS: &[&str] = &[
    "depth",
    "overwrite",
    "destination",
    "if",
    "lock-token",
    "timeout",
    "content-type",
    "content-range",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "user-agent",
];

impl Ctx {
    /// A request header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `Depth`: 0, 1, or -1 (infinity, also when absent), as lighttpd
    /// reads it: by its first character.
    pub fn depth(&self) -> i32 {
        match self.header("depth").and_then(|d| d.bytes().next()) {
            Some(b'0') => 0,
            Some(b'1') => 1,
            _ => -1,
        }
    }

    /// The ETag flags of static files are on (`static-file.etags`).
    pub fn etags(&self) -> bool {
        let s = &self.settings;
        s.static_file.etags
            && (s.static_file.use_inode || s.static_file.use_mtime || s.static_file.use_size)
    }

    /// The body is XML by its `Content-Type` (`application/xml`,
    /// `text/xml`), or has none (see docs/mod_webdav.md: lighttpd asks
    /// for one; litmus and some clients send none).
    pub fn body_is_xml(&self) -> bool {
        match self.header("content-type") {
            None => true,
            Some(ct) => {
                let t = ct.split(';').next().unwrap_or("").trim();
                t == "application/xml" || t == "text/xml"
            }
        }
    }

    /// With `server.follow-symlink` off, a symlink on the path below its
    /// base refuses the request, as it refuses a GET.
    pub fn symlink_refused(&self) -> bool {
        !self.settings.files.follow_symlink && symlink_below(&self.path, &self.base)
    }

    /// The lock owner: the authenticated user, or "" without one.
    pub fn owner(&self) -> &str {
        self.user.as_deref().unwrap_or("")
    }
}

/// Whether a component of `path` below `base` is a symlink.
pub fn symlink_below(path: &str, base: &str) -> bool {
    let base = base.trim_end_matches('/');
    let Some(rest) = path.strip_prefix(base) else {
        return false;
    };
    let mut end = base.len();
    for seg in rest.split('/') {
        if seg.is_empty() {
            end += 1;
            continue;
        }
        end += seg.len();
        if let Some(p) = path.get(..end) {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return true;
            }
        }
        end += 1;
    }
    false
}
