//! `TrialResult`: what `streamcap trial` measured on each layout it built, beside the planner's prediction
//! (schema `streamcap.trial`, docs/planning.md "Trial"). Plain data; the app fills it and prints it.

use serde::{Deserialize, Serialize};

use super::{PlannedDrive, ToolInfo};

pub const TRIAL_SCHEMA: &str = "streamcap.trial";
pub const TRIAL_SCHEMA_VERSION: u32 = 1;

/// The whole trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialResult {
    /// "streamcap.trial".
    pub schema: String,
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// The command line.
    pub command: Vec<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// The devices every layout was built from, in order.
    pub devices: Vec<TrialDevice>,
    /// The drive model the predictions used (a catalogue entry, or measured on the first device).
    pub drive: PlannedDrive,
    /// The stream format of the capacity search: its name and bitrate in bits/s.
    pub format: String,
    pub bitrate_bps: u64,
    /// Bytes each viewer reads per request.
    pub chunk_bytes: u64,
    /// Ctrl-C stopped the trial: the layouts after the one under way were not built.
    pub interrupted: bool,
    /// Each layout in the order built.
    pub layouts: Vec<TrialLayout>,
}

/// One device of the trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialDevice {
    /// As given on the command line.
    pub path: String,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// One layout: how it was built and what it measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialLayout {
    /// The planner's name ("btrfs-raid10").
    pub layout: String,
    /// In words ("btrfs raid10 (64 KiB stripes, pid read policy)").
    pub label: String,
    /// How many devices it was built from.
    pub members: usize,
    /// "measured", "interrupted" or "failed".
    pub status: String,
    /// Why it failed or stopped, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub figures: Vec<TrialFigure>,
}

/// One figure: the planner's prediction beside the measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialFigure {
    /// What was measured ("seq write").
    pub figure: String,
    /// Its unit ("MB/s" = 10^6 bytes/s, "reads/s", "streams").
    pub unit: String,
    /// The planner's figure (for streams: with many reader threads, every copy used).
    pub predicted: f64,
    /// For streams on btrfs mirrors: the planner's figure with one reader thread (one copy); absent when equal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_low: Option<f64>,
    /// The measurement; absent when the phase did not finish.
    pub measured: Option<f64>,
    /// measured ÷ predicted.
    pub ratio: Option<f64>,
    /// The measurement is a lower bound (the stream search reached its limit without a failure).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lower_bound: bool,
    /// For streams: a larger count passed, but only from a cache (its devices read less than its viewers
    /// received, `StreamsStep::served`); `measured` is the largest count the devices served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_served: Option<f64>,
    /// For the sequential and random figures: bytes the devices (the layout's members) moved in the phase's
    /// measured time for each byte measured. At least 1 when all of it reached the devices within the phase
    /// (2 on a mirror's writes, about n ÷ (n − 1) on parity's); below 1, part of the figure is a cache's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_devices: Option<f64>,
}
