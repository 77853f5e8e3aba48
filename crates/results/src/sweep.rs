//! The part of a result that `streamcap sweep` fills: for every file size × record size × I/O mode, the
//! iozone-style figures (write, re-write, read, re-read, random read) with each write's closing flush apart and
//! the writes with and without it, and the cache cliff: the size where buffered re-reads fall to the device's
//! speed, set against the effective RAM (a fall the RAM cannot explain is kept apart, with why). The phases
//! behind every figure stay in `phases`. Additive to schema version 1 (`RunResult::sweep`, absent for other
//! commands); units are in the field names. Types only: the app derives them from the phases.

use serde::{Deserialize, Serialize};

/// What `sweep` measured and concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepSummary {
    /// File sizes swept, bytes, smallest first.
    pub sizes_bytes: Vec<u64>,
    /// Record (block) sizes, bytes.
    pub records_bytes: Vec<u64>,
    /// `--memory`: the memory cgroup limit the work ran under, bytes (absent: the host's own limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// The RAM the page cache could use: MemTotal or the memory cgroup's limit, whichever is smaller, bytes.
    pub effective_ram_bytes: u64,
    /// One per size × record × mode measured, in the order run.
    #[serde(default)]
    pub points: Vec<SweepPoint>,
    /// Where buffered re-reads fall to the device's speed (absent: not seen within the sizes swept, or only
    /// where it cannot be the page cache's size: then `implausible_cliff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cliff: Option<SweepCliff>,
    /// A fall of the buffered re-reads that the effective RAM cannot explain: far below it (a 1 GiB file with
    /// 23.5 GiB of RAM), or followed by larger files served from RAM again. Not named as the cliff; `why` says
    /// what likely caused it. Absent when every fall fits the RAM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implausible_cliff: Option<ImplausibleCliff>,
    /// The finding in sentences: the cliff against the RAM, or why none was seen.
    pub words: String,
    /// Why the default sizes stop where they do, when that is short of twice the effective RAM (absent: they
    /// reach it, or the sizes were given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<String>,
    /// The time budget (`--budget`), seconds (0 in results written before it existed).
    #[serde(default)]
    pub budget_s: f64,
    /// The budget stopped the sweep between two sizes: the larger sizes were not run (`bound` says so). Every
    /// point measured is complete.
    #[serde(default)]
    pub budget_stopped: bool,
    /// The sweep stopped early (Ctrl-C, an error): later points are missing or incomplete.
    #[serde(default)]
    pub partial: bool,
}

/// One file size × record size × mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Bytes of the file.
    pub size_bytes: u64,
    /// Bytes per read or write.
    pub record_bytes: u64,
    /// Direct I/O (O_DIRECT); false: buffered through the page cache.
    pub direct: bool,
    /// Decimal MB/s (10^6 bytes/s) of each pass, absent until it ran. Writes include their closing fsync
    /// (iozone's `-e`); `write_no_flush_mbps` is without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_mbps: Option<f64>,
    /// The first write without its closing fsync (iozone's write without `-e`): for a buffered file that fits in
    /// RAM, the speed of filling the page cache. MB/s; absent in results written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_no_flush_mbps: Option<f64>,
    /// The closing fsync of the first write, seconds: the end-of-write stall (dirty pages reaching the device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_flush_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_mbps: Option<f64>,
    /// The re-write without its closing fsync, MB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_no_flush_mbps: Option<f64>,
    /// The closing fsync of the re-write, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite_flush_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reread_mbps: Option<f64>,
    /// Random reads of one record over the whole file, one file's worth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_read_mbps: Option<f64>,
}

/// The cache cliff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepCliff {
    /// The largest size whose buffered re-reads were still served from RAM, bytes.
    pub cached_up_to_bytes: u64,
    /// The smallest size whose buffered re-reads came at the device's speed, bytes.
    pub device_from_bytes: u64,
    /// Buffered re-read MB/s at `cached_up_to_bytes` and at `device_from_bytes`.
    pub cached_mbps: f64,
    pub fallen_mbps: f64,
    /// The device's own speed the fall is judged against: direct sequential reads of the largest file, MB/s.
    pub device_mbps: f64,
}

/// A fall of the buffered re-reads that is not the page cache's size, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImplausibleCliff {
    /// The sizes and speeds of the fall, as a cliff would give them.
    pub fall: SweepCliff,
    /// Why it cannot be the cache's size, and what likely caused it, in sentences.
    pub why: String,
}
