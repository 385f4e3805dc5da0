//! HTTP semantics of compression: which coding a client gets, `Vary`, the
//! ETag of a compressed variant, `If-None-Match` against it, and the one
//! "compress this response?" decision.
//!
//! lighttpd 1.4.69 only looks for coding names in `Accept-Encoding` and
//! ignores q-values (so `gzip;q=0` still gets gzip). glint weighs q-values
//! (RFC 9110 §12.5.3) and breaks ties by lighttpd's preference order, which
//! is what decides for every browser: they send no q-values.

use super::spec::DeflateSpec;
use super::Coding;

/// A parsed `Accept-Encoding`: coding tokens (lowercase) with q in
/// thousandths (RFC 9110 §12.4.2 allows three decimals).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AcceptEncoding {
    entries: Vec<(String, u16)>,
}

/// Parse an `Accept-Encoding` value. An element with a malformed q-value is
/// dropped (as if absent); other parameters are ignored.
pub fn parse_accept_encoding(value: &str) -> AcceptEncoding {
    let mut entries = Vec::new();
    for element in value.split(',') {
        let mut parts = element.split(';');
        let token = parts.next().unwrap_or("").trim();
        if token.is_empty() {
            continue;
        }
        let mut q = Some(1000);
        for param in parts {
            let Some((name, v)) = param.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("q") {
                q = parse_qvalue(v.trim());
            }
        }
        if let Some(q) = q {
            let token = token.to_ascii_lowercase();
            if !entries.iter().any(|(t, _)| *t == token) {
                entries.push((token, q));
            }
        }
    }
    AcceptEncoding { entries }
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn parse_qvalue(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut q: u16 = match int {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    for (i, b) in frac.bytes().enumerate() {
        q += (b - b'0') as u16 * [100, 10, 1][i];
    }
    (q <= 1000).then_some(q)
}

impl AcceptEncoding {
    fn explicit(&self, token: &str) -> Option<u16> {
        self.entries
            .iter()
            .find(|(t, _)| t == token)
            .map(|&(_, q)| q)
    }

    /// The client's weight for a coding: its own entry, else `*`'s, else
    /// none. gzip and x-gzip are one coding (RFC 9110 §8.4.1.3).
    fn weight(&self, coding: Coding) -> Option<u16> {
        let own = match coding {
            Coding::Gzip | Coding::XGzip => {
                match (self.explicit("gzip"), self.explicit("x-gzip")) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                }
            }
            c => self.explicit(c.label()),
        };
        own.or_else(|| self.explicit("*"))
    }

    /// May the answer go out without a content coding? Not when the client
    /// said `identity;q=0`, or `*;q=0` without naming identity. (The caller
    /// sends identity anyway when nothing else is possible, as RFC 9110
    /// §12.5.3 lets a server do.)
    pub fn identity_acceptable(&self) -> bool {
        match self.explicit("identity") {
            Some(q) => q > 0,
            None => self.explicit("*") != Some(0),
        }
    }

    /// The coding to use among `groups` (lighttpd's allowed-encodings
    /// preference groups, bit sets of [`Coding::bit`]): the highest client
    /// weight above 0; a tie goes to the earlier group, and inside a group
    /// to zstd, br, gzip, deflate. `None` when nothing is acceptable or the
    /// client weighs identity above every coding offered.
    pub fn choose(&self, groups: &[u8]) -> Option<Coding> {
        let mut best: Option<(u16, Coding)> = None;
        for &group in groups {
            for coding in Coding::ALL {
                if coding == Coding::XGzip || group & coding.bit() == 0 {
                    continue;
                }
                let Some(q) = self.weight(coding).filter(|&q| q > 0) else {
                    continue;
                };
                if best.is_none_or(|(b, _)| q > b) {
                    best = Some((q, coding));
                }
            }
        }
        let (q, coding) = best?;
        if self.explicit("identity").is_some_and(|iq| iq > q) {
            return None;
        }
        // Answer under the name the client used: only "x-gzip" gets x-gzip.
        if coding == Coding::Gzip
            && self.explicit("gzip").is_none()
            && self.explicit("x-gzip").is_some()
        {
            return Some(Coding::XGzip);
        }
        Some(coding)
    }

    /// [`Self::choose`] over a plain list in order of preference (the
    /// precompressed siblings on disk).
    pub fn choose_among(&self, codings: &[Coding]) -> Option<Coding> {
        let groups: Vec<u8> = codings
            .iter()
            .map(|c| match c {
                Coding::Gzip | Coding::XGzip => Coding::Gzip.bit() | Coding::XGzip.bit(),
                c => c.bit(),
            })
            .collect();
        self.choose(&groups)
    }
}

/// What the filter knows about a response before its body goes out.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseFacts<'a> {
    pub status: u16,
    /// The request carried `Range` (glint answers it from the identity bytes).
    pub request_has_range: bool,
    /// The response's `Content-Encoding`, if it has one already.
    pub content_encoding: Option<&'a str>,
    pub cache_control: Option<&'a str>,
    pub content_type: Option<&'a str>,
    /// The body length when known; `None` for a stream of unknown length.
    pub length: Option<u64>,
}

/// The verdict for one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Never compressed whatever the client sends: leave the response alone.
    Skip,
    /// Compressible, but this one goes out identity: add `Vary`.
    Identity,
    /// Compress with this coding: add `Vary`, `Content-Encoding`, the
    /// variant ETag ([`variant_etag`]); drop `Content-Length` unless the
    /// compressed length is known (a cached file).
    Compress(Coding),
}

impl Decision {
    /// Does the response get `Vary: Accept-Encoding`? On every compressible
    /// response, compressed or not, so a shared cache keeps the variants apart.
    pub fn vary(self) -> bool {
        self != Decision::Skip
    }
}

/// Compress this response? The order of lighttpd's
/// `mod_deflate_handle_response_start()`, with RFC rules added: a response
/// that already has a Content-Encoding, has no body (1xx, 204, 205), whose
/// type is not in `deflate.mimetypes`, that says `Cache-Control:
/// no-transform`, or whose size is out of range is skipped; 206, 304, a
/// request with `Range`, and load over `deflate.max-loadavg` go out
/// identity with `Vary`; else the client's `Accept-Encoding` picks. HEAD is
/// decided as GET: its head is the compressed variant's.
pub fn decide(
    spec: &DeflateSpec,
    facts: &ResponseFacts,
    accept_encoding: Option<&str>,
    loadavg: f64,
) -> Decision {
    if facts.content_encoding.is_some() || matches!(facts.status, 100..=199 | 204 | 205) {
        return Decision::Skip;
    }
    if !spec.enabled() || !spec.mimetype_matches(facts.content_type) {
        return Decision::Skip;
    }
    if facts
        .cache_control
        .is_some_and(|cc| has_token(cc, "no-transform"))
    {
        return Decision::Skip;
    }
    if facts.length.is_some_and(|len| !spec.size_in_range(len)) {
        return Decision::Skip;
    }
    if matches!(facts.status, 206 | 304) || facts.request_has_range || spec.overloaded(loadavg) {
        return Decision::Identity;
    }
    match accept_encoding.and_then(|ae| parse_accept_encoding(ae).choose(&spec.allowed)) {
        Some(coding) => Decision::Compress(coding),
        None => Decision::Identity,
    }
}

/// May the compressed copy of this response be kept in `deflate.cache-dir`?
/// lighttpd's rule: a cache dir is set, the response had no `Vary` of its
/// own, it has an ETag, it is a whole file (not 206, not a temp file), and
/// `Cache-Control` has neither `private` nor `no-store`.
pub fn cacheable(
    spec: &DeflateSpec,
    had_vary: bool,
    etag: Option<&str>,
    cache_control: Option<&str>,
    whole_file: bool,
    status: u16,
) -> bool {
    spec.cache_dir.is_some()
        && !had_vary
        && etag.is_some_and(|e| e.len() > 2)
        && whole_file
        && status != 206
        && !cache_control.is_some_and(|cc| has_token(cc, "private") || has_token(cc, "no-store"))
}

/// Is `token` one of the comma-separated items of a header value (ASCII
/// case-insensitive, `token=value` counts as `token`)?
pub fn has_token(value: &str, token: &str) -> bool {
    value.split(',').any(|item| {
        let name = item.split(['=', ';']).next().unwrap_or("").trim();
        name.eq_ignore_ascii_case(token)
    })
}

/// The `Vary` value to set so that it names Accept-Encoding, or `None` when
/// the present one already does (or is `*`). lighttpd appends
/// ",Accept-Encoding" to an existing value.
pub fn vary_with_accept_encoding(existing: Option<&str>) -> Option<String> {
    match existing.map(str::trim).filter(|v| !v.is_empty()) {
        None => Some("Accept-Encoding".to_string()),
        Some(v) if has_token(v, "accept-encoding") || v == "*" => None,
        Some(v) => Some(format!("{v},Accept-Encoding")),
    }
}

/// The ETag of a compressed variant: the identity tag with `-label` before
/// its closing quote (`"abc"` → `"abc-gzip"`, `W/"abc"` → `W/"abc-gzip"`),
/// as lighttpd rewrites it. `None` for a malformed tag (no closing quote):
/// the variant then goes out without an ETag rather than with a wrong one.
pub fn variant_etag(etag: &str, coding: Coding) -> Option<String> {
    let opaque = etag.strip_prefix("W/").unwrap_or(etag);
    if opaque.len() < 2 || !opaque.starts_with('"') || !opaque.ends_with('"') {
        return None;
    }
    let head = &etag[..etag.len() - 1];
    Some(format!("{head}-{}\"", coding.label()))
}

/// Does an `If-None-Match` value match `etag`? Weak comparison (RFC 9110
/// §13.1.2): `W/` is ignored on both sides; `*` matches any current
/// representation. Quoted tags may hold commas, so the list is scanned, not split.
pub fn if_none_match(header: &str, etag: &str) -> bool {
    let want = etag.strip_prefix("W/").unwrap_or(etag);
    let mut rest = header;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return false;
        }
        if let Some(after) = rest.strip_prefix('*') {
            if after.trim_start().is_empty() || after.trim_start().starts_with(',') {
                return true;
            }
        }
        let tag_start = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(body) = tag_start.strip_prefix('"') else {
            // Not an entity-tag: skip to the next comma.
            match rest.find(',') {
                Some(i) => {
                    rest = &rest[i + 1..];
                    continue;
                }
                None => return false,
            }
        };
        let Some(end) = body.find('"') else {
            return false;
        };
        let tag = &tag_start[..end + 2];
        if tag == want {
            return true;
        }
        rest = &body[end + 1..];
    }
}

/// lighttpd's check of a compressed variant: when a 2xx response would be
/// compressed and `If-None-Match` names the variant's ETag, the answer is
/// 304 to GET and HEAD and 412 to other methods (RFC 9110 §13.1.2).
pub fn variant_precondition(
    if_none_match_header: Option<&str>,
    variant_etag: &str,
    method: &str,
    status: u16,
) -> Option<u16> {
    let header = if_none_match_header?;
    if !(200..300).contains(&status) || !if_none_match(header, variant_etag) {
        return None;
    }
    Some(if method == "GET" || method == "HEAD" {
        304
    } else {
        412
    })
}

/// lighttpd's brotli mode from the `Content-Type` (stream_br_init()): TEXT
/// for `text/*`, `application/javascript|json|xml*`, `*+json`, `*+xml`;
/// FONT for `font/*`; else GENERIC (0). The suffix test sees the whole
/// value, parameters included, as lighttpd's does.
pub fn brotli_mode_for(content_type: Option<&str>) -> u32 {
    let Some(ct) = content_type else { return 0 };
    let app = ct.strip_prefix("application/");
    if ct.starts_with("text/")
        || app.is_some_and(|a| {
            a.starts_with("javascript") || a.starts_with("json") || a.starts_with("xml")
        })
        || ct.ends_with("+json")
        || ct.ends_with("+xml")
    {
        1
    } else if ct.starts_with("font/") {
        2
    } else {
        0
    }
}
