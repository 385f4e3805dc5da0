//! Where a URL path is on the file system (lighttpd's docroot and physical
//! phases): the document root (`server.document-root`, mod_simple_vhost,
//! mod_evhost), then mod_userdir (`/~user/...` below a user's home) or
//! mod_alias (`alias.url` prefixes mapped to other directories).
//!
//! The result is a base directory and the part of the path below it; the
//! request's URL path stays what it was, so access rules, `auth.require`,
//! gateways by extension and `static-file.exclude-extensions` still judge
//! the URL, and a mapped path never reaches above its base: the URL path
//! was normalised first (no `..` left), and an alias key matches only a
//! whole segment.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use crate::config::Settings;

/// A URL path's place on the file system: `base` joined with `rel` (which
/// is empty, or starts with `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Physical<'a> {
    /// The directory the path lives below: the docroot, an alias target,
    /// a user's `public_html`. Symlink checks stop here.
    pub base: Cow<'a, str>,
    /// The rest of the path below `base`.
    pub rel: Cow<'a, str>,
}

impl Physical<'_> {
    /// The file system path.
    pub fn join(&self) -> String {
        let mut p = self.base.trim_end_matches('/').to_string();
        p.push_str(&self.rel);
        p
    }

    /// Whether mod_userdir or mod_alias moved the path off the docroot.
    pub fn mapped(&self, docroot: &str) -> bool {
        self.base != docroot
    }
}

/// Maps `path` (decoded, normalised) under `docroot`: userdir first, then
/// alias, else the docroot itself. `Err(403)`: an alias whose key ends
/// without a slash but whose target ends with one, followed by `..` (the
/// traversal lighttpd's mod_alias refuses).
pub fn map<'a>(s: &'a Settings, docroot: &'a str, path: &'a str) -> Result<Physical<'a>, u16> {
    if let Some(p) = userdir(s, path) {
        return Ok(p);
    }
    if let Some(p) = alias(s, path)? {
        return Ok(p);
    }
    Ok(Physical {
        base: Cow::Borrowed(docroot),
        rel: Cow::Borrowed(path),
    })
}

/// `alias.url`: the first (which the configuration check makes the
/// longest) prefix that starts the path, ending at a segment boundary.
fn alias<'a>(s: &'a Settings, path: &'a str) -> Result<Option<Physical<'a>>, u16> {
    let lc = s.files.force_lowercase_filenames;
    for (key, target) in &s.paths.alias_url {
        let Some(head) = path.get(..key.len()) else {
            continue;
        };
        let hit = if lc {
            head.eq_ignore_ascii_case(key)
        } else {
            head == key
        };
        if !hit {
            continue;
        }
        let rest = &path[key.len()..];
        let rel = if key.ends_with('/') {
            Cow::Owned(format!("/{rest}"))
        } else if rest.is_empty() || rest.starts_with('/') {
            Cow::Borrowed(rest)
        } else if rest.starts_with('.') && target.ends_with('/') {
            // `/icons..` with `"/icons" => "/usr/share/icons/"`: a way up
            // out of the target (lighttpd answers 403).
            let r = rest.trim_start_matches('.');
            if rest.len() - r.len() <= 2 && (r.is_empty() || r.starts_with('/')) {
                return Err(403);
            }
            // (Another name that merely starts with the key: not this alias.)
            continue;
        } else {
            // `/jsx` does not fall under `"/js" => ...`.
            continue;
        };
        return Ok(Some(Physical {
            base: Cow::Borrowed(target.as_str()),
            rel,
        }));
    }
    Ok(None)
}

/// The characters lighttpd allows in a user name for `userdir.basepath`
/// (and glint for the password database too): `[-_.A-Za-z0-9]`, not `.`
/// or `..`.
fn user_name_ok(u: &str) -> bool {
    !u.is_empty()
        && u != "."
        && u != ".."
        && u.len() < 256
        && u.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// How long a home directory looked up in the password database is
/// remembered: lighttpd keeps two for 60 s; lookups can read files (NSS).
const HOME_TTL: std::time::Duration = std::time::Duration::from_secs(60);
/// Most homes remembered.
const HOME_CACHE: usize = 64;

thread_local! {
    static HOMES: RefCell<HashMap<String, (Option<String>, std::time::Instant)>> =
        RefCell::new(HashMap::new());
}

/// A user's home directory from the password database (cached).
fn home_of(user: &str) -> Option<String> {
    let now = std::time::Instant::now();
    let cached = HOMES.with(|h| {
        h.borrow()
            .get(user)
            .filter(|(_, at)| now.duration_since(*at) < HOME_TTL)
            .map(|(d, _)| d.clone())
    });
    if let Some(d) = cached {
        return d;
    }
    let found = nix::unistd::User::from_name(user)
        .ok()
        .flatten()
        .map(|u| u.dir.to_string_lossy().into_owned());
    HOMES.with(|h| {
        let mut h = h.borrow_mut();
        if h.len() >= HOME_CACHE {
            h.retain(|_, (_, at)| now.duration_since(*at) < HOME_TTL);
            if h.len() >= HOME_CACHE {
                h.clear();
            }
        }
        h.insert(user.to_string(), (found.clone(), now));
    });
    found
}

/// mod_userdir: `/~user/rest` is `rest` below the user's `userdir.path`.
fn userdir<'a>(s: &'a Settings, path: &'a str) -> Option<Physical<'a>> {
    let sub = s.userdir.path.as_deref()?;
    if !s.userdir.active {
        return None;
    }
    let after = path.strip_prefix("/~")?;
    let (user, rest) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, ""),
    };
    if !user_name_ok(user) {
        return None;
    }
    let lc = s.files.force_lowercase_filenames;
    let listed = |l: &[String]| {
        l.iter().any(|x| {
            if lc {
                x.eq_ignore_ascii_case(user)
            } else {
                x == user
            }
        })
    };
    if listed(&s.userdir.exclude_user) {
        return None;
    }
    if let Some(only) = &s.userdir.include_user {
        if !only.iter().any(|x| x == user) {
            return None;
        }
    }
    let user = if lc {
        Cow::Owned(user.to_ascii_lowercase())
    } else {
        Cow::Borrowed(user)
    };
    let mut base = match s.userdir.basepath.as_deref() {
        Some(b) => {
            let mut p = b.trim_end_matches('/').to_string();
            if s.userdir.letterhomes {
                if user.starts_with('.') {
                    return None;
                }
                p.push('/');
                p.push_str(&user[..1]);
            }
            p.push('/');
            p.push_str(&user);
            p
        }
        None => home_of(&user)?.trim_end_matches('/').to_string(),
    };
    let sub = sub.trim_matches('/');
    if !sub.is_empty() {
        base.push('/');
        base.push_str(sub);
    }
    // From the password database only a home that has the directory is
    // taken (lighttpd checks it too); otherwise the docroot answers.
    if s.userdir.basepath.is_none() && !std::fs::metadata(&base).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    Some(Physical {
        base: Cow::Owned(base),
        rel: Cow::Borrowed(rest),
    })
}

/// mod_evhost: `evhost.path-pattern` filled from the parts of `host`
/// (without its port): `%0` the domain and top-level domain, `%1` the
/// top-level domain, `%2` the domain without it, `%3`, `%4`.. the
/// subdomains from the right, `%_` the whole name, `%%` a `%`, `%{n.m}`
/// the m-th character of part n. `None` when the host is empty or the
/// result is no directory (the docroot stays, as lighttpd).
pub fn evhost(pattern: &str, host: &str) -> Option<String> {
    if host.is_empty() || host.starts_with('.') || host.contains("..") {
        return None;
    }
    let labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
    let part = |n: usize| -> Option<String> {
        let k = labels.len();
        match n {
            0 if k >= 2 => Some(format!("{}.{}", labels[k - 2], labels[k - 1])),
            0 => labels.last().map(|l| l.to_string()),
            1 => labels.last().map(|l| l.to_string()),
            n => k.checked_sub(n).map(|i| labels[i].to_string()),
        }
    };
    let b = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + host.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' || i + 1 >= b.len() {
            let ch = pattern[i..].chars().next()?;
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        match b[i + 1] {
            b'%' => {
                out.push('%');
                i += 2;
            }
            b'_' => {
                out.push_str(host);
                i += 2;
            }
            d @ b'0'..=b'9' => {
                if let Some(p) = part(usize::from(d - b'0')) {
                    out.push_str(&p);
                }
                i += 2;
            }
            b'{' => {
                // `%{n}` or `%{n.m}`: one digit each.
                let end = pattern[i..].find('}').map(|e| i + e)?;
                let inner = &pattern[i + 2..end];
                let (n, m) = match inner.split_once('.') {
                    Some((n, m)) => (n, Some(m)),
                    None => (inner, None),
                };
                let n: usize = n.parse().ok()?;
                if let Some(p) = part(n) {
                    match m.and_then(|m| m.parse::<usize>().ok()) {
                        None | Some(0) => out.push_str(&p),
                        Some(m) => {
                            if let Some(c) = p.chars().nth(m - 1) {
                                out.push(c);
                            }
                        }
                    }
                }
                i = end + 1;
            }
            _ => {
                // An unknown %-sequence adds nothing, as lighttpd.
                i += 2;
            }
        }
    }
    if !out.ends_with('/') {
        out.push('/');
    }
    // The host was checked by the request parser (no '/'); the parts
    // cannot climb out of the pattern's directory.
    if out.split('/').any(|seg| seg == "..") {
        return None;
    }
    std::fs::metadata(&out)
        .is_ok_and(|m| m.is_dir())
        .then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(alias: &[(&str, &str)]) -> Settings {
        let mut s = Settings::default();
        s.paths.alias_url = alias
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        s
    }

    #[test]
    fn alias_table() {
        let s = settings(&[
            ("/js/lib/", "/usr/share/lib/"),
            ("/js/", "/usr/share/javascript/"),
            ("/icons", "/usr/share/icons/"),
            ("/doc", "/usr/share/doc"),
        ]);
        type Want = Result<(&'static str, &'static str), u16>;
        let cases: &[(&str, Want)] = &[
            (
                "/js/jquery.js",
                Ok(("/usr/share/javascript/", "/jquery.js")),
            ),
            ("/js/lib/x.js", Ok(("/usr/share/lib/", "/x.js"))),
            ("/js/", Ok(("/usr/share/javascript/", "/"))),
            ("/icons", Ok(("/usr/share/icons/", ""))),
            ("/icons/a.png", Ok(("/usr/share/icons/", "/a.png"))),
            ("/icons../etc/passwd", Err(403)),
            ("/icons./x", Err(403)),
            ("/icons.png", Ok(("/d", "/icons.png"))),
            ("/iconsx", Ok(("/d", "/iconsx"))),
            ("/doc/x", Ok(("/usr/share/doc", "/x"))),
            ("/docs/x", Ok(("/d", "/docs/x"))),
            ("/other", Ok(("/d", "/other"))),
        ];
        for (path, want) in cases {
            let got = map(&s, "/d", path).map(|p| (p.base.into_owned(), p.rel.into_owned()));
            let want = want.map(|(b, r)| (b.to_string(), r.to_string()));
            assert_eq!(got, want, "{path}");
        }
        let j = map(&s, "/d", "/doc/x").unwrap().join();
        assert_eq!(j, "/usr/share/doc/x");
    }

    #[test]
    fn userdir_with_basepath() {
        let s = Settings {
            userdir: crate::config::UserDir {
                path: Some("public_html".into()),
                basepath: Some("/home/".into()),
                exclude_user: vec!["root".into()],
                ..Settings::default().userdir
            },
            ..Settings::default()
        };
        let p = map(&s, "/d", "/~bob/a/b.html").unwrap();
        assert_eq!(p.join(), "/home/bob/public_html/a/b.html");
        assert_eq!(
            map(&s, "/d", "/~bob").unwrap().join(),
            "/home/bob/public_html"
        );
        for path in ["/~root/x", "/~../x", "/~./x", "/~a%2Fb/x", "/~/x", "/bob/x"] {
            assert_eq!(map(&s, "/d", path).unwrap().base, "/d", "{path}");
        }
        let only = Settings {
            userdir: crate::config::UserDir {
                include_user: Some(vec!["alice".into()]),
                ..s.clone().userdir
            },
            ..s.clone()
        };
        assert_eq!(map(&only, "/d", "/~bob/x").unwrap().base, "/d");
        let letters = Settings {
            userdir: crate::config::UserDir {
                letterhomes: true,
                ..s.clone().userdir
            },
            ..s.clone()
        };
        assert_eq!(
            map(&letters, "/d", "/~bob/x").unwrap().join(),
            "/home/b/bob/public_html/x"
        );
        let off = Settings {
            userdir: crate::config::UserDir {
                active: false,
                ..s.userdir
            },
            ..s
        };
        assert_eq!(map(&off, "/d", "/~bob/x").unwrap().base, "/d");
    }

    #[test]
    fn evhost_patterns() {
        let root = std::env::temp_dir().join(format!("glint-evhost-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("example.org/www")).unwrap();
        std::fs::create_dir_all(root.join("org/example/w")).unwrap();
        let r = root.display().to_string();
        assert_eq!(
            evhost(&format!("{r}/%0/%3/"), "www.example.org").as_deref(),
            Some(format!("{r}/example.org/www/").as_str())
        );
        assert_eq!(
            evhost(&format!("{r}/%1/%2/%{{3.1}}"), "www.example.org").as_deref(),
            Some(format!("{r}/org/example/w/").as_str())
        );
        assert_eq!(evhost(&format!("{r}/%0/%3/"), "other.example.org"), None);
        assert_eq!(evhost(&format!("{r}/%_/"), ""), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
