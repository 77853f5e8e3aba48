//! Where random I/O lands: uniform, or skewed (zipf, pareto, normal) the way fio's `random_distribution` is.
//!
//! A skewed distribution picks a *rank* (0 = hottest) and then scatters ranks over the data set with a fixed
//! bijection, as fio does with its hash: the skew is in how popular blocks are, not in where they sit, so the hot
//! set is not simply the first megabytes of the file (which a drive's cache or a filesystem's layout would
//! flatter).
//!
//! - zipf:θ — P(rank k) ∝ 1/k^θ, sampled exactly for any set size with Hörmann and Derflinger's rejection
//!   inversion (O(1) per sample, no table), where fio sums a table of up to 10 million terms.
//! - pareto:h — fio's formula: rank = (n−1)·u^(ln h / ln(1−h)) for uniform u.
//! - normal:σ — a Gaussian centred on the middle of the rank space with a standard deviation of σ % of it.
//! - zoned — fio's `zoned` and `zoned_abs`: the data set is cut into consecutive zones from its start, each with
//!   a share of the accesses, and accesses are uniform within a zone. Zones are *not* scattered: "60 % of the I/O
//!   to the first 10 %" means the first 10 % of the file, as in fio. A zone is a fraction of the set or a byte
//!   size; a set smaller than the zones asked for ends at its end (the plan refuses zone sizes past the end).
//! - hotband — vdbench's hot band: zones worked out from the set's size (`hotband.rs`).
//! - poisson:m — vdbench's Poisson seek (`ownmath.distPoisson`, used by `WG_entry.blockBoundarySeek`): unit
//!   ⌊−ln(u)·n/m⌋ mod n for uniform u, an exponential from the start of the set with a mean of n/m, the tail past
//!   the end folded back from the start. Not scattered: vdbench's hot part is the start of the range. With m = 3
//!   the first 20 % of the set gets (1 − e^−0.6)/(1 − e^−3) ≈ 47 % of the accesses (vdbench's guide: "50 % …
//!   within the first 2,000 of 10,000 files").

use serde::{Deserialize, Serialize};

use super::rng::Rng;

/// The shape of a random access pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Distribution {
    Uniform,
    Zipf {
        theta: f64,
    },
    Pareto {
        h: f64,
    },
    Normal {
        sigma_percent: f64,
    },
    /// Consecutive zones from the start of the set, each with its share of the accesses.
    Zoned {
        zones: Vec<Zone>,
    },
    /// vdbench's hot band over the whole set: zones from its size (`workload::hotband`).
    Hotband,
    /// vdbench's Poisson seek: exponential from the start of the set with a mean of 1/midpoint of it.
    Poisson {
        midpoint: f64,
    },
}

/// One zone of a zoned distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Share of all accesses that land in this zone, percent.
    pub access_percent: f64,
    /// How much of the set the zone covers.
    pub size: ZoneSize,
}

/// The extent of a zone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ZoneSize {
    /// Percent of the set (fio `zoned`).
    Percent(f64),
    /// Bytes (fio `zoned_abs`).
    Bytes(u64),
}

/// A sampler over `n` units, built once per worker.
#[derive(Debug, Clone)]
pub enum Sampler {
    Uniform {
        n: u64,
    },
    Zipf {
        zipf: Zipf,
        scatter: Scatter,
    },
    Pareto {
        n: u64,
        power: f64,
        scatter: Scatter,
    },
    Normal {
        n: u64,
        sigma: f64,
        scatter: Scatter,
    },
    Zoned(ZoneTable),
    /// Exponential over `n` units with `mean` units, folded into [0, n).
    Poisson {
        n: u64,
        mean: f64,
    },
}

/// Zones in units: cumulative access shares (ending at 100) with the first unit and unit count of each zone.
#[derive(Debug, Clone)]
pub struct ZoneTable {
    upto: Vec<f64>,
    spans: Vec<(u64, u64)>,
}

impl ZoneTable {
    /// The zones over `n` units of `unit` bytes each. Zones past the end of the set are cut at the end; zones
    /// that end up empty lose their accesses to the others in proportion (there is nothing there to access).
    pub fn new(zones: &[Zone], n: u64, unit: u64) -> ZoneTable {
        let (mut upto, mut spans, mut start, mut total) = (Vec::new(), Vec::new(), 0u64, 0.0);
        for zone in zones {
            let len = match zone.size {
                ZoneSize::Percent(p) => (p / 100.0 * n as f64).round() as u64,
                ZoneSize::Bytes(b) => b / unit.max(1),
            }
            .min(n - start);
            if len > 0 && zone.access_percent > 0.0 {
                total += zone.access_percent;
                upto.push(total);
                spans.push((start, len));
            }
            start += len;
        }
        if spans.is_empty() {
            // Nothing to choose from: uniform over the whole set.
            return ZoneTable { upto: vec![100.0], spans: vec![(0, n)] };
        }
        upto.iter_mut().for_each(|u| *u *= 100.0 / total);
        ZoneTable { upto, spans }
    }

    #[inline]
    fn sample(&self, rng: &mut Rng) -> u64 {
        let v = rng.unit() * 100.0;
        let zone = self.upto.partition_point(|&u| u <= v).min(self.spans.len() - 1);
        let (start, len) = self.spans[zone];
        start + rng.below(len)
    }
}

impl Sampler {
    /// A sampler over `n` units; `unit` (bytes per unit) places zones given in bytes.
    pub fn new(distribution: &Distribution, n: u64) -> Sampler {
        Sampler::with_unit(distribution, n, 1)
    }

    /// [`Sampler::new`] for units of `unit` bytes, which zones given in bytes need.
    pub fn with_unit(distribution: &Distribution, n: u64, unit: u64) -> Sampler {
        let n = n.max(1);
        match *distribution {
            Distribution::Uniform => Sampler::Uniform { n },
            Distribution::Zipf { theta } => Sampler::Zipf { zipf: Zipf::new(n, theta), scatter: Scatter::new(n) },
            Distribution::Pareto { h } => {
                Sampler::Pareto { n, power: h.ln() / (1.0 - h).ln(), scatter: Scatter::new(n) }
            }
            Distribution::Normal { sigma_percent } => {
                Sampler::Normal { n, sigma: sigma_percent / 100.0 * n as f64, scatter: Scatter::new(n) }
            }
            Distribution::Zoned { ref zones } => Sampler::Zoned(ZoneTable::new(zones, n, unit)),
            Distribution::Hotband => Sampler::Zoned(ZoneTable::new(&super::hotband::zones(n * unit, unit), n, unit)),
            Distribution::Poisson { midpoint } => Sampler::Poisson { n, mean: n as f64 / midpoint },
        }
    }

    /// A unit index in [0, n).
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            Sampler::Uniform { n } => rng.below(*n),
            Sampler::Zipf { zipf, scatter } => scatter.apply(zipf.sample(rng) - 1),
            Sampler::Pareto { n, power, scatter } => {
                let rank = ((n - 1) as f64 * rng.unit().powf(*power)) as u64;
                scatter.apply(rank.min(n - 1))
            }
            Sampler::Normal { n, sigma, scatter } => loop {
                // Box–Muller; redraw the rare values that fall outside the set instead of piling them at the ends.
                let (u1, u2) = (1.0 - rng.unit(), rng.unit());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let x = *n as f64 / 2.0 + z * sigma;
                if x >= 0.0 && x < *n as f64 {
                    break scatter.apply(x as u64);
                }
            },
            Sampler::Zoned(table) => table.sample(rng),
            Sampler::Poisson { n, mean } => {
                // 1 − unit() is in (0, 1], so the logarithm is finite.
                let draw = -(1.0 - rng.unit()).ln() * mean;
                (draw as u64) % n
            }
        }
    }
}

/// A bijection of [0, n): r ↦ (a·r + b) mod n with gcd(a, n) = 1, a near n/φ so neighbours land far apart.
#[derive(Debug, Clone, Copy)]
pub struct Scatter {
    n: u64,
    a: u64,
    b: u64,
}

impl Scatter {
    pub fn new(n: u64) -> Scatter {
        let n = n.max(1);
        let mut a = ((n as f64 * 0.618_033_988_749_895) as u64) | 1;
        while gcd(a, n) != 1 {
            a += 2;
        }
        Scatter { n, a: a % n.max(2), b: n / 3 }
    }

    #[inline]
    pub fn apply(&self, rank: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        ((u128::from(rank) * u128::from(self.a) + u128::from(self.b)) % u128::from(self.n)) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Zipf over ranks 1..=n with exponent θ > 0, by rejection inversion (Hörmann & Derflinger, 1996).
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    theta: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Zipf {
        let mut z = Zipf { n: n as f64, theta, h_integral_x1: 0.0, h_integral_n: 0.0, s: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// A rank in 1..=n.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.unit() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.theta) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.theta)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1+x)/x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.ln_1p() / x } else { 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)) }
}

/// (e^x − 1)/x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.exp_m1() / x } else { 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_is_a_bijection() {
        for n in [1u64, 2, 3, 10, 64, 97, 1000, 4096] {
            let s = Scatter::new(n);
            let mut seen = vec![false; n as usize];
            for r in 0..n {
                let x = s.apply(r) as usize;
                assert!(!seen[x], "n={n}: {x} twice");
                seen[x] = true;
            }
        }
    }

    #[test]
    fn zipf_matches_its_probabilities() {
        let (n, theta) = (50u64, 1.2);
        let zipf = Zipf::new(n, theta);
        let mut rng = Rng::new(3);
        let draws = 200_000;
        let mut counts = vec![0u64; n as usize + 1];
        for _ in 0..draws {
            counts[zipf.sample(&mut rng) as usize] += 1;
        }
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-theta)).sum();
        for k in [1u64, 2, 5, 20] {
            let expected = (k as f64).powf(-theta) / norm;
            let got = counts[k as usize] as f64 / draws as f64;
            assert!((got - expected).abs() < 0.01 + expected * 0.05, "k={k}: {got} vs {expected}");
        }
    }

    #[test]
    fn zipf_with_theta_one_works() {
        let zipf = Zipf::new(1000, 1.0);
        let mut rng = Rng::new(9);
        assert!((0..10_000).all(|_| (1..=1000).contains(&zipf.sample(&mut rng))));
    }

    #[test]
    fn skewed_samplers_stay_in_range_and_are_skewed() {
        let n = 10_000;
        for dist in [
            Distribution::Zipf { theta: 1.2 },
            Distribution::Pareto { h: 0.9 },
            Distribution::Normal { sigma_percent: 5.0 },
        ] {
            let sampler = Sampler::new(&dist, n);
            let mut rng = Rng::new(11);
            let mut counts = vec![0u32; n as usize];
            for _ in 0..100_000 {
                counts[sampler.sample(&mut rng) as usize] += 1;
            }
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let top_percent: u32 = counts[..100].iter().sum();
            // Uniform would put ~1 % of draws on the 1 % hottest units.
            assert!(top_percent > 5_000, "{dist:?}: hottest 1 % got {top_percent} of 100000");
        }
    }

    #[test]
    fn poisson_crowds_the_start_as_vdbench_s_does() {
        // vdbench's guide: with midpoint 3, about half the accesses go to the first fifth; folded, exactly
        // (1 − e^−0.6)/(1 − e^−3) = 0.474. A larger midpoint crowds the start more: 1 − e^−2 folded for m = 10.
        let sampler = Sampler::new(&Distribution::Poisson { midpoint: 3.0 }, 10_000);
        let first_fifth = share(&sampler, 0, 2_000, 200_000);
        assert!((first_fifth - 0.474).abs() < 0.01, "{first_fifth}");
        assert!(share(&sampler, 8_000, 10_000, 200_000) > 0.03, "the fold leaves a tail to the end");
        let steep = Sampler::new(&Distribution::Poisson { midpoint: 10.0 }, 10_000);
        let expected = (1.0 - (-2.0f64).exp()) / (1.0 - (-10.0f64).exp());
        assert!((share(&steep, 0, 2_000, 200_000) - expected).abs() < 0.01);
        let mut rng = Rng::new(5);
        assert!((0..10_000).all(|_| sampler.sample(&mut rng) < 10_000));
    }

    fn zoned(zones: &[(f64, ZoneSize)]) -> Distribution {
        Distribution::Zoned { zones: zones.iter().map(|&(a, size)| Zone { access_percent: a, size }).collect() }
    }

    /// Share of `draws` samples that fall in [from, to).
    fn share(sampler: &Sampler, from: u64, to: u64, draws: u32) -> f64 {
        let mut rng = Rng::new(17);
        (0..draws).filter(|_| (from..to).contains(&sampler.sample(&mut rng))).count() as f64 / f64::from(draws)
    }

    #[test]
    fn zones_get_their_share_of_accesses_in_order_from_the_start() {
        // fio's example: 60 % of accesses to the first 10 %, 30 % to the next 20 %, 8 % to the next 30 %, 2 % to
        // the last 40 %.
        use ZoneSize::Percent as P;
        let sampler = Sampler::new(&zoned(&[(60.0, P(10.0)), (30.0, P(20.0)), (8.0, P(30.0)), (2.0, P(40.0))]), 1000);
        for (from, to, expected) in [(0, 100, 0.60), (100, 300, 0.30), (300, 600, 0.08), (600, 1000, 0.02)] {
            let got = share(&sampler, from, to, 200_000);
            assert!((got - expected).abs() < 0.01, "[{from}, {to}): {got} vs {expected}");
        }
        // Uniform within a zone: the two halves of the first zone get about the same.
        let (a, b) = (share(&sampler, 0, 50, 200_000), share(&sampler, 50, 100, 200_000));
        assert!((a - b).abs() < 0.01, "{a} vs {b}");
    }

    #[test]
    fn absolute_zones_are_in_bytes_and_are_cut_at_the_end_of_the_set() {
        // 100 units of 4 KiB: the first 40 KiB (10 units) get 70 %, the next 4 MiB only reach the end of the set.
        let dist = zoned(&[(70.0, ZoneSize::Bytes(40 << 10)), (30.0, ZoneSize::Bytes(4 << 20))]);
        let sampler = Sampler::with_unit(&dist, 100, 4096);
        assert!((share(&sampler, 0, 10, 100_000) - 0.70).abs() < 0.01);
        assert!((share(&sampler, 10, 100, 100_000) - 0.30).abs() < 0.01);
        let mut rng = Rng::new(1);
        assert!((0..10_000).all(|_| sampler.sample(&mut rng) < 100));
    }

    #[test]
    fn zones_smaller_than_the_set_leave_the_rest_untouched_and_empty_zones_give_way() {
        let sampler = Sampler::new(&zoned(&[(50.0, ZoneSize::Percent(5.0)), (50.0, ZoneSize::Percent(15.0))]), 100);
        assert_eq!(share(&sampler, 20, 100, 50_000), 0.0);
        // A zone of 0 units (0.1 % of 100 units) cannot be accessed: its share goes to the other.
        let tiny = Sampler::new(&zoned(&[(90.0, ZoneSize::Percent(0.1)), (10.0, ZoneSize::Percent(99.9))]), 100);
        assert_eq!(share(&tiny, 0, 100, 10_000), 1.0);
    }
}
