//! The `Shaper`: fills a write buffer with data of the planned shape (`plan::DataShape`), for storage that
//! deduplicates or compresses.
//!
//! Each unit (a write's buffer, or a `dedupe-unit` of it) is generated from a 64-bit seed, so a repeated unit is
//! the same seed again: byte for byte the same, without keeping any written data. Unique units follow the
//! worker's own sequence of seeds. A repeat is the last unique unit (fio's dedupe_mode=repeat) or one of the
//! working set, which, as in fio's working_set mode, is the first units of the worker's sequence — or, for a
//! global set, of every sharing worker's sequence in turn, so their files deduplicate against each other. Inside
//! a unit every chunk is random bytes followed by zeros, the zeros being the compressible share (fio's
//! buffer_compress_percentage). The cost is a refill of each written byte, paid only by phases that ask for a
//! shape.

use super::pattern::fill_random;
use crate::plan::DataShape;
use crate::workload::{Rng, mix64};

/// Keeps the sequences of global sets apart from the workers' own.
const GLOBAL_SALT: u64 = 0x5eed_5e75_0000_0001;

pub struct Shaper {
    shape: DataShape,
    /// Chooses unique or repeat, and which unit of the working set.
    picks: Rng,
    /// The key of this worker's sequence of unique seeds.
    own: u64,
    /// Global set: the phase seed that every sharing worker's sequence derives from, and this worker's number.
    global_base: u64,
    member: u64,
    /// Unique units written so far (the next unique is that index of the sequence).
    uniques: u64,
    last_unique: Option<u64>,
    /// Random bytes at the start of each chunk; the rest of it is zeros.
    random_per_chunk: usize,
}

impl Shaper {
    /// `worker_seed` is the worker's own (different in every phase and worker) and `worker` its index in the
    /// phase; `phase_seed` is shared by the phases of a job, so a global set is the same for all of them.
    pub fn new(shape: DataShape, phase_seed: u64, worker_seed: u64, worker: usize) -> Shaper {
        let global_base = mix64(GLOBAL_SALT ^ phase_seed);
        let member = shape.global.map_or(0, |g| u64::from(g.first) + worker as u64);
        let own = match shape.global {
            Some(_) => sequence_key(global_base, member),
            None => mix64(worker_seed ^ 0x0bad_5eed),
        };
        let chunk = shape.compress_chunk.max(1) as usize;
        Shaper {
            picks: Rng::new(own ^ 0x51c4),
            own,
            global_base,
            member,
            uniques: 0,
            last_unique: None,
            random_per_chunk: ((chunk as f64) * (1.0 - shape.compress_percent / 100.0)).round() as usize,
            shape,
        }
    }

    /// Fills `buffer` (one write) unit by unit.
    #[inline]
    pub fn fill(&mut self, buffer: &mut [u8]) {
        if let Some(pattern) = &self.shape.pattern {
            // fio's buffer_pattern: the pattern from the buffer's first byte, over and over.
            for (piece, bytes) in buffer.chunks_mut(pattern.bytes().len()).zip(std::iter::repeat(pattern.bytes())) {
                piece.copy_from_slice(&bytes[..piece.len()]);
            }
            return;
        }
        let unit = self.shape.unit.map_or(buffer.len(), |u| u as usize).max(1);
        for piece in buffer.chunks_mut(unit) {
            let seed = self.next_seed();
            self.fill_unit(piece, seed);
        }
    }

    fn next_seed(&mut self) -> u64 {
        let repeat = self.picks.unit() * 100.0 < self.shape.dedupe_percent;
        match (repeat, self.shape.working_set_units, self.last_unique) {
            (true, Some(units), _) => {
                let i = self.picks.below(units);
                self.working_set_seed(i)
            }
            (true, None, Some(last)) => last,
            _ => {
                let seed = seed_at(self.own, self.uniques);
                self.uniques += 1;
                self.last_unique = Some(seed);
                seed
            }
        }
    }

    /// Unit `i` of the working set: the i-th unique of this worker's sequence, or for a global set (as fio
    /// rotates it) the sharing workers' sequences in turn, starting with this worker's, an equal share of each.
    fn working_set_seed(&self, i: u64) -> u64 {
        let (Some(global), Some(units)) = (self.shape.global, self.shape.working_set_units) else {
            return seed_at(self.own, i);
        };
        let workers = u64::from(global.workers.max(1));
        let per_worker = (units / workers).max(1);
        let member = (self.member + i / per_worker) % workers;
        seed_at(sequence_key(self.global_base, member), i % per_worker)
    }

    fn fill_unit(&self, piece: &mut [u8], seed: u64) {
        let mut rng = Rng::new(seed);
        for chunk in piece.chunks_mut(self.shape.compress_chunk.max(1) as usize) {
            let random = self.random_per_chunk.min(chunk.len());
            fill_random(&mut chunk[..random], &mut rng);
            chunk[random..].fill(0);
        }
    }
}

/// The key of the unique sequence of member `member` of a global set.
fn sequence_key(global_base: u64, member: u64) -> u64 {
    mix64(global_base ^ mix64(member + 1))
}

/// The seed of the `index`-th unique unit of the sequence `key`.
fn seed_at(key: u64, index: u64) -> u64 {
    mix64(key.wrapping_add(index))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::plan::GlobalSet;

    fn shape(dedupe: f64, set: Option<u64>, compress: f64) -> DataShape {
        DataShape {
            dedupe_percent: dedupe,
            unit: None,
            working_set_units: set,
            global: None,
            compress_percent: compress,
            compress_chunk: 512,
            pattern: None,
        }
    }

    /// Distinct 4 KiB units among `n` writes.
    fn distinct(shaper: &mut Shaper, n: usize) -> usize {
        let mut seen = HashSet::new();
        let mut buffer = vec![0u8; 4096];
        for _ in 0..n {
            shaper.fill(&mut buffer);
            seen.insert(buffer.clone());
        }
        seen.len()
    }

    #[test]
    fn the_share_of_repeated_units_is_the_share_asked() {
        let mut repeat = Shaper::new(shape(50.0, None, 0.0), 1, 10, 0);
        let unique = distinct(&mut repeat, 10_000);
        assert!((4_800..=5_200).contains(&unique), "{unique} distinct of 10,000 at 50 % dedupe");
        // A working set of 100 units: the unique half plus at most 100 distinct repeats.
        let mut set = Shaper::new(shape(50.0, Some(100), 0.0), 1, 10, 0);
        let unique = distinct(&mut set, 10_000);
        assert!((4_800..=5_300).contains(&unique), "{unique} distinct with a working set");
        assert_eq!(distinct(&mut Shaper::new(shape(0.0, None, 30.0), 1, 10, 0), 1_000), 1_000);
    }

    #[test]
    fn the_compressible_share_is_zeros_at_the_end_of_every_chunk() {
        let mut shaper = Shaper::new(shape(0.0, None, 25.0), 3, 10, 0);
        let mut buffer = vec![0xffu8; 8192];
        shaper.fill(&mut buffer);
        for chunk in buffer.chunks(512) {
            assert!(chunk[384..].iter().all(|&b| b == 0));
            assert!(chunk[..384].iter().filter(|&&b| b == 0).count() < 10);
        }
    }

    fn written(global: Option<GlobalSet>, set: u64, worker: usize, writes: usize) -> HashSet<Vec<u8>> {
        let mut shaper =
            Shaper::new(DataShape { global, ..shape(50.0, Some(set), 0.0) }, 9, 100 + worker as u64, worker);
        let mut buffer = vec![0u8; 4096];
        (0..writes)
            .map(|_| {
                shaper.fill(&mut buffer);
                buffer.clone()
            })
            .collect()
    }

    #[test]
    fn a_global_working_set_makes_files_deduplicate_against_each_other_as_fio_s_do() {
        // fio's dedupe-global example in small: two jobs, half the writes repeats, a working set of half a file.
        let global = Some(GlobalSet { first: 0, workers: 2 });
        let (a, b) = (written(global, 1_000, 0, 2_000), written(global, 1_000, 1, 2_000));
        // Each file: its 1,000 unique units, and repeats of which half are the other job's (about 1 − 1/e of 500).
        assert!((1_250..=1_400).contains(&a.len()), "{} distinct in a", a.len());
        assert!(a.union(&b).count() <= 2_050, "{} distinct in both", a.union(&b).count());
        // Without the global set each file repeats only its own units: nothing is shared.
        let (a, b) = (written(None, 1_000, 0, 2_000), written(None, 1_000, 1, 2_000));
        assert!(a.len() <= 1_050 && a.is_disjoint(&b), "{} distinct in a", a.len());
    }
}
