//! The background loads of a stream step (`--during`, shapes in `streams::background`), as schedules of the one
//! I/O core: each load is one or more workers of the step beside the viewers, and stops when the step's judge
//! ends the step. A load's reader goes through the phase's media (a scan probes each file's start after a stat
//! and an open, several probes at once as workers of their own; thumbnails and the transcoder's source read whole
//! titles with a few reads in flight), paced or as fast as the storage answers; its writer writes 1 MiB at fixed due times into files it creates in the work
//! directory (`during-LOAD-STEP-N.bin`, listed in the work directory's marker when created, so a killed run's
//! leftovers are removed by the next run), deleting segments beyond those kept. What a load did is counted here,
//! apart from the viewers' figures (`BackgroundFigures`).
//!
//! Its I/O carries no due time: the core records no lateness for it, and the viewers' lateness stays theirs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::OpKind;
use crate::metrics::OpClass;
use crate::plan::{BackgroundPlan, ScrubTarget};
use crate::run::core::{Ctx, Failure, Io, Next, Role, Schedule};
use crate::run::open::{OpenFor, open_data_file};
use ::streams::background::{LOAD_IO_BYTES, gap_at};
use ::streams::judge::POLL;
use ::streams::{BackgroundFigures, MediaFile, StepJudge};

/// Engine file slots: the reader's file, the writer's.
pub const READ_SLOT: u32 = 0;
pub const WRITE_SLOT: u32 = 1;

/// The name of a load's file `n` in step `step`.
pub fn load_file(dir: &Path, load: &str, step: u32, n: u64) -> PathBuf {
    dir.join(format!("during-{load}-{step}-{n}.bin"))
}

/// A load's reader: the media in turn.
struct Reader {
    files: Vec<(PathBuf, u64)>,
    /// Bytes from each file's start (a scan), or `None`: each file through.
    header: Option<u32>,
    /// Time between reads; `None`: the next as soon as one completes.
    gap: Option<Duration>,
    stat_first: bool,
    direct: bool,
    current: usize,
    offset: u64,
    open: bool,
    reads: u64,
    /// Reads in flight, and the most it keeps.
    in_flight: u32,
    depth: u32,
}

/// A load's writer: 1 MiB writes at fixed due times; a new file every `per_file` writes (`None`: one file).
struct Writer {
    dir: PathBuf,
    gap: Duration,
    per_file: Option<u64>,
    keep: u64,
    /// The first file's number (a recording writer's own number).
    first: u64,
    direct: bool,
    writes: u64,
    file: Option<u64>,
    busy: bool,
}

/// One worker of a background load.
pub struct LoadSchedule {
    name: &'static str,
    step: u32,
    reader: Option<Reader>,
    writer: Option<Writer>,
    length: Duration,
    judge: Arc<StepJudge>,
    pub figures: BackgroundFigures,
    /// Of its errors, the failed reads (the step's read errors are the viewers' without them).
    pub read_errors: u64,
    /// Paths of the files it created and has not deleted (removed by the step when it ends).
    pub created: Vec<PathBuf>,
    path: PathBuf,
}

/// What a worker of a load is: `reader` numbers its reader (a scan's probe), `writer` its writer (a recording's
/// file); a transcoder's one worker has both.
pub struct LoadWorker<'a> {
    pub plan: &'a BackgroundPlan,
    pub media: &'a [MediaFile],
    pub step: u32,
    pub reader: Option<u32>,
    pub writer: Option<u32>,
    pub direct: bool,
    pub length: Duration,
}

impl LoadSchedule {
    pub fn new(w: &LoadWorker<'_>, judge: Arc<StepJudge>) -> LoadSchedule {
        let plan = w.plan;
        // A scrub's reader goes through the device under the target, each step from another place of it (a
        // step reads a small part of a large device, and would otherwise re-read what the last one did).
        let (files, offset) = match &plan.scrub {
            Some(ScrubTarget::Device { path, size }) => {
                let start = (*size / 8 * u64::from(w.step % 8)) / u64::from(LOAD_IO_BYTES) * u64::from(LOAD_IO_BYTES);
                (vec![(path.clone(), *size)], start)
            }
            _ => (w.media.iter().flat_map(load_files).collect::<Vec<_>>(), 0),
        };
        let n = files.len().max(1);
        let reader = w.reader.filter(|_| plan.read_bytes > 0).map(|k| Reader {
            files,
            header: (plan.load == crate::plan::Load::LibraryScan).then_some(plan.read_bytes),
            gap: plan.read_bytes_per_sec.map(gap_at),
            stat_first: plan.load == crate::plan::Load::LibraryScan,
            direct: w.direct,
            // Each step's readers start at other titles, as a scanner or a generator would be anywhere in the
            // library, and a scan's probes spread over it.
            current: (w.step as usize + k as usize * n / plan.readers.max(1) as usize) % n,
            offset,
            open: false,
            reads: 0,
            in_flight: 0,
            depth: plan.depth.max(1),
        });
        let writer = match (w.writer, &plan.dir) {
            (Some(n), Some(dir)) if plan.writers > 0 => Some(Writer {
                dir: dir.clone(),
                gap: gap_at(plan.write_bytes_per_sec),
                per_file: plan.segment_bytes.map(|b| b.div_ceil(u64::from(LOAD_IO_BYTES)).max(1)),
                keep: u64::from(plan.keep),
                first: u64::from(n),
                direct: w.direct,
                writes: 0,
                file: None,
                busy: false,
            }),
            _ => None,
        };
        let name = plan.load.name();
        let figures = BackgroundFigures { load: name.into(), ..BackgroundFigures::default() };
        let path = PathBuf::from(name);
        LoadSchedule {
            name,
            step: w.step,
            reader,
            writer,
            length: w.length,
            judge,
            figures,
            read_errors: 0,
            created: Vec::new(),
            path,
        }
    }

    fn failed(&mut self, ctx: &mut Ctx<'_>, class: OpClass, op: &'static str, path: &Path, e: &std::io::Error) {
        self.figures.errors += 1;
        let message = e.to_string();
        let errno = e.raw_os_error().unwrap_or(libc::EIO);
        ctx.failed(Failure { class, op, path, offset: 0, len: 0, errno, message });
    }

    /// The reader's next read, or when it is due; `None` when it has nothing to read.
    fn next_read(&mut self, ctx: &mut Ctx<'_>) -> Option<Next> {
        let r = self.reader.as_mut().filter(|r| r.in_flight < r.depth && !r.files.is_empty())?;
        if let Some(gap) = r.gap {
            let due = gap.mul_f64(r.reads as f64);
            if due > ctx.now {
                return Some(Next::At(due));
            }
        }
        let done = r.open && r.header.map_or(r.offset >= r.files[r.current].1, |_| r.offset > 0);
        if done && r.in_flight > 0 {
            // The next file waits until every read of this one is back.
            return None;
        }
        if done {
            let _ = ctx.files.put(READ_SLOT, None);
            (r.open, r.offset) = (false, 0);
            r.current = (r.current + 1) % r.files.len();
        }
        if !r.open {
            return Some(self.open_next(ctx));
        }
        let r = self.reader.as_mut().expect("checked above");
        let left = r.files[r.current].1.saturating_sub(r.offset);
        let len = r.header.unwrap_or(LOAD_IO_BYTES).min(LOAD_IO_BYTES) as u64;
        // The last piece of a file is rounded up to the page (direct I/O); the read stops at the end.
        let len = len.min(left.div_ceil(4096) * 4096).max(4096) as u32;
        let io = Io { role: Role::UntilEof, ..Io::transfer(OpKind::Read, READ_SLOT, r.offset, len, None) };
        (r.offset, r.reads, r.in_flight) = (r.offset + u64::from(len), r.reads + 1, r.in_flight + 1);
        Some(Next::Io(io))
    }

    /// Stats (a scan) and opens the reader's current file; the read follows on the next call.
    fn open_next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        let r = self.reader.as_mut().expect("called with a reader");
        let path = r.files[r.current].0.clone();
        let (stat, direct) = (r.stat_first, r.direct);
        let started = Instant::now();
        if stat {
            match std::fs::metadata(&path) {
                Ok(_) => ctx.record(OpClass::Getattr, 0, started, Instant::now(), None),
                Err(e) => {
                    self.failed(ctx, OpClass::Getattr, "stat", &path, &e);
                    return self.skip_file();
                }
            }
        }
        let opened = Instant::now();
        match open_data_file(&path, OpenFor::read(direct)) {
            Ok(file) => {
                let _ = ctx.files.put(READ_SLOT, Some(file));
                ctx.record(OpClass::Open, 0, opened, Instant::now(), None);
                let r = self.reader.as_mut().expect("called with a reader");
                r.open = true;
                self.figures.files += u64::from(self.name != "transcode");
                Next::At(ctx.now)
            }
            Err(e) => {
                self.failed(ctx, OpClass::Open, "open", &path, &e);
                self.skip_file()
            }
        }
    }

    /// A file that could not be stat'ed or opened is passed over; the reader waits a moment before the next.
    fn skip_file(&mut self) -> Next {
        let r = self.reader.as_mut().expect("called with a reader");
        r.current = (r.current + 1) % r.files.len();
        Next::At(Duration::ZERO)
    }

    /// The writer's next write, or when it is due.
    fn next_write(&mut self, ctx: &mut Ctx<'_>) -> Option<Next> {
        let w = self.writer.as_mut().filter(|w| !w.busy)?;
        let due = w.gap.mul_f64(w.writes as f64);
        if due > ctx.now {
            return Some(Next::At(due));
        }
        let (file, index) = match w.per_file {
            Some(per) => (w.first + w.writes / per, w.writes % per),
            None => (w.first, w.writes),
        };
        if w.file != Some(file) {
            let path = load_file(&w.dir, self.name, self.step, file);
            let started = Instant::now();
            match open_data_file(&path, OpenFor::create(w.direct)) {
                Ok(handle) => {
                    let _ = ctx.files.put(WRITE_SLOT, Some(handle));
                    ctx.record(OpClass::Create, 0, started, Instant::now(), None);
                    w.file = Some(file);
                    self.created.push(path);
                    self.figures.files += u64::from(self.name == "transcode" || index == 0);
                    self.drop_old(ctx, file);
                }
                Err(e) => {
                    self.failed(ctx, OpClass::Create, "create", &path, &e);
                    self.writer = None;
                    return None;
                }
            }
        }
        let w = self.writer.as_mut().expect("checked above");
        let offset = index * u64::from(LOAD_IO_BYTES);
        (w.writes, w.busy) = (w.writes + 1, true);
        Some(Next::Io(Io::transfer(OpKind::Write, WRITE_SLOT, offset, LOAD_IO_BYTES, None)))
    }

    /// Deletes the segments beyond the ones kept, as a transcoder that deletes played segments does.
    fn drop_old(&mut self, ctx: &mut Ctx<'_>, newest: u64) {
        let Some(w) = &self.writer else { return };
        if w.per_file.is_none() || w.keep == 0 || newest < w.keep {
            return;
        }
        let path = load_file(&w.dir, self.name, self.step, newest - w.keep);
        let started = Instant::now();
        match std::fs::remove_file(&path) {
            Ok(()) => {
                ctx.record(OpClass::Delete, 0, started, Instant::now(), None);
                self.created.retain(|p| p != &path);
            }
            Err(e) => self.failed(ctx, OpClass::Delete, "delete", &path, &e),
        }
    }
}

impl Schedule for LoadSchedule {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        let end = self.judge.end().unwrap_or(self.length).min(self.length);
        if ctx.now >= end {
            return Next::Done;
        }
        let read = self.next_read(ctx);
        if let Some(Next::Io(io)) = read {
            return Next::Io(io);
        }
        let write = self.next_write(ctx);
        if let Some(Next::Io(io)) = write {
            return Next::Io(io);
        }
        let at = |n: &Option<Next>| match n {
            Some(Next::At(t)) => Some(*t),
            _ => None,
        };
        match (at(&read).into_iter().chain(at(&write)).min(), ctx.in_flight) {
            // The step's judge may end the step sooner: look again now and then.
            (Some(t), _) => Next::At(t.min(ctx.now + POLL).min(end)),
            (None, 0) => Next::At((ctx.now + POLL).min(end)),
            (None, _) => Next::AfterCompletion,
        }
    }

    fn completed(&mut self, io: &Io, result: Result<u32, i32>, _now: Duration, _buf: &[u8]) -> bool {
        let bytes = u64::from(result.unwrap_or(0));
        match io.kind {
            OpKind::Write => {
                if let Some(w) = &mut self.writer {
                    w.busy = false;
                }
                self.figures.written_bytes += bytes;
            }
            _ => {
                if let Some(r) = &mut self.reader {
                    r.in_flight = r.in_flight.saturating_sub(1);
                    // A file shorter than the reader thought ends here.
                    if result.is_ok_and(|b| b < io.len) {
                        r.offset = r.files[r.current].1.max(r.offset);
                    }
                }
                self.figures.read_bytes += bytes;
            }
        }
        self.figures.errors += u64::from(result.is_err());
        self.read_errors += u64::from(result.is_err() && io.kind == OpKind::Read);
        true
    }

    fn finish(&mut self, now: Duration) {
        self.figures.seconds = now.as_secs_f64();
    }

    fn path(&self, file: u32) -> &Path {
        match (file, &self.reader, &self.writer) {
            (READ_SLOT, Some(r), _) => &r.files[r.current].0,
            _ => &self.path,
        }
    }
}

/// The files a load reads of a media file, with their sizes: the file itself, or a playlist's segment files
/// (each to the end of its last segment), as a scanner or a thumbnail generator reads a segmented title.
fn load_files(m: &MediaFile) -> Vec<(PathBuf, u64)> {
    let Some(title) = &m.segments else { return vec![(m.path.clone(), m.size)] };
    let end_of = |i: usize| title.segments.iter().filter(|s| s.source as usize == i).map(|s| s.offset + s.len).max();
    let files = title.sources.iter().enumerate().filter_map(|(i, source)| match source {
        ::streams::SegmentSource::File(path) => Some((path.clone(), end_of(i).unwrap_or(0))),
        ::streams::SegmentSource::Url(_) => None,
    });
    files.collect()
}

/// The figures of a step's load workers, one entry per load in the order of `plans`.
pub fn load_figures(plans: &[BackgroundPlan], schedules: &[&LoadSchedule]) -> Vec<BackgroundFigures> {
    plans
        .iter()
        .map(|p| {
            let mut total = BackgroundFigures { load: p.load.name().into(), ..BackgroundFigures::default() };
            for s in schedules.iter().filter(|s| s.name == p.load.name()) {
                let seconds = total.seconds.max(s.figures.seconds);
                total.add(&s.figures);
                total.seconds = seconds;
            }
            total
        })
        .collect()
}
