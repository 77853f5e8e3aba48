//! When the viewers of a step press play: an audience arrives over time, not in one instant. Pure: a seed and
//! a count give the same instants every time, so a step can be repeated and tests need no clock.
//!
//! The process is Poisson: gaps between arrivals are exponentially distributed and independent, so viewers
//! come now in clumps, now after a lull, as people starting a film do. It is conditioned on the count: `count`
//! arrivals over a window, the first at the window's start. The construction (the standard one for a Poisson
//! process with a known number of events): draw `count` exponential gaps E₁…Eₙ, let arrival k (k ≥ 1) be at
//! window × (E₁ + … + Eₖ) ÷ (E₁ + … + Eₙ). The last gap falls after the last arrival, so the last viewer
//! arrives before the window ends, and the arrivals fill it evenly on average (k × window ÷ n).
//!
//! The window is sized to the count ([`window_for`]): about one arrival per `per_viewer` until the window
//! reaches its longest, so a handful of viewers arrive seconds apart (each has time to start before the next
//! competes with it, as in a small household) while a large audience arrives within the longest window.

use std::time::Duration;

use crate::workload::Rng;

/// The arrival window of `count` viewers: `per_viewer` each (the mean gap between arrivals), at most
/// `longest`; zero for one viewer (it starts at once).
pub fn window_for(count: u32, per_viewer: Duration, longest: Duration) -> Duration {
    if count <= 1 { Duration::ZERO } else { (per_viewer * count).min(longest) }
}

/// The instants at which `count` viewers arrive over `window`, in order, the first at zero.
pub fn arrivals(count: u32, window: Duration, seed: u64) -> Vec<Duration> {
    let n = count as usize;
    if n == 0 {
        return Vec::new();
    }
    // A stream of its own, apart from the one that picks files and positions, so that changing the arrivals
    // never changes which title a viewer reads.
    let mut rng = Rng::new(seed ^ 0xA771_7A15_F0A0_0D1E);
    let gaps: Vec<f64> = (0..n).map(|_| -rng.unit().max(1e-12).ln()).collect();
    let total: f64 = gaps.iter().sum();
    let mut at = Vec::with_capacity(n);
    let mut sum = 0.0;
    at.push(Duration::ZERO);
    for gap in &gaps[..n - 1] {
        sum += gap;
        at.push(window.mul_f64((sum / total).min(1.0)));
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn arrivals_start_at_zero_stay_in_order_inside_the_window_and_repeat_with_the_seed() {
        let at = arrivals(50, s(10), 7);
        assert_eq!(at.len(), 50);
        assert_eq!(at[0], Duration::ZERO);
        assert!(at.windows(2).all(|w| w[0] <= w[1]), "in order");
        assert!(*at.last().unwrap() < s(10), "the last arrives before the window ends");
        assert_eq!(at, arrivals(50, s(10), 7), "the same seed, the same audience");
        assert_ne!(at, arrivals(50, s(10), 8));
        assert_eq!(arrivals(1, s(10), 7), [Duration::ZERO]);
        assert!(arrivals(0, s(10), 7).is_empty());
    }

    #[test]
    fn gaps_are_exponential_not_even() {
        // 20 000 arrivals over 20 000 s: gaps of mean 1 s. Exponential gaps have a standard deviation equal to
        // their mean, and about e⁻² = 13.5 % of them are longer than twice it; an even ramp has neither.
        let at = arrivals(20_000, s(20_000), 3);
        let gaps: Vec<f64> = at.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 1.0).abs() < 0.02, "mean gap {mean}");
        assert!((var.sqrt() - 1.0).abs() < 0.05, "standard deviation {}", var.sqrt());
        let long = gaps.iter().filter(|&&g| g > 2.0).count() as f64 / gaps.len() as f64;
        assert!((long - (-2.0f64).exp()).abs() < 0.01, "{long} of the gaps above twice the mean");
        // Evenly filled on average: half the audience has arrived near the middle of the window.
        assert!((at[10_000].as_secs_f64() - 10_000.0).abs() < 300.0, "{:?}", at[10_000]);
    }

    #[test]
    fn the_window_grows_with_the_count_up_to_its_longest() {
        assert_eq!(window_for(1, s(1), s(8)), Duration::ZERO);
        assert_eq!(window_for(4, s(1), s(8)), s(4));
        assert_eq!(window_for(40, s(1), s(8)), s(8));
    }
}
