//! The part of a result that `streamcap cache` fills: each plateau it measured (page cache, device or
//! controller cache, sustained media, access time; each alone and under a concurrent load), the stepped
//! device-cache regions and where that cache ends, and the stream bounds the plateaus imply. The phases behind
//! every figure stay in `phases`. Additive to schema version 1 (`RunResult::cache`, absent for other commands);
//! units are in the field names. This file holds the types only: the app derives them from the phases.

use serde::{Deserialize, Serialize};

/// What `cache` concluded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheSummary {
    /// Bytes of the target the media and access-time plateaus read (the test file in a directory, or the part
    /// of the file or device in use).
    pub region_bytes: u64,
    /// Bytes of the resident region the page-cache plateau re-reads.
    pub page_cache_region_bytes: u64,
    /// The concurrent load in words ("randrw:70, 64 KiB at queue depth 4"), or absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// The stream the bounds are worked out for: bitrate, bits/s.
    pub bitrate_bps: u64,
    /// ... and the chunk each viewer asks for, bytes.
    pub chunk_bytes: u64,
    /// One entry per plateau measured, in the order shown.
    #[serde(default)]
    pub plateaus: Vec<Plateau>,
    /// The device-cache regions, smallest first, as measured alone.
    #[serde(default)]
    pub device_cache_steps: Vec<CacheStep>,
    /// Where repeated direct reads stop being faster than the media, in words and sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_cache_end: Option<CacheEnd>,
    /// The cache stopped before the end (Ctrl-C or an error): later plateaus are missing.
    #[serde(default)]
    pub partial: bool,
}

/// Which level of the storage a plateau measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlateauKind {
    /// Buffered re-reads of a region held in RAM.
    PageCache,
    /// Repeated direct reads of a small region: the drive's or controller's own cache.
    DeviceCache,
    /// Direct sequential reads over a region larger than any cache.
    Media,
    /// Direct 4 KiB random reads, one at a time.
    AccessTime,
}

impl PlateauKind {
    /// The name shown in tables.
    pub fn label(self) -> &'static str {
        match self {
            PlateauKind::PageCache => "page cache",
            PlateauKind::DeviceCache => "device cache",
            PlateauKind::Media => "sustained media",
            PlateauKind::AccessTime => "access time",
        }
    }
}

/// One plateau as measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plateau {
    pub kind: PlateauKind,
    /// Measured while the concurrent load ran beside it.
    pub under_load: bool,
    /// The phase behind the figures (its name in `phases`).
    pub phase: String,
    /// Bytes read per operation.
    pub block_bytes: u64,
    /// Decimal MB/s (10^6 bytes/s).
    pub mbps: f64,
    /// Reads per second.
    pub iops: f64,
    /// Mean completion latency of one read, nanoseconds.
    pub latency_mean_ns: f64,
    /// Median and 99th percentile of completion latency, nanoseconds.
    pub latency_p50_ns: u64,
    pub latency_p99_ns: u64,
    /// Under load: the change from the same plateau alone, percent of its MB/s (negative: slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
    /// Streams of `bitrate_bps` in `chunk_bytes` chunks this plateau alone would carry: MB/s ÷ stream MB/s for
    /// the throughput plateaus, 1 ÷ (access time × chunks per second per stream) for the access time.
    pub streams_bound: f64,
    /// What the figure means for serving, in one line.
    pub meaning: String,
    /// A device beneath says it is rotational, yet measured this: the sentence saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implausible: Option<String>,
}

/// One device-cache region.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheStep {
    /// Bytes re-read over and over.
    pub region_bytes: u64,
    /// Decimal MB/s.
    pub mbps: f64,
    /// Median completion latency of one read, nanoseconds.
    pub latency_p50_ns: u64,
    /// Faster than the sustained media by more than half: served by a cache.
    pub cached: bool,
}

/// Where the device or controller cache ends.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheEnd {
    /// The largest region still served from the cache, bytes (absent: not even the smallest was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_up_to_bytes: Option<u64>,
    /// The smallest region no longer served from it, bytes (absent: every region tried was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncached_from_bytes: Option<u64>,
    /// The finding in a sentence.
    pub words: String,
}
