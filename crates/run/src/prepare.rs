//! Preparation on the I/O core, not measured: one sequential pass over files — writing them (filling data files
//! and test media before a phase that reads them) or reading them (fio's pre_read, warming the page cache) —
//! with progress reported as bytes done. The same core that runs the phases issues these reads and writes.
//! `Progress` (interval reports as bytes done) also serves the format step of file sets and the `--verify`
//! read-back (`verify_pass.rs`).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::core::{Ctx, Io, Next, Schedule};
use super::open::{OpenFor, open_data_file};
use super::pattern::{fill_random, stamp};
use super::phase::{IntervalReport, PhaseRun, StopReason, run_workers};
use super::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};
use super::{PhaseOutcome, PhasePlan, RunObserver};
use crate::engine::{AnyEngine, EngineKind, EngineSetup, OpKind};
use crate::plan::FilePlan;
use crate::workload::Rng;

/// Bytes per request of a reading pass.
const CHUNK: u32 = 1 << 20;
/// Requests in flight during a reading pass on io_uring (the sync engine keeps one).
const DEPTH: u32 = 4;
/// Bytes per request of a writing pass: 1 MiB, the size of one FUSE request (`max_write`), many in flight, so
/// that laying out a library of many GiB runs at the device's sequential speed. Not larger: an io_uring direct
/// write to a FUSE file that the kernel cuts into several FUSE requests completed with its full length although
/// one of those requests failed with ENOSPC (kernel 6.18, tests/faults.rs), so a full disk went unseen; the
/// block layer merges neighbouring 1 MiB requests anyway.
const WRITE_CHUNK: u32 = 1 << 20;
/// Requests in flight during a writing pass on io_uring: 16 MiB in flight keeps a striped pool's members busy.
const WRITE_DEPTH: u32 = 16;

/// A file and the byte ranges of it that a pass covers, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassFile {
    pub path: PathBuf,
    /// Byte ranges, ascending and apart; empty: nothing of this file (no write, no flush).
    pub ranges: Vec<Range<u64>>,
}

impl PassFile {
    /// The whole of `file`, from start to end.
    pub fn whole(file: &FilePlan) -> PassFile {
        PassFile { path: file.path.clone(), ranges: std::iter::once(0..file.size.0).collect() }
    }

    fn len(&self) -> u64 {
        self.ranges.iter().map(|r| r.end - r.start).sum()
    }
}

/// One pass over files: sequential chunks through each file's ranges, and after writing a file, an fsync of it.
pub struct PassSchedule {
    files: Vec<PassFile>,
    write: bool,
    file: usize,
    /// The range of the current file, and the next offset in it.
    range: usize,
    offset: u64,
    flushed: bool,
    counter: u64,
    failed: bool,
    /// Bytes per request.
    chunk: u32,
}

impl Schedule for PassSchedule {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        loop {
            if self.failed || self.file >= self.files.len() {
                return Next::Done;
            }
            if let Some(io) = self.next_chunk() {
                return Next::Io(io);
            }
            if self.write && !self.flushed && !self.files[self.file].ranges.is_empty() {
                if ctx.in_flight > 0 {
                    return Next::AfterCompletion;
                }
                self.flushed = true;
                return Next::Io(Io::transfer(OpKind::Fsync, self.file as u32, 0, 0, None));
            }
            (self.file, self.range, self.flushed) = (self.file + 1, 0, false);
            self.offset = self.files.get(self.file).and_then(|f| f.ranges.first()).map_or(0, |r| r.start);
        }
    }

    fn prepare(&mut self, io: &Io, buf: &mut [u8]) -> bool {
        if io.kind == OpKind::Write {
            stamp(buf, io.offset, self.counter);
            self.counter += 1;
        }
        true
    }

    fn completed(&mut self, _io: &Io, result: Result<u32, i32>, _now: Duration, _buf: &[u8]) -> bool {
        self.failed |= result.is_err();
        true
    }

    fn path(&self, file: u32) -> &Path {
        &self.files[file as usize].path
    }
}

impl PassSchedule {
    fn new(files: Vec<PassFile>, write: bool) -> PassSchedule {
        let offset = files.first().and_then(|f| f.ranges.first()).map_or(0, |r| r.start);
        let chunk = if write { WRITE_CHUNK } else { CHUNK };
        PassSchedule { files, write, file: 0, range: 0, offset, flushed: false, counter: 0, failed: false, chunk }
    }

    /// The next chunk of the current file's ranges, moving to its next range where one ends.
    fn next_chunk(&mut self) -> Option<Io> {
        let ranges = &self.files[self.file].ranges;
        while let Some(range) = ranges.get(self.range) {
            if self.offset < range.end {
                let len = u64::from(self.chunk).min(range.end - self.offset) as u32;
                let kind = if self.write { OpKind::Write } else { OpKind::Read };
                let io = Io::transfer(kind, self.file as u32, self.offset, len, None);
                self.offset += u64::from(len);
                return Some(io);
            }
            self.range += 1;
            self.offset = ranges.get(self.range).map_or(0, |r| r.start);
        }
        None
    }
}

/// How a pass went.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error("{0}")]
    Failed(String),
    /// The first read or write that failed: where, how long, and the OS error number.
    #[error("{} {len} bytes of {} at offset {offset} failed (errno {errno})", if *write { "writing" } else { "reading" }, path.display())]
    Io { write: bool, path: PathBuf, offset: u64, len: u64, errno: i32 },
    #[error("interrupted")]
    Interrupted,
}

/// Writes (or reads) the ranges of every file of `files` once, in order, on `engine` (the null engine writes
/// nothing, so the sync engine stands in for it). `progress(done, total)` gets bytes.
pub fn pass(
    files: Vec<PassFile>,
    write: bool,
    direct: bool,
    engine: EngineKind,
    interrupted: Arc<AtomicBool>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<(), PassError> {
    let engine = if matches!(engine, EngineKind::Null | EngineKind::Http) { EngineKind::Sync } else { engine };
    let total = files.iter().map(PassFile::len).sum();
    let setup: SetUp<'_> = Box::new(move || pass_worker(files, write, direct, engine));
    let run = PhaseRun::pass(setup, direct, interrupted);
    let mut observer = Progress { done: 0, total, report: progress };
    let outcome = run_workers(run, &mut observer).outcome;
    progress_end(&outcome, &mut observer);
    match outcome.stop {
        StopReason::Interrupted => Err(PassError::Interrupted),
        StopReason::Failed(why) => Err(PassError::Failed(why)),
        _ if !outcome.errors.is_empty() => {
            let e = &outcome.errors[0];
            Err(PassError::Io { write, path: e.path.clone().into(), offset: e.offset, len: e.len, errno: e.errno })
        }
        _ => Ok(()),
    }
}

fn progress_end(outcome: &PhaseOutcome, observer: &mut Progress<'_>) {
    if outcome.stop == StopReason::Completed && outcome.errors.is_empty() {
        (observer.report)(observer.total, observer.total);
    }
}

fn pass_worker<'a>(files: Vec<PassFile>, write: bool, direct: bool, engine: EngineKind) -> Result<Built<'a>, String> {
    let how = if write { OpenFor::write(direct) } else { OpenFor::read(direct) };
    let handles = files
        .iter()
        .map(|f| &f.path)
        .map(|p| open_data_file(p, how).map_err(|e| format!("cannot open {}: {e}", p.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let (chunk, depth) = if write { (WRITE_CHUNK, WRITE_DEPTH) } else { (CHUNK, DEPTH) };
    let depth = if engine == EngineKind::IoUring { depth } else { 1 };
    let setup = EngineSetup { files: handles, ..EngineSetup::new(engine, depth, chunk as usize) };
    let mut engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
    if write {
        // The same stamped random content as a write phase: compressing or deduplicating storage stays honest.
        let mut rng = Rng::new(0xF111);
        engine.for_each_buffer(&mut |buffer| fill_random(buffer, &mut rng));
    }
    let schedule = PassSchedule::new(files, write);
    Ok(Built {
        engine,
        schedule: AnySchedule::Pass(schedule),
        settings: WorkerSettings { batch: 1, ..Default::default() },
    })
}

/// Turns interval reports into progress (bytes done of the total); nothing else is told. For preparation that
/// runs on the core without being measured (passes, the file-set format step).
pub(super) struct Progress<'a> {
    pub done: u64,
    pub total: u64,
    pub report: &'a mut (dyn FnMut(u64, u64) + Send),
}

impl RunObserver for Progress<'_> {
    fn interval(&mut self, report: &IntervalReport<'_>) {
        self.done += report.recorder.total_bytes();
        (self.report)(self.done.min(self.total), self.total);
    }

    fn phase_started(&mut self, _index: usize, _phase: &PhasePlan) {}
}
