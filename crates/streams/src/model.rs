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
//! Thresholds: playback starts once `prebuffer` of media is in, and resumes after a seek on the same amount
//! (Media3's `bufferForPlaybackMs`: "to start or resume following a user action such as a seek"); after a
//! stall, a buffer that ran dry, it resumes only once `rebuffer` is in (`bufferForPlaybackAfterRebufferMs`:
//! 2 s where the start needs 1 s).
//!
//! Start-up and playback are told apart. A player reaches **steady state** the first time its buffer reaches
//! its steady level (a chunk arrives and the next one would take it past that level): its whole buffer for
//! streamcap's generic viewer, and for a real player's profile [`STEADY_AHEAD`] of media beyond its start
//! threshold when that is less than its buffer. A long buffer (Media3's 42 s at 2160p) fills with only the
//! spare share of the device, so near capacity it cannot fill within any bound a step can wait; past its
//! steady level a player is judged by whether its buffer holds (`outcome.rs`, `BufferDrain`), not by whether
//! it filled. Until then it is starting
//! up: its time to first playback is its start-up time, and an underrun after playback began but before the
//! buffer was ever full is a start-up stall (the player was still filling, as a viewer who pressed play on a
//! busy server sees). An underrun after steady state is a **playback stall**, the one a viewer notices in the
//! middle of a film. The step judges them apart (`outcome.rs`).
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

/// Media beyond the start threshold at which a real player's longer buffer counts as steady (a profile's
/// `steady_ahead`). 2 s: near capacity a player gains media only at the device's spare share (at 93 % of the
/// bandwidth, 0.075 s a second), so 2 s take 27 s, within the 30 s `--steady-within`, where Media3's 41 s
/// (2160p) would take nine minutes. The check's buffers (its 2 s start and two chunks, 2.1 s at 1080p) end
/// about there too. Past this level the judged playback tells whether the buffer holds (`BufferDrain`).
pub const STEADY_AHEAD: Duration = Duration::from_secs(2);

/// How a viewer's player behaves. Built by the driver from the user's flags (defaults live in `defaults`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerConfig {
    /// Media time one chunk covers (chunk bytes ÷ stream byte rate).
    pub chunk_media: Duration,
    /// Media the player keeps ahead of the playhead at most. At least one chunk.
    pub buffer: Duration,
    /// Media needed before playback starts (also after a seek). At most `buffer`.
    pub prebuffer: Duration,
    /// Media needed before playback resumes after a stall (the buffer ran dry). At most `buffer`.
    pub rebuffer: Duration,
    /// A real player's long buffer: steady this much media past the start threshold (`STEADY_AHEAD`) when
    /// that is less than the buffer. `None` (streamcap's generic viewer): steady when the buffer is full.
    pub steady_ahead: Option<Duration>,
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
        let longest = self.longest_chunk();
        let buffer = self.buffer.max(longest);
        PlayerConfig { buffer, prebuffer: self.prebuffer.min(buffer), rebuffer: self.rebuffer.min(buffer), ..self }
    }

    /// The media ahead of the playhead at which the player counts as steady: its buffer, or `steady_ahead`
    /// beyond its start threshold when that is less (see the module documentation).
    pub fn steady_level(&self) -> Duration {
        self.steady_ahead.map_or(self.buffer, |ahead| self.buffer.min(self.prebuffer + ahead))
    }

    /// The longest media one chunk covers (with VBR, a chunk of the lowest-bitrate GOP).
    pub fn longest_chunk(&self) -> Duration {
        match self.vbr {
            Some(v) => self.chunk_media.div_f64(1.0 - v.swing.clamp(0.0, 0.9)),
            None => self.chunk_media,
        }
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
    /// When the viewer arrived (its stream's start), from the step's common origin.
    #[serde(default)]
    pub arrived: Duration,
    /// From the stream's start to the start of playback; `None` if it never started playing.
    pub startup: Option<Duration>,
    /// From the stream's start to the first instant its buffer reached its steady level (steady state: full, or
    /// `STEADY_AHEAD` past the start threshold); `None` if it never did.
    #[serde(default)]
    pub steady: Option<Duration>,
    /// Playback stalls: buffer underruns after steady state (not counting waits after a seek).
    pub stalls: u32,
    /// Time spent in those underruns.
    pub stalled: Duration,
    /// Start-up stalls: underruns after playback began but before the buffer was first full.
    #[serde(default)]
    pub startup_stalls: u32,
    /// Time spent in those underruns.
    #[serde(default)]
    pub startup_stalled: Duration,
    /// From the stream's start to its first playback stall, if it had one.
    #[serde(default)]
    pub first_stall: Option<Duration>,
    /// Seeks made, and the time spent refilling after them.
    pub seeks: u32,
    pub seek_wait: Duration,
    /// Wall time from the start of playback to the end of the watch (stalls included).
    pub watched: Duration,
    /// Wall time from the stream's start to the end of its watch: zero when the step ended before the viewer
    /// arrived (it was never part of the audience).
    #[serde(default)]
    pub present: Duration,
    /// Media bytes delivered (chunks used, not those thrown away by a seek).
    pub bytes: u64,
    /// Chunks delivered (used) and chunks thrown away.
    pub chunks: u64,
    pub wasted_chunks: u64,
    /// The buffer over the judged playback (see [`JudgedBuffer`]); `None` when the viewer did not play through
    /// the judged window without a seek (or no window was judged).
    #[serde(default)]
    pub judged_buffer: Option<JudgedBuffer>,
}

/// Media a viewer had buffered ahead of its playhead when the judged playback began and when it ended. A player
/// that keeps up holds its buffer; one that receives less media than it plays drains it, long before it
/// stalls when a chunk is a small part of the buffer (0.1 s of a remux in a 2.2 s buffer). `chunk` is the
/// longest media one chunk covers: a buffer refilled a chunk at a time ripples by about that much.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JudgedBuffer {
    pub start: Duration,
    pub end: Duration,
    pub chunk: Duration,
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
    /// The last instant the buffered media changed other than by playing (a chunk applied, a seek).
    last_change: Duration,
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
            last_change: start,
            stats: StreamStats { arrived: start, ..StreamStats::default() },
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

    /// Whether the buffer has reached its steady level at least once (steady state).
    pub fn is_steady(&self) -> bool {
        self.stats.steady.is_some()
    }

    /// From the start to the first playback, once it began.
    pub fn startup(&self) -> Option<Duration> {
        self.stats.startup
    }

    /// From the start to the first buffer at its steady level, once it was.
    pub fn steady(&self) -> Option<Duration> {
        self.stats.steady
    }

    /// Seeks made so far.
    pub fn seeks(&self) -> u32 {
        self.stats.seeks
    }

    /// Media buffered ahead of the playhead at `at`. Exact for an instant no earlier than the last chunk applied
    /// (in between, only the playhead moves); an earlier instant is read as that one.
    pub fn buffered_at(&self, at: Duration) -> Duration {
        let at = at.max(self.last_change);
        match self.state {
            State::Playing { anchor, media } => self.buffered_end.saturating_sub(media + at.saturating_sub(anchor)),
            _ => self.buffered_end.saturating_sub(self.paused_at),
        }
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
        self.last_change = self.last_change.max(now);
        self.stats.chunks += 1;
        self.stats.bytes += bytes;
        if let State::Buffering { since, cause } = self.state
            && self.buffered_end.saturating_sub(self.paused_at) >= self.threshold(cause)
        {
            match cause {
                Cause::Start => self.stats.startup = Some(now - self.start),
                Cause::Stall => self.add_stalled(now - since),
                Cause::Seek => self.stats.seek_wait += now - since,
            }
            self.state = State::Playing { anchor: now, media: self.paused_at };
        }
        if self.stats.steady.is_none() && self.at_steady_level(now) {
            self.stats.steady = Some(now - self.start);
        }
        Arrival { lateness, used: true }
    }

    /// Media needed to leave a wait of `cause`: the start threshold, or the rebuffer threshold after a stall.
    fn threshold(&self, cause: Cause) -> Duration {
        match cause {
            Cause::Start | Cause::Seek => self.config.prebuffer,
            Cause::Stall => self.config.rebuffer,
        }
    }

    /// Playing, and the next chunk would take the buffer past its steady level (with a buffer no longer than
    /// that level: the next chunk does not fit, the player has to wait for room).
    fn at_steady_level(&self, now: Duration) -> bool {
        let State::Playing { anchor, media } = self.state else { return false };
        let playhead = media + now.saturating_sub(anchor);
        let ahead = self.buffered_end.saturating_sub(playhead);
        ahead + self.config.media_of(self.next_chunk) > self.config.steady_level()
    }

    /// Time in an underrun that just ended: a playback stall once steady, a start-up stall before (steady
    /// state cannot begin during an underrun, so the bucket is the one the underrun began in).
    fn add_stalled(&mut self, time: Duration) {
        if self.stats.steady.is_some() {
            self.stats.stalled += time;
        } else {
            self.stats.startup_stalled += time;
        }
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
        self.last_change = self.last_change.max(now);
        match self.state {
            State::Buffering { cause: Cause::Start, .. } => {}
            State::Buffering { since, cause: Cause::Stall } => {
                // The stall ends with the viewer's jump; what follows is a seek's wait.
                self.add_stalled(now - since);
                self.stats.seeks += 1;
                self.state = State::Buffering { since: now, cause: Cause::Seek };
            }
            _ => {
                self.stats.seeks += 1;
                self.state = State::Buffering { since: now, cause: Cause::Seek };
            }
        }
    }

    /// Ends the watch at `now` and returns the stream's figures. A stall still going counts up to `now`. A
    /// player whose start is after `now` was never part of the audience: its figures stay empty.
    pub fn finish(&mut self, now: Duration) -> StreamStats {
        if self.state != State::Done {
            self.advance(now);
            if let State::Buffering { since, cause } = self.state {
                match cause {
                    Cause::Start => {}
                    Cause::Stall => self.add_stalled(now.saturating_sub(since)),
                    Cause::Seek => self.stats.seek_wait += now.saturating_sub(since),
                }
            }
            if let Some(startup) = self.stats.startup {
                self.stats.watched = now.saturating_sub(self.start + startup);
            }
            self.stats.present = now.saturating_sub(self.start);
            self.state = State::Done;
        }
        self.stats.clone()
    }

    /// If the playhead ran out of media before `now`, the stall began at that exact instant.
    fn advance(&mut self, now: Duration) {
        if let State::Playing { anchor, media } = self.state {
            let runway = self.buffered_end.saturating_sub(media);
            if now >= anchor + runway {
                if self.stats.steady.is_some() {
                    self.stats.stalls += 1;
                    self.stats.first_stall.get_or_insert((anchor + runway).saturating_sub(self.start));
                } else {
                    self.stats.startup_stalls += 1;
                }
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
#[path = "model_tests.rs"]
mod tests;
