//! The one I/O core: the only loop that hands reads, writes and flushes to an engine.
//!
//! Every kind of work streamcap does — raw phases, file-set data transfers, stream viewers, ingest writers — is a
//! [`Schedule`]: something that says which I/O comes next and when it is due, and hears back when it completed.
//! The core owns everything the schedules share: a fixed in-flight table sized to the engine's real queue depth
//! (so it never offers the engine more than it can hold, and reaps before it asks for more), the submission
//! and completion timestamps, the ramp, the deadline and the I/O budget, interval snapshots, error records, and
//! the waits between due times. It is generic over the engine and the schedule, so nothing in it is a dynamic
//! call per I/O, and it allocates nothing per I/O.
//!
//! Timing rules: latency is completion minus submission; when a schedule gives a due time (pacing, a viewer's
//! next chunk), also completion minus due (no coordinated omission) and submission minus due (streamcap's own
//! lag, which must stay small for the other figure to mean anything). Submission latency (fio's slat) is
//! submission minus the moment the core took the I/O into its slot, and total latency (fio's lat) the two
//! together. The submission time is read right before each group of requests reaches the kernel, so no latency
//! includes streamcap's own work on earlier groups; completions reaped in one batch share one clock read (they
//! were all found at that moment). After the ramp the core also counts fio's queue-depth distributions: the
//! depth each I/O joins, and how many requests each submission and each reap carried.
//!
//! It must not know what the work means: no job, no files by name beyond what a schedule tells it for error
//! messages, no player model, no dialect. What exists for compatibility is a schedule wrapping the work's
//! schedule: fio's latency_target search (`depth_search::DepthSearched`) and vdbench's per-direction data budgets
//! (`direction_budget::DirectionBudget`). They see what they need through the schedule interface: `Ctx` (the
//! time, the I/O in flight, whether the ramp is over) and one generic hook, `Schedule::measured`, which hands
//! each measured completion's total latency to a schedule that wants it (a no-op, compiled away, for the rest).
//! It is also the only data loop: the `--verify` read-back (`verify_read::ReadBack`) and the preparation passes
//! (`prepare::PassSchedule`) run on it as every phase does.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::clock::wait_until;
pub use super::control::{CoreConfig, WorkerEnd};
pub use super::schedule::{Ctx, Io, Next, Role, Schedule};
pub use super::tally::Failure;
use super::tally::{Tally, class_of, nanos, op_name};
use crate::engine::{Completion, Engine, EngineError, OpKind, Request, Wait};

#[derive(Clone, Copy)]
struct InFlight {
    io: Io,
    /// When the core took the I/O into its slot (fio's start_time): where `slat` and `lat` start.
    taken: Instant,
    submitted: Instant,
    /// Issued after the ramp: its bytes count toward the budget, and its completion is recorded (with
    /// `CoreConfig::window`, so is that of one issued during the ramp that completes after it).
    /// Decided once, when the I/O is queued, so that budget and record always agree.
    measured: bool,
}

/// The loop's state: the in-flight table and what it has counted.
struct Core {
    table: Vec<InFlight>,
    /// Free slots; the most recently freed is reused first, so unpinned buffers stay few and warm.
    free: Vec<u32>,
    batch: Vec<Request>,
    done: Vec<Completion>,
    tally: Tally,
    measure_start: Instant,
    deadline: Option<Instant>,
    next_boundary: Instant,
    in_ramp: bool,
    issued: u64,
    issued_ops: u64,
    /// When the schedule said nothing was due before.
    wake: Option<Instant>,
    schedule_done: bool,
    failure: Option<String>,
    /// A measured read or write completed: the runtime may end (see `CoreConfig::overtime`).
    measured_any: bool,
    /// The deadline passed before anything measured completed, and the worker went on.
    overran: bool,
}

/// Runs `schedule` on `engine` until it is done, the runtime or budget is spent, the phase is stopped, or the
/// engine fails. The slot table is sized from the engine's queue depth, never from what the caller asked.
pub fn drive<E: Engine, S: Schedule>(cfg: CoreConfig<'_>, engine: &mut E, schedule: &mut S) -> WorkerEnd {
    let depth = engine.caps().queue_depth.max(1) as usize;
    let measure_start = cfg.origin + cfg.ramp;
    let blank = Io::transfer(OpKind::Read, 0, 0, 0, None);
    let mut core = Core {
        table: vec![InFlight { io: blank, taken: cfg.origin, submitted: cfg.origin, measured: false }; depth],
        free: (0..depth as u32).rev().collect(),
        batch: Vec::with_capacity(depth),
        done: Vec::with_capacity(depth),
        tally: Tally::new(cfg.id, cfg.paced, measure_start),
        measure_start,
        deadline: cfg.runtime.map(|r| measure_start + r),
        next_boundary: measure_start + cfg.interval,
        in_ramp: !cfg.ramp.is_zero(),
        issued: 0,
        issued_ops: 0,
        wake: None,
        schedule_done: false,
        failure: None,
        measured_any: false,
        overran: false,
    };
    while Instant::now() < cfg.origin && !cfg.control.stop_requested() {
        wait_until(cfg.origin, Instant::now());
    }
    core.run(&cfg, engine, schedule);
    let end = Instant::now();
    schedule.finish(end.saturating_duration_since(cfg.origin));
    core.tally.ship(&cfg, end, true);
    let overtime = core.deadline.filter(|_| core.overran).map(|d| end.saturating_duration_since(d));
    WorkerEnd { issued: core.issued, issued_ops: core.issued_ops, failure: core.failure, overtime }
}

impl Core {
    fn run<E: Engine, S: Schedule>(&mut self, cfg: &CoreConfig<'_>, engine: &mut E, schedule: &mut S) {
        let mut now = Instant::now();
        loop {
            let stopping = self.should_stop(cfg, now);
            // Flushes owed for writes already issued still go out when the work ends by its runtime or budget;
            // Ctrl-C or an error stops at once.
            let graceful = stopping && !cfg.control.stop_requested() && self.failure.is_none();
            self.fill(cfg, engine, schedule, now, stopping, graceful);
            if !self.batch.is_empty()
                && let Err(e) = self.hand_over(cfg, engine)
            {
                self.engine_failed(cfg, e);
                return;
            }
            if engine.in_flight() == 0 {
                if stopping || self.schedule_done {
                    return;
                }
                if let Some(wake) = self.wake_time() {
                    wait_until(wake, now);
                }
                now = Instant::now();
                self.tick(cfg, now);
                continue;
            }
            let wait = match self.wake_time() {
                Some(wake) => Wait::AtMost(wake.saturating_duration_since(now)),
                None => Wait::Forever,
            };
            if let Err(e) = engine.reap(1, wait, &mut self.done) {
                self.engine_failed(cfg, e);
                return;
            }
            if !self.in_ramp {
                self.tally.depths().record_complete(self.done.len());
            }
            now = Instant::now();
            // Intervals that ended while we waited are shipped first: these completions happened after them.
            self.tick(cfg, now);
            self.account(cfg, engine, schedule, now);
        }
    }

    fn should_stop(&mut self, cfg: &CoreConfig<'_>, now: Instant) -> bool {
        cfg.control.stop_requested() || self.failure.is_some() || self.runtime_over(cfg, now) || self.budget_spent(cfg)
    }

    /// The deadline has passed — and, for a worker allowed overtime, something measured has completed or the
    /// overtime is spent too. A window in which a slow device (a host disk busy with others' writeback beneath a
    /// loop device) completed nothing would report zero; the worker goes on until its first measured completion
    /// instead, and says how much longer it took (`WorkerEnd::overtime`).
    #[inline]
    fn runtime_over(&mut self, cfg: &CoreConfig<'_>, now: Instant) -> bool {
        let Some(deadline) = self.deadline.filter(|&d| now >= d) else { return false };
        if self.measured_any || now >= deadline + cfg.overtime {
            return true;
        }
        self.overran = true;
        false
    }

    #[inline]
    fn budget_spent(&self, cfg: &CoreConfig<'_>) -> bool {
        cfg.byte_budget.is_some_and(|b| self.issued >= b) || cfg.op_budget.is_some_and(|b| self.issued_ops >= b)
    }

    /// When the loop must wake even if nothing completes: the schedule's next due time, and the next interval
    /// boundary, so that a stalled device shows up as empty intervals at the right time instead of as late
    /// completions filed under an earlier interval.
    fn wake_time(&self) -> Option<Instant> {
        let boundary = self.deadline.is_none_or(|d| self.next_boundary < d).then_some(self.next_boundary);
        match (self.wake, boundary) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Ends the ramp and ships a snapshot for every interval boundary that has passed (empty ones too).
    fn tick(&mut self, cfg: &CoreConfig<'_>, now: Instant) {
        if self.in_ramp {
            if now < self.measure_start {
                return;
            }
            // Nothing to discard: completions during the ramp are never recorded.
            self.in_ramp = false;
        }
        // A boundary at or after the deadline is not shipped separately: the drain of in-flight I/O after the
        // deadline belongs to the last full interval, not to an interval of a few microseconds.
        while now >= self.next_boundary && self.deadline.is_none_or(|d| self.next_boundary < d) {
            let boundary = self.next_boundary;
            self.tally.ship(cfg, boundary, false);
            self.next_boundary += cfg.interval;
        }
    }

    /// Asks the schedule for I/O while a slot is free; when stopping gracefully, only for owed flushes.
    fn fill<E: Engine, S: Schedule>(
        &mut self,
        cfg: &CoreConfig<'_>,
        engine: &mut E,
        schedule: &mut S,
        now: Instant,
        stopping: bool,
        graceful: bool,
    ) {
        self.wake = None;
        let mut refused = 0;
        while let Some(&slot) = self.free.last() {
            let next = if stopping {
                match schedule.owed_flush().filter(|_| graceful) {
                    Some(io) => Next::Io(io),
                    None => return,
                }
            } else {
                let mut ctx = Ctx {
                    now: now.saturating_duration_since(cfg.origin),
                    in_flight: engine.in_flight() + self.batch.len(),
                    measuring: !self.in_ramp,
                    files: engine.file_table(),
                    origin: cfg.origin,
                    tally: &mut self.tally,
                    control: cfg.control,
                    continue_on_error: cfg.continue_on_error,
                };
                schedule.next(&mut ctx)
            };
            let io = match next {
                Next::Io(io) => io,
                Next::At(at) => {
                    self.wake = Some(cfg.origin + at);
                    return;
                }
                Next::AfterCompletion => return,
                Next::Done => {
                    self.schedule_done = true;
                    return;
                }
            };
            let buf = engine.buffer_mut(slot);
            let len = (io.len as usize).min(buf.len());
            if !schedule.prepare(&io, &mut buf[..len]) {
                // Refused (its blocks are in flight): ask again, but not more than a queue's worth of times.
                refused += 1;
                if refused > self.table.len() {
                    return;
                }
                continue;
            }
            self.queue(engine, slot, io, now);
            if !stopping && self.budget_spent(cfg) {
                return;
            }
        }
    }

    /// Takes `io` into `slot` (the free slot on top of the stack) and adds it to the batch.
    #[inline]
    fn queue<E: Engine>(&mut self, engine: &E, slot: u32, io: Io, now: Instant) {
        self.free.pop();
        let measured = !self.in_ramp;
        self.table[slot as usize] = InFlight { io, taken: now, submitted: now, measured };
        self.batch.push(Request { slot, kind: io.kind, file: io.file, offset: io.offset, len: io.len, prio: io.prio });
        if measured && io.role != Role::Check && matches!(io.kind, OpKind::Read | OpKind::Write) {
            self.issued += u64::from(io.len);
            self.issued_ops += 1;
            // fio's iodepth_level: the queue depth this I/O joins, itself included.
            self.tally.depths().record_level(engine.in_flight() + self.batch.len());
        }
    }

    /// Hands the batch to the engine in groups of `batch`, stamping each group's submission time right before it
    /// goes. The last group is only queued: the `reap` that follows passes it to the kernel and waits, in one
    /// system call. Requests the engine cannot take yet stay in the batch for the next round.
    fn hand_over<E: Engine>(&mut self, cfg: &CoreConfig<'_>, engine: &mut E) -> Result<(), EngineError> {
        let group = cfg.batch.max(1) as usize;
        let mut sent = 0;
        while sent < self.batch.len() {
            let end = (sent + group).min(self.batch.len());
            let stamp = Instant::now();
            for request in &self.batch[sent..end] {
                self.table[request.slot as usize].submitted = stamp;
            }
            let chunk = &self.batch[sent..end];
            let accepted = if end == self.batch.len() { engine.queue(chunk)? } else { engine.submit(chunk)? };
            if !self.in_ramp {
                self.tally.depths().record_submit(accepted);
            }
            sent += accepted;
            if accepted < chunk.len() {
                break;
            }
        }
        self.batch.drain(..sent);
        Ok(())
    }

    fn account<E: Engine, S: Schedule>(
        &mut self,
        cfg: &CoreConfig<'_>,
        engine: &mut E,
        schedule: &mut S,
        now: Instant,
    ) {
        let since_origin = now.saturating_duration_since(cfg.origin);
        let mut done = std::mem::take(&mut self.done);
        for completion in done.drain(..) {
            let entry = self.table[completion.slot as usize];
            self.free.push(completion.slot);
            let io = entry.io;
            let transfer = matches!(io.kind, OpKind::Read | OpKind::Write);
            let short = matches!(completion.result, Ok(n) if n != io.len && transfer && io.role != Role::UntilEof);
            // A short transfer has no errno of its own; it is reported as EIO with what happened in words (or
            // EFBIG: a write cut short at the file size limit). A read that may meet the end of its file is
            // not short: the schedule judges what it read.
            let result = if short { Err(short_errno(&io, completion.result)) } else { completion.result };
            let buf = engine.buffer_mut(completion.slot);
            let len = (io.len as usize).min(buf.len());
            let counts = schedule.completed(&io, result, since_origin, &buf[..len]);
            // What completes during the ramp is not measured. Of what completes after it, a worker bounded by
            // bytes or operations counts only the I/O issued after the ramp (its budget, exactly); one bounded by
            // time alone counts every completion in its window, whenever issued (`CoreConfig::window`). Errors
            // always count.
            let in_window = cfg.window && !self.in_ramp;
            if !(entry.measured || in_window) && completion.result.is_ok() {
                continue;
            }
            let class = class_of(io.kind);
            match completion.result {
                Ok(n) if !short => {
                    let latency = nanos(now.saturating_duration_since(entry.submitted));
                    let due = io.due.map(|d| cfg.origin + d);
                    let late = due.filter(|_| counts).map(|d| nanos(now.saturating_duration_since(d)));
                    let lag = due.map(|d| nanos(entry.submitted.saturating_duration_since(d)));
                    let submit = nanos(entry.submitted.saturating_duration_since(entry.taken));
                    schedule.measured(&io, submit.saturating_add(latency), n);
                    self.tally.record_io(class, u64::from(n), submit, latency, late, lag);
                    self.measured_any = true;
                }
                Ok(n) => {
                    let message = format!("short transfer: {n} of {} bytes", io.len);
                    self.io_failed(cfg, schedule, &io, short_errno(&io, completion.result), message, now);
                }
                Err(errno) => {
                    let message = engine
                        .error_detail(completion.slot)
                        .unwrap_or_else(|| std::io::Error::from_raw_os_error(errno).to_string());
                    self.io_failed(cfg, schedule, &io, errno, message, now);
                }
            }
        }
        self.done = done;
    }

    #[cold]
    fn io_failed<S: Schedule>(
        &mut self,
        cfg: &CoreConfig<'_>,
        schedule: &S,
        io: &Io,
        errno: i32,
        message: String,
        now: Instant,
    ) {
        let failure = Failure {
            class: class_of(io.kind),
            op: op_name(io.kind),
            path: schedule.path(io.file),
            offset: io.offset,
            len: u64::from(io.len),
            errno,
            message,
        };
        self.tally.error(failure, now);
        if !cfg.continue_on_error {
            cfg.control.abort.store(true, Ordering::Relaxed);
        }
    }

    fn engine_failed(&mut self, cfg: &CoreConfig<'_>, error: EngineError) {
        self.failure = Some(error.to_string());
        cfg.control.abort.store(true, Ordering::Relaxed);
    }
}

/// The errno of a short transfer: EFBIG when a write stopped at the file size limit (`ulimit -f`: the kernel
/// writes up to the limit and fails only the next write), EIO otherwise.
#[cold]
fn short_errno(io: &Io, result: Result<u32, i32>) -> i32 {
    let end = io.offset.saturating_add(u64::from(result.unwrap_or(0)));
    let limit = rustix::process::getrlimit(rustix::process::Resource::Fsize).current;
    match limit {
        Some(limit) if io.kind == OpKind::Write && end >= limit => libc::EFBIG,
        _ => libc::EIO,
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
pub(super) mod tests;
