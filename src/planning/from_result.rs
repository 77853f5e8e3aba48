//! A drive model from a streamcap result of one drive (`run`, or `check`, whose raw phases are in the result
//! too): sequential MB/s from its sequential read and write phases, random-read IOPS at the shallowest and the
//! deepest queue from its random-read phases, capacity and rotational from the target's device facts. Reads a
//! parsed `RunResult`; the app reads the file.

use std::time::Duration;

use super::drive::{Drive, Price, RandomCost};
use crate::results::{PhaseResult, RunResult};
use crate::units::{ByteRate, Bytes};

/// Why a result cannot describe one drive.
#[derive(Debug, thiserror::Error)]
pub enum FromResultError {
    #[error(
        "{name}: the result describes {count} devices ({list}); --drive-result needs a result measured on one drive"
    )]
    Pool { name: String, count: usize, list: String },
    #[error("{name}: the result lists no block device; measure a directory on the drive or the device itself")]
    NoDevice { name: String },
    #[error(
        "{name}: the result has no {what} phase; run `streamcap check` on the drive, or `streamcap run` with {flags}"
    )]
    Missing { name: String, what: &'static str, flags: &'static str },
}

/// A phase that measured the drive with plain reads or writes: not a stream step (paced viewers at a depth of
/// hundreds) and not a file-set phase (metadata and small files), which a check result also holds.
fn measures_the_drive(phase: &PhaseResult) -> bool {
    phase.streams.is_none() && phase.file_ops.is_none()
}

fn rate_of(phase: &PhaseResult, read: bool) -> Option<&crate::results::OpResult> {
    if read { phase.read.as_ref() } else { phase.write.as_ref() }.filter(|o| o.ops > 0)
}

fn block_size(phase: &PhaseResult) -> f64 {
    Bytes::parse(&phase.bs).map_or(4096.0, |b| b.0 as f64)
}

/// One random-read phase: queue depth × jobs, reads/s, block size in bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct RandomPoint {
    pub(super) depth: u32,
    pub(super) iops: f64,
    pub(super) bs: f64,
}

/// The drive `name` as measured in `result`, priced at `price`.
pub fn drive_from_result(name: &str, result: &RunResult, price: Option<Price>) -> Result<Drive, FromResultError> {
    let device = &result.target.devices[measured_device(name, result)?];
    let (read_mbps, write_mbps) = sequential_mbps(name, result)?;
    let (shallow, deep) = random_points(name, result)?;
    let read = ByteRate(read_mbps * 1e6);
    let write_note = if write_mbps > 0.0 { "" } else { "; no write phase: writes taken as fast as reads" };
    Ok(Drive {
        name: name.into(),
        product: device.model.clone().unwrap_or_else(|| device.name.clone()),
        source: format!(
            "measured by streamcap on {} ({}): {read_mbps:.0} MB/s read, {:.0} random reads/s at depth {}, {:.0} at depth {}{write_note}",
            device.name, result.started_at, shallow.iops, shallow.depth, deep.iops, deep.depth
        ),
        capacity: device.size,
        price,
        read,
        write: ByteRate(if write_mbps > 0.0 { write_mbps } else { read_mbps } * 1e6),
        rotational: device.rotational,
        random: random_cost(device.rotational, read, shallow, deep),
        max_request: None,
        merges: true,
    })
}

/// The index in the target's devices of the one drive the result measured (the partition's disk when the
/// target is on a partition); a pool or a target without a block device cannot describe one drive.
fn measured_device(name: &str, result: &RunResult) -> Result<usize, FromResultError> {
    let devices = &result.target.devices;
    let direct: Vec<usize> = (0..devices.len())
        .filter(|&i| {
            let role = &devices[i].role;
            !role.contains("loop backing store") && !role.contains("disk holding partition")
        })
        .collect();
    if direct.len() > 1 {
        let list = direct.iter().map(|&i| devices[i].name.as_str()).collect::<Vec<_>>().join(", ");
        return Err(FromResultError::Pool { name: name.into(), count: direct.len(), list });
    }
    let top = *direct.first().ok_or_else(|| FromResultError::NoDevice { name: name.into() })?;
    Ok(match &devices[top].parent {
        Some(parent) => devices.iter().position(|d| &d.name == parent).unwrap_or(top),
        None => top,
    })
}

/// The best sequential read and write MB/s (write 0 when no write phase ran).
fn sequential_mbps(name: &str, result: &RunResult) -> Result<(f64, f64), FromResultError> {
    let best = |rw: &str, read: bool| {
        let phases = result.phases.iter().filter(|p| measures_the_drive(p) && p.rw == rw);
        phases.filter_map(|p| rate_of(p, read)).map(|o| o.mbps).fold(0.0, f64::max)
    };
    let read_mbps = best("read", true);
    if read_mbps <= 0.0 {
        return Err(FromResultError::Missing {
            name: name.into(),
            what: "sequential read",
            flags: "--rw read --bs 1M",
        });
    }
    Ok((read_mbps, best("write", false)))
}

/// The random-read phases of the smallest block size (a check's 4 KiB ones, not its estimate's stream-sized
/// reads) at the shallowest and the deepest queue (ties: the slower first).
fn random_points(name: &str, result: &RunResult) -> Result<(RandomPoint, RandomPoint), FromResultError> {
    let mut random: Vec<RandomPoint> = result
        .phases
        .iter()
        .filter(|p| measures_the_drive(p) && p.rw == "randread")
        .filter_map(|p| {
            rate_of(p, true).map(|o| RandomPoint { depth: p.iodepth * p.jobs, iops: o.iops, bs: block_size(p) })
        })
        .collect();
    let smallest = random.iter().map(|p| p.bs).fold(f64::INFINITY, f64::min);
    random.retain(|p| p.bs == smallest);
    random.sort_by(|a, b| a.depth.cmp(&b.depth).then(a.iops.total_cmp(&b.iops)));
    match (random.first(), random.last()) {
        (Some(&shallow), Some(&deep)) => Ok((shallow, deep)),
        _ => Err(FromResultError::Missing { name: name.into(), what: "random read", flags: "--rw randread --bs 4k" }),
    }
}

/// A rotating drive's access times (`1 ÷ IOPS − bs ÷ rate`: the shallow queue's unloaded, the deep queue's
/// loaded); a flash drive's 4 KiB IOPS at the deep queue, and at depth 1 when one was measured.
pub(super) fn random_cost(rotational: bool, read: ByteRate, shallow: RandomPoint, deep: RandomPoint) -> RandomCost {
    if rotational {
        let access = |p: RandomPoint| Duration::from_secs_f64((1.0 / p.iops - p.bs / read.0).max(1e-6));
        RandomCost::Positioning { read: access(shallow), write: access(shallow), read_loaded: access(deep) }
    } else {
        let iops_4k = |p: RandomPoint| p.iops * (p.bs / 4096.0).max(1.0);
        RandomCost::OpLimit {
            read_iops: iops_4k(deep),
            write_iops: iops_4k(deep),
            read_iops_qd1: (shallow.depth == 1).then(|| iops_4k(shallow)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunResult {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/result-v1.json"))
            .expect("the fixture exists");
        serde_json::from_str(&text).expect("the fixture parses")
    }

    #[test]
    fn a_result_without_a_sequential_read_says_what_to_run() {
        // The fixture has a sequential write and a random read phase, no sequential read.
        let e = drive_from_result("vda", &fixture(), None).unwrap_err().to_string();
        assert!(e.contains("no sequential read phase") && e.contains("--rw read"), "{e}");
    }

    #[test]
    fn a_check_result_is_read_from_its_raw_phases_only() {
        // A check holds its estimate's stream-sized random reads, stream steps and file-set phases beside its
        // four raw phases; only the raw ones describe the drive (`plan --drive-result CHECK.json`, which check's
        // planner hint suggests).
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/check-v1.json"))
            .expect("the check fixture exists");
        let mut result: RunResult = serde_json::from_str(&text).expect("the check fixture parses");
        let plain = drive_from_result("vda", &result, None).unwrap();
        let mut estimate = result.phases[3].clone();
        (estimate.bs, estimate.iodepth) = ("1M".into(), 64);
        let mut files = result.phases[6].clone();
        assert!(files.file_ops.is_some() && files.rw == "read");
        files.read.as_mut().unwrap().mbps *= 100.0;
        result.phases.extend([estimate, files]);
        let with_others = drive_from_result("vda", &result, None).unwrap();
        assert_eq!(with_others.source, plain.source);
        assert!(plain.source.contains("at depth 32"), "{}", plain.source);
    }

    #[test]
    fn a_result_of_one_drive_gives_its_figures() {
        let mut result = fixture();
        let mut read = result.phases[0].clone();
        read.rw = "read".into();
        read.read = read.write.take();
        result.phases.push(read);
        let drive = drive_from_result("vda", &result, None).unwrap();
        assert_eq!(drive.capacity, Bytes(274_877_906_944));
        assert!(drive.rotational);
        assert!(drive.read.0 > 0.0 && drive.write.0 > 0.0);
        assert!(matches!(drive.random, RandomCost::Positioning { .. }));
    }
}
