//! Data verification (fio's verify, vdbench's validate): what a verified block carries, how a block read back is
//! judged, and which generation of each block is expected.
//!
//! Every verified write stamps each block of its buffer with a header (magic, offset, length, file, seed,
//! generation, algorithm, a checksum of the rest of the block) and each further 4 KiB of the block with a small
//! tag (its offset and generation), see `block.rs`. A block read back is judged against what is expected of it:
//! good, or bad in one of five ways ([`BadKind`]) — corrupted, torn, stale, lost or misdirected. A
//! [`Verifier`] (`map.rs`) holds the expected generation of every block of a run (one byte per block, like
//! vdbench's data-validation map), keeps two operations from being in flight on one block at once, and collects
//! the bad blocks. The map of a kept run is saved beside its data (`manifest.rs`), so that a later
//! `--verify-only` can check what it wrote.
//!
//! This module is pure: it never opens a file or issues I/O (the run layer reads and writes, through engines),
//! never reads a clock, and allocates nothing on the path of a good block.

#![deny(unsafe_code)]

// This crate, as `crate::verify::…` names it.
use crate as verify;

mod backlog;
mod block;
mod checksum;
mod manifest;
mod map;

use serde::{Deserialize, Serialize};

pub use backlog::{Backlog, Written};
pub use block::{HEADER_LEN, PIECE, diagnose, stamp, verify_block};
pub use manifest::{MANIFEST_FILE, MAP_FILE, Manifest, ManifestError, ManifestFile};
pub use map::{BadLog, JournalSink, LostRange, Verifier, VerifyCounts};

/// How the payload of a verified block is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// CRC-32C (Castagnoli) of the block; hardware-assisted (SSE4.2) where present.
    Crc32c,
    /// 64-bit XXH3 of the block.
    Xxhash,
    /// SHA-256 of the block.
    Sha256,
    /// The payload is a byte pattern derived from the seed, file, offset and generation, compared byte for byte.
    Pattern,
}

impl Algorithm {
    pub const ALL: [Algorithm; 4] = [Algorithm::Crc32c, Algorithm::Xxhash, Algorithm::Sha256, Algorithm::Pattern];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Crc32c => "crc32c",
            Algorithm::Xxhash => "xxhash",
            Algorithm::Sha256 => "sha256",
            Algorithm::Pattern => "pattern",
        }
    }

    fn code(self) -> u8 {
        match self {
            Algorithm::Crc32c => 1,
            Algorithm::Xxhash => 2,
            Algorithm::Sha256 => 3,
            Algorithm::Pattern => 4,
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which block a verified write produced, or a read expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockId {
    /// Index of the file in the run's file table.
    pub file: u32,
    /// Byte offset of the block in its file.
    pub offset: u64,
    /// Bytes in the block, header included.
    pub len: u32,
    /// How many times the block has been written, modulo [`GENERATIONS`] (1 ..= 127; 0 is never used).
    pub generation: u8,
    /// The run's verification seed: blocks of another run carry another one.
    pub seed: u64,
}

/// Generations count 1, 2, …, 127, 1, … (seven bits: the map keeps the eighth for "in flight").
pub const GENERATIONS: u8 = 127;

/// The generation after `g` (0, "never written", is followed by 1).
pub fn next_generation(g: u8) -> u8 {
    g % GENERATIONS + 1
}

/// How a block read back is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadKind {
    /// The block's own header is intact and right, but its content does not match its checksum or pattern (a
    /// flipped bit), or the header or a piece's tag is damaged.
    Corrupted,
    /// Some 4 KiB pieces of the block come from another write than the rest (a write that was cut short or
    /// reordered inside the block).
    Torn,
    /// A whole, intact block of an older generation (a write that was lost over an earlier one), or of
    /// another run.
    Stale,
    /// Never written: zeros or the data written before the phase (pre-fill).
    Lost,
    /// An intact block that names another offset or file: a write that landed in the wrong place.
    Misdirected,
}

impl BadKind {
    pub fn name(self) -> &'static str {
        match self {
            BadKind::Corrupted => "corrupted",
            BadKind::Torn => "torn",
            BadKind::Stale => "stale",
            BadKind::Lost => "lost",
            BadKind::Misdirected => "misdirected",
        }
    }
}

impl std::fmt::Display for BadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One bad block, as the result lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadBlock {
    /// Path of the file.
    pub file: String,
    /// Byte offset of the block in the file.
    pub offset: u64,
    /// Bytes in the block.
    pub len: u64,
    pub kind: BadKind,
    /// What the block should hold, in words (a generation, a checksum, an offset).
    pub expected: String,
    /// What it holds.
    pub found: String,
}

/// What the diagnosis of one bad block says, before the file is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub kind: BadKind,
    pub expected: String,
    pub found: String,
}
