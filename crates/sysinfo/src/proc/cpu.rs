//! CPU time: the whole system's (first line of /proc/stat, in jiffies) and this process's (getrusage, with its
//! storage reads from /proc/self/io beside it, since every sample of the process takes both).
//!
//! streamcap reports CPU per I/O next to fio's, and flags runs where the host was CPU-bound or stolen from by
//! a hypervisor; this file provides the counters and their percentages between two samples. It does not
//! sample on a timer and does not attribute CPU to threads.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, KIB};

use super::super::{SysinfoError, read_text};

/// Cumulative CPU time of all CPUs since boot, in jiffies (USER_HZ, usually 1/100 s), from the `cpu` line of
/// /proc/stat. `user` already includes guest time, so guest columns are not read (they would count twice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SystemCpu {
    /// Jiffies in user mode (including guest time).
    pub user: u64,
    /// Jiffies in user mode at low priority (including guest_nice time).
    pub nice: u64,
    /// Jiffies in kernel mode.
    pub system: u64,
    /// Jiffies idle.
    pub idle: u64,
    /// Jiffies idle while I/O was outstanding (a hint, not a measure of I/O: any other runnable work hides it).
    pub iowait: u64,
    /// Jiffies servicing hardware interrupts.
    pub irq: u64,
    /// Jiffies servicing softirqs (block completion, network).
    pub softirq: u64,
    /// Jiffies a hypervisor gave to someone else while this guest wanted to run.
    pub steal: u64,
}

impl SystemCpu {
    /// Reads the live /proc/stat.
    pub fn read() -> Result<SystemCpu, SysinfoError> {
        parse_proc_stat(&read_text("/proc/stat")?)
    }

    fn total(&self) -> u64 {
        [self.user, self.nice, self.system, self.idle, self.iowait, self.irq, self.softirq, self.steal]
            .iter()
            .fold(0u64, |acc, v| acc.saturating_add(*v))
    }
}

/// Parses the aggregate `cpu ` line of /proc/stat. Kernels before 2.6.11 lack `steal` and before 2.6.0 lack
/// `iowait`/`irq`/`softirq`; missing columns count as 0, but at least user, nice, system and idle must be there.
pub fn parse_proc_stat(text: &str) -> Result<SystemCpu, SysinfoError> {
    let malformed = |detail: String| SysinfoError::Malformed { what: "/proc/stat", detail };
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or_else(|| malformed("no aggregate `cpu` line".to_string()))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse::<u64>().map_err(|_| malformed(format!("`{v}` is not a number in `{line}`"))))
        .collect::<Result<_, _>>()?;
    if values.len() < 4 {
        return Err(malformed(format!("expected at least 4 columns in `{line}`")));
    }
    let at = |i: usize| values.get(i).copied().unwrap_or(0);
    Ok(SystemCpu {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
    })
}

/// How the CPU time of all CPUs was spent between two samples, in percent of the total (the five add to 100).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemCpuUsage {
    /// Percent in user mode, including nice.
    pub user_pct: f64,
    /// Percent in the kernel, including hard and soft interrupts.
    pub system_pct: f64,
    /// Percent idle with I/O outstanding.
    pub iowait_pct: f64,
    /// Percent idle.
    pub idle_pct: f64,
    /// Percent stolen by the hypervisor.
    pub steal_pct: f64,
}

impl SystemCpuUsage {
    /// Usage between samples `a` (earlier) and `b` (later). Subtraction saturates, so a counter that went
    /// backwards (CPU hot-unplug removes its share from the sum) shows as 0 rather than a huge number. With no
    /// time elapsed every field is 0.
    pub fn between(a: &SystemCpu, b: &SystemCpu) -> SystemCpuUsage {
        let d = |x: u64, y: u64| y.saturating_sub(x);
        let delta = SystemCpu {
            user: d(a.user, b.user),
            nice: d(a.nice, b.nice),
            system: d(a.system, b.system),
            idle: d(a.idle, b.idle),
            iowait: d(a.iowait, b.iowait),
            irq: d(a.irq, b.irq),
            softirq: d(a.softirq, b.softirq),
            steal: d(a.steal, b.steal),
        };
        let total = delta.total();
        if total == 0 {
            return SystemCpuUsage::default();
        }
        let pct = |v: u64| v as f64 * 100.0 / total as f64;
        SystemCpuUsage {
            user_pct: pct(delta.user + delta.nice),
            system_pct: pct(delta.system + delta.irq + delta.softirq),
            iowait_pct: pct(delta.iowait),
            idle_pct: pct(delta.idle),
            steal_pct: pct(delta.steal),
        }
    }
}

/// CPU time and peak memory of this process (all its threads) since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessCpu {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel (system calls, I/O submission and completion).
    pub system: Duration,
    /// Peak resident set size.
    pub max_rss: Bytes,
    /// Context switches, voluntary and involuntary, of all threads so far.
    pub context_switches: u64,
    /// Page faults that needed I/O.
    pub major_faults: u64,
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Bytes this process asked block devices to read so far (`read_bytes` of /proc/self/io, `io.rs`);
    /// `None` where it cannot be read.
    #[serde(default)]
    pub storage_read_bytes: Option<u64>,
}

impl ProcessCpu {
    /// Reads `getrusage(RUSAGE_SELF)`. rustix 1.1 has no getrusage, hence libc. The call can only fail for a
    /// bad `who` or a bad pointer, neither possible here; should it fail anyway, the result is all zeros
    /// rather than an error every caller would have to handle.
    #[allow(unsafe_code)]
    pub fn read() -> ProcessCpu {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `usage` points to writable memory of the size of `struct rusage`, and RUSAGE_SELF is valid.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return ProcessCpu::default();
        }
        // SAFETY: the memory was zero-initialised (a valid `rusage`, all integers) and then filled by the kernel.
        let usage = unsafe { usage.assume_init() };
        ProcessCpu {
            user: timeval_to_duration(usage.ru_utime),
            system: timeval_to_duration(usage.ru_stime),
            // Linux reports ru_maxrss in KiB.
            max_rss: Bytes(u64::try_from(usage.ru_maxrss).unwrap_or(0).saturating_mul(KIB)),
            context_switches: count(usage.ru_nvcsw).saturating_add(count(usage.ru_nivcsw)),
            major_faults: count(usage.ru_majflt),
            minor_faults: count(usage.ru_minflt),
            storage_read_bytes: super::io::self_read_bytes(),
        }
    }

    /// User plus system time spent since `earlier` (a sample from the same process), saturating at zero.
    pub fn cpu_since(&self, earlier: &ProcessCpu) -> Duration {
        (self.user + self.system).saturating_sub(earlier.user + earlier.system)
    }

    /// Bytes this process asked block devices to read since `earlier`; `None` when either sample lacks it.
    pub fn storage_reads_since(&self, earlier: &ProcessCpu) -> Option<u64> {
        Some(self.storage_read_bytes?.saturating_sub(earlier.storage_read_bytes?))
    }
}

fn count(value: libc::c_long) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn timeval_to_duration(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec).unwrap_or(0).min(999_999);
    Duration::new(secs, micros * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "\
cpu  7405 10 2495 63318 359 5 71 13 0 0
cpu0 3055 0 1001 32678 32 0 21 7 0 0
intr 1234 0 0
ctxt 99
";

    #[test]
    fn parses_the_aggregate_line_only() {
        let cpu = parse_proc_stat(STAT).expect("valid sample");
        assert_eq!(
            cpu,
            SystemCpu { user: 7405, nice: 10, system: 2495, idle: 63318, iowait: 359, irq: 5, softirq: 71, steal: 13 }
        );
    }

    #[test]
    fn old_kernels_without_steal_parse_and_garbage_is_an_error() {
        let cpu = parse_proc_stat("cpu 1 2 3 4 5 6 7\n").expect("7 columns");
        assert_eq!((cpu.softirq, cpu.steal), (7, 0));
        assert!(parse_proc_stat("cpu0 1 2 3 4\n").is_err(), "per-CPU lines are not the aggregate");
        assert!(parse_proc_stat("cpu 1 2 3\n").is_err());
        let err = parse_proc_stat("cpu 1 x 3 4\n").expect_err("not a number");
        assert!(err.to_string().contains("/proc/stat"), "{err}");
    }

    #[test]
    fn usage_is_percent_of_all_cpu_time() {
        let a = SystemCpu::default();
        let b = SystemCpu { user: 30, nice: 10, system: 10, idle: 20, iowait: 10, irq: 5, softirq: 5, steal: 10 };
        let u = SystemCpuUsage::between(&a, &b);
        assert_eq!((u.user_pct, u.system_pct, u.iowait_pct, u.idle_pct, u.steal_pct), (40.0, 20.0, 10.0, 20.0, 10.0));
        let sum = u.user_pct + u.system_pct + u.iowait_pct + u.idle_pct + u.steal_pct;
        assert!((sum - 100.0).abs() < 1e-9);
        assert_eq!(SystemCpuUsage::between(&b, &b), SystemCpuUsage::default());
        // Counters that went backwards do not produce negative or huge percentages.
        let back = SystemCpuUsage::between(&b, &a);
        assert_eq!(back, SystemCpuUsage::default());
    }

    #[test]
    fn live_samples_are_sane() {
        let cpu = SystemCpu::read().expect("/proc/stat is readable");
        assert!(cpu.total() > 0);
        let before = ProcessCpu::read();
        // Burn a little CPU so user time can only grow.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = ProcessCpu::read();
        assert!(after.user + after.system >= before.user + before.system);
        assert!(after.max_rss > Bytes::kib(100), "{after:?}");
        assert_eq!(before.cpu_since(&after), Duration::ZERO, "saturates when given the later sample first");
    }
}
