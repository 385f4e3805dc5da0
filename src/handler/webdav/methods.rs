//! MKCOL, DELETE, COPY and MOVE: answered at once (no body is allowed).

use super::common::{db_answer, precondition, redirect_to_dir};
use super::fsops::{self, Flags, Place};
use super::locks::has_lock;
use super::out::{self, Answer};
use super::request::{Ctx, DavMethod};

/// Longest file system path (Linux's PATH_MAX).
const PATH_MAX: usize = 4096;

fn here(cx: &Ctx) -> Place {
    Place {
        rel: cx.rel.clone(),
        path: cx.path.clone(),
    }
}

pub fn mkcol(cx: &Ctx) -> Answer {
    match fsops::mkdir(cx.store.as_deref(), &here(cx), None) {
        0 => Answer::status(201),
        s => Answer::error(s),
    }
}

pub fn delete(cx: &Ctx) -> Answer {
    // A fragment on a DELETE's target (litmus warns of clients that send
    // one) must not delete the resource without it.
    if cx.has_fragment {
        return Answer::error(403);
    }
    let meta = match std::fs::symlink_metadata(&cx.path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Answer::error(404),
        Err(_) => return Answer::error(403),
    };
    if let Err(a) = precondition(cx, Some(&meta)) {
        return a;
    }
    let st = cx.store.as_deref();
    if meta.is_dir() {
        let mut p = here(cx);
        if !p.path.ends_with('/') {
            p = Place {
                rel: p.rel + "/",
                path: p.path + "/",
            };
        }
        if cx.depth() != -1 {
            // RFC 4918 9.6.1: a collection is deleted whole.
            return Answer::error(400);
        }
        let mut errors = String::new();
        let lc = cx.settings.files.force_lowercase_filenames;
        if fsops::delete_dir(st, &p, lc, &mut errors) {
            if let Some(st) = st {
                if let Err(e) = st.locks_delete_col(&p.rel) {
                    return db_answer(e);
                }
            }
            return Answer::status(204);
        }
        return out::multistatus(&errors);
    }
    if cx.path.ends_with('/') {
        return Answer::error(403);
    }
    match fsops::delete_file(st, &here(cx)) {
        0 => {
            if let Some(st) = st {
                if let Err(e) = st.locks_delete(&cx.rel) {
                    return db_answer(e);
                }
            }
            Answer::status(204)
        }
        s => Answer::error(s),
    }
}

/// The Destination's URL path (decoded, normalised), checked to be on
/// this scheme and host: `Err` is 400 (malformed), 502 (another host) or
/// 403 (too long).
pub fn destination_rel(cx: &Ctx) -> Result<String, Answer> {
    let Some(d) = cx.header("destination") else {
        return Err(Answer::error(400));
    };
    let path = if d.starts_with('/') {
        d
    } else {
        let rest = d
            .strip_prefix(cx.scheme.as_str())
            .and_then(|r| r.strip_prefix("://"))
            .ok_or_else(|| Answer::error(400))?;
        let slash = rest.find('/').ok_or_else(|| Answer::error(400))?;
        let host = &rest[..slash];
        let host = match host.rfind('@') {
            Some(at) if host != cx.authority => &host[at + 1..],
            _ => host,
        };
        if !host.eq_ignore_ascii_case(&cx.authority) {
            return Err(Answer::error(502));
        }
        &rest[slash..]
    };
    let path = path.split('?').next().unwrap_or("");
    if path.len() >= PATH_MAX {
        return Err(Answer::error(403));
    }
    // Normalised exactly as a GET's path is (400 for what it refuses).
    let mut rel = String::new();
    if crate::path::normalize(path, &mut Vec::new(), &mut rel).is_err() || rel.is_empty() {
        return Err(Answer::error(400));
    }
    if cx.settings.files.force_lowercase_filenames {
        rel = rel.to_lowercase();
    }
    Ok(rel)
}

/// The Destination's file: where the request's own path maps, with the
/// part below their common directory replaced (so a mod_alias'ed share
/// maps its Destination alike), else below the docroot.
fn destination_path(cx: &Ctx, dst_rel: &str) -> Result<String, Answer> {
    let (r, d) = (cx.rel.as_bytes(), dst_rel.as_bytes());
    let mut i = r.iter().zip(d).take_while(|(a, b)| a == b).count();
    while i > 0 && r[i - 1] != b'/' {
        i -= 1;
    }
    let i = i.saturating_sub(1);
    let remain = &cx.rel[i..];
    let p = if cx.path.len() > remain.len() && cx.path.ends_with(remain) {
        format!(
            "{}{}",
            &cx.path[..cx.path.len() - remain.len()],
            &dst_rel[i..]
        )
    } else {
        format!("{}{}", cx.docroot.trim_end_matches('/'), dst_rel)
    };
    if p.len() >= PATH_MAX {
        return Err(Answer::error(403));
    }
    Ok(p)
}

pub fn copymove(cx: &Ctx) -> Answer {
    match copymove_inner(cx) {
        Ok(a) | Err(a) => a,
    }
}

fn copymove_inner(cx: &Ctx) -> Result<Answer, Answer> {
    let moving = cx.method == DavMethod::Move;
    let o = &cx.settings.webdav.opts;
    let mut f = Flags {
        overwrite: true,
        rename: moving,
        link: !moving && (!o.unsafe_partial_put || o.partial_put_copy_modify),
        moving,
        lowercase: cx.settings.files.force_lowercase_filenames,
    };
    if let Some(h) = cx.header("overwrite") {
        match h.as_bytes() {
            [b'F' | b'f'] => f.overwrite = false,
            [b'T' | b't'] => {}
            _ => return Err(Answer::error(400)),
        }
    }
    let dst_rel = destination_rel(cx)?;
    let dst_path = destination_path(cx, &dst_rel)?;
    let src_path = cx.path.as_str();
    if dst_path.starts_with(src_path)
        && (src_path.ends_with('/')
            || matches!(dst_path.as_bytes().get(src_path.len()), None | Some(b'/')))
    {
        // Onto itself, or into itself.
        return Err(Answer::error(403));
    }
    let meta = match std::fs::symlink_metadata(src_path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Answer::error(404)),
        Err(_) => return Err(Answer::error(403)),
    };
    precondition(cx, Some(&meta))?;
    let mut dst = Place {
        rel: dst_rel,
        path: dst_path,
    };
    if meta.is_dir() {
        return copymove_collection(cx, &mut dst, f);
    }
    if src_path.ends_with('/') {
        return Err(Answer::error(403));
    }
    has_lock(cx, &dst.rel, false)?;
    copymove_one(cx, &mut dst, &mut f)
}

fn copymove_collection(cx: &Ctx, dst: &mut Place, f: Flags) -> Result<Answer, Answer> {
    if !cx.path.ends_with('/') {
        return Err(redirect_to_dir(cx));
    }
    if !dst.rel.ends_with('/') {
        dst.rel.push('/');
        dst.path.push('/');
    }
    has_lock(cx, &dst.rel, false)?;
    let st = cx.store.as_deref();
    match cx.depth() {
        1 => return Err(Answer::error(400)),
        0 if f.moving => return Err(Answer::error(400)),
        0 => {
            let status = match std::fs::symlink_metadata(&dst.path) {
                Ok(m) if m.is_dir() => 204,
                Ok(_) if f.overwrite => match fsops::mkdir(st, dst, Some(true)) {
                    0 => 204,
                    s => s,
                },
                Ok(_) => 412,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match fsops::mkdir(st, dst, Some(f.overwrite)) {
                        0 => 201,
                        s => s,
                    }
                }
                Err(_) => 403,
            };
            if status >= 300 {
                return Err(Answer::error(status));
            }
            if let Some(st) = st {
                if let Err(e) = st.props_copy(&cx.rel, &dst.rel) {
                    return Err(db_answer(e));
                }
            }
            return Ok(Answer::status(status));
        }
        _ => {}
    }
    let mut errors = String::new();
    let src = here(cx);
    if fsops::copymove_dir(st, &src, dst, f, &mut errors) == 0 {
        if f.moving {
            if let Some(st) = st {
                if let Err(e) = st.locks_delete_col(&cx.rel) {
                    return Err(db_answer(e));
                }
            }
        }
        return Ok(Answer::status(200));
    }
    Ok(out::multistatus(&errors))
}

fn copymove_one(cx: &Ctx, dst: &mut Place, f: &mut Flags) -> Result<Answer, Answer> {
    let mut status = None;
    let mut found = std::fs::symlink_metadata(&dst.path);
    if matches!(&found, Ok(m) if m.is_dir()) {
        // A file into a collection: under its own name.
        let name = cx.path.rsplit('/').next().unwrap_or("");
        if !dst.path.ends_with('/') {
            dst.path.push('/');
            dst.rel.push('/');
        }
        dst.path.push_str(name);
        dst.rel.push_str(name);
        if dst.path.len() >= PATH_MAX {
            return Err(Answer::error(403));
        }
        found = std::fs::symlink_metadata(&dst.path);
        status = Some(204);
    }
    let status = match found {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match status {
            Some(s) => s,
            None => {
                let parent = dst.path.rsplit_once('/').map_or("", |(p, _)| p);
                match std::fs::symlink_metadata(parent) {
                    Ok(m) if m.is_dir() => 201,
                    _ => return Err(Answer::error(409)),
                }
            }
        },
        Err(_) => return Err(Answer::error(409)),
        Ok(_) if !f.overwrite => return Err(Answer::error(412)),
        Ok(m) if m.is_dir() => return Err(Answer::error(409)),
        Ok(_) => 204,
    };
    let st = cx.store.as_deref();
    match fsops::copymove_file(st, &here(cx), dst, f) {
        0 => {
            if f.moving {
                if let Some(st) = st {
                    if let Err(e) = st.locks_delete(&cx.rel) {
                        return Err(db_answer(e));
                    }
                }
            }
            Ok(Answer::status(status))
        }
        s => Err(Answer::error(s)),
    }
}
