//! The file system side: opening under the symlink rules, errors as
//! statuses, and the redirect of a directory without its slash.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;

use nix::libc;

use super::StaticRequest;
use crate::config::Settings;
use crate::msg::Reply;
use crate::syntax;

/// Opens a path for reading; errors come back as the status to answer.
pub(super) fn open(path: &str, s: &Settings, root: &str) -> Result<(File, std::fs::Metadata), u16> {
    // O_NONBLOCK: opening a FIFO must not stall the event loop.
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !s.files.follow_symlink {
        flags |= libc::O_NOFOLLOW;
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| open_error_status(&e))?;
    let meta = file.metadata().map_err(|_| 500u16)?;
    if !s.files.follow_symlink && is_symlink_below(path, root) {
        return Err(403);
    }
    Ok((file, meta))
}

/// Most bytes of a type read from an extended attribute: lighttpd reads
/// it into 128 bytes with room for its NUL, and takes no longer one.
const XATTR_MAX: usize = 127;

/// The MIME type the extended attribute `name` of `file` names
/// (`mimetype.use-xattr`), as lighttpd reads it: a value of 1 to
/// [`XATTR_MAX`] bytes. A value that could not go out as a header field
/// (control bytes, not UTF-8) counts as none: the name's type applies.
pub(super) fn xattr_type(file: &File, name: &str) -> Option<String> {
    use std::os::fd::AsRawFd;
    let name = std::ffi::CString::new(name).ok()?;
    let mut buf = [0u8; XATTR_MAX];
    // SAFETY: the descriptor is open for the call, `name` is a C string
    // and the kernel writes at most `buf.len()` bytes into `buf`.
    let n = unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n > 0 && n <= buf.len())?;
    let v = std::str::from_utf8(&buf[..n]).ok()?;
    if v.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        log::debug!("mimetype.use-xattr: attribute {name:?} is no header value; ignored");
        return None;
    }
    Some(v.to_string())
}

/// With `server.follow-symlink = "disable"`, a symlink anywhere below the docroot refuses the path.
fn is_symlink_below(path: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    let Some(rest) = path.strip_prefix(root) else {
        return false;
    };
    let mut end = root.len();
    for seg in rest.split('/').filter(|s| !s.is_empty()) {
        end += 1 + seg.len();
        if let Some(p) = path.get(..end) {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return true;
            }
        }
    }
    false
}

fn open_error_status(e: &io::Error) -> u16 {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG) => 404,
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::ELOOP) => 403,
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            log::warn!("out of file descriptors opening a file");
            503
        }
        _ => {
            log::warn!("open failed: {e}");
            500
        }
    }
}

/// A directory asked for without its slash: 301 to the path with one. The
/// Location is a path (RFC 9110 10.2.2 allows a relative reference, and
/// lighttpd sends one unless `server.absolute-dir-redirect`), percent-
/// encoded from the decoded path: `/~test%20ä_` goes to `/~test%20%C3%A4_/`.
pub(super) fn redirect_to_dir(req: &StaticRequest<'_>, r: &mut Reply) {
    let mut loc = Vec::with_capacity(req.path.len() * 3 + req.query.len() + 4);
    // The feature flag `server.absolute-dir-redirect`: scheme and host
    // first (a request without a Host gets the relative form).
    if r.settings.identity.absolute_dir_redirect && !req.host.is_empty() {
        loc.extend_from_slice(req.scheme.as_bytes());
        loc.extend_from_slice(b"://");
        loc.extend_from_slice(req.host);
    }
    // lighttpd's ENCODING_REL_URI: an encoded slash, which the decoded
    // path keeps as `%2F`, stays one.
    syntax::percent_encode(req.path.as_bytes(), &syntax::REL_URI, &mut loc);
    loc.push(b'/');
    if !req.query.is_empty() {
        loc.push(b'?');
        loc.extend_from_slice(req.query.as_bytes());
    }
    r.error_with(301, &[("Location", &loc)]);
}
