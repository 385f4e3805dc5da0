//! Temporary directories and the fixtures built in them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, UNIX_EPOCH};

/// Content of the file placed just outside a [`Docroot`]'s document root.
pub const SECRET: &str = "TOPSECRET-7f3a9-outside-docroot";

/// mtime given to the fixture files: Thu, 02 Jan 2020 03:04:05 GMT.
pub const MTIME_EPOCH: u64 = 1_577_934_245;
pub const MTIME_HTTP: &str = "Thu, 02 Jan 2020 03:04:05 GMT";

/// `<tmp>/glint-<tag>-<pid>-<n>/`, mode 0755 (so that a server that drops
/// privileges can still enter it), removed with its content on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "glint-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        // Left over by an earlier run whose pid was the same.
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
        set_mode(&p, 0o755);
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", p.display()));
}

/// A temporary directory `base` holding `www/` (the document root, `root`)
/// and `secret.txt` ([`SECRET`]) outside it.
pub struct Docroot {
    pub base: PathBuf,
    pub root: PathBuf,
    _dir: TempDir,
}

impl Docroot {
    pub fn new() -> Docroot {
        let dir = TempDir::new("bb");
        let root = dir.join("www");
        std::fs::create_dir_all(&root).expect("create docroot");
        std::fs::write(dir.join("secret.txt"), SECRET).expect("secret.txt");
        Docroot {
            base: dir.0.clone(),
            root,
            _dir: dir,
        }
    }

    /// Path of `rel` (relative, `/`-separated) inside the document root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Writes a file (creating parent directories) and sets its mtime to [`MTIME_EPOCH`].
    pub fn file(&self, rel: &str, content: &[u8]) -> &Self {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(UNIX_EPOCH + Duration::from_secs(MTIME_EPOCH))
            .unwrap();
        self
    }

    pub fn dir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.path(rel)).unwrap();
        self
    }
}

/// `dir/name/` with `index.html` = `index`: a document root.
pub fn docroot(dir: &TempDir, name: &str, index: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    set_mode(&d, 0o755);
    std::fs::write(d.join("index.html"), index).unwrap();
    d
}

/// Writes `dir/glint.conf`: `docroot` served on 127.0.0.1:`port`, plus
/// the `extra` lines. Returns its path.
pub fn write_conf(dir: &TempDir, docroot: &Path, port: u16, extra: &str) -> PathBuf {
    let conf = dir.join("glint.conf");
    std::fs::write(
        &conf,
        format!(
            "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\nserver.port = {port}\n{extra}\n",
            docroot.display()
        ),
    )
    .unwrap();
    conf
}

/// Deterministic pseudo-random bytes (xorshift64*), so misplaced bytes are
/// detected; different seeds give different bytes from the first one on.
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    // An odd multiplier keeps distinct seeds apart; `| 1` keeps the state non-zero.
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}
