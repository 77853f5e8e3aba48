//! The capacity search: the largest stream count that meets the quality target, found, then confirmed by running
//! the edge again. Pure: it calls a measuring function and never touches storage itself, so tests give it a
//! made-up device.
//!
//! Search: from `start`, move up while counts pass (or down while they fail), each move twice the last
//! (`first_step` of the start for the first move: 1.0 doubles and halves), then bisect between the largest count
//! that passed and the smallest that failed until they are within `precision` of each other (at least 1). That
//! pair is one *edge*. With a first step below 1 (a start from a prior or a trusted estimate), the first
//! `SMALL_MOVES` moves down each go to the count whose tolerance reaches back to the one that failed: failing
//! steps end at their first failure and cost little, so the first count that passes is the edge, unbisected.
//!
//! Confirmation: run the edge again — the count that passed must pass again, then the count that failed must fail
//! again. When both agree the edge stands as it was. When one disagrees the edge has moved: the search starts again
//! from the count that disagreed, with small steps (the precision), and the edge it finds is this run's. After
//! `confirmations` rounds the capacity is the median of the edges found (the search's and each round's), and the
//! lowest and highest of them are its range: one number with its spread. A stable device gives a range of one
//! count; a device whose answer flips near the edge gives a wider one.
//!
//! A derived edge (`SearchSettings::derive_failing`, for a search that starts where an earlier format found its
//! edge and runs no confirmation: `check --quick`'s later formats): when the first count, the earlier edge's
//! passing count scaled to this format, passes, the search ends there, with the failing count the earlier edge's
//! scaled too — measured passing, derived failing, and said so (`SearchOutcome::failing_derived`). When it fails,
//! the search goes on as any other, and both sides of its edge are measured.
//!
//! The comfortable count (`plan_for`) leaves a margin below that: `MARGIN` of the capacity, or the lowest edge seen
//! when that is lower.

/// Where the search starts and stops, and how often the edge is run again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// First count tried (an estimate's hint, or a small number).
    pub start: u32,
    /// Never try more than this.
    pub limit: u32,
    /// Stop bisecting when the gap is at most this fraction of the passing count (0.03 = 3 %).
    pub precision: f64,
    /// The first move from `start`, as a fraction of it (1.0: double, or halve); each further move doubles.
    pub first_step: f64,
    /// Rounds that run the edge again after the search (each: the found count, then the next failing count).
    pub confirmations: u32,
    /// When `start` passes, end the search there with this count as its failing count, derived (not measured):
    /// the failing count of an earlier format's edge, scaled to this one. Only above `start`.
    pub derive_failing: Option<u32>,
}

/// One run of the edge: the largest count that passed beside the smallest that failed above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Largest count that passed (0: not even one stream did).
    pub passed: u32,
    /// Smallest count above it that failed; `None` when `passed` is the search's limit.
    pub failed: Option<u32>,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOutcome {
    /// The capacity: the median of the edges' passing counts (the lower middle one of an even number). Stopped
    /// before the first edge: the largest count that passed so far.
    pub best: u32,
    /// Smallest count that failed beside `best` (the median edge's), if one did.
    pub first_failing: Option<u32>,
    /// `limit` passed: the capacity is at least `best`.
    pub at_limit: bool,
    /// The measuring function asked to stop (Ctrl-C).
    pub stopped: bool,
    /// Every run of the edge, in order: the search's, then each confirmation round's (empty when stopped before
    /// the search found one).
    pub edges: Vec<Edge>,
    /// Confirmation rounds in which the found count passed again and the next count failed again.
    pub agreed: u32,
    /// The edge's failing count was derived from an earlier format's edge (`SearchSettings::derive_failing`), not
    /// measured: only its passing count was run.
    pub failing_derived: bool,
    /// The format whose edge it was derived from, in words (set by the runner, which knows the formats).
    pub derived_from: Option<String>,
}

impl SearchOutcome {
    /// The lowest and the highest passing count over the edges (`best` twice without an edge).
    pub fn range(&self) -> (u32, u32) {
        let passed = self.edges.iter().map(|e| e.passed);
        (passed.clone().min().unwrap_or(self.best), passed.max().unwrap_or(self.best))
    }
}

/// Share of the capacity a comfortable plan leaves unused: 20 %. A check is a few minutes on a quiet system;
/// a server also scans its library, writes thumbnails and recordings, and meets a busier evening. Near 100 % a
/// device's queues grow without limit, so a count at the edge stalls at the first disturbance; a fifth below it
/// covers the spread the confirmations show and what a short check cannot see. Blackmagic says the same of its
/// Disk Speed Test: "add a healthy margin to the results" (a disk that tests at 32 frames/s of HD is too tight for
/// 29.97), and its DeckLink manual asks 20 % of an 8-disk array, 30 % of an 8-disk SATA one and 100 % of two SATA
/// disks, which halve their speed as they fill. 20 % is that advice's lower end: the range and the lowest run
/// already say how the measurement moved, and docs/streams.md tells owners of a few spinning disks to plan lower.
pub const MARGIN: f64 = 0.2;

/// The comfortable count: `MARGIN` below the capacity, or the lowest edge seen when that is lower (the spread
/// already says the capacity is not always there). Rounded down.
pub fn plan_for(capacity: u32, low: u32) -> u32 {
    ((f64::from(capacity) * (1.0 - MARGIN)).floor() as u32).min(low)
}

/// Streams of `bitrate_bps` that `mbps` (decimal MB/s) of reads would carry at 100 %: a bound, not a capacity
/// (it assumes every byte read arrives in time and nothing else is read). The one formula behind every bound
/// that the check and the cache command print.
pub fn streams_bound(mbps: f64, bitrate_bps: u64) -> f64 {
    if bitrate_bps == 0 { 0.0 } else { mbps * 1e6 / (bitrate_bps as f64 / 8.0) }
}

/// `measure(count)` returns `Some(passed)`, or `None` to stop the search (interrupted), or an error.
pub fn search<E>(
    settings: SearchSettings,
    measure: &mut dyn FnMut(u32) -> Result<Option<bool>, E>,
) -> Result<SearchOutcome, E> {
    let mut searcher = Searcher { settings, limit: settings.limit.max(1), measure, seen: (0, None) };
    let mut out = SearchOutcome {
        best: 0,
        first_failing: None,
        at_limit: false,
        stopped: false,
        edges: Vec::new(),
        agreed: 0,
        failing_derived: false,
        derived_from: None,
    };
    let start = settings.start.clamp(1, searcher.limit);
    let Some(passed) = searcher.measure(start)? else {
        out.stopped = true;
        return Ok(out);
    };
    let derived = settings.derive_failing.filter(|&f| passed && f > start);
    if let Some(failed) = derived {
        (out.best, out.first_failing, out.failing_derived) = (start, Some(failed), true);
        out.edges.push(Edge { passed: start, failed: Some(failed) });
        return Ok(out);
    }
    match searcher.edge_from(start, passed, settings.first_step)? {
        Some(edge) => out.edges.push(edge),
        None => {
            (out.best, out.first_failing, out.stopped) = (searcher.seen.0, searcher.seen.1, true);
            return Ok(out);
        }
    }
    for _ in 0..settings.confirmations {
        let last = *out.edges.last().expect("the search found an edge");
        match searcher.confirm(last)? {
            Some((edge, agreed)) => {
                out.edges.push(edge);
                out.agreed += u32::from(agreed);
            }
            None => {
                out.stopped = true;
                break;
            }
        }
    }
    let median = median(&out.edges).expect("the search found an edge");
    (out.best, out.first_failing, out.at_limit) = (median.passed, median.failed, median.failed.is_none());
    Ok(out)
}

/// The edge whose passing count is the median (the lower middle one of an even number); `None` without edges.
/// The lower middle: of two runs that disagree, the answer is the one that does not promise more.
pub fn median(edges: &[Edge]) -> Option<Edge> {
    let mut sorted = edges.to_vec();
    sorted.sort_by_key(|e| e.passed);
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
}

/// Moves down by the precision before the steps double (`Searcher::edge_from`): a start up to (1 + precision)³
/// above the edge (1.73× at 20 %) is found with failing steps only, then one that passes.
const SMALL_MOVES: u32 = 3;

/// The steps of a search that starts from a prior with a small first step (below 1) and whose start fails by more
/// than the small moves reach: the start and the `SMALL_MOVES` small moves fail (each ends at its first
/// failure), then the first doubled move passes, within the tolerance of the count that failed above it or one
/// bisection away. What a search beside a background load that takes streams away does, walking down from the
/// edge alone (`check --thorough`'s what-breaks-first searches: 1080p 41 → 36 in five steps, 2160p HEVC 13 → 9
/// in six, a remux 4 → 0 in four); a forecast counts a search by it. A load that costs less than the start's
/// first step passes there: one step.
pub const WALK_DOWN: Walk = Walk { failing: 1 + SMALL_MOVES, passing: 1 };

/// The steps of a search, by how they end: a failing step ends at its first failure, a passing one lasts its
/// whole length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walk {
    pub failing: u32,
    pub passing: u32,
}

struct Searcher<'a, E> {
    settings: SearchSettings,
    limit: u32,
    measure: &'a mut dyn FnMut(u32) -> Result<Option<bool>, E>,
    /// The largest count that passed and the smallest that failed in the current run of the edge.
    seen: (u32, Option<u32>),
}

impl<E> Searcher<'_, E> {
    fn measure(&mut self, count: u32) -> Result<Option<bool>, E> {
        (self.measure)(count)
    }

    /// The gap at which bisecting stops, for a passing count.
    fn tolerance(&self, passed: u32) -> u32 {
        ((f64::from(passed) * self.settings.precision).floor() as u32).max(1)
    }

    /// From `count`, measured as `passed`: move away while the result stays the same, then bisect. `None` when
    /// the measuring function asked to stop.
    fn edge_from(&mut self, count: u32, passed: bool, first_step: f64) -> Result<Option<Edge>, E> {
        // Floor, as the tolerance: a first step of the precision brackets a good start within it.
        let mut step = ((f64::from(count) * first_step).floor() as u32).max(1);
        if !passed && first_step >= 1.0 {
            // Down, the step doubles before each move: the first is `count × first_step` (halving at 1.0).
            step = (step / 2).max(1);
        }
        let (mut low, mut high) = if passed { (count, None) } else { (0, Some(count)) };
        self.seen = (low, high);
        if passed {
            while high.is_none() {
                if low >= self.limit {
                    return Ok(Some(Edge { passed: low, failed: None }));
                }
                let next = low.saturating_add(step).min(self.limit);
                match self.measure(next)? {
                    None => return Ok(None),
                    Some(true) => low = next,
                    Some(false) => high = Some(next),
                }
                self.seen = (low, high);
                step = step.saturating_mul(2);
            }
        } else {
            // Down, never more than halving: a count far below the edge says little about where it lies. Small
            // steps (a start from a prior or a trusted estimate) go first to the count whose tolerance reaches back
            // to the one that failed (⌈failed ÷ (1 + step)⌉), `SMALL_MOVES` times: a failing step ends at its first
            // failure and costs little, and the first that passes is within the precision of the edge, with no
            // bisection step (each of which lasts a whole passing step more). Then the steps double.
            let mut moves = 0;
            while low == 0 && high.is_some_and(|h| h > 1) {
                let failed = high.expect("checked");
                let next = if first_step < 1.0 && moves < SMALL_MOVES {
                    let next = ((f64::from(failed) / (1.0 + first_step)).ceil() as u32).min(failed - 1);
                    step = failed - next;
                    next
                } else {
                    step = step.saturating_mul(2);
                    failed.saturating_sub(step).max(failed / 2)
                }
                .max(1);
                match self.measure(next)? {
                    None => return Ok(None),
                    Some(true) => low = next,
                    Some(false) => high = Some(next),
                }
                self.seen = (low, high);
                moves += 1;
            }
        }
        self.bisect(low, high.expect("the moves end at a failing count or at the limit"))
    }

    /// Halves the gap between a count that passed and one that failed until it is within the tolerance.
    fn bisect(&mut self, mut low: u32, mut failed: u32) -> Result<Option<Edge>, E> {
        while failed - low > self.tolerance(low) {
            let mid = low + (failed - low) / 2;
            match self.measure(mid)? {
                None => return Ok(None),
                Some(true) => low = mid,
                Some(false) => failed = mid,
            }
            self.seen = (low, Some(failed));
        }
        Ok(Some(Edge { passed: low, failed: Some(failed) }))
    }

    /// Runs `edge` again: its passing count, then its failing count. Both as before: the same edge, agreed. One
    /// otherwise: the search again from the count that disagreed, in steps of the precision.
    fn confirm(&mut self, edge: Edge) -> Result<Option<(Edge, bool)>, E> {
        let step = self.settings.precision;
        self.seen = (edge.passed, edge.failed);
        if edge.passed > 0 {
            match self.measure(edge.passed)? {
                None => return Ok(None),
                Some(false) => return Ok(self.edge_from(edge.passed, false, step)?.map(|e| (e, false))),
                Some(true) => {}
            }
        }
        let Some(failed) = edge.failed else { return Ok(Some((edge, true))) };
        Ok(match self.measure(failed)? {
            None => None,
            Some(true) => self.edge_from(failed, true, step)?.map(|e| (e, false)),
            Some(false) => Some((edge, true)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(start: u32, limit: u32, precision: f64, confirmations: u32) -> SearchSettings {
        SearchSettings { start, limit, precision, first_step: 1.0, confirmations, derive_failing: None }
    }

    fn run(start: u32, limit: u32, capacity: u32) -> (SearchOutcome, Vec<u32>) {
        let mut tried = Vec::new();
        let out = search::<()>(settings(start, limit, 0.03, 0), &mut |n| {
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
        assert_eq!(out.edges, [Edge { passed: 37, failed: Some(38) }]);
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
        let out = search::<()>(settings(4, 100, 0.0, 2), &mut |n| Ok(if n > 8 { None } else { Some(true) })).unwrap();
        assert!(out.stopped);
        assert_eq!(out.best, 8);
        assert!(out.edges.is_empty(), "no edge was found: {out:?}");
    }

    /// A stable device: every confirmation runs the found count and the next failing count again, both agree,
    /// and the range is the one count.
    #[test]
    fn a_stable_device_confirms_its_edge_with_a_range_of_one_count() {
        let mut tried = Vec::new();
        let out = search::<()>(settings(10, 1000, 0.01, 3), &mut |n| {
            tried.push(n);
            Ok(Some(n <= 73))
        })
        .unwrap();
        assert_eq!((out.best, out.range(), out.agreed, out.edges.len()), (73, (73, 73), 3, 4), "{out:?}");
        let confirmations = &tried[tried.len() - 6..];
        assert_eq!(out.first_failing, Some(74));
        assert_eq!(confirmations, [73, 74, 73, 74, 73, 74], "each round: the edge, then the next count");
    }

    /// A noisy device: its answer flips at random between 68 and 79 (everything below passes, above fails). The
    /// confirmations disagree with the first edge now and then, search again around it, and the range shows the
    /// spread; the capacity is the median of the edges.
    #[test]
    fn a_noisy_device_gives_a_range_and_the_median_edge() {
        let mut rng = crate::workload::Rng::new(7);
        let out = search::<()>(settings(8, 1000, 0.03, 6), &mut |n| {
            let pass = match n {
                0..=67 => true,
                68..=79 => rng.next_u64().is_multiple_of(2),
                _ => false,
            };
            Ok(Some(pass))
        })
        .unwrap();
        let (low, high) = out.range();
        assert_eq!(out.edges.len(), 7);
        assert!(low < high, "a flipping edge gives a spread: {out:?}");
        assert!((60..=80).contains(&low) && (60..=80).contains(&high), "{out:?}");
        assert!(out.agreed < 6, "some confirmations disagreed: {out:?}");
        let mut passed: Vec<u32> = out.edges.iter().map(|e| e.passed).collect();
        passed.sort_unstable();
        assert_eq!(out.best, passed[3], "the median of seven edges");
        assert!(low <= out.best && out.best <= high);
    }

    /// A confirmation that finds the found count failing searches down from it; one that finds the next count
    /// passing searches up from it.
    #[test]
    fn a_disagreeing_confirmation_searches_again_around_the_edge() {
        // The device serves 50 during the search, 40 afterwards.
        let mut calls = 0;
        let out = search::<()>(settings(50, 100, 0.03, 1), &mut |n| {
            calls += 1;
            Ok(Some(n <= if calls <= 3 { 50 } else { 40 }))
        })
        .unwrap();
        assert_eq!(out.edges[0].passed, 50, "{out:?}");
        assert_eq!(out.edges[1], Edge { passed: 40, failed: Some(41) }, "{out:?}");
        assert_eq!((out.agreed, out.best, out.range()), (0, 40, (40, 50)));

        // The device serves 30 during the search, 36 afterwards.
        let mut calls = 0;
        let out = search::<()>(settings(16, 100, 0.0, 1), &mut |n| {
            calls += 1;
            Ok(Some(n <= if calls <= 6 { 30 } else { 36 }))
        })
        .unwrap();
        assert_eq!(out.edges[0], Edge { passed: 30, failed: Some(31) }, "{out:?}");
        assert_eq!(out.edges[1], Edge { passed: 36, failed: Some(37) }, "{out:?}");
    }

    #[test]
    fn an_edge_at_the_limit_is_confirmed_by_passing_again() {
        let out = search::<()>(settings(4, 50, 0.03, 2), &mut |_| Ok(Some(true))).unwrap();
        assert_eq!((out.best, out.at_limit, out.agreed, out.edges.len()), (50, true, 2, 3));
    }

    /// A search beside a load that costs streams, as a what-breaks-first search runs it (`--thorough`: a start at
    /// the edge alone, half of its 10 % precision as the first step, no confirmation): it walks down as
    /// `WALK_DOWN` counts, on the edges a whole thorough check measured (docs/streams.md). The forecast counted
    /// two steps each and a check ran 84 steps where it said 51.
    #[test]
    fn a_search_beside_a_costly_load_walks_down_as_walk_down_counts() {
        let walk = |alone: u32, beside: u32| {
            let mut tried = Vec::new();
            let s = SearchSettings {
                start: alone,
                limit: alone * 4,
                precision: 0.1,
                first_step: 0.05,
                confirmations: 0,
                derive_failing: Some(alone + 1),
            };
            search::<()>(s, &mut |n| {
                tried.push(n);
                Ok(Some(n <= beside))
            })
            .unwrap();
            let passing = tried.iter().filter(|&&n| n <= beside).count() as u32;
            (tried.clone(), Walk { failing: tried.len() as u32 - passing, passing })
        };
        let (tried, steps) = walk(41, 36);
        assert_eq!(tried, [41, 40, 39, 38, 36]);
        assert_eq!(steps, WALK_DOWN);
        // One bisection more where the doubled move lands below the tolerance of the count above it.
        let (tried, steps) = walk(13, 9);
        assert_eq!(tried, [13, 12, 11, 10, 8, 9]);
        assert_eq!(steps, Walk { passing: WALK_DOWN.passing + 1, ..WALK_DOWN });
        // A load that leaves no stream of a remux: every step fails, down to one viewer.
        let (tried, steps) = walk(4, 0);
        assert_eq!(tried, [4, 3, 2, 1]);
        assert_eq!(steps, Walk { failing: WALK_DOWN.failing, passing: 0 });
        // A load that costs nothing the search can tell: the start passes, one step.
        assert_eq!(walk(41, 41).0, [41]);
    }

    #[test]
    fn small_first_steps_walk_up_from_a_good_start() {
        let mut tried = Vec::new();
        let s = SearchSettings {
            start: 90,
            limit: 1000,
            precision: 0.05,
            first_step: 0.05,
            confirmations: 0,
            derive_failing: None,
        };
        let out = search::<()>(s, &mut |n| {
            tried.push(n);
            Ok(Some(n <= 100))
        })
        .unwrap();
        // Steps of 5 % of 90 (4), then 8: the edge is bracketed in three counts and bisected within 5 %.
        assert_eq!(&tried[..3], &[90, 94, 102]);
        assert_eq!(out.best, 98, "{tried:?}");
    }

    fn derived(start: u32, failing: u32, capacity: u32) -> (SearchOutcome, Vec<u32>) {
        let mut tried = Vec::new();
        let s = SearchSettings {
            start,
            limit: 1000,
            precision: 0.2,
            first_step: 0.2,
            confirmations: 0,
            derive_failing: Some(failing),
        };
        let out = search::<()>(s, &mut |n| {
            tried.push(n);
            Ok(Some(n <= capacity))
        })
        .unwrap();
        (out, tried)
    }

    /// `check --quick`'s later formats: a start scaled from an earlier edge that passes is the one step run; the
    /// failing count is the earlier edge's, scaled, and said to be derived.
    #[test]
    fn a_passing_scaled_start_ends_the_search_with_a_derived_failing_count() {
        let (out, tried) = derived(12, 16, 13);
        assert_eq!(tried, [12], "one step");
        assert_eq!((out.best, out.first_failing, out.failing_derived, out.at_limit), (12, Some(16), true, false));
        assert_eq!(out.edges, [Edge { passed: 12, failed: Some(16) }]);
    }

    /// A scaled start that fails is measured on both sides: one step down, to the count whose tolerance reaches
    /// back to the start, and the edge is found without a bisection (359 failed in a real check, then 288 passed
    /// and 323 had to be run as well).
    #[test]
    fn a_failing_scaled_start_measures_both_sides_of_its_edge() {
        let (out, tried) = derived(359, 410, 310);
        assert_eq!(tried, [359, 300], "the start, then ⌈359 ÷ 1.2⌉");
        assert_eq!((out.best, out.first_failing, out.failing_derived), (300, Some(359), false));
        // Far below: the steps double from there, and the edge is bisected as usual.
        // Further below: small steps down while they fail (each ends at its first failure), so the first that
        // passes is within the precision, with no bisection (900 failed in a real check, then 720, and 360,
        // 540 and 630 passed).
        let (out, tried) = derived(900, 1100, 630);
        assert_eq!(tried, [900, 750, 625], "{tried:?}");
        assert_eq!((out.best, out.first_failing, out.failing_derived), (625, Some(750), false));
        // Far below: three small steps, then they double.
        let (out, tried) = derived(900, 1100, 200);
        assert_eq!(&tried[..5], &[900, 750, 625, 521, 313], "{tried:?}");
        assert!(out.best <= 200 && out.first_failing.unwrap() > 200, "{out:?}");
        assert!(out.first_failing.unwrap() - out.best <= out.best / 5, "{out:?}");
    }

    #[test]
    fn the_comfortable_count_leaves_a_fifth_or_the_lowest_edge() {
        assert_eq!(plan_for(73, 68), 58);
        assert_eq!(plan_for(73, 50), 50);
        assert_eq!(plan_for(0, 0), 0);
        assert_eq!(plan_for(4, 4), 3);
    }

    #[test]
    fn a_bound_is_the_rate_over_the_stream_rate() {
        assert!((streams_bound(100.0, 8_000_000) - 100.0).abs() < 1e-9);
        assert_eq!(streams_bound(100.0, 0), 0.0);
    }
}
