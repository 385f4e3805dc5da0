//! RFC 9218 priorities: the `priority` field and PRIORITY_UPDATE values
//! (`u=0..7`, `i`), and the scheduler that picks which ready stream sends
//! its next DATA frame.
//!
//! The scheduler serves the lowest urgency first and, among streams of one
//! urgency, takes them in turn one frame each, so a large download shares
//! the connection with the small responses that arrive beside it instead
//! of holding it until it ends. `incremental` is kept and reported but does
//! not change the order: round-robin is fair to both kinds.

use std::collections::VecDeque;

use crate::proto::h2::error::StreamId;
use crate::syntax::trim_ows as trim;

/// Urgency levels 0 (most urgent) to 7 (RFC 9218 §4.1).
pub const URGENCY_LEVELS: usize = 8;

/// A stream's priority; `Default` is RFC 9218's `u=3`, not incremental.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    pub urgency: u8,
    pub incremental: bool,
}

impl Default for Priority {
    fn default() -> Priority {
        Priority {
            urgency: 3,
            incremental: false,
        }
    }
}

impl Priority {
    /// Applies a Structured Fields dictionary (RFC 8941 §3.2) such as
    /// `u=1, i` on top of `self`. Members this layer does not know, and
    /// values out of range or of the wrong type, are ignored (RFC 9218
    /// §4: a parameter that does not parse is as if absent).
    pub fn apply(mut self, value: &[u8]) -> Priority {
        for member in value.split(|&b| b == b',') {
            let member = trim(member);
            // Parameters after ';' say nothing RFC 9218 uses.
            let member = member.split(|&b| b == b';').next().unwrap_or(&[]);
            let (key, val) = match member.iter().position(|&b| b == b'=') {
                Some(i) => (&member[..i], Some(&member[i + 1..])),
                None => (member, None),
            };
            match (trim(key), val.map(trim)) {
                (b"u", Some([d @ b'0'..=b'7'])) => self.urgency = d - b'0',
                (b"i", None | Some(b"?1")) => self.incremental = true,
                (b"i", Some(b"?0")) => self.incremental = false,
                _ => {}
            }
        }
        self
    }
}

/// One queue of ready streams per urgency. Entries go stale when a stream
/// stops being ready or changes urgency; the caller's `is_current`
/// check drops them as they come to the front, so no removal needs a scan.
#[derive(Debug, Default)]
pub struct Scheduler {
    queues: [VecDeque<StreamId>; URGENCY_LEVELS],
    /// The stream `next` chose last, with its urgency: having taken its
    /// turn, it belongs at the back of its queue, and goes there when the
    /// scheduler is next used (`push` puts it there first, so the order
    /// is the same). By then it is often stale (its frame ended the
    /// answer): it is then dropped, where putting it back at once cost a
    /// push, a pop and a look-up of its record per small answer.
    last: Option<(StreamId, u8)>,
}

/// What the scheduler needs to know of a queued stream when it reaches the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidate {
    /// Ready, in this queue, and has window: send now, and keep its turn.
    Send,
    /// Ready and in this queue, but its stream window is empty: keep it queued.
    Blocked,
    /// Gone, not ready, or queued at another urgency: drop this entry.
    Stale,
}

impl Scheduler {
    /// Queues `stream` at `urgency`; the caller makes sure it is not queued twice.
    pub fn push(&mut self, stream: StreamId, urgency: u8) {
        if let Some((s, u)) = self.last.take() {
            self.queues[u as usize].push_back(s);
        }
        let u = (urgency as usize).min(URGENCY_LEVELS - 1);
        self.queues[u].push_back(stream);
    }

    /// The next stream to send, lowest urgency first, in turn within one.
    /// `check(stream, urgency)` classifies a queued entry.
    pub fn next(&mut self, mut check: impl FnMut(StreamId, u8) -> Candidate) -> Option<StreamId> {
        if let Some((s, u)) = self.last.take() {
            // At the back of its queue, where it would be checked last
            // of that queue's entries: checked now, kept unless stale.
            if check(s, u) != Candidate::Stale {
                self.queues[u as usize].push_back(s);
            }
        }
        for (u, q) in self.queues.iter_mut().enumerate() {
            // Each entry is looked at once: blocked ones go to the back.
            for _ in 0..q.len() {
                let Some(s) = q.pop_front() else { break };
                match check(s, u as u8) {
                    Candidate::Send => {
                        self.last = Some((s, u as u8));
                        return Some(s);
                    }
                    Candidate::Blocked => q.push_back(s),
                    Candidate::Stale => {}
                }
            }
        }
        None
    }

    /// Forgets every entry and frees the queues: for when no stream is
    /// left, so every entry is stale.
    pub fn compact(&mut self) {
        self.last = None;
        for q in &mut self.queues {
            *q = VecDeque::new();
        }
    }

    /// Entries queued, stale ones included (for tests and bounds).
    pub fn len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum::<usize>() + usize::from(self.last.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[rustfmt::skip]
    fn parse_priority_values() {
        let p = |urgency, incremental| Priority { urgency, incremental };
        let cases: &[(&str, &[u8], Priority)] = &[
            ("empty is the default", b"", p(3, false)),
            ("urgency only", b"u=0", p(0, false)),
            ("urgency and incremental", b"u=5, i", p(5, true)),
            ("incremental true written out", b"i=?1", p(3, true)),
            ("incremental false written out", b"u=1,i=?0", p(1, false)),
            ("urgency 8 is out of range: ignored", b"u=8", p(3, false)),
            ("urgency not an integer: ignored", b"u=x, i", p(3, true)),
            ("negative urgency: ignored", b"u=-1", p(3, false)),
            ("two digits: ignored", b"u=01", p(3, false)),
            ("unknown members ignored", b"foo=bar, u=2, baz", p(2, false)),
            ("parameters after ; ignored", b"u=4;x=1, i;y", p(4, true)),
            ("whitespace around members", b"  u=6 ,\ti ", p(6, true)),
            ("i with a token value: ignored", b"i=yes", p(3, false)),
            ("last one wins", b"u=1, u=2", p(2, false)),
        ];
        for (why, v, want) in cases {
            assert_eq!(Priority::default().apply(v), *want, "{why}");
        }
        // Applying on top of a previous value keeps what is not said.
        assert_eq!(p(1, true).apply(b"u=2"), p(2, true));
    }

    #[test]
    fn lower_urgency_first_and_turns_within_one() {
        let mut s = Scheduler::default();
        // 1 is a big download at u=3; 3 and 5 arrive later at u=3; 7 at u=1.
        for id in [1, 3, 5] {
            s.push(id, 3);
        }
        s.push(7, 1);
        let mut ready = vec![1, 3, 5, 7];
        let mut order = Vec::new();
        for _ in 0..7 {
            let r = ready.clone();
            let Some(id) = s.next(|id, _| {
                if r.contains(&id) {
                    Candidate::Send
                } else {
                    Candidate::Stale
                }
            }) else {
                break;
            };
            order.push(id);
            // 7 has one frame, 3 and 5 two each; 1 never ends here.
            let sent = order.iter().filter(|&&x| x == id).count();
            if (id == 7 && sent == 1) || ((id == 3 || id == 5) && sent == 2) {
                ready.retain(|&x| x != id);
            }
        }
        assert_eq!(order, [7, 1, 3, 5, 1, 3, 5]);
    }

    #[test]
    fn blocked_streams_keep_their_place_and_stale_ones_go() {
        let mut s = Scheduler::default();
        s.push(1, 3);
        s.push(3, 3);
        s.push(5, 3);
        // 1 has no window, 3 is stale: 5 is chosen, 1 stays, 3 is dropped.
        let got = s.next(|id, _| match id {
            1 => Candidate::Blocked,
            3 => Candidate::Stale,
            _ => Candidate::Send,
        });
        assert_eq!(got, Some(5));
        assert_eq!(s.len(), 2);
        // Everything blocked: nothing, and nothing lost.
        assert_eq!(s.next(|_, _| Candidate::Blocked), None);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn the_last_chosen_goes_back_before_a_newcomer_or_goes_when_stale() {
        let mut s = Scheduler::default();
        s.push(1, 3);
        assert_eq!(s.next(|_, _| Candidate::Send), Some(1));
        // 3 becomes ready after 1's frame: 1 keeps its place before it.
        s.push(3, 3);
        let mut order = Vec::new();
        for _ in 0..4 {
            order.extend(s.next(|_, _| Candidate::Send));
        }
        assert_eq!(order, [1, 3, 1, 3]);
        // 3's frame ended its stream: dropped at the next turn.
        let got = s.next(|id, _| match id {
            3 => Candidate::Stale,
            _ => Candidate::Send,
        });
        assert_eq!((got, s.len()), (Some(1), 1));
        assert_eq!(s.next(|_, _| Candidate::Stale), None);
        assert!(s.is_empty());
    }
}
