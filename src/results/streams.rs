//! The part of a result that `streamcap streams` fills: the stream settings, one step per stream count measured
//! (one for `--count`, the curve for `--max`), the capacity answer and the estimate beside it. Additive to
//! schema version 1 (`RunResult::streams`, absent for other commands). Units are in the field names.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DeviceResult;
use super::served::{Beneath, StepServed, judge_step};
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
    /// Wall time each viewer watched, seconds.
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

/// A count meets the target when at most `max_stalled_streams` streams stalled and every stream started
/// within `max_startup_s`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct QualityTarget {
    /// Streams that may stall (or never start) while the count still passes.
    pub max_stalled_streams: u32,
    /// Longest start-up any stream may take, seconds.
    pub max_startup_s: f64,
}

/// One stream count, measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsStep {
    /// Viewers in the step.
    pub count: u32,
    /// From the first start to the end of the last watch, seconds.
    pub duration_s: f64,
    /// The step met the quality target: at most `max_stalled_streams` stalled, every start within
    /// `max_startup_s`, no read failed, and it ran to its end.
    pub meets_target: bool,
    /// Streams that played to the end without a buffer underrun.
    pub streams_without_stall: u32,
    /// Streams with at least one stall.
    pub streams_stalled: u32,
    /// Streams that never started playing (counted as stalled too).
    pub streams_not_started: u32,
    /// Streams whose start-up took longer than the target.
    pub streams_slow_start: u32,
    /// Buffer underruns during playback, all streams together (waits after a seek not counted).
    pub stalls: u64,
    /// Total stalled time over total watched time, 0–1 (a fraction, not a percentage).
    pub stall_ratio: f64,
    /// Time spent in stalls, all streams together, seconds.
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
    /// Activity of each device beneath the target over the step (empty for remote media, unless
    /// `--served-from` named the server's document root on this host).
    pub devices: Vec<DeviceResult>,
    /// Bytes the viewers' reads transferred over the step, chunks used and thrown away alike (0 in results
    /// older than it).
    #[serde(default)]
    pub read_bytes: u64,
    /// Whether the devices beneath read what the viewers received, or a cache served the step
    /// (`device_read_bytes`, `cache_served`, `served_words`; see `results::served`).
    #[serde(flatten)]
    pub served: StepServed,
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
    /// Buffer underruns during playback (waits after a seek not counted).
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
    /// The search's largest passing count, when its step was served from a cache rather than by the devices
    /// (`StreamsStep::served`): then `streams` is the largest passing count the devices served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_served: Option<u32>,
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
    /// Why the devices beneath cannot be set beside the viewers' bytes (a remote server, clients on other
    /// hosts, the null engine); `None`: judge the step by `devices`.
    pub unseen: Option<String>,
}

fn seconds(h: &Histogram) -> LatencySummary {
    h.summary(&DEFAULT_PERCENTILES)
}

/// Summarises one step.
pub fn build_step(outcome: &StepOutcome, context: StepContext<'_>) -> StreamsStep {
    let streams = &outcome.streams;
    let max_startup = Duration::from_secs_f64(context.target.max_startup_s);
    let mut startup = Histogram::new();
    let (mut watched, mut stalled_time, mut bytes, mut ratio_sum, mut ratio_n) = (0.0, 0.0, 0u64, 0.0, 0u32);
    for (s, &bps) in streams.iter().zip(context.bitrates) {
        if let Some(up) = s.startup {
            startup.record(up.as_nanos() as u64);
        }
        watched += s.watched.as_secs_f64();
        stalled_time += s.stalled.as_secs_f64();
        bytes += s.bytes;
        if s.watched > Duration::ZERO {
            ratio_sum += achieved_bps(s) / bps as f64;
            ratio_n += 1;
        }
    }
    let streams_stalled = outcome.stalled();
    let elapsed = outcome.elapsed.as_secs_f64();
    StreamsStep {
        count: outcome.count,
        duration_s: elapsed,
        meets_target: outcome.meets(context.target.max_stalled_streams, max_startup),
        streams_without_stall: streams.len() as u32 - streams_stalled,
        streams_stalled,
        streams_not_started: streams.iter().filter(|s| s.startup.is_none()).count() as u32,
        streams_slow_start: outcome.slow_starts(max_startup),
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
        read_bytes: outcome.read_bytes,
        served: judge_step(
            outcome.read_bytes,
            match &context.unseen {
                Some(why) => Beneath::Unseen(why),
                None => Beneath::Devices(&context.devices),
            },
        ),
        devices: context.devices,
        ingest: outcome.ingest.as_ref().map(|i| ingest_figures(i, outcome.elapsed)),
        interrupted: outcome.interrupted,
        per_stream: per_stream(streams, context.bitrates),
    }
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
    /// Why a step failed the target, in words ("3 streams stalled", "2 streams took over 2 s to start").
    pub fn failure_reason(&self, target: &QualityTarget) -> Option<String> {
        if self.meets_target {
            return None;
        }
        let mut why = Vec::new();
        if self.streams_stalled > target.max_stalled_streams {
            why.push(format!("{} stream{} stalled", self.streams_stalled, plural(self.streams_stalled)));
        }
        if self.streams_slow_start > 0 {
            why.push(format!("{} took over {} s to start", self.streams_slow_start, trim(target.max_startup_s)));
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
    let (best, cache_served) = counted_best(found.best, steps);
    let mut words = if found.stopped && found.best == 0 {
        format!("search interrupted before any count of {label} was measured to the end")
    } else if best == 0 && cache_served.is_some() {
        format!("not measured: every count of {label} that passed was served from a cache (RAM), not by the devices")
    } else {
        format!("sustains {best} × {label} {quality}")
    };
    if let (Some(n), true) = (cache_served, best > 0) {
        words.push_str(&format!(" (as the devices served it; {n} passed only from a cache and does not count)"));
    }
    match (found.first_failing, &failing_reason) {
        (Some(n), Some(why)) => words.push_str(&format!("; at {n}, {why}")),
        _ if found.at_limit => words.push_str(" (the search limit; it may sustain more)"),
        _ => {}
    }
    if found.stopped && found.best > 0 {
        words.push_str(" (search interrupted)");
    }
    CapacityAnswer {
        streams: best,
        cache_served,
        first_failing: found.first_failing,
        failing_reason,
        at_limit: found.at_limit,
        interrupted: found.stopped,
        words,
    }
}

/// The search's best count, unless its passing step was cache-served: then the largest count whose passing
/// step the devices served (0: none), with the cache-served count beside it. A capacity is only what the
/// devices beneath were seen to deliver (`results::served`).
fn counted_best(best: u32, steps: &[StreamsStep]) -> (u32, Option<u32>) {
    let served_by_cache = |n: u32| steps.iter().rev().find(|s| s.count == n).is_some_and(|s| s.served.cache_served);
    if best == 0 || !served_by_cache(best) {
        return (best, None);
    }
    let counted = steps.iter().filter(|s| s.meets_target && !s.served.cache_served && s.count < best);
    (counted.map(|s| s.count).max().unwrap_or(0), Some(best))
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of a real check (tests/fixtures/check-v1.json) at `count`, passing or not, served by a cache or not.
    fn step(count: u32, meets: bool, cache_served: bool) -> StreamsStep {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check-v1.json");
        let result = crate::results::read_result(&path).unwrap();
        let mut step = result.check.unwrap().verdict[0].steps[0].clone();
        step.count = count;
        step.meets_target = meets;
        step.served.cache_served = cache_served;
        step
    }

    fn answer(best: u32, first_failing: Option<u32>, steps: &[StreamsStep]) -> CapacityAnswer {
        let found = SearchOutcome { best, first_failing, at_limit: false, stopped: false };
        let target = QualityTarget { max_stalled_streams: 0, max_startup_s: 2.0 };
        capacity_answer(&found, steps, &target, "1080p")
    }

    #[test]
    fn a_count_that_passed_only_from_a_cache_is_not_the_capacity() {
        // 8 and 16 passed from the devices, 32 passed from RAM, 48 failed.
        let steps = [step(8, true, false), step(16, true, false), step(32, true, true), step(48, false, false)];
        let found = answer(32, Some(48), &steps);
        assert_eq!((found.streams, found.cache_served), (16, Some(32)));
        assert!(found.words.starts_with("sustains 16 × 1080p"), "{}", found.words);
        assert!(found.words.contains("32 passed only from a cache"), "{}", found.words);
        // Every pass from RAM: no capacity at all.
        let steps = [step(4, true, true), step(8, false, false)];
        let found = answer(4, Some(8), &steps);
        assert_eq!((found.streams, found.cache_served), (0, Some(4)));
        assert!(found.words.starts_with("not measured: every count"), "{}", found.words);
        // A cache-served step that failed changes nothing.
        let steps = [step(8, true, false), step(16, false, true)];
        let found = answer(8, Some(16), &steps);
        assert_eq!((found.streams, found.cache_served), (8, None));
    }
}
