//! btrfs pools as the kernel lists them under /sys/fs/btrfs/<fsid>/: members (`devices/`), how data and
//! metadata are laid out (`allocation/{data,metadata}/<profile>/`, the sysfs form of `btrfs filesystem df`),
//! members the pool misses (`devinfo/<id>/missing`) and the read policy (`read_policy`).
//!
//! Why this is needed: a btrfs filesystem may span many devices, so the kernel gives it an anonymous st_dev
//! (0:NN) and mountinfo names only the one device that was passed to mount(8). The only place that lists every
//! member without ioctls is sysfs, and only while the filesystem is mounted. This file finds pools and reads
//! their attributes; it does not look at unmounted devices (the signature probe in `safety` does that) and runs
//! no tool.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

use super::super::sysfs::{active_choice, dir_names, parse_dev_numbers, read_trimmed, read_u64};
use super::blockdev::block_numbers;
use super::capacity::Profile;

const SYS_FS_BTRFS: &str = "/sys/fs/btrfs";

/// One mounted btrfs filesystem and the kernel names of its member devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BtrfsPool {
    /// The filesystem UUID (fsid), as in /sys/fs/btrfs/<uuid>.
    pub uuid: String,
    /// Member devices: (kernel name, major, minor), sorted by name.
    pub members: Vec<(String, u32, u32)>,
}

impl BtrfsPool {
    /// The pool's directory under /sys/fs/btrfs.
    pub fn sysfs_dir(&self) -> PathBuf {
        Path::new(SYS_FS_BTRFS).join(&self.uuid)
    }
}

/// Every mounted btrfs pool.
pub fn btrfs_pools() -> Vec<BtrfsPool> {
    pools_in(Path::new(SYS_FS_BTRFS))
}

/// Pools under a sysfs-like root; each pool is a directory with a `devices/` subdirectory (this skips
/// `features/`). Members whose `dev` attribute cannot be read are still listed, with numbers 0:0.
pub fn pools_in(root: &Path) -> Vec<BtrfsPool> {
    dir_names(root)
        .into_iter()
        .filter(|uuid| root.join(uuid).join("devices").is_dir())
        .map(|uuid| {
            let devices = root.join(&uuid).join("devices");
            let members = dir_names(&devices)
                .into_iter()
                .map(|name| {
                    let (major, minor) = read_trimmed(devices.join(&name).join("dev"))
                        .and_then(|t| parse_dev_numbers(&t))
                        .unwrap_or((0, 0));
                    (name, major, minor)
                })
                .collect();
            BtrfsPool { uuid, members }
        })
        .collect()
}

/// The mounted pool that has the device `major:minor` among its members.
pub fn pool_with_device(pools: &[BtrfsPool], major: u32, minor: u32) -> Option<&BtrfsPool> {
    pools.iter().find(|p| p.members.iter().any(|&(_, ma, mi)| (ma, mi) == (major, minor) && ma != 0))
}

/// The pool of a btrfs mount, found from its mount source. The source is resolved to a device number when it
/// is a device node here; otherwise (a container without /dev entries) its last path component is matched
/// against member names.
pub fn pool_of_source<'a>(pools: &'a [BtrfsPool], source: &str) -> Option<&'a BtrfsPool> {
    if let Ok((major, minor)) = block_numbers(Path::new(source))
        && let Some(pool) = pool_with_device(pools, major, minor)
    {
        return Some(pool);
    }
    let name = Path::new(source).file_name()?.to_string_lossy().into_owned();
    pools.iter().find(|p| p.members.iter().any(|(n, _, _)| *n == name))
}

/// The chunks of one kind (data or metadata), as `btrfs filesystem df` shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BtrfsSpace {
    /// The profile that holds the most of this space. During a conversion (`btrfs balance start -dconvert=…`)
    /// chunks of the old and the new profile coexist; `profiles` lists them all.
    pub profile: Profile,
    /// Every profile that has chunks of this kind, with the logical bytes allocated to it, largest first.
    pub profiles: Vec<ProfileShare>,
    /// Logical bytes allocated to chunks of this kind (`total_bytes`; for raid1 the disks hold twice this).
    pub allocated: Bytes,
    /// Logical bytes in use inside those chunks (`bytes_used`).
    pub used: Bytes,
}

/// Logical bytes allocated to chunks of one profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileShare {
    pub profile: Profile,
    /// Logical bytes in chunks of this profile (`<profile>/total_bytes`).
    pub allocated: Bytes,
}

/// How a pool lays out data and metadata. A filesystem made with `--mixed` (small pools) keeps both in the
/// same chunks; then `data` and `metadata` are the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtrfsAllocation {
    pub data: BtrfsSpace,
    pub metadata: BtrfsSpace,
}

/// Reads `allocation/` of a pool directory (/sys/fs/btrfs/<uuid>, or a copy of its layout in tests). `None`
/// when the kernel lists no data chunks there.
pub fn allocation_in(pool_dir: &Path) -> Option<BtrfsAllocation> {
    let allocation = pool_dir.join("allocation");
    if let Some(mixed) = space_in(&allocation.join("mixed")) {
        return Some(BtrfsAllocation { data: mixed.clone(), metadata: mixed });
    }
    Some(BtrfsAllocation {
        data: space_in(&allocation.join("data"))?,
        metadata: space_in(&allocation.join("metadata"))?,
    })
}

/// One space directory: each profile with chunks is a subdirectory named for it, holding `total_bytes`.
fn space_in(dir: &Path) -> Option<BtrfsSpace> {
    let mut profiles: Vec<ProfileShare> = dir_names(dir)
        .into_iter()
        .filter_map(|name| {
            let profile = Profile::from_name(&name)?;
            Some(ProfileShare { profile, allocated: Bytes(read_u64(dir.join(&name).join("total_bytes"))?) })
        })
        .collect();
    profiles.sort_by_key(|s| std::cmp::Reverse(s.allocated));
    Some(BtrfsSpace {
        profile: profiles.first()?.profile,
        profiles,
        allocated: Bytes(read_u64(dir.join("total_bytes")).unwrap_or(0)),
        used: Bytes(read_u64(dir.join("bytes_used")).unwrap_or(0)),
    })
}

/// The active read policy of a pool ("pid", "round-robin", "devid"): which mirror serves a read of a raid1
/// or raid10 chunk. `None` on kernels before 5.11, which always use pid.
pub fn read_policy_in(pool_dir: &Path) -> Option<String> {
    read_trimmed(pool_dir.join("read_policy")).and_then(|t| active_choice(&t))
}

/// How many members the pool knows of but cannot reach (`devinfo/<devid>/missing` is 1: mounted degraded).
pub fn missing_members_in(pool_dir: &Path) -> u32 {
    let devinfo = pool_dir.join("devinfo");
    dir_names(&devinfo).iter().filter(|id| read_u64(devinfo.join(id).join("missing")) == Some(1)).count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sysfs() -> tempfile::TempDir {
        let root = tempfile::tempdir().expect("tempdir");
        let mk = |rel: &str, dev: Option<&str>| {
            let dir = root.path().join(rel);
            std::fs::create_dir_all(&dir).expect("mkdir");
            if let Some(dev) = dev {
                std::fs::write(dir.join("dev"), format!("{dev}\n")).expect("write dev");
            }
        };
        mk("features", None);
        mk("0a1b/devices/loop3", Some("7:3"));
        mk("0a1b/devices/loop4", Some("7:4"));
        mk("ffee/devices/sdc1", Some("8:33"));
        mk("ffee/devices/broken", None);
        root
    }

    fn write(root: &Path, rel: &str, value: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, format!("{value}\n")).expect("write");
    }

    #[test]
    fn allocation_names_the_profiles_of_data_and_metadata() {
        let root = tempfile::tempdir().expect("tempdir");
        let pool = root.path();
        // As a raid5 pool being converted to raid6 lists it (kernel 6.18 layout).
        write(pool, "allocation/data/total_bytes", "3221225472");
        write(pool, "allocation/data/bytes_used", "1048576");
        write(pool, "allocation/data/flags", "1");
        write(pool, "allocation/data/raid5/total_bytes", "2147483648");
        write(pool, "allocation/data/raid5/used_bytes", "0");
        write(pool, "allocation/data/raid6/total_bytes", "1073741824");
        write(pool, "allocation/metadata/total_bytes", "268435456");
        write(pool, "allocation/metadata/raid1/total_bytes", "268435456");
        write(pool, "read_policy", "[pid] round-robin devid");
        write(pool, "devinfo/1/missing", "0");
        write(pool, "devinfo/2/missing", "1");
        let a = allocation_in(pool).expect("allocation is listed");
        assert_eq!(a.data.profile, Profile::Raid5);
        let shares: Vec<_> = a.data.profiles.iter().map(|s| (s.profile, s.allocated)).collect();
        assert_eq!(shares, [(Profile::Raid5, Bytes(2 << 30)), (Profile::Raid6, Bytes(1 << 30))]);
        assert_eq!((a.data.allocated, a.data.used), (Bytes(3 << 30), Bytes(1 << 20)));
        assert_eq!(a.metadata.profile, Profile::Raid1);
        assert_eq!(read_policy_in(pool).as_deref(), Some("pid"));
        assert_eq!(missing_members_in(pool), 1);
    }

    #[test]
    fn mixed_block_groups_serve_as_data_and_metadata() {
        let root = tempfile::tempdir().expect("tempdir");
        write(root.path(), "allocation/mixed/total_bytes", "100");
        write(root.path(), "allocation/mixed/dup/total_bytes", "100");
        let a = allocation_in(root.path()).expect("mixed is listed");
        assert_eq!((a.data.profile, a.metadata.profile), (Profile::Dup, Profile::Dup));
        let empty = tempfile::tempdir().expect("tempdir");
        assert_eq!(allocation_in(empty.path()), None);
        assert_eq!(read_policy_in(empty.path()), None);
        assert_eq!(missing_members_in(empty.path()), 0);
    }

    #[test]
    fn pools_list_all_members_and_skip_non_pool_dirs() {
        let root = fake_sysfs();
        let pools = pools_in(root.path());
        assert_eq!(pools.len(), 2, "{pools:?}");
        assert_eq!(pools[0].uuid, "0a1b");
        assert_eq!(pools[0].members, vec![("loop3".into(), 7, 3), ("loop4".into(), 7, 4)]);
        assert_eq!(pools[1].members[0], ("broken".into(), 0, 0));
    }

    #[test]
    fn finds_the_pool_of_a_member_by_number_or_name() {
        let root = fake_sysfs();
        let pools = pools_in(root.path());
        assert_eq!(pool_with_device(&pools, 7, 4).map(|p| p.uuid.as_str()), Some("0a1b"));
        assert_eq!(pool_with_device(&pools, 0, 0), None, "unknown numbers never match");
        assert_eq!(pool_of_source(&pools, "/dev/sdc1").map(|p| p.uuid.as_str()), Some("ffee"));
        assert_eq!(pool_of_source(&pools, "/dev/sdz"), None);
    }
}
