//! The capacity search: the largest stream count that meets the quality target, by ramping then bisecting.
//! Pure: it calls a measuring function and never touches storage itself, so tests give it a made-up device.
//!
//! Ramp: double from `start` until a count fails or `limit` is reached. Bisect: between the largest count that
//! passed and the smallest that failed, until they are within `precision` of each other (at least 1). A count
//! that fails above one that passed is taken at its word: measurements near the edge are noisy, and the search
//! reports the passing count it actually saw.

/// Where the search starts and stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// First count tried (an estimate's hint, or a small number).
    pub start: u32,
    /// Never try more than this.
    pub limit: u32,
    /// Stop bisecting when the gap is at most this fraction of the passing count (0.03 = 3 %).
    pub precision: f64,
}

/// What the search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOutcome {
    /// Largest count that passed (0: even the smallest tried failed down to 1).
    pub best: u32,
    /// Smallest count that failed, if one did.
    pub first_failing: Option<u32>,
    /// `limit` passed: the capacity is at least `best`.
    pub at_limit: bool,
    /// The measuring function asked to stop (Ctrl-C).
    pub stopped: bool,
}

/// `measure(count)` returns `Some(passed)`, or `None` to stop the search (interrupted), or an error.
pub fn search<E>(
    settings: SearchSettings,
    measure: &mut dyn FnMut(u32) -> Result<Option<bool>, E>,
) -> Result<SearchOutcome, E> {
    let limit = settings.limit.max(1);
    let mut out = SearchOutcome { best: 0, first_failing: None, at_limit: false, stopped: false };
    let mut count = settings.start.clamp(1, limit);
    // Ramp.
    loop {
        match measure(count)? {
            None => {
                out.stopped = true;
                return Ok(out);
            }
            Some(true) => {
                out.best = count;
                if count == limit {
                    out.at_limit = true;
                    return Ok(out);
                }
                count = count.saturating_mul(2).min(limit);
            }
            Some(false) => {
                out.first_failing = Some(count);
                break;
            }
        }
    }
    // Bisect between best (passed, or 0) and first_failing.
    while let Some(high) = out.first_failing {
        let gap = high - out.best;
        let tolerance = ((f64::from(out.best) * settings.precision).floor() as u32).max(1);
        if gap <= tolerance {
            break;
        }
        let mid = out.best + gap / 2;
        match measure(mid)? {
            None => {
                out.stopped = true;
                break;
            }
            Some(true) => out.best = mid,
            Some(false) => out.first_failing = Some(mid),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: u32, limit: u32, capacity: u32) -> (SearchOutcome, Vec<u32>) {
        let mut tried = Vec::new();
        let settings = SearchSettings { start, limit, precision: 0.03 };
        let out = search::<()>(settings, &mut |n| {
            tried.push(n);
            Ok(Some(n <= capacity))
        })
        .unwrap();
        (out, tried)
    }

    #[test]
    fn ramps_then_bisects_to_the_exact_edge_when_small() {
        let (out, tried) = run(4, 1000, 37);
        assert_eq!((out.best, out.first_failing), (37, Some(38)));
        assert_eq!(&tried[..5], &[4, 8, 16, 32, 64]);
    }

    #[test]
    fn stops_within_the_precision_when_large() {
        let (out, _) = run(4, 100_000, 5000);
        assert!(out.best <= 5000 && out.best >= 4850, "{out:?}");
    }

    #[test]
    fn a_device_that_cannot_serve_one_stream_gives_zero() {
        let (out, tried) = run(8, 100, 0);
        assert_eq!((out.best, out.first_failing), (0, Some(1)));
        assert_eq!(tried, [8, 4, 2, 1]);
    }

    #[test]
    fn the_limit_is_reported_as_a_lower_bound() {
        let (out, _) = run(4, 50, 1000);
        assert_eq!((out.best, out.at_limit), (50, true));
    }

    #[test]
    fn an_interruption_stops_the_search() {
        let out = search::<()>(SearchSettings { start: 4, limit: 100, precision: 0.0 }, &mut |n| {
            Ok(if n > 8 { None } else { Some(true) })
        })
        .unwrap();
        assert!(out.stopped);
        assert_eq!(out.best, 8);
    }
}
