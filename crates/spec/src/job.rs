//! `JobSpec` and `PhaseSpec`: what the user asked for, in whatever dialect, before any defaults are applied.
//!
//! Every field is optional: `None` means "not said". Layers are combined with [`PhaseSpec::overlay`] in one
//! order — built-in defaults, then a job file's `[global]`, then the phase, then command-line flags — and
//! `plan` fills whatever is still unsaid from its single table of defaults.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::data::DataSpec;
use super::distribution::DistributionSpec;
use super::extras::{FioExtras, VdbenchExtras};
use super::fileset::FileSetPhaseSpec;
use super::journal::JournalMode;
use super::kind::SpecKind;
use super::steady::SteadyStateSpec;
use super::streams::StreamsSpec;
use super::values::{ArrivalSpec, BlockSizeSpec, EngineChoice, RwMode, Sharing, SizeOrPercent, VerifyChoice};
use crate::units::{ByteRate, Bytes};

/// The highest percentage of the maximum rate a curve phase may ask for: vdbench's curve takes points above 100
/// (`curve=(10-120,10)`), asking for more than the maximum, so that the phase runs as fast as it goes.
pub const MAX_PERCENT_OF_MAX: f64 = 1000.0;

/// One phase of work, as asked. Keys match the command-line flags (kebab-case in TOML).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PhaseSpec {
    /// A label shown in progress, summaries and results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw: Option<RwMode>,
    /// Percentage of reads in mixed modes (0–100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdpct: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bs: Option<BlockSizeSpec>,
    /// Block sizes of writes when they differ from those of reads in a mixed phase (fio `bs=4k,64k`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bs_write: Option<BlockSizeSpec>,
    /// Size of the data set the phase works on (all files together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
    /// Number of files the data set is spread over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distribution: Option<DistributionSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Worker threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<u32>,
    /// Operations in flight per worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// io_uring: pass requests to the kernel in groups of this many (fio's iodepth_batch_submit; default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iodepth_batch: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineChoice>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::units::deserialize_opt_duration",
        serialize_with = "ser_opt_duration"
    )]
    pub runtime: Option<Duration>,
    /// Warm-up time at the start of the phase, excluded from results.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::units::deserialize_opt_duration",
        serialize_with = "ser_opt_duration"
    )]
    pub ramp: Option<Duration>,
    /// Stop after this many bytes of I/O (all workers together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_size: Option<Bytes>,
    /// Pace each worker at this many bytes per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<ByteRate>,
    /// Pace each worker at this many operations per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<u64>,
    /// Arrival process of paced operations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_process: Option<ArrivalSpec>,
    /// Direct I/O (bypass the page cache). `Some(false)` is `--buffered`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// Issue an fsync after every N writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync_every: Option<u64>,
    /// fsync every written file at the end of the phase (timed, reported as sync operations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_fsync: Option<bool>,
    /// Record I/O errors and go on instead of stopping the phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continue_on_error: Option<bool>,
    /// Verify written data (fio verify, vdbench validate): writes stamp each block, reads check it, and the run
    /// ends with a pass that reads back everything written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyChoice>,
    /// With `verify`: after every N writes, a worker reads those N blocks back and checks them (fio
    /// verify_backlog).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_backlog: Option<u64>,
    /// With `verify`: keep a journal of every block's generation beside the data while writing (vdbench
    /// journal=), so that a run that was killed can be checked later with `--verify-only`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalMode>,
    /// What written data looks like for storage that deduplicates or compresses (`[phase.data]`). Default:
    /// random bytes, nothing repeated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<DataSpec>,

    // ---- Finer control, mostly reached through fio and vdbench files (each has a TOML key too). ----
    /// In rw modes: percentage of operations at a random offset; the rest continue sequentially (fio
    /// percentage_random, vdbench seekpct).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentage_random: Option<u8>,
    /// Offsets are multiples of this (fio blockalign). Default: the block size for random I/O, at least the
    /// direct-I/O alignment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub align: Option<Bytes>,
    /// Size the data set to fill the target: the filesystem's free space less streamcap's headroom, or the
    /// whole block device (fio fill_device). A `size` said wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill_device: Option<bool>,
    /// Start of the region in each file (fio offset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<SizeOrPercent>,
    /// How workers share the data set. Default: split (sequential workers each take a slice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Names of the phase's files inside the work directory. `{worker}` in a name gives each worker its own
    /// file; phases naming the same file share it. Default: the run's shared data files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_names: Option<Vec<String>>,
    /// With `file-names`: each file's size in bytes, in the same order. The files are then laid end to end as one
    /// address space of their total size (vdbench's concatenated sds), which `size` and `offset` address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_sizes: Option<Vec<Bytes>>,
    /// Drop the files' pages from the page cache before the phase (fio invalidate; default yes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalidate: Option<bool>,
    /// Read the files once into the page cache before the phase (fio pre_read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_read: Option<bool>,
    /// `size` as a percentage of the file or device (fio size=50%).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_percent: Option<f64>,
    /// Open files with O_SYNC (fio sync=1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_writes: Option<bool>,
    /// Wait this long before starting the phase's workers (fio startdelay).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::units::deserialize_opt_duration",
        serialize_with = "ser_opt_duration"
    )]
    pub start_delay: Option<Duration>,
    /// Stop after this many passes over the data set (vdbench maxdata below 100, fio loops over a size not in bytes); `io-size` wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_passes: Option<f64>,
    /// Run at the same time as the phase before it instead of after it (fio jobs without stonewall).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<bool>,
    /// Reporting group: phases with the same group are also reported together (fio group_reporting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Latency percentiles to report (fio percentile_list). Default: fio's list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Vec<f64>>,
    /// Write fio-format bandwidth, IOPS and latency logs with this file-name prefix, one line per interval (fio
    /// write_bw_log, write_iops_log, write_lat_log; the interval is `log_avg_msec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw_log: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops_log: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat_log: Option<String>,
    /// Write fio's latency histogram log with this file-name prefix, `PREFIX_clat_hist.N.log` (fio
    /// write_hist_log), one line per `log_hist_msec` (default: the reporting interval) in fio's 1,856 bins, or
    /// 1,856 ÷ 2^`log_hist_coarseness` (0–6) bins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hist_log: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::units::deserialize_opt_duration",
        serialize_with = "ser_opt_duration"
    )]
    pub log_hist_msec: Option<Duration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_hist_coarseness: Option<u8>,
    /// What kind of phase this is when it is not raw I/O, said by the reader that knows it: a TOML phase's
    /// `[phase.fileset]` or `[phase.streams]` table, vdbench's fwds, fio's file operations, the `streams` and
    /// `check` commands. `None`: raw I/O. Plan matches on it; nothing guesses the kind from the other keys.
    /// Serialized (`kind = { fileset = … }` / `{ streams = … }`) so that a job survives its trip to the other
    /// ranks of a multi-host run and into a journal; a job file cannot say it (`kind_from_tables` refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<SpecKind>,
    /// `[phase.fileset]` as TOML holds it: the TOML reader moves it into `kind` (`kind_from_tables`) before the
    /// job leaves it, so it is `None` everywhere else.
    #[serde(rename = "fileset", default, skip_serializing)]
    pub fileset_table: Option<Box<FileSetPhaseSpec>>,
    /// `[phase.streams]` as TOML holds it: moved into `kind` by the TOML reader, as `fileset_table`.
    #[serde(rename = "streams", default, skip_serializing)]
    pub streams_table: Option<Box<StreamsSpec>>,

    // ---- Several raw workloads in one phase (vdbench: several wds, sds and hosts in one rd). ----
    /// Raw workloads that run together in this phase (`[[phase.part]]`), each with the phase's keys under its
    /// own and its share of the operations (`skew`). With parts, `rate-iops` is the rate of the whole phase,
    /// shared by skew; a part's own `rate-iops` is a fixed rate of its own (vdbench's wd `iorate=`): it runs on
    /// a worker of its own, takes no share, and the others share what it leaves of the phase's rate; a part's
    /// own `jobs` runs it alone on that many workers (slices of its files when sequential: vdbench's streams=).
    #[serde(rename = "part", skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<PhaseSpec>>,
    /// In a part: percent of the phase's operations it gets (0–100); parts that do not say share what the
    /// others leave evenly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew: Option<f64>,
    /// In a part: the worker it runs on. Parts of one queue share one worker and its iodepth, as the workloads
    /// of a vdbench sd share the sd's threads. Default: one queue per set of files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// In a part, under mpirun: the rank that runs it (vdbench: the part's `hd=`, the hds in mpirun's rank
    /// order); the other ranks leave it out and idle through the phase. Without ranks every part runs here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The fio-only knobs (flat keys in a job file; see `spec::extras`), and how fio names the phase.
    #[serde(flatten)]
    pub fio: FioExtras,
    /// The vdbench-only knobs (flat keys in a job file; see `spec::extras`).
    #[serde(flatten)]
    pub vdbench: VdbenchExtras,
    /// End the phase once its rate is steady (fio steadystate, `--steady-state`; TOML: `steady-state = 5`, or a
    /// table, see `spec::steady`).
    #[serde(default, skip_serializing, deserialize_with = "super::steady::deserialize_opt")]
    pub steady_state: Option<SteadyStateSpec>,
}

pub(super) fn ser_opt_duration<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&format!("{}s", d.as_secs_f64())),
        None => s.serialize_none(),
    }
}

/// Overlays field by field: a field said in `over` wins.
macro_rules! overlay_fields {
    ($base:expr, $over:expr, [$($field:ident),* $(,)?]) => {
        PhaseSpec {
            $($field: $over.$field.clone().or_else(|| $base.$field.clone()),)*
            fio: FioExtras::default(),
            vdbench: VdbenchExtras::default(),
        }
    };
}

impl PhaseSpec {
    /// A copy of `self` with every field that `over` says replaced by `over`'s value.
    pub fn overlay(&self, over: &PhaseSpec) -> PhaseSpec {
        // Every field: the struct literal the macro writes fails to compile if one is missing. Braces keep
        // rustfmt from putting each name on a line of its own.
        let data = match (&self.data, &over.data) {
            (Some(base), Some(over)) => Some(base.overlay(over)),
            (base, over) => over.clone().or_else(|| base.clone()),
        };
        let merged = overlay_fields! {
            self,
            over,
            [
                name, rw, rdpct, bs, bs_write, size, files, distribution, seed, jobs, iodepth, iodepth_batch, engine,
                runtime, ramp, io_size, rate, rate_iops, rate_process, direct, fsync_every, end_fsync, continue_on_error,
                verify, verify_backlog, journal, data, percentage_random, align, fill_device, offset, sharing,
                file_names, file_sizes, invalidate, io_passes, size_percent, sync_writes, start_delay, pre_read, concurrent, group, percentiles, bw_log, iops_log,
                lat_log, hist_log, log_hist_msec, log_hist_coarseness, kind, fileset_table, streams_table, parts, skew, queue, rank, steady_state,
            ]
        };
        // Field by field inside the table too: a job's dedupe key keeps its [global]'s compression.
        PhaseSpec { data, fio: self.fio.overlay(&over.fio), vdbench: self.vdbench.overlay(&over.vdbench), ..merged }
    }
}

/// Where a job came from, for messages and the result's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SpecOrigin {
    /// The built-in first-look job (`streamcap run` without workload flags).
    Default,
    /// Command-line flags only.
    Flags,
    /// A native TOML job file.
    Toml { path: PathBuf },
    /// A fio job file.
    Fio { path: PathBuf },
    /// A vdbench parameter file.
    Vdbench {
        path: PathBuf,
        /// Under mpirun, the hds in rank order (hd `i` is rank `i`); empty otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ranks: Vec<String>,
    },
}

/// A whole job: phases run in order against one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    pub origin: SpecOrigin,
    /// Directory, file or block device to test; `None` means the current directory.
    pub target: Option<PathBuf>,
    /// Reporting interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    pub phases: Vec<PhaseSpec>,
    /// What the reader wants the user to know (a fio option with no effect in streamcap, a mapped anchor);
    /// printed before the run and kept in the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

impl JobSpec {
    /// Applies command-line overrides to every phase. A flag sets fields of the kind it belongs to: a raw-I/O
    /// flag (`--iodepth` …) on a job with a file-set or stream phase is refused, naming both.
    pub fn with_overrides(mut self, overrides: &PhaseSpec) -> Result<JobSpec, String> {
        let raw = overrides.raw_flags_said();
        for (i, phase) in self.phases.iter_mut().enumerate() {
            if let (Some(kind), Some(flag)) = (&phase.kind, raw.first()) {
                let kind = match kind {
                    SpecKind::FileSet(_) => "file-set phase: its workloads say what it does",
                    SpecKind::Streams(_) => "streams phase: its viewers say what it reads",
                };
                let name = phase.name.as_ref().map(|n| format!(" ('{n}')")).unwrap_or_default();
                return Err(format!(
                    "--{flag} sets raw I/O, but phase {}{name} of the job is a {kind}; leave --{flag} out and give \
                     the raw phases their own value in the job file",
                    i + 1
                ));
            }
            *phase = phase.overlay(overrides);
        }
        Ok(self)
    }

    /// Whether any phase writes (judged from what was said; a phase without `rw` writes nothing).
    pub fn writes(&self) -> bool {
        self.phases.iter().flat_map(|p| p.units()).any(|p| p.rw.is_some_and(|rw| rw.read_percent(p.rdpct) < 100))
    }

    /// Checks every phase; the error names the phase.
    pub fn check(&self) -> Result<(), String> {
        if self.phases.is_empty() {
            return Err("the job has no phases: add at least one [[phase]] with an rw key".into());
        }
        if self.phases.len() > crate::limits::MAX_PHASES {
            return Err(crate::limits::too_many_phases(self.phases.len()));
        }
        if self.interval.is_some_and(|i| i < std::time::Duration::from_millis(10)) {
            return Err("interval must be at least 10ms: use --interval 1s (the default) or longer".into());
        }
        for (i, phase) in self.phases.iter().enumerate() {
            phase.check().map_err(|e| match &phase.name {
                Some(name) => format!("phase {} ('{name}'): {e}", i + 1),
                None => format!("phase {}: {e}", i + 1),
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_prefers_the_upper_layer_field_by_field() {
        let base = PhaseSpec { rw: Some(RwMode::Read), iodepth: Some(8), ..Default::default() };
        let over = PhaseSpec { iodepth: Some(32), runtime: Some(Duration::from_secs(5)), ..Default::default() };
        let merged = base.overlay(&over);
        assert_eq!(merged.rw, Some(RwMode::Read));
        assert_eq!(merged.iodepth, Some(32));
        assert_eq!(merged.runtime, Some(Duration::from_secs(5)));
    }

    #[test]
    fn check_names_the_problem() {
        let bad = PhaseSpec { rw: Some(RwMode::Read), rdpct: Some(70), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("mixed"));
        let bad = PhaseSpec { rate: Some(ByteRate(1e6)), rate_iops: Some(10), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("not both"));
        let bad = PhaseSpec { jobs: Some(0), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("jobs"));
        let names = Some(vec!["a".to_string(), "b.{worker}".to_string()]);
        let bad = PhaseSpec { file_names: names.clone(), file_sizes: Some(vec![Bytes(4096)]), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("1 sizes for 2 file-names"));
        let bad = PhaseSpec { file_names: names, file_sizes: Some(vec![Bytes(4096); 2]), ..Default::default() };
        assert!(bad.check().unwrap_err().contains("drop {worker}"));
    }
}
