//! The pool beneath a target: what assembles its storage (a btrfs pool, an md array, or one plain device), the
//! profile or RAID level, the members with their facts, raw and usable capacity, and the btrfs read policy.
//!
//! Usable capacity is computed from the profile and the members (`capacity`), then set beside what statvfs says,
//! because statvfs alone misleads: btrfs shows a raid5 pool at its raw size (parity counts as space there). This
//! file combines the readers in `btrfs`, `md`, `blockdev` and `mounts`; it reads nothing of its own and never
//! opens a device.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

use super::blockdev::{BlockDevice, DeviceKind, block_numbers};
use super::btrfs::{
    BtrfsPool, BtrfsSpace, allocation_in, btrfs_pools, missing_members_in, pool_of_source, pool_with_device,
    read_policy_in,
};
use super::capacity::{Profile, btrfs_usable};
use super::md::{MdArray, md_array_at};
use super::mounts::{mount_containing, read_mountinfo};
use super::{ROLE_BTRFS_MEMBER, ROLE_FILESYSTEM, ROLE_MD_MEMBER};

/// What combines the members of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// A btrfs filesystem over one or more devices.
    Btrfs,
    /// A Linux software RAID array.
    Md,
    /// One device with no pooling of its own (a disk, a partition, a loop device).
    Device,
}

/// The pool beneath a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolFacts {
    pub kind: PoolKind,
    /// The btrfs filesystem UUID, the md array's kernel name, or the device's kernel name.
    pub id: String,
    /// How data is spread: the btrfs data profile, the md level, or `single` for one device. `None` for md
    /// levels that hold no data of their own (multipath, container).
    pub profile: Option<Profile>,
    /// btrfs: the metadata profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_profile: Option<Profile>,
    /// The devices the pool is built from, with model, size, rotational and scheduler.
    pub members: Vec<BlockDevice>,
    /// Members the pool knows of but cannot reach (btrfs mounted degraded; md `degraded`).
    pub missing_members: u64,
    /// Sum of the members' sizes, in bytes.
    pub raw: Bytes,
    /// What the members hold for data under `profile`, in bytes, computed from the members (btrfs: as its
    /// chunk allocator fills them; md: from the component size). `None` when the profile is unknown.
    pub usable: Option<Bytes>,
    /// The filesystem's size as statvfs reports it (f_blocks × f_frsize), in bytes; `None` for a raw device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statvfs_total: Option<Bytes>,
    /// Why `statvfs_total` and `usable` differ, when they do by more than a few percent, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_note: Option<String>,
    /// btrfs: which mirror serves a read ("pid", "round-robin", "devid"); `None` before Linux 5.11.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_policy: Option<String>,
    /// btrfs: data chunks (`btrfs filesystem df`'s Data line), with every profile present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<BtrfsSpace>,
    /// btrfs: metadata chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BtrfsSpace>,
    /// md: the array as sysfs describes it (level, chunk, member slots and states).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md: Option<MdArray>,
}

/// The pool beneath `path` (a directory, a file or a block device node). `None` for paths on filesystems
/// without a block device (tmpfs, overlay, NFS, FUSE) and paths that cannot be resolved.
pub fn pool_of(path: &Path) -> Option<PoolFacts> {
    let canonical = std::fs::canonicalize(path).ok()?;
    if let Ok((major, minor)) = block_numbers(&canonical) {
        let device = BlockDevice::from_dev(major, minor).ok()?;
        return match pool_with_device(&btrfs_pools(), major, minor) {
            Some(pool) => Some(btrfs_facts(pool, None)),
            None => Some(device_facts(device, None)),
        };
    }
    let mounts = read_mountinfo().ok()?;
    let mount = mount_containing(&canonical, &mounts)?;
    let statvfs_total =
        rustix::fs::statvfs(&canonical).ok().map(|v| Bytes(v.f_blocks.saturating_mul(v.f_frsize))).filter(|b| b.0 > 0);
    if mount.fs_type == "btrfs"
        && let Some(pool) = pool_of_source(&btrfs_pools(), &mount.source)
    {
        return Some(btrfs_facts(pool, statvfs_total));
    }
    if mount.major == 0 {
        return None;
    }
    let device = BlockDevice::from_dev(mount.major, mount.minor).ok()?;
    Some(device_facts(device.with_role(ROLE_FILESYSTEM), statvfs_total))
}

fn btrfs_facts(pool: &BtrfsPool, statvfs_total: Option<Bytes>) -> PoolFacts {
    let dir = pool.sysfs_dir();
    let members: Vec<BlockDevice> = pool
        .members
        .iter()
        .filter_map(|(name, _, _)| BlockDevice::from_name(name).ok())
        .map(|d| d.with_role(ROLE_BTRFS_MEMBER))
        .collect();
    let sizes: Vec<Bytes> = members.iter().map(|m| m.size).collect();
    let allocation = allocation_in(&dir);
    let profile = allocation.as_ref().map(|a| a.data.profile);
    let raw = Bytes(sizes.iter().map(|b| b.0).sum());
    let usable = profile.map(|p| btrfs_usable(p, &sizes));
    PoolFacts {
        kind: PoolKind::Btrfs,
        id: pool.uuid.clone(),
        profile,
        metadata_profile: allocation.as_ref().map(|a| a.metadata.profile),
        members,
        missing_members: u64::from(missing_members_in(&dir)),
        raw,
        usable,
        statvfs_total,
        capacity_note: btrfs_capacity_note(profile, raw, usable, statvfs_total),
        read_policy: read_policy_in(&dir),
        data: allocation.as_ref().map(|a| a.data.clone()),
        metadata: allocation.map(|a| a.metadata),
        md: None,
    }
}

/// A filesystem or a raw target on one device: an md array (or a partition of one), or a plain device.
fn device_facts(device: BlockDevice, statvfs_total: Option<Bytes>) -> PoolFacts {
    let array_dir = match (&device.kind, &device.parent) {
        (DeviceKind::Md, _) => Some(device.sysfs_dir()),
        (DeviceKind::Partition, Some(parent)) if parent.starts_with("md") => {
            BlockDevice::from_name(parent).ok().map(|d| d.sysfs_dir())
        }
        _ => None,
    };
    let array = array_dir.and_then(|dir| md_array_at(&std::fs::canonicalize(&dir).unwrap_or(dir)));
    match array {
        Some(md) => md_facts(md, statvfs_total),
        None => {
            let size = device.size;
            PoolFacts {
                kind: PoolKind::Device,
                id: device.name.clone(),
                profile: Some(Profile::Single),
                metadata_profile: None,
                members: vec![device],
                missing_members: 0,
                raw: size,
                usable: Some(size),
                statvfs_total,
                capacity_note: filesystem_capacity_note(Some(size), statvfs_total),
                read_policy: None,
                data: None,
                metadata: None,
                md: None,
            }
        }
    }
}

fn md_facts(md: MdArray, statvfs_total: Option<Bytes>) -> PoolFacts {
    let members: Vec<BlockDevice> = md
        .members
        .iter()
        .filter_map(|m| BlockDevice::from_name(&m.name).ok())
        .map(|d| d.with_role(ROLE_MD_MEMBER))
        .collect();
    let usable = md.usable();
    let note = match statvfs_total {
        Some(_) => filesystem_capacity_note(usable, statvfs_total),
        None => usable.filter(|u| differ(*u, md.size, 0.01)).map(|u| {
            format!("the array reports {} of its own, against {u} computed from its level and members", md.size)
        }),
    };
    PoolFacts {
        kind: PoolKind::Md,
        id: md.name.clone(),
        profile: md.profile,
        metadata_profile: None,
        raw: Bytes(members.iter().map(|m| m.size.0).sum()),
        members,
        missing_members: md.degraded,
        usable,
        statvfs_total,
        capacity_note: note,
        read_policy: None,
        data: None,
        metadata: None,
        md: Some(md),
    }
}

/// Whether two sizes differ by more than `fraction` of the larger.
fn differ(a: Bytes, b: Bytes, fraction: f64) -> bool {
    let larger = a.0.max(b.0) as f64;
    larger > 0.0 && (a.0.abs_diff(b.0) as f64) > fraction * larger
}

/// statvfs on btrfs divides the raw size by the data profile's copy count and takes out nothing else, so it
/// overstates parity profiles (raid5 at its raw size) and pools of unequal members.
fn btrfs_capacity_note(
    profile: Option<Profile>,
    raw: Bytes,
    usable: Option<Bytes>,
    statvfs: Option<Bytes>,
) -> Option<String> {
    let (profile, usable, statvfs) = (profile?, usable?, statvfs?);
    let expected = Bytes(raw.0 / profile.btrfs_copies());
    if differ(statvfs, expected, 0.02) {
        return Some(format!(
            "statvfs reports {statvfs}, not the {expected} the members' sizes give for {profile}: the pool may not \
             use its members whole (btrfs filesystem resize) or a member may be missing"
        ));
    }
    if !differ(statvfs, usable, 0.02) {
        return None;
    }
    let why = match profile {
        Profile::Raid5 | Profile::Raid6 => format!("btrfs counts {profile} parity as space there"),
        _ => format!(
            "btrfs divides the raw size by the {} copies there, whatever the members' sizes",
            profile.btrfs_copies()
        ),
    };
    Some(format!("statvfs reports {statvfs}: {why}; the members hold {usable} of data under {profile}"))
}

/// A filesystem on one device or array: statvfs is the device less the filesystem's own structures.
fn filesystem_capacity_note(usable: Option<Bytes>, statvfs: Option<Bytes>) -> Option<String> {
    let (usable, statvfs) = (usable?, statvfs?);
    if statvfs.0 as f64 > usable.0 as f64 * 1.01 {
        Some(format!("statvfs reports {statvfs}, more than the {usable} beneath it (a thin or sparse device?)"))
    } else if (statvfs.0 as f64) < usable.0 as f64 * 0.9 {
        Some(format!("the filesystem offers {statvfs} of the {usable} beneath it (made smaller, or large metadata)"))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    #[test]
    fn btrfs_raid5_statvfs_counts_parity() {
        let note = btrfs_capacity_note(Some(Profile::Raid5), Bytes(3 * G), Some(Bytes(2 * G)), Some(Bytes(3 * G)));
        let note = note.expect("a raid5 pool's statvfs overstates it");
        assert!(note.contains("parity") && note.contains("2 GiB of data"), "{note}");
    }

    #[test]
    fn btrfs_raid1_of_equal_members_agrees_with_statvfs() {
        let raw = Bytes(4 * G);
        let note = btrfs_capacity_note(Some(Profile::Raid1), raw, Some(Bytes(2 * G - (8 << 20))), Some(Bytes(2 * G)));
        assert_eq!(note, None);
        let unequal = btrfs_capacity_note(Some(Profile::Raid1), Bytes(6 * G), Some(Bytes(2 * G)), Some(Bytes(3 * G)));
        assert!(unequal.expect("1+1+4 GiB raid1").contains("copies"));
        let resized = btrfs_capacity_note(Some(Profile::Single), raw, Some(raw), Some(Bytes(G)));
        assert!(resized.expect("statvfs far below raw").contains("resize"));
    }

    #[test]
    fn filesystem_on_a_device_is_noted_only_when_far_off() {
        assert_eq!(filesystem_capacity_note(Some(Bytes(G)), Some(Bytes(G * 96 / 100))), None);
        assert!(filesystem_capacity_note(Some(Bytes(G)), Some(Bytes(G / 2))).is_some());
        assert!(filesystem_capacity_note(Some(Bytes(G)), Some(Bytes(2 * G))).is_some());
        assert_eq!(filesystem_capacity_note(None, Some(Bytes(G))), None);
    }

    #[test]
    fn memory_filesystems_have_no_pool_and_plain_dirs_resolve() {
        assert_eq!(pool_of(Path::new("/proc/self")), None);
        assert_eq!(pool_of(Path::new("/no/such/path")), None);
        let dir = tempfile::tempdir().expect("tempdir");
        if let Some(pool) = pool_of(dir.path()) {
            assert!(!pool.members.is_empty(), "{pool:?}");
            assert!(pool.usable.is_some_and(|u| u <= pool.raw || pool.kind == PoolKind::Md), "{pool:?}");
        }
    }
}
