//! Block-device topology: which devices do the work when streamcap does I/O to a path.
//!
//! `devices_beneath` walks from a path down to the physical devices: mount → filesystem device (or every member
//! of a btrfs pool) → partition's disk → md/dm members (`slaves/`) → the devices under a loop device's backing
//! file, and so on recursively. The result feeds per-device activity sampling and the device table of a
//! report. `pool_of` describes the pool beneath a path (btrfs profile, md level, members, raw and usable
//! capacity). Everything comes from /proc/self/mountinfo, statvfs and sysfs; nothing here opens a device or runs
//! a tool.

mod blockdev;
mod btrfs;
mod capacity;
mod extent;
mod md;
mod mounts;
mod pool;

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};

pub use blockdev::{BlockDevice, DeviceKind, ROLE_TARGET, block_numbers, parse_scheduler};
pub use btrfs::{
    BtrfsAllocation, BtrfsPool, BtrfsSpace, ProfileShare, allocation_in, btrfs_pools, missing_members_in,
    pool_of_source, pool_with_device, pools_in, read_policy_in,
};
pub use capacity::{Profile, btrfs_usable, md_usable};
pub use extent::{Extent, LoopMap, Store, extents_of, file_extent, first_overlap, loop_map};
pub use md::{MdArray, MdMember, md_array_at};
pub use mounts::{
    DioAlign, FilesystemFacts, MountEntry, direct_io_alignment, direct_io_alignment_in_dir, filesystem_of,
    longest_prefix_mount, mount_containing, parse_mountinfo, read_mountinfo,
};
pub use pool::{PoolFacts, PoolKind, pool_of};

/// Role of the device a filesystem is mounted from.
pub const ROLE_FILESYSTEM: &str = "filesystem device";
/// Role of a member of a btrfs pool.
pub const ROLE_BTRFS_MEMBER: &str = "btrfs pool member";
/// Role of a component of an md array.
pub const ROLE_MD_MEMBER: &str = "md member";
/// Role of a device beneath a device-mapper device (LVM, dm-crypt, multipath).
pub const ROLE_DM_MEMBER: &str = "lvm/dm member";
/// Role of a device beneath another stacked device (bcache and others that use `slaves/`).
pub const ROLE_STACK_MEMBER: &str = "stacked device member";
/// Role of the devices that hold a loop device's backing file.
pub const ROLE_LOOP_BACKING: &str = "loop backing store";
/// Role of the disk that holds a listed partition.
pub const ROLE_PARTITION_DISK: &str = "disk holding partition";

/// Loops through loop devices and stacks deeper than this are cut off (a guard, not a real-world limit).
const MAX_DEPTH: usize = 16;

/// Every block device whose activity matters for I/O to `path` (a directory, a regular file or a block device
/// node), top first: the filesystem's device (every member for btrfs), then the layer beneath those devices
/// (partitions' disks, md/dm members, the devices under loop backing files), and so on. Devices appear once,
/// with the role under which they were first reached. Paths on filesystems without a block device (tmpfs,
/// overlay, proc, NFS) and paths that cannot be resolved give an empty list.
pub fn devices_beneath(path: &Path) -> Vec<BlockDevice> {
    let mut walk = Walk {
        mounts: read_mountinfo().unwrap_or_default(),
        pools: btrfs_pools(),
        out: Vec::new(),
        queue: VecDeque::new(),
        seen_devices: HashSet::new(),
        seen_files: HashSet::new(),
    };
    walk.path(path, None, 0);
    walk.drain();
    walk.out
}

/// A breadth-first walk, so that the list reads layer by layer: both members of a mirror come before the
/// disk that holds their backing files.
struct Walk {
    mounts: Vec<MountEntry>,
    pools: Vec<BtrfsPool>,
    out: Vec<BlockDevice>,
    queue: VecDeque<(BlockDevice, usize)>,
    seen_devices: HashSet<(u32, u32)>,
    /// Backing files already walked: a loop device whose backing file sits on a filesystem that itself lives
    /// on a loop device is fine, but a cycle must not recurse forever.
    seen_files: HashSet<PathBuf>,
}

impl Walk {
    /// Queues the devices under a path. `context` is `None` for the path the caller asked about, or the role
    /// words of the reason this path is visited (a loop device's backing file).
    fn path(&mut self, path: &Path, context: Option<&str>, depth: usize) {
        let Ok(canonical) = std::fs::canonicalize(path) else { return };
        if depth > MAX_DEPTH || !self.seen_files.insert(canonical.clone()) {
            return;
        }
        if let Ok((major, minor)) = block_numbers(&canonical) {
            if let Ok(dev) = BlockDevice::from_dev(major, minor) {
                self.enqueue(dev.with_role(context.unwrap_or(ROLE_TARGET)), depth);
            }
            return;
        }
        let Some(mount) = mount_containing(&canonical, &self.mounts).cloned() else { return };
        self.filesystem(&mount, context, depth);
    }

    fn filesystem(&mut self, mount: &MountEntry, context: Option<&str>, depth: usize) {
        let role = context.unwrap_or(ROLE_FILESYSTEM);
        if mount.major != 0 {
            if let Ok(dev) = BlockDevice::from_dev(mount.major, mount.minor) {
                self.enqueue(dev.with_role(role), depth);
            }
            return;
        }
        // Anonymous st_dev: btrfs (any number of devices), or a filesystem with no device at all.
        if mount.fs_type == "btrfs"
            && let Some(pool) = pool_of_source(&self.pools, &mount.source).cloned()
        {
            let role = match context {
                None => ROLE_BTRFS_MEMBER.to_string(),
                Some(context) => format!("{context} ({ROLE_BTRFS_MEMBER})"),
            };
            for (name, _, _) in pool.members {
                if let Ok(dev) = BlockDevice::from_name(&name) {
                    self.enqueue(dev.with_role(role.clone()), depth);
                }
            }
            return;
        }
        // btrfs whose pool could not be matched in sysfs, and multi-device filesystems that name their devices
        // in the source ("/dev/sda:/dev/sdb" for bcachefs): take every part that is a block device node. For
        // tmpfs, overlay, proc or NFS no part is, and the list stays empty.
        for part in mount.source.split(':').filter(|p| p.starts_with('/')) {
            if let Ok((major, minor)) = block_numbers(Path::new(part))
                && let Ok(dev) = BlockDevice::from_dev(major, minor)
            {
                self.enqueue(dev.with_role(role), depth);
            }
        }
    }

    fn enqueue(&mut self, dev: BlockDevice, depth: usize) {
        if depth <= MAX_DEPTH && self.seen_devices.insert((dev.major, dev.minor)) {
            self.queue.push_back((dev, depth));
        }
    }

    /// Lists queued devices and queues what each is built on: its disk (for a partition), its `slaves/` (md,
    /// dm) and the devices beneath its backing file (for a loop device).
    fn drain(&mut self) {
        while let Some((dev, depth)) = self.queue.pop_front() {
            let member_role = match dev.kind {
                DeviceKind::Md => ROLE_MD_MEMBER,
                DeviceKind::Dm => ROLE_DM_MEMBER,
                _ => ROLE_STACK_MEMBER,
            };
            let slaves = dev.slaves();
            let parent = dev.parent.clone();
            let backing = dev.backing_file.clone();
            self.out.push(dev);
            if let Some(disk) = parent.and_then(|p| BlockDevice::from_name(&p).ok()) {
                self.enqueue(disk.with_role(ROLE_PARTITION_DISK), depth + 1);
            }
            for member in slaves.iter().filter_map(|s| BlockDevice::from_name(s).ok()) {
                self.enqueue(member.with_role(member_role), depth + 1);
            }
            if let Some(file) = backing {
                // The kernel appends " (deleted)" when the backing file was unlinked; that path does not
                // resolve, and there is nothing beneath it to walk.
                self.path(&file, Some(ROLE_LOOP_BACKING), depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_filesystems_have_no_devices() {
        assert!(devices_beneath(Path::new("/proc/self")).is_empty());
        assert!(devices_beneath(Path::new("/sys/kernel")).is_empty());
        assert!(devices_beneath(Path::new("/no/such/path")).is_empty());
    }

    #[test]
    fn the_root_filesystem_device_comes_first_when_it_has_one() {
        let devices = devices_beneath(Path::new("/"));
        let mounts = read_mountinfo().expect("mountinfo");
        let root = mount_containing(Path::new("/"), &mounts).expect("/ is mounted");
        if root.major != 0 {
            let first = devices.first().expect("a block-backed root lists its device");
            assert_eq!((first.major, first.minor), (root.major, root.minor));
            assert_eq!(first.role, ROLE_FILESYSTEM);
        }
        let mut numbers: Vec<_> = devices.iter().map(|d| (d.major, d.minor)).collect();
        numbers.sort();
        numbers.dedup();
        assert_eq!(numbers.len(), devices.len(), "no device is listed twice: {devices:?}");
    }

    #[test]
    fn a_regular_file_resolves_like_its_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("data");
        std::fs::write(&file, b"x").expect("write");
        let names = |p: &Path| devices_beneath(p).into_iter().map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(names(&file), names(dir.path()));
    }
}
