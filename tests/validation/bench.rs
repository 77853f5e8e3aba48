//! The targets of the validation matrix, built for real and undone on drop: ext4 on one loop device, btrfs raid1
//! and raid10 over four, each device throttled in the root blkio group to a disk-like 40 MiB/s and 150 reads/s,
//! and sshfs over a link shaped to 200 Mbit/s in a network namespace of its own (tests/common/netns.rs). Only
//! reads are throttled: the check writes its library and data set unthrottled, so set-up costs little time, and
//! reads are what a stream capacity is about. The root group, not a child group, because btrfs and io_uring may
//! issue reads from threads that a child group would not hold (io-wq workers, btrfs's own); the limits are on
//! this bench's own loop devices only and reset on drop.
//!
//! Field order is drop order: the sshfs link and the mount go first, then the limits, then the loop devices,
//! then the directory of their backing files (in memory, `backing_dir`).

use std::path::PathBuf;

use crate::common::netns::SshfsLink;
use crate::common::{LoopDevice, Mount, RootThrottle, mkfs_btrfs, throttled_reads};

/// Each loop device's read throughput limit: 40 MiB/s = 41.94 MB/s.
pub const THROTTLE_BPS: u64 = 40 << 20;
/// Each loop device's read request limit (a disk's random reads).
pub const THROTTLE_IOPS: u64 = 150;
/// The sshfs link's rate in each direction.
pub const LINK_MBIT: u64 = 200;

/// Size of each loop device. Small on purpose: the check sizes its library to at most half the free space, so
/// about 1 GiB here, which keeps the writing short; the throttle, not a cache, bounds every read of it.
const EXT4_BYTES: u64 = 3 << 30;
const MEMBER_BYTES: u64 = 2 << 30;
/// The media files of the sshfs library (written on the server's side, not over the link).
const SSHFS_TITLES: u32 = 16;
const SSHFS_TITLE_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Ext4,
    Raid1,
    Raid10,
    Sshfs,
}

impl Layout {
    pub const ALL: [Layout; 4] = [Layout::Ext4, Layout::Raid1, Layout::Raid10, Layout::Sshfs];

    pub fn name(self) -> &'static str {
        match self {
            Layout::Ext4 => "ext4, 1 loop device",
            Layout::Raid1 => "btrfs raid1, 4 loop devices",
            Layout::Raid10 => "btrfs raid10, 4 loop devices",
            Layout::Sshfs => "sshfs, 200 Mbit/s link",
        }
    }

    /// A short tag for file names.
    pub fn tag(self) -> &'static str {
        match self {
            Layout::Ext4 => "ext4",
            Layout::Raid1 => "raid1",
            Layout::Raid10 => "raid10",
            Layout::Sshfs => "sshfs",
        }
    }
}

/// One target of the matrix, ready to be checked.
pub struct Bench {
    pub layout: Layout,
    /// The directory `check` is given.
    pub dir: PathBuf,
    /// `--library` (sshfs: media files made on the server's side, read over the link).
    pub library: Option<PathBuf>,
    pub link: Option<SshfsLink>,
    _mount: Option<Mount>,
    _throttle: Option<RootThrottle>,
    pub members: Vec<LoopDevice>,
    /// The loop devices' backing files (memory: see `backing_dir`); gone after the devices.
    _backing: Option<tempfile::TempDir>,
    /// Where the mount point and the results live.
    pub tmp: tempfile::TempDir,
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sc-validate-").tempdir().expect("a temp dir")
}

/// The directory for the loop devices' backing files: `STREAMCAP_VALIDATE_BACKING` (scripts/validate: a directory
/// of its run under /dev/shm), else /dev/shm, else TMPDIR. In memory (tmpfs) because a backing file on the
/// host's disk ties the loop device to that disk's load: the loop worker that writes a check's data set into the
/// page cache is held back by the dirty-page throttle while the shared disk is busy, and the reads queued behind
/// it wait too (a raw run read 8.0 of 41.9 MB/s while others built). tmpfs pages are never written back, so the
/// throttle alone limits the device. It costs the memory of what the check writes (at most the devices' size:
/// 3 GiB for ext4, 8 GiB for a pool, sparse).
fn backing_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let parent = std::env::var_os("STREAMCAP_VALIDATE_BACKING")
        .map(PathBuf::from)
        .or_else(|| shm.is_dir().then(|| shm.to_path_buf()))
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new().prefix("sc-validate-").tempdir_in(&parent).expect("a directory for backing files")
}

impl Bench {
    pub fn new(layout: Layout) -> Bench {
        match layout {
            Layout::Ext4 => Bench::local(layout, 1, EXT4_BYTES, None),
            Layout::Raid1 => Bench::local(layout, 4, MEMBER_BYTES, Some("raid1")),
            Layout::Raid10 => Bench::local(layout, 4, MEMBER_BYTES, Some("raid10")),
            Layout::Sshfs => Bench::sshfs(),
        }
    }

    /// Loop devices over backing files that the host's page cache holds, a filesystem over them, the limits.
    /// Not `--direct-io=on`: the backing disk here is the host's shared virtual disk, which other work keeps
    /// busy; beneath a direct loop device it delivered 6–40 MB/s of 1 MiB reads at one or two in flight, so the
    /// bound would have been the neighbours' load and not the throttle. Through the page cache every read is as
    /// fast as the throttle lets it be (41.9 MB/s at 1, 2 and 8 in flight, both engines): the throttle is the
    /// disk. streamcap says such a target "can come from memory", and counts its reads as the device's because
    /// a read throttle bounds them (`target.throttles`).
    fn local(layout: Layout, count: usize, size: u64, btrfs: Option<&str>) -> Bench {
        let tmp = temp_dir();
        let backing = backing_dir();
        let members: Vec<LoopDevice> =
            (0..count).map(|i| LoopDevice::new(&backing.path().join(format!("m{i}.img")), size)).collect();
        match btrfs {
            Some(profile) => mkfs_btrfs(profile, &members),
            None => members[0].mkfs_ext4(),
        }
        let point = tmp.path().join("mnt");
        let mount = Mount::new(members[0].device.to_str().unwrap(), &point, &[]);
        let throttle = RootThrottle::new(&members, [THROTTLE_BPS, 0, THROTTLE_IOPS, 0]);
        Bench {
            layout,
            dir: point,
            library: None,
            link: None,
            _mount: Some(mount),
            _throttle: Some(throttle),
            members,
            _backing: Some(backing),
            tmp,
        }
    }

    fn sshfs() -> Bench {
        let link = SshfsLink::new(LINK_MBIT);
        let media = link.export.join("media");
        std::fs::create_dir(&media).unwrap();
        std::fs::create_dir(link.export.join("scratch")).unwrap();
        write_titles(&media, SSHFS_TITLES, SSHFS_TITLE_BYTES);
        Bench {
            layout: Layout::Sshfs,
            dir: link.mount.join("scratch"),
            library: Some(link.mount.join("media")),
            link: Some(link),
            _mount: None,
            _throttle: None,
            members: Vec::new(),
            _backing: None,
            tmp: temp_dir(),
        }
    }

    /// The counters sampled around every step: per loop device the throttle's (requests, bytes) of reads, or
    /// the bytes the sshfs link received.
    pub fn counters(&self) -> Vec<u64> {
        match &self.link {
            Some(link) => vec![link.received_bytes()],
            None => self.members.iter().flat_map(|m| <[u64; 2]>::from(throttled_reads(m))).collect(),
        }
    }

    pub fn member_names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name()).collect()
    }
}

/// Media files with bytes that are not zeros (a pattern varied per MiB), written on the server's side.
fn write_titles(dir: &std::path::Path, count: u32, size: u64) {
    use std::io::Write;
    let mut block = vec![0u8; 1 << 20];
    for title in 0..count {
        let mut file =
            std::io::BufWriter::new(std::fs::File::create(dir.join(format!("title-{title:02}.mkv"))).unwrap());
        for mib in 0..size >> 20 {
            let seed = (u64::from(title) << 32) ^ mib;
            for (i, chunk) in block.chunks_mut(8).enumerate() {
                chunk.copy_from_slice(&(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i as u64).to_le_bytes());
            }
            file.write_all(&block).unwrap();
        }
        file.flush().unwrap();
    }
}
