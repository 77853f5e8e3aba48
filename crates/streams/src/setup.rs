//! From what the user asked (`StreamsConfig`) to the concrete viewers of one run at a given count: which file
//! each viewer reads, where it starts, when it arrives (`arrivals.rs`), its chunk size and player settings, and
//! how long a step lasts ([`StepLength`]). Pure: no I/O, no clock; the same seed gives the same viewers.
//! Defaults live in [`defaults`].

use std::path::PathBuf;
use std::time::Duration;

use super::arrivals::{arrivals, window_for};
use super::judge::Judging;
use super::library::Titles;
use super::model::{PlayerConfig, Vbr};
use crate::engine::HttpUrl;
use crate::spec::{Assignment, ChunkSize, Delivery, Mix};
use serde::Serialize;

use crate::units::{serialize_opt_secs, serialize_secs};
use crate::workload::{Rng, mix64};

/// The one place for the defaults of `streamcap streams`.
pub mod defaults {
    use std::time::Duration;

    pub const CHUNK_BYTES: u64 = 1 << 20;
    pub const BUFFER: Duration = Duration::from_secs(10);
    pub const PREBUFFER: Duration = Duration::from_secs(2);
    /// Playback judged once every viewer has reached steady state.
    pub const WATCH: Duration = Duration::from_secs(60);
    /// Viewers arrive about one per this (Poisson), over at most `ARRIVAL_MAX` in all: an audience, not a
    /// stampede of prebuffers that would measure start-up, not streaming.
    pub const ARRIVAL_PER_VIEWER: Duration = Duration::from_secs(1);
    pub const ARRIVAL_MAX: Duration = Duration::from_secs(30);
    /// Each viewer must reach steady state (its buffer full once) within this of its arrival.
    pub const STEADY_WITHIN: Duration = Duration::from_secs(30);
    /// Length of each test media file.
    pub const MEDIA_LENGTH: Duration = Duration::from_secs(120);
    /// Quality target: no stall, and start-up within this.
    pub const MAX_STARTUP: Duration = Duration::from_secs(2);
    /// In-flight reads per scheduler thread. Each slot owns a buffer of at most `SLOT_BUFFER_MAX` (a larger
    /// chunk is read through it), not pinned: at most 256 × 256 KiB × 2 threads = 128 MiB, and only the slots
    /// ever in use at once become resident (free slots are reused most recent first).
    pub const SLOTS_PER_WORKER: u32 = 256;
    /// Largest buffer per in-flight slot, bytes.
    pub const SLOT_BUFFER_MAX: usize = 256 * 1024;
    pub const SEED: u64 = 0x5EED_57EA;
    /// The capacity search's first count when there is no estimate to start from.
    pub const SEARCH_START: u32 = 4;
    /// The capacity search never tries more viewers than this unless told.
    pub const SEARCH_LIMIT: u32 = 10_000;
    /// The search stops bisecting when passing and failing counts are within this percentage.
    pub const PRECISION_PCT: f64 = 3.0;
    /// Rounds that run the found edge again (the count that passed, then the one that failed) after the search:
    /// one, so the answer comes with a range of two runs at the cost of two more steps.
    pub const CONFIRMATIONS: u32 = 1;
    /// Length of each raw-rate measurement behind the estimate.
    pub const ESTIMATE_TIME: Duration = Duration::from_secs(5);
    /// With `--vbr`, the media one bitrate holds for (a group of pictures, as encoders commonly cut them).
    pub const GOP: Duration = Duration::from_secs(2);
    /// Size of the library of titles `streams` writes unless told (`--library-size`): twice the largest cache a
    /// RAID controller commonly carries (`CONTROLLER_CACHE`), so that no cache the tool cannot see holds it.
    pub const LIBRARY_BYTES: u64 = 8 << 30;
    /// The largest DRAM cache of common hard and solid-state drives (64 MiB to 1 GiB): not readable from Linux.
    pub const DRIVE_CACHE: u64 = 1 << 30;
    /// The largest cache common RAID controllers and NAS appliances carry (1 to 4 GiB): not visible from Linux.
    pub const CONTROLLER_CACHE: u64 = 4 << 30;
    /// The smallest title of a generated library; a title is at least what one viewer reads in a watch.
    pub const TITLE_MIN_BYTES: u64 = 64 << 20;
    /// The most titles a generated library or the user's library is read as (each scheduler thread opens the
    /// titles its viewers watch).
    pub const MAX_TITLES: u32 = 1024;
}

/// A media file the viewers read: a local file, or a URL fetched in byte ranges.
#[derive(Debug, Clone)]
pub struct MediaFile {
    /// The local path, or the URL's text (for messages).
    pub path: PathBuf,
    /// Bytes of the file in use (whole chunks are read from `[0, size)`).
    pub size: u64,
    /// Set for remote media: every viewer then holds its own keep-alive connection.
    pub url: Option<HttpUrl>,
    /// A title that is an HLS playlist: its segments, each one request (`path` is the playlist's).
    pub segments: Option<std::sync::Arc<super::segmented::SegmentedTitle>>,
}

/// One viewer, fully decided before the run. When its watch ends is decided during the step (`judge.rs`).
#[derive(Debug, Clone, Copy)]
pub struct ViewerPlan {
    /// When the viewer arrives (presses play), after the common origin.
    pub start: Duration,
    /// Index into the media files.
    pub file: u32,
    /// Chunk of the media timeline the viewer starts at.
    pub first_chunk: u64,
    /// Bytes per chunk (a multiple of 4096).
    pub chunk_bytes: u32,
    /// The player model's settings: media time per chunk, buffer and prebuffer (media time), VBR bursts.
    pub player: PlayerConfig,
    /// Mean time between seeks (exponentially distributed), if the viewer skips around.
    pub seek_every: Option<Duration>,
    /// Seed of the viewer's seek times and positions.
    pub seed: u64,
}

/// Everything `streams` was asked, with defaults filled in.
#[derive(Debug, Clone, Serialize)]
pub struct StreamsConfig {
    /// The formats (name, bitrate in bit/s) and their integer weights in the crowd of viewers.
    pub mix: Mix,
    /// How much a chunk read holds: bytes, or seconds of media (then bytes per format from its bitrate); every
    /// chunk is rounded up to a multiple of 4096 bytes.
    pub chunk: ChunkSize,
    /// How requests are shaped: direct play in `chunk`, or one request per HLS/DASH segment (then `chunk` is
    /// the segment's media, set by the plan).
    pub delivery: Delivery,
    /// Media kept ahead of the playhead, seconds.
    #[serde(serialize_with = "serialize_secs")]
    pub buffer: Duration,
    /// Media needed before playback starts (and after a seek), seconds.
    #[serde(serialize_with = "serialize_secs")]
    pub prebuffer: Duration,
    /// Media needed before playback resumes after a stall, seconds (`None`: the prebuffer).
    #[serde(serialize_with = "serialize_opt_secs")]
    pub rebuffer: Option<Duration>,
    /// A real player's profile: steady this much media past the prebuffer when that is less than the buffer
    /// (`model::STEADY_AHEAD`), seconds; `None`: steady when the buffer is full.
    #[serde(serialize_with = "serialize_opt_secs")]
    pub steady_ahead: Option<Duration>,
    /// Playback judged once every viewer has reached steady state, seconds.
    #[serde(rename = "watch_s", serialize_with = "serialize_secs")]
    pub watch: Duration,
    /// The longest arrival window, seconds (None: `defaults::ARRIVAL_MAX`); viewers arrive about one a second
    /// until it is full.
    #[serde(serialize_with = "serialize_opt_secs")]
    pub ramp: Option<Duration>,
    /// Each viewer must reach steady state within this of its arrival, seconds.
    #[serde(rename = "steady_within_s", serialize_with = "serialize_secs")]
    pub steady_within: Duration,
    /// Mean time between seeks, seconds.
    #[serde(serialize_with = "serialize_opt_secs")]
    pub seek_every: Option<Duration>,
    /// Which media file each viewer reads: one per format, one per viewer, or a library of titles.
    pub assignment: Assignment,
    /// With a library: how many titles and their popularity (set by the plan, which knows the titles).
    pub titles: Option<Titles>,
    /// Length of each test media file, seconds.
    #[serde(serialize_with = "serialize_secs")]
    pub media_length: Duration,
    /// Seed of the viewers' start positions, files, seeks and VBR bursts.
    pub seed: u64,
    /// Variable bitrate: each GOP's bitrate within ± this fraction of the mean (`--vbr 30` → 0.3).
    pub vbr: Option<f64>,
}

/// A media file as the viewers know it: a test file of one format, or a title of the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MediaKey {
    /// A test file of one format (`one`, `each`): the format's index in the mix and the file's number among
    /// that format's files (0-based).
    Format { format: usize, number: u32 },
    /// A title of the library, shared by every format (0-based).
    Title(u32),
}

impl MediaKey {
    /// The file's number among its own kind (a format's files, or the titles).
    pub fn number(self) -> u32 {
        match self {
            MediaKey::Format { number, .. } | MediaKey::Title(number) => number,
        }
    }
}

/// How long a step of a given count lasts, and why: the viewers arrive over `arrival`, each fills its buffer
/// (at most `steady_within` after it arrived), then `judged` of playback is watched from the instant the last
/// buffer was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepLength {
    pub arrival: Duration,
    /// What filling a buffer takes near capacity: the media between prebuffer and steady level (the buffer, or
    /// `steady_ahead` past the prebuffer when that is less), fetched with about
    /// one stream's rate to spare (the bound a count just below the capacity leaves), so as long in wall time.
    pub fill: Duration,
    pub steady_within: Duration,
    pub judged: Duration,
}

impl StepLength {
    /// A step that passes near the capacity: arrival window + buffer fill + judged playback.
    pub fn typical(&self) -> Duration {
        self.arrival + self.fill + self.judged
    }

    /// The longest a step can last: the last viewer arrives at the end of the window and takes its whole bound.
    pub fn longest(&self) -> Duration {
        self.arrival + self.steady_within + self.judged
    }
}

impl StreamsConfig {
    /// The arrival window of `count` viewers.
    pub fn arrival_for(&self, count: u32) -> Duration {
        window_for(count, defaults::ARRIVAL_PER_VIEWER, self.ramp.unwrap_or(defaults::ARRIVAL_MAX))
    }

    /// How long a step of `count` viewers lasts.
    pub fn step_length(&self, count: u32) -> StepLength {
        StepLength {
            arrival: self.arrival_for(count),
            fill: self
                .steady_ahead
                .map_or(self.buffer, |a| self.buffer.min(self.prebuffer + a))
                .saturating_sub(self.prebuffer),
            steady_within: self.steady_within,
            judged: self.watch,
        }
    }

    /// How a step is judged; `fail_fast` for the steps of a capacity search.
    pub fn judging(&self, fail_fast: bool, max_startup: Duration) -> Judging {
        Judging { steady_within: self.steady_within, judged: self.watch, fail_fast, max_startup }
    }

    pub fn chunk_bytes(&self, format: usize) -> u64 {
        self.chunk.bytes_at(self.mix.0[format].0.bitrate)
    }

    /// Size of a test media file of `format`: bitrate × media length, in whole chunks.
    pub fn media_bytes(&self, format: usize) -> u64 {
        let chunk = self.chunk_bytes(format);
        let raw = self.mix.0[format].0.bitrate.byte_rate().bytes_per_sec() * self.media_length.as_secs_f64();
        ((raw as u64).div_ceil(chunk)).max(1) * chunk
    }

    /// Media one chunk of `format` covers at its mean bitrate.
    pub fn chunk_media(&self, format: usize) -> Duration {
        let bitrate = self.mix.0[format].0.bitrate;
        Duration::from_secs_f64(self.chunk_bytes(format) as f64 / bitrate.byte_rate().bytes_per_sec())
    }

    fn player(&self, format: usize) -> PlayerConfig {
        let chunk_media = self.chunk_media(format);
        let vbr = self.vbr.filter(|&x| x > 0.0).map(|swing| Vbr {
            swing,
            chunks_per_gop: (defaults::GOP.as_secs_f64() / chunk_media.as_secs_f64()).round().max(1.0) as u32,
            seed: 0,
        });
        let rebuffer = self.rebuffer.unwrap_or(self.prebuffer);
        let (buffer, prebuffer, steady_ahead) = (self.buffer, self.prebuffer, self.steady_ahead);
        PlayerConfig { chunk_media, buffer, prebuffer, rebuffer, steady_ahead, vbr }.normalized()
    }

    /// The viewers of step `round` of a run at `count`, each with the media file it reads (keys into the
    /// caller's file list, which `file_index` maps to indices). Every step draws its own positions (and, with a
    /// library, its own titles), so that a step does not re-read what the step before it left in a cache.
    pub fn viewers(&self, count: u32, round: u32, file_index: &mut dyn FnMut(MediaKey) -> u32) -> Vec<ViewerPlan> {
        let formats = self.mix.assign(count);
        // Each step its own audience too: a confirmation of a count is another sample, not the same arrivals.
        let starts = arrivals(count, self.arrival_for(count), self.seed ^ mix64(u64::from(round)));
        let mut rng = Rng::new(self.seed ^ mix64(u64::from(round)));
        let picker = self.titles.filter(|_| self.is_library()).map(|t| t.picker(count, &mut rng));
        let mut per_format = vec![0u32; self.mix.0.len()];
        formats
            .iter()
            .enumerate()
            .map(|(i, &format)| {
                let key = match (&picker, self.assignment) {
                    (Some(picker), _) => MediaKey::Title(picker.pick(i, &mut rng)),
                    (None, Assignment::Each) => MediaKey::Format { format, number: per_format[format] },
                    (None, _) => MediaKey::Format { format, number: 0 },
                };
                per_format[format] += 1;
                // A title's size is known to the run (the user's files differ): a position drawn from a wide
                // range, taken modulo the title's chunks, is as good as uniform.
                let chunks =
                    if picker.is_some() { 1 << 40 } else { self.media_bytes(format) / self.chunk_bytes(format) };
                let mut player = self.player(format);
                if let Some(vbr) = player.vbr.as_mut() {
                    // The bursts belong to the media file: every viewer of it sees them at the same places.
                    let file = (format as u64) << 32 | u64::from(key.number()) | u64::from(picker.is_some()) << 62;
                    vbr.seed = self.seed ^ file.wrapping_mul(0xA24B_AED4_963E_E407);
                }
                ViewerPlan {
                    start: starts[i],
                    file: file_index(key),
                    first_chunk: rng.below(chunks.max(1)),
                    chunk_bytes: self.chunk_bytes(format) as u32,
                    player,
                    seek_every: self.seek_every,
                    seed: rng.next_u64(),
                }
            })
            .collect()
    }

    /// Whether viewers watch the titles of a library (rather than test files per format).
    pub fn is_library(&self) -> bool {
        matches!(self.assignment, Assignment::Library { .. })
    }

    /// The media files a run of at most `count` viewers reads, in a stable order: every title of a library, or
    /// the test files per format.
    pub fn media_needed(&self, count: u32) -> Vec<MediaKey> {
        if let (true, Some(titles)) = (self.is_library(), self.titles) {
            return (0..titles.count.max(1)).map(MediaKey::Title).collect();
        }
        let mut keys: Vec<MediaKey> = Vec::new();
        let _ = self.viewers(count, 0, &mut |key| {
            keys.push(key);
            0
        });
        keys.sort();
        keys.dedup();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(assignment: &str) -> StreamsConfig {
        StreamsConfig {
            mix: "1080p:70,2160p:30".parse().unwrap(),
            chunk: ChunkSize::Bytes(1 << 20),
            delivery: Default::default(),
            buffer: defaults::BUFFER,
            prebuffer: defaults::PREBUFFER,
            rebuffer: None,
            steady_ahead: None,
            watch: Duration::from_secs(10),
            ramp: Some(Duration::from_secs(1)),
            steady_within: defaults::STEADY_WITHIN,
            seek_every: None,
            assignment: assignment.parse().unwrap(),
            titles: Some(Titles { count: 20, zipf: None }),
            media_length: Duration::from_secs(60),
            seed: 7,
            vbr: None,
        }
    }

    #[test]
    fn viewers_arrive_over_the_window_and_read_whole_chunks() {
        let c = config("one");
        let viewers = c.viewers(10, 0, &mut format_of);
        assert_eq!(viewers[0].start, Duration::ZERO);
        assert!(viewers.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(viewers[9].start > Duration::ZERO && viewers[9].start < Duration::from_secs(1), "a 1 s window");
        assert_eq!(viewers.iter().filter(|v| v.file == 1).count(), 3);
        // 8 Mbit/s for 60 s = 60 MB, in whole MiB chunks.
        assert_eq!(c.media_bytes(0), 58 << 20);
        assert_eq!(c.media_needed(10).len(), 2);
    }

    fn format_of(key: MediaKey) -> u32 {
        match key {
            MediaKey::Format { format, .. } => format as u32,
            MediaKey::Title(_) => panic!("one and each read test files per format"),
        }
    }

    fn title_of(key: MediaKey) -> u32 {
        match key {
            MediaKey::Title(n) => n,
            MediaKey::Format { .. } => panic!("a library's viewers read titles"),
        }
    }

    #[test]
    fn the_window_is_sized_to_the_count_and_a_step_says_how_long_it_lasts() {
        let c = StreamsConfig { ramp: None, watch: Duration::from_secs(8), ..config("one") };
        assert_eq!(c.arrival_for(1), Duration::ZERO);
        assert_eq!(c.arrival_for(4), Duration::from_secs(4), "one a second");
        assert_eq!(c.arrival_for(400), defaults::ARRIVAL_MAX);
        let length = c.step_length(4);
        // 4 s of arrivals + 8 s of buffer beyond the prebuffer + 8 s judged; at most the 30 s bound instead.
        assert_eq!(length.typical(), Duration::from_secs(20));
        assert_eq!(length.longest(), Duration::from_secs(42));
    }

    #[test]
    fn each_and_library_assign_files() {
        assert_eq!(config("each").media_needed(10).len(), 10);
        let lib = config("library:zipf=1.2");
        assert_eq!(lib.media_needed(200), (0..20).map(MediaKey::Title).collect::<Vec<_>>(), "every title");
        let viewers = lib.viewers(200, 0, &mut title_of);
        assert!(viewers.iter().all(|v| v.file < 20));
    }

    #[test]
    fn library_viewers_watch_their_own_titles_from_scattered_positions_that_change_per_step() {
        let c = config("library");
        let first = c.viewers(20, 0, &mut title_of);
        let mut titles: Vec<u32> = first.iter().map(|v| v.file).collect();
        titles.sort();
        assert_eq!(titles, (0..20).collect::<Vec<_>>(), "twenty viewers, twenty titles");
        let positions: std::collections::HashSet<u64> = first.iter().map(|v| v.first_chunk % 1000).collect();
        assert!(positions.len() >= 18, "scattered: {positions:?}");
        let second = c.viewers(20, 1, &mut title_of);
        let moved = first.iter().zip(&second).filter(|(a, b)| (a.file, a.first_chunk) != (b.file, b.first_chunk));
        assert_eq!(moved.count(), 20, "the next step starts elsewhere");
        assert_eq!(
            c.viewers(20, 0, &mut title_of).iter().map(|v| v.file).collect::<Vec<_>>(),
            first.iter().map(|v| v.file).collect::<Vec<_>>(),
            "the same step is the same"
        );
    }

    #[test]
    fn vbr_gops_span_two_seconds_of_media_and_belong_to_the_file() {
        let c = StreamsConfig { vbr: Some(0.3), chunk: ChunkSize::Media(Duration::from_millis(500)), ..config("one") };
        let viewers = c.viewers(6, 0, &mut format_of);
        let vbr = viewers[0].player.vbr.expect("--vbr gives each player a Vbr");
        assert_eq!((vbr.swing, vbr.chunks_per_gop), (0.3, 4));
        let same_file: Vec<_> = viewers.iter().filter(|v| v.file == viewers[0].file).collect();
        assert!(same_file.len() > 1 && same_file.iter().all(|v| v.player.vbr.unwrap().seed == vbr.seed));
        assert!(config("one").viewers(1, 0, &mut |_| 0)[0].player.vbr.is_none());
    }

    #[test]
    fn a_chunk_in_seconds_depends_on_the_bitrate() {
        use crate::units::Bitrate;
        assert_eq!(ChunkSize::Media(Duration::from_secs(2)).bytes_at(Bitrate(8_000_000)), 2_002_944, "489 pages");
    }
}
