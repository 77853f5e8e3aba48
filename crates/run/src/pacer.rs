//! The pacer: when each operation of a rate-limited worker is *due*.
//!
//! Due times follow a fixed schedule from the start of the phase — evenly spaced (linear) or with exponential
//! gaps of the same mean (Poisson) — and do not slide when the storage falls behind. That is the point: the
//! worker measures latency from the due time as well as from submission, so a slow device shows up as growing
//! latency instead of as a quietly lower request rate (coordinated omission).
//!
//! The pacer never reads a clock: it works in offsets from the phase start, so tests drive it with any times
//! they like.

use std::time::Duration;

use crate::plan::{Arrivals, Pacing};
use crate::workload::Rng;

pub struct Pacer {
    /// Offset from the phase start of the next operation's due time, in nanoseconds.
    next_due_ns: f64,
    /// Mean gap between operations, ns (operation pacing).
    gap_ns: f64,
    /// ns per byte (byte pacing): the gap after an operation is its size times this.
    ns_per_byte: Option<f64>,
    poisson: Option<Rng>,
}

impl Pacer {
    pub fn new(pacing: &Pacing, seed: u64) -> Pacer {
        Pacer {
            next_due_ns: 0.0,
            gap_ns: 1e9 / pacing.ops_per_sec,
            ns_per_byte: pacing.bytes_per_sec.map(|b| 1e9 / b),
            poisson: (pacing.arrivals == Arrivals::Poisson).then(|| Rng::new(seed ^ 0xA11_1CE)),
        }
    }

    /// The due time of the next operation (of `len` bytes), as an offset from the phase start; advances the
    /// schedule.
    #[inline]
    pub fn next_due(&mut self, len: u32) -> Duration {
        let due = self.next_due_ns;
        let mean_gap = match self.ns_per_byte {
            Some(per_byte) => per_byte * f64::from(len),
            None => self.gap_ns,
        };
        let gap = match &mut self.poisson {
            // Exponential inter-arrival times: -ln(U)·mean, with U in (0, 1].
            Some(rng) => -(1.0 - rng.unit()).ln() * mean_gap,
            None => mean_gap,
        };
        self.next_due_ns += gap;
        Duration::from_nanos(due as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(ops: f64, bytes: Option<f64>, arrivals: Arrivals) -> Pacing {
        Pacing { ops_per_sec: ops, bytes_per_sec: bytes, arrivals }
    }

    #[test]
    fn linear_operations_are_evenly_spaced() {
        let mut pacer = Pacer::new(&pacing(100.0, None, Arrivals::Linear), 1);
        let dues: Vec<Duration> = (0..4).map(|_| pacer.next_due(4096)).collect();
        assert_eq!(dues, [0, 10, 20, 30].map(Duration::from_millis));
    }

    #[test]
    fn byte_pacing_spaces_by_size() {
        // 1 MB/s: a 1 MB operation takes a second of budget, a 500 kB one half.
        let mut pacer = Pacer::new(&pacing(1.0, Some(1e6), Arrivals::Linear), 1);
        assert_eq!(pacer.next_due(1_000_000), Duration::ZERO);
        assert_eq!(pacer.next_due(500_000), Duration::from_secs(1));
        assert_eq!(pacer.next_due(4096), Duration::from_millis(1500));
    }

    #[test]
    fn poisson_keeps_the_mean_rate() {
        let mut pacer = Pacer::new(&pacing(1000.0, None, Arrivals::Poisson), 7);
        let n = 100_000;
        let mut last = Duration::ZERO;
        let mut gaps_below_half_mean = 0;
        for _ in 0..n {
            let due = pacer.next_due(4096);
            if (due - last) < Duration::from_micros(500) {
                gaps_below_half_mean += 1;
            }
            last = due;
        }
        // n arrivals at 1000/s take about n ms.
        let secs = last.as_secs_f64();
        assert!((secs - 100.0).abs() < 2.0, "{secs}");
        // Exponential gaps: P(gap < mean/2) = 1 - e^-0.5 ≈ 39 %, where linear gaps would give 0 %.
        let share = f64::from(gaps_below_half_mean) / f64::from(n);
        assert!((0.37..0.42).contains(&share), "{share}");
    }
}
