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
//!
//! vdbench's way (`DataShape::by_address`) draws nothing per write: a hash of the unit's address (the file's key
//! and the unit's index in it) says whether it is unique and, if not, which set it copies; a set's seed is its
//! number under the phase seed, the same for every worker and file, and a unique unit's seed is its address
//! with this worker's write count (vdbench stamps the write's time), so rewriting it replaces one unique unit
//! with another and a set's copy with the same copy: the ratio stays the one asked. One hash per unit.

use super::pattern::fill_random;
use crate::plan::{ByAddress, DataShape};
use crate::workload::{Rng, mix64};

/// Keeps the sequences of global sets apart from the workers' own.
const GLOBAL_SALT: u64 = 0x5eed_5e75_0000_0001;
/// Keep the seeds of sets, of unique units and of the address draw apart from each other.
const SET_SALT: u64 = 0xd0b1_5e75_0000_0002;
const UNIQUE_SALT: u64 = 0x0417_0e55_0000_0003;
const ADDRESS_SALT: u64 = 0xadd7_e550_0000_0004;
const FILE_SALT: u64 = 0xf11e_5e75_0000_0005;
/// Spreads small indices over the 64 bits before they are combined.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Where a write goes, for deciding by address: what the file's key is made of (`file_key(tree, file)`: a
/// tree's seed, or 0 for the run's raw files, and the file's number there; the same file gets the same key in
/// every phase) and the byte offset in it. The key is mixed only where it is used, in the by-address fill, so
/// per-write shapes pay nothing for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    pub tree: u64,
    pub file: u64,
    pub offset: u64,
}

pub struct Shaper {
    shape: DataShape,
    /// Chooses unique or repeat, and which unit of the working set.
    picks: Rng,
    /// The key of this worker's sequence of unique seeds.
    own: u64,
    /// Global set: the phase seed that every sharing worker's sequence derives from, and this worker's number.
    global_base: u64,
    member: u64,
    /// Unique units written so far by a per-write shape (the next unique is that index of the sequence).
    uniques: u64,
    /// Writes filled by address so far: a unique unit's seed carries it, as vdbench's carries the write's time
    /// stamp, so a unique unit rewritten gets new content (a copy's seed is its set's, whatever the count).
    writes_by_address: u64,
    last_unique: Option<u64>,
    /// Random bytes at the start of each chunk; the rest of it is zeros.
    random_per_chunk: usize,
}

/// The key of file `number` under `base` (a tree's seed, or 0 for the run's raw files).
#[inline]
fn file_key(base: u64, number: u64) -> u64 {
    mix64(base ^ number.wrapping_mul(GOLDEN) ^ FILE_SALT)
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
            writes_by_address: 0,
            last_unique: None,
            random_per_chunk: ((chunk as f64) * (1.0 - shape.compress_percent / 100.0)).round() as usize,
            shape,
        }
    }

    /// Fills `buffer` (one write, at `at`) unit by unit.
    #[inline]
    pub fn fill(&mut self, buffer: &mut [u8], at: Address) {
        if let Some(pattern) = &self.shape.pattern {
            // fio's buffer_pattern: the pattern from the buffer's first byte, over and over.
            for (piece, bytes) in buffer.chunks_mut(pattern.bytes().len()).zip(std::iter::repeat(pattern.bytes())) {
                piece.copy_from_slice(&bytes[..piece.len()]);
            }
            return;
        }
        let unit = self.shape.unit.map_or(buffer.len(), |u| u as usize).max(1);
        if let Some(by) = self.shape.by_address {
            self.writes_by_address += 1;
            let (file, first) = (file_key(at.tree, at.file), at.offset / unit as u64);
            for (i, piece) in buffer.chunks_mut(unit).enumerate() {
                let seed = self.seed_by_address(&by, file, first + i as u64);
                self.fill_unit(piece, seed);
            }
            return;
        }
        for piece in buffer.chunks_mut(unit) {
            let seed = self.next_seed();
            self.fill_unit(piece, seed);
        }
    }

    /// The seed of unit `index` of file `file`: its set's, or a fresh unique one.
    #[inline]
    fn seed_by_address(&self, by: &ByAddress, file: u64, index: u64) -> u64 {
        let hash = address_hash(by, file, index);
        match kind_of(by, self.shape.working_set_units.unwrap_or(1), hash) {
            UnitKind::Copy(set) => mix64(SET_SALT ^ by.seed ^ set.wrapping_mul(GOLDEN)),
            UnitKind::Unique => {
                mix64(UNIQUE_SALT ^ hash ^ self.own.wrapping_add(self.writes_by_address).wrapping_mul(GOLDEN))
            }
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

/// What the unit at an address holds under vdbench's way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnitKind {
    Unique,
    /// A copy of this set.
    Copy(u64),
}

/// The kind of unit `index` of file `file`: a function of the address and the phase seed only, never of the
/// worker, the time or what was written before (vdbench's DedupBitMap and dedup set, by hash instead of a
/// bitmap of the whole data set). The fill asks `kind_of` with the hash it also seeds unique units from.
#[cfg(test)]
pub fn unit_kind(by: &ByAddress, sets: u64, file: u64, index: u64) -> UnitKind {
    kind_of(by, sets, address_hash(by, file, index))
}

#[inline]
fn address_hash(by: &ByAddress, file: u64, index: u64) -> u64 {
    mix64(ADDRESS_SALT ^ by.seed ^ file ^ index.wrapping_mul(GOLDEN))
}

#[inline]
fn kind_of(by: &ByAddress, sets: u64, hash: u64) -> UnitKind {
    // The top 53 bits as a fraction of 1; a copy's set from the hash mixed once more.
    let draw = (hash >> 11) as f64 / (1u64 << 53) as f64;
    if draw * 100.0 < by.unique_percent { UnitKind::Unique } else { UnitKind::Copy(mix64(hash) % sets.max(1)) }
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
            by_address: None,
        }
    }

    /// Per-write shapes do not look at the address.
    const AT: Address = Address { tree: 0, file: 0, offset: 0 };

    /// Distinct 4 KiB units among `n` writes.
    fn distinct(shaper: &mut Shaper, n: usize) -> usize {
        let mut seen = HashSet::new();
        let mut buffer = vec![0u8; 4096];
        for _ in 0..n {
            shaper.fill(&mut buffer, AT);
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
        shaper.fill(&mut buffer, AT);
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
                shaper.fill(&mut buffer, AT);
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

    /// vdbench's dedupratio=2 with 5 % sets, 8 KiB units.
    fn by_address(sets: u64) -> DataShape {
        let by = ByAddress { unique_percent: 45.0, seed: 7 };
        DataShape { unit: Some(8192), by_address: Some(by), ..shape(50.0, Some(sets), 0.0) }
    }

    #[test]
    fn a_unit_s_kind_depends_only_on_its_address() {
        let by = ByAddress { unique_percent: 45.0, seed: 7 };
        let kinds = |file: u64| (0..4_000u64).map(|i| unit_kind(&by, 200, file, i)).collect::<Vec<_>>();
        // The same address, asked again (by any worker, in any phase): the same kind and set.
        assert_eq!(kinds(file_key(3, 1)), kinds(file_key(3, 1)));
        let unique = kinds(file_key(3, 1)).iter().filter(|k| **k == UnitKind::Unique).count();
        assert!((1_700..=1_900).contains(&unique), "{unique} unique of 4,000 at 45 %");
        assert_ne!(kinds(file_key(3, 1)), kinds(file_key(3, 2)), "another file draws its own");
        // Written by two workers with different seeds and histories: a copy is the same bytes at the same
        // address; a unique unit is new bytes on every write.
        let shape = by_address(200);
        let (mut a, mut b) = (Shaper::new(shape, 1, 10, 0), Shaper::new(shape, 1, 20, 1));
        let (mut x, mut y) = (vec![0u8; 8192], vec![0u8; 8192]);
        b.fill(&mut y, AT);
        for i in 0..200u64 {
            let at = Address { tree: 3, file: 1, offset: i * 8192 };
            a.fill(&mut x, at);
            b.fill(&mut y, at);
            let copy = unit_kind(&by, 200, file_key(3, 1), i) != UnitKind::Unique;
            assert_eq!(x == y, copy, "unit {i}");
        }
    }

    /// The by-address fill counts its writes apart from the per-write shapes' unique units (it borrowed their
    /// counter): a unique unit rewritten at the same address is new bytes each time, a copy the same bytes.
    #[test]
    fn rewriting_by_address_renews_unique_units_and_keeps_copies() {
        let by = ByAddress { unique_percent: 45.0, seed: 7 };
        let mut shaper = Shaper::new(by_address(200), 1, 10, 0);
        let (mut first, mut again) = (vec![0u8; 8192], vec![0u8; 8192]);
        for i in 0..100u64 {
            let at = Address { tree: 3, file: 1, offset: i * 8192 };
            shaper.fill(&mut first, at);
            shaper.fill(&mut again, at);
            let unique = unit_kind(&by, 200, file_key(3, 1), i) == UnitKind::Unique;
            assert_eq!(first != again, unique, "unit {i}");
        }
        assert_eq!((shaper.writes_by_address, shaper.uniques), (200, 0));
    }

    #[test]
    fn random_rewrites_by_address_keep_the_ratio() {
        // 4,096 units of one file written once in order, then rewritten 3 times over at random by two workers.
        let shape = by_address(205);
        let mut workers = [Shaper::new(shape, 1, 10, 0), Shaper::new(shape, 1, 20, 1)];
        let mut units = vec![Vec::new(); 4_096];
        let mut buffer = vec![0u8; 8192];
        let mut rng = Rng::new(5);
        for n in 0..4 * 4_096 {
            let index = if n < 4_096 { n as u64 } else { rng.below(4_096) };
            workers[n % 2].fill(&mut buffer, Address { tree: 9, file: 0, offset: index * 8192 });
            units[index as usize] = buffer[..64].to_vec();
        }
        // 45 % unique (± 0.8 %, one binomial deviation) plus the 205 sets, of 4,096: a ratio of 2.0 ± 0.03.
        let distinct = units.iter().collect::<HashSet<_>>().len();
        let ratio = 4_096.0 / distinct as f64;
        assert!((1.9..=2.1).contains(&ratio), "{distinct} distinct of 4,096: 1:{ratio:.2}");
    }
}
