//! btrfs pools as the kernel lists them under /sys/fs/btrfs/<fsid>/devices/.
//!
//! Why this is needed: a btrfs filesystem may span many devices, so the kernel gives it an anonymous st_dev
//! (0:NN) and mountinfo names only the one device that was passed to mount(8). The only place that lists every
//! member without ioctls is sysfs, and only while the filesystem is mounted. This file finds pools and their
//! members; it does not look at unmounted devices (the signature probe in `safety` does that).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::super::sysfs::{dir_names, parse_dev_numbers, read_trimmed};
use super::blockdev::block_numbers;

const SYS_FS_BTRFS: &str = "/sys/fs/btrfs";

/// One mounted btrfs filesystem and the kernel names of its member devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BtrfsPool {
    /// The filesystem UUID (fsid), as in /sys/fs/btrfs/<uuid>.
    pub uuid: String,
    /// Member devices: (kernel name, major, minor), sorted by name.
    pub members: Vec<(String, u32, u32)>,
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
