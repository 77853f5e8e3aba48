//! One step of a stream phase: `count` viewers, arriving over the step's arrival window, dealt round-robin to
//! the scheduler threads, and the ingest writers beside them, all run as one set of workers on the I/O core,
//! sharing one `StepJudge` that ends the step once every viewer reached steady state and the judged playback
//! is over (or, in a search, at the first failure); then what the viewers and writers measured, gathered into a
//! `StepOutcome`.
//!
//! A multi-host run judges each rank's viewers on that rank: its judged window starts when its own last viewer
//! reached steady state (the ranks do not exchange instants during a step).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::background::{LoadSchedule, LoadWorker, READ_SLOT, load_figures};
use super::schedule::{INGEST_WRITE, IngestSchedule, ViewerSchedule};
use super::scrub::BtrfsScrub;
use super::segments::{SegmentSlots, TitleFiles};
use crate::engine::{AnyEngine, EngineKind, EngineSetup, HttpPiece, HttpPieces, page_round_up};
use crate::metrics::OpClass;
use crate::plan::{MediaSource, ScrubTarget, StreamCount, StreamsPlan};
use crate::run::cluster::{Cluster, PhaseSync, merge_step, viewers_of};
use crate::run::open::{OpenFor, open_data_file};
use crate::run::pattern::fill_random;
use crate::run::phase::{PhaseRun, Ran, SeriesStart, run_workers};
use crate::run::worker_setup::{AnySchedule, Built, SetUp, WorkerSettings};
use crate::run::{PhaseOutcome, RunObserver};
use crate::workload::Rng;
use ::streams::{
    BackgroundFigures, IngestOutcome, MediaFile, MediaKey, StepJudge, StepOutcome, StreamStats, ViewerPlan, Viewers,
};

/// What every step of a phase shares.
pub struct StepInputs<'a> {
    pub index: usize,
    pub plan: &'a StreamsPlan,
    pub media: &'a [MediaFile],
    pub direct: bool,
    pub interval: Duration,
    pub interrupted: Arc<AtomicBool>,
    /// Multi-host runs: this rank runs its share of each step's viewers (rank 0 the ingest writers too).
    pub cluster: Option<&'a Cluster>,
}

/// The media file a viewer's key maps to: streamcap's own media and the user's library by key; URLs in turn.
fn media_index(plan: &StreamsPlan, key: MediaKey) -> u32 {
    if plan.keys.is_empty() {
        let n = plan.media.len() as u32;
        return match key {
            MediaKey::Format { format, number } => number.wrapping_add(format as u32 * 7919) % n,
            MediaKey::Title(number) => number % n,
        };
    }
    plan.keys.binary_search(&key).map(|i| i as u32).unwrap_or(0)
}

/// Runs `count` viewers (and the ingest writers) to the end of their watch, or until Ctrl-C.
pub fn run_step(
    inputs: &StepInputs<'_>,
    count: u32,
    step: u32,
    series: SeriesStart,
    observer: &mut dyn RunObserver,
) -> (PhaseOutcome, StepOutcome) {
    let plan = inputs.plan;
    let viewers = plan.config.viewers(count, step, &mut |key| media_index(plan, key));
    // Every rank lays out the same viewers and runs its own share of them; one process runs them all.
    let (rank, ranks) = inputs.cluster.map_or((0, 1), |c| (c.rank(), c.size()));
    let mine = viewers_of(rank, ranks, viewers.len());
    let ingest_paths = ingest_paths(plan, rank, step);
    let workers = plan.threads.for_viewers(mine.len() as u32) as usize;
    let judge = Arc::new(StepJudge::new(mine.len() as u32, judging(plan)));
    let mut setups: Vec<SetUp<'_>> = Vec::new();
    for w in 0..workers {
        let share: Vec<usize> = mine.iter().skip(w).step_by(workers).copied().collect();
        let (viewers, judge) = (&viewers, judge.clone());
        setups.push(Box::new(move || viewer_worker(inputs, viewers, share, judge)));
    }
    let length = plan.config.step_length(count).longest();
    writer_setups(inputs, &ingest_paths, length, &judge, &mut setups);
    // The server's other work (`--during`): rank 0 runs it, as it runs the ingest writers.
    let scrubs = if rank == 0 { load_setups(inputs, (step, length), &judge, &mut setups) } else { Vec::new() };
    let run = PhaseRun {
        index: inputs.index,
        interval: inputs.interval,
        ramp: Duration::ZERO,
        floor: None,
        direct: inputs.direct,
        interrupted: inputs.interrupted.clone(),
        series,
        setups,
        sync: inputs.cluster.map(|cluster| PhaseSync {
            cluster,
            phase: inputs.index,
            step: step.into(),
            stonewall: false,
        }),
        per_worker: false,
        steady: None,
        held: None,
        spread: plan.threads.spread,
    };
    let Ran { outcome, schedules } = run_workers(run, observer);
    for path in &ingest_paths {
        // Ingest files live only for their step; a file never created is not an error.
        let _ = std::fs::remove_file(path);
    }
    let (streams, loads) = split_schedules(schedules, viewers.len());
    let mut measured = step_outcome(inputs, count, &outcome, streams, end_loads(plan, loads, scrubs));
    (measured.arrival, measured.judging) = (plan.config.arrival_for(count), judge.judging);
    (measured.steady_at, measured.cut) = (judge.judged_from(), judge.cut());
    match inputs.cluster {
        Some(cluster) => (outcome, merge_step(cluster, inputs.index, step, measured)),
        None => (outcome, measured),
    }
}

/// How the phase's steps are judged: a search only needs to know whether a count passes, so its steps end at
/// their first failure; a fixed count runs to the end.
fn judging(plan: &StreamsPlan) -> ::streams::Judging {
    let fail_fast = matches!(plan.count, StreamCount::Search(_));
    plan.config.judging(fail_fast, plan.target.max_startup)
}

/// The ingest writers' files of this step (rank 0 runs the writers of a multi-host run).
fn ingest_paths(plan: &StreamsPlan, rank: u32, step: u32) -> Vec<PathBuf> {
    match &plan.ingest {
        Some(ingest) if rank == 0 => {
            (0..ingest.writers).map(|w| ingest.dir.join(format!("ingest-{step}-{w}.bin"))).collect()
        }
        _ => Vec::new(),
    }
}

/// Each of the step's `count` viewers' figures, by global viewer number, from the schedules that ran them; and
/// the background loads' schedules.
fn split_schedules(schedules: Vec<Option<AnySchedule<'_>>>, count: usize) -> (Vec<StreamStats>, Vec<LoadSchedule>) {
    let mut streams = vec![Default::default(); count];
    let mut loads = Vec::new();
    for schedule in schedules.into_iter().flatten() {
        match schedule {
            AnySchedule::Viewers(s) => s.viewers.stats().for_each(|(global, stats)| streams[global] = stats.clone()),
            AnySchedule::Load(s) => loads.push(s),
            _ => {}
        }
    }
    (streams, loads)
}

/// The background loads' figures of the step (per load) and their failed reads; their files are removed (a
/// load's files live only for their step; a file it already deleted is not an error); btrfs scrubs are cancelled
/// and read.
fn end_loads(plan: &StreamsPlan, loads: Vec<LoadSchedule>, scrubs: Vec<BtrfsScrub>) -> (Vec<BackgroundFigures>, u64) {
    for path in loads.iter().flat_map(|l| &l.created) {
        let _ = std::fs::remove_file(path);
    }
    let mut background = load_figures(&plan.during, &loads.iter().collect::<Vec<_>>());
    for scrub in scrubs {
        let load = scrub.load;
        if let Some(figures) = background.get_mut(load) {
            *figures = scrub.stop();
        }
    }
    (background, loads.iter().map(|l| l.read_errors).sum())
}

/// What the step measured. The background loads' bytes are theirs, not the viewers' or the ingest writers'.
fn step_outcome(
    inputs: &StepInputs<'_>,
    count: u32,
    outcome: &PhaseOutcome,
    streams: Vec<StreamStats>,
    (background, load_read_errors): (Vec<BackgroundFigures>, u64),
) -> StepOutcome {
    let reads = outcome.totals.stats(OpClass::Read);
    let writes = outcome.totals.stats(OpClass::Write);
    let load_read: u64 = background.iter().map(|b| b.read_bytes).sum();
    let load_written: u64 = background.iter().map(|b| b.written_bytes).sum();
    let first =
        |op: &str| {
            outcome.errors.iter().find(|e| e.op == op).map(|e| {
                format!("{} of {} at offset {} failed: {} (errno {})", e.op, e.path, e.offset, e.message, e.errno)
            })
        };
    let ingest = inputs.plan.ingest.as_ref().map(|i| IngestOutcome {
        writers: i.writers,
        target_bytes_per_sec: i.bytes_per_sec,
        bytes: writes.bytes.saturating_sub(load_written),
        write_latency: writes.due_latency.clone().unwrap_or_default(),
        errors: writes.errors,
        first_error: first("write"),
    });
    StepOutcome {
        count,
        streams,
        lateness: reads.due_latency.clone().unwrap_or_default(),
        issue_lag: reads.lag.clone().unwrap_or_default(),
        read_bytes: reads.bytes.saturating_sub(load_read),
        errors: reads.errors.saturating_sub(load_read_errors),
        first_error: first("read"),
        elapsed: outcome.measured,
        arrival: Duration::ZERO,
        judging: judging(inputs.plan),
        steady_at: None,
        cut: None,
        interrupted: inputs.interrupted.load(Ordering::Relaxed),
        engine: outcome.caps.map_or(inputs.plan.engine.name(), |c| c.kind.name()),
        ingest,
        background,
        clients: Vec::new(),
    }
}

/// A scheduler thread: it opens only the media its viewers read (numbered locally), or one connection per
/// viewer for URLs, with as many reads in flight as the plan allows and its viewers can use. A viewer of a
/// title that is a playlist has a place of its own in the file table, where each of its requests opens the
/// segment it reads (`segments.rs`).
fn viewer_worker<'a>(
    inputs: &StepInputs<'_>,
    viewers: &[ViewerPlan],
    share: Vec<usize>,
    judge: Arc<StepJudge>,
) -> Result<Built<'a>, String> {
    let (plan, media) = (inputs.plan, inputs.media);
    let remote = plan.engine == EngineKind::Http;
    let largest = largest_request(viewers, &share, media);
    let Table { files, mut paths, urls, pieces, local_of, placed } = table(inputs, viewers, &share)?;
    // Segmented viewers' places follow the files opened now, one each, empty until their first request.
    let titles = title_files(media)?;
    let mut segments = SegmentSlots::new(inputs.direct, remote);
    let mut place_of = vec![u32::MAX; share.len()];
    for &(local, file) in &placed {
        place_of[local] = paths.len() as u32;
        segments.assign(paths.len() as u32, titles[file].clone().expect("a segmented title has its files"));
        paths.push(media[file].path.clone());
    }
    let sizes: Vec<u64> = media.iter().map(|m| m.size).collect();
    let segmented: Vec<_> = media.iter().map(|m| m.segments.clone()).collect();
    let slots = if remote { share.len() as u32 } else { plan.slots_per_worker.min(share.len() as u32) };
    // Viewers discard what they read, so a chunk is read through a smaller buffer (one vectored read), and the
    // buffers are not pinned: memory is what the busiest moment used, not slots × chunk.
    let buffer = if remote { 4096 } else { page_round_up(largest.min(plan.slot_buffer_bytes as usize)) };
    let setup = EngineSetup {
        max_transfer: largest,
        pin_buffers: false,
        files,
        spare_file_slots: placed.len() as u32,
        urls,
        http_pieces: pieces,
        ..EngineSetup::new(plan.engine, slots.max(1), buffer)
    };
    let engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
    let scheduler = Viewers::with_segments(
        viewers,
        &share,
        (&sizes, &segmented),
        &mut |local, p| match () {
            _ if remote => local as u32,
            _ if place_of[local] != u32::MAX => place_of[local],
            _ => local_of[p.file as usize],
        },
        judge,
    );
    let settings = WorkerSettings { batch: 1, paced: true, continue_on_error: true, ..WorkerSettings::default() };
    let schedule = AnySchedule::Viewers(ViewerSchedule { viewers: scheduler, paths, segments });
    Ok(Built { engine, schedule, settings })
}

/// A scheduler thread's file table as built: the files opened (numbered locally, `local_of` by media file) and
/// their paths, or one URL per viewer (with a playlist's pieces); and the viewers of segmented titles (by local
/// number, with their media file), whose places come after.
struct Table {
    files: Vec<std::fs::File>,
    paths: Vec<PathBuf>,
    urls: Vec<crate::engine::HttpUrl>,
    pieces: Vec<Option<Arc<HttpPieces>>>,
    local_of: Vec<u32>,
    placed: Vec<(usize, usize)>,
}

/// Opens the media the share's viewers read, or lists their URLs.
fn table(inputs: &StepInputs<'_>, viewers: &[ViewerPlan], share: &[usize]) -> Result<Table, String> {
    let media = inputs.media;
    let remote = inputs.plan.engine == EngineKind::Http;
    let mut t = Table {
        files: Vec::new(),
        paths: Vec::new(),
        urls: Vec::new(),
        pieces: Vec::new(),
        local_of: vec![u32::MAX; media.len()],
        placed: Vec::new(),
    };
    // A remote playlist's requests, made once per title and shared by its viewers' connections (a title of a
    // thousand segments is a few hundred kB of request text: once per viewer it grew with the viewers).
    let mut pieces_of: Vec<Option<Arc<HttpPieces>>> = vec![None; if remote { media.len() } else { 0 }];
    for (local, &v) in share.iter().enumerate() {
        let file = viewers[v].file as usize;
        if remote {
            t.urls.push(media[file].url.clone().ok_or("a remote phase has URLs for every file")?);
            if let (Some(title), None) = (&media[file].segments, &pieces_of[file]) {
                pieces_of[file] = Some(http_pieces(title)?);
            }
            t.pieces.push(pieces_of[file].clone());
            t.paths.push(media[file].path.clone());
        } else if media[file].segments.is_some() {
            t.placed.push((local, file));
        } else if t.local_of[file] == u32::MAX {
            let path = &media[file].path;
            let handle = open_data_file(path, OpenFor::read(inputs.direct))
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            t.files.push(handle);
            t.local_of[file] = t.paths.len() as u32;
            t.paths.push(path.clone());
        }
    }
    Ok(t)
}

/// The longest request the share's viewers make: their chunk, or the largest segment of a playlist they play
/// (rounded out to whole pages on both sides, as a direct read of a byte range is).
fn largest_request(viewers: &[ViewerPlan], share: &[usize], media: &[MediaFile]) -> usize {
    let of = |v: usize| {
        let plan = &viewers[v];
        match &media[plan.file as usize].segments {
            Some(title) => page_round_up(title.largest() as usize) + 4096,
            None => plan.chunk_bytes as usize,
        }
    };
    share.iter().map(|&v| of(v)).max().unwrap_or(4096)
}

/// Each media file's segment files, for titles that are playlists (made once per worker).
fn title_files(media: &[MediaFile]) -> Result<Vec<Option<Arc<TitleFiles>>>, String> {
    let each = |m: &MediaFile| m.segments.as_ref().map(|t| TitleFiles::new(t.clone()).map(Arc::new)).transpose();
    media.iter().map(each).collect()
}

/// A remote playlist's segments as the http engine fetches them: each one `GET`, its request made now.
fn http_pieces(title: &::streams::SegmentedTitle) -> Result<Arc<HttpPieces>, String> {
    let pieces = title.segments.iter().map(|s| {
        let url = match &title.sources[s.source as usize] {
            ::streams::SegmentSource::Url(url) => url,
            ::streams::SegmentSource::File(p) => {
                return Err(format!("{}: segment {} is a local file, not a URL", title.playlist, p.display()));
            }
        };
        Ok(HttpPiece::new(url, s.ranged.then_some((s.offset, s.len)), s.len))
    });
    Ok(Arc::new(HttpPieces(pieces.collect::<Result<Vec<_>, String>>()?)))
}

/// An ingest writer: a new file in the work directory, written through the sync engine one 1 MiB write at a
/// time, with the media's direct-I/O setting, until the step ends (at most `length`).
fn ingest_worker<'a>(
    path: PathBuf,
    bytes_per_sec: f64,
    length: Duration,
    direct: bool,
    judge: Arc<StepJudge>,
) -> Result<Built<'a>, String> {
    let file =
        open_data_file(&path, OpenFor::create(direct)).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let setup = EngineSetup { files: vec![file], ..EngineSetup::new(EngineKind::Sync, 1, INGEST_WRITE as usize) };
    let mut engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(0x001A_6E57);
    engine.for_each_buffer(&mut |buffer| fill_random(buffer, &mut rng));
    let settings = WorkerSettings { batch: 1, paced: true, continue_on_error: true, ..WorkerSettings::default() };
    let schedule = AnySchedule::Ingest(IngestSchedule::new(path, bytes_per_sec, length, judge));
    Ok(Built { engine, schedule, settings })
}

/// The ingest writers' workers, one per file.
fn writer_setups<'a>(
    inputs: &'a StepInputs<'_>,
    paths: &'a [PathBuf],
    length: Duration,
    judge: &Arc<StepJudge>,
    setups: &mut Vec<SetUp<'a>>,
) {
    let rate = inputs.plan.ingest.as_ref().map_or(1.0, |i| i.bytes_per_sec / f64::from(i.writers));
    for path in paths {
        let judge = judge.clone();
        setups.push(Box::new(move || ingest_worker(path.clone(), rate, length, inputs.direct, judge)));
    }
}

/// The workers of the step's background loads: one per reader and per writer of each (a transcoder's reader and
/// writer share one); a btrfs scrub is the kernel's, started here and returned.
fn load_setups<'a>(
    inputs: &'a StepInputs<'_>,
    (step, length): (u32, Duration),
    judge: &Arc<StepJudge>,
    setups: &mut Vec<SetUp<'a>>,
) -> Vec<BtrfsScrub> {
    let mut scrubs = Vec::new();
    for (index, load) in inputs.plan.during.iter().enumerate() {
        if let Some(ScrubTarget::Btrfs { path }) = &load.scrub {
            scrubs.push(BtrfsScrub::start(index, path));
        }
        for k in 0..load.readers.max(load.writers) {
            let (reader, writer) = ((k < load.readers).then_some(k), (k < load.writers).then_some(k));
            let (media, direct) = (inputs.media, inputs.direct);
            let w = LoadWorker { plan: load, media, step, reader, writer, direct, length };
            let (judge, engine) = (judge.clone(), inputs.plan.engine);
            setups.push(Box::new(move || load_worker(&w, engine, judge)));
        }
    }
    scrubs
}

/// A worker of a background load: the phase's engine (its reads in flight at once), its files opened as it goes
/// (a reader's in slot 0, a writer's in slot 1), one slot more than its reads for its writes.
fn load_worker<'a>(w: &LoadWorker<'_>, engine: EngineKind, judge: Arc<StepJudge>) -> Result<Built<'a>, String> {
    let kind = if engine == EngineKind::Http { EngineKind::Sync } else { engine };
    let depth = w.plan.depth.max(1) + 1;
    let setup = EngineSetup {
        spare_file_slots: 2,
        ..EngineSetup::new(kind, depth, ::streams::background::LOAD_IO_BYTES as usize)
    };
    let mut engine = AnyEngine::build(setup).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(0x0D0_2196 ^ u64::from(w.step));
    engine.for_each_buffer(&mut |buffer| fill_random(buffer, &mut rng));
    debug_assert_eq!(READ_SLOT, 0);
    let settings = WorkerSettings { batch: 1, paced: true, continue_on_error: true, ..WorkerSettings::default() };
    Ok(Built { engine, schedule: AnySchedule::Load(LoadSchedule::new(w, judge)), settings })
}

/// The media files of a phase, as the viewers know them.
pub fn media_files(plan: &StreamsPlan, table: &[crate::plan::FilePlan]) -> Vec<MediaFile> {
    plan.media
        .iter()
        .map(|m| match m {
            MediaSource::File(f) => {
                let file = &table[*f as usize];
                MediaFile { path: file.path.clone(), size: file.size.0, url: None, segments: None }
            }
            MediaSource::Url { url, size } => {
                MediaFile { path: url.text.clone().into(), size: *size, url: Some(url.clone()), segments: None }
            }
            MediaSource::Segments(title) => MediaFile {
                path: title.playlist.clone().into(),
                size: title.bytes,
                url: title.playlist.parse().ok(),
                segments: Some(Arc::new((**title).clone())),
            },
        })
        .collect()
}
