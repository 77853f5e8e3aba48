//! A fixed-size set of bits shared between threads: which files (or directories) exist, and which are being
//! worked on. One bit per entry — 125 KB per million files — and lock free: a thread claims a file with one
//! `fetch_or`, so two threads never work on the same file at once.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct BitSet {
    words: Box<[AtomicU64]>,
    len: u64,
}

impl BitSet {
    /// `len` bits, all `value`.
    pub fn new(len: u64, value: bool) -> BitSet {
        let fill = if value { u64::MAX } else { 0 };
        let words = (0..len.div_ceil(64)).map(|_| AtomicU64::new(fill)).collect();
        let set = BitSet { words, len };
        if value && !len.is_multiple_of(64) {
            // Bits past the end stay clear, so searches never find them.
            set.words[set.words.len() - 1].store((1u64 << (len % 64)) - 1, Ordering::Relaxed);
        }
        set
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, i: u64) -> bool {
        self.words[(i / 64) as usize].load(Ordering::Acquire) & (1 << (i % 64)) != 0
    }

    #[inline]
    pub fn set(&self, i: u64, value: bool) {
        let word = &self.words[(i / 64) as usize];
        if value {
            word.fetch_or(1 << (i % 64), Ordering::AcqRel);
        } else {
            word.fetch_and(!(1 << (i % 64)), Ordering::AcqRel);
        }
    }

    /// Sets bit `i`; true when this call set it (it was clear).
    #[inline]
    pub fn claim(&self, i: u64) -> bool {
        self.words[(i / 64) as usize].fetch_or(1 << (i % 64), Ordering::AcqRel) & (1 << (i % 64)) == 0
    }

    /// Bits set.
    pub fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.load(Ordering::Relaxed).count_ones())).sum()
    }

    /// The first index at or after `start` (wrapping around once) whose bit equals `value`, skipping whole
    /// words at a time.
    pub fn find(&self, start: u64, value: bool) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let start = start % self.len;
        let words = self.words.len() as u64;
        for step in 0..=words {
            let w = (start / 64 + step) % words;
            let mut bits = self.words[w as usize].load(Ordering::Acquire);
            if !value {
                bits = !bits;
            }
            if step == 0 {
                bits &= u64::MAX << (start % 64);
            }
            if w == words - 1 && !self.len.is_multiple_of(64) {
                bits &= (1u64 << (self.len % 64)) - 1;
            }
            if bits != 0 {
                let i = w * 64 + u64::from(bits.trailing_zeros());
                // A wrap back into the starting word may find bits before `start`: that is still "after, wrapping".
                return Some(i);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_wraps_and_respects_the_length() {
        let set = BitSet::new(130, false);
        assert_eq!(set.find(0, true), None);
        assert_eq!(set.find(5, false), Some(5));
        set.set(3, true);
        set.set(129, true);
        assert_eq!(set.find(4, true), Some(129));
        assert_eq!(set.find(130 + 4, true), Some(129));
        set.set(129, false);
        assert_eq!(set.find(4, true), Some(3));
        assert!(set.claim(7) && !set.claim(7));
        assert_eq!(set.count(), 2);
        let full = BitSet::new(70, true);
        assert_eq!(full.count(), 70);
        assert_eq!(full.find(0, false), None);
    }
}
