//! WebSocket (RFC 6455) without I/O, for mod_wstunnel: the opening
//! handshake's answer, the client's frames decoded into the bytes of its
//! messages (control frames handed out one at a time), and the server's
//! frames encoded.
//!
//! The client's frames are checked as RFC 6455 §5 asks of a server, and a
//! frame that breaks a rule fails the connection with close code 1002: a
//! frame that is not masked (§5.1), reserved bits without an extension
//! (§5.2), an unknown opcode, a control frame that is fragmented or longer
//! than 125 bytes (§5.5), a length with its top bit set, a continuation
//! with no message begun or a new message inside a fragmented one (§5.4).
//! A message's payload is never held whole: its bytes go out as they are
//! unmasked, so a frame's size costs no memory (a control frame's 125
//! bytes at most are held).

use base64::Engine as _;
use sha1::{Digest, Sha1};

/// RFC 6455 §1.3: the GUID appended to the client's key.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The longest control frame payload (§5.5).
pub const MAX_CONTROL: usize = 125;

/// `Sec-WebSocket-Accept` for the client's `Sec-WebSocket-Key`.
pub fn accept_key(key: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(key);
    h.update(GUID);
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

/// Frame opcodes (§5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Continuation = 0,
    Text = 1,
    Binary = 2,
    Close = 8,
    Ping = 9,
    Pong = 10,
}

impl Op {
    fn of(b: u8) -> Option<Op> {
        Some(match b {
            0 => Op::Continuation,
            1 => Op::Text,
            2 => Op::Binary,
            8 => Op::Close,
            9 => Op::Ping,
            10 => Op::Pong,
            _ => return None,
        })
    }

    fn is_control(self) -> bool {
        (self as u8) >= 8
    }
}

/// Writes one unmasked frame (a server's, §5.1) with FIN set.
pub fn encode(op: Op, payload: &[u8], out: &mut Vec<u8>) {
    out.push(0x80 | op as u8);
    let n = payload.len();
    if n < 126 {
        out.push(n as u8);
    } else if let Ok(n16) = u16::try_from(n) {
        out.push(126);
        out.extend_from_slice(&n16.to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
    out.extend_from_slice(payload);
}

/// Writes a Close frame with `code` (and no reason).
pub fn encode_close(code: u16, out: &mut Vec<u8>) {
    encode(Op::Close, &code.to_be_bytes(), out);
}

/// A control frame from the client, complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Answered with a Pong of the same payload (§5.5.2).
    Ping(Vec<u8>),
    Pong,
    /// The client closes, with its status code if it gave one (§5.5.1).
    Close(Option<u16>),
}

/// Why the client's frames fail the connection: the close code to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Violation {
    /// 1002 (protocol error).
    pub code: u16,
    pub why: &'static str,
}

fn violation(why: &'static str) -> Violation {
    Violation { code: 1002, why }
}

/// Where the decoder is in the client's frames.
#[derive(Debug, Clone)]
enum State {
    /// Collecting a frame head (2 to 14 bytes) in `head`.
    Head,
    /// `left` payload bytes of a frame of `op` to unmask, `at` of them done.
    Payload { op: Op, left: u64, at: usize },
}

/// Decodes a client's frames as they come.
#[derive(Debug, Clone)]
pub struct Decoder {
    state: State,
    head: [u8; 14],
    head_len: usize,
    mask: [u8; 4],
    /// A fragmented data message is under way (its FIN not seen yet).
    in_message: bool,
    /// The frame being read has FIN set.
    fin: bool,
    /// The payload of the control frame being read.
    control: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            state: State::Head,
            head: [0; 14],
            head_len: 0,
            mask: [0; 4],
            in_message: false,
            fin: false,
            control: Vec::new(),
        }
    }
}

/// The size of a frame head starting `b0 b1`: with its extended length
/// and its mask key.
fn head_size(b1: u8) -> usize {
    let ext = match b1 & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    2 + ext + if b1 & 0x80 != 0 { 4 } else { 0 }
}

impl Decoder {
    /// Decodes from `input`: message bytes are appended to `data`. Stops
    /// after a complete control frame (returned, for the caller to act on
    /// before it decodes further). Returns how many bytes of `input` were
    /// used; a violation fails the connection.
    pub fn feed(
        &mut self,
        input: &[u8],
        data: &mut Vec<u8>,
    ) -> Result<(usize, Option<Control>), Violation> {
        let mut used = 0;
        while used < input.len() {
            match self.state {
                State::Head => used += self.take_head(&input[used..])?,
                State::Payload { .. } => {
                    let (n, control) = self.take_payload(&input[used..], data)?;
                    used += n;
                    if control.is_some() {
                        return Ok((used, control));
                    }
                }
            }
        }
        // A frame with no payload may be complete without a byte more.
        if let State::Payload { left: 0, .. } = self.state {
            let (_, control) = self.take_payload(&[], data)?;
            return Ok((used, control));
        }
        Ok((used, None))
    }

    /// Collects head bytes; once the head is whole, checks it.
    fn take_head(&mut self, input: &[u8]) -> Result<usize, Violation> {
        let want = if self.head_len < 2 {
            2
        } else {
            head_size(self.head[1])
        };
        let n = (want - self.head_len).min(input.len());
        self.head[self.head_len..self.head_len + n].copy_from_slice(&input[..n]);
        self.head_len += n;
        if self.head_len == 2 && head_size(self.head[1]) > 2 {
            return Ok(n);
        }
        if self.head_len == want {
            self.start_frame()?;
        }
        Ok(n)
    }

    /// The head is whole: the frame's rules checked, its payload next.
    fn start_frame(&mut self) -> Result<(), Violation> {
        let (b0, b1) = (self.head[0], self.head[1]);
        self.head_len = 0;
        if b0 & 0x70 != 0 {
            return Err(violation("reserved bits set"));
        }
        let op = Op::of(b0 & 0x0f).ok_or(violation("unknown opcode"))?;
        if b1 & 0x80 == 0 {
            return Err(violation("a client frame not masked"));
        }
        let fin = b0 & 0x80 != 0;
        let (len, key_at) = match b1 & 0x7f {
            126 => (
                u64::from(u16::from_be_bytes([self.head[2], self.head[3]])),
                4,
            ),
            127 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.head[2..10]);
                (u64::from_be_bytes(b), 10)
            }
            n => (u64::from(n), 2),
        };
        if len >> 63 != 0 {
            return Err(violation("a length with its top bit set"));
        }
        self.mask.copy_from_slice(&self.head[key_at..key_at + 4]);
        if op.is_control() {
            if !fin || len > MAX_CONTROL as u64 {
                return Err(violation("a fragmented or long control frame"));
            }
            self.control.clear();
        } else if (op == Op::Continuation) != self.in_message {
            return Err(violation("a continuation out of place"));
        }
        self.fin = fin;
        self.state = State::Payload {
            op,
            left: len,
            at: 0,
        };
        Ok(())
    }

    /// Unmasks payload bytes from `input`; a control frame's are held
    /// until it is complete.
    fn take_payload(
        &mut self,
        input: &[u8],
        data: &mut Vec<u8>,
    ) -> Result<(usize, Option<Control>), Violation> {
        let State::Payload { op, left, at } = self.state else {
            return Ok((0, None));
        };
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len());
        let sink = if op.is_control() {
            &mut self.control
        } else {
            &mut *data
        };
        let mask = self.mask;
        sink.extend(
            input[..n]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[(at + i) % 4]),
        );
        let left = left - n as u64;
        if left > 0 {
            self.state = State::Payload {
                op,
                left,
                at: (at + n) % 4,
            };
            return Ok((n, None));
        }
        self.state = State::Head;
        if !op.is_control() {
            self.in_message = !self.fin;
            return Ok((n, None));
        }
        Ok((n, Some(self.control_frame(op)?)))
    }

    /// A complete control frame of `op` with its payload in `control`.
    fn control_frame(&mut self, op: Op) -> Result<Control, Violation> {
        let payload = std::mem::take(&mut self.control);
        Ok(match op {
            Op::Ping => Control::Ping(payload),
            Op::Pong => Control::Pong,
            _ => match payload.len() {
                0 => Control::Close(None),
                1 => return Err(violation("a close frame of one byte")),
                _ => Control::Close(Some(u16::from_be_bytes([payload[0], payload[1]]))),
            },
        })
    }
}

/// How much of `bytes` ends on a whole UTF-8 character: a text frame must
/// not split one (its receiver fails the connection, §8.1), though a
/// backend's reads may. At most 3 bytes are kept back for the next.
pub fn utf8_whole(bytes: &[u8]) -> usize {
    let n = bytes.len();
    // Look at most 3 bytes back for the start of the last character.
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xc0 == 0x80 {
            continue;
        }
        let need = match b {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => return n,
        };
        return if back < need { n - back } else { n };
    }
    n
}

#[cfg(test)]
mod tests;
