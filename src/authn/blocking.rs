//! Checks that block (a directory server over the network, PAM modules,
//! saslauthd) run here, on a small bounded pool of threads, never on the
//! event loop: the request waits, the loop serves everyone else, and the
//! check's answer wakes the loop ([`Pending`]).
//!
//! The pool has [`THREADS`] threads and room for [`QUEUE`] checks waiting
//! beyond those running; a check that finds the queue full is refused at
//! once ([`Refused::Full`]), and the client gets 503: with a directory
//! server that hangs until its 2 s time-out, four threads clear 2 checks
//! a second, so a queue of 64 is half a minute of waiting, as long as a
//! client waits before it gives up anyway.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Worker threads: network-bound checks, so a few more than a 2-core
/// machine's cores, and few enough that a slow server is not flooded.
pub const THREADS: usize = 4;

/// Checks waiting beyond those running.
pub const QUEUE: usize = 64;

type Task = Box<dyn FnOnce() + Send>;

/// Why a check was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// [`QUEUE`] checks wait already: answer 503.
    Full,
    /// The pool is gone or could not start.
    Closed,
}

/// The worker threads and their queue.
pub struct Pool {
    tx: Option<SyncSender<Task>>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    /// `threads` workers (at least 1), `queue` places in the queue.
    pub fn new(threads: usize, queue: usize) -> std::io::Result<Pool> {
        let (tx, rx) = sync_channel::<Task>(queue);
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            workers.push(
                std::thread::Builder::new()
                    .name(format!("glint-authn-{i}"))
                    .spawn(move || worker(rx))?,
            );
        }
        Ok(Pool {
            tx: Some(tx),
            workers,
        })
    }

    /// Queues `check`; its answer goes to `pending` (and wakes whoever
    /// waits on it), or `panicked` if the check panics, so that nobody
    /// waits for ever. Never blocks.
    pub fn submit<T: Send + 'static>(
        &self,
        pending: &Pending<T>,
        check: impl FnOnce() -> T + Send + 'static,
        panicked: T,
    ) -> Result<(), Refused> {
        let tx = self.tx.as_ref().ok_or(Refused::Closed)?;
        let slot = pending.clone();
        let task: Task = Box::new(move || match catch_unwind(AssertUnwindSafe(check)) {
            Ok(v) => slot.fill(v),
            Err(_) => {
                log::error!("(mod_auth) a back-end check panicked");
                slot.fill(panicked);
            }
        });
        tx.try_send(task).map_err(|e| match e {
            TrySendError::Full(_) => Refused::Full,
            TrySendError::Disconnected(_) => Refused::Closed,
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.tx = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker(rx: Arc<Mutex<Receiver<Task>>>) {
    loop {
        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(task) = next else { return };
        // (A check's panic is caught in its task; this keeps the worker
        // whatever else happens.)
        let _ = catch_unwind(AssertUnwindSafe(task));
    }
}

/// What wakes the waiter once a check's answer is in.
pub type Wake = Box<dyn FnOnce() + Send>;

struct Slot<T> {
    value: Option<T>,
    wake: Option<Wake>,
}

/// A check's answer to come. The waiter hands in its [`Wake`] when it
/// has one ([`Pending::on_ready`]); whichever of answer and wake comes
/// second calls it, so no answer is missed and none wakes twice.
pub struct Pending<T>(Arc<Mutex<Slot<T>>>);

impl<T> Clone for Pending<T> {
    fn clone(&self) -> Self {
        Pending(Arc::clone(&self.0))
    }
}

impl<T> std::fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pending")
    }
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending(Arc::new(Mutex::new(Slot {
            value: None,
            wake: None,
        })))
    }
}

impl<T> Pending<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot<T>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fill(&self, v: T) {
        let wake = {
            let mut s = self.lock();
            s.value = Some(v);
            s.wake.take()
        };
        if let Some(w) = wake {
            w();
        }
    }

    /// `wake` runs when the answer is in: now if it is already.
    pub fn on_ready(&self, wake: Wake) {
        let now = {
            let mut s = self.lock();
            if s.value.is_some() {
                Some(wake)
            } else {
                s.wake = Some(wake);
                None
            }
        };
        if let Some(w) = now {
            w();
        }
    }

    /// Whether the answer is in.
    pub fn is_ready(&self) -> bool {
        self.lock().value.is_some()
    }

    /// The answer, once (`None` before it is in, or after it was taken).
    pub fn take(&self) -> Option<T> {
        self.lock().value.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn answer_wakes_whether_it_comes_first_or_second() {
        let pool = Pool::new(1, 4).expect("pool");
        let (tx, rx) = channel();
        // Wake first, answer second.
        let p: Pending<u32> = Pending::default();
        let t = tx.clone();
        p.on_ready(Box::new(move || t.send(1).unwrap_or(())));
        pool.submit(&p, || 7, 0).expect("taken");
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(1));
        assert_eq!(p.take(), Some(7));
        // Answer first, wake second.
        let q: Pending<u32> = Pending::default();
        pool.submit(&q, || 8, 0).expect("taken");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !q.is_ready() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        q.on_ready(Box::new(move || tx.send(2).unwrap_or(())));
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(2));
        assert_eq!(q.take(), Some(8));
    }

    #[test]
    fn a_panicking_check_still_answers() {
        let pool = Pool::new(1, 1).expect("pool");
        let (tx, rx) = channel();
        let p: Pending<&str> = Pending::default();
        p.on_ready(Box::new(move || tx.send(()).unwrap_or(())));
        pool.submit(&p, || panic!("a broken back end"), "panicked")
            .expect("taken");
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(()));
        assert_eq!(p.take(), Some("panicked"));
    }

    #[test]
    fn a_full_queue_refuses_at_once() {
        let pool = Pool::new(1, 1).expect("pool");
        let (hold_tx, hold_rx) = channel::<()>();
        let (started_tx, started_rx) = channel::<()>();
        let first: Pending<()> = Pending::default();
        pool.submit(
            &first,
            move || {
                let _ = started_tx.send(());
                let _ = hold_rx.recv_timeout(Duration::from_secs(10));
            },
            (),
        )
        .expect("first runs");
        started_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("worker busy");
        let second: Pending<()> = Pending::default();
        pool.submit(&second, || (), ()).expect("second waits");
        let third: Pending<()> = Pending::default();
        assert_eq!(pool.submit(&third, || (), ()), Err(Refused::Full));
        let _ = hold_tx.send(());
    }
}
