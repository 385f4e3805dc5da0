//! mod_indexfile: a directory's index file, found with the open rules of
//! `fs.rs` and remembered in the file cache.

use super::cache::FileCache;
use super::fs::open;
use super::push_rel_path;
use crate::config::Settings;

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
    if s.files.index_file_names.is_empty() {
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
    let settings_id = s.stamp.get();
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
        Ok((_, m)) if m.is_dir() => s.files.index_file_names.iter().find_map(|name| {
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
    if s.files.follow_symlink {
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
