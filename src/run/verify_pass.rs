//! The verification pass (fio's do_verify): after the last phase of a `--verify` run, and for
//! `--verify-only`, every file that holds verified blocks is read from start to end, through the sync engine
//! (the engine layer is the only code that issues data I/O), and each block is checked by the [`Verifier`].
//!
//! Reads are direct where the filesystem allows it, so the page cache cannot hand back what was written instead
//! of what was stored. A read that fails is recorded with its operation, path, offset and errno, and the pass
//! goes on with the next piece (the blocks of the failed piece are not checked). The pass is not measured; it
//! checks the interrupt flag between pieces.
//!
//! Also the run's verifier itself (`run_verifier`): its file table — the target's data files, then every file
//! of each verified file-set tree — and, with `--journal`, the journal started before the first write.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::fileset::{TreeBases, Trees};
use super::open::{OpenFor, open_data_file};
use crate::engine::{BufferPool, Completion, Engine, OpKind, Request, SyncEngine, Wait};
use crate::metrics::ErrorRecord;
use crate::plan::defaults;
use crate::verify::{Algorithm, BadLog, Verifier, VerifyCounts};

/// Bytes read per request (rounded down to whole blocks, at least one block).
const PIECE: u64 = 4 << 20;

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

/// Reads back every file of `verifier` (at `paths`, same order) that holds verified blocks and checks them.
/// `direct`: read with O_DIRECT. `progress(done, total)` after each piece.
pub fn read_back(
    verifier: &Verifier,
    paths: &[PathBuf],
    direct: bool,
    interrupted: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> VerifyOutcome {
    let mut errors = ReadErrors { started: Instant::now(), kept: Vec::new(), count: 0 };
    let mut pass_complete = true;
    let block = u64::from(verifier.block_size());
    let piece = (PIECE / block).max(1) * block;
    let sizes: Vec<u64> = verifier.files().map(|(_, size)| size).collect();
    let files: Vec<u32> = (0..paths.len() as u32).filter(|&f| verifier.has_written(f)).collect();
    let total: u64 = files.iter().map(|&f| sizes[f as usize]).sum();
    let mut done = 0;
    for &file in &files {
        let path = &paths[file as usize];
        let mut engine = match open_for_pass(path, direct, piece) {
            Ok(engine) => engine,
            Err(e) => {
                errors.record(path, 0, sizes[file as usize], e);
                continue;
            }
        };
        let mut offset = 0;
        while offset < sizes[file as usize] {
            if interrupted.load(Ordering::Relaxed) {
                pass_complete = false;
                break;
            }
            let len = (sizes[file as usize] - offset).min(piece) as u32;
            match read_piece(&mut engine, offset, len) {
                Ok(()) => check_piece(verifier, file, offset, &engine.buffer_mut(0)[..len as usize]),
                Err(e) => errors.record(path, offset, u64::from(len), e),
            }
            offset += u64::from(len);
            done += u64::from(len);
            progress(done, total);
        }
    }
    VerifyOutcome {
        algorithm: verifier.algorithm(),
        block: verifier.block_size(),
        counts: verifier.counts(),
        bad: verifier.bad_blocks(),
        read_errors: errors.kept,
        read_error_count: errors.count,
        pass_complete,
        manifest: None,
        in_flight: None,
    }
}

/// The failed reads of the pass: the first few in full, and how many in all.
struct ReadErrors {
    /// When the pass began; each record says how long after it the read failed.
    started: Instant,
    kept: Vec<ErrorRecord>,
    count: u64,
}

impl ReadErrors {
    /// Counts a failed read of `len` bytes at `offset` of `path`, and keeps it while fewer than
    /// `defaults::ERRORS_KEPT` are kept.
    fn record(&mut self, path: &Path, offset: u64, len: u64, (errno, message): (i32, String)) {
        self.count += 1;
        if self.kept.len() < defaults::ERRORS_KEPT {
            self.kept.push(ErrorRecord {
                op: "read".into(),
                path: path.display().to_string(),
                offset,
                len,
                errno,
                message,
                at_s: self.started.elapsed().as_secs_f64(),
            });
        }
    }
}

/// Opens `path` for the pass (with O_DIRECT when `direct`) behind a sync engine with one buffer of `piece`
/// bytes; the error is an errno with words, as a failed read's is.
fn open_for_pass(path: &Path, direct: bool, piece: u64) -> Result<SyncEngine, (i32, String)> {
    open_data_file(path, OpenFor::read(direct))
        .map_err(|e| (e.raw_os_error().unwrap_or(libc::EIO), e.to_string()))
        .and_then(|handle| {
            BufferPool::new(1, piece as usize)
                .map(|pool| SyncEngine::new(vec![Some(handle)], pool))
                .map_err(|e| (libc::ENOMEM, e.to_string()))
        })
}

/// Checks every verified block of `file` that lies within `data`, the bytes read at `offset`.
fn check_piece(verifier: &Verifier, file: u32, offset: u64, data: &[u8]) {
    for (index, at, block_len) in verifier.blocks_within(file, offset, data.len()) {
        verifier.check(file, index, &data[at..at + block_len]);
    }
}

/// Reads `len` bytes at `offset` into the engine's one buffer; a short read is an error (EIO, with words).
fn read_piece(engine: &mut SyncEngine, offset: u64, len: u32) -> Result<(), (i32, String)> {
    let request = Request { slot: 0, kind: OpKind::Read, file: 0, offset, len, prio: 0 };
    let mut out: Vec<Completion> = Vec::with_capacity(1);
    let engine_error = |e: crate::engine::EngineError| (libc::EIO, e.to_string());
    engine.submit(&[request]).map_err(engine_error)?;
    engine.reap(1, Wait::Forever, &mut out).map_err(engine_error)?;
    match out.first().map(|c| c.result) {
        Some(Ok(n)) if n == len => Ok(()),
        Some(Ok(n)) => Err((libc::EIO, format!("short read: {n} of {len} bytes (the file ends early)"))),
        Some(Err(errno)) => Err((errno, std::io::Error::from_raw_os_error(errno).to_string())),
        None => Err((libc::EIO, "the engine returned no completion".into())),
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
            let sync = mode == crate::spec::JournalMode::Sync;
            Some(super::journal::start(dir.path(), &mut verifier, &bases, sync).map_err(failed)?)
        }
        _ => None,
    };
    let verifier = Arc::new(verifier);
    trees.verify_with(verifier.clone(), bases.clone(), journal.is_some());
    Ok((Some(verifier), Verified { paths: files.into_iter().map(|(p, _)| p).collect(), trees: bases, journal }))
}

/// What the end of a verified run needs: the paths of its verified files, each verified tree's root and first
/// file number, and its journal, if it keeps one.
#[derive(Default)]
pub(super) struct Verified {
    pub paths: Vec<PathBuf>,
    pub trees: TreeBases,
    pub journal: Option<Arc<super::journal::FileJournal>>,
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
    } else {
        read_back(verifier, &verified.paths, direct, &interrupt.flag(), &mut |_, _| {})
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
