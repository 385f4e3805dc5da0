//! HTTP/2 (RFC 9113) for the server side, as a sans-IO protocol core: no
//! sockets, no clock, no runtime. It imports nothing else of glint.
//!
//! - [`frame`]: frames as pure functions over bytes (`Ok(None)` = need more),
//!   and encoders for what a server sends.
//! - [`hpack`]: RFC 7541 header compression (its Huffman code is
//!   [`crate::proto::huffman`], shared with QPACK).
//! - [`conn`]: one connection's state machine, its limits
//!   ([`conn::limits`]) and RFC 9218 priorities ([`conn::priority`]).
//!
//! # Driving a connection
//!
//! One [`conn::Connection`] per accepted HTTP/2 connection (after ALPN `h2`,
//! or on a cleartext listener with prior knowledge):
//!
//! ```text
//! let mut c = Connection::new(Config::default());   // queues our SETTINGS
//!
//! on readable:
//!     append what was read to the connection's input buffer `inbuf`
//!     match c.recv(&inbuf, now_ms) {
//!         Ok(used) => inbuf.drain(..used),           // the rest is a partial frame
//!         Err(e)   => { log e; write c.output(); close when written }
//!     }
//!     while let Some(ev) = c.poll_event() { handle(ev) }
//!     then write (below)
//!
//! handle(ev):
//!     Request { stream, head, end_stream } -> start the exchange: head.method(),
//!         path(), authority(), fields(); answer with
//!         c.send_headers(stream, status, fields, end_stream_if_no_body);
//!         when body data is (or will be) available, c.set_ready(stream, true)
//!     Data { stream, len, end_stream }     -> the body is in c.body(stream); pass
//!         it on and call c.consume_body(stream, n) for what was taken. Credit
//!         returns to the client only then: not consuming is back-pressure.
//!     Trailers { stream, fields }          -> the request body is complete.
//!     Reset { stream, .. }                 -> drop the exchange (client cancelled,
//!         or a reset was sent for the client's error).
//!     Rejected { stream, why }             -> nothing to do; log at debug.
//!     GoAway { .. }                        -> the client is leaving; finish streams.
//!
//! write (whenever writable and after recv or any send_* call):
//!     1. write c.output() and report it with c.advance_output(n); it holds
//!        control frames and response heads, and must go out before DATA.
//!     2. while c.output() is empty and let Some(s) = c.next_stream_to_send():
//!            n = min(c.send_window(s), bytes the stream has ready)
//!            if n == 0 and more is to come: c.set_ready(s, false) until the
//!                source has data; (a 0 window is handled by the scheduler)
//!            hdr = c.data_header(s, n, is_last)?    // debits both windows
//!            queue hdr (9 bytes) then exactly n payload bytes (memory, or a
//!                file range for sendfile); nothing may come between them
//!        when the body is done, is_last = true ends the stream (or use
//!        c.send_trailers). A stream stays ready until set_ready(s, false).
//!     3. call next_stream_to_send again after each recv: WINDOW_UPDATE or
//!        SETTINGS from the client may have opened windows.
//!
//! closing:
//!     c.shutdown() sends GOAWAY(NO_ERROR) for a graceful stop (reload);
//!     streams already open finish. c.is_done() says when to close the
//!     socket; c.wants_read() turns false after a connection error.
//! ```
//!
//! `now_ms` is any monotonic millisecond clock (glint's tick is fine); it
//! only feeds the per-window budgets. Timeouts (idle, SETTINGS ack) are the
//! caller's. Every bound the connection enforces is in [`conn::limits`],
//! with the attack it answers; the caller can set them from the
//! configuration through [`conn::Config`] (lighttpd's
//! `server.max-request-field-size` maps to `max_header_list_size`).

pub mod conn;
pub mod error;
pub mod frame;
pub mod hpack;

pub use error::{Error, ErrorCode, StreamId};

#[cfg(test)]
mod layering {
    use std::path::Path;

    fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The layer is pure: every path from the crate root stays inside proto::h2
    /// (or the Huffman code it shares with QPACK, or the syntax toolbox, both
    /// pure themselves), so it can be
    /// wired into any loop, fuzzed alone, and never pulls in the server.
    #[test]
    fn imports_nothing_of_glint_outside_itself() {
        let mut all = Vec::new();
        files(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/proto/h2"),
            &mut all,
        );
        assert!(all.len() >= 10, "found {} files", all.len());
        // Built from pieces so this file's own text does not match.
        let root = ["crate", "::"].concat();
        let inside = [&root, "proto::h2"].concat();
        let shared = [&root, "proto::huffman"].concat();
        let syntax = [&root, "syntax::"].concat();
        for f in all {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            for (i, _) in text.match_indices(&root) {
                assert!(
                    text[i..].starts_with(&inside)
                        || text[i..].starts_with(&shared)
                        || text[i..].starts_with(&syntax),
                    "{} imports {}",
                    f.display(),
                    text[i..].lines().next().unwrap_or("")
                );
            }
        }
    }
}
