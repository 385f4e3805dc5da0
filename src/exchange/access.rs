//! mod_access: `url.access-deny` and `url.access-allow`, for every path a
//! request takes (its own, its directory's index file), whatever answers it.

use crate::config::Settings;

/// `url.access-deny` / `url.access-allow` for one path (mod_access): with
/// an allow list only its suffixes are served; otherwise a deny suffix
/// refuses (`""` refuses every path). Suffixes match without case under
/// `server.force-lowercase-filenames`, as lighttpd.
#[inline]
pub fn access_denied(path: &str, s: &Settings) -> bool {
    // No `url.access-deny`/`-allow` in this scope: nothing to compare.
    if s.access.allow.is_empty() && s.access.deny.is_empty() {
        return false;
    }
    denied_by_rules(path, s)
}

fn denied_by_rules(path: &str, s: &Settings) -> bool {
    let lc = s.files.force_lowercase_filenames;
    let ends = |suffix: &String| {
        path.len() >= suffix.len()
            && path.is_char_boundary(path.len() - suffix.len())
            && if lc {
                path[path.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
            } else {
                path.ends_with(suffix.as_str())
            }
    };
    if !s.access.allow.is_empty() {
        return !s.access.allow.iter().any(ends);
    }
    s.access.deny.iter().any(ends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_and_allow_table() {
        let s = |deny: &[&str], allow: &[&str], lc: bool| Settings {
            access: crate::config::Access {
                deny: deny.iter().map(|x| x.to_string()).collect(),
                allow: allow.iter().map(|x| x.to_string()).collect(),
            },
            files: crate::config::FileOptions {
                force_lowercase_filenames: lc,
                ..Default::default()
            },
            ..Settings::default()
        };
        let cases: &[(&str, Settings, &str, bool)] = &[
            ("no rules", s(&[], &[], false), "/a.inc", false),
            ("deny suffix", s(&[".inc"], &[], false), "/a.inc", true),
            ("deny other", s(&[".inc"], &[], false), "/a.txt", false),
            ("deny all with \"\"", s(&[""], &[], false), "/a.txt", true),
            (
                "deny is case-sensitive",
                s(&[".inc"], &[], false),
                "/a.INC",
                false,
            ),
            (
                "case-blind under lowercase filenames",
                s(&[".inc"], &[], true),
                "/a.INC",
                true,
            ),
            ("allow listed", s(&[], &[".html"], false), "/a.html", false),
            (
                "allow refuses the rest",
                s(&[], &[".html"], false),
                "/a.txt",
                true,
            ),
            (
                "allow wins over deny",
                s(&[".html"], &[".html"], false),
                "/a.html",
                false,
            ),
            ("multibyte path", s(&["é"], &[], true), "/caf\u{e9}", true),
        ];
        for (why, settings, path, want) in cases {
            assert_eq!(access_denied(path, settings), *want, "{why}");
        }
    }
}
