//! The memory limit of this process's cgroup: the RAM it may really use, which is what decides whether a data
//! set fits in the page cache. A process in a 128 MiB cgroup on a 24 GiB host caches at most 128 MiB.
//!
//! The limit is the smallest `memory.max` (cgroup v2) or `memory.limit_in_bytes` (v1) on the path from the
//! process's own cgroup (named in /proc/self/cgroup) up to the root of the mounted hierarchy, because a parent's
//! limit binds its children. Hosts with both hierarchies mounted (hybrid) are read in both. "max" and the huge
//! values v1 uses for "unlimited" mean no limit. It also names the process's own memory cgroup directory (where
//! `sweep --memory` makes its group). This file only reads; it never creates or moves a cgroup.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

use super::sysfs::read_trimmed;
use super::topology::{MountEntry, read_mountinfo};

/// Values at or above this are "no limit": v1 writes 2^63 rounded down to a page (9 223 372 036 854 771 712),
/// and no machine has 4 EiB of RAM.
const UNLIMITED: u64 = 1 << 62;

/// A memory limit and where it is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryLimit {
    /// The limit, in bytes.
    pub limit: Bytes,
    /// The file that sets it ("/sys/fs/cgroup/memory/box/memory.limit_in_bytes").
    pub file: PathBuf,
}

/// The memory limit that binds this process, if any.
pub fn memory_limit() -> Option<MemoryLimit> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    memory_limit_in(&cgroups, &read_mountinfo().ok()?)
}

/// The binding limit for a process whose /proc/PID/cgroup text is `cgroups`, with the cgroup filesystems
/// mounted as `mounts` lists them (tests point the mount points into a temporary tree).
pub fn memory_limit_in(cgroups: &str, mounts: &[MountEntry]) -> Option<MemoryLimit> {
    let mut best: Option<MemoryLimit> = None;
    for group in memory_groups(cgroups, mounts) {
        let file = if group.v2 { "memory.max" } else { "memory.limit_in_bytes" };
        if let Some(limit) = smallest_limit(&group.top, &group.dir, file)
            && best.as_ref().is_none_or(|b| limit.limit < b.limit)
        {
            best = Some(limit);
        }
    }
    best
}

/// A memory cgroup of this process, as mounted here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCgroupDir {
    /// The process's own cgroup directory ("/sys/fs/cgroup/memory/box").
    pub dir: PathBuf,
    /// Where its hierarchy is mounted.
    pub top: PathBuf,
    /// cgroup v2 (`memory.max`); false: v1 (`memory.limit_in_bytes`).
    pub v2: bool,
}

/// The directory of this process's memory cgroup, where a child group with a smaller limit can be made: the
/// v1 memory hierarchy when mounted (hybrid hosts keep the controller there), else v2 when it offers `memory`.
pub fn own_memory_cgroup() -> Option<MemoryCgroupDir> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let groups = memory_groups(&cgroups, &read_mountinfo().ok()?);
    let offers_memory = |g: &&MemoryCgroupDir| {
        !g.v2
            || read_trimmed(g.dir.join("cgroup.controllers"))
                .is_some_and(|c| has_option(&c.replace(' ', ","), "memory"))
    };
    groups.iter().filter(|g| !g.v2).chain(groups.iter().filter(|g| g.v2)).find(offers_memory).cloned()
}

/// Every memory hierarchy this process is in, with its directory under the mount that shows it.
fn memory_groups(cgroups: &str, mounts: &[MountEntry]) -> Vec<MemoryCgroupDir> {
    let mut found = Vec::new();
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "memory") {
            continue;
        }
        let fs_type = if v2 { "cgroup2" } else { "cgroup" };
        let group = mounts
            .iter()
            .filter(|m| m.fs_type == fs_type && (v2 || has_option(&m.super_options, "memory")))
            .find_map(|m| cgroup_dir(m, path).map(|dir| MemoryCgroupDir { dir, top: m.mount_point.clone(), v2 }));
        found.extend(group);
    }
    found
}

pub(super) fn has_option(options: &str, wanted: &str) -> bool {
    options.split(',').any(|o| o == wanted)
}

/// Where a cgroup path (as /proc/self/cgroup names it) lies under a mount of its hierarchy. A mount of a
/// subtree (a container's view without a cgroup namespace) has that subtree as its root; paths outside it are
/// not visible through this mount.
pub(super) fn cgroup_dir(mount: &MountEntry, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path).strip_prefix(&mount.root).ok()?;
    Some(mount.mount_point.join(relative))
}

/// The smallest limit in `file` from `dir` up to `top`, both included.
fn smallest_limit(top: &Path, dir: &Path, file: &str) -> Option<MemoryLimit> {
    let mut best: Option<MemoryLimit> = None;
    let mut at = Some(dir);
    while let Some(level) = at.filter(|d| d.starts_with(top)) {
        let path = level.join(file);
        if let Some(limit) = read_trimmed(&path).and_then(|t| parse_limit(&t))
            && best.as_ref().is_none_or(|b| limit < b.limit)
        {
            best = Some(MemoryLimit { limit, file: path });
        }
        at = level.parent();
    }
    best
}

/// A limit file's value: bytes, or `None` for "max" and the v1 "unlimited" figure.
pub fn parse_limit(text: &str) -> Option<Bytes> {
    let value: u64 = text.trim().parse().ok()?;
    (value < UNLIMITED).then_some(Bytes(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::parse_mountinfo;

    fn write(root: &Path, rel: &str, value: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, format!("{value}\n")).expect("write");
    }

    /// mountinfo lines for a hybrid host whose cgroup filesystems are mounted under `root`.
    fn mounts(root: &Path, v1_root: &str) -> Vec<MountEntry> {
        let r = root.display();
        parse_mountinfo(&format!(
            "35 31 0:32 {v1_root} {r}/memory rw,relatime - cgroup cgroup rw,memory\n\
             38 31 0:35 / {r}/blkio rw,relatime - cgroup cgroup rw,blkio\n\
             41 31 0:38 / {r}/unified rw,relatime - cgroup2 cgroup2 rw\n"
        ))
    }

    #[test]
    fn v1_limit_is_the_smallest_on_the_path_up() {
        let tree = tempfile::tempdir().expect("tempdir");
        let t = tree.path();
        write(t, "memory/memory.limit_in_bytes", "9223372036854771712");
        write(t, "memory/box/memory.limit_in_bytes", "1073741824");
        write(t, "memory/box/inner/memory.limit_in_bytes", "9223372036854771712");
        let cgroups = "9:name=systemd:/\n7:blkio:/\n4:cpu,memory:/box/inner\n0::/\n";
        let limit = memory_limit_in(cgroups, &mounts(t, "/")).expect("the parent's limit binds");
        assert_eq!(limit.limit, Bytes::gib(1));
        assert_eq!(limit.file, t.join("memory/box/memory.limit_in_bytes"));
        // Both hierarchies of a hybrid host; `own_memory_cgroup` prefers v1 and takes v2 only when it offers memory.
        let groups = memory_groups(cgroups, &mounts(t, "/"));
        let v1 = MemoryCgroupDir { dir: t.join("memory/box/inner"), top: t.join("memory"), v2: false };
        let v2 = MemoryCgroupDir { dir: t.join("unified"), top: t.join("unified"), v2: true };
        assert_eq!(groups, [v1, v2]);
    }

    #[test]
    fn v2_memory_max_and_max_meaning_none() {
        let tree = tempfile::tempdir().expect("tempdir");
        let t = tree.path();
        write(t, "unified/app/memory.max", "max");
        let cgroups = "0::/app\n";
        assert_eq!(memory_limit_in(cgroups, &mounts(t, "/")), None, "\"max\" is no limit");
        write(t, "unified/app/memory.max", "134217728");
        let limit = memory_limit_in(cgroups, &mounts(t, "/")).expect("a v2 limit");
        assert_eq!(limit.limit, Bytes::mib(128));
    }

    #[test]
    fn hybrid_hosts_take_the_smaller_and_subtree_mounts_are_followed() {
        let tree = tempfile::tempdir().expect("tempdir");
        let t = tree.path();
        // A container's view: the v1 mount's root is its own cgroup, which appears as the mount point itself.
        write(t, "memory/memory.limit_in_bytes", "536870912");
        write(t, "unified/memory.max", "1073741824");
        let cgroups = "4:memory:/docker/abc\n0::/\n";
        let limit = memory_limit_in(cgroups, &mounts(t, "/docker/abc")).expect("limits");
        assert_eq!(limit.limit, Bytes::mib(512));
        assert_eq!(memory_limit_in("4:memory:/elsewhere\n", &mounts(t, "/docker/abc")), None, "not visible");
    }

    #[test]
    fn limits_parse() {
        assert_eq!(parse_limit("134217728\n"), Some(Bytes::mib(128)));
        assert_eq!(parse_limit("max"), None);
        assert_eq!(parse_limit("9223372036854771712"), None);
        assert_eq!(parse_limit(""), None);
    }

    #[test]
    fn the_live_limit_is_readable_or_absent() {
        if let Some(limit) = memory_limit() {
            assert!(limit.limit > Bytes(0) && limit.file.exists(), "{limit:?}");
        }
    }
}
