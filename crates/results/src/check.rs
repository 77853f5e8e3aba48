//! The part of a result that `streamcap check` fills: the headline figures of its raw and small-file phases
//! (which stay in `phases` with everything else) and the verdict per video format. Additive to schema version 1
//! (`RunResult::check`, absent for other commands). Units are in the field names.

use serde::{Deserialize, Serialize};

use super::{CapacityAnswer, CapacityEstimate, Plateau, PlateauKind, StreamsStep};

/// What `check` concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckSummary {
    /// "quick", "default" or "thorough".
    pub profile: String,
    /// Wall time of the whole check, seconds.
    pub elapsed_s: f64,
    /// Size of the raw data set, bytes (smaller than the profile's when free space is short).
    pub data_set_bytes: u64,
    /// The library the stream phases read: the profile's generated library or the user's (`--library`), with
    /// its titles, size and why that size (absent in results written before libraries existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<::streams::LibraryInfo>,
    /// Sequential 1 MiB writes and reads (queue depth 8), decimal MB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialFigures>,
    /// 4 KiB random reads, one entry per queue depth measured (1 and 32).
    #[serde(default)]
    pub random_reads: Vec<RandomFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_files: Option<SmallFileFigures>,
    /// Page cache versus device, the access time, and which the streams were served from (absent in results
    /// written before it existed, or before its phases ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CheckCache>,
    /// The player profile the viewers played as (`--player`, default generic), stated in every report (absent
    /// in results written before profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<CheckPlayer>,
    /// One entry per video format, in the order shown.
    #[serde(default)]
    pub verdict: Vec<FormatVerdict>,
    /// `--expect`: the household asked about and whether it plays (absent when not asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub household: Option<super::HouseholdAnswer>,
    /// The check stopped before the end (Ctrl-C): later sections are missing.
    #[serde(default)]
    pub partial: bool,
    /// One line from the planner: what a pool of drives like this one would serve (docs/planning.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_hint: Option<String>,
    /// A check of a pool: the member drive the planner inferred from it and what the pool's other layouts would
    /// serve (docs/planning.md, "A drive from a pool").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_member: Option<PlannerMember>,
    /// `--thorough` or `--during`: what breaks first, each format's capacity alone and beside each background
    /// load (absent without loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaks_first: Option<super::BreaksFirst>,
}

/// The player profile a check's viewers played as (`spec::players`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckPlayer {
    /// The profile's name, as `--player` takes it ("generic", "media3").
    pub name: String,
    /// The profile in words: "generic (10 s buffer, 2 s to start)".
    pub described: String,
    /// The verdict's start-up limit for this player (`Profile::startup_target`), seconds; 2 in results
    /// written before it followed the player.
    #[serde(default = "two_seconds")]
    pub max_startup_s: f64,
    /// Viewers in ten that may start later than `max_startup_s` (but within twice it): 1 since the verdict
    /// allows one late start in ten (`streams::judge::slow_starts_allowed`); 0 in results written before, where
    /// every viewer had to start within the limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_starts_in_ten: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn two_seconds() -> f64 {
    2.0
}

impl CheckSummary {
    /// The verdict's start-up limit, seconds: the player's (2 s before profiles).
    pub fn max_startup_s(&self) -> f64 {
        self.player.as_ref().map_or(2.0, |p| p.max_startup_s)
    }

    /// The verdict's heading: what a counted stream must do.
    pub fn verdict_title(&self) -> String {
        verdict_title(self.max_startup_s(), self.player.as_ref().map_or(0, |p| p.late_starts_in_ten))
    }
}

/// "… start-up within 2 s", and the late starts the verdict allowed when it allowed any ("one in ten within
/// 4 s"): the rule the stored verdict was judged by, so an older result keeps its own.
fn verdict_title(max_startup_s: f64, late_starts_in_ten: u32) -> String {
    let secs = |s: f64| if s.fract() == 0.0 { format!("{s:.0}") } else { format!("{s:.1}") };
    let late = match late_starts_in_ten {
        0 => String::new(),
        n => format!(" ({} in ten within {} s)", words(n), secs(max_startup_s * 2.0)),
    };
    format!("concurrent streams with no stall and start-up within {} s{late}", secs(max_startup_s))
}

fn words(n: u32) -> String {
    ["zero", "one", "two", "three"].get(n as usize).map_or_else(|| n.to_string(), |w| w.to_string())
}

/// One member of the checked pool as the planner infers it from the pool's measurement, and the planner's
/// comparison of the layouts those drives can make. Streams are the planner's (a full pool, many readers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannerMember {
    /// The pool's layout in the planner's words ("btrfs-raid1").
    pub layout: String,
    /// Members of the pool.
    pub members: u32,
    /// Each member's size, bytes.
    pub capacity_bytes: u64,
    pub rotational: bool,
    /// One member's sequential 1 MiB reads, decimal MB/s.
    pub read_mbps: f64,
    /// One member's sequential 1 MiB writes, decimal MB/s.
    pub write_mbps: f64,
    /// One member's 4 KiB random reads per second at queue depth 32.
    pub random_read_iops: f64,
    /// The same at queue depth 1.
    pub random_read_iops_qd1: f64,
    /// The format compared: the most demanding one the check sustained ("2160p-remux").
    pub format: String,
    /// Streams of `format` the planner gives the pool's own layout.
    pub current_streams: u32,
    /// The layout of the same drives that serves the most streams of `format` (the pool's own when none serves
    /// more), and its streams.
    pub best_layout: String,
    pub best_streams: u32,
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

/// check's cache section: the plateaus of `streamcap cache` that the check measures (its own page-cache phase,
/// its sequential reads as the sustained media, its 4 KiB reads at depth 1 as the access time), and where the
/// stream phases' reads came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckCache {
    /// Page cache, sustained media, access time, as `cache` labels them; bounds for `bitrate_bps` streams in
    /// `chunk_bytes` chunks.
    pub plateaus: Vec<Plateau>,
    /// The stream the bounds are worked out for, bits/s.
    pub bitrate_bps: u64,
    /// Bytes per chunk of that stream.
    pub chunk_bytes: u64,
    /// A device beneath says it is rotational yet measured beyond what platters do: the sentence saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implausible: Option<String>,
    /// The plateau the stream phases were served from (absent until a stream phase has run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_from: Option<PlateauKind>,
    /// The same in words, with the bytes behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_words: Option<String>,
    /// Bytes the viewers read over every step, and bytes the target's devices read meanwhile.
    #[serde(default)]
    pub viewer_bytes: u64,
    #[serde(default)]
    pub device_read_bytes: u64,
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
    /// The format's one capacity: streams sustained with no stall and every start within the target, the
    /// median over the runs of the edge (`capacity`, which also holds its range and the comfortable count). 0
    /// when not measured (`capacity.not_measured` says why).
    pub streams: u32,
    /// What stopped more streams, in words: "disk throughput", "seeks", "start-up time", "a throttle", "the
    /// network", "the client (streamcap fell behind)", "read errors", "not reached (search limit)" (at least
    /// `streams`), "not measured", or "—".
    pub limited_by: String,
    /// A bound, not a capacity: streams the check's sequential reads (1 MiB, queue depth 8: the cache table's
    /// sustained media) would carry at 100 %, sequential MB/s ÷ stream MB/s, rounded down (0: not measured).
    pub bandwidth_ceiling: u32,
    /// Share of that ceiling left unused at the capacity, percent: (ceiling − streams) ÷ ceiling × 100. Absent
    /// when either is not measured or the capacity is beyond the ceiling (never negative).
    #[serde(default)]
    pub headroom_pct: Option<f64>,
    /// The capacity is beyond the sequential ceiling: the viewers drew more than the device's sequential reads
    /// deliver, so a cache (the drive's, a controller's, the host's) served some of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond_ceiling: bool,
    /// The capacity is beyond the sequential ceiling, yet a pool's members read every byte the viewers received
    /// in the steps that ran it (`StreamsStep::device_read_bytes`, not cache-served) and no device's figures
    /// point at a cache beneath: the sequential phase understated what the disks deliver to the library (its
    /// small data set can lie on fewer members than the library's titles). Never set with `beyond_ceiling`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ceiling_understated: bool,
    pub capacity: CapacityAnswer,
    /// From raw rates on the same media (random chunk reads, sequential reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<CapacityEstimate>,
    /// Every count measured by the search, in order.
    pub steps: Vec<StreamsStep>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict's heading states the start-up limit the verdict used: the player's, 2 s before profiles.
    #[test]
    fn the_verdict_title_states_the_players_start_up_limit() {
        assert_eq!(verdict_title(2.0, 0), "concurrent streams with no stall and start-up within 2 s");
        assert_eq!(verdict_title(6.0, 0), "concurrent streams with no stall and start-up within 6 s");
        assert_eq!(verdict_title(2.5, 0), "concurrent streams with no stall and start-up within 2.5 s");
        assert_eq!(
            verdict_title(2.0, 1),
            "concurrent streams with no stall and start-up within 2 s (one in ten within 4 s)"
        );
        assert_eq!(
            verdict_title(2.5, 1),
            "concurrent streams with no stall and start-up within 2.5 s (one in ten within 5 s)"
        );
        let old: CheckPlayer = serde_json::from_str(r#"{"name":"generic","described":"generic"}"#).unwrap();
        assert_eq!((old.max_startup_s, old.late_starts_in_ten), (2.0, 0), "judged strictly before");
    }
}
