//! Whose file-set trees a rank of an mpirun run works in: trees of its own (`ANCHOR/.streamcap/fileset-<name>.
//! rank<r>/`), or — a tree shared between the ranks (vdbench fsd `shared=yes`) — the one tree every rank works
//! in, `fileset-<name>/`, rank r of n taking only the tree's files r, r+n, r+2n … It decides which files are a
//! rank's and refuses what cannot be done safely on a tree others use at the same time; it does no I/O.
//!
//! vdbench 5.04.06 does the same (`FileAnchor.createFileList`: "On a shared FSD each slave gets only every
//! n-th file", counting the files of the whole tree, n being every slave of the run, and slave i keeping file k
//! when k mod n = i), and refuses format=yes on a shared fsd (`RD_entry.createFormatList`): "hostA, still in the
//! 'clean' phase of the format, could delete files or directories that hostB has just created".

use serde::Serialize;

use super::fileset::{TREE_DIR_PREFIX, TreePlan};
use super::{PhasePlan, PlanError};
use crate::spec::FormatMode;

/// A rank's share of a tree shared between ranks: the tree's files `rank`, `rank + ranks`, … . The rank's own
/// file `i` (what its workloads, format step and bitsets count) is the tree's file `rank + i·ranks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TreeShare {
    pub rank: u32,
    pub ranks: u32,
}

impl TreeShare {
    /// The tree's number of the rank's own file `own`.
    #[inline]
    pub fn file(self, own: u64) -> u64 {
        u64::from(self.rank) + own * u64::from(self.ranks)
    }

    /// How many of a tree's first `files` files are the rank's.
    pub fn count(self, files: u64) -> u64 {
        files.saturating_sub(u64::from(self.rank)).div_ceil(u64::from(self.ranks.max(1)))
    }
}

impl TreePlan {
    /// The tree's number of this process's file `own` (the same number outside a shared tree).
    #[inline]
    pub fn file_number(&self, own: u64) -> u64 {
        self.share.map_or(own, |s| s.file(own))
    }

    /// The size of this process's file `own`.
    #[inline]
    pub fn file_size(&self, own: u64) -> u64 {
        self.sizes.size_of(self.file_number(own), self.seed)
    }

    /// Appends the path of this process's file `own`, relative to the root.
    #[inline]
    pub fn push_file(&self, own: u64, out: &mut String) {
        self.shape.push_file(self.file_number(own), out);
    }
}

/// Under mpirun, the trees of rank `rank` of `ranks`: a tree shared between the ranks (`shared = true`, with
/// more than one rank) stays `fileset-<name>` and keeps only the rank's files; every other tree is the rank's
/// own, `fileset-<name>.rank<rank>`, so that ranks on one anchor never make, lock or remove each other's tree.
pub(super) fn rank_trees(phases: &mut [PhasePlan], rank: u32, ranks: u32) -> Result<(), PlanError> {
    for phase in phases.iter_mut() {
        let label = phase.name.clone();
        let Some(fs) = phase.fileset_mut() else { continue };
        let format = fs.format;
        let used: Vec<bool> = (0..fs.trees.len()).map(|i| fs.uses_tree(i, Some(rank))).collect();
        for (tree, used) in fs.trees.iter_mut().zip(used) {
            if !tree.shared || ranks < 2 {
                tree.root.set_file_name(format!("{TREE_DIR_PREFIX}{}.rank{rank}", tree.name));
                continue;
            }
            refuse_format(&label, &tree.name, format)?;
            let share = TreeShare { rank, ranks };
            let whole = tree.files;
            tree.share = Some(share);
            tree.files = share.count(whole);
            if used && tree.files == 0 {
                return Err(PlanError(format!(
                    "{label}: tree {} has {whole} files for {ranks} ranks, which share it (each its every \
                     {ranks}th file), so rank {rank} has none: give the tree at least {ranks} files",
                    tree.name
                )));
            }
        }
    }
    Ok(())
}

/// The format steps a shared tree cannot take: each begins by removing the tree, which another rank may be
/// filling at that moment. `restart` (create what is missing), `clean` (each rank removes its own files) and
/// `no` are safe.
fn refuse_format(phase: &str, tree: &str, format: FormatMode) -> Result<(), PlanError> {
    if matches!(format, FormatMode::No | FormatMode::Restart | FormatMode::Clean) {
        return Ok(());
    }
    Err(PlanError(format!(
        "{phase}: format = \"{format}\" on tree {tree}, which mpirun's ranks share (shared = true): one rank still \
         removing the old tree could remove what another has just created (vdbench refuses format=yes on a \
         shared fsd too); format it in two phases, format = \"clean\" and then format = \"restart\""
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rank_takes_its_every_nth_file_and_together_they_take_each_once() {
        // 8 files, 2 ranks: 0, 2, 4, 6 and 1, 3, 5, 7; 7 files, 3 ranks: 3, 2 and 2 files.
        let two: Vec<Vec<u64>> = (0..2)
            .map(|rank| {
                let share = TreeShare { rank, ranks: 2 };
                (0..share.count(8)).map(|i| share.file(i)).collect()
            })
            .collect();
        assert_eq!(two, [vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        let counts: Vec<u64> = (0..3).map(|rank| TreeShare { rank, ranks: 3 }.count(7)).collect();
        assert_eq!(counts, [3, 2, 2]);
        assert_eq!(TreeShare { rank: 3, ranks: 4 }.count(3), 0);
    }

    fn plan_as(format: &str, rank: u32, free: u64) -> Result<crate::plan::Plan, PlanError> {
        let text = format!(
            "[[phase]]\n[phase.fileset]\nformat = \"{format}\"\n[[phase.fileset.tree]]\nname = \"fsd1\"\n\
             depth = 1\nwidth = 2\nfiles = 4\nsize = \"1m\"\nshared = true\n[[phase.fileset.workload]]\n\
             operation = \"read\"\n"
        );
        let job = crate::spec::parse_toml_job(std::path::Path::new("job.toml"), &text).expect("a TOML job");
        let options = crate::plan::RunOptions { rank: Some(rank), ranks: 2, ..Default::default() };
        crate::plan::build_plan(&job, &crate::plan::Facts::directory(Some(crate::units::Bytes(free))), &options)
    }

    /// Rank 1 of 2 on a shared tree of 8 files of 1 MiB: the one root (no `.rank1`), its 4 files (the tree's 1, 3,
    /// 5, 7), and the whole tree counted against the free space, which the two ranks fill together (its half
    /// and the 64 MiB of headroom would fit in 70 MiB; all of it does not).
    #[test]
    fn a_rank_plans_its_share_of_the_one_tree_and_counts_the_whole_tree() {
        let plan = plan_as("restart", 1, 1 << 40).expect("fits");
        let tree = &plan.phases[0].fileset().expect("a file-set phase").trees[0];
        assert_eq!(tree.root, std::path::Path::new("/srv/.streamcap/fileset-fsd1"));
        assert_eq!((tree.files, tree.share), (4, Some(TreeShare { rank: 1, ranks: 2 })));
        assert_eq!((0..4).map(|i| tree.file_number(i)).collect::<Vec<_>>(), [1, 3, 5, 7]);
        let err = plan_as("restart", 1, 70 << 20).unwrap_err().0;
        assert!(err.contains("the file-set trees need 8 MiB"), "{err}");
        let err = plan_as("yes", 0, 1 << 40).unwrap_err().0;
        assert!(err.contains("format = \"clean\" and then format = \"restart\""), "{err}");
    }
}
