//! Static files: stat, directory indexes, ETag and conditional requests,
//! Range, MIME types.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, Metadata, OpenOptions};
use std::hash::BuildHasherDefault;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::rc::Rc;

use httparse::Header;
use nix::libc;

use super::deflate::{compress_now, Deflater};
use crate::compress::negotiate::{cacheable, parse_accept_encoding, variant_etag};
use crate::compress::pool::{Job, SourceId};
use crate::compress::{cache, decide, precompressed, Coding, Decision, ResponseFacts};
use crate::config::Settings;
use crate::date::{format_http_date, parse_http_date};
use crate::hash;
use crate::msg::range::{parse_range, RangeRequest};
use crate::msg::request::{trim_ows, Method};
use crate::msg::status::itoa_u64;
use crate::msg::Reply;

/// Files up to this size are read into the response buffer so that head and
/// body leave in one `send`; larger ones go by `sendfile`. At 16 KiB the copy
/// costs less than the second system call it saves.
pub const SMALL_FILE: u64 = 16 * 1024;

/// An open regular file and what its responses need. Kept in the
/// [`FileCache`] for about a second, so that a busy file costs no `open`,
/// `fstat` or `read` per request (lighttpd's stat cache and nginx's
/// open_file_cache do the same; a changed file is seen within a second).
pub struct OpenFile {
    file: Rc<File>,
    len: u64,
    v: Validators,
    ctype: (String, bool),
    /// The content of a small file, sent from memory in the same `send` as the head.
    small: Option<Rc<[u8]>>,
    /// The settings the entry was made under (MIME types and ETag options differ per scope).
    settings_id: usize,
    born: u64,
    meta: Metadata,
    /// The `Content-Type` value as sent, which `deflate.mimetypes` matches.
    ctype_value: String,
    /// `ETag` and `Last-Modified` lines, rendered once per entry.
    validator_lines: Vec<u8>,
    /// `Accept-Ranges` and `Content-Type` lines, rendered once per entry:
    /// with the validators, one copy each instead of four header calls.
    type_lines: Vec<u8>,
    /// Its compressed forms found so far, kept as long as the entry.
    variants: RefCell<Variants>,
}

/// The compressed forms of one file: precompressed siblings (looked for
/// once per entry) and copies in `deflate.cache-dir` (opened once found).
#[derive(Default)]
struct Variants {
    siblings: Option<Vec<Rc<Variant>>>,
    cached: Vec<(Coding, Rc<Variant>)>,
}

/// A compressed form of a file that is a file of its own.
struct Variant {
    coding: Coding,
    file: Rc<File>,
    len: u64,
    small: Option<Rc<[u8]>>,
    /// The identity ETag the variant's tag is made from: the sibling's own
    /// (a rebuilt `.br` is a new tag), or the file's for a cached copy.
    base_etag: Option<String>,
    last_modified: [u8; 29],
    mtime: i64,
}

impl Variant {
    fn open(coding: Coding, file: File, meta: &Metadata, base: Option<String>) -> Variant {
        let len = meta.size();
        let small = (len <= SMALL_FILE).then(|| read_all(&file, len)).flatten();
        Variant {
            coding,
            file: Rc::new(file),
            len,
            small,
            base_etag: base,
            last_modified: format_http_date(meta.mtime()),
            mtime: meta.mtime(),
        }
    }
}

/// Most entries in the [`FileCache`], and most bytes of small-file content it holds.
const CACHE_ENTRIES: usize = 1024;
const CACHE_BYTES: usize = 4 * 1024 * 1024;

/// The hash of the [`FileCache`]'s keys: FxHash (rustc's: a rotate, xor
/// and multiply per 8 bytes), with the well-mixed high bits rotated down
/// for hashbrown's bucket index. std's SipHash cost 170 of the 8,100
/// instructions of a keep-alive request for a small file (callgrind).
/// Flooding is no concern here: only paths that opened are inserted.
#[derive(Default, Clone, Copy)]
pub struct PathHasher(u64);

const FX_K: u64 = 0xf135_7aea_2e62_a9c5;

impl std::hash::Hasher for PathHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(FX_K);
        }
        for &b in words.remainder() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

type PathMap<V> = HashMap<String, V, BuildHasherDefault<PathHasher>>;

/// Recently opened files by file system path, and the index file found
/// in recently asked directories.
#[derive(Default)]
pub struct FileCache {
    map: PathMap<Rc<OpenFile>>,
    bytes: usize,
    /// Directory path => (settings id, when, the index file's URL path or none).
    indexes: PathMap<(usize, u64, Option<String>)>,
}

impl FileCache {
    fn index_of(&self, dir: &str, settings_id: usize, now: u64) -> Option<Option<&str>> {
        self.indexes
            .get(dir)
            .filter(|(id, born, _)| *id == settings_id && now <= born + 1)
            .map(|(_, _, found)| found.as_deref())
    }

    fn put_index(&mut self, dir: &str, settings_id: usize, now: u64, found: Option<String>) {
        if self.indexes.len() < CACHE_ENTRIES {
            self.indexes
                .insert(dir.to_string(), (settings_id, now, found));
        }
    }

    fn get(&self, path: &str, settings_id: usize, now: u64) -> Option<Rc<OpenFile>> {
        self.map
            .get(path)
            .filter(|e| e.settings_id == settings_id && now <= e.born + 1)
            .cloned()
    }

    fn insert(&mut self, path: &str, e: Rc<OpenFile>) {
        let size = e.small.as_ref().map_or(0, |b| b.len());
        if self.map.len() >= CACHE_ENTRIES || self.bytes + size > CACHE_BYTES {
            return;
        }
        self.bytes += size;
        if let Some(old) = self.map.insert(path.to_string(), e) {
            self.bytes -= old.small.as_ref().map_or(0, |b| b.len());
        }
    }

    /// Drops entries older than a second (called once a second); their files close.
    pub fn purge(&mut self, now: u64) {
        self.indexes.retain(|_, (_, born, _)| now <= *born + 1);
        let mut freed = 0;
        self.map.retain(|_, e| {
            let keep = now <= e.born + 1;
            if !keep {
                freed += e.small.as_ref().map_or(0, |b| b.len());
            }
            keep
        });
        self.bytes -= freed;
    }

    /// Closes every cached file (out of descriptors).
    pub fn clear(&mut self) {
        self.map.clear();
        self.indexes.clear();
        self.bytes = 0;
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

/// The request headers a file's answer depends on (the first of each
/// name), found in one pass over the headers instead of one per name.
#[derive(Default)]
struct Conditions<'a> {
    if_match: Option<&'a [u8]>,
    if_unmodified_since: Option<&'a [u8]>,
    if_none_match: Option<&'a [u8]>,
    if_modified_since: Option<&'a [u8]>,
    range: Option<&'a [u8]>,
    if_range: Option<&'a [u8]>,
}

impl<'a> Conditions<'a> {
    fn of(headers: &[Header<'a>]) -> Conditions<'a> {
        let mut c = Conditions::default();
        for h in headers {
            let n = h.name.as_bytes();
            let slot = match n.len() {
                5 if n.eq_ignore_ascii_case(b"range") => &mut c.range,
                8 if n.eq_ignore_ascii_case(b"if-match") => &mut c.if_match,
                8 if n.eq_ignore_ascii_case(b"if-range") => &mut c.if_range,
                13 if n.eq_ignore_ascii_case(b"if-none-match") => &mut c.if_none_match,
                17 if n.eq_ignore_ascii_case(b"if-modified-since") => &mut c.if_modified_since,
                19 if n.eq_ignore_ascii_case(b"if-unmodified-since") => &mut c.if_unmodified_since,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(h.value);
            }
        }
        c
    }
}

const ALLOW: &[u8] = b"GET, HEAD, OPTIONS";

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
    let cacheable = s.follow_symlink;
    let settings_id = s as *const Settings as usize;
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
        if !req.path.ends_with('/') {
            return redirect_to_dir(req, r);
        }
        // Its index file, if it has one, was found before (`find_index`)
        // and answered as a request of its own.
        if s.dir_listing && matches!(req.method, Method::Get | Method::Head) {
            return match super::dirlisting::render(scratch, req.path, s) {
                Ok(page) => {
                    r.start(200);
                    let charset = s
                        .dir_listing_encoding
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
                    log::warn!("listing {scratch}: {e}");
                    r.error(403)
                }
            };
        }
        return r.error(403);
    }
    if !meta.is_file() {
        return r.error(403);
    }
    let e = Rc::new(OpenFile::new(
        file,
        &meta,
        scratch,
        s,
        settings_id,
        req.mono,
    ));
    if cacheable {
        cache.insert(scratch, Rc::clone(&e));
    }
    serve_file(req, r, &e, scratch, dz)
}

impl OpenFile {
    fn new(
        file: File,
        meta: &std::fs::Metadata,
        fs_path: &str,
        s: &Settings,
        settings_id: usize,
        now: u64,
    ) -> OpenFile {
        let len = meta.size();
        let (t, charset) = content_type(fs_path, s);
        let small = (len <= SMALL_FILE).then(|| read_all(&file, len)).flatten();
        let mut ctype_value = t.to_string();
        if charset {
            ctype_value.push_str("; charset=utf-8");
        }
        let v = Validators::new(meta, s);
        let mut validator_lines = Vec::with_capacity(64);
        if let Some(t) = &v.etag {
            header_line(&mut validator_lines, "ETag", t);
        }
        header_line(&mut validator_lines, "Last-Modified", &v.last_modified);
        let mut type_lines = Vec::with_capacity(64);
        header_line(&mut type_lines, "Accept-Ranges", b"bytes");
        header_line(&mut type_lines, "Content-Type", ctype_value.as_bytes());
        OpenFile {
            file: Rc::new(file),
            len,
            v,
            ctype: (t.to_string(), charset),
            small,
            settings_id,
            born: now,
            meta: meta.clone(),
            ctype_value,
            validator_lines,
            type_lines,
            variants: RefCell::new(Variants::default()),
        }
    }

    /// The precompressed siblings of this file among `offered`, fresh (not
    /// older than the file), opened under the same symlink rules.
    fn siblings(&self, fs_path: &str, s: &Settings, root: &str) -> Vec<Rc<Variant>> {
        if let Some(found) = &self.variants.borrow().siblings {
            return found.clone();
        }
        let mut found = Vec::new();
        for &coding in &s.deflate.precompressed {
            let Some(sfx) = precompressed::suffix(coding) else {
                continue;
            };
            let path = format!("{fs_path}{sfx}");
            let Ok((file, meta)) = open(&path, s, root) else {
                continue;
            };
            let fresh =
                (meta.mtime(), meta.mtime_nsec()) >= (self.meta.mtime(), self.meta.mtime_nsec());
            if meta.is_file() && fresh {
                let base = Validators::new(&meta, s).etag_string();
                found.push(Rc::new(Variant::open(coding, file, &meta, base)));
            }
        }
        self.variants.borrow_mut().siblings = Some(found.clone());
        found
    }

    /// The copy of this file in the cache under `coding`, once opened.
    fn cached(&self, coding: Coding) -> Option<Rc<Variant>> {
        let v = self.variants.borrow();
        v.cached
            .iter()
            .find(|(c, _)| *c == coding)
            .map(|(_, v)| Rc::clone(v))
    }

    /// Opens the cache's copy at `path`, if it was made, and keeps it.
    fn open_cached(&self, coding: Coding, path: &Path) -> Option<Rc<Variant>> {
        let (file, meta) = cache::open_cached(path)?;
        let mut v = Variant::open(coding, file, &meta, self.v.etag_string());
        // A copy is the file's content: the file's modification time.
        v.last_modified = self.v.last_modified;
        v.mtime = self.v.mtime;
        let v = Rc::new(v);
        self.variants
            .borrow_mut()
            .cached
            .push((coding, Rc::clone(&v)));
        Some(v)
    }
}

/// The ETag glint sends for a file with this metadata under `s` (for the
/// cache sweeper: a copy under another tag is stale).
pub fn etag_of(meta: &Metadata, s: &Settings) -> Option<String> {
    Validators::new(meta, s).etag_string()
}

/// Reads a small file whole; None when it is not `len` bytes long any more
/// (it then goes out by sendfile, which notices the change and closes).
fn read_all(file: &File, len: u64) -> Option<Rc<[u8]>> {
    let mut buf = vec![0u8; len as usize];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], done as u64) {
            Ok(0) => return None,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(Rc::from(buf))
}

/// `static-file.exclude-extensions`: a path with one of these suffixes
/// (`""` is every path) is never sent as a file, as lighttpd's
/// mod_staticfile declines it.
pub fn excluded(path: &str, s: &Settings) -> bool {
    // Under `server.force-lowercase-filenames` the file's name is the
    // path in lower case: a suffix matches in any case (`/image.JPG` is
    // `image.jpg`), as lighttpd checks the lowercased physical path.
    s.static_file_exclude_extensions.iter().any(|suffix| {
        if s.force_lowercase_filenames {
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
    if s.force_lowercase_filenames {
        out.extend(path.chars().flat_map(char::to_lowercase));
    } else {
        out.push_str(path);
    }
}

/// mod_indexfile: the URL path of the first of `index-file.names` that is
/// a file in directory `path` (which ends in `/`; on the file system
/// `fs_rel` below `root`), written to `out`; false
/// when `path` is no directory or has none of them. Names starting with
/// `/` are taken from the docroot, as lighttpd does. Answers are kept in
/// `cache` for as long as open files are, so a busy directory costs no
/// `stat` per request.
pub fn find_index(
    root: &str,
    path: &str,
    fs_rel: &str,
    s: &Settings,
    cache: &mut FileCache,
    now: u64,
    out: &mut String,
) -> bool {
    out.clear();
    if s.index_file_names.is_empty() {
        return false;
    }
    // The directory's file system path, built in `out` for the cache
    // lookup: a hit costs no allocation.
    out.push_str(root.trim_end_matches('/'));
    push_rel_path(out, fs_rel, s);
    if !out.ends_with('/') {
        // (An alias target or a home named without its slash.)
        out.push('/');
    }
    let settings_id = s as *const Settings as usize;
    if let Some(found) = cache.index_of(out, settings_id, now) {
        return match found {
            Some(url) => {
                out.clear();
                out.push_str(url);
                true
            }
            None => {
                out.clear();
                false
            }
        };
    }
    let dir = std::mem::take(out);
    let found = match open(&dir, s, root) {
        Ok((_, m)) if m.is_dir() => s.index_file_names.iter().find_map(|name| {
            let (url, fs) = match name.strip_prefix('/') {
                Some(abs) => {
                    let mut fs = root.trim_end_matches('/').to_string();
                    fs.push('/');
                    push_rel_path(&mut fs, abs, s);
                    (format!("/{abs}"), fs)
                }
                None => {
                    let mut fs = dir.clone();
                    push_rel_path(&mut fs, name, s);
                    (format!("{path}{name}"), fs)
                }
            };
            matches!(open(&fs, s, root), Ok((_, m)) if m.is_file()).then_some(url)
        }),
        _ => return false,
    };
    if s.follow_symlink {
        cache.put_index(&dir, settings_id, now, found.clone());
    }
    match found {
        Some(url) => {
            out.push_str(&url);
            true
        }
        None => false,
    }
}

/// Opens a path for reading; errors come back as the status to answer.
fn open(path: &str, s: &Settings, root: &str) -> Result<(File, std::fs::Metadata), u16> {
    // O_NONBLOCK: opening a FIFO must not stall the event loop.
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !s.follow_symlink {
        flags |= libc::O_NOFOLLOW;
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| open_error_status(&e))?;
    let meta = file.metadata().map_err(|_| 500u16)?;
    if !s.follow_symlink && is_symlink_below(path, root) {
        return Err(403);
    }
    Ok((file, meta))
}

/// With `server.follow-symlink = "disable"`, a symlink anywhere below the docroot refuses the path.
fn is_symlink_below(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    let Some(rest) = path.strip_prefix(root) else {
        return false;
    };
    let mut end = root.len();
    for seg in rest.split('/').filter(|s| !s.is_empty()) {
        end += 1 + seg.len();
        if let Some(p) = path.get(..end) {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return true;
            }
        }
    }
    false
}

fn open_error_status(e: &io::Error) -> u16 {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG) => 404,
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::ELOOP) => 403,
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            log::warn!("out of file descriptors opening a file");
            503
        }
        _ => {
            log::warn!("open failed: {e}");
            500
        }
    }
}

/// A directory asked for without its slash: 301 to the path with one. The
/// Location is a path (RFC 9110 10.2.2 allows a relative reference, and
/// lighttpd sends one unless `server.absolute-dir-redirect`), percent-
/// encoded from the decoded path: `/~test%20ä_` goes to `/~test%20%C3%A4_/`.
fn redirect_to_dir(req: &StaticRequest<'_>, r: &mut Reply) {
    let mut loc = Vec::with_capacity(req.path.len() * 3 + req.query.len() + 4);
    encode_path(req.path, &mut loc);
    loc.push(b'/');
    if !req.query.is_empty() {
        loc.push(b'?');
        loc.extend_from_slice(req.query.as_bytes());
    }
    r.error_with(301, &[("Location", &loc)]);
}

/// Percent-encodes a decoded path for a Location: everything but
/// unreserved characters, `/`, `!`, `(`, `)` and `*` (lighttpd's
/// `ENCODING_REL_URI`). An encoded slash, which the decoded path keeps as
/// `%2F`, stays one.
fn encode_path(path: &str, out: &mut Vec<u8>) {
    let b = path.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' && b.get(i + 1..i + 3) == Some(b"2F") {
            out.extend_from_slice(b"%2F");
            i += 3;
            continue;
        }
        if c.is_ascii_alphanumeric() || b"-._~/!()*".contains(&c) {
            out.push(c);
        } else {
            out.push(b'%');
            out.push(b"0123456789ABCDEF"[usize::from(c >> 4)]);
            out.push(b"0123456789ABCDEF"[usize::from(c & 15)]);
        }
        i += 1;
    }
}

/// The validators of one file.
struct Validators {
    etag: Option<[u8; 18]>,
    last_modified: [u8; 29],
    mtime: i64,
}

impl Validators {
    fn etag_string(&self) -> Option<String> {
        self.etag
            .as_ref()
            .map(|t| String::from_utf8_lossy(t).into_owned())
    }

    fn new(meta: &std::fs::Metadata, s: &Settings) -> Self {
        let etag = (s.static_file_etags
            && (s.etag_use_inode || s.etag_use_mtime || s.etag_use_size))
            .then(|| {
                let mut fields = [0u64; 5];
                let mut n = 0;
                let mut take = |v: u64| {
                    fields[n] = v;
                    n += 1;
                };
                if s.etag_use_inode {
                    take(meta.ino());
                    take(meta.dev());
                }
                if s.etag_use_mtime {
                    take(meta.mtime() as u64);
                    take(meta.mtime_nsec() as u64);
                }
                if s.etag_use_size {
                    take(meta.size());
                }
                etag_tag(&fields[..n])
            });
        Validators {
            etag,
            last_modified: format_http_date(meta.mtime()),
            mtime: meta.mtime(),
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The quoted ETag of a file's chosen metadata fields: FNV-1a over their
/// little-endian bytes, opaque, so it does not reveal the inode.
fn etag_tag(fields: &[u64]) -> [u8; 18] {
    let h = fields
        .iter()
        .fold(hash::OFFSET, |h, v| hash::fnv1a_from(h, &v.to_le_bytes()));
    let mut tag = [b'"'; 18];
    for (i, byte) in h.to_be_bytes().iter().enumerate() {
        tag[1 + 2 * i] = HEX[(byte >> 4) as usize];
        tag[2 + 2 * i] = HEX[(byte & 15) as usize];
    }
    tag
}

/// Does an `If-Match` / `If-None-Match` list name our tag? `*` matches any.
/// `weak` compares opaque tags ignoring `W/` (If-None-Match); strong comparison
/// (If-Match, If-Range) never matches a weak tag.
fn etag_matches(list: &[u8], etag: Option<&[u8]>, weak: bool) -> bool {
    let list = trim_ows(list);
    if list == b"*" {
        return etag.is_some();
    }
    let Some(etag) = etag else { return false };
    list.split(|&b| b == b',').any(|t| {
        let t = trim_ows(t);
        match t.strip_prefix(b"W/") {
            Some(inner) => weak && inner == etag,
            None => t == etag,
        }
    })
}

fn header_date(v: &[u8]) -> Option<i64> {
    std::str::from_utf8(v).ok().and_then(parse_http_date)
}

/// Which form of a file answers a GET or HEAD.
enum Form {
    /// The file itself (and Range may apply).
    Identity,
    /// A precompressed sibling or a cached copy, sent as a file.
    Variant(Rc<Variant>, Coding),
    /// Compressed here, whole: a small file.
    Inline(Vec<u8>, Coding),
    /// Compressed as it is sent (no cache): no length in the head.
    Stream(Coding),
}

/// The form of `of` to send, and whether the answer depends on
/// Accept-Encoding (`Vary`). `has_range`: Range will be answered.
fn choose_form(
    req: &StaticRequest<'_>,
    s: &Settings,
    of: &OpenFile,
    fs_path: &str,
    dz: &mut Deflater,
    has_range: bool,
) -> (Form, bool) {
    let spec = &s.deflate;
    let ae = req.header_str("accept-encoding");
    let mut vary = false;
    if !spec.precompressed.is_empty() && !has_range {
        if let Some(root) = req.docroot {
            let siblings = of.siblings(fs_path, s, root);
            if !siblings.is_empty() {
                vary = true;
                let codings: Vec<Coding> = siblings.iter().map(|v| v.coding).collect();
                let chosen = ae.and_then(|ae| parse_accept_encoding(ae).choose_among(&codings));
                if let Some(label) = chosen {
                    let want = if label == Coding::XGzip {
                        Coding::Gzip
                    } else {
                        label
                    };
                    if let Some(v) = siblings.into_iter().find(|v| v.coding == want) {
                        return (Form::Variant(v, label), true);
                    }
                }
            }
        }
    }
    if !spec.enabled() {
        return (Form::Identity, vary);
    }
    let facts = ResponseFacts {
        status: 200,
        request_has_range: has_range,
        content_encoding: None,
        cache_control: None,
        content_type: Some(&of.ctype_value),
        length: Some(of.len),
    };
    let load = dz.load_for(spec, req.mono);
    let coding = match decide(spec, &facts, ae, load) {
        Decision::Skip => return (Form::Identity, vary),
        Decision::Identity => return (Form::Identity, true),
        Decision::Compress(c) => c,
    };
    // A copy opened before: nothing to look up.
    if let Some(v) = of.cached(coding) {
        return (Form::Variant(v, coding), true);
    }
    let etag = of.v.etag_string().and_then(|t| variant_etag(&t, coding));
    let dest = match (&spec.cache_dir, etag.as_deref()) {
        (Some(dir), Some(tag)) if cacheable(spec, false, Some(tag), None, true, 200) => {
            cache::cache_path(dir, Path::new(fs_path), tag)
        }
        _ => None,
    };
    if let Some(v) = dest.as_deref().and_then(|d| of.open_cached(coding, d)) {
        return (Form::Variant(v, coding), true);
    }
    // A small file (in memory) is compressed now; the rest goes as it is
    // until a copy exists, or streams compressed where none can be made.
    let packed = of
        .small
        .as_ref()
        .and_then(|b| compress_now(coding, spec, Some(&of.ctype_value), b));
    let Some(dest) = dest else {
        // No cache for it: compressed each time it is sent, as lighttpd does.
        return match (packed, &of.small) {
            (Some(b), _) => (Form::Inline(b, coding), true),
            (None, Some(_)) => (Form::Identity, true),
            (None, None) => (Form::Stream(coding), true),
        };
    };
    let job = Job {
        source: fs_path.into(),
        expect: SourceId::of(&of.meta),
        dest,
        coding,
        params: spec.encoder_params(),
        content_type: Some(of.ctype_value.clone()),
        // What was just compressed is written as it is: not compressed twice.
        packed: packed.clone(),
    };
    if let Err(why) = dz.submit(job) {
        log::debug!("{fs_path}: compression into the cache not queued: {why:?}");
    }
    match packed {
        Some(b) => (Form::Inline(b, coding), true),
        None => (Form::Identity, true),
    }
}

fn serve_file(
    req: &StaticRequest<'_>,
    r: &mut Reply,
    of: &OpenFile,
    fs_path: &str,
    dz: &mut Deflater,
) {
    // POST gets the file too, as lighttpd's mod_staticfile serves it
    // (its body, if any, is read and dropped).
    let get_or_head = matches!(req.method, Method::Get | Method::Head | Method::Post);
    if req.method == Method::Options {
        r.start(200);
        r.header("Allow", ALLOW);
        return r.end_head(Some(0));
    }
    if !get_or_head {
        return r.error_with(405, &[("Allow", ALLOW)]);
    }
    let settings = Rc::clone(&r.settings);
    let s: &Settings = &settings;
    let v = &of.v;
    let etag = v.etag.as_ref().map(|t| &t[..]);
    let len = of.len;

    // RFC 9110 §13.2.2: If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since, If-Range.
    let cond = Conditions::of(req.headers);
    if let Some(im) = cond.if_match {
        if !etag_matches(im, etag, false) {
            return r.error(412);
        }
    } else if let Some(d) = cond.if_unmodified_since.and_then(header_date) {
        if v.mtime > d {
            return r.error(412);
        }
    }
    let has_range = s.range_requests && req.method == Method::Get && cond.range.is_some();
    let (form, vary) = if s.deflate.enabled() || !s.deflate.precompressed.is_empty() {
        r.encoding_decided = true;
        choose_form(req, s, of, fs_path, dz, has_range)
    } else {
        (Form::Identity, false)
    };
    // The validators of the form chosen: If-None-Match meets the variant's tag.
    let coding = match &form {
        Form::Identity => None,
        Form::Variant(_, c) | Form::Inline(_, c) | Form::Stream(c) => Some(*c),
    };
    let (form_etag, form_lm, form_mtime) = match (&form, coding) {
        (Form::Variant(var, _), Some(c)) => (
            var.base_etag.as_deref().and_then(|t| variant_etag(t, c)),
            &var.last_modified,
            var.mtime,
        ),
        (_, Some(c)) => (
            v.etag_string().and_then(|t| variant_etag(&t, c)),
            &v.last_modified,
            v.mtime,
        ),
        (_, None) => (v.etag_string(), &v.last_modified, v.mtime),
    };
    let form_etag = form_etag.map(String::into_bytes);
    let ctype = (of.ctype.0.as_str(), of.ctype.1);
    let not_modified = if let Some(inm) = cond.if_none_match {
        etag_matches(inm, form_etag.as_deref(), true)
    } else if let Some(d) = cond
        .if_modified_since
        .filter(|_| req.method != Method::Post)
        .and_then(header_date)
    {
        // (RFC 9110 13.1.3: only GET and HEAD evaluate If-Modified-Since.)
        form_mtime <= d
    } else {
        false
    };
    if not_modified && req.method == Method::Post {
        // RFC 9110 13.1.2: for a method other than GET and HEAD a matching
        // If-None-Match is a failed precondition, not a 304.
        return r.error(412);
    }
    let write_form_validators = |r: &mut Reply| {
        if let Some(t) = &form_etag {
            r.header("ETag", t);
        }
        r.header("Last-Modified", form_lm);
        if vary {
            r.header("Vary", b"Accept-Encoding");
        }
    };
    if not_modified {
        r.start(304);
        write_form_validators(r);
        write_expire(r, req, ctype.0, form_mtime);
        return r.end_head(None);
    }
    if let Some(c) = coding {
        r.start(200);
        write_form_validators(r);
        write_expire(r, req, ctype.0, form_mtime);
        write_content_type(r, ctype);
        r.header("Content-Encoding", c.label().as_bytes());
        match form {
            Form::Variant(var, _) => match &var.small {
                Some(body) => {
                    r.end_head(Some(var.len));
                    r.push_shared(Rc::clone(body));
                }
                None => r.body_file(Rc::clone(&var.file), 0, var.len),
            },
            Form::Inline(bytes, _) => {
                r.end_head(Some(bytes.len() as u64));
                r.push_mem(&bytes);
            }
            Form::Stream(c) => {
                r.end_head(None);
                r.push_file(Rc::clone(&of.file), 0, len);
                r.encode = Some(c);
            }
            Form::Identity => {}
        }
        return;
    }

    let mut ranges = RangeRequest::Ignore;
    if r.settings.range_requests && req.method == Method::Get {
        if let Some(h) = cond.range {
            let if_range_ok = match cond.if_range.map(trim_ows) {
                None => true,
                Some(t) if t.starts_with(b"\"") || t.starts_with(b"W/") => {
                    etag_matches(t, etag, false)
                }
                Some(d) => header_date(d) == Some(v.mtime),
            };
            if if_range_ok {
                ranges = parse_range(h, len);
            }
        }
    }
    let file = Rc::clone(&of.file);
    match ranges {
        RangeRequest::Ignore => {
            r.start(200);
            r.header_lines(&of.validator_lines);
            if vary {
                r.header("Vary", b"Accept-Encoding");
            }
            write_expire(r, req, ctype.0, v.mtime);
            r.header_lines(&of.type_lines);
            match &of.small {
                Some(body) => {
                    r.end_head(Some(len));
                    r.push_shared(Rc::clone(body));
                }
                None => r.body_file(file, 0, len),
            }
        }
        RangeRequest::Unsatisfiable => {
            let mut cr = b"bytes */".to_vec();
            cr.extend_from_slice(itoa_u64(len).as_bytes());
            r.error_with(416, &[("Content-Range", &cr)]);
        }
        RangeRequest::Ranges(parts) if parts.len() == 1 => {
            let (first, last) = parts[0];
            r.start(206);
            r.header_lines(&of.validator_lines);
            if vary {
                r.header("Vary", b"Accept-Encoding");
            }
            write_expire(r, req, ctype.0, v.mtime);
            r.header_lines(&of.type_lines);
            r.header("Content-Range", &content_range(first, last, len));
            r.body_file(file, first, last - first + 1);
        }
        RangeRequest::Ranges(parts) => {
            let boundary = boundary(etag, len);
            let part_heads: Vec<Vec<u8>> = parts
                .iter()
                .map(|&(a, b)| {
                    let mut h = b"\r\n--".to_vec();
                    h.extend_from_slice(&boundary);
                    h.extend_from_slice(b"\r\nContent-Type: ");
                    h.extend_from_slice(ctype.0.as_bytes());
                    if ctype.1 {
                        h.extend_from_slice(b"; charset=utf-8");
                    }
                    h.extend_from_slice(b"\r\nContent-Range: ");
                    h.extend_from_slice(&content_range(a, b, len));
                    h.extend_from_slice(b"\r\n\r\n");
                    h
                })
                .collect();
            let mut tail = b"\r\n--".to_vec();
            tail.extend_from_slice(&boundary);
            tail.extend_from_slice(b"--\r\n");
            let total: u64 = parts
                .iter()
                .zip(&part_heads)
                .map(|(&(a, b), h)| h.len() as u64 + (b - a + 1))
                .sum::<u64>()
                + tail.len() as u64;
            r.start(206);
            r.header_lines(&of.validator_lines);
            if vary {
                r.header("Vary", b"Accept-Encoding");
            }
            r.header("Accept-Ranges", b"bytes");
            let mut ct = b"multipart/byteranges; boundary=".to_vec();
            ct.extend_from_slice(&boundary);
            r.header("Content-Type", &ct);
            r.end_head(Some(total));
            for (&(a, b), h) in parts.iter().zip(&part_heads) {
                r.push_mem(h);
                r.push_file(Rc::clone(&file), a, b - a + 1);
            }
            r.push_mem(&tail);
        }
    }
}

fn content_range(first: u64, last: u64, len: u64) -> Vec<u8> {
    let mut cr = b"bytes ".to_vec();
    cr.extend_from_slice(itoa_u64(first).as_bytes());
    cr.push(b'-');
    cr.extend_from_slice(itoa_u64(last).as_bytes());
    cr.push(b'/');
    cr.extend_from_slice(itoa_u64(len).as_bytes());
    cr
}

fn boundary(etag: Option<&[u8]>, len: u64) -> Vec<u8> {
    // FNV-1a from a seed of the length: a boundary differs per file and size.
    let h = hash::fnv1a_from(0x9e37_79b9_7f4a_7c15 ^ len, etag.unwrap_or(b""));
    let mut out = b"glint-".to_vec();
    for byte in h.to_be_bytes() {
        out.push(HEX[(byte >> 4) as usize]);
        out.push(HEX[(byte & 15) as usize]);
    }
    out
}

/// One `Name: value` line into pre-rendered header lines.
fn header_line(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

fn write_expire(r: &mut Reply, req: &StaticRequest<'_>, ctype: &str, mtime: i64) {
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

/// The MIME type of a path, and whether it gets `; charset=utf-8`.
/// `mimetype.assign` (longest matching suffix) wins over mime_guess.
pub fn content_type<'s>(path: &str, s: &'s Settings) -> (&'s str, bool) {
    let assigned = s
        .mimetype_assign
        .iter()
        .filter(|(suffix, _)| path.ends_with(suffix.as_str()))
        .max_by_key(|(suffix, _)| suffix.len());
    if let Some((_, t)) = assigned {
        return (t.as_str(), false);
    }
    let ext = match path.rfind(['.', '/']) {
        Some(i) if path.as_bytes()[i] == b'.' => &path[i + 1..],
        _ => "",
    };
    let t = mime_guess::from_ext(ext)
        .first_raw()
        .unwrap_or("application/octet-stream");
    let charset =
        t.starts_with("text/") || t == "application/javascript" || t == "application/json";
    (t, charset)
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
mod tests {
    use super::*;

    #[test]
    fn etag_lists() {
        let tag: &[u8] = b"\"abc\"";
        let cases: &[(&str, &[u8], bool, bool)] = &[
            ("exact", b"\"abc\"", false, true),
            ("in a list", b"\"x\", \"abc\"", false, true),
            ("star", b"*", false, true),
            ("weak, weak comparison", b"W/\"abc\"", true, true),
            ("weak, strong comparison", b"W/\"abc\"", false, false),
            ("other", b"\"abd\"", true, false),
            ("unquoted", b"abc", true, false),
        ];
        for (what, list, weak, want) in cases {
            assert_eq!(etag_matches(list, Some(tag), *weak), *want, "{what}");
        }
        assert!(!etag_matches(b"*", None, true), "star without a tag");
    }

    #[test]
    fn etags_and_boundaries_keep_their_values() {
        // Sent tags are remembered by caches: the hash must never change.
        assert_eq!(&etag_tag(&[1, 2, 3, 4, 5]), b"\"a73c4fcedb1fd5a4\"");
        assert_eq!(boundary(Some(b"\"abc\""), 100), b"glint-215f2bd8998e5f0f");
    }

    #[test]
    fn mime_types() {
        let mut s = Settings::default();
        let cases = [
            ("/index.html", ("text/html", true)),
            ("/test.jpg", ("image/jpeg", false)),
            ("/style.css", ("text/css", true)),
            ("/noext", ("application/octet-stream", false)),
            ("/dir.d/noext", ("application/octet-stream", false)),
        ];
        for (p, want) in cases {
            assert_eq!(content_type(p, &s), want, "{p}");
        }
        s.mimetype_assign = vec![
            (".html".into(), "text/x-custom".into()),
            (".tar.gz".into(), "application/x-tgz".into()),
            (".gz".into(), "application/gzip".into()),
        ];
        assert_eq!(content_type("/a.html", &s), ("text/x-custom", false));
        assert_eq!(content_type("/a.tar.gz", &s), ("application/x-tgz", false));
    }
}
