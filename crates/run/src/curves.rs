//! What later phases take from earlier ones: the measured rate of a phase (for vdbench's curves, which pace at
//! a percentage of an earlier maximum, and for stream phases, whose estimate comes from raw-rate phases),
//! vdbench's stopcurve, and whether a sequential write left its files fully written.

use std::borrow::Cow;

use super::{PhaseOutcome, StopReason};
use crate::metrics::OpClass;
use crate::plan::{Arrivals, FilePlan, Pacing, PhaseKind, PhasePlan, RawPlan};
use crate::workload::Access;

/// What a finished phase measured, for the phases after it.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    pub ops_per_sec: f64,
    pub bytes_per_sec: f64,
    /// Mean latency over all operation classes, nanoseconds.
    pub mean_latency_ns: f64,
    /// Requested operations per second: for a file-set phase vdbench's ReqstdOps (transfers and the workload's
    /// own operation, not the opens and closes around transfers); for other phases all operations.
    pub requested_per_sec: f64,
}

impl Measured {
    pub fn of(outcome: &PhaseOutcome) -> Measured {
        let totals = &outcome.totals;
        let ops = totals.total_ops() as f64;
        let weighted: f64 = OpClass::ALL
            .iter()
            .map(|&c| totals.stats(c))
            .filter(|s| s.ops > 0)
            .map(|s| s.latency.mean() * s.ops as f64)
            .sum();
        let seconds = outcome.measured.as_secs_f64().max(1e-9);
        Measured {
            ops_per_sec: ops / seconds,
            bytes_per_sec: totals.total_bytes() as f64 / seconds,
            mean_latency_ns: if ops > 0.0 { weighted / ops } else { 0.0 },
            requested_per_sec: ops / seconds,
        }
    }

    /// What a phase of `plan` measured, counting requested operations as its kind does.
    pub fn of_phase(phase: &PhasePlan, outcome: &PhaseOutcome) -> Measured {
        let mut measured = Measured::of(outcome);
        if let PhaseKind::FileSet(fs) = &phase.kind {
            let requested: u64 = fs.requested_classes().iter().map(|&c| outcome.totals.stats(c).ops).sum();
            measured.requested_per_sec = requested as f64 / outcome.measured.as_secs_f64().max(1e-9);
        }
        measured
    }
}

/// A phase paced at a percentage of an earlier maximum (vdbench's curve) gets its rate from the nearest earlier
/// unpaced phase's measured rate, shared between its workers — and, in a multi-host run, between the `ranks`
/// (the measured rate is then every rank's together).
pub fn with_curve_rate<'a>(
    phase: &'a RawPlan,
    phases: &[PhasePlan],
    measured: &[Option<Measured>],
    ranks: u32,
) -> Cow<'a, RawPlan> {
    let Some(percent) = phase.curve.rate_percent_of_max else { return Cow::Borrowed(phase) };
    // Only a raw phase has a rate to take: file-set and stream phases measure other things.
    let unpaced = |p: &PhasePlan| p.raw().is_some_and(|r| r.pacing.is_none() && r.curve.rate_percent_of_max.is_none());
    let max_rate = phases
        .iter()
        .zip(measured)
        .rev()
        .find(|(p, m)| unpaced(p) && m.is_some())
        .and_then(|(_, m)| m.map(|m| m.ops_per_sec));
    let mut paced = phase.clone();
    // Planning made sure an unpaced phase comes first; if it measured nothing, pace at one operation a second.
    // Parts with a rate of their own (vdbench's wd iorate=) keep it; the others share what they leave of the
    // point's rate, as vdbench's wg_set_interarrival shares the rd's.
    let own: f64 = phase.workers.iter().filter_map(|w| w.mixed.as_ref()?.own_rate).map(|r| r.ops_per_sec).sum();
    let total = (max_rate.unwrap_or(0.0) * percent / 100.0 - own).max(1.0);
    // A phase with parts shares its rate out by the workers' shares; a plain phase gives each worker its part.
    // Either way each of several ranks takes its part of the total.
    let mixed = phase.workers.iter().any(|w| w.mixed.is_some());
    let ranks = f64::from(ranks.max(1));
    let per_worker = if mixed { total / ranks } else { total / (f64::from(phase.jobs) * ranks) };
    paced.pacing = Some(Pacing { ops_per_sec: per_worker, bytes_per_sec: None, arrivals: Arrivals::Linear });
    Cow::Owned(paced)
}

/// vdbench's stopcurve: a curve phase is skipped once an earlier phase of the same curve (the run of curve phases
/// it belongs to) had a mean response time above its limit.
pub fn curve_stopped(index: usize, phases: &[PhasePlan], measured: &[Option<Measured>]) -> Option<String> {
    let limit = phases[index].raw()?.curve.curve_stop_latency?;
    let on_curve = |p: &PhasePlan| p.raw().is_some_and(|r| r.curve.rate_percent_of_max.is_some());
    phases[..index].iter().zip(measured).rev().take_while(|(p, _)| on_curve(p)).find_map(|(p, m)| {
        let mean_ns = (*m)?.mean_latency_ns;
        (mean_ns > limit.as_nanos() as f64).then(|| {
            format!(
                "'{}' already averaged {:.3} ms, above the curve's limit of {:.3} ms",
                p.name,
                mean_ns / 1e6,
                limit.as_secs_f64() * 1e3
            )
        })
    })
}

/// A sequential write phase leaves its files fully written when it completed, its regions together cover every
/// byte of every file it used, and every worker issued at least one pass over its own regions (one pass covers
/// every byte of a worker's regions: see `plan::files` and `workload::source`).
pub fn covers_whole_files(phase: &RawPlan, outcome: &PhaseOutcome, table: &[FilePlan]) -> bool {
    let every_file_covered = phase.files.iter().all(|&file| {
        let mut spans: Vec<(u64, u64)> = phase
            .workers
            .iter()
            .flat_map(|w| w.workload.regions.iter())
            .filter(|r| r.file == file)
            .map(|r| (r.start, r.start + r.len))
            .collect();
        spans.sort_unstable();
        let mut reached = 0;
        for (start, end) in spans {
            if start > reached {
                return false;
            }
            reached = reached.max(end);
        }
        reached >= table[file as usize].size.0
    });
    let every_pass_done = phase
        .workers
        .iter()
        .zip(&outcome.issued_by_worker)
        .all(|(worker, &issued)| issued >= worker.workload.regions.iter().map(|r| r.len).sum::<u64>());
    phase.read_percent == 0
        && phase.parts.is_empty()
        && phase.access == Access::Sequential
        && outcome.stop == StopReason::Completed
        && outcome.issued_by_worker.len() == phase.workers.len()
        && every_file_covered
        && every_pass_done
}
