//! The sweep summary, derived from the phases every time the result is saved: one point per size × record ×
//! mode with each pass's MB/s and each write's closing flush, and the cliff — the first size whose buffered
//! re-reads came no faster than the device — set against the effective RAM; on a network filesystem (sshfs,
//! NFS, SMB) the words say first that the link is the ceiling. Pure: reads phases (by their index in the job,
//! through the keys `profile` made) and the target's filesystem, and writes `RunResult::sweep`.

use super::cliff::{CACHED_FACTOR, device_mbps, judge, rereads};
use super::profile::{Key, Pass};
use crate::results::{OpResult, PhaseResult, RunResult, RunStatus, SweepPoint, SweepSummary};
use crate::sysinfo::FilesystemFacts;
use crate::units::{Bytes, format_mbps};

/// Fills the points, the cliff and the words from the phases run so far.
pub fn summarize(result: &mut RunResult, keys: &[Key]) {
    let RunResult { phases, sweep, status, target, .. } = result;
    let Some(summary) = sweep.as_mut() else { return };
    summary.points = points(phases, keys);
    let device = device_mbps(&summary.points);
    let judged = device.map(|d| judge(&summary.points, d, summary.effective_ram_bytes, (phases, keys)));
    (summary.cliff, summary.implausible_cliff) = judged.map_or((None, None), |j| (j.cliff, j.implausible));
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
                    write_no_flush_mbps: None,
                    write_flush_s: None,
                    rewrite_mbps: None,
                    rewrite_no_flush_mbps: None,
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

/// One pass's figures into its point: MB/s of its class, and for writes the longest fsync (there is one) and
/// the MB/s without the flushes.
fn record(point: &mut SweepPoint, pass: Pass, phase: &PhaseResult) {
    let mbps = |o: &Option<OpResult>| o.as_ref().filter(|o| o.ops > 0).map(|o| o.mbps);
    let flush = phase.sync.as_ref().filter(|s| s.ops > 0).map(|s| s.latency.max_ns as f64 / 1e9);
    let written = (mbps(&phase.write), flush, no_flush_mbps(phase));
    match pass {
        Pass::Write => (point.write_mbps, point.write_flush_s, point.write_no_flush_mbps) = written,
        Pass::Rewrite => (point.rewrite_mbps, point.rewrite_flush_s, point.rewrite_no_flush_mbps) = written,
        Pass::Read => point.read_mbps = mbps(&phase.read),
        Pass::Reread => point.reread_mbps = mbps(&phase.read),
        Pass::RandomRead => point.random_read_mbps = mbps(&phase.read),
    }
}

/// A write phase's MB/s without its flushes (iozone's write; with them it is iozone's `-e`): its bytes over its
/// measured time less the time its fsyncs took. The writes and the closing fsync do not overlap (the fsync is
/// owed once the last write completed), so the difference is the time spent writing.
fn no_flush_mbps(phase: &PhaseResult) -> Option<f64> {
    let write = phase.write.as_ref().filter(|w| w.ops > 0)?;
    let flushing = phase.sync.as_ref().map_or(0.0, |s| s.latency.mean_ns * s.ops as f64 / 1e9);
    let writing = phase.duration_s - flushing;
    (writing > 0.0).then(|| write.bytes as f64 / writing / 1e6)
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
    let implausible = summary.implausible_cliff.as_ref().map(|i| i.why.as_str());
    if let (None, Some(why)) = (&summary.cliff, implausible) {
        return format!("no cliff that fits the RAM ({ram}): {why}; sweep again, or use --memory SIZE");
    }
    if let Some(c) = &summary.cliff {
        let earlier = implausible.map_or(String::new(), |why| format!("; an earlier fall is not the cliff: {why}"));
        return format!(
            "the cliff: buffered re-reads came from RAM up to {} ({} MB/s) and at the device's speed from {} ({} MB/s; \
             direct reads {} MB/s), with {ram}: files larger than the page cache can hold are served by the \
             disk{earlier}",
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

    /// The fixture's write phase: 3 GB written over 3 s, of which its closing fsync took 2 s.
    fn write_phase() -> PhaseResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json"))
            .expect("the fixture exists");
        let result: RunResult = serde_json::from_str(&text).expect("the fixture parses");
        let mut phase = result.phases[0].clone();
        phase.duration_s = 3.0;
        let write = phase.write.as_mut().expect("a write phase");
        (write.bytes, write.mbps) = (3_000_000_000, 1000.0);
        let mut sync = write.clone();
        (sync.ops, sync.bytes, sync.latency.mean_ns, sync.latency.max_ns) = (1, 0, 2e9, 2_000_000_000);
        phase.sync = Some(sync);
        phase
    }

    #[test]
    fn writes_are_given_with_and_without_their_closing_flush() {
        let mut point = SweepPoint {
            size_bytes: 0,
            record_bytes: 0,
            direct: false,
            write_mbps: None,
            write_no_flush_mbps: None,
            write_flush_s: None,
            rewrite_mbps: None,
            rewrite_no_flush_mbps: None,
            rewrite_flush_s: None,
            read_mbps: None,
            reread_mbps: None,
            random_read_mbps: None,
        };
        let phase = write_phase();
        record(&mut point, Pass::Write, &phase);
        // iozone -e (the flush included): 1000 MB/s; iozone's write (the page cache filled): 3000 MB/s.
        assert_eq!((point.write_mbps, point.write_flush_s), (Some(1000.0), Some(2.0)));
        assert_eq!(point.write_no_flush_mbps, Some(3000.0));
        record(&mut point, Pass::Rewrite, &phase);
        assert_eq!((point.rewrite_mbps, point.rewrite_no_flush_mbps), (Some(1000.0), Some(3000.0)));
        // A phase whose flush took all of its time has no figure without it.
        let mut all_flush = phase.clone();
        all_flush.duration_s = 2.0;
        assert_eq!(no_flush_mbps(&all_flush), None);
    }
}
