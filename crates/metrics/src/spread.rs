//! The spread of a rate over intervals (fio's `bw_min`, `bw_max`, `bw_mean`, `bw_dev`, `bw_samples` and the
//! `iops_*` figures), kept in constant memory with Welford's running mean and sum of squared deviations, and what
//! one worker measured over a whole phase (`WorkerTotals`), for reports that show every worker.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::recorder::Recorder;

/// Running min, max, mean and variance of a series of samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    samples: u64,
    min: f64,
    max: f64,
    mean: f64,
    /// Sum of squared deviations from the running mean (Welford).
    m2: f64,
}

impl Spread {
    pub fn add(&mut self, x: f64) {
        if self.samples == 0 {
            (self.min, self.max) = (x, x);
        }
        self.samples += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        let delta = x - self.mean;
        self.mean += delta / self.samples as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// The summary, with fio's sample standard deviation (n − 1 in the denominator).
    pub fn summary(&self) -> RateSpread {
        RateSpread {
            samples: self.samples,
            min: self.min,
            max: self.max,
            mean: self.mean,
            stddev: if self.samples > 1 { (self.m2 / (self.samples - 1) as f64).sqrt() } else { 0.0 },
        }
    }
}

/// A rate's spread over the reporting intervals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RateSpread {
    /// Intervals sampled (full intervals only).
    pub samples: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (n − 1), as fio's.
    pub stddev: f64,
}

/// What one worker measured over a phase: its own totals and the spread of its bandwidth (bytes per second) and
/// operation rate over full intervals, for reads and writes.
#[derive(Debug, Clone)]
pub struct WorkerTotals {
    pub recorder: Recorder,
    /// Measured time until this worker stopped.
    pub measured: Duration,
    /// Read and write bandwidth, bytes per second, per full interval.
    pub bandwidth: [Spread; 2],
    /// Read and write operations per second, per full interval.
    pub ops: [Spread; 2],
}

impl WorkerTotals {
    pub fn new() -> WorkerTotals {
        WorkerTotals {
            recorder: Recorder::new(false),
            measured: Duration::ZERO,
            bandwidth: [Spread::default(); 2],
            ops: [Spread::default(); 2],
        }
    }
}

impl Default for WorkerTotals {
    fn default() -> Self {
        WorkerTotals::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_the_direct_formulas() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mut s = Spread::default();
        xs.iter().for_each(|&x| s.add(x));
        let r = s.summary();
        assert_eq!((r.samples, r.min, r.max, r.mean), (8, 2.0, 9.0, 5.0));
        let sample_var = xs.iter().map(|x| (x - 5.0) * (x - 5.0)).sum::<f64>() / 7.0;
        assert!((r.stddev - sample_var.sqrt()).abs() < 1e-12);
        assert_eq!(Spread::default().summary(), RateSpread::default());
    }
}
