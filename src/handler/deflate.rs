//! mod_deflate for glint's own answers: the compression services every
//! exchange shares ([`Deflater`]: the worker pool that fills
//! `deflate.cache-dir`, the load average, the cache sweeper) and the step
//! that compresses a [`Reply`] made in memory (directory listings, the
//! status page, error pages). Static files decide for themselves, with
//! their cached and precompressed variants (`static_file`).
//!
//! A reply compressed here either gets its compressed body at once (bodies
//! up to [`INLINE_MAX`], with a Content-Length) or is marked
//! [`Reply::encode`], and the connection streams it through
//! [`crate::output::encode::BodyEncoder`] in slices.

use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use httparse::Header;
use mio::Waker;

use crate::compress::cache::Sweeper;
use crate::compress::negotiate::{variant_etag, variant_precondition, vary_with_accept_encoding};
use crate::compress::pool::{Job, JobError, JobResult, Pool, Refused};
use crate::compress::spec::LoadAvg;
use crate::compress::{decide, Coding, Decision, DeflateSpec, Encoder, ResponseFacts};
use crate::config::Settings;
use crate::msg::Reply;
use crate::output::encode::{encode_all, MAX_SLICE};

/// Bodies up to this size are compressed at once, where the reply is made:
/// 128 KiB is one slice of the streaming filter (about 5 ms at brotli 5,
/// 1.5 ms at gzip 6 here), so doing it at once stalls the loop no longer
/// than a slice would, and the answer keeps its Content-Length.
pub const INLINE_MAX: u64 = MAX_SLICE as u64;

/// Cache entries the sweeper looks at per cache dir per second: a cache of
/// 10^5 copies is walked in about 7 minutes. Each entry costs a `stat` of
/// its source, about 3 µs: under 1 ms a second while a walk is on.
const SWEEP_BUDGET: usize = 256;

/// Seconds between the end of one walk of a cache dir and the next: copies
/// only go stale when files change, so the cache is not walked without end.
const SWEEP_PAUSE: u64 = 60;

/// Compression jobs waiting beyond those running; a full queue sends
/// identity and asks again on a later request.
const POOL_QUEUE: usize = 32;

/// What every exchange shares for compression.
#[derive(Default)]
pub struct Deflater {
    /// Made on the first job, in the process that serves (a worker made
    /// by `server.max-worker` must not inherit threads it cannot have).
    pool: Option<Pool>,
    /// The pool could not be made: never try again.
    pool_failed: bool,
    waker: Option<Arc<Waker>>,
    /// Results the workers handed back, for the loop to log.
    finished: Arc<Mutex<Vec<JobResult>>>,
    loadavg: Option<LoadAvg>,
    /// Each cache dir's sweep, and when its next walk may start.
    sweepers: Vec<(Sweeper, u64)>,
    /// Copies written to the cache, and jobs that ended otherwise.
    pub copies_made: u64,
    pub jobs_failed: u64,
}

impl Deflater {
    /// The loop's waker: a worker wakes the loop when a job ends.
    pub fn set_waker(&mut self, waker: Arc<Waker>) {
        self.waker = Some(waker);
    }

    /// The cache dirs to sweep (every `deflate.cache-dir` of the configuration).
    pub fn set_cache_dirs(&mut self, dirs: &[String]) {
        self.sweepers = dirs.iter().map(|d| (Sweeper::new(d), 0)).collect();
    }

    /// The 1-minute load average when `spec` has a limit (read from
    /// `/proc/loadavg` at most every 5 s), else 0.
    pub fn load_for(&mut self, spec: &DeflateSpec, mono: u64) -> f64 {
        if spec.max_loadavg <= 0.0 {
            return 0.0;
        }
        self.loadavg.get_or_insert_with(LoadAvg::default).get(mono)
    }

    /// Queues a cache job. Refused jobs leave the answer identity.
    pub fn submit(&mut self, job: Job) -> Result<(), Refused> {
        if self.pool.is_none() && !self.pool_failed {
            // One thread on a 2-core machine leaves a core to the loop; two
            // where there are four or more.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let threads = if cores >= 4 { 2 } else { 1 };
            match Pool::new(threads, POOL_QUEUE) {
                Ok(p) => self.pool = Some(p),
                Err(e) => {
                    log::error!("deflate.cache-dir: cannot start the compression thread: {e}");
                    self.pool_failed = true;
                }
            }
        }
        let pool = self.pool.as_ref().ok_or(Refused::Closed)?;
        let finished = Arc::clone(&self.finished);
        let waker = self.waker.clone();
        pool.submit(
            job,
            Box::new(move |result| {
                finished
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(result);
                if let Some(w) = waker {
                    let _ = w.wake();
                }
            }),
        )
    }

    /// Jobs queued or running.
    pub fn in_flight(&self) -> usize {
        self.pool.as_ref().map_or(0, Pool::in_flight)
    }

    /// Logs and counts the jobs that ended (the loop calls it when woken).
    pub fn take_finished(&mut self) {
        let done = std::mem::take(&mut *self.finished.lock().unwrap_or_else(|p| p.into_inner()));
        for r in done {
            let ms = r.elapsed.as_millis();
            match r.outcome {
                Ok(len) => {
                    self.copies_made += 1;
                    log::debug!("compressed {} ({len} bytes, {ms} ms)", r.dest.display());
                }
                Err(JobError::SourceChanged) => {
                    self.jobs_failed += 1;
                    log::debug!(
                        "{}: the file changed while it was compressed; not cached",
                        r.dest.display()
                    );
                }
                Err(e) => {
                    self.jobs_failed += 1;
                    log::warn!("deflate.cache-dir: {}: {e:?}", r.dest.display());
                }
            }
        }
    }

    /// Once a second: a bounded step of each cache dir's sweep (a walk
    /// that ended rests [`SWEEP_PAUSE`] seconds). `etag`
    /// gives the ETag a source file has now (under the global settings: a
    /// copy made under a scope with other `etag.use-*` options is removed
    /// and made again on its next request).
    pub fn on_tick(
        &mut self,
        mono: u64,
        etag: &dyn Fn(&std::path::Path, &std::fs::Metadata) -> Option<String>,
    ) {
        self.take_finished();
        let now = SystemTime::now();
        for (s, next) in &mut self.sweepers {
            if mono < *next {
                continue;
            }
            let report = s.step(SWEEP_BUDGET, now, etag);
            if report.removed > 0 {
                log::debug!("deflate.cache-dir: removed {} stale copies", report.removed);
            }
            if report.round_done {
                *next = mono + SWEEP_PAUSE;
            }
        }
    }
}

/// What a request says about compression.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ask<'a> {
    pub accept_encoding: Option<&'a str>,
    pub if_none_match: Option<&'a str>,
    pub method: &'a str,
}

impl<'a> Ask<'a> {
    pub fn of(headers: &'a [Header<'a>], method: &'a str) -> Ask<'a> {
        let get = |name: &str| {
            headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .and_then(|h| std::str::from_utf8(h.value).ok())
        };
        Ask {
            accept_encoding: get("accept-encoding"),
            if_none_match: get("if-none-match"),
            method,
        }
    }
}

/// Compresses `bytes` whole, or `None` when the encoder refuses (the
/// caller then sends identity).
pub fn compress_now(
    coding: Coding,
    spec: &DeflateSpec,
    content_type: Option<&str>,
    bytes: &[u8],
) -> Option<Vec<u8>> {
    let mut enc = Encoder::new(
        coding,
        &spec.encoder_params(),
        content_type,
        Some(bytes.len() as u64),
    )
    .map_err(|e| log::warn!("compression failed: {e}"))
    .ok()?;
    let mut out = Vec::with_capacity(bytes.len() / 3 + 64);
    encode_all(&mut enc, bytes, &mut out)
        .map_err(|e| log::warn!("{e}"))
        .ok()?;
    Some(out)
}

/// The `Vary` line of a reply so that it names Accept-Encoding.
pub fn add_vary(r: &mut Reply) {
    let existing = r
        .field("vary")
        .map(|v| String::from_utf8_lossy(v).into_owned());
    if let Some(v) = vary_with_accept_encoding(existing.as_deref()) {
        r.remove_field("vary");
        r.header("Vary", v.as_bytes());
    }
}

/// The compression step for one of glint's replies made in memory (not a
/// static file, which decides for itself): `Vary`, and the compressed
/// body, at once or as a stream ([`Reply::encode`]).
pub fn filter_reply(r: &mut Reply, ask: &Ask<'_>, loadavg: f64) {
    if r.encoding_decided {
        return;
    }
    let settings: Rc<Settings> = Rc::clone(&r.settings);
    let spec = &settings.deflate;
    if !spec.enabled() {
        return;
    }
    let text = |v: Option<&[u8]>| {
        v.and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_string)
    };
    let content_type = text(r.field("content-type"));
    let content_encoding = text(r.field("content-encoding"));
    let cache_control = text(r.field("cache-control"));
    let facts = ResponseFacts {
        status: r.status,
        // glint answers Range only for files: this reply is whole.
        request_has_range: false,
        content_encoding: content_encoding.as_deref(),
        cache_control: cache_control.as_deref(),
        content_type: content_type.as_deref(),
        length: r.content_length,
    };
    let coding = match decide(spec, &facts, ask.accept_encoding, loadavg) {
        Decision::Skip => return,
        Decision::Identity => return add_vary(r),
        Decision::Compress(c) => c,
    };
    add_vary(r);
    let etag = text(r.field("etag")).and_then(|t| variant_etag(&t, coding));
    if let Some(tag) = etag.as_deref() {
        if let Some(status) = variant_precondition(ask.if_none_match, tag, ask.method, r.status) {
            let vary = r.field("vary").map(<[u8]>::to_vec);
            r.clear_answer();
            r.start(status);
            r.header("ETag", tag.as_bytes());
            if let Some(v) = vary {
                r.header("Vary", &v);
            }
            // A 304 has no body; a 412 says it has none.
            r.end_head((status != 304).then_some(0));
            return;
        }
    }
    // A body at hand is compressed now, before the head says so: if the
    // encoder refuses, the reply goes out as it is.
    let mut packed = None;
    if r.content_length.is_some_and(|n| n <= INLINE_MAX) {
        if let Some(body) = r.body_bytes_in_memory().filter(|b| !b.is_empty()) {
            match compress_now(coding, spec, content_type.as_deref(), &body) {
                Some(p) => packed = Some(p),
                None => return,
            }
        }
    }
    r.remove_field("etag");
    if let Some(tag) = etag.as_deref() {
        r.header("ETag", tag.as_bytes());
    }
    r.header("Content-Encoding", coding.label().as_bytes());
    match packed {
        Some(p) => {
            r.replace_body(&p);
            r.end_head(Some(p.len() as u64));
        }
        None => {
            // A stream (or HEAD, which has no body here): no length.
            r.end_head(None);
            r.encode = Some(coding);
        }
    }
}
