//! The core's unit tests (a file of their own: core.rs passed 500 lines), and `Steady`, the schedule other
//! tests of the run drive the core with.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::*;
use crate::engine::{AnyEngine, EngineKind, EngineSetup};
use crate::metrics::OpClass;
use crate::run::RunObserver;
use crate::run::phase::{PhaseRun, SeriesStart, run_workers};
use crate::run::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};

struct Quiet;
impl RunObserver for Quiet {}

/// Reads of 4 KiB at offset 0, every one due `gap` after the last (or at once), until `count` were given.
pub struct Steady {
    gap: Option<Duration>,
    given: u32,
    count: u32,
    path: PathBuf,
    /// Counts the requests given, for a test that watches from another thread.
    shared: Option<Arc<AtomicU32>>,
}

impl Schedule for Steady {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        if self.given == self.count {
            return Next::Done;
        }
        let due = self.gap.map(|g| g * self.given);
        if let Some(d) = due
            && d > ctx.now
        {
            return Next::At(d);
        }
        self.given += 1;
        if let Some(shared) = &self.shared {
            shared.store(self.given, Ordering::Relaxed);
        }
        Next::Io(Io::transfer(OpKind::Read, 0, 0, 4096, due))
    }

    fn path(&self, _file: u32) -> &Path {
        &self.path
    }
}

/// Runs one worker of `schedule` on the null engine with `depth` slots.
fn run_on_null(schedule: Steady, depth: u32, paced: bool) -> crate::run::PhaseOutcome {
    run_on_null_kept(schedule, depth, paced, false)
}

/// `run_on_null`, keeping each worker's own totals when `per_worker`.
fn run_on_null_kept(schedule: Steady, depth: u32, paced: bool, per_worker: bool) -> crate::run::PhaseOutcome {
    let setup: SetUp<'_> = Box::new(move || {
        let engine = AnyEngine::build(EngineSetup::new(EngineKind::Null, depth, 4096)).map_err(|e| e.to_string())?;
        let settings = WorkerSettings { batch: 1, paced, ..WorkerSettings::default() };
        Ok(Built { engine, schedule: AnySchedule::Test(schedule), settings })
    });
    run_one(setup, Duration::ZERO, per_worker)
}

/// Runs the one worker `setup` builds as a phase with `ramp`, keeping its own totals when `per_worker`.
fn run_one(setup: SetUp<'_>, ramp: Duration, per_worker: bool) -> crate::run::PhaseOutcome {
    run_one_observed(setup, ramp, per_worker, &mut Quiet)
}

/// `run_one`, told to `observer`.
fn run_one_observed(
    setup: SetUp<'_>,
    ramp: Duration,
    per_worker: bool,
    observer: &mut dyn RunObserver,
) -> crate::run::PhaseOutcome {
    let run = PhaseRun {
        index: 0,
        interval: Duration::from_secs(1),
        ramp,
        floor: None,
        direct: false,
        interrupted: Arc::new(AtomicBool::new(false)),
        series: SeriesStart::default(),
        setups: vec![setup],
        sync: None,
        per_worker,
        steady: None,
        held: None,
        spread: 1,
    };
    run_workers(run, observer).outcome
}

/// An observer slow to take its first sample, as on a busy machine, that notes how many requests the worker had
/// been given by the time it had.
struct SlowFirstSample {
    given: Arc<AtomicU32>,
    seen: Option<u32>,
}

impl RunObserver for SlowFirstSample {
    fn measuring(&mut self, _phase: usize) {
        std::thread::sleep(Duration::from_millis(100));
        self.seen.get_or_insert(self.given.load(Ordering::Relaxed));
    }
}

#[test]
fn without_a_ramp_the_first_sample_is_taken_before_the_workers_start() {
    // Guards a phase's device figures on a busy CI machine: the observer sampled the device counters after the
    // workers were released, and a buffered read of 32 MiB on a loop device counted only 15 MiB of device reads.
    let given = Arc::new(AtomicU32::new(0));
    let schedule = Steady { gap: None, given: 0, count: 1_000, path: "x".into(), shared: Some(given.clone()) };
    let setup: SetUp<'_> = Box::new(move || {
        let engine = AnyEngine::build(EngineSetup::new(EngineKind::Null, 1, 4096)).map_err(|e| e.to_string())?;
        let settings = WorkerSettings { batch: 1, ..WorkerSettings::default() };
        Ok(Built { engine, schedule: AnySchedule::Test(schedule), settings })
    });
    let mut observer = SlowFirstSample { given: given.clone(), seen: None };
    let outcome = run_one_observed(setup, Duration::ZERO, false, &mut observer);
    assert_eq!(outcome.totals.stats(OpClass::Read).ops, 1_000);
    assert_eq!(observer.seen, Some(0), "no request was given before the first sample");
}

#[test]
fn work_that_is_always_due_never_overruns_an_engine_of_depth_one() {
    // Guards the stream driver's hang: with the sync engine (depth 1) and many chunks due at once, it kept
    // offering requests the engine could not take. The core sizes its table from the engine, not the ask.
    let schedule = Steady { gap: None, given: 0, count: 10_000, path: "x".into(), shared: None };
    let outcome = run_on_null(schedule, 1, false);
    assert_eq!(outcome.totals.stats(OpClass::Read).ops, 10_000);
    assert_eq!(outcome.caps.map(|c| c.queue_depth), Some(1));
}

#[test]
fn paced_work_records_lateness_and_lag_for_every_operation() {
    let schedule = Steady { gap: Some(Duration::from_millis(1)), given: 0, count: 50, path: "x".into(), shared: None };
    let outcome = run_on_null(schedule, 8, true);
    let reads = outcome.totals.stats(OpClass::Read);
    assert_eq!(reads.ops, 50);
    assert_eq!(reads.due_latency.as_ref().map(|h| h.count()), Some(50));
    assert_eq!(reads.lag.as_ref().map(|h| h.count()), Some(50));
}

#[test]
fn every_io_through_the_core_has_its_submission_latency_and_queue_depth_counted() {
    // fio's slat, lat and iodepth distributions come from the one core: before the redesign they were
    // measured in a second worker loop, and the merge onto the core left slat all zeros.
    let schedule = Steady { gap: None, given: 0, count: 1_000, path: "x".into(), shared: None };
    let outcome = run_on_null_kept(schedule, 8, false, true);
    let reads = outcome.totals.stats(OpClass::Read);
    assert_eq!((reads.ops, reads.submit_latency.count(), reads.total_latency.count()), (1_000, 1_000, 1_000));
    assert!(reads.total_latency.max() >= reads.latency.max());
    assert!(reads.total_latency.min() >= reads.submit_latency.min());
    let depths = outcome.totals.depths;
    assert_eq!(depths.level.iter().sum::<u64>(), 1_000);
    assert_eq!(depths.level[4..], [0, 0, 0], "never deeper than the 8 slots: {:?}", depths.level);
    assert!(depths.submit.iter().sum::<u64>() > 0 && depths.complete.iter().sum::<u64>() > 0);
    let kept = &outcome.workers;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].recorder.stats(OpClass::Read).ops, 1_000);
    assert_eq!(kept[0].recorder.depths, depths);
}

/// One unpaced worker of depth 1 on the null engine whose every request takes `latency`, with a ramp of 50 ms and
/// a runtime of 50 ms, allowed `overtime`.
fn run_timed(latency: Duration, overtime: Duration) -> crate::run::PhaseOutcome {
    run_timed_window(latency, overtime, false)
}

/// `run_timed`, measuring every completion after the ramp when `window` (`CoreConfig::window`).
fn run_timed_window(latency: Duration, overtime: Duration, window: bool) -> crate::run::PhaseOutcome {
    let ms = Duration::from_millis;
    let setup: SetUp<'_> = Box::new(move || {
        let setup = EngineSetup { null_latency: latency, ..EngineSetup::new(EngineKind::Null, 1, 4096) };
        let engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
        let schedule = Steady { gap: None, given: 0, count: u32::MAX, path: "x".into(), shared: None };
        let (ramp, runtime) = (ms(50), Some(ms(50)));
        let settings = WorkerSettings { batch: 1, ramp, runtime, overtime, window, ..WorkerSettings::default() };
        Ok(Built { engine, schedule: AnySchedule::Test(schedule), settings })
    });
    run_one(setup, ms(50), false)
}

#[test]
fn a_window_that_completed_nothing_goes_on_until_something_measured_completes() {
    // Guards check's 'seq-read 1M qd8' of 0 MB/s on a btrfs raid1 beside other writes: every read it had in flight
    // was issued during the ramp and completed after the runtime, so the phase measured nothing and reported a
    // zero that was not the pool's. A request of 150 ms issued at once outlasts the ramp and the runtime (100 ms).
    let slow = Duration::from_millis(150);
    let strict = run_timed(slow, Duration::ZERO);
    assert_eq!((strict.totals.stats(OpClass::Read).ops, strict.overtime), (0, None), "without overtime: nothing");
    let patient = run_timed(slow, Duration::from_secs(5));
    assert!(patient.totals.stats(OpClass::Read).ops >= 1, "with overtime, the first measured request completes");
    let overtime = patient.overtime.expect("the phase says it went on");
    assert!(
        overtime >= Duration::from_millis(100),
        "two requests of 150 ms end 200 ms past the deadline: {overtime:?}"
    );
    assert!(patient.measured >= Duration::from_millis(150), "the measured time covers the overtime");
}

/// Guards a quick check's sequential ceiling: `seq-read 1M qd8` for 0.5 s on a device throttled to 40 MiB/s read
/// 28.7 MB/s (38.4 for 2 s), since the requests in flight when the ramp ended were never counted while the
/// measured time ran to the last completion. Bounded by time alone, the window counts what completes in it: the
/// request issued at once, in the ramp, completes after it and is measured, with no overtime.
#[test]
fn a_window_bounded_by_time_counts_what_completes_in_it_whenever_issued() {
    let slow = Duration::from_millis(150);
    let window = run_timed_window(slow, Duration::ZERO, true);
    assert_eq!((window.totals.stats(OpClass::Read).ops, window.overtime), (1, None));
    assert!(window.measured >= Duration::from_millis(100), "from the ramp's end to the completion");
    assert_eq!(run_timed(slow, Duration::ZERO).totals.stats(OpClass::Read).ops, 0, "issued after the ramp only");
}

#[test]
fn a_window_that_measured_something_ends_at_its_runtime() {
    let quick = run_timed(Duration::from_millis(5), Duration::from_secs(5));
    assert!(quick.totals.stats(OpClass::Read).ops >= 1);
    assert_eq!(quick.overtime, None);
}
