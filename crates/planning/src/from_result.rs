//! A drive model from a streamcap result of one drive (`run`, or `check`, whose raw phases are in the result
//! too): sequential MB/s from its sequential read and write phases, random-read IOPS at the shallowest and the
//! deepest queue from its random-read phases, capacity and rotational from the target's device facts. Only
//! figures the drive served count: a read phase whose bytes the target's devices did not read (the page cache
//! served it, `cache_served`) or that a cache beneath the OS served (a device flagged implausible) describes
//! memory or a cache, not the drive, and is left out, said in the drive's `source`; a result with nothing else
//! is refused. Reads a parsed `RunResult`; the app reads the file.

use std::time::Duration;

use super::drive::{Drive, Price, RandomCost};
use super::honest::{self, Figures};
use crate::results::{Layer, PhaseResult, RunResult, own_device_reads};
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
    #[error(
        "{name}: the result's {what} figures do not describe the drive: '{phase}' {why}; measure the drive with \
         direct I/O on a data set larger than the RAM (`streamcap check` on a directory of the drive)"
    )]
    CacheServed { name: String, what: &'static str, phase: String, why: String },
}

/// The devices served a phase's reads when they read at least this share of its bytes; below it, a cache did.
const FROM_DEVICE: f64 = 0.5;

/// Why a phase's reads do not describe the drive beneath, if they do not: the target's own devices read less
/// than half of what the phase read (the page cache served the rest), or one of them did what it says it cannot
/// (a cache beneath the OS: its host's or a controller's). `None` for a phase whose devices served its reads,
/// for one without reads, and where the devices' activity was not recorded.
pub fn cache_served(phase: &PhaseResult) -> Option<String> {
    let own: Vec<_> = phase.devices.iter().filter(|d| d.layer() != Layer::Beneath).collect();
    if let Some((device, flag)) = own.iter().find_map(|d| Some((d, d.implausible.as_ref()?))) {
        return Some(format!("was served by a cache beneath the OS: {}: {flag}", device.activity.name));
    }
    let bytes = phase.read.as_ref().map_or(0, |r| r.bytes);
    let device = own_device_reads(&phase.devices);
    let recorded = own.iter().any(|d| d.layer() == Layer::Own);
    (recorded && bytes > 0 && (device as f64) < FROM_DEVICE * bytes as f64)
        .then(|| format!("read {} while the devices read {}: the page cache served it", Bytes(bytes), Bytes(device)))
}

/// A phase that measured the drive with plain reads or writes: not a stream step (paced viewers at a depth of
/// hundreds) and not a file-set phase (metadata and small files), which a check result also holds; and one whose
/// reads the drive served, not a cache (`cache_served`).
fn measures_the_drive(phase: &PhaseResult) -> bool {
    phase.streams.is_none() && phase.file_ops.is_none() && cache_served(phase).is_none()
}

fn rate_of(phase: &PhaseResult, read: bool) -> Option<&crate::results::OpResult> {
    if read { phase.read.as_ref() } else { phase.write.as_ref() }.filter(|o| o.ops > 0)
}

fn block_size(phase: &PhaseResult) -> f64 {
    Bytes::parse(&phase.bs).map_or(4096.0, |b| b.0 as f64)
}

/// One random-read phase: queue depth × jobs, reads/s, block size in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    let write_note = if write_mbps > 0.0 { "" } else { "; no write phase: writes taken as fast as reads" };
    let write_mbps = if write_mbps > 0.0 { write_mbps } else { read_mbps };
    let measured = Figures {
        rotational: device.rotational,
        merges: true,
        read: read_mbps * 1e6,
        write: write_mbps * 1e6,
        shallow,
        deep,
        write_iops: None,
        latency_known: true,
        notes: Vec::new(),
    };
    let f = honest::correct(&device.name, device.rotational, &result.target.throttles, measured);
    let read = ByteRate(f.read);
    let corrected = f.notes.iter().map(|n| format!("; {n}")).collect::<String>();
    let left_out: Vec<String> = result
        .phases
        .iter()
        .filter(|p| p.streams.is_none() && p.file_ops.is_none())
        .filter_map(|p| Some(format!("'{}' {}", p.name, cache_served(p)?)))
        .collect();
    let left_out = if left_out.is_empty() { String::new() } else { format!("; left out: {}", left_out.join("; ")) };
    Ok(Drive {
        name: name.into(),
        product: device.model.clone().unwrap_or_else(|| device.name.clone()),
        source: format!(
            "measured by streamcap on {} ({}): {read_mbps:.0} MB/s read, {:.0} random reads/s at depth {}, {:.0} at depth {}{write_note}{left_out}{corrected}",
            device.name, result.started_at, shallow.iops, shallow.depth, deep.iops, deep.depth
        ),
        capacity: device.size,
        price,
        read,
        write: ByteRate(f.write),
        rotational: f.rotational,
        random: match random_cost(f.rotational, read, f.shallow, f.deep) {
            RandomCost::OpLimit { read_iops, write_iops, read_iops_qd1 } => RandomCost::OpLimit {
                read_iops,
                write_iops: f.write_iops.unwrap_or(write_iops),
                read_iops_qd1: read_iops_qd1.filter(|_| f.latency_known),
            },
            positioning => positioning,
        },
        max_request: None,
        merges: f.merges,
        cache: None,
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

/// The first phase of `rw` left out because a cache served it, as the error that says so.
fn cache_error(name: &str, result: &RunResult, rw: &str, what: &'static str) -> Option<FromResultError> {
    let phases = result.phases.iter().filter(|p| p.streams.is_none() && p.file_ops.is_none() && p.rw == rw);
    phases.filter(|p| rate_of(p, true).is_some()).find_map(|p| {
        let why = cache_served(p)?;
        Some(FromResultError::CacheServed { name: name.into(), what, phase: p.name.clone(), why })
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
        if let Some(e) = cache_error(name, result, "read", "sequential read") {
            return Err(e);
        }
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
        _ => Err(cache_error(name, result, "randread", "random read").unwrap_or(FromResultError::Missing {
            name: name.into(),
            what: "random read",
            flags: "--rw randread --bs 4k",
        })),
    }
}

/// A rotating drive's access times (`1 ÷ IOPS − bs ÷ rate`: the shallow queue's unloaded, the deep queue's
/// loaded); a flash drive's 4 KiB IOPS at the deep queue, and at depth 1 when one was measured.
pub(super) fn random_cost(rotational: bool, read: ByteRate, shallow: RandomPoint, deep: RandomPoint) -> RandomCost {
    if rotational {
        let access = |p: RandomPoint| Duration::from_secs_f64((1.0 / p.iops - p.bs / read.0).max(1e-6));
        RandomCost::Positioning {
            read: access(shallow),
            write: access(shallow),
            read_loaded: access(deep),
            revolution: super::drive::REVOLUTION_7200,
        }
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
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/result-v1.json"))
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
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/check-v1.json"))
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
        result.phases.push(as_read(&result.phases[0]));
        let drive = drive_from_result("vda", &result, None).unwrap();
        assert_eq!(drive.capacity, Bytes(274_877_906_944));
        // vda, a virtual disk, says it is rotational, but reads randomly faster than any spinning disk: its flag
        // is not believed, and the source says so (issue 28).
        assert!(!drive.rotational);
        assert!(drive.source.contains("vda says it is rotational, yet"), "{}", drive.source);
        assert!(drive.read.0 > 0.0 && drive.write.0 > 0.0);
        assert!(matches!(drive.random, RandomCost::OpLimit { .. }));
    }

    /// The fixture's write phase made a sequential read of the same bytes, read by its device.
    fn as_read(write: &PhaseResult) -> PhaseResult {
        let mut read = write.clone();
        read.rw = "read".into();
        read.read = read.write.take();
        let device = &mut read.devices[0].activity;
        (device.read_bytes, device.write_bytes) = (device.write_bytes, Bytes(0));
        read
    }

    #[test]
    fn page_cache_figures_are_left_out_and_a_result_of_nothing_else_is_refused() {
        // A check's page-cache phase: 12,884 MB/s of buffered re-reads while the device read nothing. Beside a
        // sequential read the device served it is left out, and the drive's source says so.
        let mut result = fixture();
        let device_read = as_read(&result.phases[0]);
        let mut cached = device_read.clone();
        cached.name = "page cache".into();
        cached.read.as_mut().unwrap().mbps = 12_884.0;
        cached.devices[0].activity.read_bytes = Bytes(0);
        assert!(cache_served(&cached).unwrap().contains("the page cache served it"));
        assert_eq!(cache_served(&device_read), None);
        result.phases.extend([device_read.clone(), cached.clone()]);
        let drive = drive_from_result("vda", &result, None).unwrap();
        assert!((drive.read.0 / 1e6 - device_read.read.as_ref().unwrap().mbps).abs() < 1e-6, "{}", drive.read.0);
        assert!(drive.source.contains("left out: 'page cache' read"), "{}", drive.source);
        // Only the cached one: refused, naming the phase and why.
        result.phases.retain(|p| p.name != device_read.name);
        let e = drive_from_result("vda", &result, None).unwrap_err().to_string();
        assert!(e.contains("sequential read figures do not describe the drive: 'page cache'"), "{e}");
        assert!(e.contains("the page cache served it"), "{e}");
        // A device that did what it says it cannot: a cache beneath the OS served the phase.
        let mut beneath = fixture();
        beneath.phases.push(as_read(&beneath.phases[0]));
        beneath.phases[1].devices[0].implausible = Some("rotational, yet 59726 random reads/s".into());
        let e = drive_from_result("vda", &beneath, None).unwrap_err().to_string();
        assert!(e.contains("a cache beneath the OS") && e.contains("random read figures"), "{e}");
    }
}
