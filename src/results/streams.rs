//! The part of a result that `streamcap streams` fills: the stream settings, one step per stream count measured
//! (one for `--count`, the curve for `--max`), the capacity answer and the estimate beside it. Additive to
//! schema version 1 (`RunResult::streams`, absent for other commands). Units are in the field names.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DeviceResult;
use crate::metrics::{DEFAULT_PERCENTILES, Histogram, LatencySummary};
use crate::streams::{IngestOutcome, SearchOutcome, StepOutcome, StreamStats};

/// What `streams` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsResult {
    /// The formats and their shares, in words ("2160p HEVC (25 Mbit/s)").
    pub label: String,
    /// Each format of the mix with its bitrate and share of the viewers.
    pub formats: Vec<FormatShare>,
    /// Bytes per chunk of the first format (others scale with their bitrate when the chunk is given in seconds).
    pub chunk_bytes: u64,
    /// Media a player keeps ahead of its playhead at most, seconds.
    pub buffer_s: f64,
    /// Media a player needs before playback starts (also after a stall or a seek), seconds.
    pub prebuffer_s: f64,
    /// Playback judged in each step once every viewer had reached steady state (its buffer full once), seconds.
    pub watch_s: f64,
    /// "one", "each", "library:N:zipf=S".
    pub assignment: String,
    /// Mean seconds between a viewer's seeks, when viewers skip around.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_every_s: Option<f64>,
    /// `--vbr`: each GOP's bitrate within ± this percentage of the mean (absent: constant bitrate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vbr_pct: Option<f64>,
    /// streamcap wrote its own test media (removed afterwards), or read the user's (`--use-existing`).
    pub own_media: bool,
    /// Media files the viewers read (local files or URLs).
    pub media_files: usize,
    /// Bytes of all the media files together.
    pub media_bytes: u64,
    /// Reads bypassed the page cache (what was in effect, after any fallback to buffered reads).
    pub direct: bool,
    /// The quality target a count must meet.
    pub target: QualityTarget,
    /// One entry per stream count measured, in the order measured.
    pub steps: Vec<StreamsStep>,
    /// `--max`: the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityAnswer>,
    /// The count the storage should sustain, from measured random-read and sequential rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<CapacityEstimate>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FormatShare {
    /// The format's name ("1080p", "2160p-hevc", or a bare bitrate the user gave).
    pub name: String,
    /// Its nominal bitrate, bits per second.
    pub bitrate_bps: u64,
    /// Share of the viewers, 0–100.
    pub share_pct: f64,
}

/// A count meets the target when at most `max_stalled_streams` streams stalled, every stream started within
/// `max_startup_s` and reached steady state (its buffer full once) within `steady_within_s` of arriving.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct QualityTarget {
    /// Streams that may stall (while starting or during playback) while the count still passes.
    pub max_stalled_streams: u32,
    /// Longest start-up any stream may take, seconds.
    pub max_startup_s: f64,
    /// Longest any stream may take from its arrival to its buffer full, seconds (0 in results written before
    /// steps were judged at steady state).
    #[serde(default)]
    pub steady_within_s: f64,
}

/// One stream count, measured. Start-up and playback are judged apart: each problem has its own count, and a
/// stream is in every count that applies to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsStep {
    /// Viewers in the step.
    pub count: u32,
    /// From the first arrival to the end of the last watch, seconds.
    pub duration_s: f64,
    /// The viewers arrived over this window (Poisson arrivals), seconds.
    #[serde(default)]
    pub arrival_s: f64,
    /// When the last viewer reached steady state (its buffer full once) and the judged playback began, seconds
    /// from the first arrival; absent when a viewer never did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_at_s: Option<f64>,
    /// Playback judged after `steady_at_s`, seconds (0 when there was none).
    #[serde(default)]
    pub judged_s: f64,
    /// A search step that ended at its first failure: when, seconds from the first arrival.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_s: Option<f64>,
    /// The step met the quality target: at most `max_stalled_streams` stalled (starting or during playback),
    /// every stream started within `max_startup_s` and reached steady state within its bound, no read failed,
    /// and it ran to its end.
    pub meets_target: bool,
    /// Streams that started within the target and played without a stall.
    pub streams_without_stall: u32,
    /// Streams that stalled during playback, after their buffer had been full.
    pub streams_stalled: u32,
    /// Streams that stalled while starting: after playback began, before their buffer was ever full.
    #[serde(default)]
    pub streams_startup_stalled: u32,
    /// Streams that never started playing within the start-up limit (not counted as stalled).
    pub streams_not_started: u32,
    /// Streams that started, but took longer than the target.
    pub streams_slow_start: u32,
    /// Streams that started but did not fill their buffer within the bound (steady state never reached).
    #[serde(default)]
    pub streams_not_steady: u32,
    /// Viewers the step ended before they arrived (a search step cut short at its first failure, or Ctrl-C):
    /// in no other count.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub streams_absent: u32,
    /// Time from each stream's arrival to its buffer full (steady state), over the streams that reached it, ns.
    #[serde(default)]
    pub time_to_steady: LatencySummary,
    /// Underruns while starting (before steady state), all streams together.
    #[serde(default)]
    pub startup_stalls: u64,
    /// Buffer underruns during playback (after steady state), all streams together (waits after a seek not
    /// counted).
    pub stalls: u64,
    /// Time stalled during playback over time watched, 0–1 (a fraction, not a percentage).
    pub stall_ratio: f64,
    /// Time spent in playback stalls, all streams together, seconds.
    pub stalled_s: f64,
    /// Time watched (from each stream's start of playback to the end of its watch), all streams together,
    /// seconds.
    pub watched_s: f64,
    /// Start-up time (stream start to playback), over the streams that started, ns.
    pub startup: LatencySummary,
    /// Chunk lateness: completion minus due time, per chunk used, ns.
    pub lateness: LatencySummary,
    /// streamcap's own delay: issue minus due time, per chunk, ns.
    pub issue_lag: LatencySummary,
    /// All streams together, MB/s = 10^6 bytes/s of media delivered over the step's duration.
    pub delivered_mbps: f64,
    /// Mean over the streams of delivered media bitrate over nominal bitrate, while watching (1 = on time).
    pub achieved_bitrate_ratio: f64,
    /// Seeks made, all streams together.
    pub seeks: u64,
    /// Chunks read but thrown away (they arrived after a seek, or after the watch ended).
    pub wasted_chunks: u64,
    /// Reads that failed.
    pub errors: u64,
    /// The first failed read, in words (operation, path, offset, error); absent when none failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// streamcap's CPU use over the step, percent of one core.
    pub cpu_pct: f64,
    /// streamcap's peak resident memory since the process started, bytes.
    pub peak_rss_bytes: u64,
    /// The engine that issued the reads ("io_uring", "sync", "null", or "http" for remote media).
    pub engine: String,
    /// Activity of each device beneath the target over the step (empty for remote media).
    pub devices: Vec<DeviceResult>,
    /// `--ingest`: the background writers that ran during this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest: Option<IngestFigures>,
    /// Ctrl-C stopped the step before every watch ended: its figures cover only what ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Per stream (kept for runs of at most 256 streams).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_stream: Vec<StreamFigures>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamFigures {
    /// The stream's nominal bitrate, bits per second.
    pub bitrate_bps: u64,
    /// From the stream's start to the start of playback, seconds; absent if it never started playing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
    /// From the stream's start to its buffer full (steady state), seconds; absent if it never was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_s: Option<f64>,
    /// The stream's arrival, seconds from the step's first arrival.
    #[serde(default)]
    pub arrived_s: f64,
    /// Underruns while starting (before steady state).
    #[serde(default)]
    pub startup_stalls: u32,
    /// From the stream's start to its first playback stall, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_stall_s: Option<f64>,
    /// Buffer underruns during playback, after steady state (waits after a seek not counted).
    pub stalls: u32,
    /// Time spent in those underruns, seconds.
    pub stalled_s: f64,
    /// From the start of playback to the end of the watch (stalls included), seconds.
    pub watched_s: f64,
    /// Seeks made.
    pub seeks: u32,
    /// Media bytes delivered (chunks used, not those thrown away).
    pub bytes: u64,
    /// Delivered bytes × 8 over watched seconds, bit/s.
    pub achieved_bps: f64,
}

/// Background writers during a step (`--ingest RATE[:N]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IngestFigures {
    /// Writer threads.
    pub writers: u32,
    /// Asked rate of all writers together, MB/s = 10^6 bytes/s.
    pub target_mbps: f64,
    /// Written over the step's wall time, MB/s = 10^6 bytes/s.
    pub achieved_mbps: f64,
    /// Bytes written by all writers together.
    pub bytes: u64,
    /// Per 1 MiB write, from its due time to its completion, ns.
    pub write_latency: LatencySummary,
    /// Writes that failed (any makes the run's exit code 1).
    #[serde(default)]
    pub errors: u64,
    /// The first failed write, in words; absent when none failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// The answer of `--max`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityAnswer {
    /// The largest count of streams that met the target (0: not even one stream).
    pub streams: u32,
    /// The smallest count measured that failed it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_failing: Option<u32>,
    /// Why that count failed, in words ("3 streams stalled").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_reason: Option<String>,
    /// The search hit its upper limit without a failure: the capacity is at least `streams`.
    pub at_limit: bool,
    /// Ctrl-C stopped the search: `streams` is what passed before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The answer in a sentence.
    pub words: String,
}

pub use crate::streams::CapacityEstimate;

/// What a step needs besides what the viewers measured: the samples the app took around it.
pub struct StepContext<'a> {
    pub bitrates: &'a [u64],
    pub target: QualityTarget,
    pub cpu: Duration,
    pub peak_rss_bytes: u64,
    pub devices: Vec<DeviceResult>,
}

fn seconds(h: &Histogram) -> LatencySummary {
    h.summary(&DEFAULT_PERCENTILES)
}

/// Summarises one step.
pub fn build_step(outcome: &StepOutcome, context: StepContext<'_>) -> StreamsStep {
    let streams = &outcome.streams;
    let max_startup = Duration::from_secs_f64(context.target.max_startup_s);
    let Totals { startup, to_steady, watched, stalled_time, bytes, ratio_sum, ratio_n } =
        totals(streams, context.bitrates);
    let elapsed = outcome.elapsed.as_secs_f64();
    let fine = |s: &StreamStats| {
        s.startup.is_some_and(|u| u <= max_startup) && s.stalls == 0 && s.startup_stalls == 0 && s.bytes > 0
    };
    StreamsStep {
        count: outcome.count,
        duration_s: elapsed,
        arrival_s: outcome.arrival.as_secs_f64(),
        steady_at_s: outcome.steady_at.map(|d| d.as_secs_f64()),
        judged_s: outcome.steady_at.map_or(0.0, |d| (elapsed - d.as_secs_f64()).max(0.0)),
        cut_s: outcome.cut.map(|d| d.as_secs_f64()),
        meets_target: outcome.meets(context.target.max_stalled_streams, max_startup),
        streams_without_stall: streams.iter().filter(|s| fine(s)).count() as u32,
        streams_stalled: outcome.stalled(),
        streams_startup_stalled: outcome.startup_stalled(),
        streams_not_started: outcome.never_started(max_startup),
        streams_slow_start: outcome.slow_starts(max_startup),
        streams_not_steady: outcome.not_steady(),
        streams_absent: outcome.count - outcome.audience(),
        time_to_steady: seconds(&to_steady),
        startup_stalls: streams.iter().map(|s| u64::from(s.startup_stalls)).sum(),
        stalls: streams.iter().map(|s| u64::from(s.stalls)).sum(),
        stall_ratio: if watched > 0.0 { stalled_time / watched } else { 0.0 },
        stalled_s: stalled_time,
        watched_s: watched,
        startup: seconds(&startup),
        lateness: seconds(&outcome.lateness),
        issue_lag: seconds(&outcome.issue_lag),
        delivered_mbps: if elapsed > 0.0 { bytes as f64 / elapsed / 1e6 } else { 0.0 },
        achieved_bitrate_ratio: if ratio_n > 0 { ratio_sum / f64::from(ratio_n) } else { 0.0 },
        seeks: streams.iter().map(|s| u64::from(s.seeks)).sum(),
        wasted_chunks: streams.iter().map(|s| s.wasted_chunks).sum(),
        errors: outcome.errors,
        first_error: outcome.first_error.clone(),
        cpu_pct: if elapsed > 0.0 { context.cpu.as_secs_f64() / elapsed * 100.0 } else { 0.0 },
        peak_rss_bytes: context.peak_rss_bytes,
        engine: outcome.engine.into(),
        devices: context.devices,
        ingest: outcome.ingest.as_ref().map(|i| ingest_figures(i, outcome.elapsed)),
        interrupted: outcome.interrupted,
        per_stream: per_stream(streams, context.bitrates),
    }
}

/// What the streams of a step add up to.
struct Totals {
    startup: Histogram,
    to_steady: Histogram,
    watched: f64,
    stalled_time: f64,
    bytes: u64,
    /// Sum of achieved over nominal bitrate, over the streams that watched.
    ratio_sum: f64,
    ratio_n: u32,
}

fn totals(streams: &[StreamStats], bitrates: &[u64]) -> Totals {
    let mut t = Totals {
        startup: Histogram::new(),
        to_steady: Histogram::new(),
        watched: 0.0,
        stalled_time: 0.0,
        bytes: 0,
        ratio_sum: 0.0,
        ratio_n: 0,
    };
    for (s, &bps) in streams.iter().zip(bitrates) {
        if let Some(up) = s.startup {
            t.startup.record(up.as_nanos() as u64);
        }
        if let Some(steady) = s.steady {
            t.to_steady.record(steady.as_nanos() as u64);
        }
        t.watched += s.watched.as_secs_f64();
        t.stalled_time += s.stalled.as_secs_f64();
        t.bytes += s.bytes;
        if s.watched > Duration::ZERO {
            t.ratio_sum += achieved_bps(s) / bps as f64;
            t.ratio_n += 1;
        }
    }
    t
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn per_stream(streams: &[StreamStats], bitrates: &[u64]) -> Vec<StreamFigures> {
    if streams.len() > 256 {
        return Vec::new();
    }
    streams
        .iter()
        .zip(bitrates)
        .map(|(s, &bps)| StreamFigures {
            bitrate_bps: bps,
            startup_s: s.startup.map(|d| d.as_secs_f64()),
            steady_s: s.steady.map(|d| d.as_secs_f64()),
            arrived_s: s.arrived.as_secs_f64(),
            startup_stalls: s.startup_stalls,
            first_stall_s: s.first_stall.map(|d| d.as_secs_f64()),
            stalls: s.stalls,
            stalled_s: s.stalled.as_secs_f64(),
            watched_s: s.watched.as_secs_f64(),
            seeks: s.seeks,
            bytes: s.bytes,
            achieved_bps: achieved_bps(s),
        })
        .collect()
}

fn ingest_figures(i: &IngestOutcome, elapsed: Duration) -> IngestFigures {
    let seconds = elapsed.as_secs_f64();
    IngestFigures {
        writers: i.writers,
        target_mbps: i.target_bytes_per_sec / 1e6,
        achieved_mbps: if seconds > 0.0 { i.bytes as f64 / seconds / 1e6 } else { 0.0 },
        bytes: i.bytes,
        write_latency: i.write_latency.summary(&DEFAULT_PERCENTILES),
        errors: i.errors,
        first_error: i.first_error.clone(),
    }
}

/// Media delivered per second watched. Playback consumes the nominal bitrate, so a stream that kept up
/// delivers at least that (plus what sits in its buffer at the end).
fn achieved_bps(s: &StreamStats) -> f64 {
    let watched = s.watched.as_secs_f64();
    if watched > 0.0 { s.bytes as f64 * 8.0 / watched } else { 0.0 }
}

impl StreamsStep {
    /// Why a step failed the target, in words ("3 streams stalled during playback", "2 never started"); start-up
    /// and playback apart, and "never started" never called a stall.
    pub fn failure_reason(&self, target: &QualityTarget) -> Option<String> {
        if self.meets_target {
            return None;
        }
        let mut why = Vec::new();
        let stalled = self.streams_stalled + self.streams_startup_stalled;
        if stalled > target.max_stalled_streams && self.streams_stalled > 0 {
            why.push(format!(
                "{} stream{} stalled during playback",
                self.streams_stalled,
                plural(self.streams_stalled)
            ));
        }
        if stalled > target.max_stalled_streams && self.streams_startup_stalled > 0 {
            why.push(format!("{} stalled while starting", self.streams_startup_stalled));
        }
        if self.streams_not_started > 0 {
            why.push(format!("{} never started", self.streams_not_started));
        }
        if self.streams_slow_start > 0 {
            why.push(format!("{} took over {} s to start", self.streams_slow_start, trim(target.max_startup_s)));
        }
        if self.streams_not_steady > 0 {
            let n = self.streams_not_steady;
            why.push(format!("{n} did not fill {} buffer within {} s", its(n), trim(target.steady_within_s)));
        }
        if self.errors > 0 {
            why.push(format!("{} read error{}", self.errors, plural(self.errors as u32)));
        }
        if why.is_empty() {
            why.push("interrupted".into());
        }
        Some(why.join(", "))
    }
}

impl StreamsStep {
    /// When every buffer was full, for a table cell: "9.2 s", or "—" when a viewer never filled it.
    pub fn steady_cell(&self) -> String {
        self.steady_at_s.map_or_else(|| "—".into(), |at| format!("{at:.1} s"))
    }
}

fn its(n: u32) -> &'static str {
    if n == 1 { "its" } else { "their" }
}

/// The answer of a capacity search, in figures and in a sentence.
pub fn capacity_answer(
    found: &SearchOutcome,
    steps: &[StreamsStep],
    target: &QualityTarget,
    label: &str,
) -> CapacityAnswer {
    let failing = found.first_failing.and_then(|n| steps.iter().rev().find(|s| s.count == n));
    let failing_reason = failing.and_then(|s| s.failure_reason(target));
    let quality = if target.max_stalled_streams == 0 {
        "with no stall".to_string()
    } else {
        format!("with at most {} stalled", target.max_stalled_streams)
    };
    let mut words = if found.stopped && found.best == 0 {
        format!("search interrupted before any count of {label} was measured to the end")
    } else {
        format!("sustains {} × {label} {quality}", found.best)
    };
    match (found.first_failing, &failing_reason) {
        (Some(n), Some(why)) => words.push_str(&format!("; at {n}, {why}")),
        _ if found.at_limit => words.push_str(" (the search limit; it may sustain more)"),
        _ => {}
    }
    if found.stopped && found.best > 0 {
        words.push_str(" (search interrupted)");
    }
    CapacityAnswer {
        streams: found.best,
        first_failing: found.first_failing,
        failing_reason,
        at_limit: found.at_limit,
        interrupted: found.stopped,
        words,
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
