//! The schedules of a stream step on the I/O core: viewers (the `streams::Viewers` scheduler, whose chunk reads
//! the core issues with their due times) and ingest writers (paced sequential writes into a new file of the work
//! directory). Neither touches an engine or a clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::segments::SegmentSlots;
use crate::engine::OpKind;
use crate::run::core::{Ctx, Io, Next, Schedule};
use ::streams::judge::POLL;
use ::streams::{StepJudge, ViewerNext, Viewers};

/// A scheduler thread's viewers.
pub struct ViewerSchedule {
    pub viewers: Viewers,
    /// Path (or URL) of each file the engine was built with, for error messages.
    pub paths: Vec<PathBuf>,
    /// The places of viewers of titles that are playlists: each request opens its segment there.
    pub segments: SegmentSlots,
}

impl Schedule for ViewerSchedule {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        match self.viewers.next(ctx.now) {
            ViewerNext::Chunk(c) => {
                let io = Io { tag: c.viewer, ..Io::transfer(OpKind::Read, c.file, c.offset, c.len, Some(c.due)) };
                let Some(segment) = c.segment else { return Next::Io(io) };
                match self.segments.prepare(ctx, io, segment) {
                    Ok(io) => Next::Io(io),
                    Err(errno) => {
                        // The segment could not be opened: the viewer hears it as a failed request.
                        self.viewers.arrived(c.viewer, Err(errno), ctx.now);
                        Next::At(ctx.now)
                    }
                }
            }
            ViewerNext::At(at) => Next::At(at),
            ViewerNext::Done => Next::Done,
        }
    }

    fn completed(&mut self, io: &Io, result: Result<u32, i32>, now: Duration, _buf: &[u8]) -> bool {
        self.viewers.arrived(io.tag, self.segments.result(io.file, result), now)
    }

    fn finish(&mut self, now: Duration) {
        self.viewers.finish(now);
    }

    fn path(&self, file: u32) -> &Path {
        self.segments.path(file).unwrap_or(&self.paths[file as usize])
    }
}

/// Bytes per ingest write.
pub const INGEST_WRITE: u32 = 1 << 20;

/// One ingest writer: 1 MiB writes at fixed due times (a writer that falls behind does not slide its schedule),
/// until the step's judge ends the step (at most `length`); it stops at its first failed write.
pub struct IngestSchedule {
    pub path: PathBuf,
    /// Time between writes.
    pub gap: Duration,
    pub length: Duration,
    judge: Arc<StepJudge>,
    written: u64,
    failed: bool,
}

impl IngestSchedule {
    pub fn new(path: PathBuf, bytes_per_sec: f64, length: Duration, judge: Arc<StepJudge>) -> IngestSchedule {
        let gap = Duration::from_secs_f64(f64::from(INGEST_WRITE) / bytes_per_sec.max(1.0));
        IngestSchedule { path, gap, length, judge, written: 0, failed: false }
    }
}

impl Schedule for IngestSchedule {
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        let due = self.gap.mul_f64(self.written as f64);
        let end = self.judge.end().unwrap_or(self.length).min(self.length);
        if self.failed || due >= end || ctx.now >= end {
            return Next::Done;
        }
        if due > ctx.now {
            // The viewers' judge may end the step sooner: look again now and then.
            return Next::At(due.min(ctx.now + POLL));
        }
        let offset = self.written * u64::from(INGEST_WRITE);
        self.written += 1;
        Next::Io(Io::transfer(OpKind::Write, 0, offset, INGEST_WRITE, Some(due)))
    }

    fn completed(&mut self, _io: &Io, result: Result<u32, i32>, _now: Duration, _buf: &[u8]) -> bool {
        self.failed |= result.is_err();
        true
    }

    fn path(&self, _file: u32) -> &Path {
        &self.path
    }
}
