//! Running a stream phase on the I/O core: one step of a fixed count, or the capacity search over steps, each
//! step a set of viewer and ingest workers (`step`), reported to the observer step by step. The phase's outcome
//! merges every step's I/O; what the viewers experienced goes to the observer as `StepOutcome`s.

mod background;
mod prior;
mod schedule;
mod scrub;
mod segments;
mod step;

use std::sync::atomic::Ordering;
use std::time::Duration;

pub use background::LoadSchedule;
pub use schedule::{INGEST_WRITE, IngestSchedule, ViewerSchedule};
pub use step::media_files;
use step::{StepInputs, run_step};

pub use prior::Priors;
use prior::search_settings;

use super::cluster::Cluster;
use super::phase::SeriesStart;
use super::{Interrupt, PhaseOutcome, RunObserver, StopReason};
use crate::metrics::Recorder;
use crate::plan::{FilePlan, StreamCount, StreamsPlan};
use ::streams::{RawRates, estimate, search};

/// What a stream phase runs with.
pub struct StreamInputs<'a> {
    pub index: usize,
    pub plan: &'a StreamsPlan,
    /// The run's file table (the test media are in it).
    pub table: &'a [FilePlan],
    pub direct: bool,
    pub interval: Duration,
    /// Multi-host runs: the viewers of every step are spread over the ranks (clients), and the search counts
    /// them all.
    pub cluster: Option<&'a Cluster>,
}

/// Runs one stream phase. `rates`: the raw rates its estimate phases measured, if it has any (in a cluster, every
/// rank's together); a search starts from `priors` and leaves its own there.
pub fn run_stream_phase(
    phase: &StreamInputs<'_>,
    rates: Option<RawRates>,
    priors: &mut Priors,
    interrupt: &Interrupt,
    observer: &mut dyn RunObserver,
) -> PhaseOutcome {
    let StreamInputs { index, plan, table, direct, interval, cluster } = *phase;
    let media = media_files(plan, table);
    let inputs = StepInputs { index, plan, media: &media, direct, interval, interrupted: interrupt.flag(), cluster };
    if let Some(rates) = rates {
        observer.stream_estimate(index, rates);
    }
    let mut merged = Merged::new();
    let step = |count: u32, merged: &mut Merged, observer: &mut dyn RunObserver| {
        observer.stream_step_started(index, count);
        let (outcome, measured) = run_step(&inputs, count, merged.steps, merged.series(), observer);
        if matches!(outcome.stop, StopReason::Failed(_)) {
            // The step's workers could not run (memory, threads, a file; every rank agrees in a cluster): what its
            // viewers "saw" is not a measurement, and counting them would report stalls. The phase fails with
            // the reason, and the search stops without an answer.
            merged.add(outcome);
            return Err(StepFailed);
        }
        let passed = measured.meets(plan.target.max_stalled, plan.target.max_startup);
        merged.served = merged.served.max(even_rate(&measured));
        observer.stream_step(index, &measured);
        merged.add(outcome);
        // In a cluster only the merged step's flag (any rank interrupted) is the same on every rank: a rank's own
        // flag could stop its search one step before the others'.
        let stop = if cluster.is_some() { measured.interrupted } else { interrupt.is_set() };
        Ok((!stop).then_some(passed))
    };
    match plan.count {
        StreamCount::Fixed(count) => {
            let _ = step(count, &mut merged, observer);
        }
        StreamCount::Search(s) => {
            let estimated = rates.map(|r| estimate(r, &plan.config));
            let bound = estimated.as_ref().map(|e| e.streams.max(1));
            // Shares of the unrounded bound: a floored one (4 of 4.19 remux, 13 of 13.4 HEVC) skews a share
            // carried from one format to another by as much as a stream in four.
            let exact = estimated.as_ref().map(|e| e.iops_bound.min(e.bandwidth_bound).max(1.0));
            let prior = priors.prior_for(plan);
            let settings = search_settings(&s, bound.zip(exact), prior.as_ref());
            let found = search(settings, &mut |count| step(count, &mut merged, observer));
            // A failed step (its workers could not run) ends the search without an answer.
            if let Ok(mut found) = found {
                if found.failing_derived {
                    found.derived_from = prior.map(|p| p.label);
                }
                observer.stream_search(index, &found);
                priors.remember(plan, exact, &found, merged.served);
            }
        }
    }
    merged.into_outcome(direct, interrupt.flag().load(Ordering::Relaxed))
}

/// A step whose workers could not run: the phase has failed (its outcome says why).
struct StepFailed;

/// The phase's outcome, built from its steps.
struct Merged {
    first: Option<PhaseOutcome>,
    totals: Recorder,
    measured: Duration,
    steps: u32,
    intervals: u64,
    /// The highest rate a step served its audience evenly at, bytes/s (`even_rate`).
    served: f64,
}

/// A viewer's rate counts toward `even_rate` only after this long in the step: over a shorter time a chunk more
/// or less (1 MiB, a tenth of a second of remux) moves it by more than the search's precision.
const EVEN_RATE_PRESENCE: Duration = Duration::from_secs(1);

/// The rate a step served its whole audience evenly: the slowest viewer's rate (the media it received ÷ its own
/// time in the step, so a viewer that arrived late is not diluted by the arrival window) times the viewers that
/// were there at least `EVEN_RATE_PRESENCE`. Where each viewer's reads land on one device (a btrfs raid1 member
/// by its title and thread), the slowest viewers are the busiest device's, which carries 1 ÷ its share of the
/// audience's bytes: so this is the pool's rate as its busiest member allows it, not the members' sum. The
/// bytes over the step's span are the members' sum, less the arrival window: on a raid1 of four 39.32 MB/s
/// members whose library lay mostly on one pair, failing remux steps were served at 112–147 MB/s where 1080p's
/// bound was 87–113, and 0.92 of that started HEVC and 1080p above their bound in 9 of the 12 later-format
/// searches of six quick checks (docs/validation.md).
fn even_rate(step: &::streams::StepOutcome) -> f64 {
    let rates = step.streams.iter().filter(|s| s.present >= EVEN_RATE_PRESENCE && s.bytes > 0);
    let (viewers, slowest) = rates
        .map(|s| s.bytes as f64 / s.present.as_secs_f64())
        .fold((0u32, f64::INFINITY), |(n, low), rate| (n + 1, low.min(rate)));
    if viewers == 0 { 0.0 } else { f64::from(viewers) * slowest }
}

impl Merged {
    fn new() -> Merged {
        Merged {
            first: None,
            totals: Recorder::new(true),
            measured: Duration::ZERO,
            steps: 0,
            intervals: 0,
            served: 0.0,
        }
    }

    /// Where the next step's intervals fall in the phase's series: after every earlier step's.
    fn series(&self) -> SeriesStart {
        SeriesStart { index: self.intervals, start: self.measured }
    }

    fn add(&mut self, outcome: PhaseOutcome) {
        self.totals.merge(&outcome.totals);
        self.measured += outcome.measured;
        self.intervals += outcome.intervals;
        self.steps += 1;
        match &mut self.first {
            None => self.first = Some(outcome),
            Some(first) => {
                let room = crate::plan::defaults::ERRORS_KEPT.saturating_sub(first.errors.len());
                first.errors.extend(outcome.errors.into_iter().take(room));
                if first.stop == StopReason::Completed {
                    first.stop = outcome.stop;
                }
                first.caps = first.caps.or(outcome.caps);
            }
        }
    }

    fn into_outcome(self, direct: bool, interrupted: bool) -> PhaseOutcome {
        let mut outcome = self.first.unwrap_or_else(|| super::phase::failed_outcome(direct, StopReason::Interrupted));
        outcome.totals = self.totals;
        outcome.measured = self.measured;
        outcome.intervals = self.intervals;
        if interrupted {
            outcome.stop = StopReason::Interrupted;
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search step cut at `cut_ms`, whose viewers arrived at the given instants and received the given bytes.
    fn step(cut_ms: u64, viewers: &[(u64, u64)]) -> ::streams::StepOutcome {
        let ms = Duration::from_millis;
        let streams: Vec<::streams::StreamStats> = viewers
            .iter()
            .map(|&(arrived, bytes)| ::streams::StreamStats {
                arrived: ms(arrived),
                present: ms(cut_ms.saturating_sub(arrived)),
                bytes,
                ..Default::default()
            })
            .collect();
        ::streams::StepOutcome {
            count: streams.len() as u32,
            read_bytes: streams.iter().map(|s| s.bytes).sum(),
            streams,
            lateness: crate::metrics::Histogram::new(),
            issue_lag: crate::metrics::Histogram::new(),
            errors: 0,
            first_error: None,
            elapsed: ms(cut_ms),
            arrival: ms(2000),
            judging: ::streams::Judging {
                steady_within: ms(6000),
                judged: ms(3000),
                fail_fast: true,
                max_startup: ms(2000),
            },
            steady_at: None,
            cut: Some(ms(cut_ms)),
            interrupted: false,
            engine: "sync",
            ingest: None,
            background: Vec::new(),
            clients: Vec::new(),
        }
    }

    #[test]
    fn a_step_is_served_evenly_at_its_slowest_viewers_rate_times_its_audience() {
        // A failing step of 12 remux viewers on a raid1 of four 39.32 MB/s members, cut at 3 s: the busiest member
        // carries 4 of them (9.83 MB/s each over their 3 s), the others 3 and 2 (13.1 and 19.7 MB/s), all there
        // from the start. Every viewer alike got 9.83 MB/s: 118 MB/s, what the busiest member allows (39.32 ÷ 4
        // × 12), where the members together read 157 MB/s.
        let (busy, three, two) = (9_830_000 * 3, 13_106_667 * 3, 19_660_000 * 3);
        let mut viewers = vec![(0, busy); 4];
        viewers.extend([(0, three); 6]);
        viewers.extend([(0, two); 2]);
        let s = step(3000, &viewers);
        assert!((even_rate(&s) - 12.0 * 9.83e6).abs() < 1e3, "{}", even_rate(&s));
        assert!((s.read_bytes as f64 / 3.0 - 157.3e6).abs() < 0.1e6);
        // One device of 39.32 MB/s and four viewers arriving over 2 s: the bytes over the step's span (36 MB/s)
        // count the arrival window, when fewer viewers shared the device; the last to arrive got a quarter of it
        // over its own time, and so 39.32 MB/s for the four.
        let s = step(3000, &[(0, 50_000_000), (600, 30_000_000), (1300, 20_000_000), (2000, 9_830_000)]);
        assert!((even_rate(&s) - 39.32e6).abs() < 1e3, "{}", even_rate(&s));
        // Viewers there under a second are left out (a chunk more or less is 10 % of their rate), and a step
        // without any viewer there long enough served nobody evenly.
        let s = step(3000, &[(0, 30_000_000), (2500, 1_048_576)]);
        assert!((even_rate(&s) - 10e6).abs() < 1e3, "{}", even_rate(&s));
        assert_eq!(even_rate(&step(500, &[(0, 5_000_000)])), 0.0);
    }
}
