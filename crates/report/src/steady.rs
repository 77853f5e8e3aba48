//! The steady-state lines of the terminal summary: for each phase that checked for steady state (fio
//! steadystate, `--steady-state`), whether it was attained and after which round, with the rule and the figures
//! it was judged on. Reads only the result.

use std::io::{self, Write};

use crate::results::{PhaseResult, SteadyMetric, SteadyOutcome, SteadyRule};
use crate::units::{format_mbps, format_rate};

/// One line per phase with a steady-state check; nothing when no phase had one.
pub(super) fn write_steady_summary(out: &mut dyn Write, phases: &[PhaseResult]) -> io::Result<()> {
    let checked: Vec<_> = phases.iter().filter_map(|p| p.steady_state.as_ref().map(|s| (p, s))).collect();
    if checked.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    for (phase, steady) in checked {
        writeln!(out, "{}: {}", phase.name, steady_words(steady))?;
    }
    Ok(())
}

/// "steady state attained after round 12 (iops:10.000000%, window 5 rounds): …" or why it was not.
pub(super) fn steady_words(s: &SteadyOutcome) -> String {
    let rule = format!("{}, window {} rounds", s.rule.label(), s.window);
    let collected = s.iops.len();
    if collected < s.window as usize {
        return format!(
            "steady state not attained ({rule}): the phase ended after {collected} round(s) of the window were \
             collected"
        );
    }
    let unit =
        if matches!(s.rule, SteadyRule::Deviation { percent: false, .. } | SteadyRule::Slope { percent: false, .. }) {
            match s.rule.metric() {
                SteadyMetric::Iops => " IOPS",
                SteadyMetric::Bw => " B/s",
            }
        } else {
            "%"
        };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let figures = format!(
        "criterion {:.3}{unit}; window mean {} IOPS, {} MB/s",
        s.criterion,
        format_rate(mean(&s.iops)),
        format_mbps(mean(&s.bw) / 1e6)
    );
    match s.round {
        Some(round) if s.attained => format!("steady state attained after round {round} ({rule}): {figures}"),
        _ => format!("steady state not attained ({rule}): last {figures}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(attained: bool, rounds: usize) -> SteadyOutcome {
        SteadyOutcome {
            rule: SteadyRule::Deviation { metric: SteadyMetric::Iops, limit: 10.0, percent: true },
            window: 3,
            round_s: 1.0,
            attained,
            round: attained.then_some(7),
            criterion: 2.5,
            max_deviation: 25.0,
            slope: 0.0,
            range: 50.0,
            mean: 1000.0,
            iops: vec![1000.0; rounds],
            bw: vec![4.096e6; rounds],
        }
    }

    #[test]
    fn says_whether_and_after_which_round_steady_state_was_attained() {
        let yes = steady_words(&outcome(true, 3));
        assert_eq!(
            yes,
            "steady state attained after round 7 (iops:10.000000%, window 3 rounds): criterion 2.500%; window \
             mean 1000 IOPS, 4.10 MB/s"
        );
        assert!(steady_words(&outcome(false, 3)).starts_with("steady state not attained (iops:10.000000%"));
        let short = steady_words(&outcome(false, 1));
        assert!(short.contains("not attained") && short.contains("after 1 round(s)"), "{short}");
    }
}
