//! The format step of a file-set phase (vdbench format=): create the directories, then create and fill every
//! file with random data in large writes — several `FileSetSchedule`s in format mode on the I/O core — reporting
//! progress. `restart` creates only what is missing
//! (directories that do not exist, files that are missing or shorter than planned), so an interrupted format can
//! be finished. Not measured as a workload: its own figures (files, directories, time) go into the result.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::TreeVerify;
use super::runner::thread_worker;
use super::schedule::Shared;
use super::tree::{TreeError, TreeState, create_root};
use crate::engine::EngineKind;
use crate::plan::{DataShape, FileIo, FileOp, FileWorkloadPlan, TreePlan, defaults};
use crate::run::phase::{PhaseRun, Ran, SeriesStart, StopReason, run_workers};
use crate::run::prepare::Progress;
use crate::run::worker_setup::{AnySchedule, SetUp, WorkerSettings};
use crate::units::Bytes;
use crate::workload::BlockSizes;
use crate::workload::fileset::{BitSet, FileClaims, Selection};

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("cannot create or fill {path}: {}{}", crate::limits::explain(cause), full_hint(cause))]
    Write { path: PathBuf, cause: io::Error },
    #[error("interrupted while creating the file-set tree")]
    Interrupted,
}

/// What a full filesystem means for a format step, after the OS's words.
fn full_hint(cause: &io::Error) -> &'static str {
    match cause.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "; the filesystem is full (or the quota used up): free space on it, or make the file set smaller \
             (fewer or smaller files)"
        }
        _ => "",
    }
}

/// What a format did.
#[derive(Debug, Clone, Copy, Default)]
pub struct FormatStats {
    /// Files created or refilled.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    pub bytes: u64,
    pub took: Duration,
}

/// How much of a tree the format step makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The directories and every file, filled.
    All,
    /// The directories only (vdbench format=directories; fio dirstat and dirdelete find them there).
    Directories,
    /// The root only (fio filecreate and dircreate make the rest).
    Root,
}

/// Creates the tree under `state.root`: its directories, then every file, created and filled by
/// `FileSetSchedule`s in format mode on the I/O core (stamping verified blocks when `verify`).
/// `progress(done, total)` counts bytes. What was made is added to `made` as it is made, so a format that fails
/// half-way (a full filesystem) still counts the directories and files it created.
pub fn format(
    (plan, verify): (&TreePlan, Option<&TreeVerify>),
    state: &mut TreeState,
    (layout, restart): (Layout, bool),
    (engine, data): (EngineKind, Option<DataShape>),
    stop: &Arc<AtomicBool>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
    made: &mut FormatStats,
) -> Result<(), FormatError> {
    let started = Instant::now();
    create_root(&plan.anchor, &plan.root, plan.share.is_some())?;
    direct_fallback(plan, state);
    let state = &*state;
    let dirs = if layout == Layout::Root { Ok(()) } else { make_dirs(plan, state, restart, stop, &mut made.dirs) };
    made.took += started.elapsed();
    dirs?;
    if layout != Layout::All {
        return Ok(());
    }
    make_files((plan, verify), state, restart, (engine, data), stop, progress, made)
}

/// Creates and fills every file of the tree (see `format`).
fn make_files(
    (plan, verify): (&TreePlan, Option<&TreeVerify>),
    state: &TreeState,
    restart: bool,
    (engine, data): (EngineKind, Option<DataShape>),
    stop: &Arc<AtomicBool>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
    made: &mut FormatStats,
) -> Result<(), FormatError> {
    let started = Instant::now();
    let workload = format_workload(plan, data);
    let threads = workload.threads;
    let (files_busy, dirs_busy) = (FileClaims::new(plan.files, false), BitSet::new(plan.dirs, false));
    let settings = WorkerSettings { batch: 1, ..WorkerSettings::default() };
    let setups: Vec<SetUp<'_>> = (0..threads)
        .map(|t| {
            let shared = Shared {
                workload: &workload,
                tree: plan,
                state,
                files_busy: &files_busy,
                dirs_busy: &dirs_busy,
                verify,
                data,
            };
            Box::new(move || thread_worker(engine, shared, t, None, Some(restart), settings)) as SetUp<'_>
        })
        .collect();
    let run = PhaseRun {
        index: 0,
        interval: Duration::from_millis(250),
        ramp: Duration::ZERO,
        floor: None,
        direct: state.direct,
        interrupted: stop.clone(),
        series: SeriesStart::default(),
        setups,
        sync: None,
        per_worker: false,
        steady: None,
        held: None,
        spread: 1,
    };
    let total: u64 = (0..plan.files).map(|f| plan.file_size(f)).sum();
    let mut observer = Progress { done: 0, total, report: progress };
    let Ran { outcome, schedules } = run_workers(run, &mut observer);
    let files: u64 =
        schedules.iter().flatten().map(|s| if let AnySchedule::FileSet(s) = s { s.created } else { 0 }).sum();
    made.files += files;
    made.took += started.elapsed();
    if let Some(failure) = failure(plan, outcome) {
        made.bytes += observer.done;
        return Err(failure);
    }
    progress(total, total);
    made.bytes += total;
    Ok(())
}

/// Why the format's workers did not create every file: the first write error, Ctrl-C, or a failure.
fn failure(plan: &TreePlan, outcome: crate::run::PhaseOutcome) -> Option<FormatError> {
    if let Some(e) = outcome.errors.first() {
        let cause = std::io::Error::from_raw_os_error(e.errno);
        return Some(FormatError::Write { path: e.path.clone().into(), cause });
    }
    match outcome.stop {
        StopReason::Interrupted => Some(FormatError::Interrupted),
        StopReason::Failed(why) => Some(FormatError::Write { path: plan.root.clone(), cause: io::Error::other(why) }),
        _ => None,
    }
}

/// The workload that formats: each file created once and written sequentially in chunks of `FORMAT_CHUNK` or
/// the tree's `format_with` transfer size (or of the largest file's size rounded up to 4 KiB, if that is
/// smaller), by up to `defaults::FORMAT_THREADS` or `format_with` threads.
fn format_workload(plan: &TreePlan, data: Option<DataShape>) -> FileWorkloadPlan {
    // Whole 4 KiB pages (direct I/O) and whole dedupe units, so that each unit is one decision (unique or
    // repeat), as in the workloads.
    let unit = data.and_then(|d| d.unit).map_or(4096, u64::from).max(1);
    let step = unit / gcd(unit, 4096) * 4096;
    // vdbench's fwd=format may say both; a transfer is never larger than the largest file needs.
    let asked = plan.format_with.xfersize.map_or(defaults::FORMAT_CHUNK.0, |b| b.0.max(1));
    let chunk = asked.min(plan.sizes.max().max(1)).next_multiple_of(step) as u32;
    let most = plan.format_with.threads.unwrap_or(defaults::FORMAT_THREADS).max(1);
    let threads = most.min(plan.files.min(u64::from(most)) as u32).max(1);
    FileWorkloadPlan {
        name: "format".into(),
        tree: 0,
        operation: FileOp::Create,
        read_percent: 0,
        xfer: BlockSizes::Fixed { size: chunk },
        xfer_label: Bytes(u64::from(chunk)).to_string(),
        select: Selection::Once,
        fileio: FileIo::Sequential,
        threads,
        skew: 0.0,
        seed: 0xF11E,
        dirs: false,
        shared: false,
        rank: None,
        stop_after: None,
        delete_first: false,
    }
}

/// Where the plan allows it, a tree falls back to buffered I/O when its filesystem refuses O_DIRECT (probed on
/// the tree's marker file, once the root exists).
pub fn direct_fallback(plan: &TreePlan, state: &mut TreeState) {
    if plan.direct && plan.direct_fallback && state.direct {
        let marker = plan.root.join(super::tree::MARKER);
        if marker.is_file() && !crate::run::layout::direct_io_supported(&marker).unwrap_or(true) {
            state.direct = false;
        }
    }
}

/// Creates the tree's directories, parents first, counting them in `made`.
fn make_dirs(
    plan: &TreePlan,
    state: &TreeState,
    restart: bool,
    stop: &AtomicBool,
    made: &mut u64,
) -> Result<(), FormatError> {
    let root = plan.root.to_string_lossy().into_owned();
    let mut path = String::with_capacity(root.len() + 64);
    for dir in 0..plan.dirs {
        if stop.load(Ordering::Relaxed) {
            return Err(FormatError::Interrupted);
        }
        let (level, index) = plan.shape.dir_level(dir);
        path.clear();
        path.push_str(&root);
        path.push('/');
        plan.shape.push_dir(level, index, &mut path);
        match std::fs::create_dir(&path) {
            Ok(()) => *made += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && restart => {}
            Err(cause) => return Err(FormatError::Write { path: path.into(), cause }),
        }
        state.dirs.set(dir, true);
    }
    Ok(())
}

/// Finds out which directories and files of an existing tree are there (one stat each), for a tree this run
/// did not create.
pub fn scan(plan: &TreePlan, state: &TreeState) {
    let root = plan.root.to_string_lossy().into_owned();
    let mut path = String::with_capacity(root.len() + 64);
    for dir in 0..plan.dirs {
        let (level, index) = plan.shape.dir_level(dir);
        path.clear();
        path.push_str(&root);
        path.push('/');
        plan.shape.push_dir(level, index, &mut path);
        state.dirs.set(dir, std::fs::metadata(&path).is_ok_and(|m| m.is_dir()));
    }
    for file in 0..plan.files {
        path.clear();
        path.push_str(&root);
        path.push('/');
        plan.push_file(file, &mut path);
        state.files.set(file, std::fs::metadata(&path).is_ok_and(|m| m.is_file()));
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}
