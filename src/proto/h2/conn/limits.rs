//! The hard limits of one connection: each a named default with the attack
//! it answers, gathered in [`Config`] so the server can set them from its
//! configuration; and [`Budget`], the count-per-time-window they share.
//!
//! Time comes from the caller as milliseconds on any monotonic clock; this
//! module reads none.

/// SETTINGS_MAX_CONCURRENT_STREAMS: streams open or half-closed at once.
/// RFC 9113 §6.5.2 recommends no less than 100 so pages with many small
/// assets are not serialised (a browser opens about that many at once);
/// what a stream can hold is bounded elsewhere (its head by
/// [`MAX_HEADER_LIST_SIZE`], all bodies together by [`CONNECTION_WINDOW`]),
/// so 100 streams cost at most 100 stream records. Streams past it are
/// refused with RST_STREAM(REFUSED_STREAM), which counts toward
/// [`RESET_BUDGET`].
pub const MAX_CONCURRENT_STREAMS: u32 = 100;

/// SETTINGS_INITIAL_WINDOW_SIZE for request bodies: 65535, the protocol's
/// own default, so a client that sends before our SETTINGS arrive cannot
/// overrun what we expect. It bounds what one stream may have in flight.
pub const STREAM_WINDOW: u32 = 65_535;

/// The connection receive window, raised to this by a WINDOW_UPDATE right
/// after our SETTINGS. It is also the cap on request-body bytes buffered and
/// not yet consumed by the caller on this connection (a client cannot send
/// past it without a FLOW_CONTROL_ERROR): 256 KiB, as lighttpd uses, so
/// 10,000 idle uploaders hold at most 2.5 GiB.
pub const CONNECTION_WINDOW: u32 = 256 * 1024;

/// SETTINGS_MAX_HEADER_LIST_SIZE, and the cap the HPACK decoder enforces
/// while decoding (the HPACK bomb: a 4 KiB table entry referenced by
/// thousands of one-byte indexes would otherwise expand 4000-fold). 16 KiB
/// admits lighttpd's default 8 KiB request head plus 32 bytes of overhead
/// for each of up to 256 fields. Past it the request is answered 431.
pub const MAX_HEADER_LIST_SIZE: u32 = 16 * 1024;

/// Encoded bytes of one field block (HEADERS plus its CONTINUATIONs) that
/// are buffered before decoding. A legitimate encoder never produces a
/// block much longer than the list it encodes, so twice the list cap is
/// room enough; past it the connection ends with ENHANCE_YOUR_CALM
/// (the CONTINUATION flood, CVE-2024-27316 family: a block that never ends).
pub const MAX_HEADER_BLOCK_BYTES: usize = 2 * MAX_HEADER_LIST_SIZE as usize;

/// CONTINUATION frames one field block may have. With 16 KiB frames a
/// block of [`MAX_HEADER_BLOCK_BYTES`] needs 2; 32 leaves room for clients
/// that split finely, and stops a flood of empty CONTINUATION frames, which
/// the byte cap alone would never see (CVE-2024-27316 family).
pub const MAX_CONTINUATION_FRAMES: u32 = 32;

/// Stream resets per [`BUDGET_WINDOW_MS`] before GOAWAY(ENHANCE_YOUR_CALM).
/// Counted: RST_STREAM from the client on a stream it opened (rapid reset,
/// CVE-2023-44487: open and cancel at once, so the concurrency cap never
/// bites while the server starts every request), and every stream the
/// *server* resets or refuses because of the client's error (MadeYouReset,
/// CVE-2025-8671: a malformed frame on purpose makes the server do the
/// cancelling). A browser cancelling on navigation resets tens of streams;
/// 200 in 10 s leaves it room while capping an attack at 20 per second.
pub const RESET_BUDGET: u32 = 200;

/// Frames that carry nothing per [`BUDGET_WINDOW_MS`]: DATA of length 0
/// without END_STREAM, and HEADERS or CONTINUATION fragments of length 0
/// without END_HEADERS. Each costs the server a frame's processing and
/// the client nine bytes (CVE-2019-9518, empty frames flood); 100 in 10 s
/// is more than any encoder emits, past it GOAWAY(ENHANCE_YOUR_CALM).
pub const EMPTY_FRAME_BUDGET: u32 = 100;

/// The window over which [`RESET_BUDGET`] and [`EMPTY_FRAME_BUDGET`] are
/// counted: 10 s.
pub const BUDGET_WINDOW_MS: u64 = 10_000;

/// Output bytes queued and not yet written when a frame the client provoked
/// (SETTINGS ack, PING ack, RST_STREAM) is to be added. A client that sends
/// PINGs or SETTINGS and never reads would otherwise grow this buffer
/// without end (CVE-2019-9512 ping flood, CVE-2019-9515 settings flood).
/// 64 KiB is 3,800 PING acks; a reading client never comes near it, since
/// the caller writes this buffer before any DATA.
pub const MAX_PENDING_OUTPUT: usize = 64 * 1024;

/// Stream ids the client may use: 31 bits. Once a client opens this one it
/// can open no more, so the connection says GOAWAY(NO_ERROR) and drains;
/// the client continues on a new connection (RFC 9113 §5.1.1).
pub const MAX_STREAM_ID: u32 = 0x7fff_ffff;

/// Recently closed stream ids remembered to tell a late frame on a closed
/// stream (ignored, or STREAM_CLOSED) from one on a stream that never
/// existed (PROTOCOL_ERROR). Only the last 64 are kept, so memory is fixed.
pub const RECENTLY_CLOSED: usize = 64;

/// Decoded field lists kept for reuse once the caller is done with a request
/// head ([`super::Connection::recycle`]): a read of ten requests decodes ten
/// lists before the first is answered, one of a hundred (a client using
/// all of [`MAX_CONCURRENT_STREAMS`]) a hundred, so as many keep a busy
/// connection from allocating and freeing two buffers per request (about
/// 1 KiB a list for a browser's head: 100 KiB at most while the
/// connection is busy). Only lists of at most [`SPARE_LIST_BYTES`] are
/// kept; all go when the connection is compacted (idle).
pub const SPARE_LISTS: usize = MAX_CONCURRENT_STREAMS as usize;

/// The largest list capacity (names and values) kept for reuse: a browser's
/// head decodes to about 1,200 bytes.
pub const SPARE_LIST_BYTES: usize = 4096;

/// The limits of one connection; `Config::default()` holds the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub max_concurrent_streams: u32,
    pub stream_window: u32,
    pub connection_window: u32,
    pub max_header_list_size: u32,
    pub max_header_block_bytes: usize,
    pub max_continuation_frames: u32,
    pub reset_budget: u32,
    pub empty_frame_budget: u32,
    pub budget_window_ms: u64,
    pub max_pending_output: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_concurrent_streams: MAX_CONCURRENT_STREAMS,
            stream_window: STREAM_WINDOW,
            connection_window: CONNECTION_WINDOW,
            max_header_list_size: MAX_HEADER_LIST_SIZE,
            max_header_block_bytes: MAX_HEADER_BLOCK_BYTES,
            max_continuation_frames: MAX_CONTINUATION_FRAMES,
            reset_budget: RESET_BUDGET,
            empty_frame_budget: EMPTY_FRAME_BUDGET,
            budget_window_ms: BUDGET_WINDOW_MS,
            max_pending_output: MAX_PENDING_OUTPUT,
        }
    }
}

/// A count of events allowed per fixed time window. A fixed window (rather
/// than a sliding one) needs two numbers and lets at most twice the limit
/// through across a window boundary, which is still a bound.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    limit: u32,
    window_ms: u64,
    start_ms: u64,
    used: u32,
}

impl Budget {
    pub fn new(limit: u32, window_ms: u64) -> Budget {
        Budget {
            limit,
            window_ms,
            start_ms: 0,
            used: 0,
        }
    }

    /// Counts one event at `now_ms`; false once the window's limit is passed.
    pub fn spend(&mut self, now_ms: u64) -> bool {
        if now_ms.saturating_sub(self.start_ms) >= self.window_ms {
            self.start_ms = now_ms;
            self.used = 0;
        }
        self.used = self.used.saturating_add(1);
        self.used <= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_counts_per_window() {
        let mut b = Budget::new(3, 1000);
        assert!(b.spend(0) && b.spend(10) && b.spend(999));
        assert!(!b.spend(999), "the fourth in one window");
        assert!(b.spend(1000), "a new window starts afresh");
        assert!(b.spend(1500) && b.spend(1999));
        assert!(!b.spend(1999));
        // A clock that goes backwards (caller's bug) does not reopen it.
        assert!(!b.spend(5));
    }

    #[test]
    fn the_defaults_keep_their_relations() {
        let c = Config::default();
        // The block cap must admit any block whose list fits the list cap.
        assert!(c.max_header_block_bytes >= c.max_header_list_size as usize);
        // A window below 65535 would be overrun before our SETTINGS arrive.
        assert!(c.stream_window >= 65_535 && c.connection_window >= c.stream_window);
        assert_eq!(c.max_concurrent_streams, 100);
    }
}
