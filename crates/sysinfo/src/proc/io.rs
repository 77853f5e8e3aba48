//! This process's storage reads from /proc/self/io: `read_bytes`, the bytes its threads (io_uring's workers
//! included: they belong to the process) asked block devices for. The kernel counts a read when the request is
//! submitted (`submit_bio`), so page-cache hits are not in it, and nor are the reads a loop device's worker makes
//! of its backing file on the run's behalf. Set beside the devices' own counters, it tells the run's reads from
//! other processes' on a shared device. Writes are not read: buffered writes are counted when a page is dirtied,
//! long before (or after) the device writes it.

use super::super::read_text;

/// `read_bytes` of a /proc/PID/io text.
pub fn parse_read_bytes(text: &str) -> Option<u64> {
    text.lines().find_map(|line| line.strip_prefix("read_bytes:")).and_then(|v| v.trim().parse().ok())
}

/// The live figure for this process; `None` where /proc/self/io cannot be read (a kernel without task I/O
/// accounting, a restricted /proc).
pub fn self_read_bytes() -> Option<u64> {
    parse_read_bytes(&read_text("/proc/self/io").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_bytes_is_taken_from_its_line() {
        let text = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 1048576\nwrite_bytes: 0\n";
        assert_eq!(parse_read_bytes(text), Some(1_048_576));
        assert_eq!(parse_read_bytes("rchar: 1\n"), None);
        assert!(self_read_bytes().is_some(), "/proc/self/io is readable here");
    }
}
