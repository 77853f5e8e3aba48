//! The media of a stream phase, planned: the test files per format and the library's titles streamcap writes
//! (`own_media_files`, sized before the target's free space is checked), which files or URLs each phase's
//! viewers read and the keys they know them by (`media_sources`: streamcap's own, the user's library added to
//! the file table read-only, or remote URLs), and the raw-rate phases of the estimate over them. Pure, like all
//! planning.

use std::path::{Path, PathBuf};

use super::build::{DepthFrom, JobContext};
use super::facts::{Facts, TargetFacts};
use super::library::{Generated, generated_info, is_title, title_name, user_library, zipf_of};
use super::raw::plan_raw;
use super::streams::{EstimatePlan, MediaSource, most_viewers, streams_config};
use super::streams_threads::ThreadPlan;
use super::{DirectMode, FilePlan, PhaseKind, PhasePlan, PlanError, RawPlan, TargetKind, TargetPlan};
use crate::engine::EngineKind;
use crate::spec::{BlockSizeSpec, EngineChoice, JobSpec, PhaseSpec, RwMode, StreamsSpec};
use crate::units::Bytes;
use crate::workload::Region;
use ::streams::{LibraryInfo, MediaKey, StreamsConfig, Titles, defaults};

/// The name of a media file in the work directory: a format's test file (phases watching the same format share
/// it), or a title of the library (every phase and format shares them).
pub fn media_name(config: &StreamsConfig, key: MediaKey) -> String {
    match key {
        MediaKey::Format { format, number } => {
            let format = &config.mix.0[format].0;
            let slug: String = format.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            format!("media-{slug}-{number}.bin")
        }
        MediaKey::Title(number) => title_name(number),
    }
}

/// The media the stream phases of `job` write: file name and size — test files per format, and the titles of
/// `library`, the one library the phases share when this run writes it. Phases reading the user's files or URLs
/// need none.
pub(super) fn own_media_files(job: &JobSpec, library: Option<&Generated>) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    for phase in &job.phases {
        let Some(spec) = phase.streams().filter(|s| s.library.is_none()) else { continue };
        let config = streams_config(spec, phase.seed);
        if config.is_library() {
            continue;
        }
        for key in config.media_needed(most_viewers(spec)) {
            if let MediaKey::Format { format, .. } = key {
                files.push((media_name(&config, key), config.media_bytes(format)));
            }
        }
    }
    if let Some(library) = library {
        files.extend((0..library.titles).map(|n| (title_name(n), library.title_bytes)));
    }
    files
}

/// The media of a phase: the files (or URLs) the viewers read, the keys viewers know them by, the titles of its
/// library and what the plan says about it.
pub(super) struct Media {
    pub sources: Vec<MediaSource>,
    pub keys: Vec<MediaKey>,
    pub titles: Option<Titles>,
    pub library: Option<LibraryInfo>,
}

/// The media of a phase: streamcap's own files (found in the target's table by name: test files per format, or
/// the library's titles), the user's library (its files added to the table, read only), or the URLs of a
/// remote target (with a library assignment, each URL a title).
pub(super) fn media_sources(
    job: &JobSpec,
    streams: &StreamsSpec,
    config: &StreamsConfig,
    target: &mut TargetPlan,
    facts: &Facts,
    direct: DirectMode,
    notices: &mut Vec<String>,
) -> Result<Media, String> {
    if let TargetFacts::Remote { media, .. } = &facts.target {
        if streams.library.is_some() {
            return Err("--library reads local media files: not with an http target (leave TARGET out)".into());
        }
        let min = (0..config.mix.0.len()).map(|f| config.chunk_bytes(f)).max().unwrap_or(4096);
        let mut sources = Vec::with_capacity(media.len());
        for (url, size) in media {
            if let Some(title) = playlist_of(facts, &url.text, config)? {
                sources.push(title);
                continue;
            }
            if *size < min {
                return Err(format!(
                    "{} holds {size} bytes, less than one chunk ({min} bytes): give a smaller chunk",
                    url.text
                ));
            }
            sources.push(MediaSource::Url { url: url.clone(), size: *size });
        }
        return Ok(Media { sources, keys: vec![], titles: titles_of(config, media.len()), library: None });
    }
    if target.kind != TargetKind::Directory {
        return Err(
            "viewers read media under a directory (or from http:// URLs): give a directory as the target".into()
        );
    }
    match &streams.library {
        Some(dir) => users_media(dir, streams, config, target, facts, direct, notices),
        None => Ok(own_media(job, streams, config, target, facts, direct)),
    }
}

/// The media source of a file or URL that is an HLS playlist (`facts.playlists` holds it resolved): its
/// segments, each one request. Refused when a segment holds fewer bytes than a format's bitrate needs, or more
/// than one request may read.
fn playlist_of(facts: &Facts, location: &str, config: &StreamsConfig) -> Result<Option<MediaSource>, String> {
    let Some(title) = facts.playlists.iter().find(|t| t.playlist == location) else { return Ok(None) };
    for (format, _) in &config.mix.0 {
        title.check_rate(format.bitrate)?;
    }
    let most = ::streams::delivery::MAX_REQUEST_BYTES;
    if title.largest() > most {
        return Err(format!(
            "{location}: a segment of {} is more than one request may read ({}): give a playlist of shorter \
             segments",
            Bytes(title.largest()),
            Bytes(most)
        ));
    }
    Ok(Some(MediaSource::Segments(Box::new(title.clone()))))
}

/// The titles of a library assignment over `count` files (at least one).
fn titles_of(config: &StreamsConfig, count: usize) -> Option<Titles> {
    config.is_library().then(|| Titles { count: (count as u32).max(1), zipf: zipf_of(config) })
}

/// The user's library: its usable media files added to the file table (read only), each a title.
fn users_media(
    dir: &Path,
    streams: &StreamsSpec,
    config: &StreamsConfig,
    target: &mut TargetPlan,
    facts: &Facts,
    direct: DirectMode,
    notices: &mut Vec<String>,
) -> Result<Media, String> {
    let listing =
        facts.media_libraries.iter().find(|(d, _)| d == dir).map(|(_, files)| files.as_slice()).unwrap_or(&[]);
    let listing = playable(dir, listing, config, facts, notices)?;
    let user = user_library(dir, &listing, config, streams.count, facts, direct)?;
    notices.extend(user.notices);
    let mut sources = Vec::new();
    for (path, size) in user.files {
        if let Some(title) = playlist_of(facts, &path.display().to_string(), config)? {
            sources.push(title);
            continue;
        }
        target.files.push(FilePlan { path, size: Bytes(size), created: false });
        sources.push(MediaSource::File(target.files.len() as u32 - 1));
    }
    let keys = (0..sources.len() as u32).map(MediaKey::Title).collect();
    Ok(Media { titles: titles_of(config, sources.len()), sources, keys, library: Some(user.info) })
}

/// The library's files less its playlists that cannot be played at the phase's bitrates (their segments hold
/// fewer bytes than a bitrate needs), said in `notices`: a library holds playlists of several bitrates, and a
/// check plays every format over it. Refused, with the first playlist's reason, when nothing is left: the
/// first thing to say, before how much media there is.
fn playable(
    dir: &Path,
    listing: &[(PathBuf, u64)],
    config: &StreamsConfig,
    facts: &Facts,
    notices: &mut Vec<String>,
) -> Result<Vec<(PathBuf, u64)>, String> {
    let mut refused: Option<String> = None;
    let mut skipped = 0;
    let mut kept = Vec::with_capacity(listing.len());
    for (path, size) in listing {
        match playlist_of(facts, &path.display().to_string(), config) {
            Ok(_) => kept.push((path.clone(), *size)),
            Err(e) => {
                skipped += 1;
                refused.get_or_insert(e);
            }
        }
    }
    match refused {
        Some(why) if kept.is_empty() => Err(why),
        Some(why) => {
            notices
                .push(format!("{skipped} playlist(s) under {} are not played at this bitrate: {why}", dir.display()));
            Ok(kept)
        }
        None => Ok(kept),
    }
}

/// streamcap's own media, found in the target's file table by name: the library's titles, or the test files
/// per format.
fn own_media(
    job: &JobSpec,
    streams: &StreamsSpec,
    config: &StreamsConfig,
    target: &TargetPlan,
    facts: &Facts,
    direct: DirectMode,
) -> Media {
    let mut keys = config.media_needed(most_viewers(streams));
    let (mut titles, mut library) = (None, None);
    // streamcap's own media: made by this run (in its work directory), or the titles of the library kept under
    // the target; never a user's file of the same name.
    let kept = |f: &FilePlan| target.library.as_ref().is_some_and(|k| k.reused() && f.path.starts_with(&k.dir));
    let own = |f: &FilePlan| f.created || kept(f);
    if config.is_library() {
        let files: Vec<&FilePlan> = target.files.iter().filter(|f| is_title(&f.path) && own(f)).collect();
        let generated = Generated {
            titles: files.len() as u32,
            title_bytes: files.first().map_or(0, |f| f.size.0),
            asked: asked_size(job),
            floor: 0,
            fixed: None,
        };
        keys = (0..generated.titles).map(MediaKey::Title).collect();
        titles = titles_of(config, files.len());
        let free = match &facts.target {
            TargetFacts::Directory { free, .. } => *free,
            _ => None,
        };
        library = titles.map(|t| generated_info(&generated, t, free, facts, direct, target.library.as_ref()));
    }
    let sources = keys
        .iter()
        .map(|&key| {
            let name = media_name(config, key);
            let file =
                target.files.iter().position(|f| own(f) && f.path.file_name().is_some_and(|n| n == name.as_str()));
            MediaSource::File(file.expect("the file table holds every media file") as u32)
        })
        .collect();
    Media { sources, keys, titles, library }
}

/// The size of library the job's phases ask for (the largest; the default where none says).
fn asked_size(job: &JobSpec) -> u64 {
    job.phases
        .iter()
        .filter_map(|p| p.streams())
        .filter(|s| s.library.is_none())
        .map(|s| s.library_size.map_or(defaults::LIBRARY_BYTES, |b| b.0))
        .max()
        .unwrap_or(defaults::LIBRARY_BYTES)
}

/// What the estimate of a stream phase is planned from.
pub(super) struct Estimating<'a> {
    pub job: &'a JobSpec,
    pub spec: &'a PhaseSpec,
    /// What the stream phase `spec` asks (its kind's half).
    pub streams: &'a StreamsSpec,
    pub config: &'a StreamsConfig,
    pub media: &'a [MediaSource],
    /// The media are a library, measured whole (test files per format: the first).
    pub whole: bool,
    /// The viewers' scheduler threads: the estimate reads as they will.
    pub threads: &'a ThreadPlan,
    /// The engine the viewers read with (`streams_threads::viewer_engine`): the estimate reads with it too.
    pub engine: EngineKind,
}

/// The raw-rate phases of a phase's estimate, when it wants one and no earlier phase measured the same chunk
/// (then that one's is shared); `at`: the plan index the first of them will have, and the estimates planned so
/// far by chunk size.
pub(super) fn plan_estimate(
    e: &Estimating<'_>,
    target: &TargetPlan,
    facts: &Facts,
    notices: &mut Vec<String>,
    at: (usize, &mut Vec<(u64, EstimatePlan)>),
) -> Result<(Option<EstimatePlan>, Vec<PhasePlan>), PlanError> {
    let (next_index, measured) = at;
    let streams = e.streams;
    let wants = streams.estimate.unwrap_or(streams.max == Some(true));
    match (&e.media[0], wants) {
        (MediaSource::File(first), true) => {
            let chunk = e.config.chunk_bytes(0);
            if let Some((_, shared)) = measured.iter().find(|(c, _)| *c == chunk) {
                return Ok((Some(*shared), Vec::new()));
            }
            let files: Vec<u32> = match e.whole {
                true => {
                    e.media.iter().filter_map(|m| if let MediaSource::File(f) = m { Some(*f) } else { None }).collect()
                }
                false => vec![*first],
            };
            let planned = estimate_phases(e, &files, target, facts, notices)?;
            let plan = EstimatePlan { random_phase: next_index, sequential_phase: next_index + 1 };
            measured.push((chunk, plan));
            Ok((Some(plan), planned))
        }
        (MediaSource::Url { .. }, true) if streams.estimate == Some(true) => {
            Err(PlanError("the estimate measures raw reads of a local file: not with an http target".into()))
        }
        _ => Ok((None, Vec::new())),
    }
}

/// Worker `w`'s titles of `n` among `count` workers: a contiguous share, so the workers start at evenly spaced
/// places of the library. Dealt in turn, the sequential phase's four workers started at the first four titles,
/// which lie in one data chunk: on a btrfs raid1 of four devices that chunk's two members alone, half the pool,
/// and the estimate capped the capacity search there.
fn spread_share(w: usize, count: usize, n: usize) -> std::ops::Range<usize> {
    let (each, extra) = (n / count, n % count);
    let start = w * each + w.min(extra);
    start..(start + each + usize::from(w < extra)).min(n)
}

/// The two raw-rate phases over the media files `files` (every title of a library, laid end to end, so that no
/// cache serves a small part of it): random reads of one chunk at queue depth 16, then sequential 1 MiB reads at
/// queue depth 4, each for `time`, a chunk read through a slot buffer as the viewers read it
/// (`RawPlan::read_through`). They read with the threads as many viewers as that depth would have (the phase's
/// `ThreadPlan::for_depth`: never fewer than its `least`, two per member on a pool whose copy is picked by
/// thread, one read each; at most one per file), the depth shared among them and each thread reading its own files:
/// a pool whose mirror is chosen per reading thread (btrfs raid1/raid10, read policy `pid`) gives one thread a
/// single mirror, and the sync engine keeps one read in flight per thread, so one thread measured a four-device
/// raid1 as one device and capped the capacity search at a quarter of the pool (issue 24's validation matrix).
fn estimate_phases(
    e: &Estimating<'_>,
    files: &[u32],
    target: &TargetPlan,
    facts: &Facts,
    notices: &mut Vec<String>,
) -> Result<Vec<PhasePlan>, PlanError> {
    let (job, spec, streams) = (e.job, e.spec, e.streams);
    let time = streams.estimate_time.unwrap_or(defaults::ESTIMATE_TIME);
    let chunk = e.config.chunk_bytes(0);
    let media = &target.files[files[0] as usize];
    let threads = |iodepth: u32| e.threads.for_depth(iodepth).clamp(1, files.len().max(1) as u32);
    let read = |name: &str, rw, bs: u64, iodepth: u32| PhaseSpec {
        name: Some(name.to_string()),
        rw: Some(rw),
        bs: Some(BlockSizeSpec::Fixed(Bytes(bs))),
        iodepth: Some((iodepth / threads(iodepth)).max(1)),
        jobs: Some(threads(iodepth)),
        runtime: Some(time),
        direct: spec.direct,
        engine: if e.engine == EngineKind::Sync { Some(EngineChoice::Sync) } else { spec.engine },
        ..PhaseSpec::default()
    };
    let single = TargetPlan {
        kind: TargetKind::File,
        path: media.path.clone(),
        work_dir: None,
        files: vec![media.clone()],
        writes_allowed: false,
        memory_backed: target.memory_backed.clone(),
        library: None,
    };
    let mut phases = Vec::new();
    for (name, rw, bs, depth) in
        [("estimate: random chunks", RwMode::RandRead, chunk, 16), ("estimate: sequential", RwMode::Read, 1 << 20, 4)]
    {
        let context = JobContext { depth_from: DepthFrom::Planner, ..JobContext::new(job, &single) };
        let spec = read(name, rw, bs, depth);
        let (name, mut phase) = plan_raw(&context, 0, &spec, &single, facts, None, notices)?;
        read_every_title(&mut phase, files, target);
        // As the viewers read (`StreamsPlan::slot_buffer_bytes`): a chunk through a slot buffer, piece after piece.
        // With the sync engine each piece is a read of its own, so the device sees the viewers' requests: on a
        // loop device throttled to 40 MiB/s and 150 reads/s, 1 MiB reads are bound by bytes (41.9 MB/s) where
        // the viewers' 256 KiB pieces are bound by reads (150 × 256 KiB = 39.3 MB/s), and an estimate of whole
        // chunks started quick's 1080p above what the viewers could get (docs/validation.md).
        phase.read_through = Some(defaults::SLOT_BUFFER_MAX as u32).filter(|&piece| u64::from(piece) < bs);
        // On a pool that picks a copy by the reading thread, the estimate's threads spread over the copies as the
        // viewers' do: with ids as they fall, its few threads may all read one copy of a mirror.
        phase.spread = e.threads.spread;
        // The null engine reads nothing: no media to write for it.
        phase.needs_data = media.created && phase.engine != EngineKind::Null;
        phases.push(PhasePlan::of_spec(name, &spec, PhaseKind::Raw(Box::new(phase))));
    }
    Ok(phases)
}

/// An estimate phase planned against the first media file alone now reads every one of `files`, in the whole
/// table, its workers starting at evenly spaced titles.
fn read_every_title(phase: &mut RawPlan, files: &[u32], target: &TargetPlan) {
    phase.files = files.to_vec();
    let regions: Vec<Region> =
        files.iter().map(|&f| Region { file: f, start: 0, len: target.files[f as usize].size.0 }).collect();
    phase.data_set = Bytes(regions.iter().map(|r| r.len).sum());
    let count = phase.workers.len().max(1);
    for (w, worker) in phase.workers.iter_mut().enumerate() {
        worker.workload.regions = regions[spread_share(w, count, regions.len())].to_vec();
    }
}

#[cfg(test)]
mod tests {
    use super::spread_share;
    use crate::engine::EngineKind;
    use crate::plan::{Facts, Mirrors, RunOptions, build_plan};
    use crate::spec::{EngineChoice, JobSpec, PhaseSpec, SpecKind, SpecOrigin, StreamsSpec};
    use crate::units::Bytes;

    /// A `streams --max` job of 1080p viewers reading with `engine`.
    fn streams_job(engine: EngineChoice) -> JobSpec {
        let streams = StreamsSpec { format: Some("1080p".parse().unwrap()), max: Some(true), ..Default::default() };
        let phase = PhaseSpec {
            kind: Some(SpecKind::Streams(Box::new(streams))),
            engine: Some(engine),
            ..PhaseSpec::default()
        };
        JobSpec { origin: SpecOrigin::Flags, target: None, interval: None, phases: vec![phase], notices: vec![] }
    }

    /// Regression: the estimate read whole 1 MiB chunks, which a read-throttled device bounds by bytes, while
    /// the sync engine's viewers read 256 KiB pieces, bound there by reads/s: ext4's sync 1080p started from an
    /// estimate of 41.9 where the viewers' bound was 39.3, and failed. Each engine's estimate reads as its viewers.
    #[test]
    fn the_estimate_reads_its_chunks_through_the_viewers_slot_buffer_with_every_engine() {
        for (engine, kind) in [(EngineChoice::Sync, EngineKind::Sync), (EngineChoice::IoUring, EngineKind::IoUring)] {
            let options = RunOptions { run_id: "run-test".into(), ..Default::default() };
            let plan = build_plan(&streams_job(engine), &Facts::directory(Some(Bytes::gib(50))), &options).unwrap();
            let viewers = plan.phases.iter().find_map(|p| p.streams()).expect("a stream phase");
            let raw: Vec<_> = plan.phases.iter().filter_map(|p| p.raw()).collect();
            assert_eq!(raw.len(), 2, "the two estimate phases");
            for r in raw {
                assert_eq!(r.read_through, Some(viewers.slot_buffer_bytes), "{engine:?}");
                assert_eq!((r.block_sizes.max(), r.engine), (1 << 20, kind), "{engine:?}");
            }
        }
    }

    /// On a mirror that picks a copy by the reading thread (btrfs read policy pid), the estimate's threads spread
    /// over its copies as the viewers' do; elsewhere (and on a round-robin mirror) their ids do not matter.
    #[test]
    fn the_estimate_spreads_its_threads_over_the_copies_a_pool_picks_by_thread() {
        let pool = |policy: &str| Facts {
            mirrors: Some(Mirrors { profile: "raid1".into(), copies: 2, members: 4, policy: Some(policy.into()) }),
            ..Facts::directory(Some(Bytes::gib(50)))
        };
        for (facts, spread) in [(pool("pid"), 2), (pool("round-robin"), 1), (Facts::directory(Some(Bytes::gib(50))), 1)]
        {
            let plan = build_plan(&streams_job(EngineChoice::IoUring), &facts, &RunOptions::default()).unwrap();
            let viewers = plan.phases.iter().find_map(|p| p.streams()).expect("a stream phase");
            assert_eq!(viewers.threads.spread, spread);
            let raw: Vec<_> = plan.phases.iter().filter_map(|p| p.raw()).map(|r| r.spread).collect();
            assert_eq!(raw, [spread, spread], "the two estimate phases, {:?}", facts.mirrors);
        }
    }

    #[test]
    fn estimate_workers_start_at_evenly_spaced_titles_and_cover_every_one() {
        let shares: Vec<_> = (0..4).map(|w| spread_share(w, 4, 10)).collect();
        assert_eq!(shares, [0..3, 3..6, 6..8, 8..10]);
        assert_eq!((0..3).map(|w| spread_share(w, 3, 3)).collect::<Vec<_>>(), [0..1, 1..2, 2..3]);
        let covered: usize = (0..16).map(|w| spread_share(w, 16, 79).len()).sum();
        assert_eq!(covered, 79);
    }
}

#[cfg(test)]
mod playlist_tests {
    use super::*;
    use ::streams::{SegmentSource, SegmentedTitle, TitleSegment};
    use std::time::Duration;

    /// A playlist of four 2 s segments of `bytes` each.
    fn title(path: &str, bytes: u64) -> SegmentedTitle {
        let segment = TitleSegment { source: 0, offset: 0, len: bytes, ranged: false, media: Duration::from_secs(2) };
        SegmentedTitle {
            playlist: path.into(),
            segments: vec![segment; 4],
            sources: vec![SegmentSource::File(format!("{path}.ts").into())],
            segment_count: 4,
            segment_s: 2.0,
            bytes: 4 * bytes,
        }
    }

    /// A library of a 4 Mbit/s and an 8 Mbit/s playlist: at 8 Mbit/s the first is passed over with a notice;
    /// at 16 Mbit/s neither plays, and the refusal says why.
    #[test]
    fn playlists_too_short_for_the_bitrate_are_passed_over_or_refused_when_none_is_left() {
        let facts = Facts {
            playlists: vec![title("/m/low.m3u8", 1_000_000), title("/m/high.m3u8", 2_000_000)],
            ..Facts::directory(None)
        };
        let listing = vec![(PathBuf::from("/m/low.m3u8"), 4_000_000), (PathBuf::from("/m/high.m3u8"), 8_000_000)];
        let config = |bitrate: &str| {
            let spec = StreamsSpec { format: Some(bitrate.parse().unwrap()), ..StreamsSpec::default() };
            super::super::streams::streams_config(&spec, None)
        };
        let mut notices = Vec::new();
        let kept = playable(Path::new("/m"), &listing, &config("8Mbit"), &facts, &mut notices).unwrap();
        assert_eq!(kept, [(PathBuf::from("/m/high.m3u8"), 8_000_000)]);
        assert!(notices[0].contains("1 playlist(s) under /m are not played at this bitrate"), "{notices:?}");
        assert!(notices[0].contains("/m/low.m3u8.ts holds"), "{notices:?}");
        let e = playable(Path::new("/m"), &listing, &config("16Mbit"), &facts, &mut notices).unwrap_err();
        assert!(e.contains("shorter in bytes than the bitrate"), "{e}");
    }
}
