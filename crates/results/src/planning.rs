//! `PlanningResult`: what `streamcap plan` concluded — per layout of the given drives, usable capacity, streams,
//! file-workload operations and costs, healthy, degraded and rebuilding, ranked by the user's goal. A schema of
//! its own ("streamcap.planning", docs/planning.md "The result"), apart from `RunResult`: a plan is a model, not a
//! measurement. Units are in the field names (`_bytes`, `_mbps` = 10^6 bytes/s, `_per_s`, `_pct` = 0–100).
//! Money is in the catalogue's one currency (`currency`).

use serde::{Deserialize, Serialize};

use super::ToolInfo;

pub const PLANNING_SCHEMA: &str = "streamcap.planning";
pub const PLANNING_SCHEMA_VERSION: u32 = 1;

/// A whole plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanningResult {
    /// Always "streamcap.planning".
    pub schema: String,
    /// Incremented when a field is removed or changes meaning.
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// The command line that produced this plan.
    pub command: Vec<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// What the ranking optimises: "cost-per-stream", "capacity" or "streams".
    pub goal: String,
    /// The currency of every price and cost; absent when some drive has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    pub workload: PlannedWorkload,
    /// Every drive model used, once.
    pub drives: Vec<PlannedDrive>,
    /// One entry per pool and layout that can be built, best first.
    pub answers: Vec<LayoutAnswer>,
    /// Pools and layouts that cannot be built, with the reason.
    pub refused: Vec<Refusal>,
    /// Assumptions worth repeating next to the figures.
    pub notes: Vec<String>,
    /// `plan --result`: what was measured on real pools and what it cost (absent when no result was given).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<MeasuredPool>,
}

/// The workload the figures answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedWorkload {
    /// The stream mix, by named format.
    pub mix: Vec<PlannedFormat>,
    /// Bytes a viewer reads per request.
    pub chunk_bytes: u64,
    /// Reader threads serving the streams (matters for btrfs's pid read policy); absent: many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_threads: Option<u32>,
    /// Background writers while the streams play, all together, decimal MB/s (0: none).
    pub ingest_mbps: f64,
    pub ingest_writers: u32,
    pub file: PlannedFileWorkload,
    /// Share of each involved member's time a rebuild takes, percent.
    pub rebuild_share_pct: f64,
    /// Bytes of data on the pool (`--data-set`); absent: data on every member (a pool full enough).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_set_bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedFormat {
    pub name: String,
    pub label: String,
    pub bitrate_bps: u64,
    /// Integer weight in the mix.
    pub weight: u32,
}

/// A file workload as vdbench describes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedFileWorkload {
    /// Reads among operations, percent (vdbench rdpct).
    pub read_pct: f64,
    /// Bytes per operation (vdbench xfersize).
    pub transfer_bytes: u64,
    /// Concurrent operations (vdbench threads).
    pub threads: u32,
    /// File size, bytes (vdbench size); absent: large files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<u64>,
    /// "random" or "sequential" (vdbench fileio).
    pub fileio: String,
}

/// One drive model as the plan used it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedDrive {
    pub name: String,
    pub product: String,
    pub source: String,
    pub capacity_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    pub read_mbps: f64,
    pub write_mbps: f64,
    pub rotational: bool,
    /// Random 4 KiB reads per second with a deep queue, as the model sees the drive.
    pub random_read_iops: f64,
}

/// One layout of one pool.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayoutAnswer {
    /// 1 = best for the goal.
    pub rank: u32,
    /// Layout name as `--layouts` takes it ("raid10", "btrfs-raid1").
    pub layout: String,
    /// In words ("md RAID10 (near 2, 512 KiB chunks)").
    pub layout_label: String,
    /// The pool in words ("4 × mg10-20tb").
    pub pool: String,
    /// Drive name of each member, in order.
    pub members: Vec<String>,
    pub raw_bytes: u64,
    pub usable_bytes: u64,
    /// Share of the raw capacity not available for data (copies, parity, unusable remainders), percent.
    pub overhead_pct: f64,
    /// Drives that may fail without data loss.
    pub tolerates: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_usable_tb: Option<f64>,
    pub healthy: ServiceFigures,
    /// One member failed (the one whose loss hurts most), not yet replaced.
    pub degraded: ServiceFigures,
    /// One member being rebuilt onto a new drive.
    pub rebuilding: ServiceFigures,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<RebuildFigures>,
}

/// What a pool serves in one state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServiceFigures {
    /// Share of the data no live member can serve, percent (0 when nothing is lost).
    pub unavailable_pct: f64,
    /// Streams of the whole mix, with ingest running.
    pub streams: u32,
    /// What limits `streams`, in words with the numbers ("seek-bound: 4 members × 59 reads/s ÷ …").
    pub streams_limit: String,
    /// Each format of the mix on its own (all viewers of that format), with ingest running.
    pub per_format: Vec<FormatStreams>,
    /// Sequential reads by one reader (1 MiB requests), decimal MB/s.
    pub seq_read_one_mbps: f64,
    /// Sequential reads by many readers, decimal MB/s.
    pub seq_read_many_mbps: f64,
    /// Sequential writes by one writer (1 MiB requests), decimal MB/s.
    pub seq_write_mbps: f64,
    /// File workload: reads per second.
    pub reads_per_s: f64,
    /// File workload: writes per second.
    pub writes_per_s: f64,
    /// What limits the file workload, in words.
    pub file_limit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_stream: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_1000_reads: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FormatStreams {
    pub name: String,
    pub streams: u32,
    pub limit: String,
    /// `streams` before it is floored to whole streams (a ratio of two pools is taken of these); 0 in results
    /// written before it existed.
    #[serde(default)]
    pub exact: f64,
}

/// How long a rebuild takes at the rebuild share.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RebuildFigures {
    /// Bytes written to the new drive.
    pub bytes: u64,
    pub hours: f64,
    /// The members the rebuild reads, by name, in words ("every member", "its mirror").
    pub reads: String,
}

/// A pool and layout that cannot be built.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refusal {
    pub layout: String,
    pub pool: String,
    pub why: String,
}

/// A pool as measured (`plan --result R.json`): its best figures and their costs at `price`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MeasuredPool {
    /// The result file's name.
    pub name: String,
    /// The measured target (a directory on the pool, or a device).
    pub target: String,
    /// The pool beneath it in words ("btrfs raid1 of 4 devices"), when the result knew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Usable bytes: the pool's usable capacity, else its filesystem's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_bytes: Option<u64>,
    /// The price given with `--price` (the plan's currency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// The best sequential read and write phases, MB/s.
    pub seq_read_mbps: Option<f64>,
    pub seq_write_mbps: Option<f64>,
    /// The best random-read phase, reads/s (vdbench and file-set reads count too).
    pub reads_per_s: Option<f64>,
    /// The largest stream count a search found (`streams --max`, `check`).
    pub streams: Option<u32>,
    /// price ÷ (reads/s ÷ 1000), price ÷ streams, price ÷ usable TB.
    pub cost_per_1000_reads: Option<f64>,
    pub cost_per_stream: Option<f64>,
    pub cost_per_usable_tb: Option<f64>,
    /// Phases left out because a cache served them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}
