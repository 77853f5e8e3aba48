//! The coordinator's side of a phase while its workers run: snapshots merged into interval reports (each
//! reported once every worker has sent its own or finished), phase totals, error records, each worker's own
//! totals when kept, and the rate floor (fio rate_min). It must not start or stop threads; `phase` does. The
//! ordering of intervals is `metrics::IntervalMerge`, as rank 0's merge of the ranks' intervals
//! (`app/cluster/merge.rs`).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::RunObserver;
use super::control::WorkerMsg;
use super::phase::{IntervalReport, PhaseControl, SeriesStart};
use crate::metrics::{
    ErrorRecord, IntervalMerge, OpClass, Recorder, Snapshot, SteadyConfig, SteadyTracker, WorkerTotals,
};
use crate::plan::{RateFloor, defaults};

/// Merges snapshots into intervals and totals (raw and file-set phases alike).
pub(super) struct Gatherer {
    pub(super) interval: Duration,
    /// Intervals still waiting for some worker: merged recorder, its owner (for recycling), latest elapsed.
    pending: IntervalMerge<(u32, Duration)>,
    /// Where emptied recorders go back for reuse, by worker (empty: they are dropped).
    spares: Vec<Sender<Recorder>>,
    pub(super) totals: Recorder,
    pub(super) errors: Vec<ErrorRecord>,
    pub(super) measured: Duration,
    /// The lowest rate a worker may fall to over a full interval (fio rate_min).
    pub(super) floor: Option<RateFloor>,
    /// Why the phase fell below its floor, once it has.
    pub(super) floor_breach: Option<String>,
    /// Where this run's intervals fall in the phase's series.
    pub(super) series: SeriesStart,
    /// Interval reports made so far.
    pub(super) reported_intervals: u64,
    /// Each worker's own totals and rate spreads, when they are kept (empty otherwise).
    pub(super) workers: Vec<WorkerTotals>,
    /// The phase's steady-state window (fio steadystate, `--steady-state`), fed once per full interval.
    pub(super) steady: Option<SteadyTracker>,
    /// The window has become steady: the phase is to end.
    steady_reached: bool,
}

impl Gatherer {
    pub(super) fn new(workers: usize, interval: Duration, spares: Vec<Sender<Recorder>>) -> Gatherer {
        Gatherer {
            interval,
            pending: IntervalMerge::new(workers),
            spares,
            totals: Recorder::new(false),
            errors: Vec::new(),
            measured: Duration::ZERO,
            floor: None,
            floor_breach: None,
            series: SeriesStart::default(),
            reported_intervals: 0,
            workers: Vec::new(),
            steady: None,
            steady_reached: false,
        }
    }

    /// The gatherer with what its phase asks of it: a rate floor, a test of steadiness, where its intervals fall
    /// in the phase's series, and the own totals of `kept` workers (all or none).
    pub(super) fn asked(
        mut self,
        floor: Option<RateFloor>,
        steady: Option<SteadyConfig>,
        series: SeriesStart,
        kept: usize,
    ) -> Gatherer {
        (self.floor, self.steady, self.series) = (floor, steady.map(SteadyTracker::new), series);
        self.workers = vec![WorkerTotals::new(); kept];
        self
    }

    /// Takes the workers' snapshots until every worker has ended, telling the observer when measurement starts
    /// (`measure_start`, after the ramp; `announced` when it was told as the workers were released) and stopping
    /// the phase when a worker falls below the rate floor.
    pub(super) fn follow(
        &mut self,
        rx: &Receiver<WorkerMsg>,
        control: &PhaseControl,
        (phase, mut announced): (usize, bool),
        measure_start: Instant,
        observer: &mut dyn RunObserver,
    ) {
        loop {
            let timeout = if announced {
                Duration::from_millis(500)
            } else {
                measure_start.saturating_duration_since(Instant::now())
            };
            match rx.recv_timeout(timeout) {
                Ok(WorkerMsg::Snapshot(snapshot)) => {
                    self.add(*snapshot, phase, observer);
                    if self.floor_breach.is_some() {
                        control.abort.store(true, Ordering::Relaxed);
                    }
                    if self.steady_reached {
                        // `steady` first: the phase ends as completed, not as stopped by an error.
                        control.steady.store(true, Ordering::Relaxed);
                        control.abort.store(true, Ordering::Relaxed);
                    }
                }
                Ok(WorkerMsg::Ready { .. }) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if !announced && Instant::now() >= measure_start {
                announced = true;
                observer.measuring(phase);
            }
        }
    }

    /// A rank of a multi-host run with none of the phase's workers (they all belong to other ranks' hosts,
    /// vdbench's hd=) waits until the ranks stop the phase, so it still joins the phase's agreements. It reports
    /// an empty interval every interval, or rank 0 could merge the other ranks' intervals only at the end. Its
    /// measured time stays zero: it did no work, so it is never the rank that finished first.
    pub(super) fn idle(
        &mut self,
        control: &PhaseControl,
        (phase, mut announced): (usize, bool),
        measure_start: Instant,
        observer: &mut dyn RunObserver,
    ) {
        let mut next = 0u64;
        let empty = Recorder::new(false);
        while !control.stop_requested() {
            std::thread::sleep(Duration::from_millis(20));
            let now = Instant::now();
            if !announced && now >= measure_start {
                announced = true;
                observer.measuring(phase);
            }
            while announced && now >= measure_start + self.interval * (next + 1) as u32 {
                let start = self.series.start + self.interval * next as u32;
                let (index, length) = (self.series.index + next, self.interval);
                observer.interval(&IntervalReport { phase, index, start, length, recorder: &empty });
                self.reported_intervals += 1;
                next += 1;
            }
        }
    }

    pub(super) fn add(&mut self, snapshot: Snapshot, phase: usize, observer: &mut dyn RunObserver) {
        let worker = snapshot.worker as usize;
        if !snapshot.last {
            self.check_floor(&snapshot);
        }
        if snapshot.last {
            self.measured = self.measured.max(snapshot.elapsed);
        }
        self.keep_worker(&snapshot);
        let room = defaults::ERRORS_KEPT.saturating_sub(self.errors.len());
        self.errors.extend(snapshot.errors.into_iter().take(room));
        let data = (snapshot.worker, snapshot.elapsed);
        let later = |(_, elapsed): &mut (u32, Duration), (_, other): (u32, Duration)| *elapsed = (*elapsed).max(other);
        if let Some(spare) = self.pending.add(worker, snapshot.interval, snapshot.recorder, data, later) {
            self.recycle(snapshot.worker, spare);
        }
        if snapshot.last {
            self.pending.finish(worker);
        }
        self.emit_ready(phase, observer, false);
    }

    /// Adds a snapshot to its worker's own totals, and a full interval's rates to the worker's spreads (for a
    /// class the worker has done at all, so that an idle interval counts as a zero rate, as fio samples it).
    fn keep_worker(&mut self, snapshot: &Snapshot) {
        let Some(totals) = self.workers.get_mut(snapshot.worker as usize) else { return };
        totals.recorder.merge(&snapshot.recorder);
        if snapshot.last {
            totals.measured = totals.measured.max(snapshot.elapsed);
            return;
        }
        let seconds = self.interval.as_secs_f64();
        for (i, class) in [OpClass::Read, OpClass::Write].into_iter().enumerate() {
            if totals.recorder.stats(class).ops == 0 {
                continue;
            }
            let now = snapshot.recorder.stats(class);
            totals.bandwidth[i].add(now.bytes as f64 / seconds);
            totals.ops[i].add(now.ops as f64 / seconds);
        }
    }

    /// Reports every interval that no worker can still add to (or all of them, at the end).
    fn emit_ready(&mut self, phase: usize, observer: &mut dyn RunObserver, all: bool) {
        while let Some((index, recorder, (owner, elapsed))) = self.pending.pop_ready(all) {
            let start = self.interval * index as u32;
            // Full intervals end exactly at their boundary; the last one ends when the last worker stopped.
            let length = elapsed.saturating_sub(start);
            self.totals.merge(&recorder);
            if length >= self.interval {
                self.judge_steady(self.series.index + index + 1, &recorder, length);
            }
            if !length.is_zero() || recorder.total_ops() > 0 {
                let (index, start) = (self.series.index + index, self.series.start + start);
                observer.interval(&IntervalReport { phase, index, start, length, recorder: &recorder });
                self.reported_intervals += 1;
            }
            self.recycle(owner, recorder);
        }
    }

    /// A worker's full interval below the floor ends the phase as failed, as fio's rate_min does.
    fn check_floor(&mut self, snapshot: &Snapshot) {
        let (Some(floor), None) = (self.floor, &self.floor_breach) else { return };
        let seconds = self.interval.as_secs_f64();
        let bytes = snapshot.recorder.total_bytes() as f64 / seconds;
        let ops = snapshot.recorder.total_ops() as f64 / seconds;
        let breach = match (floor.bytes_per_sec, floor.ops_per_sec) {
            (Some(min), _) if bytes < min => {
                Some(format!("{:.1} MB/s, below rate-min {:.1} MB/s", bytes / 1e6, min / 1e6))
            }
            (_, Some(min)) if ops < min => Some(format!("{ops:.0} IOPS, below rate-min-iops {min:.0}")),
            _ => None,
        };
        self.floor_breach = breach.map(|b| {
            format!("worker {} did {b} in interval {}; the phase was stopped", snapshot.worker, snapshot.interval + 1)
        });
    }

    /// Feeds one full interval's reads and writes (as fio counts them: flushes are not I/O) to the steady-state
    /// window; `round` is its 1-based number in the phase. Rates are over the interval's own length: the last
    /// full one also holds the drain after the deadline.
    fn judge_steady(&mut self, round: u64, recorder: &Recorder, length: Duration) {
        let Some(tracker) = self.steady.as_mut() else { return };
        let seconds = length.as_secs_f64();
        let (r, w) = (recorder.stats(OpClass::Read), recorder.stats(OpClass::Write));
        let (iops, bw) = ((r.ops + w.ops) as f64 / seconds, (r.bytes + w.bytes) as f64 / seconds);
        if tracker.push(u32::try_from(round).unwrap_or(u32::MAX), iops, bw) {
            self.steady_reached = true;
        }
    }

    pub(super) fn flush(&mut self, phase: usize, observer: &mut dyn RunObserver) {
        self.emit_ready(phase, observer, true);
    }

    fn recycle(&self, worker: u32, mut recorder: Recorder) {
        recorder.reset();
        // The worker may have finished (or takes no spares); then the recorder is simply dropped.
        if let Some(spares) = self.spares.get(worker as usize) {
            let _ = spares.send(recorder);
        }
    }
}
