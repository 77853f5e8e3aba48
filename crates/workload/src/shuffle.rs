//! Uniform random offsets without repeats within a pass, as fio's random map gives them (its default): every
//! block of the data set is visited once, in random order, before any is visited again. Without it a buffered
//! random read would re-read about a third of its blocks within one pass, from the page cache, and measure the
//! cache instead of the storage.
//!
//! Constant memory and no allocation: a four-round Feistel network permutes [0, 4^h), the smallest such range
//! holding the `n` units, and indices past `n` are skipped (cycle-walking; fewer than three of every four are).
//! Each pass takes new round keys from the worker's generator, so passes visit the blocks in different orders and
//! a seed still gives the same sequence.

use super::rng::{Rng, mix64};

/// A random order of [0, n), one index at a time, reshuffled after each pass.
#[derive(Debug, Clone)]
pub struct Shuffle {
    n: u64,
    /// Bits of each half of the permuted index; the range permuted is 4^`half_bits`.
    half_bits: u32,
    keys: [u64; 4],
    /// The next index of the pass to permute; at the end of the range, a new pass with new keys.
    next: u64,
}

/// Larger sets (past 2^62 units) are not shuffled: [`Shuffle::new`] gives `None` and the caller draws with
/// repeats.
const MOST_HALF_BITS: u32 = 31;

impl Shuffle {
    /// A shuffle of `n` units (at least one), or `None` past 2^62 units.
    pub fn new(n: u64) -> Option<Shuffle> {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2);
        (half_bits <= MOST_HALF_BITS).then(|| Shuffle { n, half_bits, keys: [0; 4], next: Self::range(half_bits) })
    }

    fn range(half_bits: u32) -> u64 {
        1u64 << (2 * half_bits)
    }

    /// The next unit index in [0, n).
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        loop {
            if self.next == Self::range(self.half_bits) {
                self.next = 0;
                self.keys = [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()];
            }
            let index = self.permute(self.next);
            self.next += 1;
            if index < self.n {
                return index;
            }
        }
    }

    #[inline]
    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.keys {
            let mixed = mix64(right ^ key) & mask;
            (left, right) = (right, left ^ mixed);
        }
        (left << self.half_bits) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_comes_once_per_pass_and_passes_differ() {
        for n in [1u64, 2, 3, 5, 16, 17, 1000, 4097] {
            let mut shuffle = Shuffle::new(n).unwrap();
            let mut rng = Rng::new(7);
            let first: Vec<u64> = (0..n).map(|_| shuffle.next(&mut rng)).collect();
            let second: Vec<u64> = (0..n).map(|_| shuffle.next(&mut rng)).collect();
            for pass in [&first, &second] {
                let mut sorted = pass.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n = {n}");
            }
            if n >= 16 {
                assert_ne!(first, second, "n = {n}: a new pass has a new order");
                assert_ne!(first, (0..n).collect::<Vec<_>>(), "n = {n}: the order is not the identity");
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_order_and_huge_sets_are_not_shuffled() {
        let draw = |seed| {
            let mut shuffle = Shuffle::new(10_000).unwrap();
            let mut rng = Rng::new(seed);
            (0..100).map(|_| shuffle.next(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        assert!(Shuffle::new(1 << 62).is_some());
        assert!(Shuffle::new((1 << 62) + 1).is_none());
    }
}
