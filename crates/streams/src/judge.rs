//! When a step's judged playback begins and when the step ends, shared by the step's scheduler threads. It
//! reads no clock: every instant is handed in by a scheduler (from the step's common origin), so tests drive it
//! by hand.
//!
//! A step is judged once every viewer has reached steady state (its buffer full once, `model.rs`): the judged
//! window starts at the instant the last viewer did, and lasts the stated playback time. Each viewer is
//! *resolved* once it reached steady state, missed its bound (`steady_within` after it arrived, its buffer never
//! full), or stopped on a failed read. The step ends when every viewer is resolved: at the end of the judged
//! window (after the last viewer that reached steady state), or when the last viewer gave up if that is later. With `fail_fast` (the steps of a
//! capacity search, which only need pass or fail), the step ends at once when a viewer misses its bound, fails
//! a read, does not start within twice the start-up target, or is one slow start more than the audience is
//! allowed ([`slow_starts_allowed`]): it has failed, and running on would only cost time.
//!
//! Why an allowance of slow starts. A step's audience arrives within seconds (a real one over minutes), so a
//! viewer who presses play just after two others whose titles lie on the same disk fetches its start beside
//! their starts and buffer fills: a crowding a real audience at that count rarely meets. On btrfs raid1 at half
//! the pool's bound, such a viewer took 2.02–2.09 s where the target is 2 s and failed steps whose other viewers
//! all started within 1.9 s (docs/validation.md, "Start-up in a crowd"). So one viewer in ten (at least one)
//! may start late, none later than twice the target; more than that is the disk, and fails the step.
//!
//! Instants are kept as nanoseconds in atomics: schedulers on other threads read them without a lock. A thread
//! sees the end at its next event; the schedulers ask at least every `POLL` while the end is not known.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// How a step is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judging {
    /// Each viewer must reach steady state within this of its arrival.
    pub steady_within: Duration,
    /// Playback judged after the last viewer reached steady state.
    pub judged: Duration,
    /// End the step at the first viewer that settles its failure (a search step); otherwise run until every
    /// viewer is resolved and report them all (a step of a fixed count).
    pub fail_fast: bool,
    /// The start-up target: a viewer not playing this long after it arrived is a slow start (one in ten may be,
    /// see [`slow_starts_allowed`]); one not playing after twice this fails the step.
    pub max_startup: Duration,
}

impl Judging {
    /// A viewer not playing this long after it arrived has not started at all: twice the start-up target.
    pub fn start_given_up(&self) -> Duration {
        give_up_start(self.max_startup)
    }
}

/// A viewer not playing `2 × max_startup` after it arrived never started (see the module documentation).
pub fn give_up_start(max_startup: Duration) -> Duration {
    max_startup * 2
}

/// How many of an audience of `viewers` may start later than the target (but within twice it): one in ten,
/// at least one (see the module documentation).
pub fn slow_starts_allowed(viewers: u32) -> u32 {
    (viewers / 10).max(1)
}

/// How often a scheduler looks for an end another thread decided, while none is known.
pub const POLL: Duration = Duration::from_millis(50);

/// No instant yet, for a minimum (the cut); the latest instants are kept as nanoseconds + 1, 0 for none, so
/// that `fetch_max` needs no special case.
const NONE: u64 = u64::MAX;

/// The shared state of one step's judgement (see the module documentation).
#[derive(Debug)]
pub struct StepJudge {
    pub judging: Judging,
    viewers: u32,
    resolved: AtomicU32,
    steady: AtomicU32,
    last_steady: AtomicU64,
    last_unsteady: AtomicU64,
    slow_starts: AtomicU32,
    cut: AtomicU64,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(NONE - 2)
}

fn instant(n: u64) -> Option<Duration> {
    (n != NONE).then(|| Duration::from_nanos(n))
}

/// A latest instant kept as nanoseconds + 1 (0: none).
fn latest(n: u64) -> Option<Duration> {
    n.checked_sub(1).map(Duration::from_nanos)
}

impl StepJudge {
    /// The judgement of a step of `viewers` viewers (those this process runs).
    pub fn new(viewers: u32, judging: Judging) -> StepJudge {
        StepJudge {
            judging,
            viewers,
            resolved: AtomicU32::new(0),
            steady: AtomicU32::new(0),
            last_steady: AtomicU64::new(0),
            last_unsteady: AtomicU64::new(0),
            slow_starts: AtomicU32::new(0),
            cut: AtomicU64::new(NONE),
        }
    }

    /// A viewer's buffer was full for the first time at `at`.
    pub fn steady(&self, at: Duration) {
        // The instant first, the count after: a thread that sees the count complete sees the instant too.
        self.last_steady.fetch_max(nanos(at) + 1, Ordering::AcqRel);
        self.steady.fetch_add(1, Ordering::AcqRel);
        self.resolved.fetch_add(1, Ordering::AcqRel);
    }

    /// A viewer gave up at `at` without reaching steady state: it missed its bound, or a read failed.
    pub fn unsteady(&self, at: Duration) {
        self.last_unsteady.fetch_max(nanos(at) + 1, Ordering::AcqRel);
        self.resolved.fetch_add(1, Ordering::AcqRel);
        self.failed(at);
    }

    /// A viewer was not playing at `at`, its start-up target after it arrived: the step fails there when that
    /// is one slow start more than the audience is allowed.
    pub fn slow_start(&self, at: Duration) {
        if self.slow_starts.fetch_add(1, Ordering::AcqRel) + 1 > slow_starts_allowed(self.viewers) {
            self.failed(at);
        }
    }

    /// The step failed at `at` (with `fail_fast`, it ends there).
    pub fn failed(&self, at: Duration) {
        if self.judging.fail_fast {
            self.cut.fetch_min(nanos(at), Ordering::AcqRel);
        }
    }

    /// When the step ends, once that is known.
    pub fn end(&self) -> Option<Duration> {
        if let Some(cut) = instant(self.cut.load(Ordering::Acquire)) {
            return Some(cut);
        }
        if self.resolved.load(Ordering::Acquire) < self.viewers {
            return None;
        }
        // The judged playback follows the last viewer that reached steady state, even when another never did
        // (a fixed count reports what the steady viewers then went through).
        let judged = latest(self.last_steady.load(Ordering::Acquire)).map(|s| s + self.judging.judged);
        let gave_up = latest(self.last_unsteady.load(Ordering::Acquire));
        judged.max(gave_up).or(Some(Duration::ZERO))
    }

    /// When the last viewer reached steady state: the start of the judged window. `None` until every viewer
    /// is resolved, or when one of them never reached it.
    pub fn judged_from(&self) -> Option<Duration> {
        let all = self.steady.load(Ordering::Acquire) == self.viewers;
        all.then(|| latest(self.last_steady.load(Ordering::Acquire))).flatten()
    }

    /// The step was cut short by a failure at this instant (only with `fail_fast`).
    pub fn cut(&self) -> Option<Duration> {
        instant(self.cut.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn judging(fail_fast: bool) -> Judging {
        Judging { steady_within: s(10), judged: s(5), fail_fast, max_startup: s(2) }
    }

    #[test]
    fn the_judged_window_starts_when_the_last_viewer_is_steady() {
        let judge = StepJudge::new(3, judging(false));
        judge.steady(s(4));
        judge.steady(s(2));
        assert_eq!((judge.end(), judge.judged_from()), (None, None), "one viewer still filling");
        judge.steady(s(7));
        assert_eq!((judge.judged_from(), judge.end()), (Some(s(7)), Some(s(12))));
    }

    #[test]
    fn a_fixed_count_runs_until_every_viewer_is_resolved_and_a_search_step_stops_at_the_first_failure() {
        let judge = StepJudge::new(3, judging(false));
        judge.steady(s(3));
        judge.unsteady(s(11));
        assert_eq!(judge.end(), None);
        judge.steady(s(9));
        // Judged from the last steady viewer, 5 s of playback, but not before the one that gave up at 11 s.
        assert_eq!((judge.end(), judge.judged_from(), judge.cut()), (Some(s(14)), None, None));

        let judge = StepJudge::new(2, judging(false));
        judge.unsteady(s(10));
        judge.unsteady(s(12));
        assert_eq!(judge.end(), Some(s(12)), "nobody steady: the step ends with the last to give up");

        let judge = StepJudge::new(3, judging(true));
        judge.steady(s(3));
        judge.failed(s(6));
        judge.unsteady(s(5));
        assert_eq!((judge.end(), judge.cut()), (Some(s(5)), Some(s(5))));
    }

    #[test]
    fn one_slow_start_in_ten_is_allowed_and_the_next_one_ends_a_search_step() {
        assert_eq!((slow_starts_allowed(1), slow_starts_allowed(19), slow_starts_allowed(20)), (1, 1, 2));
        assert_eq!(judging(true).start_given_up(), s(4));
        let judge = StepJudge::new(12, judging(true));
        judge.slow_start(s(3));
        assert_eq!(judge.cut(), None, "one of twelve may start late");
        judge.slow_start(s(4));
        assert_eq!((judge.cut(), judge.end()), (Some(s(4)), Some(s(4))), "the second fails the step");

        let judge = StepJudge::new(20, judging(true));
        judge.slow_start(s(3));
        judge.slow_start(s(4));
        assert_eq!(judge.cut(), None, "two of twenty may");
    }
}
