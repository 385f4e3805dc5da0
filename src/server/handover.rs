//! A binary upgrade as the loop sees it (SIGUSR2): the service layer
//! starts the new glint on this server's listening sockets (an
//! [`Upgrader`]); the loop keeps serving while it starts and looks at it
//! each turn; once it says it is ready, this server stops accepting and
//! finishes its connections as on SIGINT. If it fails, nothing changes.
//!
//! One difference from SIGINT: a keep-alive connection idle between
//! requests (or whose answer, begun before the handover, went out with
//! keep-alive) is not closed at once, since its client may have a request
//! on the way that would then fail (the race every HTTP/1.1 server has
//! when it closes an idle connection: ab -k saw resets). It gets
//! `Connection: close` on its next answer, or is closed once it has stayed
//! idle for a whole second (a
//! request sent before that second began would have arrived), or at
//! `server.graceful-shutdown-timeout`. Load generators that keep
//! connections busy (`ab -k`) thus see no failed request.
//!
//! In a worker of `server.max-worker`, SIGUSR2 comes from the supervisor
//! once the new glint is ready, and means: finish as in a handover.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;

use super::listen::Listener;
use super::{Server, GRACEFUL, RUN};

/// What came of a new glint's start so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandoverState {
    Waiting,
    Ready,
    Failed(String),
}

/// A new glint starting (the service layer's).
pub trait Handover {
    fn poll(&mut self) -> HandoverState;
}

/// Starts a new glint on the listening sockets given (in listener order).
pub type Upgrader = Box<dyn FnMut(&[RawFd]) -> Result<Box<dyn Handover>, String>>;

/// Per-server handover state.
#[derive(Default)]
pub(super) struct Upgrade {
    pub upgrader: Option<Upgrader>,
    pub running: Option<Box<dyn Handover>>,
    /// This server is handing over: idle connections close once settled.
    pub handing_over: bool,
    /// This process is a worker: SIGUSR2 means "finish as in a handover".
    pub is_worker: bool,
    /// Idle connections seen at the last settle check: (slot, requests).
    idle_seen: Vec<(usize, u32)>,
    last_settle: u64,
}

impl Server {
    /// Makes SIGUSR2 start a new glint with `upgrader`.
    pub fn with_upgrader(mut self, upgrader: Upgrader) -> Self {
        self.upgrade.upgrader = Some(upgrader);
        self
    }

    /// The listening sockets' descriptors, in listener order.
    pub fn listener_fds(&self) -> Vec<RawFd> {
        self.listeners
            .iter()
            .flatten()
            .map(|l| match l {
                Listener::Tcp(t, _) => t.as_raw_fd(),
                Listener::Unix(u, _, _) => u.as_raw_fd(),
            })
            .collect()
    }

    /// Unix socket paths are the new glint's now: not removed at exit.
    pub fn leave_socket_paths(&mut self) {
        for l in self.listeners.iter_mut().flatten() {
            if let Listener::Unix(_, _, owned) = l {
                *owned = false;
            }
        }
    }

    /// SIGUSR2.
    pub(super) fn on_upgrade_signal(&mut self) {
        if self.upgrade.is_worker {
            log::info!("binary upgrade: the new glint serves; finishing the connections");
            self.upgrade.handing_over = true;
            self.sv.handing_over = true;
            self.stop.fetch_max(GRACEFUL, Ordering::SeqCst);
            return;
        }
        if self.upgrade.running.is_some() || self.stop.load(Ordering::SeqCst) != RUN {
            log::warn!("binary upgrade: one is under way or glint is stopping; SIGUSR2 ignored");
            return;
        }
        let fds = self.listener_fds();
        let Some(start) = self.upgrade.upgrader.as_mut() else {
            log::warn!("binary upgrade requested, but this server cannot start another");
            return;
        };
        log::info!("binary upgrade: starting the new glint");
        match start(&fds) {
            Ok(h) => self.upgrade.running = Some(h),
            Err(e) => log::error!("binary upgrade: {e}; this glint serves on"),
        }
    }

    /// Each turn while a new glint starts: hand over once it is ready.
    pub(super) fn watch_upgrade(&mut self) {
        let Some(h) = self.upgrade.running.as_mut() else {
            return;
        };
        match h.poll() {
            HandoverState::Waiting => {}
            HandoverState::Ready => {
                self.upgrade.running = None;
                log::info!("binary upgrade: the new glint serves; finishing the connections");
                self.leave_socket_paths();
                self.upgrade.handing_over = true;
                self.sv.handing_over = true;
                self.stop.fetch_max(GRACEFUL, Ordering::SeqCst);
            }
            HandoverState::Failed(why) => {
                self.upgrade.running = None;
                log::error!("binary upgrade failed: {why}; this glint serves on");
            }
        }
    }

    /// While handing over, once a second: closes the keep-alive
    /// connections that were idle at the last check and still are, with no
    /// request in between.
    pub(super) fn close_settled_idle(&mut self) {
        let now = self.sv.clock.mono_secs;
        if !self.upgrade.handing_over || now == self.upgrade.last_settle {
            return;
        }
        self.upgrade.last_settle = now;
        let idle: Vec<(usize, u32)> = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_idle_kept())
            .map(|(k, c)| (k, c.requests()))
            .collect();
        for k in idle
            .iter()
            .filter(|i| self.upgrade.idle_seen.contains(i))
            .map(|(k, _)| *k)
        {
            self.conns.remove(k);
            self.sv.board.close(k);
        }
        self.upgrade.idle_seen = idle;
    }
}
