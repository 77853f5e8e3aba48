//! The per-worker recorder and the `Snapshot` it ships once per interval.
//!
//! A worker records every completion into its own `Recorder` (no locks, no atomics, no allocation). At each
//! interval boundary it swaps in an empty recorder and sends the full one inside a `Snapshot`: the only thing
//! that crosses threads during a run. The coordinator merges snapshots and hands the emptied recorders back, so
//! histograms are allocated once per worker, not per interval.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::histogram::Histogram;

/// The classes of operation reported separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    Read,
    Write,
    /// fsync / fdatasync.
    Sync,
    // File-system operations of file-set phases (vdbench's names).
    Mkdir,
    Rmdir,
    Create,
    Delete,
    Open,
    Close,
    Getattr,
    Setattr,
    Access,
    Copy,
    Move,
}

/// Number of operation classes.
const CLASSES: usize = 14;

impl OpClass {
    pub const ALL: [OpClass; CLASSES] = [
        OpClass::Read,
        OpClass::Write,
        OpClass::Sync,
        OpClass::Mkdir,
        OpClass::Rmdir,
        OpClass::Create,
        OpClass::Delete,
        OpClass::Open,
        OpClass::Close,
        OpClass::Getattr,
        OpClass::Setattr,
        OpClass::Access,
        OpClass::Copy,
        OpClass::Move,
    ];

    /// The file-system classes, in vdbench's column order.
    pub const FILE_SYSTEM: [OpClass; 11] = [
        OpClass::Mkdir,
        OpClass::Rmdir,
        OpClass::Create,
        OpClass::Open,
        OpClass::Close,
        OpClass::Delete,
        OpClass::Getattr,
        OpClass::Setattr,
        OpClass::Access,
        OpClass::Copy,
        OpClass::Move,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpClass::Read => "read",
            OpClass::Write => "write",
            OpClass::Sync => "sync",
            OpClass::Mkdir => "mkdir",
            OpClass::Rmdir => "rmdir",
            OpClass::Create => "create",
            OpClass::Delete => "delete",
            OpClass::Open => "open",
            OpClass::Close => "close",
            OpClass::Getattr => "getattr",
            OpClass::Setattr => "setattr",
            OpClass::Access => "access",
            OpClass::Copy => "copy",
            OpClass::Move => "move",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Counters and latency distributions of one operation class.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// Completed operations (successful ones; failures are in `errors`).
    pub ops: u64,
    /// Bytes transferred by successful operations.
    pub bytes: u64,
    /// Operations that failed.
    pub errors: u64,
    /// Completion time minus submission time, ns.
    pub latency: Histogram,
    /// Completion time minus the time the operation was due (paced runs only): includes any wait caused by
    /// the storage falling behind the schedule, so coordinated omission cannot hide it. ns.
    pub due_latency: Option<Histogram>,
    /// Submission time minus due time (paced runs only): streamcap's own delay in issuing what was due, which
    /// must stay small for `due_latency` to describe the storage. ns.
    pub lag: Option<Histogram>,
    /// Submission time minus the time the I/O core took the operation into a slot (fio's slat): streamcap's own
    /// time before the request reached the kernel. I/O through the core only; empty for operations a schedule
    /// does itself (opens, creates, getattr).
    pub submit_latency: Histogram,
    /// Completion time minus the time the I/O core took the operation (fio's lat): `submit_latency` plus
    /// `latency`, per operation. I/O through the core only.
    pub total_latency: Histogram,
}

impl OpStats {
    fn new(paced: bool) -> OpStats {
        OpStats {
            ops: 0,
            bytes: 0,
            errors: 0,
            latency: Histogram::new(),
            due_latency: paced.then(Histogram::new),
            lag: paced.then(Histogram::new),
            submit_latency: Histogram::new(),
            total_latency: Histogram::new(),
        }
    }

    fn merge(&mut self, other: &OpStats) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.latency.merge(&other.latency);
        self.submit_latency.merge(&other.submit_latency);
        self.total_latency.merge(&other.total_latency);
        merge_optional(&mut self.due_latency, &other.due_latency);
        merge_optional(&mut self.lag, &other.lag);
    }

    fn reset(&mut self) {
        self.ops = 0;
        self.bytes = 0;
        self.errors = 0;
        self.latency.reset();
        self.submit_latency.reset();
        self.total_latency.reset();
        for h in [&mut self.due_latency, &mut self.lag].into_iter().flatten() {
            h.reset();
        }
    }
}

fn merge_optional(mine: &mut Option<Histogram>, theirs: &Option<Histogram>) {
    match (mine.as_mut(), theirs) {
        (Some(m), Some(t)) => m.merge(t),
        (None, Some(t)) => *mine = Some(t.clone()),
        _ => {}
    }
}

/// Everything one worker measured over some span of time.
#[derive(Debug, Clone)]
pub struct Recorder {
    pub(super) classes: [OpStats; CLASSES],
    /// How deep the queue was and how many requests each submission and each reap carried.
    pub depths: Depths,
}

/// fio's queue-depth distributions, counted the way fio counts them (stat.c, io_u.c): per operation queued, the
/// number in flight with it (buckets 1, 2–3, 4–7, 8–15, 16–31, 32–63, 64+); per submission and per reap, the
/// number of requests it carried (buckets 0, 1–4, 5–8, 9–16, 17–32, 33–64, 65+).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Depths {
    /// Operations queued, by the depth they were queued at.
    pub level: [u64; 7],
    /// Submissions to the kernel, by the number of requests in them.
    pub submit: [u64; 7],
    /// Reaps, by the number of completions found.
    pub complete: [u64; 7],
}

impl Depths {
    /// The bucket of a queue depth (`level`).
    #[inline]
    fn level_bucket(depth: usize) -> usize {
        (usize::BITS - depth.max(1).leading_zeros()).saturating_sub(1).min(6) as usize
    }

    /// The bucket of a batch size (`submit`, `complete`).
    #[inline]
    fn batch_bucket(n: usize) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            _ => ((usize::BITS - (n - 1).leading_zeros()) as usize - 1).min(6),
        }
    }

    #[inline]
    pub fn record_level(&mut self, depth: usize) {
        self.level[Depths::level_bucket(depth)] += 1;
    }

    #[inline]
    pub fn record_submit(&mut self, requests: usize) {
        self.submit[Depths::batch_bucket(requests)] += 1;
    }

    #[inline]
    pub fn record_complete(&mut self, completions: usize) {
        self.complete[Depths::batch_bucket(completions)] += 1;
    }

    pub fn merge(&mut self, other: &Depths) {
        for (mine, theirs) in [(&mut self.level, &other.level), (&mut self.submit, &other.submit)] {
            mine.iter_mut().zip(theirs).for_each(|(a, b)| *a += b);
        }
        self.complete.iter_mut().zip(&other.complete).for_each(|(a, b)| *a += b);
    }
}

impl Recorder {
    /// `paced`: also keep latency from the due time.
    pub fn new(paced: bool) -> Recorder {
        Recorder { classes: std::array::from_fn(|_| OpStats::new(paced)), depths: Depths::default() }
    }

    #[inline]
    pub fn record(&mut self, class: OpClass, bytes: u64, latency_ns: u64) {
        let stats = &mut self.classes[class.index()];
        stats.ops += 1;
        stats.bytes += bytes;
        stats.latency.record(latency_ns);
    }

    /// One raw I/O: `submit_ns` from taking it to handing it to the kernel, `complete_ns` from then to its
    /// completion (the latency every other figure uses).
    #[inline]
    pub fn record_io(&mut self, class: OpClass, bytes: u64, submit_ns: u64, complete_ns: u64) {
        let stats = &mut self.classes[class.index()];
        stats.ops += 1;
        stats.bytes += bytes;
        stats.latency.record(complete_ns);
        stats.submit_latency.record(submit_ns);
        stats.total_latency.record(submit_ns.saturating_add(complete_ns));
    }

    #[inline]
    pub fn record_due(&mut self, class: OpClass, latency_ns: u64) {
        if let Some(h) = &mut self.classes[class.index()].due_latency {
            h.record(latency_ns);
        }
    }

    /// Submission minus due time of a paced operation (see [`OpStats::lag`]).
    #[inline]
    pub fn record_lag(&mut self, class: OpClass, lag_ns: u64) {
        if let Some(h) = &mut self.classes[class.index()].lag {
            h.record(lag_ns);
        }
    }

    #[inline]
    pub fn record_error(&mut self, class: OpClass) {
        self.classes[class.index()].errors += 1;
    }

    pub fn stats(&self, class: OpClass) -> &OpStats {
        &self.classes[class.index()]
    }

    pub fn merge(&mut self, other: &Recorder) {
        for (mine, theirs) in self.classes.iter_mut().zip(other.classes.iter()) {
            mine.merge(theirs);
        }
        self.depths.merge(&other.depths);
    }

    pub fn reset(&mut self) {
        for stats in &mut self.classes {
            stats.reset();
        }
        self.depths = Depths::default();
    }

    /// Operations of all classes, successful and failed.
    pub fn total_ops(&self) -> u64 {
        self.classes.iter().map(|s| s.ops + s.errors).sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.classes.iter().map(|s| s.bytes).sum()
    }
}

/// One failed operation, with what a person needs to find it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    /// "read", "write" or "fsync".
    pub op: String,
    /// The file or device, as a path.
    pub path: String,
    /// Byte offset in the file or device.
    pub offset: u64,
    /// Bytes the operation asked for (0 for flushes and operations on a whole file).
    pub len: u64,
    /// The OS error number (errno); EIO for a short transfer, which has none of its own.
    pub errno: i32,
    /// The OS error text, e.g. "No space left on device", or "short transfer: N of M bytes".
    pub message: String,
    /// Seconds since the worker's measurement started (after its start delay and the ramp); 0 for an error
    /// during the ramp.
    pub at_s: f64,
}

/// One worker's measurements over one interval: the only thing that crosses threads during a run.
#[derive(Debug)]
pub struct Snapshot {
    /// The worker's number within its phase (0-based).
    pub worker: u32,
    /// Index of the interval this snapshot belongs to (0 = the first interval after the ramp).
    pub interval: u64,
    /// The worker's final snapshot of the phase.
    pub last: bool,
    /// Time from the start of measurement (after the ramp) to the end of this snapshot.
    pub elapsed: Duration,
    /// What the worker measured in the interval: per class, operations, bytes, errors and latency histograms
    /// (ns).
    pub recorder: Recorder,
    /// Errors that happened in this interval (the first 100 of the worker's phase are kept; all are counted).
    pub errors: Vec<ErrorRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_due_latency() {
        let mut a = Recorder::new(true);
        a.record(OpClass::Read, 4096, 100);
        a.record_due(OpClass::Read, 150);
        let mut b = Recorder::new(true);
        b.record(OpClass::Read, 4096, 300);
        b.record_error(OpClass::Write);
        a.merge(&b);
        assert_eq!(a.stats(OpClass::Read).ops, 2);
        assert_eq!(a.stats(OpClass::Read).bytes, 8192);
        assert_eq!(a.stats(OpClass::Write).errors, 1);
        assert_eq!(a.stats(OpClass::Read).due_latency.as_ref().unwrap().count(), 1);
        assert_eq!(a.total_ops(), 3);
        a.reset();
        assert_eq!(a.total_ops(), 0);
    }

    #[test]
    fn file_system_classes_are_counted_apart() {
        let mut r = Recorder::new(false);
        r.record(OpClass::Getattr, 0, 900);
        r.record(OpClass::Move, 0, 1200);
        assert_eq!(r.stats(OpClass::Getattr).ops, 1);
        assert_eq!(r.stats(OpClass::Read).ops, 0);
        assert_eq!(r.total_ops(), 2);
        assert_eq!(OpClass::ALL.iter().map(|c| c.index()).collect::<Vec<_>>(), (0..CLASSES).collect::<Vec<_>>());
    }

    #[test]
    fn raw_io_keeps_submission_and_total_latency_apart() {
        let mut r = Recorder::new(false);
        r.record_io(OpClass::Read, 4096, 300, 10_000);
        r.record_io(OpClass::Read, 4096, 100, 20_000);
        let s = r.stats(OpClass::Read);
        assert_eq!((s.ops, s.latency.min(), s.latency.max()), (2, 10_000, 20_000));
        assert_eq!((s.submit_latency.min(), s.submit_latency.max()), (100, 300));
        assert_eq!((s.total_latency.min(), s.total_latency.max()), (10_300, 20_100));
        let mut all = Recorder::new(false);
        all.merge(&r);
        assert_eq!(all.stats(OpClass::Read).total_latency.count(), 2);
    }

    #[test]
    fn depths_fall_in_fio_s_buckets() {
        let mut d = Depths::default();
        for depth in [1, 2, 3, 4, 7, 8, 16, 32, 63, 64, 500] {
            d.record_level(depth);
        }
        assert_eq!(d.level, [1, 2, 2, 1, 1, 2, 2]);
        for n in [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65] {
            d.record_submit(n);
        }
        assert_eq!(d.submit, [1, 2, 2, 2, 2, 2, 1]);
        let mut merged = Depths::default();
        merged.merge(&d);
        merged.record_complete(1);
        assert_eq!((merged.level, merged.complete[1]), (d.level, 1));
    }

    #[test]
    fn unpaced_recorders_keep_no_due_histogram() {
        let mut r = Recorder::new(false);
        r.record_due(OpClass::Read, 5);
        assert!(r.stats(OpClass::Read).due_latency.is_none());
    }
}
