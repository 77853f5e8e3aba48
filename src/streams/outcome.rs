//! What one step of viewers measured, as the run hands it to the results: each viewer's figures, the chunks'
//! lateness and streamcap's own lag, and how the step ended. Pure data.

use std::time::Duration;

use super::model::StreamStats;
use crate::metrics::Histogram;

#[derive(Debug, Clone)]
pub struct StepOutcome {
    /// Viewers in the step.
    pub count: u32,
    /// Per viewer, in viewer order.
    pub streams: Vec<StreamStats>,
    /// Completion − due, per used chunk.
    pub lateness: Histogram,
    /// Issue − due, per chunk: streamcap's own delay.
    pub issue_lag: Histogram,
    /// Bytes the viewers' reads transferred, chunks used and thrown away alike: what the devices beneath should
    /// have read (all clients of a multi-host run together).
    pub read_bytes: u64,
    /// Reads that failed.
    pub errors: u64,
    /// The first failed read, in words (operation, path, offset, error).
    pub first_error: Option<String>,
    /// From the common origin to the end of the last watch.
    pub elapsed: Duration,
    /// Ctrl-C stopped the step before every watch ended.
    pub interrupted: bool,
    /// The engine that issued the reads ("io_uring", "sync", "http").
    pub engine: &'static str,
    /// Background writers (`ingest`), when there were any.
    pub ingest: Option<IngestOutcome>,
    /// Multi-host runs: what each client (rank) saw of the step, in rank order; empty for one process.
    pub clients: Vec<ClientStep>,
}

/// One client's share of a step in a multi-host run: enough to tell whether a client, rather than the storage,
/// held the streams back.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientStep {
    /// The client's rank.
    pub rank: u32,
    /// Its host name.
    pub host: String,
    /// Viewers this client ran.
    pub viewers: u32,
    /// Of those, streams that stalled or never started.
    pub stalled: u32,
    /// Reads that failed on this client.
    pub errors: u64,
    /// Issue − due at the 99th percentile: this client's own delay in issuing reads that were due (a busy CPU
    /// or a slow network stack shows here, not in the storage's latency).
    pub issue_lag_p99: Duration,
    /// Completion − due at the 99th percentile, as this client saw it.
    pub lateness_p99: Duration,
}

/// What the ingest writers of a step did.
#[derive(Debug, Clone)]
pub struct IngestOutcome {
    pub writers: u32,
    /// Asked rate of all writers together, bytes per second.
    pub target_bytes_per_sec: f64,
    pub bytes: u64,
    /// Per write, from its due time to its completion.
    pub write_latency: Histogram,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl StepOutcome {
    /// Streams that stalled at least once or never started playing. After Ctrl-C, a viewer that had received
    /// nothing yet (its watch had not begun, or had just begun) is not counted: it was stopped, not stalled.
    pub fn stalled(&self) -> u32 {
        self.streams.iter().filter(|s| self.is_stalled(s)).count() as u32
    }

    /// Whether one stream stalled or never started (see [`StepOutcome::stalled`]).
    pub fn is_stalled(&self, s: &StreamStats) -> bool {
        let stopped_early = self.interrupted && s.bytes == 0;
        s.stalls > 0 || (s.startup.is_none() && !stopped_early)
    }

    /// Streams whose start-up took longer than `max_startup`.
    pub fn slow_starts(&self, max_startup: Duration) -> u32 {
        self.streams.iter().filter(|s| s.startup.is_some_and(|u| u > max_startup)).count() as u32
    }

    /// Whether the step met the quality target: at most `max_stalled` streams stalled, every stream started
    /// within `max_startup`, no read failed, and the step ran to its end.
    pub fn meets(&self, max_stalled: u32, max_startup: Duration) -> bool {
        self.stalled() <= max_stalled && self.slow_starts(max_startup) == 0 && self.errors == 0 && !self.interrupted
    }
}
