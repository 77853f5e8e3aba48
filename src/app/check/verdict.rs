//! A line of the verdict table from a format's stream phase: its one capacity (the search's answer, confirmed
//! by running the edge again, with its range and the comfortable count), what limited it, and where it stands
//! against the sequential ceiling.
//!
//! The capacity is the answer the stream phase recorded (`results::capacity_answer`), copied and never worked out
//! again, so every table and report shows the same number. The ceiling is a *bound*: streams the check's
//! sequential reads (1 MiB, queue depth 8 — the "sustained media" row of the cache table, through the same
//! `streams::capacity::streams_bound`) would carry at 100 %. A capacity beyond it is not headroom below zero but
//! a sign that a cache served the viewers — unless, on a pool, the members read every byte the viewers received
//! in the steps that ran the capacity and no device's figures point at a cache beneath: then the ceiling
//! understated the disks for the library (a quick check of a btrfs raid1 of four throttled members: 81 × 1080p
//! beyond a ceiling of 30, the members having read all 4.89 GiB the viewers read, where the sequential phase's
//! 256 MiB lay 79 % on one member and the library on two). On one device, reads the device counts can still come
//! from a cache beneath it (this machine's virtual disk, whose host caches it): there a capacity beyond the
//! ceiling stays cache-served.
//!
//! "Limited by" names what stopped more streams, in words a server's owner can act on: disk throughput or seeks
//! (when the failing count stalled: seeks when the estimate's random chunk reads allow under 80 % of what its
//! sequential reads allow), start-up time (it only started slowly), the network (a network filesystem), a
//! throttle (a limit on the target's reads set outside the storage — a cgroup blkio throttle the facts name — that
//! the failing step's reads reached, `results::throttle_bound`), the client
//! (streamcap itself issued due reads late), read errors, or that the search's limit was reached first.

use crate::results::{
    CapacityAnswer, CapacityEstimate, FormatVerdict, StreamsResult, StreamsStep, TargetInfo, throttle_bound,
};
use crate::streams::Format;
use crate::streams::capacity::streams_bound;

/// streamcap's own delay in issuing due reads (p99) from which the client, not the storage, is the limit.
const CLIENT_LAG_NS: u64 = 500_000_000;

/// A capacity up to this much above the sequential ceiling is at the ceiling, not beyond it: the sequential
/// phase and the stream steps are separate few-second measurements (on a throttled loop device they differ by
/// about 10 %), so only more than that says a cache served the viewers.
const AT_CEILING: f64 = 1.15;

/// A failing step whose devices read at least this share of the sequential rate found them saturated (the two
/// measurements differ by about 10 % on a throttled loop device: see `AT_CEILING`).
const SATURATED: f64 = 0.9;

/// Random chunk reads that allow less than this share of what sequential reads allow are limited by seeks; above
/// it, a chunk read costs mostly its transfer, and the limit is the disk's throughput.
const SEEK_BOUND: f64 = 0.8;

/// What the verdict knows besides the stream phase.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The check's sequential read rate (1 MiB, queue depth 8), decimal MB/s, once measured.
    pub sequential_mbps: Option<f64>,
    /// The target is a network filesystem: every chunk crossed the link.
    pub network: bool,
    /// The target as the facts saw it, for the limits set on its reads outside the storage (cgroup blkio
    /// throttles, `TargetInfo::throttles`).
    pub target: Option<TargetInfo>,
    /// Members of the pool beneath the target (0 or 1: one device).
    pub pool_members: usize,
    /// A device's figures were beyond what it says it is: a cache beneath the OS (a host's, a controller's).
    pub cache_beneath: bool,
}

/// What stopped more streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    DiskThroughput,
    Seeks,
    StartUp,
    Throttle,
    Network,
    Client,
    ReadErrors,
    NotReached,
    NotMeasured,
    /// `--quick`'s later formats: the scaled count (and the step above it) passed and the failing count was derived,
    /// so no failing step says.
    Derived,
    Unknown,
}

impl Limit {
    pub fn words(self) -> &'static str {
        match self {
            Limit::DiskThroughput => "disk throughput",
            Limit::Seeks => "seeks",
            Limit::StartUp => "start-up time",
            Limit::Throttle => "a throttle",
            Limit::Network => "the network",
            Limit::Client => "the client (streamcap fell behind)",
            Limit::ReadErrors => "read errors",
            Limit::NotReached => "not reached (search limit)",
            Limit::NotMeasured => "not measured",
            Limit::Derived => "— (edge derived)",
            Limit::Unknown => "—",
        }
    }
}

/// The verdict for `format` from its stream phase's result (complete, or partial while its search runs).
pub fn verdict(format: &Format, streams: &StreamsResult, context: &Context) -> FormatVerdict {
    let answer = streams.capacity.clone().unwrap_or_else(|| under_way(format, &streams.steps));
    let limit = limited_by(&answer, streams, context);
    line(format, answer, limit, streams.estimate.clone(), streams.steps.clone(), context)
}

/// The row of a format whose stream phase never ran (the check stopped before it).
pub fn not_run(format: &Format, context: &Context) -> FormatVerdict {
    let why = "the check did not reach this format".to_string();
    let answer = CapacityAnswer {
        words: format!("{format}: not measured: {why}"),
        not_measured: Some(why),
        interrupted: true,
        ..CapacityAnswer::default()
    };
    line(format, answer, Limit::NotMeasured, None, Vec::new(), context)
}

/// The answer of a search still under way (or cut off before it recorded one).
fn under_way(format: &Format, steps: &[StreamsStep]) -> CapacityAnswer {
    let passed = steps.iter().filter(|s| s.meets_target && s.counts()).map(|s| s.count).max();
    let why = match passed {
        Some(n) => format!("the search did not find its edge ({n} had passed)"),
        None => "the search did not find its edge".to_string(),
    };
    CapacityAnswer {
        words: format!("{format}: not measured: {why}"),
        not_measured: Some(why),
        interrupted: true,
        ..CapacityAnswer::default()
    }
}

fn line(
    format: &Format,
    answer: CapacityAnswer,
    limit: Limit,
    estimate: Option<CapacityEstimate>,
    steps: Vec<StreamsStep>,
    context: &Context,
) -> FormatVerdict {
    let bitrate = format.bitrate.bits_per_sec();
    let bound = context.sequential_mbps.map_or(0.0, |mbps| streams_bound(mbps, bitrate));
    let measured = answer.measured() && bound >= 1.0;
    let streams = f64::from(answer.streams);
    let exceeded = measured && streams > bound * AT_CEILING;
    let device_served = context.pool_members > 1 && !context.cache_beneath && device_served_at(answer.streams, &steps);
    let headroom_pct = (measured && !exceeded).then(|| ((bound - streams) / bound * 100.0).max(0.0));
    FormatVerdict {
        name: format.name.clone(),
        label: format.label.clone(),
        bitrate_bps: bitrate,
        streams: answer.streams,
        limited_by: limit.words().to_string(),
        bandwidth_ceiling: bound.floor() as u32,
        headroom_pct,
        beyond_ceiling: exceeded && !device_served,
        ceiling_understated: exceeded && device_served,
        capacity: answer,
        estimate,
        steps,
    }
}

/// Whether every step that ran `count` and passed was judged served by the devices (they read what its viewers
/// received: `results::served`); false when none was judged (no device could be watched, or an older result).
fn device_served_at(count: u32, steps: &[StreamsStep]) -> bool {
    let mut at = steps.iter().filter(|s| s.count == count && s.meets_target).peekable();
    at.peek().is_some() && at.all(|s| s.device_read_bytes.is_some() && !s.cache_served)
}

/// Whether the failing step's reads (the devices', over the step) reached a read limit set on the target's
/// devices (`results::throttle_bound`): then the throttle, not the disk, stopped more streams.
fn throttle_reached(failing: &StreamsStep, context: &Context) -> bool {
    let read_mbps = device_read_mbps(failing);
    context.target.as_ref().zip(read_mbps).is_some_and(|(target, mbps)| throttle_bound(target, mbps).is_some())
}

/// The devices' read rate over a step, decimal MB/s, where it was watched.
fn device_read_mbps(step: &StreamsStep) -> Option<f64> {
    step.device_read_bytes.filter(|_| step.duration_s > 0.0).map(|b| b as f64 / step.duration_s / 1e6)
}

/// Whether the failing step's devices read at least `SATURATED` of the check's sequential rate: the devices had
/// nothing more to give.
fn read_at_ceiling(failing: &StreamsStep, context: &Context) -> bool {
    device_read_mbps(failing).zip(context.sequential_mbps).is_some_and(|(read, ceiling)| read >= SATURATED * ceiling)
}

/// What the search saw at the count that failed beside the capacity.
fn limited_by(answer: &CapacityAnswer, streams: &StreamsResult, context: &Context) -> Limit {
    let (steps, estimate, max_stalled) =
        (&streams.steps, streams.estimate.as_ref(), streams.target.max_stalled_streams);
    if !answer.measured() {
        return Limit::NotMeasured;
    }
    if answer.at_limit {
        return Limit::NotReached;
    }
    if answer.derived_failing.is_some() {
        return Limit::Derived;
    }
    let Some(failing) = answer.first_failing.and_then(|n| steps.iter().rev().find(|s| s.count == n && !s.meets_target))
    else {
        return Limit::Unknown;
    };
    if failing.errors > 0 {
        return Limit::ReadErrors;
    }
    // Stalls (starting or in playback), buffers that never filled and buffers that drained are the device
    // falling behind; a slow or missing start with none of them is start-up time.
    let stalled = failing.streams_stalled + failing.streams_startup_stalled;
    let drained = failing.buffer_drained_s.zip(failing.buffer_drain_allowed_s).is_some_and(|(d, a)| d > a);
    if stalled <= max_stalled && failing.streams_not_steady == 0 && !drained {
        // Players that start late because the devices already read all they can were stopped by the devices:
        // three quick checks of one btrfs raid1, one library, named start-up time, a throttle and disk
        // throughput for the same edge, where every failing step read the throttled members at their limit.
        let slow = failing.streams_slow_start + failing.streams_not_started;
        return match slow {
            0 => Limit::Unknown,
            _ if throttle_reached(failing, context) => Limit::Throttle,
            _ if read_at_ceiling(failing, context) => Limit::DiskThroughput,
            _ => Limit::StartUp,
        };
    }
    let lag = failing.issue_lag.at(99.0).unwrap_or(0);
    let late = failing.lateness.at(99.0).unwrap_or(0);
    if lag >= CLIENT_LAG_NS && lag >= late / 2 {
        Limit::Client
    } else if context.network {
        Limit::Network
    } else if throttle_reached(failing, context) {
        Limit::Throttle
    } else if estimate.is_some_and(|e| e.iops_bound < SEEK_BOUND * e.bandwidth_bound) {
        Limit::Seeks
    } else {
        Limit::DiskThroughput
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::StreamsResult;

    /// The remux search of a real `check --quick` (tests/fixtures/check-v1.json), as its stream phase recorded it.
    fn remux() -> (Format, StreamsResult) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check-v1.json");
        let result = crate::results::read_result(&path).unwrap();
        let v = result.check.unwrap().verdict.into_iter().find(|v| v.name == "2160p-remux").unwrap();
        let streams = StreamsResult {
            label: v.label.clone(),
            formats: Vec::new(),
            chunk_bytes: 1 << 20,
            delivery: "direct".into(),
            buffer_s: 10.0,
            prebuffer_s: 2.0,
            watch_s: 2.0,
            assignment: "one".into(),
            seek_every_s: None,
            vbr_pct: None,
            own_media: true,
            media_files: 1,
            media_bytes: 0,
            direct: true,
            target: crate::results::QualityTarget { max_stalled_streams: 0, max_startup_s: 2.0, steady_within_s: 0.0 },
            steps: v.steps,
            capacity: Some(v.capacity),
            estimate: v.estimate,
            household: None,
            library: None,
            during: Vec::new(),
            alone: None,
            background: Vec::new(),
            client_cpu_s_per_gb: None,
        };
        (Format::parse("2160p-remux").unwrap(), streams)
    }

    #[test]
    fn a_capacity_below_the_ceiling_leaves_headroom_and_names_the_disk() {
        let (format, streams) = remux();
        let context = Context { sequential_mbps: Some(523.0), ..Context::default() };
        let v = verdict(&format, &streams, &context);
        // 523 MB/s ÷ 10 MB/s per 80 Mbit/s stream = 52.3 streams at 100 %: 33 leave (52.3 − 33) ÷ 52.3 unused.
        assert_eq!((v.streams, v.bandwidth_ceiling), (33, 52));
        assert!((v.headroom_pct.unwrap() - 36.9).abs() < 0.1, "{:?}", v.headroom_pct);
        assert!(!v.beyond_ceiling);
        assert_eq!(v.limited_by, "disk throughput");
    }

    /// Issue 24: "headroom -62 % of 448". A capacity beyond the sequential ceiling is said as such, never as a
    /// negative headroom.
    #[test]
    fn a_capacity_beyond_the_ceiling_has_no_negative_headroom() {
        let (format, streams) = remux();
        let v = verdict(&format, &streams, &Context { sequential_mbps: Some(200.0), ..Context::default() });
        assert_eq!((v.streams, v.bandwidth_ceiling, v.beyond_ceiling, v.headroom_pct), (33, 20, true, None));
        // A few percent above the bound is the two measurements' noise: at the ceiling, nothing left.
        let v = verdict(&format, &streams, &Context { sequential_mbps: Some(310.0), ..Context::default() });
        assert_eq!((v.bandwidth_ceiling, v.beyond_ceiling, v.headroom_pct), (31, false, Some(0.0)));
    }

    /// A quick check of btrfs raid1 said "exceeded: cache-served?" beside "the devices read 4.89 GiB while the
    /// viewers read 4.89 GiB": where a pool's members read what the viewers received at the capacity, the ceiling
    /// understated the disks, and no cache is blamed. One device (a cache beneath it may serve what it counts), a
    /// flagged cache beneath, or a step not judged (no device watched) still is.
    #[test]
    fn a_capacity_beyond_the_ceiling_that_a_pools_members_served_blames_the_ceiling_not_a_cache() {
        let (format, mut streams) = remux();
        let context = Context { sequential_mbps: Some(200.0), pool_members: 4, ..Context::default() };
        for step in streams.steps.iter_mut().filter(|s| s.count == 33) {
            (step.device_read_bytes, step.cache_served) = (Some(step.read_bytes.max(1)), false);
        }
        let v = verdict(&format, &streams, &context);
        assert_eq!((v.beyond_ceiling, v.ceiling_understated, v.headroom_pct), (false, true, None));
        for other in
            [Context { pool_members: 1, ..context.clone() }, Context { cache_beneath: true, ..context.clone() }]
        {
            let v = verdict(&format, &streams, &other);
            assert_eq!((v.beyond_ceiling, v.ceiling_understated), (true, false), "{other:?}");
        }
        streams.steps.iter_mut().filter(|s| s.count == 33).for_each(|s| s.cache_served = true);
        let v = verdict(&format, &streams, &context);
        assert_eq!((v.beyond_ceiling, v.ceiling_understated), (true, false), "a cache-served step");
        streams.steps.iter_mut().filter(|s| s.count == 33).for_each(|s| s.device_read_bytes = None);
        let v = verdict(&format, &streams, &context);
        assert_eq!((v.beyond_ceiling, v.ceiling_understated), (true, false), "not judged");
    }

    #[test]
    fn the_limit_is_named_in_words_a_server_owner_can_use() {
        let (format, mut streams) = remux();
        let context = Context { sequential_mbps: Some(523.0), ..Context::default() };
        let words = |s: &StreamsResult, c: &Context| verdict(&format, s, c).limited_by;
        assert_eq!(words(&streams, &Context { network: true, ..context.clone() }), "the network");
        // A blkio throttle of 40 MiB/s (41.9 MB/s) on the target's device: named where the failing step's reads
        // reached it, not where they stayed clear of it (the device set the rate).
        let mut target: TargetInfo =
            serde_json::from_value(serde_json::json!({"path": "/srv", "kind": "directory", "devices": []})).unwrap();
        target.throttles = vec![crate::results::DeviceThrottle {
            device: "loop0".into(),
            major: 7,
            minor: 0,
            kind: crate::results::ThrottleKind::ReadBps,
            limit: 40 << 20,
            file: "/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device".into(),
        }];
        let throttled = Context { target: Some(target), ..context.clone() };
        let mut reading = |mbps: f64| {
            for s in streams.steps.iter_mut().filter(|s| !s.meets_target) {
                s.device_read_bytes = Some((mbps * 1e6 * s.duration_s) as u64);
            }
            words(&streams, &throttled)
        };
        assert_eq!(reading(41.0), "a throttle");
        assert_eq!(reading(20.0), "disk throughput");
        // Random chunk reads that nearly match sequential ones (a throughput throttle) are not seeks.
        let e = streams.estimate.as_mut().unwrap();
        (e.iops_bound, e.limited_by) = (e.bandwidth_bound * 0.9, "iops".into());
        assert_eq!(words(&streams, &context), "disk throughput");
        streams.estimate.as_mut().unwrap().iops_bound *= 0.5;
        assert_eq!(words(&streams, &context), "seeks");
        let failing = streams.capacity.as_ref().unwrap().first_failing.unwrap();
        let step = streams.steps.iter_mut().rfind(|s| s.count == failing).unwrap();
        (step.streams_stalled, step.streams_slow_start) = (0, 3);
        assert_eq!(words(&streams, &context), "start-up time");
        // Late starts where the devices read all they could are the devices' limit, not start-up's.
        let step = streams.steps.iter_mut().rfind(|s| s.count == failing).unwrap();
        step.device_read_bytes = Some((41.0 * 1e6 * step.duration_s) as u64);
        assert_eq!(words(&streams, &throttled), "a throttle");
        assert_eq!(words(&streams, &Context { sequential_mbps: Some(44.0), ..context.clone() }), "disk throughput");
        assert_eq!(words(&streams, &context), "start-up time", "41 MB/s of a 523 MB/s disk");
        // `--quick`'s later formats: no failing step was run, so none names the limit.
        let capacity = streams.capacity.as_mut().unwrap();
        (capacity.first_failing, capacity.derived_failing) = (None, Some(failing));
        assert_eq!(words(&streams, &context), "— (edge derived)");
        streams.capacity.as_mut().unwrap().at_limit = true;
        assert_eq!(words(&streams, &context), "not reached (search limit)");
    }

    #[test]
    fn an_unmeasured_format_says_so_and_never_zero_streams_sustained() {
        let (format, mut streams) = remux();
        let context = Context { sequential_mbps: Some(523.0), ..Context::default() };
        let v = not_run(&format, &context);
        assert_eq!((v.limited_by.as_str(), v.headroom_pct), ("not measured", None));
        assert!(v.capacity.words.starts_with("2160p remux (80 Mbit/s): not measured"), "{}", v.capacity.words);
        streams.capacity = None;
        let v = verdict(&format, &streams, &context);
        assert!(!v.capacity.measured() && v.limited_by == "not measured", "{v:?}");
        assert!(v.capacity.words.contains("had passed"), "{}", v.capacity.words);
        assert!(!v.capacity.words.contains("2160p-remux"), "no internal id: {}", v.capacity.words);
    }
}
