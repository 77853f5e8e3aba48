//! fio's verify_backlog: after every N writes a worker has completed, it reads those N blocks back and checks
//! them, before it writes more. A fixed ring of recent writes per worker: nothing is allocated per I/O.

/// One write to read back: (file, offset, length), the worker's own file index.
pub type Written = (u32, u64, u32);

pub struct Backlog {
    every: usize,
    /// Writes completed since the last read-back began.
    done: Vec<Written>,
    /// Writes being read back, last first.
    to_read: Vec<Written>,
}

impl Backlog {
    /// A backlog that reads back every `every` writes; `depth` is the worker's queue depth (writes still in
    /// flight when a read-back begins complete into the next round).
    pub fn new(every: u64, depth: usize) -> Backlog {
        let every = usize::try_from(every).unwrap_or(usize::MAX).max(1);
        Backlog { every, done: Vec::with_capacity(every + depth), to_read: Vec::with_capacity(every + depth) }
    }

    /// A write completed.
    pub fn written(&mut self, write: Written) {
        if self.done.len() < self.done.capacity() {
            self.done.push(write);
        }
        if self.done.len() >= self.every && self.to_read.is_empty() {
            std::mem::swap(&mut self.done, &mut self.to_read);
            self.to_read.reverse();
        }
    }

    /// The next read-back to issue before any new operation, if a read-back is under way.
    pub fn next_read(&mut self) -> Option<Written> {
        self.to_read.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_n_writes_are_read_back_in_order() {
        let mut b = Backlog::new(3, 2);
        b.written((0, 0, 4096));
        b.written((0, 4096, 4096));
        assert_eq!(b.next_read(), None, "not yet three");
        b.written((0, 8192, 4096));
        b.written((1, 0, 4096)); // completed while the read-back runs: the next round's
        assert_eq!(b.next_read(), Some((0, 0, 4096)));
        assert_eq!(b.next_read(), Some((0, 4096, 4096)));
        assert_eq!(b.next_read(), Some((0, 8192, 4096)));
        assert_eq!(b.next_read(), None);
        b.written((1, 4096, 4096));
        b.written((1, 8192, 4096));
        assert_eq!(b.next_read(), Some((1, 0, 4096)));
    }
}
