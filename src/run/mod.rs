//! Running a plan: the work directory, data layout, phases in order, workers, pacing, signals and the live
//! progress line. Reports what happens through a [`RunObserver`] so that the caller (the app) can sample the
//! system, draw progress and write results without this layer knowing about any of them.

mod fileset;
mod kept;
mod layout;
mod pacer;
mod pattern;
mod phase;
mod progress;
mod signals;
mod verify_pass;
mod workdir;
mod worker;
mod worker_setup;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Mutex;

pub use fileset::FormatReport;
pub use kept::{KeptError, latest_kept_run, load_kept_run};
pub use layout::{direct_io_supported, fill};
pub use phase::{IntervalReport, PhaseOutcome, StopReason};
pub use progress::ProgressLine;
pub use signals::{INTERRUPTED_EXIT, Interrupt};
pub use verify_pass::{VerifyOutcome, read_back};
pub use workdir::{WorkDir, remove_stale, run_id};

use crate::plan::{Arrivals, DirectMode, FilePlan, Pacing, PhasePlan, Plan, TargetKind, defaults};
use crate::verify::Verifier;
use crate::workload::Access;
pub use layout::LayoutError;
use phase::{PhaseInputs, run_phase};

/// What the run tells its caller as it goes. Every method has an empty default.
pub trait RunObserver: Send {
    /// Something the user should know (a fallback, a removed leftover).
    fn notice(&mut self, _text: &str) {}
    /// Progress of filling the data files before phase `phase`.
    fn prefill(&mut self, _phase: usize, _done: u64, _total: u64) {}
    fn phase_started(&mut self, _index: usize, _phase: &PhasePlan) {}
    /// The ramp is over: measurement starts now.
    fn measuring(&mut self, _index: usize) {}
    fn interval(&mut self, _report: &IntervalReport<'_>) {}
    fn phase_finished(&mut self, _index: usize, _phase: &PhasePlan, _outcome: &PhaseOutcome) {}
    /// The format step of file-set phase `phase` is done (called before its workloads start).
    fn fileset_formatted(&mut self, _phase: usize, _report: &FormatReport) {}
}

/// How the run went as a whole.
#[derive(Debug)]
pub struct RunOutcome {
    pub phases: Vec<PhaseOutcome>,
    pub interrupted: bool,
    /// Removing the data files failed: what is left and why (the measurements above are still valid).
    pub cleanup_error: Option<String>,
    /// `--verify`: the blocks checked and the bad ones.
    pub verify: Option<VerifyOutcome>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    WorkDir(#[from] workdir::WorkDirError),
    #[error(
        "cannot open {path} with O_DIRECT (EINVAL): the filesystem does not support direct I/O; pass --buffered \
         and use a data set at least twice the RAM"
    )]
    DirectUnsupported { path: PathBuf },
    #[error("{0}")]
    Layout(LayoutError),
    #[error(
        "{path} is in use (mounted, or held by another program) since streamcap checked it: it will not write to \
         it; find the user with `lsblk` or `fuser -vm {path}`"
    )]
    DeviceBusy { path: PathBuf },
    #[error("cannot open {path}: {cause}")]
    Open { path: PathBuf, cause: std::io::Error },
}

/// Runs every phase of `plan` in order. Stops early on Ctrl-C (after writing what was measured) and after a
/// phase that ended in an I/O error or a failure.
pub fn execute(
    plan: &Plan,
    interrupt: &Interrupt,
    keep: bool,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    // File-set phases (directory trees of many files) run in their own module; plans never mix the two kinds.
    if plan.phases.iter().any(|p| p.fileset.is_some()) {
        return fileset::execute(plan, interrupt, keep, observer);
    }
    let mut work_dir = match plan.target.kind {
        TargetKind::Directory => {
            for stale in remove_stale(&plan.target.path) {
                observer.notice(&format!("removed the data of an earlier, killed run: {}", stale.display()));
            }
            Some(WorkDir::create(&plan.target, keep)?)
        }
        TargetKind::File | TargetKind::BlockDevice => None,
    };
    // While streamcap writes to a device, it holds it exclusively (O_EXCL on a block device): the kernel then
    // refuses to mount it, and the open fails if it was mounted or claimed since the plan checked it.
    let _exclusive = match plan.target.kind {
        TargetKind::BlockDevice if plan.target.writes_allowed => Some(hold_exclusively(&plan.target.path)?),
        _ => None,
    };
    let files: Vec<PathBuf> = plan.target.files.iter().map(|f| f.path.clone()).collect();
    // Files streamcap creates start empty; existing files and devices hold whatever they hold.
    let mut filled: Vec<bool> = plan.target.files.iter().map(|f| !f.created).collect();
    let direct_ok = direct_io_supported(&files[0]).map_err(|cause| RunError::Open { path: files[0].clone(), cause })?;
    let verifier = plan.verify.map(|v| {
        let files = plan.target.files.iter().map(|f| (f.path.display().to_string(), f.size.0)).collect();
        Verifier::new(v.algorithm, v.block, v.seed, files, defaults::BAD_BLOCKS_KEPT)
    });
    let mut told_buffered = false;
    let mut outcomes = Vec::new();
    // What each phase measured, by plan index, for curves: (operations per second, mean latency in ns).
    let mut measured: Vec<Option<(f64, f64)>> = vec![None; plan.phases.len()];

    let mut index = 0;
    'stages: while index < plan.phases.len() {
        // A stage is a phase and the phases after it that run at the same time (fio jobs without stonewall).
        let stage_end = index + 1 + plan.phases[index + 1..].iter().take_while(|p| p.concurrent).count();
        let mut prepared: Vec<(usize, Cow<'_, PhasePlan>, bool)> = Vec::new();
        for (index, phase) in plan.phases.iter().enumerate().take(stage_end).skip(index) {
            if interrupt.is_set() {
                break 'stages;
            }
            let direct = match phase.direct {
                DirectMode::Off => false,
                DirectMode::Required if !direct_ok => {
                    return Err(RunError::DirectUnsupported { path: files[0].clone() });
                }
                DirectMode::Required => true,
                DirectMode::Preferred => {
                    if !direct_ok && !told_buffered {
                        told_buffered = true;
                        observer.notice(&format!(
                            "{} does not support direct I/O (O_DIRECT): using buffered I/O; results for data sets \
                             smaller than twice the RAM are marked cache-affected",
                            plan.target.path.display()
                        ));
                    }
                    direct_ok
                }
            };
            if let Some(why) = curve_stopped(index, &plan.phases, &measured) {
                observer.notice(&format!("{}: skipped, {why}", phase.name));
                continue;
            }
            let phase = with_curve_rate(phase, &plan.phases, &measured);
            observer.phase_started(index, &phase);
            if phase.needs_data {
                let missing: Vec<&FilePlan> = phase
                    .files
                    .iter()
                    .filter(|&&i| !filled[i as usize])
                    .map(|&i| &plan.target.files[i as usize])
                    .collect();
                if !missing.is_empty() {
                    let flag = interrupt.flag();
                    let result =
                        layout::fill(&missing, direct, &flag, &mut |done, total| observer.prefill(index, done, total));
                    match result {
                        Ok(()) => phase.files.iter().for_each(|&i| filled[i as usize] = true),
                        Err(LayoutError::Interrupted) => break 'stages,
                        Err(e) => return Err(RunError::Layout(e)),
                    }
                }
            }
            let used: Vec<&FilePlan> = phase.files.iter().map(|&i| &plan.target.files[i as usize]).collect();
            // Phases start from an empty cache, so that one phase's writes do not become the next phase's cache
            // hits; `invalidate = false` keeps the cache on purpose (fio invalidate=0).
            if phase.invalidate {
                for file in &used {
                    layout::invalidate(&file.path, plan.target.writes_allowed && file.created);
                }
            }
            if phase.pre_read {
                let flag = interrupt.flag();
                match layout::pre_read(&used, &flag) {
                    Ok(()) => {}
                    Err(LayoutError::Interrupted) => break 'stages,
                    Err(e) => return Err(RunError::Layout(e)),
                }
            }
            prepared.push((index, phase, direct));
        }

        let run_one = |(index, phase, direct): &(usize, Cow<'_, PhasePlan>, bool), observer: &mut dyn RunObserver| {
            let inputs = PhaseInputs {
                index: *index,
                phase,
                files: &files,
                direct: *direct,
                writable: plan.target.writes_allowed,
                interval: plan.interval,
                interrupted: interrupt.flag(),
                verify: verifier.as_ref(),
                verify_backlog: plan.verify.and_then(|v| v.backlog),
            };
            run_phase(inputs, observer)
        };
        let stage_outcomes: Vec<PhaseOutcome> = if prepared.len() == 1 {
            vec![run_one(&prepared[0], observer)]
        } else {
            // Each phase of the stage has its own coordinator thread; they take turns with the observer.
            let shared = Mutex::new(&mut *observer);
            std::thread::scope(|scope| {
                let handles: Vec<_> = prepared
                    .iter()
                    .map(|prepared| {
                        let (shared, run_one) = (&shared, &run_one);
                        scope.spawn(move || run_one(prepared, &mut SharedObserver(shared)))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| panic!("a phase coordinator panicked")))
                    .collect()
            })
        };

        let mut stop = false;
        for ((index, phase, _), outcome) in prepared.iter().zip(stage_outcomes) {
            measured[*index] = Some(rate_and_latency(&outcome));
            if covers_whole_files(phase, &outcome, &plan.target.files) {
                phase.files.iter().for_each(|&i| filled[i as usize] = true);
            }
            observer.phase_finished(*index, phase, &outcome);
            stop |= outcome.stop != StopReason::Completed;
            outcomes.push(outcome);
        }
        if stop {
            break;
        }
        index = stage_end;
    }

    let kept_dir = work_dir.as_ref().filter(|_| keep).map(|d| d.path().to_path_buf());
    let verify =
        verifier.as_ref().map(|v| verify_pass::finish(v, &files, direct_ok, interrupt, kept_dir.as_deref(), observer));
    let cleanup_error = work_dir.as_mut().and_then(|dir| {
        dir.remove().err().map(|e| format!("cannot remove the data files in {}: {e}", dir.path().display()))
    });
    Ok(RunOutcome { phases: outcomes, interrupted: interrupt.is_set(), cleanup_error, verify })
}

/// A phase paced at a percentage of an earlier maximum (vdbench's curve) gets its rate from the nearest earlier
/// unpaced phase's measured rate, shared between its workers.
fn with_curve_rate<'a>(
    phase: &'a PhasePlan,
    phases: &[PhasePlan],
    measured: &[Option<(f64, f64)>],
) -> Cow<'a, PhasePlan> {
    let Some(percent) = phase.rate_percent_of_max else { return Cow::Borrowed(phase) };
    let max_rate = phases
        .iter()
        .zip(measured)
        .rev()
        .find(|(p, m)| p.pacing.is_none() && p.rate_percent_of_max.is_none() && m.is_some())
        .and_then(|(_, m)| m.map(|(rate, _)| rate));
    let mut paced = phase.clone();
    // Planning made sure an unpaced phase comes first; if it measured nothing, pace at one operation a second.
    let total = (max_rate.unwrap_or(0.0) * percent / 100.0).max(1.0);
    paced.pacing =
        Some(Pacing { ops_per_sec: total / f64::from(phase.jobs), bytes_per_sec: None, arrivals: Arrivals::Linear });
    Cow::Owned(paced)
}

/// vdbench's stopcurve: a curve phase is skipped once an earlier phase of the same curve (the run of curve phases
/// it belongs to) had a mean response time above its limit.
fn curve_stopped(index: usize, phases: &[PhasePlan], measured: &[Option<(f64, f64)>]) -> Option<String> {
    let limit = phases[index].curve_stop_latency?;
    phases[..index].iter().zip(measured).rev().take_while(|(p, _)| p.rate_percent_of_max.is_some()).find_map(
        |(p, m)| {
            let (_, mean_ns) = (*m)?;
            (mean_ns > limit.as_nanos() as f64).then(|| {
                format!(
                    "'{}' already averaged {:.3} ms, above the curve's limit of {:.3} ms",
                    p.name,
                    mean_ns / 1e6,
                    limit.as_secs_f64() * 1e3
                )
            })
        },
    )
}

/// Operations per second and mean latency (ns) over all classes of a finished phase.
fn rate_and_latency(outcome: &PhaseOutcome) -> (f64, f64) {
    let totals = &outcome.totals;
    let ops = totals.total_ops() as f64;
    let weighted: f64 = crate::metrics::OpClass::ALL
        .iter()
        .map(|&c| totals.stats(c))
        .filter(|s| s.ops > 0)
        .map(|s| s.latency.mean() * s.ops as f64)
        .sum();
    (ops / outcome.measured.as_secs_f64().max(1e-9), if ops > 0.0 { weighted / ops } else { 0.0 })
}

/// Forwards a concurrent phase's reports to the run's observer, one at a time.
struct SharedObserver<'a, 'b, 'c>(&'a Mutex<&'b mut (dyn RunObserver + 'c)>);

impl RunObserver for SharedObserver<'_, '_, '_> {
    fn notice(&mut self, text: &str) {
        self.lock().notice(text);
    }
    fn prefill(&mut self, phase: usize, done: u64, total: u64) {
        self.lock().prefill(phase, done, total);
    }
    fn phase_started(&mut self, index: usize, phase: &PhasePlan) {
        self.lock().phase_started(index, phase);
    }
    fn measuring(&mut self, index: usize) {
        self.lock().measuring(index);
    }
    fn interval(&mut self, report: &IntervalReport<'_>) {
        self.lock().interval(report);
    }
    fn phase_finished(&mut self, index: usize, phase: &PhasePlan, outcome: &PhaseOutcome) {
        self.lock().phase_finished(index, phase, outcome);
    }
}

impl<'b, 'c> SharedObserver<'_, 'b, 'c> {
    fn lock(&self) -> std::sync::MutexGuard<'_, &'b mut (dyn RunObserver + 'c)> {
        // A panic while reporting leaves the observer usable: it holds no invariant across calls.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn hold_exclusively(device: &std::path::Path) -> Result<std::fs::File, RunError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(device).map_err(|cause| {
        if cause.raw_os_error() == Some(libc::EBUSY) {
            RunError::DeviceBusy { path: device.to_path_buf() }
        } else {
            RunError::Open { path: device.to_path_buf(), cause }
        }
    })
}

/// A sequential write phase leaves its files fully written when it completed, its regions together cover every
/// byte of every file it used, and every worker issued at least one pass over its own regions (one pass covers
/// every byte of a worker's regions: see `plan::files` and `workload::source`).
fn covers_whole_files(phase: &PhasePlan, outcome: &PhaseOutcome, table: &[FilePlan]) -> bool {
    let every_file_covered = phase.files.iter().all(|&file| {
        let mut spans: Vec<(u64, u64)> = phase
            .workers
            .iter()
            .flat_map(|w| w.workload.regions.iter())
            .filter(|r| r.file == file)
            .map(|r| (r.start, r.start + r.len))
            .collect();
        spans.sort_unstable();
        let mut reached = 0;
        for (start, end) in spans {
            if start > reached {
                return false;
            }
            reached = reached.max(end);
        }
        reached >= table[file as usize].size.0
    });
    let every_pass_done = phase
        .workers
        .iter()
        .zip(&outcome.issued_by_worker)
        .all(|(worker, &issued)| issued >= worker.workload.regions.iter().map(|r| r.len).sum::<u64>());
    phase.read_percent == 0
        && phase.access == Access::Sequential
        && outcome.stop == StopReason::Completed
        && outcome.issued_by_worker.len() == phase.workers.len()
        && every_file_covered
        && every_pass_done
}
