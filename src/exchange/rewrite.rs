//! mod_redirect and mod_rewrite: regex rules over the request URI.
//!
//! The URI matched is the one the client sent (path and query, still
//! percent-encoded). In the target, `$0`..`$9` are the rule's own captures
//! and `%0`..`%9` those of the last regex conditional that matched.

use std::borrow::Cow;
use std::collections::HashMap;

use regex::Regex;

use super::{facts, ConnInfo, Services, MAX_REWRITES};
use crate::config::Resolved;
use crate::msg::Request;
use crate::path::normalize;

/// Compiled patterns, built on first use. The configuration checked every
/// pattern at load, so a compile failure here is logged once and the rule skipped.
#[derive(Default)]
pub struct Regexes {
    compiled: HashMap<String, Option<Regex>>,
}

impl Regexes {
    pub fn get(&mut self, pattern: &str) -> Option<&Regex> {
        if !self.compiled.contains_key(pattern) {
            let r = match Regex::new(pattern) {
                Ok(r) => Some(r),
                Err(e) => {
                    log::error!("pattern {pattern:?} does not compile: {e}; rule ignored");
                    None
                }
            };
            self.compiled.insert(pattern.to_string(), r);
        }
        self.compiled.get(pattern).and_then(|r| r.as_ref())
    }
}

/// Normalises the path of `first` (into `sv.scratch.path`), resolves the
/// request's settings, and applies `url.rewrite-once`, `-repeat` and
/// `-if-not-file`, resolving again after each rewrite. Returns the URI in
/// force (borrowed when nothing rewrote it), its settings, and whether its
/// path is valid.
pub fn resolve_and_rewrite<'a>(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    first: &'a str,
) -> (Cow<'a, str>, Resolved, bool) {
    let mut rewritten: Option<String> = None;
    let mut rewrites = 0;
    loop {
        let uri = rewritten.as_deref().unwrap_or(first);
        let (path, query) = super::split_uri(uri);
        let path_ok =
            uri == "*" || normalize(path, &mut sv.scratch.decoded, &mut sv.scratch.path).is_ok();
        let url = if path_ok {
            sv.scratch.path.as_str()
        } else {
            ""
        };
        let resolved = sv
            .config
            .resolve(&facts(info, req, &sv.scratch.host, url, query));
        let done = !path_ok || uri == "*" || rewrites == MAX_REWRITES;
        let next = if done {
            None
        } else {
            rewrite_once(sv, uri, &resolved, rewrites)
        };
        match next {
            // `url.rewrite-once` rules apply once; only `-repeat` rules loop.
            Some(n) if n != uri => {
                let s = &resolved.settings;
                let once_done = rewrites == 0 && s.url_rewrite_repeat.is_empty();
                rewritten = Some(n);
                rewrites = if once_done {
                    MAX_REWRITES
                } else {
                    rewrites + 1
                };
            }
            _ => {
                let uri = match rewritten {
                    Some(s) => Cow::Owned(s),
                    None => Cow::Borrowed(first),
                };
                return (uri, resolved, path_ok);
            }
        }
    }
}

/// The rewrite rules' answer for `uri` on pass `rewrites`.
fn rewrite_once(
    sv: &mut Services,
    uri: &str,
    resolved: &Resolved,
    rewrites: usize,
) -> Option<String> {
    let s = &resolved.settings;
    let rules: &[(String, String)] = if rewrites == 0 && !s.url_rewrite_once.is_empty() {
        &s.url_rewrite_once
    } else {
        &s.url_rewrite_repeat
    };
    let next = first_match(rules, uri, &resolved.captures, &mut sv.regexes);
    if next.is_some() || rewrites > 0 || s.url_rewrite_if_not_file.is_empty() {
        return next;
    }
    let root = s.docroot_str().unwrap_or("");
    let fs = format!("{}{}", root.trim_end_matches('/'), sv.scratch.path);
    if std::fs::metadata(&fs).is_ok_and(|m| m.is_file()) {
        return None;
    }
    first_match(
        &s.url_rewrite_if_not_file,
        uri,
        &resolved.captures,
        &mut sv.regexes,
    )
}

/// Applies the first rule whose pattern matches `uri`; returns the expanded target.
pub fn first_match(
    rules: &[(String, String)],
    uri: &str,
    cond_captures: &[String],
    regexes: &mut Regexes,
) -> Option<String> {
    for (pattern, target) in rules {
        let Some(re) = regexes.get(pattern) else {
            continue;
        };
        if let Some(caps) = re.captures(uri) {
            let own: Vec<&str> = (0..caps.len())
                .map(|i| caps.get(i).map_or("", |m| m.as_str()))
                .collect();
            return Some(expand(target, &own, cond_captures));
        }
    }
    None
}

/// Replaces `$n` and `%n` in `target`. CR and LF never reach the output, so
/// a target cannot inject a header line.
pub fn expand(target: &str, own: &[&str], cond: &[String]) -> String {
    let mut out = String::with_capacity(target.len() + 32);
    let b = target.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c == b'$' || c == b'%') && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let n = (b[i + 1] - b'0') as usize;
            let v = if c == b'$' {
                own.get(n).copied().unwrap_or("")
            } else {
                cond.get(n).map_or("", |s| s.as_str())
            };
            out.push_str(v);
            i += 2;
            continue;
        }
        if c == b'\\' && i + 1 < b.len() && (b[i + 1] == b'$' || b[i + 1] == b'%') {
            out.push(b[i + 1] as char);
            i += 2;
            continue;
        }
        let ch_len = target[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&target[i..i + ch_len]);
        i += ch_len;
    }
    out.retain(|ch| ch != '\r' && ch != '\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion() {
        let own = ["/old/a/b", "a", "b"];
        let cond = vec!["www.example.org".to_string(), "example.org".to_string()];
        let cases = [
            ("own captures", "/new/$1/$2", "/new/a/b"),
            (
                "conditional captures",
                "http://%1$0",
                "http://example.org/old/a/b",
            ),
            ("missing capture is empty", "/x$7", "/x"),
            ("escaped dollar", "/price\\$1", "/price$1"),
            ("percent not followed by a digit", "/a%zzb", "/a%zzb"),
            ("an escaped percent stays", "/a\\%20b", "/a%20b"),
            ("no CR LF", "/a\r\nSet-Cookie: x", "/aSet-Cookie: x"),
            ("utf-8 kept", "/été/$1", "/été/a"),
        ];
        for (what, t, want) in cases {
            assert_eq!(expand(t, &own, &cond), want, "{what}");
        }
    }

    #[test]
    fn first_matching_rule_wins() {
        let rules = vec![
            ("^/a/(.*)$".to_string(), "/one/$1".to_string()),
            ("^/a/b$".to_string(), "/two".to_string()),
        ];
        let mut rx = Regexes::default();
        assert_eq!(
            first_match(&rules, "/a/b", &[], &mut rx).as_deref(),
            Some("/one/b")
        );
        assert_eq!(first_match(&rules, "/c", &[], &mut rx), None);
    }
}
