//! Runs that wait: one suspended after its quantum, or one whose script
//! has all its states out. Their requests are parked (see
//! `exchange::magnet_wait`) on a [`Parked`] handle; the loop gives them a
//! quantum each in turn ([`Magnet::step`]) after serving the others, and
//! wakes the request when its scripts are done.

use std::cell::RefCell;
use std::rc::Rc;

use super::{watchdog, Ctx, Magnet, Quantum, Stage, State, Verdict, TIME_SLICE};

/// Called once a parked run is done: wakes its request (the upstream's
/// local-job wake; a plain closure, so that this layer needs no import).
pub type Wake = Box<dyn FnOnce() + Send>;

/// What [`Magnet::run`] came to.
pub enum Ran {
    /// The scripts ran to their end.
    Done(Verdict),
    /// A run is parked: the request waits on the handle (its context
    /// went with it).
    Parked(Parked),
}

/// A parked run of a stage's scripts.
struct Run {
    /// The stage the scripts run at.
    stage: Stage,
    /// The scripts still to run, the one in progress first.
    files: Vec<String>,
    /// The request's context, or (while a state holds it) that state's
    /// spare: swapped back when the script's run ends.
    ctx: Ctx,
    /// The state the first script's run is suspended in.
    state: Option<State>,
    /// Run time the first script's run has used (ns).
    used: u64,
    /// What the scripts came to, once they did.
    outcome: Option<Verdict>,
    /// Tells the request's connection that the outcome is in.
    wake: Option<Wake>,
    /// The request went away: the run is dropped at its next turn.
    cancelled: bool,
}

/// The handle a parked request holds on its run.
#[derive(Clone)]
pub struct Parked(Rc<RefCell<Run>>);

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.0.borrow();
        f.debug_struct("Parked")
            .field("files", &r.files)
            .field("outcome", &r.outcome)
            .finish_non_exhaustive()
    }
}

impl Parked {
    pub(super) fn new(stage: Stage, files: &[String], ctx: Ctx, state: Option<State>) -> Parked {
        Parked(Rc::new(RefCell::new(Run {
            stage,
            files: files.to_vec(),
            ctx,
            state,
            used: 0,
            outcome: None,
            wake: None,
            cancelled: false,
        })))
    }

    /// The first quantum ran `ns`.
    pub(super) fn ran(&mut self, ns: u64) {
        self.0.borrow_mut().used = ns;
    }

    /// Calls `wake` when the outcome is in; gives it back when it is
    /// already.
    pub fn on_done(&self, wake: Wake) -> Option<Wake> {
        let mut r = self.0.borrow_mut();
        if r.outcome.is_some() {
            return Some(wake);
        }
        r.wake = Some(wake);
        None
    }

    /// The stage whose scripts these are.
    pub fn stage(&self) -> Stage {
        self.0.borrow().stage
    }

    /// The outcome is in.
    pub fn is_done(&self) -> bool {
        self.0.borrow().outcome.is_some()
    }

    /// What the scripts came to and the request's context they changed
    /// (once).
    pub fn take(&self) -> Option<(Verdict, Ctx)> {
        let mut r = self.0.borrow_mut();
        let v = r.outcome.take()?;
        Some((v, std::mem::take(&mut r.ctx)))
    }

    /// The request no longer waits: the run is dropped.
    pub fn cancel(&self) {
        let mut r = self.0.borrow_mut();
        r.cancelled = true;
        r.wake = None;
    }
}

impl Magnet {
    /// Runs are parked: the loop should give them their turns without
    /// waiting for events.
    pub fn has_parked(&self) -> bool {
        !self.parked.is_empty()
    }

    /// One turn of the parked runs: the first in line runs a quantum (or
    /// is dropped, when its request went away). `idle`: the loop had no
    /// other work this turn; while it has, the parked runs get at most
    /// half of its time (a quantum, then as long again for the others).
    pub fn step(&mut self, idle: bool) {
        if self.parked.is_empty() || (!idle && watchdog::now_ns() < self.next_turn) {
            return;
        }
        let t0 = watchdog::now_ns();
        self.turn();
        let t1 = watchdog::now_ns();
        self.next_turn = t1.saturating_add(t1.saturating_sub(t0));
    }

    fn turn(&mut self) {
        let Some(p) = self.parked.pop_front() else {
            return;
        };
        let mut run = p.0.borrow_mut();
        let Some(file) = run.files.first().cloned() else {
            return;
        };
        if run.cancelled {
            if let Some(mut state) = run.state.take() {
                state.swap(&mut run.ctx);
                state.clean_up(&file);
                self.release(state);
            }
            return;
        }
        let (mut state, fresh) = match run.state.take() {
            Some(s) => (s, false),
            None => match self.acquire(&file) {
                Ok(Some(s)) => {
                    s.swap(&mut run.ctx);
                    run.used = 0;
                    (s, true)
                }
                Ok(None) => {
                    drop(run);
                    self.parked.push_back(p);
                    return;
                }
                Err(e) => {
                    log::error!("loading script {file} failed: {e}");
                    return finish(&mut run, Verdict::Failed);
                }
            },
        };
        let left = (TIME_SLICE.as_nanos() as u64).saturating_sub(run.used);
        let (q, ran) = state.go(fresh, left);
        run.used = run.used.saturating_add(ran);
        match q {
            Quantum::Suspended => {
                run.state = Some(state);
                drop(run);
                self.parked.push_back(p);
            }
            Quantum::Over(rv) => {
                state.swap(&mut run.ctx);
                let v = self.ended(&file, state, rv, run.stage);
                run.files.remove(0);
                if v != Verdict::GoOn || run.files.is_empty() {
                    return finish(&mut run, v);
                }
                drop(run);
                self.parked.push_back(p);
            }
        }
    }
}

/// The run's outcome is `v`: its request is woken.
fn finish(run: &mut Run, v: Verdict) {
    run.outcome = Some(v);
    if let Some(wake) = run.wake.take() {
        wake();
    }
}
