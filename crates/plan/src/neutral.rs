//! Phases that are not raw I/O — file sets and stream viewers — still carry the raw fields of a `PhasePlan`
//! (so every renderer and the results read one type); here those fields get neutral values that describe the
//! phase as well as they can (its threads, its transfer sizes, its data set), and the kind-specific plan is
//! attached. A raw phase starts from the same blank phase (`blank`) and fills in every raw field.

use std::time::Duration;

use super::streams::{MediaSource, StreamCount, StreamsPlan};
use super::{DirectMode, FileSetPlan, PhasePlan, TargetPlan, defaults};
use crate::engine::EngineKind;
use crate::spec::{FormatMode, PhaseSpec, RwMode};
use crate::units::Bytes;
use crate::workload::{Access, BlockSizes};

/// A phase with every raw field neutral: nothing of it runs as raw I/O. The group, seed, error policy and fio
/// settings are the spec's own.
pub(super) fn blank(name: String, spec: &PhaseSpec) -> PhasePlan {
    PhasePlan {
        name,
        rw: RwMode::Read,
        read_percent: 100,
        access: Access::Sequential,
        bs_label: String::new(),
        block_sizes: BlockSizes::Fixed { size: 4096 },
        write_block_sizes: None,
        engine: EngineKind::Sync,
        iodepth: 1,
        iodepth_batch: 1,
        jobs: 1,
        direct: DirectMode::Off,
        align: 1,
        data_set: Bytes(0),
        files: Vec::new(),
        runtime: None,
        ramp: spec.ramp.unwrap_or(defaults::RAMP),
        io_size: None,
        io_by_direction: Default::default(),
        pacing: None,
        fsync_every: None,
        fdatasync_every: None,
        sync_writes: false,
        end_fsync: false,
        invalidate: false,
        pre_read: false,
        access_hint: true,
        start_delay: Duration::ZERO,
        thinktime: None,
        rate_floor: None,
        rate_percent_of_max: None,
        curve_stop_latency: None,
        concurrent: false,
        group: spec.group.clone(),
        percentiles: Vec::new(),
        logs: Default::default(),
        continue_on_error: spec.continue_on_error.unwrap_or(false),
        needs_data: false,
        seed: spec.seed.unwrap_or(defaults::SEED),
        data: None,
        strided: None,
        workers: Vec::new(),
        fileset: None,
        streams: None,
        fio: spec.fio.clone(),
        per_worker_results: false,
        parts: Vec::new(),
        skew_limit_pct: spec.skew_limit,
        steady_state: None,
    }
}

/// A file-set phase: its threads, transfer sizes and trees.
pub(super) fn fileset_phase(name: String, spec: &PhaseSpec, plan: FileSetPlan) -> PhasePlan {
    let xfer = plan.workloads.first().map(|w| w.xfer.clone()).unwrap_or(BlockSizes::Fixed { size: 4096 });
    let runs_workload = !matches!(plan.format, FormatMode::Only | FormatMode::Clean) && !plan.workloads.is_empty();
    PhasePlan {
        read_percent: plan.workloads.first().map_or(100, |w| w.read_percent),
        bs_label: plan.workloads.first().map_or_else(String::new, |w| w.xfer_label.clone()),
        block_sizes: xfer,
        jobs: plan.workloads.iter().map(|w| w.threads).sum(),
        direct: if plan.trees.iter().any(|t| t.direct) { DirectMode::Required } else { DirectMode::Off },
        data_set: Bytes(plan.trees.iter().map(|t| t.bytes.0).sum()),
        runtime: runs_workload.then(|| spec.runtime.unwrap_or(defaults::FILESET_RUNTIME)),
        fileset: Some(plan),
        ..blank(name, spec)
    }
}

/// A stream phase: its scheduler threads, chunk size, engine and media.
pub(super) fn stream_phase(name: String, spec: &PhaseSpec, plan: StreamsPlan, target: &TargetPlan) -> PhasePlan {
    let files: Vec<u32> = plan
        .media
        .iter()
        .filter_map(|m| match m {
            MediaSource::File(f) => Some(*f),
            MediaSource::Url { .. } => None,
        })
        .collect();
    let data_set = files.iter().map(|&f| target.files[f as usize].size.0).sum();
    let chunk = plan.config.chunk_bytes(0);
    let runtime = match plan.count {
        StreamCount::Fixed(n) => Some(plan.config.step_length(n).longest()),
        StreamCount::Search(_) => None,
    };
    PhasePlan {
        rw: RwMode::RandRead,
        bs_label: Bytes(chunk).to_string(),
        block_sizes: BlockSizes::Fixed { size: u32::try_from(chunk).unwrap_or(u32::MAX) },
        engine: plan.engine,
        iodepth: plan.slots_per_worker,
        jobs: plan.workers,
        direct: plan.direct,
        data_set: Bytes(data_set),
        // The null engine reads nothing: its media are never written (they stay sparse).
        needs_data: plan.own_media && plan.engine != crate::engine::EngineKind::Null,
        files,
        runtime,
        // Viewers' read errors are counted per step; they never stop the others.
        continue_on_error: true,
        streams: Some(plan),
        ..blank(name, spec)
    }
}
