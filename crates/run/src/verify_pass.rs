//! The verification pass (fio's do_verify): after the last phase of a `--verify` run, and for
//! `--verify-only`, every file that holds verified blocks is read from start to end on the I/O core — the
//! `ReadBack` schedule of `verify_read.rs` on one worker, with the run's engine (io_uring keeps several pieces
//! in flight) — and each block is checked by the [`Verifier`]. This file runs the pass and turns what it found
//! into a [`VerifyOutcome`]: the verifier's counts and bad blocks (lost ranges of truncated or deleted files
//! among them), the reads that failed, and whether the pass ran to its end (it does not after Ctrl-C). The pass
//! itself is not measured; its reads count in its own phase run, which is dropped.
//!
//! Also the run's verifier itself (`run_verifier`): its file table — the target's data files, then every file
//! of each verified file-set tree — and, with `--journal`, the journal started before the first write.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::fileset::{TreeBases, Trees};
use super::phase::{PhaseOutcome, PhaseRun, StopReason, run_workers};
use super::prepare::Progress;
use super::verify_read::ReadBack;
use super::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};
use crate::engine::{AnyEngine, EngineKind, EngineSetup};
use crate::metrics::ErrorRecord;
use crate::plan::{PhasePlan, defaults};
use crate::verify::{Algorithm, BadLog, Verifier, VerifyCounts};

/// Requests in flight during the read-back on io_uring (the sync engine keeps one): with pieces of 4 MiB, 16 MiB
/// in flight keeps a striped pool's members busy, as prepare.rs's reading pass does.
const DEPTH: u32 = 4;

/// What verification found over a run, or over a kept run for `--verify-only`.
#[derive(Debug, Clone)]
pub struct VerifyOutcome {
    pub algorithm: Algorithm,
    /// Bytes per verified block.
    pub block: u32,
    /// Blocks checked, by reads during the phases and by the pass.
    pub counts: VerifyCounts,
    pub bad: BadLog,
    /// Reads of the pass that failed (their blocks were not checked): the first few, and how many in all.
    pub read_errors: Vec<ErrorRecord>,
    pub read_error_count: u64,
    /// The pass over everything written ran to its end (it does not after Ctrl-C).
    pub pass_complete: bool,
    /// The manifest written for a kept run (`--keep`), for a later `--verify-only`.
    pub manifest: Option<PathBuf>,
    /// A journaled run checked by `--verify-only`: blocks whose write was in flight when it ended.
    pub in_flight: Option<u64>,
}

impl VerifyOutcome {
    /// What the verifier holds, before (or without) a pass.
    fn of(verifier: &Verifier) -> VerifyOutcome {
        VerifyOutcome {
            algorithm: verifier.algorithm(),
            block: verifier.block_size(),
            counts: verifier.counts(),
            bad: verifier.bad_blocks(),
            read_errors: Vec::new(),
            read_error_count: 0,
            pass_complete: false,
            manifest: None,
            in_flight: None,
        }
    }
}

/// Reads back every file of `verifier` (at `paths`, same order) that holds verified blocks and checks them, with
/// the sync engine. `direct`: read with O_DIRECT where the filesystem allows it. `confined` (`--verify-only`):
/// every file lies in a directory held open by the caller (`owned.rs`), and none is opened any other way. A file
/// in such a directory is opened beneath it, never through a symbolic link and only if it is a regular file; one
/// that is missing, or ends before the blocks written to it, is checked as far as it goes and the rest reported
/// lost, with its offsets. `progress(done, total)` in bytes, after each interval of the pass.
pub fn read_back(
    verifier: &Verifier,
    paths: &[PathBuf],
    direct: bool,
    confined: bool,
    interrupted: &Arc<AtomicBool>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> VerifyOutcome {
    let pass = ReadBackPass { engine: EngineKind::Sync, direct, confined, interrupted: interrupted.clone() };
    pass.run(verifier, paths, progress).0
}

/// How a read-back runs: on which engine (null and http stand for sync), with direct I/O where the filesystem
/// allows it, confined to held directories or not, stopped by which flag.
pub(super) struct ReadBackPass {
    pub engine: EngineKind,
    pub direct: bool,
    pub confined: bool,
    pub interrupted: Arc<AtomicBool>,
}

impl ReadBackPass {
    /// Runs the read-back of `verifier`'s files at `paths` on the core; returns what verification found and the
    /// pass's own phase outcome (its reads, its engine).
    pub(super) fn run(
        self,
        verifier: &Verifier,
        paths: &[PathBuf],
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> (VerifyOutcome, PhaseOutcome) {
        let schedule = ReadBack::new(verifier, paths, self.direct, self.confined);
        let total = schedule.total();
        let engine = if matches!(self.engine, EngineKind::IoUring) { EngineKind::IoUring } else { EngineKind::Sync };
        let setup: SetUp<'_> = Box::new(move || read_back_worker(schedule, engine));
        let run = PhaseRun::pass(setup, self.direct, self.interrupted);
        let mut observer = Progress { done: 0, total, report: progress };
        let ran = run_workers(run, &mut observer);
        let mut outcome = VerifyOutcome::of(verifier);
        let schedule = ran.schedules.into_iter().next().flatten();
        if let Some(AnySchedule::ReadBack(mut schedule)) = schedule {
            if let StopReason::Failed(why) = &ran.outcome.stop {
                schedule.stopped(why, ran.outcome.measured);
            }
            outcome.pass_complete = schedule.complete() && ran.outcome.stop == StopReason::Completed;
            (outcome.read_errors, outcome.read_error_count) = schedule.into_errors();
        } else if let StopReason::Failed(why) = &ran.outcome.stop {
            // Nothing was read: the engine could not be set up.
            outcome.read_errors.push(not_started(why));
            outcome.read_error_count = 1;
        }
        // The pass's checks and lost ranges are in the verifier now.
        (outcome.counts, outcome.bad) = (verifier.counts(), verifier.bad_blocks());
        (outcome, ran.outcome)
    }
}

/// The one worker of a read-back: an engine of `kind` (sync when io_uring cannot be set up) with one empty file
/// slot and buffers of a piece each, touched once so that no read faults a page in (btrfs would serve a direct
/// read that faults through the page cache; `engine::btrfs_direct`).
fn read_back_worker(schedule: ReadBack<'_>, kind: EngineKind) -> Result<Built<'_>, String> {
    let piece = schedule.piece() as usize;
    let setup = |kind, depth| EngineSetup { spare_file_slots: 1, ..EngineSetup::new(kind, depth, piece) };
    let built = match kind {
        EngineKind::IoUring => {
            AnyEngine::build(setup(kind, DEPTH)).or_else(|_| AnyEngine::build(setup(EngineKind::Sync, 1)))
        }
        _ => AnyEngine::build(setup(EngineKind::Sync, 1)),
    };
    let mut engine = built.map_err(|e| e.to_string())?;
    engine.for_each_buffer(&mut |buffer| buffer.fill(0));
    let settings = WorkerSettings { batch: 1, continue_on_error: true, ..Default::default() };
    Ok(Built { engine, schedule: AnySchedule::ReadBack(schedule), settings })
}

/// The record of a read-back that could not start.
#[cold]
fn not_started(why: &str) -> ErrorRecord {
    ErrorRecord {
        op: "read".into(),
        path: String::new(),
        offset: 0,
        len: 0,
        errno: libc::EIO,
        message: format!("the read-back could not start: {why}"),
        at_s: 0.0,
    }
}

/// The verifier of a `--verify` run (`None` without it), handed to `trees` for the file-set phases, and what
/// the end of the run needs besides (see [`Verified`]). With `--journal`, the work directory is kept from now
/// on and the journal started in it before anything is written.
pub(super) fn run_verifier(
    plan: &crate::plan::Plan,
    trees: &mut Trees,
    work_dir: Option<&mut super::WorkDir>,
) -> Result<(Option<Arc<Verifier>>, Verified), super::RunError> {
    let Some(v) = plan.verify else { return Ok((None, Verified::default())) };
    let (files, bases) = verified_files(plan);
    let names = files.iter().map(|(p, size)| (p.display().to_string(), *size)).collect();
    let mut verifier = Verifier::new(v.algorithm, v.block, v.seed, names, defaults::BAD_BLOCKS_KEPT);
    let journal = match (v.journal, work_dir) {
        (Some(mode), Some(dir)) => {
            let map = dir.path().join(crate::verify::MAP_FILE);
            let failed = |cause| super::RunError::Open { path: map.clone(), cause };
            dir.keep_from_now().map_err(failed)?;
            let sync = mode == crate::plan::JournalMode::Sync;
            Some(super::journal::start(dir.path(), &mut verifier, &bases, sync).map_err(failed)?)
        }
        _ => None,
    };
    let verifier = Arc::new(verifier);
    trees.verify_with(verifier.clone(), bases.clone(), journal.is_some());
    let paths = files.into_iter().map(|(p, _)| p).collect();
    // The read-back runs on the engine of the last phase (sync stands in for null and http).
    let engine = plan.phases.last().map_or(EngineKind::Sync, PhasePlan::engine);
    Ok((Some(verifier), Verified { paths, trees: bases, journal, engine }))
}

/// What the end of a verified run needs: the paths of its verified files, each verified tree's root and first
/// file number, its journal, if it keeps one, and the engine its read-back runs on.
pub(super) struct Verified {
    pub paths: Vec<PathBuf>,
    pub trees: TreeBases,
    pub journal: Option<Arc<super::journal::FileJournal>>,
    pub engine: EngineKind,
}

impl Default for Verified {
    fn default() -> Verified {
        Verified { paths: Vec::new(), trees: TreeBases::default(), journal: None, engine: EngineKind::Sync }
    }
}

/// The files a `--verify` run checks, with their sizes: the target's files, then every file of each verified
/// file-set tree (`plan::verified_trees`); and for each tree its root and the number of its first file.
fn verified_files(plan: &crate::plan::Plan) -> (Vec<(PathBuf, u64)>, TreeBases) {
    let mut files: Vec<(PathBuf, u64)> = plan.target.files.iter().map(|f| (f.path.clone(), f.size.0)).collect();
    let mut bases = Vec::new();
    let mut path = String::new();
    for tree in crate::plan::verified_trees(&plan.phases) {
        // The plan refuses runs of more files than a u32 numbers (`VERIFIED_FILES_MAX`).
        bases.push((tree.root.clone(), files.len() as u32));
        let root = tree.root.to_string_lossy();
        for index in 0..tree.files {
            path.clear();
            path.push_str(&root);
            path.push('/');
            tree.push_file(index, &mut path);
            files.push((PathBuf::from(&path), tree.file_size(index)));
        }
    }
    (files, bases)
}

/// After the last phase of a `--verify` run: the pass over everything written (not after Ctrl-C), then, for a
/// kept run (`kept_dir`), the manifest that `--verify-only` needs (a journaled run's brought up to date).
pub(super) fn finish(
    verifier: &Verifier,
    verified: &Verified,
    direct: bool,
    interrupt: &super::Interrupt,
    kept_dir: Option<&Path>,
    observer: &mut dyn super::RunObserver,
) -> VerifyOutcome {
    let mut outcome = if interrupt.is_set() {
        VerifyOutcome::of(verifier)
    } else {
        let pass = ReadBackPass { engine: verified.engine, direct, confined: false, interrupted: interrupt.flag() };
        pass.run(verifier, &verified.paths, &mut |_, _| {}).0
    };
    if let Some((failures, Some(first))) = verified.journal.as_ref().map(|j| j.failures()) {
        observer.notice(&format!(
            "{failures} journal record(s) could not be written (the first: {first}): after a crash, --verify-only \
             may report blocks written after that as bad"
        ));
    }
    if let Some(dir) = kept_dir {
        match super::kept::write_manifest(dir, verifier, &verified.trees, verified.journal.is_some()) {
            Ok(path) => outcome.manifest = Some(path),
            Err(e) => observer.notice(&format!(
                "cannot write the verification manifest in {}: {e}; --verify-only cannot check this run",
                dir.display()
            )),
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OpClass;

    const MIB: u64 = 1 << 20;

    /// A file of `size` bytes in a work directory under `root`, held open as a run's is (so the pass knows it
    /// for a regular file of its own), written whole with verified blocks of `block` bytes; and its verifier.
    fn written(root: &Path, size: u64, block: u32) -> (Verifier, Vec<PathBuf>, super::super::owned::Registration) {
        use super::super::owned::{OwnedDir, open_registered, register};
        let work = register(OwnedDir::open_base(root).unwrap().create_dir("run-t").unwrap(), None);
        let path = root.join(".streamcap/run-t/data.0");
        let v = Verifier::new(Algorithm::Crc32c, block, 7, vec![(path.display().to_string(), size)], 10);
        let mut buf = vec![0u8; size as usize];
        assert!(v.begin_write(0, 0, &mut buf));
        let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE | rustix::fs::OFlags::EXCL;
        std::io::Write::write_all(&mut open_registered(&path, flags).unwrap().unwrap(), &buf).unwrap();
        v.end_write(0, 0, buf.len(), true);
        (v, vec![path], work)
    }

    fn pass(engine: EngineKind) -> ReadBackPass {
        ReadBackPass { engine, direct: true, confined: false, interrupted: Arc::new(AtomicBool::new(false)) }
    }

    /// The engines a read-back can run on here (io_uring only where the kernel allows it, loudly skipped).
    fn engines() -> Vec<EngineKind> {
        match crate::engine::io_uring_available() {
            Ok(()) => vec![EngineKind::Sync, EngineKind::IoUring],
            Err(e) => {
                assert!(std::env::var_os("STREAMCAP_TEST_STRICT").is_none_or(|v| v != "1"), "io_uring: {e}");
                eprintln!("SKIPPED the io_uring read-back: {e}");
                vec![EngineKind::Sync]
            }
        }
    }

    #[test]
    fn the_read_back_goes_through_the_core_with_several_reads_in_flight_on_io_uring() {
        // Before, the read-back was a second data loop, one synchronous 4 MiB read at a time beside the core.
        for engine in engines() {
            let dir = tempfile::tempdir().unwrap();
            let (v, paths, _work) = written(dir.path(), 16 * MIB, 4096);
            let (outcome, phase) = pass(engine).run(&v, &paths, &mut |_, _| {});
            assert_eq!((outcome.counts.blocks, outcome.bad.count, outcome.read_error_count), (4096, 0, 0));
            assert!(outcome.pass_complete);
            assert_eq!(phase.caps.map(|c| c.kind), Some(engine), "the pass ran on the engine asked for");
            assert_eq!(phase.totals.stats(OpClass::Read).ops, 4, "{engine:?}: four pieces of 4 MiB, on the core");
            let deeper: u64 = phase.totals.depths.level[1..].iter().sum();
            assert_eq!(deeper > 0, engine == EngineKind::IoUring, "{engine:?}: {:?}", phase.totals.depths.level);
        }
    }

    #[test]
    fn a_file_cut_inside_a_page_is_checked_as_far_as_it_goes_and_the_rest_is_one_lost_range() {
        // Direct reads are whole pages: the last one asks past the end of the file, and what came back is judged.
        for engine in engines() {
            let dir = tempfile::tempdir().unwrap();
            let (v, paths, _work) = written(dir.path(), 8 * MIB, MIB as u32);
            let file = std::fs::OpenOptions::new().write(true).open(&paths[0]).unwrap();
            file.set_len(5_000_000).unwrap();
            let (outcome, _) = pass(engine).run(&v, &paths, &mut |_, _| {});
            assert_eq!((outcome.counts.blocks, outcome.bad.count, outcome.read_error_count), (4, 4, 0), "{engine:?}");
            let lost = &outcome.bad.missing;
            assert_eq!(lost.len(), 1, "{engine:?}: {lost:?}");
            assert_eq!((lost[0].offset, lost[0].len, lost[0].blocks), (4 * MIB, 4 * MIB, 4));
            assert_eq!(
                lost[0].why,
                "the file ends at byte 5000000, before the 8388608 bytes written (it was truncated)"
            );
            assert!(outcome.pass_complete);
        }
    }

    #[test]
    fn a_stopped_read_back_is_not_complete() {
        let dir = tempfile::tempdir().unwrap();
        let (v, paths, _work) = written(dir.path(), MIB, 4096);
        let stopped = ReadBackPass { interrupted: Arc::new(AtomicBool::new(true)), ..pass(EngineKind::Sync) };
        let (outcome, _) = stopped.run(&v, &paths, &mut |_, _| {});
        assert!(!outcome.pass_complete);
    }
}
