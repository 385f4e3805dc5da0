//! mod_deflate's choice for a static file: a precompressed sibling, a copy
//! in `deflate.cache-dir`, compressed now (small files), compressed as it
//! is sent, or the file as it is.

use std::path::Path;
use std::rc::Rc;

use super::cache::{OpenFile, Variant};
use super::StaticRequest;
use crate::compress::negotiate::{cacheable, parse_accept_encoding, variant_etag};
use crate::compress::pool::{Job, SourceId};
use crate::compress::{cache, decide, Coding, Decision, ResponseFacts};
use crate::config::Settings;
use crate::handler::deflate::{compress_now, Deflater};

/// Which form of a file answers a GET or HEAD.
pub(super) enum Form {
    /// The file itself (and Range may apply).
    Identity,
    /// A precompressed sibling or a cached copy, sent as a file.
    Variant(Rc<Variant>, Coding),
    /// Compressed here, whole: a small file.
    Inline(Vec<u8>, Coding),
    /// Compressed as it is sent (no cache): no length in the head.
    Stream(Coding),
}

impl Form {
    /// The content coding it is sent in; None for the file as it is.
    pub(super) fn coding(&self) -> Option<Coding> {
        match self {
            Form::Identity => None,
            Form::Variant(_, c) | Form::Inline(_, c) | Form::Stream(c) => Some(*c),
        }
    }
}

/// The form of `of` to send, and whether the answer depends on
/// Accept-Encoding (`Vary`). `has_range`: Range will be answered.
pub(super) fn choose_form(
    req: &StaticRequest<'_>,
    s: &Settings,
    of: &OpenFile,
    fs_path: &str,
    dz: &mut Deflater,
    has_range: bool,
) -> (Form, bool) {
    let spec = &s.deflate;
    let ae = req.header_str("accept-encoding");
    let mut vary = false;
    if !spec.precompressed.is_empty() && !has_range {
        if let Some(root) = req.docroot {
            let (found, offered) = sibling_form(of, fs_path, s, root, ae);
            if let Some(form) = found {
                return (form, true);
            }
            vary = offered;
        }
    }
    if !spec.enabled() {
        return (Form::Identity, vary);
    }
    let facts = ResponseFacts {
        status: 200,
        request_has_range: has_range,
        content_encoding: None,
        cache_control: None,
        content_type: Some(&of.ctype_value),
        length: Some(of.len),
    };
    let load = dz.load_for(spec, req.mono);
    let coding = match decide(spec, &facts, ae, load) {
        Decision::Skip => return (Form::Identity, vary),
        Decision::Identity => return (Form::Identity, true),
        Decision::Compress(c) => c,
    };
    (compressed_form(of, fs_path, s, dz, coding), true)
}

/// The precompressed sibling of `of` that Accept-Encoding `ae` takes,
/// and whether `of` has any (then the answer varies with it).
fn sibling_form(
    of: &OpenFile,
    fs_path: &str,
    s: &Settings,
    root: &str,
    ae: Option<&str>,
) -> (Option<Form>, bool) {
    let siblings = of.siblings(fs_path, s, root);
    if siblings.is_empty() {
        return (None, false);
    }
    let codings: Vec<Coding> = siblings.iter().map(|v| v.coding).collect();
    let chosen = ae.and_then(|ae| parse_accept_encoding(ae).choose_among(&codings));
    let form = chosen.and_then(|label| {
        let want = if label == Coding::XGzip {
            Coding::Gzip
        } else {
            label
        };
        siblings
            .into_iter()
            .find(|v| v.coding == want)
            .map(|v| Form::Variant(v, label))
    });
    (form, true)
}

/// The form of `of` in `coding`, which mod_deflate decided on: a copy in
/// the cache, or (until one is made, queued here) compressed now or as it
/// is sent, or as it is.
fn compressed_form(
    of: &OpenFile,
    fs_path: &str,
    s: &Settings,
    dz: &mut Deflater,
    coding: Coding,
) -> Form {
    let spec = &s.deflate;
    // A copy opened before: nothing to look up.
    if let Some(v) = of.cached(coding) {
        return Form::Variant(v, coding);
    }
    let etag = of.v.etag_string().and_then(|t| variant_etag(&t, coding));
    let dest = match (&spec.cache_dir, etag.as_deref()) {
        (Some(dir), Some(tag)) if cacheable(spec, false, Some(tag), None, true, 200) => {
            cache::cache_path(dir, Path::new(fs_path), tag)
        }
        _ => None,
    };
    if let Some(v) = dest.as_deref().and_then(|d| of.open_cached(coding, d)) {
        return Form::Variant(v, coding);
    }
    // A small file (in memory) is compressed now; the rest goes as it is
    // until a copy exists, or streams compressed where none can be made.
    let packed = of
        .small
        .as_ref()
        .and_then(|b| compress_now(coding, spec, Some(&of.ctype_value), b));
    let Some(dest) = dest else {
        // No cache for it: compressed each time it is sent, as lighttpd does.
        return match (packed, &of.small) {
            (Some(b), _) => Form::Inline(b, coding),
            (None, Some(_)) => Form::Identity,
            (None, None) => Form::Stream(coding),
        };
    };
    let job = Job {
        source: fs_path.into(),
        expect: SourceId::of(&of.meta),
        dest,
        coding,
        params: spec.encoder_params(),
        content_type: Some(of.ctype_value.clone()),
        // What was just compressed is written as it is: not compressed twice.
        packed: packed.clone(),
    };
    if let Err(why) = dz.submit(job) {
        log::debug!("{fs_path}: compression into the cache not queued: {why:?}");
    }
    match packed {
        Some(b) => Form::Inline(b, coding),
        None => Form::Identity,
    }
}
