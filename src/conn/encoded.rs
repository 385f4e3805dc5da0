//! Compressed bodies on an HTTP/1 connection (mod_deflate): the filter of
//! `output::encode` between an answer and the output queue, framed as
//! HTTP/1.1 chunks, or close-delimited on HTTP/1.0. The filter itself
//! knows no protocol; what is HTTP/1 here is the framing and the decision
//! about a backend's head.

use std::rc::Rc;

use crate::compress::negotiate::{variant_etag, variant_precondition, vary_with_accept_encoding};
use crate::compress::{decide, Coding, Decision, DeflateSpec, Encoder, ResponseFacts};
use crate::exchange::{DeferredLog, GwStart};
use crate::msg::{AnswerHead, Piece, Reply};
use crate::output::encode::{BodyEncoder, FilterError, Step, MAX_SLICE};
use crate::output::Output;
use crate::proto::h1;

/// A body on its way through the compressor.
#[derive(Debug)]
pub struct Encoded {
    filter: BodyEncoder,
    /// HTTP/1.1: each piece of output is a chunk, and a last chunk ends it.
    chunked: bool,
    /// Flush after each piece a backend sends (`deflate.sync-flush`).
    flush: bool,
    /// Input per turn of the loop: `deflate.work-block-size`, at most [`MAX_SLICE`].
    slice: usize,
    /// A reply's access log line, written once its body is (with the
    /// compressed length).
    pub log: Option<DeferredLog>,
}

/// What compression saved is counted when the answer's encoder goes,
/// whichever protocol carried it (HTTP/1, a stream of HTTP/2 or HTTP/3).
impl Drop for Encoded {
    fn drop(&mut self) {
        let saved = self
            .filter
            .bytes_in()
            .saturating_sub(self.filter.bytes_out());
        crate::stats::COMPRESS_SAVED.fetch_add(saved, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Encoded {
    fn new(enc: Encoder, spec: &DeflateSpec, chunked: bool) -> Encoded {
        let mut slice = match spec.work_block_bytes() {
            0 => MAX_SLICE,
            n => n.min(MAX_SLICE),
        };
        if enc.coding() == Coding::Br {
            // brotli 5 costs 2-4 times gzip 6 per byte: 32 KiB slices took
            // a median 0.1 ms here against 1.5-1.8 ms for 128 KiB (its
            // metablocks, every ~256 KiB, take 5-10 ms either way).
            slice = slice.min(MAX_SLICE / 4);
        }
        Encoded {
            filter: BodyEncoder::new(enc),
            chunked,
            flush: spec.sync_flush(false),
            slice,
            log: None,
        }
    }

    /// The body of `r` (marked [`Reply::encode`]), to be compressed as it is
    /// sent; `None` when the encoder cannot be made.
    pub fn of_reply(r: &Reply, coding: Coding, chunked: bool) -> Option<Encoded> {
        let spec = &r.settings.deflate;
        let size: u64 = r
            .pieces()
            .iter()
            .map(|p| match p {
                Piece::Mem(range) => range.len() as u64,
                Piece::Shared(b) => b.len() as u64,
                Piece::File { len, .. } => *len,
            })
            .sum();
        let ctype = r
            .field("content-type")
            .and_then(|v| std::str::from_utf8(v).ok());
        let enc = Encoder::new(coding, &spec.encoder_params(), ctype, Some(size))
            .map_err(|e| log::error!("cannot compress an answer: {e}"))
            .ok()?;
        let mut e = Encoded::new(enc, spec, chunked);
        for p in r.pieces() {
            match p {
                Piece::Mem(range) => e.filter.push(r.mem(range)),
                Piece::Shared(b) => e.filter.push_shared(Rc::clone(b)),
                Piece::File { file, offset, len } => {
                    e.filter.push_file(Rc::clone(file), *offset, *len)
                }
            }
        }
        e.filter.end();
        Some(e)
    }

    /// One slice of the queued input into `out`; `Done` once the body is
    /// complete (its last chunk written).
    pub fn step(&mut self, out: &mut Output) -> Result<Step, FilterError> {
        let chunked = self.chunked;
        let step = self
            .filter
            .step(self.slice, self.flush, &mut |b| frame(out, chunked, b))?;
        if step == Step::Done && chunked {
            h1::write_last_chunk(out);
        }
        Ok(step)
    }

    /// One slice of the queued input, the compressed bytes given to `emit`
    /// unframed (an HTTP/2 stream frames them itself); `Done` once the
    /// body is complete.
    pub fn step_into(&mut self, emit: &mut dyn FnMut(&[u8])) -> Result<Step, FilterError> {
        self.filter.step(self.slice, self.flush, emit)
    }

    /// A backend's body bytes: compressed at once (the caller bounds how
    /// much it reads per turn). Returns the compressed bytes written.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Output) -> Result<u64, FilterError> {
        let before = self.filter.bytes_out();
        self.filter.push(bytes);
        let chunked = self.chunked;
        self.filter
            .step(usize::MAX, self.flush, &mut |b| frame(out, chunked, b))?;
        Ok(self.filter.bytes_out() - before)
    }

    /// Compressed body bytes written so far.
    pub fn bytes_out(&self) -> u64 {
        self.filter.bytes_out()
    }

    /// The backend's body ended: the rest and the trailer. Returns the
    /// compressed bytes written.
    pub fn finish(&mut self, out: &mut Output) -> Result<u64, FilterError> {
        let before = self.filter.bytes_out();
        self.filter.end();
        while self.step(out)? == Step::Pending {}
        Ok(self.filter.bytes_out() - before)
    }
}

fn frame(out: &mut Output, chunked: bool, bytes: &[u8]) {
    if chunked {
        h1::write_chunk(out, bytes);
    } else {
        out.mem.extend_from_slice(bytes);
    }
}

/// What becomes of a backend's answer under `deflate.*`.
pub enum AnswerPlan {
    /// Passed on as it is.
    AsIs,
    /// Passed on with these header lines (`Vary` added).
    Headers(Vec<(String, Vec<u8>)>),
    /// Compressed with this coding under these header lines.
    Compress(Coding, Vec<(String, Vec<u8>)>),
    /// The client has this variant already (304 to GET/HEAD, 412 else):
    /// this status, these header lines, no body.
    Precondition(u16, Vec<(String, Vec<u8>)>),
}

fn get<'a>(headers: &'a [(String, Vec<u8>)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| std::str::from_utf8(v).ok())
}

/// `headers` with `Vary` naming Accept-Encoding.
fn with_vary(headers: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    let mut out = headers.to_vec();
    if let Some(v) = vary_with_accept_encoding(get(headers, "vary")) {
        out.retain(|(k, _)| !k.eq_ignore_ascii_case("vary"));
        out.push(("Vary".to_string(), v.into_bytes()));
    }
    out
}

/// The plan for a backend's answer to the request of `start`.
pub fn plan_answer(start: &GwStart, head: &AnswerHead<'_>, loadavg: f64) -> AnswerPlan {
    let spec = &start.settings.deflate;
    if !spec.enabled() || head.bodiless {
        return AnswerPlan::AsIs;
    }
    let headers = head.headers;
    let facts = ResponseFacts {
        status: head.status,
        // A backend that answers a Range request with a whole 200 sends
        // a whole representation: that may be compressed (its 206 is not).
        request_has_range: false,
        content_encoding: get(headers, "content-encoding"),
        cache_control: get(headers, "cache-control"),
        content_type: get(headers, "content-type"),
        length: head.content_length,
    };
    let mut hs = Vec::new();
    let req = start.head.view(&mut hs);
    let text = |name: &str| req.header(name).and_then(|v| std::str::from_utf8(v).ok());
    let coding = match decide(spec, &facts, text("accept-encoding"), loadavg) {
        Decision::Skip => return AnswerPlan::AsIs,
        Decision::Identity => return AnswerPlan::Headers(with_vary(headers)),
        Decision::Compress(c) => c,
    };
    let mut out = with_vary(headers);
    let etag = get(headers, "etag").and_then(|t| variant_etag(t, coding));
    out.retain(|(k, _)| !k.eq_ignore_ascii_case("etag"));
    if let Some(tag) = &etag {
        out.push(("ETag".to_string(), tag.clone().into_bytes()));
        if let Some(status) =
            variant_precondition(text("if-none-match"), tag, req.method_str, head.status)
        {
            out.retain(|(k, _)| {
                !k.eq_ignore_ascii_case("content-type") && !k.eq_ignore_ascii_case("content-length")
            });
            return AnswerPlan::Precondition(status, out);
        }
    }
    out.push((
        "Content-Encoding".to_string(),
        coding.label().as_bytes().to_vec(),
    ));
    AnswerPlan::Compress(coding, out)
}

/// The encoder for a backend's answer compressed with `coding`.
pub fn for_answer(
    start: &GwStart,
    coding: Coding,
    headers: &[(String, Vec<u8>)],
    size: Option<u64>,
    chunked: bool,
) -> Option<Encoded> {
    let spec = &start.settings.deflate;
    let enc = Encoder::new(
        coding,
        &spec.encoder_params(),
        get(headers, "content-type"),
        size,
    )
    .map_err(|e| log::error!("cannot compress a backend's answer: {e}"))
    .ok()?;
    Some(Encoded::new(enc, spec, chunked))
}
