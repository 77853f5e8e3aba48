//! fio's log files from a phase's interval series, for tools that plot fio logs: `PREFIX_bw.N.log` (KiB/s),
//! `PREFIX_iops.N.log` (operations per second), `PREFIX_lat.N.log` and `PREFIX_clat.N.log` (mean latency in ns)
//! — what fio writes for write_bw_log, write_iops_log and write_lat_log with log_avg_msec, one line per interval:
//! `time (ms), value, direction (0 read, 1 write), block size, offset`. And `PREFIX_clat_hist.N.log` for
//! write_hist_log: `time (ms), direction, block size, bin 0, …, bin 1855`, each line the latencies completed
//! since the line before in fio 3's nanosecond bins (`crate::metrics::fio_bin_of`), summed 2^log_hist_coarseness
//! at a time; fio-histo-log-pctiles.py and fiologparser_hist.py read it.
//!
//! Differences from fio, on purpose: values are averages over streamcap's reporting interval (set by
//! log_avg_msec), block size and offset are 0 (as in fio's averaged logs), and there is no `_slat` log because
//! streamcap's latency is measured from submission (`_lat` and `_clat` hold the same values, as in fio-json).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::metrics::{ClassPoint, FIO_HIST_BINS, add_fio_bins};
use crate::results::PhaseResult;

/// Which logs to write, by file-name prefix.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogPrefixes<'a> {
    pub bw: Option<&'a str>,
    pub iops: Option<&'a str>,
    pub lat: Option<&'a str>,
    pub hist: Option<HistLog<'a>>,
}

/// The histogram log: its prefix, how long a line covers at least (`None`: each interval), and fio's
/// log_hist_coarseness (bins summed 2^coarseness at a time).
#[derive(Debug, Clone, Copy)]
pub struct HistLog<'a> {
    pub prefix: &'a str,
    pub every: Option<Duration>,
    pub coarseness: u8,
}

impl<'a> LogPrefixes<'a> {
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.iops.is_some() || self.lat.is_some() || self.hist.is_some()
    }
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
    if let Some(h) = prefixes.hist {
        wanted.push((h.prefix, "clat_hist"));
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
        if let (Some(hist), "clat_hist") = (prefixes.hist, kind) {
            crate::outfile::write(&path, &hist_lines(phase, hist))?;
            written.push(path);
            continue;
        }
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

/// The histogram log's lines: the phase's intervals gathered until they cover `hist.every`, each direction's
/// bins summed over them, one line per direction that did I/O in them.
fn hist_lines(phase: &PhaseResult, hist: HistLog<'_>) -> Vec<u8> {
    let every = hist.every.map_or(0.0, |d| d.as_secs_f64());
    let mut out = Vec::new();
    let mut window: [Option<Vec<(u16, u64)>>; 2] = [None, None];
    let mut covered = 0.0;
    for point in &phase.intervals {
        for (slot, class) in window.iter_mut().zip([&point.read, &point.write]) {
            if let Some(bins) = class.as_ref().map(|c| c.fio_hist.as_deref().unwrap_or_default()) {
                add_fio_bins(slot.get_or_insert_with(Vec::new), bins);
            }
        }
        covered += point.length_s;
        // A millisecond short still counts: interval lengths are measured, not exact.
        if covered + 1e-3 >= every {
            let at_ms = ((point.start_s + point.length_s) * 1000.0).round() as u64;
            for (direction, bins) in window.iter_mut().enumerate() {
                if let Some(bins) = bins.take() {
                    hist_line(&mut out, at_ms, direction, &bins, hist.coarseness);
                }
            }
            covered = 0.0;
        }
    }
    out
}

/// One line: time, direction, block size (0, as in the averaged logs), and every bin, dense.
fn hist_line(out: &mut Vec<u8>, at_ms: u64, direction: usize, bins: &[(u16, u64)], coarseness: u8) {
    let mut dense = vec![0u64; FIO_HIST_BINS >> coarseness];
    for &(bin, count) in bins {
        dense[usize::from(bin) >> coarseness] += count;
    }
    let _ = write!(out, "{at_ms}, {direction}, 0");
    for count in dense {
        let _ = write!(out, ", {count}");
    }
    out.push(b'\n');
}
