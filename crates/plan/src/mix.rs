//! Planning a raw phase with parts (vdbench: several wds, sds and hosts in one rd). Each part is planned as a
//! phase of its own on one worker (so every rule of a raw phase applies to it), then the parts are grouped into
//! workers by queue: a worker mixes its parts by their share of the phase's operations (`workload::MixSource`),
//! keeps the largest iodepth its parts ask, and is paced at its share of the phase's rate.
//!
//! Shares are vdbench's skew: a part's `skew` is its percent of all operations; parts without one share what is
//! left evenly; the shares must add up to 100. Under no rate, a worker mixes its own parts in their proportions;
//! across workers, when a part says its skew, the workers hold their shares as vdbench's controlled max does
//! (`RD_entry`: any skew makes vdbench use its waiter at iorate=max): a worker ahead of its share waits for the
//! others (a flow of the phase's own, `run/flow.rs`; across mpirun's ranks too), so the slowest share sets the
//! pace. With no skew said, each worker runs as fast as it goes (vdbench's uncontrolled max, where sds do not
//! wait for each other).
//!
//! A part that says its own `rate-iops` (vdbench's wd `iorate=`) has a fixed rate of its own: it takes no share,
//! runs on a worker of its own paced at that rate whatever the phase's pace, and the other parts share what it
//! leaves of the phase's rate (`WG_entry.wg_set_interarrival`: the rd's iorate less the workloads' own). A part
//! that says its own `jobs` (vdbench's `streams=`) runs alone on that many workers, each with its slice.

use super::build::JobContext;
use super::facts::Facts;
use super::raw::plan_raw;
use super::values::{default_name, pacing};
use super::{
    DirectionBytes, FlowSpec, MixedWorker, Pacing, PartPlan, PhaseKind, PhasePlan, PlanError, RawPlan, TargetPlan,
    WorkerPlan,
};
use crate::spec::{BlockSizeSpec, PhaseSpec, RwMode, VdbenchExtras};
use crate::units::Bytes;
use crate::workload::{Access, BlockSizes};
use std::time::Duration;

/// Plans phase `index`, which has parts.
pub(super) fn plan_parts_phase(
    context: &JobContext,
    index: usize,
    spec: &PhaseSpec,
    target: &TargetPlan,
    facts: &Facts,
    verify_block: Option<u32>,
    notices: &mut Vec<String>,
) -> Result<PhasePlan, PlanError> {
    let label = spec.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
    let parts = spec.parts.as_deref().unwrap_or_default();
    let shares = shares(parts).map_err(|e| PlanError(format!("{label}: {e}")))?;
    let mut planned = Vec::with_capacity(parts.len());
    for (i, unit) in spec.units().into_iter().enumerate() {
        let name = unit.name.clone().filter(|n| Some(n) != spec.name.as_ref()).unwrap_or(format!("part {}", i + 1));
        // Only a part's own jobs= (vdbench's streams=) gives it several workers, not the phase's.
        let one = PhaseSpec { jobs: Some(parts[i].jobs.unwrap_or(1)), ..part_alone(&unit, &label, &name) };
        let (_, plan) = plan_raw(context, index, &one, target, facts, verify_block, notices)?;
        let queue = unit.queue.clone().unwrap_or_else(|| plan.files.iter().map(|f| f.to_string()).collect());
        let bounded = parts[i].io_passes.is_some();
        // The part's own rate, not the phase's that `units` lays under every part.
        let own_rate = parts[i].rate_iops.and_then(|_| pacing(&unit, &plan.block_sizes));
        planned.push(Planned { name, queue, share: shares[i], rank: unit.rank, bounded, own_rate, plan });
    }
    let unit = u64::from(all_block_sizes(&planned).min());
    let by_direction = super::raw::by_direction(spec, data_set(&planned), unit);
    let mut workers = workers(&planned, spec, index);
    split_by_direction(&planned, &mut workers, by_direction, unit).map_err(|e| PlanError(format!("{label}: {e}")))?;
    let phase_pacing = shared_pacing(spec, &planned).map_err(|e| PlanError(format!("{label}: {e}")))?;
    // What every phase has (warm-up, runtime, seed …) is the first part's, as its workers' are.
    let first = spec.units().swap_remove(0).into_owned();
    let mut raw = combine(spec, planned, workers, phase_pacing);
    raw.io_by_direction = by_direction;
    let name = spec.name.clone().unwrap_or_else(|| mixed_name(&raw, spec, &label));
    Ok(PhasePlan::of_spec(name, &first, PhaseKind::Raw(Box::new(raw))))
}

/// The phase's rate less the parts' own rates: what the parts without one share (vdbench's `wg_set_interarrival`).
fn shared_pacing(spec: &PhaseSpec, planned: &[Planned]) -> Result<Option<Pacing>, String> {
    let sizes = all_block_sizes(planned);
    let fixed: f64 = planned.iter().filter_map(|p| p.own_rate).map(|r| r.ops_per_sec).sum();
    let Some(pacing) = pacing(spec, &sizes) else { return Ok(None) };
    if fixed == 0.0 || planned.iter().all(|p| p.own_rate.is_some()) {
        return Ok(Some(pacing));
    }
    if pacing.bytes_per_sec.is_some() {
        return Err("parts with a rate-iops of their own need the phase's rate as rate-iops too, not rate".into());
    }
    if pacing.ops_per_sec <= fixed {
        return Err(format!(
            "the parts' own rates ({fixed}/s) leave nothing of the phase's rate-iops ({}/s) for the other parts; \
             raise the phase's rate or lower theirs",
            pacing.ops_per_sec
        ));
    }
    Ok(Some(Pacing { ops_per_sec: pacing.ops_per_sec - fixed, ..pacing }))
}

/// One part planned alone.
struct Planned {
    name: String,
    queue: String,
    /// Percent of the phase's operations.
    share: f64,
    /// The rank that runs it, under mpirun (vdbench's hd).
    rank: Option<u32>,
    /// The part says its own passes (vdbench seekpct=eof: one pass of its lun), which bound it even under a
    /// runtime.
    bounded: bool,
    /// A fixed rate of its own (vdbench's wd `iorate=`).
    own_rate: Option<Pacing>,
    plan: RawPlan,
}

/// The shares of the parts, in percent: said ones as said, the rest share what is left evenly; a part with a
/// rate of its own has none (vdbench's `RD_entry` leaves wds with `iorate=` out of the skews).
fn shares(parts: &[PhaseSpec]) -> Result<Vec<f64>, String> {
    let own = |p: &PhaseSpec| p.rate_iops.is_some();
    let said: f64 = parts.iter().filter_map(|p| p.skew).sum();
    let unsaid = parts.iter().filter(|p| p.skew.is_none() && !own(p)).count();
    let each = if unsaid > 0 { (100.0 - said) / unsaid as f64 } else { 0.0 };
    let shares: Vec<f64> = parts.iter().map(|p| if own(p) { 0.0 } else { p.skew.unwrap_or(each) }).collect();
    if parts.iter().all(own) {
        return Ok(shares);
    }
    let total: f64 = shares.iter().sum();
    if (total - 100.0).abs() > 0.001 || shares.iter().any(|s| *s < 0.0) {
        return Err(format!("the parts' skews add up to {total}; they must add up to 100"));
    }
    if shares.iter().all(|s| *s == 0.0) {
        return Err("every part has a skew of 0: give at least one a share".into());
    }
    Ok(shares)
}

/// A part as a phase of its own: one worker (unless it says its jobs), named after the phase and the part, and
/// unpaced (the phase's rate is shared out by worker).
fn part_alone(unit: &PhaseSpec, phase: &str, part: &str) -> PhaseSpec {
    PhaseSpec {
        name: Some(format!("{phase}: {part}")),
        jobs: Some(1),
        rate: None,
        rate_iops: None,
        rate_process: None,
        io_size: None,
        vdbench: VdbenchExtras {
            rate_percent_of_max: None,
            curve_stop_latency: None,
            io_read: None,
            io_written: None,
            ..unit.vdbench.clone()
        },
        parts: None,
        skew: None,
        queue: None,
        rank: None,
        ..unit.clone()
    }
}

/// Which worker a part runs on: its queue and rank; a part with a rate of its own, or with several workers of
/// its own (its jobs, vdbench's streams), runs alone.
type QueueKey<'a> = (&'a str, Option<u32>, Option<usize>);

fn key((i, p): (usize, &Planned)) -> QueueKey<'_> {
    (p.queue.as_str(), p.rank, (p.own_rate.is_some() || p.plan.workers.len() > 1).then_some(i))
}

/// One worker per queue and rank (parts of other ranks run on other hosts, so they cannot share a worker), in
/// the order queues first appear; a worker's parts are weighted by their shares. A part with a rate of its own
/// runs alone, so that its pace is its own (in vdbench its priority starts its due I/O before the others').
fn workers(planned: &[Planned], spec: &PhaseSpec, index: usize) -> Vec<WorkerPlan> {
    let queues = queues(planned);
    let total_share: f64 = planned.iter().map(|p| p.share).sum();
    let held = holds_shares(spec, queues.iter().filter(|q| q.2.is_none()).count());
    queues
        .iter()
        .flat_map(|queue| {
            let mine: Vec<&Planned> =
                planned.iter().enumerate().filter(|&(i, p)| key((i, p)) == *queue).map(|(_, p)| p).collect();
            let first = &mine[0].plan.workers[0];
            let share: f64 = mine.iter().map(|p| p.share).sum::<f64>() / total_share.max(f64::MIN_POSITIVE);
            let alone = || mine.iter().filter_map(|p| p.plan.workers[0].io_bytes).sum();
            let own_rate = mine[0].own_rate;
            let io_bytes = match spec.io_size {
                // A part with its own rate does its own amount, or runs for the phase's time.
                _ if own_rate.is_some() => (spec.runtime.is_none() || mine[0].bounded).then(alone),
                Some(b) => Some((b.0 as f64 * share) as u64),
                // Parts bounded by their own passes, or without a runtime: each part does what it would alone.
                None if spec.runtime.is_none() || mine.iter().all(|p| p.bounded) => Some(alone()),
                None => None,
            };
            let worker = WorkerPlan {
                workload: first.workload.clone(),
                io_bytes,
                io_ops: None,
                io_by_direction: DirectionBytes::default(),
                mixed: Some(MixedWorker {
                    share,
                    iodepth: mine.iter().map(|p| p.plan.iodepth).max().unwrap_or(1),
                    others: mine[1..].iter().map(|p| p.plan.workers[0].workload.clone()).collect(),
                    // A part with its own rate is alone on its worker: all of the worker's operations.
                    weights: mine.iter().map(|p| if own_rate.is_some() { 1.0 } else { p.share }).collect(),
                    rank: queue.1,
                    held: (held && own_rate.is_none()).then(|| FlowSpec {
                        id: HELD_SHARES_FLOW + index as u64,
                        weight: (share * 1e6).round().max(1.0) as u64,
                        sleep: Duration::ZERO,
                    }),
                    own_rate,
                }),
            };
            each_job(worker, mine[0], spec.io_size.is_some())
        })
        .collect()
}

/// A part of several workers (its jobs: vdbench's streams) as those workers: each with its own workload (its
/// slice), its part of the share, the rate and the amount, and the same depth; any other worker as it is.
fn each_job(worker: WorkerPlan, part: &Planned, sized: bool) -> Vec<WorkerPlan> {
    let jobs = part.plan.workers.len();
    if jobs == 1 {
        return vec![worker];
    }
    let mixed = worker.mixed.expect("a worker of a phase with parts is mixed");
    let share = mixed.share / jobs as f64;
    part.plan
        .workers
        .iter()
        .map(|alone| WorkerPlan {
            workload: alone.workload.clone(),
            // The phase's amount shared out, or what the job would do alone.
            io_bytes: if sized {
                worker.io_bytes.map(|b| b / jobs as u64)
            } else {
                worker.io_bytes.and(alone.io_bytes)
            },
            io_ops: None,
            io_by_direction: DirectionBytes::default(),
            mixed: Some(MixedWorker {
                share,
                held: mixed.held.map(|f| FlowSpec { weight: (share * 1e6).round().max(1.0) as u64, ..f }),
                own_rate: mixed.own_rate.map(|r| Pacing { ops_per_sec: r.ops_per_sec / jobs as f64, ..r }),
                ..mixed.clone()
            }),
        })
        .collect()
}

/// Shares the phase's bounds on reads and on writes (vdbench maxdataread, maxdatawritten) among the workers by
/// the bytes each is expected to move that way — its parts' shares of the operations × their read (or write)
/// percentage × their mean transfer — so that the workers reach their bounds about together. A worker that
/// moves nothing that way would run on to the runtime, where vdbench stops the whole rd: refused.
fn split_by_direction(
    planned: &[Planned],
    workers: &mut [WorkerPlan],
    total: DirectionBytes,
    unit: u64,
) -> Result<(), String> {
    let queues = queues(planned);
    let weights: Vec<(f64, f64)> = queues
        .iter()
        .map(|q| {
            let mine = planned.iter().enumerate().filter(|&(i, p)| key((i, p)) == *q).map(|(_, p)| p);
            mine.map(expected_bytes).fold((0.0, 0.0), sum)
        })
        .collect();
    for (reads, bound) in [(true, total.read), (false, total.written)] {
        let Some(bound) = bound else { continue };
        if workers.len() != queues.len() {
            return Err("maxdataread and maxdatawritten (io-read, io-written) with a part on several workers of its \
                        own (vdbench's streams=): not supported yet; bound the rd with maxdata= or elapsed="
                .into());
        }
        let weight = |w: &(f64, f64)| if reads { w.0 } else { w.1 };
        let all: f64 = weights.iter().map(weight).sum();
        if let Some(idle) = weights.iter().position(|w| weight(w) == 0.0).filter(|_| all > 0.0) {
            let what = if reads { "maxdataread (io-read)" } else { "maxdatawritten (io-written)" };
            let verb = if reads { "reads" } else { "writes" };
            return Err(format!(
                "the workload on {} {verb} nothing, so {what} would not stop it as vdbench stops the whole rd: \
                 not supported yet; bound the rd with maxdata= or elapsed=, or give every sd some {verb}",
                queues[idle].0
            ));
        }
        for (worker, w) in workers.iter_mut().zip(&weights) {
            let mine = if all > 0.0 { bound as f64 * weight(w) / all } else { 0.0 };
            let bytes = Some(((mine / unit as f64).floor() as u64).max(1) * unit);
            if reads { worker.io_by_direction.read = bytes } else { worker.io_by_direction.written = bytes }
        }
    }
    Ok(())
}

/// Bytes a part is expected to read and to write per operation of the phase.
fn expected_bytes(p: &Planned) -> (f64, f64) {
    let reads = f64::from(p.plan.read_percent) / 100.0;
    let writes = p.plan.write_block_sizes.as_ref().unwrap_or(&p.plan.block_sizes);
    (p.share * reads * p.plan.block_sizes.mean(), p.share * (1.0 - reads) * writes.mean())
}

fn sum(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    (a.0 + b.0, a.1 + b.1)
}

/// The workers' queues and ranks, in the order they first appear.
fn queues(planned: &[Planned]) -> Vec<QueueKey<'_>> {
    let mut queues: Vec<QueueKey> = Vec::new();
    for k in planned.iter().enumerate().map(key) {
        if !queues.contains(&k) {
            queues.push(k);
        }
    }
    queues
}

/// Flow ids of phases that hold their workers' shares, one above the other per phase; far above fio's flow_id
/// values, so that a fio flow never joins one.
const HELD_SHARES_FLOW: u64 = 1 << 62;

/// Whether a phase's workers hold their shares under max: vdbench's controlled max, when a part says its skew
/// and nothing paces the phase, over more than one worker. Under mpirun, workers of parts on the ranks of
/// several hds hold their shares together (`run::cluster::hold_across`); parts of no rank run on every rank,
/// and each rank holds them among its own workers. A mix of both is not held (no vdbench file makes one: with
/// hds, every part has its hd).
fn holds_shares(spec: &PhaseSpec, workers: usize) -> bool {
    let parts = spec.parts.as_deref().unwrap_or_default();
    let unpaced = spec.rate.is_none() && spec.rate_iops.is_none() && spec.vdbench.rate_percent_of_max.is_none();
    let said = spec.vdbench.hold_shares.unwrap_or_else(|| parts.iter().any(|p| p.skew.is_some()));
    let ranked = parts.iter().filter(|p| p.rank.is_some()).count();
    unpaced && workers > 1 && said && (ranked == 0 || ranked == parts.len())
}

/// The phase: the first part's plan for what all parts share (engine, direct I/O, ramp, runtime …), the parts'
/// files, sizes and mix for the rest; `pacing` is what the parts without a rate of their own share.
fn combine(spec: &PhaseSpec, planned: Vec<Planned>, workers: Vec<WorkerPlan>, pacing: Option<Pacing>) -> RawPlan {
    let read_percent = mixed_read_percent(&planned);
    let random = planned.iter().find(|p| matches!(p.plan.access, Access::Random { .. }));
    let rw = mixed_rw(random.is_some(), read_percent);
    let block_sizes = all_block_sizes(&planned);
    let mut labels: Vec<&str> = planned.iter().map(|p| p.plan.bs_label.as_str()).collect();
    labels.dedup();
    let bs_label = labels.join("+");
    let iodepth = workers.iter().filter_map(|w| w.mixed.as_ref()).map(|m| m.iodepth).max().unwrap_or(1);
    let jobs = workers.len() as u32;
    let (files, data_set) = (all_files(&planned), data_set(&planned));
    let parts = part_plans(&planned);
    let needs_data = planned.iter().any(|p| p.plan.needs_data);
    let access = random.map_or(Access::Sequential, |p| p.plan.access.clone());
    let first = planned.into_iter().next().expect("a phase with parts has one").plan;
    RawPlan {
        rw,
        read_percent,
        access,
        pacing,
        block_sizes,
        write_block_sizes: None,
        bs_label,
        iodepth,
        iodepth_batch: first.iodepth_batch.min(iodepth),
        jobs,
        data_set,
        files,
        io_size: spec.io_size,
        curve: super::CurvePlan {
            rate_percent_of_max: spec.vdbench.rate_percent_of_max,
            curve_stop_latency: spec.vdbench.curve_stop_latency,
        },
        needs_data,
        workers,
        parts,
        ..first
    }
}

/// The name of a phase with parts that says none: made from its settings, with its label.
fn mixed_name(raw: &RawPlan, spec: &PhaseSpec, label: &str) -> String {
    let bs = BlockSizeSpec::Fixed(Bytes(u64::from(raw.block_sizes.max())));
    let described = PhaseSpec { rw: Some(raw.rw), runtime: spec.runtime, ..PhaseSpec::default() };
    format!("{} ({label})", default_name(&described, &bs, raw.iodepth, raw.jobs))
}

/// The share of reads of the mix, by the parts' shares; never 100 while a part writes (nor 0 while one reads),
/// whatever its share (a part with a rate of its own has none), so the files open for writing.
fn mixed_read_percent(planned: &[Planned]) -> u8 {
    let total: f64 = planned.iter().map(|p| p.share).sum();
    let weight = |p: &Planned| if total > 0.0 { p.share / total } else { 1.0 / planned.len() as f64 };
    let percent = planned.iter().map(|p| weight(p) * f64::from(p.plan.read_percent)).sum::<f64>();
    let (reads, writes) = (planned.iter().any(|p| p.plan.read_percent > 0), planned.iter().any(|p| p.plan.writes()));
    (percent.round() as u8).clamp(u8::from(reads), if writes { 99 } else { 100 })
}

/// The mode that describes the mix: random if any part is, by its share of reads.
fn mixed_rw(random: bool, read_percent: u8) -> RwMode {
    match (random, read_percent) {
        (true, 100) => RwMode::RandRead,
        (true, 0) => RwMode::RandWrite,
        (true, _) => RwMode::RandRw,
        (false, 100) => RwMode::Read,
        (false, 0) => RwMode::Write,
        (false, _) => RwMode::ReadWrite,
    }
}

/// Every block size of every part (reads and writes), each once.
fn all_block_sizes(planned: &[Planned]) -> BlockSizes {
    let mut sizes: Vec<u32> = planned.iter().flat_map(|p| p.plan.block_sizes.sizes()).collect();
    sizes.extend(planned.iter().filter_map(|p| p.plan.write_block_sizes.as_ref()).flat_map(BlockSizes::sizes));
    sizes.sort_unstable();
    sizes.dedup();
    match sizes.as_slice() {
        [one] => BlockSizes::Fixed { size: *one },
        many => BlockSizes::Split { entries: many.iter().map(|s| (*s, 1)).collect() },
    }
}

/// The parts' files, each once, in the order they first appear.
fn all_files(planned: &[Planned]) -> Vec<u32> {
    let mut files: Vec<u32> = Vec::new();
    for f in planned.iter().flat_map(|p| &p.plan.files) {
        if !files.contains(f) {
            files.push(*f);
        }
    }
    files
}

/// Parts on the same files address the same data: count each set of files once.
fn data_set(planned: &[Planned]) -> Bytes {
    let mut counted: Vec<&[u32]> = Vec::new();
    let mut data_set = Bytes(0);
    for p in planned {
        if !counted.contains(&p.plan.files.as_slice()) {
            counted.push(&p.plan.files);
            data_set = Bytes(data_set.0 + p.plan.data_set.0);
        }
    }
    data_set
}

/// What the results say of each part.
fn part_plans(planned: &[Planned]) -> Vec<PartPlan> {
    planned
        .iter()
        .map(|p| PartPlan {
            name: p.name.clone(),
            queue: p.queue.clone(),
            share_percent: p.share,
            own_rate_iops: p.own_rate.map(|r| r.ops_per_sec),
            rw: p.plan.rw,
            read_percent: p.plan.read_percent,
            bs_label: p.plan.bs_label.clone(),
            data_set: p.plan.data_set,
            files: p.plan.files.clone(),
        })
        .collect()
}

#[cfg(test)]
#[path = "mix_tests.rs"]
mod tests;
