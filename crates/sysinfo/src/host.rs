//! Host facts recorded with every result: host name, CPU model and count, RAM and the effective RAM under
//! this process's memory cgroup, kernel release, OS name.
//!
//! Gathering never fails: a fact that cannot be read becomes "unknown" (or 0), because a missing CPU model must
//! not stop a benchmark. The parsers take text so they are testable; this file does not sample anything over time
//! (that is `proc`).

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, KIB};

use super::cgroup::memory_limit;
use super::sysfs::read_trimmed;

const UNKNOWN: &str = "unknown";

/// What machine a result was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// The node name from `uname`.
    pub hostname: String,
    /// The CPU model as the kernel names it ("AMD EPYC 7763 64-Core Processor"), or "unknown".
    pub cpu_model: String,
    /// Logical CPUs online (from /sys/devices/system/cpu/online), not only those this process may use.
    pub cpu_count: u32,
    /// Total RAM the kernel manages (MemTotal).
    pub ram: Bytes,
    /// The memory limit of this process's cgroup (the smallest v2 `memory.max` or v1 `memory.limit_in_bytes`
    /// on its path), in bytes; absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<Bytes>,
    /// The cgroup file that sets `memory_limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_file: Option<String>,
    /// The RAM this process can fill with page cache: the smaller of `ram` and `memory_limit`, in bytes. Read
    /// it through [`HostFacts::usable_ram`]: results written before this field existed read 0 here.
    #[serde(default)]
    pub effective_ram: Bytes,
    /// Kernel release from `uname -r` ("6.18.44").
    pub kernel: String,
    /// PRETTY_NAME from /etc/os-release ("Debian GNU/Linux 12 (bookworm)"), or "Linux".
    pub os: String,
}

impl HostFacts {
    /// Reads the facts of the running host. Never fails; unreadable facts become "unknown" or 0.
    pub fn gather() -> HostFacts {
        let uname = rustix::system::uname();
        let text_or_unknown = |c: &std::ffi::CStr| {
            let s = c.to_string_lossy().trim().to_string();
            if s.is_empty() { UNKNOWN.to_string() } else { s }
        };
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_count = read_trimmed("/sys/devices/system/cpu/online")
            .and_then(|list| parse_cpu_list(&list))
            .or_else(|| count_processors(&cpuinfo))
            .or_else(|| std::thread::available_parallelism().ok().and_then(|n| u32::try_from(n.get()).ok()))
            .unwrap_or(0);
        let ram = total_ram();
        let limit = memory_limit();
        HostFacts {
            hostname: text_or_unknown(uname.nodename()),
            cpu_model: parse_cpu_model(&cpuinfo).unwrap_or_else(|| UNKNOWN.to_string()),
            cpu_count,
            ram,
            memory_limit: limit.as_ref().map(|l| l.limit),
            memory_limit_file: limit.as_ref().map(|l| l.file.display().to_string()),
            effective_ram: effective_ram(ram, limit.map(|l| l.limit)),
            kernel: text_or_unknown(uname.release()),
            os: ["/etc/os-release", "/usr/lib/os-release"]
                .iter()
                .find_map(|p| std::fs::read_to_string(p).ok().and_then(|t| parse_os_release(&t)))
                .unwrap_or_else(|| "Linux".to_string()),
        }
    }
}

impl HostFacts {
    /// The RAM that bounds the page cache: `effective_ram`, or `ram` for results that predate it.
    pub fn usable_ram(&self) -> Bytes {
        if self.effective_ram.0 > 0 { self.effective_ram } else { self.ram }
    }
}

/// The RAM a process can use: the host's, or its cgroup's limit when that is smaller. Unknown host RAM (0)
/// yields the limit.
pub fn effective_ram(ram: Bytes, limit: Option<Bytes>) -> Bytes {
    match limit {
        Some(limit) if ram.0 == 0 || limit < ram => limit,
        _ => ram,
    }
}

/// MemTotal from /proc/meminfo; falls back to sysinfo(2), which reports the same number in `mem_unit`s.
// `totalram` is a C `unsigned long`, u32 on 32-bit targets, so `u64::from` is not useless everywhere.
#[allow(clippy::useless_conversion)]
fn total_ram() -> Bytes {
    let from_meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix("MemTotal:")?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(Bytes(kib * KIB))
        })
    });
    from_meminfo.unwrap_or_else(|| {
        let info = rustix::system::sysinfo();
        Bytes(u64::from(info.totalram).saturating_mul(u64::from(info.mem_unit.max(1))))
    })
}

/// The CPU model from /proc/cpuinfo. x86 says "model name"; POWER says "cpu"; some ARM and RISC-V kernels
/// say "Model", "Hardware" or "uarch", and many arm64 kernels name no model at all (then `None`).
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    const KEYS: [&str; 6] = ["model name", "Model", "cpu model", "Hardware", "uarch", "cpu"];
    KEYS.iter().find_map(|wanted| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            let value = value.trim();
            (key.trim() == *wanted && !value.is_empty()).then(|| value.split_whitespace().collect::<Vec<_>>().join(" "))
        })
    })
}

/// Counts CPUs in a kernel CPU list such as "0-3,5,7-8" (the format of /sys/devices/system/cpu/online).
pub fn parse_cpu_list(list: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        count += match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
                last.checked_sub(first)? + 1
            }
            None => {
                part.parse::<u32>().ok()?;
                1
            }
        };
    }
    (count > 0).then_some(count)
}

fn count_processors(cpuinfo: &str) -> Option<u32> {
    let n = cpuinfo.lines().filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor")).count();
    u32::try_from(n).ok().filter(|&n| n > 0)
}

/// PRETTY_NAME from os-release text, with shell quoting removed; `None` when absent.
pub fn parse_os_release(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.trim().strip_prefix("PRETTY_NAME=")?;
        let value = value.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        let unescaped = unquoted.replace("\\\"", "\"").replace("\\\\", "\\");
        (!unescaped.is_empty()).then_some(unescaped)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_from_x86_and_other_layouts() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  7763 64-Core Processor\n";
        assert_eq!(parse_cpu_model(x86).as_deref(), Some("AMD EPYC 7763 64-Core Processor"));
        let power = "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n";
        assert_eq!(parse_cpu_model(power).as_deref(), Some("POWER9 (architected), altivec supported"));
        let arm64 = "processor\t: 0\nBogoMIPS\t: 48.00\nCPU implementer\t: 0x41\n";
        assert_eq!(parse_cpu_model(arm64), None);
    }

    #[test]
    fn cpu_lists_count_ranges_and_singles() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(2));
        assert_eq!(parse_cpu_list("0-3,5,7-8"), Some(7));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
    }

    #[test]
    fn os_release_pretty_name_is_unquoted() {
        let text = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(parse_os_release(text).as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(parse_os_release("PRETTY_NAME=Alpine").as_deref(), Some("Alpine"));
        assert_eq!(parse_os_release("ID=arch\n"), None);
    }

    #[test]
    fn effective_ram_is_the_smaller() {
        assert_eq!(effective_ram(Bytes::gib(24), Some(Bytes::mib(128))), Bytes::mib(128));
        assert_eq!(effective_ram(Bytes::gib(24), Some(Bytes::gib(64))), Bytes::gib(24));
        assert_eq!(effective_ram(Bytes::gib(24), None), Bytes::gib(24));
        assert_eq!(effective_ram(Bytes(0), Some(Bytes::mib(128))), Bytes::mib(128));
    }

    #[test]
    fn gather_fills_every_field_on_a_linux_host() {
        let facts = HostFacts::gather();
        assert!(!facts.hostname.is_empty());
        assert!(facts.cpu_count >= 1, "{facts:?}");
        assert!(facts.ram > Bytes::mib(16), "{facts:?}");
        assert!(facts.effective_ram > Bytes(0) && facts.effective_ram <= facts.ram, "{facts:?}");
        assert_eq!(facts.usable_ram(), facts.effective_ram);
        assert!(facts.kernel.chars().next().is_some_and(|c| c.is_ascii_digit()), "{facts:?}");
        let json = serde_json::to_string(&facts).expect("HostFacts serializes");
        let back: HostFacts = serde_json::from_str(&json).expect("and reads back");
        assert_eq!(back, facts);
    }
}
