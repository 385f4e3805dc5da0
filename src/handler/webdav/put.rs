//! PUT: the body goes, as it comes, into an unnamed temporary file in the
//! target's directory (O_TMPFILE, so an upload that breaks off leaves
//! nothing behind), which is synced and then linked and renamed over the
//! target: a reader sees the old file or the new one, never half of it.
//! `Content-Range` (only with `webdav.opts`) writes at an offset: into a
//! copy renamed over the file (`partial-put-copy-modify`), or into the
//! file itself (`deprecated-unsafe-partial-put`).

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use nix::libc;

use super::common::{drain, precondition};
use super::fsops::{full_or_forbidden, temp_name};
use super::out::Answer;
use super::request::Ctx;
use super::Start;
use crate::msg::local::LocalWork;
use crate::proto::h1::chunked;

/// Mode of new files (before the umask), as lighttpd's.
const FILE_MODE: u32 = 0o666;

pub fn start(cx: Ctx) -> Start {
    if cx.path.ends_with('/') {
        return Start::Answer(Answer::error(400));
    }
    let meta = fs::symlink_metadata(&cx.path).ok();
    if let Err(a) = precondition(&cx, meta.as_ref()) {
        return Start::Answer(a);
    }
    if let Some(range) = cx.header("content-range") {
        let o = &cx.settings.webdav.opts;
        if !(o.unsafe_partial_put || o.partial_put_copy_modify) {
            // RFC 9110 14.5: a partial PUT is refused.
            return Start::Answer(Answer::error(400));
        }
        let range = range.to_string();
        return match Ranged::open(cx, &range) {
            Ok(w) => Start::Work(Box::new(w)),
            Err(a) => Start::Answer(a),
        };
    }
    if cx.body_len == Some(0) {
        return Start::Answer(put_empty(&cx));
    }
    match temp_in_dir(&cx.path) {
        Ok(file) => Start::Work(Box::new(Put {
            dechunk: cx.body_len.is_none().then(chunked::Decoder::default),
            cx,
            file,
            failed: None,
            plain: Vec::new(),
            written: 0,
            answer: Vec::new(),
            at: 0,
        })),
        Err(e) => Start::Answer(Answer::error(match e.raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR) => 409,
            _ => 500,
        })),
    }
}

/// An unnamed file in `path`'s directory.
fn temp_in_dir(path: &str) -> io::Result<File> {
    let dir = match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    };
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(FILE_MODE)
        .open(dir)
}

/// A PUT without a body: the file made (201) or emptied (204).
fn put_empty(cx: &Ctx) -> Answer {
    let new = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(FILE_MODE)
        .open(&cx.path);
    match new {
        Ok(f) => return with_etag(cx, Answer::status(201), &f),
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => return Answer::error(405),
        Err(_) => {}
    }
    if fs::symlink_metadata(&cx.path).is_ok_and(|m| m.file_type().is_symlink()) {
        // The name is a symlink: it is replaced, not followed.
        let _ = fs::remove_file(&cx.path);
    }
    let trunc = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(&cx.path);
    match trunc {
        Ok(_) => Answer::status(204),
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => Answer::error(405),
        Err(_) => Answer::error(500),
    }
}

fn with_etag(cx: &Ctx, a: Answer, f: &File) -> Answer {
    match f
        .metadata()
        .ok()
        .filter(|_| cx.etags())
        .and_then(|m| crate::handler::static_file::etag_of(&m, &cx.settings))
    {
        Some(tag) => a.with("ETag", tag.as_bytes()),
        None => a,
    }
}

struct Put {
    cx: Ctx,
    file: File,
    /// A chunked body (passed on chunked anew) is decoded here.
    dechunk: Option<chunked::Decoder>,
    plain: Vec<u8>,
    /// Decoded body bytes so far.
    written: u64,
    /// Writing failed with this status: the rest of the body is dropped.
    failed: Option<u16>,
    answer: Vec<u8>,
    at: usize,
}

impl LocalWork for Put {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.failed.is_some() {
            return Ok(data.len());
        }
        let r = match self.dechunk.as_mut() {
            Some(d) => {
                self.plain.clear();
                match d.decode(data, &mut self.plain) {
                    Ok(_) if self.over_limit() => {
                        // (A Content-Length body over it never got here.)
                        self.failed = Some(413);
                        Ok(())
                    }
                    Ok(_) => self.file.write_all(&self.plain),
                    Err(_) => {
                        self.failed = Some(400);
                        Ok(())
                    }
                }
            }
            None => self.file.write_all(data),
        };
        if let Err(e) = r {
            self.failed = Some(full_or_forbidden(&e));
        }
        Ok(data.len())
    }

    fn finish(&mut self) {
        let a = match self.failed {
            Some(s) => Answer::error(s),
            None => self.place(),
        };
        self.answer = a.to_cgi(&self.cx.settings);
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(drain(&self.answer, &mut self.at, buf))
    }
}

impl Put {
    /// A chunked body outgrew `server.max-request-size` with the bytes
    /// just decoded.
    fn over_limit(&mut self) -> bool {
        self.written += self.plain.len() as u64;
        let kb = self.cx.settings.limits.max_request_size_kb;
        kb > 0 && self.written > kb.saturating_mul(1024)
    }

    /// The complete body is synced, linked under a temporary name and
    /// renamed over the target: 201 for a new file, 204 for a replaced one.
    fn place(&mut self) -> Answer {
        let cx = &self.cx;
        let meta = fs::symlink_metadata(&cx.path).ok();
        if let Err(a) = precondition(cx, meta.as_ref()) {
            return a;
        }
        if let Err(e) = self.file.sync_data() {
            return Answer::error(full_or_forbidden(&e));
        }
        let tmp = temp_name(&cx.path);
        let proc_path = format!("/proc/self/fd/{}", self.file.as_raw_fd());
        if let Err(e) = nix::unistd::linkat(
            nix::fcntl::AT_FDCWD,
            proc_path.as_str(),
            nix::fcntl::AT_FDCWD,
            tmp.as_str(),
            nix::unistd::LinkatFlags::AT_SYMLINK_FOLLOW,
        ) {
            log::error!("(mod_webdav) PUT {}: link: {e}", cx.path);
            return Answer::error(500);
        }
        let noreplace = nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            tmp.as_str(),
            nix::fcntl::AT_FDCWD,
            cx.path.as_str(),
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        );
        let status = match noreplace {
            Ok(()) => 201,
            Err(_) => match fs::rename(&tmp, &cx.path) {
                Ok(()) => 204,
                Err(e) => {
                    let _ = fs::remove_file(&tmp);
                    return Answer::error(match e.raw_os_error() {
                        Some(libc::EISDIR) => 405,
                        _ => 403,
                    });
                }
            },
        };
        with_etag(cx, Answer::status(status), &self.file)
    }
}

/// A `Content-Range` PUT.
struct Ranged {
    cx: Ctx,
    file: File,
    offset: u64,
    /// The copy being modified, renamed over the file at the end.
    tmp: Option<String>,
    failed: Option<u16>,
    answer: Vec<u8>,
    at: usize,
}

impl Ranged {
    /// `bytes N-…`: only a start is read (as lighttpd), else 501.
    fn open(cx: Ctx, range: &str) -> Result<Ranged, Answer> {
        let rest = range
            .strip_prefix("bytes ")
            .ok_or_else(|| Answer::error(501))?;
        let rest = rest.trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || !rest[digits.len()..].starts_with('-') {
            return Err(Answer::error(501));
        }
        let offset: u64 = digits.parse().map_err(|_| Answer::error(501))?;
        let file = fs::OpenOptions::new()
            .write(true)
            .open(&cx.path)
            .map_err(|e| {
                Answer::error(if e.kind() == io::ErrorKind::NotFound {
                    404
                } else {
                    403
                })
            })?;
        let o = &cx.settings.webdav.opts;
        let in_place_ok = o.unsafe_partial_put
            && file.metadata().is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.len() == offset && m.nlink() <= 1
            });
        if !o.partial_put_copy_modify || in_place_ok {
            return Ok(Ranged {
                cx,
                file,
                offset,
                tmp: None,
                failed: None,
                answer: Vec::new(),
                at: 0,
            });
        }
        let tmp = temp_name(&cx.path);
        let mut src = File::open(&cx.path).map_err(|_| Answer::error(403))?;
        let mut copy = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(|_| Answer::error(403))?;
        if let Err(e) = io::copy(&mut src, &mut copy) {
            let _ = fs::remove_file(&tmp);
            return Err(Answer::error(full_or_forbidden(&e)));
        }
        Ok(Ranged {
            cx,
            file: copy,
            offset,
            tmp: Some(tmp),
            failed: None,
            answer: Vec::new(),
            at: 0,
        })
    }
}

impl LocalWork for Ranged {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.failed.is_none() {
            match self.file.write_all_at(data, self.offset) {
                Ok(()) => self.offset += data.len() as u64,
                Err(e) => self.failed = Some(full_or_forbidden(&e)),
            }
        }
        Ok(data.len())
    }

    fn finish(&mut self) {
        let a = match (self.failed, self.tmp.take()) {
            (Some(s), tmp) => {
                if let Some(t) = tmp {
                    let _ = fs::remove_file(t);
                }
                Answer::error(s)
            }
            (None, Some(t)) => match fs::rename(&t, &self.cx.path) {
                Ok(()) => with_etag(&self.cx, Answer::status(204), &self.file),
                Err(e) => {
                    let _ = fs::remove_file(&t);
                    Answer::error(match e.raw_os_error() {
                        Some(libc::ENOENT | libc::ENOTDIR | libc::EISDIR) => 409,
                        _ => 403,
                    })
                }
            },
            (None, None) => with_etag(&self.cx, Answer::status(204), &self.file),
        };
        self.answer = a.to_cgi(&self.cx.settings);
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(drain(&self.answer, &mut self.at, buf))
    }
}

impl Drop for Ranged {
    fn drop(&mut self) {
        // An upload that broke off leaves no copy behind.
        if let Some(t) = self.tmp.take() {
            let _ = fs::remove_file(t);
        }
    }
}
