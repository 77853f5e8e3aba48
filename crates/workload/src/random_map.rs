//! fio's random map for block-size mixes: which units of a pass an operation has already covered, so that a
//! random operation starts on a unit not yet covered and is trimmed where it would run into covered ones (fio's
//! io_u.c `mark_random_map`: `nr_blocks = axmap_set_nr(...)`, then "if ((nr_blocks * min_bs) < buflen)
//! io_u->buflen = nr_blocks * min_bs"). With `bssplit=4k/50:64k/50` fio's random reads average about 20 KB,
//! not the 34 KB the split alone gives: the later operations of a pass find shorter gaps.
//!
//! As fio's tausworthe generator with its map: a unit is drawn uniformly, and a covered one is replaced by the
//! next one not covered after it, wrapping to the start (`axmap_next_free`); with none left the pass is over
//! (fio resets the file's map) and a new one starts at the unit drawn. One bit per unit (the smallest block size) and a bit per
//! 64 of them, allocated once when the worker's source is built; nothing per operation.
//!
//! Must not: know about files and regions.

use super::blocksize::BlockSizes;
use super::source::WorkloadConfig;

/// The units of one pass an operation has covered.
#[derive(Debug, Clone)]
pub struct RandomMap {
    /// One bit per unit: covered.
    bits: Vec<u64>,
    /// One bit per word of `bits`: every unit of it covered (fio's axmap keeps levels for the same search).
    full: Vec<u64>,
    units: u64,
}

impl RandomMap {
    /// A map for fio's trimming where it applies: uniform random access (`uniform`: the source shuffles) over
    /// one region, with a split or range of sizes (fio's bssplit, bsrange; not one fixed size per direction)
    /// above the `unit`, which is whole units of the alignment.
    pub(crate) fn for_workload(
        config: &WorkloadConfig,
        uniform: bool,
        unit: u64,
        all_sizes: &[u32],
        total: u64,
    ) -> Option<RandomMap> {
        let varies = |b: &BlockSizes| !matches!(b, BlockSizes::Fixed { .. });
        let split = varies(&config.block_sizes) || config.write_sizes.as_ref().is_some_and(varies);
        let mixed = split && all_sizes.iter().any(|&s| u64::from(s) > unit);
        let fits = uniform && config.regions.len() == 1 && unit.is_multiple_of(u64::from(config.align.max(1)));
        (mixed && fits && config.offsets.stride.is_none()).then(|| RandomMap::new(total / unit))
    }

    /// A map of `units` units (at least one), none covered.
    pub fn new(units: u64) -> RandomMap {
        let units = units.max(1);
        let words = units.div_ceil(64);
        RandomMap { bits: vec![0; words as usize], full: vec![0; words.div_ceil(64) as usize], units }
    }

    /// Whether unit `i` has been covered in this pass.
    #[inline]
    pub fn covered(&self, i: u64) -> bool {
        self.bits[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// The first unit at or after `from` not covered, wrapping to the start as fio's `axmap_next_free` does
    /// ("If there are no free bits starting at next_bit and going to the end of the map, wrap around by
    /// searching again starting at bit 0"); `None` when all are covered.
    #[inline]
    pub fn next_free(&self, from: u64) -> Option<u64> {
        self.free_from(from).or_else(|| self.free_from(0))
    }

    #[inline]
    fn free_from(&self, from: u64) -> Option<u64> {
        let word = (from / 64) as usize;
        let free = !self.bits[word] & (u64::MAX << (from % 64));
        if free != 0 {
            return Some(word as u64 * 64 + u64::from(free.trailing_zeros())).filter(|&i| i < self.units);
        }
        // The next word not full, through the summary.
        let next = word + 1;
        let mut at = next / 64;
        let mut open = !self.full.get(at)? & (u64::MAX.checked_shl((next % 64) as u32).unwrap_or(0));
        while open == 0 {
            at += 1;
            open = !*self.full.get(at)?;
        }
        let word = at * 64 + open.trailing_zeros() as usize;
        let i = word as u64 * 64 + u64::from((!self.bits.get(word)?).trailing_zeros());
        (i < self.units).then_some(i)
    }

    /// Covers up to `want` units from `first` (not covered), stopping at the first covered one or at `end`;
    /// returns how many it covered (at least 1).
    #[inline]
    pub fn cover_run(&mut self, first: u64, want: u64, end: u64) -> u64 {
        let last = first.saturating_add(want.max(1)).min(end).min(self.units);
        let mut i = first;
        while i < last && (i == first || !self.covered(i)) {
            let word = (i / 64) as usize;
            self.bits[word] |= 1 << (i % 64);
            if self.bits[word] == u64::MAX {
                self.full[word / 64] |= 1 << (word % 64);
            }
            i += 1;
        }
        i - first
    }

    /// Starts a new pass: nothing covered.
    pub fn clear(&mut self) {
        self.bits.fill(0);
        self.full.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_stop_at_covered_units_and_the_end_and_the_next_free_unit_is_found() {
        let mut map = RandomMap::new(10);
        assert_eq!(map.cover_run(4, 2, 10), 2);
        assert!(map.covered(4) && map.covered(5) && !map.covered(6));
        assert_eq!(map.cover_run(2, 16, 10), 2, "trimmed before unit 4, covered already");
        assert_eq!(map.cover_run(8, 16, 10), 2, "trimmed at the end");
        assert_eq!((map.next_free(2), map.next_free(6), map.next_free(8)), (Some(6), Some(6), Some(0)), "wraps");
        map.clear();
        assert_eq!(map.next_free(9), Some(9));
    }

    #[test]
    fn the_summary_skips_full_words() {
        let mut map = RandomMap::new(64 * 200 + 5);
        assert_eq!(map.cover_run(0, 64 * 130, u64::MAX), 64 * 130);
        assert_eq!(map.next_free(3), Some(64 * 130));
        assert_eq!(map.cover_run(64 * 130, 64 * 70 + 4, u64::MAX), 64 * 70 + 4);
        assert_eq!(map.next_free(0), Some(64 * 200 + 4), "the last unit");
        assert_eq!(map.next_free(64 * 200 + 5 - 1), Some(64 * 200 + 4));
        map.cover_run(64 * 200 + 4, 1, u64::MAX);
        assert_eq!(map.next_free(0), None);
    }
}
