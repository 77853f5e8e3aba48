//! The verification section of a result (`--verify`, `--verify-only`): what was checked, every bad block (file,
//! offset, kind, expected and found), and the reads of the read-back pass that failed. Under mpirun each rank
//! checks the data it wrote, and the ranks' sections are merged into one (`merge_ranks`), each rank's own
//! figures kept beside it (`RankVerify`).

use serde::{Deserialize, Serialize};

use super::ErrorSummary;
pub use ::verify::{BadBlock, BadKind, LostRange};

/// Data verification over a run (`--verify`) or over a kept run (`--verify-only`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyResult {
    /// "crc32c", "xxhash", "sha256" or "pattern".
    pub algorithm: String,
    /// Bytes per verified block.
    pub block_bytes: u64,
    /// Blocks read back and checked (by reads during the phases and by the read-back pass).
    pub blocks_checked: u64,
    /// Bytes in those blocks.
    pub bytes_checked: u64,
    /// Bad blocks found; any makes the exit code 1.
    pub bad_count: u64,
    /// The first bad blocks (up to 1,000), each with file, offset, kind, expected and found.
    pub bad_blocks: Vec<BadBlock>,
    /// The pass that reads back everything written ran to its end (false after Ctrl-C).
    pub pass_complete: bool,
    /// Reads of the read-back pass that failed; the blocks they held were not checked.
    pub read_errors: ErrorSummary,
    /// Ranges of files that ended before their written blocks, or were missing (deleted, or replaced by a
    /// symbolic link, which is never followed), when read back: every written block there is lost and counted
    /// in `bad_count`. The first 1,000, each with file, offset, len (bytes), blocks and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_ranges: Vec<LostRange>,
    /// `--verify-only`: the kept run's work directory that was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `--keep`: the manifest written for a later `--verify-only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// `--verify-only` of a journaled run: blocks whose write was in flight when the run ended (each may hold
    /// its new data, its old data or a torn mix of the two; anything else is a bad block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
}

impl VerifyResult {
    /// Whether verification found anything wrong: a bad block, or a block that could not be read back.
    pub fn failed(&self) -> bool {
        self.bad_count > 0 || self.read_errors.count > 0
    }
}

/// The bad blocks and failed reads a merged section keeps in detail (each rank already kept at most this many).
const KEPT: usize = 1000;

/// One rank's verification, in the per-rank breakdown of a multi-host run (`ClusterResult::verify`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankVerify {
    pub rank: u32,
    pub host: String,
    /// Blocks this rank read back and checked.
    pub blocks_checked: u64,
    /// Bytes in those blocks.
    pub bytes_checked: u64,
    /// Bad blocks this rank found.
    pub bad_count: u64,
    /// Reads of this rank's read-back pass that failed.
    pub read_errors: u64,
    /// This rank's read-back pass ran to its end.
    pub pass_complete: bool,
    /// `--keep`: this rank's manifest, on its host, for a later `--verify-only` there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
}

/// Every rank's section (rank, host and what it checked, in rank order) as one: the counts added, the bad blocks
/// and failed reads listed rank after rank (up to 1,000 each), complete only if every rank's pass was; and each
/// rank's own figures. `None` when no rank verified.
pub fn merge_ranks(each: &[(u32, String, Option<VerifyResult>)]) -> Option<(VerifyResult, Vec<RankVerify>)> {
    let mut merged: Option<VerifyResult> = None;
    let mut ranks = Vec::new();
    for (rank, host, verify) in each {
        let Some(v) = verify else { continue };
        ranks.push(RankVerify {
            rank: *rank,
            host: host.clone(),
            blocks_checked: v.blocks_checked,
            bytes_checked: v.bytes_checked,
            bad_count: v.bad_count,
            read_errors: v.read_errors.count,
            pass_complete: v.pass_complete,
            manifest: v.manifest.clone(),
        });
        let Some(all) = merged.as_mut() else {
            merged = Some(v.clone());
            continue;
        };
        all.blocks_checked += v.blocks_checked;
        all.bytes_checked += v.bytes_checked;
        all.bad_count += v.bad_count;
        all.bad_blocks.extend(v.bad_blocks.iter().take(KEPT.saturating_sub(all.bad_blocks.len())).cloned());
        all.lost_ranges.extend(v.lost_ranges.iter().take(KEPT.saturating_sub(all.lost_ranges.len())).cloned());
        all.pass_complete &= v.pass_complete;
        if v.in_flight.is_some() {
            all.in_flight = Some(all.in_flight.unwrap_or(0) + v.in_flight.unwrap_or(0));
        }
        all.read_errors.count += v.read_errors.count;
        let room = KEPT.saturating_sub(all.read_errors.records.len());
        all.read_errors.records.extend(v.read_errors.records.iter().take(room).cloned());
    }
    merged.map(|all| (all, ranks))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(blocks: u64, bad: u64, complete: bool) -> VerifyResult {
        VerifyResult {
            algorithm: "crc32c".into(),
            block_bytes: 4096,
            blocks_checked: blocks,
            bytes_checked: blocks * 4096,
            bad_count: bad,
            bad_blocks: Vec::new(),
            pass_complete: complete,
            read_errors: ErrorSummary::default(),
            lost_ranges: Vec::new(),
            from: None,
            manifest: None,
            in_flight: None,
        }
    }

    /// Guards issue 14's gap: under mpirun the result kept rank 0's section alone ("0 blocks checked" when rank 0
    /// idled). The merged counts are every rank's, and each rank keeps its own figures.
    #[test]
    fn every_ranks_blocks_are_counted_and_each_rank_keeps_its_own() {
        let each = [
            (0, "a".to_string(), Some(section(0, 0, true))),
            (1, "b".to_string(), Some(section(300, 2, true))),
            (2, "c".to_string(), Some(section(100, 0, false))),
        ];
        let (all, ranks) = merge_ranks(&each).expect("verified");
        assert_eq!((all.blocks_checked, all.bytes_checked, all.bad_count), (400, 400 * 4096, 2));
        assert!(!all.pass_complete, "rank 2's pass did not finish");
        let own: Vec<(u32, u64, u64)> = ranks.iter().map(|r| (r.rank, r.blocks_checked, r.bad_count)).collect();
        assert_eq!(own, [(0, 0, 0), (1, 300, 2), (2, 100, 0)]);
        assert!(merge_ranks(&[(0, "a".to_string(), None)]).is_none());
    }
}
