//! Per-interval series with bounded memory, for runs of many hours.
//!
//! A series keeps at most `capacity` points. When it is full, neighbouring points are merged pairwise and every
//! later point covers twice as many intervals as before, so a 10-hour run at 1 s intervals keeps a faithful
//! shape in a fixed number of points. The CSV export receives every interval as it happens, so no detail is lost
//! for those who want it.
//!
//! Merging counts is exact. A merged point's percentiles are the larger of the two (an upper bound: the exact
//! value would need the interval histograms, which are not kept).

use serde::{Deserialize, Serialize};

use super::histogram::Histogram;
use super::recorder::{OpClass, Recorder};

/// Something that can stand for two adjacent intervals at once.
pub trait Mergeable: Clone {
    /// Absorbs the interval that directly follows `self`.
    fn absorb(&mut self, next: &Self);
}

/// A series of points with at most `capacity` entries (see the module notes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoundedSeries<T> {
    points: Vec<T>,
    capacity: usize,
    /// How many raw intervals each stored point covers now.
    stride: u32,
    /// Raw intervals not yet folded into a stored point, and how many.
    #[serde(skip)]
    pending: Option<(T, u32)>,
}

impl<T: Mergeable> BoundedSeries<T> {
    pub fn new(capacity: usize) -> BoundedSeries<T> {
        BoundedSeries { points: Vec::new(), capacity: capacity.max(2), stride: 1, pending: None }
    }

    pub fn push(&mut self, point: T) {
        let (merged, n) = match self.pending.take() {
            Some((mut acc, n)) => {
                acc.absorb(&point);
                (acc, n + 1)
            }
            None => (point, 1),
        };
        if n < self.stride {
            self.pending = Some((merged, n));
            return;
        }
        if self.points.len() == self.capacity {
            self.compact();
        }
        self.points.push(merged);
    }

    fn compact(&mut self) {
        let mut merged = Vec::with_capacity(self.capacity);
        for pair in self.points.chunks(2) {
            let mut first = pair[0].clone();
            if let Some(second) = pair.get(1) {
                first.absorb(second);
            }
            merged.push(first);
        }
        self.points = merged;
        self.stride *= 2;
    }

    /// The stored points plus any not-yet-full trailing point.
    pub fn points(&self) -> Vec<T> {
        let mut all = self.points.clone();
        if let Some((p, _)) = &self.pending {
            all.push(p.clone());
        }
        all
    }

    pub fn stride(&self) -> u32 {
        self.stride
    }

    pub fn len(&self) -> usize {
        self.points.len() + usize::from(self.pending.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The figures of one operation class over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassPoint {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Operations per second over the interval.
    pub iops: f64,
    /// Decimal megabytes per second.
    pub mbps: f64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_p999_ns: u64,
    pub lat_max_ns: u64,
    /// Paced runs: 99th percentile of latency from the due time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_p99_ns: Option<u64>,
    /// The interval's latencies in fio's histogram bins, (bin, count) for the bins that hold any: kept only for a
    /// phase that writes fio's histogram log (`write_hist_log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fio_hist: Option<Vec<(u16, u64)>>,
}

impl ClassPoint {
    pub fn from_stats(recorder: &Recorder, class: OpClass, seconds: f64) -> ClassPoint {
        let stats = recorder.stats(class);
        let h: &Histogram = &stats.latency;
        let per_sec = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
        ClassPoint {
            ops: stats.ops,
            bytes: stats.bytes,
            errors: stats.errors,
            iops: per_sec(stats.ops as f64),
            mbps: per_sec(stats.bytes as f64) / 1e6,
            lat_mean_ns: h.mean(),
            lat_p50_ns: h.percentile(50.0),
            lat_p99_ns: h.percentile(99.0),
            lat_p999_ns: h.percentile(99.9),
            lat_max_ns: h.max(),
            due_p99_ns: stats.due_latency.as_ref().filter(|d| !d.is_empty()).map(|d| d.percentile(99.0)),
            fio_hist: None,
        }
    }

    /// Combines with the next interval; `seconds` are the two spans, for recomputing rates.
    pub fn absorb(&mut self, next: &ClassPoint, my_seconds: f64, next_seconds: f64) {
        let total_ops = self.ops + next.ops;
        if total_ops > 0 {
            self.lat_mean_ns =
                (self.lat_mean_ns * self.ops as f64 + next.lat_mean_ns * next.ops as f64) / total_ops as f64;
        }
        self.ops = total_ops;
        self.bytes += next.bytes;
        self.errors += next.errors;
        let seconds = my_seconds + next_seconds;
        if seconds > 0.0 {
            self.iops = self.ops as f64 / seconds;
            self.mbps = self.bytes as f64 / seconds / 1e6;
        }
        self.lat_p50_ns = self.lat_p50_ns.max(next.lat_p50_ns);
        self.lat_p99_ns = self.lat_p99_ns.max(next.lat_p99_ns);
        self.lat_p999_ns = self.lat_p999_ns.max(next.lat_p999_ns);
        self.lat_max_ns = self.lat_max_ns.max(next.lat_max_ns);
        self.due_p99_ns = match (self.due_p99_ns, next.due_p99_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if let Some(more) = &next.fio_hist {
            super::fio_bins::add_fio_bins(self.fio_hist.get_or_insert_with(Vec::new), more);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Span {
        first: u32,
        last: u32,
        total: u64,
    }

    impl Mergeable for Span {
        fn absorb(&mut self, next: &Self) {
            assert_eq!(self.last + 1, next.first, "only adjacent intervals merge");
            self.last = next.last;
            self.total += next.total;
        }
    }

    #[test]
    fn stays_bounded_and_keeps_every_count() {
        let mut series = BoundedSeries::new(8);
        for i in 0..1000u32 {
            series.push(Span { first: i, last: i, total: u64::from(i) });
            assert!(series.len() <= 9);
        }
        let points = series.points();
        assert_eq!(points.first().unwrap().first, 0);
        assert_eq!(points.last().unwrap().last, 999);
        assert_eq!(points.iter().map(|p| p.total).sum::<u64>(), (0..1000u64).sum::<u64>());
        assert!(series.stride() >= 128);
    }

    #[test]
    fn short_series_are_untouched() {
        let mut series = BoundedSeries::new(8);
        for i in 0..5u32 {
            series.push(Span { first: i, last: i, total: 1 });
        }
        assert_eq!(series.points().len(), 5);
        assert_eq!(series.stride(), 1);
    }

    #[test]
    fn class_points_merge_rates_over_the_combined_span() {
        let mut a = ClassPoint { ops: 100, bytes: 409_600, lat_mean_ns: 100.0, lat_p99_ns: 500, ..Default::default() };
        let b = ClassPoint { ops: 300, bytes: 1_228_800, lat_mean_ns: 200.0, lat_p99_ns: 400, ..Default::default() };
        a.absorb(&b, 1.0, 1.0);
        assert_eq!(a.ops, 400);
        assert_eq!(a.iops, 200.0);
        assert_eq!(a.lat_mean_ns, 175.0);
        assert_eq!(a.lat_p99_ns, 500);
    }
}
