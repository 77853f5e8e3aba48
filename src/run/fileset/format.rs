//! The format step of a file-set phase (vdbench format=): create the directories and fill every file with
//! random data in large writes, in several threads, reporting progress. `restart` creates only what is missing
//! (directories that do not exist, files that are missing or shorter than planned), so an interrupted format can
//! be finished. Not measured as a workload: its own figures (files, directories, time) go into the result.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::tree::{TreeError, TreeState, create_root};
use crate::plan::{TreePlan, defaults};
use crate::run::pattern::fill_random;
use crate::workload::Rng;

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("cannot create or fill {path}: {cause}")]
    Write { path: PathBuf, cause: io::Error },
    #[error("interrupted while creating the file-set tree")]
    Interrupted,
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

/// Threads that create files at the same time: enough to keep a device's queue busy with small files.
const FORMAT_THREADS: u32 = 8;

/// Creates the tree under `state.root`. `progress(done, total)` counts bytes (files of size 0 count one byte
/// each, so that a tree of empty files still shows progress).
pub fn format(
    plan: &TreePlan,
    state: &TreeState,
    layout: Layout,
    restart: bool,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<FormatStats, FormatError> {
    let started = Instant::now();
    create_root(&plan.anchor, &plan.root)?;
    let root = plan.root.to_string_lossy().into_owned();
    let shape = &plan.shape;
    let mut stats = FormatStats::default();
    let mut path = String::with_capacity(root.len() + 64);
    let dirs = if layout == Layout::Root { 0 } else { plan.dirs };
    for dir in 0..dirs {
        if stop.load(Ordering::Relaxed) {
            return Err(FormatError::Interrupted);
        }
        let (level, index) = shape.dir_level(dir);
        path.clear();
        path.push_str(&root);
        path.push('/');
        shape.push_dir(level, index, &mut path);
        match std::fs::create_dir(&path) {
            Ok(()) => stats.dirs += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && restart => {}
            Err(cause) => return Err(FormatError::Write { path: path.into(), cause }),
        }
        state.dirs.set(dir, true);
    }
    if layout != Layout::All {
        stats.took = started.elapsed();
        return Ok(stats);
    }

    let total: u64 = (0..plan.files).map(|f| plan.sizes.size_of(f, plan.seed).max(1)).sum();
    let done = AtomicU64::new(0);
    let created = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<FormatError>> = Mutex::new(None);
    let threads = FORMAT_THREADS.min(plan.files.min(u64::from(FORMAT_THREADS)) as u32).max(1);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (root, done, created, failed, first_error) = (&root, &done, &created, &failed, &first_error);
            scope.spawn(move || {
                if let Err(e) = fill_files(plan, state, root, t, threads, restart, stop, failed, done, created) {
                    failed.store(true, Ordering::Relaxed);
                    first_error.lock().expect("no panics while holding it").get_or_insert(e);
                }
            });
        }
        let mut last = 0;
        loop {
            let now = done.load(Ordering::Relaxed);
            if now != last || now == 0 {
                progress(now, total);
                last = now;
            }
            if now >= total || failed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    progress(done.load(Ordering::Relaxed), total);
    if let Some(e) = first_error.into_inner().expect("the threads have ended") {
        return Err(e);
    }
    if stop.load(Ordering::Relaxed) {
        return Err(FormatError::Interrupted);
    }
    stats.files = created.load(Ordering::Relaxed);
    stats.bytes = (0..plan.files).map(|f| plan.sizes.size_of(f, plan.seed)).sum();
    stats.took = started.elapsed();
    Ok(stats)
}

/// One format thread: files `t, t + threads, …`.
#[allow(clippy::too_many_arguments)]
fn fill_files(
    plan: &TreePlan,
    state: &TreeState,
    root: &str,
    t: u32,
    threads: u32,
    restart: bool,
    stop: &AtomicBool,
    failed: &AtomicBool,
    done: &AtomicU64,
    created: &AtomicU64,
) -> Result<(), FormatError> {
    let chunk = defaults::FORMAT_CHUNK.0.min(plan.sizes.max().max(1)).next_multiple_of(4096) as usize;
    let mut buffer =
        memmap2::MmapMut::map_anon(chunk).map_err(|cause| FormatError::Write { path: root.into(), cause })?;
    fill_random(&mut buffer, &mut Rng::new(0xF11E ^ u64::from(t)));
    let mut path = String::with_capacity(root.len() + 64);
    let mut file = u64::from(t);
    while file < plan.files {
        if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let size = plan.sizes.size_of(file, plan.seed);
        path.clear();
        path.push_str(root);
        path.push('/');
        plan.shape.push_file(file, &mut path);
        let whole = restart && std::fs::metadata(&path).is_ok_and(|m| m.len() >= size);
        if !whole {
            write_file(&path, size, plan.direct, restart, &buffer)
                .map_err(|cause| FormatError::Write { path: path.clone().into(), cause })?;
            created.fetch_add(1, Ordering::Relaxed);
        }
        state.files.set(file, true);
        done.fetch_add(size.max(1), Ordering::Relaxed);
        file += u64::from(threads);
    }
    Ok(())
}

fn write_file(path: &str, size: u64, direct: bool, restart: bool, buffer: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true);
    if restart {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    let file = options.open(path)?;
    let mut offset = 0;
    while offset < size {
        let len = (size - offset).min(buffer.len() as u64) as usize;
        file.write_all_at(&buffer[..len], offset)?;
        offset += len as u64;
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
        plan.shape.push_file(file, &mut path);
        state.files.set(file, std::fs::metadata(&path).is_ok_and(|m| m.is_file()));
    }
}
