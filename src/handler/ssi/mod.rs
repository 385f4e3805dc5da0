//! mod_ssi: server-side includes in the files `ssi.extension` names, as
//! lighttpd 1.4.69 has them: `#include`, `#echo`, `#config`, `#flastmod`,
//! `#fsize`, `#set`, `#printenv`, `#if`/`#elif`/`#else`/`#endif` with
//! lighttpd's expressions, and `#exec` unless `ssi.exec` turns it off.
//!
//! The page is built whole before the head goes out (its length is
//! known), bounded by [`MAX_OUTPUT`]; included files are sent from the
//! file. Beyond lighttpd: mod_access's `url.access-deny` and
//! `url.access-allow` apply to every included file (by its URL path and
//! its file name), so an include never shows what a request could not
//! fetch, and nesting stops at [`MAX_DEPTH`] whatever `ssi.recursion-max`.

mod directive;
mod exec;
mod expr;
mod paths;
mod run;
mod strftime;

use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;

use crate::config::Settings;
use crate::msg::{Method, Reply};
use run::{Part, Run};

/// The longest answer a page may make (text, included files and commands'
/// output together); a longer one is a 500.
pub const MAX_OUTPUT: u64 = 64 << 20;

/// The deepest `#include virtual` nesting, whatever `ssi.recursion-max` says.
pub const MAX_DEPTH: u16 = 32;

/// One request for a page.
pub struct Page<'a> {
    pub settings: &'a Settings,
    pub method: Method,
    /// The decoded URL path (DOCUMENT_URI).
    pub uri_path: &'a str,
    /// The page's file.
    pub physical: &'a str,
    pub docroot: &'a str,
    pub scheme: &'a str,
    /// The request's Host.
    pub authority: &'a str,
    /// The request target (after rewrites), query included (SCRIPT_URL).
    pub target_path: &'a str,
    pub query: &'a str,
    /// The CGI variables of the request (`#echo`, `$NAME`, `#printenv`).
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// Seconds since the epoch (DATE_LOCAL, DATE_GMT).
    pub now: i64,
    /// mod_access: may this URL path or file name be served?
    pub allowed: &'a dyn Fn(&str) -> bool,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
}

/// The file being parsed: the page, or a page it includes.
struct Doc {
    /// Its URL path (DOCUMENT_URI; relative `virtual` paths start here).
    uri_path: String,
    /// Its file (DOCUMENT_NAME; relative `file` paths start here).
    physical: String,
    meta: Metadata,
}

/// Does `ssi.extension` take the file at `physical`?
pub fn takes(s: &Settings, physical: &str) -> bool {
    s.ssi
        .extension
        .iter()
        .any(|e| physical.ends_with(e.as_str()))
}

/// Builds the page into `r`: 200 with the page, 304 for a client that
/// has it (`ssi.conditional-requests`), 500 when it cannot be read or
/// grows over [`MAX_OUTPUT`].
pub fn serve(p: &Page<'_>, r: &mut Reply) {
    let opened = File::open(p.physical).and_then(|f| f.metadata().map(|m| (f, m)));
    let (file, meta) = match opened {
        Ok(fm) => fm,
        Err(e) => {
            log::error!("ssi: open(): {}: {e}", p.physical);
            return r.error(500);
        }
    };
    let mut run = Run::new(p);
    let doc = Doc {
        uri_path: p.uri_path.to_string(),
        physical: p.physical.to_string(),
        meta,
    };
    if let Err(e) = run.process(&doc, file) {
        log::error!("ssi: read(): {}: {e}", p.physical);
        return r.error(500);
    }
    if run.over {
        log::error!("ssi: {} makes more than {MAX_OUTPUT} bytes", p.physical);
        return r.error(500);
    }
    let conditional = p.settings.ssi.conditional_requests;
    let mtime = doc.meta.mtime().max(run.newest_include);
    let etag =
        (conditional && p.settings.static_file.etags).then(|| etag(&doc.meta, mtime, p.settings));
    if conditional && not_modified(p, etag.as_deref(), mtime) {
        r.start(304);
        write_validators(r, etag.as_deref(), mtime);
        return r.end_head(None);
    }
    r.start(200);
    let ctype = p
        .settings
        .ssi
        .content_type
        .as_deref()
        .unwrap_or("text/html");
    r.header("Content-Type", ctype.as_bytes());
    if conditional {
        write_validators(r, etag.as_deref(), mtime);
    }
    r.end_head(Some(run.len));
    for part in run.parts {
        match part {
            Part::Mem(m) => r.push_mem(&m),
            Part::File(f, len) => r.push_file(f, 0, len),
        }
    }
}

fn write_validators(r: &mut Reply, etag: Option<&[u8]>, mtime: i64) {
    if let Some(t) = etag {
        r.header("ETag", t);
    }
    r.header("Last-Modified", &crate::date::format_http_date(mtime));
}

/// The page's ETag: its file's, with the newest include's time.
fn etag(meta: &std::fs::Metadata, mtime: i64, s: &Settings) -> Vec<u8> {
    let f = &s.static_file;
    let mut h = crate::hash::OFFSET;
    let mut take = |v: u64| h = crate::hash::fnv1a_from(h, &v.to_le_bytes());
    if f.use_inode {
        take(meta.ino());
        take(meta.dev());
    }
    if f.use_mtime {
        take(mtime as u64);
    }
    if f.use_size {
        take(meta.size());
    }
    let mut t = b"\"".to_vec();
    t.extend_from_slice(crate::syntax::hex_string(&h.to_be_bytes()).as_bytes());
    t.push(b'"');
    t
}

/// If-None-Match, or else If-Modified-Since, says the client has the page.
fn not_modified(p: &Page<'_>, etag: Option<&[u8]>, mtime: i64) -> bool {
    if !matches!(p.method, Method::Get | Method::Head) {
        return false;
    }
    if let Some(inm) = p.if_none_match {
        let inm = inm.trim_ascii();
        let Some(etag) = etag else { return false };
        return inm == b"*"
            || inm.split(|&b| b == b',').any(|t| {
                let t = t.trim_ascii();
                t.strip_prefix(b"W/").unwrap_or(t) == etag
            });
    }
    p.if_modified_since
        .and_then(|d| std::str::from_utf8(d).ok())
        .and_then(crate::date::parse_http_date)
        .is_some_and(|since| mtime <= since)
}
