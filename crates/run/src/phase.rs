//! One phase: start the workers together, hand their snapshots to the gatherer (`gather`: interval reports and
//! phase totals), and decide how the phase ended.
//!
//! Workers open their files and build their engines first and say so (`Ready`); only when all are ready does the
//! coordinator hand every worker the same start instant, so that set-up cost never counts as I/O time. An
//! interval is reported once every worker has either sent its snapshot for it or finished; recorders go back to
//! their worker for reuse.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::RunObserver;
use super::cluster::{self, PhaseSync, RankEnd};
use super::control::WorkerEnd;
use super::control::WorkerMsg;
pub use super::control::{PhaseControl, StopReason};
use super::gather::Gatherer;
use super::spread;
use super::stage::StartTicket;
use super::worker_setup::{AnySchedule, SetUp, WorkerChannels, worker_thread};
use crate::engine::Caps;
use crate::metrics::{DepthFound, ErrorRecord, Recorder, SteadyConfig, SteadyOutcome, WorkerTotals};
use crate::plan::RateFloor;

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
    /// Reads and writes issued after the ramp by each worker, in worker order (vdbench's skew check).
    pub ops_by_worker: Vec<u64>,
    pub started: SystemTime,
    /// Interval reports made (the next phase-internal run continues the series after them).
    pub intervals: u64,
    /// Multi-host runs: how each rank's share ended, in rank order (empty for a run of one process).
    pub ranks: Vec<RankEnd>,
    /// Each worker's own figures, in worker order, when the run asked for them (fio's clones reported apart).
    pub workers: Vec<WorkerTotals>,
    /// fio latency_target: what each worker's depth search found, in worker order (empty without a target).
    pub latency_depths: Vec<DepthFound>,
    /// How the steady-state check ended, when the phase had one.
    pub steady: Option<SteadyOutcome>,
    /// How far past its runtime the phase went because a worker had measured nothing by then (the longest of its
    /// workers' `WorkerEnd::overtime`).
    pub overtime: Option<Duration>,
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
    /// Keep each worker's own totals and rate spreads (`PhaseOutcome::workers`).
    pub per_worker: bool,
    /// End the phase once its rate is steady (checked once per interval by the gatherer).
    pub steady: Option<SteadyConfig>,
    /// Multi-host runs: the workers hold their shares with those of other ranks (`cluster::hold_across`).
    pub held: Option<cluster::HeldAcross>,
    /// The copies a pool picks by the reading thread's id, over which the workers' threads spread (1: any ids).
    pub spread: u32,
}

impl<'a> PhaseRun<'a> {
    /// One worker's unmeasured pass over files (the writing pass before a phase, the verify read-back):
    /// progress every 250 ms, no ramp, floor, steadiness or other ranks.
    pub fn pass(setup: SetUp<'a>, direct: bool, interrupted: Arc<AtomicBool>) -> PhaseRun<'a> {
        PhaseRun {
            index: 0,
            interval: Duration::from_millis(250),
            ramp: Duration::ZERO,
            floor: None,
            direct,
            interrupted,
            series: SeriesStart::default(),
            setups: vec![setup],
            sync: None,
            per_worker: false,
            steady: None,
            held: None,
            spread: 1,
        }
    }
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
    run_workers_from(run, None, observer)
}

/// [`run_workers`] for a phase of a stage (`together`: its place at the stage's common start): its workers
/// start when those of every phase of the stage are set up, at the same instant.
pub(super) fn run_workers_from<'a>(
    run: PhaseRun<'a>,
    together: Option<StartTicket>,
    observer: &mut dyn RunObserver,
) -> Ran<'a> {
    let control = PhaseControl::new(run.interrupted.clone());
    let started = SystemTime::now();
    let (tx, rx) = mpsc::channel();
    let workers = run.setups.len();
    let (index, interval, ramp, floor, direct, sync) =
        (run.index, run.interval, run.ramp, run.floor, run.direct, run.sync);
    let over = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let Started { go, spares, handles, error: spawn_error } =
            spawn_workers(scope, (run.setups, run.spread), interval, &control, &tx);
        drop(tx);
        // Without a ramp, measurement starts as the workers go: the observer samples just before.
        let at_go = ramp.is_zero();
        let (caps, setup_error, start) = start_together(
            &rx,
            (&handles, spawn_error),
            (sync.as_ref(), together),
            (&go, &mut || {
                if at_go {
                    observer.measuring(index)
                }
            }),
        );
        if let Some(error) = setup_error {
            handles.into_iter().for_each(|h| drop(h.join()));
            let outcome = PhaseOutcome { started, ..failed_outcome(direct, StopReason::Failed(error)) };
            return Ran { outcome, schedules: (0..workers).map(|_| None).collect() };
        }
        let (control, over) = (&control, &over);
        let linked = sync.map(|sync| scope.spawn(move || cluster::link(&sync, control, over)));
        let held = run.held.as_ref();
        let exchange = sync.zip(held).map(|(sync, held)| scope.spawn(move || cluster::hold_across(&sync, held, over)));
        let kept = if run.per_worker { workers } else { 0 };
        let mut gather = Gatherer::new(workers, interval, spares).asked(floor, run.steady, run.series, kept);
        if workers == 0 && sync.is_some() {
            gather.idle(control, (index, at_go), start + ramp, observer);
        } else {
            gather.follow(&rx, control, (index, at_go), start + ramp, observer);
        }
        let (ends, schedules) = join_workers(handles);
        gather.flush(index, observer);
        let failure = ends.iter().find_map(|e| e.failure.clone()).or(gather.floor_breach.take());
        let mut stop = control.stop_reason(failure);
        let mut ranks = Vec::new();
        if let (Some(sync), Some(linked)) = (&sync, linked) {
            cluster::say_done(sync, &stop);
            over.store(true, Ordering::Relaxed);
            let _ = linked.join();
            let _ = exchange.map(|e| e.join());
            (stop, ranks) = cluster::agree_end(sync, &stop, gather.measured);
        }
        let outcome = finished(gather, (&ends, &schedules), (stop, ranks), caps, direct, started);
        Ran { outcome, schedules }
    })
}

/// The worker threads of a phase, started and waiting for the common start.
struct Started<'scope, 'a> {
    go: Vec<Sender<Option<Instant>>>,
    spares: Vec<Sender<Recorder>>,
    handles: Vec<ScopedJoinHandle<'scope, (WorkerEnd, Option<AnySchedule<'a>>)>>,
    /// Why a thread could not be started (the threads before it were).
    error: Option<String>,
}

/// Starts one thread per worker in `scope`, each with its channels; on a pool whose copy follows the reading
/// thread, worker `i`'s thread id is `i` modulo `spread`, the copies (`spread::threads_by_copy`).
fn spawn_workers<'scope, 'env, 'a: 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    (setups, spread): (Vec<SetUp<'a>>, u32),
    interval: Duration,
    control: &'scope PhaseControl,
    tx: &Sender<WorkerMsg>,
) -> Started<'scope, 'a> {
    let mut started = Started { go: Vec::new(), spares: Vec::new(), handles: Vec::new(), error: None };
    // The plan checked the thread limits, but another process may have taken threads since: a refused start
    // fails the phase with the reason instead of panicking.
    let threads = match spread::threads_by_copy(scope, setups.len(), spread) {
        Ok(threads) => threads,
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EAGAIN) => format!("{e} (the pids limit, threads-max or ulimit -u)"),
                _ => crate::limits::explain(&e),
            };
            started.error = Some(format!("cannot start the phase's {} worker threads: {why}", setups.len()));
            return started;
        }
    };
    for ((id, setup), thread) in setups.into_iter().enumerate().zip(threads) {
        let (go_tx, go_rx) = mpsc::channel::<Option<Instant>>();
        let (spare_tx, spare_rx) = mpsc::channel::<Recorder>();
        started.go.push(go_tx);
        started.spares.push(spare_tx);
        let channels = WorkerChannels { tx: tx.clone(), spares: spare_rx, go: go_rx };
        let job = move || worker_thread(id as u32, setup, interval, control, channels);
        started.handles.push(thread.run(Box::new(job)));
    }
    started
}

/// The outcome of a phase whose workers ran: what the gatherer merged, how the phase (and, multi-host, each
/// rank) ended, what each worker issued, and what the depth searches of their schedules found.
fn finished(
    mut gather: Gatherer,
    (ends, schedules): (&[WorkerEnd], &[Option<AnySchedule<'_>>]),
    (stop, ranks): (StopReason, Vec<RankEnd>),
    caps: Option<Caps>,
    direct: bool,
    started: SystemTime,
) -> PhaseOutcome {
    PhaseOutcome {
        totals: gather.totals,
        measured: gather.measured,
        stop,
        errors: gather.errors,
        direct,
        caps,
        issued_by_worker: ends.iter().map(|e| e.issued).collect(),
        ops_by_worker: ends.iter().map(|e| e.issued_ops).collect(),
        started,
        intervals: gather.reported_intervals,
        ranks,
        workers: std::mem::take(&mut gather.workers),
        latency_depths: schedules.iter().flatten().filter_map(AnySchedule::latency_depth).collect(),
        steady: gather.steady.as_ref().map(|s| s.outcome(gather.interval)),
        overtime: ends.iter().filter_map(|e| e.overtime).max(),
    }
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
/// Waits until the workers are set up — and those of the other ranks (`sync`) and of the other phases of the
/// stage (`together`) — then hands every worker the common start, or `None` after a set-up error (returned with
/// what the engines can do and the start). `before_go` runs just before the workers are released, after every
/// agreement, unless set-up failed: a phase without a ramp takes its first sample (device and CPU counters) there,
/// since after the release a busy machine may let the workers run a while first (a CI run counted 15 of a
/// phase's 32 MiB of device reads).
fn start_together<T>(
    rx: &Receiver<WorkerMsg>,
    (handles, spawn_error): (&[ScopedJoinHandle<'_, T>], Option<String>),
    (sync, together): (Option<&PhaseSync<'_>>, Option<StartTicket>),
    (go, before_go): (&[Sender<Option<Instant>>], &mut dyn FnMut()),
) -> (Option<Caps>, Option<String>, Instant) {
    let (caps, mut setup_error) = match spawn_error {
        Some(error) => (None, Some(error)),
        None => wait_ready(rx, handles),
    };
    if let Some(sync) = sync {
        setup_error = cluster::agree_start(sync, setup_error.as_deref());
    }
    if setup_error.is_none() {
        before_go();
    }
    let start = together.map_or_else(Instant::now, StartTicket::start);
    go.iter().for_each(|g| {
        let _ = g.send(setup_error.is_none().then_some(start));
    });
    (caps, setup_error, start)
}

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
        ops_by_worker: Vec::new(),
        started: SystemTime::now(),
        intervals: 0,
        ranks: Vec::new(),
        workers: Vec::new(),
        latency_depths: Vec::new(),
        steady: None,
        overtime: None,
    }
}

/// What a phase that measured nothing in its runtime and went on (`CoreConfig::overtime`) tells the user.
pub(super) fn overtime_notice(phase: &crate::plan::PhasePlan, overtime: Duration) -> String {
    let runtime = phase.runtime.unwrap_or_default();
    format!(
        "'{}': none of the requests it issued after its {:.2} s ramp had completed when its {:.2} s were over (the \
         storage was slow to answer, e.g. busy with other writes), so it went on {:.2} s longer, until some had: \
         its figures cover {:.2} s",
        phase.name,
        phase.ramp.as_secs_f64(),
        runtime.as_secs_f64(),
        overtime.as_secs_f64(),
        (runtime + overtime).as_secs_f64(),
    )
}
