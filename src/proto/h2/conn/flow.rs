//! Flow-control arithmetic (RFC 9113 §5.2, §6.9).
//!
//! Receive side: a window shrinks by each DATA frame's whole length
//! (padding included) and is given back with WINDOW_UPDATE only as the
//! caller consumes the body, so a caller that stops reading stops the
//! client. Credit goes back in one WINDOW_UPDATE once half the window is
//! owed, not one per read: the client is never stalled by that (while less
//! than half is owed, more than half is still open) and a 1-byte reader
//! does not cause a frame per byte.
//!
//! Send side: windows are i64 because a smaller SETTINGS_INITIAL_WINDOW_SIZE
//! can take a stream's window below zero (§6.9.2); a WINDOW_UPDATE that
//! takes one past 2^31-1 is a FLOW_CONTROL_ERROR (§6.9.1).

use crate::proto::h2::frame::MAX_WINDOW;

/// `window + increment`, or `None` if that passes 2^31-1.
pub fn grow(window: i64, increment: u32) -> Option<i64> {
    let w = window + increment as i64;
    (w <= MAX_WINDOW as i64).then_some(w)
}

/// Whether owed credit is due to be returned for a window of `size`.
pub fn due(owed: u32, size: u32) -> bool {
    owed > 0 && owed >= size / 2
}

/// What `window` allows for one DATA frame: never negative, never past
/// the peer's SETTINGS_MAX_FRAME_SIZE.
pub fn budget(stream: i64, conn: i64, max_frame: u32) -> usize {
    stream.min(conn).min(max_frame as i64).max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_arithmetic() {
        assert_eq!(grow(0, MAX_WINDOW), Some(MAX_WINDOW as i64));
        assert_eq!(grow(1, MAX_WINDOW), None);
        assert_eq!(grow(-100, 50), Some(-50), "negative windows grow too");
        assert!(!due(0, 65_535));
        assert!(!due(32_766, 65_535));
        assert!(due(32_767, 65_535));
        assert_eq!(budget(-5, 100, 16_384), 0);
        assert_eq!(budget(70_000, 100_000, 16_384), 16_384);
        assert_eq!(budget(70_000, 10, 16_384), 10);
    }
}
