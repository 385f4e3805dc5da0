//! Compressed copies of static files in `deflate.cache-dir`.
//!
//! Naming is lighttpd's (`mod_deflate_cache_file_name()`): the cache dir,
//! then the file's physical path, then `-` and the compressed variant's
//! ETag without its quotes, so `/var/www/a.css` with ETag `"3f2a"` sent as
//! gzip is `{cache}/var/www/a.css-3f2a-gzip`. One name per (path, ETag,
//! coding): a changed file has a new ETag and so a new name, and a stale
//! copy is never served.
//!
//! A copy is written to `{name}.{pid}.{n}` (unique per writer, opened
//! `O_EXCL`, mode 0600 as lighttpd's), synced, and renamed over the name:
//! a crash or a concurrent reader sees either no file or a whole one, and
//! writers racing on one name each rename a complete file. Directories are
//! made mode 0700, as lighttpd's `mkdir_for_file()`.

use std::ffi::OsStr;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::Coding;

/// A temporary file older than this is a crashed writer's leftover: a
/// 128 MiB file (the default deflate.max-compress-size) compresses in
/// about 4 s at brotli quality 5 here (7 MB: 158-216 ms), so an hour is far
/// past any live writer.
pub const TEMP_MAX_AGE: Duration = Duration::from_secs(3600);

/// Make `deflate.cache-dir` at start-up (mode 0700, parents too), as
/// lighttpd does; an error names the key.
pub fn prepare_cache_dir(dir: &str) -> Result<(), String> {
    if fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("deflate.cache-dir: can't stat or create {dir}: {e}"))
}

/// The cache file for `physical` (an absolute path without `..`) and a
/// compressed variant's ETag (`"3f2a-gzip"`). `None` when either could
/// escape the cache dir or is not a plain file name piece: that response
/// is then compressed without caching.
pub fn cache_path(cache_dir: &str, physical: &Path, variant_etag: &str) -> Option<PathBuf> {
    let inner = variant_etag.strip_prefix('"')?.strip_suffix('"')?;
    let safe = |b: u8| b.is_ascii_graphic() && !matches!(b, b'/' | b'\\' | b'"');
    if inner.is_empty() || !inner.bytes().all(safe) {
        return None;
    }
    if !physical.is_absolute()
        || physical
            .components()
            .any(|c| matches!(c, Component::ParentDir))
    {
        return None;
    }
    physical.file_name()?;
    let mut name = physical.as_os_str().as_bytes().to_vec();
    name.push(b'-');
    name.extend_from_slice(inner.as_bytes());
    let rel = Path::new(OsStr::from_bytes(&name)).strip_prefix("/").ok()?;
    Some(Path::new(cache_dir).join(rel))
}

/// Open a cached copy if one exists: the file and its metadata (for the
/// Content-Length and sendfile).
pub fn open_cached(path: &Path) -> Option<(File, Metadata)> {
    let file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    meta.is_file().then_some((file, meta))
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Write a cache file atomically: `fill` writes the whole content into a
/// fresh temporary file, which is synced and renamed to `dest`. On any
/// error the temporary file is removed and `dest` is untouched. Returns the
/// size written. Older ETags' copies of the same source are then removed
/// ([`remove_stale`]).
pub fn write_atomic(
    dest: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<u64> {
    let dir = dest.parent().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "cache path has no directory")
    })?;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut tmp = dest.as_os_str().to_os_string();
    tmp.push(format!(
        ".{}.{}",
        std::process::id(),
        TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        fill(&mut file)?;
        // Without the sync a power loss after the rename could leave the
        // name on an empty file; the cost is paid once per copy, off the loop.
        file.sync_data()?;
        let len = file.metadata()?.len();
        fs::rename(&tmp, dest)?;
        Ok(len)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    } else {
        remove_stale(dest);
    }
    result
}

/// The pieces of a cache file name: (source file name, ETag piece, coding).
/// The ETag piece must hold no `-` or `.`, so that a source named
/// `a.css-1f` is never taken for a copy of `a.css`, and temporary names
/// (ending `.pid.n`) never parse. glint's own ETags (hex) always parse; a
/// copy under another ETag is left to the operator.
pub fn parse_cache_name(name: &[u8]) -> Option<(&[u8], &[u8], Coding)> {
    for coding in [
        Coding::XGzip,
        Coding::Gzip,
        Coding::Deflate,
        Coding::Br,
        Coding::Zstd,
    ] {
        let label = coding.label().as_bytes();
        let Some(rest) = name.strip_suffix(label).and_then(|r| r.strip_suffix(b"-")) else {
            continue;
        };
        // "…-x-gzip" is tried as x-gzip first, then as gzip under tag "x".
        let Some(cut) = rest.iter().rposition(|&b| b == b'-') else {
            continue;
        };
        let (source, tag) = (&rest[..cut], &rest[cut + 1..]);
        if source.is_empty() || tag.is_empty() || tag.iter().any(|&b| b == b'-' || b == b'.') {
            continue;
        }
        return Some((source, tag, coding));
    }
    None
}

/// Remove the copies of `dest`'s source under other ETags (any coding),
/// keeping every coding under `dest`'s ETag. Returns how many went.
pub fn remove_stale(dest: &Path) -> usize {
    let (Some(dir), Some(name)) = (dest.parent(), dest.file_name()) else {
        return 0;
    };
    let Some((source, tag, _)) = parse_cache_name(name.as_bytes()) else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let other = entry.file_name();
        let Some((s, t, _)) = parse_cache_name(other.as_bytes()) else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if s == source && t != tag && is_file && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// What one [`Sweeper::step`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub examined: usize,
    pub removed: usize,
    /// The whole tree was walked; the next step starts over.
    pub round_done: bool,
}

/// A walk over the cache dir in bounded steps, for the caller's tick:
/// removes leftover temporary files older than [`TEMP_MAX_AGE`], and
/// copies whose source is gone or whose source's ETag changed. Symlinks
/// are never followed. Directories stay (lighttpd never removes them).
#[derive(Debug)]
pub struct Sweeper {
    root: PathBuf,
    dirs: Vec<PathBuf>,
    current: Option<fs::ReadDir>,
}

impl Sweeper {
    pub fn new(cache_dir: &str) -> Sweeper {
        Sweeper {
            root: PathBuf::from(cache_dir),
            dirs: Vec::new(),
            current: None,
        }
    }

    /// Look at no more than `budget` entries. `current_etag(source, meta)`
    /// gives the ETag glint would send now for a source file (`None` when
    /// it sends none). `now` dates the temporary files.
    pub fn step(
        &mut self,
        budget: usize,
        now: SystemTime,
        current_etag: &dyn Fn(&Path, &Metadata) -> Option<String>,
    ) -> SweepReport {
        let mut report = SweepReport::default();
        if self.current.is_none() && self.dirs.is_empty() {
            self.dirs.push(self.root.clone());
        }
        while report.examined < budget {
            let entry = match self.current.as_mut().map(|rd| rd.next()) {
                Some(Some(entry)) => entry,
                Some(None) | None => {
                    self.current = None;
                    match self.dirs.pop() {
                        Some(dir) => {
                            self.current = fs::read_dir(dir).ok();
                            continue;
                        }
                        None => {
                            report.round_done = true;
                            break;
                        }
                    }
                }
            };
            report.examined += 1;
            let Ok(entry) = entry else { continue };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                self.dirs.push(path);
            } else if kind.is_file()
                && self.sweep_file(&path, now, current_etag)
                && fs::remove_file(&path).is_ok()
            {
                report.removed += 1;
            }
        }
        report
    }

    /// Should this cache file go?
    fn sweep_file(
        &self,
        path: &Path,
        now: SystemTime,
        current_etag: &dyn Fn(&Path, &Metadata) -> Option<String>,
    ) -> bool {
        let Some(name) = path.file_name().map(|n| n.as_bytes()) else {
            return false;
        };
        let Some((source_name, _, coding)) = parse_cache_name(name) else {
            return is_temp_name(name) && older_than(path, now, TEMP_MAX_AGE);
        };
        let Ok(rel_dir) = path.parent().unwrap_or(&self.root).strip_prefix(&self.root) else {
            return false;
        };
        let source = Path::new("/")
            .join(rel_dir)
            .join(OsStr::from_bytes(source_name));
        let Ok(meta) = fs::metadata(&source) else {
            return true;
        };
        let Some(etag) = current_etag(&source, &meta) else {
            return true;
        };
        let root = self.root.to_string_lossy();
        let current = super::negotiate::variant_etag(&etag, coding)
            .and_then(|v| cache_path(&root, &source, &v));
        current.as_deref() != Some(path)
    }
}

/// `{anything}.{digits}.{digits}`: the shape of [`write_atomic`]'s temporary names.
fn is_temp_name(name: &[u8]) -> bool {
    let mut parts = name.rsplitn(3, |&b| b == b'.');
    let digits =
        |p: Option<&[u8]>| p.is_some_and(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_some_and(|p| !p.is_empty())
}

fn older_than(path: &Path, now: SystemTime, age: Duration) -> bool {
    fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > age))
}
