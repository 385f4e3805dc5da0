//! The open-file cache: an open regular file and what its answers need
//! (validators, type, small content, compressed forms), kept for about a
//! second, and the index files found in directories.

use crate::hash::StrMap;
use std::cell::RefCell;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::rc::Rc;

use super::fs::open;
use super::validators::Validators;
use super::{content_type, header_line, SMALL_FILE};
use crate::compress::{cache, precompressed, Coding};
use crate::config::Settings;
use crate::date::format_http_date;

/// An open regular file and what its responses need. Kept in the
/// [`FileCache`] for about a second, so that a busy file costs no `open`,
/// `fstat` or `read` per request (lighttpd's stat cache and nginx's
/// open_file_cache do the same; a changed file is seen within a second).
pub struct OpenFile {
    pub(super) file: Rc<File>,
    pub(super) len: u64,
    pub(super) v: Validators,
    pub(super) ctype: (String, bool),
    /// The content of a small file, sent from memory in the same `send` as
    /// the head; up to [`COPY_FILE`](super::COPY_FILE) bytes when a
    /// connection that copies file bytes opened it (sent from memory only
    /// to such connections above [`SMALL_FILE`]).
    pub(super) small: Option<Rc<[u8]>>,
    /// The settings the entry was made under (MIME types and ETag options differ per scope).
    pub(super) settings_id: u64,
    pub(super) born: u64,
    pub(super) meta: Metadata,
    /// The `Content-Type` value as sent, which `deflate.mimetypes` matches.
    pub(super) ctype_value: String,
    /// `ETag` and `Last-Modified` lines, rendered once per entry.
    pub(super) validator_lines: Vec<u8>,
    /// `Accept-Ranges` and `Content-Type` lines, rendered once per entry:
    /// with the validators, one copy each instead of four header calls.
    pub(super) type_lines: Vec<u8>,
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
pub(super) struct Variant {
    pub(super) coding: Coding,
    pub(super) file: Rc<File>,
    pub(super) len: u64,
    pub(super) small: Option<Rc<[u8]>>,
    /// The identity ETag the variant's tag is made from: the sibling's own
    /// (a rebuilt `.br` is a new tag), or the file's for a cached copy.
    pub(super) base_etag: Option<String>,
    pub(super) last_modified: [u8; 29],
    pub(super) mtime: i64,
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

/// Flooding is no concern here: only paths that opened are inserted.
type PathMap<V> = StrMap<V>;

/// Recently opened files by file system path, and the index file found
/// in recently asked directories.
#[derive(Default)]
pub struct FileCache {
    map: PathMap<Rc<OpenFile>>,
    bytes: usize,
    /// Directory path => (settings id, when, the index file's URL path or none).
    indexes: PathMap<(u64, u64, Option<String>)>,
    /// The path of the last entry `get` found, and the entry: the same
    /// file asked again is a comparison of the path, not a hash of it
    /// and a probe. Emptied whenever `map` changes, so it is always what
    /// `map` holds for that path.
    last_path: String,
    last: Option<Rc<OpenFile>>,
}

impl FileCache {
    pub(super) fn index_of(&self, dir: &str, settings_id: u64, now: u64) -> Option<Option<&str>> {
        self.indexes
            .get(dir)
            .filter(|(id, born, _)| *id == settings_id && now <= born + 1)
            .map(|(_, _, found)| found.as_deref())
    }

    pub(super) fn put_index(
        &mut self,
        dir: &str,
        settings_id: u64,
        now: u64,
        found: Option<String>,
    ) {
        if self.indexes.len() < CACHE_ENTRIES {
            self.indexes
                .insert(dir.to_string(), (settings_id, now, found));
        }
    }

    pub(super) fn get(&mut self, path: &str, settings_id: u64, now: u64) -> Option<Rc<OpenFile>> {
        let fresh = |e: &&Rc<OpenFile>| e.settings_id == settings_id && now <= e.born + 1;
        if let Some(e) = self.last.as_ref().filter(|_| self.last_path == path) {
            return Some(e).filter(fresh).cloned();
        }
        let e = self.map.get(path)?;
        self.last_path.clear();
        self.last_path.push_str(path);
        self.last = Some(Rc::clone(e));
        Some(e).filter(fresh).cloned()
    }

    pub(super) fn insert(&mut self, path: &str, e: Rc<OpenFile>) {
        let size = e.small.as_ref().map_or(0, |b| b.len());
        if self.map.len() >= CACHE_ENTRIES || self.bytes + size > CACHE_BYTES {
            return;
        }
        self.bytes += size;
        self.last = None;
        if let Some(old) = self.map.insert(path.to_string(), e) {
            self.bytes -= old.small.as_ref().map_or(0, |b| b.len());
        }
    }

    /// Drops entries older than a second (called once a second); their files close.
    pub fn purge(&mut self, now: u64) {
        self.last = None;
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
        self.last = None;
        self.map.clear();
        self.indexes.clear();
        self.bytes = 0;
    }
}

impl OpenFile {
    /// Its content from memory for an answer: a small file's always, a
    /// larger one kept in memory only where the connection `copies` file
    /// bytes (`sendfile` costs less than a copy elsewhere).
    pub(super) fn in_memory(&self, copies: bool) -> Option<&Rc<[u8]>> {
        self.small
            .as_ref()
            .filter(|b| b.len() as u64 <= super::in_memory_limit(copies))
    }

    pub(super) fn new(
        file: File,
        meta: &std::fs::Metadata,
        fs_path: &str,
        s: &Settings,
        (settings_id, now): (u64, u64),
        keep: u64,
    ) -> OpenFile {
        let len = meta.size();
        // (Regular files only, as lighttpd.)
        let xattr = (s.static_file.use_xattr && meta.is_file())
            .then(|| super::fs::xattr_type(&file, &s.static_file.xattr_name))
            .flatten();
        let (t, charset) = match &xattr {
            Some(t) => (t.as_str(), false),
            None => content_type(fs_path, s),
        };
        let small = (len <= keep).then(|| read_all(&file, len)).flatten();
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
    pub(super) fn siblings(&self, fs_path: &str, s: &Settings, root: &str) -> Vec<Rc<Variant>> {
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
    pub(super) fn cached(&self, coding: Coding) -> Option<Rc<Variant>> {
        let v = self.variants.borrow();
        v.cached
            .iter()
            .find(|(c, _)| *c == coding)
            .map(|(_, v)| Rc::clone(v))
    }

    /// Opens the cache's copy at `path`, if it was made, and keeps it.
    pub(super) fn open_cached(&self, coding: Coding, path: &Path) -> Option<Rc<Variant>> {
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
