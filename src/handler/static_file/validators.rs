//! A file's validators (ETag, Last-Modified) and the comparisons of
//! conditional requests.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use crate::config::Settings;
use crate::date::{format_http_date, parse_http_date};
use crate::hash;
use crate::msg::request::trim_ows;

/// The validators of one file.
pub(super) struct Validators {
    pub(super) etag: Option<[u8; 18]>,
    pub(super) last_modified: [u8; 29],
    pub(super) mtime: i64,
}

impl Validators {
    pub(super) fn etag_string(&self) -> Option<String> {
        self.etag
            .as_ref()
            .map(|t| String::from_utf8_lossy(t).into_owned())
    }

    pub(super) fn new(meta: &std::fs::Metadata, s: &Settings) -> Self {
        let etag = (s.static_file.etags
            && (s.static_file.use_inode || s.static_file.use_mtime || s.static_file.use_size))
            .then(|| {
                let mut fields = [0u64; 5];
                let mut n = 0;
                let mut take = |v: u64| {
                    fields[n] = v;
                    n += 1;
                };
                if s.static_file.use_inode {
                    take(meta.ino());
                    take(meta.dev());
                }
                if s.static_file.use_mtime {
                    take(meta.mtime() as u64);
                    take(meta.mtime_nsec() as u64);
                }
                if s.static_file.use_size {
                    take(meta.size());
                }
                etag_tag(&fields[..n])
            });
        Validators {
            etag,
            last_modified: format_http_date(meta.mtime()),
            mtime: meta.mtime(),
        }
    }
}

/// The quoted ETag of a file's chosen metadata fields: FNV-1a over their
/// little-endian bytes, opaque, so it does not reveal the inode.
pub(super) fn etag_tag(fields: &[u64]) -> [u8; 18] {
    let h = fields
        .iter()
        .fold(hash::OFFSET, |h, v| hash::fnv1a_from(h, &v.to_le_bytes()));
    let mut tag = [b'"'; 18];
    for (i, &byte) in h.to_be_bytes().iter().enumerate() {
        tag[1 + 2 * i..3 + 2 * i]
            .copy_from_slice(&crate::syntax::hex_pair(byte, crate::syntax::HEX_LOWER));
    }
    tag
}

/// Does an `If-Match` / `If-None-Match` list name our tag? `*` matches any.
/// `weak` compares opaque tags ignoring `W/` (If-None-Match); strong comparison
/// (If-Match, If-Range) never matches a weak tag.
pub(super) fn etag_matches(list: &[u8], etag: Option<&[u8]>, weak: bool) -> bool {
    let list = trim_ows(list);
    if list == b"*" {
        return etag.is_some();
    }
    let Some(etag) = etag else { return false };
    list.split(|&b| b == b',').any(|t| {
        let t = trim_ows(t);
        match t.strip_prefix(b"W/") {
            Some(inner) => weak && inner == etag,
            None => t == etag,
        }
    })
}

pub(super) fn header_date(v: &[u8]) -> Option<i64> {
    std::str::from_utf8(v).ok().and_then(parse_http_date)
}

/// The ETag glint sends for a file with this metadata under `s` (for the
/// cache sweeper: a copy under another tag is stale).
pub fn etag_of(meta: &Metadata, s: &Settings) -> Option<String> {
    Validators::new(meta, s).etag_string()
}
