//! The WebSocket a mod_wstunnel tunnel's bytes are framed in, on the
//! client's side: the backend's bytes as text or binary messages, the
//! Close that ends it (see `conn/wstunnel.rs` for the rest).

use crate::proto::ws::{self, Op};

/// The WebSocket state of a tunnel.
#[derive(Debug)]
pub struct WsSide {
    pub(in crate::conn) decoder: ws::Decoder,
    /// The backend's bytes go out in binary frames (else text).
    binary: bool,
    /// The end of a backend read that splits a UTF-8 character, kept for
    /// the next text frame.
    partial: Vec<u8>,
    /// A Close frame went to the client: nothing more goes to it.
    pub closed: bool,
    /// `wstunnel.ping-interval`, and the second the next ping is due.
    pub(in crate::conn) ping_every: u64,
    pub(in crate::conn) ping_at: u64,
    /// Decoded message bytes, reused.
    pub(in crate::conn) scratch: Vec<u8>,
}

impl WsSide {
    /// A WebSocket just opened at second `now`: frames binary or text,
    /// pings every `ping_every` seconds (0: none).
    pub fn new(binary: bool, ping_every: u64, now: u64) -> WsSide {
        WsSide {
            decoder: ws::Decoder::default(),
            binary,
            partial: Vec::new(),
            closed: false,
            ping_every,
            ping_at: now + ping_every,
            scratch: Vec::new(),
        }
    }

    /// The backend's bytes as one message frame.
    pub fn send_data(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if self.closed {
            return;
        }
        if self.binary {
            return ws::encode(Op::Binary, bytes, out);
        }
        // A text frame ends on a whole character; the rest waits.
        let mut all = std::mem::take(&mut self.partial);
        all.extend_from_slice(bytes);
        let whole = ws::utf8_whole(&all);
        if whole > 0 {
            ws::encode(Op::Text, &all[..whole], out);
        }
        self.partial = all.split_off(whole);
    }

    /// A Close frame with `code`, once.
    pub fn send_close(&mut self, code: u16, out: &mut Vec<u8>) {
        if !std::mem::replace(&mut self.closed, true) {
            ws::encode_close(code, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_frames_carry_whole_characters() {
        let mut w = WsSide::new(false, 0, 0);
        let euro = "a€".as_bytes();
        let mut out = Vec::new();
        w.send_data(&euro[..2], &mut out);
        w.send_data(&euro[2..], &mut out);
        assert_eq!(out, [0x81, 1, b'a', 0x81, 3, 0xe2, 0x82, 0xac]);
        w.send_close(1000, &mut out);
        w.send_data(b"late", &mut out);
        assert_eq!(out.len(), 8 + 4, "nothing after the close");
    }
}
