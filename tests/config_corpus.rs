//! lighttpd's own example configuration (shared/corpus) loads in glint.
//!
//! The corpus is copied into a temporary directory and the `var.*` paths at
//! the top of lighttpd.conf are pointed at the copy, as `lighttpd -t` needs.

use glint::config::Config;
use std::path::{Path, PathBuf};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

fn corpus_dir() -> PathBuf {
    let dir = Path::new(CORPUS).join("lighttpd-1.4.69-doc-config");
    assert!(
        dir.join("lighttpd.conf").is_file(),
        "the configuration corpus is missing: expected {} (a checkout of shared/ beside this repository)",
        dir.display()
    );
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    if let Err(e) = std::fs::create_dir_all(to) {
        panic!("create {}: {e}", to.display());
    }
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) => panic!("read {}: {e}", from.display()),
    };
    for e in entries.flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else if let Err(e) = std::fs::copy(&src, &dst) {
            panic!("copy {}: {e}", src.display());
        }
    }
}

/// A fresh copy of the corpus whose `var.*` paths point at existing
/// directories; removed on drop.
struct Copy {
    dir: PathBuf,
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fresh_copy(tag: &str) -> Copy {
    let dir = std::env::temp_dir().join(format!("glint-corpus-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let conf = dir.join("etc");
    copy_dir(&corpus_dir(), &conf);
    let conf_file = conf.join("lighttpd.conf");
    let text = match std::fs::read_to_string(&conf_file) {
        Ok(t) => t,
        Err(e) => panic!("read {}: {e}", conf_file.display()),
    };
    let mut out = String::new();
    let mut rewritten = Vec::new();
    for line in text.lines() {
        let var = [
            "log_root",
            "server_root",
            "state_dir",
            "home_dir",
            "conf_dir",
            "cache_dir",
        ]
        .into_iter()
        .find(|v| line.starts_with(&format!("var.{v} ")));
        match var {
            Some(v) => {
                let path = if v == "conf_dir" {
                    conf.clone()
                } else {
                    let p = dir.join(v);
                    let _ = std::fs::create_dir_all(&p);
                    p
                };
                out.push_str(&format!("var.{v} = \"{}\"\n", path.display()));
                rewritten.push(v);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    assert_eq!(rewritten.len(), 6, "var.* lines not found: {rewritten:?}");
    if let Err(e) = std::fs::write(&conf_file, out) {
        panic!("write {}: {e}", conf_file.display());
    }
    Copy { dir }
}

#[test]
fn lighttpd_conf_loads() {
    let copy = fresh_copy("main");
    let path = copy.dir.join("etc/lighttpd.conf");
    let c = match Config::load(&path) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let specs: Vec<&str> = c.listeners.iter().map(|l| l.spec.as_str()).collect();
    assert_eq!(specs, [":80"]);
    let g = &c.global;
    assert_eq!(g.listener.port, 80);
    assert_eq!(g.limits.max_fds, 16384);
    assert_eq!(g.process.username.as_deref(), Some("lighttpd"));
    assert_eq!(g.modules, ["mod_access", "mod_accesslog"]);
    assert_eq!(
        g.paths.document_root,
        Some(copy.dir.join("server_root").join("htdocs"))
    );
    assert_eq!(
        g.files.index_file_names,
        [
            "index.xhtml",
            "index.html",
            "index.htm",
            "default.htm",
            "index.php"
        ]
    );
    assert!(
        g.files.mimetype_assign.len() > 1000,
        "mime.conf was included"
    );
    assert!(
        g.accesslog.filename.is_some(),
        "access_log.conf was included"
    );
    // dir-listing.exclude and the listing's encoding are honoured.
    assert_eq!(g.dir_listing.exclude, ["~$"]);
    assert_eq!(g.dir_listing.encoding.as_deref(), Some("UTF-8"));
    let text = c.dump();
    let again = match Config::parse_str(&text, "dump", Path::new("/")) {
        Ok(a) => a,
        Err(e) => panic!("dump does not parse: {e}"),
    };
    assert_eq!(again.dump(), text);
    assert_eq!(again.listeners, c.listeners);
}

/// Loads one corpus file on its own, behind the variables lighttpd.conf
/// would have set: its warnings, or the error that refused it.
fn load_alone(copy: &Copy, rel: &str) -> Result<Vec<String>, String> {
    let etc = copy.dir.join("etc");
    let wrapper = etc.join(format!("alone-{}.conf", rel.replace('/', "-")));
    let text = format!(
        "var.log_root = \"{d}/log\"\nvar.home_dir = \"{d}/home\"\nvar.state_dir = \"{d}/run\"\nvar.server_root = \"{d}/srv\"\nvar.vhosts_dir = server_root + \"/vhosts\"\nvar.cache_dir = \"{d}/cache\"\nvar.socket_dir = home_dir + \"/sockets\"\ninclude \"{rel}\"\n",
        d = copy.dir.display()
    );
    if let Err(e) = std::fs::write(&wrapper, text) {
        panic!("write {}: {e}", wrapper.display());
    }
    Config::load(&wrapper)
        .map(|c| c.warnings)
        .map_err(|e| e.to_string())
}

/// What one corpus file does in glint.
enum Outcome {
    /// Loads, with warnings containing these texts (none at all when empty).
    Loads(&'static [&'static str]),
    /// Refused: the error ends with this text (its `line:col: message`),
    /// after the file's name.
    Refused(&'static str),
}

#[test]
fn each_conf_d_file_loads_or_is_refused_at_its_line() {
    use Outcome::*;
    let copy = fresh_copy("alone");
    // A file naming a module glint does not provide is refused at the
    // line that names it; glint never starts with less than it was asked.
    let cases: &[(&str, Outcome)] = &[
        ("modules.conf", Loads(&[])),
        ("conf.d/access_log.conf", Loads(&[])),
        ("conf.d/auth.conf", Loads(&[])),
        ("conf.d/cgi.conf", Loads(&[])),
        ("conf.d/debug.conf", Loads(&[])),
        ("conf.d/deflate.conf", Loads(&[])),
        ("conf.d/dirlisting.conf", Loads(&[])),
        ("conf.d/evhost.conf", Loads(&[])),
        ("conf.d/expire.conf", Loads(&[])),
        ("conf.d/fastcgi.conf", Loads(&[])),
        ("conf.d/magnet.conf", Loads(&[])),
        ("conf.d/mime.conf", Loads(&[])),
        (
            "conf.d/mod.template",
            Refused("mod.template:6:21: module mod_Foo is not provided by glint"),
        ),
        ("conf.d/proxy.conf", Loads(&[])),
        ("conf.d/rrdtool.conf", Loads(&[])),
        ("conf.d/scgi.conf", Loads(&[])),
        ("conf.d/simple_vhost.conf", Loads(&[])),
        ("conf.d/ssi.conf", Loads(&[])),
        ("conf.d/status.conf", Loads(&[])),
        ("conf.d/userdir.conf", Loads(&[])),
        ("conf.d/webdav.conf", Loads(&[])),
        ("vhosts.d/vhosts.template", Loads(&[])),
    ];
    let mut wrong = Vec::new();
    for (rel, want) in cases {
        match (load_alone(&copy, rel), want) {
            (Ok(warnings), Loads(texts)) => {
                if texts.is_empty() && !warnings.is_empty() {
                    wrong.push(format!("{rel}: unexpected warnings {warnings:?}"));
                }
                for t in *texts {
                    if !warnings.iter().any(|w| w.contains(t)) {
                        wrong.push(format!(
                            "{rel}: no warning containing {t:?} in {warnings:?}"
                        ));
                    }
                }
            }
            (Err(e), Refused(tail)) => {
                if !e.ends_with(tail) {
                    wrong.push(format!("{rel}: refused with {e:?}, expected ...{tail:?}"));
                }
            }
            (Ok(w), Refused(tail)) => {
                wrong.push(format!("{rel}: loaded ({w:?}), expected refusal ...{tail}"))
            }
            (Err(e), Loads(_)) => wrong.push(format!("{rel}: refused: {e}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every file of conf.d is covered above.
    let listed = match std::fs::read_dir(corpus_dir().join("conf.d")) {
        Ok(r) => r.flatten().count(),
        Err(e) => panic!("{e}"),
    };
    let covered = cases
        .iter()
        .filter(|(r, _)| r.starts_with("conf.d/"))
        .count();
    assert_eq!(listed, covered, "a conf.d file is not tested on its own");
}
