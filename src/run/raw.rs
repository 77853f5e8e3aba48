//! The schedule of a raw-I/O worker: operations from its `OpSource`, due times from its `Pacer`, flushes owed
//! (fsync-every, fdatasync-every, end-fsync), think time, and the stamp on every written block. The core issues
//! what this decides; this never touches an engine or a clock.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::core::{Ctx, Io, Next, Schedule};
use super::open::{Create, OpenFor, open_data_file};
use super::pacer::Pacer;
use super::pattern::{fill_random, stamp};
use super::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};
use crate::engine::{AnyEngine, EngineSetup, OpKind};
use crate::plan::{PhasePlan, Thinktime, WorkerPlan};
use crate::workload::{Direction, Op, OpSource, Rng, WorkloadConfig};

pub struct RawSchedule {
    source: OpSource,
    pacer: Option<Pacer>,
    /// Paths of this worker's files, by local file index (for error messages).
    paths: Vec<PathBuf>,
    fsync_every: Option<u64>,
    fdatasync_every: Option<u64>,
    end_fsync: bool,
    thinktime: Option<Thinktime>,
    /// The next operation, drawn but not yet due.
    pending: Option<(Op, Option<Duration>)>,
    write_counter: u64,
    /// Files this worker wrote to (they get the end-of-phase fsync).
    written: Vec<bool>,
    writes_since_sync: u64,
    writes_since_datasync: u64,
    /// Flushes owed (file and kind), issued at the next free slots before any new operation.
    sync_owed: Vec<(u32, OpKind)>,
    end_sync_queued: bool,
    /// Operations since the last think-time pause.
    since_pause: u32,
    /// Think time is due: nothing new until what is in flight has completed and the pause is over.
    thinking: bool,
    pause_until: Option<Duration>,
}

impl RawSchedule {
    pub fn new(phase: &PhasePlan, source: OpSource, pacer: Option<Pacer>, paths: Vec<PathBuf>) -> RawSchedule {
        RawSchedule {
            source,
            pacer,
            fsync_every: phase.fsync_every,
            fdatasync_every: phase.fdatasync_every,
            end_fsync: phase.end_fsync,
            thinktime: phase.thinktime,
            pending: None,
            write_counter: 0,
            written: vec![false; paths.len()],
            writes_since_sync: 0,
            writes_since_datasync: 0,
            sync_owed: Vec::with_capacity(paths.len() * 2),
            end_sync_queued: false,
            since_pause: 0,
            thinking: false,
            pause_until: None,
            paths,
        }
    }

    /// Think time (fio thinktime): once nothing is in flight, pause; when the pause is over, go on. Returns
    /// what to do instead of issuing while thinking.
    fn think(&mut self, ctx: &Ctx<'_>) -> Option<Next> {
        if !self.thinking {
            return None;
        }
        if ctx.in_flight > 0 {
            return Some(Next::AfterCompletion);
        }
        let pause = self.thinktime.map_or(Duration::ZERO, |t| t.pause);
        let end = *self.pause_until.get_or_insert(ctx.now + pause);
        if ctx.now < end {
            return Some(Next::At(end));
        }
        self.pause_until = None;
        self.thinking = false;
        None
    }

    fn owe(&mut self, file: u32, kind: OpKind) {
        if !self.sync_owed.contains(&(file, kind)) {
            self.sync_owed.push((file, kind));
        }
    }

    /// After a write: flushes fall due every `fsync-every` (`fdatasync-every`) writes, at the next free slot.
    fn count_write(&mut self, file: u32) {
        self.written[file as usize] = true;
        if let Some(every) = self.fsync_every {
            self.writes_since_sync += 1;
            if self.writes_since_sync >= every {
                self.writes_since_sync = 0;
                self.owe(file, OpKind::Fsync);
            }
        }
        if let Some(every) = self.fdatasync_every {
            self.writes_since_datasync += 1;
            if self.writes_since_datasync >= every {
                self.writes_since_datasync = 0;
                self.owe(file, OpKind::Fdatasync);
            }
        }
    }
}

fn flush(file: u32, kind: OpKind) -> Io {
    Io { kind, file, offset: 0, len: 0, due: None, tag: 0 }
}

impl Schedule for RawSchedule {
    #[inline]
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        if let Some((file, kind)) = self.sync_owed.pop() {
            return Next::Io(flush(file, kind));
        }
        if let Some(instead) = self.think(ctx) {
            return instead;
        }
        let (op, due) = match self.pending.take() {
            Some(pending) => pending,
            None => {
                let op = self.source.next_op();
                (op, self.pacer.as_mut().map(|p| p.next_due(op.len)))
            }
        };
        if let Some(d) = due
            && d > ctx.now
        {
            self.pending = Some((op, Some(d)));
            return Next::At(d);
        }
        let kind = match op.dir {
            Direction::Read => OpKind::Read,
            Direction::Write => OpKind::Write,
        };
        if kind == OpKind::Write {
            self.count_write(op.file);
        }
        if let Some(think) = self.thinktime {
            self.since_pause += 1;
            if self.since_pause >= think.every {
                self.since_pause = 0;
                self.thinking = true;
            }
        }
        Next::Io(Io { kind, file: op.file, offset: op.offset, len: op.len, due, tag: 0 })
    }

    #[inline]
    fn fill_write(&mut self, io: &Io, buf: &mut [u8]) {
        stamp(buf, io.offset, self.write_counter);
        self.write_counter += 1;
    }

    fn owed_flush(&mut self) -> Option<Io> {
        if self.end_fsync && !self.end_sync_queued {
            self.end_sync_queued = true;
            for file in 0..self.written.len() as u32 {
                if self.written[file as usize] {
                    self.owe(file, OpKind::Fsync);
                }
            }
        }
        self.sync_owed.pop().map(|(file, kind)| flush(file, kind))
    }

    fn path(&self, file: u32) -> &Path {
        &self.paths[file as usize]
    }
}

/// The set-up of each worker of a raw phase, run on the worker's own thread.
pub(super) fn setups<'a>(phase: &'a PhasePlan, files: &'a [PathBuf], direct: bool, writable: bool) -> Vec<SetUp<'a>> {
    (0..phase.workers.len())
        .map(|id| Box::new(move || build(phase, id, files, direct, writable)) as SetUp<'a>)
        .collect()
}

/// Opens the files this worker's regions touch (renumbered locally), builds its engine and its schedule.
fn build<'a>(
    phase: &PhasePlan,
    id: usize,
    files: &[PathBuf],
    direct: bool,
    writable: bool,
) -> Result<Built<'a>, String> {
    let worker = &phase.workers[id];
    let (paths, workload) = localize_files(worker, files);
    let source = OpSource::new(&workload).map_err(|e| e.to_string())?;
    let how = OpenFor { write: writable && phase.writes(), create: Create::No, direct, sync: phase.sync_writes };
    let handles = paths
        .iter()
        .map(|p| open_data_file(p, how).map_err(|e| format!("cannot open {}: {e}", p.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let setup =
        EngineSetup { files: handles, ..EngineSetup::new(phase.engine, phase.iodepth, phase.largest_block() as usize) };
    let mut engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
    if phase.writes() {
        // Random content keeps compressing storage honest; each write then only stamps its blocks.
        let mut rng = Rng::new(phase.seed ^ id as u64);
        engine.for_each_buffer(&mut |buffer| fill_random(buffer, &mut rng));
    }
    let pacer = phase.pacing.map(|p| Pacer::new(&p, workload.seed));
    let settings = WorkerSettings {
        start_delay: phase.start_delay,
        ramp: phase.ramp,
        runtime: phase.runtime,
        byte_budget: worker.io_bytes,
        op_budget: worker.io_ops,
        batch: phase.iodepth_batch,
        paced: pacer.is_some(),
        continue_on_error: phase.continue_on_error,
    };
    Ok(Built { engine, schedule: AnySchedule::Raw(RawSchedule::new(phase, source, pacer, paths)), settings })
}

/// A worker opens only the files its regions touch; regions are renumbered to that local table.
fn localize_files(plan: &WorkerPlan, files: &[PathBuf]) -> (Vec<PathBuf>, WorkloadConfig) {
    let mut local_of = std::collections::HashMap::new();
    let mut paths = Vec::new();
    let mut workload = plan.workload.clone();
    for region in &mut workload.regions {
        let local = *local_of.entry(region.file).or_insert_with(|| {
            paths.push(files[region.file as usize].clone());
            paths.len() as u32 - 1
        });
        region.file = local;
    }
    (paths, workload)
}
