//! The layering rule of `src/lib.rs`, checked: a module imports only
//! modules of layers below its own, and modules of one layer do not import
//! each other. Every `crate::x` a source file names outside its tests is
//! looked up in the table below; a new top-level module must be given a
//! layer here before anything can use it.

use std::path::Path;

/// Each top-level module and its layer (higher is nearer the top).
const LAYERS: &[(&str, u8)] = &[
    ("service", 9),
    ("server", 8),
    ("conn", 7),
    ("exchange", 6),
    ("handler", 5),
    ("upstream", 5),
    ("proto", 4),
    ("accesslog", 4),
    ("acme", 3),
    ("msg", 3),
    ("net", 3),
    ("output", 3),
    ("clock", 2),
    ("config", 2),
    ("authn", 1),
    ("buf", 1),
    ("compress", 1),
    ("date", 1),
    ("errorlog", 1),
    ("forwarded", 1),
    ("hash", 1),
    ("httpup", 1),
    ("path", 1),
    ("signals", 1),
    ("sockopt", 1),
    ("stats", 1),
    ("tls", 1),
];

fn layer(m: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, l)| *l)
}

/// The `crate::x` names on one line of code (comments left out).
fn crate_refs(line: &str) -> Vec<String> {
    let code = match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // `use crate::{a, b}` names several.
        if name.is_empty() && after.starts_with('{') {
            let end = after.find('}').unwrap_or(after.len());
            for part in after[1..end].split(',') {
                let n: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !n.is_empty() {
                    out.push(n);
                }
            }
        } else if !name.is_empty() {
            out.push(name);
        }
        rest = after;
    }
    out
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
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

#[test]
fn every_import_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap_or(f);
        let top = rel
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .unwrap_or_default();
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(own) = layer(&top) else {
            wrong.push(format!(
                "{}: module {top} has no layer in tests/layers.rs",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            // Unit tests may use what they like.
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            for used in crate_refs(line) {
                if used == top {
                    continue;
                }
                match layer(&used) {
                    None => wrong.push(format!(
                        "{}:{}: crate::{used} has no layer in tests/layers.rs",
                        rel.display(),
                        n + 1
                    )),
                    Some(l) if l >= own => wrong.push(format!(
                        "{}:{}: {top} (layer {own}) imports {used} (layer {l}): an arrow {}",
                        rel.display(),
                        n + 1,
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
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_what_it_must() {
    assert_eq!(crate_refs("use crate::msg::{Reply, Sink};"), ["msg"]);
    assert_eq!(
        crate_refs("use crate::{conn, exchange::Services};"),
        ["conn", "exchange"]
    );
    assert_eq!(
        crate_refs("let x = crate::upstream::fnv(b); // crate::server"),
        ["upstream"]
    );
    assert!(crate_refs("// use crate::server::Server;").is_empty());
}
