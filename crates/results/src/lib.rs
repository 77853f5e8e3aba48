//! `RunResult`: the one versioned model of a finished (or interrupted) run that every renderer reads and that
//! users' scripts parse. The schema is documented in docs/results-schema.md; bump `SCHEMA_VERSION` on any change
//! that removes or renames a field (adding a field does not need a bump).
//!
//! Units are in the field names (`_ns`, `_s`, `_bytes`, `_mbps` = 10^6 bytes/s, `_pct` = 0–100) so that nobody
//! has to guess.

#![deny(unsafe_code)]

// The crates below this one that its code names as `crate::NAME::…` (docs/architecture.md, "Layers").
pub(crate) use ::limits;
pub(crate) use ::metrics;
pub(crate) use ::outfile;
pub(crate) use ::plan;
#[cfg(test)]
pub(crate) use ::spec;
pub(crate) use ::sysinfo;
pub(crate) use ::units;
// This crate, as `crate::results::…` names it.
#[cfg(test)]
use crate as results;

mod build;
mod cache;
mod check;
mod client_side;
mod cluster;
mod devices;
mod during;
mod fileset;
mod household;
mod io;
mod kind;
mod latency;
mod planning;
mod plausibility;
mod served;
mod skew;
mod streams;
mod streams_step;
mod sweep;
mod trial;
mod verify;

use serde::{Deserialize, Serialize};

// The metric types that appear in results' fields are re-exported, so renderers need not reach below `results`.
pub use crate::metrics::{
    ClassPoint, Depths, LatencySummary, Percentile, RateSpread, SteadyMetric, SteadyOutcome, SteadyRule,
};
use crate::metrics::{ErrorRecord, Mergeable};
pub use crate::plan::FioJobInfo;
use crate::sysinfo::{BlockDevice, DiskActivity, FilesystemFacts, SystemCpuUsage};
pub use crate::sysinfo::{
    BtrfsSpace, DeviceThrottle, HostFacts, PoolFacts, PoolKind, Profile, ThrottleKind, read_limit_words, throttle_words,
};

pub use build::{EngineDetail, PhaseMeasurements, PhaseSamples, build_phase, device_activity, interval_point};
pub use cache::{CacheEnd, CacheStep, CacheSummary, Plateau, PlateauKind};
pub use check::{
    CheckCache, CheckPlayer, CheckSummary, FormatVerdict, PlannerMember, RandomFigures, SequentialFigures,
    SmallFileFigures,
};
pub use client_side::{
    ClientLoad, ClientSample, ClientShare, Connections, client_load, cpu_per_gb, merge_clients, own_words,
};
pub use cluster::{
    CLIENT_CPU_LIMIT_PCT, CLIENT_LAG_LIMIT_MS, ClientFigures, ClusterPhase, ClusterResult, ClusterStep, DoneFigures,
    RankHost, RankPhase, client_verdict, done_figures,
};
pub use devices::{
    Layer, OtherActivity, attribute, busiest_own, other_activity_words, own_device_reads, reads_throttled,
    served_from_beneath, throttle_bound,
};
pub use during::{BreaksFirst, BreaksRow, breaks_first};
pub use fileset::{FileOpPoint, FileOpResult, FileOpsResult, file_op_points, file_ops_result};
pub use household::{Answer, HouseholdAnswer, HouseholdRow, Measured, answer as household_answer, answer_from};
pub use io::{ResultIoError, parse_result, read_result, write_json_atomically, write_result_atomically};
pub use kind::PhaseResultKind;
pub use latency::{DepthFound, LatencyTargetResult};
pub use planning::{
    FormatStreams, LayoutAnswer, MeasuredPool, PLANNING_SCHEMA, PLANNING_SCHEMA_VERSION, PlannedDrive,
    PlannedFileWorkload, PlannedFormat, PlannedWorkload, PlanningResult, RebuildFigures, Refusal, ServiceFigures,
};
pub use plausibility::{
    CACHE_BENEATH, ROTATIONAL_MAX_MBPS, ROTATIONAL_MAX_RANDOM_READS_QD1, flag_implausible_devices,
    rotational_implausibility,
};
pub use served::{Beneath, SERVED_TOLERANCE, StepServed, judge_step, layer_reads};
pub use skew::{SKEW_WARN_PCT, SkewCheck, SkewShare, skew_check};
pub use streams::{
    CapacityAnswer, CapacityEstimate, FormatShare, IngestFigures, QualityTarget, StepContext, StreamFigures,
    StreamsResult, StreamsStep, build_step, capacity_answer,
};
pub use sweep::{ImplausibleCliff, SweepCliff, SweepPoint, SweepSummary};
pub use trial::{TRIAL_SCHEMA, TRIAL_SCHEMA_VERSION, TrialDevice, TrialFigure, TrialLayout, TrialResult};
pub use units::rfc3339;
pub use verify::{BadBlock, BadKind, LostRange, RankVerify, VerifyResult, merge_ranks};

pub const SCHEMA: &str = "streamcap.run";
pub const SCHEMA_VERSION: u32 = 1;

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Always "streamcap.run".
    pub schema: String,
    /// Incremented when a field is removed or changes meaning.
    pub schema_version: u32,
    /// The program that wrote the result: name and version.
    pub tool: ToolInfo,
    /// The command line that produced this result, `argv[0]` included.
    pub command: Vec<String>,
    /// How the run ended (`running` while it goes on): the first phase status that is not `completed`, or
    /// `interrupted` after Ctrl-C.
    pub status: RunStatus,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC; absent while the run is still going (results are written after every phase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The machine: host name, CPU, RAM and effective RAM (bytes), kernel, OS.
    pub host: HostFacts,
    /// What was measured: path, kind, filesystem, devices beneath, pool.
    pub target: TargetInfo,
    /// The effective configuration: the plan with every default filled in.
    pub config: serde_json::Value,
    /// Fallbacks and other things the user was told.
    pub notices: Vec<String>,
    /// The phases that ran, in order (fewer than `config.phases` when the run stopped early).
    pub phases: Vec<PhaseResult>,
    /// `streamcap streams`: viewers, stalls, lateness, the capacity curve and answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<StreamsResult>,
    /// `streamcap check`: the headline figures and the verdict per video format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSummary>,
    /// `streamcap cache`: the plateaus (page cache, device cache, media, access time), alone and under load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSummary>,
    /// `streamcap sweep`: file size × record size figures and the cache cliff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSummary>,
    /// `--verify` and `--verify-only`: the blocks checked and every bad one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyResult>,
    /// Multi-host runs (under mpirun): every rank's host, and each rank's share of every phase. The phases'
    /// figures above are then every rank's operations together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    /// The tool's name, "streamcap" (not this crate's package name, `streamcap-results`).
    pub name: String,
    /// The tool's version ("0.1.0"; every crate of the workspace has the workspace's version).
    pub version: String,
}

impl ToolInfo {
    pub fn current() -> ToolInfo {
        ToolInfo { name: "streamcap".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

/// How a run, or a phase, ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running (a result written between phases).
    Running,
    Completed,
    /// Stopped by Ctrl-C or SIGTERM: the figures cover what ran.
    Interrupted,
    /// An I/O error stopped it; see `errors`.
    IoError,
    /// Set-up or an engine failed; see `failure`.
    Failed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The target, canonicalized (remote media: the URL or URL list as given).
    pub path: String,
    /// "directory", "file", "block_device" or "http".
    pub kind: String,
    /// Remote media from a web server on this host (`--served-from`): its document root, whose filesystem,
    /// devices and pool the fields below describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_from: Option<String>,
    /// The filesystem holding the target (absent for raw devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemFacts>,
    /// Every block device beneath the target: pool members, loop backing stores, partition disks.
    pub devices: Vec<BlockDevice>,
    /// The pool beneath the target: btrfs profile or md level, members, raw and usable capacity, read policy.
    /// Absent where no block device is beneath (tmpfs, NFS, HTTP) and in results written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolFacts>,
    /// Why the target's data lives in RAM (tmpfs, zram, a loop device over a page-cached file), if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_backed: Option<String>,
    /// The cgroup I/O limits (blkio throttles, io.max) that bind this process on the devices beneath, smallest
    /// per device and kind: a limit that, rather than the device, may be what the figures reach. Empty when
    /// none is set (and in results written before it existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttles: Vec<DeviceThrottle>,
    /// The library of titles an earlier `check` or `streams` kept under the target, as found before this run
    /// (absent when there is none, and in results written before libraries were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_library: Option<KeptLibraryFacts>,
}

/// A library of titles kept under a target (`TARGET/.streamcap/library`) for the next run to read again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptLibraryFacts {
    pub dir: String,
    pub titles: u32,
    pub bytes: u64,
    /// When it was written (unix seconds), as its marker says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<u64>,
}

impl KeptLibraryFacts {
    pub fn of(kept: &plan::KeptLibrary) -> KeptLibraryFacts {
        KeptLibraryFacts {
            dir: kept.dir.display().to_string(),
            titles: kept.titles,
            bytes: kept.bytes(),
            written: kept.written,
        }
    }
}

/// One phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseResult {
    /// 0-based position in the plan's phases (the CSV's `phase` column is 1-based).
    pub index: usize,
    /// The phase's name as given, or one made from its settings ("rand-read 4k qd16 2s").
    pub name: String,
    /// Reporting group (fio group_reporting): phases with the same group are also reported together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// How the phase ended (never `running`).
    pub status: RunStatus,
    /// The reason a phase failed, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// RFC 3339, UTC: when the phase started, after any prefill and before the ramp.
    pub started_at: String,
    /// The I/O pattern: read, write, randread, randwrite, readwrite or randrw.
    pub rw: String,
    /// Block size as configured ("4K", "4K-64K", "4K/60:64K/40").
    pub bs: String,
    /// Planned operations in flight per worker (1 for the sync engine).
    pub iodepth: u32,
    /// Workers (threads).
    pub jobs: u32,
    /// How the I/O was issued: engine name, its real queue depth per worker, registered buffers and files.
    pub engine: EngineDetail,
    /// Direct I/O was in effect (false: buffered, either asked for or because the filesystem refused O_DIRECT).
    pub direct: bool,
    /// The figures may describe memory rather than storage: buffered I/O on a data set smaller than twice the
    /// RAM (the page cache may have served part of it), or a target that keeps its data in RAM (tmpfs, zram, a
    /// loop device over a cached file; the notices say which).
    pub cache_affected: bool,
    /// Bytes of the data set this phase worked on.
    pub data_set_bytes: u64,
    /// Measured time, seconds: from the end of the ramp until the last worker finished (the drain of in-flight
    /// I/O and `end-fsync` included).
    pub duration_s: f64,
    /// Planned warm-up before measurement, seconds (not measured).
    pub ramp_s: f64,
    /// Reads; absent when the phase did none (no successful and no failed read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<OpResult>,
    /// Writes; absent when the phase did none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<OpResult>,
    /// fsync operations (from `fsync-every` or `end-fsync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<OpResult>,
    /// streamcap's CPU time and the whole machine's CPU use over the measured time.
    pub cpu: CpuResult,
    /// RAM, page cache and streamcap's peak resident memory, bytes.
    pub memory: MemoryResult,
    /// Activity of each device beneath the target over the measured time (same order as `target.devices`).
    pub devices: Vec<DeviceResult>,
    /// Failed operations: the count and the first records.
    pub errors: ErrorSummary,
    /// File-set phases: per-operation rates and response times, MB/s and the format step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_ops: Option<FileOpsResult>,
    /// Stream phases: the viewers' settings, every step measured and, for a search, the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<StreamsResult>,
    /// fio's queue-depth distributions: operations by the depth they joined, submissions and reaps by how many
    /// requests they carried (raw I/O phases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depths: Option<Depths>,
    /// How fio names and groups this phase (phases read from fio job files), for fio's JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fio: Option<FioJobInfo>,
    /// fio latency_target: the queue depth each worker's search found and whether the target was met there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyTargetResult>,
    /// Each worker's own figures, in worker order (fio job files without group_reporting: fio reports every
    /// clone of a job on its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerResult>,
    /// vdbench's skew check (a phase with parts on several workers): each worker's requested and observed
    /// share of the operations, and whether `abort_failed_skew=` failed the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<SkewCheck>,
    /// Steady-state detection (fio steadystate, `--steady-state`): the rule, whether it held and after which
    /// round (reporting interval), and the window's IOPS and bandwidth (bytes/s), oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyOutcome>,
    /// The devices the phase ran on, when the run's phases ran on devices of their own (a fio file's jobs
    /// mapped with `run --device`); empty when every phase ran on the run's one target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<String>,
    /// Interval series (merged pairwise when a phase is very long: see `interval_stride`).
    pub intervals: Vec<IntervalPoint>,
    /// How many reporting intervals each point covers.
    pub interval_stride: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpResult {
    /// Successful operations.
    pub ops: u64,
    /// Bytes transferred by successful operations (0 for flushes).
    pub bytes: u64,
    /// Failed operations, short transfers included.
    pub errors: u64,
    /// Successful operations per second of measured time (`ops / duration_s`).
    pub iops: f64,
    /// MB/s = 10^6 bytes per second of measured time (`bytes / duration_s / 10^6`).
    pub mbps: f64,
    /// Latency from submission to completion, ns.
    pub latency: LatencySummary,
    /// Paced phases: latency from the time each operation was due (includes waiting behind a slow device), ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_latency: Option<LatencySummary>,
    /// Raw I/O: from when a worker took the operation to when it reached the kernel (fio's slat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_latency: Option<LatencySummary>,
    /// Raw I/O: from when a worker took the operation to its completion (fio's lat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_latency: Option<LatencySummary>,
    /// The latency histogram: `[nanoseconds, operations]` per non-empty bucket, ascending (fio's json+ bins);
    /// a bucket's value is its midpoint, within 0.4 % of every latency in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_bins: Vec<[u64; 2]>,
    /// One worker's bandwidth over its full intervals, bytes per second (worker figures only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_spread: Option<RateSpread>,
    /// One worker's operations per second over its full intervals (worker figures only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops_spread: Option<RateSpread>,
}

/// One worker's figures over a phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerResult {
    /// Measured time until this worker stopped.
    pub duration_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<OpResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<OpResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<OpResult>,
    pub depths: Depths,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CpuResult {
    /// streamcap's user CPU time (all threads), seconds, between the samples around the measured period.
    pub user_s: f64,
    /// streamcap's system CPU time (I/O submission and completion in the kernel), seconds, likewise.
    pub system_s: f64,
    /// streamcap's CPU use in percent of one core (above 100 with several busy threads): user and system time
    /// over the time between the samples (the measured time plus starting and joining the workers).
    pub process_pct: f64,
    /// streamcap's CPU time per operation (all classes, failed ones included), microseconds.
    pub per_op_us: f64,
    /// The whole machine, from /proc/stat: user, system, iowait, idle and steal in percent of all CPUs.
    pub system: SystemCpuUsage,
    /// streamcap's context switches, voluntary and not (fio's ctx).
    #[serde(default)]
    pub context_switches: u64,
    /// streamcap's page faults that needed I/O (fio's majf).
    #[serde(default)]
    pub major_faults: u64,
    /// streamcap's page faults served from memory (fio's minf).
    #[serde(default)]
    pub minor_faults: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryResult {
    /// MemTotal at the end of the phase, bytes.
    pub ram_bytes: u64,
    /// The RAM the run could fill with page cache: the smaller of MemTotal and the memory cgroup's limit. This,
    /// not `ram_bytes`, decides `cache_affected`. Bytes; 0 in results written before it existed.
    #[serde(default)]
    pub effective_ram_bytes: u64,
    /// `Cached` from /proc/meminfo when measurement started, bytes.
    pub page_cache_before_bytes: u64,
    /// `Cached` at the end of the phase, bytes.
    pub page_cache_after_bytes: u64,
    /// `Dirty` at the end of the phase (data waiting for writeback), bytes.
    pub dirty_after_bytes: u64,
    /// streamcap's peak resident memory since the process started, bytes.
    pub peak_rss_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceResult {
    /// Why the device is listed ("filesystem device", "btrfs pool member", "loop backing store").
    pub role: String,
    /// /proc/diskstats differences over the measured time: requests and bytes, busy percent (0–100), average
    /// queue (requests), and their rates (requests/s, MB/s = 10^6 bytes/s).
    pub activity: DiskActivity,
    /// The device says it is rotational, yet did what no spinning disk can (see `plausibility`): the sentence
    /// saying so. Absent when the figures are plausible or nothing was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implausible: Option<String>,
    /// The part of `activity` this run did not cause (`devices.rs`): other processes on a disk beneath the
    /// target (a loop device's backing disk) or on a shared device. Absent when all of it is the run's, or
    /// nothing could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others: Option<OtherActivity>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorSummary {
    /// All failed operations of the phase, every class.
    pub count: u64,
    /// The first failures (at most 100 per phase), each with operation, path, offset and OS error.
    pub records: Vec<ErrorRecord>,
}

/// One reporting interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IntervalPoint {
    /// Start, seconds after measurement began (after the ramp).
    pub start_s: f64,
    /// Length, seconds: `interval_stride` intervals, or less (or a little more) for a phase's last point.
    pub length_s: f64,
    /// Reads in the interval: counts, rates (operations/s, MB/s) and latencies (ns); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<ClassPoint>,
    /// Writes in the interval, as `read`; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<ClassPoint>,
    /// streamcap's CPU use, percent of one core.
    pub cpu_pct: f64,
    /// Busy percentage and throughput of each device (same order as the phase's `devices`).
    pub devices: Vec<DevicePoint>,
    /// File-set phases: rate and mean response time of each operation class that ran in the interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_ops: Vec<FileOpPoint>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DevicePoint {
    /// Kernel device name ("vda", "loop0").
    pub name: String,
    /// Time with at least one request in flight, percent of the interval (0–100).
    pub busy_pct: f64,
    /// MB/s = 10^6 bytes per second read by the device.
    pub read_mbps: f64,
    /// MB/s = 10^6 bytes per second written by the device.
    pub write_mbps: f64,
    /// Average requests in flight (iostat aqu-sz).
    pub avg_queue: f64,
    /// Reads completed in the interval (a count; merged points add up).
    #[serde(default)]
    pub reads: u64,
    /// Writes completed in the interval (a count).
    #[serde(default)]
    pub writes: u64,
    /// Bytes read in the interval.
    #[serde(default)]
    pub read_bytes: u64,
    /// Bytes written in the interval.
    #[serde(default)]
    pub write_bytes: u64,
}

impl Mergeable for IntervalPoint {
    fn absorb(&mut self, next: &Self) {
        let (mine, theirs) = (self.length_s, next.length_s);
        let total = (mine + theirs).max(1e-9);
        let weigh = |a: f64, b: f64| (a * mine + b * theirs) / total;
        for (slot, other) in [(&mut self.read, &next.read), (&mut self.write, &next.write)] {
            match (slot.as_mut(), other) {
                (Some(a), Some(b)) => a.absorb(b, mine, theirs),
                (None, Some(b)) => *slot = Some(b.clone()),
                _ => {}
            }
        }
        fileset::absorb_points(&mut self.file_ops, &next.file_ops, mine, theirs);
        self.cpu_pct = weigh(self.cpu_pct, next.cpu_pct);
        for (a, b) in self.devices.iter_mut().zip(&next.devices) {
            a.busy_pct = weigh(a.busy_pct, b.busy_pct);
            a.read_mbps = weigh(a.read_mbps, b.read_mbps);
            a.write_mbps = weigh(a.write_mbps, b.write_mbps);
            a.avg_queue = weigh(a.avg_queue, b.avg_queue);
            a.reads += b.reads;
            a.writes += b.writes;
            a.read_bytes += b.read_bytes;
            a.write_bytes += b.write_bytes;
        }
        self.length_s += next.length_s;
    }
}

impl RunResult {
    /// A result for a run starting now (status `running`, no phases yet), as every command writes it first.
    pub fn started(host: HostFacts, target: TargetInfo, config: serde_json::Value, notices: Vec<String>) -> RunResult {
        RunResult {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo::current(),
            command: std::env::args().collect(),
            status: RunStatus::Running,
            started_at: rfc3339(std::time::SystemTime::now()),
            finished_at: None,
            host,
            target,
            config,
            notices,
            phases: Vec::new(),
            streams: None,
            check: None,
            cache: None,
            sweep: None,
            verify: None,
            cluster: None,
        }
    }

    /// The figures of a phase's main operation class (reads when it read, else writes).
    pub fn main_ops(phase: &PhaseResult) -> Option<&OpResult> {
        phase.read.as_ref().filter(|r| r.ops > 0).or(phase.write.as_ref())
    }
}
