//! Running a plan: the work directory, data layout, phases in order, workers, pacing, signals and the live
//! progress line. Reports what happens through a [`RunObserver`] so that the caller (the app) can sample the
//! system, draw progress and write results without this layer knowing about any of them.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::engine;
pub(crate) use ::escape;
pub(crate) use ::limits;
pub(crate) use ::metrics;
pub(crate) use ::plan;
pub(crate) use ::units;
pub(crate) use ::verify;
pub(crate) use ::workload;
// This crate, as `crate::run::…` names it.
use crate as run;

mod clock;
pub mod cluster;
mod control;
mod core;
mod curves;
mod depth_search;
mod device_lock;
mod direction_budget;
mod execute;
mod fileset;
mod flow;
mod fuse_release;
mod gather;
mod journal;
mod kept;
mod layout;
mod library_store;
mod open;
mod owned;
mod pacer;
mod pattern;
mod phase;
mod prepare;
mod priority;
mod progress;
mod raw;
mod schedule;
mod shape;
mod signals;
mod spread;
mod stage;
mod stale;
mod streams;
mod tally;
mod verify_pass;
mod verify_read;
mod workdir;
mod worker_setup;

use std::path::PathBuf;

pub use device_lock::{DeviceLock, DeviceLockError, lock_device};
pub use fileset::FormatReport;
pub use kept::{KeptError, KeptRun, latest_kept_run, load_kept_run};
pub use layout::{direct_io_supported, fill};
pub use library_store::find as find_kept_library;
pub use phase::{IntervalReport, PhaseOutcome, StopReason};
pub use progress::ProgressLine;
pub use signals::{INTERRUPTED_EXIT, Interrupt, survive_file_size_limit};
pub use stale::{Stale, remove_stale};
pub use verify_pass::{VerifyOutcome, read_back};
pub use workdir::{WorkDir, run_id};

pub use cluster::{Cluster, Transport};
pub use execute::{execute, execute_in_cluster};
pub use layout::LayoutError;
/// Bytes per ingest write (the planner models ingest with the same requests).
pub use streams::INGEST_WRITE;
pub use streams::media_files;

use crate::plan::PhasePlan;
use ::streams::{RawRates, SearchOutcome, StepOutcome};

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
    /// The most threads of file-set phase `phase` that held one file at once (its workloads are over).
    fn fileset_sharing(&mut self, _phase: usize, _most: u32) {}
    /// Stream phase `phase` takes its estimate (and its search's first count) from these raw rates.
    fn stream_estimate(&mut self, _phase: usize, _rates: RawRates) {}
    /// A step of stream phase `phase` is about to start with `count` viewers.
    fn stream_step_started(&mut self, _phase: usize, _count: u32) {}
    /// A step of stream phase `phase` ended: what its viewers (and ingest writers) saw.
    fn stream_step(&mut self, _phase: usize, _step: &StepOutcome) {}
    /// The capacity search of stream phase `phase` ended.
    fn stream_search(&mut self, _phase: usize, _found: &SearchOutcome) {}
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
    #[error(transparent)]
    DeviceLocked(#[from] DeviceLockError),
    /// A file-set tree could not be locked (another run holds it) or prepared.
    #[error("{0}")]
    FileSet(String),
    #[error("cannot open {path}: {cause}")]
    Open { path: PathBuf, cause: std::io::Error },
    /// Multi-host runs: another rank failed (named, with its error), so this one stopped too.
    #[error("{0}")]
    Peer(String),
    #[error(transparent)]
    Library(#[from] library_store::LibraryError),
}
