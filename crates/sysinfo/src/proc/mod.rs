//! Samplers for /proc: per-device I/O counters (diskstats), system and process CPU time, the process's storage
//! reads, and memory.
//!
//! Each sampler is a pair: a pure parser of the file's text, and a `read` wrapper for the live file. Turning
//! two samples into rates (`DiskActivity::between`, `SystemCpuUsage::between`) is arithmetic on counters and
//! lives here too. Nothing here keeps state, spawns threads or reads clocks: callers take the samples and
//! measure the elapsed time.

mod cpu;
mod diskstats;
mod io;
mod meminfo;

pub use cpu::{ProcessCpu, SystemCpu, SystemCpuUsage, parse_proc_stat};
pub use diskstats::{DiskActivity, DiskStat, SECTOR_BYTES, parse_diskstats, read_diskstats};
pub use io::{parse_read_bytes, self_read_bytes};
pub use meminfo::{MemInfo, parse_meminfo};
