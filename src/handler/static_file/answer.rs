//! The answer for an open file: the method, the preconditions (RFC 9110
//! §13.2.2), the form mod_deflate chose, 304, and the file whole, one
//! range of it or several (multipart/byteranges).

use std::borrow::Cow;
use std::rc::Rc;

use httparse::Header;

use super::cache::OpenFile;
use super::form::{choose_form, Form};
use super::validators::{etag_matches, header_date, Validators};
use super::{write_content_type, write_expire, StaticRequest};
use crate::compress::negotiate::variant_etag;
use crate::compress::Coding;
use crate::config::Settings;
use crate::handler::deflate::Deflater;
use crate::hash;
use crate::msg::range::{parse_range, RangeRequest};
use crate::msg::request::{trim_ows, Method};
use crate::msg::status::itoa_u64;
use crate::msg::Reply;

/// The request headers a file's answer depends on (the first of each
/// name), found in one pass over the headers instead of one per name.
#[derive(Default)]
struct Conditions<'a> {
    if_match: Option<&'a [u8]>,
    if_unmodified_since: Option<&'a [u8]>,
    if_none_match: Option<&'a [u8]>,
    if_modified_since: Option<&'a [u8]>,
    range: Option<&'a [u8]>,
    if_range: Option<&'a [u8]>,
}

impl<'a> Conditions<'a> {
    fn of(headers: &[Header<'a>]) -> Conditions<'a> {
        let mut c = Conditions::default();
        for h in headers {
            let n = h.name.as_bytes();
            let slot = match n.len() {
                5 if n.eq_ignore_ascii_case(b"range") => &mut c.range,
                8 if n.eq_ignore_ascii_case(b"if-match") => &mut c.if_match,
                8 if n.eq_ignore_ascii_case(b"if-range") => &mut c.if_range,
                13 if n.eq_ignore_ascii_case(b"if-none-match") => &mut c.if_none_match,
                17 if n.eq_ignore_ascii_case(b"if-modified-since") => &mut c.if_modified_since,
                19 if n.eq_ignore_ascii_case(b"if-unmodified-since") => &mut c.if_unmodified_since,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(h.value);
            }
        }
        c
    }
}

const ALLOW: &[u8] = b"GET, HEAD, OPTIONS";

/// Answers a request for the open file `of` at `fs_path`.
pub(super) fn serve_file(
    req: &StaticRequest<'_>,
    r: &mut Reply,
    of: &OpenFile,
    fs_path: &str,
    dz: &mut Deflater,
) {
    if method_answered(req, r) {
        return;
    }
    let settings = Rc::clone(&r.settings);
    let s: &Settings = &settings;
    let v = &of.v;
    let etag = v.etag.as_ref().map(|t| &t[..]);

    // RFC 9110 §13.2.2: If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since, If-Range.
    let cond = Conditions::of(req.headers);
    if precondition_failed(&cond, etag, v) {
        return r.error(412);
    }
    let has_range = s.files.range_requests && req.method == Method::Get && cond.range.is_some();
    let (form, vary) = if s.deflate.enabled() || !s.deflate.precompressed.is_empty() {
        r.encoding_decided = true;
        choose_form(req, s, of, fs_path, dz, has_range)
    } else {
        (Form::Identity, false)
    };
    let coding = form.coding();
    let fv = FormValidators::of(&form, coding, v, vary);
    let not_modified = is_not_modified(&cond, req.method, &fv);
    if not_modified && req.method == Method::Post {
        // RFC 9110 13.1.2: for a method other than GET and HEAD a matching
        // If-None-Match is a failed precondition, not a 304.
        return r.error(412);
    }
    if not_modified {
        r.start(304);
        fv.write(r);
        write_expire(r, req, &of.ctype.0, fv.mtime);
        return r.end_head(None);
    }
    if let Some(c) = coding {
        return send_coded(req, r, of, form, &fv, c);
    }
    let ranges = ranges_asked(req, s, &cond, etag, v, of.len);
    send_identity(req, r, of, ranges, etag, vary);
}

/// OPTIONS, and methods a file does not take, answered here: true.
/// POST gets the file too, as lighttpd's mod_staticfile serves it (its
/// body, if any, is read and dropped).
fn method_answered(req: &StaticRequest<'_>, r: &mut Reply) -> bool {
    if req.method == Method::Options {
        r.start(200);
        r.header("Allow", ALLOW);
        r.end_head(Some(0));
        return true;
    }
    if !matches!(req.method, Method::Get | Method::Head | Method::Post) {
        r.error_with(405, &[("Allow", ALLOW)]);
        return true;
    }
    false
}

/// If-Match, or else If-Unmodified-Since, fails: 412.
fn precondition_failed(cond: &Conditions<'_>, etag: Option<&[u8]>, v: &Validators) -> bool {
    if let Some(im) = cond.if_match {
        !etag_matches(im, etag, false)
    } else if let Some(d) = cond.if_unmodified_since.and_then(header_date) {
        v.mtime > d
    } else {
        false
    }
}

/// The validators of the form chosen: If-None-Match meets the variant's tag.
/// The file's own tag is borrowed, not copied, for the common answer.
struct FormValidators<'v> {
    etag: Option<Cow<'v, [u8]>>,
    last_modified: [u8; 29],
    mtime: i64,
    vary: bool,
}

impl<'v> FormValidators<'v> {
    fn of(
        form: &Form,
        coding: Option<Coding>,
        v: &'v Validators,
        vary: bool,
    ) -> FormValidators<'v> {
        let owned = |t: Option<String>| t.map(|t| Cow::Owned(t.into_bytes()));
        let (etag, last_modified, mtime) = match (form, coding) {
            (Form::Variant(var, _), Some(c)) => (
                owned(var.base_etag.as_deref().and_then(|t| variant_etag(t, c))),
                var.last_modified,
                var.mtime,
            ),
            (_, Some(c)) => (
                owned(v.etag_string().and_then(|t| variant_etag(&t, c))),
                v.last_modified,
                v.mtime,
            ),
            // The tag is ASCII (see `etag_tag`): as it is.
            (_, None) => (
                v.etag.as_ref().map(|t| Cow::Borrowed(&t[..])),
                v.last_modified,
                v.mtime,
            ),
        };
        FormValidators {
            etag,
            last_modified,
            mtime,
            vary,
        }
    }

    fn write(&self, r: &mut Reply) {
        if let Some(t) = &self.etag {
            r.header("ETag", t);
        }
        r.header("Last-Modified", &self.last_modified);
        if self.vary {
            r.header("Vary", b"Accept-Encoding");
        }
    }
}

/// If-None-Match, or else If-Modified-Since, says the client has it.
fn is_not_modified(cond: &Conditions<'_>, method: Method, fv: &FormValidators<'_>) -> bool {
    if let Some(inm) = cond.if_none_match {
        etag_matches(inm, fv.etag.as_deref(), true)
    } else if let Some(d) = cond
        .if_modified_since
        .filter(|_| method != Method::Post)
        .and_then(header_date)
    {
        // (RFC 9110 13.1.3: only GET and HEAD evaluate If-Modified-Since.)
        fv.mtime <= d
    } else {
        false
    }
}

/// The file in content coding `c`: a variant file, bytes compressed now,
/// or the file compressed as it is sent.
fn send_coded(
    req: &StaticRequest<'_>,
    r: &mut Reply,
    of: &OpenFile,
    form: Form,
    fv: &FormValidators<'_>,
    c: Coding,
) {
    r.start(200);
    fv.write(r);
    write_expire(r, req, &of.ctype.0, fv.mtime);
    write_content_type(r, (of.ctype.0.as_str(), of.ctype.1));
    r.header("Content-Encoding", c.label().as_bytes());
    match form {
        Form::Variant(var, _) => match &var.small {
            Some(body) => {
                r.end_head(Some(var.len));
                r.push_shared(Rc::clone(body));
            }
            None => r.body_file(Rc::clone(&var.file), 0, var.len),
        },
        Form::Inline(bytes, _) => {
            r.end_head(Some(bytes.len() as u64));
            r.push_mem(&bytes);
        }
        Form::Stream(c) => {
            r.end_head(None);
            r.push_file(Rc::clone(&of.file), 0, of.len);
            r.encode = Some(c);
        }
        Form::Identity => {}
    }
}

/// The ranges of a GET to answer: Range, unless If-Range names another
/// version of the file.
fn ranges_asked(
    req: &StaticRequest<'_>,
    s: &Settings,
    cond: &Conditions<'_>,
    etag: Option<&[u8]>,
    v: &Validators,
    len: u64,
) -> RangeRequest {
    if !(s.files.range_requests && req.method == Method::Get) {
        return RangeRequest::Ignore;
    }
    let Some(h) = cond.range else {
        return RangeRequest::Ignore;
    };
    let if_range_ok = match cond.if_range.map(trim_ows) {
        None => true,
        Some(t) if t.starts_with(b"\"") || t.starts_with(b"W/") => etag_matches(t, etag, false),
        Some(d) => header_date(d) == Some(v.mtime),
    };
    if if_range_ok {
        parse_range(h, len)
    } else {
        RangeRequest::Ignore
    }
}

/// The file as it is: whole, one range, several, or 416.
fn send_identity(
    req: &StaticRequest<'_>,
    r: &mut Reply,
    of: &OpenFile,
    ranges: RangeRequest,
    etag: Option<&[u8]>,
    vary: bool,
) {
    let len = of.len;
    match ranges {
        RangeRequest::Ignore => {
            identity_head(req, r, of, 200, vary);
            match of.in_memory(req.copies) {
                Some(body) => {
                    r.end_head(Some(len));
                    r.push_shared(Rc::clone(body));
                }
                None => r.body_file(Rc::clone(&of.file), 0, len),
            }
        }
        RangeRequest::Unsatisfiable => {
            let mut cr = b"bytes */".to_vec();
            cr.extend_from_slice(itoa_u64(len).as_bytes());
            r.error_with(416, &[("Content-Range", &cr)]);
        }
        RangeRequest::Ranges(parts) if parts.len() == 1 => {
            let (first, last) = parts[0];
            identity_head(req, r, of, 206, vary);
            r.header("Content-Range", &content_range(first, last, len));
            r.body_file(Rc::clone(&of.file), first, last - first + 1);
        }
        RangeRequest::Ranges(parts) => send_multipart(r, of, &parts, etag, vary),
    }
}

/// The head of the file as it is, from the entry's pre-rendered lines.
fn identity_head(req: &StaticRequest<'_>, r: &mut Reply, of: &OpenFile, status: u16, vary: bool) {
    r.start(status);
    r.header_lines(&of.validator_lines);
    if vary {
        r.header("Vary", b"Accept-Encoding");
    }
    write_expire(r, req, &of.ctype.0, of.v.mtime);
    r.header_lines(&of.type_lines);
}

/// Several ranges: a multipart/byteranges body, each part's head in
/// memory and its bytes from the file.
fn send_multipart(
    r: &mut Reply,
    of: &OpenFile,
    parts: &[(u64, u64)],
    etag: Option<&[u8]>,
    vary: bool,
) {
    let len = of.len;
    let ctype = (of.ctype.0.as_str(), of.ctype.1);
    let boundary = boundary(etag, len);
    let part_heads: Vec<Vec<u8>> = parts
        .iter()
        .map(|&(a, b)| {
            let mut h = b"\r\n--".to_vec();
            h.extend_from_slice(&boundary);
            h.extend_from_slice(b"\r\nContent-Type: ");
            h.extend_from_slice(ctype.0.as_bytes());
            if ctype.1 {
                h.extend_from_slice(b"; charset=utf-8");
            }
            h.extend_from_slice(b"\r\nContent-Range: ");
            h.extend_from_slice(&content_range(a, b, len));
            h.extend_from_slice(b"\r\n\r\n");
            h
        })
        .collect();
    let mut tail = b"\r\n--".to_vec();
    tail.extend_from_slice(&boundary);
    tail.extend_from_slice(b"--\r\n");
    let total: u64 = parts
        .iter()
        .zip(&part_heads)
        .map(|(&(a, b), h)| h.len() as u64 + (b - a + 1))
        .sum::<u64>()
        + tail.len() as u64;
    r.start(206);
    r.header_lines(&of.validator_lines);
    if vary {
        r.header("Vary", b"Accept-Encoding");
    }
    r.header("Accept-Ranges", b"bytes");
    let mut ct = b"multipart/byteranges; boundary=".to_vec();
    ct.extend_from_slice(&boundary);
    r.header("Content-Type", &ct);
    r.end_head(Some(total));
    for (&(a, b), h) in parts.iter().zip(&part_heads) {
        r.push_mem(h);
        r.push_file(Rc::clone(&of.file), a, b - a + 1);
    }
    r.push_mem(&tail);
}

fn content_range(first: u64, last: u64, len: u64) -> Vec<u8> {
    let mut cr = b"bytes ".to_vec();
    cr.extend_from_slice(itoa_u64(first).as_bytes());
    cr.push(b'-');
    cr.extend_from_slice(itoa_u64(last).as_bytes());
    cr.push(b'/');
    cr.extend_from_slice(itoa_u64(len).as_bytes());
    cr
}

pub(super) fn boundary(etag: Option<&[u8]>, len: u64) -> Vec<u8> {
    // FNV-1a from a seed of the length: a boundary differs per file and size.
    let h = hash::fnv1a_from(0x9e37_79b9_7f4a_7c15 ^ len, etag.unwrap_or(b""));
    let mut out = b"glint-".to_vec();
    crate::syntax::push_hex(&mut out, &h.to_be_bytes(), crate::syntax::HEX_LOWER);
    out
}
