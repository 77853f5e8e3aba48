//! Mounts and filesystems: parsing /proc/self/mountinfo, finding the mount that holds a path, and the facts of
//! that filesystem (type, source, size, free space for an unprivileged writer, options, direct-I/O alignment).
//!
//! mountinfo rather than /proc/mounts because it carries each mount's device number and ID, which identify the
//! filesystem exactly even when mount points are shadowed or bind-mounted. This file never mounts or writes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

use super::super::sysfs::{parse_dev_numbers, unescape_path};
use super::super::{SysinfoError, read_text};

/// One line of /proc/self/mountinfo (see proc(5)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountEntry {
    /// Unique mount ID (the same number statx reports as `stx_mnt_id`).
    pub mount_id: u64,
    /// Mount ID of the parent mount.
    pub parent_id: u64,
    /// st_dev of files on this filesystem; major 0 means an anonymous device (btrfs, tmpfs, overlay, NFS).
    pub major: u32,
    /// Minor number of st_dev.
    pub minor: u32,
    /// The directory of the filesystem that is mounted here ("/" unless a bind mount of a subdirectory).
    pub root: PathBuf,
    /// Where it is mounted, with the kernel's octal escapes undone.
    pub mount_point: PathBuf,
    /// Per-mount options ("rw,relatime").
    pub options: String,
    /// Filesystem type ("ext4", "btrfs", "fuse.sshfs").
    pub fs_type: String,
    /// Mount source as given to mount(2) ("/dev/vda", "tmpfs", "server:/export").
    pub source: String,
    /// Per-superblock options ("rw,discard").
    pub super_options: String,
}

/// Parses /proc/self/mountinfo text. The optional fields between the options and the `-` separator vary in
/// number (shared:N, master:N), so the line is split at the separator rather than by position. Malformed lines
/// are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(parse_mountinfo_line).collect()
}

fn parse_mountinfo_line(line: &str) -> Option<MountEntry> {
    let (head, tail) = line.split_once(" - ")?;
    let head: Vec<&str> = head.split(' ').collect();
    let tail: Vec<&str> = tail.split(' ').collect();
    if head.len() < 6 || tail.len() < 2 {
        return None;
    }
    let (major, minor) = parse_dev_numbers(head[2])?;
    Some(MountEntry {
        mount_id: head[0].parse().ok()?,
        parent_id: head[1].parse().ok()?,
        major,
        minor,
        root: unescape_path(head[3]),
        mount_point: unescape_path(head[4]),
        options: head[5].to_string(),
        fs_type: tail[0].to_string(),
        source: unescape_path(tail[1]).to_string_lossy().into_owned(),
        super_options: tail.get(2).map(|s| s.to_string()).unwrap_or_default(),
    })
}

/// Reads the live /proc/self/mountinfo.
pub fn read_mountinfo() -> Result<Vec<MountEntry>, SysinfoError> {
    Ok(parse_mountinfo(&read_text("/proc/self/mountinfo")?))
}

/// The mount holding `path`. Asks statx for the mount ID first (Linux 5.8+), which is exact even under
/// shadowed mount points; otherwise falls back to the longest mount-point prefix of the canonical path.
pub fn mount_containing<'a>(path: &Path, mounts: &'a [MountEntry]) -> Option<&'a MountEntry> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let by_id = statx(CWD, path, AtFlags::empty(), StatxFlags::MNT_ID)
        .ok()
        .filter(|st| StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::MNT_ID))
        .and_then(|st| mounts.iter().find(|m| m.mount_id == st.stx_mnt_id));
    if by_id.is_some() {
        return by_id;
    }
    let canonical = std::fs::canonicalize(path).ok()?;
    longest_prefix_mount(&canonical, mounts)
}

/// The mount whose mount point is the longest component-wise prefix of `canonical`; among equal mount points
/// the last one listed wins, because a later mount on the same directory hides the earlier ones.
pub fn longest_prefix_mount<'a>(canonical: &Path, mounts: &'a [MountEntry]) -> Option<&'a MountEntry> {
    mounts
        .iter()
        .filter(|m| canonical.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.components().count())
        .and_then(|best| {
            mounts.iter().rev().find(|m| m.mount_point == best.mount_point && canonical.starts_with(&m.mount_point))
        })
}

/// The filesystem that holds a path, as a result records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilesystemFacts {
    /// Where the filesystem is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type ("ext4", "btrfs", "xfs", "nfs4").
    pub fs_type: String,
    /// Mount source ("/dev/vda", "server:/export").
    pub source: String,
    /// Size of the filesystem (statvfs f_blocks × f_frsize).
    pub total: Bytes,
    /// Space an unprivileged writer can use (f_bavail × f_frsize): excludes blocks reserved for root, which is
    /// what a benchmark's data files may actually take.
    pub free: Bytes,
    /// Mount options followed by superblock options, comma-separated, without repeats.
    pub options: String,
}

/// Filesystem types whose files live on another machine, so that every read and write crosses a network link
/// (FUSE filesystems are named `fuse.<program>` in mountinfo). 9p is left out: in a VM it is usually the host's
/// disk, shared over virtio rather than a network.
const NETWORK_FS_TYPES: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "ceph",
    "glusterfs",
    "afs",
    "lustre",
    "fuse.sshfs",
    "fuse.glusterfs",
    "fuse.ceph",
    "fuse.s3fs",
    "fuse.rclone",
];

/// Filesystems that are the kernel's view of its own state, not storage: nothing in them can be measured.
const KERNEL_FS_TYPES: &[&str] = &[
    "proc",
    "sysfs",
    "cgroup",
    "cgroup2",
    "devpts",
    "debugfs",
    "tracefs",
    "securityfs",
    "configfs",
    "bpf",
    "pstore",
    "efivarfs",
    "fusectl",
    "binfmt_misc",
    "mqueue",
    "nsfs",
];

impl FilesystemFacts {
    /// Whether this is one of the kernel's own filesystems (proc, sysfs, cgroup, …): no data of anyone's lives
    /// there, only the kernel's state.
    pub fn is_kernel_view(&self) -> bool {
        KERNEL_FS_TYPES.contains(&self.fs_type.as_str())
    }

    /// Whether this is a network filesystem (NFS, SMB, sshfs, …): then the link, not a disk, may cap every figure.
    pub fn is_network(&self) -> bool {
        NETWORK_FS_TYPES.contains(&self.fs_type.as_str())
    }
}

/// Describes the filesystem holding `path` (a directory, file or anything statvfs accepts).
pub fn filesystem_of(path: &Path) -> Result<FilesystemFacts, SysinfoError> {
    let canonical = std::fs::canonicalize(path).map_err(|e| SysinfoError::read(path, e))?;
    let mounts = read_mountinfo()?;
    let mount =
        mount_containing(&canonical, &mounts).ok_or_else(|| SysinfoError::NotMounted { path: canonical.clone() })?;
    let vfs = rustix::fs::statvfs(&canonical).map_err(|e| SysinfoError::read(&canonical, e.into()))?;
    Ok(FilesystemFacts {
        mount_point: mount.mount_point.clone(),
        fs_type: mount.fs_type.clone(),
        source: mount.source.clone(),
        total: Bytes(vfs.f_blocks.saturating_mul(vfs.f_frsize)),
        free: Bytes(vfs.f_bavail.saturating_mul(vfs.f_frsize)),
        options: merge_options(&mount.options, &mount.super_options),
    })
}

fn merge_options(mount: &str, superblock: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for opt in mount.split(',').chain(superblock.split(',')).filter(|o| !o.is_empty()) {
        if !seen.contains(&opt) {
            seen.push(opt);
        }
    }
    seen.join(",")
}

/// Alignment that O_DIRECT I/O on a file or block device needs, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DioAlign {
    /// Required alignment of buffer addresses in memory.
    pub mem: u32,
    /// Required alignment of file offsets and I/O lengths.
    pub offset: u32,
}

/// Direct-I/O alignment from statx STATX_DIOALIGN (Linux 6.1+ for files; 6.11+ for block devices). `None` when
/// the kernel or filesystem does not report it, or reports that the file does not support direct I/O at all
/// (both values 0). Most filesystems answer only for regular files, so ask about a file, not its directory.
pub fn direct_io_alignment(path: &Path) -> Option<DioAlign> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let st = statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN).ok()?;
    let reported = StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::DIOALIGN);
    (reported && st.stx_dio_mem_align != 0 && st.stx_dio_offset_align != 0)
        .then_some(DioAlign { mem: st.stx_dio_mem_align, offset: st.stx_dio_offset_align })
}

/// The direct-I/O alignment a new file in directory `dir` gets. Filesystems answer only for regular files, so it
/// asks an unnamed temporary file (O_TMPFILE: never linked, gone when closed, so nothing is left in `dir` and no
/// data is written), or, where that cannot be made, a regular file already in `dir`.
pub fn direct_io_alignment_in_dir(dir: &Path) -> Option<DioAlign> {
    use rustix::fs::{AtFlags, CWD, Mode, OFlags, StatxFlags, openat, statx};
    let temp = openat(CWD, dir, OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC, Mode::from_raw_mode(0o600));
    if let Ok(fd) = temp
        && let Ok(st) = statx(&fd, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN)
    {
        let reported = StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::DIOALIGN);
        return (reported && st.stx_dio_mem_align != 0 && st.stx_dio_offset_align != 0)
            .then_some(DioAlign { mem: st.stx_dio_mem_align, offset: st.stx_dio_offset_align });
    }
    std::fs::read_dir(dir)
        .ok()?
        .take(256)
        .filter_map(Result::ok)
        .find(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .and_then(|e| direct_io_alignment(&e.path()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r"22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard,resv_strict
41 27 0:45 / /mnt/pool rw,relatime shared:7 master:3 - btrfs /dev/loop3 rw,space_cache=v2,subvolid=5,subvol=/
42 27 0:46 /media /srv/my\040media rw - btrfs /dev/loop3 rw,subvol=/media
43 27 0:47 / /srv/my\040media/cache rw - tmpfs tmpfs rw,size=1024k
44 27 0:48 / /mnt/pool rw - tmpfs other rw
this line is garbage
";

    #[test]
    fn parses_fields_optional_tags_and_escaped_spaces() {
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 6, "the garbage line is skipped");
        assert_eq!((m[1].mount_id, m[1].parent_id, m[1].major, m[1].minor), (27, 1, 254, 0));
        assert_eq!((m[1].fs_type.as_str(), m[1].source.as_str()), ("ext4", "/dev/vda"));
        assert_eq!(m[1].super_options, "rw,discard,resv_strict");
        assert_eq!((m[2].major, m[2].fs_type.as_str()), (0, "btrfs"), "btrfs has an anonymous st_dev");
        assert_eq!(m[2].options, "rw,relatime");
        assert_eq!(m[3].mount_point, PathBuf::from("/srv/my media"));
        assert_eq!(m[3].root, PathBuf::from("/media"));
    }

    #[test]
    fn longest_prefix_wins_and_later_mounts_shadow_earlier() {
        let m = parse_mountinfo(SAMPLE);
        let find = |p: &str| longest_prefix_mount(Path::new(p), &m).map(|e| e.mount_id);
        assert_eq!(find("/home/user"), Some(27));
        assert_eq!(find("/srv/my media/film.mkv"), Some(42));
        assert_eq!(find("/srv/my media/cache/x"), Some(43));
        assert_eq!(find("/srv/my mediaX"), Some(27), "prefixes are whole path components");
        assert_eq!(find("/mnt/pool/a"), Some(44), "the tmpfs mounted over the pool hides it");
    }

    #[test]
    fn options_merge_without_repeats() {
        assert_eq!(merge_options("rw,relatime", "rw,discard"), "rw,relatime,discard");
        assert_eq!(merge_options("", ""), "");
    }

    #[test]
    fn live_root_filesystem_has_facts() {
        let facts = filesystem_of(Path::new("/")).expect("/ is mounted");
        assert_eq!(facts.mount_point, PathBuf::from("/"));
        assert!(!facts.fs_type.is_empty());
        assert!(facts.total >= facts.free, "{facts:?}");
        let proc = filesystem_of(Path::new("/proc/self")).expect("/proc is mounted");
        assert_eq!(proc.fs_type, "proc");
        let err = filesystem_of(Path::new("/no/such/path")).expect_err("missing path");
        assert!(err.to_string().contains("/no/such/path"), "{err}");
    }

    #[test]
    fn dio_alignment_of_a_regular_file_is_sane_when_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").expect("write temp file");
        match direct_io_alignment(&file) {
            Some(a) => assert!(a.mem.is_power_of_two() && a.offset.is_power_of_two() && a.offset >= 512, "{a:?}"),
            None => eprintln!("note: the filesystem under {} reports no STATX_DIOALIGN", dir.path().display()),
        }
        assert_eq!(direct_io_alignment(Path::new("/no/such/file")), None);
    }

    #[test]
    fn a_directory_reports_the_alignment_of_a_new_file_in_it_and_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let asked = direct_io_alignment_in_dir(dir.path());
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"x").unwrap();
        let of_a_file = direct_io_alignment(&probe);
        std::fs::remove_file(&probe).unwrap();
        match (asked, of_a_file) {
            (Some(a), Some(f)) => assert_eq!(a, f),
            (None, None) => eprintln!("note: the filesystem under {} reports no STATX_DIOALIGN", dir.path().display()),
            other => panic!("the directory and a file in it disagree: {other:?}"),
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the temporary file left nothing behind");
    }

    #[test]
    fn network_filesystems_are_told_from_local_ones() {
        let fs = |fs_type: &str| FilesystemFacts {
            mount_point: PathBuf::from("/mnt"),
            fs_type: fs_type.into(),
            source: "server:/export".into(),
            total: Bytes(0),
            free: Bytes(0),
            options: String::new(),
        };
        for network in ["nfs4", "cifs", "fuse.sshfs"] {
            assert!(fs(network).is_network(), "{network}");
        }
        for local in ["ext4", "btrfs", "tmpfs", "fuse", "fuseblk", "9p"] {
            assert!(!fs(local).is_network(), "{local}");
        }
    }
}
