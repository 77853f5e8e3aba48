//! The schedule of a raw-I/O worker: operations from its `OpSource`, due times from its `Pacer`, flushes owed
//! (fsync-every, fdatasync-every, end-fsync), think time, and the stamp on every written block — or, with
//! `--verify`, the verified block headers, the check of every block read and the read-back of recent writes
//! (`crate::verify`). The core issues what this decides; this never touches an engine or a clock. A worker
//! that needs fio's latency_target search or vdbench's per-direction budgets gets its schedule wrapped
//! (`compatible`: `depth_search.rs`, `direction_budget.rs`); the rest run it bare.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cluster::HeldAcross;
use super::core::{Ctx, Io, Next, Role, Schedule};
use super::depth_search::DepthSearched;
use super::direction_budget::DirectionBudget;
use super::flow::{FlowMember, Flows};
use super::open::{Create, OpenFor, open_data_file};
use super::pacer::Pacer;
use super::pattern::{fill_random, stamp};
use super::priority::PrioPicker;
use super::shape::{Address, Shaper};
use super::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};
use crate::engine::{AnyEngine, EngineSetup, OpKind};
use crate::plan::{DirectionBytes, LatencyTarget, Pacing, PhasePlan, RawPlan, Thinktime, WorkerPlan};
use crate::verify::{Backlog, Verifier};
use crate::workload::{Access, Direction, MixSource, Op, Rng, WorkloadConfig};

pub struct RawSchedule<'a> {
    source: MixSource,
    /// Data verification (`--verify`): writes carry verified blocks, reads are checked.
    verify: Option<&'a Verifier>,
    /// The run-wide index of each of this worker's files (the verifier's file numbers).
    globals: Vec<u32>,
    /// With `verify`: writes waiting to be read back (`--verify-backlog`).
    backlog: Option<Backlog>,
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
    /// fio's invalidate at each pass (buffered phases): see [`PassInvalidate`].
    pass_invalidate: Option<PassInvalidate>,
    /// fio flow: this worker's place among the jobs of its flow id.
    flow: Option<FlowMember>,
    /// fio cmdprio: which operations carry an I/O priority of their own.
    prio: Option<PrioPicker>,
    /// Dedupe and compression ratios of the written data; without it every write is random and stamped.
    shaper: Option<Shaper>,
}

/// fio drops a job's files from the page cache when the job starts and again at each pass over them (each
/// loop of `loops`, and of a time-based run). Without the second, a buffered random-read phase that repeats
/// over a file that fits in RAM turns into a page-cache benchmark after its first pass. A pass is the bytes of
/// the worker's regions; the pages go when the operation that completes it is issued.
struct PassInvalidate {
    /// Bytes in one pass.
    every: u64,
    /// Bytes issued since the last pass ended.
    issued: u64,
}

/// What verification a raw worker does, and over which files.
pub(super) struct Verification<'a> {
    pub verifier: Option<&'a Verifier>,
    /// Read back every N completed writes.
    pub backlog: Option<u64>,
}

impl<'a> RawSchedule<'a> {
    pub fn new(
        raw: &RawPlan,
        (source, depth): (MixSource, u32),
        pacer: Option<Pacer>,
        (paths, globals): (Vec<PathBuf>, Vec<u32>),
        verification: &Verification<'a>,
        pass_bytes: Option<u64>,
    ) -> RawSchedule<'a> {
        let depth = depth as usize;
        RawSchedule {
            source,
            verify: verification.verifier,
            globals,
            backlog: verification.verifier.and(verification.backlog).map(|n| Backlog::new(n, depth)),
            pacer,
            fsync_every: raw.fsync_every,
            fdatasync_every: raw.fdatasync_every,
            end_fsync: raw.end_fsync,
            thinktime: raw.thinktime,
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
            pass_invalidate: pass_bytes.filter(|&b| b > 0).map(|every| PassInvalidate { every, issued: 0 }),
            paths,
            flow: None,
            prio: None,
            shaper: None,
        }
    }

    /// Counts an operation's bytes towards the pass and drops the files' cached pages when a pass is complete.
    fn count_pass(&mut self, len: u32) {
        let Some(pass) = self.pass_invalidate.as_mut() else { return };
        pass.issued += u64::from(len);
        if pass.issued >= pass.every {
            pass.issued %= pass.every;
            for path in &self.paths {
                super::layout::invalidate(path, false);
            }
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
    Io::transfer(kind, file, 0, 0, None)
}

impl Schedule for RawSchedule<'_> {
    #[inline]
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        if let Some((file, kind)) = self.sync_owed.pop() {
            return Next::Io(flush(file, kind));
        }
        if let Some(instead) = self.think(ctx) {
            return instead;
        }
        // A read-back of recent writes (--verify-backlog) goes before any new operation.
        if self.pending.is_none()
            && let Some((file, offset, len)) = self.backlog.as_mut().and_then(Backlog::next_read)
        {
            return Next::Io(Io { role: Role::Check, ..Io::transfer(OpKind::Read, file, offset, len, None) });
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
        if let Some(flow) = self.flow.as_mut()
            && flow.ahead()
        {
            self.pending = Some((op, due));
            return Next::At(ctx.now + flow.held_wait(ctx.now));
        }
        let kind = match op.dir {
            Direction::Read => OpKind::Read,
            Direction::Write => OpKind::Write,
        };
        if self.pass_invalidate.is_some() {
            self.count_pass(op.len);
        }
        let prio = self.prio.as_mut().map_or(0, |p| p.pick(kind == OpKind::Write, op.len));
        Next::Io(Io { prio, ..Io::transfer(kind, op.file, op.offset, op.len, due) })
    }

    #[inline]
    fn prepare(&mut self, io: &Io, buf: &mut [u8]) -> bool {
        if !matches!(io.kind, OpKind::Read | OpKind::Write) {
            return true;
        }
        let write = io.kind == OpKind::Write;
        match self.verify {
            // Claims the blocks (refused while one of them is in flight) and writes their headers.
            Some(v) if !v.begin(write, self.globals[io.file as usize], io.offset, buf) => return false,
            Some(_) => {}
            None if write => match self.shaper.as_mut() {
                Some(shaper) => {
                    // The run-wide file number: the same file gets the same key in every phase.
                    let file = u64::from(self.globals[io.file as usize]);
                    shaper.fill(&mut buf[..io.len as usize], Address { tree: 0, file, offset: io.offset })
                }
                None => stamp(buf, io.offset, self.write_counter),
            },
            None => {}
        }
        if io.role == Role::Check {
            return true;
        }
        if write {
            self.write_counter += 1;
            self.count_write(io.file);
        }
        if let Some(think) = self.thinktime {
            self.since_pause += 1;
            if self.since_pause >= think.every {
                self.since_pause = 0;
                self.thinking = true;
            }
        }
        true
    }

    /// With `--verify`: a read checks the blocks it brought; a write releases its blocks and joins the
    /// read-back backlog.
    #[inline]
    fn completed(&mut self, io: &Io, result: Result<u32, i32>, _now: Duration, buf: &[u8]) -> bool {
        let Some(v) = self.verify else { return true };
        if !matches!(io.kind, OpKind::Read | OpKind::Write) {
            return true;
        }
        let write = io.kind == OpKind::Write;
        v.end(write, self.globals[io.file as usize], io.offset, io.len, result, buf);
        if write
            && result == Ok(io.len)
            && let Some(backlog) = self.backlog.as_mut()
        {
            backlog.written((io.file, io.offset, io.len));
        }
        true
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

    fn finish(&mut self, _now: Duration) {
        if let Some(flow) = self.flow.as_mut() {
            flow.leave();
        }
    }

    fn path(&self, file: u32) -> &Path {
        &self.paths[file as usize]
    }
}

/// What every worker of a raw phase opens its files from.
pub(super) struct RawInputs<'a> {
    pub files: &'a [PathBuf],
    pub direct: bool,
    pub writable: bool,
    pub verification: Verification<'a>,
    /// fio's flows of the run (phases with `fio.flow` join theirs).
    pub flows: &'a Flows,
}

/// Under mpirun (`rank`), when the phase's workers hold their shares (vdbench's controlled max) and run on the
/// ranks of several hds: this rank's part of the exchange that holds them together (`cluster::hold_across`).
pub(super) fn held_across(raw: &RawPlan, flows: &Flows, rank: Option<u32>) -> Option<HeldAcross> {
    let mixed = || raw.workers.iter().filter_map(|w| w.mixed.as_ref());
    let id = mixed().find_map(|m| m.held)?.id;
    let members: Vec<(Option<u32>, u64)> = mixed().filter_map(|m| Some((m.rank, m.held?.weight))).collect();
    HeldAcross::new(flows, id, rank?, &members)
}

/// The set-up of each worker of a raw phase, run on the worker's own thread.
/// Under mpirun (`rank`), only the workers that run on this rank: the others belong to other ranks' hosts.
pub(super) fn setups<'a>(
    (phase, raw): (&'a PhasePlan, &'a RawPlan),
    inputs: &'a RawInputs<'a>,
    rank: Option<u32>,
) -> Vec<SetUp<'a>> {
    (0..raw.workers.len())
        .filter(|&id| rank.is_none_or(|r| raw.workers[id].runs_on(r)))
        .map(|id| Box::new(move || build((phase, raw), id, inputs)) as SetUp<'a>)
        .collect()
}

/// A worker's engine: `iodepth` buffers of the phase's largest block, or, for reads through a smaller buffer (a
/// stream phase's estimate, as its viewers read: `RawPlan::read_through`), of that size, the data not kept.
fn engine_setup(raw: &RawPlan, iodepth: u32, files: Vec<std::fs::File>) -> EngineSetup {
    let largest = raw.largest_block() as usize;
    let buffer = match raw.read_through.filter(|_| !raw.writes()) {
        Some(piece) => crate::engine::page_round_up(largest.min(piece as usize)),
        None => largest,
    };
    EngineSetup { files, max_transfer: largest, ..EngineSetup::new(raw.engine, iodepth, buffer) }
}

/// Opens the files this worker's regions touch (renumbered locally), builds its engine and its schedule.
fn build<'a>((phase, raw): (&PhasePlan, &RawPlan), id: usize, inputs: &RawInputs<'a>) -> Result<Built<'a>, String> {
    let (direct, writable) = (inputs.direct, inputs.writable);
    let worker = &raw.workers[id];
    let (paths, globals, workloads) = localize_files(worker, inputs.files);
    let source = MixSource::new(&workloads, worker.workload.seed).map_err(|e| e.to_string())?;
    // A worker of a phase with parts has its own depth and its share of the phase's rate.
    let (iodepth, share) = worker.mixed.as_ref().map_or((raw.iodepth, 1.0), |m| (m.iodepth, m.share));
    let how = OpenFor { write: writable && raw.writes(), create: Create::No, direct, sync: raw.sync_writes };
    let handles = paths
        .iter()
        .map(|p| open_data_file(p, how).map_err(|e| format!("cannot open {}: {e}", p.display())))
        .collect::<Result<Vec<_>, _>>()?;
    if raw.access_hint && !direct {
        let random = workloads.iter().any(|(w, _)| matches!(w.access, Access::Random { .. }));
        handles.iter().for_each(|h| super::layout::advise_pattern(h, random));
    }
    let mut engine = AnyEngine::build(engine_setup(raw, iodepth, handles)).map_err(|e| e.to_string())?;
    if raw.writes() {
        // Random content, filled once; each write then only stamps its blocks (or the shaper refills them).
        let mut rng = Rng::new(phase.seed ^ id as u64);
        engine.for_each_buffer(&mut |buffer| fill_random(buffer, &mut rng));
    }
    // A part with a rate of its own (vdbench's wd iorate=) keeps it, paced or not, curve point or not.
    let own_rate = worker.mixed.as_ref().and_then(|m| m.own_rate);
    let pacer = own_rate.or(raw.pacing.map(|p| Pacing {
        ops_per_sec: p.ops_per_sec * share,
        bytes_per_sec: p.bytes_per_sec.map(|b| b * share),
        ..p
    }));
    let pacer = pacer.map(|p| Pacer::new(&p, worker.workload.seed));
    let settings = WorkerSettings {
        start_delay: raw.start_delay,
        ramp: phase.ramp,
        runtime: phase.runtime,
        // A paced worker's empty window may be what it asked for; an unpaced one's is a device that did not answer.
        overtime: if pacer.is_some() { Duration::ZERO } else { crate::plan::defaults::RAW_OVERTIME },
        byte_budget: worker.io_bytes,
        op_budget: worker.io_ops,
        window: bounded_by_time_alone(phase, worker),
        batch: raw.iodepth_batch.min(iodepth),
        paced: pacer.is_some(),
        continue_on_error: phase.continue_on_error,
    };
    // Buffered phases drop their files' pages at each pass, as fio does (invalidate=1, its default).
    let pass_bytes = (raw.invalidate && !direct)
        .then(|| worker.workloads().iter().flat_map(|(w, _)| &w.regions).map(|r| r.len).sum());
    let mut schedule =
        RawSchedule::new(raw, (source, iodepth), pacer, (paths, globals), &inputs.verification, pass_bytes);
    // fio's flow, or the held shares of vdbench's controlled max (the plan makes them one of the phase's own).
    let held = worker.mixed.as_ref().and_then(|m| m.held);
    schedule.flow = (phase.fio.as_ref().and_then(|f| f.flow)).or(held).map(|f| inputs.flows.join(&f));
    schedule.prio =
        (phase.fio.as_ref().and_then(|f| f.cmdprio.clone())).map(|c| PrioPicker::new(c, worker.workload.seed));
    schedule.shaper = raw.data.map(|shape| Shaper::new(shape, phase.seed, worker.workload.seed, id));
    let target = phase.fio.as_ref().and_then(|f| f.latency_target);
    let schedule =
        compatible(schedule, worker.io_by_direction, target.as_ref(), (engine.caps().queue_depth, phase.ramp));
    Ok(Built { engine, schedule, settings })
}

/// A worker with a runtime and no budget of bytes or operations (`CoreConfig::window`: it measures every
/// completion after the ramp).
fn bounded_by_time_alone(phase: &PhasePlan, worker: &WorkerPlan) -> bool {
    phase.runtime.is_some() && worker.io_bytes.is_none() && worker.io_ops.is_none() && worker.io_by_direction.is_none()
}

/// The raw schedule with the compatibility wrappers its worker needs around it (none for most): vdbench's
/// per-direction budgets, fio's latency_target search up to the engine's `depth` (its first window starting at
/// the end of the `ramp`).
fn compatible<'a>(
    schedule: RawSchedule<'a>,
    budget: DirectionBytes,
    target: Option<&LatencyTarget>,
    (depth, ramp): (u32, Duration),
) -> AnySchedule<'a> {
    match target {
        Some(target) => {
            let budgeted = DirectionBudget::new(schedule, budget);
            AnySchedule::RawSearched(DepthSearched::new(budgeted, target, depth, ramp))
        }
        None if budget.is_none() => AnySchedule::Raw(schedule),
        None => AnySchedule::RawBudgeted(DirectionBudget::new(schedule, budget)),
    }
}

/// The files and workloads of a worker, its files renumbered locally.
type Localized = (Vec<PathBuf>, Vec<u32>, Vec<(WorkloadConfig, f64)>);

/// A worker opens only the files its regions touch (over all its workloads); regions are renumbered to that local
/// table. Returns the local table's paths and run-wide indices, and the renumbered workloads with their weights.
fn localize_files(plan: &WorkerPlan, files: &[PathBuf]) -> Localized {
    let mut local_of = std::collections::HashMap::new();
    let (mut paths, mut globals) = (Vec::new(), Vec::new());
    let mut workloads: Vec<(WorkloadConfig, f64)> = plan.workloads().into_iter().map(|(w, f)| (w.clone(), f)).collect();
    for region in workloads.iter_mut().flat_map(|(w, _)| w.regions.iter_mut()) {
        let local = *local_of.entry(region.file).or_insert_with(|| {
            paths.push(files[region.file as usize].clone());
            globals.push(region.file);
            paths.len() as u32 - 1
        });
        region.file = local;
    }
    (paths, globals, workloads)
}
