//! The cache cliff of a sweep, judged against the effective RAM. A fall of the buffered re-reads to the device's
//! speed is the cliff only where the RAM explains it: the page cache holds files up to about the RAM the
//! programs leave it, so a fall far below the effective RAM (1 GiB with 23.5 GiB) is not its size, and neither is
//! a fall followed by larger files served from RAM again. Such a fall is kept apart (`ImplausibleCliff`) with what
//! likely caused it, read from the re-read phase itself: whether the device read the file again (its pages had
//! left the page cache: memory pressure, a drop_caches, a filesystem that keeps no buffered data) or not (RAM
//! served it slowly: a busy machine). Pure: reads the points and phases.

use super::profile::{Key, Pass};
use crate::results::{ImplausibleCliff, PhaseResult, SweepCliff, SweepPoint, own_device_reads};
use crate::units::{Bytes, format_mbps};

/// Buffered re-reads faster than this many times the device's own reads come from RAM.
pub const CACHED_FACTOR: f64 = 1.5;

/// A fall below this share of the effective RAM cannot be the page cache's size. Linux lets the page cache take
/// whatever RAM the programs do not use; for a cliff at a quarter of the RAM, programs would hold three quarters
/// of it through the whole sweep, which the machine's own owner would know. A real but tight cache (a busy host)
/// is still said, as implausible with the likely cause, rather than named as the RAM's cliff.
const RAM_SHARE: f64 = 0.25;

/// The cliff, and a fall the RAM cannot explain.
#[derive(Debug, Default, PartialEq)]
pub struct Judged {
    pub cliff: Option<SweepCliff>,
    pub implausible: Option<ImplausibleCliff>,
}

/// The device's own speed: direct sequential reads of the largest file, with the largest record.
pub fn device_mbps(points: &[SweepPoint]) -> Option<f64> {
    points
        .iter()
        .filter(|p| p.direct && p.read_mbps.is_some())
        .max_by_key(|p| (p.size_bytes, p.record_bytes))
        .and_then(|p| p.read_mbps)
}

/// Buffered re-reads with the largest record, by size: (size, MB/s, record).
pub fn rereads(points: &[SweepPoint]) -> Vec<(u64, f64, u64)> {
    let record = points.iter().filter(|p| !p.direct).map(|p| p.record_bytes).max();
    points
        .iter()
        .filter(|p| !p.direct && Some(p.record_bytes) == record)
        .filter_map(|p| Some((p.size_bytes, p.reread_mbps?, p.record_bytes)))
        .collect()
}

/// Whether the device read at least half of each re-read's file during that re-read (from the re-read phases'
/// own device reads): its pages had left the page cache, however fast it looked beside the device's own figure.
/// Speed alone misjudges when that figure is low (a device that stalled during the direct reads it comes from)
/// or when the page cache holds part of the file; the device's reads say directly that the file came from it.
/// `false` where the phase or its device figures are missing (then speed alone decides).
fn from_device(rereads: &[(u64, f64, u64)], phases: (&[PhaseResult], &[Key])) -> Vec<bool> {
    let read_by_device = |&(size, _, record): &(u64, f64, u64)| {
        reread_phase(phases, size, record).is_some_and(|p| device_read_most(p, size))
    };
    rereads.iter().map(read_by_device).collect()
}

/// The buffered re-read phase of one size and record.
fn reread_phase<'a>((phases, keys): (&'a [PhaseResult], &[Key]), size: u64, record: u64) -> Option<&'a PhaseResult> {
    let key = Key { size: Bytes(size), record: Bytes(record), direct: false, pass: Pass::Reread };
    phases.iter().find(|p| keys.get(p.index) == Some(&key))
}

/// The target's own devices read at least half of the `size`-byte file during `phase`.
fn device_read_most(phase: &PhaseResult, size: u64) -> bool {
    own_device_reads(&phase.devices) as f64 >= 0.5 * size as f64
}

/// Every fall of the re-reads to the device's speed after a size that was faster, counted from the fastest
/// (the smallest files take a fraction of a millisecond, so their MB/s is mostly a phase's own start and stop):
/// (index of the last cached size, index of the first fallen one, index of a larger size cached again). A re-read
/// is cached when it ran faster than the device and the device did not read most of its file (`from_device`).
fn falls(rereads: &[(u64, f64, u64)], device: f64, from_device: &[bool]) -> Vec<(usize, usize, Option<usize>)> {
    let cached = |i: usize| rereads[i].1 > CACHED_FACTOR * device && !from_device.get(i).copied().unwrap_or(false);
    let Some(peak) = rereads.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1)).map(|(i, _)| i) else {
        return Vec::new();
    };
    // Re-reads that were never faster than the device fell from nowhere (over a network filesystem every size
    // runs at the link's speed, a little up and down).
    let mut found = Vec::new();
    let mut at = peak;
    while cached(at) {
        let Some(fallen) = (at..rereads.len()).find(|&i| !cached(i)) else { break };
        let again = (fallen..rereads.len()).find(|&i| cached(i));
        found.push((fallen - 1, fallen, again));
        match again {
            Some(a) => at = a,
            None => break,
        }
    }
    found
}

/// The cliff and the first fall the RAM cannot explain, from the points and the phases behind them.
pub fn judge(points: &[SweepPoint], device: f64, ram: u64, (phases, keys): (&[PhaseResult], &[Key])) -> Judged {
    let rereads = rereads(points);
    let mut judged = Judged::default();
    for (cached, fell, again) in falls(&rereads, device, &from_device(&rereads, (phases, keys))) {
        let fall = SweepCliff {
            cached_up_to_bytes: rereads[cached].0,
            device_from_bytes: rereads[fell].0,
            cached_mbps: rereads[cached].1,
            fallen_mbps: rereads[fell].1,
            device_mbps: device,
        };
        let below_ram = (fall.device_from_bytes as f64) < RAM_SHARE * ram as f64;
        if again.is_none() && !below_ram {
            judged.cliff = Some(fall);
            continue;
        }
        if judged.implausible.is_some() {
            continue;
        }
        let (size, record) = (rereads[fell].0, rereads[fell].2);
        let point = points.iter().find(|p| !p.direct && p.size_bytes == size && p.record_bytes == record);
        let phase = reread_phase((phases, keys), size, record);
        let head = match again {
            Some(a) => format!(
                "yet {} was served from RAM again ({} MB/s): a passing event, not the page cache's size",
                Bytes(rereads[a].0),
                format_mbps(rereads[a].1)
            ),
            None => format!(
                "yet {} of effective RAM holds a file of that size {:.0} times over: not the page cache's size",
                Bytes(ram),
                ram as f64 / size as f64
            ),
        };
        let why = format!(
            "buffered re-reads fell to the device's speed at {} ({} MB/s; direct reads {} MB/s), {head}{}",
            Bytes(size),
            format_mbps(fall.fallen_mbps),
            format_mbps(device),
            cause(&fall, point, phase)
        );
        judged.implausible = Some(ImplausibleCliff { fall, why });
    }
    judged
}

/// What the re-read phase of the fallen size says about the cause.
fn cause(fall: &SweepCliff, point: Option<&SweepPoint>, phase: Option<&PhaseResult>) -> String {
    let size = fall.device_from_bytes;
    let read = point
        .and_then(|p| p.read_mbps)
        .filter(|r| *r > CACHED_FACTOR * fall.device_mbps)
        .map_or(String::new(), |r| format!("; the re-read came right after its read ran at {} MB/s", format_mbps(r)));
    let Some(phase) = phase else {
        return format!(
            "{read}; likely causes: memory pressure from other processes, a drop_caches, or a filesystem that \
             keeps no buffered data cached (FUSE direct_io, O_DIRECT beneath)"
        );
    };
    let device = own_device_reads(&phase.devices);
    let cache = Bytes(phase.memory.page_cache_before_bytes);
    if device_read_most(phase, size) {
        format!(
            "{read}; the device read {} during the re-read, so the file's pages had left the page cache between \
             the passes: memory pressure from other processes (the page cache held {cache} as the re-read began), \
             a drop_caches, or a filesystem that keeps no buffered data cached (FUSE direct_io, O_DIRECT beneath)",
            Bytes(device)
        )
    } else {
        format!(
            "{read}; the device read only {} during the re-read, so RAM served it, slowly: the machine was busy \
             (other processes' CPU or memory traffic) during that pass",
            Bytes(device)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(size: u64, direct: bool, read: f64, reread: f64) -> SweepPoint {
        SweepPoint {
            size_bytes: size,
            record_bytes: 1 << 20,
            direct,
            write_mbps: None,
            write_no_flush_mbps: None,
            write_flush_s: None,
            rewrite_mbps: None,
            rewrite_no_flush_mbps: None,
            rewrite_flush_s: None,
            read_mbps: Some(read),
            reread_mbps: Some(reread),
            random_read_mbps: None,
        }
    }

    const NONE: (&[PhaseResult], &[Key]) = (&[], &[]);

    #[test]
    fn the_cliff_is_the_first_size_whose_rereads_fall_to_the_device() {
        let points = vec![
            point(32 << 20, false, 2000.0, 3000.0),
            point(32 << 20, true, 150.0, 150.0),
            point(64 << 20, false, 1800.0, 2900.0),
            point(256 << 20, false, 160.0, 170.0),
            point(256 << 20, true, 140.0, 140.0),
        ];
        let device = device_mbps(&points).unwrap();
        assert_eq!(device, 140.0, "direct reads of the largest file");
        let ram = 128 << 20;
        let c = judge(&points, device, ram, NONE).cliff.unwrap();
        assert_eq!((c.cached_up_to_bytes, c.device_from_bytes), (64 << 20, 256 << 20));
        assert_eq!(judge(&points[..3], device, ram, NONE), Judged::default(), "no fall within the sizes");
        assert_eq!(judge(&points[3..], device, ram, NONE), Judged::default(), "slow from the first size");
        // A tiny first file whose re-read MB/s is mostly the phase's own overhead does not hide the cliff.
        let mut tiny = vec![point(64 << 10, false, 90.0, 100.0)];
        tiny.extend(points.iter().cloned());
        assert_eq!(judge(&tiny, device, ram, NONE).cliff.map(|c| c.device_from_bytes), Some(256 << 20));
        // Every size at about the device's speed (a network link): no cliff, whichever size was a little faster.
        let flat = vec![
            point(8 << 20, false, 19.3, 16.5),
            point(32 << 20, false, 20.0, 19.7),
            point(32 << 20, true, 22.0, 21.4),
        ];
        assert_eq!(judge(&flat, device_mbps(&flat).unwrap(), ram, NONE), Judged::default(), "a flat line");
    }

    #[test]
    fn a_fall_far_below_the_ram_is_implausible_and_not_the_cliff() {
        // Issue 24: "a cache cliff at 1 GiB with 23.54 GiB of effective RAM (a re-read at 101 MB/s right after a
        // read at 12,849 MB/s)".
        let ram = 25_275_000_000;
        let points = vec![
            point(512 << 20, false, 9000.0, 11_000.0),
            point(1 << 30, false, 12_849.0, 101.0),
            point(1 << 30, true, 100.0, 100.0),
        ];
        let judged = judge(&points, 100.0, ram, NONE);
        assert_eq!(judged.cliff, None, "not named as the cliff");
        let implausible = judged.implausible.unwrap();
        assert_eq!(implausible.fall.device_from_bytes, 1 << 30);
        let why = &implausible.why;
        assert!(why.contains("holds a file of that size 24 times over: not the page cache's size"), "{why}");
        assert!(why.contains("right after its read ran at 12849 MB/s") && why.contains("memory pressure"), "{why}");
        // The same fall with 2 GiB of RAM is the cliff.
        let judged = judge(&points, 100.0, 2 << 30, NONE);
        assert_eq!(judged.cliff.map(|c| c.device_from_bytes), Some(1 << 30));
        assert_eq!(judged.implausible, None);
    }

    #[test]
    fn a_fall_followed_by_ram_speeds_again_is_a_passing_event_and_the_later_fall_is_the_cliff() {
        let points = vec![
            point(64 << 20, false, 3000.0, 3000.0),
            point(128 << 20, false, 3000.0, 120.0),
            point(256 << 20, false, 3000.0, 2800.0),
            point(1 << 30, false, 130.0, 125.0),
            point(1 << 30, true, 100.0, 100.0),
        ];
        let judged = judge(&points, 100.0, 1 << 30, NONE);
        assert_eq!(judged.cliff.map(|c| (c.cached_up_to_bytes, c.device_from_bytes)), Some((256 << 20, 1 << 30)));
        let implausible = judged.implausible.unwrap();
        assert_eq!(implausible.fall.device_from_bytes, 128 << 20);
        let why = &implausible.why;
        assert!(why.starts_with("buffered re-reads fell to the device's speed at 128 MiB (120 MB/s;"), "{why}");
        assert!(why.contains("yet 256 MiB was served from RAM again (2800 MB/s): a passing event"), "{why}");
    }

    #[test]
    fn a_fast_reread_that_the_device_served_is_past_the_cliff() {
        // A 256 MiB file under a 128 MiB cap, re-read at 1.7 times a direct-read figure of 100 MB/s with most of it
        // read from the device (the 2026-11-29 CIs' "no cliff up to 256 MiB: the page cache held every size").
        let rereads = [(16 << 20, 2500.0, 1 << 20), (64 << 20, 2400.0, 1 << 20), (256 << 20, 170.0, 1 << 20)];
        assert_eq!(falls(&rereads, 100.0, &[false, false, false]), Vec::new(), "by its speed alone: cached");
        assert_eq!(falls(&rereads, 100.0, &[false, false, true]), vec![(1, 2, None)], "the device served it");
        assert_eq!(falls(&rereads, 100.0, &[]), Vec::new(), "no device figures: by speed");
    }
}
