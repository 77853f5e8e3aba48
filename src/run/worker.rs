//! One worker thread: the hot loop that keeps `iodepth` operations in flight, stamps times, and records every
//! completion.
//!
//! Per iteration: one clock read, then fill free slots (pacing permitting), submit the batch, reap at least one
//! completion, record. Nothing is allocated per I/O: the in-flight table and the batch vectors are sized to the
//! queue depth up front, buffers belong to the engine, and histograms are recorded in place. The engine is a
//! concrete type here (`Worker::drive<E>` is monomorphised per engine), so no call in the loop is dynamic.
//!
//! Timing rules: latency is completion time minus submission time; when paced, also completion time minus due
//! time. Submission latency (fio's slat) is submission time minus the time the worker took the operation into
//! its slot, and total latency (fio's lat) the two together. The submission time is read right before each group
//! of requests reaches the kernel, so it never includes streamcap's own work on earlier groups (one clock read
//! per system call, ~20 ns against ~5 µs).
//! Completions reaped in one batch share one clock read (they were all found at that moment).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use super::pacer::Pacer;
use super::pattern::{fill_random, stamp};
use super::phase::PhaseControl;
use super::worker_setup::WorkerMsg;
use crate::engine::{Completion, Engine, EngineError, OpKind, Request, Wait};
use crate::metrics::{ErrorRecord, OpClass, Recorder, Snapshot};
use crate::plan::{PhasePlan, defaults};
use crate::verify::{Backlog, Verifier};
use crate::workload::{Direction, Op, OpSource, Rng};

/// What a worker reports when its thread ends.
#[derive(Debug, Default)]
pub(super) struct WorkerEnd {
    /// Bytes issued after the ramp.
    pub issued: u64,
    /// The engine itself failed (not one I/O); the text says how.
    pub failure: Option<String>,
}

#[derive(Clone, Copy)]
struct InFlight {
    kind: OpKind,
    file: u32,
    offset: u64,
    len: u32,
    /// When the worker took the operation into its slot (fio's start_time): the start of `lat` and `slat`.
    taken: Instant,
    submitted: Instant,
    due: Option<Instant>,
    /// Issued after the ramp: its completion is recorded and its bytes count toward the I/O budget. Decided
    /// once, when the operation is queued, so that the two always agree.
    measured: bool,
}

pub(super) struct Worker<'a> {
    pub id: u32,
    pub phase: &'a PhasePlan,
    /// Global paths of this worker's files, indexed by the worker's local file index.
    pub paths: Vec<PathBuf>,
    pub budget: Option<u64>,
    /// Operations issued after the ramp before the worker stops (fio number_ios).
    pub op_budget: Option<u64>,
    pub interval: Duration,
    pub control: &'a PhaseControl,
    pub tx: Sender<WorkerMsg>,
    pub spares: Receiver<Recorder>,
    /// Data verification (`--verify`): writes stamp their blocks, reads check them (see `crate::verify`).
    pub verify: Option<&'a Verifier>,
    /// The run-wide index of each of this worker's files (the verifier's file numbers).
    pub globals: Vec<u32>,
    /// With `verify`: read back every N completed writes (fio verify_backlog).
    pub verify_backlog: Option<u64>,
}

/// The loop's mutable state, separate from the configuration so that borrows stay simple.
struct LoopState {
    source: OpSource,
    pacer: Option<Pacer>,
    table: Vec<InFlight>,
    free: Vec<u32>,
    batch: Vec<Request>,
    done: Vec<Completion>,
    recorder: Recorder,
    errors: Vec<ErrorRecord>,
    errors_kept: usize,
    pending: Option<(crate::workload::Op, Option<Instant>)>,
    start: Instant,
    measure_start: Instant,
    deadline: Option<Instant>,
    next_boundary: Instant,
    interval_index: u64,
    in_ramp: bool,
    issued: u64,
    /// Operations issued after the ramp.
    issued_ops: u64,
    writes_since_sync: u64,
    writes_since_datasync: u64,
    /// Flushes owed (file and fsync or fdatasync), issued at the next free slots before any new operation: after
    /// every `fsync-every` (`fdatasync-every`) writes, and for every written file when the phase ends with
    /// `end-fsync`.
    sync_owed: Vec<(u32, OpKind)>,
    /// Operations issued since the last think-time pause.
    since_pause: u32,
    /// Think time is due: no new operations until those in flight have completed and the pause is over.
    thinking: bool,
    /// End of the current pause, once it has begun.
    pause_until: Option<Instant>,
    /// The end-of-phase flushes have been queued.
    end_sync_queued: bool,
    write_counter: u64,
    written: Vec<bool>,
    failure: Option<String>,
    /// Writes waiting to be read back (`--verify-backlog`).
    backlog: Option<Backlog>,
}

impl Worker<'_> {
    /// Runs the phase on `engine` from `start` (the common start instant) and returns when the phase ends.
    pub fn drive<E: Engine>(self, engine: &mut E, source: OpSource, pacer: Option<Pacer>, start: Instant) -> WorkerEnd {
        let depth = engine.caps().queue_depth as usize;
        let paced = pacer.is_some();
        if self.phase.writes() {
            let mut rng = Rng::new(self.phase.seed ^ u64::from(self.id));
            for slot in 0..depth as u32 {
                fill_random(engine.buffer_mut(slot), &mut rng);
            }
        }
        // fio's startdelay: this phase's workers begin later than the common start (Ctrl-C still noticed).
        let start = start + self.phase.start_delay;
        while Instant::now() < start && !self.control.stop_requested() {
            wait_until(start, Instant::now());
        }
        let measure_start = start + self.phase.ramp;
        let mut st = LoopState {
            source,
            pacer,
            table: vec![
                InFlight {
                    kind: OpKind::Read,
                    file: 0,
                    offset: 0,
                    len: 0,
                    taken: start,
                    submitted: start,
                    due: None,
                    measured: false
                };
                depth
            ],
            free: (0..depth as u32).rev().collect(),
            batch: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            recorder: Recorder::new(paced),
            errors: Vec::new(),
            errors_kept: 0,
            pending: None,
            start,
            measure_start,
            deadline: self.phase.runtime.map(|r| measure_start + r),
            next_boundary: measure_start + self.interval,
            interval_index: 0,
            in_ramp: !self.phase.ramp.is_zero(),
            issued: 0,
            issued_ops: 0,
            writes_since_sync: 0,
            writes_since_datasync: 0,
            since_pause: 0,
            thinking: false,
            pause_until: None,
            sync_owed: Vec::with_capacity(self.paths.len()),
            end_sync_queued: false,
            write_counter: 0,
            written: vec![false; self.paths.len()],
            failure: None,
            backlog: self.verify.and(self.verify_backlog).map(|n| Backlog::new(n, depth)),
        };

        let mut now = Instant::now();
        loop {
            let stopping = self.should_stop(&st, now);
            // Flushes owed for writes already issued are still issued when the phase ends by its runtime or its
            // I/O amount, and end-fsync adds one per written file; an interruption or an error stops at once.
            let flushing = stopping && !self.control.stop_requested() && st.failure.is_none();
            if flushing && self.phase.end_fsync && !st.end_sync_queued {
                st.end_sync_queued = true;
                for file in (0..st.written.len() as u32).filter(|&f| st.written[f as usize]) {
                    if !st.sync_owed.contains(&(file, OpKind::Fsync)) {
                        st.sync_owed.push((file, OpKind::Fsync));
                    }
                }
            }
            if !stopping || (flushing && !st.sync_owed.is_empty()) {
                self.fill(&mut st, engine, now, stopping);
            }
            if !st.batch.is_empty()
                && let Err(e) = self.hand_over(&mut st, engine)
            {
                self.engine_failed(&mut st, e);
                break;
            }
            if engine.in_flight() == 0 {
                if stopping && (!flushing || st.sync_owed.is_empty()) {
                    break;
                }
                if st.thinking && !stopping {
                    self.think(&mut st, now);
                    if !st.thinking {
                        continue;
                    }
                }
                // Nothing in flight and nothing due yet: sleep until the next paced operation is due, in steps
                // short enough that Ctrl-C is noticed promptly even at very low rates.
                if let Some(wake) = self.wake_time(&st, stopping) {
                    wait_until(wake, now);
                }
                now = Instant::now();
                self.tick(&mut st, now);
                continue;
            }
            let wait = match self.wake_time(&st, stopping) {
                Some(wake) => Wait::AtMost(wake.saturating_duration_since(now)),
                None => Wait::Forever,
            };
            if let Err(e) = engine.reap(1, wait, &mut st.done) {
                self.engine_failed(&mut st, e);
                break;
            }
            if !st.in_ramp {
                st.recorder.depths.record_complete(st.done.len());
            }
            now = Instant::now();
            // Intervals that ended while we waited are shipped first: these completions happened after them.
            self.tick(&mut st, now);
            self.account(&mut st, engine, now);
        }
        let end = Instant::now();
        self.ship(&mut st, end, true);
        WorkerEnd { issued: st.issued, failure: st.failure }
    }

    /// When the loop must wake even if nothing completes: the next paced operation's due time, and the next
    /// interval boundary, so that a stalled device shows up as empty intervals at the right time (and the
    /// progress line and CSV keep moving) instead of as late completions filed under an earlier interval.
    fn wake_time(&self, st: &LoopState, stopping: bool) -> Option<Instant> {
        let due = match (st.pending, st.pause_until) {
            (_, Some(pause)) if !stopping => Some(pause),
            (Some((_, Some(due))), _) if !stopping => Some(due),
            _ => None,
        };
        let boundary = st.deadline.is_none_or(|d| st.next_boundary < d).then_some(st.next_boundary);
        match (due, boundary) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Ends the ramp and ships a snapshot for every interval boundary that has passed (empty ones too).
    fn tick(&self, st: &mut LoopState, now: Instant) {
        if st.in_ramp {
            if now < st.measure_start {
                return;
            }
            // Nothing to discard: completions of operations submitted during the ramp are never recorded
            // (`account`), only their errors, which count.
            st.in_ramp = false;
        }
        // A boundary at or after the deadline is not shipped separately: the drain of in-flight operations after
        // the deadline belongs to the last full interval, not to an interval of a few microseconds.
        while now >= st.next_boundary && st.deadline.is_none_or(|d| st.next_boundary < d) {
            let boundary = st.next_boundary;
            self.ship(st, boundary, false);
            st.interval_index += 1;
            st.next_boundary += self.interval;
        }
    }

    fn should_stop(&self, st: &LoopState, now: Instant) -> bool {
        self.control.stop_requested()
            || st.failure.is_some()
            || st.deadline.is_some_and(|d| now >= d)
            || self.budget_spent(st)
    }

    #[inline]
    fn budget_spent(&self, st: &LoopState) -> bool {
        self.budget.is_some_and(|b| st.issued >= b) || self.op_budget.is_some_and(|b| st.issued_ops >= b)
    }

    /// Think time (fio thinktime): once nothing is in flight, pause; when the pause is over, go on.
    fn think(&self, st: &mut LoopState, now: Instant) {
        let Some(think) = self.phase.thinktime else { return };
        match st.pause_until {
            None => st.pause_until = Some(now + think.pause),
            Some(end) if now >= end => {
                st.pause_until = None;
                st.thinking = false;
            }
            Some(_) => {}
        }
    }

    /// Queues operations into free slots; when `stopping`, only a flush that is still owed.
    fn fill<E: Engine>(&self, st: &mut LoopState, engine: &mut E, now: Instant, stopping: bool) {
        let mut refused = 0;
        while let Some(&slot) = st.free.last() {
            if let Some((file, kind)) = st.sync_owed.pop() {
                st.free.pop();
                st.table[slot as usize] = InFlight {
                    kind,
                    file,
                    offset: 0,
                    len: 0,
                    taken: now,
                    submitted: now,
                    due: None,
                    measured: !st.in_ramp,
                };
                st.batch.push(Request { slot, kind, file, offset: 0, len: 0 });
                continue;
            }
            if stopping || st.thinking || self.budget_spent(st) {
                return;
            }
            // A read-back of recent writes (--verify-backlog) goes before any new operation.
            let readback = st.backlog.as_mut().and_then(Backlog::next_read);
            let (op, due) = match (st.pending.take(), readback) {
                (Some(pending), _) => pending,
                (None, Some((file, offset, len))) => (Op { dir: Direction::Read, file, offset, len }, None),
                (None, None) => {
                    let op = st.source.next_op();
                    let start = st.start;
                    (op, st.pacer.as_mut().map(|p| start + p.next_due(op.len)))
                }
            };
            if let Some(d) = due
                && d > now
            {
                st.pending = Some((op, Some(d)));
                return;
            }
            if !self.verify_begin(&op, &mut engine.buffer_mut(slot)[..op.len as usize]) {
                // A block of it is in flight: skip it, and stop filling after a queue's worth of such skips.
                refused += 1;
                if refused > st.table.len() {
                    return;
                }
                continue;
            }
            st.free.pop();
            let kind = match op.dir {
                Direction::Read => OpKind::Read,
                Direction::Write => OpKind::Write,
            };
            if kind == OpKind::Write {
                if self.verify.is_none() {
                    stamp(&mut engine.buffer_mut(slot)[..op.len as usize], op.offset, st.write_counter);
                }
                st.write_counter += 1;
                st.written[op.file as usize] = true;
            }
            st.table[slot as usize] = InFlight {
                kind,
                file: op.file,
                offset: op.offset,
                len: op.len,
                taken: now,
                submitted: now,
                due,
                measured: !st.in_ramp,
            };
            st.batch.push(Request { slot, kind, file: op.file, offset: op.offset, len: op.len });
            if !st.in_ramp && readback.is_none() {
                st.issued += u64::from(op.len);
                st.issued_ops += 1;
                // fio's iodepth_level: the queue depth this operation joins.
                st.recorder.depths.record_level(engine.in_flight() + st.batch.len());
            }
            if let Some(think) = self.phase.thinktime {
                st.since_pause += 1;
                if st.since_pause >= think.every {
                    st.since_pause = 0;
                    st.thinking = true;
                }
            }
            if kind == OpKind::Write {
                // Flushes are issued at the next free slot (the very next one at queue depth 1): the sync engine
                // runs them after the write, io_uring orders them after every earlier request with IO_DRAIN.
                if let Some(every) = self.phase.fsync_every {
                    st.writes_since_sync += 1;
                    if st.writes_since_sync >= every {
                        st.writes_since_sync = 0;
                        if !st.sync_owed.contains(&(op.file, OpKind::Fsync)) {
                            st.sync_owed.push((op.file, OpKind::Fsync));
                        }
                    }
                }
                if let Some(every) = self.phase.fdatasync_every {
                    st.writes_since_datasync += 1;
                    if st.writes_since_datasync >= every {
                        st.writes_since_datasync = 0;
                        if !st.sync_owed.contains(&(op.file, OpKind::Fdatasync)) {
                            st.sync_owed.push((op.file, OpKind::Fdatasync));
                        }
                    }
                }
            }
            if st.thinking {
                return;
            }
        }
    }

    fn account<E: Engine>(&self, st: &mut LoopState, engine: &mut E, now: Instant) {
        let mut done = std::mem::take(&mut st.done);
        for completion in done.drain(..) {
            let entry = st.table[completion.slot as usize];
            st.free.push(completion.slot);
            self.verify_end(st, &entry, completion.result, engine.buffer_mut(completion.slot));
            // Operations issued during the ramp are not measured, even when they complete after it: the ramp
            // would otherwise leak into the results (and past an --io-size budget, which counts only measured
            // operations). Their errors still count.
            if !entry.measured && completion.result.is_ok() {
                continue;
            }
            let class = class_of(entry.kind);
            let latency = nanos(now.saturating_duration_since(entry.submitted));
            match completion.result {
                Ok(n) if n == entry.len || matches!(entry.kind, OpKind::Fsync | OpKind::Fdatasync) => {
                    let submit = nanos(entry.submitted.saturating_duration_since(entry.taken));
                    st.recorder.record_io(class, u64::from(n), submit, latency);
                    if let Some(due) = entry.due {
                        st.recorder.record_due(class, nanos(now.saturating_duration_since(due)));
                    }
                }
                Ok(n) => self.io_error(st, &entry, 0, &format!("short transfer: {n} of {} bytes", entry.len), now),
                Err(errno) => {
                    let text = std::io::Error::from_raw_os_error(errno).to_string();
                    self.io_error(st, &entry, errno, &text, now);
                }
            }
        }
        st.done = done;
    }

    /// `--verify`, before an operation is queued: claims its blocks and, for a write, stamps them in `buf`.
    /// `false`: a block is in flight, do not issue it now.
    #[inline]
    fn verify_begin(&self, op: &Op, buf: &mut [u8]) -> bool {
        let Some(v) = self.verify else { return true };
        v.begin(op.dir == Direction::Write, self.globals[op.file as usize], op.offset, buf)
    }

    /// `--verify`, when an operation completed: a read checks the blocks it read (`buf`), a write releases its
    /// blocks and joins the read-back backlog.
    #[inline]
    fn verify_end(&self, st: &mut LoopState, entry: &InFlight, result: Result<u32, i32>, buf: &[u8]) {
        let Some(v) = self.verify else { return };
        if !matches!(entry.kind, OpKind::Read | OpKind::Write) {
            return;
        }
        let write = entry.kind == OpKind::Write;
        v.end(write, self.globals[entry.file as usize], entry.offset, entry.len, result, buf);
        if write
            && result == Ok(entry.len)
            && let Some(backlog) = st.backlog.as_mut()
        {
            backlog.written((entry.file, entry.offset, entry.len));
        }
    }

    fn io_error(&self, st: &mut LoopState, entry: &InFlight, errno: i32, message: &str, now: Instant) {
        st.recorder.record_error(class_of(entry.kind));
        if st.errors_kept < defaults::ERRORS_KEPT {
            st.errors_kept += 1;
            st.errors.push(ErrorRecord {
                op: class_name(entry.kind).to_string(),
                path: self.paths[entry.file as usize].display().to_string(),
                offset: entry.offset,
                len: u64::from(entry.len),
                errno,
                message: message.to_string(),
                at_s: now.saturating_duration_since(st.start).as_secs_f64(),
            });
        }
        if !self.phase.continue_on_error {
            self.control.abort.store(true, Ordering::Relaxed);
        }
    }

    fn engine_failed(&self, st: &mut LoopState, error: EngineError) {
        st.failure = Some(error.to_string());
        self.control.abort.store(true, Ordering::Relaxed);
    }

    /// Hands the filled batch to the engine in groups of `iodepth-batch`, stamping each group's submission time
    /// right before it goes, so that no operation's latency includes streamcap's work on the groups before it.
    /// The last group is only queued: the `reap` that follows passes it to the kernel and waits, in one system
    /// call. Requests the engine cannot take yet stay in the batch for the next round.
    fn hand_over<E: Engine>(&self, st: &mut LoopState, engine: &mut E) -> Result<(), EngineError> {
        let group = self.phase.iodepth_batch.max(1) as usize;
        let mut sent = 0;
        while sent < st.batch.len() {
            let end = (sent + group).min(st.batch.len());
            let stamp = Instant::now();
            for request in &st.batch[sent..end] {
                st.table[request.slot as usize].submitted = stamp;
            }
            let chunk = &st.batch[sent..end];
            let accepted = if end == st.batch.len() { engine.queue(chunk)? } else { engine.submit(chunk)? };
            if !st.in_ramp {
                st.recorder.depths.record_submit(accepted);
            }
            sent += accepted;
            if accepted < chunk.len() {
                break;
            }
        }
        st.batch.drain(..sent);
        Ok(())
    }

    /// Sends the current recorder as the snapshot of the current interval and takes a fresh one.
    fn ship(&self, st: &mut LoopState, at: Instant, last: bool) {
        let paced = st.pacer.is_some();
        let fresh = self.spares.try_recv().unwrap_or_else(|_| Recorder::new(paced));
        let recorder = std::mem::replace(&mut st.recorder, fresh);
        let snapshot = Snapshot {
            worker: self.id,
            interval: st.interval_index,
            last,
            elapsed: at.saturating_duration_since(st.measure_start),
            recorder,
            errors: std::mem::take(&mut st.errors),
        };
        // The coordinator outlives every worker; a failed send means it is gone and nobody is listening.
        let _ = self.tx.send(WorkerMsg::Snapshot(Box::new(snapshot)));
    }
}

/// The last stretch before a due time is spun rather than slept: even with a 1 ns timer slack, waking from a
/// sleep takes tens of microseconds, which would show up as latency from the due time that is streamcap's, not
/// the device's. Bounded CPU cost: at most this much spinning per paced operation.
const SPIN_BEFORE_DUE: Duration = Duration::from_micros(20);

/// Sleeps (in steps of at most 100 ms, so Ctrl-C is noticed promptly) or spins until `wake`.
fn wait_until(wake: Instant, now: Instant) {
    let left = wake.saturating_duration_since(now);
    if left > SPIN_BEFORE_DUE {
        std::thread::sleep((left - SPIN_BEFORE_DUE).min(Duration::from_millis(100)));
    } else {
        while Instant::now() < wake {
            std::hint::spin_loop();
        }
    }
}

fn class_of(kind: OpKind) -> OpClass {
    match kind {
        OpKind::Read => OpClass::Read,
        OpKind::Write => OpClass::Write,
        OpKind::Fsync | OpKind::Fdatasync => OpClass::Sync,
    }
}

fn class_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Read => "read",
        OpKind::Write => "write",
        OpKind::Fsync => "fsync",
        OpKind::Fdatasync => "fdatasync",
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
