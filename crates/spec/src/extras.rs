//! The dialect-only knobs of a phase: what fio's and vdbench's files can say that a phase written for streamcap
//! rarely needs — fio's offset walks, zones, think time and rate floors; vdbench's data budgets, curves, strides
//! and skew checks. Each dialect's knobs sit in one struct that `PhaseSpec` holds beside the common keys, so the
//! common spec reads as the user's intent.
//!
//! A job file still writes them as flat keys (`thinktime = "1ms"`, `io-passes = 2`): both structs are
//! `#[serde(flatten)]`ed into `PhaseSpec`. Must not: parse a dialect or apply defaults (plan does).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::amount::IoAmount;
use super::fio_info::FioJobInfo;
use super::strided::{StrideSpec, StridedSpec};
use super::values::{ByteStep, FileService, Sequencer, SizeOrPercent};
use crate::units::ByteRate;

/// fio's own knobs (each with a TOML key of its own as well).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FioExtras {
    /// Sequential phases: bytes added to the offset after each operation; negative walks backwards (fio
    /// rw=write:4k, rw=read:-8k).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_step: Option<ByteStep>,
    /// Sequential phases: only zones of the region, one after another (fio zonemode=strided; `[phase.strided]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strided: Option<StridedSpec>,
    /// Random phases: a new random offset only every this many operations (fio rw=randread:8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_every: Option<u32>,
    /// With `random-every`: the operations in between continue sequentially (default) or repeat the offset (fio
    /// rw_sequencer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequencer: Option<Sequencer>,
    /// Worker N starts at offset + N × this (fio offset_increment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_increment: Option<SizeOrPercent>,
    /// Stop each worker after this many operations (fio number_ios).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_ios: Option<u64>,
    /// How a worker with several files moves between them (fio file_service_type). Default: random.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_service: Option<FileService>,
    /// fdatasync after every N writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdatasync_every: Option<u64>,
    /// Buffered phases tell the kernel their access pattern (posix_fadvise RANDOM or SEQUENTIAL), so that random
    /// reads do not read ahead (fio fadvise_hint; default yes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_hint: Option<bool>,
    /// End the phase as failed when a worker's bandwidth over an interval falls below this (fio rate_min).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min: Option<ByteRate>,
    /// End the phase as failed when a worker's IOPS over an interval fall below this (fio rate_iops_min).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min_iops: Option<u64>,
    /// Pause this long after every `thinktime-blocks` operations (fio thinktime).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::units::deserialize_opt_duration",
        serialize_with = "super::job::ser_opt_duration"
    )]
    pub thinktime: Option<Duration>,
    /// Operations between pauses (fio thinktime_blocks; default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinktime_blocks: Option<u32>,
    /// The block devices the phase runs on when a job names its own (fio `filename=/dev/sdb:/dev/sdc`, mapped
    /// onto this machine's devices with `run --device`): each is in the target's file table, and the phase's
    /// workers go over all of them (by `file-service`). Default: the run's one target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<PathBuf>>,
    /// How fio names and groups this phase, for fio's JSON output (set by the fio reader only).
    #[serde(skip)]
    pub info: Option<FioJobInfo>,
}

/// vdbench's own knobs (each with a TOML key of its own as well).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VdbenchExtras {
    /// Stop once this much has been read (all workers together, after the warm-up): bytes, or passes over the
    /// data set (vdbench maxdataread). Raw phases only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_read: Option<IoAmount>,
    /// Stop once this much has been written, as `io-read` (vdbench maxdatawritten).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_written: Option<IoAmount>,
    /// Random phases: skip forward from the last operation by an amount within (min, max) in place of each
    /// random offset (vdbench stride=(min,max); `[phase.stride]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stride: Option<StrideSpec>,
    /// Pace at this percentage of the rate the nearest earlier unpaced phase achieved (vdbench iorate=curve); at
    /// most [`MAX_PERCENT_OF_MAX`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_percent_of_max: Option<f64>,
    /// With `rate-percent-of-max`: skip this phase, and the later ones of the same curve, once an earlier curve
    /// phase's mean response time went above this (vdbench stopcurve).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::units::deserialize_opt_duration",
        serialize_with = "super::job::ser_opt_duration"
    )]
    pub curve_stop_latency: Option<Duration>,
    /// With parts and no rate: the workers hold the parts' shares (one ahead of its share waits for the
    /// others), as vdbench's controlled max does when a wd says its skew. Default: when a part says its `skew`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_shares: Option<bool>,
    /// With parts: the run fails (exit 1) when a part's worker's share of the phase's operations is off its
    /// skew by more than this many percentage points (vdbench `abort_failed_skew=`). The result says every
    /// worker's requested and observed share whether or not this is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew_limit: Option<f64>,
}

/// Overlays field by field: a field said in `over` wins.
macro_rules! overlay_fields {
    ($ty:ident, $base:expr, $over:expr, [$($field:ident),* $(,)?]) => {
        $ty { $($field: $over.$field.clone().or_else(|| $base.$field.clone()),)* }
    };
}

impl FioExtras {
    /// A copy of `self` with every knob that `over` says replaced by `over`'s value.
    pub fn overlay(&self, over: &FioExtras) -> FioExtras {
        overlay_fields! { FioExtras, self, over, [offset_step, strided, random_every, sequencer, offset_increment, number_ios, file_service, fdatasync_every, access_hint, rate_min, rate_min_iops, thinktime, thinktime_blocks, devices, info] }
    }
}

impl VdbenchExtras {
    /// A copy of `self` with every knob that `over` says replaced by `over`'s value.
    pub fn overlay(&self, over: &VdbenchExtras) -> VdbenchExtras {
        overlay_fields! { VdbenchExtras, self, over, [io_read, io_written, stride, rate_percent_of_max, curve_stop_latency, hold_shares, skew_limit] }
    }
}
