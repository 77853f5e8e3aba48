//! What a client of many connections may hold: open files (RLIMIT_NOFILE; each connection is one), the
//! ephemeral ports the kernel hands out for outgoing connections (`ip_local_port_range`: each connection to one
//! server address takes one), and the CPUs this process may use (its affinity, less a cgroup CPU quota), which
//! is what "the client was CPU-bound" is measured against. Reads only, except [`OpenFiles::raise`], which sets
//! this process's own soft limit to its hard one (as Go's runtime does at start), never the hard limit.

use std::path::Path;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use super::limits::{Controller, cgroup_dir};
use super::topology::read_mountinfo;

/// This process's open-file limits and what it holds open now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit (`ulimit -n`): opening one more file past it fails with EMFILE.
    pub soft: u64,
    /// The hard limit (`ulimit -Hn`): the most the soft limit may be raised to without privilege.
    pub hard: u64,
    /// Descriptors open now (/proc/self/fd).
    pub open: u64,
}

impl OpenFiles {
    /// Reads the live limits. "unlimited" is taken as the kernel's `fs.nr_open`, the real ceiling.
    pub fn read() -> OpenFiles {
        let limit = getrlimit(Resource::Nofile);
        let ceiling = nr_open();
        let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
        OpenFiles {
            soft: limit.current.unwrap_or(ceiling).min(ceiling),
            hard: limit.maximum.unwrap_or(ceiling).min(ceiling),
            open,
        }
    }

    /// Raises the soft limit to the hard one, when it is lower; returns the limits that hold afterwards (the
    /// same as before if the kernel refused).
    pub fn raise() -> OpenFiles {
        let now = OpenFiles::read();
        if now.soft < now.hard {
            let _ = setrlimit(Resource::Nofile, Rlimit { current: Some(now.hard), maximum: Some(now.hard) });
        }
        OpenFiles::read()
    }

    /// Files this process may still open.
    pub fn left(&self) -> u64 {
        self.soft.saturating_sub(self.open)
    }
}

/// `fs.nr_open`: no file limit can be set above it (1,048,576 by default).
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|t| t.trim().parse().ok()).unwrap_or(1 << 20)
}

/// The kernel's range of ephemeral ports for outgoing connections (`net.ipv4.ip_local_port_range`, which IPv6
/// shares), first and last inclusive.
pub fn ephemeral_ports() -> Option<(u16, u16)> {
    parse_port_range(&std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?)
}

/// "32768\t60999\n" → (32768, 60999).
pub fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let mut parts = text.split_whitespace().map(|p| p.parse::<u16>().ok());
    let (first, last) = (parts.next()??, parts.next()??);
    (first <= last).then_some((first, last))
}

/// The CPUs this process may use: those in its affinity mask, or fewer under a cgroup CPU quota (a quota of
/// 50 ms per 100 ms period is half a CPU). Fractional; at least a hundredth.
pub fn usable_cpus() -> f64 {
    let affinity = rustix::thread::sched_getaffinity(None).map_or(0, |set| set.count());
    let affinity = if affinity > 0 {
        f64::from(affinity)
    } else {
        std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
    };
    let mounts = read_mountinfo().unwrap_or_default();
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let quota = cpu_quota(&mounts, &cgroups, &|p| std::fs::read_to_string(p).ok());
    quota.map_or(affinity, |q| q.min(affinity)).max(0.01)
}

/// The tightest CPU quota over this process's cgroup and its ancestors, in CPUs (quota ÷ period), v1
/// (`cpu.cfs_quota_us`, -1 for none) or v2 (`cpu.max`, "max" for none); `None` without one.
pub fn cpu_quota(
    mounts: &[super::topology::MountEntry],
    proc_cgroup: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Option<f64> {
    let (dir, top, v2) = cgroup_dir(mounts, proc_cgroup, Controller::Cpu)?;
    let mut tightest: Option<f64> = None;
    let mut at = dir.as_path();
    loop {
        let cpus = if v2 {
            read(&at.join("cpu.max")).and_then(|t| {
                let mut parts = t.split_whitespace();
                let quota: f64 = parts.next()?.parse().ok()?;
                let period: f64 = parts.next()?.parse().ok()?;
                (period > 0.0).then(|| quota / period)
            })
        } else {
            let number = |file: &str| read(&at.join(file)).and_then(|t| t.trim().parse::<f64>().ok());
            match (number("cpu.cfs_quota_us"), number("cpu.cfs_period_us")) {
                (Some(quota), Some(period)) if quota > 0.0 && period > 0.0 => Some(quota / period),
                _ => None,
            }
        };
        if let Some(cpus) = cpus {
            tightest = Some(tightest.map_or(cpus, |t| t.min(cpus)));
        }
        match at.parent() {
            Some(parent) if at != top => at = parent,
            _ => break,
        }
    }
    tightest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysinfo::parse_mountinfo;
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn reader(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<PathBuf, String> = files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
        move |p: &Path| map.get(p).cloned()
    }

    #[test]
    fn a_cpu_quota_is_read_up_the_v1_hierarchy_and_from_v2() {
        let mounts = parse_mountinfo(
            "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
             41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
        );
        let read = reader(&[
            ("/sys/fs/cgroup/cpu/a/b/cpu.cfs_quota_us", "-1\n"),
            ("/sys/fs/cgroup/cpu/a/b/cpu.cfs_period_us", "100000\n"),
            ("/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "5000\n"),
            ("/sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n"),
        ]);
        let quota = cpu_quota(&mounts, "1:cpu:/a/b\n0::/\n", &read).unwrap();
        assert!((quota - 0.05).abs() < 1e-9, "{quota}");
        assert_eq!(cpu_quota(&mounts, "1:cpu:/\n", &read), None);
        let read = reader(&[
            ("/sys/fs/cgroup/unified/s/cpu.max", "150000 100000\n"),
            ("/sys/fs/cgroup/unified/cpu.max", "max 100000\n"),
        ]);
        assert_eq!(cpu_quota(&mounts, "0::/s\n", &read), Some(1.5));
    }

    #[test]
    fn the_port_range_and_the_live_limits_are_read() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("9 3"), None);
        assert_eq!(parse_port_range("x"), None);
        let files = OpenFiles::read();
        assert!(files.soft > 0 && files.soft <= files.hard && files.open > 0, "{files:?}");
        assert!(usable_cpus() >= 0.01);
    }
}
