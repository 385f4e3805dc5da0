//! File system work of DELETE, MKCOL, COPY and MOVE, as lighttpd does it:
//! depth first, a `<D:response>` for each member that fails; COPY by hard
//! link where it can (a later PUT replaces the file, never writes into
//! it), else by a copy to a temporary file renamed into place; MOVE by
//! rename(2) where it can. Collections merge into an existing one, as
//! `cp -r` and lighttpd do.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
use nix::libc;

use super::out;
use super::store::Store;

/// How a copy or move goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub overwrite: bool,
    /// MOVE: rename(2) first.
    pub rename: bool,
    /// COPY: a hard link first.
    pub link: bool,
    /// MOVE (whether or not rename(2) works): the source goes once copied.
    pub moving: bool,
    /// `server.force-lowercase-filenames`: members' URL names in lowercase.
    pub lowercase: bool,
}

/// A path pair: the URL path (the database's key) and the file.
#[derive(Debug, Clone)]
pub struct Place {
    pub rel: String,
    pub path: String,
}

impl Place {
    fn child(&self, name: &str, lowercase: bool) -> Place {
        let mut rel = self.rel.clone();
        if lowercase {
            rel.push_str(&name.to_lowercase());
        } else {
            rel.push_str(name);
        }
        Place {
            rel,
            path: format!("{}{name}", self.path),
        }
    }

    fn slash(mut self) -> Place {
        self.rel.push('/');
        self.path.push('/');
        self
    }
}

fn errno_of(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// The status of a failed unlink or rmdir.
fn unlink_status(e: &io::Error) -> u16 {
    match errno_of(e) {
        libc::EACCES | libc::EPERM => 403,
        libc::ENOENT => 404,
        _ => 501,
    }
}

/// Logs a database failure during file work (the file work stands).
fn db(r: Result<(), super::store::DbError>) {
    if let Err(e) = r {
        log::error!("(mod_webdav) sqlite: {}", e.msg);
    }
}

/// Deletes a file and its properties.
pub fn delete_file(st: Option<&Store>, p: &Place) -> u16 {
    match fs::remove_file(&p.path) {
        Ok(()) => {
            if let Some(st) = st {
                db(st.props_delete(&p.rel));
            }
            0
        }
        Err(e) => unlink_status(&e),
    }
}

/// Deletes a collection (`p` ends in `/`) depth first; failures are
/// `<D:response>`s in `errors`. Whether all of it went.
pub fn delete_dir(st: Option<&Store>, p: &Place, lowercase: bool, errors: &mut String) -> bool {
    let Ok(rd) = fs::read_dir(&p.path) else {
        out::response_status(&p.rel, 403, errors);
        return false;
    };
    let mut ok = true;
    for entry in rd.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        let child = p.child(&name, lowercase);
        if ft.is_dir() {
            ok &= delete_dir(st, &child.slash(), lowercase, errors);
        } else {
            let s = delete_file(st, &child);
            if s != 0 {
                out::response_status(&child.rel, s, errors);
                ok = false;
            }
        }
    }
    if !ok {
        return false;
    }
    match fs::remove_dir(&p.path) {
        Ok(()) => {
            if let Some(st) = st {
                db(st.props_delete(&p.rel));
            }
            true
        }
        Err(e) => {
            out::response_status(&p.rel, unlink_status(&e), errors);
            false
        }
    }
}

/// MKCOL and a copied collection's directory (`p` ends in `/`).
/// `overwrite`: `None` for MKCOL (405 when something is there).
pub fn mkdir(st: Option<&Store>, p: &Place, overwrite: Option<bool>) -> u16 {
    use std::os::unix::fs::DirBuilderExt;
    let e = match fs::DirBuilder::new().mode(0o777).create(&p.path) {
        Ok(()) => return 0,
        Err(e) => e,
    };
    match errno_of(&e) {
        libc::EEXIST | libc::ENOTDIR => {}
        libc::ENOENT => return 409,
        _ => return 403,
    }
    let Some(overwrite) = overwrite else {
        return if errno_of(&e) != libc::ENOTDIR {
            405
        } else {
            409
        };
    };
    let file = Place {
        rel: p.rel.trim_end_matches('/').to_string(),
        path: p.path.trim_end_matches('/').to_string(),
    };
    let Ok(m) = fs::symlink_metadata(&file.path) else {
        return 409;
    };
    if !overwrite {
        return 409;
    }
    if m.is_dir() {
        return 0;
    }
    let s = delete_file(st, &file);
    if s != 0 {
        return s;
    }
    match fs::DirBuilder::new().mode(0o777).create(&p.path) {
        Ok(()) => 0,
        Err(_) => 409,
    }
}

/// rename(2), without replacing `dst` unless `overwrite`.
fn rename(src: &str, dst: &str, overwrite: bool) -> io::Result<()> {
    let flags = if overwrite {
        RenameFlags::empty()
    } else {
        RenameFlags::RENAME_NOREPLACE
    };
    renameat2(AT_FDCWD, src, AT_FDCWD, dst, flags).map_err(io::Error::from)
}

/// A temporary name beside `path` that no other request of this process
/// uses at the same time.
pub fn temp_name(path: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{path}.{}.{n:x}~", std::process::id())
}

/// Copies a regular file to a temporary file beside `dst`, then renames
/// it over `dst`. 403 for a source that is not a regular file, 507 when
/// the disk is full.
pub fn copy_tmp_rename(src: &str, dst: &str, overwrite: bool) -> u16 {
    let tmp = temp_name(dst);
    match copy_to(src, &tmp) {
        Ok(()) => {}
        Err(s) => {
            let _ = fs::remove_file(&tmp);
            return s;
        }
    }
    match rename(&tmp, dst, overwrite) {
        Ok(()) => 0,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            match errno_of(&e) {
                libc::ENOENT | libc::ENOTDIR | libc::EISDIR => 409,
                libc::EEXIST => 412,
                _ => 403,
            }
        }
    }
}

/// Copies `src` (a regular file, not followed if a symlink) into a new
/// file `tmp`: copy_file_range, which the kernel may make a reflink.
fn copy_to(src: &str, tmp: &str) -> Result<(), u16> {
    let input = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(src)
        .map_err(|_| 403u16)?;
    let meta = input.metadata().map_err(|_| 403u16)?;
    if !meta.is_file() {
        return Err(403);
    }
    let mut output = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(tmp)
        .map_err(|_| 403u16)?;
    let mut input = input;
    io::copy(&mut input, &mut output).map_err(|e| full_or_forbidden(&e))?;
    Ok(())
}

/// 507 for a full disk or quota, else 403.
pub fn full_or_forbidden(e: &io::Error) -> u16 {
    match errno_of(e) {
        libc::ENOSPC | libc::EDQUOT => 507,
        _ => 403,
    }
}

/// Copies or moves one file; its properties follow.
pub fn copymove_file(st: Option<&Store>, src: &Place, dst: &Place, f: &mut Flags) -> u16 {
    if f.rename {
        match rename(&src.path, &dst.path, f.overwrite) {
            Ok(()) => {
                if let Some(st) = st {
                    db(st.props_delete(&dst.rel));
                    db(st.props_move(&src.rel, &dst.rel));
                }
                return 0;
            }
            Err(e) if errno_of(&e) == libc::EEXIST => return 412,
            Err(_) => {}
        }
    } else if f.link {
        let linked = match fs::hard_link(&src.path, &dst.path) {
            Ok(()) => Ok(()),
            Err(e) if errno_of(&e) == libc::EEXIST => {
                if !f.overwrite {
                    return 412;
                }
                link_rename(&src.path, &dst.path)
            }
            Err(e) => {
                if errno_of(&e) == libc::EXDEV {
                    f.link = false;
                }
                Err(e)
            }
        };
        if linked.is_ok() {
            if let Some(st) = st {
                db(st.props_delete(&dst.rel));
                db(st.props_copy(&src.rel, &dst.rel));
            }
            return 0;
        }
    }
    let s = copy_tmp_rename(&src.path, &dst.path, f.overwrite);
    if s == 0 {
        if let Some(st) = st {
            db(st.props_delete(&dst.rel));
            db(st.props_copy(&src.rel, &dst.rel));
        }
        if f.moving {
            delete_file(st, src);
        }
    }
    s
}

/// A hard link under a temporary name, renamed over `dst`.
fn link_rename(src: &str, dst: &str) -> io::Result<()> {
    let tmp = temp_name(dst);
    fs::hard_link(src, &tmp)?;
    let r = fs::rename(&tmp, dst);
    let _ = fs::remove_file(&tmp);
    r
}

/// Copies or moves a collection (both end in `/`), merging into an
/// existing one; failures are `<D:response>`s in `errors`. 0 when all
/// went, else the last status.
pub fn copymove_dir(
    st: Option<&Store>,
    src: &Place,
    dst: &Place,
    mut f: Flags,
    errors: &mut String,
) -> u16 {
    let mut make = true;
    if f.rename {
        match rename(&src.path, &dst.path, f.overwrite) {
            Ok(()) => {
                if let Some(st) = st {
                    db(st.props_move_col(&src.rel, &dst.rel));
                }
                return 0;
            }
            Err(e) => match errno_of(&e) {
                libc::EEXIST | libc::ENOTEMPTY if !f.overwrite => {
                    out::response_status(&src.rel, 412, errors);
                    return 412;
                }
                libc::EEXIST | libc::ENOTEMPTY => make = false,
                libc::ENOTDIR if !f.overwrite => {
                    out::response_status(&src.rel, 409, errors);
                    return 409;
                }
                libc::EXDEV => f.rename = false,
                _ => {}
            },
        }
    }
    if make {
        let s = mkdir(st, dst, Some(f.overwrite));
        if s != 0 {
            out::response_status(&src.rel, s, errors);
            return s;
        }
    }
    if let Some(st) = st {
        db(st.props_copy(&src.rel, &dst.rel));
    }
    let Ok(rd) = fs::read_dir(&src.path) else {
        out::response_status(&src.rel, 403, errors);
        return 403;
    };
    let mut status = 0;
    for entry in rd.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(ft) = entry.file_type() else { continue };
        let (s, d) = (src.child(&name, f.lowercase), dst.child(&name, f.lowercase));
        let s1 = if ft.is_dir() {
            copymove_dir(st, &s.slash(), &d.slash(), f, errors)
        } else if ft.is_file() {
            let r = copymove_file(st, &s, &d, &mut f);
            if r != 0 {
                out::response_status(&s.rel, r, errors);
            }
            r
        } else {
            // (Symlinks and devices are not copied: WebDAV has no such resources.)
            0
        };
        if s1 != 0 {
            status = s1;
        }
        if s1 == 507 {
            break;
        }
    }
    if status == 0 && f.moving && !delete_dir(st, src, f.lowercase, errors) {
        status = 403;
    }
    status
}

/// Whether two paths name the same file (a hard link to it).
pub fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}
