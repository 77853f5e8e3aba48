//! Turning the user's words for one phase into plan values: engine, alignment, block sizes, distribution,
//! pacing, percentiles, seeds and the default phase name. Shared by raw and file-set planning.

use super::defaults;
use super::facts::{Facts, TargetFacts};
use super::{Arrivals, DirectMode, Pacing};
use crate::engine::EngineKind;
use crate::spec::{ArrivalSpec, BlockSizeSpec, DistributionSpec, EngineChoice, PhaseSpec};
use crate::units::{Bytes, format_duration};
use crate::workload::{BlockSizes, Distribution};

/// The latency percentiles asked for, ascending and without repeats.
pub(super) fn percentiles(spec: &PhaseSpec) -> Result<Vec<f64>, String> {
    let mut list = spec.percentiles.clone().unwrap_or_default();
    if let Some(bad) = list.iter().find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0)) {
        return Err(format!("percentile {bad} is out of range: give percentiles above 0 and at most 100"));
    }
    list.sort_by(f64::total_cmp);
    list.dedup();
    Ok(list)
}

pub(super) fn choose_engine(
    choice: Option<EngineChoice>,
    facts: &Facts,
    notices: &mut Vec<String>,
) -> Result<EngineKind, String> {
    match (choice, &facts.io_uring) {
        (Some(EngineChoice::Sync), _) => Ok(EngineKind::Sync),
        (Some(EngineChoice::Null), _) => Ok(EngineKind::Null),
        (Some(EngineChoice::IoUring), Ok(())) | (None, Ok(())) => Ok(EngineKind::IoUring),
        (Some(EngineChoice::IoUring), Err(why)) => {
            Err(format!("io_uring is not available on this system ({why}); use --engine sync"))
        }
        (None, Err(why)) => {
            notices.push(format!("io_uring is not available ({why}); using the sync engine (queue depth 1)"));
            Ok(EngineKind::Sync)
        }
    }
}

/// Offsets must be multiples of this. Direct I/O needs the filesystem's (or device's) alignment; 4 KiB suits
/// every filesystem and device seen so far and is what fio assumes for O_DIRECT.
pub(super) fn alignment(direct: DirectMode, target: &TargetFacts) -> u32 {
    if direct == DirectMode::Off {
        return defaults::BUFFERED_ALIGN;
    }
    let reported = match target {
        TargetFacts::Directory { dio_align, .. } => *dio_align,
        TargetFacts::BlockDevice { logical_block, .. } => Some(*logical_block),
        TargetFacts::File { .. } | TargetFacts::Remote { .. } => None,
    };
    reported.unwrap_or(defaults::DIRECT_ALIGN).max(defaults::DIRECT_ALIGN)
}

pub(super) fn block_sizes(spec: &BlockSizeSpec, align: u32, direct: DirectMode) -> Result<BlockSizes, String> {
    let sizes = convert_sizes(spec, align, "block size")?;
    if let Some(bad) = sizes.sizes().into_iter().find(|s| s % align != 0) {
        let why = if direct == DirectMode::Off { "" } else { " with direct I/O" };
        return Err(format!(
            "block size {} is not a multiple of {}, which this target needs{why}; use multiples of {}{}",
            Bytes(u64::from(bad)),
            Bytes(u64::from(align)),
            Bytes(u64::from(align)),
            if why.is_empty() { "" } else { " or --buffered" }
        ));
    }
    Ok(sizes)
}

/// The sizes as the user wrote them, as the workload's picker takes them: ranges in steps of `step`, split weights
/// filled in. `what` names the key in messages ("block size", "xfersize").
pub(super) fn convert_sizes(spec: &BlockSizeSpec, step: u32, what: &str) -> Result<BlockSizes, String> {
    const LIMIT: u64 = 256 << 20;
    let size = |b: Bytes| {
        if b.0 == 0 || b.0 > LIMIT {
            return Err(format!("{what} {b} is out of range: use 1 byte to 256 MiB"));
        }
        Ok(b.0 as u32)
    };
    Ok(match spec {
        BlockSizeSpec::Fixed(b) => BlockSizes::Fixed { size: size(*b)? },
        BlockSizeSpec::Range(low, high) => BlockSizes::Range { min: size(*low)?, max: size(*high)?, step },
        BlockSizeSpec::Split(entries) => BlockSizes::Split {
            entries: BlockSizeSpec::split_weights(entries)?
                .into_iter()
                .map(|(b, w)| Ok((size(b)?, w)))
                .collect::<Result<_, String>>()?,
        },
    })
}

pub(super) fn distribution(spec: DistributionSpec) -> Distribution {
    match spec {
        DistributionSpec::Uniform => Distribution::Uniform,
        DistributionSpec::Zipf(theta) => Distribution::Zipf { theta },
        DistributionSpec::Pareto(h) => Distribution::Pareto { h },
        DistributionSpec::Normal(sigma_percent) => Distribution::Normal { sigma_percent },
    }
}

pub(super) fn worker_seed(seed: u64, phase: usize, worker: usize) -> u64 {
    seed ^ ((phase as u64) << 48) ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

pub(super) fn pacing(spec: &PhaseSpec, sizes: &BlockSizes) -> Option<Pacing> {
    let arrivals = match spec.rate_process.unwrap_or(ArrivalSpec::Linear) {
        ArrivalSpec::Linear => Arrivals::Linear,
        ArrivalSpec::Poisson => Arrivals::Poisson,
    };
    if let Some(ops) = spec.rate_iops {
        return Some(Pacing { ops_per_sec: ops as f64, bytes_per_sec: None, arrivals });
    }
    spec.rate.map(|rate| Pacing {
        ops_per_sec: rate.bytes_per_sec() / sizes.mean(),
        bytes_per_sec: Some(rate.bytes_per_sec()),
        arrivals,
    })
}

pub(super) fn default_name(spec: &PhaseSpec, bs: &BlockSizeSpec, iodepth: u32, jobs: u32) -> String {
    let rw = spec.rw.expect("checked by build_plan");
    let mut name = format!("{rw} {bs} qd{iodepth}");
    if jobs > 1 {
        name.push_str(&format!(" ×{jobs}"));
    }
    if let Some(runtime) = spec.runtime {
        name.push_str(&format!(" {}", format_duration(runtime).replace(' ', "")));
    }
    name
}
