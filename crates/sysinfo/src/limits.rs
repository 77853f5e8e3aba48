//! How much memory and how many threads this process may still take: available memory, the memory and pids
//! cgroup limits up the hierarchy (cgroup v1 and v2), the kernel's `threads-max`, and RLIMIT_NPROC for non-root
//! users. A plan that needs more is refused before anything is allocated or spawned, instead of aborting on an
//! allocation or panicking in `thread::spawn` halfway through a run.
//!
//! Parsers take text (tests feed fixed samples); [`ProcessLimits::gather`] reads the live files. Only reads.

use std::path::{Path, PathBuf};

use crate::units::Bytes;
use ::limits::MemoryBound;

use super::proc::MemInfo;
use super::topology::{MountEntry, read_mountinfo};

/// What this process may still take; `None` where nothing says (no limit, or unreadable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Bytes it may still allocate: MemAvailable, or less when a memory cgroup limit or the address-space limit
    /// (`ulimit -v`) is closer.
    pub memory: Option<Bytes>,
    /// Which of those `memory` is.
    pub memory_bound: MemoryBound,
    /// Threads it may still start: the tightest of the pids cgroups, `threads-max` and RLIMIT_NPROC.
    pub threads: Option<u64>,
}

impl ProcessLimits {
    /// Reads the live limits of this process.
    pub fn gather() -> ProcessLimits {
        let mounts = read_mountinfo().unwrap_or_default();
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let read = |path: &Path| std::fs::read_to_string(path).ok();
        let available = MemInfo::read().ok().map(|m| m.available);
        let cgroup = cgroup_headroom(&mounts, &cgroups, Controller::Memory, &read).map(Bytes);
        let mapped = std::fs::read_to_string("/proc/self/status").ok();
        let space = address_space_left(rustix::process::getrlimit(rustix::process::Resource::As).current, mapped);
        let (memory, memory_bound) = tightest_memory(available, cgroup, space.map(Bytes));
        let kernel = std::fs::read_to_string("/proc/sys/kernel/threads-max")
            .ok()
            .and_then(|max| threads_left(&max, &std::fs::read_to_string("/proc/loadavg").ok()?));
        let threads = min_some(cgroup_headroom(&mounts, &cgroups, Controller::Pids, &read), kernel);
        ProcessLimits { memory, memory_bound, threads: min_some(threads, nproc_left()) }
    }
}

/// The smallest of the three memory figures, and which it is.
fn tightest_memory(
    available: Option<Bytes>,
    cgroup: Option<Bytes>,
    space: Option<Bytes>,
) -> (Option<Bytes>, MemoryBound) {
    [(available, MemoryBound::Available), (cgroup, MemoryBound::Cgroup), (space, MemoryBound::AddressSpace)]
        .into_iter()
        .filter_map(|(figure, bound)| figure.map(|f| (f, bound)))
        .min_by_key(|(figure, _)| *figure)
        .map_or((None, MemoryBound::Available), |(figure, bound)| (Some(figure), bound))
}

/// Bytes this process may still map under its address-space limit (`ulimit -v`): the limit less `VmSize` from
/// `/proc/self/status`. `None` without a limit. Past it every allocation fails with ENOMEM, whatever the free
/// memory.
pub fn address_space_left(limit: Option<u64>, status: Option<String>) -> Option<u64> {
    let limit = limit?;
    let size = status?
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    Some(limit.saturating_sub(size.saturating_mul(1024)))
}

fn min_some<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A cgroup controller whose limit this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    Memory,
    Pids,
    /// The CPU quota (`cpu.cfs_quota_us` ÷ `cpu.cfs_period_us` in v1, `cpu.max` in v2): read by `sockets.rs`.
    Cpu,
}

impl Controller {
    fn v1_name(self) -> &'static str {
        match self {
            Controller::Memory => "memory",
            Controller::Pids => "pids",
            Controller::Cpu => "cpu",
        }
    }

    /// (limit file, usage file) in cgroup v1 and in v2.
    fn files(self, v2: bool) -> (&'static str, &'static str) {
        match (self, v2) {
            (Controller::Memory, false) => ("memory.limit_in_bytes", "memory.usage_in_bytes"),
            (Controller::Memory, true) => ("memory.max", "memory.current"),
            (Controller::Pids, _) => ("pids.max", "pids.current"),
            (Controller::Cpu, false) => ("cpu.cfs_quota_us", "cpu.cfs_period_us"),
            (Controller::Cpu, true) => ("cpu.max", "cpu.max"),
        }
    }
}

/// The smallest `limit − usage` of `controller` over this process's cgroup and its ancestors (a parent's limit
/// binds its children), in v1 or v2, whichever holds the controller. `None` when no limit is set anywhere.
pub fn cgroup_headroom(
    mounts: &[MountEntry],
    proc_cgroup: &str,
    controller: Controller,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<u64> {
    let (dir, top, v2) = cgroup_dir(mounts, proc_cgroup, controller)?;
    let (limit_file, usage_file) = controller.files(v2);
    let mut tightest: Option<u64> = None;
    let mut at = dir.as_path();
    loop {
        let limit = read(&at.join(limit_file)).and_then(|t| parse_limit(&t));
        let usage = read(&at.join(usage_file)).and_then(|t| t.trim().parse::<u64>().ok());
        // A memory cgroup's usage counts its page cache, which the kernel takes back before it fails anyone: what
        // binds is the working set, usage less the inactive file pages (as the kubelet counts it). Without this a
        // 64 MiB group that had read an 8 MB job file refused to plan it.
        let usage = match controller {
            Controller::Memory => usage.map(|u| u.saturating_sub(inactive_file(&read, at, v2))),
            Controller::Pids | Controller::Cpu => usage,
        };
        if let (Some(limit), Some(usage)) = (limit, usage) {
            tightest = min_some(tightest, Some(limit.saturating_sub(usage)));
        }
        match at.parent() {
            Some(parent) if at != top => at = parent,
            _ => break,
        }
    }
    tightest
}

/// The inactive file pages of a memory cgroup, from its `memory.stat` (v1 `total_inactive_file`, counted over
/// the group and its children as `usage_in_bytes` is; v2 `inactive_file`); 0 when it cannot be read.
fn inactive_file(read: &dyn Fn(&Path) -> Option<String>, dir: &Path, v2: bool) -> u64 {
    let key = if v2 { "inactive_file " } else { "total_inactive_file " };
    read(&dir.join("memory.stat"))
        .and_then(|stat| stat.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0)
}

/// "max" (or v1's "unlimited" 2^63-ish page-rounded value) is no limit; a number is one.
fn parse_limit(text: &str) -> Option<u64> {
    let value: u64 = text.trim().parse().ok()?;
    // cgroup v1 writes "no memory limit" as the largest page-aligned i64.
    (value < (1 << 62)).then_some(value)
}

/// This process's directory of `controller` and the hierarchy's mount point, from /proc/self/mountinfo and
/// /proc/self/cgroup; the flag says whether it is cgroup v2.
pub(crate) fn cgroup_dir(
    mounts: &[MountEntry],
    proc_cgroup: &str,
    controller: Controller,
) -> Option<(PathBuf, PathBuf, bool)> {
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let v2 = controllers.is_empty();
        let wanted = v2 || controllers.split(',').any(|c| c == controller.v1_name());
        if !wanted {
            continue;
        }
        let mount = mounts.iter().find(|m| {
            if v2 {
                m.fs_type == "cgroup2"
            } else {
                m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == controller.v1_name())
            }
        })?;
        // Under v2 a controller not enabled in a subtree has no files there: the walk up skips those levels.
        return super::cgroup::cgroup_dir(mount, path).map(|dir| (dir, mount.mount_point.clone(), v2));
    }
    None
}

/// `threads-max` minus the threads that exist (the fourth field of /proc/loadavg is "running/total").
pub fn threads_left(threads_max: &str, loadavg: &str) -> Option<u64> {
    let max: u64 = threads_max.trim().parse().ok()?;
    let total: u64 = loadavg.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok()?;
    Some(max.saturating_sub(total))
}

/// RLIMIT_NPROC binds only non-root users; what this process already runs counts against it (the user's other
/// processes do too, but cannot be counted cheaply, so this is an upper bound).
fn nproc_left() -> Option<u64> {
    if rustix::process::geteuid().is_root() {
        return None;
    }
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nproc).current?;
    let own = std::fs::read_dir("/proc/self/task").map(|d| d.count() as u64).unwrap_or(1);
    Some(limit.saturating_sub(own))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::parse_mountinfo;
    use std::collections::HashMap;

    const MOUNTS: &str = "\
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    fn reader(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<PathBuf, String> = files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
        move |p: &Path| map.get(p).cloned()
    }

    #[test]
    fn the_tightest_pids_limit_up_the_v1_hierarchy_wins() {
        let mounts = parse_mountinfo(MOUNTS);
        let cgroup = "8:pids:/a/b\n4:memory:/a\n0::/\n";
        let read = reader(&[
            ("/sys/fs/cgroup/pids/a/b/pids.max", "max\n"),
            ("/sys/fs/cgroup/pids/a/b/pids.current", "3\n"),
            ("/sys/fs/cgroup/pids/a/pids.max", "50\n"),
            ("/sys/fs/cgroup/pids/a/pids.current", "10\n"),
        ]);
        assert_eq!(cgroup_headroom(&mounts, cgroup, Controller::Pids, &read), Some(40));
        let read = reader(&[
            ("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", "9223372036854771712\n"),
            ("/sys/fs/cgroup/memory/a/memory.usage_in_bytes", "1000\n"),
        ]);
        assert_eq!(cgroup_headroom(&mounts, cgroup, Controller::Memory, &read), None);
        let read = reader(&[
            ("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", "1048576\n"),
            ("/sys/fs/cgroup/memory/a/memory.usage_in_bytes", "1000\n"),
        ]);
        assert_eq!(cgroup_headroom(&mounts, cgroup, Controller::Memory, &read), Some(1_047_576));
        // Page cache the kernel would reclaim first does not count (issue 25).
        let read = reader(&[
            ("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", "1048576\n"),
            ("/sys/fs/cgroup/memory/a/memory.usage_in_bytes", "1000000\n"),
            ("/sys/fs/cgroup/memory/a/memory.stat", "cache 900000\ninactive_file 1\ntotal_inactive_file 800000\n"),
        ]);
        assert_eq!(cgroup_headroom(&mounts, cgroup, Controller::Memory, &read), Some(848_576));
    }

    #[test]
    fn cgroup_v2_limits_are_read_from_the_unified_hierarchy() {
        let mounts = parse_mountinfo(MOUNTS);
        let cgroup = "0::/user.slice/app\n";
        let read = reader(&[
            ("/sys/fs/cgroup/unified/user.slice/app/memory.max", "max\n"),
            ("/sys/fs/cgroup/unified/user.slice/app/memory.current", "5\n"),
            ("/sys/fs/cgroup/unified/user.slice/memory.max", "100\n"),
            ("/sys/fs/cgroup/unified/user.slice/memory.current", "40\n"),
            ("/sys/fs/cgroup/unified/user.slice/memory.stat", "anon 30\ninactive_file 10\n"),
        ]);
        assert_eq!(cgroup_headroom(&mounts, cgroup, Controller::Memory, &read), Some(70));
        assert_eq!(cgroup_headroom(&mounts, cgroup, Controller::Pids, &read), None);
        assert_eq!(cgroup_headroom(&[], cgroup, Controller::Memory, &read), None);
    }

    #[test]
    fn kernel_thread_headroom_comes_from_threads_max_and_loadavg() {
        assert_eq!(threads_left("192729\n", "2.10 0.98 0.48 5/137 16020\n"), Some(192_592));
        assert_eq!(threads_left("x", "0 0 0 1/2 3"), None);
    }

    #[test]
    fn the_address_space_limit_counts_what_is_mapped_already() {
        let status = "Name:\tstreamcap\nVmPeak:\t  300000 kB\nVmSize:\t  102400 kB\n".to_string();
        assert_eq!(address_space_left(Some(200 << 20), Some(status.clone())), Some(100 << 20));
        assert_eq!(address_space_left(None, Some(status.clone())), None);
        assert_eq!(address_space_left(Some(50 << 20), Some(status)), Some(0));
        let (gib, mib) = (Some(Bytes::gib(1)), Some(Bytes::mib(100)));
        assert_eq!(tightest_memory(gib, None, mib), (mib, MemoryBound::AddressSpace));
        assert_eq!(tightest_memory(gib, mib, None), (mib, MemoryBound::Cgroup));
        assert_eq!(tightest_memory(gib, None, None), (gib, MemoryBound::Available));
        assert_eq!(tightest_memory(None, None, None), (None, MemoryBound::Available));
    }

    #[test]
    fn the_live_limits_are_readable() {
        let limits = ProcessLimits::gather();
        assert!(limits.memory.is_some_and(|m| m.0 > 0), "{limits:?}");
        assert!(limits.threads.is_some_and(|t| t > 0), "{limits:?}");
    }
}
