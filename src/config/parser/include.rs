//! `include` and `include_shell`: other files (a glob names several) and a
//! command's output, parsed in place, at most `MAX_DEPTH` deep.

use super::{lex, ConfigError, Cur, Eval, Pos, MAX_DEPTH};
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The files a pattern names, in glob(3)'s order (sorted); a pattern
/// without wildcards names itself, so that a missing file is an error, and
/// a pattern that matches nothing names nothing (lighttpd's `include` of
/// `conf.d/*.conf` in an empty directory). `*` does not match a leading dot
/// or a `/`, as in the shell.
pub fn expand(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let Some(text) = pattern.to_str() else {
        return Err(format!("{}: not UTF-8", pattern.display()));
    };
    if !has_glob(text) {
        return Ok(vec![pattern.to_path_buf()]);
    }
    // The crate's require_literal_leading_dot drops every dot file, even
    // for a pattern `.*` (and unwraps a non-UTF-8 name on the way): the
    // shell's rule is applied below instead.
    let opts = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let paths = glob::glob_with(text, opts).map_err(|e| format!("{text}: {e}"))?;
    // An entry that cannot be read (a directory without permission on the
    // way) matches nothing, as glob(3) without GLOB_ERR.
    Ok(paths
        .filter_map(Result::ok)
        .filter(|p| !hidden_by_wildcard(pattern, p))
        .collect())
}

/// True when a component of `found` starts with a dot that its pattern
/// component matched with a wildcard (`*` does not match `.hidden`).
fn hidden_by_wildcard(pattern: &Path, found: &Path) -> bool {
    pattern.components().zip(found.components()).any(|(p, f)| {
        let (p, f) = (
            p.as_os_str().as_encoded_bytes(),
            f.as_os_str().as_encoded_bytes(),
        );
        f.first() == Some(&b'.') && p.first() != Some(&b'.')
    })
}

impl Eval {
    pub(super) fn include(&mut self, arg: &str, pos: &Pos) -> Result<(), ConfigError> {
        let path = self.base_dir.join(arg);
        let files = expand(&path).map_err(|e| pos.error(format!("cannot include {e}")))?;
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
