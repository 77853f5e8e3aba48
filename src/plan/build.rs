//! Building a `Plan` from a `JobSpec` and the facts: defaults, engine choice, alignment, the split of the data
//! set between workers, and the stop conditions of every phase.
//!
//! How the data set is shared (documented in docs/architecture.md):
//! - sequential phases give each worker its own contiguous slice, so `--jobs 4 --rw read` reads the data set
//!   once, in four streams, and no two workers read the same blocks;
//! - random phases let every worker address the whole data set;
//! - without `--runtime` or `--io-size`, a phase does one data set's worth of I/O (fio's default).

use super::defaults;
use super::facts::Facts;
use super::files::{directory_use, share, single_target_use, worker_regions};
use super::streams::plan_streams_phases;
use super::target::{default_shared_files, plan_target};
use super::values::{
    alignment, block_sizes, check_zones, choose_engine, default_name, distribution, offsets, pacing, percentiles,
    worker_seed,
};
use super::{
    DirectMode, FioLogs, PhasePlan, Plan, PlanError, RateFloor, TargetKind, TargetPlan, Thinktime, WorkerPlan,
};
use crate::engine::EngineKind;
use crate::spec::{BlockSizeSpec, DistributionSpec, FileService, JobSpec, PhaseSpec, Sharing};
use crate::units::Bytes;
use crate::workload::{Access, BlockSizes, FileService as WorkloadFileService, WorkloadConfig};
use std::time::Duration;

/// Choices that are about the run, not the workload.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Name of this run's work directory under `TARGET/.streamcap/`.
    pub run_id: String,
    pub allow_device_writes: bool,
    /// Write to a device even though it carries a signature.
    pub force: bool,
    /// Wait for a file-set tree another run is using instead of refusing.
    pub wait: bool,
}

pub fn build_plan(job: &JobSpec, facts: &Facts, options: &RunOptions) -> Result<Plan, PlanError> {
    job.check().map_err(PlanError)?;
    if job.phases.iter().any(|p| p.fileset.is_some()) && job.phases.iter().any(|p| p.verify.is_some()) {
        return Err(PlanError(
            "--verify checks raw phases (rw and bs); a file-set phase's files are not verified: leave verify out"
                .into(),
        ));
    }
    for (i, phase) in job.phases.iter().enumerate() {
        if phase.units().iter().any(|u| u.rw.is_none()) && phase.fileset.is_none() && phase.streams.is_none() {
            let whose = if phase.parts.is_some() { "a part of " } else { "" };
            return Err(PlanError(format!(
                "{whose}phase {} has no rw: say what it does, e.g. rw = \"randread\" (read, write, randread, \
                 randwrite, readwrite, randrw)",
                i + 1
            )));
        }
    }
    super::streams::check_stream_requests(job, facts)?;
    let mut notices = job.notices.clone();
    let mut target = plan_target(job, facts, options, &mut notices)?;
    if let Some(why) = &facts.memory_backed {
        notices.push(format!("{why}: the figures describe memory, not storage, and are marked cache-affected"));
        target.memory_backed = Some(why.clone());
    }
    let verify = super::verify::verify_plan(job, target.kind == TargetKind::Directory, &options.run_id)?;
    // Worked out once for the whole job, so planning stays linear in the number of phases (a job of 200,000
    // phases used to take minutes because every phase recounted the shared files).
    let context = JobContext::new(job, &target);
    let mut phases: Vec<PhasePlan> = Vec::new();
    let mut estimates = Vec::new();
    // The nearest earlier file-set phase at max rate, which a percentage-of-max rate refers to (by plan index).
    let mut last_max = None;
    for (i, spec) in job.phases.iter().enumerate() {
        if spec.fileset.is_some() {
            let phase = super::fileset::plan_fileset_phase(i, spec, facts, last_max, &mut notices)?;
            if phase.fileset.as_ref().is_some_and(|f| f.rate == super::FileRate::Max && !f.workloads.is_empty()) {
                last_max = Some(phases.len());
            }
            phases.push(phase);
        } else if spec.streams.is_some() {
            let next = phases.len();
            let planned = plan_streams_phases(job, i, spec, &mut target, facts, &mut notices, next, &mut estimates)?;
            phases.extend(planned);
        } else if spec.parts.is_some() {
            let block = verify.map(|v| v.block);
            phases.push(super::mix::plan_parts_phase(&context, i, spec, &target, facts, block, &mut notices)?);
        } else {
            phases.push(plan_raw_phase(&context, i, spec, &target, facts, verify.map(|v| v.block), &mut notices)?);
        }
    }
    super::fileset::check_space(&phases, facts, &mut notices)?;
    check_curves(&phases)?;
    super::resources::check_resources(&phases, &facts.limits)?;
    if let Some(v) = &verify {
        super::verify::check_map_memory(v, &target, &facts.limits)?;
    }
    notices.dedup();
    Ok(Plan {
        origin: job.origin.clone(),
        target,
        phases,
        interval: job.interval.unwrap_or(defaults::INTERVAL),
        notices,
        verify,
        wait: options.wait,
    })
}

/// What every phase of a job shares: the number of shared `data.N` files and the file table by name.
pub(super) struct JobContext {
    default_files: u32,
    by_name: std::collections::HashMap<std::ffi::OsString, u32>,
}

impl JobContext {
    pub(super) fn new(job: &JobSpec, target: &TargetPlan) -> JobContext {
        JobContext {
            default_files: default_shared_files(job),
            by_name: target
                .files
                .iter()
                .enumerate()
                .filter_map(|(i, f)| f.path.file_name().map(|n| (n.to_os_string(), i as u32)))
                .collect(),
        }
    }
}

/// Plans one raw-I/O phase against the target's file table.
pub(super) fn plan_raw_phase(
    context: &JobContext,
    index: usize,
    spec: &PhaseSpec,
    target: &TargetPlan,
    facts: &Facts,
    verify_block: Option<u32>,
    notices: &mut Vec<String>,
) -> Result<PhasePlan, PlanError> {
    let rw = spec.rw.expect("checked by build_plan");
    let label = || spec.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
    let fail = |message: String| PlanError(format!("{}: {message}", label()));

    let engine = choose_engine(spec.engine, facts, notices).map_err(fail)?;
    let mut iodepth = spec.iodepth.unwrap_or(defaults::IODEPTH);
    if iodepth > engine.max_queue_depth() {
        notices.push(format!(
            "the {} engine keeps one I/O in flight per job, so --iodepth {iodepth} becomes 1; use --jobs for \
             concurrency, or --engine io_uring",
            engine.name()
        ));
        iodepth = engine.max_queue_depth();
    }
    let jobs = spec.jobs.unwrap_or(defaults::JOBS);
    let direct = match spec.direct {
        Some(true) => DirectMode::Required,
        Some(false) => DirectMode::Off,
        None => DirectMode::Preferred,
    };
    let mut align = alignment(direct, &facts.target);
    // A verified write covers whole verified blocks, and so does a read whose sizes allow it: offsets (and the
    // workers' slices) are whole blocks.
    if let Some(block) = verify_block
        && super::verify::covers_whole_blocks(spec, block)
    {
        align = align.max(block);
    }
    let bs_spec = spec.bs.clone().unwrap_or(BlockSizeSpec::Fixed(defaults::BLOCK_SIZE));
    let write_block_sizes = match &spec.bs_write {
        Some(writes) if rw.is_mixed() => Some(block_sizes(writes, align, direct).map_err(fail)?),
        Some(_) => return Err(fail(format!("bs-write applies to mixed modes (readwrite, randrw), but rw is {rw}"))),
        None => None,
    };
    let block_sizes = block_sizes(&bs_spec, align, direct).map_err(fail)?;
    let (smallest, largest) = (
        block_sizes.min().min(write_block_sizes.as_ref().map_or(u32::MAX, BlockSizes::min)),
        block_sizes.max().max(write_block_sizes.as_ref().map_or(0, BlockSizes::max)),
    );
    let access = if rw.is_random() {
        Access::Random { distribution: distribution(spec.distribution.as_ref().unwrap_or(&DistributionSpec::Uniform)) }
    } else {
        if spec.distribution.as_ref().is_some_and(|d| *d != DistributionSpec::Uniform) {
            notices.push(format!("{}: the distribution applies to random modes only; it is not used", label()));
        }
        Access::Sequential
    };
    let read_percent = rw.read_percent(spec.rdpct);

    // The files this phase uses and the bytes of them it addresses (see `files`).
    let usage = match target.kind {
        TargetKind::Directory => directory_use(spec, context.default_files, u64::from(align)),
        TargetKind::File | TargetKind::BlockDevice => single_target_use(spec, target.files[0].size.0, u64::from(align)),
        TargetKind::Remote => Err("raw I/O needs a local directory, file or block device, not a URL".to_string()),
    }
    .map_err(fail)?;
    let index_of = |name: &str| -> u32 {
        match target.kind {
            TargetKind::Directory => {
                *context.by_name.get(std::ffi::OsStr::new(name)).expect("the file table holds every name a phase uses")
            }
            TargetKind::File | TargetKind::BlockDevice | TargetKind::Remote => 0,
        }
    };
    let files: Vec<u32> = usage.distinct_names().iter().map(|n| index_of(n)).collect();
    let max_block = u64::from(largest);
    let sharing = spec.sharing.unwrap_or(Sharing::Split);
    // Workers' slices are cut in whole 4 KiB units even where direct I/O allows 512 bytes, so that every 4 KiB
    // block written starts where a stamp is (run/pattern.rs) and slices stay page-sized.
    let slice_unit = u64::from(align.max(defaults::DIRECT_ALIGN));
    let worker_regions =
        worker_regions(&usage, &index_of, rw.is_random(), sharing, slice_unit, max_block).map_err(fail)?;
    let smallest_region = worker_regions.iter().flatten().map(|r| r.len).min().unwrap_or(0);
    check_zones(spec.distribution.as_ref(), smallest_region).map_err(fail)?;
    let offsets = offsets(spec, rw.is_random(), align).map_err(fail)?;
    if let Some(small) = worker_regions.iter().flatten().find(|r| r.len < max_block) {
        return Err(fail(format!(
            "the block size {} is larger than the data per file ({}); use a larger --size or a smaller --bs",
            Bytes(max_block),
            Bytes(small.len)
        )));
    }
    let data_set = Bytes(match (usage.own_files, usage.increment) {
        (false, None) => usage.len * files.len() as u64,
        _ => worker_regions.iter().flatten().map(|r| r.len).sum(),
    });

    let random_percent = match spec.percentage_random {
        Some(p) if p > 100 => return Err(fail(format!("percentage-random {p} is above 100"))),
        Some(p) if !rw.is_random() => {
            return Err(fail(format!(
                "percentage-random {p} applies to random modes (randread, randwrite, randrw): rw is {rw}"
            )));
        }
        Some(p) => p,
        None => 100,
    };
    let file_service = match spec.file_service {
        Some(FileService::Sequential) => WorkloadFileService::Sequential,
        Some(FileService::RoundRobin) => WorkloadFileService::RoundRobin,
        Some(FileService::Random) => WorkloadFileService::Random,
        None if rw.is_random() => WorkloadFileService::Random,
        None => WorkloadFileService::Sequential,
    };
    // Offsets are multiples of `align` (the direct-I/O alignment) or of a larger `align` the user asked for,
    // which every block size must then be a multiple of.
    // Offsets are multiples of `align` (the direct-I/O alignment) or of a larger `align` the user asked for. Only
    // operations that are all at random offsets may be smaller than that (fio's blockalign=4k with 512-byte
    // blocks): a sequential run would continue at an offset that is not a multiple.
    let all_random = rw.is_random() && random_percent == 100 && spec.random_every.unwrap_or(1) <= 1;
    let offset_align = match spec.align {
        None => align,
        Some(asked) => {
            let asked = u32::try_from(asked.0).unwrap_or(u32::MAX);
            if !asked.is_multiple_of(align) && !align.is_multiple_of(asked)
                || !all_random && !smallest.is_multiple_of(asked.max(align))
            {
                return Err(fail(format!(
                    "align {} must divide the smallest block size ({}) and be a multiple or divisor of {}: use the \
                     block size itself",
                    Bytes(u64::from(asked)),
                    Bytes(u64::from(smallest)),
                    Bytes(u64::from(align))
                )));
            }
            asked.max(align)
        }
    };
    if spec.number_ios == Some(0) {
        return Err(fail("number-ios must be at least 1".into()));
    }
    let seed = spec.seed.unwrap_or(defaults::SEED);
    // --io-size counts whole operations of the smallest block size, shared as evenly as whole operations allow.
    let unit = u64::from(smallest);
    let io_size = spec.io_size.map(|b| Bytes(b.0 / unit * unit));
    let workers = worker_regions
        .into_iter()
        .enumerate()
        .map(|(w, regions)| {
            let slice: u64 = regions.iter().map(|r| r.len).sum();
            let io_bytes = match (io_size, spec.runtime) {
                (Some(total), _) => Some(share(total.0 / unit, jobs, w) * unit),
                // Random workers that share the data set do one data set's worth of I/O between them; workers
                // with files (or a whole data set) of their own each do their own share, as fio's clones do.
                (None, None)
                    if rw.is_random() && !usage.own_files && sharing == Sharing::Split && usage.increment.is_none() =>
                {
                    Some(share(data_set.0 / unit, jobs, w) * unit)
                }
                (None, None) => Some(slice),
                (None, Some(_)) => None,
            };
            let workload = WorkloadConfig {
                regions,
                access: access.clone(),
                read_percent,
                block_sizes: block_sizes.clone(),
                write_sizes: write_block_sizes.clone(),
                align: offset_align,
                seed: worker_seed(seed, index, w),
                random_percent,
                file_service,
                offsets,
            };
            WorkerPlan { workload, io_bytes, io_ops: spec.number_ios, mixed: None }
        })
        .collect();

    let pacing = pacing(spec, &block_sizes);
    // The null engine reads nothing, so there is nothing to lay out for it.
    let needs_data = target.kind == super::TargetKind::Directory
        && (read_percent > 0 || rw.is_random())
        && engine != EngineKind::Null;
    Ok(PhasePlan {
        name: spec.name.clone().unwrap_or_else(|| default_name(spec, &bs_spec, iodepth, jobs)),
        group: spec.group.clone(),
        rw,
        read_percent,
        access,
        block_sizes,
        write_block_sizes,
        bs_label: match &spec.bs_write {
            Some(writes) if rw.is_mixed() => format!("{bs_spec},{writes}"),
            _ => bs_spec.to_string(),
        },
        engine,
        iodepth,
        iodepth_batch: spec.iodepth_batch.unwrap_or(defaults::IODEPTH_BATCH).min(iodepth),
        jobs,
        direct,
        align,
        data_set,
        files,
        runtime: spec.runtime,
        ramp: spec.ramp.unwrap_or(defaults::RAMP),
        io_size,
        pacing,
        fsync_every: spec.fsync_every,
        fdatasync_every: spec.fdatasync_every,
        sync_writes: spec.sync_writes.unwrap_or(false),
        end_fsync: spec.end_fsync.unwrap_or(false),
        invalidate: spec.invalidate.unwrap_or(true),
        pre_read: spec.pre_read.unwrap_or(false),
        start_delay: spec.start_delay.unwrap_or(Duration::ZERO),
        thinktime: spec
            .thinktime
            .filter(|t| !t.is_zero())
            .map(|pause| Thinktime { pause, every: spec.thinktime_blocks.unwrap_or(1).max(1) }),
        rate_floor: (spec.rate_min.is_some() || spec.rate_min_iops.is_some()).then(|| RateFloor {
            bytes_per_sec: spec.rate_min.map(|r| r.bytes_per_sec()),
            ops_per_sec: spec.rate_min_iops.map(|r| r as f64),
        }),
        rate_percent_of_max: spec.rate_percent_of_max,
        curve_stop_latency: spec.curve_stop_latency,
        concurrent: spec.concurrent.unwrap_or(false) && index > 0,
        percentiles: percentiles(spec).map_err(fail)?,
        logs: FioLogs { bw: spec.bw_log.clone(), iops: spec.iops_log.clone(), lat: spec.lat_log.clone() },
        continue_on_error: spec.continue_on_error.unwrap_or(false),
        needs_data,
        seed,
        workers,
        fileset: None,
        streams: None,
        fio: spec.fio.clone(),
        per_worker_results: jobs > 1 && spec.fio.as_ref().is_some_and(|f| !f.group_reporting),
        parts: Vec::new(),
    })
}

/// A phase paced at a percentage of the maximum needs an earlier, unpaced phase to take the maximum from.
/// Curve phases (a percentage of the maximum rate) need an earlier unpaced phase; a concurrent one needs it in
/// an earlier stage. One pass, so that checking stays linear in the number of phases.
fn check_curves(phases: &[PhasePlan]) -> Result<(), PlanError> {
    let unpaced = |p: &PhasePlan| p.pacing.is_none() && p.rate_percent_of_max.is_none();
    // Whether an unpaced phase came before this one; and before (or at) the last phase that started a stage.
    let (mut any_before, mut any_before_stage) = (false, false);
    for phase in phases {
        let seen = if phase.concurrent { any_before_stage } else { any_before };
        any_before |= unpaced(phase);
        if !phase.concurrent {
            any_before_stage = any_before;
        }
        let Some(percent) = phase.rate_percent_of_max else { continue };
        if phase.pacing.is_some() {
            return Err(PlanError(format!(
                "{}: give either a rate or a percentage of the maximum rate, not both",
                phase.name
            )));
        }
        if !(percent > 0.0 && percent <= 100.0) {
            return Err(PlanError(format!(
                "{}: the percentage of the maximum rate must be above 0 and at most 100",
                phase.name
            )));
        }
        if !seen {
            return Err(PlanError(format!(
                "{}: a rate as a percentage of the maximum needs an earlier phase that runs unpaced to measure \
                 the maximum (vdbench's curve starts with iorate=max)",
                phase.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineKind;
    use crate::plan::TargetFacts;
    use crate::spec::{EngineChoice, RwMode, SpecOrigin};
    use std::path::PathBuf;

    fn facts() -> Facts {
        Facts {
            target: TargetFacts::Directory {
                path: PathBuf::from("/srv"),
                free: Some(Bytes::gib(50)),
                dio_align: Some(512),
            },
            ram: Bytes::gib(16),
            io_uring: Ok(()),
            memory_backed: None,
            anchors: Vec::new(),
            cpus: 2,
            media_libraries: Vec::new(),
            limits: Default::default(),
        }
    }

    fn one_phase(phase: PhaseSpec) -> JobSpec {
        JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases: vec![phase], notices: Vec::new() }
    }

    fn options() -> RunOptions {
        RunOptions { run_id: "run-test".into(), ..Default::default() }
    }

    #[test]
    fn sequential_jobs_get_disjoint_slices_that_cover_the_data_set() {
        let spec = PhaseSpec {
            rw: Some(RwMode::Read),
            bs: Some(BlockSizeSpec::Fixed(Bytes::mib(1))),
            size: Some(Bytes::gib(1)),
            files: Some(3),
            jobs: Some(4),
            ..Default::default()
        };
        let plan = build_plan(&one_phase(spec), &facts(), &options()).unwrap();
        let phase = &plan.phases[0];
        let mut covered: Vec<(u32, u64, u64)> =
            phase.workers.iter().flat_map(|w| w.workload.regions.iter().map(|r| (r.file, r.start, r.len))).collect();
        covered.sort();
        for pair in covered.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(a.0 != b.0 || a.1 + a.2 <= b.1, "overlap {a:?} {b:?}");
        }
        let total: u64 = covered.iter().map(|c| c.2).sum();
        assert!(total > phase.data_set.0 - 4 * (1 << 20), "{total} of {}", phase.data_set.0);
        // No runtime: each worker reads its slice once.
        for w in &phase.workers {
            assert_eq!(w.io_bytes, Some(w.workload.regions.iter().map(|r| r.len).sum()));
        }
    }

    #[test]
    fn random_jobs_share_the_data_set_and_the_io_bound() {
        let spec =
            PhaseSpec { rw: Some(RwMode::RandRead), jobs: Some(2), size: Some(Bytes::mib(64)), ..Default::default() };
        let plan = build_plan(&one_phase(spec), &facts(), &options()).unwrap();
        let phase = &plan.phases[0];
        assert_eq!(phase.workers[0].workload.regions, phase.workers[1].workload.regions);
        assert_ne!(phase.workers[0].workload.seed, phase.workers[1].workload.seed);
        assert_eq!(phase.workers[0].io_bytes, Some(32 << 20));
        assert_eq!(phase.engine, EngineKind::IoUring);
        assert!(phase.needs_data);
    }

    #[test]
    fn sync_engine_clamps_depth_with_a_notice() {
        let spec = PhaseSpec {
            rw: Some(RwMode::RandRead),
            engine: Some(EngineChoice::Sync),
            iodepth: Some(32),
            size: Some(Bytes::mib(64)),
            ..Default::default()
        };
        let plan = build_plan(&one_phase(spec), &facts(), &options()).unwrap();
        assert_eq!(plan.phases[0].iodepth, 1);
        assert!(plan.notices.iter().any(|n| n.contains("--iodepth 32")));
    }

    #[test]
    fn missing_io_uring_falls_back_unless_asked_for() {
        let mut f = facts();
        f.io_uring = Err("disabled by sysctl".into());
        let spec = PhaseSpec { rw: Some(RwMode::RandRead), size: Some(Bytes::mib(64)), ..Default::default() };
        let plan = build_plan(&one_phase(spec.clone()), &f, &options()).unwrap();
        assert_eq!(plan.phases[0].engine, EngineKind::Sync);
        assert!(plan.notices[0].contains("disabled by sysctl"));
        let asked = PhaseSpec { engine: Some(EngineChoice::IoUring), ..spec };
        assert!(build_plan(&one_phase(asked), &f, &options()).unwrap_err().0.contains("--engine sync"));
    }

    #[test]
    fn direct_io_needs_aligned_block_sizes() {
        let spec = PhaseSpec {
            rw: Some(RwMode::RandRead),
            bs: Some(BlockSizeSpec::Fixed(Bytes(6000))),
            size: Some(Bytes::mib(64)),
            ..Default::default()
        };
        let err = build_plan(&one_phase(spec.clone()), &facts(), &options()).unwrap_err();
        assert!(err.0.contains("multiple of 512 B") && err.0.contains("--buffered"), "{err}");
        let buffered = PhaseSpec { direct: Some(false), bs: Some(BlockSizeSpec::Fixed(Bytes(6144))), ..spec.clone() };
        assert!(build_plan(&one_phase(buffered), &facts(), &options()).is_ok());
        // 512-byte direct I/O where the filesystem reports 512 (statx DIOALIGN), 4 KiB where it reports nothing.
        let small = PhaseSpec { bs: Some(BlockSizeSpec::Fixed(Bytes(512))), ..spec };
        let plan = build_plan(&one_phase(small.clone()), &facts(), &options()).unwrap();
        assert_eq!(plan.phases[0].align, 512);
        let mut silent = facts();
        silent.target =
            TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(50)), dio_align: None };
        let err = build_plan(&one_phase(small), &silent, &options()).unwrap_err();
        assert!(err.0.contains("multiple of 4 KiB"), "{err}");
    }

    #[test]
    fn null_engine_phases_need_no_space_and_no_prefill() {
        let spec = PhaseSpec {
            rw: Some(RwMode::RandRead),
            engine: Some(EngineChoice::Null),
            size: Some(Bytes::gib(100)),
            ..Default::default()
        };
        let plan = build_plan(&one_phase(spec.clone()), &facts(), &options()).unwrap();
        assert!(!plan.phases[0].needs_data, "nothing to read, nothing to lay out");
        let io = PhaseSpec { engine: None, ..spec };
        assert!(build_plan(&one_phase(io), &facts(), &options()).unwrap_err().0.contains("not enough free space"));
    }

    #[test]
    fn offset_modifiers_and_zones_are_checked_against_the_mode_and_the_data() {
        use crate::spec::{ByteStep, DistributionSpec, ZoneExtent, ZoneSpec};
        let seq = PhaseSpec { rw: Some(RwMode::Read), size: Some(Bytes::mib(64)), ..Default::default() };
        let back = PhaseSpec { offset_step: Some(ByteStep(-8192)), ..seq.clone() };
        let plan = build_plan(&one_phase(back), &facts(), &options()).unwrap();
        assert_eq!(plan.phases[0].workers[0].workload.offsets.step, -8192);
        let odd = PhaseSpec { offset_step: Some(ByteStep(100)), ..seq.clone() };
        assert!(build_plan(&one_phase(odd), &facts(), &options()).unwrap_err().0.contains("multiple of"));
        let every = PhaseSpec { random_every: Some(8), ..seq.clone() };
        assert!(build_plan(&one_phase(every), &facts(), &options()).unwrap_err().0.contains("random modes"));
        let zone = |bytes| ZoneSpec { access_percent: 50.0, size: ZoneExtent::Bytes(Bytes::mib(bytes)) };
        let past = PhaseSpec {
            rw: Some(RwMode::RandRead),
            distribution: Some(DistributionSpec::Zoned(vec![zone(32), zone(64)])),
            ..seq
        };
        assert!(build_plan(&one_phase(past), &facts(), &options()).unwrap_err().0.contains("past the end"));
    }

    #[test]
    fn a_phase_without_rw_is_explained() {
        let err = build_plan(&one_phase(PhaseSpec::default()), &facts(), &options()).unwrap_err();
        assert!(err.0.contains("rw = \"randread\""), "{err}");
    }

    #[test]
    fn rate_becomes_operations_per_second() {
        let spec = PhaseSpec {
            rw: Some(RwMode::Read),
            bs: Some(BlockSizeSpec::Fixed(Bytes::mib(1))),
            rate: Some(crate::units::ByteRate(8.0 * 1048576.0)),
            size: Some(Bytes::mib(64)),
            ..Default::default()
        };
        let plan = build_plan(&one_phase(spec), &facts(), &options()).unwrap();
        assert_eq!(plan.phases[0].pacing.unwrap().ops_per_sec, 8.0);
    }
}
