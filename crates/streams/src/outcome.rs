//! What one step of viewers measured, as the run hands it to the results: each viewer's figures, the chunks'
//! lateness and streamcap's own lag, when the judged playback began and how the step ended; and how the step
//! is judged against the quality target. Pure data.
//!
//! Start-up and playback are judged apart, each viewer in one count per problem: it never started (it had the
//! start-up limit to start and did not), it started over the limit, it stalled while starting (before its
//! buffer was ever full), it did not reach steady state within its bound, or it stalled during playback
//! (after steady state). A viewer the step ended before it arrived (a search step cut short by a failure, or
//! Ctrl-C) was never part of the audience and is in no count; nor is one that had not yet had the time a
//! count needs (a viewer that arrived 1 s before the end is not "never started").
//!
//! Playback is judged by its buffers too, not only by stalls: a stall shows a deficit only once a buffer ran
//! dry, and a chunk of 0.1 s of media in a buffer of 2.2 s hides a 12 % deficit for the whole judged window.
//! So the audience's buffers must hold over the judged playback: the media they lost between its start and
//! its end, summed over the viewers, may exceed neither the ripple of buffers refilled a chunk at a time
//! (about √n chunks: the viewers' ripples are independent) nor `DRAIN_SHARE` of the media played.

use std::time::Duration;

use super::judge::{Judging, give_up_start, slow_starts_allowed};
use super::model::StreamStats;
use crate::metrics::Histogram;

/// The share of the judged playback the audience's buffers may lose beyond their ripple: a deficit under 3 %
/// of the media played is within what the step can tell (and within the ±10 % the verdict promises).
pub const DRAIN_SHARE: f64 = 0.03;

/// What the audience's buffers did over the judged playback (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BufferDrain {
    /// Viewers whose buffer was followed through the window.
    pub viewers: u32,
    /// Media lost from their buffers, summed, seconds (negative: they gained).
    pub drained_s: f64,
    /// What the step allows, seconds.
    pub allowed_s: f64,
}

impl BufferDrain {
    pub fn holds(&self) -> bool {
        self.drained_s <= self.allowed_s
    }

    /// Media lost per viewer, seconds.
    pub fn per_viewer_s(&self) -> f64 {
        self.drained_s / f64::from(self.viewers.max(1))
    }
}

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
    /// The window the viewers arrived over.
    pub arrival: Duration,
    /// How the step was judged: the bound on reaching steady state, the judged playback.
    pub judging: Judging,
    /// When the last viewer reached steady state (the judged playback began), from the common origin; `None`
    /// when a viewer never did.
    pub steady_at: Option<Duration>,
    /// A search step that ended at its first failure: when.
    pub cut: Option<Duration>,
    /// Ctrl-C stopped the step before every watch ended.
    pub interrupted: bool,
    /// The engine that issued the reads ("io_uring", "sync", "http").
    pub engine: &'static str,
    /// Background writers (`ingest`), when there were any.
    pub ingest: Option<IngestOutcome>,
    /// What each background load (`--during`) did over the step, in the order asked; empty without them.
    pub background: Vec<crate::BackgroundFigures>,
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
    /// Of those, streams that stalled (starting or during playback) or never started.
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
    /// Whether a viewer was part of the audience: the step did not end before it arrived.
    fn present(s: &StreamStats) -> bool {
        s.present > Duration::ZERO || s.bytes > 0
    }

    fn count(&self, f: impl Fn(&StreamStats) -> bool) -> u32 {
        self.streams.iter().filter(|s| Self::present(s) && f(s)).count() as u32
    }

    /// Viewers that arrived before the step ended.
    pub fn audience(&self) -> u32 {
        self.count(|_| true)
    }

    /// Streams that stalled during playback (after steady state).
    pub fn stalled(&self) -> u32 {
        self.count(|s| s.stalls > 0)
    }

    /// Streams that stalled after playback began but before their buffer was first full.
    pub fn startup_stalled(&self) -> u32 {
        self.count(|s| s.startup_stalls > 0)
    }

    /// Streams that had `max_startup` to start and never played.
    pub fn never_started(&self, max_startup: Duration) -> u32 {
        self.count(|s| s.startup.is_none() && s.present >= max_startup)
    }

    /// Streams that started, but took longer than `max_startup`.
    pub fn slow_starts(&self, max_startup: Duration) -> u32 {
        self.count(|s| s.startup.is_some_and(|u| u > max_startup))
    }

    /// Streams not playing `after` their arrival: they started later, or had not started when they had been
    /// there that long.
    pub fn late_starts(&self, after: Duration) -> u32 {
        self.count(|s| s.startup.map_or(s.present >= after, |u| u > after))
    }

    /// Streams that started but did not reach steady state within the bound.
    pub fn not_steady(&self) -> u32 {
        let bound = self.judging.steady_within;
        self.count(|s| s.startup.is_some() && s.steady.is_none_or(|t| t > bound) && s.present >= bound)
    }

    /// Whether one stream stalled (starting or during playback) or never started: a client's share of trouble.
    pub fn is_stalled(&self, s: &StreamStats) -> bool {
        let never = s.startup.is_none() && s.present >= self.judging.max_startup;
        Self::present(s) && (s.stalls > 0 || s.startup_stalls > 0 || never)
    }

    /// What the audience's buffers did over the judged playback; `None` when no viewer was followed through a
    /// judged window.
    pub fn buffer_drain(&self) -> Option<BufferDrain> {
        let judged: Vec<_> = self.streams.iter().filter_map(|s| s.judged_buffer).collect();
        if judged.is_empty() {
            return None;
        }
        let viewers = judged.len() as u32;
        let drained_s = judged.iter().map(|b| b.start.as_secs_f64() - b.end.as_secs_f64()).sum();
        let chunk = judged.iter().map(|b| b.chunk).max().unwrap_or_default().as_secs_f64();
        let ripple = f64::from(viewers).sqrt() * chunk;
        let allowed_s = ripple + DRAIN_SHARE * self.judging.judged.as_secs_f64() * f64::from(viewers);
        Some(BufferDrain { viewers, drained_s, allowed_s })
    }

    /// Whether the step met the quality target: at most `max_stalled` streams stalled (starting or during
    /// playback), every stream started within `max_startup` but one in ten (`judge::slow_starts_allowed`), and
    /// within twice it, and reached steady state within its bound, the audience's buffers held over the judged
    /// playback, no read failed, its judge did not cut it, and the step ran to its end.
    pub fn meets(&self, max_stalled: u32, max_startup: Duration) -> bool {
        self.buffer_drain().is_none_or(|d| d.holds())
            && self.stalled() + self.startup_stalled() <= max_stalled
            && self.late_starts(max_startup) <= slow_starts_allowed(self.count)
            && self.late_starts(give_up_start(max_startup)) == 0
            && self.not_steady() == 0
            && self.errors == 0
            && !self.interrupted
            // A search step is cut only by a failure its judge decided (`StepJudge::failed`): its schedulers
            // saw each start at the instant it was due, and a viewer's start seen a moment late still counted.
            && self.cut.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn step(streams: Vec<StreamStats>) -> StepOutcome {
        StepOutcome {
            count: streams.len() as u32,
            streams,
            lateness: Histogram::new(),
            issue_lag: Histogram::new(),
            read_bytes: 0,
            errors: 0,
            first_error: None,
            elapsed: ms(20_000),
            arrival: ms(5000),
            judging: Judging { steady_within: ms(10_000), judged: ms(5000), fail_fast: false, max_startup: ms(2000) },
            steady_at: None,
            cut: None,
            interrupted: false,
            engine: "null",
            ingest: None,
            background: Vec::new(),
            clients: Vec::new(),
        }
    }

    fn viewer(startup: Option<u64>, steady: Option<u64>, present: u64) -> StreamStats {
        StreamStats {
            startup: startup.map(ms),
            steady: steady.map(ms),
            present: ms(present),
            bytes: u64::from(startup.is_some()),
            ..StreamStats::default()
        }
    }

    #[test]
    fn start_up_and_playback_problems_are_counted_apart() {
        let fine = viewer(Some(300), Some(900), 15_000);
        let playback = StreamStats { stalls: 2, ..fine.clone() };
        let starting = StreamStats { startup_stalls: 1, ..fine.clone() };
        let slow = viewer(Some(2500), Some(4000), 15_000);
        let never = viewer(None, None, 12_000);
        let unsteady = viewer(Some(500), None, 11_000);
        let absent = viewer(None, None, 0);
        let too_soon = viewer(None, None, 1000);
        let s = step(vec![fine.clone(), playback, starting, slow, never, unsteady, absent, too_soon]);
        assert_eq!(s.audience(), 7, "the viewer the step ended before is not in the audience");
        assert_eq!(s.stalled(), 1);
        assert_eq!(s.startup_stalled(), 1);
        assert_eq!(s.never_started(ms(2000)), 1, "one that had 1 s is not counted: it had no time to start");
        assert_eq!(s.slow_starts(ms(2000)), 1);
        assert_eq!(s.not_steady(), 1);
        assert_eq!(s.late_starts(ms(2000)), 2, "the slow one, and the one there 12 s that never started");
        assert!(!s.meets(10, ms(2000)));
        assert!(step(vec![fine.clone(), fine.clone(), absent_viewer()]).meets(0, ms(2000)));
        let one_stall = step(vec![fine.clone(), StreamStats { stalls: 1, ..fine }]);
        assert!(!one_stall.meets(0, ms(2000)) && one_stall.meets(1, ms(2000)), "the allowance of stalled streams");
    }

    #[test]
    fn one_start_in_ten_may_be_late_but_none_past_twice_the_target() {
        let fine = viewer(Some(300), Some(900), 15_000);
        let late = viewer(Some(2500), Some(4000), 15_000);
        let mut audience = vec![fine.clone(); 9];
        audience.push(late.clone());
        assert!(step(audience.clone()).meets(0, ms(2000)), "one slow start of ten");
        audience[0] = late.clone();
        assert!(!step(audience.clone()).meets(0, ms(2000)), "two of ten");
        audience.extend(vec![fine.clone(); 10]);
        assert!(step(audience).meets(0, ms(2000)), "two of twenty");
        let mut audience = vec![fine.clone(); 9];
        audience.push(viewer(Some(4100), Some(5000), 15_000));
        assert!(!step(audience).meets(0, ms(2000)), "past twice the target");
        let mut audience = vec![fine; 9];
        audience.push(viewer(None, None, 3000));
        assert!(step(audience.clone()).meets(0, ms(2000)), "not started after 3 s: late, not yet given up");
        audience[9] = viewer(None, None, 4000);
        assert!(!step(audience.clone()).meets(0, ms(2000)), "not started after twice the target");
        audience[9] = viewer(Some(300), Some(900), 15_000);
        let cut = StepOutcome { cut: Some(ms(3000)), ..step(audience) };
        assert!(!cut.meets(0, ms(2000)), "a step its judge cut failed, whatever the counts say");
    }

    fn absent_viewer() -> StreamStats {
        viewer(None, None, 0)
    }
}
