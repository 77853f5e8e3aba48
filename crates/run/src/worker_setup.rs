//! One worker thread, whatever it runs: set up its engine and schedule on its own thread (io_uring rings are
//! single-issuer), say it is ready, wait for the common start, then run the core loop with the engine's and
//! the schedule's concrete types — dispatched once here (a compatibility wrapper around a schedule is a variant
//! of its own), never per I/O. Also the messages and channels between a worker and its phase coordinator.

use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use super::control::{CoreConfig, PhaseControl, WorkerEnd, WorkerMsg};
use super::core::drive;
use super::depth_search::DepthSearched;
use super::direction_budget::DirectionBudget;
use super::fileset::FileSetSchedule;
use super::prepare::PassSchedule;
use super::raw::RawSchedule;
use super::streams::{IngestSchedule, LoadSchedule, ViewerSchedule};
use super::verify_read::ReadBack;
use crate::engine::AnyEngine;
use crate::metrics::{DepthFound, Recorder};

/// The channels between one worker and the coordinator.
pub(super) struct WorkerChannels {
    pub tx: Sender<WorkerMsg>,
    /// Emptied recorders coming back for reuse.
    pub spares: Receiver<Recorder>,
    /// The common start instant, or `None` to give up (another worker failed to set up).
    pub go: Receiver<Option<Instant>>,
}

/// The schedules a worker can run; matched once per worker. The compatibility wrappers are variants of their
/// own, so that a plain raw worker (what fio is measured against) runs the raw schedule with nothing around it.
// One per worker, built once and never moved in the hot loop: boxing would only add an indirection.
#[allow(clippy::large_enum_variant)]
pub(super) enum AnySchedule<'a> {
    Raw(RawSchedule<'a>),
    /// A raw worker with a read or write budget (vdbench maxdataread, maxdatawritten).
    RawBudgeted(DirectionBudget<RawSchedule<'a>>),
    /// A raw worker under fio's latency_target search (the budget is a no-op when it has none).
    RawSearched(DepthSearched<DirectionBudget<RawSchedule<'a>>>),
    Viewers(ViewerSchedule),
    Ingest(IngestSchedule),
    /// A background load beside the viewers (`--during`).
    Load(LoadSchedule),
    Pass(PassSchedule),
    /// The read-back of a `--verify` run or of `--verify-only`.
    ReadBack(ReadBack<'a>),
    /// A schedule of the core's own unit tests.
    #[cfg(test)]
    Test(super::core::tests::Steady),
    FileSet(FileSetSchedule<'a>),
}

impl AnySchedule<'_> {
    /// What fio's latency_target search found, for a worker that ran one.
    pub(super) fn latency_depth(&self) -> Option<DepthFound> {
        match self {
            AnySchedule::RawSearched(s) => Some(s.found()),
            _ => None,
        }
    }
}

/// How a worker runs, apart from its engine and schedule (see `CoreConfig`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WorkerSettings {
    /// The worker starts this long after the common start (fio startdelay).
    pub start_delay: Duration,
    pub ramp: Duration,
    pub runtime: Option<Duration>,
    /// See `CoreConfig::overtime`.
    pub overtime: Duration,
    pub byte_budget: Option<u64>,
    pub op_budget: Option<u64>,
    /// See `CoreConfig::window`.
    pub window: bool,
    /// Requests per system call (at least 1).
    pub batch: u32,
    pub paced: bool,
    pub continue_on_error: bool,
}

/// A worker ready to run.
pub(super) struct Built<'a> {
    pub engine: AnyEngine,
    pub schedule: AnySchedule<'a>,
    pub settings: WorkerSettings,
}

/// Builds a worker on its own thread: open files, make the engine and the schedule.
pub(super) type SetUp<'a> = Box<dyn FnOnce() -> Result<Built<'a>, String> + Send + 'a>;

/// The body of a worker thread. Returns how it ended and its schedule (which holds what a schedule measured
/// of its own, a viewer's stalls); the engine is dropped here, on the thread that owns its ring.
pub(super) fn worker_thread<'a>(
    id: u32,
    setup: SetUp<'a>,
    interval: Duration,
    control: &PhaseControl,
    channels: WorkerChannels,
) -> (WorkerEnd, Option<AnySchedule<'a>>) {
    let ready = |result| channels.tx.send(WorkerMsg::Ready { worker: id, result });
    let Built { mut engine, mut schedule, settings } = match setup() {
        Ok(built) => built,
        Err(e) => {
            let _ = ready(Err(e));
            return (WorkerEnd::default(), None);
        }
    };
    if ready(Ok(engine.caps())).is_err() {
        return (WorkerEnd::default(), None);
    }
    let Ok(Some(start)) = channels.go.recv() else { return (WorkerEnd::default(), None) };
    super::clock::fine_timer_slack();
    let cfg = CoreConfig {
        id,
        origin: start + settings.start_delay,
        ramp: settings.ramp,
        runtime: settings.runtime,
        overtime: settings.overtime,
        byte_budget: settings.byte_budget,
        op_budget: settings.op_budget,
        window: settings.window,
        interval,
        batch: settings.batch,
        paced: settings.paced,
        continue_on_error: settings.continue_on_error,
        control,
        tx: channels.tx.clone(),
        spares: channels.spares,
    };
    // Dispatch once: the loop is monomorphised per engine and schedule.
    macro_rules! on_engine {
        ($s:expr) => {
            match &mut engine {
                AnyEngine::Sync(e) => drive(cfg, e, $s),
                AnyEngine::IoUring(e) => drive(cfg, e, $s),
                AnyEngine::Null(e) => drive(cfg, e, $s),
                AnyEngine::Http(e) => drive(cfg, e, $s),
            }
        };
    }
    let end = match &mut schedule {
        AnySchedule::Raw(s) => on_engine!(s),
        AnySchedule::RawBudgeted(s) => on_engine!(s),
        AnySchedule::RawSearched(s) => on_engine!(s),
        AnySchedule::Viewers(s) => on_engine!(s),
        AnySchedule::Ingest(s) => on_engine!(s),
        AnySchedule::Load(s) => on_engine!(s),
        AnySchedule::Pass(s) => on_engine!(s),
        AnySchedule::ReadBack(s) => on_engine!(s),
        #[cfg(test)]
        AnySchedule::Test(s) => on_engine!(s),
        AnySchedule::FileSet(s) => on_engine!(s),
    };
    drop(engine);
    (end, Some(schedule))
}
