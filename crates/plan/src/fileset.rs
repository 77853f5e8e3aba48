//! Planning file-set phases (vdbench fsd/fwd/rd for file systems): trees with absolute roots inside a directory
//! streamcap owns, workloads with their threads, transfer sizes and seeds, the operation rate and the format
//! step, all checked before anything is created.
//!
//! Where a tree lives: `ANCHOR/.streamcap/fileset-<name>/` (under mpirun, see `fileset_share`), with a marker
//! file, so that later phases of the same run (format = no, restart, once) find it again by name. ANCHOR is the
//! tree's `anchor`, or the run's target directory. Nothing is ever written outside that directory. A job is either all file-set phases or all raw phases; mixing them is refused for now.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::defaults;
use super::facts::{AnchorFacts, AnchorState, Facts, TargetFacts};
use super::fileset_share::TreeShare;
use super::fileset_workload::{holds_skew, plan_workload, unsaid_skew};
use super::values::choose_engine;
use super::{DataShape, PhaseKind, PhasePlan, PlanError};
use crate::engine::EngineKind;
use crate::metrics::OpClass;
use crate::spec::{
    FileIo, FileOp, FilePlacement, FileSetPhaseSpec, FileTreeSpec, FormatMode, FormatWorkloadSpec, OpRateSpec,
    PhaseSpec, StopAfter,
};
use crate::units::Bytes;
use crate::workload::BlockSizes;
use crate::workload::fileset::{FileSizes, Placement, Selection, TreeShape};

/// Files one tree may hold (2^32: planning walks them once, and their state takes 1 GiB).
pub const MAX_TREE_FILES: u64 = 1 << 32;

/// Directory name prefix of a tree under `ANCHOR/.streamcap/`.
pub const TREE_DIR_PREFIX: &str = "fileset-";

/// A file-set phase, fully expanded.
#[derive(Debug, Clone, Serialize)]
pub struct FileSetPlan {
    pub trees: Vec<TreePlan>,
    pub workloads: Vec<FileWorkloadPlan>,
    /// Operations per second for all workloads together.
    pub rate: FileRate,
    pub format: FormatMode,
    /// vdbench's controlled max (its FwgWaiter): at the maximum rate with a skew said, the workloads' threads
    /// issue in proportion to their skew (one ahead of its share waits); otherwise each goes as fast as it can.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// The engine the workloads' transfers go through (io_uring may have fallen back to sync: see the notices).
    pub engine: EngineKind,
    /// What written data looks like (dedupe and compression ratios); `None`: random, stamped, nothing repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<DataShape>,
}

/// The operation rate of a file-set phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum FileRate {
    Max,
    /// Operations per second, all workloads together.
    PerSecond(f64),
    /// Percent of the rate measured by phase `of_phase` (the nearest earlier file-set phase at max rate).
    PercentOfMax {
        percent: f64,
        of_phase: usize,
    },
}

/// One tree, as it will be on disk.
#[derive(Debug, Clone, Serialize)]
pub struct TreePlan {
    pub name: String,
    /// The directory the user named (or the target).
    pub anchor: PathBuf,
    /// `anchor/.streamcap/fileset-<name>`: the tree's root, created and removed by streamcap.
    pub root: PathBuf,
    pub shape: TreeShape,
    pub sizes: FileSizes,
    /// Files in use (the shape's count, or fewer under a total-size cap).
    pub files: u64,
    /// Directories below the root.
    pub dirs: u64,
    /// Bytes of all files.
    pub bytes: Bytes,
    pub direct: bool,
    /// Direct I/O was not demanded (`direct` came from the phase, not the tree): where the filesystem refuses
    /// O_DIRECT, the tree falls back to buffered I/O with a notice instead of failing.
    pub direct_fallback: bool,
    /// Seed of the per-file sizes (the same for every phase, so a reused tree keeps its sizes).
    pub seed: u64,
    /// Under mpirun, one tree all ranks share (vdbench fsd `shared=yes`); `bytes` is then all ranks' together.
    pub shared: bool,
    /// This rank's files of a tree shared between ranks; `files` counts only them.
    pub share: Option<TreeShare>,
    /// The format step's threads and transfer size, where the phase said them (vdbench fwd=format).
    pub format_with: FormatWorkloadSpec,
}

/// One workload (vdbench fwd).
#[derive(Debug, Clone, Serialize)]
pub struct FileWorkloadPlan {
    pub name: String,
    /// Index into `FileSetPlan::trees`.
    pub tree: usize,
    pub operation: FileOp,
    /// Read and write workloads: percentage of transfers that are reads.
    pub read_percent: u8,
    pub xfer: BlockSizes,
    /// As written ("1k", "4k/60:64k/40").
    pub xfer_label: String,
    pub select: Selection,
    pub fileio: FileIo,
    pub threads: u32,
    /// Share of a fixed operation rate, percent.
    pub skew: f64,
    pub seed: u64,
    /// getattr, delete and rmdir work on directories (fio dirstat), not files.
    pub dirs: bool,
    /// Reads and writes may share a file with other threads (vdbench `fileio=(random,shared)`).
    pub shared: bool,
    /// Transfers to a file before the thread takes another (vdbench `stopafter=`); `None`: vdbench's default.
    pub stop_after: Option<StopAfter>,
    /// Sequential writes delete each file and create it again first (vdbench `fileio=(sequential,delete)`).
    pub delete_first: bool,
    /// Under mpirun, the rank that runs this workload (vdbench's fwd on one hd); `None` runs on every rank.
    pub rank: Option<u32>,
}

impl FileWorkloadPlan {
    /// Whether rank `rank` of a multi-host run runs this workload: every rank runs one that belongs to none.
    pub fn runs_on(&self, rank: u32) -> bool {
        self.rank.is_none_or(|r| r == rank)
    }
}

impl FileSetPlan {
    /// Whether rank `rank` (none: a run of one process) uses tree `tree`: a tree that a workload of the rank
    /// works on, or every tree of a phase without workloads (a format step alone). Another hd's trees are
    /// another host's to make, use and remove.
    pub fn uses_tree(&self, tree: usize, rank: Option<u32>) -> bool {
        let Some(rank) = rank else { return true };
        self.workloads.is_empty() || self.workloads.iter().any(|w| w.tree == tree && w.runs_on(rank))
    }
}

/// Plans one file-set phase (trees and workloads); `last_max` is the plan index of the nearest earlier file-set
/// phase run at max rate, which a percentage-of-max rate refers to.
pub(super) fn plan_fileset_phase(
    index: usize,
    (spec, fileset): (&PhaseSpec, &FileSetPhaseSpec),
    facts: &Facts,
    last_max: Option<usize>,
    notices: &mut Vec<String>,
) -> Result<PhasePlan, PlanError> {
    let TargetFacts::Directory { path: target, .. } = &facts.target else {
        return Err(PlanError(
            "file-set phases build a directory tree, so the target must be a directory (streamcap creates the \
             tree in its own .streamcap directory there)"
                .into(),
        ));
    };
    let label = spec.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
    let fail = |m: String| PlanError(format!("{label}: {m}"));
    fileset.check().map_err(fail)?;
    if spec.rw.is_some() || spec.bs.is_some() || spec.iodepth.is_some() || spec.jobs.is_some() {
        notices.push(format!(
            "{label}: rw, bs, iodepth and jobs do not apply to a file-set phase; its workloads say what it does"
        ));
    }
    // Transfers go through the engine; vdbench's threads are synchronous, so each keeps one in flight.
    let engine = choose_engine(spec.engine, facts, notices).map_err(fail)?;
    let mut plan = plan_phase(index, spec, fileset, target, facts, last_max).map_err(fail)?;
    notices.extend(crowded_files(&label, &plan));
    plan.engine = engine;
    plan.data = super::data::fileset_data_shape(spec, &plan).map_err(fail)?;
    let runs_workload = !matches!(plan.format, FormatMode::Only | FormatMode::Clean) && !plan.workloads.is_empty();
    let runtime = runs_workload.then(|| spec.runtime.unwrap_or(defaults::FILESET_RUNTIME));
    Ok(PhasePlan { runtime, ..PhasePlan::of_spec(label, spec, PhaseKind::FileSet(Box::new(plan))) })
}

/// Reads and writes hold their file while they use it (vdbench's rule, unless `shared`): more such threads than
/// files on a tree leave most of them waiting for a file, so operations crawl and responses grow to seconds with
/// nothing failing (issue 30: 64 threads on 20 files ran 0.5 operations/s with 45 s responses, unsaid). Said
/// once per tree, in the dry run as in the run.
fn crowded_files(label: &str, plan: &FileSetPlan) -> Vec<String> {
    let mut said = Vec::new();
    for (t, tree) in plan.trees.iter().enumerate() {
        let threads: u64 = plan
            .workloads
            .iter()
            .filter(|w| w.tree == t && !w.shared && matches!(w.operation, FileOp::Read | FileOp::Write))
            .map(|w| u64::from(w.threads))
            .sum();
        if threads > tree.files {
            said.push(format!(
                "{label}: {threads} threads read and write {} files of {}: each holds its file while it uses it, \
                 so most will wait for one (expect few operations/s and responses of seconds); give the tree at \
                 least {threads} files, use at most {} threads, or let them share files (shared = true)",
                tree.files, tree.name, tree.files
            ));
        }
    }
    said
}

/// The trees, workloads, rate and format step of a file-set phase.
fn plan_phase(
    index: usize,
    spec: &PhaseSpec,
    fileset: &FileSetPhaseSpec,
    target: &Path,
    facts: &Facts,
    last_max: Option<usize>,
) -> Result<FileSetPlan, String> {
    let seed = spec.seed.unwrap_or(defaults::SEED);
    let mut trees =
        fileset.trees.iter().map(|tree| plan_tree(tree, spec, target, facts)).collect::<Result<Vec<_>, _>>()?;
    trees.iter_mut().for_each(|t| t.format_with = fileset.format_with.unwrap_or_default());
    let format = fileset.format.unwrap_or(FormatMode::Yes);
    let unsaid_skew = unsaid_skew(&fileset.workloads)?;
    let workloads = fileset
        .workloads
        .iter()
        .enumerate()
        .map(|(w, spec_w)| {
            let seed = seed ^ ((index as u64) << 48) ^ ((w as u64) << 32);
            plan_workload(w, spec_w, fileset, &trees, seed, unsaid_skew)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let threads: u64 = workloads.iter().map(|w| u64::from(w.threads)).sum();
    if threads > 4096 {
        return Err(format!("{threads} threads in all is too many: use at most 4096"));
    }
    let rate = match fileset.rate.unwrap_or(OpRateSpec::Max) {
        OpRateSpec::Max => FileRate::Max,
        OpRateSpec::PerSecond(r) => FileRate::PerSecond(r),
        OpRateSpec::PercentOfMax(percent) => {
            let of_phase = last_max.ok_or_else(|| {
                format!(
                    "rate {percent}% is a percentage of the maximum measured by an earlier phase with rate = \
                         \"max\", and there is none: add such a phase before this one"
                )
            })?;
            FileRate::PercentOfMax { percent, of_phase }
        }
    };
    let held = holds_skew(rate, fileset, &workloads);
    // The engine and the data's shape are the phase's: `plan_fileset_phase` sets them.
    Ok(FileSetPlan { trees, workloads, rate, format, held, engine: EngineKind::Sync, data: None })
}

/// One tree: its root under the anchor, its shape, and its files' sizes fitted to any total-size cap.
fn plan_tree(tree: &FileTreeSpec, spec: &PhaseSpec, target: &Path, facts: &Facts) -> Result<TreePlan, String> {
    if tree.name.is_empty() || !tree.name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return Err(format!(
            "tree name '{}' must be letters, digits, '.', '_' or '-' (it becomes a directory name)",
            tree.name
        ));
    }
    let anchor = match &tree.anchor {
        None => target.to_path_buf(),
        Some(asked) => anchor_dir(asked, &facts.anchors)?,
    };
    let placement = match tree.placement.unwrap_or(FilePlacement::Bottom) {
        FilePlacement::Bottom => Placement::Bottom,
        FilePlacement::All => Placement::All,
    };
    let shape = TreeShape::new(tree.depth, tree.width, tree.files, placement)
        .map_err(|e| format!("tree {}: {e}; use a smaller width, depth or files", tree.name))?;
    check_tree_files(&tree.name, &shape)?;
    let sizes = super::fileset_workload::tree_sizes(&tree.size);
    let tree_seed = defaults::SEED ^ fnv(&tree.name);
    let (files, bytes) = sizes.fit(shape.files(), tree.total_size.map(|b| b.0), tree_seed);
    if files == 0 {
        return Err(format!(
            "tree {}: total-size {} leaves room for no file",
            tree.name,
            tree.total_size.unwrap_or_default()
        ));
    }
    Ok(TreePlan {
        name: tree.name.clone(),
        root: anchor.join(".streamcap").join(format!("{TREE_DIR_PREFIX}{}", tree.name)),
        anchor,
        shape,
        sizes,
        files,
        dirs: shape.dirs(),
        bytes: Bytes(bytes),
        direct: tree.direct.unwrap_or(spec.direct == Some(true)),
        direct_fallback: tree.direct.is_none(),
        seed: tree_seed,
        shared: tree.shared == Some(true),
        share: None,
        format_with: FormatWorkloadSpec::default(),
    })
}

/// The anchor directory as the facts found it, or why it cannot be used.
fn anchor_dir(asked: &Path, anchors: &[AnchorFacts]) -> Result<PathBuf, String> {
    let found = anchors.iter().find(|a| a.path == asked);
    match found.map(|a| &a.state) {
        Some(AnchorState::Directory { canonical, .. }) => Ok(canonical.clone()),
        Some(AnchorState::NotDirectory) => Err(format!(
            "anchor {} is not a directory: give a directory (streamcap builds the tree inside it)",
            asked.display()
        )),
        Some(AnchorState::Missing) | None => {
            Err(format!("anchor {} does not exist: create the directory first, or choose another", asked.display()))
        }
    }
}

/// Checks that every tree fits in its anchor's free space (trees reused between phases counted once); under
/// mpirun, the trees that rank `rank` makes (`FileSetPlan::uses_tree`): another hd's trees are another rank's,
/// and a tree the ranks share counts whole (`bytes`), as they fill it together.
pub(super) fn check_space(
    phases: &[PhasePlan],
    facts: &Facts,
    rank: Option<u32>,
    notices: &mut Vec<String>,
) -> Result<(), PlanError> {
    let (target, target_free) = match &facts.target {
        TargetFacts::Directory { path, free, .. } => (path.as_path(), *free),
        _ => return Ok(()),
    };
    let anchors = &facts.anchors;
    // Maps, not lists searched per tree: a job of many phases with trees of their own stays linear.
    let mut roots: std::collections::BTreeMap<&Path, (&TreePlan, u64)> = Default::default();
    let fileset = phases.iter().filter_map(PhasePlan::fileset);
    let mine = fileset.flat_map(|f| f.trees.iter().enumerate().filter(|(i, _)| f.uses_tree(*i, rank)));
    for (_, tree) in mine {
        let entry = roots.entry(&tree.root).or_insert((tree, 0));
        entry.1 = entry.1.max(tree.bytes.0);
    }
    let anchor_free: std::collections::HashMap<&Path, Option<Bytes>> = anchors
        .iter()
        .filter_map(|a| match &a.state {
            AnchorState::Directory { canonical, free } => Some((canonical.as_path(), *free)),
            _ => None,
        })
        .collect();
    let mut anchors_seen: std::collections::BTreeMap<&Path, (u64, Option<Bytes>)> = Default::default();
    for (tree, bytes) in roots.into_values() {
        let free =
            if tree.anchor == target { target_free } else { anchor_free.get(tree.anchor.as_path()).copied().flatten() };
        let entry = anchors_seen.entry(&tree.anchor).or_insert((0, free));
        entry.0 = entry.0.saturating_add(bytes);
    }
    for (anchor, (needed, free)) in anchors_seen {
        let reserve = defaults::FREE_SPACE_RESERVE;
        match free {
            Some(free) if needed.saturating_add(reserve.0) > free.0 => {
                return Err(PlanError(format!(
                    "not enough free space in {}: the file-set trees need {} plus {reserve} of headroom, but only \
                     {free} is free; use fewer or smaller files (files, size, total-size), or free some space",
                    anchor.display(),
                    Bytes(needed)
                )));
            }
            Some(_) => {}
            None => notices.push(format!(
                "the filesystem at {} reports no capacity, so streamcap cannot check that {} fits",
                anchor.display(),
                Bytes(needed)
            )),
        }
    }
    Ok(())
}

/// Sizes are worked out per file (a few ns each) and each file costs two bits of state: a count that would take
/// minutes to plan or more memory than a run should hold is refused before either happens.
fn check_tree_files(name: &str, shape: &TreeShape) -> Result<(), String> {
    if shape.files() > MAX_TREE_FILES {
        return Err(format!(
            "tree {name} has {} files, more than the {MAX_TREE_FILES} a tree may hold: use a smaller width, depth \
             or files",
            shape.files()
        ));
    }
    Ok(())
}

/// A stable hash of a tree name (FNV-1a), so that a tree's file sizes depend on its name, not on the phase.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl FileSetPlan {
    /// Threads of all workloads.
    pub fn threads(&self) -> u32 {
        self.workloads.iter().map(|w| w.threads).sum()
    }

    /// The operation classes a rate counts (vdbench's ReqstdOps): transfers, plus each workload's own
    /// operation; the opens and closes around transfers are not requested operations.
    pub fn requested_classes(&self) -> Vec<OpClass> {
        let mut classes = Vec::new();
        for w in &self.workloads {
            match w.operation {
                FileOp::Read | FileOp::Write => classes.extend([OpClass::Read, OpClass::Write]),
                FileOp::Create => classes.extend([OpClass::Create, OpClass::Write]),
                FileOp::Open | FileOp::Close => classes.push(OpClass::Open),
                FileOp::Delete => classes.push(OpClass::Delete),
                FileOp::Mkdir => classes.push(OpClass::Mkdir),
                FileOp::Rmdir => classes.push(OpClass::Rmdir),
                FileOp::Getattr => classes.push(OpClass::Getattr),
                FileOp::Setattr => classes.push(OpClass::Setattr),
                FileOp::Access => classes.push(OpClass::Access),
                FileOp::Copy => classes.push(OpClass::Copy),
                FileOp::Move => classes.push(OpClass::Move),
            }
        }
        classes.sort_by_key(|c| *c as usize);
        classes.dedup();
        classes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{BlockSizeSpec, FileTreeSpec, FileWorkloadSpec, JobSpec, SpecKind, SpecOrigin};

    fn facts(free: u64) -> Facts {
        let anchors = vec![
            AnchorFacts { path: PathBuf::from("/etc/passwd"), state: AnchorState::NotDirectory },
            AnchorFacts { path: PathBuf::from("/nope"), state: AnchorState::Missing },
        ];
        Facts { anchors, ..Facts::directory(Some(Bytes(free))) }
    }

    fn build_fileset_plan(job: &JobSpec, facts: &Facts) -> Result<crate::plan::Plan, PlanError> {
        crate::plan::build_plan(job, facts, &crate::plan::RunOptions::default())
    }

    fn tree(depth: u32, width: u32, files: u64, size: &str) -> FileTreeSpec {
        FileTreeSpec {
            name: "fsd1".into(),
            anchor: None,
            depth,
            width,
            files,
            size: size.parse().unwrap(),
            placement: None,
            total_size: None,
            direct: None,
            shared: None,
        }
    }

    fn workload() -> FileWorkloadSpec {
        FileWorkloadSpec {
            name: None,
            tree: None,
            operation: None,
            rdpct: Some(90),
            xfersize: Some(BlockSizeSpec::Fixed(Bytes(1024))),
            fileselect: None,
            fileio: Some(FileIo::Random),
            threads: Some(64),
            skew: None,
            dirs: None,
            shared: None,
            rank: None,
            stopafter: None,
            delete_first: None,
        }
    }

    fn job(tree: FileTreeSpec, rate: Option<OpRateSpec>) -> JobSpec {
        let fileset =
            FileSetPhaseSpec { trees: vec![tree], workloads: vec![workload()], rate, format: None, format_with: None };
        JobSpec {
            origin: SpecOrigin::Flags,
            target: None,
            interval: None,
            phases: vec![PhaseSpec { kind: Some(SpecKind::FileSet(Box::new(fileset))), ..Default::default() }],
            notices: Vec::new(),
        }
    }

    /// Regression (issue 30): 64 threads on 20 files ran at 0.5 operations/s with no warning, run or dry run.
    #[test]
    fn more_threads_than_files_is_said_when_planned() {
        let plan = build_fileset_plan(&job(tree(1, 1, 20, "16k"), None), &facts(1 << 40)).unwrap();
        let crowded: Vec<&String> = plan.notices.iter().filter(|n| n.contains("64 threads")).collect();
        assert_eq!(crowded.len(), 1, "{:?}", plan.notices);
        assert!(crowded[0].contains("20 files") && crowded[0].contains("at most 20 threads"), "{}", crowded[0]);
        let roomy = build_fileset_plan(&job(tree(1, 64, 200, "16k"), None), &facts(1 << 40)).unwrap();
        assert!(!roomy.notices.iter().any(|n| n.contains("threads read and write")), "{:?}", roomy.notices);
    }

    #[test]
    fn the_small_files_workload_plans_inside_the_target() {
        let plan = build_fileset_plan(&job(tree(1, 64, 200, "16k"), None), &facts(1 << 40)).unwrap();
        let fs = plan.phases[0].fileset().unwrap();
        assert_eq!(fs.trees[0].files, 64 * 200);
        assert_eq!(fs.trees[0].bytes, Bytes(64 * 200 * 16384));
        assert_eq!(fs.trees[0].root, PathBuf::from("/srv/.streamcap/fileset-fsd1"));
        assert_eq!(fs.workloads[0].read_percent, 90);
        assert_eq!(plan.phases[0].outline(&plan.target.files).jobs, 64, "a result's jobs: the threads");
        assert_eq!(plan.phases[0].runtime, Some(defaults::FILESET_RUNTIME));
        assert!(plan.target.files.is_empty());
    }

    /// Under mpirun each rank's trees are its own (`.rank<r>`), and a rank counts only the trees of its own
    /// workloads against the free space: two 400 MiB trees of two hds fit in 600 MiB for each rank, not for one
    /// process running both.
    #[test]
    fn a_rank_plans_and_counts_its_own_trees() {
        let mut two = job(tree(1, 4, 100, "1m"), None);
        let fileset = two.phases[0].fileset_mut().expect("a file-set phase");
        fileset.trees.push(FileTreeSpec { name: "fsd2".into(), ..fileset.trees[0].clone() });
        let on = |rank, tree: &str| FileWorkloadSpec { rank: Some(rank), tree: Some(tree.into()), ..workload() };
        fileset.workloads = vec![on(0, "fsd1"), on(1, "fsd2")];
        let options = |rank| crate::plan::RunOptions { rank, ..Default::default() };
        let free = facts(600 << 20);
        let plan = crate::plan::build_plan(&two, &free, &options(Some(1))).expect("rank 1 fits");
        let roots: Vec<&Path> = plan.phases[0].fileset().unwrap().trees.iter().map(|t| t.root.as_path()).collect();
        assert_eq!(
            roots,
            [Path::new("/srv/.streamcap/fileset-fsd1.rank1"), Path::new("/srv/.streamcap/fileset-fsd2.rank1")]
        );
        let err = crate::plan::build_plan(&two, &free, &options(None)).unwrap_err().0;
        assert!(err.contains("not enough free space"), "{err}");
    }

    #[test]
    fn bad_input_is_refused_with_the_reason() {
        let err = |job: JobSpec, free| build_fileset_plan(&job, &facts(free)).unwrap_err().0;
        assert!(err(job(tree(1, 64, 25600, "16k"), None), 1 << 30).contains("not enough free space"));
        let mut t = tree(1, 4, 1, "4k");
        t.anchor = Some(PathBuf::from("/etc/passwd"));
        assert!(err(job(t.clone(), None), 1 << 40).contains("not a directory"));
        t.anchor = Some(PathBuf::from("/nope"));
        assert!(err(job(t, None), 1 << 40).contains("does not exist"));
        assert!(err(job(tree(1, 4, 1, "4k"), Some(OpRateSpec::PercentOfMax(50.0))), 1 << 40).contains("earlier"));
        let mut t = tree(1, 4, 1, "4k");
        t.name = "../x".into();
        assert!(err(job(t, None), 1 << 40).contains("tree name"));
    }
}
