//! The I/O throttles that bind this process on the devices beneath a target: a limit that, not the device,
//! may be what a measurement reaches. A loop device throttled to 40 MiB/s of reads serves 40 MiB/s however fast
//! the disk beneath its backing file is, and its busy % stays low, since the requests wait in the throttle
//! before they reach the device.
//!
//! cgroup v1: `blkio.throttle.read_bps_device`, `write_bps_device`, `read_iops_device` and `write_iops_device`
//! ("MAJ:MIN VALUE" per line) of the process's own blkio cgroup and every ancestor up to the root group of the
//! mounted hierarchy, since a parent's limit binds its children. cgroup v2: `io.max` ("MAJ:MIN rbps=… wbps=…
//! riops=… wiops=…", "max" for none) on the same path. For each device and kind the smallest limit found is the
//! one that binds. Also the words that name a throttle ("reads limited to 40 MiB/s by a blkio throttle"), so
//! every command and report says it alike. This file only reads; it never writes a limit.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, format_mbps};

use super::cgroup::{cgroup_dir, has_option};
use super::sysfs::parse_dev_numbers;
use super::topology::{BlockDevice, MountEntry, read_mountinfo};

/// What a throttle limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleKind {
    /// Bytes read per second.
    ReadBps,
    /// Read requests per second.
    ReadIops,
    /// Bytes written per second.
    WriteBps,
    /// Write requests per second.
    WriteIops,
}

impl ThrottleKind {
    const ALL: [ThrottleKind; 4] =
        [ThrottleKind::ReadBps, ThrottleKind::ReadIops, ThrottleKind::WriteBps, ThrottleKind::WriteIops];

    /// The cgroup v1 file that sets it.
    fn v1_file(self) -> &'static str {
        match self {
            ThrottleKind::ReadBps => "blkio.throttle.read_bps_device",
            ThrottleKind::ReadIops => "blkio.throttle.read_iops_device",
            ThrottleKind::WriteBps => "blkio.throttle.write_bps_device",
            ThrottleKind::WriteIops => "blkio.throttle.write_iops_device",
        }
    }

    /// The key of cgroup v2's `io.max`.
    fn v2_key(self) -> &'static str {
        match self {
            ThrottleKind::ReadBps => "rbps",
            ThrottleKind::ReadIops => "riops",
            ThrottleKind::WriteBps => "wbps",
            ThrottleKind::WriteIops => "wiops",
        }
    }

    pub fn is_read(self) -> bool {
        matches!(self, ThrottleKind::ReadBps | ThrottleKind::ReadIops)
    }

    /// "40 MiB/s (41.9 MB/s)" or "150 requests/s".
    fn figure(self, limit: u64) -> String {
        match self {
            ThrottleKind::ReadBps | ThrottleKind::WriteBps => {
                format!("{}/s ({} MB/s)", Bytes(limit), format_mbps(limit as f64 / 1e6))
            }
            ThrottleKind::ReadIops | ThrottleKind::WriteIops => format!("{limit} requests/s"),
        }
    }
}

/// One limit on one device beneath the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceThrottle {
    /// The device's kernel name ("loop3").
    pub device: String,
    pub major: u32,
    pub minor: u32,
    pub kind: ThrottleKind,
    /// Bytes per second (`read_bps`, `write_bps`) or requests per second (`read_iops`, `write_iops`).
    pub limit: u64,
    /// The file that sets it ("/sys/fs/cgroup/blkio/box/blkio.throttle.read_bps_device", or an `io.max`).
    pub file: PathBuf,
}

impl DeviceThrottle {
    /// Bytes per second of a bandwidth limit; `None` for a request limit.
    pub fn bytes_per_sec(&self) -> Option<u64> {
        matches!(self.kind, ThrottleKind::ReadBps | ThrottleKind::WriteBps).then_some(self.limit)
    }

    /// "a blkio throttle" (cgroup v1) or "a cgroup io.max limit" (v2).
    fn mechanism(&self) -> &'static str {
        if self.file.file_name().is_some_and(|n| n == "io.max") { "a cgroup io.max limit" } else { "a blkio throttle" }
    }
}

/// One rule of a limit file: the device numbers, what it limits and the value.
type Rule = ((u32, u32), ThrottleKind, u64);

/// The throttles that bind this process on `devices` (the devices beneath a target), smallest per device and
/// kind, in the devices' order. Empty where no cgroup limits them or the files cannot be read.
pub fn throttles_for(devices: &[BlockDevice]) -> Vec<DeviceThrottle> {
    let Ok(cgroups) = std::fs::read_to_string("/proc/self/cgroup") else { return Vec::new() };
    let Ok(mounts) = read_mountinfo() else { return Vec::new() };
    let numbers: Vec<(String, u32, u32)> = devices.iter().map(|d| (d.name.clone(), d.major, d.minor)).collect();
    throttles_in(&cgroups, &mounts, &numbers)
}

/// As [`throttles_for`], for a process whose /proc/PID/cgroup text is `cgroups`, with the cgroup filesystems
/// mounted as `mounts` lists them, for devices given as (name, major, minor).
pub fn throttles_in(cgroups: &str, mounts: &[MountEntry], devices: &[(String, u32, u32)]) -> Vec<DeviceThrottle> {
    let rules: Vec<(Rule, PathBuf)> = groups(cgroups, mounts).iter().flat_map(|g| g.rules()).collect();
    let mut found = Vec::new();
    for (name, major, minor) in devices {
        for kind in ThrottleKind::ALL {
            let binding = rules
                .iter()
                .filter(|((numbers, k, _), _)| *numbers == (*major, *minor) && *k == kind)
                .min_by_key(|((_, _, value), _)| *value);
            if let Some(((_, _, limit), file)) = binding {
                let (major, minor, limit, file) = (*major, *minor, *limit, file.clone());
                found.push(DeviceThrottle { device: name.clone(), major, minor, kind, limit, file });
            }
        }
    }
    found
}

/// One directory on the path from the process's cgroup up to its hierarchy's root.
struct Level {
    dir: PathBuf,
    v2: bool,
}

impl Level {
    /// Every limit this level sets, with the file that sets it.
    fn rules(&self) -> Vec<(Rule, PathBuf)> {
        if self.v2 {
            let file = self.dir.join("io.max");
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            return parse_io_max(&text).into_iter().map(|r| (r, file.clone())).collect();
        }
        let mut rules = Vec::new();
        for kind in ThrottleKind::ALL {
            let file = self.dir.join(kind.v1_file());
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            rules.extend(parse_v1(&text).into_iter().map(|(numbers, value)| ((numbers, kind, value), file.clone())));
        }
        rules
    }
}

/// The blkio (v1) and io (v2) cgroup directories that bind this process: its own and every ancestor up to the
/// top of the mount that shows the hierarchy (the root group, where the whole hierarchy is mounted).
fn groups(cgroups: &str, mounts: &[MountEntry]) -> Vec<Level> {
    let mut levels = Vec::new();
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "blkio") {
            continue;
        }
        let fs_type = if v2 { "cgroup2" } else { "cgroup" };
        let Some((own, top)) = mounts
            .iter()
            .filter(|m| m.fs_type == fs_type && (v2 || has_option(&m.super_options, "blkio")))
            .find_map(|m| cgroup_dir(m, path).map(|dir| (dir, m.mount_point.clone())))
        else {
            continue;
        };
        let mut at = Some(own.as_path());
        while let Some(dir) = at.filter(|d| d.starts_with(&top)) {
            levels.push(Level { dir: dir.to_path_buf(), v2 });
            at = dir.parent();
        }
    }
    levels
}

/// A v1 throttle file: "MAJ:MIN VALUE" per line; 0 (which removes a rule when written) is no limit.
pub fn parse_v1(text: &str) -> Vec<((u32, u32), u64)> {
    text.lines()
        .filter_map(|line| {
            let (numbers, value) = line.trim().split_once(char::is_whitespace)?;
            let value: u64 = value.trim().parse().ok()?;
            Some((parse_dev_numbers(numbers)?, value)).filter(|_| value > 0)
        })
        .collect()
}

/// cgroup v2 `io.max`: "MAJ:MIN rbps=2097152 wbps=max riops=max wiops=120" per line; "max" is no limit.
fn parse_io_max(text: &str) -> Vec<Rule> {
    let mut rules = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(numbers) = words.next().and_then(parse_dev_numbers) else { continue };
        for word in words {
            let Some((key, value)) = word.split_once('=') else { continue };
            let kind = ThrottleKind::ALL.into_iter().find(|k| k.v2_key() == key);
            if let (Some(kind), Ok(value)) = (kind, value.parse::<u64>()) {
                rules.push((numbers, kind, value));
            }
        }
    }
    rules
}

/// One sentence per throttled device: "loop0: reads limited to 40 MiB/s (41.9 MB/s) and 150 requests/s by a
/// blkio throttle (set in /sys/fs/cgroup/blkio/box)".
pub fn throttle_words(throttles: &[DeviceThrottle]) -> Vec<String> {
    let mut devices: Vec<&str> = throttles.iter().map(|t| t.device.as_str()).collect();
    devices.dedup();
    // Devices limited alike, in one place (a pool's members, throttled to emulate one kind of drive), share one
    // sentence: four members once made the plan's note four repeats of one long sentence.
    let mut alike: Vec<(Vec<&str>, String)> = Vec::new();
    for device in devices {
        let own: Vec<&DeviceThrottle> = throttles.iter().filter(|t| t.device == device).collect();
        let first = own[0];
        let set_in = first.file.parent().unwrap_or(Path::new("/")).display();
        let said = format!("{} by {} (set in {set_in})", limits_words(&own), first.mechanism());
        match alike.iter_mut().find(|(_, words)| *words == said) {
            Some((names, _)) => names.push(device),
            None => alike.push((vec![device], said)),
        }
    }
    alike
        .into_iter()
        .map(|(names, said)| match names.as_slice() {
            [one] => format!("{one}: {said}"),
            [all @ .., last] => format!("{} and {last}, each: {said}", all.join(", ")),
            [] => said,
        })
        .collect()
}

/// "reads limited to 40 MiB/s (41.9 MB/s) and 150 requests/s, writes to 20 MiB/s (21.0 MB/s)".
fn limits_words(own: &[&DeviceThrottle]) -> String {
    let side = |read: bool| {
        let figures: Vec<String> =
            own.iter().filter(|t| t.kind.is_read() == read).map(|t| t.kind.figure(t.limit)).collect();
        (!figures.is_empty()).then(|| figures.join(" and "))
    };
    match (side(true), side(false)) {
        (Some(r), Some(w)) => format!("reads limited to {r}, writes to {w},"),
        (Some(r), None) => format!("reads limited to {r}"),
        (None, Some(w)) => format!("writes limited to {w}"),
        (None, None) => "not limited".into(),
    }
}

/// The limit in a verdict's few words, when reads of the target's devices are throttled: "a blkio throttle
/// (reads 40 MiB/s on loop0)", "a blkio throttle (reads 40 MiB/s on each of 4 devices)". `None` without a read
/// throttle.
pub fn read_limit_words(throttles: &[DeviceThrottle]) -> Option<String> {
    let reads: Vec<&DeviceThrottle> = throttles.iter().filter(|t| t.kind.is_read()).collect();
    let first = reads.first()?;
    let mut devices: Vec<&str> = reads.iter().map(|t| t.device.as_str()).collect();
    devices.dedup();
    let figures: Vec<String> = reads
        .iter()
        .filter(|t| t.device == first.device)
        .map(|t| match t.bytes_per_sec() {
            Some(bps) => format!("{}/s", Bytes(bps)),
            None => format!("{} requests/s", t.limit),
        })
        .collect();
    let on = if devices.len() == 1 { first.device.clone() } else { format!("each of {} devices", devices.len()) };
    Some(format!("{} (reads {} on {on})", first.mechanism(), figures.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::parse_mountinfo;

    fn write(root: &Path, rel: &str, value: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, value).expect("write");
    }

    fn mounts(root: &Path) -> Vec<MountEntry> {
        let r = root.display();
        parse_mountinfo(&format!(
            "35 31 0:32 / {r}/memory rw,relatime - cgroup cgroup rw,memory\n\
             38 31 0:35 / {r}/blkio rw,relatime - cgroup cgroup rw,blkio\n\
             41 31 0:38 / {r}/unified rw,relatime - cgroup2 cgroup2 rw\n"
        ))
    }

    fn loop3() -> Vec<(String, u32, u32)> {
        vec![("loop3".into(), 7, 3), ("vda".into(), 254, 0)]
    }

    #[test]
    fn v1_limits_of_the_own_group_and_its_ancestors_bind_and_the_smallest_wins() {
        let tree = tempfile::tempdir().expect("tempdir");
        let t = tree.path();
        // The root group limits loop3's reads to 100 MiB/s, the own group to 40 MiB/s and 150 requests/s; a
        // sibling's limit does not bind.
        write(t, "blkio/blkio.throttle.read_bps_device", "7:3 104857600\n");
        write(t, "blkio/box/blkio.throttle.read_bps_device", "7:3 41943040\n7:9 1\n");
        write(t, "blkio/box/blkio.throttle.read_iops_device", "7:3 150\n");
        write(t, "blkio/box/blkio.throttle.write_bps_device", "7:3 0\n");
        write(t, "blkio/other/blkio.throttle.read_bps_device", "7:3 1\n");
        let found = throttles_in("7:blkio:/box\n4:memory:/\n0::/\n", &mounts(t), &loop3());
        let figures: Vec<_> = found.iter().map(|f| (f.device.as_str(), f.kind, f.limit)).collect();
        assert_eq!(figures, [("loop3", ThrottleKind::ReadBps, 41_943_040), ("loop3", ThrottleKind::ReadIops, 150)]);
        assert_eq!(found[0].file, t.join("blkio/box/blkio.throttle.read_bps_device"));
        let words = throttle_words(&found);
        assert_eq!(
            words,
            [format!(
                "loop3: reads limited to 40 MiB/s (41.9 MB/s) and 150 requests/s by a blkio throttle (set in {})",
                t.join("blkio/box").display()
            )]
        );
        assert_eq!(read_limit_words(&found).unwrap(), "a blkio throttle (reads 40 MiB/s, 150 requests/s on loop3)");
        // A pool's members limited alike share one sentence; one limited otherwise has its own.
        let member = |device: &str, limit| DeviceThrottle { device: device.into(), limit, ..found[0].clone() };
        let pool = [member("loop0", 41_943_040), member("loop1", 41_943_040), member("loop2", 1 << 20)];
        let words = throttle_words(&pool);
        assert_eq!(words.len(), 2, "{words:?}");
        assert!(words[0].starts_with("loop0 and loop1, each: reads limited to 40 MiB/s (41.9 MB/s) by"), "{words:?}");
        assert!(words[1].starts_with("loop2: reads limited to 1 MiB/s"), "{words:?}");
        // In the root group only the root's limit binds.
        let root = throttles_in("7:blkio:/\n", &mounts(t), &loop3());
        assert_eq!(root.iter().map(|f| f.limit).collect::<Vec<_>>(), [104_857_600]);
    }

    #[test]
    fn v2_io_max_is_read_and_max_is_no_limit() {
        let tree = tempfile::tempdir().expect("tempdir");
        let t = tree.path();
        write(t, "unified/app/io.max", "7:3 rbps=2097152 wbps=max riops=max wiops=120\n254:0 rbps=max\n");
        let found = throttles_in("0::/app\n", &mounts(t), &loop3());
        let figures: Vec<_> = found.iter().map(|f| (f.kind, f.limit)).collect();
        assert_eq!(figures, [(ThrottleKind::ReadBps, 2_097_152), (ThrottleKind::WriteIops, 120)]);
        let words = throttle_words(&found).join("");
        assert!(words.contains("reads limited to 2 MiB/s (2.10 MB/s), writes to 120 requests/s, by a cgroup io.max"));
    }

    #[test]
    fn nothing_set_nothing_found() {
        let tree = tempfile::tempdir().expect("tempdir");
        assert!(throttles_in("7:blkio:/\n0::/\n", &mounts(tree.path()), &loop3()).is_empty());
        assert_eq!(read_limit_words(&[]), None);
        assert_eq!(parse_v1("7:3 0\ngarbage\n\n8:0 12\n"), [((8, 0), 12)]);
    }

    #[test]
    fn pools_are_named_by_their_count() {
        let t = |device: &str, minor| DeviceThrottle {
            device: device.into(),
            major: 7,
            minor,
            kind: ThrottleKind::ReadBps,
            limit: 41_943_040,
            file: PathBuf::from("/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device"),
        };
        let words = read_limit_words(&[t("loop1", 1), t("loop2", 2)]).unwrap();
        assert_eq!(words, "a blkio throttle (reads 40 MiB/s on each of 2 devices)");
    }

    #[test]
    fn the_live_throttles_are_readable() {
        // Whatever this machine's cgroups say, reading them never fails and names only devices asked about.
        let root = BlockDevice::from_dev(1, 0).ok().into_iter().collect::<Vec<_>>();
        assert!(throttles_for(&root).iter().all(|t| t.major == 1 && t.minor == 0));
    }
}
