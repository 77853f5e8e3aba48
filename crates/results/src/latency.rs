//! What a phase with fio's latency_target found: the target as asked and, per worker, the queue depth its search
//! ended at and whether the target was met there. Built from the plan's `LatencyTarget` and the run's
//! `DepthFound`s; renderers read it from `PhaseResult::latency_target`.

use serde::{Deserialize, Serialize};

pub use crate::metrics::DepthFound;
use crate::plan::LatencyTarget;

/// The latency target of a phase and what each worker's depth search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyTargetResult {
    /// The latency an I/O had to stay at or below, ns (from when it was taken to its completion: fio's lat).
    pub target_ns: u64,
    /// How long each depth was tried before it was judged, µs.
    pub window_us: u64,
    /// Percent of a window's I/O that had to meet the target.
    pub percentile: f64,
    /// fio latency_run: the depth was adjusted until the end instead of stopping at the depth found.
    pub keep_adjusting: bool,
    /// Each worker's search, in worker order.
    pub workers: Vec<DepthFound>,
}

impl LatencyTargetResult {
    /// `None` when the phase had no target.
    pub fn new(target: Option<&LatencyTarget>, found: &[DepthFound]) -> Option<LatencyTargetResult> {
        let t = target?;
        Some(LatencyTargetResult {
            target_ns: u64::try_from(t.target.as_nanos()).unwrap_or(u64::MAX),
            window_us: u64::try_from(t.window.as_micros()).unwrap_or(u64::MAX),
            percentile: t.percentile,
            keep_adjusting: t.keep_adjusting,
            workers: found.to_vec(),
        })
    }

    /// The depth fio reports for a job of several threads: the last one's (fio copies each thread's in turn).
    pub fn depth(&self) -> Option<u32> {
        self.workers.last().map(|w| w.depth)
    }

    /// Every worker's last judged window met the target.
    pub fn met(&self) -> bool {
        !self.workers.is_empty() && self.workers.iter().all(|w| w.met == Some(true))
    }
}
