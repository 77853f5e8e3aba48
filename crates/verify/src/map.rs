//! The [`Verifier`]: the expected generation of every block of a run, claims that keep two operations off one
//! block at once, and the bad blocks found.
//!
//! One byte per block (vdbench's data-validation map does the same): the low seven bits are the generation of
//! the last write issued to the block (0: never written by a verified write, or its last write failed, so its
//! content is unknown and it is not checked), the high bit says an operation on the block is in flight. A
//! worker claims every block an operation touches before it issues it and releases them when it completes; an
//! operation whose block is already claimed is not issued. Two writes in flight on one block could land in
//! either order, and a read in flight beside a write could see either generation: either would be reported as
//! bad data that is not. One atomic operation per block per I/O; shared by every worker of the run.
//!
//! Blocks are `block` bytes from the start of each file (the plan aligns verified workloads to the block size);
//! the last block of a file may be shorter. Reads check only the blocks they cover whole.

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use super::{Algorithm, BadBlock, BlockId, diagnose, next_generation, stamp, verify_block};

mod journal;
mod lost;

pub use journal::JournalSink;
pub use lost::LostRange;

const BUSY: u8 = 0x80;
const GENERATION: u8 = 0x7f;

struct FileKeys {
    /// The path, as reports name it.
    name: String,
    size: u64,
    keys: Box<[AtomicU8]>,
}

/// The bad blocks found: all counted (a block found bad again, by the read-back pass after a read during a
/// phase, counts once while its first finding is among those kept), the first few kept with their details; and
/// the ranges of files that could not be read at all (`lost.rs`), whose written blocks are counted too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BadLog {
    pub count: u64,
    pub blocks: Vec<BadBlock>,
    pub missing: Vec<LostRange>,
}

/// What was checked so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyCounts {
    /// Blocks read back and checked.
    pub blocks: u64,
    /// Bytes in those blocks.
    pub bytes: u64,
    /// Bad blocks among them.
    pub bad: u64,
}

pub struct Verifier {
    algorithm: Algorithm,
    block: u32,
    seed: u64,
    files: Vec<FileKeys>,
    keep: usize,
    bad: Mutex<BadLog>,
    checked_blocks: AtomicU64,
    checked_bytes: AtomicU64,
    /// Where the journal of a journaled run goes (`journal.rs`), and where each file's blocks start in it.
    journal: Option<Box<dyn JournalSink>>,
    map_starts: Vec<u64>,
    /// Checking a journaled run after it was killed: blocks still marked in flight may hold their last write or
    /// the one before (`journal.rs`).
    recovering: bool,
    pending: AtomicU64,
}

impl Verifier {
    /// A verifier for files `(path, size in bytes)` cut into blocks of `block` bytes, none written yet. `keep`:
    /// how many bad blocks are kept with their details (all are counted).
    pub fn new(algorithm: Algorithm, block: u32, seed: u64, files: Vec<(String, u64)>, keep: usize) -> Verifier {
        let files: Vec<FileKeys> = files
            .into_iter()
            .map(|(name, size)| {
                let blocks = size.div_ceil(u64::from(block.max(1))) as usize;
                FileKeys { name, size, keys: (0..blocks).map(|_| AtomicU8::new(0)).collect() }
            })
            .collect();
        let map_starts = files
            .iter()
            .scan(0u64, |at, f| {
                let start = *at;
                *at += f.keys.len() as u64;
                Some(start)
            })
            .collect();
        Verifier {
            journal: None,
            map_starts,
            recovering: false,
            pending: AtomicU64::new(0),
            algorithm,
            block: block.max(1),
            seed,
            files,
            keep,
            bad: Mutex::default(),
            checked_blocks: AtomicU64::new(0),
            checked_bytes: AtomicU64::new(0),
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The block size in bytes.
    pub fn block_size(&self) -> u32 {
        self.block
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// (path, size in bytes) of every file.
    pub fn files(&self) -> impl Iterator<Item = (&str, u64)> {
        self.files.iter().map(|f| (f.name.as_str(), f.size))
    }

    /// The generation of every block of `file` (0: not to be checked), for the manifest of a kept run.
    pub fn generations(&self, file: u32) -> Vec<u8> {
        self.files[file as usize].keys.iter().map(|k| k.load(Ordering::Relaxed) & GENERATION).collect()
    }

    /// Sets the generations of `file`'s blocks (from a kept run's manifest); `false` if the count is wrong.
    pub fn set_generations(&self, file: u32, generations: &[u8]) -> bool {
        let keys = &self.files[file as usize].keys;
        if keys.len() != generations.len() {
            return false;
        }
        keys.iter().zip(generations).for_each(|(k, &g)| k.store(g & GENERATION, Ordering::Relaxed));
        true
    }

    /// Forgets what `file` holds (it was deleted, replaced or moved away): none of its blocks is checked until
    /// it is written again. For a file nothing else works on (its blocks are not in flight).
    pub fn forget(&self, file: u32) {
        self.files[file as usize].keys.iter().for_each(|k| k.store(0, Ordering::Release));
    }

    /// Block indices that `[offset, offset + len)` touches.
    fn touched(&self, file: u32, offset: u64, len: usize) -> Range<usize> {
        let blocks = self.files[file as usize].keys.len();
        let block = u64::from(self.block);
        let first = (offset / block) as usize;
        let end = (offset + len as u64).div_ceil(block) as usize;
        first.min(blocks)..end.min(blocks)
    }

    /// Offset and length of block `index` of `file`.
    fn span(&self, file: u32, index: usize) -> (u64, usize) {
        let start = index as u64 * u64::from(self.block);
        (start, (self.files[file as usize].size - start).min(u64::from(self.block)) as usize)
    }

    /// Marks every block of `range` in flight, or none if one already is.
    fn claim(keys: &[AtomicU8], range: Range<usize>) -> bool {
        for i in range.clone() {
            if keys[i].fetch_or(BUSY, Ordering::Acquire) & BUSY != 0 {
                Self::release(keys, range.start..i);
                return false;
            }
        }
        true
    }

    fn release(keys: &[AtomicU8], range: Range<usize>) {
        for key in &keys[range] {
            key.fetch_and(!BUSY, Ordering::Release);
        }
    }

    /// Before a write of `buf` at `offset`: claims its blocks and stamps them with their next generation
    /// ([`claim_write`](Self::claim_write), then [`stamp_write`](Self::stamp_write)). `false` (nothing claimed,
    /// nothing stamped) when a block is in flight: do not issue it now.
    pub fn begin_write(&self, file: u32, offset: u64, buf: &mut [u8]) -> bool {
        if !self.claim_write(file, offset, buf.len()) {
            return false;
        }
        self.stamp_write(file, offset, buf);
        true
    }

    /// Claims the blocks of a write of `len` bytes at `offset` and moves each whole one to its next generation
    /// (a block only partly written becomes unknown). `false`, with nothing claimed, when one is in flight.
    pub fn claim_write(&self, file: u32, offset: u64, len: usize) -> bool {
        let range = self.touched(file, offset, len);
        let keys = &self.files[file as usize].keys;
        if !Self::claim(keys, range.clone()) {
            return false;
        }
        for i in range.clone() {
            let (start, block_len) = self.span(file, i);
            let whole = start >= offset && start + block_len as u64 <= offset + len as u64;
            let generation = if whole { next_generation(keys[i].load(Ordering::Relaxed) & GENERATION) } else { 0 };
            keys[i].store(BUSY | generation, Ordering::Relaxed);
        }
        // Before the write is issued: its blocks are in flight with their new generations.
        self.journal_keys(file, range, BUSY);
        true
    }

    /// Stamps every whole block of a claimed write in `buf` (the write's buffer, `offset` its place in the file)
    /// with the block's generation.
    pub fn stamp_write(&self, file: u32, offset: u64, buf: &mut [u8]) {
        let keys = &self.files[file as usize].keys;
        for (i, at, len) in self.blocks_within(file, offset, buf.len()) {
            let generation = keys[i].load(Ordering::Relaxed) & GENERATION;
            let (start, _) = self.span(file, i);
            let id = BlockId { file, offset: start, len: len as u32, generation, seed: self.seed };
            stamp(&mut buf[at..at + len], &id, self.algorithm);
        }
    }

    /// After a write claimed with [`begin_write`](Self::begin_write) completed: releases its blocks. A write
    /// that failed (or was cut short) leaves them unknown, and they are no longer checked.
    pub fn end_write(&self, file: u32, offset: u64, len: usize, ok: bool) {
        let range = self.touched(file, offset, len);
        let keys = &self.files[file as usize].keys;
        if ok {
            // After the write completed, while its blocks are still claimed (so no later write's record of them
            // can come before this one): written, with their generations.
            self.journal_keys(file, range.clone(), 0);
            Self::release(keys, range);
        } else {
            keys[range.clone()].iter().for_each(|k| k.store(BUSY, Ordering::Relaxed));
            self.journal_keys(file, range.clone(), 0);
            keys[range].iter().for_each(|k| k.store(0, Ordering::Release));
        }
    }

    /// Before a read: claims its blocks; `false` when one is in flight (do not issue it now).
    pub fn begin_read(&self, file: u32, offset: u64, len: usize) -> bool {
        Self::claim(&self.files[file as usize].keys, self.touched(file, offset, len))
    }

    /// After a read claimed with [`begin_read`](Self::begin_read) completed: checks every block it read whole
    /// (`data`: what it read, `None` if it failed) and releases them.
    pub fn end_read(&self, file: u32, offset: u64, len: usize, data: Option<&[u8]>) {
        let range = self.touched(file, offset, len);
        if let Some(data) = data {
            for i in range.clone() {
                let (start, block_len) = self.span(file, i);
                if start >= offset && start + block_len as u64 <= offset + data.len() as u64 {
                    // Claimed by this read itself: its generation cannot move until it is released below.
                    let generation = self.files[file as usize].keys[i].load(Ordering::Relaxed) & GENERATION;
                    self.check_generation(file, i, generation, &data[(start - offset) as usize..][..block_len]);
                }
            }
        }
        Self::release(&self.files[file as usize].keys, range);
    }

    /// The byte ranges of `file` whose content is not known (never written by a verified write, its last write
    /// failed, or an operation on it never completed), merged: what a fill may write without destroying data
    /// the verifier expects. For use between phases, with nothing in flight.
    pub fn unknown_ranges(&self, file: u32) -> Vec<Range<u64>> {
        let keys = &self.files[file as usize].keys;
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let key = key.load(Ordering::Acquire);
            if key & GENERATION != 0 && key & BUSY == 0 {
                continue;
            }
            let (start, len) = self.span(file, i);
            match ranges.last_mut() {
                Some(last) if last.end == start => last.end = start + len as u64,
                _ => ranges.push(start..start + len as u64),
            }
        }
        ranges
    }

    /// Before an I/O of `buf.len()` bytes at `offset` of `file`: claims its blocks, and for a write stamps them
    /// in `buf`. `false`: a block is in flight; do not issue this I/O now.
    #[inline]
    pub fn begin(&self, write: bool, file: u32, offset: u64, buf: &mut [u8]) -> bool {
        if write { self.begin_write(file, offset, buf) } else { self.begin_read(file, offset, buf.len()) }
    }

    /// After an I/O begun with [`begin`](Self::begin) completed with `result` (bytes or errno); `buf` holds what a
    /// read read. A read checks the blocks it read whole; a write that did not transfer everything leaves its
    /// blocks unknown.
    #[inline]
    pub fn end(&self, write: bool, file: u32, offset: u64, len: u32, result: Result<u32, i32>, buf: &[u8]) {
        if write {
            self.end_write(file, offset, len as usize, result == Ok(len));
        } else {
            let data = result.ok().map(|n| &buf[..(n as usize).min(buf.len())]);
            self.end_read(file, offset, len as usize, data);
        }
    }

    /// Checks block `index` of `file`, which holds `bytes` (exactly the block), against its expected
    /// generation: for a pass with nothing in flight. A block never written, whose write failed, or with an
    /// operation that never completed (its worker's engine failed) is skipped: what it holds is not known.
    pub fn check(&self, file: u32, index: usize, bytes: &[u8]) {
        let key = self.files[file as usize].keys[index].load(Ordering::Relaxed);
        if key & BUSY == 0 {
            self.check_generation(file, index, key & GENERATION, bytes);
        } else if self.recovering {
            self.check_pending(file, index, key & GENERATION, bytes);
        }
    }

    /// Checks a block against `generation` (0: skipped).
    fn check_generation(&self, file: u32, index: usize, generation: u8, bytes: &[u8]) {
        if generation == 0 {
            return;
        }
        let (offset, len) = self.span(file, index);
        let id = BlockId { file, offset, len: len as u32, generation, seed: self.seed };
        self.checked_blocks.fetch_add(1, Ordering::Relaxed);
        self.checked_bytes.fetch_add(len as u64, Ordering::Relaxed);
        if !verify_block(bytes, &id, self.algorithm) {
            self.record(&id, bytes);
        }
    }

    #[cold]
    fn record(&self, id: &BlockId, bytes: &[u8]) {
        let name =
            |file: u32| self.files.get(file as usize).map_or_else(|| format!("file #{file}"), |f| f.name.clone());
        let diagnosis = diagnose(bytes, id, self.algorithm, &name);
        let mut log = self.bad.lock().unwrap_or_else(|p| p.into_inner());
        // A block found bad by a read during a phase is found bad again by the read-back pass: once is enough.
        if log.blocks.iter().any(|b| b.offset == id.offset && b.file == name(id.file)) {
            return;
        }
        log.count += 1;
        if log.blocks.len() < self.keep {
            log.blocks.push(BadBlock {
                file: name(id.file),
                offset: id.offset,
                len: u64::from(id.len),
                kind: diagnosis.kind,
                expected: diagnosis.expected,
                found: diagnosis.found,
            });
        }
    }

    /// Blocks of `file` in `[offset, offset + len)`, each as (index, offset within the range, length): for a
    /// pass that reads the file in large pieces and checks the blocks inside each.
    pub fn blocks_within(&self, file: u32, offset: u64, len: usize) -> impl Iterator<Item = (usize, usize, usize)> {
        self.touched(file, offset, len).filter_map(move |i| {
            let (start, block_len) = self.span(file, i);
            (start >= offset && start + block_len as u64 <= offset + len as u64)
                .then(|| (i, (start - offset) as usize, block_len))
        })
    }

    /// Whether any block of `file` has a generation to check.
    pub fn has_written(&self, file: u32) -> bool {
        self.files[file as usize].keys.iter().any(|k| k.load(Ordering::Relaxed) & GENERATION != 0)
    }

    pub fn counts(&self) -> VerifyCounts {
        VerifyCounts {
            blocks: self.checked_blocks.load(Ordering::Relaxed),
            bytes: self.checked_bytes.load(Ordering::Relaxed),
            bad: self.bad.lock().unwrap_or_else(|p| p.into_inner()).count,
        }
    }

    /// The bad blocks found so far.
    pub fn bad_blocks(&self) -> BadLog {
        self.bad.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::BadKind;

    fn verifier() -> Verifier {
        Verifier::new(Algorithm::Crc32c, 8192, 7, vec![("d0".into(), 40960), ("d1".into(), 20480)], 10)
    }

    #[test]
    fn a_written_block_reads_back_good_and_a_rewrite_moves_its_generation() {
        let v = verifier();
        let mut buf = vec![0u8; 16384];
        assert!(v.begin_write(0, 8192, &mut buf));
        v.end_write(0, 8192, buf.len(), true);
        assert!(v.begin_read(0, 0, 32768));
        let mut file = vec![0u8; 32768];
        file[8192..24576].copy_from_slice(&buf);
        v.end_read(0, 0, file.len(), Some(&file));
        assert_eq!(v.counts(), VerifyCounts { blocks: 2, bytes: 16384, bad: 0 }, "blocks 0 and 3 were never written");
        let old = buf.clone();
        assert!(v.begin_write(0, 8192, &mut buf));
        v.end_write(0, 8192, buf.len(), true);
        assert_eq!(v.generations(0), vec![0, 2, 2, 0, 0]);
        v.check(0, 1, &old[..8192]);
        v.check(0, 1, &old[..8192]);
        let bad = v.bad_blocks();
        assert_eq!((bad.count, bad.blocks[0].kind, bad.blocks[0].offset), (1, BadKind::Stale, 8192));
        assert_eq!(bad.blocks[0].file, "d0");
    }

    #[test]
    fn a_block_in_flight_is_not_claimed_twice_and_a_refused_claim_takes_nothing() {
        let v = verifier();
        let mut buf = vec![0u8; 8192];
        assert!(v.begin_write(1, 8192, &mut buf));
        assert!(!v.begin_read(1, 0, 16384), "block 1 is in flight");
        assert!(v.begin_read(1, 0, 8192), "the refused claim released block 0");
        assert!(!v.begin_write(1, 8192, &mut buf));
        v.end_write(1, 8192, 8192, true);
        v.end_read(1, 0, 8192, None);
        assert!(v.begin_read(1, 0, 20480), "everything released");
    }

    #[test]
    fn a_block_whose_operation_never_completed_is_not_checked_by_the_pass() {
        let v = verifier();
        let mut buf = vec![0u8; 8192];
        assert!(v.begin_write(0, 0, &mut buf));
        // The worker's engine failed: the write is never reaped, and what the block holds is unknown.
        v.check(0, 0, &[0u8; 8192]);
        assert_eq!(v.counts(), VerifyCounts::default());
    }

    #[test]
    fn only_blocks_whose_content_is_unknown_are_left_to_fill() {
        let v = verifier();
        let block = u64::from(v.block_size());
        let mut buf = vec![0u8; block as usize];
        assert!(v.begin_write(0, block, &mut buf));
        v.end_write(0, block, block as usize, true);
        assert!(v.begin_write(0, 3 * block, &mut buf)); // in flight: its engine failed
        let size = v.files[0].size;
        assert_eq!(v.unknown_ranges(0), vec![0..block, 2 * block..size], "only block 1 holds known data");
    }

    #[test]
    fn a_forgotten_file_is_not_checked_until_written_again() {
        let v = verifier();
        let mut buf = vec![0u8; 8192];
        assert!(v.begin_write(1, 0, &mut buf));
        v.end_write(1, 0, 8192, true);
        v.forget(1);
        assert!(!v.has_written(1), "a deleted file is not read back");
        v.check(1, 0, &[0u8; 8192]);
        assert_eq!(v.counts().blocks, 0);
        assert!(v.begin_write(1, 0, &mut buf));
        v.end_write(1, 0, 8192, true);
        assert_eq!(v.generations(1), vec![1, 0, 0], "a new file's first write is generation 1");
    }

    #[test]
    fn a_failed_write_leaves_its_blocks_unchecked() {
        let v = verifier();
        let mut buf = vec![0u8; 8192];
        assert!(v.begin_write(0, 0, &mut buf));
        v.end_write(0, 0, 8192, false);
        v.check(0, 0, &[0u8; 8192]);
        assert_eq!(v.counts().blocks, 0);
        assert_eq!(v.generations(0)[0], 0);
    }

    #[test]
    fn the_last_block_is_short_and_partial_blocks_are_not_checked() {
        let v = Verifier::new(Algorithm::Xxhash, 8192, 7, vec![("d".into(), 12288)], 10);
        let mut buf = vec![0u8; 12288];
        assert!(v.begin_write(0, 0, &mut buf));
        v.end_write(0, 0, buf.len(), true);
        assert!(v.begin_read(0, 4096, 8192));
        v.end_read(0, 4096, 8192, Some(&buf[4096..]));
        assert_eq!(v.counts().blocks, 1, "only the short last block (8192..12288) is whole in the read");
        assert_eq!(v.blocks_within(0, 0, 12288).collect::<Vec<_>>(), vec![(0, 0, 8192), (1, 8192, 4096)]);
        assert_eq!(v.counts().bad, 0);
    }
}
