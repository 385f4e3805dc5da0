//! mod_redirect and mod_rewrite: regex rules over the request URI.
//!
//! The URI matched is the one the client sent (path and query, still
//! percent-encoded). In the target, `$0`..`$9` are the rule's own captures
//! and `%0`..`%9` those of the last regex conditional that matched.

use crate::syntax;
use std::borrow::Cow;

use super::{facts, ConnInfo, Services, MAX_REWRITES};
use crate::config::{Pattern, Resolved};
use crate::msg::Request;
use crate::path::{normalize, normalize_target};

/// Normalises the path of `first` (into `sv.scratch.path`), resolves the
/// request's settings, and (when `rewrite`) applies `url.rewrite-once`,
/// `-repeat` and `-if-not-file`, resolving again after each rewrite. Returns the URI in
/// force (borrowed when nothing rewrote it), its settings, whether its
/// path is valid, and the length of its path (the query follows the `?`
/// there, if any).
pub fn resolve_and_rewrite<'a>(
    sv: &mut Services,
    info: &ConnInfo,
    req: &Request<'_, '_>,
    first: &'a str,
    rewrite: bool,
) -> (Cow<'a, str>, Resolved, bool, usize) {
    // Rules match the target in lighttpd's normal form (`%3a` is `%3A`):
    // the one the client sent when it is in that form already.
    let mut rewritten: Option<String> = normalize_target(first);
    // (A target mod_magnet made is not rewritten again.)
    let mut rewrites = if rewrite { 0 } else { MAX_REWRITES };
    loop {
        let uri = rewritten.as_deref().unwrap_or(first);
        let (path, query) = super::split_uri(uri);
        let path_len = path.len();
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
            rewrite_once(sv, info, uri, &resolved, rewrites)
        };
        match next {
            // `url.rewrite-once` rules apply once; only `-repeat` rules loop.
            Some(n) if n != uri => {
                let s = &resolved.settings;
                let once_done = rewrites == 0
                    && s.rewrite.repeat.is_empty()
                    && s.rewrite.repeat_if_not_file.is_empty();
                rewritten = Some(normalize_target(&n).unwrap_or(n));
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
                return (uri, resolved, path_ok, path_len);
            }
        }
    }
}

/// The rewrite rules' answer for `uri` on pass `rewrites`: on the first
/// pass `url.rewrite-once`, then `url.rewrite-if-not-file`; on every pass
/// `url.rewrite-repeat`, then `url.rewrite-repeat-if-not-file`. The
/// "if not file" rules apply when the path (where mod_userdir or mod_alias
/// put it) is not a regular file.
fn rewrite_once(
    sv: &mut Services,
    info: &ConnInfo,
    uri: &str,
    resolved: &Resolved,
    rewrites: usize,
) -> Option<String> {
    let s = &resolved.settings;
    if s.rewrite.once.is_empty()
        && s.rewrite.if_not_file.is_empty()
        && s.rewrite.repeat.is_empty()
        && s.rewrite.repeat_if_not_file.is_empty()
    {
        // No rules: the common case, without the work below (a copy of
        // the Host was one malloc and free per request, 130 instructions).
        return None;
    }
    let port = sv.ports.get(info.listener).copied().unwrap_or(0);
    let host = sv.scratch.host.clone();
    let caps = &Subst {
        cond: &resolved.captures,
        scheme: info.scheme(),
        authority: &host,
        port,
    };
    if rewrites == 0 {
        if let Some(n) = first_match(&s.rewrite.once, uri, caps) {
            return Some(n);
        }
        if !s.rewrite.if_not_file.is_empty() && !is_file(sv, s) {
            if let Some(n) = first_match(&s.rewrite.if_not_file, uri, caps) {
                return Some(n);
            }
        }
        // (With once-rules only, a second pass would find nothing new.)
        if !s.rewrite.once.is_empty()
            && s.rewrite.repeat.is_empty()
            && s.rewrite.repeat_if_not_file.is_empty()
        {
            return None;
        }
    }
    if let Some(n) = first_match(&s.rewrite.repeat, uri, caps) {
        return Some(n);
    }
    if !s.rewrite.repeat_if_not_file.is_empty() && !is_file(sv, s) {
        return first_match(&s.rewrite.repeat_if_not_file, uri, caps);
    }
    None
}

/// Whether the request's path (in `sv.scratch.path`) is a regular file.
fn is_file(sv: &Services, s: &crate::config::Settings) -> bool {
    let Some(root) = super::document_root(s, &sv.scratch.host) else {
        return false;
    };
    match super::physical::map(s, &root, &sv.scratch.path) {
        Ok(ph) => std::fs::metadata(ph.join()).is_ok_and(|m| m.is_file()),
        Err(_) => false,
    }
}

/// What a rule's target may name besides the rule's own captures: `%n`,
/// the captures of the last regex conditional that matched, and the
/// request's URL parts for `${url.scheme}`, `${url.authority}`,
/// `${url.port}` (`${url.path}`, `${url.query}` and `${qsa}` come from
/// the URI matched).
#[derive(Debug, Clone, Copy, Default)]
pub struct Subst<'a> {
    pub cond: &'a [String],
    pub scheme: &'a str,
    pub authority: &'a str,
    pub port: u16,
}

/// Applies the first rule whose pattern matches `uri`; returns the expanded target.
pub fn first_match(rules: &[(Pattern, String)], uri: &str, ctx: &Subst<'_>) -> Option<String> {
    for (re, target) in rules {
        if let Some(caps) = re.captures(uri) {
            let own: Vec<&str> = (0..caps.len())
                .map(|i| caps.get(i).map_or("", |m| m.as_str()))
                .collect();
            return Some(expand(target, &own, uri, ctx));
        }
    }
    None
}

/// How `${...}` encodes what it inserts (lighttpd's `burl_append` flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Enc {
    /// As it is (`$n`, `%n`, `${url.*}`, `${noesc:n}`).
    None,
    /// Everything but unreserved characters (`${esc:n}`, `${escape:n}`).
    All,
    /// Everything but unreserved characters, leaving `%XX` as it is
    /// (`${nde:n}`; with `/` kept too, `${psnde:n}`, the default of `${n}`).
    Nde { slash: bool },
}

fn encode_into(out: &mut String, v: &str, enc: Enc) {
    let set = match enc {
        Enc::None => return out.push_str(v),
        Enc::All => &syntax::UNRESERVED,
        Enc::Nde { slash: false } => &syntax::UNRESERVED_KEEP_ESCAPES,
        Enc::Nde { slash: true } => &syntax::PATH_KEEP_ESCAPES,
    };
    syntax::percent_encode(v.as_bytes(), set, out);
}

/// ASCII case of what was appended from `from` on, skipping `%XX`.
fn recase(out: &mut String, from: usize, upper: bool) {
    let tail: String = out[from..].to_string();
    out.truncate(from);
    let b = tail.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push_str(&tail[i..i + 3]);
            i += 3;
            continue;
        }
        let ch = tail[i..].chars().next().unwrap_or('?');
        if upper {
            out.push(ch.to_ascii_uppercase());
        } else {
            out.push(ch.to_ascii_lowercase());
        }
        i += ch.len_utf8().max(1);
    }
}

/// Replaces `$n`, `%n` and `${...}` / `%{...}` in `target`, as lighttpd's
/// mod_rewrite and mod_redirect do: `${n}` and `%{n}` (percent-encoded but
/// for `/` and existing escapes, unless a modifier says otherwise:
/// `esc:`, `escape:`, `nde:`, `psnde:`, `noesc:`, `noescape:`, `tolower:`,
/// `toupper:`), `${url.scheme}`, `${url.authority}`, `${url.port}`,
/// `${url.path}`, `${url.query}`, and `${qsa}` (the query appended with
/// `?` or `&`). `$$` and `%%` (and `\$`, `\%`) are the characters
/// themselves. CR and LF never reach the output, so a target cannot inject
/// a header line.
pub fn expand(target: &str, own: &[&str], uri: &str, ctx: &Subst<'_>) -> String {
    let (path, query) = match uri.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (uri, None),
    };
    let src = Sources {
        own,
        ctx,
        path,
        query,
    };
    let mut out = String::with_capacity(target.len() + 32);
    let b = target.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c == b'$' || c == b'%') && i + 1 < b.len() {
            let n = b[i + 1];
            if n.is_ascii_digit() {
                out.push_str(src.capture(c, usize::from(n - b'0')));
                i += 2;
                continue;
            }
            if n == c {
                out.push(c as char);
                i += 2;
                continue;
            }
            if n == b'{' {
                let Some(close) = target[i..].find('}').map(|e| i + e) else {
                    // lighttpd truncates the result at a malformed `${`.
                    break;
                };
                let (inner, enc, case) = modifiers(&target[i + 2..close]);
                let start = out.len();
                braced(&mut out, &src, c, inner, enc);
                if let Some(up) = case {
                    recase(&mut out, start, up);
                }
                i = close + 1;
                continue;
            }
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

/// What a target's references are expanded from.
struct Sources<'a> {
    /// The rule's own captures (`$n`).
    own: &'a [&'a str],
    ctx: &'a Subst<'a>,
    path: &'a str,
    query: Option<&'a str>,
}

impl Sources<'_> {
    /// Capture `k`: the rule's own for `$`, the condition's for `%`.
    fn capture(&self, sigil: u8, k: usize) -> &str {
        if sigil == b'$' {
            self.own.get(k).copied().unwrap_or("")
        } else {
            self.ctx.cond.get(k).map_or("", |s| s.as_str())
        }
    }
}

/// The modifiers at the start of a `${...}`'s inside: what is left, the
/// encoding (the last one named wins) and the case (`toupper:` true).
fn modifiers(mut inner: &str) -> (&str, Option<Enc>, Option<bool>) {
    let mut enc = None;
    let mut case = None;
    loop {
        let mods: &[(&str, Option<Enc>, Option<bool>)] = &[
            ("esc:", Some(Enc::All), None),
            ("escape:", Some(Enc::All), None),
            ("nde:", Some(Enc::Nde { slash: false }), None),
            ("escnde:", Some(Enc::Nde { slash: false }), None),
            ("psnde:", Some(Enc::Nde { slash: true }), None),
            ("escpsnde:", Some(Enc::Nde { slash: true }), None),
            ("noesc:", Some(Enc::None), None),
            ("noescape:", Some(Enc::None), None),
            ("tolower:", None, Some(false)),
            ("toupper:", None, Some(true)),
        ];
        let Some((m, e, up)) = mods.iter().find(|(m, _, _)| inner.starts_with(m)) else {
            break;
        };
        inner = &inner[m.len()..];
        if let Some(e) = e {
            enc = Some(*e);
        }
        if let Some(u) = up {
            case = Some(*u);
        }
    }
    (inner, enc, case)
}

/// One `${name}` (or `%{name}`, `sigil` `%`) into `out`, encoded as `enc`
/// says: a `url.*` part, `qsa`, or a capture; an unknown name adds nothing.
fn braced(out: &mut String, src: &Sources<'_>, sigil: u8, name: &str, enc: Option<Enc>) {
    let as_is = enc.unwrap_or(Enc::None);
    match name {
        "url.scheme" => encode_into(out, src.ctx.scheme, as_is),
        "url.authority" => encode_into(out, src.ctx.authority, as_is),
        "url.port" => out.push_str(&src.ctx.port.to_string()),
        "url.path" => encode_into(out, src.path, as_is),
        "url.query" => encode_into(out, src.query.unwrap_or(""), as_is),
        "qsa" => {
            if let Some(q) = src.query {
                if out.contains('?') {
                    if !q.is_empty() {
                        out.push('&');
                    }
                } else {
                    out.push('?');
                }
                encode_into(out, q, as_is);
            }
        }
        d if !d.is_empty() && d.len() <= 2 && d.bytes().all(|x| x.is_ascii_digit()) => {
            let k: usize = d.parse().unwrap_or(usize::MAX);
            let v = src.capture(sigil, k);
            encode_into(out, v, enc.unwrap_or(Enc::Nde { slash: true }));
        }
        _ => {}
    }
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
            let ctx = Subst {
                cond: &cond,
                ..Subst::default()
            };
            assert_eq!(expand(t, &own, "/old/a/b", &ctx), want, "{what}");
        }
    }

    #[test]
    fn first_matching_rule_wins() {
        let p = |re: &str| Pattern::new(re).unwrap_or_else(|e| panic!("{e}"));
        let rules = vec![
            (p("^/a/(.*)$"), "/one/$1".to_string()),
            (p("^/a/b$"), "/two".to_string()),
        ];
        assert_eq!(
            first_match(&rules, "/a/b", &Subst::default()).as_deref(),
            Some("/one/b")
        );
        assert_eq!(first_match(&rules, "/c", &Subst::default()), None);
    }

    #[test]
    fn lighttpd_substitutions() {
        let own = ["/a b/c?x=1", "a b/c"];
        let cond = vec!["all".to_string(), "Sub".to_string()];
        let ctx = Subst {
            cond: &cond,
            scheme: "https",
            authority: "example.org",
            port: 8443,
        };
        let cases = [
            (
                "url parts",
                "${url.scheme}://${url.authority}:${url.port}${url.path}",
                "https://example.org:8443/a%20b/c",
            ),
            ("query", "/n?${url.query}", "/n?x=1"),
            ("qsa after no query", "/n${qsa}", "/n?x=1"),
            ("qsa after a query", "/n?y=2${qsa}", "/n?y=2&x=1"),
            ("braced capture encodes, keeps /", "/${1}", "/a%20b/c"),
            ("esc: encodes /", "/${esc:1}", "/a%20b%2Fc"),
            ("noesc: as it is", "/${noesc:1}", "/a b/c"),
            ("conditional, lower", "/%{tolower:1}", "/sub"),
            ("upper", "/${toupper:url.authority}", "/EXAMPLE.ORG"),
            ("dollar dollar", "/$$1", "/$1"),
            ("percent percent", "/100%%", "/100%"),
            ("unknown adds nothing", "/${nothing}x", "/x"),
        ];
        for (what, t, want) in cases {
            assert_eq!(expand(t, &own, "/a%20b/c?x=1", &ctx), want, "{what}");
        }
    }
}
