//! The table of a session's streams (by id, in [`StreamSlots`]), with
//! what all of them hold queued kept up to date as tasks go in and out of
//! it.
//!
//! Every change to a task's queue is made while the task is out of the
//! table (`remove`, change, `insert`), so the totals are settled at those
//! two moments: what the connection holds (memory, distinct files) and
//! which streams wait only for their END_STREAM are known without a walk
//! over all streams. The client chooses how many streams are open; a walk
//! per request or per write made each request's cost grow with them (100
//! concurrent streams of a 25 KB file cost a quarter more instructions per
//! request than 10 did, most of it summing and sorting the queues).

use std::fs::File;

use super::stream::{Chunk, Task};
use crate::proto::h2::conn::StreamSlots;

/// The session's streams and their queues' totals.
#[derive(Debug, Default)]
pub struct Tasks {
    map: StreamSlots<Task>,
    /// Memory bytes queued on the streams in `map`.
    mem: usize,
    /// Queued file pieces per file (by the address of its shared
    /// descriptor): ranges of one cached file hold one descriptor. A
    /// list: new requests wait once it holds `MAX_QUEUED_FILES`, so it
    /// stays short, and a scan of it costs less than hashing.
    files: Vec<(*const File, usize)>,
    /// Streams that may wait only for their END_STREAM (see
    /// [`Tasks::take_due`]); an entry may be stale or repeated.
    due: Vec<u32>,
}

/// A task whose body is all out and whose END_STREAM (or reset) is due.
fn is_due(t: &Task) -> bool {
    t.complete && !t.ended && t.pieces.is_empty()
}

fn file_of(c: &Chunk) -> Option<*const File> {
    match c {
        Chunk::File { file, .. } => Some(std::rc::Rc::as_ptr(file)),
        _ => None,
    }
}

/// Calls `f` with the file of each of a task's file pieces; `task.files`
/// counts them, and most answers have none: their queue is not walked.
/// (A callback, not an iterator: the chain of the inline piece and the
/// spilled queue was not inlined, about 400 instructions per DATA frame
/// of a file answer.)
#[inline]
fn for_file_pieces(task: &Task, mut f: impl FnMut(*const File)) {
    if task.files > 0 {
        task.pieces.for_each(|c| {
            if let Some(p) = file_of(c) {
                f(p);
            }
        });
    }
}

/// Counts the task's file pieces in `files`.
fn count_files(files: &mut Vec<(*const File, usize)>, task: &Task) {
    for_file_pieces(task, |f| match files.iter_mut().find(|(p, _)| *p == f) {
        Some((_, n)) => *n += 1,
        None => files.push((f, 1)),
    });
}

/// Takes the task's file pieces off the counts in `files`.
fn uncount_files(files: &mut Vec<(*const File, usize)>, task: &Task) {
    for_file_pieces(task, |f| {
        if let Some(i) = files.iter().position(|(p, _)| *p == f) {
            files[i].1 -= 1;
            if files[i].1 == 0 {
                files.swap_remove(i);
            }
        }
    });
}

impl Tasks {
    pub fn insert(&mut self, stream: u32, task: Task) {
        self.mem += task.mem;
        count_files(&mut self.files, &task);
        if is_due(&task) {
            self.due.push(stream);
        }
        if let Some(old) = self.map.insert(stream, task) {
            // Never happens (a stream is inserted once at a time); keep
            // the totals right if it did.
            self.forget(&old);
        }
    }

    pub fn remove(&mut self, stream: &u32) -> Option<Task> {
        let task = self.map.remove(stream)?;
        self.forget(&task);
        Some(task)
    }

    fn forget(&mut self, task: &Task) {
        self.mem = self.mem.saturating_sub(task.mem);
        uncount_files(&mut self.files, task);
    }

    /// Runs `f` on the task of `stream` where it lies, then brings the
    /// totals up to date with what `f` changed (`None`: no such task).
    /// Framing a DATA frame took the task out and put it back: two moves
    /// of it and a remove and an insert per frame of a larger answer.
    pub fn update<R>(&mut self, stream: u32, f: impl FnOnce(&mut Task) -> R) -> Option<R> {
        let Tasks {
            map,
            mem,
            files,
            due,
        } = self;
        let task = map.get_mut(&stream)?;
        *mem = mem.saturating_sub(task.mem);
        uncount_files(files, task);
        let r = f(task);
        *mem += task.mem;
        count_files(files, task);
        if is_due(task) {
            due.push(stream);
        }
        Some(r)
    }

    /// Every task, for what does not change its queue (time-outs).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&u32, &mut Task)> {
        self.map.iter_mut()
    }

    pub fn streams(&self) -> impl Iterator<Item = u32> + '_ {
        self.map.keys().copied()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Memory bytes queued on all streams in the table.
    pub fn mem(&self) -> usize {
        self.mem
    }

    /// Descriptors the queued file ranges hold.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Streams whose END_STREAM may be due, each once, in stream order;
    /// the caller checks each again when it takes the task out.
    pub fn take_due(&mut self) -> Vec<u32> {
        let mut due = std::mem::take(&mut self.due);
        due.sort_unstable();
        due.dedup();
        due.retain(|s| self.map.get(s).is_some_and(is_due));
        due
    }

    /// Gives back the list [`Tasks::take_due`] returned, emptied, so that
    /// its memory is reused.
    pub fn reuse_due(&mut self, mut v: Vec<u32>) {
        if self.due.is_empty() {
            v.clear();
            self.due = v;
        }
    }

    /// Frees what an empty table still holds.
    pub fn shrink_to_fit(&mut self) {
        self.map.shrink_to_fit();
        self.files = Vec::new();
        self.due = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn task_with(mem: &[u8], files: &[&Rc<File>]) -> Task {
        let mut t = Task::new(0, true, false);
        t.push_mem(mem);
        for f in files {
            t.push_file(Rc::clone(f), 0, 10);
        }
        t
    }

    #[test]
    fn totals_follow_tasks_in_and_out() {
        let path = std::env::temp_dir().join(format!("glint-h2-tasks-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").expect("write");
        let a = Rc::new(File::open(&path).expect("open"));
        let b = Rc::new(File::open(&path).expect("open"));
        let _ = std::fs::remove_file(&path);

        let mut tasks = Tasks::default();
        tasks.insert(1, task_with(b"hello", &[&a]));
        tasks.insert(3, task_with(b"world!", &[&a, &b]));
        assert_eq!(tasks.mem(), 11);
        assert_eq!(
            tasks.files(),
            2,
            "two descriptors, one of them queued twice"
        );

        // Out of the table, a task's queue changes without the table.
        let mut t = tasks.remove(&3).expect("task 3");
        assert_eq!((tasks.mem(), tasks.files()), (5, 1));
        t.drop_pieces();
        t.complete = true;
        tasks.insert(3, t);
        assert_eq!((tasks.mem(), tasks.files()), (5, 1));
        assert_eq!(tasks.take_due(), [3], "complete with nothing queued");
        assert!(tasks.take_due().is_empty(), "taken once");

        // Changed in place, the totals follow as well.
        let files = tasks.update(1, |t| {
            t.push_mem(b"!!");
            t.push_file(Rc::clone(&b), 0, 10);
            t.files
        });
        assert_eq!(files, Some(2));
        assert_eq!((tasks.mem(), tasks.files()), (7, 2));
        assert_eq!(tasks.update(1, |t| t.drop_pieces()), Some(7));
        assert_eq!((tasks.mem(), tasks.files()), (0, 0));
        assert!(tasks.update(9, |_| ()).is_none());

        assert!(tasks.remove(&1).is_some());
        assert!(tasks.remove(&3).is_some());
        assert_eq!((tasks.mem(), tasks.files(), tasks.len()), (0, 0, 0));
        assert!(tasks.remove(&3).is_none());
    }
}
