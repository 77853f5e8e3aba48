//! What the I/O core shares with those who drive it, and nothing else: the stop flags a worker checks
//! (`PhaseControl`) and why a phase ended (`StopReason`), a worker's settings (`CoreConfig`) and what it reports
//! on the way (`WorkerMsg`) and at its end (`WorkerEnd`). A leaf: it imports no other module of `run`, so
//! `core.rs`, `tally.rs` and `schedule.rs` depend on it and never on the phase or worker set-up above them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use crate::engine::Caps;
use crate::metrics::{Recorder, Snapshot};

/// Stop flags a worker checks on every loop iteration (two relaxed loads).
pub struct PhaseControl {
    /// Set by SIGINT/SIGTERM for the whole run.
    pub interrupted: Arc<AtomicBool>,
    /// Set when an I/O error stops the phase (without `--continue-on-error`) or an engine fails.
    pub abort: AtomicBool,
    /// Another rank of a multi-host run stopped this phase (it finished first, or failed): `abort` is set too,
    /// but this rank's own share ended without an error.
    pub stopped_by_peer: AtomicBool,
    /// The phase's rate became steady (fio steadystate, `--steady-state`): `abort` is set too, and the phase
    /// ended as it should.
    pub steady: AtomicBool,
}

impl PhaseControl {
    pub fn new(interrupted: Arc<AtomicBool>) -> PhaseControl {
        PhaseControl {
            interrupted,
            abort: AtomicBool::new(false),
            stopped_by_peer: AtomicBool::new(false),
            steady: AtomicBool::new(false),
        }
    }

    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }

    /// How the phase ended, once its threads have: a failure first, then Ctrl-C, then an I/O error.
    pub fn stop_reason(&self, failure: Option<String>) -> StopReason {
        if let Some(failure) = failure {
            StopReason::Failed(failure)
        } else if self.interrupted.load(Ordering::Relaxed) {
            StopReason::Interrupted
        } else if self.abort.load(Ordering::Relaxed)
            && !self.stopped_by_peer.load(Ordering::Relaxed)
            && !self.steady.load(Ordering::Relaxed)
        {
            StopReason::IoError
        } else {
            StopReason::Completed
        }
    }
}

/// Why a phase ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum StopReason {
    /// Its runtime or I/O amount was reached.
    Completed,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// An I/O error stopped it (see the error records).
    IoError,
    /// Set-up or the engine failed; the text says how.
    Failed(String),
}

/// Messages from a worker to the phase coordinator.
pub enum WorkerMsg {
    /// Engine and schedule built (or why not).
    Ready { worker: u32, result: Result<Caps, String> },
    /// Boxed: a snapshot is a few hundred bytes and travels once per interval, not per I/O.
    Snapshot(Box<Snapshot>),
}

/// How one worker runs, apart from its engine and schedule.
pub struct CoreConfig<'a> {
    pub id: u32,
    /// This worker's start (the common start plus any start delay): due times count from here.
    pub origin: Instant,
    /// Completions of I/O issued before `origin + ramp` are not measured.
    pub ramp: Duration,
    /// Measured time, after the ramp, before the worker stops.
    pub runtime: Option<Duration>,
    /// How much longer than `runtime` a worker that has measured nothing yet may go on, until its first measured
    /// completion (zero: it stops at the deadline whatever it measured). A window that completed nothing
    /// describes no storage: its figure would be a zero that is not the device's.
    pub overtime: Duration,
    /// Bytes issued after the ramp before the worker stops.
    pub byte_budget: Option<u64>,
    /// Operations issued after the ramp before the worker stops (fio number_ios).
    pub op_budget: Option<u64>,
    /// Bounded by time alone: every completion after the ramp is measured, also of I/O issued during it (as fio
    /// counts from the end of its ramp_time). Otherwise only I/O issued after the ramp is, so that a budget's
    /// bytes are measured exactly. Why: the measured time runs to the last completion, so counting only the I/O
    /// issued after the ramp lost one queue's worth of time — `seq-read 1M qd8` for 0.5 s on a device throttled
    /// to 40 MiB/s (200 ms a request) read 28.7 MB/s, for 2 s 38.4, and a quick check's sequential ceiling
    /// called the streams the devices served cache-served.
    pub window: bool,
    /// Length of a reporting interval.
    pub interval: Duration,
    /// Requests passed to the kernel per system call (at least 1).
    pub batch: u32,
    /// Due times are given: keep the due-time and lag histograms.
    pub paced: bool,
    /// A failed I/O does not stop the phase.
    pub continue_on_error: bool,
    pub control: &'a PhaseControl,
    pub tx: Sender<WorkerMsg>,
    /// Emptied recorders coming back from the coordinator for reuse.
    pub spares: Receiver<Recorder>,
}

/// What a worker reports when it ends.
#[derive(Debug, Default)]
pub struct WorkerEnd {
    /// Bytes issued after the ramp.
    pub issued: u64,
    /// Reads and writes issued after the ramp.
    pub issued_ops: u64,
    /// The engine itself failed (not one I/O); the text says how.
    pub failure: Option<String>,
    /// How far past its runtime the worker went because it had measured nothing by then (`CoreConfig::overtime`).
    pub overtime: Option<Duration>,
}
