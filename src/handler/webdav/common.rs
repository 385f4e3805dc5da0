//! What several methods share: the conditional headers, a directory's
//! redirect, a database failure's answer, a collected XML body and an
//! answer read out in pieces.

use std::fs::Metadata;
use std::io;
use std::os::unix::fs::MetadataExt;

use super::out::{self, Answer};
use super::request::Ctx;
use super::store::DbError;
use super::xml;

/// `If-Match`, `If-None-Match`, `If-Unmodified-Since` against the
/// resource's metadata (`None`: it does not exist): `Err` is 412.
pub fn precondition(cx: &Ctx, meta: Option<&Metadata>) -> Result<(), Answer> {
    let tag = meta.and_then(|m| crate::handler::static_file::etag_of(m, &cx.settings));
    let fail = Err(Answer::error(412));
    if cx.etags() {
        if let Some(im) = cx.header("if-match") {
            if !tag_in(im, tag.as_deref(), false) {
                return fail;
            }
        }
        if let Some(inm) = cx.header("if-none-match") {
            if tag_in(inm, tag.as_deref(), true) {
                return fail;
            }
        }
    }
    if let Some(ius) = cx.header("if-unmodified-since") {
        let Some(m) = meta else { return fail };
        match crate::date::parse_http_date(ius) {
            Some(t) if m.mtime() <= t => {}
            _ => return fail,
        }
    }
    Ok(())
}

/// Whether an `If-Match`/`If-None-Match` list names `tag` (`*`: any).
fn tag_in(list: &str, tag: Option<&str>, weak: bool) -> bool {
    let Some(tag) = tag else { return false };
    list.split(',')
        .map(str::trim)
        .any(|t| t == "*" || t == tag || (weak && t.strip_prefix("W/") == Some(tag)))
}

/// 308 to the directory's URL with its slash (relative, as glint's other
/// directory redirects).
pub fn redirect_to_dir(cx: &Ctx) -> Answer {
    let mut loc = String::new();
    out::push_rel_uri(&cx.rel, &mut loc);
    loc.push('/');
    Answer::error(308).with("Location", loc.as_bytes())
}

/// `Content-Location` for a directory named without its slash.
pub fn content_location(rel: &str) -> Vec<u8> {
    let mut s = String::new();
    out::push_rel_uri(rel, &mut s);
    s.into_bytes()
}

pub fn not_found_or_forbidden(e: &io::Error) -> u16 {
    if e.kind() == io::ErrorKind::NotFound {
        404
    } else {
        403
    }
}

/// A database failure answers the request (logged).
pub fn db_answer(e: DbError) -> Answer {
    log::error!("(mod_webdav) sqlite: {}", e.msg);
    Answer::error(e.status)
}

/// 405 where locks and properties need the database lighttpd was not given.
pub fn no_db() -> Answer {
    Answer::error(405).with(
        "Allow",
        b"GET, HEAD, PROPFIND, DELETE, MKCOL, PUT, MOVE, COPY",
    )
}

/// Keeps body bytes up to [`xml::MAX_BODY`]; past it, notes the overflow.
pub fn collect(body: &mut Vec<u8>, too_big: &mut bool, data: &[u8]) {
    if body.len() + data.len() > xml::MAX_BODY {
        *too_big = true;
        body.clear();
    } else if !*too_big {
        body.extend_from_slice(data);
    }
}

/// Copies the next bytes of `all` from `*at` into `buf`.
pub fn drain(all: &[u8], at: &mut usize, buf: &mut [u8]) -> usize {
    let n = buf.len().min(all.len() - *at);
    buf[..n].copy_from_slice(&all[*at..*at + n]);
    *at += n;
    n
}

/// Logs an XML request body (`webdav.log-xml`).
pub fn log_body(cx: &Ctx, body: &[u8]) {
    if cx.settings.webdav.log_xml {
        log::error!(
            "(mod_webdav) XML-request-body: {}",
            String::from_utf8_lossy(body)
        );
    }
}
