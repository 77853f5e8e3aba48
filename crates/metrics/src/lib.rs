//! Measurement: latency histograms, per-worker recorders, the `Snapshot` that crosses threads, error records and
//! bounded interval series. Knows nothing about engines, files or the job; it only counts what it is told.

#![deny(unsafe_code)]

// This crate, as `crate::metrics::…` names it.
#[cfg(test)]
use crate as metrics;

mod depth;
mod fio_bins;
mod histogram;
mod interval_merge;
mod recorder;
mod series;
mod spread;
mod steady;
mod wire;

pub use depth::DepthFound;
pub use fio_bins::{FIO_HIST_BINS, add_fio_bins, fio_bin_of};
pub use histogram::{DEFAULT_PERCENTILES, Histogram, LatencySummary, Percentile};
pub use interval_merge::IntervalMerge;
pub use recorder::{Depths, ErrorRecord, OpClass, OpStats, Recorder, Snapshot};
pub use series::{BoundedSeries, ClassPoint, Mergeable};
pub use spread::{RateSpread, Spread, WorkerTotals};
pub use steady::{SteadyConfig, SteadyMetric, SteadyOutcome, SteadyRule, SteadyTracker};
pub use wire::{WireError, decode_histogram, decode_recorder, encode_histogram, encode_recorder};
