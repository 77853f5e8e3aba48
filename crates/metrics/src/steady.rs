//! Steady-state detection over a rolling window of rounds (one reporting interval each): fio's `steadystate`
//! criteria (`iops`, `bw`: every value within a limit of the window's mean; `iops_slope`, `bw_slope`: the
//! least-squares slope below a limit) and SNIA PTS's rule (data excursion and slope excursion, each a share of
//! the window's mean). fio's reference is steadystate.c; this follows its arithmetic.
//!
//! The tracker is fed one round's rates at a time by the phase's coordinator, never per I/O: its window is
//! allocated once when it is made. Must not: read clocks or stop anything; it only answers "steady now?".

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The rate a rule judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyMetric {
    /// Operations per second.
    Iops,
    /// Bytes per second.
    Bw,
}

impl SteadyMetric {
    pub fn name(self) -> &'static str {
        match self {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
        }
    }
}

/// When a window of rounds counts as steady.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SteadyRule {
    /// fio `iops:L` / `bw:L`: the largest distance of a round from the window's mean is below `limit` (ops/s or
    /// bytes/s; with `percent`, percent of the mean).
    Deviation { metric: SteadyMetric, limit: f64, percent: bool },
    /// fio `iops_slope:L` / `bw_slope:L`: the magnitude of the least-squares slope (per round) is below `limit`
    /// (with `percent`, percent of the mean).
    Slope { metric: SteadyMetric, limit: f64, percent: bool },
    /// SNIA PTS (SSS PTS 2.0.1, "Steady State"): the window's range (max − min) is at most `excursion_pct` of its
    /// mean, and the range of the best linear fit over the window (|slope| × (rounds − 1), from its first round to
    /// its last) at most `slope_pct` of its mean.
    Snia { metric: SteadyMetric, excursion_pct: f64, slope_pct: f64 },
}

impl SteadyRule {
    pub fn metric(&self) -> SteadyMetric {
        match *self {
            SteadyRule::Deviation { metric, .. }
            | SteadyRule::Slope { metric, .. }
            | SteadyRule::Snia { metric, .. } => metric,
        }
    }

    /// How fio writes the criterion (`iops:10.000000%`, `bw_slope:1048576.000000`), or SNIA's rule in words.
    pub fn label(&self) -> String {
        match *self {
            SteadyRule::Deviation { metric, limit, percent } => fio_label(metric.name(), limit, percent),
            SteadyRule::Slope { metric, limit, percent } => {
                fio_label(&format!("{}_slope", metric.name()), limit, percent)
            }
            SteadyRule::Snia { metric, excursion_pct, slope_pct } => format!(
                "snia:{} range within {excursion_pct}% and slope excursion within {slope_pct}% of the mean",
                metric.name()
            ),
        }
    }
}

fn fio_label(criterion: &str, limit: f64, percent: bool) -> String {
    format!("{criterion}:{limit:.6}{}", if percent { "%" } else { "" })
}

/// What the run checks: the rule, the window and the rounds left out at the start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyConfig {
    pub rule: SteadyRule,
    /// Rounds (full reporting intervals) in the rolling window, at least 2.
    pub window: u32,
    /// Rounds at the start of the phase that are not collected (fio ss_ramp).
    pub skip: u32,
}

/// What the window's figures were at the last check.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Evaluation {
    mean: f64,
    max_deviation: f64,
    slope: f64,
    range: f64,
    criterion: f64,
}

/// How a phase's steady-state check ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyOutcome {
    pub rule: SteadyRule,
    /// Rounds in the window.
    pub window: u32,
    /// Length of one round (the reporting interval), seconds.
    pub round_s: f64,
    /// The criterion held and the phase was ended there.
    pub attained: bool,
    /// The round (1-based, counted from the start of measurement) after which it held; `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// The value compared with the limit at the last check (percent of the mean for percentage limits and for
    /// SNIA's range); 0 when the window never filled.
    pub criterion: f64,
    /// Largest distance of a round from the window's mean (ops/s or bytes/s).
    pub max_deviation: f64,
    /// Least-squares slope of the window, per round (ops/s or bytes/s per round).
    pub slope: f64,
    /// max − min over the window.
    pub range: f64,
    /// Mean of the judged rate over the window.
    pub mean: f64,
    /// The window's IOPS, oldest first (fewer than `window` when it never filled).
    pub iops: Vec<f64>,
    /// The window's bandwidth in bytes per second, oldest first.
    pub bw: Vec<f64>,
}

/// The rolling window of one phase.
#[derive(Debug, Clone)]
pub struct SteadyTracker {
    config: SteadyConfig,
    /// Ring buffers of `window` rounds; `head` is the oldest once full.
    iops: Vec<f64>,
    bw: Vec<f64>,
    head: usize,
    len: usize,
    last: Evaluation,
    attained: Option<u32>,
}

impl SteadyTracker {
    pub fn new(config: SteadyConfig) -> SteadyTracker {
        let n = config.window.max(2) as usize;
        SteadyTracker {
            config: SteadyConfig { window: n as u32, ..config },
            iops: vec![0.0; n],
            bw: vec![0.0; n],
            head: 0,
            len: 0,
            last: Evaluation::default(),
            attained: None,
        }
    }

    /// One full round's rates; `round` is its 1-based number from the start of measurement. Returns true when
    /// the window has just become steady (once: later rounds are ignored).
    pub fn push(&mut self, round: u32, iops: f64, bw: f64) -> bool {
        if self.attained.is_some() || round <= self.config.skip {
            return false;
        }
        let n = self.iops.len();
        let slot = (self.head + self.len) % n;
        (self.iops[slot], self.bw[slot]) = (iops, bw);
        if self.len < n {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % n;
        }
        if self.len < n {
            return false;
        }
        let (eval, steady) = self.evaluate();
        self.last = eval;
        if steady {
            self.attained = Some(round);
        }
        steady
    }

    /// The window's figures and whether the rule holds. Percentages of a zero mean never hold (an idle window
    /// is not a steady rate).
    fn evaluate(&self) -> (Evaluation, bool) {
        let values = match self.config.rule.metric() {
            SteadyMetric::Iops => &self.iops,
            SteadyMetric::Bw => &self.bw,
        };
        let n = values.len();
        let y = |i: usize| values[(self.head + i) % n];
        let nf = n as f64;
        let mean = (0..n).map(y).sum::<f64>() / nf;
        let (mut max_deviation, mut lo, mut hi) = (0.0f64, f64::MAX, f64::MIN);
        for v in (0..n).map(y) {
            max_deviation = max_deviation.max((v - mean).abs());
            (lo, hi) = (lo.min(v), hi.max(v));
        }
        // Least squares over x = 0..n-1 (rounds are equally spaced, as fio assumes):
        // slope = (Σxy − Σx·Σy/n) / (Σx² − (Σx)²/n).
        let sum_x = nf * (nf - 1.0) / 2.0;
        let sum_x2 = (nf - 1.0) * nf * (2.0 * nf - 1.0) / 6.0;
        let sum_xy: f64 = (0..n).map(|i| i as f64 * y(i)).sum();
        let slope = (sum_xy - sum_x * mean) / (sum_x2 - sum_x * sum_x / nf);
        let share = |v: f64| if mean > 0.0 { 100.0 * v / mean } else { f64::INFINITY };
        let (criterion, steady) = match self.config.rule {
            SteadyRule::Deviation { limit, percent, .. } => {
                let c = if percent { share(max_deviation) } else { max_deviation };
                (c, c < limit)
            }
            SteadyRule::Slope { limit, percent, .. } => {
                let c = if percent { share(slope) } else { slope };
                (c, c.abs() < limit)
            }
            SteadyRule::Snia { excursion_pct, slope_pct, .. } => {
                let c = share(hi - lo);
                (c, c <= excursion_pct && share((slope * (nf - 1.0)).abs()) <= slope_pct)
            }
        };
        let criterion = if criterion.is_finite() { criterion } else { 0.0 };
        let steady = steady && mean > 0.0;
        (Evaluation { mean, max_deviation, slope, range: hi - lo, criterion }, steady)
    }

    /// The result: the rule, whether and when it held, and the window oldest first; `round` is the length of a
    /// round. Called once, at the end.
    pub fn outcome(&self, round: Duration) -> SteadyOutcome {
        let n = self.iops.len();
        let ordered = |v: &[f64]| (0..self.len).map(|i| v[(self.head + i) % n]).collect::<Vec<f64>>();
        let e = self.last;
        SteadyOutcome {
            rule: self.config.rule,
            window: self.config.window,
            round_s: round.as_secs_f64(),
            attained: self.attained.is_some(),
            round: self.attained,
            criterion: e.criterion,
            max_deviation: e.max_deviation,
            slope: e.slope,
            range: e.range,
            mean: e.mean,
            iops: ordered(&self.iops),
            bw: ordered(&self.bw),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(rule: SteadyRule, window: u32, skip: u32) -> SteadyTracker {
        SteadyTracker::new(SteadyConfig { rule, window, skip })
    }

    fn feed(t: &mut SteadyTracker, values: &[f64]) -> Option<u32> {
        (1..).zip(values).find_map(|(round, &v)| t.push(round, v, v * 4096.0).then_some(round))
    }

    const IOPS_10PCT: SteadyRule = SteadyRule::Deviation { metric: SteadyMetric::Iops, limit: 10.0, percent: true };

    #[test]
    fn deviation_holds_once_every_round_of_a_full_window_is_near_the_mean() {
        let mut t = tracker(IOPS_10PCT, 3, 0);
        // 100 is 25 % off the mean of 100,150,150 (133.3); 150,150,140 are within 5 %.
        assert_eq!(feed(&mut t, &[100.0, 150.0, 150.0, 140.0, 150.0]), Some(4));
        let o = t.outcome(Duration::from_secs(1));
        assert!(o.attained && o.round == Some(4));
        assert_eq!(o.iops, [150.0, 150.0, 140.0]);
        assert!((o.mean - 440.0 / 3.0).abs() < 1e-9);
        assert!((o.criterion - 100.0 * (440.0 / 3.0 - 140.0) / (440.0 / 3.0)).abs() < 1e-9);
    }

    #[test]
    fn slope_is_least_squares_per_round_and_percent_of_the_mean() {
        let rule = SteadyRule::Slope { metric: SteadyMetric::Bw, limit: 1.0, percent: true };
        let mut t = tracker(rule, 4, 0);
        // A line rising 10 per round over a mean of 115: slope 10, 8.7 % of the mean.
        assert_eq!(feed(&mut t, &[100.0, 110.0, 120.0, 130.0]), None);
        let o = t.outcome(Duration::from_secs(1));
        assert!((o.slope - 10.0 * 4096.0).abs() < 1e-6, "{o:?}");
        assert!((o.criterion - 100.0 * 10.0 / 115.0).abs() < 1e-9);
        assert!(!o.attained && o.round.is_none());
        // The window rolls on: 110..130,130 and 120,130,130,130 still slope (2.3 % for the latter); once it is
        // flat, three rounds later, it holds.
        assert_eq!(feed(&mut t, &[130.0, 130.0, 130.0, 130.0]), Some(3));
    }

    #[test]
    fn absolute_limits_are_in_the_metrics_own_unit() {
        let rule = SteadyRule::Deviation { metric: SteadyMetric::Iops, limit: 3.0, percent: false };
        let mut t = tracker(rule, 2, 0);
        // 100 and 104: each 2 from the mean, below 3.
        assert_eq!(feed(&mut t, &[100.0, 104.0]), Some(2));
    }

    #[test]
    fn snia_needs_both_the_range_and_the_slope_excursion_within_their_shares() {
        let snia = SteadyRule::Snia { metric: SteadyMetric::Iops, excursion_pct: 20.0, slope_pct: 10.0 };
        // Range 16 % of the mean of 100 but rising 4 per round: excursion 16 %, above 10 %.
        let mut t = tracker(snia, 5, 0);
        assert_eq!(feed(&mut t, &[92.0, 96.0, 100.0, 104.0, 108.0]), None);
        // Range 16 % with no trend: steady.
        let mut t = tracker(snia, 5, 0);
        assert_eq!(feed(&mut t, &[92.0, 108.0, 100.0, 108.0, 92.0]), Some(5));
        // Range 30 % with no trend: not steady.
        let mut t = tracker(snia, 5, 0);
        assert_eq!(feed(&mut t, &[85.0, 115.0, 100.0, 115.0, 85.0]), None);
    }

    #[test]
    fn skipped_rounds_are_not_collected_and_an_idle_window_is_not_steady() {
        let mut t = tracker(IOPS_10PCT, 2, 2);
        assert_eq!(feed(&mut t, &[1.0, 500.0, 100.0, 100.0]), Some(4));
        assert_eq!(t.outcome(Duration::from_secs(1)).iops, [100.0, 100.0]);
        let mut idle = tracker(IOPS_10PCT, 2, 0);
        assert_eq!(feed(&mut idle, &[0.0, 0.0, 0.0]), None);
        assert_eq!(idle.outcome(Duration::from_secs(1)).criterion, 0.0);
    }

    #[test]
    fn labels_are_fios() {
        assert_eq!(IOPS_10PCT.label(), "iops:10.000000%");
        let slope = SteadyRule::Slope { metric: SteadyMetric::Bw, limit: 1048576.0, percent: false };
        assert_eq!(slope.label(), "bw_slope:1048576.000000");
    }
}
