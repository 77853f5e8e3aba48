//! Running a plan: the work directory, data layout, phases in order, workers, pacing, signals and the live
//! progress line. Reports what happens through a [`RunObserver`] so that the caller (the app) can sample the
//! system, draw progress and write results without this layer knowing about any of them.

mod fileset;
mod layout;
mod pacer;
mod pattern;
mod phase;
mod progress;
mod signals;
mod workdir;
mod worker;
mod worker_setup;

use std::path::PathBuf;

pub use fileset::FormatReport;
pub use layout::direct_io_supported;
pub use phase::{IntervalReport, PhaseOutcome, StopReason};
pub use progress::ProgressLine;
pub use signals::{INTERRUPTED_EXIT, Interrupt};
pub use workdir::{WorkDir, remove_stale, run_id};

use crate::plan::{DirectMode, FilePlan, PhasePlan, Plan, TargetKind};
use crate::workload::Access;
use layout::LayoutError;
use phase::{PhaseInputs, run_phase};

/// What the run tells its caller as it goes. Every method has an empty default.
pub trait RunObserver {
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
    let mut told_buffered = false;
    let mut outcomes = Vec::new();

    for (index, phase) in plan.phases.iter().enumerate() {
        if interrupt.is_set() {
            break;
        }
        let direct = match phase.direct {
            DirectMode::Off => false,
            DirectMode::Required if !direct_ok => return Err(RunError::DirectUnsupported { path: files[0].clone() }),
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
        observer.phase_started(index, phase);
        let used = &plan.target.files[..phase.files_used as usize];
        if phase.needs_data {
            let missing: Vec<&FilePlan> = used.iter().zip(&filled).filter(|(_, f)| !**f).map(|(p, _)| p).collect();
            if !missing.is_empty() {
                let flag = interrupt.flag();
                let result =
                    layout::fill(&missing, direct, &flag, &mut |done, total| observer.prefill(index, done, total));
                match result {
                    Ok(()) => filled[..used.len()].iter_mut().for_each(|f| *f = true),
                    Err(LayoutError::Interrupted) => break,
                    Err(e) => return Err(RunError::Layout(e)),
                }
            }
        }
        if !direct {
            for file in used {
                layout::invalidate(&file.path, plan.target.writes_allowed && file.created);
            }
        }
        let inputs = PhaseInputs {
            index,
            phase,
            files: &files,
            direct,
            writable: plan.target.writes_allowed,
            interval: plan.interval,
            interrupted: interrupt.flag(),
        };
        let outcome = run_phase(inputs, observer);
        if covers_whole_files(phase, &outcome, used) {
            filled[..used.len()].iter_mut().for_each(|f| *f = true);
        }
        observer.phase_finished(index, phase, &outcome);
        let stop = outcome.stop.clone();
        outcomes.push(outcome);
        if stop != StopReason::Completed {
            break;
        }
    }

    let cleanup_error = work_dir.as_mut().and_then(|dir| {
        dir.remove().err().map(|e| format!("cannot remove the data files in {}: {e}", dir.path().display()))
    });
    Ok(RunOutcome { phases: outcomes, interrupted: interrupt.is_set(), cleanup_error })
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

/// A sequential write phase leaves its files fully written when it completed, its regions are the whole files,
/// and every worker issued at least one pass over its own slice (one pass covers every byte of a slice, and the
/// slices together cover the regions: see `plan::build` and `workload::source`).
fn covers_whole_files(phase: &PhasePlan, outcome: &PhaseOutcome, used: &[FilePlan]) -> bool {
    let whole = used.iter().all(|f| f.size.0 * u64::from(phase.files_used) == phase.data_set.0);
    let every_slice = phase
        .workers
        .iter()
        .zip(&outcome.issued_by_worker)
        .all(|(worker, &issued)| issued >= worker.workload.regions.iter().map(|r| r.len).sum::<u64>());
    phase.read_percent == 0
        && phase.access == Access::Sequential
        && outcome.stop == StopReason::Completed
        && whole
        && outcome.issued_by_worker.len() == phase.workers.len()
        && every_slice
}
