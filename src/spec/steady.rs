//! What was asked of steady-state detection: fio's `steadystate`/`ss`, `ss_dur`, `ss_ramp` (read by
//! `spec::fio::steady`) or streamcap's SNIA-PTS-style `--steady-state ROUNDS` (`cli::steady`). Plain data; the
//! plan turns it into the rule the run checks once per reporting interval (`metrics::SteadyRule`).
//!
//! Must not: parse text or judge a rate.

use std::time::Duration;

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
