//! The sentence under the terminal summary for a phase with fio's latency_target: the queue depth its search
//! settled on and the rates of its last window (what fio's figures would cover), or that the target was not met
//! even at depth 1, or that the job ended before a window was judged. Reads only `PhaseResult::latency_target`.

use crate::results::{LatencyTargetResult, PhaseResult};
use crate::units::{format_latency_ns, format_mbps, format_rate};

/// One line per phase with a latency target.
pub(super) fn lines(phases: &[PhaseResult]) -> Vec<String> {
    phases.iter().filter_map(|p| p.latency_target.as_ref().map(|t| line(&p.name, t))).collect()
}

fn line(name: &str, t: &LatencyTargetResult) -> String {
    let target = format!(
        "p{} ≤ {} over {} windows",
        t.percentile,
        format_latency_ns(t.target_ns as f64),
        format_latency_ns(t.window_us as f64 * 1e3)
    );
    let depths: Vec<String> = t.workers.iter().map(|w| w.depth.to_string()).collect();
    let max = t.workers.iter().map(|w| w.max_depth).max().unwrap_or(0);
    let (noun, depths) = match depths.len() {
        1 => ("queue depth", depths.join("")),
        _ => ("queue depths (per worker)", depths.join(", ")),
    };
    let judged = t.workers.iter().any(|w| w.windows > 0);
    if !judged {
        return format!(
            "latency target: '{name}' {target}: not judged, the job ended before its first window (still at {noun} \
             {depths}); give it a longer runtime or size"
        );
    }
    if t.met() {
        let searching = t.workers.iter().any(|w| !w.settled) && !t.keep_adjusting;
        let end = if searching { ", the job ended before the search settled" } else { "" };
        return format!("latency target: '{name}' {target}: met at {noun} {depths} of {max}{}{end}", last_window(t));
    }
    let floor = if t.workers.iter().all(|w| w.depth == 1) { " even" } else { "" };
    format!("latency target: '{name}' {target}: NOT met{floor} at {noun} {depths} of {max}{}", last_window(t))
}

/// The rates of each worker's last judged window, added up: fio reports only that window once its search
/// settles, while the table above covers the whole run, the search included.
fn last_window(t: &LatencyTargetResult) -> String {
    let (mut ops, mut bytes) = (0.0, 0.0);
    for w in t.workers.iter().filter(|w| w.window_us > 0) {
        let seconds = w.window_us as f64 / 1e6;
        ops += w.window_ops as f64 / seconds;
        bytes += w.window_bytes as f64 / seconds;
    }
    let plural = if t.workers.len() > 1 { "s" } else { "" };
    format!(" ({} IOPS, {} MB/s in the last window{plural})", format_rate(ops), format_mbps(bytes / 1e6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::DepthFound;

    fn target(workers: Vec<DepthFound>) -> LatencyTargetResult {
        LatencyTargetResult {
            target_ns: 500_000_000,
            window_us: 5_000_000,
            percentile: 99.9,
            keep_adjusting: false,
            workers,
        }
    }

    fn found(depth: u32, windows: u32, met: Option<bool>, settled: bool) -> DepthFound {
        let (window_ops, window_bytes, window_us) = (5000, 5000 * 4096, 5_000_000);
        DepthFound { depth, max_depth: 128, windows, windows_met: 0, met, settled, window_ops, window_bytes, window_us }
    }

    #[test]
    fn the_line_says_the_depth_found_or_that_the_target_was_not_met() {
        let met = line("device", &target(vec![found(128, 9, Some(true), true)]));
        assert_eq!(
            met,
            "latency target: 'device' p99.9 ≤ 500 ms over 5.00 s windows: met at queue depth 128 of 128 (1000 IOPS, \
             4.10 MB/s in the last window)"
        );
        let missed = line("device", &target(vec![found(1, 3, Some(false), false)]));
        assert!(missed.contains("NOT met even at queue depth 1 of 128 (1000 IOPS"), "{missed}");
        let early = line("device", &target(vec![found(1, 0, None, false), found(1, 0, None, false)]));
        assert!(early.contains("not judged, the job ended before its first window"), "{early}");
        assert!(early.contains("queue depths (per worker) 1, 1"), "{early}");
    }
}
