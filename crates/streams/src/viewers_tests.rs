//! Unit tests of the viewer scheduler (`viewers.rs`) with its step judge, against made-up devices and a manual
//! clock: a device is a single server that serves reads in the order they are issued at a fixed byte rate, as a
//! bandwidth-throttled disk does.

use super::*;
use crate::streams::judge::Judging;
use crate::streams::model::PlayerConfig;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A viewer of 1 s chunks (4 KiB each), a 4 s buffer and a 2 s prebuffer, arriving at `start_ms`.
fn plan(start_ms: u64) -> ViewerPlan {
    ViewerPlan {
        start: ms(start_ms),
        file: 0,
        first_chunk: 0,
        chunk_bytes: 4096,
        player: PlayerConfig {
            chunk_media: s(1),
            buffer: s(4),
            prebuffer: s(2),
            rebuffer: s(2),
            steady_ahead: None,
            vbr: None,
        },
        seek_every: None,
        seed: 1,
    }
}

fn new_judge(viewers: usize, fail_fast: bool) -> Arc<StepJudge> {
    let judging = Judging { steady_within: s(10), judged: s(10), fail_fast, max_startup: s(2) };
    Arc::new(StepJudge::new(viewers as u32, judging))
}

fn scheduler(plans: &[ViewerPlan], judge: &Arc<StepJudge>) -> Viewers {
    let share: Vec<usize> = (0..plans.len()).collect();
    Viewers::new(plans, &share, &[1 << 30], &mut |_, _| 0, judge.clone())
}

/// Runs the scheduler against a device that serves each read in `service`, one at a time in issue order;
/// returns (reads, end).
fn serve(viewers: &mut Viewers, service: impl Fn(&Chunk) -> Duration) -> (u32, Duration) {
    let (mut now, mut reads) = (Duration::ZERO, 0);
    loop {
        match viewers.next(now) {
            ViewerNext::Chunk(c) => {
                assert!(c.due <= now, "a chunk is issued only once due");
                now += service(&c);
                viewers.arrived(c.viewer, Ok(c.len), now);
                reads += 1;
            }
            ViewerNext::At(t) => now = now.max(t),
            ViewerNext::Done => return (reads, now),
        }
    }
}

#[test]
fn a_fast_device_is_judged_for_the_stated_playback_once_the_last_buffer_is_full() {
    let plans = [plan(0), plan(500)];
    let judge = new_judge(2, false);
    let mut viewers = scheduler(&plans, &judge);
    let (reads, end) = serve(&mut viewers, |_| ms(1));
    viewers.finish(end);
    // The second viewer's buffer is full after its 4th chunk, 4 ms after it arrived at 500 ms.
    assert_eq!(judge.judged_from(), Some(ms(504)));
    assert_eq!(judge.end(), Some(ms(10_504)));
    assert_eq!(end, ms(10_504));
    // About 10 s of media each, plus the buffer ahead.
    assert!((20..=34).contains(&reads), "{reads}");
    for (_, stats) in viewers.stats() {
        assert_eq!((stats.stalls, stats.startup_stalls), (0, 0));
        assert_eq!(stats.steady, Some(ms(4)));
        assert!(stats.startup.is_some_and(|s| s < ms(10)));
    }
}

#[test]
fn a_device_too_slow_to_fill_the_buffers_gives_up_on_each_viewer_at_its_bound() {
    // Three viewers need three chunks a second; a device serving one every 600 ms cannot keep up.
    let plans = [plan(0), plan(0), plan(0)];
    let judge = new_judge(3, false);
    let mut viewers = scheduler(&plans, &judge);
    let (_, end) = serve(&mut viewers, |_| ms(600));
    viewers.finish(end);
    assert_eq!(judge.judged_from(), None);
    assert_eq!(judge.end(), Some(s(10)), "a fixed count runs until each viewer's bound passed");
    assert!(viewers.stats().all(|(_, s)| s.steady.is_none() && s.present == Duration::from_secs(10)));
}

#[test]
fn a_search_step_ends_at_its_first_failure_and_a_failed_read_ends_a_watch() {
    // Four viewers arriving at once on a device serving one chunk every 700 ms: the fourth cannot have its 2 s
    // of prebuffer within 2 s, and a search step stops right there.
    let plans = [plan(0), plan(0), plan(0), plan(0)];
    let judge = new_judge(4, true);
    let mut viewers = scheduler(&plans, &judge);
    let (_, end) = serve(&mut viewers, |_| ms(700));
    viewers.finish(end);
    assert_eq!(judge.cut(), Some(s(2)));
    assert_eq!(judge.end(), Some(s(2)));
    assert!(viewers.stats().any(|(_, s)| s.startup.is_none() && s.present == Duration::from_secs(2)));

    let judge = new_judge(1, false);
    let mut viewers = scheduler(&plans[..1], &judge);
    let ViewerNext::Chunk(c) = viewers.next(Duration::ZERO) else { panic!("the first chunk is due at once") };
    assert!(!viewers.arrived(c.viewer, Err(libc::EIO), ms(1)));
    assert_eq!(viewers.next(ms(2)), ViewerNext::Done);
    assert_eq!(judge.end(), Some(ms(1)), "the only viewer gave up: the step is over");
}

#[test]
fn viewers_a_step_ends_before_never_arrive() {
    let plans = [plan(0), plan(30_000)];
    let judge = new_judge(2, true);
    let mut viewers = scheduler(&plans, &judge);
    // The first viewer's reads fail: a search step fails there, before the second viewer arrives.
    let ViewerNext::Chunk(c) = viewers.next(Duration::ZERO) else { panic!("due at once") };
    viewers.arrived(c.viewer, Err(libc::EIO), ms(5));
    assert_eq!(viewers.next(ms(6)), ViewerNext::Done);
    let late = viewers.stats().find(|(global, _)| *global == 1).map(|(_, s)| s.clone()).unwrap();
    assert_eq!((late.present, late.bytes, late.startup), (Duration::ZERO, 0, None));
}

/// A step of `count` viewers of `config` on a device of `bytes_per_sec` (one server, reads in issue order), run
/// as a search runs it (ending at its first failure); whether it met the target, and the step's figures.
fn simulated_step(config: &StreamsConfig, count: u32, bytes_per_sec: f64) -> (bool, StepOutcome) {
    simulated_step_on(config, count, |c| Duration::from_secs_f64(f64::from(c.len) / bytes_per_sec))
}

/// A step as a search runs it, on a device that serves a read in `service(read)`.
fn simulated_step_on(config: &StreamsConfig, count: u32, service: impl Fn(&Chunk) -> Duration) -> (bool, StepOutcome) {
    let plans = config.viewers(count, 0, &mut |_| 0);
    let judging = config.judging(true, s(2));
    let judge = Arc::new(StepJudge::new(count, judging));
    let share: Vec<usize> = (0..plans.len()).collect();
    let size = config.media_bytes(0);
    let mut viewers = Viewers::new(&plans, &share, &[size], &mut |_, _| 0, judge.clone());
    let (_, end) = serve(&mut viewers, service);
    viewers.finish(end);
    let mut streams = vec![StreamStats::default(); plans.len()];
    viewers.stats().for_each(|(i, s)| streams[i] = s.clone());
    let outcome = StepOutcome {
        count,
        streams,
        lateness: crate::metrics::Histogram::new(),
        issue_lag: crate::metrics::Histogram::new(),
        read_bytes: 0,
        errors: 0,
        first_error: None,
        elapsed: judge.end().unwrap_or(end),
        arrival: config.arrival_for(count),
        judging,
        steady_at: judge.judged_from(),
        cut: judge.cut(),
        interrupted: false,
        engine: "null",
        ingest: None,
        background: Vec::new(),
        clients: Vec::new(),
    };
    (outcome.meets(0, s(2)), outcome)
}

use crate::streams::{StepOutcome, StreamsConfig};

/// The check's default settings for one format (`app/check/profile.rs`): 1 MiB chunks, a buffer of the 2 s
/// prebuffer and two chunks, arrivals over at most 4 s, steady state within 10 s, 5 s judged.
fn check_config(format: &str) -> StreamsConfig {
    let mut config = StreamsConfig {
        mix: format!("{format}:1").parse().unwrap(),
        chunk: crate::spec::ChunkSize::Bytes(1 << 20),
        delivery: Default::default(),
        buffer: s(4),
        prebuffer: s(2),
        rebuffer: None,
        steady_ahead: None,
        watch: s(5),
        ramp: Some(s(4)),
        steady_within: s(10),
        seek_every: None,
        assignment: crate::spec::Assignment::One,
        titles: None,
        media_length: s(30),
        seed: crate::streams::defaults::SEED,
        vbr: None,
    };
    let chunk_media = config.chunk_bytes(0) as f64 / config.mix.0[0].0.bitrate.byte_rate().bytes_per_sec();
    config.buffer = config.prebuffer + Duration::from_secs_f64(2.0 * chunk_media);
    config
}

/// Regression guard of the judgement's calibration: on a device limited to 40 MiB/s the old 3 s stampede
/// found 39 × 1080p, 13 × 2160p HEVC and 4 × 2160p remux against bounds of 41.9, 13.4 and 4.19. An audience
/// judged at steady state must find the same edge on a smooth device: every count up to just below the bound
/// passes, none above it (a buffer too long to fill near the bound, or arrivals too bunched, would fail 4 ×
/// remux; a buffer that is full as soon as playback starts would pass 44 × 1080p).
#[test]
fn on_a_device_limited_to_40_mib_per_s_the_edge_lies_just_below_the_bandwidth_bound() {
    let rate = 40.0 * 1048576.0;
    for (format, expected) in [("1080p", 38..=41), ("2160p-hevc", 12..=13), ("2160p-remux", 4..=4)] {
        let config = check_config(format);
        let bound = rate / config.mix.0[0].0.bitrate.byte_rate().bytes_per_sec();
        let passing: Vec<u32> = (1..=bound as u32 + 3).filter(|&n| simulated_step(&config, n, rate).0).collect();
        let edge = passing.iter().copied().max().unwrap_or(0);
        assert!(expected.contains(&edge), "{format}: edge {edge} against a bound of {bound:.2}: {passing:?}");
        assert_eq!(passing, (1..=edge).collect::<Vec<_>>(), "{format}: every count up to the edge passes");
        // Far above the bound, a search step fails within a few seconds: start-up gives it away.
        let (ok, far) = simulated_step(&config, (bound * 2.0) as u32, rate);
        assert!(!ok && far.cut.is_some_and(|c| c < s(6)), "{format}: {:?}", far.cut);
    }
}

/// A count 30 % above the bandwidth, run as a fixed count: the first viewers fill their buffers while the
/// audience is small, then stall during playback once everyone is in; the last never fill theirs. The old
/// step (starts within 1 s, 3 s watched) ended at 4 s, before the first playback stall.
#[test]
fn above_the_bandwidth_the_first_viewers_stall_during_playback_after_their_buffer_was_full() {
    let rate = 40.0 * 1048576.0;
    let config = StreamsConfig { steady_within: s(30), watch: s(10), ..check_config("1080p") };
    let plans = config.viewers(55, 0, &mut |_| 0);
    let judge = Arc::new(StepJudge::new(55, config.judging(false, s(2))));
    let share: Vec<usize> = (0..55).collect();
    let mut viewers = Viewers::new(&plans, &share, &[config.media_bytes(0)], &mut |_, _| 0, judge.clone());
    let (_, end) = serve(&mut viewers, |c| Duration::from_secs_f64(f64::from(c.len) / rate));
    viewers.finish(end);
    let stats: Vec<StreamStats> = viewers.stats().map(|(_, s)| s.clone()).collect();
    let stalled: Vec<&StreamStats> = stats.iter().filter(|s| s.stalls > 0).collect();
    assert!(!stalled.is_empty(), "playback stalls after steady state");
    assert!(stalled.iter().all(|s| s.steady.is_some() && s.first_stall.is_some_and(|f| f > s.steady.unwrap())));
    let first = stalled.iter().map(|s| s.arrived + s.first_stall.unwrap()).min().unwrap();
    assert!(first > s(4), "the first playback stall at {first:?}, after the old 3 s step had ended");
    assert!(stats.iter().any(|s| s.steady.is_none()), "the last viewers never fill their buffers");
    assert_eq!(judge.judged_from(), None);
}

/// A step as a search runs it on a device that serves its first `burst` bytes at `fast` bytes/s (a cache, a
/// drive's burst) and the rest at `bytes_per_sec`.
fn simulated_burst_step(
    config: &StreamsConfig,
    count: u32,
    burst: u64,
    fast: f64,
    bytes_per_sec: f64,
) -> (bool, StepOutcome) {
    let served = std::cell::Cell::new(0u64);
    let device = |c: &Chunk| {
        let rate = if served.get() < burst { fast } else { bytes_per_sec };
        served.set(served.get() + u64::from(c.len));
        Duration::from_secs_f64(f64::from(c.len) / rate)
    };
    simulated_step_on(config, count, device)
}

/// A remux chunk of 1 MiB is 0.1 s of media in a buffer of 2.2 s. Four viewers that start on a fast burst and
/// then play from a device that carries 3.5 of them drain their buffers by about 12 % of the judged playback
/// without one stall in the window: the step fails on its buffers. The same four on a device that carries 4.2
/// after the burst hold them and pass.
#[test]
fn buffers_that_drain_through_the_judged_playback_fail_the_step_before_any_stall() {
    let config = StreamsConfig { watch: s(8), ..check_config("2160p-remux") };
    let one = config.mix.0[0].0.bitrate.byte_rate().bytes_per_sec();
    let burst = (4.0 * 3.0 * one) as u64;
    let (ok, short) = simulated_burst_step(&config, 4, burst, 8.0 * one, 3.5 * one);
    let drain = short.buffer_drain().expect("every viewer followed through the window");
    assert_eq!((short.stalled(), drain.viewers, short.cut), (0, 4, None), "{drain:?}");
    assert!(!ok && !drain.holds() && drain.per_viewer_s() > 0.5, "{drain:?}");
    let (ok, enough) = simulated_burst_step(&config, 4, burst, 8.0 * one, 4.2 * one);
    let drain = enough.buffer_drain().expect("followed");
    assert!(ok && drain.holds() && drain.per_viewer_s() < 0.2, "{drain:?}");
}

/// Media3 at 2160p (25 Mbit/s): 64 KiB requests, 1 s to start, 2 s after a stall, a 41.9 s buffer (its
/// 131 MB cap), judged 10 s, steady within the default 30 s.
fn media3_2160p() -> StreamsConfig {
    let profile = crate::streams::players::find("media3").expect("a profile");
    let mut config = StreamsConfig { watch: s(10), ramp: Some(s(8)), steady_within: s(30), ..check_config("2160p") };
    let bps = config.mix.0[0].0.bitrate.byte_rate().bytes_per_sec() * 8.0;
    config.chunk = crate::spec::ChunkSize::Bytes(profile.request_bytes);
    config.buffer = profile.buffer_at(bps as u64);
    config.prebuffer = profile.start();
    config.rebuffer = Some(profile.rebuffer());
    config.steady_ahead = Some(crate::streams::model::STEADY_AHEAD);
    config
}

/// A long buffer near capacity: eight Media3 viewers at 2160p on a device that carries 8 / 0.93 of them pass
/// (each reached steady state 2 s past its start, long before its 41.9 s buffer could fill, and the buffers
/// held over the judged playback); the same eight on a device that carries 7.6 of them fail. Before this
/// rule a viewer was steady only once its whole buffer was full: 41 s of media gained at 0.075 s a second.
#[test]
fn media3_at_2160p_near_capacity_passes_where_the_device_keeps_up_and_fails_where_it_falls_behind() {
    let config = media3_2160p();
    assert!((config.buffer.as_secs_f64() - 41.94).abs() < 0.01, "{:?}", config.buffer);
    let one = config.mix.0[0].0.bitrate.byte_rate().bytes_per_sec();
    let (ok, keeps_up) = simulated_step(&config, 8, 8.0 / 0.93 * one);
    let drain = keeps_up.buffer_drain().expect("every viewer followed through the window");
    assert!(ok && drain.holds() && keeps_up.stalled() == 0, "{drain:?} cut {:?}", keeps_up.cut);
    let steady: Vec<Duration> = keeps_up.streams.iter().filter_map(|s| s.steady).collect();
    assert_eq!(steady.len(), 8);
    assert!(steady.iter().all(|&t| t < s(30)), "{steady:?}");
    let judged: Vec<Duration> = keeps_up.streams.iter().filter_map(|v| v.judged_buffer.map(|b| b.start)).collect();
    assert!(judged.len() == 8 && judged.iter().all(|&b| b < config.buffer / 2), "far from full: {judged:?}");
    let whole = StreamsConfig { steady_ahead: None, ..config.clone() };
    assert!(!simulated_step(&whole, 8, 8.0 / 0.93 * one).0, "steady only when full: the bound is missed");
    let (ok, behind) = simulated_step(&config, 8, 7.6 * one);
    assert!(!ok, "a device 5 % short of the audience fails: {:?} cut {:?}", behind.buffer_drain(), behind.cut);
}

/// A title of segments (a playlist resolved): each request is segment after segment of it, with the segment's
/// own offset and bytes, and the player takes the title's mean segment as its media per request.
#[test]
fn a_segmented_title_is_asked_segment_after_segment_with_each_ones_bytes() {
    use crate::streams::segmented::{SegmentSource, SegmentedTitle, TitleSegment};
    let lens = [8192u64, 4096, 12288];
    let title = SegmentedTitle {
        playlist: "/m/i.m3u8".into(),
        segments: lens
            .iter()
            .enumerate()
            .map(|(i, &len)| TitleSegment { source: i as u32, offset: 0, len, ranged: false, media: s(2) })
            .collect(),
        sources: (0..3).map(|i| SegmentSource::File(format!("/m/{i}.ts").into())).collect(),
        segment_count: 3,
        segment_s: 2.0,
        bytes: lens.iter().sum(),
    };
    let judge = new_judge(1, false);
    let plans = [plan(0)];
    let segmented = [Some(Arc::new(title))];
    let mut viewers = Viewers::with_segments(&plans, &[0], (&[0], &segmented), &mut |_, _| 7, judge.clone());
    let mut asked = Vec::new();
    let (mut now, mut left) = (Duration::ZERO, 7);
    while left > 0 {
        match viewers.next(now) {
            ViewerNext::Chunk(c) => {
                asked.push((c.segment, c.len, c.file));
                now += ms(10);
                assert!(viewers.arrived(c.viewer, Ok(c.len), now));
                left -= 1;
            }
            ViewerNext::At(t) => now = now.max(t),
            ViewerNext::Done => break,
        }
    }
    let segments: Vec<_> = asked.iter().map(|(s, ..)| s.unwrap()).collect();
    // A 4 s buffer of 2 s segments, then one a 2 s for the 10 s judged: 7 requests.
    assert_eq!(segments, [0, 1, 2, 0, 1, 2, 0], "in order, wrapping at the end");
    assert!(asked.iter().all(|&(s, len, file)| u64::from(len) == lens[s.unwrap() as usize] && file == 7));
    viewers.finish(now);
    let stats = viewers.stats().next().unwrap().1;
    assert_eq!(stats.chunks, 7);
    assert_eq!(stats.bytes, 2 * (8192 + 4096 + 12288) + 8192);
}
