//! Which file a thread takes next (vdbench fileselect): random, sequential, each file once (in order or in
//! random order), skewed with Zipf popularity, or vdbench's Poisson skew. Sequential and the two once choices
//! give thread `t` of `T` the files `t, t+T, t+2T, …`, so threads walk the tree side by side without taking the
//! same file; random once takes its files in a shuffled order.

use super::super::distribution::{Distribution, Sampler};
use super::super::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Selection {
    Random,
    Sequential,
    Once,
    /// vdbench's `fileselect=(random,once)`.
    RandomOnce,
    Skewed {
        theta: f64,
    },
    /// vdbench's `fileselect=(poisson,midpoint)`.
    Poisson {
        midpoint: f64,
    },
}

/// One thread's file chooser over `n` files.
#[derive(Debug, Clone)]
pub struct FileSelector {
    kind: Kind,
    n: u64,
}

#[derive(Debug, Clone)]
enum Kind {
    Sample(Sampler),
    /// vdbench's `ownmath.distPoisson`: an exponential draw of mean `n / midpoint`, wrapped at `n`.
    Poisson {
        mean: f64,
    },
    Walk {
        next: u64,
        step: u64,
        wrap: bool,
    },
    /// The thread's files `first + k·step` for k in 0..count, k in the order of a full-period linear
    /// congruential sequence modulo the power of two above `count`, skipping values of `count` and over (fewer
    /// than two draws a file on average): each file once, in a random-looking order, with no table of files.
    Shuffle {
        first: u64,
        step: u64,
        count: u64,
        done: u64,
        lcg: Option<Lcg>,
    },
}

/// x ← a·x + c mod 2^k with a ≡ 1 (mod 4) and c odd: every value below 2^k once per period (Hull–Dobell).
#[derive(Debug, Clone, Copy)]
struct Lcg {
    x: u64,
    a: u64,
    c: u64,
    mask: u64,
}

impl FileSelector {
    pub fn new(selection: Selection, n: u64, thread: u32, threads: u32) -> FileSelector {
        let walk = |wrap| Kind::Walk { next: u64::from(thread), step: u64::from(threads.max(1)), wrap };
        let kind = match selection {
            Selection::Random => Kind::Sample(Sampler::new(&Distribution::Uniform, n)),
            Selection::Skewed { theta } => Kind::Sample(Sampler::new(&Distribution::Zipf { theta }, n)),
            Selection::Poisson { midpoint } => Kind::Poisson { mean: n as f64 / midpoint },
            Selection::Sequential => walk(true),
            Selection::Once => walk(false),
            Selection::RandomOnce => {
                let (first, step) = (u64::from(thread), u64::from(threads.max(1)));
                let count = n.saturating_sub(first).div_ceil(step);
                Kind::Shuffle { first, step, count, done: 0, lcg: None }
            }
        };
        FileSelector { kind, n }
    }

    /// The next file, or `None` when a `once` walk has passed the last file.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        match &mut self.kind {
            Kind::Sample(sampler) => Some(sampler.sample(rng)),
            Kind::Poisson { mean } => {
                // −ln(U) is exponential with mean 1 (U = 0 is file 0, as in vdbench); past the last file the
                // draw wraps round, so the tail lands on the first files again.
                let u = rng.unit();
                let draw = if u == 0.0 { 0 } else { (-u.ln() * *mean) as u64 };
                Some(draw % self.n)
            }
            Kind::Shuffle { first, step, count, done, lcg } => {
                if *done >= *count {
                    return None;
                }
                // Drawn at the first pick, from the thread's own generator.
                let g = lcg.get_or_insert_with(|| {
                    let mask = count.next_power_of_two() - 1;
                    Lcg { x: rng.next_u64() & mask, a: (rng.next_u64() << 2 | 1) & mask, c: rng.next_u64() | 1, mask }
                });
                loop {
                    g.x = g.a.wrapping_mul(g.x).wrapping_add(g.c) & g.mask;
                    if g.x < *count {
                        *done += 1;
                        return Some(*first + g.x * *step);
                    }
                }
            }
            Kind::Walk { next, step, wrap } => {
                if *next >= self.n {
                    if !*wrap {
                        return None;
                    }
                    *next %= self.n;
                }
                let file = *next;
                *next += *step;
                Some(file)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_covers_every_file_exactly_once_across_threads() {
        let mut seen = vec![0; 10];
        for t in 0..3 {
            let mut s = FileSelector::new(Selection::Once, 10, t, 3);
            let mut rng = Rng::new(1);
            while let Some(f) = s.next(&mut rng) {
                seen[f as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
    }

    #[test]
    fn sequential_wraps_and_skewed_prefers_a_few_files() {
        let mut s = FileSelector::new(Selection::Sequential, 3, 0, 1);
        let mut rng = Rng::new(2);
        let walk: Vec<u64> = (0..5).filter_map(|_| s.next(&mut rng)).collect();
        assert_eq!(walk, [0, 1, 2, 0, 1]);
        let mut z = FileSelector::new(Selection::Skewed { theta: 1.2 }, 1000, 0, 1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..20_000 {
            counts[z.next(&mut rng).unwrap() as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 > 20_000 / 3, "the 10 hottest files got {top10} of 20000");
    }

    #[test]
    fn random_once_covers_every_file_exactly_once_across_threads_in_a_shuffled_order() {
        for n in [1, 2, 7, 64, 1000] {
            let mut seen = vec![0; n as usize];
            let mut order = Vec::new();
            for t in 0..3 {
                let mut s = FileSelector::new(Selection::RandomOnce, n, t, 3);
                let mut rng = Rng::new(u64::from(t) + 5);
                while let Some(f) = s.next(&mut rng) {
                    seen[f as usize] += 1;
                    order.push(f);
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "n={n}: {seen:?}");
            if n == 1000 {
                let in_order = order.windows(2).filter(|w| w[1] == w[0] + 3).count();
                assert!(in_order < 100, "{in_order} of 1000 picks followed their thread's previous file");
            }
        }
    }

    #[test]
    fn poisson_gives_about_half_the_picks_to_the_first_fifth_of_the_files() {
        // vdbench's user guide: with fileselect=(poisson,3), "50% of the file accesses are made within the first
        // 2,000 of 10,000 files" (the wrapped exponential gives (1 − e^−0.6) / (1 − e^−3) = 47.5 %).
        let mut p = FileSelector::new(Selection::Poisson { midpoint: 3.0 }, 10_000, 0, 1);
        let mut rng = Rng::new(3);
        let picks: Vec<u64> = (0..100_000).filter_map(|_| p.next(&mut rng)).collect();
        assert!(picks.iter().all(|&f| f < 10_000));
        let first_fifth = picks.iter().filter(|&&f| f < 2_000).count();
        assert!((45_000..50_000).contains(&first_fifth), "{first_fifth} of 100000 in the first 2000 files");
        let last_fifth = picks.iter().filter(|&&f| f >= 8_000).count();
        assert!(last_fifth < 10_000, "{last_fifth} of 100000 in the last 2000 files");
    }
}
