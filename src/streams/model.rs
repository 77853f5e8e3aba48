//! The player model: one viewer's buffer, driven by explicit instants, so tests run it with a manual clock.
//!
//! A player fetches chunks of the media timeline one at a time (as real players do over one connection), keeps
//! up to `buffer` of media ahead of the playhead, starts playing once `prebuffer` of media is in, and plays in
//! real time. It owns no clock, does no I/O and knows nothing of files: the driver asks it which chunk is due
//! and when, issues the read, and reports the completion with the instant it saw it.
//!
//! Times are offsets from one origin shared by every stream of a run (`Duration`, "since the run's start").
//! Nothing here needs to be ticked: a stall is found when the next event comes, from the straight-line motion of
//! the playhead, at the exact instant the playhead reached the end of the buffered media.
//!
//! Due times (why lateness is honest): with one chunk in flight per viewer, chunk k is due when the player
//! both wants it and can ask for it: the later of the instant the buffer has room for it (the playhead passes
//! k·c + c − buffer, for chunks of c seconds of media; this follows from the playhead alone) and the arrival of
//! chunk k−1. While buffering (start, stall, seek) the player wants media at once. Lateness is completion minus
//! due, so a device that falls behind shows as late chunks and, once the buffer runs dry, as stalls; the
//! schedule never slides to hide it. How long the driver itself took to issue a due chunk is measured apart.
//!
//! Variable bitrate ([`Vbr`]): chunks hold the same bytes, so when a group of pictures (GOP) is encoded above
//! the mean bitrate its chunks cover less media, and the player needs them sooner. Chunk k covers
//! c ÷ f(GOP of k) of media, where f, the GOP's bitrate over the mean, is uniform in [1 − x, 1 + x] and a pure
//! function of the seed and the GOP (the same media bursts at the same places for every viewer). Only media
//! differences matter to the model (buffered end − playhead), so positions after a start or a seek keep the
//! nominal c·k and the durations of the chunks fetched are added from there.

use std::time::Duration;

/// How a viewer's player behaves. Built by the driver from the user's flags (defaults live in `defaults`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerConfig {
    /// Media time one chunk covers (chunk bytes ÷ stream byte rate).
    pub chunk_media: Duration,
    /// Media the player keeps ahead of the playhead at most. At least one chunk.
    pub buffer: Duration,
    /// Media needed before playback starts (also after a stall or a seek). At most `buffer`.
    pub prebuffer: Duration,
    /// Variable bitrate: how much media each chunk covers varies by GOP. `None`: constant bitrate.
    pub vbr: Option<Vbr>,
}

/// Variable bitrate: bursts of ±`swing` per group of pictures. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vbr {
    /// Largest deviation of a GOP's bitrate from the mean, as a fraction (0.3: ±30 %). In [0, 0.9].
    pub swing: f64,
    /// Consecutive chunks that share one GOP's bitrate (at least 1).
    pub chunks_per_gop: u32,
    /// Seed of the media's bursts.
    pub seed: u64,
}

impl Vbr {
    /// The bitrate of the GOP holding `chunk` over the mean: uniform in [1 − swing, 1 + swing].
    pub fn factor(&self, chunk: u64) -> f64 {
        let gop = chunk / u64::from(self.chunks_per_gop.max(1));
        // splitmix64 of (seed, gop): a pure function, so every viewer and every run sees the same bursts.
        let mut z = self.seed ^ gop.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + self.swing.clamp(0.0, 0.9) * (2.0 * u - 1.0)
    }
}

impl PlayerConfig {
    /// Keeps the settings coherent: the buffer holds at least the longest chunk, the prebuffer fits in it.
    pub fn normalized(self) -> PlayerConfig {
        let longest = match self.vbr {
            Some(v) => self.chunk_media.div_f64(1.0 - v.swing.clamp(0.0, 0.9)),
            None => self.chunk_media,
        };
        let buffer = self.buffer.max(longest);
        PlayerConfig { buffer, prebuffer: self.prebuffer.min(buffer), ..self }
    }

    /// Media that chunk `chunk` covers.
    pub fn media_of(&self, chunk: u64) -> Duration {
        match self.vbr {
            Some(v) => self.chunk_media.div_f64(v.factor(chunk)),
            None => self.chunk_media,
        }
    }
}

/// The next chunk a player wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkWant {
    /// Index of the chunk on the media timeline (the driver maps it to a file offset, wrapping at the end).
    pub chunk: u64,
    /// When it was (or will be) due.
    pub due: Duration,
}

/// What happened to one chunk when it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Completion instant minus due instant (zero when early).
    pub lateness: Duration,
    /// False when the chunk was fetched before a seek and thrown away.
    pub used: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Filling the prebuffer: at the start (`first`), after a stall or after a seek.
    Buffering { since: Duration, cause: Cause },
    /// Playing since `anchor`, when the playhead was at media position `media` (seconds since media start).
    Playing { anchor: Duration, media: Duration },
    /// The watch is over.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Start,
    Stall,
    Seek,
}

/// One stream's figures. Durations are wall time.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StreamStats {
    /// From the stream's start to the start of playback; `None` if it never started playing.
    pub startup: Option<Duration>,
    /// Buffer underruns during playback (not counting waits after a seek).
    pub stalls: u32,
    /// Time spent in those underruns.
    pub stalled: Duration,
    /// Seeks made, and the time spent refilling after them.
    pub seeks: u32,
    pub seek_wait: Duration,
    /// Wall time from the start of playback to the end of the watch (stalls included).
    pub watched: Duration,
    /// Media bytes delivered (chunks used, not those thrown away by a seek).
    pub bytes: u64,
    /// Chunks delivered (used) and chunks thrown away.
    pub chunks: u64,
    pub wasted_chunks: u64,
}

/// One viewer. See the module documentation for the model.
#[derive(Debug, Clone)]
pub struct Player {
    config: PlayerConfig,
    start: Duration,
    state: State,
    /// Media position of the end of the buffered media (seconds since media start).
    buffered_end: Duration,
    /// Media position of the playhead when not playing (playing: computed from the anchor).
    paused_at: Duration,
    /// The chunk to fetch next, and the one in flight (with its due time) if any.
    next_chunk: u64,
    in_flight: Option<(u64, Duration, bool)>,
    stats: StreamStats,
}

impl Player {
    /// A viewer starting at `start`, at chunk `first_chunk` of the media.
    pub fn new(config: PlayerConfig, start: Duration, first_chunk: u64) -> Player {
        let config = config.normalized();
        let position = config.chunk_media * first_chunk as u32;
        Player {
            config,
            start,
            state: State::Buffering { since: start, cause: Cause::Start },
            buffered_end: position,
            paused_at: position,
            next_chunk: first_chunk,
            in_flight: None,
            stats: StreamStats::default(),
        }
    }

    pub fn config(&self) -> &PlayerConfig {
        &self.config
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    pub fn is_playing(&self) -> bool {
        matches!(self.state, State::Playing { .. })
    }

    /// The chunk in flight, if any.
    pub fn in_flight(&self) -> Option<u64> {
        self.in_flight.map(|(chunk, _, _)| chunk)
    }

    /// The next chunk to fetch and its due time, or `None` while one is in flight or the watch is over.
    /// `now` is used only to find a stall that began before it.
    pub fn want(&mut self, now: Duration) -> Option<ChunkWant> {
        if self.in_flight.is_some() || self.state == State::Done {
            return None;
        }
        self.advance(now);
        Some(ChunkWant { chunk: self.next_chunk, due: self.due_of_next(now) })
    }

    /// The driver issued the wanted chunk (at any instant; the due time was fixed by `want`).
    pub fn issued(&mut self, want: ChunkWant) {
        debug_assert_eq!(want.chunk, self.next_chunk);
        self.in_flight = Some((want.chunk, want.due, true));
        self.next_chunk += 1;
    }

    /// The chunk in flight arrived at `now` with `bytes` of media.
    pub fn arrived(&mut self, now: Duration, bytes: u64) -> Arrival {
        let (chunk, due, used) = self.in_flight.take().expect("arrived() only follows issued()");
        let lateness = now.saturating_sub(due);
        if !used || self.state == State::Done {
            self.stats.wasted_chunks += 1;
            return Arrival { lateness, used: false };
        }
        self.advance(now);
        self.buffered_end += self.config.media_of(chunk);
        self.stats.chunks += 1;
        self.stats.bytes += bytes;
        if let State::Buffering { since, cause } = self.state
            && self.buffered_end.saturating_sub(self.paused_at) >= self.config.prebuffer
        {
            match cause {
                Cause::Start => self.stats.startup = Some(now - self.start),
                Cause::Stall => self.stats.stalled += now - since,
                Cause::Seek => self.stats.seek_wait += now - since,
            }
            self.state = State::Playing { anchor: now, media: self.paused_at };
        }
        Arrival { lateness, used: true }
    }

    /// The viewer jumps to `chunk` at `now`: the buffer is emptied, a chunk in flight will be thrown away, and
    /// the prebuffer is filled again before playback resumes. A seek before playback ever started only moves
    /// the position.
    pub fn seek(&mut self, now: Duration, chunk: u64) {
        if self.state == State::Done {
            return;
        }
        self.advance(now);
        if let Some(flight) = self.in_flight.as_mut() {
            flight.2 = false;
        }
        let position = self.config.chunk_media * chunk as u32;
        self.buffered_end = position;
        self.paused_at = position;
        self.next_chunk = chunk;
        match self.state {
            State::Buffering { cause: Cause::Start, .. } => {}
            State::Buffering { since, cause: Cause::Stall } => {
                // The stall ends with the viewer's jump; what follows is a seek's wait.
                self.stats.stalled += now - since;
                self.stats.seeks += 1;
                self.state = State::Buffering { since: now, cause: Cause::Seek };
            }
            _ => {
                self.stats.seeks += 1;
                self.state = State::Buffering { since: now, cause: Cause::Seek };
            }
        }
    }

    /// Ends the watch at `now` and returns the stream's figures. A stall still going counts up to `now`.
    pub fn finish(&mut self, now: Duration) -> StreamStats {
        if self.state != State::Done {
            self.advance(now);
            if let State::Buffering { since, cause } = self.state {
                match cause {
                    Cause::Start => {}
                    Cause::Stall => self.stats.stalled += now.saturating_sub(since),
                    Cause::Seek => self.stats.seek_wait += now.saturating_sub(since),
                }
            }
            if let Some(startup) = self.stats.startup {
                self.stats.watched = now.saturating_sub(self.start + startup);
            }
            self.state = State::Done;
        }
        self.stats.clone()
    }

    /// If the playhead ran out of media before `now`, the stall began at that exact instant.
    fn advance(&mut self, now: Duration) {
        if let State::Playing { anchor, media } = self.state {
            let runway = self.buffered_end.saturating_sub(media);
            if now >= anchor + runway {
                self.stats.stalls += 1;
                self.paused_at = self.buffered_end;
                self.state = State::Buffering { since: anchor + runway, cause: Cause::Stall };
            }
        }
    }

    /// Due instant of `next_chunk`, asked for at `now` (the instant the connection became free: the stream's
    /// start, a seek, or the previous chunk's arrival). See the module documentation.
    fn due_of_next(&self, now: Duration) -> Duration {
        match self.state {
            State::Playing { anchor, media } => {
                // Room for one more chunk once the playhead passes buffered_end + chunk − buffer.
                let next = self.config.media_of(self.next_chunk);
                let threshold = (self.buffered_end + next).saturating_sub(self.config.buffer);
                let room = anchor + threshold.saturating_sub(media);
                room.max(now)
            }
            _ => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Chunks of 1 s of media, a 4 s buffer, a 2 s prebuffer.
    fn config() -> PlayerConfig {
        PlayerConfig { chunk_media: ms(1000), buffer: ms(4000), prebuffer: ms(2000), vbr: None }
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
        assert_eq!(stats.stalls, 1);
        assert_eq!(stats.stalled, ms(4000), "from 2 s to 6 s");
        assert_eq!(stats.watched, ms(7000));
    }

    #[test]
    fn a_stall_still_going_at_the_end_counts_up_to_the_end() {
        let mut p = Player::new(config(), ms(0), 0);
        fetch(&mut p, ms(0), ms(0));
        fetch(&mut p, ms(0), ms(0));
        let want = p.want(ms(0)).unwrap();
        p.issued(want); // never arrives
        let stats = p.finish(ms(3000));
        assert_eq!((stats.stalls, stats.stalled), (1, ms(1000)));
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
        assert_eq!((stats.startup, stats.watched), (None, Duration::ZERO));
    }

    #[test]
    fn a_chunk_longer_than_the_buffer_still_fits_one() {
        let c = PlayerConfig { chunk_media: ms(8000), buffer: ms(4000), prebuffer: ms(9000), vbr: None }.normalized();
        assert_eq!((c.buffer, c.prebuffer), (ms(8000), ms(8000)));
        let vbr = Some(Vbr { swing: 0.5, chunks_per_gop: 1, seed: 1 });
        let c = PlayerConfig { chunk_media: ms(1000), buffer: ms(1000), prebuffer: ms(500), vbr }.normalized();
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
        // cover less (a GOP above the mean bitrate).
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
            p.finish(now)
        };
        assert_eq!(slow(config()).stalls, 0);
        // A seed whose first GOP (1000 chunks: the whole test) runs above 1.15 × the mean.
        let burst = Vbr { swing: 0.3, chunks_per_gop: 1000, seed: 0 };
        let vbr = (0..1000).map(|s| Vbr { seed: s, ..burst }).find(|v| v.factor(0) > 1.15).unwrap();
        assert!(slow(PlayerConfig { vbr: Some(vbr), ..config() }).stalls > 0);
    }
}
