//! The harness of the integration tests: the real glint binary on loopback,
//! real sockets, temporary directories. Only `std` and `nix`. The pieces:
//! * [`tmp`]: [`TempDir`] (removed on drop) and the fixtures built in one:
//!   [`Docroot`] (`www/` plus `secret.txt` outside it), [`write_conf`].
//! * [`server`]: [`Launch`] starts glint from flags and/or a configuration
//!   text and waits for its `glint: listening on ADDR` lines; [`Server`] is
//!   the running process, stopped by [`Server::stop`] (also on drop), with
//!   signals and what /proc says about it. `GLINT_BIN=/path/to/glint` tests
//!   another binary; `GLINT_BLACKBOX_SERVER=lighttpd` makes [`Server::start`]
//!   run lighttpd instead, to check the expectations against it.
//! * [`http`]: [`Conn`] (a connection with a read buffer and deadlines),
//!   the one response parser [`parse_response`] (none for HEAD/1xx/204/304,
//!   chunked, Content-Length, or close-delimited), request builders.
//! * [`backend`]: the test backends' processes ([`Backend`], killed on drop).
//! * [`cases`]: checks every response must pass and table-driven [`Case`]s.
//! * [`certs`]: a CA and a server certificate for the TLS listeners.
//! * [`h2client`]: `tests/h2/h2client.py` run to its end, and its facts.
//!
//! Each `tests/*.rs` is a crate of its own that uses a part of this: hence
//! the module-wide allowance of what one crate leaves unused.
#![allow(dead_code, unused_imports)]

pub mod backend;
pub mod cases;
pub mod certs;
pub mod h2client;
pub mod http;
pub mod server;
pub mod tmp;

pub use backend::*;
pub use cases::*;
pub use certs::*;
pub use h2client::*;
pub use http::*;
pub use server::*;
pub use tmp::*;

use std::time::{Duration, Instant};

/// Upper bound for any single wait on the server.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Waits until `cond` holds, checking every 20 ms, for at most `limit`;
/// returns whether it did.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        // What is waited for (a process, a file, a count in /proc) has no
        // notification to block on.
        std::thread::sleep(Duration::from_millis(20));
    }
}
