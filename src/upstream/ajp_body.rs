//! An AJP/1.3 request body on its way to the container: the container
//! reads the first data packet unasked, then one for each GET_BODY_CHUNK
//! it sends, so glint never sends a body byte it did not ask for (on a
//! connection the container reuses, such bytes would be read as the next
//! request: request smuggling).

use std::collections::VecDeque;

use super::ajp13;

/// Most GET_BODY_CHUNKs a container may have unanswered (Tomcat sends one
/// and waits for its packet); more is a broken backend.
const MAX_ASKS: usize = 16;

/// The body bytes waiting for the container, and its asks.
#[derive(Debug, Default)]
pub struct AjpBody {
    /// Body bytes from the client not yet in a packet.
    raw: Vec<u8>,
    /// The packets the container waits for, each with the most bytes it
    /// takes; the first may be the one it reads unasked.
    asks: VecDeque<usize>,
}

impl AjpBody {
    /// The packet the container reads with the request, unasked.
    pub fn first_packet(&mut self) {
        self.asks.push_back(ajp13::MAX_DATA);
    }

    /// Body bytes from the client.
    pub fn push(&mut self, data: &[u8]) {
        self.raw.extend_from_slice(data);
    }

    /// A GET_BODY_CHUNK for at most `n` bytes.
    pub fn ask(&mut self, n: usize) -> Result<(), String> {
        if self.asks.len() >= MAX_ASKS {
            return Err(format!("{MAX_ASKS} GET_BODY_CHUNKs unanswered"));
        }
        self.asks.push_back(n);
        Ok(())
    }

    /// Appends to `out` a data packet for each ask that bytes can answer;
    /// once the body is `over`, an ask with no bytes left gets the empty
    /// packet, as lighttpd answers it.
    pub fn pump(&mut self, over: bool, out: &mut Vec<u8>) {
        while let Some(&most) = self.asks.front() {
            let n = self.raw.len().min(most).min(ajp13::MAX_DATA);
            if n == 0 && !over {
                break;
            }
            ajp13::data_packet(&self.raw[..n], out);
            self.raw.drain(..n);
            self.asks.pop_front();
        }
    }

    /// Body bytes held, not yet in a packet.
    pub fn waiting(&self) -> usize {
        self.raw.len()
    }

    /// Bytes wait, and the container asked for none.
    pub fn awaits_ask(&self) -> bool {
        !self.raw.is_empty() && self.asks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data packets in `out`: the bytes each carries.
    fn packets(mut out: &[u8]) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while out.len() >= 4 {
            let len = usize::from(u16::from_be_bytes([out[2], out[3]]));
            let p = &out[4..4 + len];
            v.push(if p.is_empty() {
                Vec::new()
            } else {
                p[2..].to_vec()
            });
            out = &out[4 + len..];
        }
        v
    }

    #[test]
    fn bytes_go_only_as_asked() {
        let mut b = AjpBody::default();
        let mut out = Vec::new();
        b.first_packet();
        b.push(&[1; 20_000]);
        b.pump(false, &mut out);
        assert_eq!(
            packets(&out),
            [vec![1; ajp13::MAX_DATA]],
            "the first, unasked"
        );
        assert!(b.awaits_ask());
        out.clear();
        b.pump(false, &mut out);
        assert!(out.is_empty(), "nothing unasked");
        b.ask(100).unwrap();
        b.pump(false, &mut out);
        assert_eq!(packets(&out), [vec![1; 100]], "no more than asked");
        out.clear();
        // An ask before the bytes: answered when they come.
        b.ask(ajp13::MAX_DATA).unwrap();
        b.ask(ajp13::MAX_DATA).unwrap();
        b.pump(false, &mut out);
        assert_eq!(packets(&out).len(), 2);
        assert_eq!(b.waiting(), 0, "20,000 bytes in four packets");
        out.clear();
        b.ask(10).unwrap();
        b.pump(false, &mut out);
        assert!(out.is_empty(), "no bytes, the body not over: wait");
        b.pump(true, &mut out);
        assert_eq!(
            packets(&out),
            [Vec::<u8>::new()],
            "past the end: the empty packet"
        );
    }

    #[test]
    fn a_container_that_keeps_asking_is_broken() {
        let mut b = AjpBody::default();
        for _ in 0..MAX_ASKS {
            b.ask(1).unwrap();
        }
        assert!(b.ask(1).is_err());
    }
}
