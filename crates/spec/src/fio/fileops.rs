//! fio's file and directory engines as streamcap file-set phases: `filecreate`, `filestat`, `filedelete`,
//! `dircreate`, `dirstat` and `dirdelete` each time one file-system operation per file (or directory), which is
//! what a file-set workload does. A job becomes one tree (its `nrfiles` × `numjobs` files, or directories) and
//! one workload with `numjobs` threads; jobs that fio runs together become one phase with a workload each
//! (`merge_concurrent`), as vdbench runs several fwds together.
//!
//! What fio lays out first, streamcap formats first: files with `filesize` bytes for filestat and filedelete, the
//! directories for dirstat and dirdelete; filecreate and dircreate start from an empty tree. Each file is visited
//! once, as fio does without `time_based`; with it, filestat and dirstat go round the files until the runtime.

use std::path::PathBuf;

use super::engines::FileOpsEngine;
use super::job::fail;
use super::mapping::Job;
use super::options::OptionError;
use super::values::FioSize;
use crate::spec::{
    FileOp, FileSelect, FileSetPhaseSpec, FileSizeSpec, FileTreeSpec, FileWorkloadSpec, FormatMode, PhaseSpec, SpecKind,
};
use crate::units::Bytes;

/// Maps a job on a file or directory engine; returns its target directory, if it names one.
pub(super) fn map_file_ops(
    job: &Job,
    engine: FileOpsEngine,
    phase: &mut PhaseSpec,
    notices: &mut Vec<String>,
) -> Result<Option<PathBuf>, OptionError> {
    let o = &job.options;
    if let Some(said) = o.get("filename") {
        return Err(fail(
            said,
            "filename",
            "give nrfiles (and directory) with the file engines; streamcap names the files",
        ));
    }
    let target = o.get("directory").map(|d| PathBuf::from(d.raw.trim()));
    let per_clone = o.int("nrfiles").unwrap_or(1).max(1);
    let clones = o.int("numjobs").unwrap_or(1).max(1);
    let count = per_clone.saturating_mul(clones);
    let size = file_size(job, engine, per_clone)?;
    if engine.op == FileOp::Getattr
        && let Some(kind) = o.text("stat_type").filter(|t| *t != "stat")
    {
        notices.push(format!("job '{}': stat_type={kind}: streamcap times stat(2) on each file", job.name));
    }
    let time_based = o.flag("time_based");
    phase.runtime = o.time("runtime").filter(|t| !t.is_zero());
    phase.ramp = o.time("ramp_time").filter(|t| !t.is_zero());
    let tree = tree(&job.name, engine, count, size);
    let workload = FileWorkloadSpec {
        name: Some(job.name.clone()),
        tree: Some(tree.name.clone()),
        operation: Some(engine.op),
        // fio visits each file once; with time_based, filestat and dirstat go round them until the runtime.
        fileselect: Some(if time_based && engine.op == FileOp::Getattr {
            FileSelect::Sequential
        } else {
            FileSelect::Once
        }),
        threads: Some(u32::try_from(clones).unwrap_or(u32::MAX)),
        dirs: engine.dirs.then_some(true),
        ..FileWorkloadSpec::default()
    };
    let format = match (engine.needs_existing, engine.dirs) {
        (false, _) => FormatMode::Empty,
        (true, true) => FormatMode::Directories,
        (true, false) => FormatMode::Yes,
    };
    phase.kind = Some(SpecKind::FileSet(Box::new(FileSetPhaseSpec {
        trees: vec![tree],
        workloads: vec![workload],
        rate: None,
        format: Some(format),
        format_with: None,
    })));
    Ok(target)
}

/// One tree for a job: its files directly in the tree's root, or (directory engines) a level of `count`
/// directories.
fn tree(job: &str, engine: FileOpsEngine, count: u64, size: Bytes) -> FileTreeSpec {
    FileTreeSpec {
        name: tree_name(job),
        anchor: None,
        depth: u32::from(engine.dirs),
        width: if engine.dirs { u32::try_from(count).unwrap_or(u32::MAX) } else { 1 },
        // Directory engines make no files, but a tree has at least one per directory: it is never created.
        files: if engine.dirs { 1 } else { count },
        size: FileSizeSpec::Fixed(size),
        placement: None,
        total_size: None,
        direct: None,
        shared: None,
    }
}

/// The size of each file: empty for the create engines (fio's filecreate does no I/O; filesize only sizes its
/// accounting), `filesize` (or `size` shared by the files) for the engines that find the files laid out.
fn file_size(job: &Job, engine: FileOpsEngine, per_clone: u64) -> Result<Bytes, OptionError> {
    if !engine.needs_existing || engine.dirs {
        return Ok(Bytes(0));
    }
    let o = &job.options;
    match (o.size("filesize"), o.size("size")) {
        (Some(FioSize::Bytes(b)), _) => Ok(Bytes(b)),
        (_, Some(FioSize::Bytes(total))) => Ok(Bytes(total / per_clone)),
        (_, Some(FioSize::Percent(_))) => {
            Err(fail(o.get("size").expect("said"), "size", "give the file size in bytes for the file engines"))
        }
        // fio's own fallback when nothing sizes the files: one block.
        _ => Ok(Bytes(4096)),
    }
}

/// A tree name from a job name: letters, digits, '.', '_' and '-' (it becomes a directory name).
fn tree_name(job: &str) -> String {
    let name: String =
        job.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    if name.is_empty() || name.starts_with('.') { format!("job{name}") } else { name }
}

/// fio runs jobs without a stonewall together: file-set phases that run with the one before them join it, each
/// job's tree and workload beside the others'.
pub(super) fn merge_concurrent(phases: Vec<PhaseSpec>) -> Vec<PhaseSpec> {
    let mut out: Vec<PhaseSpec> = Vec::with_capacity(phases.len());
    for phase in phases {
        let joins = phase.concurrent == Some(true);
        match (out.last_mut(), &phase.kind) {
            (Some(last), Some(SpecKind::FileSet(theirs))) if joins && last.fileset().is_some() => {
                let mine = last.fileset_mut().expect("matched a file-set phase");
                let theirs = theirs.clone();
                mine.trees.extend(theirs.trees);
                mine.workloads.extend(theirs.workloads);
                last.runtime = match (last.runtime, phase.runtime) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
            _ => out.push(phase),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_names_are_directory_names() {
        assert_eq!(tree_name("t0"), "t0");
        assert_eq!(tree_name("punch hole"), "punch_hole");
        assert_eq!(tree_name(".x"), "job.x");
    }
}
