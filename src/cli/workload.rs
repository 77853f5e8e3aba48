//! The workload flags of `streamcap run` (`--rw`, `--bs`, `--iodepth`, pacing, durability, verification, steady
//! state): each overrides the same key in every phase, and together they become one `PhaseSpec` layer.

use std::time::Duration;

use clap::Args;

use super::{SteadyFlags, parse_bytes, parse_rate, parse_value};
use crate::spec::{
    ArrivalSpec, BlockSizeSpec, DistributionSpec, EngineChoice, JournalMode, PhaseSpec, RwMode, VerifyChoice,
};
use crate::units::{ByteRate, Bytes, parse_duration};

/// A flag's help with the default a phase gets when neither the flag nor the job says it.
fn defaulted(what: &str, default: u32) -> String {
    format!("{what} [default: {default}; the built-in first look and job files set their own]")
}

/// Workload flags: each one overrides the same key in every phase.
#[derive(Debug, Args, Default)]
pub struct WorkloadFlags {
    /// Access pattern: read, write, randread, randwrite, readwrite, randrw.
    #[arg(long, value_parser = parse_value::<RwMode>, help_heading = "Workload")]
    pub rw: Option<RwMode>,
    /// Percentage of reads in readwrite/randrw (default 50).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=100), help_heading = "Workload")]
    pub rdpct: Option<u8>,
    /// Block size: 4k, a range 4k-64k, or a weighted split 4k/60:64k/40.
    #[arg(long, value_parser = parse_value::<BlockSizeSpec>, help_heading = "Workload")]
    pub bs: Option<BlockSizeSpec>,
    /// Size of the data set (k, M, G, T are powers of 1024; kB, MB, GB powers of 1000). Default 1G.
    #[arg(long, value_parser = parse_bytes, help_heading = "Workload")]
    pub size: Option<Bytes>,
    /// Number of files the data set is spread over.
    #[arg(long, help_heading = "Workload")]
    pub files: Option<u32>,
    /// Random offsets: uniform, zipf:1.2, pareto:0.9, normal:5, poisson:3 (vdbench's Poisson seek).
    #[arg(long, value_parser = parse_value::<DistributionSpec>, help_heading = "Workload")]
    pub distribution: Option<DistributionSpec>,
    /// Seed of the random generators (the same seed repeats the same offsets).
    #[arg(long, help_heading = "Workload")]
    pub seed: Option<u64>,

    /// Worker threads.
    #[arg(long, help = defaulted("Worker threads", crate::plan::defaults::JOBS), help_heading = "Concurrency")]
    pub jobs: Option<u32>,
    /// Operations in flight per worker.
    #[arg(long, help = defaulted("Operations in flight per worker", crate::plan::defaults::IODEPTH),
          help_heading = "Concurrency")]
    pub iodepth: Option<u32>,
    /// io_uring: pass requests to the kernel in groups of N (default 1: each at once, like fio).
    #[arg(long, value_name = "N", help_heading = "Concurrency")]
    pub iodepth_batch: Option<u32>,
    /// I/O engine: io_uring (or uring; the default where available), sync (or psync: one I/O in flight per
    /// worker) or null (reads and writes nothing: streamcap's own cost).
    #[arg(long, value_parser = super::parse_engine, help_heading = "Concurrency")]
    pub engine: Option<EngineChoice>,

    /// Measured time per phase.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Time", help = format!(
        "Measured time per phase [default: one pass over the data set, as fio; a file-set phase {}s; the \
         built-in first look and job files set their own]",
        crate::plan::defaults::FILESET_RUNTIME.as_secs()))]
    pub runtime: Option<Duration>,
    /// Warm-up before measuring (excluded from results).
    #[arg(long, value_parser = parse_duration, value_name = "TIME", help_heading = "Time")]
    pub ramp: Option<Duration>,
    /// Stop after this many bytes of I/O (all workers together).
    #[arg(long, value_parser = parse_bytes, value_name = "SIZE", help_heading = "Time")]
    pub io_size: Option<Bytes>,

    /// Pace each worker at this many bytes per second (e.g. 200MB/s), or at a bitrate (25Mbit/s).
    #[arg(long, value_parser = parse_rate, help_heading = "Pacing")]
    pub rate: Option<ByteRate>,
    /// Pace each worker at this many operations per second.
    #[arg(long, help_heading = "Pacing")]
    pub rate_iops: Option<u64>,
    /// Arrival process of paced operations: linear or poisson.
    #[arg(long, value_parser = parse_value::<ArrivalSpec>, help_heading = "Pacing")]
    pub rate_process: Option<ArrivalSpec>,

    /// Direct I/O, bypassing the page cache (the default; without this flag streamcap falls back to buffered
    /// I/O with a notice where the filesystem refuses it).
    #[arg(long, conflicts_with = "buffered", help_heading = "Durability")]
    pub direct: bool,
    /// Buffered I/O through the page cache.
    #[arg(long, help_heading = "Durability")]
    pub buffered: bool,
    /// Drop the files' pages from the page cache before each phase (fio's invalidate; the default).
    /// `--invalidate=0` keeps them, so a buffered re-read of what the last phase read or wrote comes from RAM.
    #[arg(long, value_name = "0|1", num_args = 0..=1, default_missing_value = "1", require_equals = true,
          value_parser = clap::builder::BoolishValueParser::new(), help_heading = "Durability")]
    pub invalidate: Option<bool>,
    /// Read the files once into the page cache before each phase, unmeasured (fio's pre_read): buffered reads
    /// then start from RAM. Comes after the invalidation, so it wins.
    #[arg(long, help_heading = "Durability")]
    pub pre_read: bool,
    /// fsync after every N writes.
    #[arg(long, value_name = "N", help_heading = "Durability")]
    pub fsync_every: Option<u64>,
    /// fsync every written file at the end of each phase (timed).
    #[arg(long, help_heading = "Durability")]
    pub end_fsync: bool,
    /// Record I/O errors and go on instead of stopping the phase.
    #[arg(long, help_heading = "Durability")]
    pub continue_on_error: bool,

    /// Verify written data: crc32c, xxhash, sha256 (a checksum in every block's header) or pattern (a seeded
    /// byte pattern, compared byte for byte). Reads check what they read; the run ends by reading back
    /// everything it wrote. Bad blocks make the exit code 1.
    #[arg(long, value_name = "ALGO", value_parser = parse_value::<VerifyChoice>, help_heading = "Verification")]
    pub verify: Option<VerifyChoice>,
    /// With --verify: after every N writes, each worker reads those N blocks back and checks them.
    #[arg(long, value_name = "N", requires = "verify", help_heading = "Verification")]
    pub verify_backlog: Option<u64>,
    /// With --verify: keep a journal of every block written beside the data (sync: each record durable before
    /// the run goes on; noflush: not waited for), and keep the data, so that a run killed mid-write can be
    /// checked with --verify-only.
    #[arg(long, value_name = "MODE", value_parser = parse_value::<JournalMode>, requires = "verify", help_heading = "Verification")]
    pub journal: Option<JournalMode>,
    #[command(flatten)]
    pub steady: SteadyFlags,

    /// Write fio's bandwidth log of each raw phase in the working directory, PREFIX_bw.N.log (KiB/s per
    /// interval, as fio's write_bw_log with log_avg_msec; fio2gnuplot and fiologparser read it).
    #[arg(long, value_name = "PREFIX", help_heading = "fio logs")]
    pub write_bw_log: Option<String>,
    /// Write fio's IOPS log, PREFIX_iops.N.log (as fio's write_iops_log).
    #[arg(long, value_name = "PREFIX", help_heading = "fio logs")]
    pub write_iops_log: Option<String>,
    /// Write fio's latency logs, PREFIX_lat.N.log and PREFIX_clat.N.log (mean ns per interval, as fio's
    /// write_lat_log).
    #[arg(long, value_name = "PREFIX", help_heading = "fio logs")]
    pub write_lat_log: Option<String>,
    /// Write fio's latency histogram log, PREFIX_clat_hist.N.log (fio's 1,856 nanosecond bins per line, as
    /// fio's write_hist_log; fio-histo-log-pctiles.py and fiologparser_hist.py read it).
    #[arg(long, value_name = "PREFIX", help_heading = "fio logs")]
    pub write_hist_log: Option<String>,
    /// How long one line of the histogram log covers, in milliseconds (fio's log_hist_msec; default: the
    /// reporting interval).
    #[arg(long, value_name = "MS", requires = "write_hist_log", help_heading = "fio logs")]
    pub log_hist_msec: Option<u64>,
}

impl WorkloadFlags {
    /// The flags as a phase layer: only what was said.
    pub fn to_phase_spec(&self) -> PhaseSpec {
        PhaseSpec {
            name: None,
            rw: self.rw,
            rdpct: self.rdpct,
            bs: self.bs.clone(),
            size: self.size,
            files: self.files,
            distribution: self.distribution.clone(),
            seed: self.seed,
            jobs: self.jobs,
            iodepth: self.iodepth,
            iodepth_batch: self.iodepth_batch,
            engine: self.engine,
            runtime: self.runtime,
            ramp: self.ramp,
            io_size: self.io_size,
            rate: self.rate,
            rate_iops: self.rate_iops,
            rate_process: self.rate_process,
            direct: match (self.direct, self.buffered) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            invalidate: self.invalidate,
            pre_read: self.pre_read.then_some(true),
            fsync_every: self.fsync_every,
            end_fsync: self.end_fsync.then_some(true),
            continue_on_error: self.continue_on_error.then_some(true),
            verify: self.verify,
            verify_backlog: self.verify_backlog,
            journal: self.journal,
            steady_state: self.steady.to_spec(),
            bw_log: self.write_bw_log.clone(),
            iops_log: self.write_iops_log.clone(),
            lat_log: self.write_lat_log.clone(),
            hist_log: self.write_hist_log.clone(),
            log_hist_msec: self.log_hist_msec.filter(|&ms| ms > 0).map(Duration::from_millis),
            ..PhaseSpec::default()
        }
    }
}
