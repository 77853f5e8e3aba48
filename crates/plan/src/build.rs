//! Building a `Plan` from a `JobSpec` and the facts: the checks of the job as a whole, the target and its file
//! table, each phase by the planner of its kind (`raw`, `mix`, `fileset`, `streams`), and the checks across
//! phases (free space, curves, resources, the verify map). It must not plan a phase itself.

use super::defaults;
use super::facts::Facts;
use super::streams::plan_streams_phases;
use super::target::{default_shared_files, plan_target};
use super::{PhaseKind, PhasePlan, Plan, PlanError, RawPlan, TargetKind, TargetPlan};
use crate::spec::{JobSpec, MAX_PERCENT_OF_MAX, SpecKind, SpecOrigin};

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
    /// Under mpirun, this process's rank: the free space it needs is what its own parts and workloads write
    /// (vdbench's hds: another hd's sds stay sparse here, and its trees are another rank's to make).
    pub rank: Option<u32>,
    /// Under mpirun, how many ranks the run has (a tree shared between ranks gives each its every n-th file).
    pub ranks: u32,
    /// `--iodepth` was given: it overrides a job file's depth, and notices about the depth name the flag.
    pub depth_flag: bool,
    /// What to do with the library of titles kept between runs (`--fresh-library`, `--remove-library`).
    pub library: super::LibraryChoice,
}

pub fn build_plan(job: &JobSpec, facts: &Facts, options: &RunOptions) -> Result<Plan, PlanError> {
    job.check().map_err(PlanError)?;
    check_phase_kinds(job)?;
    super::streams::check_stream_requests(job, facts)?;
    let mut notices = job.notices.clone();
    let job = &*super::fill::resolve_fill(job, facts, &mut notices)?;
    let mut target = plan_target(job, facts, options, &mut notices)?;
    match &facts.memory_backed {
        // A throttle on a memory-backed device (a loop device over a cached file, throttled to emulate a
        // drive) bounds its reads: figures at the limit are the throttle's, not memory's.
        Some(why) if !facts.throttles.is_empty() => notices.push(format!(
            "{why}; {}: figures that reach the throttle's limit describe the throttle, the rest memory rather \
             than storage, and all are marked cache-affected",
            facts.throttles.join("; ")
        )),
        Some(why) => {
            notices.push(format!("{why}: the figures describe memory, not storage, and are marked cache-affected"))
        }
        None => notices.extend(
            facts
                .throttles
                .iter()
                .map(|t| format!("{t}: figures that reach this limit describe the throttle, not the device")),
        ),
    }
    target.memory_backed.clone_from(&facts.memory_backed);
    let verify = super::verify::verify_plan(job, target.kind == TargetKind::Directory, &options.run_id)?;
    let depth_from = DepthFrom::of(&job.origin, options.depth_flag);
    let mut phases = plan_phases(job, facts, &mut target, (verify.map(|v| v.block), depth_from), &mut notices)?;
    super::data::number_global_sets(&mut phases);
    if let Some(rank) = options.rank {
        super::fileset_share::rank_trees(&mut phases, rank, options.ranks)?;
    }
    super::fileset::check_space(&phases, facts, options.rank, &mut notices)?;
    check_curves(&phases)?;
    super::resources::check_resources(&phases, &facts.limits)?;
    if let Some(v) = &verify {
        super::verify::check_map_memory(v, &target, &phases, &facts.limits)?;
        // A verified file-set run needs a work directory of its own for the manifest a kept run leaves, and a
        // journaled run for its journal.
        if target.work_dir.is_none()
            && (v.journal.is_some() || phases.iter().any(|p| matches!(p.kind, PhaseKind::FileSet(_))))
        {
            target.work_dir = Some(target.path.join(".streamcap").join(&options.run_id));
        }
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

/// Refuses what no phase planner can take: raw phases (or parts) without rw.
fn check_phase_kinds(job: &JobSpec) -> Result<(), PlanError> {
    for (i, phase) in job.phases.iter().enumerate() {
        if phase.units().iter().any(|u| u.rw.is_none()) && phase.fileset().is_none() && phase.streams().is_none() {
            let whose = if phase.parts.is_some() { "a part of " } else { "" };
            return Err(PlanError(format!(
                "{whose}phase {} has no rw: say what it does, e.g. rw = \"randread\" (read, write, randread, \
                 randwrite, readwrite, randrw)",
                i + 1
            )));
        }
    }
    Ok(())
}

/// Every phase, each by the planner of its kind (a stream phase may plan estimate phases before itself).
fn plan_phases(
    job: &JobSpec,
    facts: &Facts,
    target: &mut TargetPlan,
    (verify_block, depth_from): (Option<u32>, DepthFrom),
    notices: &mut Vec<String>,
) -> Result<Vec<PhasePlan>, PlanError> {
    // Worked out once for the whole job, so planning stays linear in the number of phases (a job of 200,000
    // phases used to take minutes because every phase recounted the shared files).
    let context = JobContext { depth_from, ..JobContext::new(job, target) };
    // Sized once: growing by doubling held up to twice the plans of a long job.
    let mut phases: Vec<PhasePlan> = Vec::with_capacity(job.phases.len());
    let mut estimates = Vec::new();
    // The nearest earlier file-set phase at max rate, which a percentage-of-max rate refers to (by plan index).
    let mut last_max = None;
    for (i, spec) in job.phases.iter().enumerate() {
        // The kind the reader said: each has its planner.
        match &spec.kind {
            Some(SpecKind::FileSet(fileset)) => {
                let phase = super::fileset::plan_fileset_phase(i, (spec, fileset), facts, last_max, notices)?;
                if phase.fileset().is_some_and(|f| f.rate == super::FileRate::Max && !f.workloads.is_empty()) {
                    last_max = Some(phases.len());
                }
                phases.push(phase);
            }
            Some(SpecKind::Streams(streams)) => {
                let next = phases.len();
                let phase = (spec, &**streams);
                phases.extend(plan_streams_phases(job, i, phase, target, facts, notices, next, &mut estimates)?);
            }
            None if spec.parts.is_some() => {
                phases.push(super::mix::plan_parts_phase(&context, i, spec, target, facts, verify_block, notices)?);
            }
            None => phases.push(super::raw::plan_raw_phase(&context, i, spec, target, facts, verify_block, notices)?),
        }
        if let Some(last) = phases.last_mut().filter(|_| spec.steady_state.is_some()) {
            let interval = job.interval.unwrap_or(defaults::INTERVAL);
            // Refused for a file-set or stream phase, which has no rate to judge; a raw phase ends at it.
            let steady = super::steady::steady_config(spec, &last.name, interval, last.runtime, notices)?;
            if let PhaseKind::Raw(raw) = &mut last.kind {
                raw.steady_state = steady;
            }
        }
    }
    Ok(phases)
}

/// What every phase of a job shares: the number of shared `data.N` files and the file table by name.
pub(super) struct JobContext {
    pub(super) default_files: u32,
    pub(super) by_name: std::collections::HashMap<std::ffi::OsString, u32>,
    /// The devices the phases name as their own, in the order of the file table (`devices::job_devices`).
    pub(super) devices: Vec<std::path::PathBuf>,
    /// Where the phases' queue depth was said, for a notice that lowers it.
    pub(super) depth_from: DepthFrom,
}

/// Where a phase's queue depth was said: notices that change it name that place.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum DepthFrom {
    /// `--iodepth`, or the default.
    Flag,
    /// A job file's own option (fio's `iodepth=`, TOML's `iodepth`, vdbench's threads=).
    JobFile(SpecOrigin),
    /// streamcap chose it (a stream phase's estimate reads).
    Planner,
}

impl DepthFrom {
    pub(super) fn of(origin: &SpecOrigin, flag: bool) -> DepthFrom {
        match origin {
            _ if flag => DepthFrom::Flag,
            SpecOrigin::Default | SpecOrigin::Flags => DepthFrom::Flag,
            file => DepthFrom::JobFile(file.clone()),
        }
    }

    /// The depth `depth` as said where it was said ("--iodepth 16", "iodepth=16 in job 'j' of a.fio").
    pub(super) fn words(&self, depth: u32) -> String {
        let name =
            |p: &std::path::Path| p.file_name().map_or_else(|| p.display().to_string(), |n| n.display().to_string());
        match self {
            DepthFrom::Flag => format!("--iodepth {depth}"),
            DepthFrom::JobFile(SpecOrigin::Fio { path }) => format!("iodepth={depth} in {}", name(path)),
            DepthFrom::JobFile(SpecOrigin::Toml { path }) => format!("iodepth = {depth} in {}", name(path)),
            DepthFrom::JobFile(SpecOrigin::Vdbench { path, .. }) => {
                format!("a queue depth of {depth} (threads=) in {}", name(path))
            }
            DepthFrom::JobFile(_) => format!("the job's iodepth {depth}"),
            DepthFrom::Planner => format!("its queue depth of {depth}"),
        }
    }
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
            devices: super::devices::job_devices(job),
            depth_from: DepthFrom::of(&job.origin, false),
        }
    }
}

/// A phase paced at a percentage of the maximum needs an earlier, unpaced phase to take the maximum from.
/// Curve phases (a percentage of the maximum rate) need an earlier unpaced phase; a concurrent one needs it in
/// an earlier stage. One pass, so that checking stays linear in the number of phases.
fn check_curves(phases: &[PhasePlan]) -> Result<(), PlanError> {
    let unpaced = |p: &RawPlan| p.pacing.is_none() && p.curve.rate_percent_of_max.is_none();
    // Whether an unpaced phase came before this one; and before (or at) the last phase that started a stage.
    let (mut any_before, mut any_before_stage) = (false, false);
    // Only raw phases have curves; a file-set phase's percentage of the maximum is its own (`FileRate`).
    for (name, phase) in phases.iter().filter_map(|p| Some((&p.name, p.raw()?))) {
        let seen = if phase.concurrent { any_before_stage } else { any_before };
        any_before |= unpaced(phase);
        if !phase.concurrent {
            any_before_stage = any_before;
        }
        let Some(percent) = phase.curve.rate_percent_of_max else { continue };
        if phase.pacing.is_some() {
            return Err(PlanError(format!(
                "{}: give either a rate or a percentage of the maximum rate, not both",
                name
            )));
        }
        // Above 100 asks for more than the maximum, as vdbench's curve allows (curve=(10-120,10)): the phase
        // then runs as fast as it goes, paced at a rate it cannot reach.
        if !(percent > 0.0 && percent <= MAX_PERCENT_OF_MAX) {
            return Err(PlanError(format!(
                "{}: the percentage of the maximum rate must be above 0 and at most {MAX_PERCENT_OF_MAX}",
                name
            )));
        }
        if !seen {
            return Err(PlanError(format!(
                "{}: a rate as a percentage of the maximum needs an earlier phase that runs unpaced to measure \
                 the maximum (vdbench's curve starts with iorate=max)",
                name
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
    use crate::spec::{BlockSizeSpec, EngineChoice, PhaseSpec, RwMode, SpecOrigin};
    use crate::units::Bytes;
    use std::path::PathBuf;

    fn facts() -> Facts {
        let target =
            TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(50)), dio_align: Some(512) };
        Facts { target, ..Facts::directory(None) }
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
        let phase = plan.phases[0].raw().unwrap();
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
        let phase = plan.phases[0].raw().unwrap();
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
        let plan = build_plan(&one_phase(spec.clone()), &facts(), &options()).unwrap();
        assert_eq!(plan.phases[0].raw().unwrap().iodepth, 1);
        assert!(plan.notices.iter().any(|n| n.contains("--iodepth 32")));
        // A job file's depth is named where it was said (the notice named --iodepth, which was never given),
        // unless --iodepth overrode it.
        let fio = JobSpec { origin: SpecOrigin::Fio { path: "/jobs/a.fio".into() }, ..one_phase(spec) };
        let plan = build_plan(&fio, &facts(), &options()).unwrap();
        let said = |plan: &Plan| plan.notices.iter().find(|n| n.contains("becomes 1")).cloned().unwrap();
        assert!(said(&plan).contains("so iodepth=32 in a.fio becomes 1"), "{}", said(&plan));
        let plan = build_plan(&fio, &facts(), &RunOptions { depth_flag: true, ..options() }).unwrap();
        assert!(said(&plan).contains("so --iodepth 32 becomes 1"), "{}", said(&plan));
    }

    #[test]
    fn missing_io_uring_falls_back_unless_asked_for() {
        let mut f = facts();
        f.io_uring = Err("disabled by sysctl".into());
        let spec = PhaseSpec { rw: Some(RwMode::RandRead), size: Some(Bytes::mib(64)), ..Default::default() };
        let plan = build_plan(&one_phase(spec.clone()), &f, &options()).unwrap();
        assert_eq!(plan.phases[0].raw().unwrap().engine, EngineKind::Sync);
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
        assert_eq!(plan.phases[0].raw().unwrap().align, 512);
        let mut silent = facts();
        silent.target =
            TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(50)), dio_align: None };
        let err = build_plan(&one_phase(small), &silent, &options()).unwrap_err();
        assert!(err.0.contains("multiple of 4 KiB"), "{err}");
    }

    /// Two hds' sds of 30 GiB each under mpirun: each rank fills only its own, so each needs 30 GiB of the 50
    /// GiB free (it was refused, counting both); a run of one process fills both and is refused.
    #[test]
    fn a_rank_needs_the_space_of_its_own_parts_only() {
        let part = |rank, file: &str| PhaseSpec {
            rank: Some(rank),
            file_names: Some(vec![file.into()]),
            size: Some(Bytes::gib(30)),
            ..Default::default()
        };
        let phase = PhaseSpec {
            rw: Some(RwMode::RandRead),
            parts: Some(vec![part(0, "sd1"), part(1, "sd2")]),
            ..Default::default()
        };
        let on = |rank| build_plan(&one_phase(phase.clone()), &facts(), &RunOptions { rank, ..options() });
        assert!(on(Some(0)).is_ok() && on(Some(1)).is_ok());
        assert!(on(None).unwrap_err().0.contains("not enough free space"));
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
        assert!(!plan.phases[0].raw().unwrap().needs_data, "nothing to read, nothing to lay out");
        let io = PhaseSpec { engine: None, ..spec };
        assert!(build_plan(&one_phase(io), &facts(), &options()).unwrap_err().0.contains("not enough free space"));
    }

    #[test]
    fn offset_modifiers_and_zones_are_checked_against_the_mode_and_the_data() {
        use crate::spec::{ByteStep, DistributionSpec, FioExtras, VdbenchExtras, ZoneExtent, ZoneSpec};
        let seq = PhaseSpec { rw: Some(RwMode::Read), size: Some(Bytes::mib(64)), ..Default::default() };
        let back =
            PhaseSpec { fio: FioExtras { offset_step: Some(ByteStep(-8192)), ..Default::default() }, ..seq.clone() };
        let plan = build_plan(&one_phase(back), &facts(), &options()).unwrap();
        assert_eq!(plan.phases[0].raw().unwrap().workers[0].workload.offsets.step, -8192);
        let odd =
            PhaseSpec { fio: FioExtras { offset_step: Some(ByteStep(100)), ..Default::default() }, ..seq.clone() };
        assert!(build_plan(&one_phase(odd), &facts(), &options()).unwrap_err().0.contains("multiple of"));
        let every = PhaseSpec { fio: FioExtras { random_every: Some(8), ..Default::default() }, ..seq.clone() };
        assert!(build_plan(&one_phase(every), &facts(), &options()).unwrap_err().0.contains("random modes"));
        let zone = |bytes| ZoneSpec { access_percent: 50.0, size: ZoneExtent::Bytes(Bytes::mib(bytes)) };
        let past = PhaseSpec {
            rw: Some(RwMode::RandRead),
            distribution: Some(DistributionSpec::Zoned(vec![zone(32), zone(64)])),
            ..seq.clone()
        };
        assert!(build_plan(&one_phase(past), &facts(), &options()).unwrap_err().0.contains("past the end"));
        // vdbench's stride: random modes only, in place of the random offsets (so not beside a distribution);
        // its hot band needs a band of at least 1,000,000 bytes.
        let stride = Some(crate::spec::StrideSpec { min: Bytes::kib(8), max: Bytes::kib(64) });
        let strided = PhaseSpec { vdbench: VdbenchExtras { stride, ..Default::default() }, ..seq.clone() };
        assert!(build_plan(&one_phase(strided.clone()), &facts(), &options()).unwrap_err().0.contains("random modes"));
        let random = PhaseSpec { rw: Some(RwMode::RandRead), ..strided };
        let plan = build_plan(&one_phase(random.clone()), &facts(), &options()).unwrap();
        assert_eq!(
            plan.phases[0].raw().unwrap().workers[0].workload.offsets.stride.map(|s| (s.min, s.max)),
            Some((8192, 65536))
        );
        let both = PhaseSpec { distribution: Some(DistributionSpec::Hotband), ..random };
        assert!(build_plan(&one_phase(both), &facts(), &options()).unwrap_err().0.contains("one or the other"));
        let small = PhaseSpec {
            rw: Some(RwMode::RandRead),
            size: Some(Bytes::kib(512)),
            distribution: Some(DistributionSpec::Hotband),
            ..seq
        };
        assert!(build_plan(&one_phase(small), &facts(), &options()).unwrap_err().0.contains("1,000,000 bytes"));
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
        assert_eq!(plan.phases[0].raw().unwrap().pacing.unwrap().ops_per_sec, 8.0);
    }
}
