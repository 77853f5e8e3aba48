//! Planning a stream phase: the viewers' settings with every default filled in, the media they read (test
//! media written into the work directory, the user's files, or URLs), the engine and its real queue depth,
//! the scheduler threads (`streams_threads`) and their slot tables, the ingest writers, and the raw-rate phases behind the
//! estimate. Pure, like all planning: the facts (free space, the user's media files, the URLs' sizes) were
//! gathered before.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::facts::{Facts, TargetFacts};
use super::library::first_step_titles;
use super::streams_during::{BackgroundPlan, plan_background};
use super::streams_limits::{StreamsRequest, check_request};
use super::streams_media::{Estimating, Media, media_sources, plan_estimate};
use super::streams_sockets::{ConnectionAsk, check_connections};
use super::streams_threads::{ThreadAsk, ThreadPlan, choose_threads, viewer_engine};
use super::values::choose_engine;
use super::{DirectMode, PhaseKind, PhasePlan, PlanError, TargetPlan};
use crate::engine::{EngineKind, HttpUrl};
use crate::spec::{Assignment, EngineChoice, JobSpec, MAX_VIEWERS, PhaseSpec, StreamsSpec};
use crate::units::serialize_secs;
use ::streams::{LibraryInfo, MediaKey, StreamsConfig, defaults};

/// One stream phase, ready to run.
#[derive(Debug, Clone, Serialize)]
pub struct StreamsPlan {
    /// The viewers' settings (formats, chunk, buffer, watch time, assignment, seed) with defaults filled in.
    pub config: StreamsConfig,
    /// One step of a fixed number of viewers, or the capacity search.
    pub count: StreamCount,
    /// The quality target a count of viewers must meet.
    pub target: StreamTarget,
    /// The count of viewers (or capacity) the user stated (`--expect`); below it the run exits with 1.
    pub expect: Option<u32>,
    /// The media files, in the order viewers' keys map to them.
    pub media: Vec<MediaSource>,
    /// With own media: the key of each media file (same order as `media`); empty for the user's files and
    /// URLs, which viewers take in turn.
    #[serde(skip)]
    pub keys: Vec<MediaKey>,
    /// streamcap writes the media (and removes it afterwards).
    pub own_media: bool,
    /// The library the viewers watch (its titles, size, popularity and why that size); `None` for test files
    /// per format (`one`, `each`).
    pub library: Option<LibraryInfo>,
    /// The engine the scheduler threads use (io_uring may have fallen back to sync; http for URLs).
    pub engine: EngineKind,
    /// Reads bypass the page cache (where the filesystem allows it).
    pub direct: DirectMode,
    /// Scheduler threads at most (`threads.most`); a step runs `threads.for_viewers(count)`, the viewers dealt
    /// round-robin to them.
    pub workers: u32,
    /// Reads in flight per scheduler thread at most: the asked number, lowered to what the engine can hold.
    pub slots_per_worker: u32,
    /// How many scheduler threads a step runs, and why (`streams_threads`).
    pub threads: ThreadPlan,
    /// Bytes of each slot's buffer at most; a longer chunk is read through it.
    pub slot_buffer_bytes: u32,
    /// Background writers beside the viewers (`--ingest`); `None`: none.
    pub ingest: Option<IngestPlan>,
    /// The server's other work beside every step's viewers (`--during`), in the order asked; empty: none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<BackgroundPlan>,
    /// The raw-rate phases whose figures give the estimate (and the search's first count).
    pub estimate: Option<EstimatePlan>,
}

impl StreamsPlan {
    /// The media files of the target's file table the viewers read (none for URLs).
    pub fn media_files(&self) -> Vec<u32> {
        let files = self.media.iter().filter_map(|m| match m {
            MediaSource::File(f) => Some(*f),
            MediaSource::Url { .. } | MediaSource::Segments(_) => None,
        });
        files.collect()
    }

    /// The titles that are playlists of segments.
    pub fn playlists(&self) -> impl Iterator<Item = &::streams::SegmentedTitle> {
        self.media.iter().filter_map(|m| match m {
            MediaSource::Segments(title) => Some(&**title),
            _ => None,
        })
    }

    /// Whether the media must hold written data before the phase: streamcap's own media, unless the engine is
    /// the null engine, which reads nothing (its media stay sparse).
    pub fn needs_data(&self) -> bool {
        self.own_media && self.engine != EngineKind::Null
    }

    /// How long one step of a fixed count runs (its longest viewer); `None` for the search, whose steps vary.
    pub fn runtime(&self) -> Option<Duration> {
        match self.count {
            StreamCount::Fixed(n) => Some(self.config.step_length(n).longest()),
            StreamCount::Search(_) => None,
        }
    }
}

/// How many viewers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamCount {
    /// One step of this many viewers.
    Fixed(u32),
    /// The capacity search.
    Search(SearchPlan),
}

/// Where the capacity search starts and stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SearchPlan {
    /// First count of viewers without an estimate.
    pub start: u32,
    /// With an estimate, the first count is this fraction of it (0.5: half the estimated streams).
    pub start_factor: f64,
    /// Never more viewers than this.
    pub limit: u32,
    /// With an estimate, never more viewers than this multiple of it either; `None`: only `limit` bounds it.
    pub limit_factor: Option<f64>,
    /// Stop bisecting when the gap is at most this fraction (not percent: 0.03 = 3 %) of the passing count.
    pub precision: f64,
    /// Rounds that run the found edge again (the count that passed, then the one that failed).
    pub confirmations: u32,
}

/// A count meets the target when at most `max_stalled` streams stalled and every stream started within
/// `max_startup`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StreamTarget {
    /// Streams that may stall (or never start) while the count still passes; 0 by default.
    pub max_stalled: u32,
    /// Longest start-up (stream start to playback) any stream may take; `max_startup_s`, seconds, in JSON.
    #[serde(rename = "max_startup_s", serialize_with = "serialize_secs")]
    pub max_startup: Duration,
}

/// One media file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaSource {
    /// A file of the target's file table (streamcap's own media, or one of the user's).
    File(u32),
    /// A remote file, fetched in byte ranges.
    Url {
        /// Where it is (its text in JSON).
        #[serde(serialize_with = "serialize_url")]
        url: HttpUrl,
        /// Bytes of the file, as the probe before planning found it.
        size: u64,
    },
    /// A title that is an HLS media playlist, played segment by segment (local segment files or URLs): each
    /// request one segment.
    Segments(Box<::streams::SegmentedTitle>),
}

/// Background writers beside the viewers.
#[derive(Debug, Clone, Serialize)]
pub struct IngestPlan {
    /// All writers together, bytes per second.
    pub bytes_per_sec: f64,
    /// Writer threads; each writes 1 MiB at fixed due times into its own new file and takes an equal share of
    /// the rate.
    pub writers: u32,
    /// Where their files go (the work directory); each is removed after its step.
    pub dir: PathBuf,
}

/// The plan indices of the raw-rate phases: random chunk reads, then sequential reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EstimatePlan {
    /// Plan index of the phase of random reads of one chunk each (queue depth 16): its IOPS bound the count.
    pub random_phase: usize,
    /// Plan index of the phase of sequential 1 MiB reads (queue depth 4): its MB/s bound the count.
    pub sequential_phase: usize,
}

fn serialize_url<S: serde::Serializer>(url: &HttpUrl, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&url.text)
}

/// The viewers' settings with the defaults of `streams` filled in.
/// A player profile (`--player`) gives the buffer (its time or byte cap at the mix's highest bitrate), the
/// prebuffer (its start threshold), the rebuffer threshold and the request size, each unless the spec gives it.
pub fn streams_config(spec: &StreamsSpec, seed: Option<u64>) -> StreamsConfig {
    let mix = spec.mix().expect("checked: a format or a mix is given");
    let profile = spec.player.as_deref().and_then(crate::spec::players::find);
    let top_bps = mix.0.iter().map(|(f, _)| f.bitrate.byte_rate().bytes_per_sec() * 8.0).fold(0.0, f64::max);
    let chunk = profile.map_or(defaults::CHUNK_BYTES, |p| p.request_bytes);
    let delivery = spec.delivery.unwrap_or_default();
    StreamsConfig {
        mix,
        // A segment is the request of segmented delivery; direct play reads in the chunk or the player's size.
        chunk: delivery.segment_chunk().or(spec.chunk).unwrap_or(crate::spec::ChunkSize::Bytes(chunk)),
        delivery,
        buffer: spec.buffer.unwrap_or_else(|| profile.map_or(defaults::BUFFER, |p| p.buffer_at(top_bps as u64))),
        prebuffer: spec.prebuffer.unwrap_or_else(|| profile.map_or(defaults::PREBUFFER, |p| p.start())),
        // A prebuffer given apart is the threshold after a stall too; otherwise the profile's own.
        rebuffer: spec.prebuffer.map_or_else(|| profile.map(|p| p.rebuffer()), |_| None),
        steady_ahead: profile.and_then(::streams::players::steady_ahead),
        watch: spec.duration.unwrap_or(defaults::WATCH),
        ramp: spec.ramp,
        steady_within: spec.steady_within.unwrap_or(defaults::STEADY_WITHIN),
        // A real player's audience seeks and picks titles by popularity (spec::players, AUDIENCE_*) unless the
        // phase says otherwise.
        seek_every: spec.seek_every.or_else(|| profile.and_then(|p| p.seek_every())),
        assignment: spec.files.unwrap_or_else(|| default_assignment(spec, profile.and_then(|p| p.zipf))),
        titles: None,
        media_length: spec.media_length.unwrap_or(defaults::MEDIA_LENGTH),
        seed: seed.unwrap_or(defaults::SEED),
        vbr: spec.vbr.filter(|&v| v > 0.0).map(|pct| pct / 100.0),
    }
}

/// Which files viewers read when the phase does not say: a library of titles (the user's media, or one
/// streamcap writes), its titles picked by the player profile's popularity (`zipf`; `None`: each viewer its own
/// title), unless a media length asks for the test files per format of old (`one`).
fn default_assignment(spec: &StreamsSpec, zipf: Option<f64>) -> Assignment {
    if spec.library.is_none() && spec.media_length.is_some() {
        Assignment::One
    } else {
        Assignment::Library { titles: None, zipf }
    }
}

/// Checks every stream phase's numbers against what the machine allows, before anything is sized from them.
pub(super) fn check_stream_requests(job: &JobSpec, facts: &Facts) -> Result<(), PlanError> {
    for (index, phase) in job.phases.iter().enumerate() {
        let Some(spec) = phase.streams() else { continue };
        if let Some(name) = spec.player.as_deref().filter(|n| crate::spec::players::find(n).is_none()) {
            let known = crate::spec::players::names();
            return Err(PlanError(format!("player '{name}' is not a profile streamcap knows ({known})")));
        }
        let config = streams_config(spec, phase.seed);
        let request = StreamsRequest {
            viewers: most_viewers(spec),
            search: spec.count.is_none(),
            workers: spec.workers.unwrap_or(facts.cpus.max(1)) as usize,
            inflight: spec.inflight.unwrap_or(defaults::SLOTS_PER_WORKER),
            ingest_writers: spec.ingest.map_or(0, |i| i.writers),
        };
        let label = phase.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
        check_request(&config, &request, &facts.limits).map_err(|e| PlanError(format!("{label}: {e}")))?;
        if let (TargetFacts::Remote { media, .. }, Some(sockets)) = (&facts.target, &facts.limits.sockets) {
            let mut servers: Vec<String> =
                media.iter().map(|(url, _)| format!("{} port {}", url.host, url.port)).collect();
            servers.sort();
            servers.dedup();
            let ask = ConnectionAsk { viewers: request.viewers, search: request.search, servers: &servers };
            check_connections(&ask, sockets).map_err(|e| PlanError(format!("{label}: {e}")))?;
        }
        if request.viewers > MAX_VIEWERS {
            return Err(PlanError(format!(
                "{label}: {} viewers is above the most one run supports ({MAX_VIEWERS}): use a smaller --count or \
                 --limit",
                request.viewers
            )));
        }
    }
    Ok(())
}

/// The most viewers a phase can run at once (its count, or the search's limit): the media must serve them.
pub(super) fn most_viewers(spec: &StreamsSpec) -> u32 {
    spec.count.unwrap_or_else(|| spec.limit.unwrap_or(defaults::SEARCH_LIMIT))
}

/// Plans a stream phase: the raw-rate phases of its estimate when it needs them and no earlier phase measured
/// the same (they come first), then the stream phase itself. `next_index` is the plan index the first of them
/// will have; `measured` lists earlier estimates by chunk size.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan_streams_phases(
    job: &JobSpec,
    index: usize,
    (spec, streams): (&PhaseSpec, &StreamsSpec),
    target: &mut TargetPlan,
    facts: &Facts,
    notices: &mut Vec<String>,
    next_index: usize,
    measured: &mut Vec<(u64, EstimatePlan)>,
) -> Result<Vec<PhasePlan>, PlanError> {
    let label = spec.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
    let fail = |m: String| PlanError(format!("{label}: {m}"));
    let mut config = streams_config(streams, spec.seed);
    let remote = matches!(facts.target, TargetFacts::Remote { .. });
    let readers = plan_readers((spec, streams), &label, facts, notices)?;
    let Media { sources: media, keys, titles, library } =
        media_sources(job, streams, &config, target, facts, readers.direct, notices).map_err(fail)?;
    config.titles = titles;
    let library = library.map(|mut info| {
        if let Some(count) = streams.count.filter(|&n| n <= 10_000) {
            info.viewer_titles = first_step_titles(&config, count);
        }
        info
    });
    let threads = &readers.threads;
    let (whole, engine) = (library.is_some(), readers.engine);
    let e = Estimating { job, spec, streams, config: &config, media: &media, whole, threads, engine };
    let (estimate, mut phases) =
        plan_estimate(&e, target, facts, notices, (next_index, measured)).map_err(|e| fail(e.0))?;
    let plan = StreamsPlan {
        slot_buffer_bytes: defaults::SLOT_BUFFER_MAX as u32,
        target: stream_target(streams),
        expect: streams.expect,
        own_media: streams.library.is_none() && !remote,
        library,
        count: stream_count(streams),
        ingest: plan_ingest(streams, target, remote).map_err(fail)?,
        during: plan_background(streams, &config, target.work_dir.as_ref(), remote, facts.scrub.as_ref())
            .map_err(fail)?,
        config,
        media,
        keys,
        engine: readers.engine,
        direct: readers.direct,
        workers: readers.threads.most,
        slots_per_worker: readers.threads.slots_per_worker,
        threads: readers.threads,
        estimate,
    };
    phases.push(PhasePlan {
        runtime: plan.runtime(),
        // Viewers' read errors are counted per step; they never stop the others.
        continue_on_error: true,
        ..PhasePlan::of_spec(label, spec, PhaseKind::Streams(Box::new(plan)))
    });
    Ok(phases)
}

/// How a stream phase's scheduler threads read: the engine, direct I/O, the threads and their slot tables.
struct Readers {
    engine: EngineKind,
    direct: DirectMode,
    threads: ThreadPlan,
}

/// Chooses the engine (http for a remote target) and the scheduler threads (`streams_threads`), saying in
/// `notices` where asked threads hold the viewers' reads back.
fn plan_readers(
    (spec, streams): (&PhaseSpec, &StreamsSpec),
    label: &str,
    facts: &Facts,
    notices: &mut Vec<String>,
) -> Result<Readers, PlanError> {
    let remote = matches!(facts.target, TargetFacts::Remote { .. });
    let engine = if remote {
        EngineKind::Http
    } else {
        choose_engine(spec.engine, facts, notices).map_err(|m| PlanError(format!("{label}: {m}")))?
    };
    if spec.engine == Some(EngineChoice::Null) {
        // Every chunk arrives at once: what is left to see is streamcap's own cost and lag per viewer.
        notices.push(format!("{label}: the null engine reads nothing; the figures are streamcap's own overhead"));
    }
    let direct = match (remote, spec.direct) {
        (true, _) | (false, Some(false)) => DirectMode::Off,
        (false, Some(true)) => DirectMode::Required,
        (false, None) => DirectMode::Preferred,
    };
    let (engine, engine_why) = viewer_engine(engine, direct != DirectMode::Off, facts);
    let asked = streams.inflight.unwrap_or(defaults::SLOTS_PER_WORKER);
    let slots_per_worker = asked.min(engine.max_queue_depth());
    let ask = ThreadAsk {
        engine,
        workers: streams.workers,
        slots_per_worker,
        ingest_writers: streams.ingest.map_or(0, |i| i.writers) + background_workers(streams),
    };
    let mut threads = choose_threads(ask, facts);
    if let Some(why) = engine_why {
        threads.why = format!("{why}; {}", threads.why);
    }
    if let Some(workers) = streams.workers.filter(|_| slots_per_worker < asked && !remote) {
        notices.push(format!(
            "{label}: the {} engine keeps {slots_per_worker} read in flight per scheduler thread, so {workers} \
             thread(s) serve at most {} reads at once; leave --workers out for a thread per viewer",
            engine.name(),
            slots_per_worker * workers
        ));
    }
    Ok(Readers { engine, direct, threads })
}

/// The threads the background loads add (a worker per recording and per probe of a scan, one per other load).
fn background_workers(streams: &StreamsSpec) -> u32 {
    let loads = streams.during.iter().flat_map(|d| d.0.iter());
    loads
        .map(|&l| match l {
            crate::spec::Load::Recording => ::streams::background::RECORDINGS,
            crate::spec::Load::LibraryScan => ::streams::background::SCAN_PROBES,
            _ => 1,
        })
        .sum()
}

/// The ingest writers, in the work directory of a local target; refused where streamcap has none to write in.
fn plan_ingest(streams: &StreamsSpec, target: &TargetPlan, remote: bool) -> Result<Option<IngestPlan>, String> {
    match (streams.ingest, &target.work_dir) {
        (None, _) => Ok(None),
        (Some(i), Some(dir)) if streams.library.is_none() && !remote => {
            Ok(Some(IngestPlan { bytes_per_sec: i.rate.bytes_per_sec(), writers: i.writers, dir: dir.clone() }))
        }
        (Some(_), _) => Err("ingest writes in streamcap's work directory on a local target: not with an http \
                             target or --library"
            .into()),
    }
}

/// A fixed count of viewers, or the capacity search with its defaults filled in.
fn stream_count(streams: &StreamsSpec) -> StreamCount {
    match streams.count {
        Some(n) => StreamCount::Fixed(n),
        None => StreamCount::Search(SearchPlan {
            start: defaults::SEARCH_START,
            start_factor: streams.start_factor.unwrap_or(0.5),
            limit: streams.limit.unwrap_or(defaults::SEARCH_LIMIT),
            limit_factor: streams.limit_factor,
            precision: streams.precision.unwrap_or(defaults::PRECISION_PCT) / 100.0,
            confirmations: streams.confirmations.unwrap_or(defaults::CONFIRMATIONS),
        }),
    }
}

/// The quality target, with its defaults filled in: a player profile's start-up limit follows its start
/// threshold (`Profile::startup_target`), the generic viewer's is `defaults::MAX_STARTUP`.
fn stream_target(streams: &StreamsSpec) -> StreamTarget {
    let profile = streams.player.as_deref().and_then(crate::spec::players::find);
    let default = profile.map_or(defaults::MAX_STARTUP, |p| p.startup_target().max(defaults::MAX_STARTUP));
    StreamTarget { max_stalled: streams.max_stalled.unwrap_or(0), max_startup: streams.max_startup.unwrap_or(default) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_player_profile_sets_buffer_prebuffer_and_request_unless_given() {
        let base = StreamsSpec { format: Some("2160p".parse().unwrap()), count: Some(1), ..StreamsSpec::default() };
        let media3 = StreamsSpec { player: Some("media3".into()), ..base.clone() };
        let c = streams_config(&media3, None);
        // 2000 × 64 KiB at 25 Mbit/s: 41.94 s, below Media3's 50 s.
        assert!((c.buffer.as_secs_f64() - 41.943).abs() < 0.01, "{:?}", c.buffer);
        assert_eq!((c.prebuffer, c.rebuffer), (Duration::from_secs(1), Some(Duration::from_secs(2))));
        let start = StreamsSpec { prebuffer: Some(Duration::from_secs(3)), ..media3.clone() };
        assert_eq!(streams_config(&start, None).rebuffer, None, "a prebuffer given apart is the rebuffer too");
        assert!(matches!(c.chunk, crate::spec::ChunkSize::Bytes(65_536)));
        let given = StreamsSpec { buffer: Some(Duration::from_secs(5)), ..media3 };
        assert_eq!(streams_config(&given, None).buffer, Duration::from_secs(5));
        assert_eq!(streams_config(&base, None).buffer, defaults::BUFFER);
    }

    /// A player's start-up limit is its start threshold, at least the generic 2 s (hls.js's 6 s of media take
    /// about 6 s to arrive near capacity); `--max-startup` wins.
    #[test]
    fn the_start_up_limit_follows_the_players_start_threshold_unless_given() {
        let base = StreamsSpec { format: Some("1080p".parse().unwrap()), ..StreamsSpec::default() };
        let with = |player: &str| StreamsSpec { player: Some(player.into()), ..base.clone() };
        assert_eq!(stream_target(&base).max_startup, Duration::from_secs(2));
        assert_eq!(stream_target(&with("media3")).max_startup, Duration::from_secs(2));
        assert_eq!(stream_target(&with("jellyfin-web")).max_startup, Duration::from_secs(3));
        assert_eq!(stream_target(&with("hls.js")).max_startup, Duration::from_secs(6));
        let given = StreamsSpec { max_startup: Some(Duration::from_secs(1)), ..with("hls.js") };
        assert_eq!(stream_target(&given).max_startup, Duration::from_secs(1));
    }

    /// A real player's audience picks titles by popularity and seeks unless the phase says otherwise; the
    /// generic viewer's watches its own title through, as before profiles. The plan says so.
    #[test]
    fn a_real_players_audience_picks_by_popularity_and_seeks_unless_told() {
        let base = StreamsSpec { format: Some("1080p".parse().unwrap()), count: Some(4), ..StreamsSpec::default() };
        let generic = streams_config(&base, None);
        assert_eq!((generic.assignment, generic.seek_every), (Assignment::Library { titles: None, zipf: None }, None));
        assert_eq!(super::super::display_streams::audience_words(&generic), None);
        let hls = StreamsSpec { player: Some("hls.js".into()), ..base.clone() };
        let c = streams_config(&hls, None);
        assert_eq!(c.assignment, Assignment::Library { titles: None, zipf: Some(0.8) });
        assert_eq!(c.seek_every, Some(Duration::from_secs(600)));
        assert_eq!(
            super::super::display_streams::audience_words(&c).as_deref(),
            Some("popularity: Zipf s=0.8, seeks every 10 min on average")
        );
        // What the phase says wins: its own files and seeks.
        let told = StreamsSpec {
            files: Some(Assignment::Library { titles: Some(20), zipf: None }),
            seek_every: Some(Duration::from_secs(30)),
            ..hls
        };
        let c = streams_config(&told, None);
        assert_eq!(
            (c.assignment, c.seek_every),
            (Assignment::Library { titles: Some(20), zipf: None }, Some(Duration::from_secs(30)))
        );
    }
}
