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
//! `confirmations` rounds the capacity is the median of the edges found (the search's and each round's; when
//! they are an even number whose two middle ones differ, one round more breaks the tie), and the
//! lowest and highest of them are its range: one number with its spread. A stable device gives a range of one
//! count; a device whose answer flips near the edge gives a wider one.
//!
//! A derived edge (`SearchSettings::derive_failing`, for a search that starts where an earlier format found its
//! edge and runs no confirmation: `check --quick`'s later formats): when the first count, the earlier edge's
//! passing count scaled to this format, passes, the search ends there, with the failing count the earlier edge's
//! scaled too — measured passing, derived failing, and said so (`SearchOutcome::failing_derived`) — unless a probe
//! is set (`SearchSettings::probe`): then one step more runs at that count, above the first, and again the same
//! ratio above each probe that passes, up to `SearchSettings::probe_up_to`; the highest count that passed is the
//! capacity (its failing count still derived when no probe failed), and a probe that fails ends the search, the
//! edge between it and the count below, both measured. A start from an earlier format errs low as often as high,
//! and without the probe a low start was the answer; one probe of 10 % left a start 20 % low short still.
//! When the first count fails, the search goes on as any other, and both sides of its edge are measured.
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
    /// With `derive_failing`: when `start` passes, one step more at this count (above `start`, within `limit`)
    /// before the search ends. `None`: the search ends at `start`.
    pub probe: Option<u32>,
    /// With `probe`: a probe that passes probes again, each the same ratio above the last (probe ÷ start), never
    /// above this count (the first probe included: one above it runs here, one at or below `start` never runs).
    /// `None`: one probe, as it falls.
    pub probe_up_to: Option<u32>,
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
        let (edge, derived, stopped) = searcher.probe_up(start, failed)?;
        (out.best, out.first_failing, out.failing_derived, out.stopped) = (edge.passed, edge.failed, derived, stopped);
        out.edges.push(edge);
        return Ok(out);
    }
    match searcher.edge_from(start, passed, settings.first_step)? {
        Some(edge) => out.edges.push(edge),
        None => {
            (out.best, out.first_failing, out.stopped) = (searcher.seen.0, searcher.seen.1, true);
            return Ok(out);
        }
    }
    confirm_rounds(&mut searcher, settings.confirmations, &mut out)?;
    let median = median(&out.edges).expect("the search found an edge");
    (out.best, out.first_failing, out.at_limit) = (median.passed, median.failed, median.failed.is_none());
    Ok(out)
}

/// Runs the edge again `confirmations` times, and once more when they leave the middle of an even number of edges
/// split (`split`); a stop asked for during a round marks `out` stopped.
fn confirm_rounds<E>(searcher: &mut Searcher<'_, E>, confirmations: u32, out: &mut SearchOutcome) -> Result<(), E> {
    let tiebreak = confirmations + u32::from(confirmations > 0);
    let mut round = 0;
    while round < confirmations || (round < tiebreak && split(&out.edges)) {
        round += 1;
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
    Ok(())
}

/// An even number of edges whose two middle ones disagree: their median would be the lower by a coin's toss, so
/// the search runs one round more (once) and the odd middle decides. One step disturbed from outside (every
/// viewer of a count 14 % under the edge stalled at once in a busy CI run, where that count and the next passed
/// again in the confirmation) then no longer decides alone: edges 46 and 55 gave 46, a third gives the median of
/// three.
fn split(edges: &[Edge]) -> bool {
    let mut passed: Vec<u32> = edges.iter().map(|e| e.passed).collect();
    passed.sort_unstable();
    let n = passed.len();
    n >= 2 && n.is_multiple_of(2) && passed[n / 2 - 1] != passed[n / 2]
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

    /// Up from a `start` that passed, whose failing count would be `derived` (`SearchSettings::probe`,
    /// `probe_up_to`): the edge, whether its failing count is derived (every probe passed, or none ran), and
    /// whether the measuring function asked to stop. Every count it returns as passed was measured passing; a
    /// probe that fails ends the search, with no step between it and the count below (that step passes near the
    /// edge and so lasts a whole passing step: it made an ext4 quick check 73–86 s where it took 47–63).
    fn probe_up(&mut self, start: u32, derived: u32) -> Result<(Edge, bool, bool), E> {
        let probe = self.settings.probe.unwrap_or(start);
        // One probe (`probe_up_to` unset) runs only within the limit; repeated ones stop at their cap.
        let one = if probe <= self.limit { probe } else { start };
        let cap = self.settings.probe_up_to.unwrap_or(one).min(self.limit);
        let ratio = f64::from(probe) / f64::from(start.max(1));
        let derived_edge = |passed: u32| Edge { passed, failed: Some(derived.max(passed + 1)) };
        let (mut passed, mut next) = (start, probe.min(cap));
        while next > passed {
            match self.measure(next)? {
                None => return Ok((derived_edge(passed), true, true)),
                Some(true) => passed = next,
                Some(false) => return Ok((Edge { passed, failed: Some(next) }, false, false)),
            }
            // Less a hair before rounding up: 110 × 1.1 is 121.000…01 in floating point.
            next = ((f64::from(passed) * ratio - 1e-9).ceil() as u32).max(passed + 1).min(cap);
        }
        Ok((derived_edge(passed), true, false))
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
#[path = "capacity_tests.rs"]
mod tests;
