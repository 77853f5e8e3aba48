//! Whether a stream step was served by the devices beneath the target or by a cache: the bytes the viewers'
//! reads transferred set beside the bytes the devices read over the step (/proc/diskstats, a pool's members
//! together). A step the devices did not serve is *cache-served*: its figures describe memory (the page cache,
//! a web server's cache), and it cannot count toward a capacity. Pure: reads figures, returns a judgment.
//!
//! The tolerance, 5 %, is one-sided. Every byte a direct read transfers is a device read, counted in diskstats
//! when the request completes, and a step's counters are taken before its viewers start and after the last read
//! completed; so the devices read *at least* what the viewers received, plus metadata (btrfs's checksum tree),
//! readahead (buffered reads), sector rounding and other processes' reads. They read less only where a cache
//! served some of it, or where a file's extents need no device read (holes, btrfs inline extents): a few
//! percent, never a third. The shortfall a step may have is therefore small, and 5 % is the bound the
//! validation matrix holds every counted step to (issue 24). Reading more is said, not held against the step.

use serde::{Deserialize, Serialize};

use super::DeviceResult;
use super::devices::{Layer, own_device_reads};
use crate::units::Bytes;

/// The devices may read this fraction less than the viewers received before the step counts as cache-served.
pub const SERVED_TOLERANCE: f64 = 0.05;

/// Where a step's bytes came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StepServed {
    /// Bytes the devices beneath read over the step (the layer that read the most; a pool's members together);
    /// absent where no device could be watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_read_bytes: Option<u64>,
    /// The devices read more than `SERVED_TOLERANCE` less than the viewers received: a cache served the step,
    /// and it cannot count toward a capacity.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_served: bool,
    /// The judgment in a sentence (empty in results older than it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub served_words: String,
}

/// What can be seen beneath a step's viewers.
#[derive(Debug, Clone, Copy)]
pub enum Beneath<'a> {
    /// The devices beneath the media (the target's, or a local web server's document root).
    Devices(&'a [DeviceResult]),
    /// Nothing that can be compared, and why ("the server is remote: its cache cannot be seen from here").
    Unseen(&'a str),
}

/// The run's reads from the devices beneath the media: the target's own layer (the filesystem's device, or a
/// pool's members together), less what was found to be other processes' (`results::devices::attribute`). A loop
/// device's backing disk and the disk holding a partition are left out: they carry the rest of the host's I/O,
/// and their reads for the run are the layer above's anyway. `None` where the media has no device of its own.
pub fn layer_reads(devices: &[DeviceResult]) -> Option<u64> {
    devices.iter().any(|d| d.layer() == Layer::Own).then(|| own_device_reads(devices))
}

/// Judges one step: `read_bytes` the viewers' reads transferred, against what `beneath` read.
pub fn judge_step(read_bytes: u64, beneath: Beneath<'_>) -> StepServed {
    let device = match beneath {
        Beneath::Devices(devices) => layer_reads(devices),
        Beneath::Unseen(why) => {
            return StepServed {
                served_words: format!("not checked against the devices: {why}"),
                ..Default::default()
            };
        }
    };
    let Some(device) = device else {
        let words = "not checked against the devices: no block device beneath the media was found".to_string();
        return StepServed { served_words: words, ..Default::default() };
    };
    let (viewers, read) = (Bytes(read_bytes), Bytes(device));
    let served =
        |cache_served, words| StepServed { device_read_bytes: Some(device), cache_served, served_words: words };
    if read_bytes == 0 {
        return served(false, format!("the viewers read nothing; the devices read {read}"));
    }
    let ratio = device as f64 / read_bytes as f64;
    if ratio < 1.0 - SERVED_TOLERANCE {
        let share = (1.0 - ratio) * 100.0;
        return served(
            true,
            format!(
                "cache-served: the devices read {read} while the viewers received {viewers}, so {share:.0} % came \
                 from a cache (RAM), not from the devices; the step does not count"
            ),
        );
    }
    let mut words = format!("served by the devices: they read {read} for the {viewers} the viewers received");
    if ratio > 1.0 + SERVED_TOLERANCE {
        words.push_str(&format!(
            " ({:.0} % more: metadata, readahead, or other processes reading the same devices)",
            (ratio - 1.0) * 100.0
        ));
    }
    served(false, words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::DiskActivity;
    use crate::sysinfo::topology::{ROLE_BTRFS_MEMBER, ROLE_FILESYSTEM, ROLE_LOOP_BACKING, ROLE_PARTITION_DISK};

    fn device(name: &str, role: &str, read: u64) -> DeviceResult {
        let activity: DiskActivity = serde_json::from_value(serde_json::json!({
            "name": name, "reads": 1, "writes": 0, "read_bytes": read, "write_bytes": 0, "busy_pct": 0.0,
            "avg_queue": 0.0, "read_iops": 0.0, "write_iops": 0.0, "read_mbps": 0.0, "write_mbps": 0.0
        }))
        .unwrap();
        DeviceResult { role: role.into(), activity, implausible: None, others: None }
    }

    #[test]
    fn a_pool_s_members_are_added_and_the_backing_disk_is_left_out() {
        let devices = [
            device("loop1", ROLE_BTRFS_MEMBER, 80),
            device("loop2", ROLE_BTRFS_MEMBER, 90),
            device("vda", ROLE_LOOP_BACKING, 6_000),
        ];
        assert_eq!(layer_reads(&devices), Some(170));
        assert_eq!(layer_reads(&[device("vda", ROLE_LOOP_BACKING, 6_000)]), None, "only the host's disk");
        let fs = [device("sda1", ROLE_FILESYSTEM, 100), device("sda", ROLE_PARTITION_DISK, 900)];
        assert_eq!(layer_reads(&fs), Some(100), "the whole disk carries its other partitions too");
        // Other processes' reads on a shared device, found by `attribute`, are not the run's.
        let mut shared = [device("vda1", ROLE_FILESYSTEM, 1_000)];
        shared[0].others = Some(crate::results::OtherActivity { read_bytes: 400, write_bytes: 0 });
        assert_eq!(layer_reads(&shared), Some(600));
    }

    /// The btrfs raid10 of issue 24: io_uring's vectored reads were buffered by btrfs, and the members read the
    /// media once (122 MB) while twenty viewers received 335 MB.
    #[test]
    fn a_step_whose_devices_read_a_third_of_the_bytes_is_cache_served() {
        let members: Vec<DeviceResult> =
            (1..=4).map(|n| device(&format!("loop{n}"), ROLE_BTRFS_MEMBER, 30_500_000)).collect();
        let judged = judge_step(335_544_320, Beneath::Devices(&members));
        assert!(judged.cache_served, "{judged:?}");
        assert_eq!(judged.device_read_bytes, Some(122_000_000));
        assert!(judged.served_words.starts_with("cache-served"), "{}", judged.served_words);
        assert!(judged.served_words.contains("64 % came from a cache"), "{}", judged.served_words);
    }

    #[test]
    fn the_tolerance_is_five_percent_short_and_any_excess() {
        let at = |device: u64| judge_step(1_000_000_000, Beneath::Devices(&[device_at(device)]));
        fn device_at(bytes: u64) -> DeviceResult {
            device("sdb", ROLE_FILESYSTEM, bytes)
        }
        assert!(!at(1_000_000_000).cache_served);
        assert!(!at(951_000_000).cache_served, "within 5 %");
        assert!(at(949_000_000).cache_served, "beyond 5 %");
        let more = at(1_400_000_000);
        assert!(!more.cache_served, "reading more is no cache");
        assert!(more.served_words.contains("40 % more"), "{}", more.served_words);
        assert!(!at(1_040_000_000).served_words.contains("more"), "a few percent more is not worth a word");
    }

    #[test]
    fn a_step_with_nothing_to_compare_is_not_judged() {
        let remote = judge_step(10, Beneath::Unseen("the server is remote"));
        assert_eq!((remote.cache_served, remote.device_read_bytes), (false, None));
        assert_eq!(remote.served_words, "not checked against the devices: the server is remote");
        let none = judge_step(10, Beneath::Devices(&[]));
        assert!(!none.cache_served && none.served_words.contains("no block device"), "{none:?}");
        let idle = judge_step(0, Beneath::Devices(&[device("sdb", ROLE_FILESYSTEM, 0)]));
        assert!(!idle.cache_served, "{idle:?}");
    }
}
