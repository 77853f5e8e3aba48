//! Raw phases that run together (fio jobs without stonewall): each under its own coordinator thread, the
//! observer they share, their common start, and fio's `exitall` between them.
//!
//! Common start: as fio starts the jobs of a stage together, each coordinator sets up its workers and then
//! waits at the stage's [`CommonStart`] until every phase of the stage has done so; they all get the same start
//! instant, so their runtimes end together. fio's flow needs it (`run/flow.rs`): every member of a flow has
//! joined before any of them issues, and none leaves the flow early (which frees the others from their shares)
//! because its phase started earlier. Phases that each took their own start instant, tens of ms apart on a busy
//! machine, ran flow=3 against flow=1 anywhere between 0.7:1 and 3.5:1.
//!
//! exitall: when a phase with an exit scope finishes (or, with fio's exitall_on_error, ends in error), the phases
//! running with it that the scope names are stopped — those of its reporting group (`group`) or all of them (`stonewall`, `all`; `all` also ends the run
//! after the stage). A phase stopped so keeps what it measured and counts as completed, as fio reports a
//! terminated job. Each phase then runs on its own stop flag, and a relay thread passes Ctrl-C on to them.
//!
//! Must not: prepare files or decide what runs after the stage (`execute`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{IntervalReport, PhaseOutcome, RunObserver, StopReason};
use crate::plan::{ExitWhat, PhasePlan};

/// How often the relay looks at the run's interrupt flag.
const RELAY_EVERY: Duration = Duration::from_millis(10);

/// What running a stage gave: each phase's outcome, in order, and whether a phase ended the whole run
/// (exit_what=all).
pub(super) struct StageEnd {
    pub outcomes: Vec<PhaseOutcome>,
    pub ends_run: bool,
}

/// Runs one phase of a stage: its prepared inputs, its stop flag, its place at the stage's common start (`None`
/// for a phase that runs alone) and the observer it reports to.
pub(super) type RunOne<'f, P> =
    dyn Fn(&P, Arc<AtomicBool>, Option<StartTicket>, &mut dyn RunObserver) -> PhaseOutcome + Sync + 'f;

/// Runs `phases` at the same time, each through `run_one(phase, stop flag, start ticket, observer)`, from one
/// common start.
pub(super) fn run_together<P: Sync>(
    phases: &[(&PhasePlan, P)],
    interrupt: Arc<AtomicBool>,
    run_one: &RunOne<'_, P>,
    observer: &mut dyn RunObserver,
) -> StageEnd {
    let exits = Exits::new(phases.iter().map(|(p, _)| *p), &interrupt);
    let shared = Mutex::new(observer);
    let over = AtomicBool::new(false);
    let start = CommonStart::new(phases.len());
    std::thread::scope(|scope| {
        let (exits, over, interrupt, start) = (&exits, &over, &interrupt, &start);
        if let Some(exits) = exits {
            scope.spawn(move || exits.relay(interrupt, over));
        }
        // Every ticket is made before any coordinator starts: one whose thread never runs is dropped, not awaited.
        let tickets: Vec<StartTicket> = phases.iter().map(|_| CommonStart::ticket(start)).collect();
        let handles: Vec<_> = (phases.iter().enumerate().zip(tickets))
            .map(|((i, (_, p)), ticket)| {
                let shared = &shared;
                scope.spawn(move || {
                    let flag = exits.as_ref().map_or_else(|| interrupt.clone(), |e| e.flags[i].clone());
                    let mut outcome = run_one(p, flag, Some(ticket), &mut SharedObserver(shared));
                    if let Some(exits) = exits {
                        exits.finished(i, &mut outcome, interrupt.load(Ordering::Relaxed));
                    }
                    outcome
                })
            })
            .collect();
        let outcomes: Vec<PhaseOutcome> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| panic!("a phase coordinator panicked"))).collect();
        over.store(true, Ordering::Relaxed);
        let ends_run = exits.as_ref().is_some_and(|e| e.ends_run.load(Ordering::Relaxed));
        StageEnd { outcomes, ends_run }
    })
}

/// The start instant the phases of a stage share: the moment the last of them was ready.
pub(super) struct CommonStart {
    state: Mutex<Arrivals>,
    all_in: Condvar,
}

struct Arrivals {
    /// Phases not yet ready.
    waiting: usize,
    start: Option<Instant>,
}

/// One phase's place at a [`CommonStart`]. A phase that ends without taking its start (a coordinator that
/// panicked) is counted as ready when its ticket is dropped, so that the others never wait for it.
pub(super) struct StartTicket {
    gate: Arc<CommonStart>,
    taken: bool,
}

impl CommonStart {
    fn new(phases: usize) -> Arc<CommonStart> {
        Arc::new(CommonStart { state: Mutex::new(Arrivals { waiting: phases, start: None }), all_in: Condvar::new() })
    }

    fn ticket(gate: &Arc<CommonStart>) -> StartTicket {
        StartTicket { gate: gate.clone(), taken: false }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arrivals> {
        // Two plain numbers: nothing is left half done by a panic.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// One more phase is ready; the last one sets the start and wakes the others.
    fn arrive(&self) -> std::sync::MutexGuard<'_, Arrivals> {
        let mut state = self.lock();
        state.waiting = state.waiting.saturating_sub(1);
        if state.waiting == 0 && state.start.is_none() {
            state.start = Some(Instant::now());
            self.all_in.notify_all();
        }
        state
    }
}

impl StartTicket {
    /// This phase is ready (its workers set up, or failed to): waits until every phase of the stage is, and
    /// returns their common start.
    pub fn start(mut self) -> Instant {
        self.taken = true;
        let mut state = self.gate.arrive();
        loop {
            if let Some(start) = state.start {
                return start;
            }
            state = self.gate.all_in.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

impl Drop for StartTicket {
    fn drop(&mut self) {
        if !self.taken {
            drop(self.gate.arrive());
        }
    }
}

/// Whether a phase that ran alone ends the run when it completes (exit_what=all).
pub(super) fn ends_run_alone(phase: &PhasePlan, outcome: &PhaseOutcome) -> bool {
    outcome.stop == StopReason::Completed && exit_scope(phase) == Some(ExitWhat::All)
}

fn exit_scope(phase: &PhasePlan) -> Option<ExitWhat> {
    phase.fio.as_ref().and_then(|f| f.exit_all)
}

/// fio's exitall_on_error: the scope a phase stops when it ends in error.
fn error_scope(phase: &PhasePlan) -> Option<ExitWhat> {
    phase.fio.as_ref().and_then(|f| f.exit_on_error)
}

/// The stop flags of a stage with exitall, one per phase.
struct Exits {
    flags: Vec<Arc<AtomicBool>>,
    /// Stopped by another phase's exit (not by Ctrl-C).
    stopped: Vec<AtomicBool>,
    scopes: Vec<Option<ExitWhat>>,
    /// What each phase stops when it ends in error (fio exitall_on_error).
    error_scopes: Vec<Option<ExitWhat>>,
    groups: Vec<Option<u32>>,
    ends_run: AtomicBool,
}

impl Exits {
    /// `None` when no phase of the stage has an exit scope: they all run on the run's own flag.
    fn new<'p>(phases: impl Iterator<Item = &'p PhasePlan> + Clone, interrupt: &AtomicBool) -> Option<Exits> {
        if phases.clone().all(|p| exit_scope(p).is_none() && error_scope(p).is_none()) {
            return None;
        }
        let now = interrupt.load(Ordering::Relaxed);
        Some(Exits {
            flags: phases.clone().map(|_| Arc::new(AtomicBool::new(now))).collect(),
            stopped: phases.clone().map(|_| AtomicBool::new(false)).collect(),
            scopes: phases.clone().map(exit_scope).collect(),
            error_scopes: phases.clone().map(error_scope).collect(),
            groups: phases.map(|p| p.fio.as_ref().map(|f| f.group_id)).collect(),
            ends_run: AtomicBool::new(false),
        })
    }

    /// Passes Ctrl-C on to every phase's flag until the stage is over.
    fn relay(&self, interrupt: &AtomicBool, over: &AtomicBool) {
        while !over.load(Ordering::Relaxed) {
            if interrupt.load(Ordering::Relaxed) {
                self.flags.iter().for_each(|f| f.store(true, Ordering::Relaxed));
                return;
            }
            std::thread::sleep(RELAY_EVERY);
        }
    }

    /// Phase `i` has finished: stop those its scope names, and count it as completed if it was stopped so.
    fn finished(&self, i: usize, outcome: &mut PhaseOutcome, interrupted: bool) {
        if self.stopped[i].load(Ordering::Relaxed) && !interrupted && outcome.stop == StopReason::Interrupted {
            outcome.stop = StopReason::Completed;
        }
        let scope = match outcome.stop {
            StopReason::Completed => self.scopes[i],
            StopReason::IoError | StopReason::Failed(_) => self.error_scopes[i],
            StopReason::Interrupted => None,
        };
        let Some(scope) = scope else { return };
        for other in (0..self.flags.len()).filter(|&o| o != i) {
            if scope != ExitWhat::Group || self.groups[other] == self.groups[i] {
                self.stopped[other].store(true, Ordering::Relaxed);
                self.flags[other].store(true, Ordering::Relaxed);
            }
        }
        if scope == ExitWhat::All {
            self.ends_run.store(true, Ordering::Relaxed);
        }
    }
}

/// Forwards a concurrent phase's reports to the run's observer, one at a time.
struct SharedObserver<'a, 'b, 'c>(&'a Mutex<&'b mut (dyn RunObserver + 'c)>);

impl RunObserver for SharedObserver<'_, '_, '_> {
    fn notice(&mut self, text: &str) {
        self.lock().notice(text);
    }
    fn prefill(&mut self, phase: usize, done: u64, total: u64) {
        self.lock().prefill(phase, done, total);
    }
    fn phase_started(&mut self, index: usize, phase: &PhasePlan) {
        self.lock().phase_started(index, phase);
    }
    fn measuring(&mut self, index: usize) {
        self.lock().measuring(index);
    }
    fn interval(&mut self, report: &IntervalReport<'_>) {
        self.lock().interval(report);
    }
    fn phase_finished(&mut self, index: usize, phase: &PhasePlan, outcome: &PhaseOutcome) {
        self.lock().phase_finished(index, phase, outcome);
    }
}

impl<'b, 'c> SharedObserver<'_, 'b, 'c> {
    fn lock(&self) -> std::sync::MutexGuard<'_, &'b mut (dyn RunObserver + 'c)> {
        // A panic while reporting leaves the observer usable: it holds no invariant across calls.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every phase of a stage gets the same start, taken when the last of them is ready, however late that is.
    #[test]
    fn the_phases_of_a_stage_start_together_once_the_last_is_ready() {
        let gate = CommonStart::new(3);
        let late = Duration::from_millis(50);
        let tickets = vec![CommonStart::ticket(&gate), CommonStart::ticket(&gate), CommonStart::ticket(&gate)];
        let begun = Instant::now();
        let starts: Vec<(Instant, Instant)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (tickets.into_iter().enumerate())
                .map(|(i, ticket)| {
                    scope.spawn(move || {
                        if i == 1 {
                            std::thread::sleep(late);
                        }
                        (Instant::now(), ticket.start())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(starts.iter().all(|&(_, start)| start == starts[0].1), "{starts:?}");
        let last_ready = starts.iter().map(|&(ready, _)| ready).max().unwrap();
        assert!(starts[0].1 >= last_ready && starts[0].1 >= begun + late, "{starts:?}");
    }

    /// A phase whose coordinator ends without taking its start (its ticket dropped) does not hold the others.
    #[test]
    fn a_phase_that_never_starts_does_not_hold_the_others() {
        let gate = CommonStart::new(2);
        let (mine, lost) = (CommonStart::ticket(&gate), CommonStart::ticket(&gate));
        let before = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                drop(lost);
            });
            assert!(mine.start() >= before);
        });
    }
}
