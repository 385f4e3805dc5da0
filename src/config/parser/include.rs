//! `include` and `include_shell`: other files (a glob names several) and a
//! command's output, parsed in place, at most `MAX_DEPTH` deep.

use super::{lex, ConfigError, Cur, Eval, Pos, MAX_DEPTH};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Matches one path component against a glob pattern (`*`, `?`, `[...]`).
pub fn glob_match(pat: &[char], name: &[char]) -> bool {
    match pat.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len()).any(|k| glob_match(&pat[1..], &name[k..])),
        Some('?') => !name.is_empty() && glob_match(&pat[1..], &name[1..]),
        Some('[') => {
            let Some(end) = pat.iter().skip(2).position(|&c| c == ']').map(|p| p + 2) else {
                return name.first() == Some(&'[') && glob_match(&pat[1..], &name[1..]);
            };
            let Some(&c) = name.first() else {
                return false;
            };
            let mut set = &pat[1..end];
            let negate = matches!(set.first(), Some('!') | Some('^'));
            if negate {
                set = &set[1..];
            }
            let mut hit = false;
            let mut k = 0;
            while k < set.len() {
                if k + 2 < set.len() && set[k + 1] == '-' {
                    hit |= set[k] <= c && c <= set[k + 2];
                    k += 3;
                } else {
                    hit |= set[k] == c;
                    k += 1;
                }
            }
            hit != negate && glob_match(&pat[end + 1..], &name[1..])
        }
        Some(&p) => name.first() == Some(&p) && glob_match(&pat[1..], &name[1..]),
    }
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The files a glob pattern names, sorted; a pattern without wildcards names itself.
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    for comp in pattern.components() {
        let part = comp.as_os_str().to_string_lossy();
        if !has_glob(&part) {
            for f in &mut found {
                f.push(comp.as_os_str());
            }
            continue;
        }
        let pat: Vec<char> = part.chars().collect();
        let mut next = Vec::new();
        for dir in &found {
            let read = if dir.as_os_str().is_empty() {
                std::fs::read_dir(".")
            } else {
                std::fs::read_dir(dir)
            };
            let Ok(read) = read else { continue };
            let mut names: Vec<String> = read
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.') || pat.first() == Some(&'.'))
                .filter(|n| glob_match(&pat, &n.chars().collect::<Vec<_>>()))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| dir.join(n)));
        }
        found = next;
    }
    found
}

impl Eval {
    pub(super) fn include(&mut self, arg: &str, pos: &Pos) -> Result<(), ConfigError> {
        let path = self.base_dir.join(arg);
        let files = glob(&path);
        for f in files {
            let text = std::fs::read_to_string(&f)
                .map_err(|e| pos.error(format!("cannot include {}: {e}", f.display())))?;
            self.parse_text(&text, &f.display().to_string(), pos)?;
        }
        Ok(())
    }

    pub(super) fn include_shell(&mut self, cmd: &str, pos: &Pos) -> Result<(), ConfigError> {
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| pos.error(format!("include_shell \"{cmd}\": {e}")))?;
        if !out.status.success() {
            return Err(pos.error(format!("include_shell \"{cmd}\" failed: {}", out.status)));
        }
        let text = String::from_utf8(out.stdout)
            .map_err(|_| pos.error(format!("include_shell \"{cmd}\": output is not UTF-8")))?;
        self.parse_text(&text, &format!("include_shell \"{cmd}\""), pos)
    }

    fn parse_text(&mut self, text: &str, name: &str, from: &Pos) -> Result<(), ConfigError> {
        if self.depth >= MAX_DEPTH {
            return Err(from.error("includes nested too deeply"));
        }
        let file: Rc<str> = Rc::from(name);
        let toks = lex(text, &file)?;
        let mut c = Cur { toks: &toks, i: 0 };
        self.depth += 1;
        let r = self.parse_stmts(&mut c, false);
        self.depth -= 1;
        r
    }
}
