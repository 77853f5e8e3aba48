//! vdbench-style figures for file-set phases: the interval line (ReqstdOps rate/resp, CPU, read and write
//! rate/resp, MB/s read/write/total, transfer size, then rate/resp of each file-system operation) and the
//! summary table. Reads only `results` types, so a saved result renders the same.

use std::fmt::Write;

use comfy_table::{CellAlignment, Table};

use crate::results::{FileOpPoint, IntervalPoint, PhaseResult};
use crate::units::{format_latency_ns, format_mbps, format_rate};

/// File-system columns in vdbench's order.
const META: [&str; 8] = ["mkdir", "rmdir", "create", "open", "close", "delete", "getattr", "setattr"];

/// The two header lines of the interval listing.
pub fn interval_header() -> String {
    let mut top = format!(
        "{:>8} {:>15} {:>6} {:>15} {:>15} {:>20} {:>7}",
        "", "ReqstdOps", "cpu%", "read", "write", "MB/s read write tot", "xfer"
    );
    let mut sub = format!(
        "{:>8} {:>8} {:>6} {:>6} {:>8} {:>6} {:>8} {:>6} {:>6} {:>6} {:>6} {:>7}",
        "interval", "rate", "resp", "total", "rate", "resp", "rate", "resp", "read", "write", "total", "size"
    );
    for op in META {
        let _ = write!(top, " {op:>15}");
        let _ = write!(sub, " {:>8} {:>6}", "rate", "resp");
    }
    format!("{top}\n{sub}")
}

/// One interval line. `requested`: the operation names that make up ReqstdOps. Response times in ms.
pub fn interval_line(number: u64, point: &IntervalPoint, requested: &[&str]) -> String {
    let find = |op: &str| point.file_ops.iter().find(|p| p.op == op);
    let (mut rate, mut weighted) = (0.0, 0.0);
    for p in point.file_ops.iter().filter(|p| requested.contains(&p.op.as_str())) {
        rate += p.rate;
        weighted += p.rate * p.mean_ns;
    }
    let resp = if rate > 0.0 { weighted / rate } else { 0.0 };
    let pair = |p: Option<&FileOpPoint>| p.map_or((0.0, 0.0), |p| (p.rate, p.mean_ns));
    let (r, rr) = pair(find("read"));
    let (w, wr) = pair(find("write"));
    let (rm, wm) = (point.read.as_ref().map_or(0.0, |c| c.mbps), point.write.as_ref().map_or(0.0, |c| c.mbps));
    let bytes = point.read.as_ref().map_or(0, |c| c.bytes) + point.write.as_ref().map_or(0, |c| c.bytes);
    let ops = point.read.as_ref().map_or(0, |c| c.ops) + point.write.as_ref().map_or(0, |c| c.ops);
    let xfer = bytes.checked_div(ops).unwrap_or(0);
    let ms = |ns: f64| ns / 1e6;
    let mut line = format!(
        "{number:>8} {rate:>8.1} {:>6.3} {:>6.1} {r:>8.1} {:>6.3} {w:>8.1} {:>6.3} {rm:>6.2} {wm:>6.2} {:>6.2} {xfer:>7}",
        ms(resp),
        point.cpu_pct,
        ms(rr),
        ms(wr),
        rm + wm
    );
    for op in META {
        let (rate, mean) = pair(find(op));
        let _ = write!(line, " {rate:>8.1} {:>6.3}", ms(mean));
    }
    line
}

/// The summary of every file-set phase: one row per operation class (requested operations first), then a line
/// with MB/s, transfer size, CPU and what the format step did. `None` when no phase is a file-set phase.
pub fn summary(phases: &[PhaseResult]) -> Option<String> {
    let with: Vec<&PhaseResult> = phases.iter().filter(|p| p.file_ops.is_some()).collect();
    if with.is_empty() {
        return None;
    }
    let mut table = Table::new();
    table.load_style(super::terminal::STYLE);
    table.set_header(["phase", "operation", "rate/s", "resp mean", "p50", "p99", "max", "errors"]);
    let mut notes = Vec::new();
    for phase in with {
        let f = phase.file_ops.as_ref().expect("filtered");
        for (i, op) in std::iter::once(&f.requested).chain(&f.ops).enumerate() {
            let lat = |p: f64| op.latency.at(p).map_or("—".into(), |ns| format_latency_ns(ns as f64));
            table.add_row(vec![
                if i == 0 { phase.name.clone() } else { String::new() },
                if i == 0 { "ReqstdOps".into() } else { op.op.clone() },
                format_rate(op.rate),
                format_latency_ns(op.latency.mean_ns),
                lat(50.0),
                lat(99.0),
                format_latency_ns(op.latency.max_ns as f64),
                op.errors.to_string(),
            ]);
        }
        notes.push(format!(
            "{}: MB/s read {} write {} total {} · xfersize {} B · CPU {:.0}% of a core (system: {:.0}% user, {:.0}% \
             sys) · format: {} files, {} directories in {:.1} s",
            phase.name,
            format_mbps(f.read_mbps),
            format_mbps(f.write_mbps),
            format_mbps(f.total_mbps),
            f.xfer_bytes,
            phase.cpu.process_pct,
            phase.cpu.system.user_pct,
            phase.cpu.system.system_pct,
            f.formatted_files,
            f.formatted_dirs,
            f.format_s
        ));
    }
    for column in 2..=7 {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    Some(format!("file-set operations (vdbench style):\n{table}\n{}", notes.join("\n")))
}
