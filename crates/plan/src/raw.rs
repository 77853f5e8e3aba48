//! Planning one raw-I/O phase (rw and bs against the target's file table): engine and queue depth, block sizes
//! and alignment, the files and bytes it addresses, each worker's slice and bound, and the phase's settings.
//! The job-wide work (the target, the file table, checks across phases) stays in `build`; this file plans one
//! phase and must not look at the others.
//!
//! How the data set is shared (documented in docs/architecture.md):
//! - sequential phases give each worker its own contiguous slice, so `--jobs 4 --rw read` reads the data set
//!   once, in four streams, and no two workers read the same blocks;
//! - random phases let every worker address the whole data set;
//! - without `--runtime` or `--io-size`, a phase does one data set's worth of I/O (fio's default).

use super::build::{DepthFrom, JobContext};
use super::defaults;
use super::devices::devices_use;
use super::facts::{Facts, TargetFacts};
use super::files::{FileUse, directory_use, share, single_target_use, worker_regions};
use super::values::{
    alignment, block_sizes, check_zones, choose_engine, default_name, distribution, offsets, pacing, percentiles,
    worker_seed,
};
use super::{
    DirectMode, DirectionBytes, FioLogs, PhaseKind, PhasePlan, PlanError, RateFloor, RawPlan, TargetKind, TargetPlan,
    Thinktime, WorkerPlan,
};
use crate::engine::EngineKind;
use crate::spec::{BlockSizeSpec, DistributionSpec, FileService, IoAmount, PhaseSpec, RwMode, Sharing};
use crate::units::Bytes;
use crate::workload::{Access, BlockSizes, FileService as WorkloadFileService, Offsets, Region, WorkloadConfig};
use std::time::Duration;

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
    let (name, raw) = plan_raw(context, index, spec, target, facts, verify_block, notices)?;
    Ok(PhasePlan::of_spec(name, spec, PhaseKind::Raw(Box::new(raw))))
}

/// The raw plan of one raw-I/O phase (or part), with the phase's name (as said, or made from its settings).
pub(super) fn plan_raw(
    context: &JobContext,
    index: usize,
    spec: &PhaseSpec,
    target: &TargetPlan,
    facts: &Facts,
    verify_block: Option<u32>,
    notices: &mut Vec<String>,
) -> Result<(String, RawPlan), PlanError> {
    let rw = spec.rw.expect("checked by build_plan");
    let label = || spec.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
    let fail = |message: String| PlanError(format!("{}: {message}", label()));

    let (engine, iodepth) = engine_and_depth(spec, facts, &context.depth_from, notices).map_err(fail)?;
    let direct = match spec.direct {
        Some(true) => DirectMode::Required,
        Some(false) => DirectMode::Off,
        None => DirectMode::Preferred,
    };
    let sizes = Sizes::new(spec, rw, direct, &facts.target, verify_block).map_err(fail)?;
    let access = if rw.is_random() {
        Access::Random { distribution: distribution(spec.distribution.as_ref().unwrap_or(&DistributionSpec::Uniform)) }
    } else {
        if spec.distribution.as_ref().is_some_and(|d| *d != DistributionSpec::Uniform) {
            notices.push(format!("{}: the distribution applies to random modes only; it is not used", label()));
        }
        Access::Sequential
    };
    let (layout, offsets) = Layout::new(context, spec, target, rw, &sizes).map_err(fail)?;
    let random_percent = random_percent(spec, rw).map_err(fail)?;
    let offset_align = offset_align(spec, rw, random_percent, &sizes).map_err(fail)?;
    if spec.fio.number_ios == Some(0) {
        return Err(fail("number-ios must be at least 1".into()));
    }
    let read_percent = rw.read_percent(spec.rdpct);
    let template = WorkloadConfig {
        regions: Vec::new(),
        access,
        read_percent,
        block_sizes: sizes.block_sizes.clone(),
        write_sizes: sizes.write_block_sizes.clone(),
        align: offset_align,
        seed: spec.seed.unwrap_or(defaults::SEED),
        random_percent,
        file_service: file_service(spec, rw),
        offsets,
    };
    let shape = Shape { engine, iodepth, direct, sizes, layout, template };
    assemble(index, spec, rw, shape, target).map_err(fail)
}

/// The engine the phase asked for (or could have), and the queue depth it can keep.
/// A depth the engine cannot keep is lowered, with a notice that names where it was said (`from`).
fn engine_and_depth(
    spec: &PhaseSpec,
    facts: &Facts,
    from: &DepthFrom,
    notices: &mut Vec<String>,
) -> Result<(EngineKind, u32), String> {
    let engine = choose_engine(spec.engine, facts, notices)?;
    let mut iodepth = spec.iodepth.unwrap_or(defaults::IODEPTH);
    if iodepth > engine.max_queue_depth() {
        notices.push(format!(
            "the {} engine keeps one I/O in flight per job, so {} becomes 1; use --jobs for concurrency, or \
             --engine io_uring",
            engine.name(),
            from.words(iodepth)
        ));
        iodepth = engine.max_queue_depth();
    }
    Ok((engine, iodepth))
}

/// The phase's block sizes (reads, and writes where mixed modes give them apart) and the alignment of offsets.
struct Sizes {
    align: u32,
    bs_spec: BlockSizeSpec,
    block_sizes: BlockSizes,
    write_block_sizes: Option<BlockSizes>,
    smallest: u32,
    largest: u32,
}

impl Sizes {
    fn new(
        spec: &PhaseSpec,
        rw: RwMode,
        direct: DirectMode,
        target: &TargetFacts,
        verify_block: Option<u32>,
    ) -> Result<Sizes, String> {
        let mut align = alignment(direct, target);
        // A verified write covers whole verified blocks, and so does a read whose sizes allow it: offsets (and
        // the workers' slices) are whole blocks.
        if let Some(block) = verify_block
            && super::verify::covers_whole_blocks(spec, block)
        {
            align = align.max(block);
        }
        let bs_spec = spec.bs.clone().unwrap_or(BlockSizeSpec::Fixed(defaults::BLOCK_SIZE));
        let write_block_sizes = match &spec.bs_write {
            Some(writes) if rw.is_mixed() => Some(block_sizes(writes, align, direct)?),
            Some(_) => return Err(format!("bs-write applies to mixed modes (readwrite, randrw), but rw is {rw}")),
            None => None,
        };
        let block_sizes = block_sizes(&bs_spec, align, direct)?;
        let (smallest, largest) = (
            block_sizes.min().min(write_block_sizes.as_ref().map_or(u32::MAX, BlockSizes::min)),
            block_sizes.max().max(write_block_sizes.as_ref().map_or(0, BlockSizes::max)),
        );
        Ok(Sizes { align, bs_spec, block_sizes, write_block_sizes, smallest, largest })
    }
}

/// The files a phase uses (indexes into the file table), each worker's regions of them, and the data set.
struct Layout {
    files: Vec<u32>,
    worker_regions: Vec<Vec<Region>>,
    data_set: Bytes,
    /// Random workers share one data set between them (no files or increments of their own, split sharing).
    shared_random: bool,
}

impl Layout {
    /// The layout, and the phase's offsets (worked out between the checks of the regions, in the order the
    /// user meets the messages).
    fn new(
        context: &JobContext,
        spec: &PhaseSpec,
        target: &TargetPlan,
        rw: RwMode,
        sizes: &Sizes,
    ) -> Result<(Layout, Offsets), String> {
        let align = sizes.align;
        let usage = phase_use(context, spec, target, u64::from(align))?;
        let own_devices = spec.fio.devices.is_some();
        let index_of = |name: &str| -> u32 {
            match target.kind {
                // A phase on devices of its own names each by its index in the file table.
                _ if own_devices => name.parse().expect("devices_use names devices by index"),
                TargetKind::Directory => *context
                    .by_name
                    .get(std::ffi::OsStr::new(name))
                    .expect("the file table holds every name a phase uses"),
                TargetKind::File | TargetKind::BlockDevice | TargetKind::Remote => 0,
            }
        };
        let files: Vec<u32> = usage.distinct_names().iter().map(|n| index_of(n)).collect();
        let max_block = u64::from(sizes.largest);
        let sharing = spec.sharing.unwrap_or(Sharing::Split);
        // Workers' slices are cut in whole 4 KiB units even where direct I/O allows 512 bytes, so that every 4 KiB
        // block written starts where a stamp is (run/pattern.rs) and slices stay page-sized.
        let slice_unit = u64::from(align.max(defaults::DIRECT_ALIGN));
        let mut worker_regions = worker_regions(&usage, &index_of, rw.is_random(), sharing, slice_unit, max_block)?;
        if let Some(strided) = &spec.fio.strided {
            worker_regions = super::strided::zone_regions(worker_regions, strided, rw, max_block)?;
        }
        // Files laid end to end are one data set to a distribution (vdbench's hot band over the concatenation).
        let hotband = spec.distribution == Some(DistributionSpec::Hotband);
        let smallest_region = match usage.concatenated {
            Some(_) if hotband => worker_regions.iter().map(|w| w.iter().map(|r| r.len).sum()).min().unwrap_or(0),
            _ => worker_regions.iter().flatten().map(|r| r.len).min().unwrap_or(0),
        };
        check_zones(spec.distribution.as_ref(), smallest_region)?;
        let offsets = offsets(spec, rw.is_random(), align)?;
        if let Some(small) = worker_regions.iter().flatten().find(|r| r.len < max_block) {
            return Err(format!(
                "the block size {} is larger than the data per file ({}); use a larger --size or a smaller --bs",
                Bytes(max_block),
                Bytes(small.len)
            ));
        }
        let data_set = Bytes(match (usage.own_files, usage.increment) {
            (false, None) => usage.data_set(files.len(), max_block),
            _ => worker_regions.iter().flatten().map(|r| r.len).sum(),
        });
        let shared_random = shares_one_data_set(&usage, rw, sharing);
        Ok((Layout { files, worker_regions, data_set, shared_random }, offsets))
    }
}

/// The files a phase uses and the bytes of them it addresses (see `files`): its own devices, the directory's
/// files, or the one file or device.
fn phase_use(context: &JobContext, spec: &PhaseSpec, target: &TargetPlan, align: u64) -> Result<FileUse, String> {
    match (&spec.fio.devices, target.kind) {
        (Some(mine), _) => devices_use(spec, mine, &context.devices, &target.files, align),
        (None, TargetKind::Directory) => directory_use(spec, context.default_files, align),
        (None, TargetKind::File | TargetKind::BlockDevice) => single_target_use(spec, target.files[0].size.0, align),
        (None, TargetKind::Remote) => Err("raw I/O needs a local directory, file or block device, not a URL".into()),
    }
}

fn shares_one_data_set(usage: &FileUse, rw: RwMode, sharing: Sharing) -> bool {
    rw.is_random() && !usage.own_files && sharing == Sharing::Split && usage.increment.is_none()
}

/// The percentage of operations at random offsets (vdbench's seekpct); random modes only.
fn random_percent(spec: &PhaseSpec, rw: RwMode) -> Result<u8, String> {
    match spec.percentage_random {
        Some(p) if p > 100 => Err(format!("percentage-random {p} is above 100")),
        Some(p) if !rw.is_random() => {
            Err(format!("percentage-random {p} applies to random modes (randread, randwrite, randrw): rw is {rw}"))
        }
        Some(p) => Ok(p),
        None => Ok(100),
    }
}

fn file_service(spec: &PhaseSpec, rw: RwMode) -> WorkloadFileService {
    match spec.fio.file_service {
        // Strided zones are regions of one file, walked in order.
        _ if spec.fio.strided.is_some() => WorkloadFileService::Sequential,
        Some(FileService::Sequential) => WorkloadFileService::Sequential,
        Some(FileService::RoundRobin) => WorkloadFileService::RoundRobin,
        Some(FileService::Random) => WorkloadFileService::Random,
        None if rw.is_random() => WorkloadFileService::Random,
        None => WorkloadFileService::Sequential,
    }
}

/// Offsets are multiples of `align` (the direct-I/O alignment) or of a larger `align` the user asked for. Only
/// operations that are all at random offsets may be smaller than that (fio's blockalign=4k with 512-byte
/// blocks): a sequential run would continue at an offset that is not a multiple.
fn offset_align(spec: &PhaseSpec, rw: RwMode, random_percent: u8, sizes: &Sizes) -> Result<u32, String> {
    let (align, smallest) = (sizes.align, sizes.smallest);
    let all_random = rw.is_random() && random_percent == 100 && spec.fio.random_every.unwrap_or(1) <= 1;
    let Some(asked) = spec.align else { return Ok(align) };
    let asked = u32::try_from(asked.0).unwrap_or(u32::MAX);
    if !asked.is_multiple_of(align) && !align.is_multiple_of(asked)
        || !all_random && !smallest.is_multiple_of(asked.max(align))
    {
        return Err(format!(
            "align {} must divide the smallest block size ({}) and be a multiple or divisor of {}: use the block \
             size itself",
            Bytes(u64::from(asked)),
            Bytes(u64::from(smallest)),
            Bytes(u64::from(align))
        ));
    }
    Ok(asked.max(align))
}

/// What a raw phase has worked out before its workers are cut: `template` is every worker's workload but for
/// its regions and seed.
struct Shape {
    engine: EngineKind,
    iodepth: u32,
    direct: DirectMode,
    sizes: Sizes,
    layout: Layout,
    template: WorkloadConfig,
}

/// Each worker's workload and its bound. --io-size counts whole operations of the smallest block size, shared
/// as evenly as whole operations allow.
fn workers(index: usize, spec: &PhaseSpec, jobs: u32, bounds: Bounds, shape: &mut Shape) -> Vec<WorkerPlan> {
    let (io_size, by_direction) = bounds;
    let unit = u64::from(shape.sizes.smallest);
    let (data_set, shared_random) = (shape.layout.data_set, shape.layout.shared_random);
    std::mem::take(&mut shape.layout.worker_regions)
        .into_iter()
        .enumerate()
        .map(|(w, regions)| {
            let slice: u64 = regions.iter().map(|r| r.len).sum();
            let io_bytes = match (io_size, spec.runtime) {
                (Some(total), _) => Some(share(total.0 / unit, jobs, w) * unit),
                // Random workers that share the data set do one data set's worth of I/O between them; workers
                // with files (or a whole data set) of their own each do their own share, as fio's clones do.
                (None, None) if shared_random => Some(share(data_set.0 / unit, jobs, w) * unit),
                (None, None) => Some(slice),
                (None, Some(_)) => None,
            };
            let seed = worker_seed(shape.template.seed, index, w);
            let workload = WorkloadConfig { regions, seed, ..shape.template.clone() };
            let split = |total: Option<u64>| total.map(|t| share(t / unit, jobs, w) * unit);
            let io_by_direction =
                DirectionBytes { read: split(by_direction.read), written: split(by_direction.written) };
            WorkerPlan { workload, io_bytes, io_ops: spec.fio.number_ios, io_by_direction, mixed: None }
        })
        .collect()
}

/// A worker's bounds: bytes of I/O in all, and bytes read and written.
type Bounds = (Option<Bytes>, DirectionBytes);

/// vdbench's maxdataread and maxdatawritten: bytes, or passes over the data set, in whole operations of the
/// smallest block size.
pub(super) fn by_direction(spec: &PhaseSpec, data_set: Bytes, unit: u64) -> DirectionBytes {
    let bytes = |amount: Option<IoAmount>| amount.map(|a| a.bytes_for(data_set).0 / unit * unit);
    DirectionBytes { read: bytes(spec.vdbench.io_read), written: bytes(spec.vdbench.io_written) }
}

/// The phase plan: the worked-out shape, the workers, and the settings taken as the spec gives them.
fn assemble(
    index: usize,
    spec: &PhaseSpec,
    rw: RwMode,
    mut shape: Shape,
    target: &TargetPlan,
) -> Result<(String, RawPlan), String> {
    let (jobs, iodepth, engine) = (spec.jobs.unwrap_or(defaults::JOBS), shape.iodepth, shape.engine);
    let unit = u64::from(shape.sizes.smallest);
    // vdbench's maxdata below 100 is passes over the data set.
    let passes = spec.io_passes.map(|p| Bytes((p * shape.layout.data_set.0 as f64) as u64));
    let io_size = spec.io_size.or(passes).map(|b| Bytes(b.0 / unit * unit));
    let io_by_direction = by_direction(spec, shape.layout.data_set, unit);
    let workers = workers(index, spec, jobs, (io_size, io_by_direction), &mut shape);
    let Shape { direct, sizes, layout, template, .. } = shape;
    let read_percent = template.read_percent;
    // The null engine reads nothing, so there is nothing to lay out for it.
    let needs_data =
        target.kind == TargetKind::Directory && (read_percent > 0 || rw.is_random()) && engine != EngineKind::Null;
    let name = spec.name.clone().unwrap_or_else(|| default_name(spec, &sizes.bs_spec, iodepth, jobs));
    let writes = sizes.write_block_sizes.as_ref().unwrap_or(&sizes.block_sizes);
    let data = super::data::data_shape(spec, layout.data_set, writes)?;
    let raw = RawPlan {
        rw,
        read_percent,
        access: template.access,
        pacing: pacing(spec, &sizes.block_sizes),
        block_sizes: sizes.block_sizes,
        write_block_sizes: sizes.write_block_sizes,
        bs_label: match &spec.bs_write {
            Some(writes) if rw.is_mixed() => format!("{},{writes}", sizes.bs_spec),
            _ => sizes.bs_spec.to_string(),
        },
        engine,
        iodepth,
        iodepth_batch: spec.iodepth_batch.unwrap_or(defaults::IODEPTH_BATCH).min(iodepth),
        jobs,
        direct,
        align: sizes.align,
        data_set: layout.data_set,
        files: layout.files,
        io_size,
        io_by_direction,
        needs_data,
        data,
        workers,
        per_worker_results: jobs > 1 && spec.fio.info.as_ref().is_some_and(|f| !f.group_reporting),
        ..spec_settings(index, spec)?
    };
    Ok((name, raw))
}

/// fio's thinktime: a pause after every `thinktime_blocks` operations (1 when not given); none for a zero pause.
fn thinktime(spec: &PhaseSpec) -> Option<Thinktime> {
    let every = spec.fio.thinktime_blocks.unwrap_or(1).max(1);
    spec.fio.thinktime.filter(|t| !t.is_zero()).map(|pause| Thinktime { pause, every })
}

/// The raw phase's settings that are the spec's own, with their defaults; the caller fills in what it worked out
/// (the shape, the files and the workers).
pub(super) fn spec_settings(index: usize, spec: &PhaseSpec) -> Result<RawPlan, String> {
    Ok(RawPlan {
        fsync_every: spec.fsync_every,
        fdatasync_every: spec.fio.fdatasync_every,
        sync_writes: spec.sync_writes.unwrap_or(false),
        end_fsync: spec.end_fsync.unwrap_or(false),
        invalidate: spec.invalidate.unwrap_or(true),
        pre_read: spec.pre_read.unwrap_or(false),
        access_hint: spec.fio.access_hint.unwrap_or(true),
        strided: spec.fio.strided,
        start_delay: spec.start_delay.unwrap_or(Duration::ZERO),
        thinktime: thinktime(spec),
        rate_floor: (spec.fio.rate_min.is_some() || spec.fio.rate_min_iops.is_some()).then(|| RateFloor {
            bytes_per_sec: spec.fio.rate_min.map(|r| r.bytes_per_sec()),
            ops_per_sec: spec.fio.rate_min_iops.map(|r| r as f64),
        }),
        curve: super::CurvePlan {
            rate_percent_of_max: spec.vdbench.rate_percent_of_max,
            curve_stop_latency: spec.vdbench.curve_stop_latency,
        },
        concurrent: spec.concurrent.unwrap_or(false) && index > 0,
        percentiles: percentiles(spec)?,
        logs: FioLogs {
            bw: spec.bw_log.clone(),
            iops: spec.iops_log.clone(),
            lat: spec.lat_log.clone(),
            hist: spec.hist_log.clone(),
            hist_every: spec.log_hist_msec,
            hist_coarseness: spec.log_hist_coarseness.unwrap_or(0),
        },
        rw: RwMode::Read,
        read_percent: 100,
        access: Access::Sequential,
        block_sizes: BlockSizes::Fixed { size: 4096 },
        write_block_sizes: None,
        bs_label: String::new(),
        engine: EngineKind::Sync,
        iodepth: 1,
        iodepth_batch: 1,
        jobs: 1,
        direct: DirectMode::Off,
        align: 1,
        spread: 1,
        data_set: Bytes(0),
        files: Vec::new(),
        io_size: None,
        io_by_direction: DirectionBytes::default(),
        pacing: None,
        needs_data: false,
        data: None,
        workers: Vec::new(),
        per_worker_results: false,
        parts: Vec::new(),
        skew_limit_pct: spec.vdbench.skew_limit,
        steady_state: None,
        read_through: None,
    })
}
