//! The estimate beside the measurement: how many streams the storage should sustain from two raw rates
//! measured on the same media — random reads at the chunk size (IOPS bound: chunks/s served ÷ chunks/s one
//! stream needs) and sequential reads (bandwidth bound: MB/s ÷ stream MB/s). The lower bound wins. Pure.
//!
//! Why the measured count differs from it, in the usual order of size: viewers need headroom (a device at 100 %
//! has queues that grow without limit, so some chunk arrives after the buffer ran dry); one request in flight
//! per viewer gives a device less parallelism than the random-read run's queue depth of 16; start-ups and the
//! buffer filling after them ask for chunks faster than the bitrate; and on a RAM-backed target neither bound
//! describes a disk.

use serde::{Deserialize, Serialize};

use super::setup::StreamsConfig;

/// Raw read rates of the storage under a media file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawRates {
    /// Random reads of one chunk per second (queue depth 16).
    pub random_chunk_iops: f64,
    /// Sequential 1 MiB reads, decimal MB/s (queue depth 4).
    pub sequential_mbps: f64,
}

/// The count the storage should sustain from its raw rates (the lower bound wins).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityEstimate {
    /// Random reads per second measured at the chunk size.
    pub random_chunk_iops: f64,
    /// Chunks per second one stream needs (bitrate ÷ chunk size).
    pub chunks_per_stream_s: f64,
    /// random_chunk_iops ÷ chunks_per_stream_s.
    pub iops_bound: f64,
    /// Sequential read throughput, decimal MB/s.
    pub sequential_mbps: f64,
    /// Sequential MB/s ÷ stream MB/s.
    pub bandwidth_bound: f64,
    /// The lower of the two, rounded down.
    pub streams: u32,
    /// "iops" or "bandwidth".
    pub limited_by: String,
    /// Why the measured count may differ from this, in words (filled when both are known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<String>,
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
    use std::time::Duration;

    use super::*;
    use crate::spec::{Assignment, ChunkSize, Mix};

    #[test]
    fn the_lower_bound_wins() {
        let config = StreamsConfig {
            mix: "2160p-hevc:1".parse::<Mix>().unwrap(),
            chunk: ChunkSize::Bytes(1 << 20),
            delivery: Default::default(),
            buffer: Duration::from_secs(10),
            prebuffer: Duration::from_secs(2),
            rebuffer: None,
            steady_ahead: None,
            watch: Duration::from_secs(60),
            ramp: None,
            steady_within: Duration::from_secs(30),
            seek_every: None,
            assignment: Assignment::One,
            titles: None,
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
