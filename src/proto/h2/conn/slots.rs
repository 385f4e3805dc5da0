//! Records by stream id in slots chosen by the id's low bits, with a hash
//! map for ids whose slot is taken.
//!
//! A client opens its streams with increasing odd ids, and at most
//! `max_concurrent_streams` (100) are open at once: the ids alive at one
//! moment are nearly always a run of consecutive odd numbers, and each
//! has a slot of its own in a table of 128. A look-up is then an index
//! and a comparison; a `HashMap` with the cheapest hasher spent about 100
//! instructions on a remove (probing, the control bytes, the move of
//! the entry), and a request made six look-ups and two inserts and
//! removes in the session's two tables. A stream that stays open while
//! 128 newer ones come and go (a long download beside many small
//! answers) finds its slot taken by a newer id and lives in `spill`, a
//! `StreamMap`, until it ends; so does every id while the slots are
//! full. The client chooses the ids, but at most 100 records exist at
//! once, so the worst case is the map's.

use super::StreamMap;
use crate::proto::h2::error::StreamId;

/// Slots the table grows to at most (a power of two above the 100
/// concurrent streams glint allows).
const MAX_SLOTS: usize = 128;
/// Slots of a table's first allocation.
const MIN_SLOTS: usize = 16;

/// Stream id to `V`, as a `HashMap` does (see the module's text).
#[derive(Debug)]
pub struct StreamSlots<V> {
    slots: Vec<Option<(StreamId, V)>>,
    /// Values in `slots`.
    held: usize,
    spill: StreamMap<V>,
}

impl<V> Default for StreamSlots<V> {
    fn default() -> Self {
        StreamSlots {
            slots: Vec::new(),
            held: 0,
            spill: StreamMap::default(),
        }
    }
}

impl<V> StreamSlots<V> {
    /// The slot of `id` (client ids are odd: the bit above the lowest
    /// counts them); past the end while there are no slots.
    #[inline]
    fn index(&self, id: StreamId) -> usize {
        (id >> 1) as usize & self.slots.len().wrapping_sub(1)
    }

    #[inline]
    pub fn get(&self, id: &StreamId) -> Option<&V> {
        match self.slots.get(self.index(*id)) {
            Some(Some((k, v))) if k == id => Some(v),
            _ if self.spill.is_empty() => None,
            _ => self.spill.get(id),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: &StreamId) -> Option<&mut V> {
        let i = self.index(*id);
        match self.slots.get_mut(i) {
            Some(Some((k, v))) if k == id => Some(v),
            _ if self.spill.is_empty() => None,
            _ => self.spill.get_mut(id),
        }
    }

    #[inline]
    pub fn contains_key(&self, id: &StreamId) -> bool {
        self.get(id).is_some()
    }

    /// Puts `v` in for `id`; the value it replaces, if any.
    #[inline]
    pub fn insert(&mut self, id: StreamId, v: V) -> Option<V> {
        let old = if self.spill.is_empty() {
            None
        } else {
            self.spill.remove(&id)
        };
        let i = self.index(id);
        match self.slots.get_mut(i) {
            Some(slot @ None) => {
                *slot = Some((id, v));
                self.held += 1;
                old
            }
            Some(Some((k, held))) if *k == id => Some(std::mem::replace(held, v)),
            _ => self.insert_slow(id, v).or(old),
        }
    }

    /// `id`'s slot is taken by another id, or there are no slots yet:
    /// more slots while the table may grow, else the map.
    #[cold]
    fn insert_slow(&mut self, id: StreamId, v: V) -> Option<V> {
        if self.slots.len() < MAX_SLOTS {
            self.grow();
            let i = self.index(id);
            if let Some(slot @ None) = self.slots.get_mut(i) {
                *slot = Some((id, v));
                self.held += 1;
                return None;
            }
        }
        self.spill.insert(id, v)
    }

    /// Twice the slots (`MIN_SLOTS` at first): the values in slots keep
    /// one each (ids apart in the smaller table are apart in the larger),
    /// and the map's move to theirs where free.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::take(&mut self.slots);
        self.slots.resize_with(n, || None);
        for (k, v) in old.into_iter().flatten() {
            let i = self.index(k);
            self.slots[i] = Some((k, v));
        }
        let spilled: Vec<StreamId> = self.spill.keys().copied().collect();
        for k in spilled {
            let i = self.index(k);
            if self.slots[i].is_none() {
                if let Some(v) = self.spill.remove(&k) {
                    self.slots[i] = Some((k, v));
                    self.held += 1;
                }
            }
        }
    }

    #[inline]
    pub fn remove(&mut self, id: &StreamId) -> Option<V> {
        let i = self.index(*id);
        if let Some(slot) = self.slots.get_mut(i) {
            if matches!(slot, Some((k, _)) if k == id) {
                self.held -= 1;
                return slot.take().map(|(_, v)| v);
            }
        }
        if self.spill.is_empty() {
            None
        } else {
            self.spill.remove(id)
        }
    }

    pub fn len(&self) -> usize {
        self.held + self.spill.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&StreamId, &mut V)> {
        self.slots
            .iter_mut()
            .filter_map(|s| s.as_mut().map(|(k, v)| (&*k, v)))
            .chain(self.spill.iter_mut())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&StreamId, &V)> {
        self.slots
            .iter()
            .filter_map(|s| s.as_ref().map(|(k, v)| (k, v)))
            .chain(self.spill.iter())
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.iter_mut().map(|(_, v)| v)
    }

    pub fn keys(&self) -> impl Iterator<Item = &StreamId> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.as_ref().map(|(k, _)| k))
            .chain(self.spill.keys())
    }

    /// Frees the slots once no value is in them, and the map's room.
    pub fn shrink_to_fit(&mut self) {
        if self.held == 0 {
            self.slots = Vec::new();
        }
        self.spill.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The table against a `BTreeMap` over a run of operations: ids in
    /// order with a few long-lived ones, ids far apart, replaced values.
    #[test]
    fn behaves_as_a_map() {
        let mut t: StreamSlots<u64> = StreamSlots::default();
        let mut m: BTreeMap<u32, u64> = BTreeMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = 1u32;
        for step in 0..20_000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let open: Vec<u32> = m.keys().copied().collect();
            match seed % 10 {
                // A new stream (now and then one far ahead, or an even id).
                0..=3 => {
                    let id = match seed % 97 {
                        0 => next + 2 * (seed % 1000) as u32,
                        1 => next + 1,
                        _ => next,
                    };
                    next = id + 1 + (id & 1);
                    assert_eq!(t.insert(id, step), m.insert(id, step), "insert {id}");
                }
                // One ends: mostly the oldest few, now and then any.
                4..=7 if !open.is_empty() => {
                    let at = if seed.is_multiple_of(13) {
                        (seed as usize / 13) % open.len()
                    } else {
                        (seed as usize / 13) % open.len().min(3)
                    };
                    let id = open[at];
                    assert_eq!(t.remove(&id), m.remove(&id), "remove {id}");
                }
                8 if !open.is_empty() => {
                    let id = open[(seed as usize / 7) % open.len()];
                    assert_eq!(t.insert(id, step), m.insert(id, step), "replace {id}");
                    if let Some(v) = t.get_mut(&id) {
                        *v += 1;
                    }
                    if let Some(v) = m.get_mut(&id) {
                        *v += 1;
                    }
                }
                _ => {
                    let id = (seed % u64::from(next + 3)) as u32;
                    assert_eq!(t.get(&id), m.get(&id), "get {id}");
                    assert_eq!(t.contains_key(&id), m.contains_key(&id));
                    assert_eq!(t.remove(&(next + 400)), None);
                }
            }
            assert_eq!(t.len(), m.len());
            if step.is_multiple_of(500) {
                let mut all: Vec<(u32, u64)> = t.iter_mut().map(|(k, v)| (*k, *v)).collect();
                all.sort_unstable();
                let want: Vec<(u32, u64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(all, want);
                let mut keys: Vec<u32> = t.keys().copied().collect();
                keys.sort_unstable();
                assert_eq!(keys, m.keys().copied().collect::<Vec<_>>());
                t.shrink_to_fit();
            }
        }
        for id in m.keys() {
            assert!(t.remove(id).is_some());
        }
        assert!(t.is_empty());
        t.shrink_to_fit();
        assert!(t.slots.is_empty() && t.get(&1).is_none());
    }

    #[test]
    fn a_long_lived_stream_spills_and_stays_found() {
        let mut t: StreamSlots<u32> = StreamSlots::default();
        t.insert(1, 1);
        for id in (3..1000).step_by(2) {
            t.insert(id, id);
            assert_eq!(t.remove(&id), Some(id));
        }
        assert_eq!(t.get(&1), Some(&1), "its slot was never given away");
        // Held by a newer id: the newcomer spills.
        t.insert(1 + 2 * MAX_SLOTS as u32, 7);
        assert_eq!(t.spill.len(), 1);
        assert_eq!(t.remove(&1), Some(1));
        assert_eq!(t.get(&(1 + 2 * MAX_SLOTS as u32)), Some(&7));
        assert_eq!(t.len(), 1);
        assert!(t.slots.len() <= MAX_SLOTS);
    }
}
