//! One block device as sysfs describes it: name, numbers, kind, model, size, rotational, scheduler, block
//! sizes, loop backing file and parent disk, plus the sysfs links (`slaves/`, `holders/`, partitions) that the
//! topology walk and the safety checks follow.
//!
//! Everything is read from /sys/class/block/NAME (which, unlike /sys/block, also lists partitions) and
//! /sys/dev/block/MAJ:MIN; no udev, no ioctl. A missing attribute becomes `None` or a default, never an error:
//! drivers differ in what they expose (virtio disks have no `device/model`, zram has no scheduler). This file
//! does not decide which devices matter for a path; that is the walk in `topology`.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

use super::super::SysinfoError;
use super::super::sysfs::{active_choice, dir_names, parse_dev_numbers, read_trimmed, read_u64};
use super::mounts::filesystem_of;

const CLASS_BLOCK: &str = "/sys/class/block";

/// The role given to a device looked up directly rather than found by a walk.
pub const ROLE_TARGET: &str = "target device";

/// What sort of block device this is, as far as the topology walk and reports care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// A whole disk backed by hardware or a hypervisor (sda, nvme0n1, vda).
    Disk,
    /// A partition of another block device (sda1, nvme0n1p2, loop0p1).
    Partition,
    /// A loop device over a file or another device.
    Loop,
    /// A Linux software RAID (md) array.
    Md,
    /// A device-mapper device (LVM volume, dm-crypt, multipath).
    Dm,
    /// A compressed RAM disk.
    Zram,
    /// Anything else (nbd, rbd, a RAM disk without a device link).
    Other,
}

/// A block device and the facts a storage engineer asks about first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// Kernel name ("vda", "loop0", "sda1", "md0", "dm-0").
    pub name: String,
    /// Device node (/dev/NAME; a `!` in a sysfs name is a `/` in /dev, as in cciss!c0d0).
    pub path: PathBuf,
    /// Device major number (259 is "blkext": extended partitions and NVMe namespaces).
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    pub kind: DeviceKind,
    /// `device/model`, trimmed; a partition reports its disk's. `None` when the driver names no model (virtio).
    pub model: Option<String>,
    /// Capacity.
    pub size: Bytes,
    /// The kernel believes it is a spinning disk (`queue/rotational`); wrong for some USB bridges and VMs.
    pub rotational: bool,
    /// The active I/O scheduler (the bracketed entry of `queue/scheduler`); a partition reports its disk's.
    pub scheduler: Option<String>,
    /// Smallest addressable unit in bytes (`queue/logical_block_size`).
    pub logical_block_size: u64,
    /// Smallest unit the device writes without read-modify-write, in bytes (`queue/physical_block_size`).
    pub physical_block_size: u64,
    /// Loop devices: the file or device they read and write (`loop/backing_file`).
    pub backing_file: Option<PathBuf>,
    /// Partitions: the kernel name of the disk that holds them.
    pub parent: Option<String>,
    /// Why this device is listed, in words ("filesystem device", "btrfs pool member", "md member", …).
    pub role: String,
}

impl BlockDevice {
    /// Looks a device up by kernel name ("sda1", "loop0"). The role is "target device" until a walk sets it.
    pub fn from_name(name: &str) -> Result<BlockDevice, SysinfoError> {
        let missing = || SysinfoError::NoSuchDevice { name: name.to_string() };
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(missing());
        }
        // The class entry is a symlink into /sys/devices; its real location tells partition from disk.
        let dir = std::fs::canonicalize(Path::new(CLASS_BLOCK).join(name)).map_err(|_| missing())?;
        let (major, minor) = read_trimmed(dir.join("dev")).and_then(|t| parse_dev_numbers(&t)).ok_or_else(missing)?;
        let is_partition = dir.join("partition").exists();
        let parent_dir = if is_partition { dir.parent().map(Path::to_path_buf) } else { None };
        let parent = parent_dir.as_deref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
        // Partitions have no queue/ or device/ of their own: those belong to the disk.
        let disk_dir = parent_dir.unwrap_or_else(|| dir.clone());
        let queue = disk_dir.join("queue");
        let kind = if is_partition { DeviceKind::Partition } else { kind_from_name(name, &dir) };
        Ok(BlockDevice {
            name: name.to_string(),
            path: PathBuf::from("/dev").join(name.replace('!', "/")),
            major,
            minor,
            kind,
            model: read_trimmed(disk_dir.join("device/model")),
            // `size` is in 512-byte units whatever the logical block size.
            size: Bytes(read_u64(dir.join("size")).unwrap_or(0).saturating_mul(512)),
            rotational: read_u64(queue.join("rotational")) == Some(1),
            scheduler: read_trimmed(queue.join("scheduler")).and_then(|t| parse_scheduler(&t)),
            logical_block_size: read_u64(queue.join("logical_block_size")).unwrap_or(512),
            physical_block_size: read_u64(queue.join("physical_block_size")).unwrap_or(512),
            backing_file: if kind == DeviceKind::Loop {
                read_trimmed(dir.join("loop/backing_file")).map(PathBuf::from)
            } else {
                None
            },
            parent,
            role: ROLE_TARGET.to_string(),
        })
    }

    /// Looks a device up by number through /sys/dev/block/MAJ:MIN.
    pub fn from_dev(major: u32, minor: u32) -> Result<BlockDevice, SysinfoError> {
        let link = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        let dir = std::fs::canonicalize(&link)
            .map_err(|_| SysinfoError::NoSuchDevice { name: format!("with number {major}:{minor}") })?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        BlockDevice::from_name(&name)
    }

    /// Looks a device up by its node (/dev/sdb, /dev/disk/by-id/…; symlinks are followed). Errors when the path
    /// is not a block device, saying what it is instead.
    pub fn from_path(path: &Path) -> Result<BlockDevice, SysinfoError> {
        let (major, minor) = block_numbers(path)?;
        BlockDevice::from_dev(major, minor)
    }

    /// Returns the device with `role` set.
    pub fn with_role(mut self, role: impl Into<String>) -> BlockDevice {
        self.role = role.into();
        self
    }

    /// The device's directory under /sys/class/block.
    pub fn sysfs_dir(&self) -> PathBuf {
        Path::new(CLASS_BLOCK).join(&self.name)
    }

    /// Kernel names of the devices this one is built from (`slaves/`: md members, dm/LVM physical volumes).
    pub fn slaves(&self) -> Vec<String> {
        dir_names(self.sysfs_dir().join("slaves"))
    }

    /// Kernel names of the devices built on top of this one (`holders/`: md arrays, dm devices, bcache).
    pub fn holders(&self) -> Vec<String> {
        dir_names(self.sysfs_dir().join("holders"))
    }

    /// Why data on this device lives in RAM rather than on storage, if it does: a zram device, a RAM disk
    /// (brd), a loop device whose backing file is on a memory filesystem (tmpfs, ramfs), or one that reaches its
    /// backing file through the page cache (no `--direct-io`), where reads can be served from memory.
    pub fn memory_backed(&self) -> Option<String> {
        match self.kind {
            DeviceKind::Zram => Some(format!("{} is a compressed RAM disk (zram)", self.name)),
            DeviceKind::Loop if self.backing_file.is_some() => {
                if let Some(file) = &self.backing_file
                    && let Ok(fs) = filesystem_of(file)
                    && matches!(fs.fs_type.as_str(), "tmpfs" | "ramfs")
                {
                    return Some(format!(
                        "{} is backed by {}, a file on a {}, which keeps it in RAM",
                        self.name,
                        file.display(),
                        fs.fs_type
                    ));
                }
                let dio = std::fs::read_to_string(self.sysfs_dir().join("loop/dio")).ok();
                (dio.as_deref().map(str::trim) == Some("0")).then(|| {
                    format!(
                        "{} reaches its backing file through the page cache (losetup --direct-io=off), so reads \
                         can come from memory",
                        self.name
                    )
                })
            }
            _ if self.name.starts_with("ram") && self.name[3..].parse::<u32>().is_ok() => {
                Some(format!("{} is a RAM disk", self.name))
            }
            _ => None,
        }
    }

    /// Kernel names of this disk's partitions (subdirectories that carry a `partition` attribute).
    pub fn partitions(&self) -> Vec<String> {
        let dir = self.sysfs_dir();
        dir_names(&dir).into_iter().filter(|n| dir.join(n).join("partition").exists()).collect()
    }
}

/// The (major, minor) of a block device node, or [`SysinfoError::NotBlockDevice`] saying what the path is.
pub fn block_numbers(path: &Path) -> Result<(u32, u32), SysinfoError> {
    let meta = std::fs::metadata(path).map_err(|e| SysinfoError::read(path, e))?;
    let file_type = meta.file_type();
    if !file_type.is_block_device() {
        let what = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_file() {
            "a regular file"
        } else if file_type.is_char_device() {
            "a character device"
        } else {
            "a special file"
        };
        return Err(SysinfoError::NotBlockDevice { path: path.to_path_buf(), what });
    }
    let rdev = meta.rdev();
    Ok((rustix::fs::major(rdev), rustix::fs::minor(rdev)))
}

/// Classifies a whole (non-partition) device. Names are stable kernel conventions; a device with a `device`
/// link is backed by some bus (SCSI, NVMe, virtio, MMC) and so is a disk.
fn kind_from_name(name: &str, dir: &Path) -> DeviceKind {
    if name.starts_with("loop") {
        DeviceKind::Loop
    } else if name.starts_with("md") {
        DeviceKind::Md
    } else if name.starts_with("dm-") {
        DeviceKind::Dm
    } else if name.starts_with("zram") {
        DeviceKind::Zram
    } else if dir.join("device").exists() {
        DeviceKind::Disk
    } else {
        DeviceKind::Other
    }
}

/// The active scheduler from `queue/scheduler` text: the bracketed entry ("none [mq-deadline] kyber bfq" →
/// "mq-deadline").
pub fn parse_scheduler(text: &str) -> Option<String> {
    active_choice(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_is_the_bracketed_entry() {
        assert_eq!(parse_scheduler("none [mq-deadline] kyber bfq \n").as_deref(), Some("mq-deadline"));
        assert_eq!(parse_scheduler("[none] mq-deadline").as_deref(), Some("none"));
        assert_eq!(parse_scheduler("none").as_deref(), Some("none"));
        assert_eq!(parse_scheduler("none mq-deadline"), None, "several entries and none active is not a choice");
        assert_eq!(parse_scheduler(""), None);
    }

    #[test]
    fn unknown_names_are_an_error_not_a_panic() {
        for bad in ["", "..", "a/b", "no-such-device-xyz"] {
            let err = BlockDevice::from_name(bad).expect_err(bad);
            assert!(err.to_string().contains("lsblk"), "{err}");
        }
        assert!(BlockDevice::from_dev(4095, 1_048_575).is_err());
    }

    #[test]
    fn non_block_paths_say_what_they_are() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = BlockDevice::from_path(dir.path()).expect_err("a directory");
        assert!(err.to_string().contains("is a directory, not a block device"), "{err}");
        let err = BlockDevice::from_path(Path::new("/dev/null")).expect_err("a character device");
        assert!(err.to_string().contains("character device"), "{err}");
    }

    #[test]
    fn every_listed_device_is_described() {
        // Whatever this machine has, each device in sysfs must load without error and agree with its number.
        for name in dir_names(CLASS_BLOCK) {
            let dev = BlockDevice::from_name(&name).expect("listed devices load");
            let again = BlockDevice::from_dev(dev.major, dev.minor).expect("and load by number");
            assert_eq!(again.name, dev.name);
            assert!(dev.logical_block_size >= 512 && dev.physical_block_size >= dev.logical_block_size, "{dev:?}");
            assert_eq!(dev.kind == DeviceKind::Partition, dev.parent.is_some(), "{dev:?}");
        }
    }
}
