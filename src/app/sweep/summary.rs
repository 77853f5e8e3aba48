//! The sweep summary, derived from the phases every time the result is saved: one point per size × record ×
//! mode with each pass's MB/s and each write's closing flush, and the cliff — the first size whose buffered
//! re-reads came no faster than the device — set against the effective RAM; on a network filesystem (sshfs,
//! NFS, SMB) the words say first that the link is the ceiling. Pure: reads phases (by their index in the job,
//! through the keys `profile` made) and the target's filesystem, and writes `RunResult::sweep`.

use super::profile::{Key, Pass};
use crate::results::{PhaseResult, RunResult, RunStatus, SweepCliff, SweepPoint, SweepSummary};
use crate::sysinfo::FilesystemFacts;
use crate::units::{Bytes, format_mbps};

/// Buffered re-reads faster than this many times the device's own reads come from RAM.
const CACHED_FACTOR: f64 = 1.5;

/// Fills the points, the cliff and the words from the phases run so far.
pub fn summarize(result: &mut RunResult, keys: &[Key]) {
    let RunResult { phases, sweep, status, target, .. } = result;
    let Some(summary) = sweep.as_mut() else { return };
    summary.points = points(phases, keys);
    let device = device_mbps(&summary.points);
    summary.cliff = device.and_then(|d| cliff(&summary.points, d));
    summary.words = match target.filesystem.as_ref().filter(|fs| fs.is_network()) {
        Some(fs) => format!("{}; {}", network_words(fs, device), words(summary, device)),
        None => words(summary, device),
    };
    summary.partial = *status != RunStatus::Completed || phases.len() < keys.len();
}

fn points(phases: &[PhaseResult], keys: &[Key]) -> Vec<SweepPoint> {
    let mut points: Vec<SweepPoint> = Vec::new();
    for phase in phases {
        let Some(key) = keys.get(phase.index) else { continue };
        let same = |p: &&mut SweepPoint| {
            p.size_bytes == key.size.0 && p.record_bytes == key.record.0 && p.direct == key.direct
        };
        let point = match points.iter_mut().find(same) {
            Some(point) => point,
            None => {
                points.push(SweepPoint {
                    size_bytes: key.size.0,
                    record_bytes: key.record.0,
                    direct: key.direct,
                    write_mbps: None,
                    write_flush_s: None,
                    rewrite_mbps: None,
                    rewrite_flush_s: None,
                    read_mbps: None,
                    reread_mbps: None,
                    random_read_mbps: None,
                });
                points.last_mut().expect("just pushed")
            }
        };
        record(point, key.pass, phase);
    }
    points
}

/// One pass's figures into its point: MB/s of its class, and for writes the longest fsync (there is one).
fn record(point: &mut SweepPoint, pass: Pass, phase: &PhaseResult) {
    let mbps = |o: &Option<crate::results::OpResult>| o.as_ref().filter(|o| o.ops > 0).map(|o| o.mbps);
    let flush = phase.sync.as_ref().filter(|s| s.ops > 0).map(|s| s.latency.max_ns as f64 / 1e9);
    match pass {
        Pass::Write => (point.write_mbps, point.write_flush_s) = (mbps(&phase.write), flush),
        Pass::Rewrite => (point.rewrite_mbps, point.rewrite_flush_s) = (mbps(&phase.write), flush),
        Pass::Read => point.read_mbps = mbps(&phase.read),
        Pass::Reread => point.reread_mbps = mbps(&phase.read),
        Pass::RandomRead => point.random_read_mbps = mbps(&phase.read),
    }
}

/// The device's own speed: direct sequential reads of the largest file, with the largest record.
fn device_mbps(points: &[SweepPoint]) -> Option<f64> {
    points
        .iter()
        .filter(|p| p.direct && p.read_mbps.is_some())
        .max_by_key(|p| (p.size_bytes, p.record_bytes))
        .and_then(|p| p.read_mbps)
}

/// Buffered re-reads with the largest record, by size.
fn rereads(points: &[SweepPoint]) -> Vec<(u64, f64)> {
    let record = points.iter().filter(|p| !p.direct).map(|p| p.record_bytes).max();
    points
        .iter()
        .filter(|p| !p.direct && Some(p.record_bytes) == record)
        .filter_map(|p| Some((p.size_bytes, p.reread_mbps?)))
        .collect()
}

/// The first size past the fastest buffered re-reads whose re-reads are no faster than the device, after one
/// that was. Counted from the fastest, not the first: the smallest files take a fraction of a millisecond, so
/// their MB/s is mostly a phase's own start and stop and says nothing about the cache.
fn cliff(points: &[SweepPoint], device: f64) -> Option<SweepCliff> {
    let rereads = rereads(points);
    let peak = rereads.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1))?.0;
    // Re-reads that were never faster than the device fell from nowhere (over a network filesystem every size
    // runs at the link's speed, a little up and down).
    if rereads[peak].1 <= CACHED_FACTOR * device {
        return None;
    }
    let fallen = peak + rereads[peak..].iter().position(|(_, mbps)| *mbps <= CACHED_FACTOR * device)?;
    let (cached, fell) = (rereads.get(fallen.checked_sub(1)?)?, rereads[fallen]);
    Some(SweepCliff {
        cached_up_to_bytes: cached.0,
        device_from_bytes: fell.0,
        cached_mbps: cached.1,
        fallen_mbps: fell.1,
        device_mbps: device,
    })
}

/// On a network filesystem the link is the ceiling: its files cross the network both ways, so direct reads
/// measure the link (or the server), not a disk.
fn network_words(fs: &FilesystemFacts, device: Option<f64>) -> String {
    let speed = device.map_or(String::new(), |d| format!(" (direct reads {} MB/s)", format_mbps(d)));
    format!(
        "the ceiling is the network link: {} is a {} filesystem ({}), so every read and write crosses the network \
         and its speed{speed} is the link's or the server's, not a local disk's",
        fs.mount_point.display(),
        fs.fs_type,
        fs.source
    )
}

/// The finding: where the cliff is against the RAM, or why none shows.
fn words(summary: &SweepSummary, device: Option<f64>) -> String {
    let ram = format!(
        "{} of effective RAM{}",
        Bytes(summary.effective_ram_bytes),
        if summary.memory_limit_bytes.is_some() { " (the --memory cgroup's limit)" } else { "" }
    );
    let Some(device) = device else {
        return "no direct reads were measured, so the device's own speed is unknown and no cliff can be named"
            .to_string();
    };
    if let Some(c) = &summary.cliff {
        return format!(
            "the cliff: buffered re-reads came from RAM up to {} ({} MB/s) and at the device's speed from {} ({} MB/s; \
             direct reads {} MB/s), with {ram}: files larger than the page cache can hold are served by the disk",
            Bytes(c.cached_up_to_bytes),
            format_mbps(c.cached_mbps),
            Bytes(c.device_from_bytes),
            format_mbps(c.fallen_mbps),
            format_mbps(device)
        );
    }
    let rereads = rereads(&summary.points);
    let largest = rereads.last().map_or(0, |r| r.0);
    let fastest = rereads.iter().map(|r| r.1).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    match fastest {
        Some(fastest) if fastest <= CACHED_FACTOR * device => format!(
            "buffered re-reads were no faster than the device's {} MB/s at any size: the page cache did not serve \
             them",
            format_mbps(device)
        ),
        Some(_) => format!(
            "no cliff up to {}: the page cache held every size ({ram}); {}",
            Bytes(largest),
            if summary.bound.is_some() || largest < 2 * summary.effective_ram_bytes {
                "sizes past twice the RAM would show it, or run with --memory SIZE to give the page cache less"
            } else {
                "the device keeps pace with RAM"
            }
        ),
        None => "no buffered re-reads were measured".to_string(),
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
            write_flush_s: None,
            rewrite_mbps: None,
            rewrite_flush_s: None,
            read_mbps: Some(read),
            reread_mbps: Some(reread),
            random_read_mbps: None,
        }
    }

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
        let c = cliff(&points, device).unwrap();
        assert_eq!((c.cached_up_to_bytes, c.device_from_bytes), (64 << 20, 256 << 20));
        assert!(cliff(&points[..3], device).is_none(), "no fall within the sizes: no cliff");
        assert!(cliff(&points[3..], device).is_none(), "slow from the first size: no cliff either");
        // A tiny first file whose re-read MB/s is mostly the phase's own overhead does not hide the cliff.
        let mut tiny = vec![point(64 << 10, false, 90.0, 100.0)];
        tiny.extend(points.iter().cloned());
        assert_eq!(cliff(&tiny, device).map(|c| c.device_from_bytes), Some(256 << 20));
        // Every size at about the device's speed (a network link): no cliff, whichever size was a little faster.
        let flat = vec![
            point(8 << 20, false, 19.3, 16.5),
            point(32 << 20, false, 20.0, 19.7),
            point(32 << 20, true, 22.0, 21.4),
        ];
        assert!(cliff(&flat, device_mbps(&flat).unwrap()).is_none(), "a flat line has no cliff");
    }
}
