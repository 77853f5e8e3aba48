//! Runs the workloads of one file-set phase: a thread per workload thread, all started together, snapshots
//! merged into interval reports (an interval is reported once every thread has passed it or finished) and into
//! the phase totals, and the same `PhaseOutcome` a raw phase returns.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use super::tree::TreeState;
use super::worker::{ThreadEnd, ThreadSetup, run_thread};
use crate::metrics::{ErrorRecord, Recorder, Snapshot};
use crate::plan::{FileSetPlan, PhasePlan, defaults};
use crate::run::phase::PhaseControl;
use crate::run::{IntervalReport, PhaseOutcome, RunObserver};
use crate::workload::fileset::BitSet;

pub struct Inputs<'a> {
    pub index: usize,
    pub phase: &'a PhasePlan,
    pub fileset: &'a FileSetPlan,
    /// One state per tree of the phase, in the plan's order.
    pub states: Vec<&'a TreeState>,
    /// Operations per second for the whole phase (None: as fast as it goes).
    pub rate: Option<f64>,
    pub interval: Duration,
    pub interrupted: Arc<AtomicBool>,
}

pub fn run_workloads(inputs: Inputs<'_>, observer: &mut dyn RunObserver) -> PhaseOutcome {
    let Inputs { index, phase, fileset, states, rate, interval, interrupted } = inputs;
    let control = PhaseControl { interrupted, abort: AtomicBool::new(false) };
    let started = SystemTime::now();
    let busy: Vec<(BitSet, BitSet)> =
        fileset.trees.iter().map(|t| (BitSet::new(t.files, false), BitSet::new(t.dirs, false))).collect();
    let start = Instant::now();
    let measure_start = start + phase.ramp;
    let deadline = phase.runtime.map(|r| measure_start + r);
    let (tx, rx) = mpsc::channel::<Snapshot>();
    let total_skew: f64 = fileset.workloads.iter().map(|w| w.skew).sum::<f64>().max(1e-9);

    let (ends, gather) = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut id = 0;
        for w in &fileset.workloads {
            let gap = rate.map(|r| {
                let per_thread = r * (w.skew / total_skew) / f64::from(w.threads);
                Duration::from_secs_f64(1.0 / per_thread.max(1e-6))
            });
            for thread in 0..w.threads {
                let setup = ThreadSetup {
                    id,
                    thread,
                    workload: w,
                    tree: &fileset.trees[w.tree],
                    state: states[w.tree],
                    files_busy: &busy[w.tree].0,
                    dirs_busy: &busy[w.tree].1,
                    control: &control,
                    start,
                    measure_start,
                    deadline,
                    interval,
                    gap,
                    continue_on_error: phase.continue_on_error,
                    tx: tx.clone(),
                };
                handles.push(scope.spawn(move || run_thread(setup)));
                id += 1;
            }
        }
        drop(tx);
        let mut gather = Gather::new(id as usize, interval);
        let mut measuring = phase.ramp.is_zero();
        if measuring {
            observer.measuring(index);
        }
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(snapshot) => gather.add(snapshot, index, observer),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if !measuring && Instant::now() >= measure_start {
                measuring = true;
                observer.measuring(index);
            }
        }
        let ends: Vec<Result<ThreadEnd, String>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a file-set thread stopped unexpectedly (a bug)".into())))
            .collect();
        gather.emit(index, observer, true);
        (ends, gather)
    });

    let failure = ends.iter().find_map(|e| e.as_ref().err().cloned());
    let stop = control.stop_reason(failure);
    PhaseOutcome {
        totals: gather.totals,
        measured: gather.measured,
        stop,
        errors: gather.errors,
        direct: fileset.trees.iter().any(|t| t.direct),
        caps: None,
        issued_by_worker: ends.iter().map(|e| e.as_ref().map_or(0, |e| e.bytes)).collect(),
        started,
    }
}

/// Merges snapshots into intervals and totals.
struct Gather {
    interval: Duration,
    reported: Vec<Option<u64>>,
    finished: Vec<bool>,
    pending: BTreeMap<u64, (Recorder, Duration)>,
    totals: Recorder,
    errors: Vec<ErrorRecord>,
    measured: Duration,
}

impl Gather {
    fn new(threads: usize, interval: Duration) -> Gather {
        Gather {
            interval,
            reported: vec![None; threads],
            finished: vec![false; threads],
            pending: BTreeMap::new(),
            totals: Recorder::new(false),
            errors: Vec::new(),
            measured: Duration::ZERO,
        }
    }

    fn add(&mut self, snapshot: Snapshot, phase: usize, observer: &mut dyn RunObserver) {
        let thread = snapshot.worker as usize;
        self.reported[thread] = Some(snapshot.interval);
        self.finished[thread] |= snapshot.last;
        if snapshot.last {
            self.measured = self.measured.max(snapshot.elapsed);
        }
        let room = defaults::ERRORS_KEPT.saturating_sub(self.errors.len());
        self.errors.extend(snapshot.errors.into_iter().take(room));
        match self.pending.get_mut(&snapshot.interval) {
            Some((merged, elapsed)) => {
                merged.merge(&snapshot.recorder);
                *elapsed = (*elapsed).max(snapshot.elapsed);
            }
            None => {
                self.pending.insert(snapshot.interval, (snapshot.recorder, snapshot.elapsed));
            }
        }
        self.emit(phase, observer, false);
    }

    fn emit(&mut self, phase: usize, observer: &mut dyn RunObserver, all: bool) {
        while let Some((&index, _)) = self.pending.first_key_value() {
            let complete = self
                .reported
                .iter()
                .zip(&self.finished)
                .all(|(reported, &finished)| finished || reported.is_some_and(|r| r >= index));
            if !complete && !all {
                return;
            }
            let (recorder, elapsed) = self.pending.remove(&index).expect("key just seen");
            let start = self.interval * index as u32;
            let length = elapsed.saturating_sub(start).min(self.interval).max(Duration::from_nanos(1));
            self.totals.merge(&recorder);
            observer.interval(&IntervalReport { phase, index, start, length, recorder: &recorder });
        }
    }
}
