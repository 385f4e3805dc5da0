//! Where `file="..."` and `virtual="..."` point: a `file` path below the
//! including file's directory, a `virtual` path a URL path (relative to
//! the including page's) placed on the file system the way the page's own
//! URL was, else below the document root. Both are percent-decoded and
//! their dot segments removed, so neither climbs above its start.

use super::{Doc, Page};

pub(super) enum Target<'a> {
    File(&'a [u8]),
    Virtual(&'a [u8]),
}

/// An include's URL path and file.
pub(super) struct Found {
    pub uri_path: String,
    pub physical: String,
}

/// Resolves `t` as included from `doc`; `None` (logged) when the path is
/// not UTF-8 once decoded or names a symlink that may not be followed.
pub(super) fn resolve(page: &Page<'_>, doc: &Doc, t: &Target<'_>) -> Option<Found> {
    let lc = page.settings.files.force_lowercase_filenames;
    let found = match *t {
        Target::File(f) => {
            let rel = simplify(&decode(f)?);
            Found {
                uri_path: join(dir_of(&doc.uri_path), &rel),
                physical: join(dir_of(&doc.physical), &rel),
            }
        }
        Target::Virtual(v) => {
            let mut raw = Vec::new();
            if v.first() != Some(&b'/') {
                raw.extend_from_slice(dir_of(&doc.uri_path).as_bytes());
            }
            raw.extend_from_slice(v);
            let mut uri = simplify(&decode(&raw)?);
            if lc {
                uri.make_ascii_lowercase();
            }
            let physical = place(page, doc, &uri, lc);
            Found {
                uri_path: uri,
                physical,
            }
        }
    };
    if !page.settings.files.follow_symlink && symlink_below(&found.physical, page.docroot) {
        log::error!(
            "ssi: {} has a symlink on its way, not followed",
            found.physical
        );
        return None;
    }
    Some(found)
}

/// Puts URL path `uri` on the file system: where the page's own file is
/// for the part of the page's URL path the two share (an alias or user
/// directory keeps applying), else below the document root.
fn place(page: &Page<'_>, doc: &Doc, uri: &str, lc: bool) -> String {
    let up = doc.uri_path.as_bytes();
    let mut i = up
        .iter()
        .zip(uri.as_bytes())
        .take_while(|(a, b)| a == b)
        .count();
    // Back to the '/' that ends the shared directories.
    while i != 0 {
        i -= 1;
        if up[i] == b'/' {
            break;
        }
    }
    let remain = up.len() - i;
    let ph = doc.physical.as_bytes();
    let same_tail = ph.len() >= remain && {
        let (a, b) = (&ph[ph.len() - remain..], &up[i..]);
        if lc {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    if same_tail {
        join(&doc.physical[..ph.len() - remain], &uri[i..])
    } else {
        join(page.docroot, uri)
    }
}

/// The directory part of `p`, with its slash.
fn dir_of(p: &str) -> &str {
    p.rfind('/').map_or("", |i| &p[..=i])
}

/// `a` and `b` with one slash between them.
fn join(a: &str, b: &str) -> String {
    format!("{}/{}", a.trim_end_matches('/'), b.trim_start_matches('/'))
}

/// Percent-decodes a path as lighttpd does (a `%` without two hex digits
/// stays); `None` (logged) when the result is not UTF-8.
fn decode(raw: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(raw.len());
    crate::syntax::percent_decode_lenient(raw, &mut out);
    match String::from_utf8(out) {
        Ok(s) if !s.contains('\0') => Some(s),
        Ok(s) => Some(s[..s.find('\0').unwrap_or(s.len())].to_string()),
        Err(e) => {
            log::error!(
                "SSI invalid UTF-8 after url-decode: {}",
                String::from_utf8_lossy(e.as_bytes())
            );
            None
        }
    }
}

/// Removes empty and `.` segments, and each `..` with the segment before
/// it (never above the start); the result starts with `/`.
fn simplify(p: &str) -> String {
    let mut segs: Vec<&str> = Vec::new();
    for s in p.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut out = String::with_capacity(p.len() + 1);
    for s in &segs {
        out.push('/');
        out.push_str(s);
    }
    if out.is_empty() || (p.ends_with('/') && !segs.is_empty()) {
        out.push('/');
    }
    out
}

/// With `server.follow-symlink = "disable"`: is any part of `path` below
/// `root` a symlink?
fn symlink_below(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    let Some(rest) = path.strip_prefix(root) else {
        // Outside the docroot (an alias): every part is checked.
        return has_symlink(path, 0);
    };
    has_symlink(path, root.len() + usize::from(rest.starts_with('/')))
}

fn has_symlink(path: &str, from: usize) -> bool {
    let mut end = from;
    for seg in path[from..].split('/') {
        end += seg.len();
        if !seg.is_empty() {
            if let Some(p) = path.get(..end) {
                if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                    return true;
                }
            }
        }
        end += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simplify_table() {
        for (p, want) in [
            ("/a/b/../c", "/a/c"),
            ("../../etc/passwd", "/etc/passwd"),
            ("a/./b//c", "/a/b/c"),
            ("/", "/"),
            ("..", "/"),
            ("/a/b/", "/a/b/"),
        ] {
            assert_eq!(simplify(p), want, "{p}");
        }
        assert_eq!(decode(b"a%20b%zz").as_deref(), Some("a b%zz"));
        assert_eq!(decode(b"%ff"), None);
        assert_eq!(dir_of("/a/b.shtml"), "/a/");
        assert_eq!(join("/srv/", "/x"), "/srv/x");
    }
}
