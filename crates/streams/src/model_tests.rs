//! Unit tests of the stream model (`model.rs`), in a file of their own so that it stays under 500 lines.

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Chunks of 1 s of media, a 4 s buffer, a 2 s prebuffer.
fn config() -> PlayerConfig {
    PlayerConfig {
        chunk_media: ms(1000),
        buffer: ms(4000),
        prebuffer: ms(2000),
        rebuffer: ms(2000),
        steady_ahead: None,
        vbr: None,
    }
}

/// Fetches the next chunk at `issue` and lets it arrive at `arrive`; returns its lateness.
fn fetch(player: &mut Player, issue: Duration, arrive: Duration) -> Arrival {
    let want = player.want(issue).expect("a chunk is wanted");
    player.issued(want);
    player.arrived(arrive, 100)
}

#[test]
fn playback_starts_once_the_prebuffer_is_in() {
    let mut p = Player::new(config(), ms(0), 0);
    fetch(&mut p, ms(0), ms(10));
    assert!(!p.is_playing(), "1 s of 2 s prebuffer");
    fetch(&mut p, ms(10), ms(20));
    assert!(p.is_playing());
    let stats = p.finish(ms(1020));
    assert_eq!(stats.startup, Some(ms(20)));
    assert_eq!(stats.watched, ms(1000));
    assert_eq!(stats.stalls, 0);
}

#[test]
fn a_full_buffer_makes_the_next_chunk_due_when_there_is_room() {
    let mut p = Player::new(config(), ms(0), 0);
    for t in 0..4 {
        fetch(&mut p, ms(t), ms(t + 1));
    }
    // Playing since 2 ms at media 0; 4 s buffered; room for chunk 4 when the playhead passes 1 s.
    let want = p.want(ms(4)).unwrap();
    assert_eq!(want, ChunkWant { chunk: 4, due: ms(1002) });
    p.issued(want);
    let arrival = p.arrived(ms(1052), 100);
    assert_eq!(arrival.lateness, ms(50));
    assert!(arrival.used);
}

#[test]
fn an_empty_buffer_stalls_at_the_exact_instant_and_resumes_after_the_prebuffer() {
    let mut p = Player::new(config(), ms(0), 0);
    fetch(&mut p, ms(0), ms(0));
    fetch(&mut p, ms(0), ms(0)); // playing at 0 with 2 s of media
    // The next chunk takes 5 s: the playhead runs out at 2 s.
    fetch(&mut p, ms(0), ms(5000));
    assert!(!p.is_playing(), "1 s in, 2 s prebuffer needed");
    fetch(&mut p, ms(5000), ms(6000));
    assert!(p.is_playing());
    let stats = p.finish(ms(7000));
    // The buffer (4 s) was never full: the player was still starting up, so this is a start-up stall.
    assert_eq!((stats.steady, stats.stalls, stats.first_stall), (None, 0, None));
    assert_eq!(stats.startup_stalls, 1);
    assert_eq!(stats.startup_stalled, ms(4000), "from 2 s to 6 s");
    assert_eq!(stats.watched, ms(7000));
    assert_eq!(stats.present, ms(7000));
}

#[test]
fn the_buffer_full_once_is_steady_state_and_a_stall_after_it_is_a_playback_stall() {
    let mut p = Player::new(config(), ms(100), 0);
    for t in [100, 110, 120] {
        fetch(&mut p, ms(t), ms(t + 10));
        assert!(!p.is_steady(), "3 s of a 4 s buffer: room for one more chunk");
    }
    fetch(&mut p, ms(130), ms(140));
    assert!(p.is_steady(), "4 s in: the next chunk has to wait for room");
    // Room for chunk 4 once the playhead passes 1 s (at 1.12 s); it arrives at 6.12 s. The playhead, playing
    // since 0.12 s, runs out of media at 4.12 s: a playback stall, until 2 s are in again.
    fetch(&mut p, ms(1120), ms(6120));
    fetch(&mut p, ms(6120), ms(6620));
    assert!(p.is_playing());
    let stats = p.finish(ms(8000));
    assert_eq!(stats.steady, Some(ms(40)), "from its arrival at 100 ms to the 4th chunk at 140 ms");
    assert_eq!((stats.stalls, stats.stalled, stats.startup_stalls), (1, ms(2500), 0));
    assert_eq!(stats.first_stall, Some(ms(4020)), "4.12 s, 4.02 s after its arrival");
    assert_eq!(stats.arrived, ms(100));
}

#[test]
fn a_prebuffer_as_large_as_the_buffer_is_steady_as_it_starts() {
    let c = PlayerConfig { prebuffer: ms(4000), ..config() };
    let mut p = Player::new(c, ms(0), 0);
    for t in 0..4 {
        fetch(&mut p, ms(t), ms(t + 1));
    }
    let stats = p.finish(ms(10));
    assert_eq!((stats.startup, stats.steady), (Some(ms(4)), Some(ms(4))));
}

#[test]
fn a_stall_still_going_at_the_end_counts_up_to_the_end() {
    let mut p = Player::new(config(), ms(0), 0);
    fetch(&mut p, ms(0), ms(0));
    fetch(&mut p, ms(0), ms(0));
    let want = p.want(ms(0)).unwrap();
    p.issued(want); // never arrives
    let stats = p.finish(ms(3000));
    assert_eq!((stats.startup_stalls, stats.startup_stalled), (1, ms(1000)));
}

#[test]
fn a_late_chunk_is_late_from_when_the_buffer_had_room() {
    let mut p = Player::new(config(), ms(0), 0);
    for _ in 0..4 {
        fetch(&mut p, ms(0), ms(0));
    }
    // Room for chunk 4 at 1 s; it arrives at 1.5 s: 500 ms late, no stall (3.5 s still buffered).
    let want = p.want(ms(0)).unwrap();
    p.issued(want);
    assert_eq!(p.arrived(ms(1500), 100).lateness, ms(500));
    // Chunk 5 had room at 2 s; asked at 2.2 s (the driver lagged) and arriving at 2.3 s: 300 ms late.
    let want = p.want(ms(1500)).unwrap();
    assert_eq!(want.due, ms(2000));
    p.issued(want);
    assert_eq!(p.arrived(ms(2300), 100).lateness, ms(300));
    assert_eq!(p.finish(ms(2300)).stalls, 0);
}

#[test]
fn a_seek_throws_away_the_chunk_in_flight_and_refills() {
    let mut p = Player::new(config(), ms(0), 0);
    fetch(&mut p, ms(0), ms(0));
    fetch(&mut p, ms(0), ms(0));
    let want = p.want(ms(0)).unwrap();
    p.issued(want);
    p.seek(ms(500), 100);
    assert!(!p.arrived(ms(600), 100).used);
    let want = p.want(ms(600)).unwrap();
    assert_eq!(want, ChunkWant { chunk: 100, due: ms(600) });
    p.issued(want);
    p.arrived(ms(700), 100);
    fetch(&mut p, ms(700), ms(800));
    assert!(p.is_playing());
    let stats = p.finish(ms(1800));
    assert_eq!((stats.seeks, stats.seek_wait, stats.stalls), (1, ms(300), 0));
    assert_eq!((stats.chunks, stats.wasted_chunks, stats.bytes), (4, 1, 400));
}

#[test]
fn a_stream_that_never_starts_has_no_startup_and_no_watch_time() {
    let mut p = Player::new(config(), ms(100), 0);
    let stats = p.finish(ms(5000));
    assert_eq!((stats.startup, stats.steady, stats.watched), (None, None, Duration::ZERO));
    assert_eq!((stats.stalls, stats.startup_stalls, stats.present), (0, 0, ms(4900)), "never started, not stalled");
    let mut late = Player::new(config(), ms(6000), 0);
    assert_eq!(late.finish(ms(5000)).present, Duration::ZERO, "the step ended before it arrived");
}

#[test]
fn a_chunk_longer_than_the_buffer_still_fits_one() {
    let c = PlayerConfig {
        chunk_media: ms(8000),
        buffer: ms(4000),
        prebuffer: ms(9000),
        rebuffer: ms(9000),
        steady_ahead: None,
        vbr: None,
    }
    .normalized();
    assert_eq!((c.buffer, c.prebuffer), (ms(8000), ms(8000)));
    let vbr = Some(Vbr { swing: 0.5, chunks_per_gop: 1, seed: 1 });
    let c = PlayerConfig {
        chunk_media: ms(1000),
        buffer: ms(1000),
        prebuffer: ms(500),
        rebuffer: ms(500),
        steady_ahead: None,
        vbr,
    }
    .normalized();
    assert_eq!(c.buffer, ms(2000), "the longest chunk, at half the mean bitrate, covers 2 s");
}

#[test]
fn vbr_factors_stay_within_the_swing_are_shared_per_gop_and_average_out() {
    let v = Vbr { swing: 0.3, chunks_per_gop: 4, seed: 42 };
    let factors: Vec<f64> = (0..4000).map(|k| v.factor(k)).collect();
    assert!(factors.iter().all(|f| (0.7..=1.3).contains(f)));
    assert!(factors.chunks(4).all(|gop| gop.iter().all(|&f| f == gop[0])), "one bitrate per GOP");
    let mean = factors.iter().step_by(4).sum::<f64>() / 1000.0;
    assert!((mean - 1.0).abs() < 0.03, "mean GOP bitrate {mean}");
    assert!(factors.iter().any(|&f| f > 1.2) && factors.iter().any(|&f| f < 0.8), "bursts both ways");
    assert_eq!(Vbr { seed: 42, ..v }.factor(17), v.factor(17), "deterministic per seed");
    assert_ne!(Vbr { seed: 43, ..v }.factor(17), v.factor(17));
}

/// Plays chunks fetched instantly whenever due; returns (due times, stats at `end`).
fn play_instantly(config: PlayerConfig, end: Duration) -> (Vec<Duration>, StreamStats) {
    let mut p = Player::new(config, ms(0), 0);
    let mut dues = Vec::new();
    while let Some(want) = p.want(ms(0)) {
        if want.due >= end {
            break;
        }
        dues.push(want.due);
        p.issued(want);
        p.arrived(want.due, 100);
    }
    (dues, p.finish(end))
}

#[test]
fn uneven_chunks_come_due_as_their_media_is_played() {
    let vbr = Vbr { swing: 0.3, chunks_per_gop: 2, seed: 9 };
    let c = PlayerConfig { vbr: Some(vbr), ..config() }.normalized();
    let (dues, stats) = play_instantly(c, ms(60_000));
    assert_eq!(stats.stalls, 0, "chunks that arrive when due never stall");
    // Once the 4 s buffer is full, chunk k is due when the playhead passes end(k−1) + media(k) − buffer, so
    // the gap between two due times is the media of chunk k itself, not the nominal 1 s.
    for k in 8..dues.len() {
        let gap = dues[k] - dues[k - 1];
        assert!(gap.abs_diff(c.media_of(k as u64)) < Duration::from_micros(1), "chunk {k}: gap {gap:?}");
    }
    assert!((8..dues.len()).any(|k| c.media_of(k as u64) < ms(800)), "some GOP ran above 1.25 × the mean");
    let constant = play_instantly(config(), ms(60_000)).0;
    assert_ne!(dues.len(), constant.len(), "bursts change how many chunks a minute needs");
}

#[test]
fn a_burst_drains_the_buffer_faster_and_stalls_where_constant_bitrate_would_not() {
    // Every chunk arrives 0.95 s after it is asked for: fine at 1 s of media per chunk, a stall when chunks
    // cover less (a GOP above the mean bitrate). The buffer never fills, so these are start-up stalls.
    let slow = |config: PlayerConfig| {
        let mut p = Player::new(config, ms(0), 0);
        let mut now = ms(0);
        for _ in 0..40 {
            let want = p.want(now).unwrap();
            let issue = want.due.max(now);
            p.issued(want);
            now = issue + ms(950);
            p.arrived(now, 100);
        }
        let stats = p.finish(now);
        stats.stalls + stats.startup_stalls
    };
    assert_eq!(slow(config()), 0);
    // A seed whose first GOP (1000 chunks: the whole test) runs above 1.15 × the mean.
    let burst = Vbr { swing: 0.3, chunks_per_gop: 1000, seed: 0 };
    let vbr = (0..1000).map(|s| Vbr { seed: s, ..burst }).find(|v| v.factor(0) > 1.15).unwrap();
    assert!(slow(PlayerConfig { vbr: Some(vbr), ..config() }) > 0);
}

/// Media3's thresholds: 1 s to start (and after a seek), 2 s after a stall; chunks of 0.5 s, a 10 s buffer
/// steady 2 s past the start.
fn media3_like() -> PlayerConfig {
    let ahead = Some(STEADY_AHEAD);
    PlayerConfig {
        chunk_media: ms(500),
        buffer: ms(10_000),
        prebuffer: ms(1000),
        rebuffer: ms(2000),
        steady_ahead: ahead,
        vbr: None,
    }
}

#[test]
fn after_a_stall_playback_resumes_on_the_rebuffer_threshold_and_after_a_seek_on_the_start_threshold() {
    let mut p = Player::new(media3_like(), ms(0), 0);
    fetch(&mut p, ms(0), ms(0));
    fetch(&mut p, ms(0), ms(0));
    assert!(p.is_playing(), "1 s in: playing");
    // The next chunk takes 3 s: the playhead runs dry at 1 s, a stall.
    fetch(&mut p, ms(0), ms(3000));
    fetch(&mut p, ms(3000), ms(3100));
    fetch(&mut p, ms(3100), ms(3200));
    assert!(!p.is_playing(), "1.5 s in after a stall: the start threshold would resume, the rebuffer waits");
    fetch(&mut p, ms(3200), ms(3300));
    assert!(p.is_playing(), "2 s in: resumes");
    let stats = p.finish(ms(3300));
    assert_eq!(stats.startup_stalled, ms(2300), "from 1 s to 3.3 s");
    // A seek resumes on the start threshold: two chunks of 0.5 s.
    let mut p = Player::new(media3_like(), ms(0), 0);
    fetch(&mut p, ms(0), ms(0));
    fetch(&mut p, ms(0), ms(0));
    p.seek(ms(100), 50);
    fetch(&mut p, ms(100), ms(200));
    fetch(&mut p, ms(200), ms(300));
    assert!(p.is_playing(), "1 s in after a seek: resumes");
    assert_eq!(p.finish(ms(300)).seek_wait, ms(200));
}

#[test]
fn a_long_buffer_is_steady_two_seconds_past_its_start_and_a_short_one_when_full() {
    assert_eq!(media3_like().steady_level(), ms(3000), "1 s to start + 2 s, in a 10 s buffer");
    assert_eq!(config().steady_level(), ms(4000), "the generic viewer: its buffer full");
    assert_eq!(PlayerConfig { buffer: ms(10_000), ..config() }.steady_level(), ms(10_000), "however long");
    let mut p = Player::new(media3_like(), ms(0), 0);
    // Chunks arrive every 10 ms, playing from the 2nd (20 ms): at 50 ms 2.5 s is in, 0.03 s played, and the
    // next chunk still fits under 3 s; at 60 ms 3 s is in, 0.04 s played, and the next would pass it.
    let mut t = 0;
    while !p.is_steady() {
        fetch(&mut p, ms(t), ms(t + 10));
        t += 10;
    }
    assert_eq!(p.steady(), Some(ms(60)));
    assert!(p.buffered_at(ms(60)) < media3_like().buffer, "steady with room left in its buffer");
}
