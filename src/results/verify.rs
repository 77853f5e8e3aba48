//! The verification section of a result (`--verify`, `--verify-only`): what was checked, every bad block (file,
//! offset, kind, expected and found), and the reads of the read-back pass that failed.

use serde::{Deserialize, Serialize};

use super::ErrorSummary;
pub use crate::verify::{BadBlock, BadKind};

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
