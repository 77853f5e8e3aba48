//! The luns of a raw job → its one target. Raw mapping leaves each phase (or part) naming its sd's lun in
//! `file_names`; here the luns are settled: one lun (a file or a block device) is the target itself, as
//! before; a lun that does not exist yet (vdbench creates it) or several luns that are files in one directory
//! make that directory the target, each sd then one file
//! of that name in streamcap's own work directory there (streamcap writes only files it creates; the size of an
//! existing lun is kept when the sd gives none). Several block devices, or files in several directories, need
//! several targets per job, which streamcap does not run: with a directory given as the target on the command
//! line, each lun becomes a file of its name there instead; without one, refused with that reason. Reads the
//! luns' metadata.

use std::path::{Path, PathBuf};

use crate::spec::vdbench::{VdbError, Where};
use crate::spec::{PhaseSpec, SizeOrPercent};
use crate::units::Bytes;

/// Makes the luns of `phases` the job's target; returns it (`None` when no phase names a lun).
pub(super) fn settle(
    phases: &mut [PhaseSpec],
    notices: &mut Vec<String>,
    root: &Path,
    target: Option<&Path>,
) -> Result<Option<PathBuf>, VdbError> {
    let mut luns: Vec<PathBuf> = Vec::new();
    // A workload of concatenated sds names all their luns.
    for unit in phases.iter_mut().flat_map(units_mut) {
        for lun in unit.file_names.iter().flatten().map(PathBuf::from) {
            if !luns.contains(&lun) {
                luns.push(lun);
            }
        }
    }
    match luns.as_slice() {
        [] => Ok(None),
        [one] if !creatable(one) => {
            let one = one.clone();
            // The one lun is the target: a concatenation of it alone addresses it as is.
            phases.iter_mut().flat_map(units_mut).for_each(|u| (u.file_names, u.file_sizes) = (None, None));
            Ok(Some(one))
        }
        many => {
            let at = |why: String| VdbError::at(&Where::File(root.to_path_buf()), why);
            let (dir, whose) = match (shared_directory(many), target.filter(|t| t.is_dir())) {
                (Ok(dir), _) => (dir, "there"),
                (Err(_), Some(target)) => {
                    distinct_names(many).map_err(at)?;
                    (target.to_path_buf(), "in the target given")
                }
                (Err(why), None) => {
                    return Err(at(format!(
                        "{why}; or give a directory as the target (streamcap run DIR --job FILE) to run each lun \
                         as a file there"
                    )));
                }
            };
            let names: Vec<String> = many.iter().map(|l| l.display().to_string()).collect();
            notices.push(format!(
                "vdbench lun{} {} in {}: streamcap runs each as a file of that name in its own work directory \
                 {whose} (created and removed by streamcap), and does not touch the luns themselves",
                if many.len() > 1 { "s" } else { "" },
                names.join(", "),
                dir.display()
            ));
            for unit in phases.iter_mut().flat_map(units_mut) {
                in_directory(unit);
            }
            Ok(Some(dir))
        }
    }
}

/// Luns that will be files of their own names in one directory must not share a name.
fn distinct_names(luns: &[PathBuf]) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for lun in luns {
        let name = file_name(&lun.to_string_lossy());
        if seen.contains(&name) {
            return Err(format!(
                "two luns are named {name} ({}): as files in the target they would be one; give the sds luns of \
                 different names",
                luns.iter()
                    .filter(|l| file_name(&l.to_string_lossy()) == name)
                    .map(|l| l.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        seen.push(name);
    }
    Ok(())
}

/// The last part of a lun's path, `/` or `\\` separated (`\\.\PHYSICALDRIVE1` → `PHYSICALDRIVE1`).
fn file_name(lun: &str) -> String {
    lun.rsplit(['/', '\\']).find(|p| !p.is_empty()).unwrap_or(lun).to_string()
}

/// The phase itself, or its parts.
fn units_mut(phase: &mut PhaseSpec) -> Vec<&mut PhaseSpec> {
    if phase.parts.is_some() {
        return phase.parts.iter_mut().flatten().collect();
    }
    vec![phase]
}

/// The directory every lun is a file of, or why there is none.
fn shared_directory(luns: &[PathBuf]) -> Result<PathBuf, String> {
    let list = luns.iter().map(|l| l.display().to_string()).collect::<Vec<_>>().join(", ");
    if let Some(device) = luns.iter().find(|l| is_block_device(l)) {
        return Err(format!(
            "this job's sds use several luns ({list}), and {} is a block device: streamcap runs one target per \
             job; give each block device its own parameter file",
            device.display()
        ));
    }
    let parent = |l: &PathBuf| l.parent().map(Path::to_path_buf).filter(|p| !p.as_os_str().is_empty());
    let first = parent(&luns[0]);
    match first {
        Some(dir) if luns.iter().all(|l| parent(l).as_ref() == Some(&dir)) && dir.is_dir() => Ok(dir),
        _ => Err(format!(
            "this job's sds use luns in different places ({list}): streamcap runs one target per job; put the \
             sds' files in one existing directory"
        )),
    }
}

/// A part naming its lun by path → the file of that name, sized as the lun when the sd says no size.
fn in_directory(unit: &mut PhaseSpec) {
    let Some(lun) = unit.file_names.as_ref().and_then(|n| n.first()).map(PathBuf::from) else { return };
    if unit.size.is_none()
        && let Ok(meta) = std::fs::metadata(&lun)
        && meta.len() > 0
    {
        // A range of a lun of unknown size was kept in percent; in a directory it is bytes of the lun's size.
        let of = |pct: f64| Bytes((meta.len() as f64 * pct / 100.0) as u64 / 4096 * 4096);
        unit.size = Some(unit.size_percent.take().map_or(Bytes(meta.len()), of));
        if let Some(SizeOrPercent::Percent(p)) = unit.offset {
            unit.offset = Some(SizeOrPercent::Bytes(of(p)));
        }
    }
    unit.file_names = unit.file_names.as_ref().map(|luns| luns.iter().map(|l| file_name(l)).collect());
}

/// A lun vdbench would create: it does not exist, and its directory does (not `/`, nothing under `/dev`).
fn creatable(lun: &Path) -> bool {
    let parent = lun.parent().filter(|p| !p.as_os_str().is_empty() && *p != Path::new("/"));
    !lun.exists() && !lun.starts_with("/dev") && parent.is_some_and(Path::is_dir)
}

fn is_block_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_lun_s_file_name_is_the_last_part_of_its_path_either_way_separated() {
        assert_eq!(super::file_name("/dev/sdb"), "sdb");
        assert_eq!(super::file_name(r"\\.\PHYSICALDRIVE1"), "PHYSICALDRIVE1");
        assert_eq!(super::file_name("/mnt/lun0/"), "lun0");
    }
}
