//! The part of a result that `streamcap check` fills: the headline figures of its raw and small-file phases
//! (which stay in `phases` with everything else) and the verdict per video format. Additive to schema version 1
//! (`RunResult::check`, absent for other commands). Units are in the field names.

use serde::{Deserialize, Serialize};

use super::{CapacityAnswer, CapacityEstimate, StreamsStep};

/// What `check` concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckSummary {
    /// "quick", "default" or "thorough".
    pub profile: String,
    /// Wall time of the whole check, seconds.
    pub elapsed_s: f64,
    /// Size of the raw data set, bytes (smaller than the profile's when free space is short).
    pub data_set_bytes: u64,
    /// Sequential 1 MiB writes and reads (queue depth 8), decimal MB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialFigures>,
    /// 4 KiB random reads, one entry per queue depth measured (1 and 32).
    #[serde(default)]
    pub random_reads: Vec<RandomFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_files: Option<SmallFileFigures>,
    /// One entry per video format, in the order shown.
    #[serde(default)]
    pub verdict: Vec<FormatVerdict>,
    /// The check stopped before the end (Ctrl-C): later sections are missing.
    #[serde(default)]
    pub partial: bool,
    /// One line from the planner: what a pool of drives like this one would serve (docs/planning.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_hint: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SequentialFigures {
    pub write_mbps: f64,
    pub read_mbps: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RandomFigures {
    pub queue_depth: u32,
    pub iops: f64,
    /// 99th percentile of completion latency, nanoseconds.
    pub p99_ns: u64,
}

/// Operations per second on a tree of small files.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SmallFileFigures {
    pub files: u64,
    pub file_bytes: u64,
    /// Files created and written per second (the tree's format step: every file once, several threads).
    pub create_per_s: f64,
    /// stat() calls per second.
    pub stat_per_s: f64,
    /// Whole-file reads per second (open, read, close).
    pub read_per_s: f64,
    /// The files were opened with O_DIRECT, so reads came from the device rather than the page cache.
    pub direct: bool,
}

/// One line of the verdict table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FormatVerdict {
    /// The format's name ("1080p", "2160p-hevc", "2160p-remux").
    pub name: String,
    /// In words ("2160p HEVC (25 Mbit/s)").
    pub label: String,
    pub bitrate_bps: u64,
    /// Streams sustained with no stall and every start within the target (the capacity search's answer).
    pub streams: u32,
    /// What stopped more streams: "stalls", "start-up time", "read errors", "search limit" (at least
    /// `streams`), or "interrupted"; followed by the estimate's binding bound, e.g. "stalls (bandwidth)".
    pub limited_by: String,
    /// Streams the measured sequential read bandwidth allows at 100 %: sequential MB/s ÷ stream MB/s, rounded
    /// down.
    pub bandwidth_ceiling: u32,
    /// Share of that ceiling left unused at the sustained count, percent: (ceiling − streams) ÷ ceiling × 100.
    /// Negative when the viewers drew more than that measurement (more reads in flight than its queue depth of 4,
    /// or a cache served them).
    pub headroom_pct: f64,
    pub capacity: CapacityAnswer,
    /// From raw rates on the same media (random chunk reads, sequential reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<CapacityEstimate>,
    /// Every count measured by the search, in order.
    pub steps: Vec<StreamsStep>,
}
