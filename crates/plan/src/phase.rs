//! The `PhasePlan`: what every phase has (name, group, seed, error policy, runtime and warm-up, fio's naming),
//! and its kind as a type — `PhaseKind::Raw` (a `RawPlan`), `FileSet` (a `FileSetPlan`) or `Streams` (a
//! `StreamsPlan`) — each holding only what that kind uses. The kind is decided once, by the planner of that
//! kind; every later stage matches on it instead of guessing it from which fields are set.

use std::time::Duration;

use serde::Serialize;

use super::{
    DataShape, DirectMode, DirectionBytes, FilePlan, FileSetPlan, FioJobInfo, FioLogs, Pacing, PartPlan, RateFloor,
    StreamsPlan, Thinktime, WorkerPlan, defaults, ser_opt_secs, ser_secs,
};
use crate::engine::EngineKind;
use crate::spec::{PhaseSpec, RwMode};
use crate::units::Bytes;
use crate::workload::{Access, BlockSizes};

/// One phase of a plan: what every phase has, and the work of its kind.
#[derive(Debug, Clone, Serialize)]
pub struct PhasePlan {
    /// The phase's name as given, or one made from its settings ("rand-read 4k qd16 2s").
    pub name: String,
    /// Reporting group (fio group_reporting): phases with the same group are also reported together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Measured time after which the phase stops, after the ramp (seconds in JSON); `None`: bounded by an
    /// amount only.
    #[serde(serialize_with = "ser_opt_secs")]
    pub runtime: Option<Duration>,
    /// Warm-up before measurement starts: I/O runs but is not counted (seconds in JSON).
    #[serde(serialize_with = "ser_secs")]
    pub ramp: Duration,
    /// A failed operation is counted and recorded and the phase goes on; `false`: the first one stops it.
    pub continue_on_error: bool,
    /// Seed of the phase's random generators; each worker derives its own from it.
    pub seed: u64,
    /// How fio names and groups this phase (fio job files only), for fio's JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fio: Option<FioJobInfo>,
    /// What the phase does: raw I/O, a file set or stream viewers, each with only what it uses. In JSON a raw
    /// phase's fields sit beside the common ones (as they always have); a file-set phase has a `fileset` object
    /// and a stream phase a `streams` object.
    #[serde(flatten)]
    pub kind: PhaseKind,
}

/// What kind of work a phase is, with the plan of that kind.
#[derive(Debug, Clone, Serialize)]
pub enum PhaseKind {
    /// A file-set phase: trees and file-system operations (vdbench fsd/fwd, `[phase.fileset]`).
    #[serde(rename = "fileset")]
    FileSet(Box<FileSetPlan>),
    /// Paced stream viewers: a count, or the capacity search (`[phase.streams]`, `streams`, `check`).
    #[serde(rename = "streams")]
    Streams(Box<StreamsPlan>),
    /// Raw I/O on the target's files or device (with parts: several workloads in one phase). Last: serde wants
    /// its untagged variant after the tagged ones.
    #[serde(untagged)]
    Raw(Box<RawPlan>),
}

/// vdbench's curve for a raw phase: a rate taken from an earlier maximum, and the response time that ends the
/// curve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CurvePlan {
    /// Pace at this percentage (above 0, at most 1,000: above 100 asks for more than it reached) of what the
    /// nearest earlier unpaced phase achieved (vdbench's curve); the pacing is filled in when that phase has run.
    pub rate_percent_of_max: Option<f64>,
    /// Curve phases: skip this one once an earlier phase of the curve averaged a response time above this
    /// (vdbench stopcurve); seconds in JSON.
    #[serde(serialize_with = "ser_opt_secs")]
    pub curve_stop_latency: Option<Duration>,
}

/// A raw I/O phase: operations of a pattern, block sizes and depth on the target's files, by workers.
#[derive(Debug, Clone, Serialize)]
pub struct RawPlan {
    /// The I/O pattern: read, write, randread, randwrite, readwrite or randrw.
    pub rw: RwMode,
    /// Percentage of operations that are reads, 0–100.
    pub read_percent: u8,
    /// Sequential, or random with a distribution over the data set.
    pub access: Access,
    /// Block sizes in bytes: fixed, a range or a weighted split (of reads too when `write_block_sizes` is set).
    pub block_sizes: BlockSizes,
    /// Block sizes of writes when they differ from `block_sizes` (which then are those of reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_block_sizes: Option<BlockSizes>,
    /// The block sizes as the user wrote them ("4K", "4K-64K", "4K/60:64K/40"), for labels.
    pub bs_label: String,
    /// The engine every worker of the phase builds (io_uring may have fallen back to sync: see the notices).
    pub engine: EngineKind,
    /// Operations in flight per worker, lowered to what the engine can hold (1 for sync).
    pub iodepth: u32,
    /// io_uring: requests passed to the kernel per system call (at most `iodepth`).
    pub iodepth_batch: u32,
    /// Workers (threads), each with its own engine; `workers` has one entry per job.
    pub jobs: u32,
    /// Whether to bypass the page cache: required, preferred (fall back to buffered) or off.
    pub direct: DirectMode,
    /// Offset alignment in bytes: what direct I/O needs on the target (`values::alignment`); 512 when buffered.
    pub align: u32,
    /// Bytes of the data set this phase works on.
    pub data_set: Bytes,
    /// The files this phase uses (indices into the target's file table).
    pub files: Vec<u32>,
    /// Bytes of I/O after which the phase ends (all workers together), whole operations of the smallest block
    /// size; `None`: not bounded by an amount given by the user.
    pub io_size: Option<Bytes>,
    /// Bytes read and bytes written after which the phase ends (all workers together, after the ramp; vdbench
    /// maxdataread and maxdatawritten), whole operations of the smallest block size.
    #[serde(skip_serializing_if = "DirectionBytes::is_none")]
    pub io_by_direction: DirectionBytes,
    /// Per-worker rate the operations are paced at; `None`: as fast as the storage allows.
    pub pacing: Option<Pacing>,
    /// fsync after every N writes of a worker, on the file of the Nth write (fio fsync); `None`: never.
    pub fsync_every: Option<u64>,
    /// fdatasync after every N writes of a worker, on the file of the Nth write (fio fdatasync); `None`: never.
    pub fdatasync_every: Option<u64>,
    /// Files opened with O_SYNC: every write is durable when it completes.
    pub sync_writes: bool,
    /// fsync every written file when the phase ends by its runtime or amount (fio end_fsync).
    pub end_fsync: bool,
    /// Drop the files' cached pages before the phase (buffered phases always do; direct ones need not).
    pub invalidate: bool,
    /// Read the files into the page cache before the phase (fio pre_read; makes sense with buffered I/O).
    pub pre_read: bool,
    /// Buffered workers advise the kernel of the phase's access pattern (fio fadvise_hint): random phases get no
    /// read-ahead, which would otherwise turn 4 KiB random reads into cache hits.
    pub access_hint: bool,
    /// Workers start this long after the phase (fio startdelay); seconds in JSON.
    #[serde(serialize_with = "ser_secs")]
    pub start_delay: Duration,
    /// Pause for this long after every N operations, once those in flight have completed (fio thinktime).
    pub thinktime: Option<Thinktime>,
    /// The phase fails when a worker's rate over an interval falls below this (fio rate_min / rate_iops_min).
    pub rate_floor: Option<RateFloor>,
    /// vdbench's curve (dialect-only, read between phases by `run::curves`, never by the core); its keys sit
    /// beside the others in JSON.
    #[serde(flatten)]
    pub curve: CurvePlan,
    /// Runs at the same time as the phase before it (fio jobs without stonewall).
    pub concurrent: bool,
    /// fio-format logs to write after the phase (file-name prefixes).
    pub logs: FioLogs,
    /// Latency percentiles to report, in percent (0–100); empty: the default list.
    pub percentiles: Vec<f64>,
    /// The files must hold written data before this phase (it reads, or writes at random).
    pub needs_data: bool,
    /// Only zones of each region, one after another (fio zonemode=strided); the workers' regions are the zones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strided: Option<crate::spec::StridedSpec>,
    /// What written data looks like (dedupe and compression ratios); `None`: random, stamped, nothing repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<DataShape>,
    /// Per-worker work; derived deterministically from the fields above, so not repeated in results.
    #[serde(skip)]
    pub workers: Vec<WorkerPlan>,
    /// Keep each worker's own figures (fio's clones are reported one by one unless group_reporting).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub per_worker_results: bool,
    /// A raw phase with parts (vdbench: several wds, sds or hosts in one rd): what each part does; the raw
    /// fields above then describe the phase as a whole (its read percentage is the parts' weighted mean).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartPlan>,
    /// With parts: fail the run when a worker's share of the operations is off its parts' skew by more than
    /// this many percentage points (vdbench `abort_failed_skew=`); `None`: the check only reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew_limit_pct: Option<f64>,
    /// End the phase once its rate is steady over a window of reporting intervals (fio steadystate,
    /// `--steady-state`); `None`: it runs to its runtime or amount.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::metrics::SteadyConfig>,
    /// Reads longer than this many bytes pass through a slot buffer of this size, piece after piece, as a
    /// stream viewer reads its chunk (`EngineSetup::max_transfer`): the estimate of a stream phase reads as its
    /// viewers will, so the device sees their requests (`streams_media::estimate_phases`). `None`: whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_through: Option<u32>,
    /// The copies a pool picks by the reading thread's id (btrfs read policy pid), over which the workers'
    /// threads' ids spread (`run::spread`); 1: any ids. Only a stream phase's estimate sets it, so that it
    /// reads every copy as its viewers will (`streams_threads::ThreadPlan::spread`); fio's phases keep 1.
    #[serde(skip_serializing_if = "is_one")]
    pub spread: u32,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl PhasePlan {
    /// A phase of `kind` with the common settings the spec says, and their defaults.
    pub(super) fn of_spec(name: String, spec: &PhaseSpec, kind: PhaseKind) -> PhasePlan {
        PhasePlan {
            name,
            group: spec.group.clone(),
            runtime: spec.runtime,
            ramp: spec.ramp.unwrap_or(defaults::RAMP),
            continue_on_error: spec.continue_on_error.unwrap_or(false),
            seed: spec.seed.unwrap_or(defaults::SEED),
            fio: spec.fio.info.clone(),
            kind,
        }
    }

    /// The raw plan of a raw phase; `None` for the other kinds.
    pub fn raw(&self) -> Option<&RawPlan> {
        match &self.kind {
            PhaseKind::Raw(raw) => Some(raw),
            PhaseKind::FileSet(_) | PhaseKind::Streams(_) => None,
        }
    }

    /// The file-set plan of a file-set phase; `None` for the other kinds.
    pub fn fileset(&self) -> Option<&FileSetPlan> {
        match &self.kind {
            PhaseKind::FileSet(fileset) => Some(fileset),
            PhaseKind::Raw(_) | PhaseKind::Streams(_) => None,
        }
    }

    /// The raw plan of a raw phase, to change; `None` for the other kinds.
    pub fn raw_mut(&mut self) -> Option<&mut RawPlan> {
        match &mut self.kind {
            PhaseKind::Raw(raw) => Some(raw),
            PhaseKind::FileSet(_) | PhaseKind::Streams(_) => None,
        }
    }

    /// The file-set plan of a file-set phase, to change; `None` for the other kinds.
    pub fn fileset_mut(&mut self) -> Option<&mut FileSetPlan> {
        match &mut self.kind {
            PhaseKind::FileSet(fileset) => Some(fileset),
            PhaseKind::Raw(_) | PhaseKind::Streams(_) => None,
        }
    }

    /// The stream plan of a stream phase; `None` for the other kinds.
    pub fn streams(&self) -> Option<&StreamsPlan> {
        match &self.kind {
            PhaseKind::Streams(streams) => Some(streams),
            PhaseKind::Raw(_) | PhaseKind::FileSet(_) => None,
        }
    }

    /// The engine the phase's I/O goes through (a stream phase's scheduler threads', a file set's transfers).
    pub fn engine(&self) -> EngineKind {
        match &self.kind {
            PhaseKind::Raw(raw) => raw.engine,
            PhaseKind::FileSet(fileset) => fileset.engine,
            PhaseKind::Streams(streams) => streams.engine,
        }
    }

    /// The phase's files (indices into the target's file table) that rank `rank` of a multi-host run uses (all
    /// of them in a run of one process): a raw phase's data files, a stream phase's local media; a file set
    /// works in trees of its own, not on the file table.
    pub fn files_on(&self, rank: Option<u32>) -> Vec<u32> {
        match &self.kind {
            PhaseKind::Raw(raw) => raw.files_on(rank),
            PhaseKind::Streams(streams) => streams.media_files(),
            PhaseKind::FileSet(_) => Vec::new(),
        }
    }
}

/// A phase in the few figures every result row has (`results::PhaseResult`'s rw, bs, iodepth and jobs, and its
/// data set), and what its workers may have in flight: a raw phase's own settings; a file set's first workload
/// (reads, at one transfer in flight per thread) and all its threads; a stream phase's chunk reads by its
/// scheduler threads over the media.
#[derive(Debug, Clone, PartialEq)]
pub struct Outline {
    pub rw: RwMode,
    /// The block sizes as written ("4K", "4K/60:64K/40"); a file set's first transfer size, a stream's chunk.
    pub bs_label: String,
    pub engine: EngineKind,
    /// Operations in flight per worker.
    pub iodepth: u32,
    /// Workers (threads).
    pub jobs: u32,
    /// The largest transfer in bytes (what a worker's buffers hold).
    pub largest_block: u32,
    /// Bytes the phase works on.
    pub data_set: Bytes,
}

impl PhasePlan {
    /// The phase as a result row describes it; `table` is the target's file table (a stream phase's media).
    pub fn outline(&self, table: &[FilePlan]) -> Outline {
        match &self.kind {
            PhaseKind::Raw(raw) => Outline {
                rw: raw.rw,
                bs_label: raw.bs_label.clone(),
                engine: raw.engine,
                iodepth: raw.iodepth,
                jobs: raw.jobs,
                largest_block: raw.largest_block(),
                data_set: raw.data_set,
            },
            PhaseKind::FileSet(fs) => {
                let first = fs.workloads.first();
                Outline {
                    rw: RwMode::Read,
                    bs_label: first.map_or_else(String::new, |w| w.xfer_label.clone()),
                    engine: fs.engine,
                    iodepth: 1,
                    jobs: fs.workloads.iter().map(|w| w.threads).sum(),
                    largest_block: first.map_or(4096, |w| w.xfer.max()),
                    data_set: Bytes(fs.trees.iter().map(|t| t.bytes.0).sum()),
                }
            }
            PhaseKind::Streams(streams) => {
                let chunk = streams.config.chunk_bytes(0);
                let media = streams.media_files();
                Outline {
                    rw: RwMode::RandRead,
                    bs_label: Bytes(chunk).to_string(),
                    engine: streams.engine,
                    iodepth: streams.slots_per_worker,
                    jobs: streams.workers,
                    largest_block: u32::try_from(chunk).unwrap_or(u32::MAX),
                    data_set: Bytes(media.iter().map(|&f| table[f as usize].size.0).sum()),
                }
            }
        }
    }
}

impl PhaseKind {
    /// The kind in words ("raw", "file set", "streams"), for messages.
    pub fn label(&self) -> &'static str {
        match self {
            PhaseKind::Raw(_) => "raw",
            PhaseKind::FileSet(_) => "file set",
            PhaseKind::Streams(_) => "streams",
        }
    }
}

impl RawPlan {
    /// The phase's files that rank `rank` of a multi-host run uses (all of them in a run of one process): a rank
    /// fills only the files of its own workers (vdbench hds: another hd's sds are another host's to fill).
    pub fn files_on(&self, rank: Option<u32>) -> Vec<u32> {
        let Some(rank) = rank else { return self.files.clone() };
        let mine = self.workers.iter().filter(|w| w.runs_on(rank));
        let used: Vec<u32> =
            mine.flat_map(|w| w.workloads()).flat_map(|(l, _)| l.regions.iter().map(|r| r.file)).collect();
        self.files.iter().copied().filter(|f| self.workers.is_empty() || used.contains(f)).collect()
    }

    pub fn writes(&self) -> bool {
        self.read_percent < 100
    }

    /// The largest transfer of the phase, reads and writes (what a worker's buffers must hold).
    pub fn largest_block(&self) -> u32 {
        self.block_sizes.max().max(self.write_block_sizes.as_ref().map_or(0, BlockSizes::max))
    }

    /// The smallest transfer of the phase, reads and writes.
    pub fn smallest_block(&self) -> u32 {
        self.block_sizes.min().min(self.write_block_sizes.as_ref().map_or(u32::MAX, BlockSizes::min))
    }

    /// Bytes of I/O the phase will issue, when it is bounded by an amount rather than only by time.
    pub fn planned_bytes(&self) -> Option<Bytes> {
        // Saturating: workers that each address the whole data set can add up past 16 EiB.
        self.workers.iter().map(|w| w.io_bytes).try_fold(0u64, |sum, b| Some(sum.saturating_add(b?))).map(Bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::{Facts, Plan, RunOptions, build_plan};

    /// The example job of all three kinds (a raw write, a file set, stream viewers), planned in a directory.
    fn mixed_job() -> crate::spec::JobSpec {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/jobs/raw-fileset-streams.toml"));
        crate::spec::read_job_file(path, &Default::default()).unwrap()
    }

    fn plan(job: &crate::spec::JobSpec) -> Result<Plan, crate::plan::PlanError> {
        let options = RunOptions { run_id: "run-test".into(), ..Default::default() };
        build_plan(job, &Facts::directory(Some(Bytes::gib(50))), &options)
    }

    fn mixed() -> Plan {
        plan(&mixed_job()).unwrap()
    }

    /// Guards the kind's move to a type: steady-state detection on a file-set or stream phase stays refused
    /// (exit 2), not dropped because only a raw plan has a place for it.
    #[test]
    fn steady_state_is_refused_on_a_phase_that_is_not_raw_and_kept_on_a_raw_one() {
        let steady = Some(crate::spec::SteadyStateSpec {
            criterion: crate::spec::SteadyCriterion::Snia { on: crate::spec::SteadyOn::Iops },
            window: crate::spec::SteadyWindow::Rounds(5),
            ramp: Duration::ZERO,
        });
        for i in [1, 2] {
            let mut job = mixed_job();
            job.phases[i].steady_state = steady;
            let err = plan(&job).unwrap_err();
            assert!(err.0.contains("no such rate to judge"), "phase {i}: {err}");
        }
        let mut job = mixed_job();
        job.phases[0].steady_state = steady;
        assert_eq!(plan(&job).unwrap().phases[0].raw().unwrap().steady_state.map(|s| s.window), Some(5));
    }

    #[test]
    fn each_kind_holds_its_own_plan_and_describes_itself_in_a_result_row() {
        let plan = mixed();
        let [raw, fileset, streams] = &plan.phases[..] else { panic!("three phases: {:?}", plan.phases.len()) };
        assert!(matches!(raw.kind, PhaseKind::Raw(_)) && raw.fileset().is_none() && raw.streams().is_none());
        assert!(matches!(fileset.kind, PhaseKind::FileSet(_)) && fileset.raw().is_none());
        assert!(matches!(streams.kind, PhaseKind::Streams(_)) && streams.raw().is_none());
        let table = &plan.target.files;
        let row = raw.outline(table);
        assert_eq!(
            (row.rw, row.bs_label.as_str(), row.iodepth, row.data_set),
            (RwMode::Write, "1M", 8, Bytes::mib(128))
        );
        // A file set: its first workload's transfer size, all its threads, its trees' bytes.
        let row = fileset.outline(table);
        assert_eq!((row.bs_label.as_str(), row.jobs, row.iodepth), ("16K", 2, 1));
        assert_eq!(row.data_set, Bytes(4 * 100 * 16384));
        // A stream phase: chunk reads by its scheduler threads over the media of the file table.
        let s = streams.streams().unwrap();
        let row = streams.outline(table);
        assert_eq!(
            (row.rw, row.jobs, row.iodepth, row.engine),
            (RwMode::RandRead, s.workers, s.slots_per_worker, s.engine)
        );
        let media: u64 = s.media_files().iter().map(|&f| table[f as usize].size.0).sum();
        assert!(media > 0 && row.data_set == Bytes(media), "{row:?}");
        assert_eq!(streams.files_on(None), s.media_files());
        assert!(fileset.files_on(None).is_empty() && raw.files_on(None) == raw.raw().unwrap().files);
        assert!(streams.continue_on_error && !raw.continue_on_error);
    }
}
