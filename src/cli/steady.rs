//! `--steady-state[=ROUNDS]` and `--steady-state-on` of `streamcap run`: end each phase once its rate is steady
//! as SNIA PTS defines it, as a phase layer like every other workload flag.

use clap::{Args, ValueEnum};

use crate::spec::{SteadyCriterion, SteadyOn, SteadyStateSpec, SteadyWindow};

/// SNIA PTS's measurement window: five rounds.
const SNIA_ROUNDS: &str = "5";

#[derive(Debug, Clone, Default, Args)]
pub struct SteadyFlags {
    /// End each phase once its rate is steady, as SNIA PTS defines it: over the last ROUNDS reporting intervals
    /// (default 5; --interval sets a round's length), the range (max − min) is within 20 % of the window's mean
    /// and the best-fit line's excursion across the window within 10 %. The summary and the result say whether
    /// it was attained and after which round. Give the window as --steady-state=8.
    #[arg(long, value_name = "ROUNDS", num_args = 0..=1, require_equals = true, default_missing_value = SNIA_ROUNDS,
          value_parser = clap::value_parser!(u32).range(2..=100_000), help_heading = "Steady state")]
    pub steady_state: Option<u32>,
    /// The rate --steady-state judges: iops (the default, SNIA's IOPS test) or bw (its throughput test).
    #[arg(long, value_enum, value_name = "RATE", requires = "steady_state", help_heading = "Steady state")]
    pub steady_state_on: Option<SteadyRate>,
}

/// What `--steady-state-on` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SteadyRate {
    Iops,
    Bw,
}

impl SteadyFlags {
    /// The flags as a phase's steady-state request; `None` when `--steady-state` was not given.
    pub fn to_spec(&self) -> Option<SteadyStateSpec> {
        let rounds = self.steady_state?;
        let on = match self.steady_state_on {
            Some(SteadyRate::Bw) => SteadyOn::Bw,
            Some(SteadyRate::Iops) | None => SteadyOn::Iops,
        };
        Some(SteadyStateSpec {
            criterion: SteadyCriterion::Snia { on },
            window: SteadyWindow::Rounds(rounds),
            ramp: std::time::Duration::ZERO,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};
    use crate::spec::{SteadyCriterion, SteadyOn, SteadyWindow};

    fn steady(args: &[&str]) -> Result<Option<crate::spec::SteadyStateSpec>, String> {
        let cli = Cli::try_parse_from(["streamcap", "run", "/tmp"].iter().chain(args)).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Run(run) => Ok(run.workload.steady.to_spec()),
            _ => unreachable!("a run command"),
        }
    }

    #[test]
    fn the_window_defaults_to_five_rounds_of_iops_and_takes_a_count_and_a_rate() {
        let five = steady(&["--steady-state"]).unwrap().expect("asked");
        assert_eq!(
            (five.criterion, five.window),
            (SteadyCriterion::Snia { on: SteadyOn::Iops }, SteadyWindow::Rounds(5))
        );
        let eight = steady(&["--steady-state=8", "--steady-state-on", "bw"]).unwrap().expect("asked");
        assert_eq!(
            (eight.criterion, eight.window),
            (SteadyCriterion::Snia { on: SteadyOn::Bw }, SteadyWindow::Rounds(8))
        );
        assert_eq!(steady(&[]).unwrap(), None);
    }

    #[test]
    fn a_window_under_two_rounds_or_a_rate_without_the_flag_is_refused() {
        assert!(steady(&["--steady-state=1"]).unwrap_err().contains("1 is not in 2..=100000"));
        assert!(steady(&["--steady-state-on", "iops"]).is_err());
    }
}
