//! Transfer sizes: one fixed size, a range (`4k-64k`), or a weighted split (`4k/60:64k/40`), like fio's `bs`,
//! `bsrange` and `bssplit`.

use serde::{Deserialize, Serialize};

use super::rng::Rng;

/// How each operation's size is chosen. Sizes are bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BlockSizes {
    Fixed {
        size: u32,
    },
    /// Uniform over the multiples of `step` from `min` to `max` inclusive.
    Range {
        min: u32,
        max: u32,
        step: u32,
    },
    /// Each `(size, weight)` is chosen with probability weight / sum of weights.
    Split {
        entries: Vec<(u32, u32)>,
    },
}

impl BlockSizes {
    pub fn min(&self) -> u32 {
        match self {
            BlockSizes::Fixed { size } => *size,
            BlockSizes::Range { min, .. } => *min,
            BlockSizes::Split { entries } => entries.iter().map(|e| e.0).min().unwrap_or(0),
        }
    }

    pub fn max(&self) -> u32 {
        match self {
            BlockSizes::Fixed { size } => *size,
            BlockSizes::Range { max, .. } => *max,
            BlockSizes::Split { entries } => entries.iter().map(|e| e.0).max().unwrap_or(0),
        }
    }

    /// Every size that can be chosen, for alignment checks.
    pub fn sizes(&self) -> Vec<u32> {
        match self {
            BlockSizes::Fixed { size } => vec![*size],
            BlockSizes::Range { min, max, step } => (*min..=*max).step_by((*step).max(1) as usize).collect(),
            BlockSizes::Split { entries } => entries.iter().map(|e| e.0).collect(),
        }
    }

    /// The mean size, for turning a byte rate into an operation rate.
    pub fn mean(&self) -> f64 {
        match self {
            BlockSizes::Fixed { size } => f64::from(*size),
            BlockSizes::Range { min, max, .. } => (f64::from(*min) + f64::from(*max)) / 2.0,
            BlockSizes::Split { entries } => {
                let total: f64 = entries.iter().map(|e| f64::from(e.1)).sum();
                entries.iter().map(|e| f64::from(e.0) * f64::from(e.1)).sum::<f64>() / total.max(1.0)
            }
        }
    }
}

/// The per-worker chooser: precomputed so that each pick is one or two arithmetic steps.
#[derive(Debug, Clone)]
pub enum SizePicker {
    Fixed(u32),
    Range { min: u32, step: u32, choices: u64 },
    Split { cumulative: Vec<(u64, u32)>, total: u64 },
}

impl SizePicker {
    pub fn new(sizes: &BlockSizes) -> SizePicker {
        match sizes {
            BlockSizes::Fixed { size } => SizePicker::Fixed(*size),
            BlockSizes::Range { min, max, step } => {
                let step = (*step).max(1);
                SizePicker::Range { min: *min, step, choices: u64::from((max - min) / step + 1) }
            }
            BlockSizes::Split { entries } => {
                let mut total = 0;
                let cumulative = entries
                    .iter()
                    .filter(|e| e.1 > 0)
                    .map(|&(size, weight)| {
                        total += u64::from(weight);
                        (total, size)
                    })
                    .collect();
                SizePicker::Split { cumulative, total }
            }
        }
    }

    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> u32 {
        match self {
            SizePicker::Fixed(size) => *size,
            SizePicker::Range { min, step, choices } => min + step * rng.below(*choices) as u32,
            SizePicker::Split { cumulative, total } => {
                let x = rng.below(*total);
                cumulative.iter().find(|(upto, _)| x < *upto).map_or(cumulative[0].1, |e| e.1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_picks_multiples_of_step_inside_bounds() {
        let picker = SizePicker::new(&BlockSizes::Range { min: 4096, max: 65536, step: 4096 });
        let mut rng = Rng::new(1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            let s = picker.pick(&mut rng);
            assert!((4096..=65536).contains(&s) && s.is_multiple_of(4096));
            seen.insert(s);
        }
        assert_eq!(seen.len(), 16);
    }

    #[test]
    fn split_follows_weights() {
        let sizes = BlockSizes::Split { entries: vec![(4096, 60), (65536, 40)] };
        let picker = SizePicker::new(&sizes);
        let mut rng = Rng::new(2);
        let small = (0..100_000).filter(|_| picker.pick(&mut rng) == 4096).count();
        assert!((58_000..62_000).contains(&small), "{small}");
        assert_eq!(sizes.mean(), 0.6 * 4096.0 + 0.4 * 65536.0);
        assert_eq!((sizes.min(), sizes.max()), (4096, 65536));
    }
}
