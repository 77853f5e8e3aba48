//! Turning what a phase measured (metrics), what the system reported (sysinfo samples) and what was planned
//! into a `PhaseResult`. The app gathers the pieces; this file only does arithmetic and naming.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    CpuResult, DevicePoint, DeviceResult, ErrorSummary, IntervalPoint, LatencyTargetResult, MemoryResult, OpResult,
    PhaseResult, RunStatus, WorkerResult,
};
use crate::metrics::{
    ClassPoint, DEFAULT_PERCENTILES, DepthFound, Depths, ErrorRecord, OpClass, Recorder, SteadyOutcome, WorkerTotals,
};
use crate::plan::{Outline, PhasePlan};
use crate::sysinfo::{DiskActivity, DiskStat, MemInfo, ProcessCpu, SystemCpu, SystemCpuUsage, effective_ram};
use crate::units::Bytes;

/// How the I/O was issued.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineDetail {
    pub name: String,
    pub queue_depth: u32,
    pub registered_buffers: bool,
    pub registered_files: bool,
}

/// What the run layer measured for a phase.
pub struct PhaseMeasurements<'a> {
    pub totals: &'a Recorder,
    pub measured: Duration,
    pub status: RunStatus,
    pub failure: Option<String>,
    pub errors: &'a [ErrorRecord],
    pub direct: bool,
    /// The target keeps its data in RAM (tmpfs, zram, a loop device over a cached file).
    pub memory_backed: bool,
    /// The memory cgroup's limit on this process (`HostFacts::memory_limit`): with MemTotal it gives the
    /// effective RAM that decides whether the data set fits in the page cache.
    pub memory_limit: Option<Bytes>,
    pub engine: EngineDetail,
    pub started_at: String,
    /// Each worker's own figures, when the plan kept them (empty otherwise).
    pub workers: &'a [WorkerTotals],
    /// fio latency_target: what each worker's depth search found (empty without a target).
    pub latency_depths: &'a [DepthFound],
    /// How the phase's steady-state check ended, when it had one.
    pub steady: Option<&'a SteadyOutcome>,
}

/// System samples at the start and end of the measured period.
pub struct PhaseSamples {
    pub disks_before: Vec<DiskStat>,
    pub disks_after: Vec<DiskStat>,
    pub cpu_before: ProcessCpu,
    pub cpu_after: ProcessCpu,
    pub system_before: SystemCpu,
    pub system_after: SystemCpu,
    pub memory_before: MemInfo,
    pub memory_after: MemInfo,
    /// Devices to report, with their roles, in order.
    pub devices: Vec<(String, String)>,
    /// Time between the two samples: the span device activity and CPU percentages are rates over (it covers
    /// the measured time plus the moments to start and join the workers).
    pub span: Duration,
}

/// The result of phase `index` of the plan; `outline` is the phase's row as its kind describes it
/// (`PhasePlan::outline`).
pub fn build_phase(
    index: usize,
    (plan, outline): (&PhasePlan, &Outline),
    measured: &PhaseMeasurements<'_>,
    samples: &PhaseSamples,
    intervals: (Vec<IntervalPoint>, u32),
) -> PhaseResult {
    let seconds = measured.measured.as_secs_f64();
    // Only a raw phase says its percentiles (fio percentile_list); the others report the default list.
    let asked = plan.raw().map_or(&[][..], |raw| &raw.percentiles);
    let percentiles: &[f64] = if asked.is_empty() { &DEFAULT_PERCENTILES } else { asked };
    let op = |class| op_result(measured.totals, class, seconds, percentiles);
    let total_ops = measured.totals.total_ops();
    let ram = effective_ram(samples.memory_after.total, measured.memory_limit).0;
    PhaseResult {
        index,
        name: plan.name.clone(),
        group: plan.group.clone(),
        status: measured.status,
        failure: measured.failure.clone(),
        started_at: measured.started_at.clone(),
        rw: outline.rw.to_string(),
        bs: outline.bs_label.clone(),
        iodepth: outline.iodepth,
        jobs: outline.jobs,
        engine: measured.engine.clone(),
        direct: measured.direct,
        // Unknown RAM (meminfo unreadable, no cgroup limit) cannot prove the data set outgrew the cache: flag it.
        cache_affected: measured.memory_backed || (!measured.direct && (ram == 0 || outline.data_set.0 < 2 * ram)),
        data_set_bytes: outline.data_set.0,
        duration_s: seconds,
        ramp_s: plan.ramp.as_secs_f64(),
        read: op(OpClass::Read),
        write: op(OpClass::Write),
        sync: op(OpClass::Sync),
        cpu: cpu_result(samples, total_ops),
        memory: memory_result(samples, ram),
        devices: attributed(outline, samples),
        errors: ErrorSummary {
            count: OpClass::ALL.iter().map(|&c| measured.totals.stats(c).errors).sum(),
            records: measured.errors.to_vec(),
        },
        file_ops: None,
        streams: None,
        depths: (measured.totals.depths != Depths::default()).then_some(measured.totals.depths),
        fio: plan.fio.clone(),
        latency_target: LatencyTargetResult::new(
            plan.fio.as_ref().and_then(|f| f.latency_target.as_ref()),
            measured.latency_depths,
        ),
        workers: measured.workers.iter().map(|w| worker_result(w, percentiles)).collect(),
        skew: None,
        steady_state: measured.steady.cloned(),
        on: Vec::new(),
        intervals: intervals.0,
        interval_stride: intervals.1,
    }
}

/// Each device's activity over the samples' span, with what was not the run's split off (`devices.rs`).
fn attributed(plan: &Outline, samples: &PhaseSamples) -> Vec<DeviceResult> {
    let mut devices = device_activity(&samples.devices, &samples.disks_before, &samples.disks_after, samples.span);
    // Twice what the workers may have in flight: a read submitted before the span began (counted by the process
    // then) completes inside it (counted by the device), and split or requeued requests (a throttle, a loop
    // device) widen that; measured, a queue of 16 × 1 MiB on a throttled loop device was 20 MiB apart.
    let in_flight = 2 * u64::from(plan.iodepth) * u64::from(plan.jobs) * u64::from(plan.largest_block);
    super::attribute(&mut devices, samples.cpu_after.storage_reads_since(&samples.cpu_before), in_flight);
    devices
}

/// The process's CPU time over the samples' span, per operation, and the whole system's use beside it.
fn cpu_result(samples: &PhaseSamples, total_ops: u64) -> CpuResult {
    let (before, after) = (&samples.cpu_before, &samples.cpu_after);
    let cpu_time = after.cpu_since(before).as_secs_f64();
    let span = samples.span.as_secs_f64();
    CpuResult {
        user_s: after.user.saturating_sub(before.user).as_secs_f64(),
        system_s: after.system.saturating_sub(before.system).as_secs_f64(),
        process_pct: if span > 0.0 { cpu_time / span * 100.0 } else { 0.0 },
        per_op_us: if total_ops > 0 { cpu_time / total_ops as f64 * 1e6 } else { 0.0 },
        system: SystemCpuUsage::between(&samples.system_before, &samples.system_after),
        context_switches: after.context_switches.saturating_sub(before.context_switches),
        major_faults: after.major_faults.saturating_sub(before.major_faults),
        minor_faults: after.minor_faults.saturating_sub(before.minor_faults),
    }
}

/// RAM (and the effective RAM, `ram`, under a memory limit), the page cache around the phase, and peak RSS.
fn memory_result(samples: &PhaseSamples, ram: u64) -> MemoryResult {
    MemoryResult {
        ram_bytes: samples.memory_after.total.0,
        effective_ram_bytes: ram,
        page_cache_before_bytes: samples.memory_before.cached.0,
        page_cache_after_bytes: samples.memory_after.cached.0,
        dirty_after_bytes: samples.memory_after.dirty.0,
        peak_rss_bytes: samples.cpu_after.max_rss.0,
    }
}

fn op_result(totals: &Recorder, class: OpClass, seconds: f64, percentiles: &[f64]) -> Option<OpResult> {
    let stats = totals.stats(class);
    if stats.ops == 0 && stats.errors == 0 {
        return None;
    }
    let per_sec = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    let summary = |h: &crate::metrics::Histogram| (!h.is_empty()).then(|| h.summary(percentiles));
    Some(OpResult {
        ops: stats.ops,
        bytes: stats.bytes,
        errors: stats.errors,
        iops: per_sec(stats.ops as f64),
        mbps: per_sec(stats.bytes as f64) / 1e6,
        latency: stats.latency.summary(percentiles),
        due_latency: stats.due_latency.as_ref().and_then(summary),
        submit_latency: summary(&stats.submit_latency),
        total_latency: summary(&stats.total_latency),
        latency_bins: stats.latency.buckets().map(|(ns, n)| [ns, n]).collect(),
        bandwidth_spread: None,
        iops_spread: None,
    })
}

/// One worker's figures: its own totals over its own measured time, and its rates' spread over full intervals.
fn worker_result(worker: &WorkerTotals, percentiles: &[f64]) -> WorkerResult {
    let seconds = worker.measured.as_secs_f64();
    let with_spread = |class, i: usize| {
        op_result(&worker.recorder, class, seconds, percentiles).map(|mut op| {
            op.bandwidth_spread = Some(worker.bandwidth[i].summary());
            op.iops_spread = Some(worker.ops[i].summary());
            op
        })
    };
    WorkerResult {
        duration_s: seconds,
        read: with_spread(OpClass::Read, 0),
        write: with_spread(OpClass::Write, 1),
        sync: op_result(&worker.recorder, OpClass::Sync, seconds, percentiles),
        depths: worker.recorder.depths,
    }
}

/// The activity of each listed (name, role) device between two samples taken `elapsed` apart; devices missing
/// from either sample (detached mid-run) are left out.
pub fn device_activity(
    devices: &[(String, String)],
    before: &[DiskStat],
    after: &[DiskStat],
    elapsed: Duration,
) -> Vec<DeviceResult> {
    devices
        .iter()
        .filter_map(|(name, role)| {
            let a = before.iter().find(|d| &d.name == name)?;
            let b = after.iter().find(|d| &d.name == name)?;
            let activity = DiskActivity::between(a, b, elapsed);
            Some(DeviceResult { role: role.clone(), activity, implausible: None, others: None })
        })
        .collect()
}

/// One interval's point: I/O figures from the merged recorder, CPU and device activity from samples taken at
/// the interval's end.
pub fn interval_point(
    start: Duration,
    length: Duration,
    recorder: &Recorder,
    cpu_seconds: f64,
    devices: &[DeviceResult],
) -> IntervalPoint {
    let seconds = length.as_secs_f64();
    let class = |c| {
        let stats = recorder.stats(c);
        (stats.ops > 0 || stats.errors > 0).then(|| ClassPoint::from_stats(recorder, c, seconds))
    };
    IntervalPoint {
        start_s: start.as_secs_f64(),
        length_s: seconds,
        read: class(OpClass::Read),
        write: class(OpClass::Write),
        cpu_pct: if seconds > 0.0 { cpu_seconds / seconds * 100.0 } else { 0.0 },
        devices: devices
            .iter()
            .map(|DeviceResult { activity: a, .. }| DevicePoint {
                name: a.name.clone(),
                busy_pct: a.busy_pct,
                read_mbps: a.read_mbps,
                write_mbps: a.write_mbps,
                avg_queue: a.avg_queue,
                reads: a.reads,
                writes: a.writes,
                read_bytes: a.read_bytes.0,
                write_bytes: a.write_bytes.0,
            })
            .collect(),
        file_ops: Vec::new(),
    }
}
