//! Jobs whose "backend" is glint itself ([`LocalWork`]: mod_webdav's
//! PUT, PROPFIND, PROPPATCH, LOCK). The body reaches the work through the
//! same window, time-outs and HTTP/2 flow control as a backend's; once it
//! is complete the work is done and its answer is read like a CGI
//! program's output, under the same back-pressure.
//!
//! There is no socket: a pipe of its own wakes the loop when the answer
//! is ready (one byte), so the answer is read from the event loop as a
//! backend's is, never from inside the client's read. (Its route is made
//! in `routes.rs`, its backend connection in `dispatch.rs`.)

use std::io::{self, Read, Write};

use mio::unix::pipe::{self, Receiver, Sender};
use mio::{Interest, Registry, Token};

use crate::msg::local::{LocalWork, Ready};

/// Most local jobs at once; more wait in the queue. Each holds a temporary
/// file or a directory walk and two pipe descriptors; 256 is far above
/// what one WebDAV client opens (rclone: 4 transfers, 8 checkers).
pub const LOCAL_MAX_JOBS: usize = 256;

/// The work of one local job and the pipe that announces its answer.
pub struct LocalLink {
    work: Box<dyn LocalWork>,
    wake_tx: Sender,
    wake_rx: Receiver,
    finished: bool,
}

impl std::fmt::Debug for LocalLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLink")
            .field("finished", &self.finished)
            .finish()
    }
}

impl LocalLink {
    pub(super) fn new(work: Box<dyn LocalWork>) -> io::Result<LocalLink> {
        let (wake_tx, wake_rx) = pipe::new()?;
        Ok(LocalLink {
            work,
            wake_tx,
            wake_rx,
            finished: false,
        })
    }

    /// Body bytes: all of them are taken (work that has failed keeps its
    /// answer and drops the rest of the body).
    pub(super) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.work.write(data)
    }

    /// The answer, filling `buf` unless it ends: a short read is its end
    /// (the connection reads on only after a full one).
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.finished {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut drain = [0u8; 8];
        while matches!(self.wake_rx.read(&mut drain), Ok(n) if n > 0) {}
        let mut got = 0;
        while got < buf.len() {
            match self.work.read(&mut buf[got..])? {
                0 => break,
                n => got += n,
            }
        }
        Ok(got)
    }

    /// The body is complete: the work runs, and the loop hears its answer.
    pub(super) fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.work.finish();
        if self.work.answers_later() {
            // The worker that ends the work writes the pipe: a copy of its
            // descriptor goes with the signal.
            use std::os::fd::AsFd;
            match self.wake_tx.as_fd().try_clone_to_owned() {
                Ok(fd) => {
                    let mut tx = std::fs::File::from(fd);
                    self.work.set_ready(Ready::new(move || {
                        if let Err(e) = tx.write(&[1]) {
                            log::error!("local job: cannot signal its answer: {e}");
                        }
                    }));
                    return;
                }
                Err(e) => log::error!("local job: cannot copy its pipe: {e}"),
            }
        }
        if let Err(e) = self.wake_tx.write(&[1]) {
            log::error!("local job: cannot signal its answer: {e}");
        }
    }

    pub(super) fn register(&mut self, r: &Registry, t: Token) -> io::Result<()> {
        r.register(&mut self.wake_rx, t, Interest::READABLE)
    }
}
