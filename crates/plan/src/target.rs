//! The target half of planning: which files the run uses, how large, and whether writing to them is safe.
//!
//! The safety rules live here (DESIGN.md, "data of users is sacred"):
//! - in a directory, streamcap writes only files it creates in its own work directory `TARGET/.streamcap/<run>`;
//! - an existing regular file is only ever read;
//! - a block device is written only with `--allow-device-writes`, and only when it is not mounted, not part of a
//!   pool or holder, and carries no filesystem or partition signature (`--force` overrides the signature check
//!   and nothing else).

use std::path::Path;

use super::build::RunOptions;
use super::defaults;
use super::facts::{Facts, TargetFacts};
use super::files::{directory_use, file_table};
use super::kept_library::choose;
use super::library::{Generated, generated};
use super::streams::most_viewers;
use super::streams_media::own_media_files;
use super::{FilePlan, KeptLibrary, LibraryChoice, LibraryKeeping, LibraryUse, PlanError, TargetKind, TargetPlan};
use crate::spec::{EngineChoice, JobSpec};
use crate::units::{Bytes, GIB};

/// Decides the data files: count and size per file (the raw phases' data files and the stream phases' own
/// media, in a directory target).
pub(super) fn plan_target(
    job: &JobSpec,
    all_facts: &Facts,
    options: &RunOptions,
    notices: &mut Vec<String>,
) -> Result<TargetPlan, PlanError> {
    if job.phases.iter().flat_map(|p| p.units()).any(|u| u.fio.devices.is_some()) {
        return super::devices::devices_target(job, all_facts, options);
    }
    let (allow_device_writes, force) = (options.allow_device_writes, options.force);
    let any_writes = job.writes();
    let local_only = job.phases.iter().any(|p| p.streams().is_none());
    let streams = job.phases.iter().any(|p| p.streams().is_some());
    match &all_facts.target {
        TargetFacts::Remote { text, .. } if local_only => Err(PlanError(format!(
            "{text} is a URL: only stream phases read remote media; raw I/O and file sets need a local directory, \
             file or block device"
        ))),
        TargetFacts::Remote { text, .. } => Ok(TargetPlan {
            kind: TargetKind::Remote,
            path: text.into(),
            work_dir: None,
            files: Vec::new(),
            writes_allowed: false,
            memory_backed: None,
            library: None,
        }),
        TargetFacts::File { .. } | TargetFacts::BlockDevice { .. } if streams => Err(PlanError(
            "stream phases read media under a directory (or from http:// URLs): give a directory as the target".into(),
        )),
        TargetFacts::Directory { path, free, .. } => {
            let kept = all_facts.kept_library.as_ref();
            directory_target(job, (path, *free, kept), options, notices)
        }
        TargetFacts::File { path, size } => {
            if any_writes {
                return Err(PlanError(format!(
                    "{} is an existing file, and streamcap never writes to files it did not create. To test \
                     writes, point TARGET at a directory (streamcap creates and removes its own files there); to \
                     test reads of this file, use a read mode (--rw read or randread)",
                    path.display()
                )));
            }
            Ok(single_file_target(TargetKind::File, path, *size, false))
        }
        TargetFacts::BlockDevice { path, size, .. } => {
            if let Some(asked) = largest_size(job).filter(|s| s > size) {
                return Err(PlanError(format!(
                    "--size {asked} is larger than the device {} ({size}): use a size of at most {size}",
                    path.display()
                )));
            }
            if any_writes {
                check_device_writable(&all_facts.target, allow_device_writes, force)?;
            }
            Ok(single_file_target(TargetKind::BlockDevice, path, *size, any_writes))
        }
    }
}

/// A directory target: the data files in the run's work directory `TARGET/.streamcap/<run>`, checked against
/// the free space, and the titles of a library kept there by an earlier run that this run reads.
fn directory_target(
    job: &JobSpec,
    (path, free, kept): (&Path, Option<Bytes>, Option<&KeptLibrary>),
    options: &RunOptions,
    notices: &mut Vec<String>,
) -> Result<TargetPlan, PlanError> {
    let mut table = directory_file_table(job, |_| true)?;
    // Workloads on the null engine never touch their files (created sparse), so they need no space; nor do
    // another rank's parts (vdbench's hds), whose files this rank creates but never fills.
    let mine = |unit: &crate::spec::PhaseSpec| unit.rank.is_none_or(|r| options.rank.is_none_or(|me| me == r));
    let mut stored = directory_file_table(job, |u| u.engine != Some(EngineChoice::Null) && mine(u))?;
    let other = Bytes(stored.values().fold(0u64, |sum, &size| sum.saturating_add(size)));
    let (written, keeping, free) = library_of(job, (path, free, kept), other, options, notices)?;
    for (name, size) in own_media_files(job, written.as_ref()) {
        for files in [&mut table, &mut stored] {
            let entry = files.entry(name.clone()).or_insert(0);
            *entry = (*entry).max(size);
        }
    }
    let needed = stored.values().try_fold(Bytes::ZERO, |sum, &size| sum.checked_add(Bytes(size))).ok_or_else(|| {
        PlanError(format!(
            "the data set ({} files) adds up to more than 16 EiB, the most any filesystem holds: use a smaller \
             --size",
            stored.len()
        ))
    })?;
    match free {
        Some(free) => check_free_space(path, needed, free)?,
        None => notices.push(format!(
            "the filesystem at {} reports no capacity, so streamcap cannot check that {needed} fits",
            path.display()
        )),
    }
    let work_dir = path.join(".streamcap").join(&options.run_id);
    let mut files: Vec<FilePlan> = table
        .into_iter()
        .map(|(name, size)| FilePlan { path: work_dir.join(name), size: Bytes(size), created: true })
        .collect();
    // A job of file sets (or of the user's own media, or of a kept library) creates no data files: no work
    // directory.
    let work_dir = (!files.is_empty()).then_some(work_dir);
    if let Some(reused) = keeping.as_ref().filter(|k| k.reused()) {
        let size = Bytes(reused.title_bytes);
        files.extend((0..reused.titles).map(|n| FilePlan { path: reused.title_path(n), size, created: false }));
    }
    Ok(TargetPlan {
        kind: TargetKind::Directory,
        path: path.to_path_buf(),
        work_dir,
        files,
        writes_allowed: true,
        memory_backed: None,
        library: keeping,
    })
}

/// The library of titles this run writes, if it writes one; what becomes of the kept library; and the free
/// space the data files may take.
type LibraryOfRun = (Option<Generated>, Option<LibraryKeeping>, Option<Bytes>);

/// The library of titles this run writes (if it writes one), what becomes of the kept library, and the free
/// space the data files may take: a kept library this run replaces is removed before the new one is written,
/// so its space counts as free. Under mpirun every rank writes a library of its own, in its own work directory.
fn library_of(
    job: &JobSpec,
    (path, free, kept): (&Path, Option<Bytes>, Option<&KeptLibrary>),
    other: Bytes,
    options: &RunOptions,
    notices: &mut Vec<String>,
) -> Result<LibraryOfRun, PlanError> {
    let kept = kept.filter(|_| options.rank.is_none());
    let choice = if options.rank.is_some() { LibraryChoice::default() } else { options.library };
    let sized = |free| generated(job, free, other, most_viewers);
    let Some(chosen) = choose(free, kept, choice, &path.join(".streamcap"), sized).map_err(PlanError)? else {
        return Ok((None, None, free));
    };
    notices.extend(chosen.notice);
    let keeping = chosen.keeping;
    let how = keeping.as_ref().map(|k| k.how);
    let replaced = kept.filter(|_| how == Some(LibraryUse::Write { replace: true })).map_or(0, KeptLibrary::bytes);
    let written = (!keeping.as_ref().is_some_and(LibraryKeeping::reused)).then_some(chosen.library);
    Ok((written, keeping, free.map(|f| Bytes(f.0.saturating_add(replaced)))))
}

/// The data files of a directory target: name → size, the largest any raw phase needs.
/// The data files of the job's raw phases, by name, with the largest size any unit (a phase, or a part of one)
/// that `counts` uses them at.
fn directory_file_table(
    job: &JobSpec,
    counts: impl Fn(&crate::spec::PhaseSpec) -> bool,
) -> Result<std::collections::BTreeMap<String, u64>, PlanError> {
    let default_files = default_shared_files(job);
    // A phase with parts uses what each part uses (each runs on one worker).
    let uses = job
        .phases
        .iter()
        .enumerate()
        .filter(|(_, p)| p.fileset().is_none() && p.streams().is_none())
        .flat_map(|(i, p)| p.units().into_iter().map(move |unit| (i, p, unit)))
        .filter(|(_, _, unit)| counts(unit))
        .map(|(i, p, unit)| {
            // A part runs on one worker (its queue's).
            let unit = match p.parts {
                Some(_) => std::borrow::Cow::Owned(crate::spec::PhaseSpec { jobs: Some(1), ..unit.into_owned() }),
                None => unit,
            };
            let jobs = unit.jobs.unwrap_or(defaults::JOBS);
            directory_use(&unit, default_files, u64::from(defaults::BUFFERED_ALIGN))
                .map(|usage| (usage, jobs))
                .map_err(|e| PlanError(format!("{}: {e}", phase_label(p, i))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(file_table(&uses))
}

/// How many shared `data.N` files there are. A phase that does not say how many files it uses works on all of
/// them, so its data set is spread over all of them too.
pub(super) fn default_shared_files(job: &JobSpec) -> u32 {
    job.phases
        .iter()
        .filter(|p| p.fileset().is_none() && p.streams().is_none())
        .flat_map(|p| p.units())
        .filter(|p| p.file_names.is_none())
        .filter_map(|p| p.files)
        .max()
        .unwrap_or(defaults::FILES)
}

/// "phase 2 ('warm-up')" — how messages name a phase.
pub(super) fn phase_label(phase: &crate::spec::PhaseSpec, index: usize) -> String {
    match &phase.name {
        Some(name) => format!("phase {} ('{name}')", index + 1),
        None => format!("phase {}", index + 1),
    }
}

fn largest_size(job: &JobSpec) -> Option<Bytes> {
    job.phases.iter().flat_map(|p| p.units()).filter_map(|p| p.size).max()
}

fn single_file_target(kind: TargetKind, path: &Path, size: Bytes, writes_allowed: bool) -> TargetPlan {
    TargetPlan {
        kind,
        path: path.to_path_buf(),
        work_dir: None,
        files: vec![FilePlan { path: path.to_path_buf(), size, created: false }],
        writes_allowed,
        memory_backed: None,
        library: None,
    }
}

fn check_free_space(path: &Path, needed: Bytes, free: Bytes) -> Result<(), PlanError> {
    let reserve = defaults::FREE_SPACE_RESERVE;
    if needed.0.saturating_add(reserve.0) > free.0 {
        let suggestion = Bytes(free.0.saturating_sub(reserve.0) / GIB * GIB);
        let hint = if suggestion.0 > 0 {
            format!("use --size {suggestion} or less, or free some space")
        } else {
            "free some space or choose another target".to_string()
        };
        return Err(PlanError(format!(
            "not enough free space in {}: the data set needs {needed} plus {reserve} of headroom, but only {free} \
             is free; {hint}",
            path.display()
        )));
    }
    Ok(())
}

/// Refuses a write to a device that is mounted, in use, or under another name the bytes of something in use —
/// whatever the flags — or that holds a signature, unless forced.
pub(super) fn check_device_writable(facts: &TargetFacts, allowed: bool, force: bool) -> Result<(), PlanError> {
    let TargetFacts::BlockDevice { path, mounted_at, in_use_by, overlaps, signature, .. } = facts else {
        return Ok(());
    };
    let device = path.display();
    if !allowed {
        return Err(PlanError(format!(
            "the job writes to the block device {device}, which destroys its contents. If that is what you \
             want, add --allow-device-writes; to measure without writing, use a read mode (--rw read or randread)"
        )));
    }
    if !mounted_at.is_empty() {
        let places: Vec<String> = mounted_at.iter().map(|p| p.display().to_string()).collect();
        return Err(PlanError(format!(
            "{device} is mounted at {}: streamcap will not write to a mounted device. Unmount it first, or test \
             the filesystem by giving the mount point as TARGET",
            places.join(", ")
        )));
    }
    if !in_use_by.is_empty() {
        return Err(PlanError(format!(
            "{device} is in use by {}: streamcap will not write to a device that belongs to a pool, array or \
             swap. Remove it from there first",
            in_use_by.join(", ")
        )));
    }
    if !overlaps.is_empty() {
        return Err(PlanError(format!(
            "{device} holds {}: writing to it would change data that is in use under another name, so streamcap \
             will not, whatever the flags (--force overrides a signature, never this). Detach or unmount what \
             overlaps, or choose another device",
            overlaps.join("; and ")
        )));
    }
    if let Some(found) = signature
        && !force
    {
        return Err(PlanError(format!(
            "{device} holds a {found}; writing would destroy it. If the data there is expendable, add --force \
             (or wipe the signature with wipefs)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `plan_target` with made-up facts around `target` and the run options given.
    fn pt(
        job: &JobSpec,
        target: &TargetFacts,
        run_id: &str,
        allow_device_writes: bool,
        force: bool,
        notices: &mut Vec<String>,
    ) -> Result<TargetPlan, PlanError> {
        let facts = Facts { target: target.clone(), ram: Bytes::gib(8), ..Facts::directory(None) };
        let options = RunOptions { run_id: run_id.into(), allow_device_writes, force, ..Default::default() };
        super::plan_target(job, &facts, &options, notices)
    }

    use super::*;
    use crate::spec::{PhaseSpec, RwMode, SpecOrigin};
    use std::path::PathBuf;

    fn job(rw: RwMode, size: Option<Bytes>) -> JobSpec {
        JobSpec {
            origin: SpecOrigin::Flags,
            target: None,
            interval: None,
            phases: vec![PhaseSpec { rw: Some(rw), size, ..Default::default() }],
            notices: Vec::new(),
        }
    }

    fn device(signature: Option<&str>, mounted: bool) -> TargetFacts {
        TargetFacts::BlockDevice {
            path: PathBuf::from("/dev/loop9"),
            size: Bytes::gib(1),
            logical_block: 512,
            mounted_at: if mounted { vec![PathBuf::from("/mnt/x")] } else { vec![] },
            in_use_by: vec![],
            overlaps: vec![],
            signature: signature.map(str::to_string),
        }
    }

    #[test]
    fn oversized_data_set_is_refused_with_the_numbers() {
        let facts = TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(3)), dio_align: None };
        let err = pt(&job(RwMode::Read, Some(Bytes::gib(10))), &facts, "r", false, false, &mut vec![]).unwrap_err();
        assert!(err.0.contains("10 GiB") && err.0.contains("3 GiB") && err.0.contains("--size 2 GiB"), "{err}");
    }

    #[test]
    fn a_filesystem_without_capacity_accounting_is_not_refused_but_noted() {
        // ramfs and some FUSE filesystems report zero blocks: their free space is unknown, not zero.
        let facts = TargetFacts::Directory { path: PathBuf::from("/mnt/ram"), free: None, dio_align: None };
        let mut notices = Vec::new();
        assert!(pt(&job(RwMode::Read, Some(Bytes::gib(1))), &facts, "r", false, false, &mut notices).is_ok());
        assert!(notices[0].contains("cannot check"), "{notices:?}");
    }

    #[test]
    fn phases_without_a_file_count_spread_over_all_files() {
        // Regression: a phase without `files` counted as one file, which sized every file for the whole data set.
        let facts =
            TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(100)), dio_align: None };
        let mut spec = job(RwMode::Write, Some(Bytes::mib(256)));
        spec.phases[0].files = Some(4);
        spec.phases.push(PhaseSpec { rw: Some(RwMode::Read), size: Some(Bytes::mib(256)), ..Default::default() });
        let plan = pt(&spec, &facts, "r", false, false, &mut vec![]).unwrap();
        assert_eq!(plan.files.len(), 4);
        assert_eq!(plan.files[0].size, Bytes::mib(64));
    }

    #[test]
    fn device_writes_need_the_flag_a_blank_device_and_no_mount() {
        let write = job(RwMode::Write, None);
        let err = pt(&write, &device(None, false), "r", false, false, &mut vec![]).unwrap_err();
        assert!(err.0.contains("--allow-device-writes"));
        assert!(pt(&write, &device(None, false), "r", true, false, &mut vec![]).is_ok());
        let err = pt(&write, &device(Some("ext4 filesystem"), false), "r", true, false, &mut vec![]).unwrap_err();
        assert!(err.0.contains("ext4") && err.0.contains("--force"));
        assert!(pt(&write, &device(Some("ext4 filesystem"), false), "r", true, true, &mut vec![]).is_ok());
        // --force never overrides a mount.
        let err = pt(&write, &device(None, true), "r", true, true, &mut vec![]).unwrap_err();
        assert!(err.0.contains("mounted"));
        // Reading needs no flag at all.
        assert!(
            pt(&job(RwMode::RandRead, None), &device(Some("ext4 filesystem"), true), "r", false, false, &mut vec![])
                .is_ok()
        );
    }

    #[test]
    fn existing_files_are_read_only() {
        let facts = TargetFacts::File { path: PathBuf::from("/media/movie.mkv"), size: Bytes::gib(2) };
        assert!(pt(&job(RwMode::RandWrite, None), &facts, "r", true, true, &mut vec![]).is_err());
        let plan = pt(&job(RwMode::Read, None), &facts, "r", false, false, &mut vec![]).unwrap();
        assert_eq!(plan.files[0].size, Bytes::gib(2));
        assert!(!plan.files[0].created);
    }

    #[test]
    fn directory_files_live_in_the_work_directory() {
        let facts =
            TargetFacts::Directory { path: PathBuf::from("/srv"), free: Some(Bytes::gib(100)), dio_align: None };
        let mut spec = job(RwMode::Read, Some(Bytes::gib(1)));
        spec.phases[0].files = Some(4);
        let plan = pt(&spec, &facts, "run-1", false, false, &mut vec![]).unwrap();
        assert_eq!(plan.files.len(), 4);
        assert_eq!(plan.files[0].size, Bytes::mib(256));
        assert!(plan.files.iter().all(|f| f.path.starts_with("/srv/.streamcap/run-1") && f.created));
    }
}
