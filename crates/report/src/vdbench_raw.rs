//! vdbench's interval lines for raw (sd/wd/rd) workloads, so that people who read vdbench output every day find
//! their columns: i/o rate, MB/sec (vdbench's 1024² megabytes), bytes per i/o, read percentage, response times
//! in milliseconds (all, read, write, max), queue depth and CPU. An `avg` line closes each phase, as vdbench's
//! `avg_2-N` line does (streamcap's warm-up is already excluded, so the average covers every measured interval).
//!
//! Two vdbench columns are not printed: the response-time standard deviation per interval (streamcap keeps a
//! histogram per interval, and the phase's standard deviation is in the JSON) and system-only CPU; `cpu%` here
//! is streamcap's own CPU use in percent of one core.

use crate::results::{IntervalPoint, OpResult, PhaseResult};

/// The two header lines.
pub fn vdbench_raw_header() -> String {
    format!(
        "{:>12} {:>8} {:>10} {:>8} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}\n{:>12} {:>8} {:>10} {:>8} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}",
        "",
        "interval",
        "i/o",
        "MB/sec",
        "bytes",
        "read",
        "resp",
        "read",
        "write",
        "resp",
        "queue",
        "cpu%",
        "",
        "",
        "rate",
        "1024**2",
        "i/o",
        "pct",
        "time",
        "resp",
        "resp",
        "max",
        "depth",
        "",
    )
}

/// One interval's line: `when` is the wall-clock time printed first (vdbench prints hh:mm:ss.mmm).
pub fn vdbench_raw_line(when: &str, number: u64, point: &IntervalPoint) -> String {
    let classes = [point.read.as_ref(), point.write.as_ref()];
    let ops: u64 = classes.iter().flatten().map(|c| c.ops).sum();
    let bytes: u64 = classes.iter().flatten().map(|c| c.bytes).sum();
    let reads = point.read.as_ref().map_or(0, |c| c.ops);
    let rate = ops as f64 / point.length_s.max(1e-9);
    let mean_ms = |c: Option<&crate::metrics::ClassPoint>| c.map_or(0.0, |c| c.lat_mean_ns / 1e6);
    let all_ms = if ops > 0 {
        classes.iter().flatten().map(|c| c.lat_mean_ns * c.ops as f64).sum::<f64>() / ops as f64 / 1e6
    } else {
        0.0
    };
    let max_ms = classes.iter().flatten().map(|c| c.lat_max_ns).max().unwrap_or(0) as f64 / 1e6;
    line(
        when,
        &number.to_string(),
        rate,
        bytes as f64 / point.length_s.max(1e-9) / 1048576.0,
        bytes.checked_div(ops).unwrap_or(0),
        if ops > 0 { reads as f64 * 100.0 / ops as f64 } else { 0.0 },
        [all_ms, mean_ms(point.read.as_ref()), mean_ms(point.write.as_ref()), max_ms],
        rate * all_ms / 1000.0,
        point.cpu_pct,
    )
}

/// The phase's average line, from its totals.
pub fn vdbench_raw_average(when: &str, phase: &PhaseResult) -> String {
    let classes: Vec<&OpResult> = [phase.read.as_ref(), phase.write.as_ref()].into_iter().flatten().collect();
    let ops: u64 = classes.iter().map(|c| c.ops).sum();
    let bytes: u64 = classes.iter().map(|c| c.bytes).sum();
    let reads = phase.read.as_ref().map_or(0, |c| c.ops);
    let rate = ops as f64 / phase.duration_s.max(1e-9);
    let mean_ms = |c: Option<&OpResult>| c.map_or(0.0, |c| c.latency.mean_ns / 1e6);
    let all_ms = if ops > 0 {
        classes.iter().map(|c| c.latency.mean_ns * c.ops as f64).sum::<f64>() / ops as f64 / 1e6
    } else {
        0.0
    };
    let max_ms = classes.iter().map(|c| c.latency.max_ns).max().unwrap_or(0) as f64 / 1e6;
    let label = format!("avg_1-{}", phase.intervals.len().max(1));
    line(
        when,
        &label,
        rate,
        bytes as f64 / phase.duration_s.max(1e-9) / 1048576.0,
        bytes.checked_div(ops).unwrap_or(0),
        if ops > 0 { reads as f64 * 100.0 / ops as f64 } else { 0.0 },
        [all_ms, mean_ms(phase.read.as_ref()), mean_ms(phase.write.as_ref()), max_ms],
        rate * all_ms / 1000.0,
        phase.cpu.process_pct,
    )
}

#[allow(clippy::too_many_arguments)]
fn line(
    when: &str,
    label: &str,
    rate: f64,
    mb: f64,
    bytes_per_io: u64,
    read_pct: f64,
    resp_ms: [f64; 4],
    queue: f64,
    cpu: f64,
) -> String {
    format!(
        "{when:>12} {label:>8} {rate:>10.2} {mb:>8.2} {bytes_per_io:>7} {read_pct:>6.2} {:>8.3} {:>8.3} {:>8.3} {:>8.2} {queue:>6.1} {cpu:>6.1}",
        resp_ms[0], resp_ms[1], resp_ms[2], resp_ms[3]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ClassPoint;

    #[test]
    fn a_line_has_vdbench_columns_and_littles_law_queue_depth() {
        let read = ClassPoint {
            ops: 9000,
            bytes: 9000 * 4096,
            errors: 0,
            iops: 9000.0,
            mbps: 36.9,
            lat_mean_ns: 2_000_000.0,
            lat_p50_ns: 0,
            lat_p99_ns: 0,
            lat_p999_ns: 0,
            lat_max_ns: 14_000_000,
            due_p99_ns: None,
            fio_hist: None,
        };
        let write = ClassPoint { ops: 1000, bytes: 1000 * 4096, lat_mean_ns: 4_000_000.0, ..read.clone() };
        let point = IntervalPoint {
            start_s: 0.0,
            length_s: 1.0,
            read: Some(read),
            write: Some(write),
            cpu_pct: 12.5,
            devices: vec![],
            file_ops: Default::default(),
        };
        let text = vdbench_raw_line("06:20:01.051", 1, &point);
        let cols: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "06:20:01.051",
                "1",
                "10000.00",
                "39.06",
                "4096",
                "90.00",
                "2.200",
                "2.000",
                "4.000",
                "14.00",
                "22.0",
                "12.5"
            ]
        );
        assert_eq!(vdbench_raw_header().lines().count(), 2);
    }
}
