//! What to do next: the operations a worker issues (direction, file, offset, size), from a seedable generator.
//! Knows nothing about engines, clocks or measurement; the same configuration and seed always give the same
//! sequence of operations.

#![deny(unsafe_code)]

// This crate, as `crate::workload::…` names it.
#[cfg(test)]
use crate as workload;

mod blocksize;
mod distribution;
pub mod fileset;
mod hotband;
mod mix;
mod random_map;
mod rng;
mod shuffle;
mod source;

pub use blocksize::{BlockSizes, SizePicker};
pub use distribution::{Distribution, Sampler, Scatter, Zipf, Zone, ZoneSize};
pub use hotband::MIN_BAND as HOTBAND_MIN_BYTES;
pub use mix::MixSource;
pub use rng::{Rng, mix64};
pub use source::{
    Access, Direction, FileService, Offsets, Op, OpSource, Region, Stride, WorkloadConfig, WorkloadError,
};
