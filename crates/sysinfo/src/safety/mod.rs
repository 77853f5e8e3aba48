//! Device safety: everything to know before streamcap may write to a raw block device — is it (or one of its
//! partitions) mounted, is it held by RAID/LVM/btrfs/swap/a loop device, is it under another name the bytes of
//! something in use (`overlap`: a loop device over a mounted image), and does it carry a signature.
//!
//! Users' data is sacred: every check errs towards "in use". This module only reads (a buffered pread of the
//! first 256 KiB and a few bytes near the end, plus `blkid -p` as a second opinion); it never opens a device
//! for writing and never decides on its own whether to proceed — callers apply `--force` policy.

mod overlap;
mod signature;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

pub use signature::{PROBE_LEN, btrfs_fsid, is_md_superblock, md_superblock_offsets_at_end, probe_signature};

use super::SysinfoError;
use super::sysfs::{dir_names, read_trimmed, unescape_path};
use super::topology::{
    BlockDevice, BtrfsPool, DeviceKind, MountEntry, block_numbers, btrfs_pools, pool_of_source, pool_with_device,
    read_mountinfo,
};

/// What stands between streamcap and a destructive write to a block device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSafety {
    /// The device inspected.
    pub device: BlockDevice,
    /// Mount points of the device, of any of its partitions, and of a mounted btrfs pool it belongs to.
    pub mounted_at: Vec<PathBuf>,
    /// Users of the device other than mounts: btrfs pools, md/dm holders, active swap, loop devices on it.
    pub in_use_by: Vec<String>,
    /// Bytes the device shares with a device or file in use under another name (a loop device over a mounted
    /// filesystem's image, over a mounted partition, over a swap file), one phrase each naming both ranges.
    #[serde(default)]
    pub overlaps: Vec<String>,
    /// What the device holds ("ext4 filesystem", "GPT partition table"), or `None` if nothing was recognised.
    pub signature: Option<String>,
}

impl DeviceSafety {
    /// Reasons a write would destroy something, one phrase each; empty when the device is unused and blank.
    pub fn hazards(&self) -> Vec<String> {
        let mounts = self.mounted_at.iter().map(|m| format!("mounted at {}", m.display()));
        let users = self.in_use_by.iter().map(|u| format!("in use by {u}"));
        let overlaps = self.overlaps.iter().map(|o| format!("holds {o}"));
        let signature = self.signature.iter().map(|s| format!("holds {s}"));
        mounts.chain(users).chain(overlaps).chain(signature).collect()
    }
}

/// Inspects the block device at `path` (symlinks such as /dev/disk/by-id/… are followed). Fails when the path
/// is not a block device, and when its start cannot be read: an unreadable device cannot be declared blank.
pub fn inspect_device(path: &Path) -> Result<DeviceSafety, SysinfoError> {
    inspect(path, true)
}

/// As [`inspect_device`], but without reading the device: mounts, pools, holders and swap only, `signature`
/// always `None`. For read-only work, where what the device holds does not matter and reading it (256 KiB and a
/// `blkid` probe) would cost real time on a slow or throttled device.
pub fn inspect_device_usage(path: &Path) -> Result<DeviceSafety, SysinfoError> {
    inspect(path, false)
}

fn inspect(path: &Path, read_contents: bool) -> Result<DeviceSafety, SysinfoError> {
    let device = BlockDevice::from_path(path)?;
    let mounts = read_mountinfo()?;
    let pools = btrfs_pools();
    // The device and its partitions: a disk whose partition is mounted is just as busy as the partition.
    let mut own = vec![device.clone()];
    own.extend(device.partitions().iter().filter_map(|p| BlockDevice::from_name(p).ok()));

    let mounted_at = mount_points_of(&own, &mounts, &pools);
    let mut in_use_by = Vec::new();
    for dev in &own {
        if let Some(pool) = pool_with_device(&pools, dev.major, dev.minor) {
            push_unique(&mut in_use_by, format!("btrfs pool {} (mounted)", pool.uuid));
        }
        for holder in dev.holders() {
            push_unique(&mut in_use_by, describe_holder(&holder, &dev.name));
        }
    }
    let is_own = |p: &Path| block_numbers(p).is_ok_and(|n| own.iter().any(|d| (d.major, d.minor) == n));
    let swaps = parse_swaps(&std::fs::read_to_string("/proc/swaps").unwrap_or_default());
    for swap in swaps.iter().filter(|s| is_own(s)) {
        push_unique(&mut in_use_by, format!("active swap {}", swap.display()));
    }
    for (loop_name, backing) in loop_backing_files() {
        if is_own(&backing) {
            push_unique(&mut in_use_by, format!("loop device {loop_name} (backing device)"));
        }
    }

    let numbers: Vec<(u32, u32)> = own.iter().map(|d| (d.major, d.minor)).collect();
    let overlaps = overlap::overlaps(&device, &numbers, &overlap::busy(&mounts, &pools, &swaps));
    if !read_contents {
        return Ok(DeviceSafety { device, mounted_at, in_use_by, overlaps, signature: None });
    }
    let file = File::open(path).map_err(|e| SysinfoError::Probe { path: path.to_path_buf(), source: e })?;
    let head = read_at(&file, 0, PROBE_LEN).map_err(|e| SysinfoError::Probe { path: path.to_path_buf(), source: e })?;
    let signature = match md_at_end(&file, device.size.get()) {
        Some(md) => Some(md.to_string()),
        None => probe_signature(&head).map(str::to_string).or_else(|| blkid_opinion(path)),
    };
    // A btrfs member of a pool that is not mounted has no sysfs entry; its superblock still names the pool.
    if !in_use_by.iter().any(|u| u.starts_with("btrfs pool"))
        && let Some(uuid) = btrfs_fsid(&head)
    {
        in_use_by.push(format!("btrfs pool {uuid} (not mounted)"));
    }
    Ok(DeviceSafety { device, mounted_at, in_use_by, overlaps, signature })
}

/// Mount points whose filesystem lives on one of `own`: by device number, through a btrfs pool (anonymous
/// st_dev), or by a block-device mount source for other anonymous-device filesystems.
fn mount_points_of(own: &[BlockDevice], mounts: &[MountEntry], pools: &[BtrfsPool]) -> Vec<PathBuf> {
    let is_own = |n: (u32, u32)| own.iter().any(|d| (d.major, d.minor) == n);
    let mut out = Vec::new();
    for m in mounts {
        let hit = if m.major != 0 {
            is_own((m.major, m.minor))
        } else {
            match (m.fs_type == "btrfs").then(|| pool_of_source(pools, &m.source)).flatten() {
                Some(pool) => pool.members.iter().any(|&(_, major, minor)| is_own((major, minor))),
                None => m.source.split(':').any(|part| block_numbers(Path::new(part)).is_ok_and(is_own)),
            }
        };
        if hit && !out.contains(&m.mount_point) {
            out.push(m.mount_point.clone());
        }
    }
    out
}

/// Names a holder in words: device-mapper devices by their dm name (the LVM "vg-lv"), md arrays as such.
fn describe_holder(holder: &str, of: &str) -> String {
    let what = match BlockDevice::from_name(holder).map(|d| d.kind) {
        Ok(DeviceKind::Dm) => match read_trimmed(format!("/sys/class/block/{holder}/dm/name")) {
            Some(dm_name) => format!("device-mapper {holder} ({dm_name})"),
            None => format!("device-mapper {holder}"),
        },
        Ok(DeviceKind::Md) => format!("md array {holder}"),
        _ if holder.starts_with("bcache") => format!("bcache {holder}"),
        _ => holder.to_string(),
    };
    format!("{what} on {of}")
}

/// Swap areas listed in /proc/swaps text (the first column, unescaped; the header line is skipped).
pub fn parse_swaps(text: &str) -> Vec<PathBuf> {
    text.lines().skip(1).filter_map(|l| l.split_whitespace().next()).map(unescape_path).collect()
}

/// (loop name, backing file) for every attached loop device.
fn loop_backing_files() -> Vec<(String, PathBuf)> {
    dir_names("/sys/class/block")
        .into_iter()
        .filter(|n| n.starts_with("loop"))
        .filter_map(|n| read_trimmed(format!("/sys/class/block/{n}/loop/backing_file")).map(|f| (n, PathBuf::from(f))))
        .collect()
}

/// Reads up to `len` bytes at `offset`; shorter only at the end of the device.
fn read_at(file: &File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// md v0.90 and v1.0 put their superblock near the end, where a probe of the start cannot see it. A member of
/// a RAID1 with such a superblock also shows its filesystem at the start, so this answer takes precedence.
fn md_at_end(file: &File, size: u64) -> Option<&'static str> {
    md_superblock_offsets_at_end(size)
        .into_iter()
        .find(|&(offset, _)| read_at(file, offset, 8).is_ok_and(|sb| is_md_superblock(&sb)))
        .map(|(_, label)| label)
}

/// `blkid -p` (low-level probing, no cache) as a second opinion, best effort: `None` when blkid is missing,
/// finds nothing (exit 2) or fails. Exit 8 means it found several conflicting signatures.
fn blkid_opinion(path: &Path) -> Option<String> {
    let out = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    match out.status.code() {
        Some(0) => parse_blkid_export(&String::from_utf8_lossy(&out.stdout)),
        Some(8) => Some("more than one signature (blkid: ambivalent result; `wipefs DEVICE` lists them)".to_string()),
        _ => None,
    }
}

/// Names what `blkid -p -o export` output reports: TYPE (a filesystem or container) before PTTYPE.
pub fn parse_blkid_export(text: &str) -> Option<String> {
    let value = |key: &str| {
        text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('=')).map(str::trim).filter(|v| !v.is_empty())
    };
    if let Some(kind) = value("TYPE") {
        return Some(format!("{kind} (reported by blkid)"));
    }
    value("PTTYPE").map(|pt| format!("{pt} partition table (reported by blkid)"))
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blkid_export_prefers_type_over_partition_table() {
        assert_eq!(
            parse_blkid_export("DEVNAME=/dev/loop0\nUUID=abc\nTYPE=xfs\nUSAGE=filesystem\n").as_deref(),
            Some("xfs (reported by blkid)")
        );
        assert_eq!(
            parse_blkid_export("DEVNAME=/dev/sdb\nPTUUID=1234\nPTTYPE=gpt\n").as_deref(),
            Some("gpt partition table (reported by blkid)")
        );
        assert_eq!(parse_blkid_export("DEVNAME=/dev/sdb\nSUBTYPE=x\n"), None, "keys are matched whole");
        assert_eq!(parse_blkid_export(""), None);
    }

    #[test]
    fn swaps_list_partitions_and_files_with_escapes() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/sda2                               partition\t8388604\t\t0\t\t-2\n\
                    /swap\\040file                          file\t\t1048572\t\t0\t\t-3\n";
        assert_eq!(parse_swaps(text), vec![PathBuf::from("/dev/sda2"), PathBuf::from("/swap file")]);
        assert!(parse_swaps("Filename Type Size Used Priority\n").is_empty());
    }

    #[test]
    fn only_block_devices_can_be_inspected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = inspect_device(dir.path()).expect_err("a directory");
        let text = err.to_string();
        assert!(text.contains("is a directory, not a block device") && text.contains("/dev/loop0"), "{text}");
        let file = dir.path().join("image");
        std::fs::write(&file, b"data").expect("write");
        let err = inspect_device(&file).expect_err("a regular file");
        assert!(err.to_string().contains("is a regular file, not a block device"), "{err}");
        assert!(inspect_device(Path::new("/no/such/device")).is_err());
    }

    #[test]
    fn hazards_list_every_reason_in_words() {
        let device = BlockDevice {
            name: "sdz".into(),
            path: "/dev/sdz".into(),
            major: 8,
            minor: 400,
            kind: DeviceKind::Disk,
            model: None,
            size: crate::units::Bytes::gib(1),
            rotational: true,
            scheduler: None,
            logical_block_size: 512,
            physical_block_size: 4096,
            backing_file: None,
            parent: None,
            role: "target device".into(),
        };
        let mut safety =
            DeviceSafety { device, mounted_at: vec![], in_use_by: vec![], overlaps: vec![], signature: None };
        assert!(safety.hazards().is_empty());
        safety.mounted_at.push("/mnt/a".into());
        safety.in_use_by.push("md array md0 on sdz".into());
        safety.overlaps.push("the same bytes as loop3 (mounted at /mnt/b)".into());
        safety.signature = Some("ext4 filesystem".into());
        assert_eq!(
            safety.hazards(),
            [
                "mounted at /mnt/a",
                "in use by md array md0 on sdz",
                "holds the same bytes as loop3 (mounted at /mnt/b)",
                "holds ext4 filesystem"
            ]
        );
        let json = serde_json::to_string(&safety).expect("serializes");
        assert_eq!(serde_json::from_str::<DeviceSafety>(&json).expect("reads back"), safety);
    }
}
