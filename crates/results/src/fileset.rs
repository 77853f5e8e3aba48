//! The figures of a file-set phase, as vdbench's file-system report shows them: requested operations (rate and
//! response time), each file-system operation's rate and response time, read and write MB/s and the mean
//! transfer size, plus what the format step did.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::metrics::{DEFAULT_PERCENTILES, LatencySummary, OpClass, Recorder};

/// A file-set phase's operations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileOpsResult {
    /// vdbench's ReqstdOps: the operations the workloads asked for (transfers and their own metadata
    /// operation; not the opens and closes around transfers).
    pub requested: FileOpResult,
    /// Every operation class with at least one operation, in vdbench's column order (read and write first).
    pub ops: Vec<FileOpResult>,
    pub read_mbps: f64,
    pub write_mbps: f64,
    pub total_mbps: f64,
    /// Mean bytes per read or write.
    pub xfer_bytes: u64,
    /// Files the format step created or refilled.
    pub formatted_files: u64,
    /// Directories the format step created.
    pub formatted_dirs: u64,
    /// Time the format step took, seconds.
    pub format_s: f64,
    /// The most threads that worked on one file at once: 1 unless a workload shares files (vdbench
    /// `fileio=(random,shared)`), where it shows that they did. Absent when no file was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_threads_on_one_file: Option<u32>,
}

/// One operation class.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileOpResult {
    /// "read", "write", "mkdir", "rmdir", "create", "open", "close", "delete", "getattr", "setattr", "access",
    /// "copy", "move", or "requested".
    pub op: String,
    pub ops: u64,
    pub errors: u64,
    /// Operations per second.
    pub rate: f64,
    pub latency: LatencySummary,
}

/// One interval's rate and mean response time of an operation class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileOpPoint {
    pub op: String,
    pub rate: f64,
    pub mean_ns: f64,
}

/// Classes in vdbench's column order: reads and writes, then the file-system classes.
const ORDER: [OpClass; 13] = {
    let mut order = [OpClass::Read; 13];
    order[1] = OpClass::Write;
    let mut i = 0;
    while i < OpClass::FILE_SYSTEM.len() {
        order[i + 2] = OpClass::FILE_SYSTEM[i];
        i += 1;
    }
    order
};

/// `requested`: the classes that count as requested operations.
pub fn file_ops_result(
    totals: &Recorder,
    measured: Duration,
    requested: &[OpClass],
    format: (u64, u64, Duration),
) -> FileOpsResult {
    let seconds = measured.as_secs_f64();
    let per_sec = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    let mut all = crate::metrics::Histogram::new();
    let (mut ops, mut errors) = (0, 0);
    for &c in requested {
        let s = totals.stats(c);
        all.merge(&s.latency);
        ops += s.ops;
        errors += s.errors;
    }
    let one = |class: OpClass| {
        let s = totals.stats(class);
        FileOpResult {
            op: class.name().into(),
            ops: s.ops,
            errors: s.errors,
            rate: per_sec(s.ops as f64),
            latency: s.latency.summary(&DEFAULT_PERCENTILES),
        }
    };
    let (read, write) = (totals.stats(OpClass::Read), totals.stats(OpClass::Write));
    let transfers = read.ops + write.ops;
    FileOpsResult {
        requested: FileOpResult {
            op: "requested".into(),
            ops,
            errors,
            rate: per_sec(ops as f64),
            latency: all.summary(&DEFAULT_PERCENTILES),
        },
        ops: ORDER.iter().filter(|&&c| totals.stats(c).ops + totals.stats(c).errors > 0).map(|&c| one(c)).collect(),
        read_mbps: per_sec(read.bytes as f64) / 1e6,
        write_mbps: per_sec(write.bytes as f64) / 1e6,
        total_mbps: per_sec((read.bytes + write.bytes) as f64) / 1e6,
        xfer_bytes: (read.bytes + write.bytes).checked_div(transfers).unwrap_or(0),
        formatted_files: format.0,
        formatted_dirs: format.1,
        format_s: format.2.as_secs_f64(),
        most_threads_on_one_file: None,
    }
}

/// Per-class rates of one interval (only classes that had operations).
pub fn file_op_points(recorder: &Recorder, length: Duration) -> Vec<FileOpPoint> {
    let seconds = length.as_secs_f64().max(1e-9);
    ORDER
        .iter()
        .filter(|&&c| recorder.stats(c).ops > 0)
        .map(|&c| {
            let s = recorder.stats(c);
            FileOpPoint { op: c.name().into(), rate: s.ops as f64 / seconds, mean_ns: s.latency.mean() }
        })
        .collect()
}

/// Merges the next interval's points into `mine` (rates weighted by length, means by operations).
pub fn absorb_points(mine: &mut Vec<FileOpPoint>, next: &[FileOpPoint], my_s: f64, next_s: f64) {
    let total = (my_s + next_s).max(1e-9);
    for n in next {
        match mine.iter_mut().find(|m| m.op == n.op) {
            Some(m) => {
                let (a, b) = (m.rate * my_s, n.rate * next_s);
                if a + b > 0.0 {
                    m.mean_ns = (m.mean_ns * a + n.mean_ns * b) / (a + b);
                }
                m.rate = (a + b) / total;
            }
            None => mine.push(FileOpPoint { op: n.op.clone(), rate: n.rate * next_s / total, mean_ns: n.mean_ns }),
        }
    }
    for m in mine.iter_mut().filter(|m| !next.iter().any(|n| n.op == m.op)) {
        m.rate = m.rate * my_s / total;
    }
}
