//! One phase: start the workers together, gather their snapshots into interval reports and phase totals, and
//! decide how the phase ended.
//!
//! Workers open their files and build their engines first and say so (`Ready`); only when all are ready does the
//! coordinator hand every worker the same start instant, so that set-up cost never counts as I/O time. An
//! interval is reported once every worker has either sent its snapshot for it or finished; recorders go back to
//! their worker for reuse.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::RunObserver;
use super::cluster::{self, PhaseSync, RankEnd};
use super::core::WorkerEnd;
use super::worker_setup::{AnySchedule, SetUp, WorkerChannels, WorkerMsg, worker_thread};
use crate::engine::Caps;
use crate::metrics::{ErrorRecord, Recorder, Snapshot};
use crate::plan::{RateFloor, defaults};

/// Stop flags a worker checks on every loop iteration (two relaxed loads).
pub struct PhaseControl {
    /// Set by SIGINT/SIGTERM for the whole run.
    pub interrupted: Arc<AtomicBool>,
    /// Set when an I/O error stops the phase (without `--continue-on-error`) or an engine fails.
    pub abort: AtomicBool,
    /// Another rank of a multi-host run stopped this phase (it finished first, or failed): `abort` is set too,
    /// but this rank's own share ended without an error.
    pub stopped_by_peer: AtomicBool,
}

impl PhaseControl {
    pub fn new(interrupted: Arc<AtomicBool>) -> PhaseControl {
        PhaseControl { interrupted, abort: AtomicBool::new(false), stopped_by_peer: AtomicBool::new(false) }
    }

    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }

    /// How the phase ended, once its threads have: a failure first, then Ctrl-C, then an I/O error.
    pub fn stop_reason(&self, failure: Option<String>) -> StopReason {
        if let Some(failure) = failure {
            StopReason::Failed(failure)
        } else if self.interrupted.load(Ordering::Relaxed) {
            StopReason::Interrupted
        } else if self.abort.load(Ordering::Relaxed) && !self.stopped_by_peer.load(Ordering::Relaxed) {
            StopReason::IoError
        } else {
            StopReason::Completed
        }
    }
}

/// Why a phase ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum StopReason {
    /// Its runtime or I/O amount was reached.
    Completed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// An I/O error stopped it (see the error records).
    IoError,
    /// Set-up or the engine failed; the text says how.
    Failed(String),
}

/// What a phase measured.
#[derive(Debug)]
pub struct PhaseOutcome {
    pub totals: Recorder,
    /// Measured time (after the ramp) until the last worker finished.
    pub measured: Duration,
    pub stop: StopReason,
    /// The first error records (at most `defaults::ERRORS_KEPT` per phase); `totals` counts them all.
    pub errors: Vec<ErrorRecord>,
    /// Direct I/O was in effect.
    pub direct: bool,
    pub caps: Option<Caps>,
    /// Bytes issued after the ramp by each worker, in worker order.
    pub issued_by_worker: Vec<u64>,
    pub started: SystemTime,
    /// Interval reports made (the next phase-internal run continues the series after them).
    pub intervals: u64,
    /// Multi-host runs: how each rank's share ended, in rank order (empty for a run of one process).
    pub ranks: Vec<RankEnd>,
}

/// Where a run of workers' intervals fall in their phase's series: a stream phase runs one set of workers per
/// step, and its series goes on from step to step.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeriesStart {
    /// Index of the first interval.
    pub index: u64,
    /// Its start, from the start of the phase's measurement.
    pub start: Duration,
}

/// One interval of a phase, all workers merged.
pub struct IntervalReport<'a> {
    pub phase: usize,
    pub index: u64,
    /// Start of the interval, from the start of measurement.
    pub start: Duration,
    pub length: Duration,
    pub recorder: &'a Recorder,
}

/// One phase's workers and how to coordinate them.
pub(super) struct PhaseRun<'a> {
    /// The phase's index in the plan (for the observer).
    pub index: usize,
    pub interval: Duration,
    /// Measurement starts this long after the common start.
    pub ramp: Duration,
    /// The lowest rate a worker may fall to over a full interval (fio rate_min).
    pub floor: Option<RateFloor>,
    /// Direct I/O is in effect (recorded in the outcome).
    pub direct: bool,
    pub interrupted: Arc<AtomicBool>,
    /// Where this run's intervals fall in the phase's series.
    pub series: SeriesStart,
    /// One per worker, run on the worker's own thread.
    pub setups: Vec<SetUp<'a>>,
    /// Multi-host runs: how this run of workers takes part (`None`: one process).
    pub sync: Option<PhaseSync<'a>>,
}

/// What the workers of a phase left: the outcome, and each worker's schedule (`None` when it never ran).
pub(super) struct Ran<'a> {
    pub outcome: PhaseOutcome,
    pub schedules: Vec<Option<AnySchedule<'a>>>,
}

/// Runs the workers of one phase: all set up first, then started together, their snapshots gathered into
/// intervals and totals until the last has finished. With `run.sync`, the ranks of a multi-host run start
/// together too (the start agreement is the barrier), stop one another (`cluster::link`) and end with one
/// outcome.
pub(super) fn run_workers<'a>(run: PhaseRun<'a>, observer: &mut dyn RunObserver) -> Ran<'a> {
    let control = PhaseControl::new(run.interrupted.clone());
    let started = SystemTime::now();
    let (tx, rx) = mpsc::channel();
    let workers = run.setups.len();
    let (index, interval, ramp, floor, direct, sync) =
        (run.index, run.interval, run.ramp, run.floor, run.direct, run.sync);
    let over = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (mut go, mut spares, mut handles) = (Vec::new(), Vec::new(), Vec::new());
        for (id, setup) in run.setups.into_iter().enumerate() {
            let (go_tx, go_rx) = mpsc::channel::<Option<Instant>>();
            let (spare_tx, spare_rx) = mpsc::channel::<Recorder>();
            go.push(go_tx);
            spares.push(spare_tx);
            let channels = WorkerChannels { tx: tx.clone(), spares: spare_rx, go: go_rx };
            let control = &control;
            handles.push(scope.spawn(move || worker_thread(id as u32, setup, interval, control, channels)));
        }
        drop(tx);
        let (caps, mut setup_error) = wait_ready(&rx, &handles);
        if let Some(sync) = &sync {
            setup_error = cluster::agree_start(sync, setup_error.as_deref());
        }
        let start = Instant::now();
        go.iter().for_each(|g| {
            let _ = g.send(setup_error.is_none().then_some(start));
        });
        if let Some(error) = setup_error {
            handles.into_iter().for_each(|h| drop(h.join()));
            let outcome = PhaseOutcome { started, ..failed_outcome(direct, StopReason::Failed(error)) };
            return Ran { outcome, schedules: (0..workers).map(|_| None).collect() };
        }
        let (control, over) = (&control, &over);
        let linked = sync.map(|sync| scope.spawn(move || cluster::link(&sync, control, over)));
        let mut gather = Gatherer::new(workers, interval, spares);
        gather.floor = floor;
        gather.series = run.series;
        gather.follow(&rx, control, index, start + ramp, observer);
        let (ends, schedules) = join_workers(handles);
        gather.flush(index, observer);
        let failure = ends.iter().find_map(|e| e.failure.clone()).or(gather.floor_breach.take());
        let mut stop = control.stop_reason(failure);
        let mut ranks = Vec::new();
        if let (Some(sync), Some(linked)) = (&sync, linked) {
            cluster::say_done(sync, &stop);
            over.store(true, Ordering::Relaxed);
            let _ = linked.join();
            (stop, ranks) = cluster::agree_end(sync, &stop, gather.measured);
        }
        let outcome = PhaseOutcome {
            totals: gather.totals,
            measured: gather.measured,
            stop,
            errors: gather.errors,
            direct,
            caps,
            issued_by_worker: ends.iter().map(|e| e.issued).collect(),
            started,
            intervals: gather.reported_intervals,
            ranks,
        };
        Ran { outcome, schedules }
    })
}

/// Waits for every worker thread. One that panicked did not finish its share: the phase failed, whatever the
/// others did.
fn join_workers<'a>(
    handles: Vec<ScopedJoinHandle<'_, (WorkerEnd, Option<AnySchedule<'a>>)>>,
) -> (Vec<WorkerEnd>, Vec<Option<AnySchedule<'a>>>) {
    handles
        .into_iter()
        .enumerate()
        .map(|(id, h)| {
            h.join().unwrap_or_else(|_| {
                let failure = format!("worker {id} stopped unexpectedly (a bug in streamcap; please report it)");
                (WorkerEnd { failure: Some(failure), ..WorkerEnd::default() }, None)
            })
        })
        .unzip()
}

/// Waits until every worker has said whether it is ready. A worker thread that ends without saying so (a panic
/// during set-up) would otherwise leave this waiting forever, since the other workers keep the channel open.
fn wait_ready<T>(rx: &Receiver<WorkerMsg>, handles: &[ScopedJoinHandle<'_, T>]) -> (Option<Caps>, Option<String>) {
    let (mut caps, mut error) = (None, None);
    let mut ready = vec![false; handles.len()];
    while ready.iter().any(|r| !r) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(WorkerMsg::Ready { worker, result }) => {
                ready[worker as usize] = true;
                match result {
                    Ok(c) => caps = Some(c),
                    Err(e) => {
                        error.get_or_insert(format!("worker {worker}: {e}"));
                    }
                }
            }
            Ok(WorkerMsg::Snapshot(_)) => {}
            Err(RecvTimeoutError::Timeout) => {
                if handles.iter().zip(&ready).any(|(h, &r)| !r && h.is_finished()) {
                    error.get_or_insert("a worker thread ended before it was ready".to_string());
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                error.get_or_insert("every worker thread ended before it was ready".to_string());
                break;
            }
        }
    }
    (caps, error)
}

/// The outcome of a phase that measured nothing (it failed to set up, or was stopped before it began).
pub(super) fn failed_outcome(direct: bool, stop: StopReason) -> PhaseOutcome {
    PhaseOutcome {
        totals: Recorder::new(false),
        measured: Duration::ZERO,
        stop,
        errors: Vec::new(),
        direct,
        caps: None,
        issued_by_worker: Vec::new(),
        started: SystemTime::now(),
        intervals: 0,
        ranks: Vec::new(),
    }
}

/// Merges snapshots into intervals and totals (raw and file-set phases alike).
pub(super) struct Gatherer {
    interval: Duration,
    /// Highest interval index each worker has reported, and whether it has finished.
    reported: Vec<Option<u64>>,
    finished: Vec<bool>,
    /// Intervals still waiting for some worker: merged recorder, its owner (for recycling), latest elapsed.
    pending: BTreeMap<u64, (Recorder, u32, Duration)>,
    /// Where emptied recorders go back for reuse, by worker (empty: they are dropped).
    spares: Vec<Sender<Recorder>>,
    pub totals: Recorder,
    pub errors: Vec<ErrorRecord>,
    pub measured: Duration,
    /// The lowest rate a worker may fall to over a full interval (fio rate_min).
    floor: Option<RateFloor>,
    /// Why the phase fell below its floor, once it has.
    floor_breach: Option<String>,
    /// Where this run's intervals fall in the phase's series.
    series: SeriesStart,
    /// Interval reports made so far.
    reported_intervals: u64,
}

impl Gatherer {
    pub fn new(workers: usize, interval: Duration, spares: Vec<Sender<Recorder>>) -> Gatherer {
        Gatherer {
            interval,
            reported: vec![None; workers],
            finished: vec![false; workers],
            pending: BTreeMap::new(),
            spares,
            totals: Recorder::new(false),
            errors: Vec::new(),
            measured: Duration::ZERO,
            floor: None,
            floor_breach: None,
            series: SeriesStart::default(),
            reported_intervals: 0,
        }
    }

    /// Takes the workers' snapshots until every worker has ended, telling the observer when measurement starts
    /// (`measure_start`, after the ramp) and stopping the phase when a worker falls below the rate floor.
    fn follow(
        &mut self,
        rx: &Receiver<WorkerMsg>,
        control: &PhaseControl,
        phase: usize,
        measure_start: Instant,
        observer: &mut dyn RunObserver,
    ) {
        let mut announced = Instant::now() >= measure_start;
        if announced {
            observer.measuring(phase);
        }
        loop {
            let timeout = if announced {
                Duration::from_millis(500)
            } else {
                measure_start.saturating_duration_since(Instant::now())
            };
            match rx.recv_timeout(timeout) {
                Ok(WorkerMsg::Snapshot(snapshot)) => {
                    self.add(*snapshot, phase, observer);
                    if self.floor_breach.is_some() {
                        control.abort.store(true, Ordering::Relaxed);
                    }
                }
                Ok(WorkerMsg::Ready { .. }) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if !announced && Instant::now() >= measure_start {
                announced = true;
                observer.measuring(phase);
            }
        }
    }

    pub fn add(&mut self, snapshot: Snapshot, phase: usize, observer: &mut dyn RunObserver) {
        let worker = snapshot.worker as usize;
        if !snapshot.last {
            self.check_floor(&snapshot);
        }
        self.reported[worker] = Some(snapshot.interval);
        self.finished[worker] |= snapshot.last;
        if snapshot.last {
            self.measured = self.measured.max(snapshot.elapsed);
        }
        let room = defaults::ERRORS_KEPT.saturating_sub(self.errors.len());
        self.errors.extend(snapshot.errors.into_iter().take(room));
        match self.pending.get_mut(&snapshot.interval) {
            Some((merged, _, elapsed)) => {
                merged.merge(&snapshot.recorder);
                *elapsed = (*elapsed).max(snapshot.elapsed);
                self.recycle(snapshot.worker, snapshot.recorder);
            }
            None => {
                self.pending.insert(snapshot.interval, (snapshot.recorder, snapshot.worker, snapshot.elapsed));
            }
        }
        self.emit_ready(phase, observer, false);
    }

    /// Reports every interval that no worker can still add to (or all of them, at the end).
    fn emit_ready(&mut self, phase: usize, observer: &mut dyn RunObserver, all: bool) {
        while let Some((&index, _)) = self.pending.first_key_value() {
            let complete = self
                .reported
                .iter()
                .zip(&self.finished)
                .all(|(reported, &finished)| finished || reported.is_some_and(|r| r >= index));
            if !complete && !all {
                return;
            }
            let (recorder, owner, elapsed) = self.pending.remove(&index).expect("key just seen");
            let start = self.interval * index as u32;
            // Full intervals end exactly at their boundary; the last one ends when the last worker stopped.
            let length = elapsed.saturating_sub(start);
            self.totals.merge(&recorder);
            if !length.is_zero() || recorder.total_ops() > 0 {
                let (index, start) = (self.series.index + index, self.series.start + start);
                observer.interval(&IntervalReport { phase, index, start, length, recorder: &recorder });
                self.reported_intervals += 1;
            }
            self.recycle(owner, recorder);
        }
    }

    /// A worker's full interval below the floor ends the phase as failed, as fio's rate_min does.
    fn check_floor(&mut self, snapshot: &Snapshot) {
        let (Some(floor), None) = (self.floor, &self.floor_breach) else { return };
        let seconds = self.interval.as_secs_f64();
        let bytes = snapshot.recorder.total_bytes() as f64 / seconds;
        let ops = snapshot.recorder.total_ops() as f64 / seconds;
        let breach = match (floor.bytes_per_sec, floor.ops_per_sec) {
            (Some(min), _) if bytes < min => {
                Some(format!("{:.1} MB/s, below rate-min {:.1} MB/s", bytes / 1e6, min / 1e6))
            }
            (_, Some(min)) if ops < min => Some(format!("{ops:.0} IOPS, below rate-min-iops {min:.0}")),
            _ => None,
        };
        self.floor_breach = breach.map(|b| {
            format!("worker {} did {b} in interval {}; the phase was stopped", snapshot.worker, snapshot.interval + 1)
        });
    }

    pub fn flush(&mut self, phase: usize, observer: &mut dyn RunObserver) {
        self.emit_ready(phase, observer, true);
    }

    fn recycle(&self, worker: u32, mut recorder: Recorder) {
        recorder.reset();
        // The worker may have finished (or takes no spares); then the recorder is simply dropped.
        if let Some(spares) = self.spares.get(worker as usize) {
            let _ = spares.send(recorder);
        }
    }
}
