//! Running a stream phase on the I/O core: one step of a fixed count, or the capacity search over steps, each
//! step a set of viewer and ingest workers (`step`), reported to the observer step by step. The phase's outcome
//! merges every step's I/O; what the viewers experienced goes to the observer as `StepOutcome`s.

mod background;
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

use super::cluster::Cluster;
use super::phase::SeriesStart;
use super::{Interrupt, PhaseOutcome, RunObserver, StopReason};
use crate::metrics::Recorder;
use crate::plan::{EstimatePlan, FilePlan, SearchPlan, StreamCount, StreamsPlan};
use ::streams::{RawRates, SearchSettings, estimate, search};

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

/// Where the last capacity search of a run found its edge, as its capacity ÷ its estimate, with the raw-rate
/// phases behind that estimate: a later search on the same raw rates (a check's next format) starts at that share
/// of its own estimate, in steps of its precision, rather than doubling from half of it. Without confirmations
/// (`check --quick`) the later search's failing count is the edge's failing share of its estimate, derived,
/// when its first count passes (`SearchSettings::derive_failing`).
#[derive(Debug, Default)]
pub struct Priors {
    /// The last search's edge without background loads.
    last: Option<Prior>,
    /// Each format's edge without loads, by its label: where its search beside loads (`--during`) starts. A
    /// load can only take streams away, so that search starts at the count that passed alone and walks down
    /// (and when it passes there, the load cost nothing the search can tell).
    alone: Vec<Prior>,
}

impl Priors {
    /// Keeps a search's edge for the next format, as shares of `exact` (the unrounded estimate). A derived edge is
    /// not passed on: the next format scales the measured one it came from. An edge found beside loads is kept
    /// for nothing: neither a search alone nor one beside other loads says where its edge lies.
    fn remember(&mut self, plan: &StreamsPlan, exact: Option<f64>, found: &::streams::SearchOutcome, served: f64) {
        let edge = !found.edges.is_empty() && !found.at_limit && found.best > 0 && !found.failing_derived;
        let alone = plan.during.is_empty();
        if let (Some(estimate), Some(b), Some(failed), true, true) =
            (plan.estimate, exact, found.first_failing, edge, alone)
        {
            let share = |n: u32| f64::from(n) / b;
            let label = plan.config.mix.label();
            let served = served / stream_byte_rate(plan) / b;
            let (passed, failed) = (share(found.best), share(failed));
            let prior = Prior { estimate, passed, failed, served, label, beside: false };
            self.alone.retain(|p| p.label != prior.label);
            self.alone.push(prior.clone());
            self.last = Some(prior);
        }
    }

    /// Where a search starts: without loads, from the last edge without them; beside loads, from the same
    /// format's edge alone. Only an edge measured on the same raw rates (the same estimate) counts.
    fn prior_for(&self, plan: &StreamsPlan) -> Option<Prior> {
        let prior = match plan.during.is_empty() {
            true => self.last.clone(),
            false => self
                .alone
                .iter()
                .find(|p| p.label == plan.config.mix.label())
                .map(|p| Prior { beside: true, ..p.clone() }),
        };
        prior.filter(|p| plan.estimate == Some(p.estimate))
    }
}

/// The share of its bound at which a step of viewers can still prove steady state within the check's bound on
/// it (`check::profile`'s fill at 93 % of the bandwidth), less a little: where a one-step search of a later
/// format starts when the earlier edge's bracket reaches that high.
const PROVABLE_SHARE: f64 = 0.92;

/// Just below the top of an earlier edge's bracket: its failing share less 3 %.
const BELOW_TOP: f64 = 0.97;

#[derive(Debug, Clone)]
struct Prior {
    estimate: EstimatePlan,
    /// The edge's passing and failing counts ÷ the estimate's streams.
    passed: f64,
    failed: f64,
    /// The highest rate a step of the search served its whole audience evenly at (`even_rate`: the slowest
    /// viewer's rate × the viewers), in streams of that format ÷ the estimate's streams: what the storage
    /// delivered to every viewer alike, whole viewers per device or not.
    served: f64,
    /// The format it was found for, in words ("2160p remux (80 Mbit/s)").
    label: String,
    /// Taken by the same format's search beside loads: it starts at the count that passed, never above it.
    beside: bool,
}

impl Prior {
    /// Where a one-step search of a later format starts, as a share of its estimate: the earlier edge's passing
    /// share, or higher when its bracket is coarse. Counts are whole, so a low count's edge says little: a
    /// remux edge of 3 passed and 4 failed against an estimate of 3.93 brackets the share between 0.76 and 1.02,
    /// and 0.76 of 39.3 × 1080p is 29, where 36 pass. The start is then just below the top of the bracket, at
    /// most `PROVABLE_SHARE`; a step that fails there walks down as any first step does. (The top less 8 % put
    /// 1080p at 36 of 40 after a remux edge of 3 beside a failing 4 of 4.19, and 40 after an edge of 4: three
    /// quick checks of one disk then gave 36, 36 and 40.)
    ///
    /// An edge of few viewers of a high bitrate says less still where the storage is several devices, each
    /// viewer's reads landing on one (btrfs raid1 picks a member by title and thread): a member of 39.3 MB/s
    /// carries 3 remux viewers of 10 MB/s, not 3.93, so the remux edge of four such members was 0.76 of what they
    /// deliver, and 1080p scaled from it (116 of 141.8 × 1080p, where a member carries 39 of 39.3). The rate its
    /// steps served every viewer alike at is what the devices delivered as the busiest of them allows, whatever
    /// the split into whole viewers: the start is at least `PROVABLE_SHARE` of it (and never above
    /// `PROVABLE_SHARE` of the estimate).
    fn start_share(&self) -> f64 {
        if self.beside {
            return self.passed;
        }
        let top = (self.failed * BELOW_TOP).min(PROVABLE_SHARE);
        let served = (self.served * PROVABLE_SHARE).min(PROVABLE_SHARE);
        self.passed.max(top).max(served)
    }
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

/// Where the search starts, how it moves and where it stops: from the estimate's `bound` (a share of it, or the
/// `prior` share an earlier search found, then in steps of the precision), or from the plan's first count.
/// Without confirmations (`check --quick`: one run of each edge, so every step saved counts) the estimate is
/// trusted as a prior is, in steps of the precision from its share (from a prior's start, half the precision),
/// and a start from a prior that passes ends the search, its failing count derived from the prior's.
/// `bound`: the estimate's streams, and unrounded.
fn search_settings(s: &SearchPlan, bound: Option<(u32, f64)>, prior: Option<&Prior>) -> SearchSettings {
    // A share carried back to the estimate it came from must give the same count (40 ÷ 41.94 × 41.94 is 39.999…).
    let scaled = |b: f64, share: f64| ((b * share + 1e-6) as u32).max(1);
    let once = s.confirmations == 0;
    let (start, first_step) = match (bound, prior) {
        // Half the precision down: the prior puts the edge just below a start that fails, and a step of 20 %
        // (40 → 34 × 1080p) left the three quick checks of one disk at 34, 39 and 40.
        (Some((_, exact)), Some(p)) if once => (scaled(exact, p.start_share()), s.precision / 2.0),
        (Some((_, exact)), Some(p)) => (scaled(exact, p.passed), s.precision),
        (Some((b, _)), None) => (scaled(f64::from(b), s.start_factor), if once { s.precision } else { 1.0 }),
        (None, _) => (s.start, 1.0),
    };
    let derive_failing = match (bound, prior) {
        (Some((_, exact)), Some(p)) if once => Some(((exact * p.failed).ceil() as u32).max(start + 1)),
        _ => None,
    };
    let bound = bound.map(|(b, _)| b);
    let by_estimate = match (bound, s.limit_factor) {
        (Some(b), Some(f)) => ((f64::from(b) * f).ceil() as u32).max(start).max(4),
        _ => u32::MAX,
    };
    SearchSettings {
        start,
        limit: s.limit.min(by_estimate).max(1),
        precision: s.precision,
        first_step,
        confirmations: s.confirmations,
        derive_failing,
    }
}

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

/// Bytes per second one viewer of the phase's mix takes (its formats' bitrates by their weights).
fn stream_byte_rate(plan: &StreamsPlan) -> f64 {
    let mix = &plan.config.mix.0;
    let total: f64 = mix.iter().map(|(_, w)| f64::from(*w)).sum();
    let rate: f64 = mix.iter().map(|(f, w)| f64::from(*w) / total * f.bitrate.byte_rate().bytes_per_sec()).sum();
    rate.max(1.0)
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

    fn prior(passed: f64, failed: f64) -> Prior {
        let estimate = EstimatePlan { random_phase: 0, sequential_phase: 1 };
        Prior { estimate, passed, failed, served: 0.0, label: "2160p remux (80 Mbit/s)".into(), beside: false }
    }

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

    #[test]
    fn the_next_format_starts_below_what_the_busiest_member_allows_not_at_the_members_sum() {
        // A sync quick check of a btrfs raid1 (scripts/validate, 2026-11-28): remux estimated at 16.33 streams,
        // 9 passed and 10 failed; its failing steps were served at up to 127.6 MB/s over their span, but evenly
        // at 101.0 MB/s at most. HEVC (52.25 estimated, its bound 36.8) started at 0.92 of the span's rate, 37,
        // above its bound, and failed; from the even rate it starts at 31, where the top of the remux bracket
        // (10 × 0.97) puts it.
        let remux = Prior { served: 10.10 / 16.33, ..prior(9.0 / 16.33, 10.0 / 16.33) };
        assert_eq!(((52.25 * remux.start_share()) + 1e-6) as u32, 31);
        let from_span = Prior { served: 12.76 / 16.33, ..remux.clone() };
        assert_eq!(((52.25 * from_span.start_share()) + 1e-6) as u32, 37);
    }

    #[test]
    fn a_quick_search_from_a_prior_walks_down_in_half_its_precision() {
        let plan = SearchPlan {
            start: 1,
            start_factor: 1.0,
            limit: 10_000,
            limit_factor: Some(1.25),
            precision: 0.2,
            confirmations: 0,
        };
        // Remux 4 passed, 5 failed against 4.19; 1080p's estimate 41.94: a start at 0.95 of it (the passing share,
        // above 0.92), then 10 % steps down; the failing count 5 ÷ 4.19 of it, derived.
        let from_prior = search_settings(&plan, Some((41, 41.94)), Some(&prior(4.0 / 4.19, 5.0 / 4.19)));
        assert_eq!((from_prior.start, from_prior.first_step), (40, 0.1));
        assert_eq!(from_prior.derive_failing, Some(51));
        // The first format (no prior) moves in whole precision steps from its estimate.
        let first = search_settings(&plan, Some((41, 41.94)), None);
        assert_eq!((first.start, first.first_step), (41, 0.2));
        // With confirmations the prior's passing share is the start, in steps of the precision.
        let confirmed = SearchPlan { confirmations: 2, precision: 0.15, ..plan };
        let from_prior = search_settings(&confirmed, Some((41, 41.94)), Some(&prior(4.0 / 4.19, 5.0 / 4.19)));
        assert_eq!((from_prior.start, from_prior.first_step, from_prior.derive_failing), (40, 0.15, None));
    }

    #[test]
    fn a_search_beside_loads_starts_at_its_formats_edge_alone() {
        let plan = SearchPlan {
            start: 1,
            start_factor: 0.5,
            limit: 10_000,
            limit_factor: None,
            precision: 0.1,
            confirmations: 0,
        };
        // 2160p remux alone: 12 passed, 13 failed against 14.7. Beside a load, at once 12 (not the top of the
        // bracket a later format would start near), then 5 % steps down.
        let beside = Prior { beside: true, ..prior(12.0 / 14.7, 13.0 / 14.7) };
        let s = search_settings(&plan, Some((14, 14.7)), Some(&beside));
        assert_eq!((s.start, s.first_step, s.derive_failing), (12, 0.05, Some(13)));
    }

    #[test]
    fn a_coarse_edge_starts_the_next_format_near_the_top_of_its_bracket() {
        // Remux 3 passed, 4 failed against 3.93: 1080p (39.3) starts at 36, not 29.
        let coarse = prior(3.0 / 3.93, 4.0 / 3.93);
        assert!((coarse.start_share() - 0.92).abs() < 1e-9);
        // 3 passed, 4 failed against 4.19 (io_uring): at the cap too, 38 of 41.9 × 1080p, not 36.
        assert!((prior(3.0 / 4.19, 4.0 / 4.19).start_share() - 0.92).abs() < 1e-9);
        // An edge above the share a step can prove steady at starts where it passed.
        assert_eq!(prior(0.95, 1.19).start_share(), 0.95);
        // A low edge (a seek-bound pool) stays low: passed 0.49, failed 0.57 starts just below 0.57.
        assert!((prior(0.49, 0.57).start_share() - 0.57 * 0.97).abs() < 1e-9);
    }

    #[test]
    fn a_lumpy_edge_of_few_viewers_starts_the_next_format_at_the_rate_the_storage_served() {
        // btrfs raid1 of four 39.32 MB/s members, estimate 16.37 × remux: 10 passed, 12 failed (three per member
        // at most), while a step served its viewers alike at 138 MB/s. 1080p (163.7 estimated) starts at 0.92 of
        // 13.8 ÷ 16.37 (126 × 1080p), not at 0.71 (116 passed where the pool carries 141.8).
        let lumpy = Prior { served: 13.8 / 16.37, ..prior(10.0 / 16.37, 12.0 / 16.37) };
        assert!((lumpy.start_share() - 0.92 * 13.8 / 16.37).abs() < 1e-9);
        assert_eq!(((163.7 * lumpy.start_share()) + 1e-6) as u32, 126);
        // Never above what a step can prove steady at, whatever the rate served (memory can serve anything).
        assert_eq!(Prior { served: 3.0, ..prior(0.5, 0.6) }.start_share(), PROVABLE_SHARE);
        // Beside loads: where it passed alone, whatever was served.
        assert_eq!(Prior { served: 0.9, beside: true, ..prior(0.6, 0.7) }.start_share(), 0.6);
    }
}
