//! How long `streamcap check` looks, in one table: the three profiles (`--quick`, default, `--thorough`) and
//! the jobs they give. Every size and duration of a check lives here and nowhere else.
//!
//! The default: a 1 GiB data set (less when free space is short), 5 s per raw phase, a tree of 2 000 small
//! files, and per video format a capacity search of about three steps (two for the later formats, which start
//! where the first found its edge), bisected to 15 %, then its edge run twice more (two steps each: the count
//! that passed, the one that failed, and now and then a search around an edge that moved). All of it reads one
//! media library of 8 GiB that every format reads (at most half the free space; larger than the caches of drives
//! and controllers). `--thorough` (32 GiB, 3 %, two) scales all of it. `--quick` (a 2 GiB library, 20 %, no
//! confirmation: one run of each edge) judges steps of the same kind, a little shorter (arrivals over 2 s, steady
//! within 6 s — 16 s for 1080p, see `Settings::steady_within` — 3 s judged), and fewer of them: its first search starts at the estimate and moves in steps of
//! the precision, and each later format runs one step at the earlier edge's passing count scaled to its bitrate; when
//! that passes, probes 10 % above it and above each probe that passes, never above 0.94 of the format's own
//! estimate (above that a step cannot prove its buffers fill, and a failing probe runs its whole bound), and the
//! highest count that passes is the capacity, its failing count the earlier edge's scaled, derived and said so,
//! or the failing probe's, measured, with no step between (when the first step fails, the search goes on down in
//! 5 % steps and measures both sides). About seven steps in all (a later format one to four), where the searches
//! took seven to twelve; its raw phases are 0.5 s (after 0.25 s of ramp) and its small-file phases 0.5 s. The cache section
//! adds one raw phase of the same length (the page cache, as `streamcap cache` measures it).
//! `Settings::forecast_parts` says how long each takes; docs/streams.md what was measured.
//!
//! A step of the search is an audience, not a stampede: its viewers arrive over a window (Poisson, about one a
//! second, at most `arrival`), each fills its buffer (steady state, within `Settings::steady_within` of arriving), and the
//! step is judged over `judged` of playback from the instant the last buffer was full (`streams::judge`). The
//! players' buffer is the prebuffer plus `extra_chunks` chunks: full means the player got ahead of its start-up
//! by that many reads of its own. Why so short a buffer: filling it takes the extra media divided by the spare
//! fraction of the disk, and at the edge of capacity (a few per cent to spare) a buffer of many seconds takes
//! minutes to fill, longer than any check can wait; two chunks fill within the bound at 93 % of the disk's
//! bandwidth (the bound is longer for a low bitrate, whose chunk is a second of media), and a count above the
//! bandwidth still cannot fill them. A step therefore lasts about arrival +
//! fill + judged playback (`Settings::step`), and a failing one ends at its first failure; `--quick` stays
//! short by judging fewer steps, never by judging them before every player is steady.

use std::time::Duration;

use crate::app::cache::profile as cache;
use crate::engine::EngineKind;
use crate::plan::Facts;
use crate::spec::players::{self, Profile as PlayerProfile};
use crate::spec::{
    Assignment, ChunkSize, During, EngineChoice, FileIo, FileOp, FileSelect, FileSetPhaseSpec, FileSizeSpec,
    FileTreeSpec, FileWorkloadSpec, Format, FormatMode, JobSpec, Load, OpRateSpec, PhaseSpec, RwMode, SpecKind,
    SpecOrigin, StreamsSpec,
};
use crate::streams::model::STEADY_AHEAD;
use crate::units::Bytes;

/// The video formats of the verdict table, in the order shown (names from `streams::FORMATS`).
pub const FORMATS: [&str; 3] = ["1080p", "2160p-hevc", "2160p-remux"];

/// The smallest raw data set worth measuring; below it the check refuses to start.
pub const MIN_DATA_SET: u64 = 32 << 20;

/// Size of each small file.
pub const SMALL_FILE: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Quick,
    Default,
    Thorough,
}

/// Everything a profile decides.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub data_set: Bytes,
    pub raw_runtime: Duration,
    pub raw_ramp: Duration,
    /// Directories of the small-file tree, and files in each.
    pub dirs: u32,
    pub files_per_dir: u64,
    /// Time of the stat and read phases (and the cap of the create phase, which ends when every file exists).
    pub files_runtime: Duration,
    /// Each step of the capacity search: viewers arrive over at most `arrival`, each must reach steady state
    /// within `steady_floor` of arriving (or longer: `Settings::steady_within`), then `judged` of playback is judged.
    pub arrival: Duration,
    pub steady_floor: Duration,
    pub judged: Duration,
    /// How many chunks beyond the prebuffer (`PREBUFFER`) the players' buffer holds.
    pub extra_chunks: u32,
    /// Size of the media library every format's viewers read (titles written once, before the first stream
    /// phase): the profile's time budget for writing it, shrunk by the plan to the free space.
    pub library: Bytes,
    /// Each of the two raw-rate measurements behind the estimate.
    pub estimate_time: Duration,
    /// Bisect until the gap is within this fraction of the passing count.
    pub precision: f64,
    /// The search starts at this fraction of the estimate and stops at `limit_factor` times it. `--quick` starts
    /// at the estimate itself and moves down in steps of the precision (no confirmations): a step that fails
    /// ends at its first failure (about 3 s) while one that passes lasts the whole step (5–7 s), so a search
    /// that starts above the edge and walks down is cheaper than one that climbs to it.
    pub start_factor: f64,
    pub limit_factor: f64,
    /// Rounds that run each format's edge again (two steps each: the count that passed, the one that failed).
    pub confirmations: u32,
    /// The player profile the viewers play as (`--player`; generic unless told).
    pub player: &'static PlayerProfile,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Default => "default",
            Profile::Thorough => "thorough",
        }
    }

    pub fn settings(self) -> Settings {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        match self {
            Profile::Quick => Settings {
                data_set: Bytes(256 << 20),
                raw_runtime: ms(500),
                raw_ramp: ms(250),
                dirs: 2,
                files_per_dir: 250,
                files_runtime: ms(500),
                arrival: s(2),
                steady_floor: s(6),
                judged: s(3),
                extra_chunks: 2,
                library: Bytes::gib(2),
                estimate_time: s(1),
                precision: 0.2,
                start_factor: 1.0,
                limit_factor: 1.25,
                confirmations: 0,
                player: players::DEFAULT,
            },
            Profile::Default => Settings {
                data_set: Bytes(1 << 30),
                raw_runtime: s(5),
                raw_ramp: s(1),
                dirs: 4,
                files_per_dir: 500,
                files_runtime: s(3),
                arrival: s(3),
                steady_floor: s(8),
                judged: s(4),
                extra_chunks: 2,
                library: Bytes::gib(8),
                estimate_time: s(2),
                precision: 0.15,
                start_factor: 0.5,
                limit_factor: 2.0,
                confirmations: 2,
                player: players::DEFAULT,
            },
            Profile::Thorough => Settings {
                data_set: Bytes(4 << 30),
                raw_runtime: s(20),
                raw_ramp: s(2),
                dirs: 16,
                files_runtime: s(15),
                arrival: s(10),
                steady_floor: s(20),
                judged: s(15),
                extra_chunks: 3,
                library: Bytes::gib(32),
                estimate_time: s(5),
                precision: 0.03,
                limit_factor: 4.0,
                ..Profile::Default.settings()
            },
        }
    }
}

impl Settings {
    /// Whether the viewers play as the generic viewer, whose buffer the check sizes (`buffer`); a real
    /// player's profile keeps its own buffer and is steady `STEADY_AHEAD` past its start threshold.
    fn generic(&self) -> bool {
        self.player.name == players::DEFAULT.name
    }

    /// The media a viewer of `format` gains from its start threshold to steady state.
    fn steady_gain(&self, format: &Format) -> Duration {
        if self.generic() {
            return self.buffer(format).saturating_sub(PREBUFFER);
        }
        let bps = format.bitrate.byte_rate().bytes_per_sec() * 8.0;
        STEADY_AHEAD.min(self.player.buffer_at(bps as u64).saturating_sub(self.player.start()))
    }

    /// The players' buffer for `format`: the prebuffer and `extra_chunks` chunks of its media.
    pub fn buffer(&self, format: &Format) -> Duration {
        PREBUFFER + chunk_media(format) * self.extra_chunks
    }

    /// How long after arriving a viewer of `format` may take to reach steady state: the profile's
    /// `steady_floor`, or longer where a count at `FILL_AT_LOAD` of the bandwidth needs longer to fill the
    /// buffer. A player is full when the next chunk no longer fits, so one that started on its prebuffer must
    /// gain `extra_chunks - 1` chunks, and with 1 − L of the bandwidth to spare it gains media at L ÷ (1 − L)
    /// of the rate it plays: one chunk of 1080p (1.05 s of media) takes 14 s at 93 %. A shorter bound would cap
    /// the verdict below the bound for a low bitrate (0.79–0.84 of it with 8 s, docs/validation.md), where a
    /// high bitrate's chunk is a tenth of a second of media and fills at once.
    /// A real player's profile gains `STEADY_AHEAD` from its own start threshold the same way (27 s at 93 %).
    pub fn steady_within(&self, format: &Format) -> Duration {
        let (start, fill) = self.start_and_fill(format, FILL_AT_LOAD);
        self.steady_floor.max(start + fill)
    }

    /// The media a viewer of `format` starts playing on, and the wall time it takes to gain what it needs beyond
    /// that to be steady when the step reads `load` of the bandwidth: with 1 − load to spare it gains media at
    /// load ÷ (1 − load) of the rate it plays. The bound (`steady_within`) takes 93 %, the forecast 90 %.
    pub(super) fn start_and_fill(&self, format: &Format, load: f64) -> (Duration, Duration) {
        let (start, gain) = self.start_and_gain(format);
        (start, gain.mul_f64(load / (1.0 - load)))
    }

    /// The media a viewer of `format` holds when it starts playing, and the media it must gain beyond that to be
    /// steady (`steady_within` says why one chunk less than the generic buffer's extra chunks).
    pub(super) fn start_and_gain(&self, format: &Format) -> (Duration, Duration) {
        match self.generic() {
            true => (PREBUFFER, chunk_media(format) * self.extra_chunks.saturating_sub(1)),
            false => (self.player.start(), self.steady_gain(format)),
        }
    }
}

/// The media one chunk of `format` holds.
fn chunk_media(format: &Format) -> Duration {
    Duration::from_secs_f64(CHUNK as f64 / format.bitrate.byte_rate().bytes_per_sec())
}

/// The share of the bandwidth at which a step's viewers must still be able to reach steady state within their
/// bound (`Settings::steady_within`): the verdict is to come within 10 % of what the storage carries.
const FILL_AT_LOAD: f64 = 0.93;

pub(super) fn format(name: &str) -> Format {
    Format::parse(name).expect("the check's formats are in the table")
}

/// The raw phases: sequential 1 MiB writes and reads at queue depth 8, then 4 KiB random reads at queue depth
/// 32 and 1, all with direct I/O where the filesystem allows it (the planner's default).
pub fn raw_job(settings: &Settings, data_set: Bytes) -> JobSpec {
    let phase = |name: &str, rw, bs: &str, iodepth| PhaseSpec {
        name: Some(name.into()),
        rw: Some(rw),
        bs: Some(bs.parse().expect("a fixed block size parses")),
        iodepth: Some(iodepth),
        size: Some(data_set),
        runtime: Some(settings.raw_runtime),
        ramp: Some(settings.raw_ramp),
        ..PhaseSpec::default()
    };
    JobSpec {
        origin: SpecOrigin::Default,
        target: None,
        interval: None,
        phases: vec![
            phase(RAW_PHASES[0], RwMode::Write, "1M", 8),
            phase(RAW_PHASES[1], RwMode::Read, "1M", 8),
            phase(RAW_PHASES[2], RwMode::RandRead, "4k", 1),
            phase(RAW_PHASES[3], RwMode::RandRead, "4k", 32),
        ],
        notices: Vec::new(),
    }
}

/// With the sync engine a thread holds one request at a time (fio lowers its iodepth to 1 as well), so each raw
/// phase's queue depth (and the page-cache phase's) becomes as many threads of depth 1: "queue depth 32" is then
/// still 32 requests in flight, as with io_uring, where it would otherwise measure depth 1 twice under two names.
pub fn depth_as_threads(job: &mut JobSpec) {
    for phase in job.phases.iter_mut().filter(|p| at_a_depth(p)) {
        phase.jobs = phase.iodepth;
        phase.iodepth = Some(1);
    }
}

/// Whether the check's phases read with the sync engine: asked for (`--engine sync`), or where io_uring is not
/// available and nothing was asked — the planner's own choice (`plan::engine_for`).
pub fn reads_with_sync(asked: Option<EngineChoice>, facts: &Facts) -> bool {
    crate::plan::engine_for(asked, facts) == Some(EngineKind::Sync)
}

/// The check's phases that ask for a queue depth: the raw phases and the page-cache phase.
fn at_a_depth(phase: &PhaseSpec) -> bool {
    let name = phase.name.as_deref().unwrap_or_default();
    RAW_PHASES.contains(&name) || name == PAGE_CACHE_PHASE
}

/// Names of the raw phases, in order (the summary finds them by name).
pub const RAW_PHASES: [&str; 4] = ["seq-write 1M qd8", "seq-read 1M qd8", "rand-read 4k qd1", "rand-read 4k qd32"];

/// The cache section's own phase: buffered re-reads of the start of the data set, read into RAM first (the
/// page-cache plateau of `streamcap cache`, through the same phase). Its region: the cache command's, or the
/// data set when that is smaller.
pub const PAGE_CACHE_PHASE: &str = cache::PAGE_CACHE;

pub fn page_cache_job(settings: &Settings, data_set: Bytes) -> PhaseSpec {
    let region = Bytes(cache::PAGE_CACHE_REGION.0.min(data_set.0));
    cache::page_cache_phase(PAGE_CACHE_PHASE, region, settings.raw_runtime, cache::BLOCK)
}

/// Names of the small-file phases that are measured: create, stat, read.
pub const FILE_PHASES: [&str; 3] = ["files create", "files stat", "files read"];

/// The small-file phases on one tree of `dirs` × `files_per_dir` files of 4 KiB: create the tree (the format
/// step: create and write every file, in several threads; measured as files per second), stat at random, then
/// read whole files at random. `direct`: open the files with O_DIRECT, so that creating a file reaches the
/// device and reads come from it (the files were just written and would otherwise sit in the page cache).
pub fn files_job(settings: &Settings, direct: bool) -> JobSpec {
    let tree = FileTreeSpec {
        name: "check".into(),
        anchor: None,
        depth: 1,
        width: settings.dirs,
        files: settings.files_per_dir,
        size: FileSizeSpec::Fixed(Bytes(SMALL_FILE)),
        placement: None,
        total_size: None,
        direct: None,
        shared: None,
    };
    let phase = |name: &str, format, op: Option<FileOp>| PhaseSpec {
        name: Some(name.into()),
        runtime: Some(settings.files_runtime),
        // Direct I/O where the filesystem allows it, buffered with a notice where it does not.
        direct: Some(direct),
        kind: Some(SpecKind::FileSet(Box::new(FileSetPhaseSpec {
            trees: vec![tree.clone()],
            workloads: op
                .map(|operation| FileWorkloadSpec {
                    name: None,
                    tree: None,
                    operation: Some(operation),
                    rdpct: None,
                    xfersize: Some("4k".parse().expect("a fixed block size parses")),
                    fileselect: Some(FileSelect::Random),
                    fileio: Some(FileIo::Sequential),
                    threads: Some(4),
                    skew: None,
                    dirs: None,
                    shared: None,
                    rank: None,
                    stopafter: None,
                    delete_first: None,
                })
                .into_iter()
                .collect(),
            rate: Some(OpRateSpec::Max),
            format: Some(format),
            format_with: None,
        }))),
        ..PhaseSpec::default()
    };
    JobSpec {
        origin: SpecOrigin::Default,
        target: None,
        interval: None,
        phases: vec![
            phase(FILE_PHASES[0], FormatMode::Only, None),
            phase(FILE_PHASES[1], FormatMode::No, Some(FileOp::Getattr)),
            phase(FILE_PHASES[2], FormatMode::No, Some(FileOp::Read)),
        ],
        notices: Vec::new(),
    }
}

/// Where the check's viewers read: a library streamcap writes (of this size, or the profile's), or the user's.
#[derive(Debug, Clone, Default)]
pub struct Media {
    /// The user's library directory (`--library`), resolved.
    pub library: Option<std::path::PathBuf>,
    /// `--library-size`: the generated library's size instead of the profile's.
    pub size: Option<Bytes>,
    /// The background loads each format's search runs again beside (`--during`, all of them with `--thorough`):
    /// the "what breaks first" table.
    pub during: Vec<Load>,
}

/// The whole check as one job: the raw phases, the small-file phases, then a capacity search per video format
/// (the largest bitrate first: its media also serves the raw-rate measurement behind every format's estimate,
/// since all use the same chunk). Every format reads the same library (written once), each viewer its own
/// title at the format's bitrate. `direct`: the small files are opened with O_DIRECT.
pub fn check_job(settings: &Settings, data_set: Bytes, direct: bool, media: &Media) -> JobSpec {
    let mut job = raw_job(settings, data_set);
    job.phases.push(page_cache_job(settings, data_set));
    job.phases.extend(files_job(settings, direct).phases);
    for name in FORMATS.iter().rev() {
        job.phases.push(PhaseSpec {
            name: Some(stream_phase_name(name)),
            kind: Some(SpecKind::Streams(Box::new(format_search(settings, media, name)))),
            ..PhaseSpec::default()
        });
    }
    // What breaks first: every format's search again beside each load, after all of them ran alone (a search
    // beside a load starts from the edge of the one before it beside the same load, never from one alone).
    for &load in &media.during {
        for name in FORMATS.iter().rev() {
            let streams = StreamsSpec {
                during: Some(During(vec![load])),
                // It starts at the format's edge alone and walks down; one run of its edge, to 10 % at the
                // finest, keeps a thorough check's twelve more searches near its own length, not four times it.
                confirmations: Some(0),
                precision: Some(settings.precision.max(BESIDE_PRECISION) * 100.0),
                ..format_search(settings, media, name)
            };
            job.phases.push(PhaseSpec {
                name: Some(during_phase_name(name, load)),
                kind: Some(SpecKind::Streams(Box::new(streams))),
                ..PhaseSpec::default()
            });
        }
    }
    job
}

/// The finest precision of a search beside a load (a fraction, as `Settings::precision`).
pub const BESIDE_PRECISION: f64 = 0.10;

/// One format's capacity search (its viewers alone).
fn format_search(settings: &Settings, media: &Media, name: &str) -> StreamsSpec {
    let format = format(name);
    // The generic viewer's buffer, start and chunk are the check's; a real player's are its profile's.
    let generic = settings.generic();
    StreamsSpec {
        player: Some(settings.player.name.to_string()),
        buffer: generic.then(|| settings.buffer(&format)),
        steady_within: Some(settings.steady_within(&format)),
        prebuffer: generic.then_some(PREBUFFER),
        format: Some(format),
        max: Some(true),
        chunk: generic.then_some(ChunkSize::Bytes(CHUNK)),
        duration: Some(settings.judged),
        ramp: Some(settings.arrival),
        // Each viewer its own title, or a real player's audience's popularity: a hot title's second viewer may
        // be served by the page cache, and a step whose devices read less than its viewers did is marked
        // cache-served (`results::served`) whatever the popularity.
        files: Some(Assignment::Library { titles: None, zipf: settings.player.zipf }),
        library: media.library.clone(),
        library_size: media.library.is_none().then(|| media.size.unwrap_or(settings.library)),
        precision: Some(settings.precision * 100.0),
        start_factor: Some(settings.start_factor),
        limit_factor: Some(settings.limit_factor),
        confirmations: Some(settings.confirmations),
        estimate: Some(true),
        estimate_time: Some(settings.estimate_time),
        max_stalled: Some(TARGET_MAX_STALLED),
        max_startup: Some(settings.player.startup_target()),
        ..StreamsSpec::default()
    }
}

/// The name of a format's search beside a background load ("streams 2160p remux during library-scan").
pub fn during_phase_name(format: &str, load: Load) -> String {
    format!("{} during {load}", stream_phase_name(format))
}

/// The name of the capacity-search phase of a format, by its label ("streams 2160p remux"): the name appears in
/// notes and tables a reader reads, where the format's id ("2160p-remux") would be jargon.
pub fn stream_phase_name(format: &str) -> String {
    let label = Format::parse(format).map_or_else(|_| format.to_string(), |f| f.label);
    format!("streams {label}")
}

/// The chunk every viewer asks for (the `streams` default).
pub const CHUNK: u64 = 1 << 20;

/// The media a player needs before it starts playing (the `streams` default).
pub const PREBUFFER: Duration = Duration::from_secs(2);

/// The quality target of the verdict: no stream stalls and every stream starts within its player's start-up
/// target (`Profile::startup_target`: 2 s for the generic viewer, hls.js's 6 s of media for hls.js).
pub const TARGET_MAX_STALLED: u32 = 0;

/// The raw data set: the profile's, or a quarter of the free space when that is smaller (in whole MiB).
pub fn data_set(settings: &Settings, free: Option<Bytes>) -> Bytes {
    match free {
        Some(free) => Bytes(settings.data_set.0.min(free.0 / 4 / (1 << 20) * (1 << 20))),
        None => settings.data_set,
    }
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
