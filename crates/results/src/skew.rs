//! vdbench's skew check after a run of an rd (`SkewReport.endOfRawRunSkewCheck`, vdbench 5.04.06): each
//! workload's share of the phase's operations beside the share its skew asked for, the largest difference, a
//! warning when the shares were controlled (held or paced) and one is off by more than one percentage point, and a
//! failed run when `abort_failed_skew=` is given and the largest difference is above it.
//!
//! vdbench's rule, as its source has it: the observed share of a wd is its I/O over all the rd's wds' I/O in the
//! non-warm-up intervals, in percent; the delta is its distance from the wd's skew in percentage points; it warns
//! ("Observed Workload skew for wd=… delta greater than 1% (…)") only when its waiter controlled the run, and
//! fails the run when the largest delta is above `abort_failed_skew` whether or not the run was controlled.
//!
//! streamcap's shares are its workers' (`plan::mix`: one worker per sd, mixing the wds that share the sd by
//! their weights), so the check is per worker, named by its parts (`wd1 on sd1`); operations are those issued
//! after the ramp (streamcap's warm-up).
//!
//! Must not: measure anything (the run layer counts the operations) or decide the exit code (the app does).

use serde::{Deserialize, Serialize};

use crate::plan::{PartPlan, PhaseKind, PhasePlan};

/// vdbench warns when a workload's observed share is off its skew by more than this many percentage points.
pub const SKEW_WARN_PCT: f64 = 1.0;

/// A phase's observed skew against the requested one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkewCheck {
    /// Each worker of the phase, in plan order.
    pub workloads: Vec<SkewShare>,
    /// The largest distance between an observed and a requested share, in percentage points.
    pub max_delta_pct: f64,
    /// The workload with that distance.
    pub worst: String,
    /// The shares were held (vdbench's controlled max) or paced by a rate: vdbench warns only then.
    pub controlled: bool,
    /// `abort_failed_skew=`: the distance, in percentage points, above which the run fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_pct: Option<f64>,
    /// The largest distance is above the limit: the run fails (exit code 1).
    pub failed: bool,
}

/// One workload's share of a phase's operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkewShare {
    /// Its parts (vdbench: `wd1 on sd1`), joined with " + " when several wds share the worker.
    pub name: String,
    /// Reads and writes it issued after the ramp.
    pub ops: u64,
    /// The share its skew asked for, in percent of the phase's operations.
    pub requested_pct: f64,
    /// The share it did, in percent of the phase's operations.
    pub observed_pct: f64,
    /// Observed minus requested, in percentage points.
    pub delta_pct: f64,
}

impl SkewCheck {
    /// vdbench's warning is due: the shares were controlled and one is off by more than one point.
    pub fn warns(&self) -> bool {
        self.controlled && self.max_delta_pct > SKEW_WARN_PCT
    }

    /// What the text report says about it, when the run failed or vdbench would warn.
    pub fn message(&self) -> Option<String> {
        let worst = self.workloads.iter().find(|w| w.name == self.worst)?;
        let what = format!(
            "{} did {:.2} % of the operations, its skew asks {:.2} % (off by {:.2} points",
            worst.name, worst.observed_pct, worst.requested_pct, self.max_delta_pct
        );
        match self.limit_pct {
            Some(limit) if self.failed => {
                Some(format!("skew limit {limit} (abort_failed_skew): {what}, more than {limit})"))
            }
            _ if self.warns() => Some(format!("observed workload skew: {what}, more than {SKEW_WARN_PCT})")),
            _ => None,
        }
    }
}

/// The skew check of a phase with parts on more than one worker, from the operations each worker issued after
/// the ramp (`ops_by_worker`, in worker order); `None` for other phases, when the counts are not every worker's
/// (a multi-host run's), when a part has a rate of its own, or when nothing was issued.
pub fn skew_check(phase: &PhasePlan, ops_by_worker: &[u64]) -> Option<SkewCheck> {
    let PhaseKind::Raw(plan) = &phase.kind else { return None };
    let workers = worker_parts(&plan.parts);
    // A wd at a rate of its own (its iorate=) has no skew to keep, and runs on a worker of its own.
    if plan.parts.iter().any(|p| p.own_rate_iops.is_some()) {
        return None;
    }
    if workers.len() < 2 || workers.len() != plan.workers.len() || ops_by_worker.len() != workers.len() {
        return None;
    }
    let total: u64 = ops_by_worker.iter().sum();
    let asked: f64 = plan.parts.iter().map(|p| p.share_percent).sum();
    if total == 0 || asked <= 0.0 {
        return None;
    }
    let workloads: Vec<SkewShare> = workers
        .iter()
        .zip(ops_by_worker)
        .map(|(parts, &ops)| {
            let requested_pct = parts.iter().map(|p| p.share_percent).sum::<f64>() * 100.0 / asked;
            let observed_pct = ops as f64 * 100.0 / total as f64;
            let name = parts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(" + ");
            SkewShare { name, ops, requested_pct, observed_pct, delta_pct: observed_pct - requested_pct }
        })
        .collect();
    // The first of equal distances, as vdbench keeps the first wd whose delta is larger than those before it.
    let worst = workloads.iter().reduce(|a, b| if b.delta_pct.abs() > a.delta_pct.abs() { b } else { a })?;
    let (max_delta_pct, worst) = (worst.delta_pct.abs(), worst.name.clone());
    let controlled =
        plan.pacing.is_some() || plan.workers.iter().any(|w| w.mixed.as_ref().is_some_and(|m| m.held.is_some()));
    let failed = plan.skew_limit_pct.is_some_and(|limit| max_delta_pct > limit);
    Some(SkewCheck { workloads, max_delta_pct, worst, controlled, limit_pct: plan.skew_limit_pct, failed })
}

/// The parts of each worker: one worker per queue, in the order queues first appear (as `plan::mix` makes them).
fn worker_parts(parts: &[PartPlan]) -> Vec<Vec<&PartPlan>> {
    let mut workers: Vec<Vec<&PartPlan>> = Vec::new();
    for part in parts {
        match workers.iter_mut().find(|w| w[0].queue == part.queue) {
            Some(worker) => worker.push(part),
            None => workers.push(vec![part]),
        }
    }
    workers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Facts, RunOptions, TargetFacts, build_plan};
    use crate::spec::{JobSpec, PhaseSpec, RwMode, SpecOrigin, VdbenchExtras};
    use crate::units::Bytes;
    use std::path::PathBuf;

    /// A phase of three parts on two files (sd1 holds wd1 and wd2, sd2 holds wd3), skews 60, 20 and 20, at max.
    fn phase(limit: Option<f64>, held: bool) -> PhasePlan {
        let part = |name: &str, file: &str, skew| PhaseSpec {
            name: Some(name.into()),
            file_names: Some(vec![file.into()]),
            skew: Some(skew),
            ..Default::default()
        };
        let spec = PhaseSpec {
            rw: Some(RwMode::RandRead),
            size: Some(Bytes::mib(16)),
            parts: Some(vec![
                part("wd1 on sd1", "sd1", 60.0),
                part("wd2 on sd1", "sd1", 20.0),
                part("wd3 on sd2", "sd2", 20.0),
            ]),
            vdbench: VdbenchExtras { hold_shares: Some(held), skew_limit: limit, ..Default::default() },
            ..Default::default()
        };
        let job =
            JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases: vec![spec], notices: vec![] };
        let target =
            TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(50)), dio_align: Some(512) };
        let facts = Facts { target, ..Facts::directory(None) };
        let options = RunOptions { run_id: "run-test".into(), ..Default::default() };
        build_plan(&job, &facts, &options).expect("a plan").phases.remove(0)
    }

    /// vdbench's arithmetic: sd1's worker asked 80 % and did 7,500 of 10,000 (75 %), sd2's 2,500 (25 %): 5 points
    /// off, a warning of a held run, and a failure above abort_failed_skew=2 but not above 10.
    #[test]
    fn observed_shares_are_each_workers_operations_over_all_against_its_parts_skews() {
        let check = skew_check(&phase(Some(2.0), true), &[7500, 2500]).expect("a phase with two workers");
        assert_eq!(check.workloads.len(), 2);
        let sd1 = &check.workloads[0];
        assert_eq!(sd1.name, "wd1 on sd1 + wd2 on sd1");
        assert!((sd1.requested_pct - 80.0).abs() < 1e-9 && (sd1.observed_pct - 75.0).abs() < 1e-9);
        assert!((sd1.delta_pct + 5.0).abs() < 1e-9 && (check.workloads[1].delta_pct - 5.0).abs() < 1e-9);
        assert!((check.max_delta_pct - 5.0).abs() < 1e-9);
        assert!(check.controlled && check.warns() && check.failed);
        let said = check.message().expect("a failed run says why");
        assert!(
            said.starts_with("skew limit 2 (abort_failed_skew):")
                && said.contains("wd1 on sd1 + wd2 on sd1 did 75.00 %"),
            "{said}"
        );
        assert!(!skew_check(&phase(Some(10.0), true), &[7500, 2500]).unwrap().failed);
    }

    /// Within a point nothing is said; an uncontrolled max is not warned about, but abort_failed_skew fails it
    /// all the same, as vdbench's endOfRawRunSkewCheck does.
    #[test]
    fn warnings_need_a_controlled_run_and_the_limit_fails_any_run() {
        let close = skew_check(&phase(None, true), &[8050, 1950]).unwrap();
        assert!(!close.warns() && !close.failed && close.message().is_none());
        let free = skew_check(&phase(None, false), &[5000, 5000]).unwrap();
        assert!(!free.controlled && !free.warns() && free.message().is_none());
        let limited = skew_check(&phase(Some(1.0), false), &[5000, 5000]).unwrap();
        assert!(limited.failed && limited.message().is_some_and(|m| m.contains("off by 30.00 points")));
    }

    /// No check without every worker's count (a multi-host run merges none yet) or without any operation.
    #[test]
    fn no_check_without_every_workers_count() {
        assert!(skew_check(&phase(None, true), &[]).is_none());
        assert!(skew_check(&phase(None, true), &[0, 0]).is_none());
    }
}
