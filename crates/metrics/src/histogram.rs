//! A fixed-memory, log-linear latency histogram with a bounded relative error, merged by addition.
//!
//! Bucket scheme (the same idea as HdrHistogram and fio's `stat.h`, with finer buckets than fio):
//! - values below 2^8 = 256 ns each have their own bucket (exact);
//! - every octave [2^k, 2^(k+1)) above that is split into 2^7 = 128 equal buckets of width 2^(k-7).
//!
//! A bucket's width is therefore at most 1/128 of its lower bound, and reporting its midpoint is off by at most
//! 1/256 ≈ 0.39 % of the true value. Octaves run up to 2^44 ns (about 4.9 hours); larger values land in the last
//! bucket, and the exact minimum and maximum are kept separately. 4 864 buckets × 8 bytes ≈ 38 KiB, whatever the
//! number of samples. Recording is a leading-zero count, a shift and an add: no allocation, no branches on data
//! beyond the small-value test.
//!
//! Mean and standard deviation come from exact running sums, not from buckets.

use serde::{Deserialize, Serialize};

const LINEAR_BITS: u32 = 8; // values < 256 are exact
const SUB_BITS: u32 = 7; // 128 buckets per octave
const MAX_OCTAVE: u32 = 44; // 2^44 ns ≈ 4.9 h
const LINEAR: usize = 1 << LINEAR_BITS;
const PER_OCTAVE: usize = 1 << SUB_BITS;
pub(super) const BUCKETS: usize = LINEAR + (MAX_OCTAVE - LINEAR_BITS) as usize * PER_OCTAVE;

/// Latency distribution in nanoseconds. The buckets are allocated by the first `record` or `merge`, so a
/// histogram that is never used (a file-system class in a raw phase, a spare recorder) costs a few words.
#[derive(Clone)]
pub struct Histogram {
    pub(super) counts: Box<[u64]>,
    pub(super) count: u64,
    pub(super) min: u64,
    pub(super) max: u64,
    pub(super) sum: u128,
    pub(super) sum_squares: u128,
}

fn bucket_of(value: u64) -> usize {
    if value < LINEAR as u64 {
        return value as usize;
    }
    let octave = 63 - value.leading_zeros(); // >= LINEAR_BITS
    if octave >= MAX_OCTAVE {
        return BUCKETS - 1;
    }
    let sub = (value >> (octave - SUB_BITS)) as usize & (PER_OCTAVE - 1);
    LINEAR + (octave - LINEAR_BITS) as usize * PER_OCTAVE + sub
}

/// Lowest value and width of a bucket.
pub(super) fn bucket_range(index: usize) -> (u64, u64) {
    if index < LINEAR {
        return (index as u64, 1);
    }
    let octave = LINEAR_BITS + ((index - LINEAR) / PER_OCTAVE) as u32;
    let sub = ((index - LINEAR) % PER_OCTAVE) as u64;
    let width = 1u64 << (octave - SUB_BITS);
    ((1u64 << octave) + sub * width, width)
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: Box::default(), count: 0, min: u64::MAX, max: 0, sum: 0, sum_squares: 0 }
    }

    #[inline]
    pub fn record(&mut self, nanos: u64) {
        if self.counts.is_empty() {
            self.allocate();
        }
        self.counts[bucket_of(nanos)] += 1;
        self.count += 1;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
        self.sum += u128::from(nanos);
        self.sum_squares = self.sum_squares.saturating_add(u128::from(nanos) * u128::from(nanos));
    }

    /// Adds every sample of `other` to this histogram.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        if self.counts.is_empty() {
            self.allocate();
        }
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_squares = self.sum_squares.saturating_add(other.sum_squares);
    }

    #[cold]
    pub(super) fn allocate(&mut self) {
        self.counts = vec![0; BUCKETS].into_boxed_slice();
    }

    pub fn reset(&mut self) {
        if self.count > 0 {
            self.counts.fill(0);
        }
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_squares = 0;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.sum as f64 / self.count as f64 }
    }

    /// Population standard deviation.
    pub fn stddev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        (self.sum_squares as f64 / n - mean * mean).max(0.0).sqrt()
    }

    /// The value below which `percent` % of samples fall (nearest rank), as the midpoint of its bucket, clamped
    /// to the exact min and max. 0 when empty.
    pub fn percentile(&self, percent: f64) -> u64 {
        self.percentiles(&[percent])[0].1
    }

    /// Several percentiles in one pass over the buckets; `percents` must be ascending.
    pub fn percentiles(&self, percents: &[f64]) -> Vec<(f64, u64)> {
        debug_assert!(percents.windows(2).all(|w| w[0] <= w[1]), "percentiles must be ascending");
        if self.count == 0 {
            return percents.iter().map(|&p| (p, 0)).collect();
        }
        let rank = |p: f64| ((p / 100.0) * self.count as f64).ceil().clamp(1.0, self.count as f64) as u64;
        let mut out = Vec::with_capacity(percents.len());
        let mut wanted = percents.iter().copied().peekable();
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            while let Some(&p) = wanted.peek()
                && seen >= rank(p)
            {
                let (low, width) = bucket_range(index);
                out.push((p, (low + width / 2).clamp(self.min, self.max)));
                wanted.next();
            }
            if wanted.peek().is_none() {
                break;
            }
        }
        out.extend(wanted.map(|p| (p, self.max)));
        out
    }

    /// The non-empty buckets, ascending: (the value reported for the bucket, its midpoint clamped to the exact min
    /// and max as percentiles are; how many samples fell in it). What fio's json+ calls bins.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, n)| **n > 0).map(|(index, &n)| {
            let (low, width) = bucket_range(index);
            ((low + width / 2).clamp(self.min, self.max), n)
        })
    }

    /// A compact summary for results: count, min, mean, stddev, max and the given percentiles.
    pub fn summary(&self, percents: &[f64]) -> LatencySummary {
        LatencySummary {
            samples: self.count,
            min_ns: self.min(),
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            max_ns: self.max,
            percentiles_ns: self.percentiles(percents).into_iter().map(|(p, v)| Percentile { p, ns: v }).collect(),
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Histogram(n={}, min={}, mean={:.0}, max={})", self.count, self.min(), self.mean(), self.max)
    }
}

/// fio's default percentile list (`percentile_list`).
pub const DEFAULT_PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// One percentile of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The percentile, 0–100.
    pub p: f64,
    /// Latency at that percentile, nanoseconds.
    pub ns: u64,
}

/// Latency statistics of one operation type, all in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencySummary {
    /// Number of latencies recorded.
    pub samples: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    pub max_ns: u64,
    /// Ascending percentiles.
    pub percentiles_ns: Vec<Percentile>,
}

impl LatencySummary {
    /// The value at percentile `p` if it was computed.
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles_ns.iter().find(|x| (x.p - p).abs() < 1e-9).map(|x| x.ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 0..256 {
            h.record(v);
        }
        assert_eq!(h.percentile(50.0), 127);
        assert_eq!(h.percentile(100.0), 255);
        assert_eq!(h.min(), 0);
    }

    #[test]
    fn percentiles_of_a_uniform_spread() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for p in [1.0, 50.0, 90.0, 99.0, 99.9] {
            let exact = (p / 100.0 * 100_000.0) * 1000.0;
            let got = h.percentile(p) as f64;
            assert!((got - exact).abs() / exact < 0.005, "p{p}: {got} vs {exact}");
        }
        assert_eq!(h.max(), 100_000_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in 0..5000u64 {
            let x = v * v * 37 + 11;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.percentiles(&DEFAULT_PERCENTILES), all.percentiles(&DEFAULT_PERCENTILES));
        assert_eq!(a.stddev(), all.stddev());
    }

    #[test]
    fn huge_values_saturate_into_the_last_bucket_but_keep_the_exact_max() {
        let mut h = Histogram::new();
        h.record(u64::MAX / 2);
        assert_eq!(h.max(), u64::MAX / 2);
        assert_eq!(h.percentile(50.0), u64::MAX / 2);
    }

    #[test]
    fn buckets_count_every_sample_in_ascending_order() {
        let mut h = Histogram::new();
        for v in [5u64, 5, 300, 1_000_000, 1_000_100] {
            h.record(v);
        }
        let bins: Vec<(u64, u64)> = h.buckets().collect();
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 5);
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0), "{bins:?}");
        assert_eq!(bins[0], (5, 2));
        assert!(Histogram::new().buckets().next().is_none());
    }

    #[test]
    fn reset_empties() {
        let mut h = Histogram::new();
        h.record(5);
        h.reset();
        assert!(h.is_empty());
        assert_eq!(h.percentile(99.0), 0);
        assert_eq!(h.min(), 0);
    }

    proptest! {
        #[test]
        fn relative_error_is_bounded(v in 1u64..(1u64 << 44)) {
            let mut h = Histogram::new();
            h.record(v);
            h.record(v); // min == max would clamp; use bucket midpoint directly instead
            let (low, width) = bucket_range(bucket_of(v));
            prop_assert!(low <= v && v < low + width);
            let mid = low + width / 2;
            let err = (mid as f64 - v as f64).abs() / v as f64;
            prop_assert!(err <= 1.0 / 256.0 + 1e-12, "v={v} mid={mid} err={err}");
        }

        #[test]
        fn buckets_are_monotonic(a in 0u64..(1u64 << 50), b in 0u64..(1u64 << 50)) {
            if a <= b { prop_assert!(bucket_of(a) <= bucket_of(b)); }
        }
    }
}
