//! The start-up bound: what the check's quality target asks beyond a steady rate, where a step starts all its
//! viewers at once (the stampede steps the full matrix in docs/validation.md measured; since the `audience`
//! merge viewers arrive over a window, and this bound is not applied). A step starting all its viewers
//! at once, each must have `prebuffer` of media in before it plays, and every one must play within
//! `max_startup` (the check: 2 s of prebuffer, 2 s to start). The prebuffer is whole chunks: P = ⌈prebuffer ×
//! B ÷ 8 ÷ chunk⌉ × chunk bytes (1 MiB chunks: 1080p 2 chunks = 2.10 MB, 2160p HEVC 6 = 6.29 MB, 2160p remux 20
//! = 20.97 MB). A device of D bytes/s shared by the viewers' reads delivers N prebuffers in N × P ÷ D, so
//! N ≤ D × T ÷ P — with T = prebuffer = 2 s, just under the steady bound D × 8 ÷ B, by the chunk rounding.
//!
//! How the device is shared is the engine's: with io_uring every viewer keeps its read in flight, the device
//! serves the requests in turn, so the share is per viewer and the bound above holds. The sync engine keeps one
//! read in flight per scheduler thread (W threads, the viewers dealt out in turn): each thread gets 1/W of the
//! device while all have reads to make, so the thread with ⌈N ÷ W⌉ viewers starts them all only if
//! ⌈N ÷ W⌉ × P ≤ D × T ÷ W. That lower count is the engine's bound, not the storage's: a server reading for
//! every viewer at once reaches the storage's. A sync cell is held to the range between the two. Since the plan
//! gives the sync engine a thread per viewer (crates/plan/src/streams_threads.rs; `jobs` is then the most threads,
//! 256), W is at least N and there is no such bound.

use serde_json::Value;

/// What a stream phase's steps ask of the storage at start-up.
#[derive(Debug, Clone, Copy)]
pub struct StartUp {
    /// Bytes of the prebuffer in whole chunks.
    pub prebuffer_bytes: f64,
    pub chunks: f64,
    pub max_startup_s: f64,
    /// Scheduler threads, and reads in flight per thread.
    pub threads: f64,
    pub slots: f64,
}

impl StartUp {
    /// From a stream phase of the result (`phases[i]`), for a format of `bitrate` bit/s.
    /// `None` where the viewers arrived over a window (`arrival_s`, the audience model since issue 24's
    /// `audience` merge): they do not all prebuffer at once, and the steady bound alone applies.
    pub fn of(phase: &Value, bitrate: f64) -> Option<StartUp> {
        let streams = &phase["streams"];
        let steps = streams["steps"].as_array()?;
        if steps.iter().any(|s| s["arrival_s"].as_f64().is_some_and(|a| a > 0.0)) {
            return None;
        }
        let chunk = streams["chunk_bytes"].as_f64()?;
        let prebuffer_s = streams["prebuffer_s"].as_f64()?;
        let chunks = (prebuffer_s * bitrate / 8.0 / chunk).ceil();
        Some(StartUp {
            prebuffer_bytes: chunks * chunk,
            chunks,
            max_startup_s: streams["target"]["max_startup_s"].as_f64()?,
            threads: phase["jobs"].as_f64()?.max(1.0),
            slots: phase["iodepth"].as_f64()?.max(1.0),
        })
    }

    /// The storage's start-up bound in streams with the device delivering `bytes_per_s`: D × T ÷ P.
    pub fn storage_bound(&self, bytes_per_s: f64) -> f64 {
        bytes_per_s * self.max_startup_s / self.prebuffer_bytes
    }

    /// The engine's bound where its threads hold fewer reads in flight than it has viewers (sync: one each):
    /// the largest N with ⌈N ÷ W⌉ × P ≤ D × T ÷ W, that is W × ⌊D × T ÷ (W × P)⌋. `None` with a read in flight
    /// per viewer (io_uring), or where it is not below the storage's.
    pub fn engine_bound(&self, bytes_per_s: f64) -> Option<f64> {
        if self.slots > 1.0 || self.threads >= self.storage_bound(bytes_per_s).ceil() {
            return None;
        }
        let per_thread = (self.storage_bound(bytes_per_s) / self.threads).floor();
        let bound = self.threads * per_thread;
        (bound < self.storage_bound(bytes_per_s).floor()).then_some(bound)
    }

    /// The arithmetic in words.
    pub fn words(&self, bytes_per_s: f64) -> String {
        let mut words = format!(
            "start-up: {} chunks = {:.2} MB of prebuffer per viewer, all within {:.0} s: {:.2} MB/s × {:.0} s ÷ {:.2} MB \
             = {:.1}",
            self.chunks,
            self.prebuffer_bytes / 1e6,
            self.max_startup_s,
            bytes_per_s / 1e6,
            self.max_startup_s,
            self.prebuffer_bytes / 1e6,
            self.storage_bound(bytes_per_s)
        );
        if let Some(engine) = self.engine_bound(bytes_per_s) {
            words += &format!(
                "; the sync engine's {:.0} threads × 1 read: {:.0} × ⌊{:.1} ÷ {:.0}⌋ = {engine:.0}",
                self.threads,
                self.threads,
                self.storage_bound(bytes_per_s),
                self.threads
            );
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remux(slots: f64) -> StartUp {
        StartUp { prebuffer_bytes: 20.0 * 1_048_576.0, chunks: 20.0, max_startup_s: 2.0, threads: 2.0, slots }
    }

    #[test]
    fn a_read_per_viewer_starts_what_the_device_carries_in_the_start_up_time() {
        let s = remux(256.0);
        // 41.94 MB/s × 2 s ÷ 20.97 MB = 4.0 remux viewers.
        assert!((s.storage_bound(41_943_040.0) - 4.0).abs() < 1e-9);
        assert_eq!(s.engine_bound(41_943_040.0), None);
    }

    #[test]
    fn one_read_per_thread_starts_whole_threads_worth_of_viewers() {
        // 39.32 MB/s: 3.75 viewers by the storage, but a thread with 2 viewers gets half: 2 × ⌊1.875⌋ = 2.
        assert_eq!(remux(1.0).engine_bound(39_321_600.0), Some(2.0));
        // Where the split costs nothing (4.0 over 2 threads) there is no engine bound.
        assert_eq!(remux(1.0).engine_bound(41_943_040.0), None);
        // A thread per viewer (the plan's default for sync): no engine bound.
        assert_eq!(StartUp { threads: 256.0, ..remux(1.0) }.engine_bound(39_321_600.0), None);
    }
}
