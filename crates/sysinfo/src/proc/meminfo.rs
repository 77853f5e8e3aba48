//! /proc/meminfo: how much RAM there is, how much could be used, and how much the page cache holds.
//!
//! The numbers decide whether a data set fits in RAM (results are then cache-affected) and show dirty data
//! waiting for writeback. This file only parses and reads; it never drops caches or changes VM settings.

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, KIB};

use super::super::{SysinfoError, read_text};

/// A snapshot of system memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemInfo {
    /// Total usable RAM (MemTotal).
    pub total: Bytes,
    /// What new work could get without swapping (MemAvailable); estimated as free + buffers + cached on
    /// kernels before 3.14, which lack the field.
    pub available: Bytes,
    /// Page cache, excluding swap cache (Cached).
    pub cached: Bytes,
    /// Block-device buffer cache (Buffers).
    pub buffers: Bytes,
    /// Modified pages waiting for writeback (Dirty).
    pub dirty: Bytes,
    /// RAM not used for anything (MemFree).
    pub free: Bytes,
}

impl MemInfo {
    /// Reads the live /proc/meminfo.
    pub fn read() -> Result<MemInfo, SysinfoError> {
        parse_meminfo(&read_text("/proc/meminfo")?)
    }
}

/// Parses /proc/meminfo text ("MemTotal:       24683656 kB"). MemTotal and MemFree are required; other
/// missing fields count as 0 (MemAvailable is estimated, see [`MemInfo::available`]).
pub fn parse_meminfo(text: &str) -> Result<MemInfo, SysinfoError> {
    let field = |name: &str| -> Option<Bytes> {
        text.lines().find_map(|line| {
            let (key, rest) = line.split_once(':')?;
            if key.trim() != name {
                return None;
            }
            let mut parts = rest.split_whitespace();
            let value: u64 = parts.next()?.parse().ok()?;
            // Every size field is in "kB", which the kernel means as KiB; a field without a unit is a count.
            let multiplier = if parts.next() == Some("kB") { KIB } else { 1 };
            Some(Bytes(value.saturating_mul(multiplier)))
        })
    };
    let required = |name: &'static str| {
        field(name).ok_or_else(|| SysinfoError::Malformed {
            what: "/proc/meminfo",
            detail: format!("no readable `{name}` line"),
        })
    };
    let total = required("MemTotal")?;
    let free = required("MemFree")?;
    let cached = field("Cached").unwrap_or_default();
    let buffers = field("Buffers").unwrap_or_default();
    let available = field("MemAvailable").unwrap_or(Bytes(free.0.saturating_add(cached.0).saturating_add(buffers.0)));
    Ok(MemInfo { total, available, cached, buffers, dirty: field("Dirty").unwrap_or_default(), free })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
MemTotal:       24683656 kB
MemFree:        23571700 kB
MemAvailable:   24367036 kB
Buffers:            6964 kB
Cached:           968600 kB
SwapCached:            0 kB
Dirty:               132 kB
HugePages_Total:       0
";

    #[test]
    fn parses_fields_in_kib() {
        let m = parse_meminfo(SAMPLE).expect("valid sample");
        assert_eq!(m.total, Bytes(24683656 * 1024));
        assert_eq!(m.free, Bytes(23571700 * 1024));
        assert_eq!(m.available, Bytes(24367036 * 1024));
        assert_eq!(m.buffers, Bytes(6964 * 1024));
        assert_eq!(m.cached, Bytes(968600 * 1024), "SwapCached must not be mistaken for Cached");
        assert_eq!(m.dirty, Bytes(132 * 1024));
    }

    #[test]
    fn estimates_available_on_old_kernels_and_requires_total() {
        let old = "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 200 kB\n";
        let m = parse_meminfo(old).expect("old layout");
        assert_eq!(m.available, Bytes(310 * 1024));
        assert_eq!(m.dirty, Bytes(0));
        let err = parse_meminfo("MemFree: 100 kB\n").expect_err("no MemTotal");
        assert!(err.to_string().contains("MemTotal"), "{err}");
    }

    #[test]
    fn live_meminfo_is_consistent() {
        let m = MemInfo::read().expect("/proc/meminfo is readable");
        assert!(m.total > Bytes(0));
        assert!(m.free <= m.total && m.available <= m.total, "{m:?}");
    }
}
