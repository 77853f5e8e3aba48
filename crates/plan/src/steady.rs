//! Steady-state detection planned: the spec's criterion as the rule the run checks (`metrics::SteadyRule`), its
//! window in rounds of the reporting interval, and the rounds fio's ss_ramp leaves out. streamcap checks once per
//! reporting interval (1 s by default, fio's check interval).
//!
//! Must not: judge rates or stop phases (`run::gather` does, with `metrics::SteadyTracker`).

use std::time::Duration;

use super::PlanError;
use crate::metrics::{SteadyConfig, SteadyMetric, SteadyRule};
use crate::spec::{PhaseSpec, SteadyCriterion, SteadyOn, SteadyWindow};

/// SNIA PTS's limits: the data excursion (max − min) and the slope excursion over the window, as percentages
/// of the window's mean.
const SNIA_EXCURSION_PCT: f64 = 20.0;
const SNIA_SLOPE_PCT: f64 = 10.0;

/// The phase's steady-state check, `None` when it asks for none; `name` labels the notices.
pub(super) fn steady_config(
    spec: &PhaseSpec,
    name: &str,
    interval: Duration,
    runtime: Option<Duration>,
    notices: &mut Vec<String>,
) -> Result<Option<SteadyConfig>, PlanError> {
    let Some(asked) = spec.steady_state else { return Ok(None) };
    if spec.kind.is_some() {
        return Err(PlanError(format!(
            "phase '{name}': steady-state detection judges the IOPS or bandwidth of raw I/O; a file-set or stream \
             phase has no such rate to judge: leave it out there"
        )));
    }
    let window = match asked.window {
        SteadyWindow::Rounds(n) => n,
        SteadyWindow::Time(t) => (t.as_nanos() / interval.as_nanos().max(1)).min(u128::from(u32::MAX)) as u32,
    };
    if window < 2 {
        return Err(PlanError(format!(
            "phase '{name}': the steady-state window is {window} round(s) of the {} s reporting interval; it needs \
             at least 2 (a slope or a spread of one value means nothing): lengthen ss_dur or the window",
            interval.as_secs_f64()
        )));
    }
    // A round is collected when it starts ss_ramp or later after the start of measurement: fio measures ss_ramp
    // on the job's clock, which it restarts when ramp_time ends (time.c ramp_time_over → reset_all_stats), and
    // streamcap's rounds start there too.
    let skip = asked.ramp.as_nanos().div_ceil(interval.as_nanos().max(1)).min(u128::from(u32::MAX)) as u32;
    if let Some(runtime) = runtime {
        let rounds = (runtime.as_nanos() / interval.as_nanos().max(1)) as u64;
        if rounds < u64::from(skip) + u64::from(window) {
            let ramp =
                if skip > 0 { format!("the {skip} left out for the steady-state ramp and ") } else { String::new() };
            notices.push(format!(
                "phase '{name}': its runtime holds {rounds} round(s), fewer than {ramp}the {window} of the \
                 steady-state window: steady state cannot be attained"
            ));
        }
    }
    Ok(Some(SteadyConfig { rule: rule(asked.criterion), window, skip }))
}

fn rule(criterion: SteadyCriterion) -> SteadyRule {
    let metric = |on| match on {
        SteadyOn::Iops => SteadyMetric::Iops,
        SteadyOn::Bw => SteadyMetric::Bw,
    };
    match criterion {
        SteadyCriterion::Fio { on, slope: false, limit, percent } => {
            SteadyRule::Deviation { metric: metric(on), limit, percent }
        }
        SteadyCriterion::Fio { on, slope: true, limit, percent } => {
            SteadyRule::Slope { metric: metric(on), limit, percent }
        }
        SteadyCriterion::Snia { on } => {
            SteadyRule::Snia { metric: metric(on), excursion_pct: SNIA_EXCURSION_PCT, slope_pct: SNIA_SLOPE_PCT }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SteadyStateSpec;

    fn plan(
        window: SteadyWindow,
        ss_ramp: u64,
        runtime: Option<u64>,
    ) -> (Result<Option<SteadyConfig>, PlanError>, Vec<String>) {
        let criterion = SteadyCriterion::Fio { on: SteadyOn::Iops, slope: false, limit: 10.0, percent: true };
        let ramp_of = Duration::from_secs;
        let spec = PhaseSpec {
            steady_state: Some(SteadyStateSpec { criterion, window, ramp: ramp_of(ss_ramp) }),
            ..PhaseSpec::default()
        };
        let mut notices = Vec::new();
        let got = steady_config(&spec, "p", Duration::from_secs(1), runtime.map(ramp_of), &mut notices);
        (got, notices)
    }

    #[test]
    fn fio_windows_are_cut_into_rounds_and_ss_ramp_into_the_rounds_left_out() {
        let (got, notices) = plan(SteadyWindow::Time(Duration::from_secs(30)), 10, Some(300));
        let got = got.unwrap().unwrap();
        assert_eq!((got.window, got.skip), (30, 10));
        assert!(matches!(got.rule, SteadyRule::Deviation { limit: 10.0, percent: true, .. }));
        assert!(notices.is_empty(), "{notices:?}");
        // The first round collected starts at or after ss_ramp: 2.5 s leaves out rounds 1 to 3.
        let spec = |ramp| SteadyStateSpec {
            criterion: SteadyCriterion::Snia { on: SteadyOn::Iops },
            window: SteadyWindow::Rounds(5),
            ramp,
        };
        let phase = PhaseSpec { steady_state: Some(spec(Duration::from_millis(2500))), ..PhaseSpec::default() };
        let got = steady_config(&phase, "p", Duration::from_secs(1), None, &mut Vec::new());
        assert_eq!(got.unwrap().unwrap().skip, 3);
    }

    #[test]
    fn a_window_under_two_rounds_is_refused_and_one_longer_than_the_runtime_noticed() {
        let (got, _) = plan(SteadyWindow::Time(Duration::from_millis(1500)), 0, None);
        assert!(got.unwrap_err().0.contains("window is 1 round(s)"));
        let (got, notices) = plan(SteadyWindow::Rounds(5), 2, Some(6));
        assert_eq!(got.unwrap().unwrap().window, 5);
        assert!(notices[0].contains("steady state cannot be attained"), "{notices:?}");
    }
}
