//! The part of a result that `streamcap streams` fills: the stream settings, one step per stream count measured
//! (one for `--count`, the curve for `--max`), the capacity answer and the estimate beside it. Additive to
//! schema version 1 (`RunResult::streams`, absent for other commands). Units are in the field names.

use serde::{Deserialize, Serialize};

use super::DeviceResult;
pub use super::streams_step::{StepContext, build_step};
use crate::metrics::LatencySummary;
use ::streams::SearchOutcome;
use ::streams::capacity::{self, Edge};

/// What `streams` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsResult {
    /// The formats and their shares, in words ("2160p HEVC (25 Mbit/s)").
    pub label: String,
    /// Each format of the mix with its bitrate and share of the viewers.
    pub formats: Vec<FormatShare>,
    /// Bytes per chunk of the first format (others scale with their bitrate when the chunk is given in seconds);
    /// with titles that are playlists, their largest segment (page-rounded).
    pub chunk_bytes: u64,
    /// How requests were shaped: "direct" (a request of `chunk_bytes`), "hls:N" (one request per segment of N
    /// seconds of media, `chunk_bytes` each), or "playlist: …" (titles that are HLS playlists, one request per
    /// segment of theirs, in words: "playlist: segment files from a playlist, 30 segments of ~2 s"). "direct" in
    /// results older than it.
    #[serde(default = "direct")]
    pub delivery: String,
    /// Media a player keeps ahead of its playhead at most, seconds.
    pub buffer_s: f64,
    /// Media a player needs before playback starts (also after a stall or a seek), seconds.
    pub prebuffer_s: f64,
    /// Playback judged in each step once every viewer had reached steady state (its buffer full once), seconds.
    pub watch_s: f64,
    /// "library", "library:N", "library:zipf=S", "one", "each".
    pub assignment: String,
    /// Mean seconds between a viewer's seeks, when viewers skip around.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_every_s: Option<f64>,
    /// `--vbr`: each GOP's bitrate within ± this percentage of the mean (absent: constant bitrate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vbr_pct: Option<f64>,
    /// streamcap wrote its own test media (removed afterwards), or read the user's (`--library`).
    pub own_media: bool,
    /// The library the viewers watched: generated or the user's, its titles and size, how viewers picked titles
    /// (the hot set of a Zipf popularity) and why it has that size (absent for test files per format, and in
    /// results written before libraries existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<::streams::LibraryInfo>,
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
    /// `--expect 2x2160p`: the household asked about, answered from `capacity` as `check --expect` answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub household: Option<super::HouseholdAnswer>,
    /// `--during`: the server's other work that ran beside every step's viewers (`library-scan` …); empty: the
    /// viewers ran alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<String>,
    /// `--during` with `--max`: the capacity of the same search without the loads (an earlier phase of the run),
    /// set beside this one's; absent when no such search ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone: Option<u32>,
    /// `--during`: what each load did over every step of the phase together (files/s, MB/s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<::streams::BackgroundFigures>,
    /// streamcap's CPU seconds (user + system) per GB (10^9 bytes) received, over every step together: the
    /// client's cost of the transport (https against http shows TLS's price). Absent when nothing was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_s_per_gb: Option<f64>,
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
    /// every stream started within `max_startup_s` and reached steady state within its bound, the buffers held
    /// over the judged playback, no read failed, and it ran to its end.
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
    /// Media the viewers' buffers lost over the judged playback, seconds per viewer (negative: they gained), and
    /// what the step allows (the ripple of chunk-sized refills and 3 % of the playback): buffers that drain
    /// fail the step before any stall shows it. Absent when no window was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_drained_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_drain_allowed_s: Option<f64>,
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
    /// Requests the viewers made (reads of a file, `GET`s over http; one per segment with HLS delivery) that
    /// completed within the step, used or thrown away by a seek (0 in results older than it).
    #[serde(default)]
    pub requests: u64,
    /// `requests` over the step's duration: requests (segment GETs with HLS) per second.
    #[serde(default)]
    pub requests_per_s: f64,
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
    /// The client's side of the step: CPU against the CPUs it may use, CPU per GB received, connections set
    /// up, and whether the client rather than the source was the limit (absent in results older than it).
    #[serde(default)]
    pub client: super::ClientLoad,
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
    /// Bytes the devices beneath read over the step: the layer that read the most, a pool's members together
    /// (`results::served`); absent where none could be watched (and in results older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_read_bytes: Option<u64>,
    /// Who served the step, in a sentence: the devices, a cache (`cache_served`), or why it was not judged.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub served_words: String,
    /// `--ingest`: the background writers that ran during this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest: Option<IngestFigures>,
    /// `--during`: what each background load did during this step, in the order asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background: Vec<::streams::BackgroundFigures>,
    /// Ctrl-C stopped the step before every watch ended: its figures cover only what ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The devices beneath read more than 5 % less than the viewers received (`results::served`): a cache
    /// served the step, so it says nothing of the storage and never counts toward a capacity
    /// (`StreamsStep::counts`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_served: bool,
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
    /// Requests the stream made that completed within the step (chunks or segments, used or thrown away).
    #[serde(default)]
    pub requests: u64,
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

/// The answer of `--max`: one capacity, with its range over the runs of the edge and a comfortable count.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CapacityAnswer {
    /// The capacity: the median over the runs of the edge of the largest count that met the target (0: not even
    /// one stream, or not measured — see `not_measured`).
    pub streams: u32,
    /// The smallest count measured that failed it, beside `streams`, if any.
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
    /// The largest count that met the target in each run of the edge that counts (the search's, then each
    /// confirmation's; a run whose passing step a cache served is left out). Empty in results from before
    /// confirmations, and when not measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<u32>,
    /// Lowest and highest of `edges`: the range the capacity is given with.
    #[serde(default)]
    pub low: u32,
    #[serde(default)]
    pub high: u32,
    /// Confirmation rounds in which the count that passed passed again and the count that failed failed again.
    #[serde(default)]
    pub agreed: u32,
    /// The comfortable count: `streams` less a margin of 20 %, or `low` when that is lower
    /// (`streams::capacity::plan_for`).
    #[serde(default)]
    pub plan_for: u32,
    /// Why there is no capacity (interrupted before the search found its edge, or every count that passed was
    /// served from a cache); absent when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
    /// `check --quick`'s later formats: the failing count beside `streams`, derived from an earlier format's edge
    /// scaled to this one and not measured (`first_failing` is then absent; `streams` was measured passing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_failing: Option<u32>,
    /// The format whose measured edge `derived_failing` was scaled from, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
}

impl CapacityAnswer {
    /// A capacity was measured: the search found an edge the devices served.
    pub fn measured(&self) -> bool {
        self.not_measured.is_none()
    }

    /// The range, when the edge was run more than once.
    pub fn range(&self) -> Option<(u32, u32)> {
        (self.edges.len() > 1).then_some((self.low, self.high))
    }
}

pub use ::streams::CapacityEstimate;

/// The answer of a capacity search, in figures and in a sentence. A run of the edge counts only when no step
/// that passed at its count was served from a cache; the capacity is the median of the runs that count.
pub fn capacity_answer(
    found: &SearchOutcome,
    steps: &[StreamsStep],
    target: &QualityTarget,
    label: &str,
) -> CapacityAnswer {
    let cached = |count: u32| steps.iter().any(|s| s.count == count && s.meets_target && !s.counts());
    let counted: Vec<Edge> = found.edges.iter().copied().filter(|e| e.passed == 0 || !cached(e.passed)).collect();
    let Some(median) = capacity::median(&counted) else {
        return not_measured(found, label);
    };
    let edges: Vec<u32> = counted.iter().map(|e| e.passed).collect();
    let (low, high) = (edges.iter().copied().min().unwrap_or(0), edges.iter().copied().max().unwrap_or(0));
    // The failing count beside the capacity: the step that failed there, the latest if it ran more than once.
    let failing = median.failed.and_then(|n| steps.iter().rev().find(|s| s.count == n && !s.meets_target));
    let failing_reason = failing.and_then(|s| s.failure_reason(target));
    let client_limit = failing.and_then(|s| s.client.limit.clone());
    let derived = found.failing_derived.then_some(median.failed).flatten();
    let mut answer = CapacityAnswer {
        streams: median.passed,
        first_failing: median.failed.filter(|_| derived.is_none()),
        failing_reason,
        at_limit: median.failed.is_none(),
        interrupted: found.stopped,
        words: String::new(),
        plan_for: capacity::plan_for(median.passed, low),
        edges,
        low,
        high,
        agreed: found.agreed,
        not_measured: None,
        derived_failing: derived,
        derived_from: derived.and(found.derived_from.clone()),
    };
    answer.words = answer_words(&answer, target, label);
    if let Some(limit) = client_limit {
        // The failing count says what the client could do, not what the source could.
        answer.words.push_str(&format!("; {limit}, so the source may sustain more"));
    }
    answer
}

/// "sustains 73 × 2160p HEVC (25 Mbit/s) with no stall (68–79 over 3 runs of the edge); plan for 58; at 80, 14
/// streams stalled".
fn answer_words(a: &CapacityAnswer, target: &QualityTarget, label: &str) -> String {
    let quality = if target.max_stalled_streams == 0 {
        "with no stall".to_string()
    } else {
        format!("with at most {} stalled", target.max_stalled_streams)
    };
    let at_least = if a.at_limit { "at least " } else { "" };
    let mut words = format!("sustains {at_least}{} × {label} {quality}", a.streams);
    words.push_str(&match a.range() {
        _ if a.derived_failing.is_some() => format!(" ({})", derived_words(a)),
        Some((low, high)) if low < high => format!(" ({low}–{high} over {} runs of the edge)", a.edges.len()),
        Some(_) if a.edges.len() == 2 => " (the same in both runs of the edge)".to_string(),
        Some(_) => format!(" (the same in all {} runs of the edge)", a.edges.len()),
        None => " (one run of the edge, not confirmed)".to_string(),
    });
    words.push_str(&format!("; plan for {}", a.plan_for));
    match (a.first_failing, &a.failing_reason) {
        (Some(n), Some(why)) => words.push_str(&format!("; at {n}, {why}")),
        _ if a.at_limit => words.push_str(" (the search limit; it may sustain more)"),
        _ => {}
    }
    if a.interrupted {
        words.push_str(" (interrupted while confirming)");
    }
    words
}

/// A derived edge in words: "passed at 12, measured once; 16 derived from 2160p remux (80 Mbit/s)'s edge, not
/// measured".
pub fn derived_words(a: &CapacityAnswer) -> String {
    let from = a.derived_from.clone().unwrap_or_else(|| "an earlier format".into());
    match a.derived_failing {
        Some(failed) => {
            format!("passed at {}, measured once; {failed} derived from {from}'s edge, not measured", a.streams)
        }
        None => String::new(),
    }
}

/// No capacity: the search stopped before its first edge, or a cache served every count that passed.
fn not_measured(found: &SearchOutcome, label: &str) -> CapacityAnswer {
    let why = if found.edges.is_empty() {
        let passed = if found.best > 0 { format!(" ({} had passed)", found.best) } else { String::new() };
        format!("interrupted before the search found the edge{passed}")
    } else {
        "every count that passed was served from a cache (the devices read less than the viewers received), so \
         nothing measured the storage"
            .to_string()
    };
    CapacityAnswer {
        interrupted: found.stopped,
        words: format!("{label}: not measured: {why}"),
        not_measured: Some(why),
        ..CapacityAnswer::default()
    }
}

pub(super) fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

pub(super) fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The delivery of results written before delivery shapes existed.
fn direct() -> String {
    "direct".into()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::metrics::Histogram;
    use ::streams::StepOutcome;

    fn step(count: u32, meets_target: bool, cache_served: bool) -> StreamsStep {
        let outcome = StepOutcome {
            count,
            streams: Vec::new(),
            lateness: Histogram::new(),
            issue_lag: Histogram::new(),
            read_bytes: 0,
            errors: 0,
            first_error: None,
            elapsed: Duration::from_secs(1),
            arrival: Duration::ZERO,
            judging: ::streams::Judging {
                steady_within: Duration::from_secs(10),
                judged: Duration::from_secs(1),
                fail_fast: true,
                max_startup: Duration::from_secs(2),
            },
            steady_at: None,
            cut: None,
            interrupted: false,
            engine: "sync",
            ingest: None,
            background: Vec::new(),
            clients: Vec::new(),
        };
        let target = QualityTarget { max_stalled_streams: 0, max_startup_s: 2.0, steady_within_s: 10.0 };
        let context = StepContext {
            bitrates: &[],
            target,
            cpu: Duration::ZERO,
            peak_rss_bytes: 0,
            devices: Vec::new(),
            unseen: None,
            client: crate::results::ClientSample::default(),
        };
        let mut s = build_step(&outcome, context);
        (s.meets_target, s.cache_served) = (meets_target, cache_served);
        s.streams_stalled = u32::from(!meets_target);
        s
    }

    fn found(edges: &[(u32, u32)]) -> SearchOutcome {
        let edges: Vec<Edge> = edges.iter().map(|&(p, f)| Edge { passed: p, failed: Some(f) }).collect();
        let median = capacity::median(&edges).unwrap();
        SearchOutcome {
            best: median.passed,
            first_failing: median.failed,
            at_limit: false,
            stopped: false,
            agreed: 0,
            edges,
            failing_derived: false,
            derived_from: None,
        }
    }

    const TARGET: QualityTarget = QualityTarget { max_stalled_streams: 0, max_startup_s: 2.0, steady_within_s: 10.0 };

    /// `check --quick`'s later formats: one step passed, the failing count derived, and the answer says which is
    /// which (the JSON keeps the derived count apart from `first_failing`, which is measured).
    #[test]
    fn a_derived_edge_says_what_was_measured_and_what_was_derived() {
        let mut outcome = found(&[(12, 16)]);
        (outcome.failing_derived, outcome.derived_from) = (true, Some("2160p remux (80 Mbit/s)".into()));
        let a = capacity_answer(&outcome, &[step(12, true, false)], &TARGET, "2160p HEVC (25 Mbit/s)");
        assert_eq!((a.streams, a.first_failing, a.derived_failing, a.at_limit), (12, None, Some(16), false));
        assert_eq!((a.edges.clone(), a.plan_for), (vec![12], 9));
        assert!(
            a.words
                .contains("passed at 12, measured once; 16 derived from 2160p remux (80 Mbit/s)'s edge, not measured"),
            "{}",
            a.words
        );
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!((json["derived_failing"].as_u64(), json.get("first_failing")), (Some(16), None));
    }

    #[test]
    fn the_answer_is_the_median_edge_with_its_range_and_a_margin() {
        let steps = [step(68, true, false), step(73, true, false), step(79, true, false), step(80, false, false)];
        let a = capacity_answer(&found(&[(73, 80), (68, 70), (79, 80)]), &steps, &TARGET, "2160p HEVC (25 Mbit/s)");
        assert_eq!((a.streams, a.low, a.high, a.plan_for, a.first_failing), (73, 68, 79, 58, Some(80)));
        assert!(a.measured() && a.range() == Some((68, 79)));
        assert!(
            a.words.starts_with("sustains 73 × 2160p HEVC (25 Mbit/s) with no stall (68–79 over 3 runs of the edge); plan for 58; at 80, 1 stream stalled"),
            "{}",
            a.words
        );
    }

    /// Issue 24: a step a cache served never counts toward the capacity: the run of the edge that passed there
    /// is left out, and when every run is, the format is not measured.
    #[test]
    fn a_cache_served_step_never_counts() {
        let steps = [step(60, true, false), step(90, true, true), step(95, false, false), step(64, false, false)];
        let a = capacity_answer(&found(&[(90, 95), (60, 64)]), &steps, &TARGET, "1080p");
        assert_eq!((a.streams, a.edges.clone(), a.first_failing), (60, vec![60], Some(64)));
        let a = capacity_answer(&found(&[(90, 95)]), &steps, &TARGET, "1080p");
        assert!(!a.measured() && a.streams == 0, "{a:?}");
        assert!(
            a.words.starts_with("1080p: not measured: every count that passed was served from a cache"),
            "{}",
            a.words
        );
    }

    #[test]
    fn a_search_stopped_before_its_edge_is_not_measured() {
        let stopped = SearchOutcome { best: 12, stopped: true, edges: Vec::new(), ..found(&[(1, 2)]) };
        let a = capacity_answer(&stopped, &[], &TARGET, "2160p remux (80 Mbit/s)");
        assert_eq!((a.streams, a.interrupted), (0, true));
        assert_eq!(
            a.words,
            "2160p remux (80 Mbit/s): not measured: interrupted before the search found the edge (12 had passed)"
        );
    }

    #[test]
    fn a_step_failed_by_its_draining_buffers_says_so_not_interrupted() {
        // streams_throttled's search once said "at 58, interrupted" of a step whose buffers drained 0.37 s of
        // media each (0.33 s allowed) with no viewer stalled yet.
        let mut failed = step(58, false, false);
        failed.streams_stalled = 0;
        (failed.buffer_drained_s, failed.buffer_drain_allowed_s) = (Some(0.37), Some(0.33));
        let why = failed.failure_reason(&TARGET).unwrap();
        assert_eq!(
            why,
            "the players' buffers drained (0.37 s of media each over the judged playback, 0.33 s allowed): they \
             would have stalled"
        );
    }
}
