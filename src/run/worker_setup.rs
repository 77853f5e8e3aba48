//! Setting up one worker thread: open the files its regions touch, build its engine on its own thread (io_uring
//! rings are single-issuer), say it is ready, wait for the common start, then hand over to the hot loop in
//! `worker.rs` with the engine's concrete type. Also the messages and channels between a worker and the phase
//! coordinator. Nothing here runs per I/O.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use super::pacer::Pacer;
use super::phase::{PhaseControl, PhaseInputs};
use super::worker::{Worker, WorkerEnd};
use crate::engine::{AnyEngine, Caps, EngineSetup};
use crate::metrics::{Recorder, Snapshot};
use crate::plan::WorkerPlan;
use crate::workload::{OpSource, WorkloadConfig};

/// Messages from a worker to the phase coordinator.
pub(super) enum WorkerMsg {
    /// Files opened and engine built (or why not).
    Ready { worker: u32, result: Result<Caps, String> },
    /// Boxed: a snapshot is a few hundred bytes and travels once per interval, not per I/O.
    Snapshot(Box<Snapshot>),
}

/// The channels between one worker and the coordinator.
pub(super) struct WorkerChannels {
    pub tx: Sender<WorkerMsg>,
    /// Emptied recorders coming back for reuse.
    pub spares: Receiver<Recorder>,
    /// The common start instant, or `None` to give up (another worker failed to set up).
    pub go: Receiver<Option<Instant>>,
}

/// The body of a worker thread: open this worker's files, build its engine on this thread (io_uring rings are
/// single-issuer), report ready, wait for the start, then run the loop on the concrete engine type.
pub(super) fn worker_thread(
    id: u32,
    inputs: &PhaseInputs<'_>,
    plan: &WorkerPlan,
    control: &PhaseControl,
    channels: WorkerChannels,
) -> WorkerEnd {
    let phase = inputs.phase;
    let ready = |result| channels.tx.send(WorkerMsg::Ready { worker: id, result });
    let (paths, globals, workload) = localize_files(plan, inputs.files);
    let setup = (|| {
        let source = OpSource::new(&workload).map_err(|e| e.to_string())?;
        let files = paths
            .iter()
            .map(|p| open_data_file(p, inputs.direct, inputs.writable && phase.writes(), phase.sync_writes))
            .collect::<Result<Vec<_>, _>>()?;
        let engine = AnyEngine::build(EngineSetup {
            kind: phase.engine,
            queue_depth: phase.iodepth,
            buffer_size: phase.largest_block() as usize,
            max_transfer: phase.largest_block() as usize,
            pin_buffers: true,
            files,
            null_latency: Duration::ZERO,
            null_faults: Vec::new(),
        })
        .map_err(|e| e.to_string())?;
        Ok::<_, String>((source, engine))
    })();
    let (source, mut engine) = match setup {
        Ok(built) => built,
        Err(e) => {
            let _ = ready(Err(e));
            return WorkerEnd::default();
        }
    };
    let caps = engine.caps();
    if ready(Ok(caps)).is_err() {
        return WorkerEnd::default();
    }
    let Ok(Some(start)) = channels.go.recv() else { return WorkerEnd::default() };
    // Timed waits (paced operations, interval boundaries) wake within the default 50 µs slack otherwise; for
    // latency measured from a due time, that slack would be ours, not the device's.
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    let pacer = phase.pacing.map(|p| Pacer::new(&p, workload.seed));
    let worker = Worker {
        id,
        phase,
        paths,
        budget: plan.io_bytes,
        op_budget: plan.io_ops,
        interval: inputs.interval,
        control,
        tx: channels.tx.clone(),
        spares: channels.spares,
        verify: inputs.verify,
        globals,
        verify_backlog: inputs.verify_backlog,
    };
    // Dispatch once; the loop below is monomorphised per engine.
    match &mut engine {
        AnyEngine::Sync(e) => worker.drive(e, source, pacer, start),
        AnyEngine::IoUring(e) => worker.drive(e, source, pacer, start),
        AnyEngine::Null(e) => worker.drive(e, source, pacer, start),
    }
}

/// A worker opens only the files its regions touch; regions are renumbered to that local table. Returns the
/// local table's paths and run-wide indices, and the renumbered workload.
fn localize_files(plan: &WorkerPlan, files: &[PathBuf]) -> (Vec<PathBuf>, Vec<u32>, WorkloadConfig) {
    let mut local_of = std::collections::HashMap::new();
    let (mut paths, mut globals) = (Vec::new(), Vec::new());
    let mut workload = plan.workload.clone();
    for region in &mut workload.regions {
        let local = *local_of.entry(region.file).or_insert_with(|| {
            paths.push(files[region.file as usize].clone());
            globals.push(region.file);
            paths.len() as u32 - 1
        });
        region.file = local;
    }
    (paths, globals, workload)
}

/// Opens a data file or device for the phase: read-only unless the phase writes, O_DIRECT when direct.
/// `sync_writes`: O_SYNC, so that each write is durable when it completes (fio sync=1).
pub(super) fn open_data_file(path: &Path, direct: bool, write: bool, sync_writes: bool) -> Result<File, String> {
    let mut options = OpenOptions::new();
    options.read(true).write(write);
    let flags = if direct { libc::O_DIRECT } else { 0 } | if sync_writes && write { libc::O_SYNC } else { 0 };
    if flags != 0 {
        options.custom_flags(flags);
    }
    options.open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))
}
