//! The journal of a verified run (vdbench's journal=), as the [`Verifier`] sees it: a copy of the block map, one
//! byte per block in the order of the manifest's files, that the run keeps beside its data while it writes.
//!
//! Before a write is issued, the journal gets its blocks' new generations with the in-flight bit; after it
//! completed — while its blocks are still claimed, so that no later write's record of them can overtake this
//! one — their generations without it (or 0 when it failed). The sink (`run/journal.rs`) writes each record to
//! the journal file, and with `sync` makes it durable before the run goes on, as vdbench's two synchronous
//! journal writes per write do. This module does no I/O itself.
//!
//! Recovery: a run killed (or a machine that lost power) leaves the journal as it was. Blocks it says are
//! written must hold exactly that generation. A block it says is in flight held a write that may or may not
//! have reached storage, in whole or in part: it may hold the new generation, the one before, or a torn mix of
//! the two, and none of these is an error. vdbench accepts the old or the new content of a pending write, and
//! does not check a pending first write at all (5.04.05); streamcap does the same, and also accepts a torn
//! block, which a write cut short by the crash leaves. Anything else in a pending block (a flipped bit, zeros
//! where the old generation stood, another place's block) is still reported.

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::{GENERATION, Verifier};
use crate::verify::{BadKind, BlockId, GENERATIONS, diagnose, verify_block};

/// Where a journaled run's records go: `at` is the index of the first block in the whole map, `keys` one byte
/// per block (generation, and the in-flight bit in a record made before a write). Called from the workers,
/// before a write is issued and after it completed; must not allocate per call.
pub trait JournalSink: Send + Sync {
    fn record(&self, at: u64, keys: &[u8]);
}

/// Bytes of one record handed to the sink at a time (a write of more blocks makes several).
const RECORD_CHUNK: usize = 256;

impl Verifier {
    /// Journals every write from now on into `sink`.
    pub fn set_journal(&mut self, sink: Box<dyn JournalSink>) {
        self.journal = Some(sink);
    }

    /// Hands the keys of blocks `range` of `file` (their generations, with `busy` or-ed in) to the journal.
    pub(super) fn journal_keys(&self, file: u32, range: Range<usize>, busy: u8) {
        let Some(sink) = &self.journal else { return };
        let keys = &self.files[file as usize].keys[range.clone()];
        let mut record = [0u8; RECORD_CHUNK];
        let mut at = self.map_starts[file as usize] + range.start as u64;
        for chunk in keys.chunks(RECORD_CHUNK) {
            for (byte, key) in record.iter_mut().zip(chunk) {
                *byte = (key.load(Ordering::Relaxed) & GENERATION) | busy;
            }
            sink.record(at, &record[..chunk.len()]);
            at += chunk.len() as u64;
        }
    }

    /// Sets the keys of `file`'s blocks from a journal (a journaled run, checked after it ended or was killed):
    /// like [`set_generations`](Self::set_generations), but blocks marked in flight stay so, and are judged as
    /// pending writes by [`check`](Self::check). `false` if the count is wrong.
    pub fn recover_keys(&mut self, file: u32, journal: &[u8]) -> bool {
        self.recovering = true;
        let keys = &self.files[file as usize].keys;
        if keys.len() != journal.len() {
            return false;
        }
        keys.iter().zip(journal).for_each(|(k, &j)| k.store(j, Ordering::Relaxed));
        true
    }

    /// Blocks found in flight in a recovered journal, and of those how many were checked (not a first write).
    pub fn pending_blocks(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    /// Checks block `index` of `file`, whose write of `generation` was in flight when the run ended: the new
    /// generation, the one before it, or a torn mix of the two are all what storage may rightly hold.
    pub(super) fn check_pending(&self, file: u32, index: usize, generation: u8, bytes: &[u8]) {
        self.pending.fetch_add(1, Ordering::Relaxed);
        // A pending first write (or one that wrapped to 1): what the block held before is not known.
        if generation <= 1 {
            return;
        }
        let (offset, len) = self.span(file, index);
        let new = BlockId { file, offset, len: len as u32, generation, seed: self.seed };
        let old = BlockId { generation: (generation + GENERATIONS - 2) % GENERATIONS + 1, ..new };
        self.checked_blocks.fetch_add(1, Ordering::Relaxed);
        self.checked_bytes.fetch_add(len as u64, Ordering::Relaxed);
        if verify_block(bytes, &new, self.algorithm) || verify_block(bytes, &old, self.algorithm) {
            return;
        }
        let name = |f: u32| self.files.get(f as usize).map_or_else(|| format!("file #{f}"), |f| f.name.clone());
        if diagnose(bytes, &new, self.algorithm, &name).kind == BadKind::Torn {
            return;
        }
        self.record(&new, bytes);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::verify::{Algorithm, stamp};

    type Records = std::sync::Arc<Mutex<Vec<(u64, Vec<u8>)>>>;

    /// A sink that keeps every record in order.
    #[derive(Default)]
    struct Log(Records);

    impl JournalSink for Log {
        fn record(&self, at: u64, keys: &[u8]) {
            self.0.lock().unwrap().push((at, keys.to_vec()));
        }
    }

    fn verifier() -> Verifier {
        Verifier::new(Algorithm::Crc32c, 8192, 7, vec![("d0".into(), 24576), ("d1".into(), 16384)], 10)
    }

    #[test]
    fn each_write_is_journaled_in_flight_before_and_written_after_at_its_place_in_the_map() {
        let log = Log::default();
        let records = log.0.clone();
        let mut v = verifier();
        v.set_journal(Box::new(log));
        let mut buf = vec![0u8; 16384];
        assert!(v.begin_write(1, 0, &mut buf));
        assert_eq!(*records.lock().unwrap(), vec![(3, vec![0x81, 0x81])], "file 1 starts at block 3 of the map");
        v.end_write(1, 0, 16384, true);
        assert!(v.begin_write(1, 0, &mut buf));
        v.end_write(1, 0, 16384, false);
        let records = records.lock().unwrap();
        assert_eq!(records[1], (3, vec![1, 1]));
        assert_eq!(records[2], (3, vec![0x82, 0x82]));
        assert_eq!(records[3], (3, vec![0, 0]), "a failed write leaves its blocks unknown in the journal too");
    }

    /// Stamped block `index` of file 0 (8 KiB blocks) with `generation`.
    fn block(generation: u8, index: u64) -> Vec<u8> {
        let mut b = vec![0u8; 8192];
        let id = BlockId { file: 0, offset: index * 8192, len: 8192, generation, seed: 7 };
        stamp(&mut b, &id, Algorithm::Crc32c);
        b
    }

    #[test]
    fn a_pending_block_may_hold_its_new_or_old_generation_or_a_torn_mix_but_nothing_else() {
        let mut v = verifier();
        // Block 0 written (3); block 1 pending 5 (after 4); block 2 pending first write.
        assert!(v.recover_keys(0, &[3, 0x85, 0x81]));
        v.check(0, 0, &block(3, 0));
        v.check(0, 1, &block(5, 1));
        v.check(0, 1, &block(4, 1));
        let mut torn = block(5, 1);
        torn[4096..].copy_from_slice(&block(4, 1)[4096..]);
        v.check(0, 1, &torn);
        v.check(0, 2, &[0u8; 8192]);
        assert_eq!((v.counts().bad, v.pending_blocks()), (0, 4), "no false alarm");
        let mut flipped = block(5, 1);
        flipped[5000] ^= 1;
        v.check(0, 1, &flipped);
        v.check(0, 1, &block(3, 1));
        v.check(0, 0, &block(2, 0));
        let bad = v.bad_blocks();
        assert_eq!(bad.count, 2, "a flipped bit in a pending block, and a stale written block: {bad:?}");
        assert_eq!(bad.blocks[0].kind, BadKind::Corrupted);
        assert_eq!((bad.blocks[1].offset, bad.blocks[1].kind), (0, BadKind::Stale));
    }
}
