//! Running file-set phases (vdbench's fsd/fwd for file systems): per phase, the format step on each tree, then
//! the workloads, with the same observer calls and `PhaseOutcome` as a raw phase. Trees live under
//! `ANCHOR/.streamcap/fileset-<name>/`, are reused by name between phases of the run (format = no, restart,
//! once), and are removed at the end unless `--keep` — also when a phase fails or the run is interrupted.

mod format;
mod runner;
mod tree;
mod worker;

use std::time::Duration;

pub use format::FormatStats;

use super::{Interrupt, PhaseOutcome, RunError, RunObserver, RunOutcome, StopReason};
use crate::metrics::Recorder;
use crate::plan::{FileRate, FormatMode, Plan, TreePlan};
use format::{FormatError, Layout, format};
use tree::TreeState;

/// What the format step of a phase did, over all its trees.
#[derive(Debug, Clone, Copy, Default)]
pub struct FormatReport {
    /// Files created or refilled.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    /// Bytes the formatted trees hold.
    pub bytes: u64,
    pub took: Duration,
    /// Trees removed (format = yes or clean).
    pub removed: u32,
}

/// The trees of the run, removed when dropped unless `--keep`.
struct Trees {
    states: Vec<TreeState>,
    keep: bool,
}

impl Trees {
    /// The state of `plan`'s tree; a tree whose shape changed since the last phase starts unknown.
    fn slot(&mut self, plan: &TreePlan) -> usize {
        match self.states.iter().position(|s| s.root == plan.root) {
            Some(i) => {
                if self.states[i].shape != plan.shape || self.states[i].files.len() != plan.files {
                    let formatted = self.states[i].formatted;
                    self.states[i] = TreeState::empty(plan);
                    self.states[i].formatted = formatted;
                }
                i
            }
            None => {
                self.states.push(TreeState::empty(plan));
                self.states.len() - 1
            }
        }
    }

    fn clean_up(&mut self) -> Result<(), String> {
        let mut first = None;
        for state in self.states.drain(..) {
            if self.keep {
                tree::mark_kept(&state.root);
            } else if let Err(e) = tree::remove(&state.root) {
                first.get_or_insert(e.to_string());
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Trees {
    fn drop(&mut self) {
        let _ = self.clean_up();
    }
}

/// Runs a plan whose phases are all file-set phases.
pub fn execute(
    plan: &Plan,
    interrupt: &Interrupt,
    keep: bool,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    let mut trees = Trees { states: Vec::new(), keep };
    let mut outcomes: Vec<PhaseOutcome> = Vec::new();
    // Operations per second measured by each phase, for rates given as a percentage of an earlier maximum.
    let mut rates: Vec<f64> = Vec::new();
    for (index, phase) in plan.phases.iter().enumerate() {
        if interrupt.is_set() {
            break;
        }
        let fs = phase.fileset.as_ref().expect("a file-set plan has only file-set phases");
        observer.phase_started(index, phase);
        let started = std::time::SystemTime::now();
        let flag = interrupt.flag();
        let mut report = FormatReport::default();
        let mut slots = Vec::new();
        let mut problem: Option<StopReason> = None;
        for tree_plan in &fs.trees {
            let slot = trees.slot(tree_plan);
            slots.push(slot);
            if problem.is_some() {
                continue;
            }
            let state = &mut trees.states[slot];
            let result = prepare(tree_plan, state, fs.format, &flag, &mut report, &mut |done, total| {
                observer.prefill(index, done, total)
            });
            match result {
                Ok(()) => {}
                Err(FormatError::Interrupted) => problem = Some(StopReason::Interrupted),
                Err(e) => problem = Some(StopReason::Failed(e.to_string())),
            }
        }
        observer.fileset_formatted(index, &report);
        let runs_workload = !matches!(fs.format, FormatMode::Only | FormatMode::Clean) && !fs.workloads.is_empty();
        let outcome = match problem {
            Some(stop) => idle_outcome(stop, started),
            None if !runs_workload => {
                observer.measuring(index);
                idle_outcome(StopReason::Completed, started)
            }
            None => {
                let rate = match fs.rate {
                    FileRate::Max => None,
                    FileRate::PerSecond(r) => Some(r),
                    FileRate::PercentOfMax { percent, of_phase } => {
                        Some(rates.get(of_phase).copied().unwrap_or(0.0).max(1.0) * percent / 100.0)
                    }
                };
                let inputs = runner::Inputs {
                    index,
                    phase,
                    fileset: fs,
                    states: slots.iter().map(|&s| &trees.states[s]).collect(),
                    rate,
                    interval: plan.interval,
                    interrupted: flag.clone(),
                };
                runner::run_workloads(inputs, observer)
            }
        };
        let requested: u64 = fs.requested_classes().iter().map(|&c| outcome.totals.stats(c).ops).sum();
        rates.push(requested as f64 / outcome.measured.as_secs_f64().max(1e-9));
        observer.phase_finished(index, phase, &outcome);
        let stop = outcome.stop.clone();
        outcomes.push(outcome);
        if stop != StopReason::Completed {
            break;
        }
    }
    let cleanup_error = trees.clean_up().err().map(|e| format!("cannot remove the file-set tree: {e}"));
    Ok(RunOutcome { phases: outcomes, interrupted: interrupt.is_set(), cleanup_error, verify: None })
}

/// The format step of one tree.
fn prepare(
    plan: &TreePlan,
    state: &mut TreeState,
    mode: FormatMode,
    stop: &std::sync::atomic::AtomicBool,
    report: &mut FormatReport,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), FormatError> {
    let fresh = |state: &mut TreeState, report: &mut FormatReport| -> Result<(), FormatError> {
        if tree::exists(&plan.root)? {
            report.removed += 1;
        }
        tree::remove(&plan.root)?;
        let formatted = state.formatted;
        *state = TreeState::empty(plan);
        state.formatted = formatted;
        Ok(())
    };
    let add = |report: &mut FormatReport, stats: FormatStats| {
        report.files += stats.files;
        report.dirs += stats.dirs;
        report.bytes += stats.bytes;
        report.took += stats.took;
    };
    match mode {
        FormatMode::Yes | FormatMode::Only | FormatMode::Directories | FormatMode::Empty => {
            let layout = match mode {
                FormatMode::Directories => Layout::Directories,
                FormatMode::Empty => Layout::Root,
                _ => Layout::All,
            };
            fresh(state, report)?;
            add(report, format(plan, state, layout, false, stop, progress)?);
            state.formatted = true;
        }
        FormatMode::Once if !state.formatted => {
            fresh(state, report)?;
            add(report, format(plan, state, Layout::All, false, stop, progress)?);
            state.formatted = true;
        }
        FormatMode::Restart => {
            add(report, format(plan, state, Layout::All, true, stop, progress)?);
            state.formatted = true;
        }
        FormatMode::Clean => {
            fresh(state, report)?;
            state.formatted = true;
        }
        FormatMode::No | FormatMode::Once => {
            if !state.formatted {
                // A tree from an earlier run (kept with --keep): find out what is there.
                if !tree::exists(&plan.root)? {
                    return Err(FormatError::Tree(tree::TreeError::Missing(plan.root.clone())));
                }
                format::scan(plan, state);
                state.formatted = true;
            }
        }
    }
    Ok(())
}

fn idle_outcome(stop: StopReason, started: std::time::SystemTime) -> PhaseOutcome {
    PhaseOutcome {
        totals: Recorder::new(false),
        measured: Duration::ZERO,
        stop,
        errors: Vec::new(),
        direct: false,
        caps: None,
        issued_by_worker: Vec::new(),
        started,
        workers: Vec::new(),
    }
}
