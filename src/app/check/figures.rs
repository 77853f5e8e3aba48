//! The headline figures of a check, taken from the phases it ran (found by name): sequential MB/s, random-read
//! IOPS with p99 latency at each queue depth, and the small-file rates. The phases themselves stay in the
//! result with every detail; these are what the summary and the verdict lead with.

use super::profile::{FILE_PHASES, RAW_PHASES, SMALL_FILE};
use crate::results::{PhaseResult, RandomFigures, SequentialFigures, SmallFileFigures};

fn phase<'a>(phases: &'a [PhaseResult], name: &str) -> Option<&'a PhaseResult> {
    phases.iter().find(|p| p.name == name)
}

pub fn sequential(phases: &[PhaseResult]) -> Option<SequentialFigures> {
    let write = phase(phases, RAW_PHASES[0])?.write.as_ref()?.mbps;
    let read = phase(phases, RAW_PHASES[1]).and_then(|p| p.read.as_ref()).map_or(0.0, |r| r.mbps);
    Some(SequentialFigures { write_mbps: write, read_mbps: read })
}

/// The check's sequential read rate, decimal MB/s: the one figure behind every sequential bound it prints (the
/// cache table's sustained media and the verdict's ceiling). `None` before that phase ran.
pub fn sequential_read_mbps(phases: &[PhaseResult]) -> Option<f64> {
    phase(phases, RAW_PHASES[1]).and_then(|p| p.read.as_ref()).filter(|r| r.ops > 0).map(|r| r.mbps)
}

pub fn random_reads(phases: &[PhaseResult]) -> Vec<RandomFigures> {
    RAW_PHASES[2..]
        .iter()
        .filter_map(|name| phase(phases, name))
        .filter_map(|p| {
            let read = p.read.as_ref()?;
            // The requests in flight: a depth per thread (io_uring), or threads of depth 1 (sync).
            let queue_depth = p.iodepth * p.jobs.max(1);
            Some(RandomFigures { queue_depth, iops: read.iops, p99_ns: read.latency.at(99.0).unwrap_or(0) })
        })
        .collect()
}

/// `files`: how many files the tree holds; `direct`: they were opened with O_DIRECT.
pub fn small_files(phases: &[PhaseResult], files: u64, direct: bool) -> Option<SmallFileFigures> {
    let rate = |name: &str, op: &str| {
        phase(phases, name)
            .and_then(|p| p.file_ops.as_ref())
            .and_then(|f| f.ops.iter().find(|o| o.op == op))
            .map_or(0.0, |o| o.rate)
    };
    let create = phase(phases, FILE_PHASES[0])?;
    // The create phase is the format step: every file created and written once, timed as a whole.
    let created = create
        .file_ops
        .as_ref()
        .map_or(0.0, |f| if f.format_s > 0.0 { f.formatted_files as f64 / f.format_s } else { 0.0 });
    Some(SmallFileFigures {
        files,
        file_bytes: SMALL_FILE,
        create_per_s: created,
        stat_per_s: rate(FILE_PHASES[1], "getattr"),
        read_per_s: rate(FILE_PHASES[2], "read"),
        direct,
    })
}
