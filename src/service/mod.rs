//! Running glint as a service, in the order start-up meets it:
//!
//! - [`pidfile`]: `server.pid-file`: refuse a second instance, write, remove.
//! - [`activation`]: listening sockets handed down by systemd (`LISTEN_FDS`).
//! - [`privileges`]: `server.chroot`, `server.groupname`, `server.username`.
//! - [`daemon`]: detaching from the terminal, with start-up errors still
//!   reaching it through a pipe.
//! - [`workers`]: `server.max-worker`: a supervisor and its worker processes.
//! - [`upgrade`]: SIGUSR2: a new binary takes over the listening sockets.
//! - [`notify`]: systemd's `READY=1` / `MAINPID=` (sd_notify).
//!
//! Everything that can fail at start happens before the process detaches, so
//! the shell that ran `glint -f ...` sees the error and a non-zero status.

pub mod activation;
pub mod daemon;
pub mod notify;
pub mod pidfile;
pub mod privileges;
pub mod upgrade;
pub mod workers;
