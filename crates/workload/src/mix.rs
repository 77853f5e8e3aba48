//! A worker that runs several workloads at once (vdbench: the wds that share one sd's threads, or every wd of a
//! run when their skew must hold under `iorate=max`): each operation is drawn from one of its sources with the
//! probability of that source's weight.
//!
//! Drawing by weight rather than taking turns keeps the split exact over any stretch of operations whatever each
//! source's operations cost: a slow workload's operations wait in the queue like the others, and the counts
//! stay in the proportions asked for, which is what vdbench's skew means. One source costs no draw at all.

use super::rng::Rng;
use super::source::{Op, OpSource, WorkloadConfig, WorkloadError};

/// Weights are kept as integers out of this total, so that a draw is one multiply-shift.
const SCALE: f64 = 1_000_000_000.0;

pub struct MixSource {
    sources: Vec<OpSource>,
    /// Running sums of the weights, scaled to integers; the last is the total.
    cumulative: Vec<u64>,
    /// The source of the last operation (for the caller's per-source accounting).
    last: usize,
    rng: Rng,
}

impl MixSource {
    /// A mix of `parts` (each a workload and its weight, any positive scale); `seed` drives the draws only, each
    /// source keeps its own seed.
    pub fn new(parts: &[(WorkloadConfig, f64)], seed: u64) -> Result<MixSource, WorkloadError> {
        if parts.is_empty() {
            return Err(WorkloadError::NoRegions);
        }
        let total: f64 = parts.iter().map(|p| p.1.max(0.0)).sum();
        if !(total > 0.0 && total.is_finite()) {
            return Err(WorkloadError::NoWeight);
        }
        let mut cumulative = Vec::with_capacity(parts.len());
        let mut sum = 0u64;
        for (_, weight) in parts {
            sum += (weight.max(0.0) / total * SCALE).round() as u64;
            cumulative.push(sum);
        }
        let sources = parts.iter().map(|(config, _)| OpSource::new(config)).collect::<Result<Vec<_>, _>>()?;
        Ok(MixSource { sources, cumulative, last: 0, rng: Rng::new(seed ^ 0x6D69_7820_736F_7572) })
    }

    /// One workload alone.
    pub fn single(config: &WorkloadConfig) -> Result<MixSource, WorkloadError> {
        MixSource::new(&[(config.clone(), 1.0)], 0)
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        if self.sources.len() > 1 {
            let total = *self.cumulative.last().expect("a mix has a source");
            let draw = self.rng.below(total.max(1));
            self.last = self.cumulative.partition_point(|&c| c <= draw).min(self.sources.len() - 1);
        }
        self.sources[self.last].next_op()
    }

    /// Which source the last operation came from (its index in the parts given to `new`).
    #[inline]
    pub fn last_source(&self) -> usize {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Access, BlockSizes, Distribution, FileService, Region};

    fn part(file: u32, size: u32, seed: u64) -> WorkloadConfig {
        WorkloadConfig {
            regions: vec![Region { file, start: 0, len: 1 << 24 }],
            access: Access::Random { distribution: Distribution::Uniform },
            read_percent: 100,
            block_sizes: BlockSizes::Fixed { size },
            write_sizes: None,
            align: 4096,
            seed,
            random_percent: 100,
            file_service: FileService::Random,
            offsets: Default::default(),
        }
    }

    #[test]
    fn operations_split_as_the_weights_say() {
        // vdbench's 70/15/10/5 mix of four workloads, each on its own file.
        let weights = [70.0, 15.0, 10.0, 5.0];
        let parts: Vec<(WorkloadConfig, f64)> =
            weights.iter().enumerate().map(|(i, w)| (part(i as u32, 4096, i as u64), *w)).collect();
        let mut mix = MixSource::new(&parts, 7).unwrap();
        let mut counts = [0u32; 4];
        let draws = 100_000;
        for _ in 0..draws {
            let op = mix.next_op();
            counts[op.file as usize] += 1;
            assert_eq!(mix.last_source(), op.file as usize);
        }
        for (count, weight) in counts.iter().zip(weights) {
            let share = f64::from(*count) / f64::from(draws) * 100.0;
            assert!((share - weight).abs() < 0.6, "{counts:?}");
        }
    }

    #[test]
    fn each_source_keeps_its_own_block_sizes_and_a_single_source_draws_nothing() {
        let parts = vec![(part(0, 4096, 1), 1.0), (part(1, 65536, 2), 1.0)];
        let mut mix = MixSource::new(&parts, 3).unwrap();
        for _ in 0..1000 {
            let op = mix.next_op();
            assert_eq!(op.len, if op.file == 0 { 4096 } else { 65536 });
        }
        let alone = part(5, 8192, 9);
        let mut one = MixSource::single(&alone).unwrap();
        let mut plain = OpSource::new(&alone).unwrap();
        for _ in 0..100 {
            assert_eq!(one.next_op(), plain.next_op(), "one source is the source itself");
        }
    }

    #[test]
    fn weights_must_say_something() {
        assert_eq!(MixSource::new(&[(part(0, 4096, 1), 0.0)], 1).err(), Some(WorkloadError::NoWeight));
        assert_eq!(MixSource::new(&[], 1).err(), Some(WorkloadError::NoRegions));
    }
}
