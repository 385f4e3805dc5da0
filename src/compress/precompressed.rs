//! Precompressed siblings: `file.br`, `file.zst`, `file.gz` next to a
//! static file, made ahead by the site's build, served as they are.
//!
//! glint's option (lighttpd has none):
//!
//! ```text
//! glint.static-precompressed = ( "br", "zstd", "gzip" )
//! ```
//!
//! lists the codings to look for, in the order preferred when the client
//! weighs them equally; `()` (the default) turns it off. It may sit in a
//! conditional like any option. A sibling is used when the client accepts
//! its coding (q > 0) and its mtime is not older than the file's, so a
//! file edited after its `.br` was made goes out from the file (compressed
//! on the fly if `deflate.*` says so). The answer keeps the original's
//! `Content-Type`, adds `Content-Encoding` and `Vary: Accept-Encoding`, and
//! takes `Content-Length`, `Last-Modified` and the ETag from the sibling's
//! own metadata (its ETag through [`super::negotiate::variant_etag`]), so a
//! rebuilt `.br` is a new ETag even when the file did not change.

use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::negotiate::parse_accept_encoding;
use super::Coding;

/// The file-name suffix of a coding's sibling.
pub fn suffix(coding: Coding) -> Option<&'static str> {
    match coding {
        Coding::Br => Some(".br"),
        Coding::Zstd => Some(".zst"),
        Coding::Gzip | Coding::XGzip => Some(".gz"),
        Coding::Deflate => None,
    }
}

/// A sibling to send instead of the file.
#[derive(Debug)]
pub struct Sibling {
    pub path: PathBuf,
    pub meta: Metadata,
    /// The `Content-Encoding` to send (x-gzip when the client named only that).
    pub coding: Coding,
}

/// The outcome of a lookup.
#[derive(Debug, Default)]
pub struct Lookup {
    pub sibling: Option<Sibling>,
    /// A usable sibling exists, so the answer depends on Accept-Encoding:
    /// send `Vary: Accept-Encoding` whichever body goes out.
    pub vary: bool,
}

/// Look for `file`'s siblings among `offered` (the option's list). One
/// `stat` per offered coding; a sibling must be a regular file (symlinks
/// are followed as for the file itself: the caller applies its symlink
/// policy to the path it is given back).
pub fn find(
    file: &Path,
    file_meta: &Metadata,
    offered: &[Coding],
    accept_encoding: Option<&str>,
) -> Lookup {
    let mut fresh: Vec<(Coding, PathBuf, Metadata)> = Vec::new();
    for &coding in offered {
        let Some(sfx) = suffix(coding) else { continue };
        let mut name: OsString = file.as_os_str().to_os_string();
        name.push(sfx);
        let path = PathBuf::from(name);
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if meta.is_file() && not_older(&meta, file_meta) {
            fresh.push((coding, path, meta));
        }
    }
    let vary = !fresh.is_empty();
    let codings: Vec<Coding> = fresh.iter().map(|(c, _, _)| *c).collect();
    let chosen = accept_encoding.and_then(|ae| parse_accept_encoding(ae).choose_among(&codings));
    let sibling = chosen.and_then(|label| {
        let want = if label == Coding::XGzip {
            Coding::Gzip
        } else {
            label
        };
        let i = fresh.iter().position(|(c, _, _)| *c == want)?;
        let (_, path, meta) = fresh.swap_remove(i);
        Some(Sibling {
            path,
            meta,
            coding: label,
        })
    });
    Lookup { sibling, vary }
}

fn not_older(sibling: &Metadata, file: &Metadata) -> bool {
    (sibling.mtime(), sibling.mtime_nsec()) >= (file.mtime(), file.mtime_nsec())
}
