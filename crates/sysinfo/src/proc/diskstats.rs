//! /proc/diskstats: per-device I/O counters, and the activity (IOPS, MB/s, busy %, queue) between two samples.
//!
//! The kernel's counters (Documentation/admin-guide/iostats.rst) are cumulative since the device appeared:
//! activity is always a difference of two samples over a wall-clock interval the caller measured. This file
//! does not decide which devices matter (that is `topology`) and does not sample on a timer.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

use super::super::{SysinfoError, read_text};

/// Sectors in /proc/diskstats are always 512 bytes, whatever the device's logical block size (the block
/// layer counts in 512-byte units internally).
pub const SECTOR_BYTES: u64 = 512;

/// One line of /proc/diskstats: cumulative counters for one block device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskStat {
    /// Kernel device name ("vda", "loop0", "dm-0").
    pub name: String,
    /// Device major number.
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// Reads completed.
    pub reads: u64,
    /// Adjacent reads merged into one request.
    pub read_merges: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent by all reads (summed over requests, so it can exceed wall time).
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Adjacent writes merged into one request.
    pub write_merges: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent by all writes (summed over requests).
    pub write_ms: u64,
    /// Requests in flight at the moment of sampling (a gauge, not a counter).
    pub in_flight: u64,
    /// Milliseconds during which at least one request was in flight ("busy time").
    pub io_ticks_ms: u64,
    /// Milliseconds of in-flight time weighted by the number of requests in flight (queue-time integral).
    pub weighted_ms: u64,
}

/// Parses /proc/diskstats text. Kernels since 2.6.25 print 14 fields per line, 4.18 adds 4 discard fields and
/// 5.5 adds 2 flush fields; only the first 14 are read, so every layout gives the same result. Lines with
/// fewer fields (the 7-field partition lines of kernels before 2.6.25) or non-numeric fields are skipped.
pub fn parse_diskstats(text: &str) -> Vec<DiskStat> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<DiskStat> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 14 {
        return None;
    }
    let n = |i: usize| fields[i].parse::<u64>().ok();
    Some(DiskStat {
        name: fields[2].to_string(),
        major: fields[0].parse().ok()?,
        minor: fields[1].parse().ok()?,
        reads: n(3)?,
        read_merges: n(4)?,
        read_sectors: n(5)?,
        read_ms: n(6)?,
        writes: n(7)?,
        write_merges: n(8)?,
        write_sectors: n(9)?,
        write_ms: n(10)?,
        in_flight: n(11)?,
        io_ticks_ms: n(12)?,
        weighted_ms: n(13)?,
    })
}

/// Reads and parses the live /proc/diskstats.
pub fn read_diskstats() -> Result<Vec<DiskStat>, SysinfoError> {
    Ok(parse_diskstats(&read_text("/proc/diskstats")?))
}

/// What one device did between two samples, as iostat would show it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiskActivity {
    /// Kernel device name.
    pub name: String,
    /// Reads completed in the interval.
    pub reads: u64,
    /// Writes completed in the interval.
    pub writes: u64,
    /// Bytes read in the interval.
    pub read_bytes: Bytes,
    /// Bytes written in the interval.
    pub write_bytes: Bytes,
    /// Percent of the interval with at least one request in flight (iostat %util), 0–100. For devices that
    /// serve requests in parallel (SSD, NVMe, RAID) 100 % does not mean saturated.
    pub busy_pct: f64,
    /// Average number of requests in flight (iostat aqu-sz).
    pub avg_queue: f64,
    /// Reads per second.
    pub read_iops: f64,
    /// Writes per second.
    pub write_iops: f64,
    /// Read throughput in decimal megabytes per second (10^6 bytes/s).
    pub read_mbps: f64,
    /// Write throughput in decimal megabytes per second (10^6 bytes/s).
    pub write_mbps: f64,
    /// Reads and writes merged with a neighbour by the block layer.
    #[serde(default)]
    pub read_merges: u64,
    #[serde(default)]
    pub write_merges: u64,
    /// Milliseconds spent on reads and on writes, all requests together (fio's read_ticks, write_ticks).
    #[serde(default)]
    pub read_ticks_ms: u64,
    #[serde(default)]
    pub write_ticks_ms: u64,
    /// Milliseconds weighted by the number of requests in flight (fio's in_queue).
    #[serde(default)]
    pub in_queue_ms: u64,
}

impl DiskActivity {
    /// The activity between two samples of the same device taken `elapsed` apart. Counters are subtracted with
    /// saturation: they restart from zero when a device is re-created (a loop device detached and attached
    /// again), and a negative difference would otherwise become an absurd rate. A zero `elapsed` gives counts
    /// but zero rates.
    pub fn between(before: &DiskStat, after: &DiskStat, elapsed: Duration) -> DiskActivity {
        let reads = after.reads.saturating_sub(before.reads);
        let writes = after.writes.saturating_sub(before.writes);
        let read_bytes = after.read_sectors.saturating_sub(before.read_sectors).saturating_mul(SECTOR_BYTES);
        let write_bytes = after.write_sectors.saturating_sub(before.write_sectors).saturating_mul(SECTOR_BYTES);
        let ticks_ms = after.io_ticks_ms.saturating_sub(before.io_ticks_ms) as f64;
        let weighted_ms = after.weighted_ms.saturating_sub(before.weighted_ms) as f64;
        let secs = elapsed.as_secs_f64();
        let elapsed_ms = secs * 1000.0;
        let per_sec = |count: u64| if secs > 0.0 { count as f64 / secs } else { 0.0 };
        DiskActivity {
            name: after.name.clone(),
            reads,
            writes,
            read_bytes: Bytes(read_bytes),
            write_bytes: Bytes(write_bytes),
            // io_ticks is sampled with jiffy granularity, so it can overshoot the interval slightly: cap at 100.
            busy_pct: if elapsed_ms > 0.0 { (ticks_ms / elapsed_ms * 100.0).min(100.0) } else { 0.0 },
            // Little's law on the kernel's integral of queue depth over time.
            avg_queue: if elapsed_ms > 0.0 { weighted_ms / elapsed_ms } else { 0.0 },
            read_iops: per_sec(reads),
            write_iops: per_sec(writes),
            read_mbps: per_sec(read_bytes) / 1e6,
            write_mbps: per_sec(write_bytes) / 1e6,
            read_merges: after.read_merges.saturating_sub(before.read_merges),
            write_merges: after.write_merges.saturating_sub(before.write_merges),
            read_ticks_ms: after.read_ms.saturating_sub(before.read_ms),
            write_ticks_ms: after.write_ms.saturating_sub(before.write_ms),
            in_queue_ms: after.weighted_ms.saturating_sub(before.weighted_ms),
        }
    }

    /// Activity of every device present in both samples, matched by name, in the order of `after`.
    pub fn between_all(before: &[DiskStat], after: &[DiskStat], elapsed: Duration) -> Vec<DiskActivity> {
        after
            .iter()
            .filter_map(|a| before.iter().find(|b| b.name == a.name).map(|b| DiskActivity::between(b, a, elapsed)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Kernel 6.x: 20 fields (14 classic + 4 discard + 2 flush).
    const MODERN: &str = "\
 253       0 zram0 12 0 96 0 0 0 0 0 0 4 4 0 0 0 0 0 0
 254       0 vda 48517 3218 4213538 21990 120077 95034 9834712 152206 0 97176 186893 2211 0 5439216 1023 9121 11673
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
";
    // Kernel before 4.18: 14 fields; and a 7-field partition line from a kernel before 2.6.25.
    const OLD: &str = "\
   8       0 sda 1000 10 80000 500 2000 20 160000 900 1 1200 1400
   8       1 sda1 900 72000 1800 144000
";

    #[test]
    fn parses_kernel_6_lines_with_discard_and_flush_fields() {
        let stats = parse_diskstats(MODERN);
        assert_eq!(stats.len(), 3);
        let vda = &stats[1];
        assert_eq!((vda.name.as_str(), vda.major, vda.minor), ("vda", 254, 0));
        assert_eq!((vda.reads, vda.read_merges, vda.read_sectors, vda.read_ms), (48517, 3218, 4213538, 21990));
        assert_eq!((vda.writes, vda.write_merges, vda.write_sectors, vda.write_ms), (120077, 95034, 9834712, 152206));
        assert_eq!((vda.in_flight, vda.io_ticks_ms, vda.weighted_ms), (0, 97176, 186893));
        assert_eq!(stats[2].name, "loop0");
    }

    #[test]
    fn parses_old_14_field_lines_and_skips_short_partition_lines() {
        let stats = parse_diskstats(OLD);
        assert_eq!(stats.len(), 1, "{stats:?}");
        assert_eq!(stats[0].name, "sda");
        assert_eq!((stats[0].in_flight, stats[0].io_ticks_ms, stats[0].weighted_ms), (1, 1200, 1400));
    }

    #[test]
    fn skips_garbage_lines() {
        assert!(parse_diskstats("\n   x y z\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 oops\n").is_empty());
    }

    fn stat(reads: u64, sectors: u64, ticks: u64, weighted: u64) -> DiskStat {
        DiskStat {
            name: "sdb".into(),
            major: 8,
            minor: 16,
            reads,
            read_merges: 0,
            read_sectors: sectors,
            read_ms: 0,
            writes: reads / 2,
            write_merges: 0,
            write_sectors: sectors / 2,
            write_ms: 0,
            in_flight: 0,
            io_ticks_ms: ticks,
            weighted_ms: weighted,
        }
    }

    #[test]
    fn activity_is_rates_over_the_interval() {
        // 2 s: 4000 reads of 8 sectors (4 KiB) each, busy 1.5 s, queue integral 6 s.
        let a = DiskActivity::between(&stat(1000, 0, 0, 0), &stat(5000, 32000, 1500, 6000), Duration::from_secs(2));
        assert_eq!(a.reads, 4000);
        assert_eq!(a.writes, 2000);
        assert_eq!(a.read_bytes, Bytes(32000 * 512));
        assert_eq!(a.write_bytes, Bytes(16000 * 512));
        assert_eq!(a.read_iops, 2000.0);
        assert_eq!(a.write_iops, 1000.0);
        assert!((a.read_mbps - 8.192).abs() < 1e-9, "{}", a.read_mbps);
        assert!((a.write_mbps - 4.096).abs() < 1e-9, "{}", a.write_mbps);
        assert_eq!(a.busy_pct, 75.0);
        assert_eq!(a.avg_queue, 3.0);
    }

    #[test]
    fn busy_is_capped_and_reset_counters_do_not_go_negative() {
        let a = DiskActivity::between(&stat(0, 0, 0, 0), &stat(10, 80, 1100, 0), Duration::from_secs(1));
        assert_eq!(a.busy_pct, 100.0);
        // A re-attached loop device starts again from zero: no wrap-around to huge numbers.
        let reset = DiskActivity::between(&stat(9000, 9000, 9000, 9000), &stat(5, 40, 3, 3), Duration::from_secs(1));
        assert_eq!((reset.reads, reset.read_bytes, reset.busy_pct), (0, Bytes(0), 0.0));
        let zero_time = DiskActivity::between(&stat(0, 0, 0, 0), &stat(10, 80, 5, 5), Duration::ZERO);
        assert_eq!((zero_time.reads, zero_time.read_iops, zero_time.busy_pct), (10, 0.0, 0.0));
    }

    #[test]
    fn between_all_matches_devices_by_name() {
        let before = parse_diskstats(MODERN);
        let mut after = before.clone();
        after[1].reads += 100;
        after.push(stat(1, 1, 1, 1));
        let all = DiskActivity::between_all(&before, &after, Duration::from_secs(1));
        assert_eq!(all.len(), 3, "a device missing from `before` is left out");
        assert_eq!(all[1].name, "vda");
        assert_eq!(all[1].reads, 100);
    }

    #[test]
    fn live_diskstats_parse() {
        let stats = read_diskstats().expect("/proc/diskstats is readable on Linux");
        assert!(!stats.is_empty());
    }
}
