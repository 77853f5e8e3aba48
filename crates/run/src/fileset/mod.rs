//! Running file-set phases (vdbench's fsd/fwd for file systems): per phase, the format step on each tree, then
//! the workloads, with the same observer calls and `PhaseOutcome` as a raw phase. Trees live under
//! `ANCHOR/.streamcap/fileset-<name>/`, are reused by name between phases of the run (format = no, restart,
//! once), and are removed at the end unless `--keep` — also when a phase fails or the run is interrupted.

mod format;
mod ops;
mod runner;
mod schedule;
mod share;
mod tree;

use std::sync::Arc;
use std::time::Duration;

pub use format::FormatStats;
pub use schedule::FileSetSchedule;

use super::cluster::{Cluster, Key, PhaseSync, Ready, agree_ready};
use super::curves::Measured;
use super::phase::failed_outcome;
use super::{Interrupt, PhaseOutcome, RunObserver, StopReason};
use crate::engine::EngineKind;
use crate::plan::{DataShape, FileRate, FileSetPlan, FormatMode, PhasePlan, TreePlan};
use crate::verify::Verifier;
use format::{FormatError, Layout, format};
use tree::TreeState;
pub(super) use tree::{remove_abandoned_tree, remove_orphan_lock};

/// What the format step of a phase did, over all its trees.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

impl FormatReport {
    /// Adds another rank's format step of the same phase, which ran at the same time as this one: counts add
    /// up, and the step took as long as the longest.
    pub fn combine(&mut self, other: &FormatReport) {
        self.files += other.files;
        self.dirs += other.dirs;
        self.bytes += other.bytes;
        self.took = self.took.max(other.took);
        self.removed += other.removed;
    }

    fn add(&mut self, stats: FormatStats) {
        self.files += stats.files;
        self.dirs += stats.dirs;
        self.bytes += stats.bytes;
        self.took += stats.took;
    }
}

/// The root of each verified tree and the verifier's number of its first file.
pub type TreeBases = Vec<(std::path::PathBuf, u32)>;

/// Data verification of one tree's files (`--verify`, vdbench validate=yes): the run's verifier and the number
/// of the tree's first file in its file table (the tree's file `i` is `base + i`).
#[derive(Clone)]
pub struct TreeVerify {
    pub verifier: Arc<Verifier>,
    pub base: u32,
}

impl TreeVerify {
    /// The verifier's number of the tree's file `index`.
    #[inline]
    pub fn file(&self, index: u64) -> u32 {
        self.base + index as u32
    }
}

/// The trees of the run, kept between phases and removed at its end (also when dropped) unless `--keep`.
pub struct Trees {
    states: Vec<TreeState>,
    keep: bool,
    /// Wait for a tree another run holds instead of refusing (`--wait`).
    wait: bool,
    /// The lock of each tree root the run uses, held until the end (`tree::TreeLock`).
    locks: Vec<(std::path::PathBuf, tree::TreeLock)>,
    /// With `--verify`: the verifier, and the first file number of each verified tree (by root).
    verify: Option<(Arc<Verifier>, TreeBases)>,
    /// Mark each tree kept once it is ready, not at the end (a journaled run may be killed).
    keep_early: bool,
}

impl Trees {
    pub fn new(keep: bool, wait: bool) -> Trees {
        Trees { states: Vec::new(), keep, wait, locks: Vec::new(), verify: None, keep_early: false }
    }

    /// Verifies the trees whose roots are in `bases` with `verifier` (their first file numbers beside them).
    /// `journaled`: the run keeps a journal, and its trees are marked kept as soon as they are formatted.
    pub fn verify_with(&mut self, verifier: Arc<Verifier>, bases: TreeBases, journaled: bool) {
        self.verify = Some((verifier, bases));
        self.keep_early = journaled;
    }

    /// The verification of the tree at `root`, if the run verifies it.
    fn verify_of(&self, root: &std::path::Path) -> Option<TreeVerify> {
        let (verifier, bases) = self.verify.as_ref()?;
        let &(_, base) = bases.iter().find(|(r, _)| r == root)?;
        Some(TreeVerify { verifier: verifier.clone(), base })
    }

    /// Whether any tree of the run is read and written with O_DIRECT (for the read-back pass).
    pub fn direct(&self) -> bool {
        self.states.iter().any(|s| s.direct)
    }

    /// Takes the lock of `plan`'s tree for the rest of the run, once: another run using it is refused (or
    /// waited for, with `wait`).
    fn lock(&mut self, plan: &TreePlan, stop: &std::sync::atomic::AtomicBool) -> Result<(), String> {
        if self.locks.iter().any(|(root, _)| *root == plan.root) {
            return Ok(());
        }
        let shared = plan.share.is_some();
        let lock =
            tree::TreeLock::take(&plan.anchor, &plan.root, shared, (self.wait, stop)).map_err(|e| e.to_string())?;
        self.locks.push((plan.root.clone(), lock));
        Ok(())
    }

    /// Takes the lock of every tree `plan`'s file-set phases use on this rank (`rank`: in a multi-host run),
    /// before the first phase starts.
    pub fn lock_all(
        &mut self,
        plan: &crate::plan::Plan,
        rank: Option<u32>,
        stop: &std::sync::atomic::AtomicBool,
    ) -> Result<(), String> {
        for fs in plan.phases.iter().filter_map(|p| p.fileset()) {
            for (_, tree) in fs.trees.iter().enumerate().filter(|(i, _)| fs.uses_tree(*i, rank)) {
                self.lock(tree, stop)?;
            }
        }
        Ok(())
    }

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

    /// Removes the run's trees (or marks them kept). Of a tree mpirun's ranks share, each rank removes its own
    /// files, and the last rank to let go of its lock the rest (`share`): never while another still uses it.
    pub fn clean_up(&mut self) -> Result<(), String> {
        let mut first = None;
        for state in self.states.drain(..) {
            let removed = match (self.keep, state.share) {
                (true, _) => {
                    tree::mark_kept(&state.root);
                    Ok(())
                }
                (false, Some(_)) => share::remove_own_part(&state).map(drop),
                (false, None) => tree::remove(&state.root),
            };
            if let Err(e) = removed {
                first.get_or_insert(e.to_string());
            }
        }
        for (root, lock) in self.locks.drain(..) {
            let Some(lock) = lock.last_of_shared() else { continue };
            // The rest of a shared tree (directories, marker, root); a tree held alone is already gone.
            if let Err(e) = if self.keep { Ok(()) } else { tree::remove(&root) } {
                first.get_or_insert(e.to_string());
            }
            lock.release();
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Trees {
    fn drop(&mut self) {
        let _ = self.clean_up();
    }
}

/// Runs one file-set phase (its index, plan and file-set plan): the format step on each of its trees, then its
/// workloads. In a multi-host run every rank formats its own trees, and the workloads start only when every
/// rank's format step went well.
pub fn run_fileset_phase(
    (index, phase, fs): (usize, &PhasePlan, &FileSetPlan),
    trees: &mut Trees,
    interval: Duration,
    interrupt: &Interrupt,
    measured: &[Option<Measured>],
    cluster: Option<&Cluster>,
    observer: &mut dyn RunObserver,
) -> PhaseOutcome {
    observer.phase_started(index, phase);
    let flag = interrupt.flag();
    let rank = cluster.map(Cluster::rank);
    let (slots, report, mut problem) = format_trees((index, fs), rank, trees, &flag, interrupt, observer);
    observer.fileset_formatted(index, &report);
    if let Some(cluster) = cluster {
        problem = agree_formatted(cluster, index, problem, interrupt);
    }
    let runs_workload = !matches!(fs.format, FormatMode::Only | FormatMode::Clean) && !fs.workloads.is_empty();
    match problem {
        Some(stop) => failed_outcome(fs.trees.iter().any(|t| t.direct), stop),
        None if !runs_workload => {
            observer.measuring(index);
            failed_outcome(false, StopReason::Completed)
        }
        None => {
            let inputs = runner::Inputs {
                index,
                phase,
                fileset: fs,
                states: slots.iter().map(|s| s.map(|s| &trees.states[s])).collect(),
                rank,
                verify: fs.trees.iter().map(|t| trees.verify_of(&t.root)).collect(),
                rate: operation_rate(fs, measured, cluster),
                interval,
                interrupted: flag.clone(),
                sync: cluster.map(|cluster| PhaseSync { cluster, phase: index, step: 0, stonewall: true }),
            };
            runner::run_workloads(inputs, observer)
        }
    }
}

/// Locks and prepares each tree of the phase that this rank uses (`FileSetPlan::uses_tree`) in turn, until one
/// fails: each tree's slot in `trees` (`None` for another rank's tree), what the format step did, and why it
/// stopped, if it did.
fn format_trees(
    (index, fs): (usize, &FileSetPlan),
    rank: Option<u32>,
    trees: &mut Trees,
    flag: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    interrupt: &Interrupt,
    observer: &mut dyn RunObserver,
) -> (Vec<Option<usize>>, FormatReport, Option<StopReason>) {
    let mut report = FormatReport::default();
    let mut slots = Vec::new();
    let mut problem: Option<StopReason> = None;
    for (i, tree_plan) in fs.trees.iter().enumerate() {
        if problem.is_some() || !fs.uses_tree(i, rank) {
            slots.push(None);
            continue;
        }
        // Locked before the run knows the tree at all: a tree another run holds is never cleaned up by this one.
        if let Err(e) = trees.lock(tree_plan, flag) {
            problem = Some(if interrupt.is_set() { StopReason::Interrupted } else { StopReason::Failed(e) });
            continue;
        }
        let slot = trees.slot(tree_plan);
        slots.push(Some(slot));
        let verify = trees.verify_of(&tree_plan.root);
        let state = &mut trees.states[slot];
        let progress = &mut |done, total| observer.prefill(index, done, total);
        let was_direct = state.direct;
        let result =
            prepare((tree_plan, verify.as_ref()), state, fs.format, (fs.engine, fs.data), flag, &mut report, progress);
        if was_direct && !trees.states[slot].direct {
            observer.notice(&format!(
                "{} does not support direct I/O (O_DIRECT): the file-set tree uses buffered I/O",
                tree_plan.anchor.display()
            ));
        }
        match result {
            Ok(()) if trees.keep_early => tree::mark_kept(&tree_plan.root),
            Ok(()) => {}
            Err(FormatError::Interrupted) => problem = Some(StopReason::Interrupted),
            Err(e) => problem = Some(StopReason::Failed(e.to_string())),
        }
    }
    (slots, report, problem)
}

/// The phase's operations per second (`None`: as fast as it goes). A percentage of an earlier maximum is of
/// the rate every rank of a cluster measured together; each rank takes its share (where the workloads belong to
/// ranks, vdbench's hds, their skews already share it out).
fn operation_rate(fs: &FileSetPlan, measured: &[Option<Measured>], cluster: Option<&Cluster>) -> Option<f64> {
    match fs.rate {
        FileRate::Max => None,
        FileRate::PerSecond(r) => Some(r),
        FileRate::PercentOfMax { percent, of_phase } => {
            let max = measured.get(of_phase).copied().flatten().map_or(0.0, |m| m.requested_per_sec);
            let mapped = fs.workloads.iter().any(|w| w.rank.is_some());
            let ranks = if mapped { 1.0 } else { cluster.map_or(1.0, |c| f64::from(c.size())) };
            Some(max.max(1.0) * percent / 100.0 / ranks)
        }
    }
}

/// Whether every rank's format step went well: the first failure (named), else an interruption anywhere.
fn agree_formatted(
    cluster: &Cluster,
    index: usize,
    problem: Option<StopReason>,
    interrupt: &Interrupt,
) -> Option<StopReason> {
    let mine = match &problem {
        None => Ready::Go,
        Some(StopReason::Failed(why)) => Ready::Failed(why.clone()),
        Some(_) => Ready::Interrupted,
    };
    match agree_ready(cluster, Key::new(Key::GATE, index as u64, 1), &mine) {
        Ready::Go | Ready::Stop => None,
        Ready::Interrupted => {
            interrupt.set();
            Some(StopReason::Interrupted)
        }
        Ready::Failed(why) => Some(StopReason::Failed(why)),
    }
}

/// The format step of one tree (with its verification, if the run verifies it).
fn prepare(
    (plan, verify): (&TreePlan, Option<&TreeVerify>),
    state: &mut TreeState,
    mode: FormatMode,
    engine: (EngineKind, Option<DataShape>),
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    report: &mut FormatReport,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<(), FormatError> {
    match mode {
        FormatMode::Yes | FormatMode::Only | FormatMode::Directories | FormatMode::Empty => {
            let layout = match mode {
                FormatMode::Directories => Layout::Directories,
                FormatMode::Empty => Layout::Root,
                _ => Layout::All,
            };
            fresh(plan, state, verify, report)?;
            formatted(report, |made| format((plan, verify), state, (layout, false), engine, stop, progress, made))?;
            state.formatted = true;
        }
        FormatMode::Once if !state.formatted => {
            fresh(plan, state, verify, report)?;
            formatted(report, |made| {
                format((plan, verify), state, (Layout::All, false), engine, stop, progress, made)
            })?;
            state.formatted = true;
        }
        FormatMode::Restart => {
            formatted(report, |made| format((plan, verify), state, (Layout::All, true), engine, stop, progress, made))?;
            state.formatted = true;
        }
        FormatMode::Clean => {
            fresh(plan, state, verify, report)?;
            state.formatted = true;
        }
        FormatMode::No | FormatMode::Once => {
            if !state.formatted {
                // A tree from an earlier run (kept with --keep): find out what is there.
                if !tree::exists(&plan.root)? {
                    return Err(FormatError::Tree(tree::TreeError::Missing(plan.root.clone())));
                }
                format::scan(plan, state);
                format::direct_fallback(plan, state);
                state.formatted = true;
            }
        }
    }
    Ok(())
}

/// Runs one format step and adds what it made to `report`, also when it failed half-way.
fn formatted(
    report: &mut FormatReport,
    step: impl FnOnce(&mut FormatStats) -> Result<(), FormatError>,
) -> Result<(), FormatError> {
    let mut made = FormatStats::default();
    let result = step(&mut made);
    report.add(made);
    result
}

/// Removes the tree (counted if it was there), keeping only whether the run formatted it before; its files'
/// verified content is forgotten with them.
fn fresh(
    plan: &TreePlan,
    state: &mut TreeState,
    verify: Option<&TreeVerify>,
    report: &mut FormatReport,
) -> Result<(), FormatError> {
    if tree::exists(&plan.root)? {
        report.removed += 1;
    }
    // A tree the ranks share keeps its root: each rank removes its own files, and the last the directories.
    if plan.share.is_some() {
        share::remove_own_part(state)?;
    } else {
        tree::remove(&plan.root)?;
    }
    if let Some(v) = verify {
        (0..plan.files).for_each(|f| v.verifier.forget(v.file(f)));
    }
    let formatted = state.formatted;
    *state = TreeState::empty(plan);
    state.formatted = formatted;
    Ok(())
}
