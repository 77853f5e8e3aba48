//! One thread of a file-set workload: pick a file, open it, do its transfers, close it — or one metadata
//! operation — and record every operation, until the runtime ends, Ctrl-C, an error stops the phase, or there is
//! nothing left to do (each file once, or no file left to delete).
//!
//! The loop allocates nothing per operation: paths are written into two reused `String`s (std turns a short
//! path into a C string on the stack), the data buffer is allocated once, and recorders are swapped only at
//! interval boundaries. Threads claim a file in a shared bitset before they touch it, so no two threads work on
//! the same file at once; a shared bitset also says which files and directories exist.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

mod dirs;

use super::tree::TreeState;
use crate::metrics::{ErrorRecord, OpClass, Recorder, Snapshot};
use crate::plan::{FileIo, FileOp, FileWorkloadPlan, TreePlan, defaults};
use crate::run::pattern::fill_random;
use crate::run::phase::PhaseControl;
use crate::workload::fileset::{BitSet, FileSelector, Selection};
use crate::workload::{Rng, SizePicker};

/// Everything one thread needs.
pub struct ThreadSetup<'a> {
    /// Global thread number in the phase.
    pub id: u32,
    /// Thread number within its workload.
    pub thread: u32,
    pub workload: &'a FileWorkloadPlan,
    pub tree: &'a TreePlan,
    pub state: &'a TreeState,
    /// Files and directories some thread is working on.
    pub files_busy: &'a BitSet,
    pub dirs_busy: &'a BitSet,
    pub control: &'a PhaseControl,
    pub start: Instant,
    pub measure_start: Instant,
    pub deadline: Option<Instant>,
    pub interval: Duration,
    /// Time between operations when paced.
    pub gap: Option<Duration>,
    pub continue_on_error: bool,
    pub tx: Sender<Snapshot>,
}

/// What a thread did, for the phase outcome.
#[derive(Debug, Default)]
pub struct ThreadEnd {
    /// Bytes read and written after the ramp.
    pub bytes: u64,
}

enum Step {
    Again,
    Done,
}

struct Worker<'a> {
    s: ThreadSetup<'a>,
    rng: Rng,
    files: FileSelector,
    dirs: FileSelector,
    xfer: SizePicker,
    buffer: memmap2::MmapMut,
    root: String,
    path: String,
    other: String,
    recorder: Recorder,
    errors: Vec<ErrorRecord>,
    errors_kept: usize,
    interval_index: u64,
    next_ship: Instant,
    bytes: u64,
    ops_issued: u64,
    /// rmdir attempts in a row that found the directory not empty.
    not_empty: u64,
    mode_toggle: bool,
}

pub fn run_thread(s: ThreadSetup<'_>) -> Result<ThreadEnd, String> {
    let w = s.workload;
    let buffer_len = (w.xfer.max() as usize).next_multiple_of(4096);
    let mut buffer = memmap2::MmapMut::map_anon(buffer_len).map_err(|e| format!("cannot allocate a buffer: {e}"))?;
    fill_random(&mut buffer, &mut Rng::new(w.seed ^ 0xDA7A ^ u64::from(s.thread)));
    let root = s.tree.root.to_string_lossy().into_owned();
    let paced = s.gap.is_some();
    let mut worker = Worker {
        rng: Rng::new(w.seed ^ u64::from(s.thread).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        files: FileSelector::new(w.select, s.tree.files, s.thread, w.threads),
        dirs: FileSelector::new(w.select, s.tree.dirs, s.thread, w.threads),
        xfer: SizePicker::new(&w.xfer),
        buffer,
        path: String::with_capacity(root.len() + 96),
        other: String::with_capacity(root.len() + 96),
        root,
        recorder: Recorder::new(paced),
        errors: Vec::new(),
        errors_kept: 0,
        interval_index: 0,
        next_ship: s.measure_start + s.interval,
        bytes: 0,
        ops_issued: 0,
        not_empty: 0,
        mode_toggle: false,
        s,
    };
    worker.run();
    Ok(ThreadEnd { bytes: worker.bytes })
}

impl Worker<'_> {
    fn run(&mut self) {
        loop {
            let now = Instant::now();
            if self.s.control.stop_requested() || self.s.deadline.is_some_and(|d| now >= d) {
                break;
            }
            // A boundary at or after the deadline is not shipped separately: what completes after the last full
            // interval belongs to it, not to an interval of a few microseconds (as the raw workers do).
            if now >= self.next_ship && self.s.deadline.is_none_or(|d| self.next_ship < d) {
                self.ship(now, false);
            }
            if let Step::Done = self.step() {
                break;
            }
        }
        self.ship(Instant::now(), true);
    }

    /// Waits for the next operation's due time when paced; returns it.
    fn pace(&mut self) -> Option<Instant> {
        let gap = self.s.gap?;
        let due = self.s.start + gap.mul_f64(self.ops_issued as f64);
        self.ops_issued += 1;
        loop {
            let now = Instant::now();
            if now >= due || self.s.control.stop_requested() {
                return Some(due);
            }
            std::thread::sleep((due - now).min(Duration::from_millis(100)));
        }
    }

    fn step(&mut self) -> Step {
        match self.s.workload.operation {
            FileOp::Read | FileOp::Write => self.transfer_file(),
            FileOp::Create => self.create(),
            FileOp::Mkdir => self.mkdir(),
            FileOp::Rmdir => self.rmdir(),
            FileOp::Getattr if self.s.workload.dirs => self.stat_dir(),
            op => self.on_existing(op),
        }
    }

    /// Picks a file whose existence is `want`, and claims it. `Again` when every candidate was busy.
    fn pick(&mut self, want: bool, dirs: bool) -> Result<u64, Step> {
        let (exists, busy, selector) = if dirs {
            (&*self.s.state.dirs, self.s.dirs_busy, &mut self.dirs)
        } else {
            (&*self.s.state.files, self.s.files_busy, &mut self.files)
        };
        let once = self.s.workload.select == Selection::Once;
        for _ in 0..16 {
            let Some(mut i) = selector.next(&mut self.rng) else { return Err(Step::Done) };
            if dirs && self.s.workload.operation == FileOp::Rmdir {
                // Deepest directories first, so that parents are empty by the time they come up.
                i = exists.len() - 1 - i;
            }
            if !once {
                match exists.find(i, want) {
                    Some(found) => i = found,
                    None => return Err(Step::Done),
                }
            }
            if exists.get(i) == want && busy.claim(i) {
                if exists.get(i) == want {
                    return Ok(i);
                }
                busy.set(i, false);
            }
        }
        Err(Step::Again)
    }

    fn file_path(&mut self, file: u64) {
        self.path.clear();
        self.path.push_str(&self.root);
        self.path.push('/');
        self.s.tree.shape.push_file(file, &mut self.path);
    }

    fn dir_path(&mut self, dir: u64) {
        let (level, index) = self.s.tree.shape.dir_level(dir);
        self.path.clear();
        self.path.push_str(&self.root);
        self.path.push('/');
        self.s.tree.shape.push_dir(level, index, &mut self.path);
    }

    fn open(&mut self, write: bool, create: bool) -> io::Result<File> {
        let mut options = OpenOptions::new();
        options.read(true).write(write || create);
        if create {
            options.create_new(true);
        }
        if self.s.tree.direct {
            options.custom_flags(libc::O_DIRECT);
        }
        options.open(&self.path)
    }

    fn transfer_file(&mut self) -> Step {
        let file = match self.pick(true, false) {
            Ok(f) => f,
            Err(step) => return step,
        };
        self.file_path(file);
        let writes = self.s.workload.read_percent < 100;
        let due = self.pace();
        let t0 = Instant::now();
        let handle = self.open(writes, false);
        let t1 = Instant::now();
        match handle {
            Ok(handle) => {
                self.record(OpClass::Open, 0, t0, t1, due);
                let size = self.s.tree.sizes.size_of(file, self.s.tree.seed);
                self.transfers(&handle, file, size, true);
                self.close(handle);
            }
            Err(e) => self.fail(OpClass::Open, file, 0, &e, t1),
        }
        self.s.files_busy.set(file, false);
        Step::Again
    }

    /// Transfers over one open file: the whole file once in order (sequential), or as many transfers as fit
    /// at random offsets (random). The first is paced by the caller when `first_paced`.
    fn transfers(&mut self, handle: &File, file: u64, size: u64, first_paced: bool) {
        let w = self.s.workload;
        let mut offset = 0;
        let mut first = first_paced;
        let count = match w.fileio {
            FileIo::Sequential => u64::MAX,
            FileIo::Random => (size / u64::from(self.xfer.pick(&mut self.rng)).max(1)).max(1),
        };
        for _ in 0..count {
            if self.s.control.stop_requested() || self.s.deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            let len = u64::from(self.xfer.pick(&mut self.rng));
            let at = match w.fileio {
                FileIo::Sequential => {
                    if offset >= size {
                        return;
                    }
                    offset
                }
                FileIo::Random => self.rng.below((size / len).max(1)) * len,
            };
            let len = len.min(size.saturating_sub(at)).max(1) as usize;
            offset = at + len as u64;
            let read = w.read_percent == 100 || (w.read_percent > 0 && self.rng.below(100) < u64::from(w.read_percent));
            let due = if first { None } else { self.pace() };
            first = false;
            let t0 = Instant::now();
            let result = if read {
                handle.read_at(&mut self.buffer[..len], at)
            } else {
                handle.write_at(&self.buffer[..len], at)
            };
            let t1 = Instant::now();
            let class = if read { OpClass::Read } else { OpClass::Write };
            match result {
                Ok(n) => self.record(class, n as u64, t0, t1, due),
                Err(e) => self.fail(class, file, at, &e, t1),
            }
        }
    }

    fn close(&mut self, handle: File) {
        let t0 = Instant::now();
        drop(handle);
        self.record(OpClass::Close, 0, t0, Instant::now(), None);
    }

    fn create(&mut self) -> Step {
        let file = match self.pick(false, false) {
            Ok(f) => f,
            Err(step) => return step,
        };
        self.file_path(file);
        let due = self.pace();
        let t0 = Instant::now();
        let handle = self.open(true, true);
        let t1 = Instant::now();
        match handle {
            Ok(handle) => {
                self.record(OpClass::Create, 0, t0, t1, due);
                self.s.state.files.set(file, true);
                let size = self.s.tree.sizes.size_of(file, self.s.tree.seed);
                self.fill(&handle, file, size);
                self.close(handle);
            }
            Err(e) => self.fail(OpClass::Create, file, 0, &e, t1),
        }
        self.s.files_busy.set(file, false);
        Step::Again
    }

    /// Writes a new file from start to end (part of `create`).
    fn fill(&mut self, handle: &File, file: u64, size: u64) {
        let mut at = 0;
        while at < size && !self.s.control.stop_requested() {
            let len = u64::from(self.xfer.pick(&mut self.rng)).min(size - at) as usize;
            let t0 = Instant::now();
            let result = handle.write_at(&self.buffer[..len], at);
            let t1 = Instant::now();
            match result {
                Ok(n) => self.record(OpClass::Write, n as u64, t0, t1, None),
                Err(e) => return self.fail(OpClass::Write, file, at, &e, t1),
            }
            at += len as u64;
        }
    }

    /// delete, open, close, getattr, setattr, access, copy, move: operations on an existing file.
    fn on_existing(&mut self, op: FileOp) -> Step {
        let file = match self.pick(true, false) {
            Ok(f) => f,
            Err(step) => return step,
        };
        self.file_path(file);
        let target = match op {
            FileOp::Copy | FileOp::Move => match self.pick(false, false) {
                Ok(t) => {
                    self.other.clear();
                    self.other.push_str(&self.root);
                    self.other.push('/');
                    self.s.tree.shape.push_file(t, &mut self.other);
                    Some(t)
                }
                Err(step) => {
                    self.s.files_busy.set(file, false);
                    return step;
                }
            },
            _ => None,
        };
        let due = self.pace();
        let t0 = Instant::now();
        let (class, result): (OpClass, io::Result<u64>) = match op {
            FileOp::Delete => (OpClass::Delete, std::fs::remove_file(&self.path).map(|()| 0)),
            FileOp::Open | FileOp::Close => (
                OpClass::Open,
                self.open(false, false).map(|h| {
                    let t1 = Instant::now();
                    self.record(OpClass::Open, 0, t0, t1, due);
                    self.close(h);
                    u64::MAX
                }),
            ),
            FileOp::Getattr => (OpClass::Getattr, std::fs::metadata(&self.path).map(|_| 0)),
            FileOp::Setattr => {
                self.mode_toggle = !self.mode_toggle;
                let mode = if self.mode_toggle { 0o640 } else { 0o644 };
                (
                    OpClass::Setattr,
                    std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(mode)).map(|()| 0),
                )
            }
            FileOp::Access => (
                OpClass::Access,
                rustix::fs::access(self.path.as_str(), rustix::fs::Access::READ_OK)
                    .map(|()| 0)
                    .map_err(io::Error::from),
            ),
            FileOp::Copy => (OpClass::Copy, std::fs::copy(&self.path, &self.other)),
            FileOp::Move => (OpClass::Move, std::fs::rename(&self.path, &self.other).map(|()| 0)),
            FileOp::Read | FileOp::Write | FileOp::Create | FileOp::Mkdir | FileOp::Rmdir => {
                unreachable!("dispatched by step")
            }
        };
        let t1 = Instant::now();
        match result {
            // open/close recorded both itself.
            Ok(u64::MAX) => {}
            Ok(bytes) => {
                self.record(class, bytes, t0, t1, due);
                match op {
                    FileOp::Delete => self.s.state.files.set(file, false),
                    FileOp::Copy => self.s.state.files.set(target.expect("copy has a target"), true),
                    FileOp::Move => {
                        self.s.state.files.set(file, false);
                        self.s.state.files.set(target.expect("move has a target"), true);
                    }
                    _ => {}
                }
            }
            Err(e) => self.fail(class, file, 0, &e, t1),
        }
        self.s.files_busy.set(file, false);
        if let Some(t) = target {
            self.s.files_busy.set(t, false);
        }
        Step::Again
    }

    #[inline]
    fn record(&mut self, class: OpClass, bytes: u64, t0: Instant, t1: Instant, due: Option<Instant>) {
        if t1 < self.s.measure_start {
            return;
        }
        self.recorder.record(class, bytes, t1.saturating_duration_since(t0).as_nanos() as u64);
        if let Some(due) = due {
            self.recorder.record_due(class, t1.saturating_duration_since(due).as_nanos() as u64);
        }
        if matches!(class, OpClass::Read | OpClass::Write) {
            self.bytes += bytes;
        }
    }

    #[cold]
    fn fail(&mut self, class: OpClass, _index: u64, offset: u64, error: &io::Error, at: Instant) {
        self.recorder.record_error(class);
        if self.errors_kept < defaults::ERRORS_KEPT {
            self.errors_kept += 1;
            self.errors.push(ErrorRecord {
                op: class.name().to_string(),
                path: self.path.clone(),
                offset,
                len: 0,
                errno: error.raw_os_error().unwrap_or(0),
                message: error.to_string(),
                at_s: at.saturating_duration_since(self.s.measure_start).as_secs_f64(),
            });
        }
        if !self.s.continue_on_error {
            self.s.control.abort.store(true, Ordering::Relaxed);
        }
    }

    fn ship(&mut self, at: Instant, last: bool) {
        if at < self.s.measure_start && !last {
            self.next_ship = self.s.measure_start + self.s.interval;
            return;
        }
        // The interval this snapshot closes: the one that just ended (or, for the last, the one under way). A
        // thread held up by a slow operation attributes its operations to the interval in which it shipped.
        let elapsed = at.saturating_duration_since(self.s.measure_start);
        let step = self.s.interval.as_nanos().max(1);
        let k = if last {
            // The interval under way, counting time past the deadline as part of the last full interval.
            let counted = match self.s.deadline {
                Some(d) => elapsed.min(d.saturating_duration_since(self.s.measure_start)),
                None => elapsed,
            };
            (counted.as_nanos().div_ceil(step) as u64).saturating_sub(1)
        } else {
            ((elapsed.as_nanos() / step) as u64).saturating_sub(1)
        }
        .max(self.interval_index);
        let fresh = Recorder::new(self.s.gap.is_some());
        let recorder = std::mem::replace(&mut self.recorder, fresh);
        let snapshot = Snapshot {
            worker: self.s.id,
            interval: k,
            last,
            elapsed,
            recorder,
            errors: std::mem::take(&mut self.errors),
        };
        let _ = self.s.tx.send(snapshot);
        self.interval_index = k + 1;
        self.next_ship = self.s.measure_start + self.s.interval * (k as u32 + 2);
    }
}
