//! The verification pass (fio's do_verify): after the last phase of a `--verify` run, and for
//! `--verify-only`, every file that holds verified blocks is read from start to end, through the sync engine
//! (the engine layer is the only code that issues data I/O), and each block is checked by the [`Verifier`].
//!
//! Reads are direct where the filesystem allows it, so the page cache cannot hand back what was written instead
//! of what was stored. A read that fails is recorded with its operation, path, offset and errno, and the pass
//! goes on with the next piece (the blocks of the failed piece are not checked). A file that ends before the
//! blocks written to it (truncated) is checked as far as it goes, and one that is gone not at all; the written
//! blocks past its end are lost, reported as one range with its offsets and counted as bad blocks. Files in a
//! directory held open for the run (a work directory; a kept run's, for `--verify-only`) are opened beneath it,
//! never through a symbolic link, and only if they are regular files. The pass is not measured; it checks the
//! interrupt flag between pieces.
//!
//! Also the run's verifier itself (`run_verifier`): its file table — the target's data files, then every file
//! of each verified file-set tree — and, with `--journal`, the journal started before the first write.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::fileset::{TreeBases, Trees};
use super::open::{OpenFor, open_data_file};
use super::owned::open_registered;
use crate::engine::{BufferPool, Completion, Engine, OpKind, Request, SyncEngine, Wait};
use crate::metrics::ErrorRecord;
use crate::plan::defaults;
use crate::verify::{Algorithm, BadLog, Verifier, VerifyCounts};
use rustix::fs::OFlags;

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
/// `direct`: read with O_DIRECT where the filesystem allows it. `confined` (`--verify-only`): every file lies in
/// a directory held open by the caller (`owned.rs`), and none is opened any other way. A file in such a
/// directory is opened beneath it, never through a symbolic link and only if it is a regular file; one that is
/// missing, or ends before the blocks written to it, is checked as far as it goes and the rest reported lost,
/// with its offsets. `progress(done, total)` after each piece.
pub fn read_back(
    verifier: &Verifier,
    paths: &[PathBuf],
    direct: bool,
    confined: bool,
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
        let (path, size) = (&paths[file as usize], sizes[file as usize]);
        let opened = match open_for_pass(path, direct, confined, piece) {
            Ok(opened) => opened,
            Err(Unread::Missing(why)) => {
                verifier.missing(file, 0, &why);
                done += size;
                progress(done, total);
                continue;
            }
            Err(Unread::Failed(e)) => {
                errors.record(path, 0, size, e);
                continue;
            }
        };
        let pass = FilePass { verifier, file, path, size, piece };
        match pass.read(opened, &mut errors, interrupted, &mut |n| {
            done += n;
            progress(done, total);
        }) {
            PassEnd::Interrupted => {
                pass_complete = false;
                break;
            }
            PassEnd::Done => {}
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

/// How the pass over one file ended.
enum PassEnd {
    Done,
    Interrupted,
}

/// The pass over one file of the verifier.
struct FilePass<'a> {
    verifier: &'a Verifier,
    file: u32,
    path: &'a Path,
    /// Bytes written to it, as the verifier knows it.
    size: u64,
    piece: u64,
}

impl FilePass<'_> {
    /// Reads the file piece by piece and checks every block in each. A short read of a regular file that now
    /// ends there (it was truncated) checks the blocks it did read and reports the rest lost; any other failed
    /// or short read is recorded, and the pass goes on with the next piece. `advance(bytes)` after each piece.
    fn read(
        &self,
        mut opened: Opened,
        errors: &mut ReadErrors,
        interrupted: &AtomicBool,
        advance: &mut dyn FnMut(u64),
    ) -> PassEnd {
        let mut offset = 0;
        while offset < self.size {
            if interrupted.load(Ordering::Relaxed) {
                return PassEnd::Interrupted;
            }
            let len = (self.size - offset).min(self.piece) as u32;
            match read_piece(&mut opened.engine, offset, len) {
                Ok(n) if n == len => {
                    check_piece(self.verifier, self.file, offset, &opened.engine.buffer_mut(0)[..n as usize])
                }
                Ok(n) if opened.ends_by(offset + u64::from(n)) => {
                    check_piece(self.verifier, self.file, offset, &opened.engine.buffer_mut(0)[..n as usize]);
                    let end = offset + u64::from(n);
                    let why = format!(
                        "the file ends at byte {end}, before the {} bytes written (it was truncated)",
                        self.size
                    );
                    self.verifier.missing(self.file, end, &why);
                    advance(self.size - offset);
                    return PassEnd::Done;
                }
                Ok(n) => errors.record(
                    self.path,
                    offset,
                    u64::from(len),
                    (libc::EIO, format!("short read: {n} of {len} bytes (the file ends early)")),
                ),
                Err(e) => errors.record(self.path, offset, u64::from(len), e),
            }
            offset += u64::from(len);
            advance(u64::from(len));
        }
        PassEnd::Done
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

/// A file open for the pass: a sync engine with one buffer, and for a regular file a handle to learn its length.
struct Opened {
    engine: SyncEngine,
    regular: Option<File>,
}

impl Opened {
    /// Whether the file is a regular file that ends at or before `end` now.
    fn ends_by(&self, end: u64) -> bool {
        self.regular.as_ref().and_then(|f| f.metadata().ok()).is_some_and(|m| m.len() <= end)
    }
}

/// Why a file was not read: it is not there as a file streamcap wrote (its written blocks are lost), or opening
/// it failed (an errno with words, as a failed read's).
enum Unread {
    Missing(String),
    Failed((i32, String)),
}

/// Opens `path` for the pass (with O_DIRECT when `direct` and the filesystem allows it) behind a sync engine with
/// one buffer of `piece` bytes. A file beneath a directory held open for the run (`owned.rs`) is opened beneath
/// it with O_NOFOLLOW and O_NONBLOCK and must be a regular file; with `confined` every file must be.
fn open_for_pass(path: &Path, direct: bool, confined: bool, piece: u64) -> Result<Opened, Unread> {
    let failed = |e: std::io::Error| Unread::Failed((e.raw_os_error().unwrap_or(libc::EIO), e.to_string()));
    let flags = |direct: bool| {
        let base = OFlags::RDONLY | OFlags::NONBLOCK;
        if direct { base | OFlags::DIRECT } else { base }
    };
    let registered = match open_registered(path, flags(direct)) {
        Some(Err(e)) if direct && e.raw_os_error() == Some(libc::EINVAL) => open_registered(path, flags(false)),
        other => other,
    };
    let (handle, regular) = match registered {
        Some(Ok(file)) => {
            let kind = file.metadata().map_err(failed)?.file_type();
            if !kind.is_file() {
                return Err(Unread::Missing(format!(
                    "it is now {}, not the regular file written (not read)",
                    kind_of(kind)
                )));
            }
            let stat = file.try_clone().map_err(failed)?;
            (file, Some(stat))
        }
        Some(Err(e)) => return Err(unopened(e)),
        None if confined => {
            return Err(Unread::Missing(
                "its directory could not be opened as one of the kept run's (missing, or a symbolic link)".into(),
            ));
        }
        None => (open_data_file(path, OpenFor::read(direct)).map_err(failed)?, None),
    };
    let pool = BufferPool::new(1, piece as usize).map_err(|e| Unread::Failed((libc::ENOMEM, e.to_string())))?;
    Ok(Opened { engine: SyncEngine::new(vec![Some(handle)], pool), regular })
}

/// A failed open beneath a held directory: a file that is gone or a symbolic link in its place is missing (what
/// was written there is lost); anything else is a failure to read.
fn unopened(e: std::io::Error) -> Unread {
    match e.raw_os_error() {
        Some(libc::ENOENT) => Unread::Missing("the file is missing (deleted)".into()),
        Some(libc::ELOOP) => Unread::Missing("a symbolic link is in its place, which is never followed".into()),
        Some(errno) => Unread::Failed((errno, e.to_string())),
        None => Unread::Failed((libc::EIO, e.to_string())),
    }
}

fn kind_of(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "something else"
    }
}

/// Checks every verified block of `file` that lies within `data`, the bytes read at `offset`.
fn check_piece(verifier: &Verifier, file: u32, offset: u64, data: &[u8]) {
    for (index, at, block_len) in verifier.blocks_within(file, offset, data.len()) {
        verifier.check(file, index, &data[at..at + block_len]);
    }
}

/// Reads `len` bytes at `offset` into the engine's one buffer; returns how many it read.
fn read_piece(engine: &mut SyncEngine, offset: u64, len: u32) -> Result<u32, (i32, String)> {
    let request = Request { slot: 0, kind: OpKind::Read, file: 0, offset, len, prio: 0 };
    let mut out: Vec<Completion> = Vec::with_capacity(1);
    let engine_error = |e: crate::engine::EngineError| (libc::EIO, e.to_string());
    engine.submit(&[request]).map_err(engine_error)?;
    engine.reap(1, Wait::Forever, &mut out).map_err(engine_error)?;
    match out.first().map(|c| c.result) {
        Some(Ok(n)) => Ok(n.min(len)),
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
            let sync = mode == crate::plan::JournalMode::Sync;
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
        read_back(verifier, &verified.paths, direct, false, &interrupt.flag(), &mut |_, _| {})
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
