//! The layering rule of `src/lib.rs`, checked: a module imports only
//! modules of layers below its own, modules of one layer do not import
//! each other, and inside one module no two files import each other,
//! directly or round a longer circle (a file and the module file above it,
//! `mod.rs` and its children, are one room and may).
//!
//! Every source file outside the tests is read as tokens (comments and
//! literals left out; an item under `#[cfg(test)]` left out, and a file
//! declared by `#[cfg(test)] mod x;` with all below it). Each `use` item
//! (several lines, `{}` groups, `self::`, `super::`, `crate::`, a child
//! module's name) and each path written in code (`crate::x::f()`,
//! `super::y::Z`) is resolved to the file that defines it, following
//! `pub use` re-exports. A new top-level module must be given a layer in
//! the table below before anything can use it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Each top-level module and its layer (higher is nearer the top). `syntax`
/// alone is at the bottom: every module may use it, `ldap` and `syslog` too.
const LAYERS: &[(&str, u8)] = &[
    ("service", 10),
    ("server", 9),
    ("conn", 8),
    ("exchange", 7),
    ("handler", 6),
    ("upstream", 6),
    ("proto", 5),
    ("accesslog", 5),
    ("rrdtool", 5),
    ("acme", 4),
    ("msg", 4),
    ("net", 4),
    ("output", 4),
    ("clock", 3),
    ("config", 3),
    ("authn", 2),
    ("buf", 2),
    ("compress", 2),
    ("date", 2),
    ("errorlog", 2),
    ("forwarded", 2),
    ("geo", 2),
    ("httpup", 2),
    ("magnet", 2),
    ("path", 2),
    ("signals", 2),
    ("sockopt", 2),
    ("hash", 1),
    ("sqldb", 1),
    ("stats", 2),
    ("ldap", 1),
    ("syslog", 1),
    ("syntax", 0),
    ("tls", 2),
];

fn layer(m: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, l)| *l)
}

// ---------------------------------------------------------------- tokens

#[derive(Clone, Debug, PartialEq)]
struct Tok {
    text: String,
    line: usize,
    /// The inline modules (`mod x { .. }`) this token is inside, outermost first.
    inline: Vec<String>,
}

/// The code of `src` with comments, string and character literals blanked
/// (newlines kept, so that lines still count).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && next == Some(b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r'
            && (next == Some(b'"') || next == Some(b'#'))
            && !ident_byte_before(b, i)
        {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            j += 1;
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(b.len());
            for &x in &b[i..end] {
                blank(&mut out, x);
            }
            i = end;
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            let lit_end = if next == Some(b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 3 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 3)
            } else {
                // A multi-byte char literal: up to 4 UTF-8 bytes then a quote.
                (2..=5)
                    .find(|k| b.get(i + k) == Some(&b'\'') && next.is_some_and(|n| n >= 0x80))
                    .map(|k| i + k + 1)
            };
            match lit_end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(b' ', end - i));
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ident_byte_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Identifiers, `::` and single punctuation characters of stripped code.
fn tokens(code: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut line = 1;
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((code[start..i].to_string(), line));
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push(("::".to_string(), line));
            i += 2;
        } else {
            let ch = code[i..].chars().next().unwrap_or(' ');
            out.push((ch.to_string(), line));
            i += ch.len_utf8();
        }
    }
    with_inline_modules(out)
}

/// Marks each token with the inline modules it is inside.
fn with_inline_modules(toks: Vec<(String, usize)>) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    let mut depth = 0usize;
    let mut stack: Vec<(String, usize)> = Vec::new();
    for (k, (text, line)) in toks.iter().enumerate() {
        if text == "{" {
            depth += 1;
            let opens_mod = k >= 2 && toks[k - 2].0 == "mod";
            if opens_mod {
                stack.push((toks[k - 1].0.clone(), depth));
            }
        }
        out.push(Tok {
            text: text.clone(),
            line: *line,
            inline: stack.iter().map(|(n, _)| n.clone()).collect(),
        });
        if text == "}" {
            if stack.last().is_some_and(|(_, d)| *d == depth) {
                stack.pop();
            }
            depth = depth.saturating_sub(1);
        }
    }
    out
}

/// The end (exclusive) of the item starting at `i`: its `;` or its
/// closing brace, whichever comes first at depth 0.
fn item_end(toks: &[Tok], i: usize) -> usize {
    let mut depth = 0i32;
    let mut j = i;
    while j < toks.len() {
        match toks[j].text.as_str() {
            "{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => {
                depth -= 1;
                if depth == 0 && toks[j].text == "}" {
                    return j + 1;
                }
            }
            ";" if depth == 0 => return j + 1,
            _ => {}
        }
        j += 1;
    }
    toks.len()
}

/// Drops every item under `#[cfg(test)]`; returns the names of the child
/// modules declared that way (`#[cfg(test)] mod tests;`).
fn drop_test_items(toks: Vec<Tok>) -> (Vec<Tok>, Vec<String>) {
    let mut out = Vec::with_capacity(toks.len());
    let mut test_mods = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let is_cfg_test = toks[i].text == "#"
            && toks.get(i + 1).is_some_and(|t| t.text == "[")
            && toks.get(i + 2).is_some_and(|t| t.text == "cfg")
            && toks.get(i + 3).is_some_and(|t| t.text == "(")
            && toks.get(i + 4).is_some_and(|t| t.text == "test")
            && toks.get(i + 5).is_some_and(|t| t.text == ")");
        if !is_cfg_test {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        let mut j = i + 7; // past `]`
                           // Further attributes, then visibility, then the item.
        while toks.get(j).is_some_and(|t| t.text == "#") {
            j = item_end_attr(&toks, j);
        }
        let mut k = j;
        while toks
            .get(k)
            .is_some_and(|t| matches!(t.text.as_str(), "pub" | "(" | "crate" | "super" | ")"))
        {
            k += 1;
        }
        if toks.get(k).is_some_and(|t| t.text == "mod")
            && toks.get(k + 2).is_some_and(|t| t.text == ";")
        {
            test_mods.push(toks[k + 1].text.clone());
        }
        i = item_end(&toks, j);
    }
    (out, test_mods)
}

/// The end of an attribute `#[...]` starting at `i`.
fn item_end_attr(toks: &[Tok], i: usize) -> usize {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(i + 1) {
        match t.text.as_str() {
            "[" => depth += 1,
            "]" => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

// ------------------------------------------------------------- use items

/// One path a `use` item names, with its alias (the last segment, or what
/// `as` gives; `*` for a glob).
#[derive(Clone, Debug, PartialEq)]
struct UsePath {
    segs: Vec<String>,
    name: String,
}

/// The paths of one `use` tree (the tokens between `use` and `;`).
fn use_paths(toks: &[&str]) -> Vec<UsePath> {
    let mut out = Vec::new();
    let mut i = 0;
    use_tree(toks, &mut i, &[], &mut out);
    out
}

fn use_tree(toks: &[&str], i: &mut usize, prefix: &[String], out: &mut Vec<UsePath>) {
    let mut segs = prefix.to_vec();
    if toks.get(*i) == Some(&"::") {
        *i += 1; // a leading `::`
    }
    loop {
        match toks.get(*i).copied() {
            Some("{") => {
                *i += 1;
                while toks.get(*i).is_some_and(|t| *t != "}") {
                    use_tree(toks, i, &segs, out);
                    if toks.get(*i) == Some(&",") {
                        *i += 1;
                    }
                }
                *i += 1; // `}`
                return;
            }
            Some("*") => {
                *i += 1;
                out.push(UsePath {
                    segs,
                    name: "*".into(),
                });
                return;
            }
            Some(t) if is_ident(t) => {
                segs.push(t.to_string());
                *i += 1;
                if toks.get(*i) == Some(&"::") {
                    *i += 1;
                    continue;
                }
                let mut name = t.to_string();
                if toks.get(*i) == Some(&"as") {
                    name = toks.get(*i + 1).map_or(name, |a| a.to_string());
                    *i += 2;
                }
                if name == "self" {
                    segs.pop();
                    name = segs.last().cloned().unwrap_or_default();
                }
                out.push(UsePath { segs, name });
                return;
            }
            _ => {
                *i += 1;
                return;
            }
        }
    }
}

fn is_ident(t: &str) -> bool {
    t.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
}

// ----------------------------------------------------------------- files

struct SrcFile {
    rel: PathBuf,
    /// The module path: `src/a/b.rs` and `src/a/b/mod.rs` are `[a, b]`.
    module: Vec<String>,
    /// `use` items: (line, inline modules, path) and whether `pub`.
    uses: Vec<(usize, Vec<String>, UsePath, bool)>,
    /// Paths written in code: (line, inline modules, segments).
    paths: Vec<(usize, Vec<String>, Vec<String>)>,
    /// Child modules declared here (`mod x;` and `mod x { .. }`).
    children: BTreeSet<String>,
    test_children: Vec<String>,
    /// Names of the items this file defines, for glob re-exports.
    defines: BTreeSet<String>,
}

fn module_of(rel: &Path) -> Vec<String> {
    let mut m: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = m.last_mut() {
        *last = last.trim_end_matches(".rs").to_string();
    }
    if m.last().is_some_and(|l| l == "mod") || m == ["lib"] {
        m.pop();
    }
    m
}

fn read_file(src: &Path, path: &Path) -> SrcFile {
    let rel = path.strip_prefix(src).unwrap_or(path).to_path_buf();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (toks, test_children) = drop_test_items(tokens(&strip(&text)));
    let mut f = SrcFile {
        module: module_of(&rel),
        rel,
        uses: Vec::new(),
        paths: Vec::new(),
        children: BTreeSet::new(),
        test_children,
        defines: BTreeSet::new(),
    };
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].text.as_str();
        if t == "use" {
            let end = item_end(&toks, i);
            let body: Vec<&str> = toks[i + 1..end.saturating_sub(1)]
                .iter()
                .map(|t| t.text.as_str())
                .collect();
            let public = i > 0 && matches!(toks[i - 1].text.as_str(), "pub" | ")");
            for p in use_paths(&body) {
                f.uses
                    .push((toks[i].line, toks[i].inline.clone(), p, public));
            }
            i = end;
            continue;
        }
        if t == "mod" && toks.get(i + 1).is_some_and(|n| is_ident(&n.text)) {
            f.children.insert(toks[i + 1].text.clone());
        }
        let defining = matches!(
            t,
            "fn" | "struct" | "enum" | "type" | "const" | "static" | "trait" | "mod" | "union"
        );
        if defining {
            if let Some(n) = toks.get(i + 1) {
                f.defines.insert(n.text.clone());
            }
        }
        let starts_path = toks.get(i + 1).is_some_and(|n| n.text == "::")
            && is_ident(t)
            && (i == 0 || toks[i - 1].text != "::");
        if starts_path {
            let mut segs = vec![t.to_string()];
            let mut j = i + 1;
            while toks.get(j).is_some_and(|x| x.text == "::")
                && toks.get(j + 1).is_some_and(|x| is_ident(&x.text))
            {
                segs.push(toks[j + 1].text.clone());
                j += 2;
            }
            f.paths.push((toks[i].line, toks[i].inline.clone(), segs));
            i = j;
            continue;
        }
        i += 1;
    }
    f
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => panic!("read {}: {e}", dir.display()),
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
}

/// The library's files, tests left out (a file is a test when it, or a
/// module above it, is declared under `#[cfg(test)]`).
fn library(src: &Path) -> Vec<SrcFile> {
    let mut paths = Vec::new();
    walk(src, &mut paths);
    paths.sort();
    let all: Vec<SrcFile> = paths
        .iter()
        .map(|p| read_file(src, p))
        .filter(|f| f.rel != Path::new("main.rs"))
        .collect();
    let test_roots: Vec<Vec<String>> = all
        .iter()
        .flat_map(|f| {
            f.test_children.iter().map(|c| {
                // `a/b.rs` and `a/b/mod.rs` declaring `mod c;` both mean `a/b/c.rs`.
                let mut m = f.module.clone();
                m.push(c.clone());
                m
            })
        })
        .collect();
    all.into_iter()
        .filter(|f| !test_roots.iter().any(|t| f.module.starts_with(t)))
        .collect()
}

// ------------------------------------------------------------ resolution

struct Crate {
    files: Vec<SrcFile>,
    by_module: HashMap<Vec<String>, usize>,
}

impl Crate {
    fn new(files: Vec<SrcFile>) -> Crate {
        let by_module = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.module.clone(), i))
            .collect();
        Crate { files, by_module }
    }

    /// The absolute module path a path written in file `f` (inside the
    /// inline modules `inline`) starts from; `None` for other crates.
    fn absolute(&self, f: usize, inline: &[String], segs: &[String]) -> Option<Vec<String>> {
        let file = &self.files[f];
        let mut here: Vec<String> = file.module.iter().chain(inline).cloned().collect();
        let mut rest = segs;
        match rest.first().map(String::as_str) {
            Some("crate") => return Some(rest[1..].to_vec()),
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    here.pop()?;
                    rest = &rest[1..];
                }
            }
            // A child module of this file (2018 paths), inline or a file.
            Some(first) if inline.is_empty() && file.children.contains(first) => {}
            _ => return None,
        }
        here.extend(rest.iter().cloned());
        Some(here)
    }

    /// The file that defines what the absolute path `segs` names,
    /// following `pub use` re-exports (at most `depth` of them).
    fn resolve(&self, segs: &[String], depth: u32) -> Option<usize> {
        let (n, &file) = (0..=segs.len())
            .rev()
            .find_map(|n| self.by_module.get(&segs[..n]).map(|f| (n, f)))?;
        let Some(item) = segs.get(n) else {
            return Some(file);
        };
        if depth == 0 {
            return Some(file);
        }
        let f = &self.files[file];
        for (_, inline, u, public) in &f.uses {
            if !public || !inline.is_empty() {
                continue;
            }
            let target = if u.name == *item {
                self.absolute(file, &[], &u.segs)
            } else if u.name == "*" {
                let glob = self.absolute(file, &[], &u.segs)?;
                let g = self.resolve(&glob, depth - 1)?;
                if !self.files[g].defines.contains(item) {
                    continue;
                }
                Some(glob.into_iter().chain([item.clone()]).collect())
            } else {
                continue;
            };
            let Some(mut target) = target else { continue };
            target.extend(segs[n + 1..].iter().cloned());
            return self.resolve(&target, depth - 1).or(Some(file));
        }
        Some(file)
    }

    /// Each file's imports: (line, file imported).
    fn edges(&self, f: usize) -> Vec<(usize, usize)> {
        let file = &self.files[f];
        let uses = file.uses.iter().map(|(l, inl, u, _)| (*l, inl, &u.segs));
        let paths = file.paths.iter().map(|(l, inl, s)| (*l, inl, s));
        let mut out: Vec<(usize, usize)> = uses
            .chain(paths)
            .filter_map(|(line, inline, segs)| {
                let abs = self.absolute(f, inline, segs)?;
                let to = self.resolve(&abs, 8)?;
                (to != f).then_some((line, to))
            })
            .collect();
        out.sort();
        out.dedup_by_key(|(_, to)| *to);
        out
    }
}

// ----------------------------------------------------------------- checks

fn top(f: &SrcFile) -> String {
    f.module.first().cloned().unwrap_or_default()
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_import_points_down() {
    let krate = Crate::new(library(&src_dir()));
    let mut wrong = Vec::new();
    for (i, f) in krate.files.iter().enumerate() {
        let own_top = top(f);
        if own_top.is_empty() || own_top == "lib" {
            continue;
        }
        let Some(own) = layer(&own_top) else {
            wrong.push(format!(
                "{}: module {own_top} has no layer in tests/layers.rs",
                f.rel.display()
            ));
            continue;
        };
        for (line, to) in krate.edges(i) {
            let used = top(&krate.files[to]);
            if used == own_top || used.is_empty() || used == "lib" {
                continue;
            }
            match layer(&used) {
                None => wrong.push(format!(
                    "{}:{line}: crate::{used} has no layer in tests/layers.rs",
                    f.rel.display()
                )),
                Some(l) if l >= own => wrong.push(format!(
                    "{}:{line}: {own_top} (layer {own}) imports {used} (layer {l}): an arrow {}",
                    f.rel.display(),
                    if l == own {
                        "between siblings"
                    } else {
                        "pointing up"
                    }
                )),
                Some(_) => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(n: usize, edges: &BTreeMap<usize, BTreeSet<usize>>) -> Vec<Vec<usize>> {
    struct St<'a> {
        edges: &'a BTreeMap<usize, BTreeSet<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut St, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        let succ: Vec<usize> = s.edges.get(&v).into_iter().flatten().copied().collect();
        for w in succ {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Circles known and not yet cut: none. (A name list per circle, by file;
/// a new one, or a larger one, fails the test.)
const KNOWN_CIRCLES: &[&[&str]] = &[];

#[test]
fn no_two_files_import_each_other() {
    let krate = Crate::new(library(&src_dir()));
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i, f) in krate.files.iter().enumerate() {
        for (_, to) in krate.edges(i) {
            let t = &krate.files[to];
            // A module's own file (`mod.rs`) and the files below it are one
            // room: the parent declares and re-exports its children, the
            // children use the parent's types. A circle is between files
            // neither of which contains the other.
            let nested = t.module.starts_with(&f.module) || f.module.starts_with(&t.module);
            if top(t) == top(f) && !nested {
                edges.entry(i).or_default().insert(to);
            }
        }
    }
    let found: Vec<Vec<usize>> = circles(krate.files.len(), &edges)
        .into_iter()
        .filter(|c| {
            let names: Vec<String> = c
                .iter()
                .map(|&i| krate.files[i].rel.display().to_string())
                .collect();
            !KNOWN_CIRCLES
                .iter()
                .any(|k| k.len() == names.len() && k.iter().all(|f| names.iter().any(|n| n == f)))
        })
        .collect();
    let files: usize = found.iter().map(Vec::len).sum();
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let names: Vec<String> = c
                .iter()
                .map(|&i| {
                    let f = &krate.files[i];
                    let into: Vec<String> = edges
                        .get(&i)
                        .into_iter()
                        .flatten()
                        .filter(|t| c.contains(t))
                        .map(|&t| krate.files[t].rel.display().to_string())
                        .collect();
                    format!("  {} -> {}", f.rel.display(), into.join(", "))
                })
                .collect();
            names.join("\n")
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} circles, {files} files importing each other:\n{}",
        found.len(),
        shown.join("\n\n")
    );
}

#[test]
fn the_check_sees_what_it_must() {
    let paths = |src: &str| -> Vec<String> {
        let (toks, _) = drop_test_items(tokens(&strip(src)));
        let body: Vec<&str> = toks.iter().skip(1).map(|t| t.text.as_str()).collect();
        let end = body.iter().position(|t| *t == ";").unwrap_or(body.len());
        use_paths(&body[..end])
            .iter()
            .map(|u| format!("{}={}", u.segs.join("::"), u.name))
            .collect()
    };
    assert_eq!(
        paths("use crate::msg::{Reply, Sink};"),
        ["crate::msg::Reply=Reply", "crate::msg::Sink=Sink"]
    );
    assert_eq!(
        paths("use crate::{\n  conn,\n  exchange::{self, Services as S},\n};"),
        [
            "crate::conn=conn",
            "crate::exchange=exchange",
            "crate::exchange::Services=S"
        ]
    );
    assert_eq!(paths("use super::super::x::*;"), ["super::super::x=*"]);
    assert_eq!(paths("use self::a::b;"), ["self::a::b=b"]);
    // Comments and strings are not code; an item under cfg(test) is left
    // out but what follows it is not.
    let f = |src: &str| -> Vec<String> {
        let (toks, tests) = drop_test_items(tokens(&strip(src)));
        toks.iter()
            .map(|t| t.text.clone())
            .filter(|t| is_ident(t))
            .chain(tests.into_iter().map(|t| format!("test:{t}")))
            .collect()
    };
    assert_eq!(
        f(
            "// crate::server\nlet s = \"crate::conn\"; /* super::x */\n\
           #[cfg(test)]\nmod tests { use crate::server; }\n#[cfg(test)]\nmod more;\nfn after() {}"
        ),
        ["let", "s", "fn", "after", "test:more"]
    );
    assert_eq!(
        f("let c = '\"'; let l: &'static str = r#\"crate::x\"#; done"),
        ["let", "c", "let", "l", "static", "str", "done"]
    );
}
