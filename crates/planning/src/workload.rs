//! What a pool must serve: a stream mix (formats come from the caller, who resolves names with
//! `streams::formats`, so the table lives in one place), optional ingest writers, and a file workload in
//! vdbench's words. Also the planner's own defaults, in one place.

use std::str::FromStr;

use crate::units::{Bitrate, ByteRate, Bytes};

/// The planner's defaults.
pub mod defaults {
    /// The file workload when none is given: random 4 KiB reads from 8 threads (vdbench's raw-I/O defaults,
    /// xfersize=4k and 8 threads per storage definition; its file-system defaults differ).
    pub const FILE_TRANSFER: u64 = 4096;
    pub const FILE_READ_PCT: f64 = 100.0;
    pub const FILE_THREADS: u32 = 8;
    /// Request size of the sequential figures (streamcap check's sequential phases use 1 MiB).
    pub const SEQUENTIAL_REQUEST: u64 = 1 << 20;
    /// A rebuild takes this share of the time of each member it reads or writes (md throttles a resync between
    /// sync_speed_min and sync_speed_max when other I/O runs; half is a middle ground).
    pub const REBUILD_SHARE: f64 = 0.5;
    /// Drives per pool when the command line names no pool and no count.
    pub const COUNT: usize = 4;
    /// Drives in one pool at most (`--count` and `--pool` alike): beyond it a pool is not one box any more, and
    /// `--pool a:100000000000` made a vector of 10^11 drives (an abort on a 20 TB allocation).
    pub const MAX_DRIVES: usize = 64;
    /// Rows shown in the terminal table.
    pub const TOP: usize = 20;
}

/// One format of the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFormat {
    pub name: String,
    pub label: String,
    pub bitrate: Bitrate,
    pub weight: u32,
}

/// Background writers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ingest {
    /// All writers together.
    pub rate: ByteRate,
    pub writers: u32,
    /// Bytes per write request.
    pub request: Bytes,
}

/// The streams to serve.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamDemand {
    pub formats: Vec<StreamFormat>,
    /// Bytes per viewer request.
    pub chunk: Bytes,
    /// Threads issuing the viewers' reads (streamcap's scheduler threads; a media server's worker threads);
    /// `None`: many, as a server with a thread or process per stream has.
    pub reader_threads: Option<u32>,
    pub ingest: Option<Ingest>,
}

impl StreamDemand {
    /// Bytes per second one viewer of the mix needs (weighted mean).
    pub fn mean_byte_rate(&self) -> f64 {
        let total: f64 = self.formats.iter().map(|f| f64::from(f.weight)).sum::<f64>().max(1.0);
        self.formats.iter().map(|f| f64::from(f.weight) * f.bitrate.byte_rate().bytes_per_sec()).sum::<f64>() / total
    }
}

/// A file workload (vdbench: rdpct, xfersize, threads, size, fileio).
#[derive(Debug, Clone, PartialEq)]
pub struct FileWorkload {
    /// Reads among operations, 0–100.
    pub read_pct: f64,
    pub transfer: Bytes,
    pub threads: u32,
    pub file_size: Option<Bytes>,
    /// Files the workload reads (vdbench's `files`): with `file_size`, its working set.
    pub files: Option<u64>,
    pub sequential: bool,
}

impl Default for FileWorkload {
    fn default() -> FileWorkload {
        FileWorkload {
            read_pct: defaults::FILE_READ_PCT,
            transfer: Bytes(defaults::FILE_TRANSFER),
            threads: defaults::FILE_THREADS,
            file_size: None,
            files: None,
            sequential: false,
        }
    }
}

impl FileWorkload {
    /// The workload in its own words: what the members serve ("reads", or "I/Os" once writes are among them,
    /// which may cost reads too) and one unit of it ("read", "write", "operation").
    pub fn words(&self) -> (&'static str, &'static str) {
        if self.read_pct >= 100.0 {
            ("reads", "read")
        } else if self.read_pct <= 0.0 {
            ("I/Os", "write")
        } else {
            ("I/Os", "operation")
        }
    }

    /// Bytes the workload reads again and again: `size` × `files`, when both are given.
    pub fn working_set(&self) -> Option<f64> {
        Some(self.file_size?.0 as f64 * self.files? as f64)
    }

    /// Bytes per operation: the transfer size, or the whole file when files are smaller.
    pub fn op_bytes(&self) -> f64 {
        let transfer = self.transfer.0 as f64;
        self.file_size.map_or(transfer, |f| transfer.min(f.0 as f64)).max(512.0)
    }
}

/// `rdpct=70,xfersize=64k,threads=16,size=1g,fileio=random`: vdbench's keys; what is not said keeps the
/// planner's default (`defaults::FILE_*`).
impl FromStr for FileWorkload {
    type Err = String;
    fn from_str(s: &str) -> Result<FileWorkload, String> {
        let mut workload = FileWorkload::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("'{part}' is not KEY=VALUE (rdpct, xfersize, threads, size, files, fileio)"))?;
            let bad = |what: &str| format!("{key}={value}: {what}");
            match key.trim().to_ascii_lowercase().as_str() {
                "rdpct" => {
                    workload.read_pct = value
                        .parse::<f64>()
                        .ok()
                        .filter(|p| (0.0..=100.0).contains(p))
                        .ok_or_else(|| bad("a percentage from 0 to 100"))?;
                }
                "xfersize" => workload.transfer = Bytes::parse_positive(value).map_err(|e| bad(&e.to_string()))?,
                "threads" => {
                    workload.threads =
                        value.parse().ok().filter(|t| *t > 0).ok_or_else(|| bad("a number of threads above 0"))?;
                }
                "size" | "filesize" => {
                    workload.file_size = Some(Bytes::parse_positive(value).map_err(|e| bad(&e.to_string()))?);
                }
                "files" => {
                    workload.files =
                        Some(value.parse().ok().filter(|n| *n > 0).ok_or_else(|| bad("a number of files above 0"))?);
                }
                "fileio" => {
                    workload.sequential = match value.trim() {
                        "random" => false,
                        "sequential" => true,
                        _ => return Err(bad("random or sequential")),
                    }
                }
                other => {
                    return Err(format!(
                        "'{other}' is not a file workload key: rdpct, xfersize, threads, size, files, fileio"
                    ));
                }
            }
        }
        Ok(workload)
    }
}

/// What the ranking optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Goal {
    /// Lowest cost per stream of the mix (pools without prices rank by streams).
    #[default]
    CostPerStream,
    /// Most usable capacity.
    Capacity,
    /// Most streams of the mix.
    Streams,
}

impl Goal {
    pub fn name(self) -> &'static str {
        match self {
            Goal::CostPerStream => "cost-per-stream",
            Goal::Capacity => "capacity",
            Goal::Streams => "streams",
        }
    }
}

impl FromStr for Goal {
    type Err = String;
    fn from_str(s: &str) -> Result<Goal, String> {
        match s.trim() {
            "cost-per-stream" => Ok(Goal::CostPerStream),
            "capacity" => Ok(Goal::Capacity),
            "streams" => Ok(Goal::Streams),
            _ => Err(format!("'{s}' is not a goal: cost-per-stream, capacity or streams")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_workload_reads_vdbench_keys() {
        let w: FileWorkload = "rdpct=70,xfersize=64k,threads=16,size=1g,fileio=sequential".parse().unwrap();
        assert_eq!((w.read_pct, w.transfer, w.threads, w.sequential), (70.0, Bytes(65536), 16, true));
        assert_eq!(w.op_bytes(), 65536.0);
        let small: FileWorkload = "xfersize=64k,size=16k".parse().unwrap();
        assert_eq!(small.op_bytes(), 16384.0);
        assert!("rdpct=170".parse::<FileWorkload>().unwrap_err().contains("0 to 100"));
        assert!("seekpct=100".parse::<FileWorkload>().unwrap_err().contains("rdpct"));
    }
}
