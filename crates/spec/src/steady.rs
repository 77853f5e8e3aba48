//! What was asked of steady-state detection: fio's `steadystate`/`ss`, `ss_dur`, `ss_ramp` (read by
//! `spec::fio::steady`), streamcap's SNIA-PTS-style `--steady-state ROUNDS` (`cli::steady`) or the TOML key
//! `steady-state` (read here). Plain data; the plan turns it into the rule the run checks once per reporting
//! interval (`metrics::SteadyRule`).
//!
//! Must not: judge a rate.

use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::units::parse_duration;

/// The rate judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyOn {
    /// Operations per second.
    Iops,
    /// Bytes per second.
    Bw,
}

/// Which rule says a window is steady.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteadyCriterion {
    /// fio's criteria: `slope` false is the deviation from the window's mean (`iops:10%`), true the
    /// least-squares slope (`iops_slope:0.01%`); `limit` is in ops/s or bytes/s, or percent of the mean.
    Fio { on: SteadyOn, slope: bool, limit: f64, percent: bool },
    /// SNIA PTS: the range within 20 % and the slope excursion within 10 % of the window's mean.
    Snia { on: SteadyOn },
}

/// How long the rolling window is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteadyWindow {
    /// fio ss_dur: a time, cut into rounds of the reporting interval (fio checks once per second).
    Time(Duration),
    /// A count of rounds (reporting intervals), as SNIA PTS counts them.
    Rounds(u32),
}

/// Steady-state detection for one phase: the phase ends early once the criterion holds over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyStateSpec {
    pub criterion: SteadyCriterion,
    pub window: SteadyWindow,
    /// fio ss_ramp: time from the start of measurement (the end of the phase's ramp) before rounds are collected.
    pub ramp: Duration,
}

/// What a TOML `steady-state` may be, for the message when it is none of them.
const TOML_FORMS: &str = "expected a number of rounds (steady-state = 5: SNIA PTS on IOPS), a table \
                          { rounds = 5, on = \"bw\" }, or fio's rule { criterion = \"iops_slope:0.5%\", \
                          window = \"30s\", ramp = \"10s\" }";

/// TOML: `steady-state = 5` (SNIA PTS over 5 rounds of IOPS), `steady-state = { rounds = 8, on = "bw" }`, or
/// fio's rule `steady-state = { criterion = "iops_slope:0.5%", window = "30s", ramp = "10s" }`.
pub(super) fn deserialize_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SteadyStateSpec>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Said {
        Rounds(u32),
        Table(Table),
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Table {
        rounds: Option<u32>,
        on: Option<String>,
        criterion: Option<String>,
        window: Option<String>,
        ramp: Option<String>,
    }
    let table = match Said::deserialize(d).map_err(|_| D::Error::custom(format!("steady-state: {TOML_FORMS}")))? {
        Said::Rounds(rounds) => Table { rounds: Some(rounds), on: None, criterion: None, window: None, ramp: None },
        Said::Table(table) => table,
    };
    let time = |t: Option<String>| t.map(|t| parse_duration(&t).map_err(|e| e.to_string())).transpose();
    let build = || -> Result<SteadyStateSpec, String> {
        let ramp = time(table.ramp)?.unwrap_or(Duration::ZERO);
        match (table.criterion, table.rounds, table.on) {
            (Some(criterion), None, None) => {
                let criterion = super::fio::parse_steady_criterion(&criterion)?;
                let window = time(table.window)?.ok_or("fio's criterion needs its window, such as window = \"30s\"")?;
                Ok(SteadyStateSpec { criterion, window: SteadyWindow::Time(window), ramp })
            }
            (Some(_), _, _) => Err("criterion (fio's rule) takes window and ramp, not rounds or on (SNIA's)".into()),
            (None, rounds, on) if table.window.is_none() => {
                let on = match on.as_deref() {
                    None | Some("iops") => SteadyOn::Iops,
                    Some("bw") => SteadyOn::Bw,
                    Some(other) => return Err(format!("on = \"{other}\" is not a rate; expected iops or bw")),
                };
                Ok(SteadyStateSpec {
                    criterion: SteadyCriterion::Snia { on },
                    window: SteadyWindow::Rounds(rounds.unwrap_or(5)),
                    ramp,
                })
            }
            (None, _, _) => Err("window goes with fio's criterion; SNIA's window is counted in rounds".into()),
        }
    };
    build().map(Some).map_err(|why| D::Error::custom(format!("steady-state: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_toml_job;
    use std::path::Path;

    fn read(value: &str) -> Result<Option<SteadyStateSpec>, String> {
        let text = format!("[[phase]]\nrw = \"read\"\nsteady-state = {value}\n");
        parse_toml_job(Path::new("j.toml"), &text).map(|j| j.phases[0].steady_state).map_err(|e| e.to_string())
    }

    #[test]
    fn toml_takes_rounds_a_snia_table_or_fios_rule() {
        let snia = |on, rounds| SteadyStateSpec {
            criterion: SteadyCriterion::Snia { on },
            window: SteadyWindow::Rounds(rounds),
            ramp: Duration::ZERO,
        };
        assert_eq!(read("5"), Ok(Some(snia(SteadyOn::Iops, 5))));
        assert_eq!(read("{ rounds = 8, on = \"bw\" }"), Ok(Some(snia(SteadyOn::Bw, 8))));
        let fio = read("{ criterion = \"iops:10%\", window = \"30s\", ramp = \"5s\" }").unwrap().unwrap();
        assert_eq!(
            fio.criterion,
            SteadyCriterion::Fio { on: SteadyOn::Iops, slope: false, limit: 10.0, percent: true }
        );
        assert_eq!((fio.window, fio.ramp), (SteadyWindow::Time(Duration::from_secs(30)), Duration::from_secs(5)));
    }

    #[test]
    fn toml_mistakes_say_what_is_expected() {
        assert!(read("\"often\"").unwrap_err().contains("steady-state: expected a number of rounds"));
        assert!(read("{ criterion = \"iops:10%\" }").unwrap_err().contains("needs its window"));
        assert!(read("{ rounds = 5, on = \"lat\" }").unwrap_err().contains("on = \"lat\" is not a rate"));
        assert!(read("{ rounds = 5, window = \"30s\" }").unwrap_err().contains("window goes with fio's criterion"));
    }
}
