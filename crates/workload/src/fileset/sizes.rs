//! Per-file sizes of a tree: fixed, a weighted list or a range, each file's size a function of its index and the
//! tree's seed — the same file has the same size in every phase and every run, and nothing is stored per file.

use super::super::rng::Rng;

/// How big each file is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileSizes {
    Fixed {
        bytes: u64,
    },
    /// `(bytes, cumulative weight)` in increasing cumulative order; the last weight is the total.
    Weighted {
        entries: Vec<(u64, f64)>,
    },
    /// Uniform over `[min, max]`, in whole multiples of `step` (4 KiB, or 1 byte for tiny files).
    Range {
        min: u64,
        max: u64,
        step: u64,
    },
    /// vdbench's `sizes=(mean,0)`: evenly over `[mean/2, mean/2 + mean)`, rounded by [`around`].
    Around {
        mean: u64,
    },
}

impl FileSizes {
    /// Builds a weighted list from `(bytes, weight)` pairs (weights need not add up to 100).
    pub fn weighted(pairs: &[(u64, f64)]) -> FileSizes {
        let mut total = 0.0;
        let entries = pairs
            .iter()
            .filter(|p| p.1 > 0.0)
            .map(|&(bytes, w)| {
                total += w;
                (bytes, total)
            })
            .collect();
        FileSizes::Weighted { entries }
    }

    pub fn range(min: u64, max: u64) -> FileSizes {
        let step = if min >= 4096 { 4096 } else { 1 };
        FileSizes::Range { min, max: max.max(min), step }
    }

    /// The size of file `index` of a tree seeded with `seed`.
    pub fn size_of(&self, index: u64, seed: u64) -> u64 {
        match self {
            FileSizes::Fixed { bytes } => *bytes,
            FileSizes::Weighted { entries } => {
                let total = entries.last().map_or(0.0, |e| e.1);
                let x = Rng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)).unit() * total;
                entries.iter().find(|e| x < e.1).or(entries.last()).map_or(0, |e| e.0)
            }
            FileSizes::Range { min, max, step } => {
                let choices = (max - min) / step + 1;
                min + Rng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)).below(choices) * step
            }
            FileSizes::Around { mean } => {
                let drawn = Rng::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)).below((*mean).max(1));
                around(*mean, drawn + mean / 2)
            }
        }
    }

    /// The largest size any file can have.
    pub fn max(&self) -> u64 {
        match self {
            FileSizes::Fixed { bytes } => *bytes,
            FileSizes::Weighted { entries } => entries.iter().map(|e| e.0).max().unwrap_or(0),
            FileSizes::Range { max, .. } => *max,
            FileSizes::Around { mean } => around(*mean, (mean + mean / 2).saturating_sub(1)),
        }
    }

    /// How many of the first `files` files fit in `cap` bytes, and their total size. Fixed sizes are counted in
    /// closed form; others walk the files once (a few nanoseconds per file).
    pub fn fit(&self, files: u64, cap: Option<u64>, seed: u64) -> (u64, u64) {
        if let FileSizes::Fixed { bytes } = self {
            let n = match cap {
                Some(cap) if *bytes > 0 => (cap / bytes).min(files),
                _ => files,
            };
            return (n, n * bytes);
        }
        let mut total = 0u64;
        for i in 0..files {
            let size = self.size_of(i, seed);
            if cap.is_some_and(|c| total + size > c) {
                return (i, total);
            }
            total += size;
        }
        (files, total)
    }
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// vdbench 5.04.06's rounding of a size drawn around `mean` (`FileAnchor.calculateVarSize`): a draw of 10 MiB or
/// more to whole MiB; else, by the mean, to 100 KiB (mean of 1 MiB or more), 10 KiB (100 KiB or more) or 1 KiB,
/// half up as Java's `Math.round`.
fn around(mean: u64, drawn: u64) -> u64 {
    let unit = if drawn >= 10 * MIB {
        MIB
    } else if mean >= MIB {
        100 * KIB
    } else if mean >= 100 * KIB {
        10 * KIB
    } else {
        KIB
    };
    (drawn + unit / 2) / unit * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_deterministic_and_follow_the_spec() {
        let w = FileSizes::weighted(&[(16384, 80.0), (1 << 20, 20.0)]);
        let small = (0..10_000).filter(|&i| w.size_of(i, 7) == 16384).count();
        assert!((7_600..8_400).contains(&small), "{small}");
        assert_eq!(w.size_of(42, 7), w.size_of(42, 7));
        let r = FileSizes::range(4096, 65536);
        assert!((0..1000).map(|i| r.size_of(i, 1)).all(|s| (4096..=65536).contains(&s) && s % 4096 == 0));
    }

    #[test]
    fn a_total_size_cap_limits_the_file_count() {
        assert_eq!(FileSizes::Fixed { bytes: 4096 }.fit(100, Some(10 * 4096 + 5), 0), (10, 40960));
        let r = FileSizes::range(4096, 8192);
        let (n, total) = r.fit(1000, Some(100_000), 3);
        assert!(n < 1000 && total <= 100_000 && total + 8192 > 100_000);
    }

    #[test]
    fn sizes_around_an_average_are_drawn_and_rounded_as_vdbench_draws_them() {
        // 64 KiB: evenly over [32 KiB, 96 KiB), whole KiB, so 65 sizes from 32 to 96 KiB with a mean of 64 KiB.
        let sizes = FileSizes::Around { mean: 64 * KIB };
        let drawn: Vec<u64> = (0..20_000).map(|i| sizes.size_of(i, 5)).collect();
        assert!(drawn.iter().all(|s| (32 * KIB..=96 * KIB).contains(s) && s % KIB == 0));
        let mean = drawn.iter().sum::<u64>() as f64 / drawn.len() as f64;
        assert!((mean / (64 * KIB) as f64 - 1.0).abs() < 0.01, "{mean}");
        assert_eq!(sizes.max(), 96 * KIB);
        // The rounding steps: 100 KiB for a mean of 1 MiB or more, 1 MiB for draws of 10 MiB or more.
        assert_eq!(around(2 * MIB, 1_500_000), 1_536_000);
        assert_eq!(around(200 * KIB, 150_000), 153_600);
        assert_eq!(around(16 * MIB, 12 * MIB + 600 * KIB), 13 * MIB);
        assert_eq!(around(KIB, 512), KIB);
    }
}
