//! Compressing static files into the cache off the event loop.
//!
//! 7 MB of HTML (the Rust books' print pages, cat'ed) takes 73-91 ms at
//! gzip level 6, 158-216 ms at brotli quality 5 and 20 ms at zstd level 3
//! on this machine (`measure_7mb` in the tests, release build, two runs):
//! done on the loop, every other connection would wait that long. So a
//! small pool of threads does it, and the loop serves identity meanwhile.
//! The queue is bounded and a full queue refuses the job at once (the
//! caller serves identity and may ask again on a later request); a job for
//! a cache file already queued or running is refused as a duplicate, so a
//! burst of first requests costs one compression, not one per request.

use std::collections::HashSet;
use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cache::write_atomic;
use super::encoder::Encoder;
use super::spec::EncoderParams;
use super::{Coding, Progress};

/// Bytes read from the source per encoder feed: 256 KiB keeps the read
/// buffer small while a read is still large enough that its syscall cost is
/// under 1% of the compression.
const READ_BLOCK: usize = 256 * 1024;

/// The identity of a source file as its ETag saw it: a job whose file no
/// longer matches (replaced, or rewritten in place) is dropped, so a copy
/// never pairs one version's bytes with another's ETag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceId {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
}

impl SourceId {
    pub fn of(meta: &Metadata) -> SourceId {
        SourceId {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

/// One file to compress into the cache.
#[derive(Debug, Clone)]
pub struct Job {
    pub source: PathBuf,
    pub expect: SourceId,
    /// From [`super::cache::cache_path`].
    pub dest: PathBuf,
    pub coding: Coding,
    pub params: EncoderParams,
    pub content_type: Option<String>,
    /// The copy's bytes when the caller compressed them already (a small
    /// file, compressed on the loop for the answer at hand): the job only
    /// writes them, after checking that the source is still `expect`.
    pub packed: Option<Vec<u8>>,
}

/// How a job ended.
#[derive(Debug)]
pub enum JobError {
    /// The source changed between the ETag and the end of compression.
    SourceChanged,
    Io(io::Error),
    Compress(String),
    /// The encoder panicked; the worker survived it.
    Panicked,
}

/// What the completion callback receives.
#[derive(Debug)]
pub struct JobResult {
    pub dest: PathBuf,
    /// The size of the cache file written.
    pub outcome: Result<u64, JobError>,
    pub elapsed: Duration,
}

/// Called on the worker thread when a job ends; the lead's closure wakes
/// the mio loop (a `mio::Waker`) and hands it the result.
pub type Done = Box<dyn FnOnce(JobResult) + Send>;

/// Why [`Pool::submit`] did not take a job; serve identity meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Full,
    Duplicate,
    Closed,
}

type Queue = Arc<Mutex<Receiver<(Job, Done)>>>;

/// A bounded pool of compression threads.
pub struct Pool {
    tx: Option<SyncSender<(Job, Done)>>,
    workers: Vec<JoinHandle<()>>,
    inflight: Arc<Mutex<HashSet<PathBuf>>>,
}

impl Pool {
    /// `threads` workers (at least 1) and at most `queue` jobs waiting
    /// beyond those running (0: a job is taken only by an idle worker).
    pub fn new(threads: usize, queue: usize) -> io::Result<Pool> {
        let (tx, rx) = sync_channel::<(Job, Done)>(queue);
        let rx: Queue = Arc::new(Mutex::new(rx));
        let inflight = Arc::new(Mutex::new(HashSet::new()));
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let (rx, inflight) = (Arc::clone(&rx), Arc::clone(&inflight));
            let handle = std::thread::Builder::new()
                .name(format!("glint-compress-{i}"))
                .spawn(move || worker(rx, inflight))?;
            workers.push(handle);
        }
        Ok(Pool {
            tx: Some(tx),
            workers,
            inflight,
        })
    }

    /// Queue a job; `done` runs on a worker when it ends. Never blocks.
    pub fn submit(&self, job: Job, done: Done) -> Result<(), Refused> {
        let tx = self.tx.as_ref().ok_or(Refused::Closed)?;
        {
            let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            if !inflight.insert(job.dest.clone()) {
                return Err(Refused::Duplicate);
            }
        }
        let dest = job.dest.clone();
        tx.try_send((job, done)).map_err(|e| {
            self.inflight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&dest);
            match e {
                TrySendError::Full(_) => Refused::Full,
                TrySendError::Disconnected(_) => Refused::Closed,
            }
        })
    }

    /// Jobs queued or running.
    pub fn in_flight(&self) -> usize {
        self.inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

impl Drop for Pool {
    /// Stop taking jobs, let the workers finish what is queued, join them.
    fn drop(&mut self) {
        self.tx = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker(rx: Queue, inflight: Arc<Mutex<HashSet<PathBuf>>>) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((job, done)) = next else { return };
        let started = Instant::now();
        let dest = job.dest.clone();
        let outcome =
            catch_unwind(AssertUnwindSafe(|| run(&job))).unwrap_or(Err(JobError::Panicked));
        inflight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&dest);
        let result = JobResult {
            dest,
            outcome,
            elapsed: started.elapsed(),
        };
        // A panicking callback must not take the worker with it.
        let _ = catch_unwind(AssertUnwindSafe(move || done(result)));
    }
}

/// Compress `job.source` into `job.dest`; the source must still be the
/// file the ETag was made from, before and after.
pub fn run(job: &Job) -> Result<u64, JobError> {
    let mut src = File::open(&job.source).map_err(JobError::Io)?;
    let same = |f: &File| f.metadata().is_ok_and(|m| SourceId::of(&m) == job.expect);
    if !same(&src) {
        return Err(JobError::SourceChanged);
    }
    if let Some(packed) = &job.packed {
        return write_atomic(&job.dest, |out| out.write_all(packed)).map_err(JobError::Io);
    }
    let mut encoder = Encoder::new(
        job.coding,
        &job.params,
        job.content_type.as_deref(),
        Some(job.expect.len),
    )
    .map_err(|e| JobError::Compress(e.0))?;
    let mut failure: Option<JobError> = None;
    let written = write_atomic(&job.dest, |out| {
        let mut buf = vec![0u8; READ_BLOCK];
        let mut packed = Vec::with_capacity(job.params.out_budget);
        let mut total = 0u64;
        let fail = |e: JobError, slot: &mut Option<JobError>| {
            *slot = Some(e);
            io::Error::other("cache job failed")
        };
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            total += n as u64;
            let mut input = &buf[..n];
            while !input.is_empty() {
                let taken = encoder
                    .feed(input, &mut packed)
                    .map_err(|e| fail(JobError::Compress(e.0), &mut failure))?;
                if taken == 0 && packed.is_empty() {
                    // Never expected; without this a worker would spin forever.
                    let stuck = JobError::Compress("encoder made no progress".into());
                    return Err(fail(stuck, &mut failure));
                }
                input = &input[taken..];
                out.write_all(&packed)?;
                packed.clear();
            }
        }
        while encoder
            .finish(&mut packed)
            .map_err(|e| fail(JobError::Compress(e.0), &mut failure))?
            == Progress::More
        {
            out.write_all(&packed)?;
            packed.clear();
        }
        out.write_all(&packed)?;
        if total != job.expect.len || !same(&src) {
            return Err(fail(JobError::SourceChanged, &mut failure));
        }
        Ok(())
    });
    match (written, failure) {
        (Ok(len), _) => Ok(len),
        (Err(_), Some(f)) => Err(f),
        (Err(e), None) => Err(JobError::Io(e)),
    }
}
