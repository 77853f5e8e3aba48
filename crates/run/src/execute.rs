//! Running a plan: every phase in order, whatever its kind — raw I/O, file sets, stream viewers — on the one I/O
//! core, with the work directory, the data files' state (filled or not), direct-I/O fallbacks and what each
//! phase measured kept here for the phases after it.
//!
//! Raw phases marked `concurrent` run together as a stage (fio jobs without stonewall), each under its own
//! coordinator. Data files are filled before the first phase that reads them, and a phase that ended early
//! (Ctrl-C, an I/O error, a failure) ends the run; the data files and trees are removed at the end unless kept.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use super::cluster::{self, Cluster, PhaseSync, settle};
use super::curves::{Measured, covers_whole_files, curve_stopped, with_curve_rate};
use super::fileset::{Trees, run_fileset_phase};
use super::flow::Flows;
use super::layout::{self, LayoutError};
use super::library_store::Keeper;
use super::phase::{PhaseRun, SeriesStart, run_workers_from};
use super::raw::{RawInputs, Verification};
use super::stage::{self, StageEnd};
use super::streams::{Priors, StreamInputs, run_stream_phase};
use super::{
    Interrupt, PhaseOutcome, RunError, RunObserver, RunOutcome, StopReason, WorkDir, raw, remove_stale, verify_pass,
};
use crate::plan::{DirectMode, FilePlan, PhaseKind, PhasePlan, Plan, RawPlan, StreamsPlan};
use crate::verify::Verifier;
use ::streams::RawRates;

/// Runs every phase of `plan` in order. Stops early on Ctrl-C (after writing what was measured) and after a
/// phase that ended in an I/O error or a failure.
pub fn execute(
    plan: &Plan,
    interrupt: &Interrupt,
    keep: bool,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    execute_in_cluster(plan, interrupt, keep, None, observer)
}

/// [`execute`] as one rank of a multi-host run: every rank runs its own copy of the plan (its own work directory
/// and files), phases start together and end together, and before every stage the ranks agree to go on, so a
/// failure or Ctrl-C on one rank stops them all at the same point.
pub fn execute_in_cluster(
    plan: &Plan,
    interrupt: &Interrupt,
    keep: bool,
    cluster: Option<&Cluster>,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    let started = Executor::start(plan, interrupt, keep, observer).and_then(|mut run| {
        run.cluster = cluster;
        // Every file-set tree the run uses is locked before its first phase: a second run on the same trees
        // (two checks of one directory) is refused, or waits, before it measures anything.
        let rank = cluster.map(Cluster::rank);
        match run.trees.lock_all(plan, rank, &interrupt.flag()) {
            // Ctrl-C while waiting (`--wait`): an interrupted run with no phase, exit 130.
            Err(_) if interrupt.is_set() => Ok(Some(run)),
            Err(e) => Err(RunError::FileSet(e)),
            Ok(()) => Ok(Some(run)),
        }
    });
    let Some(mut run) = settle(cluster, interrupt, u64::MAX, started)? else {
        return Err(RunError::Peer("another rank was interrupted before the first phase".into()));
    };
    let mut index = 0;
    while index < plan.phases.len() && (cluster.is_some() || !interrupt.is_set()) {
        // A stage is a raw phase and the raw phases after it that run at the same time.
        let together = match &plan.phases[index].kind {
            PhaseKind::Raw(_) => {
                plan.phases[index + 1..].iter().take_while(|p| p.raw().is_some_and(|r| r.concurrent)).count()
            }
            PhaseKind::FileSet(_) | PhaseKind::Streams(_) => 0,
        };
        // In a cluster, only the next stage's agreement stops the run, so that every rank stops at the same point.
        match run.stage(index, index + 1 + together, observer)? {
            Flow::Go => {}
            Flow::Stop if cluster.is_some() => run.stopping = true,
            Flow::Stop | Flow::Halt => break,
        }
        index += 1 + together;
    }
    Ok(run.finish(observer))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    /// A phase ended early: the run stops after it.
    Stop,
    /// Every rank has agreed to stop here (one process: the same as `Stop`).
    Halt,
}

struct Executor<'p> {
    plan: &'p Plan,
    interrupt: &'p Interrupt,
    work_dir: Option<WorkDir>,
    /// The target's block devices, held open for the whole run (`device_lock::hold_for_run`).
    _devices: Vec<super::device_lock::HeldDevice>,
    paths: Vec<PathBuf>,
    /// Whether each file of the table holds written data.
    filled: Vec<bool>,
    /// Whether each file accepts O_DIRECT, once probed.
    direct_ok: Vec<Option<bool>>,
    told_buffered: bool,
    /// What each phase measured, by plan index.
    measured: Vec<Option<Measured>>,
    /// Where earlier capacity searches found their edges, for the later ones on the same raw rates.
    priors: Priors,
    outcomes: Vec<PhaseOutcome>,
    trees: Trees,
    /// Data verification (`--verify`), shared by every worker of the run (and the file-set trees).
    verifier: Option<Arc<Verifier>>,
    /// The paths of the verifier's files: the target's, then the verified trees' (`plan::verified_trees`), each
    /// tree's root with the number of its first file, and the journal.
    verified: verify_pass::Verified,
    keep: bool,
    /// The library kept between runs: held while this run reads it, or this run's titles to keep at the end.
    library: Keeper,
    /// The other ranks of a multi-host run.
    cluster: Option<&'p Cluster>,
    /// In a cluster: a phase ended early, and this rank says so at the next stage's agreement.
    stopping: bool,
    /// fio's flows: the phases of one flow id share its counters.
    flows: Flows,
    /// The first failure to remove the data files or trees (reported with the outcome).
    cleanup_error: Option<String>,
}

impl<'p> Executor<'p> {
    fn start(
        plan: &'p Plan,
        interrupt: &'p Interrupt,
        keep: bool,
        observer: &mut dyn RunObserver,
    ) -> Result<Executor<'p>, RunError> {
        // A journaled run keeps its data, so that a later --verify-only can check it against the journal.
        let keep = keep || plan.verify.is_some_and(|v| v.journal.is_some());
        let mut work_dir = match &plan.target.work_dir {
            // What killed runs left was removed by the command before it gathered facts (`app::stale`), so before
            // the free-space check; a run started some other way still finds nothing of theirs in its way.
            Some(_) => {
                let stale = remove_stale(&plan.target.path);
                for removed in stale.removed {
                    observer.notice(&format!("removed the data of an earlier, killed run: {}", removed.display()));
                }
                stale.notes.iter().for_each(|note| observer.notice(note));
                Some(WorkDir::create(&plan.target, keep)?)
            }
            None => None,
        };
        let library = Keeper::start(&plan.target, observer)?;
        // A device written is held exclusively (the kernel refuses to mount it, and the open fails if it was
        // mounted or claimed since the plan checked it); one only read is held open so its page cache stays.
        let devices = super::device_lock::hold_for_run(plan)?;
        let mut trees = Trees::new(keep, plan.wait);
        let (verifier, verified) = verify_pass::run_verifier(plan, &mut trees, work_dir.as_mut())?;
        Ok(Executor {
            plan,
            interrupt,
            work_dir,
            _devices: devices,
            paths: plan.target.files.iter().map(|f| f.path.clone()).collect(),
            // Files streamcap creates start empty; existing files and devices hold whatever they hold.
            filled: plan.target.files.iter().map(|f| !f.created).collect(),
            direct_ok: vec![None; plan.target.files.len()],
            told_buffered: false,
            measured: vec![None; plan.phases.len()],
            priors: Priors::default(),
            outcomes: Vec::new(),
            trees,
            verifier,
            verified,
            keep,
            library,
            cluster: None,
            stopping: false,
            flows: Flows::default(),
            cleanup_error: None,
        })
    }

    /// Runs phases `start..end` (one phase, or raw phases that run at the same time).
    fn stage(&mut self, start: usize, end: usize, observer: &mut dyn RunObserver) -> Result<Flow, RunError> {
        if self.stopping {
            return self.gate::<()>(start, Ok(None)).map(|_| Flow::Halt);
        }
        let phase = &self.plan.phases[start];
        match &phase.kind {
            PhaseKind::FileSet(fileset) => {
                if self.gate(start, Ok(Some(())))?.is_none() {
                    return Ok(Flow::Halt);
                }
                let outcome = run_fileset_phase(
                    (start, phase, fileset),
                    &mut self.trees,
                    self.plan.interval,
                    self.interrupt,
                    &self.measured,
                    self.cluster,
                    observer,
                );
                Ok(self.finished(start, phase, outcome, observer))
            }
            PhaseKind::Streams(streams) => self.streams(start, streams, observer),
            PhaseKind::Raw(_) => self.raw_stage(start, end, observer),
        }
    }

    /// The agreement before stage `stage` (see [`settle`]); one process: `local` as it is.
    fn gate<T>(&self, stage: usize, local: Result<Option<T>, RunError>) -> Result<Option<T>, RunError> {
        settle(self.cluster, self.interrupt, stage as u64, local)
    }

    fn raw_stage(&mut self, start: usize, end: usize, observer: &mut dyn RunObserver) -> Result<Flow, RunError> {
        let prepared = self.prepare_raw(start, end, observer);
        let Some(prepared) = self.gate(start, prepared)? else { return Ok(Flow::Halt) };
        let StageEnd { outcomes, ends_run } = self.run_raw(&prepared, observer);
        let mut flow = Flow::Go;
        if ends_run && end < self.plan.phases.len() {
            observer.notice("a job with exitall and exit_what=all finished: the jobs after it do not run");
            flow = Flow::Stop;
        }
        for ((index, phase, _), outcome) in prepared.iter().zip(outcomes) {
            let raw = raw_of(phase);
            if covers_whole_files(raw, &outcome, &self.plan.target.files) {
                raw.files.iter().for_each(|&i| self.filled[i as usize] = true);
            }
            if self.finished(*index, phase, outcome, observer) == Flow::Stop {
                flow = Flow::Stop;
            }
        }
        Ok(flow)
    }

    /// Readies the raw phases `start..end` to run together: direct I/O, curve rates, filled files. `None` after
    /// Ctrl-C.
    #[allow(clippy::type_complexity)]
    fn prepare_raw(
        &mut self,
        start: usize,
        end: usize,
        observer: &mut dyn RunObserver,
    ) -> Result<Option<Vec<(usize, Cow<'p, PhasePlan>, bool)>>, RunError> {
        let mut prepared = Vec::new();
        for index in start..end {
            let phase = &self.plan.phases[index];
            let raw = raw_of(phase);
            let direct = self.direct_for(raw.direct, &raw.files, observer)?;
            if let Some(why) = curve_stopped(index, &self.plan.phases, &self.measured) {
                observer.notice(&format!("{}: skipped, {why}", phase.name));
                continue;
            }
            // Workers that belong to one rank (vdbench's hds) already share the rate out between the ranks.
            let mapped = raw.workers.iter().any(|w| w.mixed.as_ref().is_some_and(|m| m.rank.is_some()));
            let ranks = if mapped { 1 } else { self.cluster.map_or(1, Cluster::size) };
            let phase = match with_curve_rate(raw, &self.plan.phases, &self.measured, ranks) {
                Cow::Borrowed(_) => Cow::Borrowed(phase),
                Cow::Owned(paced) => Cow::Owned(PhasePlan { kind: PhaseKind::Raw(Box::new(paced)), ..phase.clone() }),
            };
            observer.phase_started(index, &phase);
            let ready = layout::FilesNeed::of_raw(raw_of(&phase), self.cluster.map(Cluster::rank));
            if self.ready_files(index, &ready, direct, observer)? == Flow::Stop {
                return Ok(None);
            }
            prepared.push((index, phase, direct));
        }
        Ok(Some(prepared))
    }

    /// Runs prepared raw phases: one directly, several at once each under its own coordinator
    /// (`stage::run_together`, with fio's exitall between them).
    fn run_raw(&self, prepared: &[(usize, Cow<'p, PhasePlan>, bool)], observer: &mut dyn RunObserver) -> StageEnd {
        type Prepared<'a> = (usize, &'a PhasePlan, bool);
        let run_one = |&(index, phase, direct): &Prepared<'_>, flag, together, observer: &mut dyn RunObserver| {
            let inputs = RawInputs {
                files: &self.paths,
                direct,
                writable: self.plan.target.writes_allowed,
                verification: Verification {
                    verifier: self.verifier.as_deref(),
                    backlog: self.plan.verify.and_then(|v| v.backlog),
                },
                flows: &self.flows,
            };
            let raw = raw_of(phase);
            let run = PhaseRun {
                index,
                interval: self.plan.interval,
                ramp: phase.ramp,
                floor: raw.rate_floor,
                direct,
                interrupted: flag,
                series: SeriesStart::default(),
                setups: raw::setups((phase, raw), &inputs, self.cluster.map(Cluster::rank)),
                sync: self.cluster.map(|cluster| PhaseSync { cluster, phase: index, step: 0, stonewall: true }),
                per_worker: raw.per_worker_results,
                steady: raw.steady_state,
                held: raw::held_across(raw, &self.flows, self.cluster.map(Cluster::rank)),
                spread: raw.spread,
            };
            run_workers_from(run, together, observer).outcome
        };
        let phases: Vec<(&PhasePlan, Prepared<'_>)> =
            prepared.iter().map(|(i, p, d)| (p.as_ref(), (*i, p.as_ref(), *d))).collect();
        if let [(phase, one)] = phases.as_slice() {
            let outcome = run_one(one, self.interrupt.flag(), None, observer);
            let ends_run = stage::ends_run_alone(phase, &outcome);
            return StageEnd { outcomes: vec![outcome], ends_run };
        }
        stage::run_together(&phases, self.interrupt.flag(), &run_one, observer)
    }

    fn streams(
        &mut self,
        index: usize,
        plan: &'p StreamsPlan,
        observer: &mut dyn RunObserver,
    ) -> Result<Flow, RunError> {
        let phase = &self.plan.phases[index];
        let media = plan.media_files();
        let ready = match self.direct_for(plan.direct, &media, observer) {
            Ok(direct) => {
                observer.phase_started(index, phase);
                let ready = layout::FilesNeed::media(media, plan.needs_data(), plan.engine);
                self.ready_files(index, &ready, direct, observer).map(|flow| (flow == Flow::Go).then_some(direct))
            }
            Err(e) => Err(e),
        };
        let Some(direct) = self.gate(index, ready)? else { return Ok(Flow::Halt) };
        let rates = plan.estimate.and_then(|e| {
            let random = self.measured[e.random_phase]?;
            let sequential = self.measured[e.sequential_phase]?;
            Some(RawRates { random_chunk_iops: random.ops_per_sec, sequential_mbps: sequential.bytes_per_sec / 1e6 })
        });
        let table = &self.plan.target.files;
        let inputs = StreamInputs { index, plan, table, direct, interval: self.plan.interval, cluster: self.cluster };
        let outcome = run_stream_phase(&inputs, rates, &mut self.priors, self.interrupt, observer);
        Ok(self.finished(index, phase, outcome, observer))
    }

    /// Fills the phase's files that hold no data yet (when it reads them), drops their cached pages before a
    /// buffered phase, and reads them into the cache when asked (fio pre_read). `Stop` after Ctrl-C.
    fn ready_files(
        &mut self,
        index: usize,
        phase: &layout::FilesNeed<'_>,
        direct: bool,
        observer: &mut dyn RunObserver,
    ) -> Result<Flow, RunError> {
        let table = &self.plan.target.files;
        let stopped = |e: LayoutError| match e {
            LayoutError::Interrupted => Ok(Flow::Stop),
            e => Err(RunError::Layout(e)),
        };
        let files = &phase.files;
        if phase.needs_data {
            let missing: Vec<_> = (files.iter().filter(|&&i| !self.filled[i as usize]))
                .map(|&i| layout::to_fill(&table[i as usize], i, self.verifier.as_deref()))
                .collect();
            if !missing.is_empty() {
                let flag = self.interrupt.flag();
                let progress = &mut |done, total| observer.prefill(index, done, total);
                if let Err(e) = layout::fill(missing, direct, phase.engine, flag, progress) {
                    return stopped(e);
                }
                files.iter().for_each(|&i| self.filled[i as usize] = true);
            }
        }
        let used: Vec<&FilePlan> = files.iter().map(|&i| &table[i as usize]).collect();
        // Phases start from an empty cache, so that one phase's writes do not become the next phase's cache
        // hits; `invalidate = false` keeps the cache on purpose (fio invalidate=0).
        if phase.invalidate {
            for file in &used {
                layout::invalidate(&file.path, self.plan.target.writes_allowed && file.created);
            }
        }
        if phase.pre_read
            && let Err(e) = layout::pre_read(&phase.read_extents(files, &used), phase.engine, self.interrupt.flag())
        {
            return stopped(e);
        }
        Ok(Flow::Go)
    }

    /// Whether the phase runs with direct I/O: as asked, falling back to buffered I/O (once, with a notice)
    /// where the filesystem refuses O_DIRECT and the user did not insist on it.
    fn direct_for(
        &mut self,
        mode: DirectMode,
        files: &[u32],
        observer: &mut dyn RunObserver,
    ) -> Result<bool, RunError> {
        if mode == DirectMode::Off {
            return Ok(false);
        }
        let Some(&first) = files.first() else { return Ok(true) };
        let path = &self.paths[first as usize];
        let ok = match self.direct_ok[first as usize] {
            Some(ok) => ok,
            None => {
                let ok =
                    layout::direct_io_supported(path).map_err(|cause| RunError::Open { path: path.clone(), cause })?;
                self.direct_ok[first as usize] = Some(ok);
                ok
            }
        };
        match mode {
            DirectMode::Required if !ok => Err(RunError::DirectUnsupported { path: path.clone() }),
            DirectMode::Preferred if !ok && !self.told_buffered => {
                self.told_buffered = true;
                observer.notice(&format!(
                    "{} does not support direct I/O (O_DIRECT): using buffered I/O; results for data sets smaller \
                     than twice the RAM are marked cache-affected",
                    self.plan.target.path.display()
                ));
                Ok(false)
            }
            _ => Ok(ok),
        }
    }

    /// Records a finished phase; `Stop` when it ended early.
    fn finished(
        &mut self,
        index: usize,
        phase: &PhasePlan,
        outcome: PhaseOutcome,
        observer: &mut dyn RunObserver,
    ) -> Flow {
        // After Ctrl-C or SIGTERM the data goes first, before the ranks combine the phase's figures and rank 0
        // saves the result: a second Ctrl-C exits at once, and under mpirun SIGKILL follows SIGTERM within a
        // second (Open MPI's odls_base_sigkill_timeout); what was measured is in memory and is written right
        // after. The phase's workers have ended, so none of its files is open any more. A kept run keeps its data.
        if self.interrupt.is_set() && !self.keep {
            self.keep_library(observer);
            self.remove_data();
        }
        let measured = Measured::of_phase(phase, &outcome);
        self.measured[index] = Some(match self.cluster {
            Some(cluster) => cluster::agree_measured(cluster, index, measured),
            None => measured,
        });
        if let Some(overtime) = outcome.overtime {
            observer.notice(&super::phase::overtime_notice(phase, overtime));
        }
        observer.phase_finished(index, phase, &outcome);
        let flow = if outcome.stop == StopReason::Completed { Flow::Go } else { Flow::Stop };
        self.outcomes.push(outcome);
        flow
    }

    fn finish(mut self, observer: &mut dyn RunObserver) -> RunOutcome {
        // After the last phase of a `--verify` run: the read-back pass over everything written, and for a kept
        // run the manifest `--verify-only` needs.
        let kept_dir = self.work_dir.as_ref().filter(|_| self.keep).map(|d| d.path().to_path_buf());
        let direct = self.direct_ok.first().copied().flatten().unwrap_or_else(|| self.trees.direct());
        let verify = self
            .verifier
            .as_deref()
            .map(|v| verify_pass::finish(v, &self.verified, direct, self.interrupt, kept_dir.as_deref(), observer));
        self.keep_library(observer);
        self.remove_data();
        let cleanup_error = self.cleanup_error.take();
        RunOutcome { phases: self.outcomes, interrupted: self.interrupt.is_set(), cleanup_error, verify }
    }

    /// Before the work directory goes: keeps this run's titles, or removes the kept library it read when asked.
    fn keep_library(&mut self, observer: &mut dyn RunObserver) {
        let dir = self.work_dir.as_ref().and_then(WorkDir::dir);
        self.library.finish(&self.plan.target, dir, &self.filled).inspect(|note| observer.notice(note));
    }

    /// Removes the work directory and the file-set trees (or marks them kept), keeping the first failure.
    /// Idempotent: the end of the run calls it again after an interrupted phase did.
    fn remove_data(&mut self) {
        if let Some(dir) = self.work_dir.as_mut()
            && let Err(e) = dir.remove()
        {
            let failure = format!("cannot remove the data files in {}: {e}", dir.path().display());
            self.cleanup_error.get_or_insert(failure);
        }
        if let Err(e) = self.trees.clean_up() {
            self.cleanup_error.get_or_insert(format!("cannot remove the file-set tree: {e}"));
        }
    }
}

/// The raw plan of a phase of a raw stage: `execute_in_cluster` puts only raw phases in one.
fn raw_of(phase: &PhasePlan) -> &RawPlan {
    phase.raw().expect("a raw stage holds raw phases only")
}
