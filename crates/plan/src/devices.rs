//! A target of several block devices: the phases of a fio file whose jobs name their own devices (mapped with
//! `run --device`), each running on its own. The file table holds every device the phases name, in the order
//! they first name them; a phase's workers go over its devices (by its file service), as fio's job over
//! `filename=/dev/sdb:/dev/sdc` does.
//!
//! A phase's size is fio's: the whole job's, spread evenly over its devices (each gets size / devices); without
//! a size (or with fill_device), each device is used whole, each to its own end. Writing a device needs the write rules
//! of a one-device target (`--allow-device-writes`, not mounted or in use, no signature unless `--force`),
//! checked for every device a writing phase names; a device only read needs nothing.

use std::path::{Path, PathBuf};

use super::build::RunOptions;
use super::concatenated::concatenated_use;
use super::facts::{Facts, TargetFacts};
use super::files::{FileUse, single_target_use};
use super::target::check_device_writable;
use super::{FilePlan, PlanError, TargetKind, TargetPlan};
use crate::spec::{JobSpec, PhaseSpec};
use crate::units::Bytes;

/// The devices the job's phases name as their own, each once, in the order they first name them; empty when
/// the phases run on the run's one target.
pub fn job_devices(job: &JobSpec) -> Vec<PathBuf> {
    let mut devices: Vec<PathBuf> = Vec::new();
    for device in job.phases.iter().flat_map(|p| p.units()).filter_map(|u| u.fio.devices.clone()).flatten() {
        if !devices.contains(&device) {
            devices.push(device);
        }
    }
    devices
}

/// The target of a job whose phases name their own devices: each device as `facts.devices` found it (in the
/// order of [`job_devices`]), checked for the writes the phases make.
pub(super) fn devices_target(job: &JobSpec, facts: &Facts, options: &RunOptions) -> Result<TargetPlan, PlanError> {
    let devices = job_devices(job);
    if let Some(i) = job.phases.iter().position(|p| p.units().iter().any(|u| u.fio.devices.is_none())) {
        return Err(PlanError(format!(
            "{} runs on no device of its own, and other phases do: with --device every phase runs on the devices \
             it names",
            super::target::phase_label(&job.phases[i], i)
        )));
    }
    if facts.devices.len() != devices.len() {
        return Err(PlanError(format!(
            "the facts of {} devices were gathered for {} named: a bug, please report it",
            facts.devices.len(),
            devices.len()
        )));
    }
    let mut files = Vec::with_capacity(devices.len());
    let mut writes_allowed = false;
    for (device, found) in devices.iter().zip(&facts.devices) {
        let TargetFacts::BlockDevice { path, size, .. } = found else {
            return Err(PlanError(format!(
                "{} is not a block device: --device maps the devices a fio file names onto block devices of this \
                 machine; give one (lsblk lists them)",
                device.display()
            )));
        };
        if written(job, device) {
            check_device_writable(found, options.allow_device_writes, options.force)?;
            writes_allowed = true;
        }
        files.push(FilePlan { path: path.clone(), size: *size, created: false });
    }
    let path = files.first().map(|f| f.path.clone()).unwrap_or_default();
    Ok(TargetPlan {
        kind: TargetKind::BlockDevice,
        path,
        work_dir: None,
        files,
        writes_allowed,
        memory_backed: None,
        library: None,
    })
}

/// Whether a phase that writes names `device`.
fn written(job: &JobSpec, device: &Path) -> bool {
    job.phases.iter().flat_map(|p| p.units()).any(|u| {
        let writes = u.rw.is_some_and(|rw| rw.read_percent(u.rdpct) < 100);
        writes && u.fio.devices.as_ref().is_some_and(|d| d.iter().any(|d| d == device))
    })
}

/// How a phase uses its devices: the job's size spread over them (or each whole, up to the smallest), every
/// worker on every device. `table` is the target's file table, in the order of `all` (the job's devices).
pub(super) fn devices_use(
    spec: &PhaseSpec,
    mine: &[PathBuf],
    all: &[PathBuf],
    table: &[FilePlan],
    align: u64,
) -> Result<FileUse, String> {
    let index = |d: &PathBuf| all.iter().position(|a| a == d).expect("the job's devices hold every phase's");
    let smallest = mine.iter().map(|d| table[index(d)].size.0).min().unwrap_or(0);
    let count = mine.len().max(1) as u64;
    let per_device = spec.size.filter(|_| spec.fill_device != Some(true)).map(|s| Bytes(s.0 / count));
    if let Some(per) = per_device.filter(|p| p.0 > smallest) {
        let most = Bytes(smallest.saturating_mul(count));
        return Err(format!(
            "the size {} is {per} on each of its {count} devices, more than the smallest holds ({}): use a size of \
             at most {most}",
            spec.size.unwrap_or_default(),
            Bytes(smallest)
        ));
    }
    let spread = PhaseSpec { size: per_device, fill_device: None, ..spec.clone() };
    let names: Vec<String> = mine.iter().map(|d| index(d).to_string()).collect();
    let sizes: Vec<Bytes> = mine.iter().map(|d| table[index(d)].size).collect();
    let placed = spread.size.is_some() || spread.size_percent.is_some() || spread.offset.is_some();
    if !placed && spread.fio.offset_increment.is_none() && sizes.iter().any(|s| s.0 != smallest) {
        // fio: "If this option is not specified, fio will use the full size of the given files or devices"; and
        // fill_device writes each to its end. Devices of different sizes are each used whole: laid end to end,
        // a worker's regions are the devices at their own sizes (issue 29: the larger was used only up to the
        // smallest's size).
        let jobs = spread.jobs.unwrap_or(super::defaults::JOBS);
        return concatenated_use(&spread, names, &sizes, jobs, align);
    }
    let mut usage = single_target_use(&spread, smallest, align)?;
    for worker in &mut usage.names_per_worker {
        worker.clone_from(&names);
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::plan::{Facts, RunOptions, TargetFacts, build_plan};
    use crate::spec::{JobSpec, PhaseSpec, RwMode, SpecOrigin};
    use crate::units::Bytes;

    fn device(name: &str, signature: Option<&str>) -> TargetFacts {
        TargetFacts::BlockDevice {
            path: PathBuf::from(name),
            size: Bytes::mib(64),
            logical_block: 512,
            mounted_at: vec![],
            in_use_by: vec![],
            overlaps: vec![],
            signature: signature.map(str::to_string),
        }
    }

    fn phase(rw: RwMode, size: u64, devices: &[&str]) -> PhaseSpec {
        let mut p = PhaseSpec { rw: Some(rw), size: Some(Bytes::mib(size)), ..Default::default() };
        p.fio.devices = Some(devices.iter().map(PathBuf::from).collect());
        p
    }

    fn plan(phases: Vec<PhaseSpec>, facts: Vec<TargetFacts>, allow: bool) -> Result<crate::plan::Plan, String> {
        let job = JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases, notices: vec![] };
        let facts = Facts { target: facts[0].clone(), devices: facts, ..Facts::directory(None) };
        let options = RunOptions { run_id: "r".into(), allow_device_writes: allow, ..Default::default() };
        build_plan(&job, &facts, &options).map_err(|e| e.0)
    }

    #[test]
    fn each_phase_runs_on_its_own_devices_and_a_phase_over_two_spreads_its_size() {
        let phases = vec![
            phase(RwMode::Read, 8, &["/dev/b"]),
            phase(RwMode::Read, 16, &["/dev/c"]),
            phase(RwMode::Read, 32, &["/dev/b", "/dev/c"]),
        ];
        let plan = plan(phases, vec![device("/dev/b", None), device("/dev/c", None)], false).unwrap();
        let paths: Vec<_> = plan.target.files.iter().map(|f| f.path.to_str().unwrap()).collect();
        assert_eq!(paths, ["/dev/b", "/dev/c"]);
        assert!(!plan.target.writes_allowed && plan.target.files.iter().all(|f| !f.created));
        let raw = |i: usize| plan.phases[i].raw().unwrap();
        assert_eq!((raw(0).files.clone(), raw(1).files.clone(), raw(2).files.clone()), (vec![0], vec![1], vec![0, 1]));
        assert_eq!((raw(0).data_set, raw(2).data_set), (Bytes::mib(8), Bytes::mib(32)));
        let regions = &raw(2).workers[0].workload.regions;
        assert_eq!(regions.iter().map(|r| (r.file, r.len)).collect::<Vec<_>>(), [(0, 16 << 20), (1, 16 << 20)]);
    }

    #[test]
    fn a_written_device_needs_consent_and_a_blank_device_one_only_read_does_not() {
        let phases = || vec![phase(RwMode::Write, 8, &["/dev/b"]), phase(RwMode::Read, 8, &["/dev/c"])];
        let facts = || vec![device("/dev/b", None), device("/dev/c", Some("ext4 filesystem"))];
        let err = plan(phases(), facts(), false).unwrap_err();
        assert!(err.contains("writes to the block device /dev/b") && err.contains("--allow-device-writes"), "{err}");
        // The device that holds a filesystem is only read: no --force needed.
        assert!(plan(phases(), facts(), true).unwrap().target.writes_allowed);
        let facts = vec![device("/dev/b", Some("ext4 filesystem")), device("/dev/c", None)];
        assert!(plan(phases(), facts, true).unwrap_err().contains("/dev/b holds a ext4 filesystem"));
        let file = TargetFacts::File { path: PathBuf::from("/srv/f"), size: Bytes::mib(64) };
        let err = plan(phases(), vec![device("/dev/b", None), file], true).unwrap_err();
        assert!(err.contains("/dev/c is not a block device"), "{err}");
        // A phase too large for its devices is refused as on one device.
        let err = plan(vec![phase(RwMode::Read, 256, &["/dev/b", "/dev/c"])], facts_two(), false).unwrap_err();
        assert!(
            err.contains("256 MiB is 128 MiB on each of its 2 devices") && err.contains("at most 128 MiB"),
            "{err}"
        );
    }

    /// Issue 29: without a size, and with fill_device, fio uses each device whole; the larger of two was used only
    /// up to the smaller's size.
    #[test]
    fn without_a_size_or_filling_each_device_is_used_to_its_own_end() {
        let sized = |name: &str, mib: u64| match device(name, None) {
            TargetFacts::BlockDevice { path, logical_block, mounted_at, in_use_by, overlaps, signature, .. } => {
                let size = Bytes::mib(mib);
                TargetFacts::BlockDevice { path, size, logical_block, mounted_at, in_use_by, overlaps, signature }
            }
            _ => unreachable!(),
        };
        for fill in [None, Some(true)] {
            let mut p = phase(RwMode::Write, 0, &["/dev/b", "/dev/c"]);
            (p.size, p.fill_device) = (None, fill);
            let plan = plan(vec![p], vec![sized("/dev/b", 32), sized("/dev/c", 48)], true).unwrap();
            let raw = plan.phases[0].raw().unwrap();
            let regions = &raw.workers[0].workload.regions;
            let got: Vec<_> = regions.iter().map(|r| (r.file, r.start, r.len)).collect();
            assert_eq!(got, [(0, 0, 32 << 20), (1, 0, 48 << 20)], "fill {fill:?}");
            assert_eq!(raw.data_set, Bytes::mib(80));
        }
        // Of equal sizes, as before: each whole.
        let mut p = phase(RwMode::Read, 0, &["/dev/b", "/dev/c"]);
        p.size = None;
        let plan = plan(vec![p], facts_two(), false).unwrap();
        let regions = &plan.phases[0].raw().unwrap().workers[0].workload.regions;
        assert_eq!(regions.iter().map(|r| (r.file, r.len)).collect::<Vec<_>>(), [(0, 64 << 20), (1, 64 << 20)]);
    }

    fn facts_two() -> Vec<TargetFacts> {
        vec![device("/dev/b", None), device("/dev/c", None)]
    }
}
