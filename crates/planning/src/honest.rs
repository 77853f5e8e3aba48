//! A drive measured honestly (`--drive-result`, and `trial` without a catalogue): which of a result's figures
//! describe the drive, and what the device's own flags and limits say about them. Two corrections, each said in
//! the drive's `source`:
//! - **a cgroup throttle** (blkio or io.max) on the measured device is what binds, not the device: the drive is
//!   modelled as op-limited (separate requests/s and bytes/s limits, every bio counted, `merges = false`), and a
//!   limit the measurement reached less than half of — a queue too shallow, an engine that did not keep it
//!   busy — is taken at its setting (a loop device measured at 30 MB/s under a 60 MB/s limit), and so is one it
//!   came within 15 % of: the limit binds, and a short measurement loses part of it to the throttle's time
//!   slices (131 of 150 reads/s measured, where every layout over those devices read at 150 each);
//! - **a "rotational" flag the figures contradict**: a spinning disk gains from a deeper queue (command queueing)
//!   and reads at most about 400 random 4 KiB blocks per second at depth 1; a device flagged rotational that
//!   does neither (a loop device, a virtual disk) is modelled as op-limited.
//!
//! Pure arithmetic over the result's facts; `from_result` calls it.

use super::from_result::RandomPoint;
use crate::results::{DeviceThrottle, ThrottleKind};

/// Random reads per second at depth 1 that no spinning disk reaches (4 KiB; about 400 for the fastest).
const MAX_DISK_QD1: f64 = 400.0;
/// A queue at least this deep, gaining less than this over depth 1, did not reorder anything.
const QUEUE_DEPTH: u32 = 8;
const QUEUE_GAIN: f64 = 1.15;
/// A measurement below this share of a throttle's limit was held back by its own queue, not by the limit.
const REACHED: f64 = 0.5;
/// A measurement at or above this share of a throttle's limit met the limit: the throttle binds, and its
/// time slices cost a short measurement the rest (trial, 2026-11-28: the drive read 129–131 random reads/s at
/// depth 32 under a 150/s limit, and raid1, raid10 and raid5 over those devices read at 150/s per device, so
/// predictions from the measured 131 were 12–16 % low).
const BINDS: f64 = 0.85;

/// The figures the drive is modelled from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figures {
    pub rotational: bool,
    pub merges: bool,
    /// Sequential rates, bytes per second.
    pub read: f64,
    pub write: f64,
    pub shallow: RandomPoint,
    pub deep: RandomPoint,
    /// Random writes per second, when a limit says (a throttle's `write_iops`); else as reads.
    pub write_iops: Option<f64>,
    /// One read's time is known from the depth-1 rate: not under a throttle, which paces requests without
    /// making each one slower (one thread reading several throttled devices passes any one's limit).
    pub latency_known: bool,
    /// What was corrected and why, for the drive's `source`.
    pub notes: Vec<String>,
}

/// Applies the throttles on `device` (by kernel name) and the rotational check to the measured figures.
pub(crate) fn correct(
    device: &str,
    flagged_rotational: bool,
    throttles: &[DeviceThrottle],
    measured: Figures,
) -> Figures {
    let mut f = measured;
    let mine: Vec<&DeviceThrottle> = throttles.iter().filter(|t| t.device == device).collect();
    if !mine.is_empty() {
        f.rotational = false;
        f.merges = false;
        f.latency_known = false;
        f.notes.push(format!("{device} is throttled ({}): modelled by its limits", describe(&mine)));
        for t in &mine {
            let limit = t.limit as f64;
            let (value, what) = match t.kind {
                ThrottleKind::ReadBps => (&mut f.read, "sequential read"),
                ThrottleKind::WriteBps => (&mut f.write, "sequential write"),
                ThrottleKind::ReadIops => (&mut f.deep.iops, "random reads at depth"),
                ThrottleKind::WriteIops => {
                    f.write_iops = Some(limit);
                    continue;
                }
            };
            take_limit(value, limit, what, t.kind, &mut f.notes);
        }
        return f;
    }
    if flagged_rotational {
        let no_gain = f.deep.depth >= QUEUE_DEPTH && f.deep.iops < f.shallow.iops * QUEUE_GAIN;
        let too_fast = f.shallow.iops * (f.shallow.bs / 4096.0).max(1.0) > MAX_DISK_QD1;
        if no_gain || too_fast {
            f.rotational = false;
            let why = if too_fast {
                format!(
                    "{:.0} random reads/s at depth {}, more than a spinning disk manages",
                    f.shallow.iops, f.shallow.depth
                )
            } else {
                format!(
                    "{:.0} random reads/s at depth {} and {:.0} at depth {}: no gain from a deeper queue, as a spinning disk would have",
                    f.shallow.iops, f.shallow.depth, f.deep.iops, f.deep.depth
                )
            };
            f.notes.push(format!("{device} says it is rotational, yet {why}: modelled by IOPS and bandwidth limits"));
        }
    }
    f
}

/// A measured `value` under a throttle's `limit`: taken at the limit where the measurement was held back (below
/// `REACHED` of it) or met it (`BINDS` of it or more), with a note when that raises it; between the two the
/// device itself is slower than its limit, and its own figure stands.
fn take_limit(value: &mut f64, limit: f64, what: &str, kind: ThrottleKind, notes: &mut Vec<String>) {
    let held_back = *value < limit * REACHED;
    if !held_back && *value < limit * BINDS {
        return;
    }
    if *value < limit {
        let why = match held_back {
            true => "the measurement's queue held it back",
            false => "within 15 %: the limit binds, and its time slices cost a short measurement the rest",
        };
        let (measured, limit) = (figure(kind, *value), figure(kind, limit));
        notes.push(format!("{what} measured {measured} of a {limit} limit: taken at the limit ({why})"));
    }
    *value = limit;
}

fn figure(kind: ThrottleKind, value: f64) -> String {
    match kind {
        ThrottleKind::ReadBps | ThrottleKind::WriteBps => format!("{:.1} MB/s", value / 1e6),
        ThrottleKind::ReadIops | ThrottleKind::WriteIops => format!("{value:.0}/s"),
    }
}

fn describe(throttles: &[&DeviceThrottle]) -> String {
    let words: Vec<String> = throttles
        .iter()
        .map(|t| {
            let kind = match t.kind {
                ThrottleKind::ReadBps => "read",
                ThrottleKind::WriteBps => "write",
                ThrottleKind::ReadIops => "read requests",
                ThrottleKind::WriteIops => "write requests",
            };
            format!("{kind} {}", figure(t.kind, t.limit as f64))
        })
        .collect();
    words.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(depth: u32, iops: f64) -> RandomPoint {
        RandomPoint { depth, iops, bs: 4096.0 }
    }

    fn measured(read_mbps: f64, shallow: f64, deep: f64) -> Figures {
        Figures {
            rotational: true,
            merges: true,
            read: read_mbps * 1e6,
            write: 20e6,
            shallow: point(1, shallow),
            deep: point(32, deep),
            write_iops: None,
            latency_known: true,
            notes: Vec::new(),
        }
    }

    fn throttle(kind: ThrottleKind, limit: u64) -> DeviceThrottle {
        DeviceThrottle { device: "loop3".into(), major: 7, minor: 3, kind, limit, file: "/x".into() }
    }

    #[test]
    fn a_throttled_loop_device_is_modelled_by_its_limits() {
        // Measured 30 MB/s under a 60 MB/s limit (less than half: held back), 150 reads/s at both depths under a
        // 150/s limit (reached).
        let limits = [
            throttle(ThrottleKind::ReadBps, 60_000_000),
            throttle(ThrottleKind::ReadIops, 150),
            throttle(ThrottleKind::WriteIops, 1000),
        ];
        let f = correct("loop3", true, &limits, measured(29.0, 149.0, 151.0));
        assert!(!f.rotational && !f.merges && !f.latency_known);
        assert_eq!((f.read, f.deep.iops, f.write_iops), (60e6, 150.0, Some(1000.0)));
        assert!(f.notes[0].starts_with("loop3 is throttled (read 60.0 MB/s, read requests 150/s"), "{:?}", f.notes);
        assert!(f.notes[1].contains("measured 29.0 MB/s of a 60.0 MB/s limit"), "{:?}", f.notes);
        // Another device's throttle changes nothing here.
        let other = correct("loop4", true, &limits, measured(29.0, 149.0, 300.0));
        assert_eq!(other, measured(29.0, 149.0, 300.0));
    }

    #[test]
    fn a_limit_measured_within_fifteen_percent_binds_and_one_well_below_it_is_the_devices_own() {
        let limits = [throttle(ThrottleKind::ReadIops, 150)];
        // trial's drive: 131 reads/s at depth 32 under 150/s, where the layouts read 150/s per device.
        let f = correct("loop3", true, &limits, measured(30.0, 144.0, 131.0));
        assert_eq!(f.deep.iops, 150.0);
        assert!(
            f.notes[1].contains("measured 131/s of a 150/s limit: taken at the limit (within 15 %"),
            "{:?}",
            f.notes
        );
        // 100 of 150 (two thirds): the device is slower than its limit; its own figure, and no note.
        let f = correct("loop3", true, &limits, measured(30.0, 90.0, 100.0));
        assert_eq!((f.deep.iops, f.notes.len()), (100.0, 1));
        // Above the limit (a burst): the limit.
        let f = correct("loop3", true, &limits, measured(30.0, 150.0, 160.0));
        assert_eq!((f.deep.iops, f.notes.len()), (150.0, 1));
    }

    #[test]
    fn a_rotational_flag_the_figures_contradict_is_not_believed() {
        // 150 at depth 1 and 152 at depth 32: no command queueing; a disk gains about 2×.
        let f = correct("loop3", true, &[], measured(100.0, 150.0, 152.0));
        assert!(!f.rotational && f.notes[0].contains("no gain from a deeper queue"), "{:?}", f.notes);
        // 5,000 at depth 1: no spinning disk.
        let f = correct("vda", true, &[], measured(100.0, 5000.0, 20000.0));
        assert!(!f.rotational && f.notes[0].contains("more than a spinning disk"), "{:?}", f.notes);
        // A disk: 80 at depth 1, 170 at depth 32.
        let f = correct("sdb", true, &[], measured(250.0, 80.0, 170.0));
        assert!(f.rotational && f.notes.is_empty());
    }
}
