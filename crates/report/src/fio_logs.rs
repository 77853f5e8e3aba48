//! fio's log files from a phase's interval series, for tools that plot fio logs: `PREFIX_bw.N.log` (KiB/s),
//! `PREFIX_iops.N.log` (operations per second), `PREFIX_lat.N.log` and `PREFIX_clat.N.log` (mean latency in ns)
//! — what fio writes for write_bw_log, write_iops_log and write_lat_log with log_avg_msec, one line per interval:
//! `time (ms), value, direction (0 read, 1 write), block size, offset`.
//!
//! Differences from fio, on purpose: values are averages over streamcap's reporting interval (set by
//! log_avg_msec), block size and offset are 0 (as in fio's averaged logs), and there is no `_slat` log because
//! streamcap's latency is measured from submission (`_lat` and `_clat` hold the same values, as in fio-json).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::metrics::ClassPoint;
use crate::results::PhaseResult;

/// Which logs to write, by file-name prefix.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogPrefixes<'a> {
    pub bw: Option<&'a str>,
    pub iops: Option<&'a str>,
    pub lat: Option<&'a str>,
}

/// The log files `prefixes` ask for, numbered `job`, in `dir`: (kind, path), e.g. ("bw", `DIR/PREFIX_bw.1.log`).
pub fn fio_log_paths(dir: &Path, job: usize, prefixes: LogPrefixes<'_>) -> Vec<(&'static str, PathBuf)> {
    let mut wanted: Vec<(&str, &'static str)> = Vec::new();
    if let Some(p) = prefixes.bw {
        wanted.push((p, "bw"));
    }
    if let Some(p) = prefixes.iops {
        wanted.push((p, "iops"));
    }
    if let Some(p) = prefixes.lat {
        wanted.extend([(p, "lat"), (p, "clat")]);
    }
    wanted.into_iter().map(|(prefix, kind)| (kind, dir.join(format!("{prefix}_{kind}.{job}.log")))).collect()
}

/// Writes the asked-for logs of `phase` into `dir` (fio writes them in its working directory), numbered `job`
/// as fio numbers its jobs from 1, each under the output-file rule (`crate::outfile`). Returns the files written.
pub fn write_fio_logs(
    dir: &Path,
    phase: &PhaseResult,
    job: usize,
    prefixes: LogPrefixes<'_>,
) -> Result<Vec<PathBuf>, crate::outfile::OutFileError> {
    let mut written = Vec::new();
    for (kind, path) in fio_log_paths(dir, job, prefixes) {
        let value: fn(&ClassPoint, f64) -> f64 = match kind {
            "bw" => |c, secs| c.bytes as f64 / secs / 1024.0,
            "iops" => |c, secs| c.ops as f64 / secs,
            _ => |c, _| c.lat_mean_ns,
        };
        let mut out = Vec::new();
        for point in &phase.intervals {
            let secs = point.length_s.max(1e-9);
            let at_ms = ((point.start_s + point.length_s) * 1000.0).round() as u64;
            for (direction, class) in [(0, &point.read), (1, &point.write)] {
                if let Some(c) = class {
                    let _ = writeln!(out, "{at_ms}, {}, {direction}, 0, 0", value(c, secs).round() as u64);
                }
            }
        }
        crate::outfile::write(&path, &out)?;
        written.push(path);
    }
    Ok(written)
}
