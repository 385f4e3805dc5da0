//! MIME types of paths: `mimetype.assign`, then the built-in table. Both
//! the static files and the directory listing name them.

use crate::config::Settings;

/// The MIME type of a path, and whether it gets `; charset=utf-8`.
/// `mimetype.assign` (longest matching suffix) wins over mime_guess.
pub fn content_type<'s>(path: &str, s: &'s Settings) -> (&'s str, bool) {
    let assigned = s
        .files
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
