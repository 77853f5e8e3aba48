//! fio's latency_target search, for one worker: the highest queue depth (1 up to the worker's iodepth) at which
//! `percentile` % of the I/O completing in each `window` took at most `target`. A port of fio's io_u.c
//! (`lat_target_check`, `lat_target_success`, `__lat_target_failed`), as a schedule wrapper: [`DepthSearched`]
//! wraps the worker's schedule and the core knows nothing of it. It holds the queue at the search's depth by
//! answering `AfterCompletion` once that many I/Os are in flight (fio's queue_full), hears each measured
//! completion's total latency through the core's one generic hook (`Schedule::measured`), judges the window
//! each time the core asks it for work, and once the search has settled answers the owed flushes and then
//! `Done`, which ends the worker as its runtime would.
//!
//! - The worker starts at depth 1. A window that meets the target doubles the depth until one fails (or the
//!   iodepth is reached); after a failure the depth is bisected between the highest that met the target (`low`)
//!   and the lowest that failed (`high`). When the depth does not change after a good window, the worker runs one
//!   more window there and stops: that is the depth found. `latency_run` keeps adjusting until the job ends.
//! - Three good windows in a row one below `high` raise `high` by one, fio's guard against settling under a
//!   depth that failed once by bad luck.
//! - After a failure the I/O in flight (issued at the deeper queue) drains before the next window starts, so its
//!   latencies are not charged to the shallower one (fio's quiesce).
//! - At 100 % the first late I/O fails the window at once, as in fio.
//!
//! Differences from fio, on purpose: at depth 1 a failed window starts a fresh one (fio keeps judging the growing
//! window after every completion), and at 100 % a late I/O at depth 1 marks the target as not met instead of
//! ending the job with ETIMEDOUT; fio also throws away what it measured before the last window, streamcap keeps
//! the whole run in its figures.
//!
//! The window is judged when the core next asks for work: after every completion while the search holds the
//! queue below the engine's depth, and otherwise at the next completion (the core of old judged it at every turn
//! of its loop, so also at an interval boundary reached while every slot of a stalled device was busy).
//!
//! Per I/O this costs one comparison and three additions (`observe`) and the check of the queue's depth; the
//! depth is judged once per window (`steer`). Times are durations from the worker's origin, so the search is
//! tested without a clock. Must not: issue I/O or know the engine.

use std::path::Path;
use std::time::Duration;

use super::schedule::{Ctx, Io, Next, Schedule};
use crate::metrics::DepthFound;
use crate::plan::LatencyTarget;

/// A schedule under fio's latency_target search (see the module's header).
pub(super) struct DepthSearched<S> {
    inner: S,
    search: DepthSearch,
}

impl<S: Schedule> DepthSearched<S> {
    /// `inner` searched up to `max` (the engine's queue depth), the first window starting at `start` (the end of
    /// the ramp, from the worker's origin).
    pub(super) fn new(inner: S, target: &LatencyTarget, max: u32, start: Duration) -> DepthSearched<S> {
        DepthSearched { inner, search: DepthSearch::new(target, max, start) }
    }

    /// What the search found, for the worker's results.
    pub(super) fn found(&self) -> DepthFound {
        self.search.found()
    }
}

impl<S: Schedule> Schedule for DepthSearched<S> {
    #[inline]
    fn next(&mut self, ctx: &mut Ctx<'_>) -> Next {
        if ctx.measuring {
            self.search.steer(ctx.now, ctx.in_flight);
        }
        if self.search.done() {
            return self.inner.owed_flush().map_or(Next::Done, Next::Io);
        }
        if ctx.in_flight >= self.search.limit() {
            return Next::AfterCompletion;
        }
        self.inner.next(ctx)
    }

    #[inline]
    fn prepare(&mut self, io: &Io, buf: &mut [u8]) -> bool {
        self.inner.prepare(io, buf)
    }

    #[inline]
    fn completed(&mut self, io: &Io, result: Result<u32, i32>, now: Duration, buf: &[u8]) -> bool {
        self.inner.completed(io, result, now, buf)
    }

    #[inline]
    fn measured(&mut self, io: &Io, latency_ns: u64, bytes: u32) {
        self.search.observe(latency_ns, u64::from(bytes));
        self.inner.measured(io, latency_ns, bytes);
    }

    fn owed_flush(&mut self) -> Option<Io> {
        self.inner.owed_flush()
    }

    fn finish(&mut self, now: Duration) {
        self.inner.finish(now);
    }

    fn path(&self, file: u32) -> &Path {
        self.inner.path(file)
    }
}

/// One worker's search.
#[derive(Debug)]
pub(super) struct DepthSearch {
    target_ns: u64,
    window: Duration,
    percentile: f64,
    keep_adjusting: bool,
    max: u32,
    /// fio's latency_qd, latency_qd_low and latency_qd_high.
    depth: u32,
    low: u32,
    high: u32,
    /// Good windows in a row one below `high`.
    stable: u32,
    /// From the worker's origin.
    window_start: Duration,
    ios: u64,
    failed: u64,
    bytes: u64,
    /// The last judged window: I/Os, bytes and length (what fio's figures cover when the search settles).
    last: (u64, u64, Duration),
    /// The depth held: this window is the last (fio's latency_end_run).
    last_window: bool,
    /// Waiting for the I/O of a deeper queue to complete before the next window.
    draining: bool,
    done: bool,
    windows: u32,
    windows_met: u32,
    met: Option<bool>,
}

impl DepthSearch {
    /// A search up to `max` (the worker's iodepth) whose first window starts at `start` (the end of the ramp).
    pub(super) fn new(target: &LatencyTarget, max: u32, start: Duration) -> DepthSearch {
        DepthSearch {
            target_ns: u64::try_from(target.target.as_nanos()).unwrap_or(u64::MAX),
            window: target.window,
            percentile: target.percentile,
            keep_adjusting: target.keep_adjusting,
            max: max.max(1),
            depth: 1,
            low: 1,
            high: max.max(1),
            stable: 0,
            window_start: start,
            ios: 0,
            failed: 0,
            bytes: 0,
            last: (0, 0, Duration::ZERO),
            last_window: false,
            draining: false,
            done: false,
            windows: 0,
            windows_met: 0,
            met: None,
        }
    }

    /// How many I/Os may be in flight now: 0 while the deeper queue drains.
    #[inline]
    pub(super) fn limit(&self) -> usize {
        if self.draining { 0 } else { self.depth as usize }
    }

    /// The search is over: the worker should stop as if its runtime had ended.
    #[inline]
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// A measured I/O of `bytes` completed after `latency_ns` (from when it was taken to its completion, fio's
    /// lat).
    #[inline]
    pub(super) fn observe(&mut self, latency_ns: u64, bytes: u64) {
        self.ios += 1;
        self.bytes += bytes;
        if latency_ns > self.target_ns {
            self.failed += 1;
        }
    }

    /// Called whenever the core asks for work, with the I/O in flight (`now` from the worker's origin): ends a
    /// drain, and judges the window once it has lasted `window` (or, at 100 %, once an I/O was late).
    pub(super) fn steer(&mut self, now: Duration, in_flight: usize) {
        if self.done {
            return;
        }
        if self.draining {
            if in_flight == 0 {
                self.draining = false;
                self.new_window(now);
            }
            return;
        }
        let all_must_meet = self.percentile >= 100.0;
        if all_must_meet && self.failed > 0 {
            self.judged(false, now);
        } else if now.saturating_sub(self.window_start) >= self.window {
            // A window in which nothing completed failed, as in fio (its 0/0 is no success).
            let good = self.ios > 0 && (self.ios - self.failed) as f64 * 100.0 / self.ios as f64 >= self.percentile;
            self.judged(good, now);
        }
    }

    /// What the worker found, for its results.
    pub(super) fn found(&self) -> DepthFound {
        DepthFound {
            depth: self.depth,
            max_depth: self.max,
            windows: self.windows,
            windows_met: self.windows_met,
            met: self.met,
            settled: self.done,
            window_ops: self.last.0,
            window_bytes: self.last.1,
            window_us: u64::try_from(self.last.2.as_micros()).unwrap_or(u64::MAX),
        }
    }

    fn judged(&mut self, good: bool, now: Duration) {
        self.windows += 1;
        self.windows_met += u32::from(good);
        self.met = Some(good);
        self.last = (self.ios, self.bytes, now.saturating_sub(self.window_start));
        if good { self.success(now) } else { self.failure(now) }
    }

    fn new_window(&mut self, now: Duration) {
        self.window_start = now;
        self.ios = 0;
        self.failed = 0;
        self.bytes = 0;
    }

    /// fio's lat_target_success.
    fn success(&mut self, now: Duration) {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        // Until a depth has failed, double; after, bisect towards the lowest depth that failed.
        self.depth = if self.high != self.max { (self.depth + self.high) / 2 } else { self.depth * 2 };
        self.depth = self.depth.min(self.max);
        if !self.keep_adjusting && self.depth == before {
            if self.last_window {
                self.done = true;
            } else {
                self.last_window = true;
            }
        }
        self.new_window(now);
    }

    /// fio's __lat_target_failed.
    fn failure(&mut self, now: Duration) {
        if self.depth == 1 {
            self.new_window(now);
            return;
        }
        self.high = self.depth;
        if self.depth == self.low {
            self.low -= 1;
        }
        self.depth = (self.depth + self.low) / 2;
        self.stable = 0;
        self.draining = true;
    }
}

#[cfg(test)]
mod tests {
    use super::super::schedule::testing::{Script, take};
    use super::*;
    use crate::engine::OpKind;

    const WINDOW: Duration = Duration::from_millis(100);

    fn search(percentile: f64, max: u32, start: Duration) -> DepthSearch {
        let target =
            LatencyTarget { target: Duration::from_micros(100), window: WINDOW, percentile, keep_adjusting: false };
        DepthSearch::new(&target, max, start)
    }

    /// Runs windows on a manual clock: each window's I/O is late when `late(depth)`; returns the depths tried.
    fn drive(s: &mut DepthSearch, start: Duration, late: impl Fn(u32) -> bool, windows: u32) -> Vec<u32> {
        let mut tried = Vec::new();
        let mut now = start;
        for _ in 0..windows {
            if s.done() {
                break;
            }
            tried.push(s.depth);
            for _ in 0..1000 {
                s.observe(if late(s.depth) { 1_000_000 } else { 10_000 }, 4096);
            }
            now += WINDOW;
            s.steer(now, 4);
            s.steer(now, 0);
        }
        tried
    }

    #[test]
    fn a_target_always_met_doubles_to_the_iodepth_holds_it_one_window_and_stops() {
        let start = Duration::from_secs(2);
        let mut s = search(99.0, 32, start);
        assert_eq!(drive(&mut s, start, |_| false, 20), [1, 2, 4, 8, 16, 32, 32]);
        let found = s.found();
        assert_eq!(
            (found.depth, found.met, found.settled, found.windows, found.windows_met),
            (32, Some(true), true, 7, 7)
        );
        assert_eq!((found.window_ops, found.window_bytes, found.window_us), (1000, 4096 * 1000, 100_000));
    }

    #[test]
    fn a_target_never_met_stays_at_depth_one_and_says_so() {
        let start = Duration::from_secs(2);
        let mut s = search(99.9, 64, start);
        assert_eq!(drive(&mut s, start, |_| true, 5), [1, 1, 1, 1, 1]);
        let found = s.found();
        assert_eq!((found.depth, found.met, found.settled, found.windows_met), (1, Some(false), false, 0));
    }

    #[test]
    fn a_limit_between_bisects_to_the_deepest_queue_that_meets_it() {
        // Depths up to 12 meet the target: fio doubles to 16, fails, bisects between 8 and 16 (12 good, 14 and
        // 13 not), comes back to 12, holds it for a last window and stops there.
        let start = Duration::from_secs(2);
        let mut s = search(100.0, 64, start);
        let tried = drive(&mut s, start, |d| d > 12, 40);
        assert_eq!(&tried[..8], [1, 2, 4, 8, 16, 12, 14, 13]);
        assert!(s.found().settled, "{tried:?}");
        assert_eq!(s.found().depth, 12, "{tried:?}");
        assert!(tried.iter().all(|&d| d <= 16));
    }

    #[test]
    fn after_a_failure_nothing_is_issued_until_the_deeper_queue_has_drained() {
        let start = Duration::from_secs(2);
        let mut s = search(100.0, 8, start);
        drive(&mut s, start, |_| false, 3);
        assert_eq!(s.limit(), 8);
        s.observe(1_000_000, 4096);
        let now = start + WINDOW * 3 + Duration::from_millis(1);
        s.steer(now, 8);
        assert_eq!(s.limit(), 0, "draining: the failure was judged at once at 100 %");
        s.steer(now, 3);
        assert_eq!(s.limit(), 0);
        s.steer(now, 0);
        assert_eq!(s.limit(), 6, "(8 + 4) / 2");
    }

    #[test]
    fn below_one_hundred_percent_a_window_is_judged_only_when_it_has_lasted() {
        let start = Duration::from_secs(2);
        let mut s = search(90.0, 8, start);
        for i in 0..100 {
            s.observe(if i < 5 { 1_000_000 } else { 1 }, 4096);
        }
        s.steer(start + WINDOW / 2, 1);
        assert_eq!((s.found().windows, s.limit()), (0, 1));
        s.steer(start + WINDOW, 1);
        assert_eq!((s.found().windows, s.found().met, s.limit()), (1, Some(true), 2));
    }

    #[test]
    fn latency_run_keeps_adjusting_at_the_iodepth() {
        let start = Duration::from_secs(2);
        let target = LatencyTarget {
            target: Duration::from_micros(100),
            window: WINDOW,
            percentile: 100.0,
            keep_adjusting: true,
        };
        let mut s = DepthSearch::new(&target, 4, start);
        assert_eq!(drive(&mut s, start, |_| false, 6), [1, 2, 4, 4, 4, 4]);
        assert!(!s.found().settled);
    }

    /// Asks the wrapper for work with `in_flight` I/Os in flight at `now`, the ramp over.
    fn ask(s: &mut DepthSearched<Script>, now: Duration, in_flight: usize) -> Result<Io, Next> {
        take(s, now, in_flight, true)
    }

    #[test]
    fn the_wrapper_holds_the_queue_at_the_depth_searched_and_ends_the_worker_once_settled() {
        let target = LatencyTarget {
            target: Duration::from_micros(100),
            window: WINDOW,
            percentile: 100.0,
            keep_adjusting: false,
        };
        let start = Duration::from_secs(1);
        let mut s = DepthSearched::new(Script::of(&[OpKind::Read]), &target, 4, start);
        s.inner.owed = Some(Io::transfer(OpKind::Fsync, 0, 0, 0, None));
        let mut now = start;
        let mut depths = Vec::new();
        while !s.search.done() {
            // As deep as the search allows, and not one I/O more (fio's queue_full).
            let mut in_flight = 0;
            while let Ok(io) = ask(&mut s, now, in_flight) {
                assert_eq!(io.kind, OpKind::Read);
                in_flight += 1;
            }
            assert!(matches!(ask(&mut s, now, in_flight), Err(Next::AfterCompletion)));
            depths.push(in_flight);
            // Every I/O meets the target, heard through the core's generic hook.
            for _ in 0..in_flight {
                s.measured(&Io::transfer(OpKind::Read, 0, 0, 4096, None), 50_000, 4096);
            }
            now += WINDOW;
            s.search.steer(now, in_flight);
        }
        assert_eq!(depths[..3], [1, 2, 4], "{depths:?}");
        let found = s.found();
        assert_eq!((found.depth, found.settled, found.met), (4, true, Some(true)));
        assert_eq!(ask(&mut s, now, 3).map(|io| io.kind).ok(), Some(OpKind::Fsync), "owed flushes go out first");
        assert!(matches!(ask(&mut s, now, 3), Err(Next::Done)));
    }

    #[test]
    fn the_search_neither_judges_nor_hears_in_the_ramp_and_drains_after_a_failed_window() {
        let target = LatencyTarget {
            target: Duration::from_micros(100),
            window: WINDOW,
            percentile: 100.0,
            keep_adjusting: false,
        };
        let mut s = DepthSearched::new(Script::of(&[OpKind::Read]), &target, 8, WINDOW * 10);
        // In the ramp the queue is held at depth 1 and no window is judged, however long it lasts.
        assert!(take(&mut s, WINDOW * 9, 0, false).is_ok());
        assert!(matches!(take(&mut s, WINDOW * 9, 1, false), Err(Next::AfterCompletion)));
        assert_eq!(s.found().windows, 0);
        // Measured: good windows double the depth (1, 2, 4).
        for (n, now) in [(1, 11), (2, 12)] {
            s.measured(&Io::transfer(OpKind::Read, 0, 0, 4096, None), 1_000, 4096);
            assert!(ask(&mut s, WINDOW * now, n).is_ok());
        }
        assert_eq!(s.search.limit(), 4);
        // One late I/O at 100 % fails the window at once: nothing more until the queue of 4 has drained.
        s.measured(&Io::transfer(OpKind::Read, 0, 0, 4096, None), 1_000_000, 4096);
        let now = WINDOW * 12 + Duration::from_millis(1);
        assert!(matches!(ask(&mut s, now, 3), Err(Next::AfterCompletion)));
        assert!(matches!(ask(&mut s, now, 1), Err(Next::AfterCompletion)));
        assert!(ask(&mut s, now, 0).is_ok(), "drained: a new window at depth (4 + 2) / 2");
        assert_eq!(s.search.limit(), 3);
    }
}
