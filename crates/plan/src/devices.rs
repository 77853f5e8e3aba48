//! A target of several block devices: the phases of a fio file whose jobs name their own devices (mapped with
//! `run --device`), each running on its own. The file table holds every device the phases name, in the order
//! they first name them; a phase's workers go over its devices (by its file service), as fio's job over
//! `filename=/dev/sdb:/dev/sdc` does.
//!
//! A phase's size is fio's: the whole job's, spread evenly over its devices (each gets size / devices); without
//! a size, each device is used whole (up to the smallest of the phase's). Writing a device needs the write rules
//! of a one-device target (`--allow-device-writes`, not mounted or in use, no signature unless `--force`),
//! checked for every device a writing phase names; a device only read needs nothing.

use std::path::{Path, PathBuf};

use super::build::RunOptions;
use super::facts::{Facts, TargetFacts};
use super::files::{FileUse, single_target_use};
use super::target::check_device_writable;
use super::{FilePlan, PlanError, TargetKind, TargetPlan};
use crate::spec::{JobSpec, PhaseSpec};

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
    Ok(TargetPlan { kind: TargetKind::BlockDevice, path, work_dir: None, files, writes_allowed, memory_backed: None })
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
    let per_device = spec.size.filter(|_| spec.fill_device != Some(true)).map(|s| crate::units::Bytes(s.0 / count));
    let spread = PhaseSpec { size: per_device, fill_device: None, ..spec.clone() };
    let mut usage = single_target_use(&spread, smallest, align)?;
    let names: Vec<String> = mine.iter().map(|d| index(d).to_string()).collect();
    for worker in &mut usage.names_per_worker {
        worker.clone_from(&names);
    }
    Ok(usage)
}
