//! Which target each job of a fio file runs on. fio runs every job on the files and devices it names; streamcap
//! runs a job file on one target, unless the command line maps the devices the file names onto this machine's
//! (`run --device /dev/sdb=/dev/loop3`, as `--anchor` does for vdbench): then every job runs on its own
//! device(s), and a job naming several (`filename=/dev/sdb:/dev/sdc`) goes over all of them.
//!
//! The rules, so that streamcap never touches a device the user did not name on its command line:
//! - with `--device`, every device a job names must be mapped (`--device /dev/sdb=/dev/sdb` uses it as named),
//!   every job must name a device, and every mapping must name a device of the file;
//! - with one TARGET, every job runs on it (a notice names what each job named);
//! - with neither, the jobs must name one target between them (a file naming one device runs on it, as before).
//!
//! A name mapped onto a directory or a file runs there instead (`devices_onto`).
//!
//! Must not: look at the devices (the run gathers their facts; writing needs `--allow-device-writes` there).

use std::path::{Path, PathBuf};

use super::devices_onto::{Placed, place_onto};
use super::ini::Location;
use super::mapping::Job;
use super::options::{OptionError, Problems};
use crate::spec::{JobSpec, PhaseSpec};

/// What the command line says about where a fio file's jobs run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Targets<'a> {
    /// `streamcap run TARGET`: every job runs on it.
    pub given: Option<&'a Path>,
    /// `--device NAME=DEVICE`: the devices the file names, each mapped onto one of this machine's.
    pub devices: &'a [(String, PathBuf)],
    /// Several TARGETs: the devices the file names, in the order its jobs first name them, map onto these.
    pub ordered: &'a [PathBuf],
}

/// Places one mapped job: on its own devices (mapped), on the TARGET given, or on the one target the file's
/// jobs name. `target` is what the job names (its directory, or its first device).
/// Every device the job names is added to `named_all` (for [`check_mappings`]).
pub(super) fn place_job(
    (spec, named_all): (&mut JobSpec, &mut Vec<PathBuf>),
    (job, target): (&Job, Option<PathBuf>),
    phase: &mut PhaseSpec,
    targets: &Targets,
    problems: &mut Problems,
) {
    let named = phase.fio.devices.take().unwrap_or_default();
    for device in &named {
        if !named_all.contains(device) {
            named_all.push(device.clone());
        }
    }
    if !targets.ordered.is_empty() {
        // Several TARGETs: the n-th device the file names is the n-th TARGET.
        if let Some(n) = named.iter().filter_map(|d| named_all.iter().position(|a| a == d)).max()
            && n >= targets.ordered.len()
        {
            return problems.push(OptionError {
                at: job.at.clone(),
                message: format!(
                    "job '{}' names {}, the file's device number {}, and {} TARGETs were given: give one TARGET per \
                     device, in the order the jobs first name them, or map them with --device NAME=DEVICE",
                    job.name,
                    named_all[n].display(),
                    n + 1,
                    targets.ordered.len()
                ),
            });
        }
        let by_order = named_all.iter().zip(targets.ordered);
        let map: Vec<(String, PathBuf)> = by_order.map(|(n, t)| (n.display().to_string(), t.clone())).collect();
        return map_devices(spec, job, &named, phase, &map, problems);
    }
    if !targets.devices.is_empty() {
        return map_devices(spec, job, &named, phase, targets.devices, problems);
    }
    if named.len() > 1 && targets.given.is_none() {
        let list: Vec<String> = named.iter().map(|d| d.display().to_string()).collect();
        let first = &list[0];
        return problems.push(OptionError {
            at: job.at.clone(),
            message: format!(
                "job '{}' runs over several devices ({}): map each onto a device of this machine with --device, \
                 e.g. --device {first}=/dev/… (--device {first}={first} uses it as named), or give one TARGET to \
                 run the job on",
                job.name,
                list.join(", ")
            ),
        });
    }
    add_target(spec, (job, target), targets.given, problems);
}

/// `--device` given: the job's devices, each mapped; a job without devices, or with one not mapped, is refused.
fn map_devices(
    spec: &mut JobSpec,
    job: &Job,
    named: &[PathBuf],
    phase: &mut PhaseSpec,
    map: &[(String, PathBuf)],
    problems: &mut Problems,
) {
    if named.is_empty() {
        return problems.push(OptionError {
            at: job.at.clone(),
            message: format!(
                "job '{}' names no device (filename=/dev/…), and --device (or several TARGETs) says every job \
                 runs on the devices it names: give the job a filename=/dev/… that is mapped, or give one TARGET",
                job.name
            ),
        });
    }
    let mut real = Vec::with_capacity(named.len());
    for name in named {
        match map.iter().find(|(from, _)| Path::new(from) == name) {
            Some((_, to)) => real.push(to.clone()),
            None => problems.push(OptionError {
                at: job.at.clone(),
                message: format!(
                    "job '{}' names {1}, which no --device maps: add --device {1}=/dev/… (the device of this \
                     machine to run it on; --device {1}={1} uses it as named)",
                    job.name,
                    name.display()
                ),
            }),
        }
    }
    if real.len() == named.len() && place_onto(spec, job, (named, &real), phase, problems) == Placed::OnDevices {
        if spec.target.is_none() {
            spec.target = real.first().cloned();
        }
        phase.fio.devices = Some(real);
    }
}

/// With `--device`: each mapping must name a device of the file, once (a typo would otherwise leave a job on
/// the device it names, or refuse it for a reason that hides the typo).
pub(super) fn check_mappings(path: &Path, named: &[PathBuf], map: &[(String, PathBuf)], problems: &mut Problems) {
    let at = Location { file: path.to_path_buf(), line: 1 };
    for (i, (from, to)) in map.iter().enumerate() {
        let message = if map[..i].iter().any(|(earlier, _)| earlier == from) {
            format!("--device maps {from} twice: give each device of the file one --device")
        } else if !named.iter().any(|n| Path::new(from) == n) {
            let list: Vec<String> = named.iter().map(|d| d.display().to_string()).collect();
            let names = if list.is_empty() { "none".to_string() } else { list.join(", ") };
            format!(
                "--device {from}={}: the file's jobs name no device {from} (they name {names}); map the names the \
                 file uses",
                to.display()
            )
        } else {
            continue;
        };
        problems.push(OptionError { at: at.clone(), message });
    }
}

/// With several TARGETs: as many as the devices the file names (the jobs' own refusals name the ones left over).
pub(super) fn check_ordered(path: &Path, named: &[PathBuf], ordered: &[PathBuf], problems: &mut Problems) {
    if ordered.len() > named.len() {
        let list: Vec<String> = named.iter().map(|d| d.display().to_string()).collect();
        problems.push(OptionError {
            at: Location { file: path.to_path_buf(), line: 1 },
            message: format!(
                "{} TARGETs were given, and the file's jobs name {} device(s) ({}): give one TARGET per device, \
                 in the order the jobs first name them, or map them with --device NAME=DEVICE",
                ordered.len(),
                named.len(),
                if list.is_empty() { "none".to_string() } else { list.join(", ") }
            ),
        });
    }
}

/// All jobs of a file run against one target: the one its jobs name, or the one `given` on the command line,
/// onto which jobs naming different devices or files map (issue 29: a file naming four devices was refused
/// even with one TARGET given).
fn add_target(
    spec: &mut JobSpec,
    (job, target): (&Job, Option<PathBuf>),
    given: Option<&Path>,
    problems: &mut Problems,
) {
    let Some(target) = target else { return };
    match &spec.target {
        Some(existing) if *existing != target && given.is_some() => {
            let given = given.expect("matched").display();
            spec.notices.push(format!(
                "job '{}' names {} and an earlier job {}: fio runs each on its own; here every job runs on {given}, \
                 the target given",
                job.name,
                target.display(),
                existing.display()
            ));
        }
        Some(existing) if *existing != target => problems.push(OptionError {
            at: job.at.clone(),
            message: format!(
                "job '{}' uses {} but an earlier job uses {}: streamcap runs a job file against one target; give \
                 the target on the command line (every job then runs on it), map the devices the jobs name with \
                 --device NAME=DEVICE (each job then runs on its own), or split the file",
                job.name,
                target.display(),
                existing.display()
            ),
        }),
        _ => spec.target = Some(target),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::ini::tests::FakeHost;
    use super::Targets;
    use crate::spec::{JobSpec, Sharing};
    use crate::units::Bytes;

    const TWO: &str = "[global]\nrw=randread\nbs=4k\ndirect=1\nsize=8m\n[a]\nfilename=/dev/sdb\nnumjobs=4\n\
                       [b]\nfilename=/dev/sdc\n[both]\nstonewall\nfilename=/dev/sdb:/dev/sdc\nsize=32m\n";

    fn read(text: &str, given: Option<&str>, map: &[(&str, &str)]) -> Result<JobSpec, String> {
        let devices: Vec<(String, PathBuf)> = map.iter().map(|(a, b)| (a.to_string(), PathBuf::from(b))).collect();
        let ordered: Vec<PathBuf> = map.iter().filter(|(a, _)| a.is_empty()).map(|(_, b)| PathBuf::from(b)).collect();
        let devices: Vec<(String, PathBuf)> = devices.into_iter().filter(|(a, _)| !a.is_empty()).collect();
        let targets = Targets { given: given.map(Path::new), devices: &devices, ordered: &ordered };
        super::super::parse_fio_job_on(Path::new("/jobs/d.fio"), text, &FakeHost::default(), &targets)
            .map_err(|e| e.to_string())
    }

    fn devices(job: &JobSpec, i: usize) -> Vec<&str> {
        job.phases[i].fio.devices.iter().flatten().map(|d| d.to_str().unwrap()).collect()
    }

    #[test]
    fn mapped_devices_give_each_job_its_own_and_a_job_over_two_both() {
        let job = read(TWO, None, &[("/dev/sdb", "/dev/loop3"), ("/dev/sdc", "/dev/loop4")]).unwrap();
        assert_eq!(job.target, Some(PathBuf::from("/dev/loop3")));
        assert_eq!((devices(&job, 0), devices(&job, 1)), (vec!["/dev/loop3"], vec!["/dev/loop4"]));
        assert_eq!(devices(&job, 2), ["/dev/loop3", "/dev/loop4"]);
        // fio's size is the job's, over its files; clones of a job on a device share it (one data set).
        assert_eq!((job.phases[0].size, job.phases[2].size), (Some(Bytes::mib(8)), Some(Bytes::mib(32))));
        assert_eq!((job.phases[0].jobs, job.phases[0].sharing), (Some(4), Some(Sharing::Whole)));
        // A name mapped onto itself is used as named.
        let job = read(TWO, None, &[("/dev/sdb", "/dev/sdb"), ("/dev/sdc", "/dev/sdc")]).unwrap();
        assert_eq!(devices(&job, 2), ["/dev/sdb", "/dev/sdc"]);
    }

    #[test]
    fn without_a_mapping_one_target_runs_every_job_and_none_refuses_several_devices() {
        let job = read(TWO, Some("/dev/sdz"), &[]).unwrap();
        assert!(job.phases.iter().all(|p| p.fio.devices.is_none()));
        let err = read(TWO, None, &[]).unwrap_err();
        assert!(err.contains("job 'both' runs over several devices (/dev/sdb, /dev/sdc): map each"), "{err}");
        assert!(err.contains("--device NAME=DEVICE"), "{err}");
        // One device for every job, as before: it is the target, and the phases carry no devices of their own.
        let job = read("[a]\nrw=read\nfilename=/dev/sdb\n[b]\nrw=read\nfilename=/dev/sdb\n", None, &[]).unwrap();
        assert_eq!(job.target, Some(PathBuf::from("/dev/sdb")));
        assert!(job.phases.iter().all(|p| p.fio.devices.is_none()));
    }

    #[test]
    fn several_targets_take_the_devices_in_the_order_the_jobs_first_name_them() {
        let job = read(TWO, None, &[("", "/dev/loop3"), ("", "/dev/loop4")]).unwrap();
        assert_eq!((devices(&job, 0), devices(&job, 1)), (vec!["/dev/loop3"], vec!["/dev/loop4"]));
        assert_eq!(devices(&job, 2), ["/dev/loop3", "/dev/loop4"]);
        let err = read(TWO, None, &[("", "/dev/loop3")]).unwrap_err();
        assert!(err.contains("job 'b' names /dev/sdc, the file's device number 2, and 1 TARGETs were given"), "{err}");
        let err = read(TWO, None, &[("", "/dev/loop3"), ("", "/dev/loop4"), ("", "/dev/loop5")]).unwrap_err();
        assert!(
            err.contains("3 TARGETs were given, and the file's jobs name 2 device(s) (/dev/sdb, /dev/sdc)"),
            "{err}"
        );
    }

    #[test]
    fn incomplete_unused_repeated_and_deviceless_mappings_are_refused() {
        let err = read(TWO, None, &[("/dev/sdb", "/dev/loop3")]).unwrap_err();
        assert!(
            err.contains("line 9: job 'b' names /dev/sdc, which no --device maps: add --device /dev/sdc="),
            "{err}"
        );
        let map = [("/dev/sdb", "/dev/loop3"), ("/dev/sdc", "/dev/loop4"), ("/dev/sdd", "/dev/loop5")];
        let err = read(TWO, None, &map).unwrap_err();
        assert!(
            err.contains(
                "--device /dev/sdd=/dev/loop5: the file's jobs name no device /dev/sdd (they name \
                              /dev/sdb, /dev/sdc)"
            ),
            "{err}"
        );
        let map = [("/dev/sdb", "/dev/loop3"), ("/dev/sdc", "/dev/loop4"), ("/dev/sdb", "/dev/loop5")];
        assert!(read(TWO, None, &map).unwrap_err().contains("--device maps /dev/sdb twice"));
        let text = format!("{TWO}[dir]\nfilename=data.0\n");
        let err = read(&text, None, &[("/dev/sdb", "/dev/loop3"), ("/dev/sdc", "/dev/loop4")]).unwrap_err();
        assert!(err.contains("job 'dir' names no device"), "{err}");
        let err = read("[j]\nrw=read\nfilename=/dev/sdb:data.0\n", None, &[]).unwrap_err();
        assert!(err.contains("data.0 is not a device, and the others are"), "{err}");
    }
}
