//! The estimate beside the measurement (`streams`, item 7 of the issue): how many streams the storage should
//! sustain from two raw rates measured on the same media file with the ordinary raw-I/O runner —
//! random reads at the chunk size (IOPS bound: chunks/s served ÷ chunks/s one stream needs) and sequential reads
//! (bandwidth bound: MB/s ÷ stream MB/s). The lower bound wins.
//!
//! Why the measured count differs from it, in the usual order of size: viewers need headroom (a device at 100 %
//! has queues that grow without limit, so some chunk arrives after the buffer ran dry); one request in flight
//! per viewer gives a device less parallelism than the random-read run's queue depth of 16; start-ups and the
//! buffer filling after them ask for chunks faster than the bitrate; and on a RAM-backed target neither bound
//! describes a disk.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use super::facts::gather;
use crate::plan::{PhasePlan, RunOptions, build_plan};
use crate::results::CapacityEstimate;
use crate::run::{Interrupt, PhaseOutcome, RunObserver, execute, run_id};
use crate::spec::{JobSpec, PhaseSpec, RwMode, SpecOrigin};
use crate::streams::StreamsConfig;

/// Raw read rates of the storage under a media file.
#[derive(Debug, Clone, Copy)]
pub struct RawRates {
    pub random_chunk_iops: f64,
    pub sequential_mbps: f64,
}

#[derive(Default)]
struct Grab(Vec<(u64, u64, Duration)>);

impl RunObserver for Grab {
    fn phase_finished(&mut self, _index: usize, _phase: &PhasePlan, outcome: &PhaseOutcome) {
        self.0.push((outcome.totals.total_ops(), outcome.totals.total_bytes(), outcome.measured));
    }
}

/// Measures random reads of `chunk` bytes at queue depth 16 for `runtime`, then 1 MiB sequential reads at
/// queue depth 4 for `runtime`, on `file` (read only).
pub fn measure_raw(
    file: &Path,
    chunk: u64,
    direct: bool,
    interrupt: &Interrupt,
    runtime: Duration,
) -> Result<RawRates> {
    let phase = |name: &str, rw, bs: u64, iodepth| PhaseSpec {
        name: Some(name.into()),
        rw: Some(rw),
        bs: Some(bs.to_string().parse().expect("a byte count is a block size")),
        iodepth: Some(iodepth),
        runtime: Some(runtime),
        direct: Some(direct),
        ..PhaseSpec::default()
    };
    let job = JobSpec {
        origin: SpecOrigin::Flags,
        target: Some(file.to_path_buf()),
        interval: None,
        phases: vec![
            phase("random chunks", RwMode::RandRead, chunk, 16),
            phase("sequential", RwMode::Read, 1 << 20, 4),
        ],
        notices: Vec::new(),
    };
    let gathered = gather(file, false)?;
    let options = RunOptions { run_id: run_id(), ..Default::default() };
    let plan = build_plan(&job, &gathered.facts, &options).context("cannot plan the raw-rate measurement")?;
    let mut grab = Grab::default();
    execute(&plan, interrupt, false, &mut grab).context("the raw-rate measurement failed")?;
    let rate = |i: usize, per: fn(u64, u64) -> f64| {
        grab.0.get(i).map_or(0.0, |&(ops, bytes, t)| {
            let s = t.as_secs_f64();
            if s > 0.0 { per(ops, bytes) / s } else { 0.0 }
        })
    };
    Ok(RawRates { random_chunk_iops: rate(0, |ops, _| ops as f64), sequential_mbps: rate(1, |_, b| b as f64 / 1e6) })
}

/// The estimate for the viewers of `config` (a mix is averaged by its weights).
pub fn estimate(rates: RawRates, config: &StreamsConfig) -> CapacityEstimate {
    let total: f64 = config.mix.0.iter().map(|(_, w)| f64::from(*w)).sum();
    let (mut chunks_per_s, mut bytes_per_s) = (0.0, 0.0);
    for (index, (format, weight)) in config.mix.0.iter().enumerate() {
        let rate = format.bitrate.byte_rate().bytes_per_sec();
        chunks_per_s += f64::from(*weight) / total * rate / config.chunk_bytes(index) as f64;
        bytes_per_s += f64::from(*weight) / total * rate;
    }
    let iops_bound = rates.random_chunk_iops / chunks_per_s;
    let bandwidth_bound = rates.sequential_mbps * 1e6 / bytes_per_s;
    let (bound, limited_by) =
        if iops_bound <= bandwidth_bound { (iops_bound, "iops") } else { (bandwidth_bound, "bandwidth") };
    CapacityEstimate {
        random_chunk_iops: rates.random_chunk_iops,
        chunks_per_stream_s: chunks_per_s,
        iops_bound,
        sequential_mbps: rates.sequential_mbps,
        bandwidth_bound,
        streams: bound.floor() as u32,
        limited_by: limited_by.into(),
        comparison: None,
    }
}

/// Says how the measured count compares with the estimate, and the likely reason.
pub fn compare(estimate: &mut CapacityEstimate, measured: u32, memory_backed: bool) {
    let bound = estimate.streams.max(1) as f64;
    let ratio = f64::from(measured) / bound;
    let why = if memory_backed {
        "the media lives in RAM, so both bounds describe memory copies and the scheduler, not a disk".to_string()
    } else if ratio < 0.85 {
        "below the bound: viewers need headroom (at full load queues grow until a buffer runs dry), one chunk in \
         flight per viewer uses less of the device's parallelism than the random-read run's queue depth of 16, \
         and start-ups fetch faster than the bitrate"
            .to_string()
    } else if ratio > 1.15 {
        "above the bound: viewers read neighbouring chunks of the same file, which the device or its cache serves \
         faster than scattered random reads"
            .to_string()
    } else {
        "within 15 % of the bound: the storage delivers to viewers what its raw rates promise".to_string()
    };
    estimate.comparison =
        Some(format!("measured {measured} against {} estimated ({:.0} %): {why}", estimate.streams, ratio * 100.0));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::{Assignment, ChunkSize, Mix};

    #[test]
    fn the_lower_bound_wins() {
        let config = StreamsConfig {
            mix: "2160p-hevc:1".parse::<Mix>().unwrap(),
            chunk: ChunkSize::Bytes(1 << 20),
            buffer: Duration::from_secs(10),
            prebuffer: Duration::from_secs(2),
            watch: Duration::from_secs(60),
            ramp: None,
            seek_every: None,
            assignment: Assignment::One,
            media_length: Duration::from_secs(60),
            seed: 1,
            vbr: None,
        };
        // 25 Mbit/s = 3.125 MB/s = 2.98 chunks of 1 MiB per second.
        let e = estimate(RawRates { random_chunk_iops: 150.0, sequential_mbps: 500.0 }, &config);
        assert_eq!((e.streams, e.limited_by.as_str()), (50, "iops"));
        let e = estimate(RawRates { random_chunk_iops: 1500.0, sequential_mbps: 100.0 }, &config);
        assert_eq!((e.streams, e.limited_by.as_str()), (32, "bandwidth"));
    }
}
