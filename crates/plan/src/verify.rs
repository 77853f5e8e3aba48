//! Data verification in a plan: which algorithm, which block size, and the checks that make verification
//! meaningful for the job as asked.
//!
//! The verified block is the smallest block any phase writes; every write size must be a whole number of
//! blocks, and writing phases align their offsets to the block, so that every write covers whole blocks (a
//! partly written block could not be told from a torn one). Reading phases keep their own alignment and check
//! the blocks they read whole. The seed comes from the run id, so that blocks another run left are stale, not
//! good.

use serde::Serialize;

use super::values::convert_sizes;
use super::{PhasePlan, PlanError, ResourceLimits, TargetPlan, TreePlan};
use crate::spec::{BlockSizeSpec, FileOp, JobSpec, JournalMode, PhaseSpec, VerifyChoice};
use crate::units::Bytes;
use ::verify::{Algorithm, HEADER_LEN};

/// Verification for the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VerifyPlan {
    pub algorithm: Algorithm,
    /// Bytes per verified block: the smallest block size any phase writes.
    pub block: u32,
    /// Marks this run's blocks (derived from the run id).
    pub seed: u64,
    /// After every N writes, a worker reads those N blocks back (fio verify_backlog).
    pub backlog: Option<u64>,
    /// A journal of the block map kept beside the data while the run writes (vdbench journal=); the run's data
    /// is then kept, as with `--keep`.
    pub journal: Option<JournalMode>,
}

pub fn algorithm(choice: VerifyChoice) -> Algorithm {
    match choice {
        VerifyChoice::Crc32c => Algorithm::Crc32c,
        VerifyChoice::Xxhash => Algorithm::Xxhash,
        VerifyChoice::Sha256 => Algorithm::Sha256,
        VerifyChoice::Pattern => Algorithm::Pattern,
    }
}

/// The run's verification, or `None` when no phase asks for it. `directory`: the target is a directory
/// (streamcap's own data files, where the manifest of a kept run can live).
pub(super) fn verify_plan(job: &JobSpec, directory: bool, run_id: &str) -> Result<Option<VerifyPlan>, PlanError> {
    let Some(choice) = job.phases.iter().find_map(|p| p.verify) else { return Ok(None) };
    if job.phases.iter().any(|p| p.verify != Some(choice)) {
        return Err(PlanError(format!(
            "verify must be the same in every phase (one phase says {choice}, another something else): set it once, \
             in [global] or with --verify"
        )));
    }
    // On a block device the blocks are checked where they lie, as fio verifies a device; a journal of the block
    // map needs a directory to live beside the data.
    if !directory && job.phases.iter().any(|p| p.journal.is_some()) {
        return Err(PlanError(
            "journal keeps the block map in a file beside the data, so it needs a directory as the target".into(),
        ));
    }
    let mut sizes: Vec<u32> = Vec::new();
    // The parts of a phase with parts say what they write (under mpirun every vdbench rd of a file with hds has
    // parts, one per hd).
    let units = job.phases.iter().flat_map(|p| p.units());
    for phase in units.filter(|p| p.rw.is_some_and(|rw| rw.read_percent(p.rdpct) < 100)) {
        let spec = match (&phase.bs_write, phase.rw) {
            (Some(writes), Some(rw)) if rw.is_mixed() => writes.clone(),
            _ => phase.bs.clone().unwrap_or(BlockSizeSpec::Fixed(super::defaults::BLOCK_SIZE)),
        };
        if matches!(spec, BlockSizeSpec::Range(..)) {
            return Err(PlanError(format!(
                "--verify needs fixed block sizes for writes, but one phase writes {spec}: use one size, or a split \
                 of multiples of the smallest (4k/50:64k/50)"
            )));
        }
        sizes.extend(convert_sizes(&spec, 1, "block size").map_err(PlanError)?.sizes());
    }
    let (fileset_writes, fileset_reads) = fileset_sizes(job)?;
    sizes.extend(fileset_writes);
    // vdbench checks file-system data in blocks of the smallest xfersize used, reads included: a read smaller than
    // every write would otherwise check nothing.
    let Some(&block) = sizes.iter().chain(&fileset_reads).min() else {
        return Err(PlanError(
            "--verify checks what the run writes, but no phase writes: run with --verify and --keep first, then check \
             that run with --verify-only"
                .into(),
        ));
    };
    check_block(block, &sizes)?;
    let backlog = job.phases.iter().find_map(|p| p.verify_backlog);
    if backlog.is_some() && job.phases.iter().any(|p| p.fileset().is_some()) {
        return Err(PlanError(
            "--verify-backlog reads back recent writes of raw phases; file-set threads check every read and the run \
             reads everything back at its end: leave --verify-backlog out"
                .into(),
        ));
    }
    let journal = job.phases.iter().find_map(|p| p.journal);
    if job.phases.iter().any(|p| p.journal.is_some_and(|j| Some(j) != journal)) {
        return Err(PlanError(
            "journal must be the same in every phase: set it once, in [global] or with --journal".into(),
        ));
    }
    Ok(Some(VerifyPlan { algorithm: algorithm(choice), block, seed: fnv1a(run_id.as_bytes()), backlog, journal }))
}

/// Refuses a verified block that is not whole 512-byte sectors (or cannot hold its header), and a write size
/// (of `writes`) that is not a whole number of blocks.
fn check_block(block: u32, writes: &[u32]) -> Result<(), PlanError> {
    if !block.is_multiple_of(512) || (block as usize) < HEADER_LEN {
        return Err(PlanError(format!(
            "--verify needs block sizes that are multiples of 512 bytes, not {}",
            Bytes(u64::from(block))
        )));
    }
    if let Some(odd) = writes.iter().find(|s| !s.is_multiple_of(block)) {
        return Err(PlanError(format!(
            "--verify checks blocks of {} (the smallest transfer), and every write must cover whole blocks: {} is \
             not a multiple",
            Bytes(u64::from(block)),
            Bytes(u64::from(*odd))
        )));
    }
    Ok(())
}

/// The transfer sizes of the file-set workloads: (those of workloads that write — write, and create, which
/// fills the files it makes —, those of workloads that only read). Ranges are refused: a file's transfers
/// must cover whole blocks.
fn fileset_sizes(job: &JobSpec) -> Result<(Vec<u32>, Vec<u32>), PlanError> {
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    for workload in job.phases.iter().filter_map(|p| p.fileset()).flat_map(|f| &f.workloads) {
        let writing = match workload.operation.unwrap_or(FileOp::Read) {
            FileOp::Read => workload.rdpct.is_some_and(|r| r < 100),
            FileOp::Write => workload.rdpct.is_none_or(|r| r < 100),
            FileOp::Create => true,
            _ => continue,
        };
        let spec = workload.xfersize.clone().unwrap_or(BlockSizeSpec::Fixed(super::defaults::BLOCK_SIZE));
        if matches!(spec, BlockSizeSpec::Range(..)) {
            return Err(PlanError(format!(
                "--verify needs fixed transfer sizes in file sets, but one workload has xfersize {spec}: use one \
                 size, or a split of multiples of the smallest (4k/50:64k/50)"
            )));
        }
        let sizes = convert_sizes(&spec, 1, "xfersize").map_err(PlanError)?.sizes();
        if writing { writes.extend(sizes) } else { reads.extend(sizes) }
    }
    Ok((writes, reads))
}

/// Whether a phase's operations are to be aligned to the verified block: a phase that writes (every write size
/// is a multiple of the block, see [`verify_plan`]), or one that only reads, in sizes that are all multiples of
/// the block, so that every read checks the blocks it reads. Reads of smaller sizes keep their own alignment
/// (and check nothing).
pub(super) fn covers_whole_blocks(phase: &PhaseSpec, block: u32) -> bool {
    let Some(rw) = phase.rw else { return false };
    if rw.read_percent(phase.rdpct) < 100 {
        return true;
    }
    match phase.bs.clone().unwrap_or(BlockSizeSpec::Fixed(super::defaults::BLOCK_SIZE)) {
        BlockSizeSpec::Range(..) => false,
        spec => convert_sizes(&spec, 1, "block size").is_ok_and(|s| s.sizes().iter().all(|&b| b.is_multiple_of(block))),
    }
}

/// The file-set trees a verified run checks, each once (by root), in the order the phases first use them:
/// the verifier's file table is the target's files, then these trees' files.
pub fn verified_trees(phases: &[PhasePlan]) -> Vec<&TreePlan> {
    let mut trees: Vec<&TreePlan> = Vec::new();
    for tree in phases.iter().filter_map(|p| p.fileset()).flat_map(|f| &f.trees) {
        if !trees.iter().any(|t| t.root == tree.root) {
            trees.push(tree);
        }
    }
    trees
}

/// The most files a verified run keeps a map for: each costs its path and a little bookkeeping besides its
/// blocks' bytes, and the manifest of a kept run lists them all.
const VERIFIED_FILES_MAX: u64 = 1_000_000;

/// Bytes the verifier keeps per file besides one byte per block (its path, size and the map's box).
const PER_FILE_BYTES: u64 = 160;

/// Refuses a verification map (one byte per block of the data set) larger than the memory this process may take,
/// and more files than [`VERIFIED_FILES_MAX`]. A tree used by several phases must keep its shape: its files are
/// one set of blocks for the whole run.
pub(super) fn check_map_memory(
    verify: &VerifyPlan,
    target: &TargetPlan,
    phases: &[PhasePlan],
    limits: &ResourceLimits,
) -> Result<(), PlanError> {
    let block = u64::from(verify.block);
    let trees = verified_trees(phases);
    let reshaped =
        phases.iter().filter_map(|p| p.fileset()).flat_map(|f| &f.trees).find(|t| {
            trees.iter().any(|first| first.root == t.root && (first.shape != t.shape || first.files != t.files))
        });
    if let Some(tree) = reshaped {
        return Err(PlanError(format!(
            "--verify keeps what each file of tree '{}' holds for the whole run, but its phases give it different \
             shapes: give every phase the same tree, or verify the phases in separate runs",
            tree.name
        )));
    }
    let files = target.files.len() as u64 + trees.iter().map(|t| t.files).sum::<u64>();
    if files > VERIFIED_FILES_MAX {
        return Err(PlanError(format!(
            "--verify keeps a map per file, and this run has {files} files: verify at most {VERIFIED_FILES_MAX} \
             (fewer files per directory, or a smaller depth or width)"
        )));
    }
    let tree_blocks = trees.iter().flat_map(|t| (0..t.files).map(|f| t.file_size(f).div_ceil(block)));
    let blocks: u64 = target.files.iter().map(|f| f.size.0.div_ceil(block)).chain(tree_blocks).sum();
    let needed = blocks.saturating_add(files * PER_FILE_BYTES);
    let of = format!("verification map (one byte per verified block: {blocks} blocks of {})", Bytes(block));
    let demand = super::resources::Demand { who: "--verify", memory: Bytes(needed), of: &of, threads: 0 };
    super::resources::check_memory(limits, demand)
        .map_err(|why| PlanError(format!("{why}: use larger blocks or a smaller --size")))
}

/// FNV-1a, 64 bits: a stable, well-spread seed from the run id.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{PhaseSpec, RwMode, SpecOrigin};

    fn job(phases: Vec<PhaseSpec>) -> JobSpec {
        JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases, notices: vec![] }
    }

    fn phase(rw: RwMode, bs: &str, verify: Option<VerifyChoice>) -> PhaseSpec {
        PhaseSpec { rw: Some(rw), bs: Some(bs.parse().unwrap()), verify, ..PhaseSpec::default() }
    }

    #[test]
    fn the_block_is_the_smallest_write_and_the_seed_follows_the_run() {
        let v = Some(VerifyChoice::Crc32c);
        let j = job(vec![phase(RwMode::Write, "64k", v), phase(RwMode::RandRead, "4k", v)]);
        let plan = verify_plan(&j, true, "run-a").unwrap().unwrap();
        assert_eq!((plan.algorithm, plan.block), (Algorithm::Crc32c, 65536));
        assert_ne!(plan.seed, verify_plan(&j, true, "run-b").unwrap().unwrap().seed);
        assert_eq!(verify_plan(&job(vec![phase(RwMode::Write, "64k", None)]), true, "r").unwrap(), None);
    }

    /// A phase with parts writes what its parts write (vdbench rds of several hds, or of hds as mpirun's ranks).
    #[test]
    fn the_writes_of_parts_count() {
        let v = Some(VerifyChoice::Crc32c);
        let parts = vec![phase(RwMode::RandRead, "4k", None), phase(RwMode::RandWrite, "8k", None)];
        let mixed = PhaseSpec { verify: v, parts: Some(parts), ..PhaseSpec::default() };
        assert_eq!(verify_plan(&job(vec![mixed]), true, "r").unwrap().map(|p| p.block), Some(8192));
    }

    fn fileset_phase(workloads: &[(FileOp, Option<u8>, &str)]) -> PhaseSpec {
        use crate::spec::{FileSetPhaseSpec, FileWorkloadSpec};
        let workloads = workloads
            .iter()
            .map(|&(op, rdpct, xfer)| FileWorkloadSpec {
                operation: Some(op),
                rdpct,
                xfersize: Some(xfer.parse().unwrap()),
                ..FileWorkloadSpec::default()
            })
            .collect();
        let fileset = FileSetPhaseSpec { trees: vec![], workloads, rate: None, format: None, format_with: None };
        PhaseSpec {
            kind: Some(crate::spec::SpecKind::FileSet(Box::new(fileset))),
            verify: Some(VerifyChoice::Crc32c),
            ..PhaseSpec::default()
        }
    }

    /// vdbench checks file-system data in blocks of the smallest xfersize used, reads included; every write
    /// must cover whole blocks.
    #[test]
    fn a_file_set_is_verified_in_blocks_of_its_smallest_transfer() {
        let block = |p: PhaseSpec| verify_plan(&job(vec![p]), true, "r").map(|v| v.map(|v| v.block));
        let phase =
            fileset_phase(&[(FileOp::Write, None, "16k"), (FileOp::Read, None, "4k"), (FileOp::Delete, None, "1k")]);
        assert_eq!(block(phase).unwrap(), Some(4096), "the read's 4k; a delete transfers nothing");
        let mixed = fileset_phase(&[(FileOp::Read, Some(70), "8k/50:64k/50"), (FileOp::Create, None, "128k")]);
        assert_eq!(block(mixed).unwrap(), Some(8192));
        let odd = fileset_phase(&[(FileOp::Write, None, "6k"), (FileOp::Read, None, "4k")]);
        assert!(block(odd).unwrap_err().to_string().contains("not a multiple"));
        let range = fileset_phase(&[(FileOp::Write, None, "4k-64k")]);
        assert!(block(range).unwrap_err().to_string().contains("fixed transfer sizes in file sets"));
        let backlog = PhaseSpec { verify_backlog: Some(1), ..fileset_phase(&[(FileOp::Write, None, "4k")]) };
        assert!(block(backlog).unwrap_err().to_string().contains("leave --verify-backlog out"));
    }

    #[test]
    fn writes_and_reads_of_whole_blocks_align_to_the_block() {
        let v = Some(VerifyChoice::Crc32c);
        assert!(covers_whole_blocks(&phase(RwMode::RandWrite, "64k", v), 65536));
        assert!(covers_whole_blocks(&phase(RwMode::RandRead, "128k", v), 65536));
        assert!(!covers_whole_blocks(&phase(RwMode::RandRead, "4k", v), 65536), "reads smaller than a block");
        assert!(!covers_whole_blocks(&phase(RwMode::RandRead, "64k-128k", v), 65536));
    }

    #[test]
    fn a_map_larger_than_the_memory_left_is_refused() {
        use crate::plan::{FilePlan, TargetKind};
        let target = TargetPlan {
            kind: TargetKind::Directory,
            path: "/t".into(),
            work_dir: None,
            files: vec![FilePlan { path: "/t/d".into(), size: Bytes::gib(10 * 1024), created: true }],
            writes_allowed: true,
            memory_backed: None,
            library: None,
        };
        let v = VerifyPlan { algorithm: Algorithm::Crc32c, block: 4096, seed: 1, backlog: None, journal: None };
        let limits = |gib| ResourceLimits { memory: Some(Bytes::gib(gib)), ..Default::default() };
        let err = check_map_memory(&v, &target, &[], &limits(1)).unwrap_err().to_string();
        assert!(
            err.contains(
                "at least 2.50 GiB for its verification map (one byte per verified block: 2684354560 blocks of 4 KiB)"
            ),
            "{err}"
        );
        assert!(check_map_memory(&v, &target, &[], &limits(4)).is_ok());
    }

    #[test]
    fn verification_that_could_not_work_is_refused_with_what_to_do() {
        let v = Some(VerifyChoice::Xxhash);
        let cases = [
            (job(vec![phase(RwMode::Write, "64k", v), phase(RwMode::Read, "64k", None)]), true, "the same in every"),
            (
                job(vec![PhaseSpec { journal: Some(JournalMode::Sync), ..phase(RwMode::Write, "64k", v) }]),
                false,
                "directory",
            ),
            (job(vec![phase(RwMode::Write, "4k-64k", v)]), true, "fixed block sizes"),
            (job(vec![phase(RwMode::Write, "4k/50:6k/50", v)]), true, "not a multiple"),
            (job(vec![phase(RwMode::Write, "100", v)]), true, "multiples of 512"),
            (job(vec![phase(RwMode::Read, "64k", v)]), true, "--verify-only"),
        ];
        for (j, directory, says) in cases {
            let err = verify_plan(&j, directory, "r").unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        // A block device is verified where its blocks lie, as fio verifies one; only a journal needs a directory.
        assert!(verify_plan(&job(vec![phase(RwMode::Write, "64k", v)]), false, "r").unwrap().is_some());
    }
}
