//! Runs the workloads of one file-set phase: a thread per workload thread, all started together, snapshots
//! merged by the raw phases' `Gatherer` into interval reports and phase totals, and the same `PhaseOutcome` a raw
//! phase returns.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use super::tree::TreeState;
use super::worker::{ThreadEnd, ThreadSetup, run_thread};
use crate::metrics::Snapshot;
use crate::plan::{FileSetPlan, PhasePlan};
use crate::run::phase::{Gatherer, PhaseControl};
use crate::run::{PhaseOutcome, RunObserver};
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
        // File-set threads make their own recorders, so there are no spares to hand back.
        let mut gather = Gatherer::new(id as usize, interval, Vec::new());
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
        gather.flush(index, observer);
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
        workers: Vec::new(),
    }
}
