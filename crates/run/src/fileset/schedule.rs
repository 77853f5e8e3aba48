//! The schedule of one file-set thread on the I/O core: pick a file, open it, hand its transfers to the core,
//! close it — or do one metadata operation — until the runtime ends or there is nothing left to do.
//!
//! Data transfers go through the engine like every other read and write (so file sets get io_uring and direct
//! I/O); the open file sits in the engine's file table (slot 0) while its transfers are in flight. Metadata
//! operations (open, create, mkdir, stat …) are system calls the schedule makes itself and records through the
//! core. Nothing is allocated per operation: paths are written into reused `String`s. Threads claim a file
//! before they touch it (`FileClaims`): alone, so no two threads work on the same file at once, or — the reads
//! and writes of a shared workload, vdbench's `fileio=(random,shared)` — together with other sharers.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::TreeVerify;
use super::tree::TreeState;
use crate::engine::OpKind;
use crate::metrics::OpClass;
use crate::plan::{DataShape, FileIo, FileOp, FileWorkloadPlan, StopAfter, TreePlan};
use crate::run::core::{Ctx, Failure, Io, Next, Schedule};
use crate::run::flow::FlowMember;
use crate::run::shape::{Address, Shaper};
use crate::workload::fileset::{BitSet, FileClaims, FileSelector};
use crate::workload::{Rng, SizePicker};

/// The shared state one thread's schedule works on.
pub struct Shared<'a> {
    pub workload: &'a FileWorkloadPlan,
    pub tree: &'a TreePlan,
    pub state: &'a TreeState,
    /// Files and directories some thread is working on.
    pub files_busy: &'a FileClaims,
    pub dirs_busy: &'a BitSet,
    /// Data verification of the tree's files (`--verify`): writes stamp their blocks, reads check them.
    pub verify: Option<&'a TreeVerify>,
    /// The phase's data shape (dedupe, compression), which every write is filled with when not verified.
    pub data: Option<DataShape>,
}

/// A file open in the engine's table, with the transfers still to issue on it.
pub(super) struct OpenFile {
    pub index: u64,
    pub size: u64,
    /// Sequential: the next offset. Random: unused.
    pub offset: u64,
    /// Transfers left to issue before the file is closed (`u64::MAX`: sequential to its end).
    pub left: u64,
    /// Every transfer writes (filling a created file).
    pub filling: bool,
    /// The first transfer was paced by the open before it.
    pub first: bool,
}

pub(super) enum Step {
    /// An operation was done (or skipped): ask again.
    Again,
    /// Nothing to do before this time.
    Wait(Duration),
    /// Nothing left to do at all.
    Done,
}

pub struct FileSetSchedule<'a> {
    pub(super) s: Shared<'a>,
    pub(super) rng: Rng,
    pub(super) files: FileSelector,
    pub(super) dirs: FileSelector,
    pub(super) xfer: SizePicker,
    /// Time between operations when paced.
    pub(super) gap: Option<Duration>,
    pub(super) ops_issued: u64,
    pub(super) root: String,
    pub(super) path: String,
    pub(super) other: String,
    pub(super) open: Option<OpenFile>,
    /// rmdir attempts in a row that found the directory not empty.
    pub(super) not_empty: u64,
    pub(super) mode_toggle: bool,
    /// The format step: create every file once (with `restart`, only what is missing or short).
    pub(super) format: Option<bool>,
    /// Files this schedule created or refilled.
    pub created: u64,
    /// Sequential I/O under `stopafter`: where each file was left (`TreeState::resume`).
    pub(super) resume: Option<&'a [AtomicU64]>,
    /// Fills each write with the phase's data shape; `None`: the buffer's random bytes, filled once.
    shaper: Option<Shaper>,
    /// vdbench's controlled max: this thread's place among the phase's threads holding their skew.
    pub(super) flow: Option<FlowMember>,
}

/// The tree's resume table when this workload needs one: sequential reads or writes under `stopafter`, not the
/// format step. Made once per tree, when the schedules are built, never per operation.
fn resume_table<'a>(s: &Shared<'a>, format: Option<bool>) -> Option<&'a [AtomicU64]> {
    let w = s.workload;
    let wanted = format.is_none()
        && w.fileio == FileIo::Sequential
        && w.stop_after.is_some()
        && matches!(w.operation, FileOp::Read | FileOp::Write);
    let state = s.state;
    wanted.then(|| &**state.resume.get_or_init(|| (0..state.files.len()).map(|_| AtomicU64::new(0)).collect()))
}

impl<'a> FileSetSchedule<'a> {
    /// Thread `thread` of its workload; `gap`: time between operations when paced; `format`: the format step
    /// (`Some(restart)`) rather than a workload.
    pub fn new(s: Shared<'a>, thread: u32, gap: Option<Duration>, format: Option<bool>) -> FileSetSchedule<'a> {
        let w = s.workload;
        let root = s.tree.root.to_string_lossy().into_owned();
        let seed = w.seed ^ u64::from(thread).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // Each tree, workload and thread writes its own unique units (the format's workload seed is the same
        // for every tree, hence the tree's seed); a verified tree's blocks carry headers instead.
        let shaper = (s.data.filter(|_| s.verify.is_none()))
            .map(|shape| Shaper::new(shape, w.seed, seed ^ s.tree.seed.rotate_left(17), thread as usize));
        FileSetSchedule {
            rng: Rng::new(seed),
            files: FileSelector::new(w.select, s.tree.files, thread, w.threads),
            dirs: FileSelector::new(w.select, s.tree.dirs, thread, w.threads),
            xfer: SizePicker::new(&w.xfer),
            gap,
            ops_issued: 0,
            path: String::with_capacity(root.len() + 96),
            other: String::with_capacity(root.len() + 96),
            root,
            open: None,
            not_empty: 0,
            mode_toggle: false,
            format,
            created: 0,
            resume: resume_table(&s, format),
            shaper,
            flow: None,
            s,
        }
    }

    /// The due time of the next operation when paced: `Ok(due)` takes it, `Err(at)` says to wait until then.
    pub(super) fn take_due(&mut self, now: Duration) -> Result<Option<Duration>, Duration> {
        if let Some(flow) = self.flow.as_mut()
            && flow.ahead()
        {
            return Err(now + flow.held_wait(now));
        }
        let Some(gap) = self.gap else { return Ok(None) };
        let due = gap.mul_f64(self.ops_issued as f64);
        if due > now {
            return Err(due);
        }
        self.ops_issued += 1;
        Ok(Some(due))
    }

    /// The next transfer on the open file, or `None` when it has had all of them.
    fn transfer(&mut self, now: Duration) -> Result<Option<Io>, Duration> {
        let (fileio, read_percent) = (self.s.workload.fileio, self.s.workload.read_percent);
        let open = self.open.as_ref().expect("a file is open");
        let random = fileio == FileIo::Random && !open.filling;
        if open.left == 0 || (!random && open.offset >= open.size) {
            return Ok(None);
        }
        let due = if open.first { None } else { self.take_due(now)? };
        let len = u64::from(self.xfer.pick(&mut self.rng));
        let open = self.open.as_mut().expect("a file is open");
        open.first = false;
        let at = if random { self.rng.below((open.size / len).max(1)) * len } else { open.offset };
        let len = len.min(open.size.saturating_sub(at)).max(1);
        open.offset = at + len;
        open.left = open.left.saturating_sub(1);
        let read = !open.filling
            && (read_percent == 100 || (read_percent > 0 && self.rng.below(100) < u64::from(read_percent)));
        let kind = if read { OpKind::Read } else { OpKind::Write };
        Ok(Some(Io::transfer(kind, 0, at, len as u32, due)))
    }

    /// Takes the open file back from the engine and closes it (timed, as vdbench's close).
    fn close(&mut self, ctx: &mut Ctx<'_>) {
        let Some(open) = self.open.take() else { return };
        if let Some(resume) = self.resume {
            resume[open.index as usize].store(open.offset, Ordering::Relaxed);
        }
        let started = Instant::now();
        if let Ok(file) = ctx.files.put(0, None) {
            drop(file);
        }
        ctx.record(OpClass::Close, 0, started, Instant::now(), None);
        self.s.files_busy.release(open.index);
    }

    /// A failed metadata operation on the current path.
    pub(super) fn fail(&self, ctx: &mut Ctx<'_>, class: OpClass, error: &std::io::Error) {
        let failure = Failure {
            class,
            op: class.name(),
            path: Path::new(&self.path),
            offset: 0,
            len: 0,
            errno: error.raw_os_error().unwrap_or(libc::EIO),
            message: error.to_string(),
        };
        ctx.failed(failure);
    }
}

impl Schedule for FileSetSchedule<'_> {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        // All candidates busy several times in a row: give the other threads a moment.
        for _ in 0..8 {
            if self.open.is_some() {
                match self.transfer(ctx.now) {
                    Ok(Some(io)) => return Next::Io(io),
                    Err(at) => return Next::At(at),
                    Ok(None) if ctx.in_flight > 0 => return Next::AfterCompletion,
                    Ok(None) => {
                        self.close(ctx);
                        continue;
                    }
                }
            }
            match self.step(ctx) {
                Step::Again => {}
                Step::Wait(at) => return Next::At(at),
                Step::Done => return Next::Done,
            }
        }
        Next::At(ctx.now + Duration::from_micros(50))
    }

    /// With `--verify`: claims the blocks of a transfer on the open file (refused while one is in flight on a
    /// shared file) and stamps a write's. With a data shape: fills a write with it.
    #[inline]
    fn prepare(&mut self, io: &Io, buf: &mut [u8]) -> bool {
        if let Some(shaper) = self.shaper.as_mut()
            && io.kind == OpKind::Write
        {
            // The tree's seed (from its name) and the file's number in it: the same file in every phase.
            let index = self.open.as_ref().map_or(0, |o| o.index);
            let at = Address { tree: self.s.tree.seed, file: index, offset: io.offset };
            shaper.fill(&mut buf[..io.len as usize], at);
            return true;
        }
        let (Some(v), Some(open)) = (self.s.verify, self.open.as_ref()) else { return true };
        if !matches!(io.kind, OpKind::Read | OpKind::Write) {
            return true;
        }
        v.verifier.begin(io.kind == OpKind::Write, v.file(open.index), io.offset, buf)
    }

    /// With `--verify`: a read checks the blocks it brought, a write releases its blocks. The file stays open
    /// until its transfers have completed, so `open` is still the file of this one.
    #[inline]
    fn completed(&mut self, io: &Io, result: Result<u32, i32>, _now: Duration, buf: &[u8]) -> bool {
        if let (Some(v), Some(open)) = (self.s.verify, self.open.as_ref())
            && matches!(io.kind, OpKind::Read | OpKind::Write)
        {
            v.verifier.end(io.kind == OpKind::Write, v.file(open.index), io.offset, io.len, result, buf);
        }
        true
    }

    fn finish(&mut self, _now: Duration) {
        // The engine closes the file when it is dropped; only the claim is ours to release.
        if let Some(open) = self.open.take() {
            self.s.files_busy.release(open.index);
        }
        // A thread that has ended no longer holds the others back.
        if let Some(flow) = self.flow.as_mut() {
            flow.leave();
        }
    }

    fn path(&self, _file: u32) -> &Path {
        Path::new(&self.path)
    }
}

impl<'a> FileSetSchedule<'a> {
    /// Starts transfers on a file just opened (or created, `filling` it).
    pub(super) fn opened(&mut self, index: u64, size: u64, filling: bool) {
        let random = self.s.workload.fileio == FileIo::Random && !filling;
        let stop = if filling { None } else { self.s.workload.stop_after };
        // Picked only where a count of transfers is needed, so sequential runs draw the same numbers as before.
        let xfer = if random || stop.is_some() { self.xfer.pick(&mut self.rng) } else { 1 };
        let left = transfers_per_visit(stop, random, size, xfer);
        let last = self.resume.filter(|_| !filling).map(|r| r[index as usize].load(Ordering::Relaxed));
        // vdbench starts again at the beginning once the last visit reached the end.
        let offset = last.filter(|&at| at < size).unwrap_or(0);
        self.open = Some(OpenFile { index, size, offset, left, filling, first: true });
    }

    /// The operation of this workload.
    pub(super) fn operation(&self) -> FileOp {
        if self.format.is_some() { FileOp::Create } else { self.s.workload.operation }
    }
}

/// How many transfers a thread issues to a file it has just opened, as vdbench's `ActiveFile` counts them:
/// `stopafter=N` is N blocks, `stopafter=P%` is P % of the file's size; without it, random I/O does the file's
/// size in bytes ("this default prevents … 100 million 8k random reads … against a single 8k file") and
/// sequential I/O the whole file (`u64::MAX`: it ends at the end of the file). Sizes are counted in `xfer`-sized
/// transfers, at least one.
pub(super) fn transfers_per_visit(stop: Option<StopAfter>, random: bool, size: u64, xfer: u32) -> u64 {
    let blocks = |bytes: f64| ((bytes / f64::from(xfer.max(1))).ceil() as u64).max(1);
    match stop {
        Some(StopAfter::Transfers(n)) => n,
        Some(StopAfter::Percent(pct)) => blocks(size as f64 * pct / 100.0),
        None if random => blocks(size as f64),
        None => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visit_ends_after_stopafter_transfers_or_vdbench_s_defaults() {
        assert_eq!(transfers_per_visit(Some(StopAfter::Transfers(100)), true, 1 << 17, 4096), 100);
        assert_eq!(transfers_per_visit(Some(StopAfter::Transfers(3)), false, 1 << 17, 4096), 3);
        // 25 % of 128 KiB in 4 KiB transfers; 1 % of it is less than one transfer, which is still one.
        assert_eq!(transfers_per_visit(Some(StopAfter::Percent(25.0)), true, 1 << 17, 4096), 8);
        assert_eq!(transfers_per_visit(Some(StopAfter::Percent(1.0)), false, 1 << 17, 4096), 1);
        // Defaults: random does the file's size, sequential runs to the end.
        assert_eq!(transfers_per_visit(None, true, 1 << 17, 4096), 32);
        assert_eq!(transfers_per_visit(None, false, 1 << 17, 4096), u64::MAX);
    }
}
