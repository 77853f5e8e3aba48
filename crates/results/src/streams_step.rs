//! One step of a stream phase, summarised for the result: from what the viewers measured (`StepOutcome`) to
//! the `StreamsStep` every renderer reads — start-up apart from playback, when every buffer was full, the
//! percentiles, delivered MB/s — and why a step missed the target, in words. Pure: no I/O, no clock.

use std::time::Duration;

use super::DeviceResult;
use super::served::{Beneath, judge_step};
use super::streams::{IngestFigures, QualityTarget, StreamFigures, StreamsStep, plural, trim};
use crate::metrics::{DEFAULT_PERCENTILES, Histogram, LatencySummary};
use ::streams::{IngestOutcome, StepOutcome, StreamStats};

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
    /// The client's CPUs and connections over the step (its CPU time is `cpu`).
    pub client: super::ClientSample,
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
    let served = served_beside_loads(outcome, &context);
    let (cpu_pct, client) = client_figures(outcome, &context);
    let drain = outcome.buffer_drain();
    StreamsStep {
        count: outcome.count,
        duration_s: elapsed,
        arrival_s: outcome.arrival.as_secs_f64(),
        steady_at_s: outcome.steady_at.map(|d| d.as_secs_f64()),
        judged_s: outcome.steady_at.map_or(0.0, |d| (elapsed - d.as_secs_f64()).max(0.0)),
        cut_s: outcome.cut.map(|d| d.as_secs_f64()),
        meets_target: outcome.meets(context.target.max_stalled_streams, max_startup),
        streams_without_stall: streams.iter().filter(|s| played_fine(s, max_startup)).count() as u32,
        streams_stalled: outcome.stalled(),
        streams_startup_stalled: outcome.startup_stalled(),
        streams_not_started: outcome.never_started(max_startup),
        streams_slow_start: outcome.slow_starts(max_startup),
        streams_not_steady: outcome.not_steady(),
        streams_absent: outcome.count - outcome.audience(),
        buffer_drained_s: drain.map(|d| d.per_viewer_s()),
        buffer_drain_allowed_s: drain.map(|d| d.allowed_s / f64::from(d.viewers.max(1))),
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
        requests: requests(streams),
        requests_per_s: if elapsed > 0.0 { requests(streams) as f64 / elapsed } else { 0.0 },
        achieved_bitrate_ratio: if ratio_n > 0 { ratio_sum / f64::from(ratio_n) } else { 0.0 },
        seeks: streams.iter().map(|s| u64::from(s.seeks)).sum(),
        wasted_chunks: streams.iter().map(|s| s.wasted_chunks).sum(),
        errors: outcome.errors,
        first_error: outcome.first_error.clone(),
        cpu_pct,
        client,
        peak_rss_bytes: context.peak_rss_bytes,
        engine: outcome.engine.into(),
        read_bytes: outcome.read_bytes,
        device_read_bytes: served.device_read_bytes,
        served_words: served.served_words,
        devices: context.devices,
        ingest: outcome.ingest.as_ref().map(|i| ingest_figures(i, outcome.elapsed)),
        background: outcome.background.clone(),
        interrupted: outcome.interrupted,
        cache_served: served.cache_served,
        per_stream: per_stream(streams, context.bitrates),
    }
}

/// The stream started within the limit, delivered media and never stalled.
fn played_fine(s: &StreamStats, max_startup: Duration) -> bool {
    s.startup.is_some_and(|u| u <= max_startup) && s.stalls == 0 && s.startup_stalls == 0 && s.bytes > 0
}

/// Requests completed within the step, all streams together: chunks used and thrown away.
fn requests(streams: &[StreamStats]) -> u64 {
    streams.iter().map(|s| s.chunks + s.wasted_chunks).sum()
}

/// Who served the step, judged on the viewers' bytes alone; the devices read for the background loads
/// (`--during`) too, which the words say.
fn served_beside_loads(outcome: &StepOutcome, context: &StepContext<'_>) -> crate::StepServed {
    let beneath = match &context.unseen {
        Some(why) => Beneath::Unseen(why),
        None => Beneath::Devices(&context.devices),
    };
    let mut served = judge_step(outcome.read_bytes, beneath);
    let load_reads: u64 = outcome.background.iter().map(|b| b.read_bytes).sum();
    if load_reads > 0 && !served.served_words.is_empty() {
        served
            .served_words
            .push_str(&format!(" (the background loads beside them read {} of it)", crate::units::Bytes(load_reads)));
    }
    served
}

/// streamcap's CPU over the step (percent of one core) and the client's side of the step.
fn client_figures(outcome: &StepOutcome, context: &StepContext<'_>) -> (f64, super::ClientLoad) {
    let elapsed = outcome.elapsed.as_secs_f64();
    let cpu_pct = if elapsed > 0.0 { context.cpu.as_secs_f64() / elapsed * 100.0 } else { 0.0 };
    let sample = super::ClientSample { cpu: context.cpu, ..context.client };
    (cpu_pct, super::client_load(sample, outcome.elapsed, outcome.read_bytes, outcome.issue_lag.percentile(99.0)))
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
            requests: s.chunks + s.wasted_chunks,
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
    /// Whether the step may count toward a capacity: not when a cache served it.
    pub fn counts(&self) -> bool {
        !self.cache_served
    }

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
        if let (Some(drained), Some(allowed)) = (self.buffer_drained_s, self.buffer_drain_allowed_s)
            && drained > allowed
        {
            // A step that failed by its draining buffers alone was once said to be "interrupted".
            why.push(format!(
                "the players' buffers drained ({drained:.2} s of media each over the judged playback, {allowed:.2} s \
                 allowed): they would have stalled"
            ));
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
