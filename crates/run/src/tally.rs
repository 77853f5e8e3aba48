//! What one worker counts: its current interval's `Recorder`, the error records it keeps, and the shipping of
//! a `Snapshot` to the phase coordinator at each interval boundary. Shared by the core loop and by schedules
//! that do work of their own between transfers (a file set's opens and creates).
//!
//! Nothing is allocated per operation: recorders are swapped at interval boundaries and come back emptied.

use std::path::Path;
use std::time::{Duration, Instant};

use super::control::{CoreConfig, WorkerMsg};
use crate::engine::OpKind;
use crate::metrics::{Depths, ErrorRecord, OpClass, Recorder, Snapshot};
use crate::plan::defaults;

/// One failed operation, as the worker saw it.
pub struct Failure<'a> {
    pub class: OpClass,
    /// The operation's name as a person reads it ("read", "fsync", "open").
    pub op: &'static str,
    pub path: &'a Path,
    /// Byte offset in the file (0 for operations on a whole file).
    pub offset: u64,
    /// Bytes asked for.
    pub len: u64,
    /// The OS error number; EIO for a short transfer, which has none.
    pub errno: i32,
    pub message: String,
}

pub struct Tally {
    worker: u32,
    paced: bool,
    measure_start: Instant,
    recorder: Recorder,
    errors: Vec<ErrorRecord>,
    errors_kept: usize,
    interval_index: u64,
}

impl Tally {
    pub fn new(worker: u32, paced: bool, measure_start: Instant) -> Tally {
        Tally {
            worker,
            paced,
            measure_start,
            recorder: Recorder::new(paced),
            errors: Vec::new(),
            errors_kept: 0,
            interval_index: 0,
        }
    }

    /// A completed operation: its latency from submission, and from its due time and its lag when paced.
    #[inline]
    pub fn record(&mut self, class: OpClass, bytes: u64, latency_ns: u64, late_ns: Option<u64>, lag_ns: Option<u64>) {
        self.recorder.record(class, bytes, latency_ns);
        if let Some(late) = late_ns {
            self.recorder.record_due(class, late);
        }
        if let Some(lag) = lag_ns {
            self.recorder.record_lag(class, lag);
        }
    }

    /// An I/O through the core: `submit_ns` from taking it into a slot to handing it to the kernel (fio's
    /// slat), `latency_ns` from then to its completion, and from its due time and its lag when paced.
    #[inline]
    pub fn record_io(
        &mut self,
        class: OpClass,
        bytes: u64,
        submit_ns: u64,
        latency_ns: u64,
        late_ns: Option<u64>,
        lag_ns: Option<u64>,
    ) {
        self.recorder.record_io(class, bytes, submit_ns, latency_ns);
        if let Some(late) = late_ns {
            self.recorder.record_due(class, late);
        }
        if let Some(lag) = lag_ns {
            self.recorder.record_lag(class, lag);
        }
    }

    /// The current interval's queue-depth distributions.
    #[inline]
    pub fn depths(&mut self) -> &mut Depths {
        &mut self.recorder.depths
    }

    /// An operation a schedule did itself, timed from `started` to `ended`; not counted during the ramp.
    pub fn record_timed(&mut self, class: OpClass, bytes: u64, started: Instant, ended: Instant, due: Option<Instant>) {
        if ended < self.measure_start {
            return;
        }
        let latency = ended.saturating_duration_since(started);
        let late = due.map(|d| nanos(ended.saturating_duration_since(d)));
        let lag = due.map(|d| nanos(started.saturating_duration_since(d)));
        self.record(class, bytes, nanos(latency), late, lag);
    }

    /// A failed operation: counted always, and kept in full for the first few of the phase.
    #[cold]
    pub fn error(&mut self, failure: Failure<'_>, at: Instant) {
        self.recorder.record_error(failure.class);
        if self.errors_kept < defaults::ERRORS_KEPT {
            self.errors_kept += 1;
            self.errors.push(ErrorRecord {
                op: failure.op.to_string(),
                path: failure.path.display().to_string(),
                offset: failure.offset,
                len: failure.len,
                errno: failure.errno,
                // A process limit (ulimit -f, ulimit -v) gets its figure and what to do beside the OS's words.
                message: match crate::limits::errno_hint(failure.errno) {
                    Some(hint) => format!("{}; {hint}", failure.message),
                    None => failure.message,
                },
                at_s: at.saturating_duration_since(self.measure_start).as_secs_f64(),
            });
        }
    }

    /// Sends the current recorder as the snapshot of the current interval and takes a fresh one.
    pub fn ship(&mut self, cfg: &CoreConfig<'_>, at: Instant, last: bool) {
        let fresh = cfg.spares.try_recv().unwrap_or_else(|_| Recorder::new(self.paced));
        let recorder = std::mem::replace(&mut self.recorder, fresh);
        let snapshot = Snapshot {
            worker: self.worker,
            interval: self.interval_index,
            last,
            elapsed: at.saturating_duration_since(self.measure_start),
            recorder,
            errors: std::mem::take(&mut self.errors),
        };
        self.interval_index += 1;
        // The coordinator outlives every worker; a failed send means it is gone and nobody is listening.
        let _ = cfg.tx.send(WorkerMsg::Snapshot(Box::new(snapshot)));
    }
}

/// The class a kind of operation is counted under.
#[inline]
pub fn class_of(kind: OpKind) -> OpClass {
    match kind {
        OpKind::Read => OpClass::Read,
        OpKind::Write => OpClass::Write,
        OpKind::Fsync | OpKind::Fdatasync => OpClass::Sync,
    }
}

/// The operation's name in error records.
#[inline]
pub fn op_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Read => "read",
        OpKind::Write => "write",
        OpKind::Fsync => "fsync",
        OpKind::Fdatasync => "fdatasync",
    }
}

/// Nanoseconds, saturating (a Duration past 584 years does not fit a u64).
#[inline]
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
