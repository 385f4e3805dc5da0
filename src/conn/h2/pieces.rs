//! A stream's queue of body pieces, with its first piece held inline.
//!
//! Most answers are one piece (a small file from the cache, a status
//! page): a `VecDeque` allocated its buffer for that one piece and freed
//! it once framed, a malloc and a free per request (with the growth from
//! no capacity, about 500 of a small HTTP/2 request's 11,000
//! instructions). The queue spills into the `VecDeque` only from its
//! second piece on.

use std::collections::VecDeque;

/// Body pieces in order (a stream's are its `Chunk`s): `first`, then `rest`. `rest` is empty whenever
/// `first` is `None`; it is boxed (allocated once a stream has a second
/// piece) to keep a [`super::stream::Task`] small, which moves in and out
/// of the task table whole.
#[derive(Debug)]
pub struct Pieces<T> {
    first: Option<T>,
    // Boxed on purpose: 8 bytes in the task instead of 32 (see above).
    #[allow(clippy::box_collection)]
    rest: Option<Box<VecDeque<T>>>,
}

impl<T> Default for Pieces<T> {
    fn default() -> Self {
        Pieces {
            first: None,
            rest: None,
        }
    }
}

impl<T> Pieces<T> {
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.as_ref().map_or(0, |r| r.len())
    }

    pub fn front_mut(&mut self) -> Option<&mut T> {
        self.first.as_mut()
    }

    pub fn back_mut(&mut self) -> Option<&mut T> {
        match &mut self.rest {
            Some(r) if !r.is_empty() => r.back_mut(),
            _ => self.first.as_mut(),
        }
    }

    pub fn push_back(&mut self, c: T) {
        if self.first.is_none() {
            self.first = Some(c);
        } else {
            self.rest.get_or_insert_with(Box::default).push_back(c);
        }
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let front = self.first.take();
        self.first = self.rest.as_mut().and_then(|r| r.pop_front());
        front
    }

    /// Calls `f` with each piece in order: the inline one, then the
    /// spilled ones (no iterator chain to step through).
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        if let Some(c) = &self.first {
            f(c);
            if let Some(r) = &self.rest {
                r.iter().for_each(f);
            }
        }
    }

    pub fn clear(&mut self) {
        self.first = None;
        if let Some(r) = &mut self.rest {
            r.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::h2::stream::Chunk;

    fn mem(b: &[u8]) -> Chunk {
        Chunk::Mem(b.to_vec(), 0)
    }

    fn bytes(c: &Chunk) -> &[u8] {
        match c {
            Chunk::Mem(v, _) => v,
            _ => b"",
        }
    }

    fn all(p: &Pieces<Chunk>) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        p.for_each(|c| v.push(bytes(c).to_vec()));
        v
    }

    #[test]
    fn in_order_inline_then_spilled() {
        let mut p: Pieces<Chunk> = Pieces::default();
        assert!(p.is_empty() && p.front_mut().is_none() && p.back_mut().is_none());
        p.push_back(mem(b"a"));
        assert_eq!(
            (p.len(), p.rest.is_none()),
            (1, true),
            "one piece: no buffer"
        );
        assert_eq!(p.back_mut().map(|c| bytes(c).to_vec()), Some(b"a".to_vec()));
        p.push_back(mem(b"b"));
        p.push_back(mem(b"c"));
        assert_eq!(p.len(), 3);
        assert_eq!(p.back_mut().map(|c| bytes(c).to_vec()), Some(b"c".to_vec()));
        assert_eq!(all(&p), [b"a", b"b", b"c"]);
        assert_eq!(
            p.pop_front().map(|c| bytes(&c).to_vec()),
            Some(b"a".to_vec())
        );
        assert_eq!(
            p.front_mut().map(|c| bytes(c).to_vec()),
            Some(b"b".to_vec())
        );
        p.push_back(mem(b"d"));
        assert_eq!(all(&p), [b"b", b"c", b"d"]);
        p.clear();
        assert!(p.is_empty() && p.pop_front().is_none());
        assert_eq!(p.len(), 0);
        p.push_back(mem(b"e"));
        assert_eq!(
            p.pop_front().map(|c| bytes(&c).to_vec()),
            Some(b"e".to_vec())
        );
        assert!(p.is_empty());
    }
}
