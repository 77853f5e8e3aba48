//! The `Plan`: concrete, fully expanded work — which files, which phases, which worker touches which bytes, with
//! every default filled in and every safety rule checked. Pure data: building it does no I/O (the facts about
//! the target are gathered beforehand and passed in), so `--dry-run` can print it and tests can build it from
//! made-up facts.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::engine;
pub(crate) use ::limits;
pub(crate) use ::metrics;
pub(crate) use ::spec;
pub(crate) use ::units;
pub(crate) use ::workload;
// This crate, as `crate::plan::…` names it.
#[cfg(test)]
use crate as plan;

mod build;
mod concatenated;
mod data;
pub mod defaults;
mod devices;
mod display;
mod display_streams;
mod facts;
mod files;
mod fileset;
mod fileset_share;
mod fileset_workload;
mod fill;
mod kept_library;
mod library;
mod mix;
mod phase;
mod raw;
mod resources;
mod steady;
mod streams;
mod streams_during;
mod streams_limits;
mod streams_media;
mod streams_sockets;
mod streams_threads;
mod strided;
mod target;
mod values;
mod verify;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::spec::{RwMode, SpecOrigin};
use crate::units::Bytes;
use crate::workload::WorkloadConfig;

pub use crate::spec::{
    CmdPrio, ExitWhat, FileIo, FileOp, FioJobInfo, FlowSpec, FormatMode, JournalMode, LatencyTarget, Load, PrioShare,
    StopAfter,
};
pub use build::{RunOptions, build_plan};
pub use data::{ByAddress, DataShape, GlobalSet, Pattern};
pub use devices::job_devices;
pub use facts::{AnchorFacts, AnchorState, Facts, ResourceLimits, ScrubTarget, SocketLimits, TargetFacts};
pub use fileset::{FileRate, FileSetPlan, FileWorkloadPlan, TREE_DIR_PREFIX, TreePlan};
pub use fileset_share::TreeShare;
pub use kept_library::{KEPT_LIBRARY_DIR, KeptLibrary, LibraryChoice, LibraryKeeping, LibraryUse};
pub use library::{is_title, title_name};
pub use phase::{CurvePlan, Outline, PhaseKind, PhasePlan, RawPlan};
pub use resources::{PROCESS_RESERVE, WORKER_STATE_BYTES};
pub use streams::{
    EstimatePlan, IngestPlan, MediaSource, SearchPlan, StreamCount, StreamTarget, StreamsPlan, streams_config,
};
pub use streams_during::BackgroundPlan;
pub use streams_limits::longest_chunk;
pub use streams_media::media_name;
pub use streams_threads::{Mirrors, THREADS_MAX, ThreadPlan};
pub use values::engine_for;
pub use verify::{VerifyPlan, algorithm as verify_algorithm, verified_trees};

/// A plan the user cannot run as asked, with what to do instead. Exit code 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

/// Everything a run will do.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Where the job came from: built-in default, flags, or a TOML, fio or vdbench file (with its path).
    pub origin: SpecOrigin,
    /// The target and its data files.
    pub target: TargetPlan,
    /// Every phase, in the order they run (a stream phase's estimate phases come right before it).
    pub phases: Vec<PhasePlan>,
    /// Reporting interval: one snapshot per worker, one interval point and one CSV row per phase each time.
    /// Seconds in JSON.
    #[serde(serialize_with = "ser_secs")]
    pub interval: Duration,
    /// Things the user should know (fallbacks, ignored values), in words; printed before the run and kept in the
    /// result.
    pub notices: Vec<String>,
    /// Data verification (`--verify`), for the whole run; `None` without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyPlan>,
    /// When a file-set tree is in use by another run, wait for it instead of refusing (`--wait`).
    #[serde(skip)]
    pub wait: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// streamcap creates its data files in a work directory it owns under the target.
    Directory,
    /// An existing regular file, read only.
    File,
    /// A raw block device.
    BlockDevice,
    /// Remote media (http:// URLs): read in byte ranges, nothing written, no local device.
    Remote,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetPlan {
    /// Directory, existing file, block device or remote media.
    pub kind: TargetKind,
    /// The target as the facts found it (canonicalized), or the URL text of remote media.
    pub path: PathBuf,
    /// Directory targets: `TARGET/.streamcap/<run id>`, created for this run and removed after it. `None` for
    /// other targets and for a directory job that creates no data files (file sets, the user's own media).
    pub work_dir: Option<PathBuf>,
    /// The file table every phase indexes (`PhasePlan::files`, `MediaSource::File`): data files, test media,
    /// the user's media files; empty for remote media.
    pub files: Vec<FilePlan>,
    /// Whether any phase may write (directory targets always; a block device only with writing phases that
    /// passed the safety checks; an existing file or remote media never).
    pub writes_allowed: bool,
    /// Why the target's data lives in RAM, if it does (every result is then marked cache-affected).
    pub memory_backed: Option<String>,
    /// The library of titles kept between runs under `TARGET/.streamcap/library`: read, or replaced, and kept
    /// after the run or removed. `None`: no kept library is involved (a library of this run alone, if any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryKeeping>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FilePlan {
    /// Where the file is: inside the work directory for files streamcap creates, else the user's file or device.
    pub path: PathBuf,
    /// Bytes of the file (or device range) in use, from offset 0.
    pub size: Bytes,
    /// streamcap creates this file (sparse, at `size` bytes) and removes it afterwards; `false`: it exists and is
    /// only read, unless it is a block device the user allowed writes to.
    pub created: bool,
}

/// Whether to bypass the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectMode {
    /// The user asked for direct I/O: fail if the filesystem refuses it.
    Required,
    /// Direct I/O by default: fall back to buffered with a notice if the filesystem refuses it.
    Preferred,
    /// Buffered I/O (`--buffered`).
    Off,
}

/// Operation pacing per worker.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pacing {
    /// Target operations per second per worker (from `rate-iops`, or `rate` divided by the mean block size).
    pub ops_per_sec: f64,
    /// Target bytes per second per worker when the user gave a byte rate (due times then follow each
    /// operation's length); `None` when paced by operations.
    pub bytes_per_sec: Option<f64>,
    /// How the due times are spaced: evenly, or with exponential gaps of the same mean.
    pub arrivals: Arrivals,
}

/// fio-format log files asked for (fio write_bw_log, write_iops_log, write_lat_log): file-name prefixes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FioLogs {
    /// write_bw_log: prefix of the bandwidth log (KiB/s per interval, as fio writes it); `None`: not written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw: Option<String>,
    /// write_iops_log: prefix of the IOPS log (operations per second per interval); `None`: not written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops: Option<String>,
    /// write_lat_log: prefix of the latency logs (mean latency per interval, ns); `None`: not written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat: Option<String>,
    /// write_hist_log: prefix of the latency histogram log (fio's bins per `hist_every`); `None`: not written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
    /// log_hist_msec: a histogram line covers at least this long (`None`: each reporting interval); seconds.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_opt_secs")]
    pub hist_every: Option<Duration>,
    /// log_hist_coarseness: fio's bins are summed in groups of 2^this (0–6).
    pub hist_coarseness: u8,
}

/// A pause after every `every` operations (fio thinktime and thinktime_blocks).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Thinktime {
    /// How long each pause lasts (seconds in JSON).
    #[serde(serialize_with = "ser_secs")]
    pub pause: Duration,
    /// Operations between pauses (at least 1).
    pub every: u32,
}

/// The lowest rate a worker may fall to over an interval before the phase fails.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateFloor {
    /// Bytes per second a worker must reach in every full interval (fio rate_min); `None`: no byte floor.
    pub bytes_per_sec: Option<f64>,
    /// Operations per second a worker must reach in every full interval (fio rate_iops_min); `None`: none.
    pub ops_per_sec: Option<f64>,
}

/// When paced operations arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced.
    Linear,
    /// Exponential gaps with the same mean (a Poisson process): bursts and lulls, as from independent clients.
    Poisson,
}

/// One part of a raw phase with parts.
#[derive(Debug, Clone, Serialize)]
pub struct PartPlan {
    /// The part's name (vdbench: `wd1 on sd2`, with `on HOST` when the run has several hosts).
    pub name: String,
    /// The worker it runs on (parts of one queue share a worker).
    pub queue: String,
    /// Percent of the phase's operations (0 for a part with its own rate).
    pub share_percent: f64,
    /// Operations per second of a part with a fixed rate of its own (vdbench's wd `iorate=`).
    pub own_rate_iops: Option<f64>,
    /// Its read/write pattern.
    pub rw: RwMode,
    /// Percent of its operations that are reads.
    pub read_percent: u8,
    /// Its block sizes as written.
    pub bs_label: String,
    /// Bytes it addresses.
    pub data_set: Bytes,
    /// Its files (indices into the target's file table).
    pub files: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct WorkerPlan {
    /// What the worker's operation source generates: its regions (file, offset, length in bytes), access,
    /// read percentage, block sizes, alignment and seed.
    pub workload: WorkloadConfig,
    /// Bytes this worker issues before it stops (None: time-bound only).
    pub io_bytes: Option<u64>,
    /// Operations this worker issues before it stops (fio number_ios).
    pub io_ops: Option<u64>,
    /// Bytes this worker reads, and writes, before it stops (its share of the phase's `io_by_direction`).
    pub io_by_direction: DirectionBytes,
    /// A worker of a phase with parts: the workloads it mixes besides `workload`, and how.
    pub mixed: Option<MixedWorker>,
}

/// An amount of reads and one of writes (bytes), either of which ends the work once issued; `None`: no bound on
/// that direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DirectionBytes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written: Option<u64>,
}

impl DirectionBytes {
    pub fn is_none(&self) -> bool {
        self.read.is_none() && self.written.is_none()
    }
}

/// How a worker of a phase with parts works.
#[derive(Debug, Clone, PartialEq)]
pub struct MixedWorker {
    /// Fraction (0–1) of the phase's operations, and of its rate when paced, that this worker does.
    pub share: f64,
    /// Operations in flight on this worker.
    pub iodepth: u32,
    /// Its workloads after `WorkerPlan::workload`.
    pub others: Vec<WorkloadConfig>,
    /// The weight of each workload, `WorkerPlan::workload` first.
    pub weights: Vec<f64>,
    /// Under mpirun, the rank that runs this worker (its parts' `rank`: vdbench's hd); `None` runs on every rank.
    pub rank: Option<u32>,
    /// vdbench's controlled max: with no rate and a skew said, the workers issue in proportion to their shares
    /// (a worker ahead of its share waits), through a flow of the phase's own; `None`: each runs as fast as it goes.
    pub held: Option<FlowSpec>,
    /// A part with a fixed rate of its own (vdbench's wd `iorate=`): this worker runs only it, paced at this
    /// whatever the phase's pace, with no share of the phase's operations (`share` 0).
    pub own_rate: Option<Pacing>,
}

impl WorkerPlan {
    /// Whether rank `rank` of a multi-host run runs this worker: every rank runs one that belongs to none.
    pub fn runs_on(&self, rank: u32) -> bool {
        self.mixed.as_ref().and_then(|m| m.rank).is_none_or(|r| r == rank)
    }

    /// Every workload of this worker with its weight.
    pub fn workloads(&self) -> Vec<(&WorkloadConfig, f64)> {
        match &self.mixed {
            None => vec![(&self.workload, 1.0)],
            Some(m) => std::iter::once(&self.workload).chain(&m.others).zip(m.weights.iter().copied()).collect(),
        }
    }
}

fn ser_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn ser_opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}
