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
use super::{PlanError, ResourceLimits, TargetPlan};
use crate::spec::{BlockSizeSpec, JobSpec, PhaseSpec, VerifyChoice};
use crate::units::Bytes;
use crate::verify::{Algorithm, HEADER_LEN};

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
    if !directory {
        return Err(PlanError(
            "--verify checks the data files streamcap writes in a directory: give a directory as the target".into(),
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
    let Some(&block) = sizes.iter().min() else {
        return Err(PlanError(
            "--verify checks what the run writes, but no phase writes: run with --verify and --keep first, then check \
             that run with --verify-only"
                .into(),
        ));
    };
    if !block.is_multiple_of(512) || (block as usize) < HEADER_LEN {
        return Err(PlanError(format!(
            "--verify needs block sizes that are multiples of 512 bytes, not {}",
            Bytes(u64::from(block))
        )));
    }
    if let Some(odd) = sizes.iter().find(|s| !s.is_multiple_of(block)) {
        return Err(PlanError(format!(
            "--verify checks blocks of {} (the smallest write), and every write must cover whole blocks: {} is not a \
             multiple",
            Bytes(u64::from(block)),
            Bytes(u64::from(*odd))
        )));
    }
    let backlog = job.phases.iter().find_map(|p| p.verify_backlog);
    Ok(Some(VerifyPlan { algorithm: algorithm(choice), block, seed: fnv1a(run_id.as_bytes()), backlog }))
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

/// Refuses a verification map (one byte per block of the data set) larger than the memory this process may take.
pub(super) fn check_map_memory(
    verify: &VerifyPlan,
    target: &TargetPlan,
    limits: &ResourceLimits,
) -> Result<(), PlanError> {
    let blocks: u64 = target.files.iter().map(|f| f.size.0.div_ceil(u64::from(verify.block))).sum();
    match limits.memory {
        Some(available) if blocks.saturating_add(super::resources::PROCESS_RESERVE.0) > available.0 => {
            Err(PlanError(format!(
                "--verify keeps one byte per verified block in memory: {blocks} blocks of {} need {}, but only {available} \
             is available here: use larger blocks or a smaller --size",
                Bytes(u64::from(verify.block)),
                Bytes(blocks)
            )))
        }
        _ => Ok(()),
    }
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
        };
        let v = VerifyPlan { algorithm: Algorithm::Crc32c, block: 4096, seed: 1, backlog: None };
        let limits = |gib| ResourceLimits { memory: Some(Bytes::gib(gib)), threads: None };
        let err = check_map_memory(&v, &target, &limits(1)).unwrap_err().to_string();
        assert!(err.contains("2684354560 blocks of 4 KiB need 2.50 GiB"), "{err}");
        assert!(check_map_memory(&v, &target, &limits(4)).is_ok());
    }

    #[test]
    fn verification_that_could_not_work_is_refused_with_what_to_do() {
        let v = Some(VerifyChoice::Xxhash);
        let cases = [
            (job(vec![phase(RwMode::Write, "64k", v), phase(RwMode::Read, "64k", None)]), true, "the same in every"),
            (job(vec![phase(RwMode::Write, "64k", v)]), false, "directory"),
            (job(vec![phase(RwMode::Write, "4k-64k", v)]), true, "fixed block sizes"),
            (job(vec![phase(RwMode::Write, "4k/50:6k/50", v)]), true, "not a multiple"),
            (job(vec![phase(RwMode::Write, "100", v)]), true, "multiples of 512"),
            (job(vec![phase(RwMode::Read, "64k", v)]), true, "--verify-only"),
        ];
        for (j, directory, says) in cases {
            let err = verify_plan(&j, directory, "r").unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
