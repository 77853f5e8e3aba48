//! A latency histogram in fio's own bins, for fio's histogram log (`write_hist_log`): fio 3 keeps latencies in
//! nanoseconds in `FIO_IO_U_PLAT_NR` = 29 groups × 64 bins = 1,856 bins (`stat.h`): values below 128 ns each have
//! their own bin, then each octave [2^k, 2^(k+1)) has 64 bins of width 2^(k−6); the last bin takes everything
//! from about 17 s up. `plat_val_to_idx` in fio's `stat.c` is the rule, rewritten here.
//!
//! The histogram's own buckets (`histogram.rs`: exact below 256 ns, 128 per octave above) are each inside one
//! fio bin, so moving counts across loses nothing fio would have kept.

use super::histogram::{Histogram, bucket_range};

/// fio's bins per histogram: FIO_IO_U_PLAT_GROUP_NR (29) × FIO_IO_U_PLAT_VAL (64).
pub const FIO_HIST_BINS: usize = 29 * 64;

const PLAT_BITS: u32 = 6;

/// fio's bin of a latency in nanoseconds (`plat_val_to_idx`).
pub fn fio_bin_of(ns: u64) -> usize {
    let msb = if ns == 0 { 0 } else { 63 - ns.leading_zeros() };
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) << PLAT_BITS) as usize;
    let offset = ((ns >> error_bits) & ((1 << PLAT_BITS) - 1)) as usize;
    (base + offset).min(FIO_HIST_BINS - 1)
}

impl Histogram {
    /// The counts in fio's bins, as (bin, count) pairs for the bins that hold any, in bin order.
    pub fn fio_bins(&self) -> Vec<(u16, u64)> {
        let mut bins: Vec<(u16, u64)> = Vec::new();
        for (index, &count) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            let bin = fio_bin_of(bucket_range(index).0) as u16;
            match bins.last_mut() {
                Some((last, n)) if *last == bin => *n += count,
                _ => bins.push((bin, count)),
            }
        }
        bins
    }
}

/// Adds `more` into `into`, both sparse (bin, count) lists in bin order.
pub fn add_fio_bins(into: &mut Vec<(u16, u64)>, more: &[(u16, u64)]) {
    let mut merged = Vec::with_capacity(into.len() + more.len());
    let (mut a, mut b) = (into.iter().peekable(), more.iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.0 == y.0 => (x.0, x.1 + y.1),
            (Some(x), Some(y)) if x.0 < y.0 => **x,
            (Some(_), Some(y)) => **y,
            (Some(x), None) => **x,
            (None, Some(y)) => **y,
            (None, None) => break,
        };
        if a.peek().is_some_and(|x| x.0 == next.0) {
            a.next();
        }
        if b.peek().is_some_and(|y| y.0 == next.0) {
            b.next();
        }
        merged.push(next);
    }
    *into = merged;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_bins_follow_plat_val_to_idx() {
        // Exact below 128 ns, then 64 bins per octave: 128..=129 share bin 128, 1,000 ns is 128 + 64·2 + 58 - …
        assert_eq!(
            (fio_bin_of(0), fio_bin_of(127), fio_bin_of(128), fio_bin_of(129), fio_bin_of(130)),
            (0, 127, 128, 128, 129)
        );
        // 1 µs: msb 9, error bits 3, base 256, offset (1000 >> 3) & 63 = 125 & 63 = 61.
        assert_eq!(fio_bin_of(1000), 256 + 61);
        // Each octave starts a new group of 64.
        assert_eq!((fio_bin_of(1 << 20), fio_bin_of((1 << 21) - 1)), (15 * 64, 15 * 64 + 63));
        assert_eq!(fio_bin_of(u64::MAX), FIO_HIST_BINS - 1, "the last bin takes the rest");
    }

    #[test]
    fn a_histogram_moves_into_fio_bins_without_losing_a_count() {
        let mut h = Histogram::new();
        for ns in [50, 50, 129, 1000, 1007, 1008, 250_000, 3_000_000, 90_000_000_000] {
            h.record(ns);
        }
        let bins = h.fio_bins();
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 9);
        assert_eq!(bins[0], (50, 2));
        // 1000 and 1007 share fio's bin (width 8 from 1000 = 125·8); 1008 starts the next.
        assert!(bins.contains(&(fio_bin_of(1000) as u16, 2)) && bins.contains(&(fio_bin_of(1008) as u16, 1)));
        for (bin, _) in &bins {
            assert!((*bin as usize) < FIO_HIST_BINS);
        }
        let mut sum = bins.clone();
        add_fio_bins(&mut sum, &[(0, 1), (50, 3), (1855, 1)]);
        assert_eq!(sum.first(), Some(&(0, 1)));
        assert_eq!(sum[1], (50, 5));
        assert_eq!(sum.iter().map(|b| b.1).sum::<u64>(), 14);
        assert!(sum.windows(2).all(|w| w[0].0 < w[1].0), "in bin order, each bin once: {sum:?}");
    }
}
