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

fn rate_of(phase: &PhaseResult, read: bool) -> Option<&crate::results::OpResult> {
    if read { phase.read.as_ref() } else { phase.write.as_ref() }.filter(|o| o.ops > 0)
}

fn block_size(phase: &PhaseResult) -> f64 {
    Bytes::parse(&phase.bs).map_or(4096.0, |b| b.0 as f64)
}

/// The drive `name` as measured in `result`, priced at `price`.
pub fn drive_from_result(name: &str, result: &RunResult, price: Option<Price>) -> Result<Drive, FromResultError> {
    let devices = &result.target.devices;
    let direct: Vec<_> = devices
        .iter()
        .filter(|d| !d.role.contains("loop backing store") && !d.role.contains("disk holding partition"))
        .collect();
    if direct.len() > 1 {
        let list = direct.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
        return Err(FromResultError::Pool { name: name.into(), count: direct.len(), list });
    }
    let top = direct.first().ok_or_else(|| FromResultError::NoDevice { name: name.into() })?;
    let device = match &top.parent {
        Some(parent) => devices.iter().find(|d| &d.name == parent).unwrap_or(top),
        None => top,
    };
    let best = |rw: &str, read: bool| {
        result.phases.iter().filter(|p| p.rw == rw).filter_map(|p| rate_of(p, read)).map(|o| o.mbps).fold(0.0, f64::max)
    };
    let read_mbps = best("read", true);
    if read_mbps <= 0.0 {
        return Err(FromResultError::Missing {
            name: name.into(),
            what: "sequential read",
            flags: "--rw read --bs 1M",
        });
    }
    let write_mbps = best("write", false);
    let mut random: Vec<(u32, f64, f64)> = result
        .phases
        .iter()
        .filter(|p| p.rw == "randread")
        .filter_map(|p| rate_of(p, true).map(|o| (p.iodepth * p.jobs, o.iops, block_size(p))))
        .collect();
    random.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let (Some(&shallow), Some(&deep)) = (random.first(), random.last()) else {
        return Err(FromResultError::Missing {
            name: name.into(),
            what: "random read",
            flags: "--rw randread --bs 4k",
        });
    };
    let read = ByteRate(read_mbps * 1e6);
    let access = |(_, iops, bs): (u32, f64, f64)| Duration::from_secs_f64((1.0 / iops - bs / read.0).max(1e-6));
    let random = if device.rotational {
        RandomCost::Positioning { read: access(shallow), write: access(shallow), read_loaded: access(deep) }
    } else {
        let iops_4k = |(_, iops, bs): (u32, f64, f64)| iops * (bs / 4096.0).max(1.0);
        RandomCost::OpLimit {
            read_iops: iops_4k(deep),
            write_iops: iops_4k(deep),
            read_iops_qd1: (shallow.0 == 1).then(|| iops_4k(shallow)),
        }
    };
    let write_note = if write_mbps > 0.0 { "" } else { "; no write phase: writes taken as fast as reads" };
    Ok(Drive {
        name: name.into(),
        product: device.model.clone().unwrap_or_else(|| device.name.clone()),
        source: format!(
            "measured by streamcap on {} ({}): {read_mbps:.0} MB/s read, {:.0} random reads/s at depth {}, {:.0} at depth {}{write_note}",
            device.name, result.started_at, shallow.1, shallow.0, deep.1, deep.0
        ),
        capacity: device.size,
        price,
        read,
        write: ByteRate(if write_mbps > 0.0 { write_mbps } else { read_mbps } * 1e6),
        rotational: device.rotational,
        random,
        max_request: None,
        merges: true,
    })
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
