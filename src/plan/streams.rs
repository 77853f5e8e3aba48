//! Planning a stream phase: the viewers' settings with every default filled in, the media they read (test
//! media written into the work directory, the user's files, or URLs), the engine and its real queue depth,
//! the scheduler threads and their slot tables, the ingest writers, and the raw-rate phases behind the
//! estimate. Pure, like all planning: the facts (free space, the user's media files, the URLs' sizes) were
//! gathered before.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::build::JobContext;
use super::facts::{Facts, TargetFacts};
use super::raw::plan_raw_phase;
use super::streams_limits::{StreamsRequest, check_request};
use super::values::choose_engine;
use super::{DirectMode, FilePlan, PhasePlan, PlanError, TargetKind, TargetPlan};
use crate::engine::{EngineKind, HttpUrl};
use crate::spec::{BlockSizeSpec, EngineChoice, JobSpec, MAX_VIEWERS, PhaseSpec, RwMode, StreamsSpec};
use crate::streams::{MediaKey, StreamsConfig, defaults};
use crate::units::{Bytes, format_duration, serialize_secs};

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
    /// The engine the scheduler threads use (io_uring may have fallen back to sync; http for URLs).
    pub engine: EngineKind,
    /// Reads bypass the page cache (where the filesystem allows it).
    pub direct: DirectMode,
    /// Scheduler threads; viewers are dealt round-robin to them.
    pub workers: u32,
    /// Reads in flight per scheduler thread at most: the asked number, lowered to what the engine can hold.
    pub slots_per_worker: u32,
    /// Bytes of each slot's buffer at most; a longer chunk is read through it.
    pub slot_buffer_bytes: u32,
    /// Background writers beside the viewers (`--ingest`); `None`: none.
    pub ingest: Option<IngestPlan>,
    /// The raw-rate phases whose figures give the estimate (and the search's first count).
    pub estimate: Option<EstimatePlan>,
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
pub fn streams_config(spec: &StreamsSpec, seed: Option<u64>) -> StreamsConfig {
    StreamsConfig {
        mix: spec.mix().expect("checked: a format or a mix is given"),
        chunk: spec.chunk.unwrap_or(crate::spec::ChunkSize::Bytes(defaults::CHUNK_BYTES)),
        buffer: spec.buffer.unwrap_or(defaults::BUFFER),
        prebuffer: spec.prebuffer.unwrap_or(defaults::PREBUFFER),
        watch: spec.duration.unwrap_or(defaults::WATCH),
        ramp: spec.ramp,
        steady_within: spec.steady_within.unwrap_or(defaults::STEADY_WITHIN),
        seek_every: spec.seek_every,
        assignment: spec.files.unwrap_or(crate::spec::Assignment::One),
        media_length: spec.media_length.unwrap_or(defaults::MEDIA_LENGTH),
        seed: seed.unwrap_or(defaults::SEED),
        vbr: spec.vbr.filter(|&v| v > 0.0).map(|pct| pct / 100.0),
    }
}

/// Checks every stream phase's numbers against what the machine allows, before anything is sized from them.
pub(super) fn check_stream_requests(job: &JobSpec, facts: &Facts) -> Result<(), PlanError> {
    for (index, phase) in job.phases.iter().enumerate() {
        let Some(spec) = phase.streams.as_deref() else { continue };
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
fn most_viewers(spec: &StreamsSpec) -> u32 {
    spec.count.unwrap_or_else(|| spec.limit.unwrap_or(defaults::SEARCH_LIMIT))
}

/// The name of a test media file in the work directory: phases watching the same format share it.
pub fn media_name(config: &StreamsConfig, key: MediaKey) -> String {
    let format = &config.mix.0[key.format].0;
    let slug: String = format.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("media-{slug}-{}.bin", key.number)
}

/// The test media every stream phase of `job` writes: file name and size. Phases reading the user's files or
/// URLs need none.
pub(super) fn own_media_files(job: &JobSpec) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    for phase in &job.phases {
        let Some(spec) = phase.streams.as_deref().filter(|s| s.use_existing.is_none()) else { continue };
        let config = streams_config(spec, phase.seed);
        for key in config.media_needed(most_viewers(spec)) {
            files.push((media_name(&config, key), config.media_bytes(key.format)));
        }
    }
    files
}

/// Plans a stream phase: the raw-rate phases of its estimate when it needs them and no earlier phase measured
/// the same (they come first), then the stream phase itself. `next_index` is the plan index the first of them
/// will have; `measured` lists earlier estimates by chunk size.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan_streams_phases(
    job: &JobSpec,
    index: usize,
    spec: &PhaseSpec,
    target: &mut TargetPlan,
    facts: &Facts,
    notices: &mut Vec<String>,
    next_index: usize,
    measured: &mut Vec<(u64, EstimatePlan)>,
) -> Result<Vec<PhasePlan>, PlanError> {
    let streams = spec.streams.as_deref().expect("a stream phase");
    let label = spec.name.clone().unwrap_or_else(|| format!("phase {}", index + 1));
    let fail = |m: String| PlanError(format!("{label}: {m}"));
    let config = streams_config(streams, spec.seed);
    check_prebuffer(&config).map_err(fail)?;
    let remote = matches!(facts.target, TargetFacts::Remote { .. });
    let (media, keys) = media_sources(streams, &config, target, facts).map_err(fail)?;
    let readers = plan_readers(spec, &label, facts, notices)?;
    let mut phases = Vec::new();
    let wants_estimate = streams.estimate.unwrap_or(streams.max == Some(true));
    let estimate = match (&media[0], wants_estimate) {
        (MediaSource::File(file), true) => {
            let chunk = config.chunk_bytes(0);
            match measured.iter().find(|(c, _)| *c == chunk) {
                Some((_, shared)) => Some(*shared),
                None => {
                    let time = streams.estimate_time.unwrap_or(defaults::ESTIMATE_TIME);
                    let planned = estimate_phases(job, *file, chunk, time, spec, target, facts, notices)?;
                    let plan = EstimatePlan { random_phase: next_index, sequential_phase: next_index + 1 };
                    measured.push((chunk, plan));
                    phases.extend(planned);
                    Some(plan)
                }
            }
        }
        (MediaSource::Url { .. }, true) if streams.estimate == Some(true) => {
            return Err(fail("the estimate measures raw reads of a local file: not with an http target".into()));
        }
        _ => None,
    };
    let plan = StreamsPlan {
        slot_buffer_bytes: defaults::SLOT_BUFFER_MAX as u32,
        target: stream_target(streams),
        expect: streams.expect,
        own_media: streams.use_existing.is_none() && !remote,
        count: stream_count(streams),
        ingest: plan_ingest(streams, target, remote).map_err(fail)?,
        config,
        media,
        keys,
        engine: readers.engine,
        direct: readers.direct,
        workers: readers.workers,
        slots_per_worker: readers.slots_per_worker,
        estimate,
    };
    phases.push(super::neutral::stream_phase(label, spec, plan, target));
    Ok(phases)
}

/// Refuses a prebuffer longer than the buffer: the player could never start.
fn check_prebuffer(config: &StreamsConfig) -> Result<(), String> {
    if config.prebuffer > config.buffer {
        return Err(format!(
            "the prebuffer ({}) is larger than the buffer ({}): the player could never start; give a smaller \
             --prebuffer or a larger --buffer",
            format_duration(config.prebuffer),
            format_duration(config.buffer)
        ));
    }
    Ok(())
}

/// How a stream phase's scheduler threads read: the engine, direct I/O, the threads and their slot tables.
struct Readers {
    engine: EngineKind,
    direct: DirectMode,
    workers: u32,
    slots_per_worker: u32,
}

/// Chooses the engine (http for a remote target) and lowers the slots per scheduler thread to the depth it
/// can hold, saying so in `notices`.
fn plan_readers(spec: &PhaseSpec, label: &str, facts: &Facts, notices: &mut Vec<String>) -> Result<Readers, PlanError> {
    let streams = spec.streams.as_deref().expect("a stream phase");
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
    let workers = streams.workers.unwrap_or(facts.cpus.max(1));
    let asked = streams.inflight.unwrap_or(defaults::SLOTS_PER_WORKER);
    let slots_per_worker = asked.min(engine.max_queue_depth());
    if slots_per_worker < asked && !remote {
        notices.push(format!(
            "{label}: the {} engine keeps {slots_per_worker} read in flight per scheduler thread, so {workers} \
             thread(s) serve at most {} reads at once; use the io_uring engine or more --workers for more",
            engine.name(),
            slots_per_worker * workers
        ));
    }
    Ok(Readers { engine, direct, workers, slots_per_worker })
}

/// The ingest writers, in the work directory of a local target; refused where streamcap has none to write in.
fn plan_ingest(streams: &StreamsSpec, target: &TargetPlan, remote: bool) -> Result<Option<IngestPlan>, String> {
    match (streams.ingest, &target.work_dir) {
        (None, _) => Ok(None),
        (Some(i), Some(dir)) if streams.use_existing.is_none() && !remote => {
            Ok(Some(IngestPlan { bytes_per_sec: i.rate.bytes_per_sec(), writers: i.writers, dir: dir.clone() }))
        }
        (Some(_), _) => Err("ingest writes in streamcap's work directory on a local target: not with an http \
                             target or use-existing"
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
        }),
    }
}

/// The quality target, with its defaults filled in.
fn stream_target(streams: &StreamsSpec) -> StreamTarget {
    StreamTarget {
        max_stalled: streams.max_stalled.unwrap_or(0),
        max_startup: streams.max_startup.unwrap_or(defaults::MAX_STARTUP),
    }
}

/// The media of a phase: streamcap's own files (found in the target's table by name), the user's files
/// (added to the table, read only), or the URLs of a remote target.
fn media_sources(
    streams: &StreamsSpec,
    config: &StreamsConfig,
    target: &mut TargetPlan,
    facts: &Facts,
) -> Result<(Vec<MediaSource>, Vec<MediaKey>), String> {
    if let TargetFacts::Remote { media, .. } = &facts.target {
        let min = (0..config.mix.0.len()).map(|f| config.chunk_bytes(f)).max().unwrap_or(4096);
        if let Some((url, size)) = media.iter().find(|(_, size)| *size < min) {
            return Err(format!(
                "{} holds {size} bytes, less than one chunk ({min} bytes): give a smaller chunk",
                url.text
            ));
        }
        return Ok((
            media.iter().map(|(url, size)| MediaSource::Url { url: url.clone(), size: *size }).collect(),
            vec![],
        ));
    }
    if target.kind != TargetKind::Directory {
        return Err(
            "viewers read media under a directory (or from http:// URLs): give a directory as the target".into()
        );
    }
    if let Some(dir) = &streams.use_existing {
        let min = (0..config.mix.0.len()).map(|f| config.chunk_bytes(f)).max().unwrap_or(4096);
        let listing =
            facts.media_libraries.iter().find(|(d, _)| d == dir).map(|(_, files)| files.as_slice()).unwrap_or(&[]);
        let usable: Vec<&(PathBuf, u64)> = listing.iter().filter(|(_, size)| *size >= min).collect();
        if usable.is_empty() {
            return Err(format!("{} holds no file of at least one chunk ({min} bytes) to read", dir.display()));
        }
        let mut media = Vec::new();
        for (path, size) in usable {
            target.files.push(FilePlan { path: path.clone(), size: Bytes(size / 4096 * 4096), created: false });
            media.push(MediaSource::File(target.files.len() as u32 - 1));
        }
        return Ok((media, Vec::new()));
    }
    let keys = config.media_needed(most_viewers(streams));
    let media = keys
        .iter()
        .map(|&key| {
            let name = media_name(config, key);
            let file = target.files.iter().position(|f| f.path.file_name().is_some_and(|n| n == name.as_str()));
            MediaSource::File(file.expect("the file table holds every media file") as u32)
        })
        .collect();
    Ok((media, keys))
}

/// The two raw-rate phases on media file `file`: random reads of one chunk at queue depth 16, then sequential
/// 1 MiB reads at queue depth 4, each for `time`.
#[allow(clippy::too_many_arguments)]
fn estimate_phases(
    job: &JobSpec,
    file: u32,
    chunk: u64,
    time: Duration,
    spec: &PhaseSpec,
    target: &TargetPlan,
    facts: &Facts,
    notices: &mut Vec<String>,
) -> Result<Vec<PhasePlan>, PlanError> {
    let media = &target.files[file as usize];
    let read = |name: &str, rw, bs: u64, iodepth| PhaseSpec {
        name: Some(name.to_string()),
        rw: Some(rw),
        bs: Some(BlockSizeSpec::Fixed(Bytes(bs))),
        iodepth: Some(iodepth),
        runtime: Some(time),
        direct: spec.direct,
        engine: spec.engine,
        ..PhaseSpec::default()
    };
    let single = TargetPlan {
        kind: TargetKind::File,
        path: media.path.clone(),
        work_dir: None,
        files: vec![media.clone()],
        writes_allowed: false,
        memory_backed: target.memory_backed.clone(),
    };
    let mut phases = Vec::new();
    for (name, rw, bs, depth) in
        [("estimate: random chunks", RwMode::RandRead, chunk, 16), ("estimate: sequential", RwMode::Read, 1 << 20, 4)]
    {
        let context = JobContext::new(job, &single);
        let mut phase = plan_raw_phase(&context, 0, &read(name, rw, bs, depth), &single, facts, None, notices)?;
        // Planned against the media file alone; now it reads that file of the whole table.
        phase.files = vec![file];
        for worker in &mut phase.workers {
            worker.workload.regions.iter_mut().for_each(|r| r.file = file);
        }
        phase.needs_data = media.created;
        phases.push(phase);
    }
    Ok(phases)
}
