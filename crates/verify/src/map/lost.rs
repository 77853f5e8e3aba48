//! What a read-back cannot read at all: a file that ends before the blocks written to it (truncated), or that
//! is not there (deleted, or replaced by something `--verify-only` does not follow). Every written block in the
//! missing range is a lost block, counted with the bad blocks; the range is kept once, with its offsets and why,
//! rather than block by block (a deleted 64 GiB file is one line, not sixteen million).

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::{BUSY, GENERATION, Verifier};

/// A range of a file whose written blocks could not be read back at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostRange {
    /// Path of the file.
    pub file: String,
    /// Byte offset of the first lost block.
    pub offset: u64,
    /// Bytes from `offset` to the end of the last lost block.
    pub len: u64,
    /// Written blocks in the range (each one lost, and counted among the bad blocks).
    pub blocks: u64,
    /// Why they could not be read, in words (where the file ends now, or that it is missing).
    pub why: String,
}

impl Verifier {
    /// `file` holds nothing from byte `end` on (`why` says what happened): every block with known content that
    /// is not wholly before `end` is lost. Counts them as bad blocks and keeps the range (the first `keep`
    /// ranges). A block whose operation never completed is not counted (what it held is not known), unless a
    /// journaled run is being recovered, where it held one of two generations and is lost as well.
    pub fn missing(&self, file: u32, end: u64, why: &str) {
        let f = &self.files[file as usize];
        let first = (end / u64::from(self.block)) as usize;
        let mut lost: Option<(usize, usize)> = None;
        let mut blocks = 0u64;
        for (i, key) in f.keys.iter().enumerate().skip(first) {
            let key = key.load(Ordering::Relaxed);
            if key & GENERATION == 0 || (key & BUSY != 0 && !self.recovering) {
                continue;
            }
            blocks += 1;
            lost = Some((lost.map_or(i, |(lo, _)| lo), i));
        }
        let Some((lo, hi)) = lost else { return };
        let (offset, _) = self.span(file, lo);
        let (last, last_len) = self.span(file, hi);
        let mut log = self.bad.lock().unwrap_or_else(|p| p.into_inner());
        log.count += blocks;
        if log.missing.len() < self.keep {
            log.missing.push(LostRange {
                file: f.name.clone(),
                offset,
                len: last + last_len as u64 - offset,
                blocks,
                why: why.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Algorithm;

    #[test]
    fn the_written_blocks_past_the_end_are_lost_as_one_range() {
        let v = Verifier::new(Algorithm::Crc32c, 4096, 1, vec![("d0".into(), 10 * 4096)], 10);
        let mut buf = vec![0u8; 8 * 4096];
        assert!(v.begin_write(0, 0, &mut buf));
        v.end_write(0, 0, buf.len(), true);
        // Truncated at 5 KiB: block 1 (4..8 KiB) is cut, blocks 1..=7 are lost; 8 and 9 were never written.
        v.missing(0, 5 * 1024, "the file ends at 5120");
        let bad = v.bad_blocks();
        assert_eq!(bad.count, 7);
        assert_eq!(v.counts().bad, 7);
        let range = &bad.missing[0];
        assert_eq!((range.offset, range.len, range.blocks), (4096, 7 * 4096, 7));
        assert_eq!((range.file.as_str(), range.why.as_str()), ("d0", "the file ends at 5120"));
        v.missing(0, 10 * 4096, "nothing written there");
        assert_eq!(v.bad_blocks().missing.len(), 1, "a range without written blocks is not a loss");
    }
}
