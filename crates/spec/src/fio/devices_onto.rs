//! A fio file's device names mapped onto a directory or a file rather than a block device (`run --job f.fio
//! --device /dev/sdb=/mnt/nas/dir`): the file written for /dev/sdb then tests a filesystem. Onto a directory,
//! each device name becomes a data file of its own name in streamcap's work directory there (`/dev/sdb` →
//! `sdb`), used as fio uses a regular file: the job's size spread over its files, clones sharing them; a job
//! without a size, which took the whole device, is refused with the fix (fio too needs a size for a new file),
//! unless it fills the filesystem (fill_device) or reads what an earlier job on the same names filled. Onto an
//! existing file, the job runs on that file, whole unless its size says less; like any existing file, it is
//! only read.
//!
//! streamcap runs a job file on one target, so every mapping that is not onto a block device must be onto the
//! same directory or file (checked once for the whole file, [`check_onto`]).
//!
//! Looks only at what kind of thing each mapped path is (as vdbench's luns do); must not open or read it.

use std::path::{Path, PathBuf};

use super::ini::Location;
use super::mapping::Job;
use super::options::{OptionError, Problems};
use crate::spec::{JobSpec, PhaseSpec};

/// What a path that a device name is mapped onto is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Onto {
    /// A block device, or anything that is neither a directory nor a regular file (the plan refuses it there,
    /// saying what it is).
    Device,
    Directory,
    File,
}

impl Onto {
    pub(super) fn of(path: &Path) -> Onto {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Onto::Directory,
            Ok(m) if m.is_file() => Onto::File,
            _ => Onto::Device,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Onto::Device => "a block device",
            Onto::Directory => "a directory",
            Onto::File => "a file",
        }
    }
}

/// The data file a device name becomes in a directory: the name after `/dev/`, each further `/` a `_`
/// (`/dev/sdb` → `sdb`, `/dev/disk/by-id/x` → `disk_by-id_x`).
pub(super) fn file_name_of(device: &Path) -> String {
    let text = device.to_string_lossy();
    let rest = text.strip_prefix("/dev/").unwrap_or(&text).trim_start_matches('/');
    rest.replace('/', "_")
}

/// What [`place_onto`] did with a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placed {
    /// Nothing: its (first) device maps onto a block device, and the caller runs it on the devices.
    OnDevices,
    /// Onto the one directory: each device a data file of its name there.
    InDirectory,
    /// Onto the one existing file, which it reads.
    OnFile,
    /// Nothing: its first device maps onto a directory or a file and another elsewhere, which [`check_onto`]
    /// refuses for the whole file.
    Mixed,
}

/// Places a job whose devices (`named`) map onto `real`, all of them one directory or one file, and says what it
/// did; a job on block devices is left to the caller, a mix to [`check_onto`].
pub(super) fn place_onto(
    spec: &mut JobSpec,
    job: &Job,
    (named, real): (&[PathBuf], &[PathBuf]),
    phase: &mut PhaseSpec,
    problems: &mut Problems,
) -> Placed {
    let Some(first) = real.first() else { return Placed::OnDevices };
    let onto = Onto::of(first);
    if onto == Onto::Device {
        // Devices (several of them, or with a directory or a file among them, which `check_onto` refuses).
        return Placed::OnDevices;
    }
    if real.iter().any(|r| r != first) {
        return Placed::Mixed;
    }
    phase.fio.devices = None;
    if spec.target.is_none() {
        spec.target = Some(first.clone());
    }
    let list: Vec<String> = named.iter().map(|d| d.display().to_string()).collect();
    if onto == Onto::File {
        let (job, list, file) = (&job.name, list.join(", "), first.display());
        spec.notices.push(format!("job '{job}' names {list}, mapped onto the file {file}: it reads that file"));
        return Placed::OnFile;
    }
    let names: Vec<String> = named.iter().map(|n| file_name_of(n)).collect();
    spec.notices.push(format!(
        "job '{}' names {}, mapped onto the directory {}: it runs on {} there, sized by the job",
        job.name,
        list.join(", "),
        first.display(),
        names.join(", ")
    ));
    phase.files = Some(names.len() as u32);
    phase.file_names = Some(names);
    let filled = spec.phases.iter().any(|p| p.fill_device == Some(true) && p.file_names == phase.file_names);
    if phase.size.is_none() && phase.size_percent.is_none() && phase.fill_device != Some(true) && !filled {
        problems.push(OptionError {
            at: job.at.clone(),
            message: format!(
                "job '{}' gives no size and names {}, which --device maps onto the directory {}: there it runs on \
                 a file of its own, and fio sizes a file by the job's size (on the device it used the whole \
                 device); add size= to the job (e.g. size=8g), or fill_device=1 to fill the filesystem",
                job.name,
                list.join(", "),
                first.display()
            ),
        });
    }
    Placed::InDirectory
}

/// Every mapping that is not onto a block device is onto the one directory or file of the run (streamcap runs a
/// job file on one target).
pub(super) fn check_onto(path: &Path, map: &[(String, PathBuf)], problems: &mut Problems) {
    let kinds: Vec<(&str, &PathBuf, Onto)> = map.iter().map(|(from, to)| (from.as_str(), to, Onto::of(to))).collect();
    let Some(&(from, to, onto)) = kinds.iter().find(|(_, _, onto)| *onto != Onto::Device) else { return };
    let Some(&(other_from, other_to, other)) = kinds.iter().find(|(_, t, _)| *t != to) else { return };
    let message = format!(
        "{from} is mapped onto {} ({}) and {other_from} onto {} ({}): a job file runs on block devices, or on \
         one directory (each device a file of its name in it), or on one file; map every device the file names \
         onto the same directory, or each onto a block device",
        to.display(),
        onto.word(),
        other_to.display(),
        other.word()
    );
    problems.push(OptionError { at: Location { file: path.to_path_buf(), line: 1 }, message });
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::ini::tests::FakeHost;
    use super::file_name_of;
    use crate::spec::fio::Targets;
    use crate::spec::{JobSpec, Sharing};
    use crate::units::Bytes;

    const TWO: &str = "[global]\nrw=randread\nbs=4k\ndirect=1\nsize=8m\n[a]\nfilename=/dev/sdb\nnumjobs=4\n\
                       [b]\nfilename=/dev/sdc\n[both]\nstonewall\nfilename=/dev/sdb:/dev/sdc\nsize=32m\n";

    fn read(text: &str, map: &[(&str, &Path)]) -> Result<JobSpec, String> {
        let devices: Vec<(String, PathBuf)> = map.iter().map(|(a, b)| (a.to_string(), b.to_path_buf())).collect();
        let targets = Targets { given: None, devices: &devices, ordered: &[] };
        super::super::parse_fio_job_on(Path::new("/jobs/d.fio"), text, &FakeHost::default(), &targets)
            .map_err(|e| e.to_string())
    }

    /// `place_onto` says what it did (it returned a bare bool that meant "not on devices").
    #[test]
    fn placing_a_job_says_where_it_went() {
        use super::super::engines::EngineUse;
        use super::super::ini::Location;
        use super::super::mapping::Job;
        use super::{Placed, place_onto};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big");
        std::fs::write(&file, b"x").unwrap();
        let at = Location { file: "/jobs/d.fio".into(), line: 1 };
        let engine = EngineUse::Io(crate::spec::EngineChoice::Sync);
        let job = Job { name: "j".into(), at, options: Default::default(), engine, own: Vec::new() };
        let named = [PathBuf::from("/dev/sdb"), PathBuf::from("/dev/sdc")];
        let place = |real: [&Path; 2]| {
            let mut spec = JobSpec {
                origin: crate::spec::SpecOrigin::Default,
                target: None,
                interval: None,
                phases: Vec::new(),
                notices: Vec::new(),
            };
            let (mut phase, mut problems) = (Default::default(), Default::default());
            let real = real.map(Path::to_path_buf);
            let placed = place_onto(&mut spec, &job, (&named, &real), &mut phase, &mut problems);
            (placed, spec.target)
        };
        let (d, loop_dev) = (dir.path(), Path::new("/dev/loop-none"));
        assert_eq!(place([d, d]), (Placed::InDirectory, Some(d.to_path_buf())));
        assert_eq!(place([&file, &file]), (Placed::OnFile, Some(file.clone())));
        assert_eq!(place([loop_dev, loop_dev]), (Placed::OnDevices, None));
        assert_eq!(place([d, &file]), (Placed::Mixed, None));
    }

    #[test]
    fn device_names_become_file_names_in_a_directory() {
        assert_eq!(file_name_of(Path::new("/dev/sdb")), "sdb");
        assert_eq!(file_name_of(Path::new("/dev/disk/by-id/nvme-x")), "disk_by-id_nvme-x");
    }

    #[test]
    fn devices_mapped_onto_a_directory_run_on_files_of_their_names_sized_by_the_job() {
        let dir = tempfile::tempdir().unwrap();
        let job = read(TWO, &[("/dev/sdb", dir.path()), ("/dev/sdc", dir.path())]).unwrap();
        assert_eq!(job.target.as_deref(), Some(dir.path()));
        let names = |i: usize| job.phases[i].file_names.clone().unwrap();
        assert_eq!(
            (names(0), names(1), names(2)),
            (vec!["sdb".into()], vec!["sdc".into()], vec!["sdb".into(), "sdc".into()])
        );
        assert!(job.phases.iter().all(|p| p.fio.devices.is_none()));
        // fio's size is the job's, over its files; a job's clones share its file as they shared the device.
        assert_eq!((job.phases[0].size, job.phases[2].size), (Some(Bytes::mib(8)), Some(Bytes::mib(32))));
        assert_eq!((job.phases[0].jobs, job.phases[0].sharing), (Some(4), Some(Sharing::Whole)));
        let said = format!(
            "job 'both' names /dev/sdb, /dev/sdc, mapped onto the directory {}: it runs on sdb, sdc",
            dir.path().display()
        );
        assert!(job.notices.iter().any(|n| n.starts_with(&said)), "{:?}", job.notices);
    }

    #[test]
    fn a_job_without_a_size_on_a_directory_is_refused_unless_it_fills_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[w]\nrw=write\nbs=1m\nfilename=/dev/sdb\n";
        let err = read(text, &[("/dev/sdb", dir.path())]).unwrap_err();
        assert!(
            err.contains("job 'w' gives no size and names /dev/sdb, which --device maps onto the directory"),
            "{err}"
        );
        assert!(err.contains("add size= to the job"), "{err}");
        // fill_device fills the filesystem, and a later job on the same file reads what it filled.
        let text =
            "[w]\nrw=write\nbs=1m\nfill_device=1\nfilename=/dev/sdb\n[r]\nstonewall\nrw=read\nfilename=/dev/sdb\n";
        let job = read(text, &[("/dev/sdb", dir.path())]).unwrap();
        assert!(job.phases.iter().all(|p| p.fill_device == Some(true) && p.file_names == Some(vec!["sdb".into()])));
    }

    #[test]
    fn a_device_mapped_onto_a_file_runs_on_it_and_a_mix_of_targets_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big");
        std::fs::write(&file, vec![0u8; 8192]).unwrap();
        let text = "[r]\nrw=randread\nbs=4k\nfilename=/dev/sdb\n";
        let job = read(text, &[("/dev/sdb", &file)]).unwrap();
        assert_eq!(job.target.as_deref(), Some(file.as_path()));
        assert!(job.phases[0].fio.devices.is_none() && job.phases[0].file_names.is_none());
        let other = tempfile::tempdir().unwrap();
        let err = read(TWO, &[("/dev/sdb", dir.path()), ("/dev/sdc", other.path())]).unwrap_err();
        assert!(err.contains("/dev/sdb is mapped onto") && err.contains("(a directory) and /dev/sdc onto"), "{err}");
        assert!(err.contains("map every device the file names onto the same directory"), "{err}");
        let err = read(TWO, &[("/dev/sdb", dir.path()), ("/dev/sdc", Path::new("/dev/loop-none"))]).unwrap_err();
        assert!(err.contains("(a block device)"), "{err}");
    }
}
