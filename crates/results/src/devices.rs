//! Which of the devices beneath a target did the run's work, and which of their activity was someone else's.
//!
//! The devices are in three layers, by the role the topology walk gave them: the target's own (the filesystem's
//! device, a pool's members, a device given as the target), the members of an md/dm/stacked device (dedicated to
//! it), and what lies beneath (the disk holding a loop device's backing file, the disk holding a partition). A
//! disk beneath is the whole host's: its counters hold every other process's I/O too. So the run's part of it is
//! at most what the layer above moved, and the rest is other activity, kept apart (`DeviceResult::others`) and
//! never added to the run's figures. The target's own devices may be shared as well (a directory on the host's
//! disk): there the run's reads are at most what this process asked the block layer for (/proc/self/io), and a
//! surplus is other processes' reads. Writes of the target's own devices are not split: the kernel writes dirty
//! pages back when it chooses, so no per-process counter says which writes in a span were the run's.

use serde::{Deserialize, Serialize};

use super::{DeviceResult, StreamsStep, TargetInfo, ThrottleKind, read_limit_words};
use crate::sysinfo::topology::{
    ROLE_DM_MEMBER, ROLE_LOOP_BACKING, ROLE_MD_MEMBER, ROLE_PARTITION_DISK, ROLE_STACK_MEMBER,
};

/// Activity of a device that the run did not cause: other processes on a shared disk. It is part of the
/// device's `activity` and is left out of the run's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OtherActivity {
    /// Bytes read that were not the run's.
    pub read_bytes: u64,
    /// Bytes written that were not the run's.
    pub write_bytes: u64,
}

/// Where a device lies relative to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The target's own device: the filesystem's device, a pool member, a device given as the target.
    Own,
    /// A member of an md, dm or stacked device that is the target's own.
    Member,
    /// Beneath the target: the disk holding a loop device's backing file or a partition, shared with the host.
    Beneath,
}

impl Layer {
    /// The layer of a device listed under `role`.
    pub fn of(role: &str) -> Layer {
        if role.contains(ROLE_LOOP_BACKING) || role == ROLE_PARTITION_DISK {
            Layer::Beneath
        } else if [ROLE_MD_MEMBER, ROLE_DM_MEMBER, ROLE_STACK_MEMBER].contains(&role) {
            Layer::Member
        } else {
            Layer::Own
        }
    }
}

impl DeviceResult {
    pub fn layer(&self) -> Layer {
        Layer::of(&self.role)
    }

    /// Bytes read that were the run's (all of them unless some were found to be other activity).
    pub fn own_read_bytes(&self) -> u64 {
        self.activity.read_bytes.0.saturating_sub(self.others.map_or(0, |o| o.read_bytes))
    }

    /// Bytes written that were the run's.
    pub fn own_write_bytes(&self) -> u64 {
        self.activity.write_bytes.0.saturating_sub(self.others.map_or(0, |o| o.write_bytes))
    }
}

/// The run's reads from the target's own devices (the filesystem's device, or a pool's members together): what
/// the layer that serves the target read for it, never a disk beneath.
pub fn own_device_reads(devices: &[DeviceResult]) -> u64 {
    devices.iter().filter(|d| d.layer() == Layer::Own).map(DeviceResult::own_read_bytes).sum()
}

/// The busiest of the target's own devices and their members (never a disk beneath, whose busy time is the
/// whole host's).
pub fn busiest_own(devices: &[DeviceResult]) -> Option<&DeviceResult> {
    devices
        .iter()
        .filter(|d| d.layer() != Layer::Beneath)
        .max_by(|a, b| a.activity.busy_pct.total_cmp(&b.activity.busy_pct))
}

/// Whether a read throttle binds the devices beneath `target`: then reads reach at most its limit, however fast
/// the storage behind it (a loop device over a page-cached file) is.
pub fn reads_throttled(target: &TargetInfo) -> bool {
    target.throttles.iter().any(|t| t.kind.is_read())
}

/// The throttle that bound a read rate, in a verdict's few words ("a blkio throttle (reads 40 MiB/s on loop0)",
/// from `read_limit_words`): a read bandwidth limit on the target's devices that `read_mbps` (decimal MB/s, the
/// target's as a whole) reached, within 15 % below to 10 % above `k` times the limit for `k` of the throttled
/// devices (a pool may read from one member or from several at once). `None` where no read bandwidth limit binds
/// or the rate stayed clear of it, so the device, not the throttle, set it.
pub fn throttle_bound(target: &TargetInfo, read_mbps: f64) -> Option<String> {
    let limits: Vec<f64> =
        target.throttles.iter().filter(|t| t.kind == ThrottleKind::ReadBps).map(|t| t.limit as f64 / 1e6).collect();
    let smallest = limits.iter().copied().fold(f64::INFINITY, f64::min);
    let reached = (1..=limits.len()).any(|k| {
        let at = k as f64 * smallest;
        read_mbps >= 0.85 * at && read_mbps <= 1.1 * at
    });
    reached.then(|| read_limit_words(&target.throttles)).flatten()
}

/// Whether the disks beneath the target (a loop device's backing disk) read, for the run, at least half of what
/// the target's own devices read in `steps`, and those at least half of what the viewers received: the bytes
/// came from storage, even where the target reaches it through the page cache. False without a disk beneath.
pub fn served_from_beneath(steps: &[StreamsStep]) -> bool {
    let viewers: f64 = steps.iter().map(|s| s.delivered_mbps * s.duration_s * 1e6).sum();
    let own: u64 = steps.iter().map(|s| own_device_reads(&s.devices)).sum();
    let beneath: u64 = steps
        .iter()
        .flat_map(|s| &s.devices)
        .filter(|d| d.layer() == Layer::Beneath)
        .map(DeviceResult::own_read_bytes)
        .sum();
    viewers > 0.0 && own as f64 >= 0.5 * viewers && beneath as f64 >= 0.5 * own as f64
}

/// Splits off the activity that was not the run's. `process_reads`: the bytes this process asked the block
/// layer to read over the same span (/proc/self/io), when known. `slack`: the bytes the run may have had in
/// flight at once (queue depth × jobs × block size; viewers × chunk): the process counts a read when it is
/// submitted and the device when it completes, so reads in flight at either end of the span may be in one
/// count and not the other, and a surplus within that is still the run's.
pub fn attribute(devices: &mut [DeviceResult], process_reads: Option<u64>, slack: u64) {
    if let Some(reads) = process_reads {
        let own: Vec<usize> = (0..devices.len()).filter(|&i| devices[i].layer() == Layer::Own).collect();
        let total: u64 = own.iter().map(|&i| devices[i].activity.read_bytes.0).sum();
        if total > reads.saturating_add(slack) {
            // Other processes' share, spread over the members in proportion to what each read.
            let share = (total - reads - slack) as f64 / total as f64;
            for &i in &own {
                let others = (devices[i].activity.read_bytes.0 as f64 * share).round() as u64;
                add_others(&mut devices[i], others, 0);
            }
        }
    }
    let above: Vec<(String, u64, u64)> = devices
        .iter()
        .filter(|d| d.layer() != Layer::Beneath)
        .map(|d| (d.activity.name.clone(), d.own_read_bytes(), d.activity.write_bytes.0))
        .collect();
    for device in devices.iter_mut().filter(|d| d.layer() == Layer::Beneath) {
        // A loop device's backing store serves the loop devices above; a partition's disk, its partitions.
        let name = device.activity.name.clone();
        let feeds = |n: &str| {
            if device.role == ROLE_PARTITION_DISK { n.starts_with(&name) && n != name } else { n.starts_with("loop") }
        };
        let (read, write) =
            above.iter().filter(|(n, _, _)| feeds(n)).fold((0, 0), |(r, w), (_, dr, dw)| (r + dr, w + dw));
        let a = &device.activity;
        add_others(device, a.read_bytes.0.saturating_sub(read), a.write_bytes.0.saturating_sub(write));
    }
}

fn add_others(device: &mut DeviceResult, read: u64, write: u64) {
    if read + write > 0 {
        let others = device.others.get_or_insert_with(OtherActivity::default);
        others.read_bytes += read;
        others.write_bytes += write;
    }
}

/// One sentence per device with activity that was not the run's: "other activity on the backing disk: vda
/// read 120 MB and wrote 30.0 MB beyond what the devices above it moved for the run (…); left out of the run's
/// figures". `devices` may be summed over several spans.
pub fn other_activity_words(devices: &[(String, String, OtherActivity)]) -> Vec<String> {
    devices
        .iter()
        .filter(|(_, _, o)| o.read_bytes + o.write_bytes > 0)
        .map(|(name, role, o)| {
            let mb = |b: u64| crate::units::format_mbps(b as f64 / 1e6);
            let what = match (o.read_bytes, o.write_bytes) {
                (r, 0) => format!("read {} MB", mb(r)),
                (0, w) => format!("wrote {} MB", mb(w)),
                (r, w) => format!("read {} MB and wrote {} MB", mb(r), mb(w)),
            };
            let place = if Layer::of(role) == Layer::Beneath { "on the backing disk" } else { "on a shared device" };
            let why = if Layer::of(role) == Layer::Beneath {
                "beyond what the devices above it moved for the run (other processes on the host, or the backing \
                 file's own readahead and delayed writeback)"
            } else {
                "that this process did not ask for (other processes on the host)"
            };
            format!(
                "other activity {place}: {name} {what} {why}; left out of the run's figures, though its busy % \
                 includes it"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::DiskActivity;
    use crate::units::Bytes;

    fn device(name: &str, role: &str, read: u64, write: u64) -> DeviceResult {
        let activity = DiskActivity {
            name: name.into(),
            read_bytes: Bytes(read),
            write_bytes: Bytes(write),
            ..DiskActivity::default()
        };
        DeviceResult { role: role.into(), activity, implausible: None, others: None }
    }

    #[test]
    fn a_backing_disk_is_the_runs_only_up_to_what_the_loop_device_above_moved() {
        // loop0 read 100 MB for the run; vda beneath read 130 MB and wrote 50 MB while loop0 wrote 20 MB: the
        // rest was the host's.
        let mut devices = vec![
            device("loop0", "filesystem device", 100_000_000, 20_000_000),
            device("vda", "loop backing store", 130_000_000, 50_000_000),
        ];
        attribute(&mut devices, Some(100_000_000), 0);
        assert_eq!(devices[0].others, None, "this process read all of loop0's bytes");
        assert_eq!(devices[1].others, Some(OtherActivity { read_bytes: 30_000_000, write_bytes: 30_000_000 }));
        assert_eq!((devices[1].own_read_bytes(), devices[1].own_write_bytes()), (100_000_000, 20_000_000));
        assert_eq!(own_device_reads(&devices), 100_000_000, "the backing disk never counts as the target's");
        let words = other_activity_words(&[("vda".into(), "loop backing store".into(), devices[1].others.unwrap())]);
        assert_eq!(words.len(), 1);
        assert!(words[0].starts_with("other activity on the backing disk: vda read 30.0 MB and wrote 30.0 MB beyond"));
    }

    #[test]
    fn a_shared_own_device_keeps_only_what_this_process_read() {
        // A directory on the host's disk: vda read 300 MB while this process asked for 100 MB.
        let mut devices = vec![device("vda", "filesystem device", 300_000_000, 0)];
        attribute(&mut devices, Some(100_000_000), 0);
        assert_eq!(devices[0].own_read_bytes(), 100_000_000);
        // Without the process's figure nothing is split.
        let mut unknown = vec![device("vda", "filesystem device", 300_000_000, 0)];
        attribute(&mut unknown, None, 0);
        assert_eq!(unknown[0].others, None);
        // A pool's members share the surplus by what each read.
        let mut pool = vec![device("loop1", "btrfs pool member", 60, 0), device("loop2", "btrfs pool member", 40, 0)];
        attribute(&mut pool, Some(50), 0);
        assert_eq!((pool[0].own_read_bytes(), pool[1].own_read_bytes()), (30, 20));
    }

    #[test]
    fn a_read_rate_at_a_throttles_limit_is_the_throttles() {
        let mut target: TargetInfo = serde_json::from_value(serde_json::json!({
            "path": "/srv", "kind": "directory", "devices": [],
        }))
        .unwrap();
        assert_eq!(throttle_bound(&target, 37.0), None, "no throttle");
        target.throttles = (0..2)
            .map(|minor| crate::results::DeviceThrottle {
                device: format!("loop{minor}"),
                major: 7,
                minor,
                kind: ThrottleKind::ReadBps,
                limit: 40 << 20,
                file: "/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device".into(),
            })
            .collect();
        let words = "a blkio throttle (reads 40 MiB/s on each of 2 devices)";
        assert_eq!(throttle_bound(&target, 37.2).as_deref(), Some(words), "one member's limit, reached");
        assert_eq!(throttle_bound(&target, 82.0).as_deref(), Some(words), "both members' limits");
        assert_eq!(throttle_bound(&target, 20.0), None, "clear of it: the device set the rate");
        assert!(reads_throttled(&target));
    }

    #[test]
    fn a_memory_backed_targets_bytes_came_from_storage_when_the_disk_beneath_read_them() {
        // A loop device reaching its backing file through the page cache: its own reads are the viewers', and
        // only the backing disk beneath says whether they came from that disk or from the cached file.
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/check-v1.json"))
            .expect("the fixture exists");
        let result: crate::results::RunResult = serde_json::from_str(&text).expect("the fixture parses");
        let mut step = result.check.expect("a check").verdict[2].steps[0].clone();
        let viewers = (step.delivered_mbps * step.duration_s * 1e6) as u64;
        step.devices =
            vec![device("loop0", "filesystem device", viewers, 0), device("vda", "loop backing store", 0, 0)];
        assert!(!served_from_beneath(std::slice::from_ref(&step)), "the backing file was in the page cache");
        step.devices[1].activity.read_bytes = Bytes(viewers);
        assert!(served_from_beneath(std::slice::from_ref(&step)), "the disk beneath read it");
        step.devices.truncate(1);
        assert!(!served_from_beneath(&[step]), "no disk beneath: nothing says where the bytes came from");
    }

    #[test]
    fn a_partitions_disk_is_judged_against_its_partition_and_busiest_skips_disks_beneath() {
        let mut devices =
            vec![device("sda1", "filesystem device", 10, 0), device("sda", "disk holding partition", 25, 0)];
        devices[1].activity.busy_pct = 90.0;
        devices[0].activity.busy_pct = 5.0;
        attribute(&mut devices, None, 0);
        assert_eq!(devices[1].others.map(|o| o.read_bytes), Some(15));
        assert_eq!(busiest_own(&devices).map(|d| d.activity.name.as_str()), Some("sda1"));
        assert_eq!(Layer::of("md member"), Layer::Member);
        assert_eq!(Layer::of("loop backing store (btrfs pool member)"), Layer::Beneath);
    }
}
