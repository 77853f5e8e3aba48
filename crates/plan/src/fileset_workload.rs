//! Planning the workloads of a file-set phase (vdbench fwds): the tree each works on, its operation and read
//! share, transfer sizes (checked against direct I/O), file selection, threads, skew and how much it does to a
//! file before taking another.

use super::defaults;
use super::fileset::{FileRate, FileWorkloadPlan, TreePlan};
use super::values::convert_sizes;
use crate::spec::{BlockSizeSpec, FileIo, FileOp, FileSelect, FileSetPhaseSpec, FileSizeSpec, FileWorkloadSpec};
use crate::units::Bytes;
use crate::workload::BlockSizes;
use crate::workload::fileset::{FileSizes, MAX_SHARED_TREE_FILES, Selection};

/// Workload `w` (vdbench fwd) on its tree; `unsaid_skew` is its skew if it says none.
pub(super) fn plan_workload(
    w: usize,
    spec_w: &FileWorkloadSpec,
    fileset: &FileSetPhaseSpec,
    trees: &[TreePlan],
    seed: u64,
    unsaid_skew: f64,
) -> Result<FileWorkloadPlan, String> {
    let name = spec_w.name.clone().unwrap_or_else(|| format!("fwd{}", w + 1));
    let tree = match &spec_w.tree {
        Some(t) => fileset.trees.iter().position(|x| &x.name == t).expect("checked by FileSetPhaseSpec::check"),
        None => 0,
    };
    let operation = spec_w.operation.unwrap_or(FileOp::Read);
    let read_percent = match (operation, spec_w.rdpct) {
        (FileOp::Read | FileOp::Write, Some(p)) => p,
        (FileOp::Write, None) => 0,
        _ => 100,
    };
    let xfer_spec = spec_w.xfersize.clone().unwrap_or(BlockSizeSpec::Fixed(defaults::BLOCK_SIZE));
    let direct = trees[tree].direct;
    let xfer = xfer_sizes(&xfer_spec, direct).map_err(|e| format!("{name}: {e}"))?;
    let shared = spec_w.shared.unwrap_or(false);
    if shared && trees[tree].files > MAX_SHARED_TREE_FILES {
        return Err(format!(
            "{name}: shared files keep a use count per file, and tree {} has {} files, more than the \
             {MAX_SHARED_TREE_FILES} a shared workload may use: use fewer files",
            trees[tree].name, trees[tree].files
        ));
    }
    // As vdbench's FwgThread.openForWrite, only sequential writes delete first (a loop to random I/O or to
    // another operation leaves it aside); vdbench refuses it with rdpct.
    let fileio = spec_w.fileio.unwrap_or(FileIo::Sequential);
    let delete_first = spec_w.delete_first == Some(true) && operation == FileOp::Write && fileio == FileIo::Sequential;
    if delete_first && spec_w.rdpct.is_some() {
        return Err(format!("{name}: delete-first and rdpct are mutually exclusive, as in vdbench"));
    }
    Ok(FileWorkloadPlan {
        name,
        tree,
        operation,
        read_percent,
        xfer,
        xfer_label: xfer_spec.to_string(),
        select: selection(spec_w.fileselect.unwrap_or(FileSelect::Random)),
        fileio,
        threads: spec_w.threads.unwrap_or(1),
        skew: spec_w.skew.unwrap_or(unsaid_skew),
        seed,
        dirs: spec_w.dirs.unwrap_or(false),
        shared,
        stop_after: spec_w.stopafter,
        delete_first,
        rank: spec_w.rank,
    })
}

/// The workload's file chooser for what the job asked.
/// How the files of a tree are sized, as the workload draws them.
pub(super) fn tree_sizes(size: &FileSizeSpec) -> FileSizes {
    match size {
        FileSizeSpec::Fixed(b) => FileSizes::Fixed { bytes: b.0 },
        FileSizeSpec::Weighted(entries) => {
            FileSizes::weighted(&entries.iter().map(|(b, w)| (b.0, *w)).collect::<Vec<_>>())
        }
        FileSizeSpec::Range(low, high) => FileSizes::range(low.0, high.0),
        FileSizeSpec::Around(mean) => FileSizes::Around { mean: mean.0 },
    }
}

fn selection(select: FileSelect) -> Selection {
    match select {
        FileSelect::Random => Selection::Random,
        FileSelect::Sequential => Selection::Sequential,
        FileSelect::Once => Selection::Once,
        FileSelect::RandomOnce => Selection::RandomOnce,
        FileSelect::Skewed(theta) => Selection::Skewed { theta },
        FileSelect::Poisson(midpoint) => Selection::Poisson { midpoint },
    }
}

/// Transfer sizes: 1 byte to 256 MiB; multiples of 4 KiB with direct I/O.
fn xfer_sizes(spec: &BlockSizeSpec, direct: bool) -> Result<BlockSizes, String> {
    let sizes =
        convert_sizes(spec, if direct { defaults::DIRECT_ALIGN } else { defaults::BUFFERED_ALIGN }, "xfersize")?;
    if direct && let Some(bad) = sizes.sizes().into_iter().find(|s| !s.is_multiple_of(defaults::DIRECT_ALIGN)) {
        return Err(format!("xfersize {} is not a multiple of 4 KiB, which direct I/O needs", Bytes(u64::from(bad))));
    }
    Ok(sizes)
}

/// vdbench's controlled max (its FwgWaiter): at the maximum rate, the workloads hold their skew when one says
/// it, over more than one workload; under mpirun, workloads on the ranks of several hds hold it together
/// (`run::cluster::hold_across`), and workloads of no rank (run on every rank) on each rank. A mix of both is
/// not held.
pub(super) fn holds_skew(rate: FileRate, fileset: &FileSetPhaseSpec, workloads: &[FileWorkloadPlan]) -> bool {
    let ranked = workloads.iter().filter(|w| w.rank.is_some()).count();
    rate == FileRate::Max
        && workloads.len() > 1
        && fileset.workloads.iter().any(|w| w.skew.is_some())
        && (ranked == 0 || ranked == workloads.len())
}

/// The skew of a workload that says none: what the others' skews leave, shared evenly among the workloads that say
/// none (vdbench's rule for fwds as for wds: (100 − the skews said) ÷ the workloads without one).
pub(super) fn unsaid_skew(workloads: &[FileWorkloadSpec]) -> Result<f64, String> {
    let said: f64 = workloads.iter().filter_map(|w| w.skew).sum();
    let unsaid = workloads.iter().filter(|w| w.skew.is_none()).count();
    if said > 100.0 + 1e-6 || (unsaid > 0 && said >= 100.0 - 1e-6) {
        return Err(format!(
            "the workloads' skews add up to {said}; they must add up to 100, or to less when some workloads say \
             none (those share what is left)"
        ));
    }
    Ok(if unsaid == 0 { 0.0 } else { (100.0 - said) / unsaid as f64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vdbench: fwds without a skew share what the others' skews leave (a 70 beside two unsaid: 15 each).
    #[test]
    fn workloads_without_a_skew_share_what_the_others_leave() {
        let w = |skew| FileWorkloadSpec { skew, ..FileWorkloadSpec::default() };
        assert_eq!(unsaid_skew(&[w(Some(70.0)), w(None), w(None)]), Ok(15.0));
        assert_eq!(unsaid_skew(&[w(None), w(None), w(None), w(None)]), Ok(25.0));
        assert_eq!(unsaid_skew(&[w(Some(60.0)), w(Some(40.0))]), Ok(0.0));
        let err = unsaid_skew(&[w(Some(80.0)), w(Some(30.0))]).unwrap_err();
        assert!(err.contains("add up to 110"), "{err}");
        assert!(unsaid_skew(&[w(Some(100.0)), w(None)]).is_err(), "nothing left for the unsaid one");
    }
}
