//! Where a block device's bytes really are: the device itself, the range of its disk a partition covers, the
//! range of its backing file (by device and inode, not by name) or backing device a loop device maps, and the
//! devices an md or dm device is built from — followed down to the bottom, so that two names for the same
//! bytes can be recognised as such.
//!
//! A loop device's backing is asked of the kernel (`LOOP_GET_STATUS64`: the backing inode's device, inode and
//! device number, and the offset), which knows it even when the backing file was renamed, deleted or lives in
//! another mount namespace; sysfs (`loop/backing_file`, `loop/offset`) is the fallback when the device cannot be
//! opened. Only reads; the one unsafe block is that ioctl.

#![allow(unsafe_code)]

use std::fmt;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::super::sysfs::{read_trimmed, read_u64};
use super::{BlockDevice, DeviceKind};

/// Loops through loop devices and stacks deeper than this are cut off (a guard, not a real-world limit).
const MAX_DEPTH: usize = 16;

/// What holds bytes at the bottom: a block device by number, or a regular file by the device and inode the
/// kernel gives it (the same file under any name or hard link).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Store {
    Device { major: u32, minor: u32 },
    File { major: u32, minor: u32, ino: u64 },
}

/// A byte range `[start, end)` of one store, with the words that say how it was reached ("loop7 → /img").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    pub store: Store,
    pub start: u64,
    pub end: u64,
    /// The name of the store for messages: a device name or the backing file's path.
    pub name: String,
}

impl Extent {
    /// Whether the two ranges share a byte of the same store.
    pub fn overlaps(&self, other: &Extent) -> bool {
        self.store == other.store && self.start < other.end && other.start < self.end
    }
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let range = format!("bytes {}–{}", self.start, self.end);
        match self.store {
            Store::Device { major, minor } => write!(f, "{range} of {} ({major}:{minor})", self.name),
            Store::File { major, minor, ino } => {
                write!(f, "{range} of {} (inode {ino} on device {major}:{minor})", self.name)
            }
        }
    }
}

/// How a loop device maps onto its backing store: its byte 0 is the store's byte `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopMap {
    pub store: Store,
    pub offset: u64,
    /// The backing file's name, as the kernel reports it.
    pub name: String,
}

/// The kernel's `struct loop_info64` (include/uapi/linux/loop.h).
#[repr(C)]
struct LoopInfo64 {
    device: u64,
    inode: u64,
    rdevice: u64,
    offset: u64,
    sizelimit: u64,
    number: u32,
    encrypt_type: u32,
    encrypt_key_size: u32,
    flags: u32,
    file_name: [u8; 64],
    crypt_name: [u8; 64],
    encrypt_key: [u8; 32],
    init: [u64; 2],
}

const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// (major, minor) of a device number as the kernel encodes it for user space (`huge_encode_dev`).
fn decode_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The backing of the loop device `name` (kernel name, "loop3"); `None` when it is not bound.
pub fn loop_map(name: &str) -> Option<LoopMap> {
    loop_map_by_ioctl(name).or_else(|| loop_map_by_sysfs(name))
}

fn loop_map_by_ioctl(name: &str) -> Option<LoopMap> {
    let file = std::fs::File::open(Path::new("/dev").join(name)).ok()?;
    let mut info = std::mem::MaybeUninit::<LoopInfo64>::zeroed();
    // SAFETY: LOOP_GET_STATUS64 writes one `struct loop_info64` (laid out as `LoopInfo64`, repr(C)) into the
    // buffer, which is zeroed, large enough and lives across the call; the fd is open.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), LOOP_GET_STATUS64 as _, info.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: zero-initialised plain integers and byte arrays, filled in by the kernel: every bit pattern is valid.
    let info = unsafe { info.assume_init() };
    let backing = read_trimmed(format!("/sys/class/block/{name}/loop/backing_file"));
    let name_of = || {
        let end = info.file_name.iter().position(|&b| b == 0).unwrap_or(info.file_name.len());
        backing.clone().unwrap_or_else(|| String::from_utf8_lossy(&info.file_name[..end]).into_owned())
    };
    let store = if info.rdevice != 0 {
        let (major, minor) = decode_dev(info.rdevice);
        Store::Device { major, minor }
    } else {
        let (major, minor) = decode_dev(info.device);
        Store::File { major, minor, ino: info.inode }
    };
    Some(LoopMap { store, offset: info.offset, name: name_of() })
}

fn loop_map_by_sysfs(name: &str) -> Option<LoopMap> {
    let dir = format!("/sys/class/block/{name}/loop");
    let backing = read_trimmed(format!("{dir}/backing_file"))?;
    let meta = std::fs::metadata(&backing).ok()?;
    let store = if meta.file_type().is_block_device() {
        Store::Device { major: rustix::fs::major(meta.rdev()), minor: rustix::fs::minor(meta.rdev()) }
    } else {
        Store::File { major: rustix::fs::major(meta.dev()), minor: rustix::fs::minor(meta.dev()), ino: meta.ino() }
    };
    Some(LoopMap { store, offset: read_u64(format!("{dir}/offset")).unwrap_or(0), name: backing })
}

/// The store and range of a regular file as a whole (a swap file).
pub fn file_extent(path: &Path) -> Option<Extent> {
    let meta = std::fs::metadata(path).ok()?;
    meta.file_type().is_file().then(|| Extent {
        store: Store::File {
            major: rustix::fs::major(meta.dev()),
            minor: rustix::fs::minor(meta.dev()),
            ino: meta.ino(),
        },
        start: 0,
        end: meta.len(),
        name: path.display().to_string(),
    })
}

/// Every store `dev`'s bytes lie in, with the range: the device itself first, then its disk (a partition), its
/// backing file or device (a loop device, at its offset), the devices it is built from (md, dm: each taken
/// whole, since their mapping is not read here), and so on down.
pub fn extents_of(dev: &BlockDevice) -> Vec<Extent> {
    let mut out = Vec::new();
    let mut pending = vec![(dev.clone(), 0u64, dev.size.0, 0usize)];
    while let Some((d, start, end, depth)) = pending.pop() {
        let extent =
            Extent { store: Store::Device { major: d.major, minor: d.minor }, start, end, name: d.name.clone() };
        if out.contains(&extent) || depth > MAX_DEPTH {
            continue;
        }
        out.push(extent);
        let next = |d: BlockDevice, s: u64, e: u64| (d, s, e, depth + 1);
        match d.kind {
            DeviceKind::Partition => {
                let first = read_u64(d.sysfs_dir().join("start")).unwrap_or(0).saturating_mul(512);
                if let Some(disk) = d.parent.as_deref().and_then(|p| BlockDevice::from_name(p).ok()) {
                    pending.push(next(disk, first.saturating_add(start), first.saturating_add(end)));
                }
            }
            DeviceKind::Loop => {
                let Some(map) = loop_map(&d.name) else { continue };
                let (s, e) = (map.offset.saturating_add(start), map.offset.saturating_add(end));
                match map.store {
                    Store::Device { major, minor } => {
                        if let Ok(below) = BlockDevice::from_dev(major, minor) {
                            pending.push(next(below, s, e));
                        }
                    }
                    Store::File { .. } => out.push(Extent { store: map.store, start: s, end: e, name: map.name }),
                }
            }
            _ => {
                for slave in d.slaves().iter().filter_map(|s| BlockDevice::from_name(s).ok()) {
                    let size = slave.size.0;
                    pending.push(next(slave, 0, size));
                }
            }
        }
    }
    out
}

/// The first pair of extents of `a` and `b` that share bytes.
pub fn first_overlap<'e>(a: &'e [Extent], b: &'e [Extent]) -> Option<(&'e Extent, &'e Extent)> {
    a.iter().find_map(|x| b.iter().find(|y| x.overlaps(y)).map(|y| (x, y)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(store: Store, start: u64, end: u64) -> Extent {
        Extent { store, start, end, name: "x".into() }
    }

    #[test]
    fn ranges_of_one_store_overlap_when_they_share_a_byte() {
        let file = Store::File { major: 8, minor: 1, ino: 12 };
        let other = Store::File { major: 8, minor: 1, ino: 13 };
        let a = extent(file, 0, 300 << 20);
        assert!(a.overlaps(&extent(file, 128 << 20, 428 << 20)), "an alias at 128 MiB into a 300 MiB image");
        assert!(!a.overlaps(&extent(file, 300 << 20, 600 << 20)), "end is exclusive");
        assert!(!a.overlaps(&extent(other, 0, 300 << 20)), "another inode");
        let dev = Store::Device { major: 7, minor: 3 };
        assert!(!a.overlaps(&extent(dev, 0, 300 << 20)), "another kind of store");
        assert!(first_overlap(&[extent(dev, 0, 1)], &[extent(dev, 1, 2), extent(dev, 0, 5)]).is_some());
    }

    #[test]
    fn device_numbers_decode_as_the_kernel_encodes_them() {
        // new_encode_dev: minor's low byte, then the major, then the rest of the minor.
        assert_eq!(decode_dev((7 << 8) | 3), (7, 3));
        assert_eq!(decode_dev((259 << 8) | 0x12 | (0x3 << 20)), (259, 0x312));
        assert_eq!(decode_dev(rustix::fs::makedev(254, 1)), (254, 1), "agrees with user space's makedev");
    }

    #[test]
    fn a_plain_file_is_its_own_extent_and_other_paths_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("swap");
        std::fs::write(&path, vec![0u8; 8192]).expect("write");
        let e = file_extent(&path).expect("a regular file");
        assert_eq!((e.start, e.end), (0, 8192));
        let linked = dir.path().join("again");
        std::fs::hard_link(&path, &linked).expect("hard link");
        assert_eq!(file_extent(&linked).map(|l| l.store), Some(e.store), "a hard link is the same file");
        assert!(file_extent(dir.path()).is_none());
        assert!(loop_map("no-such-loop").is_none());
    }
}
