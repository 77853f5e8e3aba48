//! Runs the workloads of one file-set phase: one worker per workload thread, each a `FileSetSchedule` on the
//! I/O core (data transfers through the engine, metadata operations by the schedule), started together, with
//! the same `PhaseOutcome` and interval reports a raw phase gives.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::TreeVerify;
use super::schedule::{FileSetSchedule, Shared};
use super::tree::TreeState;
use crate::engine::{AnyEngine, EngineKind, EngineSetup, page_round_up};
use crate::plan::{FileSetPlan, FileWorkloadPlan, FlowSpec, PhasePlan};
use crate::run::cluster::{HeldAcross, PhaseSync};
use crate::run::flow::Flows;
use crate::run::pattern::fill_random;
use crate::run::phase::{PhaseRun, SeriesStart, run_workers};
use crate::run::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};
use crate::run::{PhaseOutcome, RunObserver};
use crate::workload::Rng;
use crate::workload::fileset::{BitSet, FileClaims};

pub struct Inputs<'a> {
    pub index: usize,
    pub phase: &'a PhasePlan,
    pub fileset: &'a FileSetPlan,
    /// One state per tree of the phase, in the plan's order (`None`: another rank's tree).
    pub states: Vec<Option<&'a TreeState>>,
    /// This process's rank in a multi-host run: it runs only its own workloads (and every one of no rank).
    pub rank: Option<u32>,
    /// One per tree of the phase: its verification (`--verify`), if any.
    pub verify: Vec<Option<TreeVerify>>,
    /// Operations per second for the whole phase (None: as fast as it goes).
    pub rate: Option<f64>,
    pub interval: Duration,
    pub interrupted: Arc<AtomicBool>,
    /// Multi-host runs: how the workloads take part.
    pub sync: Option<PhaseSync<'a>>,
}

pub fn run_workloads(inputs: Inputs<'_>, observer: &mut dyn RunObserver) -> PhaseOutcome {
    let Inputs { index, phase, fileset, states, rank, verify, rate, interval, interrupted, sync } = inputs;
    let direct = states.iter().flatten().any(|s| s.direct);
    // A use count per file only on trees a shared workload works on (see `FileClaims`).
    let busy: Vec<(FileClaims, BitSet)> = (fileset.trees.iter().enumerate())
        .map(|(i, t)| {
            let sharing = fileset.workloads.iter().any(|w| w.tree == i && w.shared);
            (FileClaims::new(t.files, sharing), BitSet::new(t.dirs, false))
        })
        .collect();
    // Over every rank's workloads: each rank's share of a fixed rate is its workloads' skew.
    let total_skew: f64 = fileset.workloads.iter().map(|w| w.skew).sum::<f64>().max(1e-9);
    // vdbench's controlled max: the threads hold their workloads' skew through one flow of this phase's own.
    let flows = Flows::default();
    let mut setups: Vec<SetUp<'_>> = Vec::new();
    for w in fileset.workloads.iter().filter(|w| rank.is_none_or(|r| w.runs_on(r))) {
        let state = states[w.tree].expect("the trees of this rank's workloads were prepared");
        let gap = rate.map(|r| {
            let per_thread = r * (w.skew / total_skew) / f64::from(w.threads);
            Duration::from_secs_f64(1.0 / per_thread.max(1e-6))
        });
        for thread in 0..w.threads {
            let shared = Shared {
                workload: w,
                tree: &fileset.trees[w.tree],
                state,
                files_busy: &busy[w.tree].0,
                dirs_busy: &busy[w.tree].1,
                verify: verify[w.tree].as_ref(),
                data: fileset.data,
            };
            setups.push(thread_setup((phase, fileset), shared, thread, gap, fileset.held.then_some(&flows)));
        }
    }
    let run = PhaseRun {
        index,
        interval,
        ramp: phase.ramp,
        floor: None,
        direct,
        interrupted,
        series: SeriesStart::default(),
        setups,
        sync,
        // With shared files, each thread's own figures show that every one of them worked.
        per_worker: fileset.workloads.iter().any(|w| w.shared),
        steady: None,
        held: held_across(fileset, &flows, rank),
        spread: 1,
    };
    let outcome = run_workers(run, observer).outcome;
    let most = busy.iter().map(|b| b.0.most()).max().unwrap_or(0);
    observer.fileset_sharing(index, most);
    outcome
}

/// Under mpirun, when the workloads hold their skew and run on the ranks of several hds: this rank's part of
/// the exchange that holds them together (`cluster::hold_across`), each thread weighing as in `thread_setup`.
fn held_across(fileset: &FileSetPlan, flows: &Flows, rank: Option<u32>) -> Option<HeldAcross> {
    let threads = fileset.workloads.iter().filter(|_| fileset.held);
    let members: Vec<(Option<u32>, u64)> =
        threads.flat_map(|w| (0..w.threads).map(move |_| (w.rank, thread_weight(w)))).collect();
    HeldAcross::new(flows, 0, rank?, &members)
}

/// A thread's weight in the phase's flow: its workload's skew over the workload's threads.
fn thread_weight(w: &FileWorkloadPlan) -> u64 {
    (w.skew / f64::from(w.threads) * 1e6).round().max(1.0) as u64
}

/// One workload thread's set-up, joined to the phase's flow (`flows`) when the workloads hold their skew.
fn thread_setup<'a>(
    (phase, fileset): (&'a PhasePlan, &'a FileSetPlan),
    shared: Shared<'a>,
    thread: u32,
    gap: Option<Duration>,
    flows: Option<&'a Flows>,
) -> SetUp<'a> {
    let settings = WorkerSettings {
        ramp: phase.ramp,
        runtime: phase.runtime,
        batch: 1,
        paced: gap.is_some(),
        continue_on_error: phase.continue_on_error,
        ..WorkerSettings::default()
    };
    let w = shared.workload;
    let held = flows.map(|flows| (flows, FlowSpec { id: 0, weight: thread_weight(w), sleep: Duration::ZERO }));
    Box::new(move || {
        let mut built = thread_worker(fileset.engine, shared, thread, gap, None, settings)?;
        if let (Some((flows, spec)), AnySchedule::FileSet(schedule)) = (held, &mut built.schedule) {
            schedule.flow = Some(flows.join(&spec));
        }
        Ok(built)
    })
}

/// One file-set thread: an engine with one transfer in flight (vdbench's threads are synchronous) and one place
/// in its file table for the file being worked on.
pub(super) fn thread_worker<'a>(
    engine: EngineKind,
    shared: Shared<'a>,
    thread: u32,
    gap: Option<Duration>,
    format: Option<bool>,
    settings: WorkerSettings,
) -> Result<Built<'a>, String> {
    let w: &FileWorkloadPlan = shared.workload;
    let buffer = page_round_up(w.xfer.max() as usize);
    let engine = if engine == EngineKind::Http { EngineKind::Sync } else { engine };
    let setup = EngineSetup { spare_file_slots: 1, ..EngineSetup::new(engine, 1, buffer) };
    let mut engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(w.seed ^ 0xDA7A ^ u64::from(thread));
    engine.for_each_buffer(&mut |b| fill_random(b, &mut rng));
    let schedule = AnySchedule::FileSet(FileSetSchedule::new(shared, thread, gap, format));
    Ok(Built { engine, schedule, settings })
}
