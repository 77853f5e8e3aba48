//! Turning the user's words for one phase into plan values: engine, alignment, block sizes, distribution,
//! pacing, percentiles, seeds and the default phase name. Shared by raw and file-set planning.

use super::defaults;
use super::facts::{Facts, TargetFacts};
use super::{Arrivals, DirectMode, Pacing};
use crate::engine::EngineKind;
use crate::spec::{ArrivalSpec, BlockSizeSpec, DistributionSpec, EngineChoice, PhaseSpec, Sequencer, ZoneExtent};
use crate::units::{Bytes, format_duration};
use crate::workload::{BlockSizes, Distribution, HOTBAND_MIN_BYTES, Offsets, Stride, Zone, ZoneSize};

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

/// The engine a phase asking for `choice` runs with on a host of `facts` (`None`: the choice cannot run here),
/// for a caller that shapes its phases to the engine before planning them (`check`'s depths as threads).
pub fn engine_for(choice: Option<EngineChoice>, facts: &Facts) -> Option<EngineKind> {
    choose_engine(choice, facts, &mut Vec::new()).ok()
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

/// Offsets and lengths must be multiples of this. Direct I/O needs what the filesystem reports for its files
/// (statx DIOALIGN) or the device's logical block size, so 512-byte direct I/O runs where the storage takes it;
/// where nothing is reported, 4 KiB, which suits every filesystem and device seen so far. Buffers stay
/// page-aligned whatever this is (the engine's pool), which satisfies every memory alignment reported.
pub(super) fn alignment(direct: DirectMode, target: &TargetFacts) -> u32 {
    if direct == DirectMode::Off {
        return defaults::BUFFERED_ALIGN;
    }
    let reported = match target {
        TargetFacts::Directory { dio_align, .. } => *dio_align,
        TargetFacts::BlockDevice { logical_block, .. } => Some(*logical_block),
        TargetFacts::File { .. } | TargetFacts::Remote { .. } => None,
    };
    reported.filter(|a| a.is_power_of_two()).unwrap_or(defaults::DIRECT_ALIGN)
}

/// Block sizes in the plan's terms. A range steps by its smaller size when that is a multiple of the alignment
/// (fio's rule: sizes in a bsrange are multiples of the smallest, so `4k-64k` gives 4k, 8k, … 64k whatever the
/// alignment), else by the alignment.
pub(super) fn block_sizes(spec: &BlockSizeSpec, align: u32, direct: DirectMode) -> Result<BlockSizes, String> {
    let step = match spec {
        BlockSizeSpec::Range(low, _) => u32::try_from(low.0).ok().filter(|l| *l > 0 && l.is_multiple_of(align)),
        _ => None,
    };
    let sizes = convert_sizes(spec, step.unwrap_or(align), "block size")?;
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
        BlockSizeSpec::Split(entries) => {
            let weighted = BlockSizeSpec::split_weights(entries)?;
            // Whole percentages stay percentages (fio's bssplit: 60, 40); fractions (vdbench's 4.5) stay in
            // hundredths of a percent. Either way a size's chance is its weight over their sum.
            let unit = if weighted.iter().all(|(_, w)| w.0 % 100 == 0) { 100 } else { 1 };
            let entries = weighted.into_iter().map(|(b, w)| Ok((size(b)?, w.0 / unit)));
            BlockSizes::Split { entries: entries.collect::<Result<_, String>>()? }
        }
    })
}

pub(super) fn distribution(spec: &DistributionSpec) -> Distribution {
    match spec {
        DistributionSpec::Uniform => Distribution::Uniform,
        DistributionSpec::Zipf(theta) => Distribution::Zipf { theta: *theta },
        DistributionSpec::Pareto(h) => Distribution::Pareto { h: *h },
        DistributionSpec::Normal(sigma_percent) => Distribution::Normal { sigma_percent: *sigma_percent },
        DistributionSpec::Hotband => Distribution::Hotband,
        DistributionSpec::Poisson(midpoint) => Distribution::Poisson { midpoint: *midpoint },
        DistributionSpec::Zoned(zones) => Distribution::Zoned {
            zones: zones
                .iter()
                .map(|z| Zone {
                    access_percent: z.access_percent,
                    size: match z.size {
                        ZoneExtent::Percent(p) => ZoneSize::Percent(p),
                        ZoneExtent::Bytes(b) => ZoneSize::Bytes(b.0),
                    },
                })
                .collect(),
        },
    }
}

/// Zones in bytes (fio zoned_abs) must end within the smallest region a worker addresses, as fio requires them to
/// end within the file.
pub(super) fn check_zones(spec: Option<&DistributionSpec>, smallest_region: u64) -> Result<(), String> {
    if spec == Some(&DistributionSpec::Hotband) && smallest_region < HOTBAND_MIN_BYTES {
        return Err(format!(
            "a hot band needs at least 1,000,000 bytes, as in vdbench, but the data per file is {}; use a larger \
             --size or band",
            Bytes(smallest_region)
        ));
    }
    let Some(DistributionSpec::Zoned(zones)) = spec else { return Ok(()) };
    let end: u64 = zones.iter().filter_map(|z| if let ZoneExtent::Bytes(b) = z.size { Some(b.0) } else { None }).sum();
    if end > smallest_region {
        return Err(format!(
            "the zones end at {}, past the end of the data per file ({}); use smaller zones or a larger --size",
            Bytes(end),
            Bytes(smallest_region)
        ));
    }
    Ok(())
}

/// fio's offset modifiers: a step only for sequential phases and a multiple of the alignment; a new random offset
/// every N operations only for random ones.
pub(super) fn offsets(spec: &PhaseSpec, random: bool, align: u32) -> Result<Offsets, String> {
    let step = spec.fio.offset_step.map_or(0, |s| s.0);
    if step != 0 && random {
        return Err(format!(
            "offset-step {} applies to sequential modes; use random-every for random ones",
            spec.fio.offset_step.expect("said")
        ));
    }
    if !step.unsigned_abs().is_multiple_of(u64::from(align)) {
        return Err(format!(
            "offset-step {} is not a multiple of {}, which offsets must be here",
            spec.fio.offset_step.expect("said"),
            Bytes(u64::from(align))
        ));
    }
    let random_every = spec.fio.random_every.unwrap_or(1);
    if random_every > 1 && !random {
        return Err(format!("random-every {random_every} applies to random modes (randread, randwrite, randrw)"));
    }
    if random_every == 0 {
        return Err("random-every must be at least 1".into());
    }
    let stride = match spec.vdbench.stride {
        Some(s) if !random => return Err(format!("stride ({}, {}) applies to random modes", s.min, s.max)),
        Some(_) if spec.distribution.as_ref().is_some_and(|d| *d != DistributionSpec::Uniform) => {
            return Err("stride takes the place of random offsets, so a distribution would do nothing: give one or \
                        the other"
                .into());
        }
        Some(s) => Some(Stride { min: s.min.0, max: s.max.0 }),
        None => None,
    };
    Ok(Offsets { step, random_every, identical: spec.fio.sequencer == Some(Sequencer::Identical), stride })
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

/// A phase's name from its settings, spelled as the built-in jobs name theirs ("rand-read 4k qd32",
/// "seq-write 1M qd8"): one spelling of a phase whether a job file or the flags made it (issue 30: "randread 4K
/// qd1" beside "rand-read 4k qd1").
pub(super) fn default_name(spec: &PhaseSpec, bs: &BlockSizeSpec, iodepth: u32, jobs: u32) -> String {
    use crate::spec::RwMode;
    let rw = match spec.rw.expect("checked by build_plan") {
        RwMode::Read => "seq-read",
        RwMode::Write => "seq-write",
        RwMode::RandRead => "rand-read",
        RwMode::RandWrite => "rand-write",
        RwMode::ReadWrite => "seq-rw",
        RwMode::RandRw => "rand-rw",
    };
    // Kibibytes as fio and the built-in jobs write them (4k); M, G and T stay capitals.
    let bs = bs.to_string().replace('K', "k");
    let mut name = format!("{rw} {bs} qd{iodepth}");
    if jobs > 1 {
        name.push_str(&format!(" ×{jobs}"));
    }
    if let Some(runtime) = spec.runtime {
        name.push_str(&format!(" {}", format_duration(runtime).replace(' ', "")));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_up_name_is_spelled_as_the_built_in_jobs_spell_theirs() {
        let ten = std::time::Duration::from_secs(10);
        let spec = |rw| PhaseSpec { rw: Some(rw), runtime: Some(ten), ..PhaseSpec::default() };
        let bs = |text: &str| text.parse::<BlockSizeSpec>().unwrap();
        use crate::spec::RwMode;
        assert_eq!(default_name(&spec(RwMode::RandRead), &bs("4k"), 32, 1), "rand-read 4k qd32 10s");
        assert_eq!(default_name(&spec(RwMode::Write), &bs("1m"), 8, 4), "seq-write 1M qd8 ×4 10s");
        assert_eq!(default_name(&spec(RwMode::RandRw), &bs("4k-64k"), 1, 1), "rand-rw 4k-64k qd1 10s");
    }

    #[test]
    fn split_weights_stay_percentages_unless_they_have_fractions() {
        let sizes = |text: &str| convert_sizes(&text.parse().unwrap(), 4096, "block size").unwrap();
        let entries = |s: BlockSizes| if let BlockSizes::Split { entries } = s { entries } else { panic!("{s:?}") };
        assert_eq!(entries(sizes("4k/60:64k/40")), [(4096, 60), (65536, 40)]);
        assert_eq!(entries(sizes("4k/4.5:64k/95.5")), [(4096, 450), (65536, 9550)]);
    }
}
