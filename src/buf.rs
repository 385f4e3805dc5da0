//! Buffers that outlive a request: a connection's input buffer, and the
//! pool idle connections return theirs to (one request path allocates
//! nothing it can reuse).

/// Size of a connection's input buffer: a whole request head
/// (`server.max-request-field-size`, 8 KiB by default) plus room for
/// pipelined requests behind it.
pub const INPUT_BUF: usize = 16 * 1024;

/// Pooled buffers kept for reuse; beyond this, freed buffers go back to the allocator.
const POOL_MAX: usize = 128;
/// Output buffers that grew past this (multipart answers, long pipelines) are not pooled.
const POOL_MAX_OUT_CAPACITY: usize = 64 * 1024;

/// An input buffer: `data[start..end]` holds unconsumed bytes. (Small
/// inline: every connection's slot holds one, taken or not.)
#[derive(Debug)]
pub struct InBuf {
    data: Box<[u8; INPUT_BUF]>,
    start: u32,
    end: u32,
}

/// `INPUT_BUF` as an offset (it fits: 16 KiB).
const CAP: u32 = INPUT_BUF as u32;

impl InBuf {
    pub fn new() -> InBuf {
        // (Made on the heap: an array this size is not built on the stack.)
        let data = vec![0u8; INPUT_BUF]
            .into_boxed_slice()
            .try_into()
            .unwrap_or_else(|_| Box::new([0u8; INPUT_BUF]));
        InBuf {
            data,
            start: 0,
            end: 0,
        }
    }

    /// The bytes not consumed yet.
    pub fn pending(&self) -> &[u8] {
        &self.data[self.start as usize..self.end as usize]
    }

    pub fn consume(&mut self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.start = self.start.saturating_add(n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Drops every byte not consumed yet.
    pub fn consume_all(&mut self) {
        self.clear();
    }

    /// Free space at the end, moving pending bytes to the front when that helps.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.end == CAP && self.start > 0 {
            self.data
                .copy_within(self.start as usize..self.end as usize, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.data[self.end as usize..]
    }

    /// `n` bytes were read into [`InBuf::spare`].
    pub fn filled(&mut self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.end = self.end.saturating_add(n).min(CAP);
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Bytes not consumed yet.
    pub fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// A read has room (at the end, or once pending bytes move to the front).
    pub fn has_spare(&self) -> bool {
        self.end < CAP || self.start > 0
    }

    /// Forgets any unconsumed bytes (before the buffer goes back to the pool).
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }
}

impl Default for InBuf {
    fn default() -> Self {
        Self::new()
    }
}

/// Buffers returned by idle connections.
#[derive(Default)]
pub struct Pool {
    ins: Vec<InBuf>,
    outs: Vec<Vec<u8>>,
}

impl Pool {
    pub fn take_in(&mut self) -> InBuf {
        self.ins.pop().unwrap_or_default()
    }

    pub fn put_in(&mut self, mut b: InBuf) {
        // A closed connection may leave half a request behind: never hand it on.
        b.clear();
        if self.ins.len() < POOL_MAX {
            self.ins.push(b);
        }
    }

    pub fn take_out(&mut self) -> Vec<u8> {
        self.outs.pop().unwrap_or_else(|| Vec::with_capacity(4096))
    }

    pub fn put_out(&mut self, mut b: Vec<u8>) {
        if self.outs.len() < POOL_MAX && b.capacity() <= POOL_MAX_OUT_CAPACITY {
            b.clear();
            self.outs.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_buffer_consumes_refills_and_moves_what_is_pending_to_the_front() {
        let mut b = InBuf::new();
        assert!(b.is_empty() && b.has_spare());
        assert_eq!(b.spare().len(), INPUT_BUF);
        b.spare()[..5].copy_from_slice(b"hello");
        b.filled(5);
        assert_eq!(b.pending(), b"hello");
        b.consume(2);
        assert_eq!((b.pending(), b.len()), (&b"llo"[..], 3));
        // Filled to the end: the next spare moves "llo..." to the front.
        let n = b.spare().len();
        b.spare().fill(b'x');
        b.filled(n + 100); // more than the room: bounded
        assert!(
            b.has_spare(),
            "room once the consumed 2 bytes are given back"
        );
        assert_eq!(b.len(), INPUT_BUF - 2);
        assert_eq!(b.spare().len(), 2);
        assert_eq!(&b.pending()[..4], b"llox");
        b.consume(usize::MAX);
        assert!(b.is_empty());
        assert_eq!(b.spare().len(), INPUT_BUF, "emptied: back to the start");
    }
}
