//! Physically implausible device figures: a device that says it is rotational yet measured what no spinning
//! disk can. The usual cause is a cache beneath the OS (a virtual disk backed by the host's page cache, a RAID
//! controller's cache), and without a word the user would take that cache's figures for the drive's.
//!
//! The bounds: a 15 000 rpm disk turns once in 4 ms, so an average random read waits 2 ms for the platter plus
//! ~3 ms to seek, about 200 reads/s at queue depth 1; 400/s leaves twice that margin. The fastest spinning disks
//! stream about 280 MB/s from their outer tracks; 300 MB/s is above all of them. This file judges figures that are
//! already in a result; it measures nothing.

use crate::units::format_rate;

use super::{PhaseResult, PhaseResultKind, TargetInfo};

/// Random reads per second at queue depth 1 above which a rotational device's figures cannot be the media's.
pub const ROTATIONAL_MAX_RANDOM_READS_QD1: f64 = 400.0;
/// Sequential MB/s (10^6 bytes/s) above which a rotational device's figures cannot be the media's.
pub const ROTATIONAL_MAX_MBPS: f64 = 300.0;
/// What implausible figures mean, in the words every summary uses.
pub const CACHE_BENEATH: &str =
    "these figures come from a cache beneath the OS (a virtual disk, a RAID controller), not from the media";

/// Fewer operations than this say too little about a rate to call it impossible.
const MIN_READS: u64 = 100;
/// Fewer bytes than this (100 MB) say too little about a sequential rate.
const MIN_BYTES: u64 = 100_000_000;

/// The sentence flagging device `name` when it says it is `rotational` and either figure is beyond a spinning
/// disk: `random_reads_qd1` (random reads per second at queue depth 1) or `sequential_mbps` (10^6 bytes/s).
/// `None` when the device is not rotational, a figure was not measured, or both are plausible.
pub fn rotational_implausibility(
    name: &str,
    rotational: bool,
    random_reads_qd1: Option<f64>,
    sequential_mbps: Option<f64>,
) -> Option<String> {
    if !rotational {
        return None;
    }
    let what = match (random_reads_qd1, sequential_mbps) {
        (Some(iops), _) if iops > ROTATIONAL_MAX_RANDOM_READS_QD1 => format!(
            "{} random reads/s at queue depth 1 (a spinning disk manages at most about {ROTATIONAL_MAX_RANDOM_READS_QD1:.0})",
            format_rate(iops)
        ),
        (_, Some(mbps)) if mbps > ROTATIONAL_MAX_MBPS => format!(
            "{mbps:.0} MB/s sequential (the fastest spinning disks reach about {:.0})",
            ROTATIONAL_MAX_MBPS - 20.0
        ),
        _ => return None,
    };
    Some(format!("{name} says it is rotational, yet measured {what}: {CACHE_BENEATH}"))
}

/// Sets `implausible` on every device of a `run` phase whose figures no spinning disk could give. Random
/// reads count when the phase read at random with one operation in flight in all (depth × workers = 1) and
/// direct I/O; sequential MB/s counts in sequential phases. File-set phases and memory-backed targets (whose
/// notice already says the data is in RAM) are not judged.
pub fn flag_implausible_devices(phase: &mut PhaseResult, target: &TargetInfo) {
    // A phase on the null engine sent nothing to the devices: what they did meanwhile was someone else's.
    if matches!(phase.kind(), PhaseResultKind::FileSet(_))
        || target.memory_backed.is_some()
        || phase.engine.name == "null"
    {
        return;
    }
    let random = phase.rw.starts_with("rand");
    let depth_one = u64::from(phase.engine.queue_depth) * u64::from(phase.jobs) == 1;
    let random_qd1 = random && depth_one && phase.direct && phase.read.is_some();
    for device in &mut phase.devices {
        let a = &device.activity;
        let Some(facts) = target.devices.iter().find(|d| d.name == a.name) else { continue };
        let reads = (random_qd1 && a.reads >= MIN_READS).then_some(a.read_iops);
        let moved = a.read_bytes.0 + a.write_bytes.0;
        let sequential = (!random && moved >= MIN_BYTES).then_some(a.read_mbps.max(a.write_mbps));
        device.implausible = rotational_implausibility(&a.name, facts.rotational, reads, sequential);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotational_disk_beyond_what_platters_do_is_flagged() {
        let flag = rotational_implausibility("vda", true, Some(41_000.0), None).expect("41 k IOPS at qd1");
        assert!(flag.starts_with("vda says it is rotational, yet measured 41.0k random reads/s"), "{flag}");
        assert!(flag.ends_with(CACHE_BENEATH), "{flag}");
        let flag = rotational_implausibility("sdb", true, None, Some(1200.0)).expect("1.2 GB/s");
        assert!(flag.contains("1200 MB/s sequential"), "{flag}");
    }

    #[test]
    fn plausible_or_non_rotational_figures_are_not_flagged() {
        assert_eq!(rotational_implausibility("sda", true, Some(180.0), Some(250.0)), None);
        assert_eq!(rotational_implausibility("sda", true, Some(400.0), Some(300.0)), None, "the bounds themselves");
        assert_eq!(rotational_implausibility("nvme0n1", false, Some(90_000.0), Some(3000.0)), None);
        assert_eq!(rotational_implausibility("sda", true, None, None), None);
    }

    fn fixture() -> crate::results::RunResult {
        serde_json::from_str(include_str!("../../../tests/fixtures/result-v1.json")).expect("the pinned result reads")
    }

    #[test]
    fn run_phases_are_judged_by_their_pattern_and_depth() {
        // The pinned result: vda (rotational) wrote 1.9 GB/s sequentially, then read 153 k IOPS at depth 32.
        let mut result = fixture();
        let target = result.target.clone();
        for phase in &mut result.phases {
            flag_implausible_devices(phase, &target);
        }
        let flag = result.phases[0].devices[0].implausible.as_deref().expect("1.9 GB/s on a rotational disk");
        assert!(flag.contains("1876 MB/s sequential"), "{flag}");
        assert_eq!(result.phases[1].devices[0].implausible, None, "random reads at depth 32 are not judged");

        let mut qd1 = result.phases[1].clone();
        (qd1.engine.queue_depth, qd1.direct) = (1, true);
        flag_implausible_devices(&mut qd1, &target);
        assert!(qd1.devices[0].implausible.as_deref().is_some_and(|f| f.contains("153.4k random reads/s")));

        let mut in_ram = target.clone();
        in_ram.memory_backed = Some("/srv/media is a tmpfs".into());
        let mut phase = result.phases[0].clone();
        phase.devices[0].implausible = None;
        flag_implausible_devices(&mut phase, &in_ram);
        assert_eq!(phase.devices[0].implausible, None, "memory-backed targets have their own notice");
    }
}
