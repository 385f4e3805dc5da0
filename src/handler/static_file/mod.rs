//! Static files: stat, directory indexes, ETag and conditional requests,
//! Range, MIME types.

mod answer;
mod cache;
mod form;
mod fs;
mod index;
mod validators;

use std::rc::Rc;

use httparse::Header;

use super::deflate::Deflater;
use crate::config::Settings;
use crate::date::format_http_date;
use crate::msg::request::Method;
use crate::msg::status::itoa_u64;
use crate::msg::Reply;

use answer::serve_file;
use fs::{open, redirect_to_dir};

pub use super::mime::content_type;
pub use cache::{FileCache, OpenFile};
pub use index::find_index;
pub use validators::etag_of;

/// Files up to this size are read into the response buffer so that head and
/// body leave in one `send`; larger ones go by `sendfile`. At 16 KiB the copy
/// costs less than the second system call it saves.
pub const SMALL_FILE: u64 = 16 * 1024;

/// Where the connection copies a file's bytes into its output anyway
/// (HTTP/2 and HTTP/3 frame them, TLS encrypts them), files up to this
/// size are kept in memory too: each answer then copies them from there,
/// where it read them with one `pread` per frame or record (two system
/// calls per answer of a 25 KB image over h2c, 2 of its 2.5).
pub const COPY_FILE: u64 = 32 * 1024;

/// The largest file sent from memory to a connection that `copies` file
/// bytes or not: what the cache reads in when it opens one, and what an
/// answer takes from memory.
pub(super) fn in_memory_limit(copies: bool) -> u64 {
    if copies {
        COPY_FILE
    } else {
        SMALL_FILE
    }
}

/// What the static handler needs to know about a request.
pub struct StaticRequest<'r> {
    pub method: Method,
    /// `http` or `https`, for redirects.
    pub scheme: &'r str,
    /// The path as the client sent it (still percent-encoded), for redirects.
    pub raw_path: &'r str,
    /// The decoded, normalised path.
    pub path: &'r str,
    /// Where the path is below `docroot` on the file system: the path
    /// itself, or what mod_userdir or mod_alias left of it (empty for the
    /// directory `docroot` itself).
    pub fs_rel: &'r str,
    pub query: &'r str,
    /// The Host (validated by the parser: no CR, LF, `/`).
    pub host: &'r [u8],
    pub headers: &'r [Header<'r>],
    /// The document root for this request (`server.document-root` or a virtual host's).
    pub docroot: Option<&'r str>,
    /// Wall-clock seconds, for `Expires`.
    pub now: i64,
    /// Monotonic seconds, for the file cache.
    pub mono: u64,
    /// The connection copies file bytes rather than sending them by
    /// `sendfile` (HTTP/2, HTTP/3, TLS): see [`COPY_FILE`].
    pub copies: bool,
}

impl StaticRequest<'_> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }
}

/// Serves `req.path` from the docroot of `r.settings`.
/// `scratch` is a reusable buffer for building file system paths;
/// `dz` compresses into `deflate.cache-dir`.
pub fn serve(
    req: &StaticRequest<'_>,
    r: &mut Reply,
    scratch: &mut String,
    cache: &mut FileCache,
    dz: &mut Deflater,
) {
    let settings = Rc::clone(&r.settings);
    let s: &Settings = &settings;
    let Some(root) = req.docroot else {
        log::error!(
            "no server.document-root for host {:?}",
            String::from_utf8_lossy(req.host)
        );
        return r.error(500);
    };
    scratch.clear();
    scratch.push_str(root.trim_end_matches('/'));
    push_rel_path(scratch, req.fs_rel, s);
    // Symlink checks walk the path each time; only the default setting is cached.
    let cacheable = s.files.follow_symlink;
    let settings_id = s.stamp.get();
    if cacheable {
        if let Some(e) = cache.get(scratch, settings_id, req.mono) {
            return serve_file(req, r, &e, scratch, dz);
        }
    }

    let (file, meta) = match open(scratch, s, root) {
        Ok(f) => f,
        Err(status) => return r.error(status),
    };
    if meta.is_dir() {
        return serve_dir(req, r, scratch, s);
    }
    if !meta.is_file() {
        return r.error(403);
    }
    let keep = in_memory_limit(req.copies);
    let e = Rc::new(OpenFile::new(
        file,
        &meta,
        scratch,
        s,
        (settings_id, req.mono),
        keep,
    ));
    if cacheable {
        cache.insert(scratch, Rc::clone(&e));
    }
    serve_file(req, r, &e, scratch, dz)
}

/// A directory: a redirect to its path with a slash, its listing, or 403.
/// Its index file, if it has one, was found before (`find_index`) and
/// answered as a request of its own.
fn serve_dir(req: &StaticRequest<'_>, r: &mut Reply, fs_path: &str, s: &Settings) {
    if !req.path.ends_with('/') {
        return redirect_to_dir(req, r);
    }
    if !(s.dir_listing.activate && matches!(req.method, Method::Get | Method::Head)) {
        return r.error(403);
    }
    match super::dirlisting::render(fs_path, req.path, s) {
        Ok(page) => {
            r.start(200);
            let charset = s
                .dir_listing
                .encoding
                .as_deref()
                .filter(|c| {
                    c.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                })
                .unwrap_or("utf-8");
            let ct = format!("text/html; charset={charset}");
            r.body_bytes(ct.as_bytes(), &page)
        }
        Err(e) => {
            log::warn!("listing {fs_path}: {e}");
            r.error(403)
        }
    }
}

/// `static-file.exclude-extensions`: a path with one of these suffixes
/// (`""` is every path) is never sent as a file, as lighttpd's
/// mod_staticfile declines it.
pub fn excluded(path: &str, s: &Settings) -> bool {
    // Under `server.force-lowercase-filenames` the file's name is the
    // path in lower case: a suffix matches in any case (`/image.JPG` is
    // `image.jpg`), as lighttpd checks the lowercased physical path.
    s.static_file.exclude_extensions.iter().any(|suffix| {
        if s.files.force_lowercase_filenames {
            path.len() >= suffix.len()
                && path.is_char_boundary(path.len() - suffix.len())
                && path[path.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
        } else {
            path.ends_with(suffix.as_str())
        }
    })
}

/// Appends the file system form of URL path `path` to `out`: lowercased
/// under `server.force-lowercase-filenames`.
fn push_rel_path(out: &mut String, path: &str, s: &Settings) {
    if s.files.force_lowercase_filenames {
        out.extend(path.chars().flat_map(char::to_lowercase));
    } else {
        out.push_str(path);
    }
}

/// One `Name: value` line into pre-rendered header lines.
fn header_line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

fn write_expire(r: &mut Reply, req: &StaticRequest<'_>, ctype: &str, mtime: i64) {
    // mod_expire without rules (or not loaded): nothing to look up.
    let e = &r.settings.expire;
    if e.url.is_empty() && e.mimetypes.is_empty() {
        return;
    }
    let Some(rule) = super::expire::rule_for(&r.settings, req.path, ctype) else {
        return;
    };
    if let Some((at, max_age)) = super::expire::compute(rule, req.now, mtime) {
        r.header("Expires", &format_http_date(at));
        let mut cc = b"max-age=".to_vec();
        cc.extend_from_slice(itoa_u64(max_age).as_bytes());
        r.header("Cache-Control", &cc);
    }
}

fn write_content_type(r: &mut Reply, (t, charset): (&str, bool)) {
    let m = &mut r.fields;
    m.extend_from_slice(b"Content-Type: ");
    m.extend_from_slice(t.as_bytes());
    if charset {
        m.extend_from_slice(b"; charset=utf-8");
    }
    m.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests;
