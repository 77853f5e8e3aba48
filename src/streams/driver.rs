//! The stream driver: many viewers per thread over one engine each, scheduled by due time.
//!
//! Run-level code (it uses `engine`, `metrics` and the player `model`). Viewers are dealt round-robin to a few
//! worker threads (one per CPU by default, never one per stream). Each worker keeps a binary heap of the next
//! event of each viewer (a chunk due, a seek, the end of the watch), a fixed table of in-flight slots (each slot
//! owns one buffer of the engine's pool) and a FIFO of viewers whose chunk is due but who wait for a free slot.
//! Nothing is allocated per chunk: the heap, the FIFO and the completion vector are sized before the loop.
//!
//! The loop issues what is due, hands it to the engine in one call, then waits for a completion or the next due
//! time, whichever comes first (sleeping in steps of at most 100 ms so Ctrl-C is noticed, and spinning the last
//! 20 µs, since waking from a sleep takes tens of microseconds that would count as our own lateness).
//! Completions reaped together share one timestamp. Two delays are recorded per chunk: lateness (completion −
//! due, what the viewer suffers) and issue lag (issue − due, streamcap's own delay, which must stay small for
//! the other figure to mean anything).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::model::{ChunkWant, Player, PlayerConfig, StreamStats};
use crate::engine::{AnyEngine, Completion, Engine, EngineKind, EngineSetup, OpKind, Request, Wait, page_round_up};
use crate::engine::{HttpEngine, HttpUrl};
use crate::metrics::Histogram;
use crate::workload::Rng;

const SPIN_BEFORE_DUE: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(100);

/// A media file the viewers read: a local file, or a URL fetched in byte ranges.
#[derive(Debug, Clone)]
pub struct MediaFile {
    /// The local path, or the URL's text (for messages).
    pub path: PathBuf,
    /// Bytes of the file in use (whole chunks are read from `[0, size)`).
    pub size: u64,
    /// Set for remote media: every viewer then holds its own keep-alive connection.
    pub url: Option<HttpUrl>,
}

/// One viewer, fully decided before the run.
#[derive(Debug, Clone, Copy)]
pub struct ViewerPlan {
    /// Start of the watch, after the common origin.
    pub start: Duration,
    /// Wall time watched from `start` (the watch ends at `start + watch`).
    pub watch: Duration,
    /// Index into `DrivePlan::files`.
    pub file: u32,
    /// Chunk of the media timeline the viewer starts at.
    pub first_chunk: u64,
    /// Bytes per chunk (a multiple of 4096).
    pub chunk_bytes: u32,
    pub player: PlayerConfig,
    /// Mean time between seeks (exponentially distributed), if the viewer skips around.
    pub seek_every: Option<Duration>,
    /// Seed of the viewer's seek times and positions.
    pub seed: u64,
}

/// Everything one drive needs.
#[derive(Debug, Clone)]
pub struct DrivePlan {
    pub files: Vec<MediaFile>,
    pub viewers: Vec<ViewerPlan>,
    pub engine: EngineKind,
    pub direct: bool,
    pub workers: usize,
    /// In-flight reads per worker at most (each holds one buffer).
    pub slots_per_worker: u32,
    /// Bytes of each slot's buffer at most; a longer chunk is read through it.
    pub slot_buffer_max: usize,
}

/// What a drive measured.
#[derive(Debug, Clone)]
pub struct DriveOutcome {
    /// Per viewer, in the order of `DrivePlan::viewers`.
    pub streams: Vec<StreamStats>,
    /// Completion − due, per used chunk.
    pub lateness: Histogram,
    /// Issue − due, per chunk: streamcap's own delay.
    pub issue_lag: Histogram,
    pub errors: u64,
    pub first_error: Option<String>,
    /// From the common origin to the end of the last watch.
    pub elapsed: Duration,
    pub interrupted: bool,
    /// The engine the workers ran (io_uring may have fallen back to sync; "http" for remote media).
    pub engine: &'static str,
}

#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("{0}")]
    Setup(String),
}

/// Runs every viewer of `plan` to the end of its watch (or until `interrupted`). `on_start` is called once,
/// with the common origin, when every worker is ready (the caller takes its "before" samples there).
pub fn drive(
    plan: &DrivePlan,
    interrupted: &AtomicBool,
    on_start: &mut dyn FnMut(),
) -> Result<DriveOutcome, DriveError> {
    let workers = plan.workers.clamp(1, plan.viewers.len().max(1));
    let shares: Vec<Vec<usize>> = (0..workers).map(|w| (w..plan.viewers.len()).step_by(workers).collect()).collect();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<&'static str, String>>();
    std::thread::scope(|scope| {
        let mut gos = Vec::new();
        let mut handles = Vec::new();
        for share in &shares {
            let (go_tx, go_rx) = mpsc::channel::<Option<Instant>>();
            gos.push(go_tx);
            let ready = ready_tx.clone();
            handles.push(scope.spawn(move || worker(plan, share, ready, go_rx, interrupted)));
        }
        drop(ready_tx);
        let mut failure = None;
        let mut engine = plan.engine.name();
        for _ in 0..workers {
            match ready_rx.recv() {
                Ok(Ok(kind)) => engine = kind,
                Ok(Err(e)) => failure = Some(e),
                Err(_) => failure = Some("a stream worker ended before it was ready".into()),
            }
        }
        if let Some(e) = failure {
            for go in &gos {
                let _ = go.send(None);
            }
            return Err(DriveError::Setup(e));
        }
        on_start();
        let origin = Instant::now();
        for go in &gos {
            let _ = go.send(Some(origin));
        }
        let mut outcome = DriveOutcome {
            streams: vec![StreamStats::default(); plan.viewers.len()],
            lateness: Histogram::new(),
            issue_lag: Histogram::new(),
            errors: 0,
            first_error: None,
            elapsed: Duration::ZERO,
            interrupted: false,
            engine,
        };
        for handle in handles {
            let end = handle.join().map_err(|_| DriveError::Setup("a stream worker panicked".into()))?;
            for (index, stats) in end.streams {
                outcome.streams[index] = stats;
            }
            outcome.lateness.merge(&end.lateness);
            outcome.issue_lag.merge(&end.issue_lag);
            outcome.errors += end.errors;
            outcome.first_error = outcome.first_error.take().or(end.first_error);
        }
        outcome.elapsed = origin.elapsed();
        outcome.interrupted = interrupted.load(Ordering::Relaxed);
        Ok(outcome)
    })
}

#[derive(Default)]
struct WorkerEnd {
    streams: Vec<(usize, StreamStats)>,
    lateness: Histogram,
    issue_lag: Histogram,
    errors: u64,
    first_error: Option<String>,
}

fn open_media(path: &std::path::Path, direct: bool) -> Result<File, String> {
    let mut options = OpenOptions::new();
    options.read(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))
}

fn worker(
    plan: &DrivePlan,
    share: &[usize],
    ready: mpsc::Sender<Result<&'static str, String>>,
    go: mpsc::Receiver<Option<Instant>>,
    interrupted: &AtomicBool,
) -> WorkerEnd {
    if plan.files.iter().any(|f| f.url.is_some()) {
        return http_worker(plan, share, ready, go, interrupted);
    }
    // Open only the files this worker's viewers read, and number them locally.
    let mut local_of = vec![u32::MAX; plan.files.len()];
    let mut files = Vec::new();
    let mut paths = Vec::new();
    for &v in share {
        let global = plan.viewers[v].file as usize;
        if local_of[global] == u32::MAX {
            match open_media(&plan.files[global].path, plan.direct) {
                Ok(f) => files.push(f),
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return WorkerEnd::default();
                }
            }
            local_of[global] = paths.len() as u32;
            paths.push(global);
        }
    }
    let largest_chunk = share.iter().map(|&v| plan.viewers[v].chunk_bytes as usize).max().unwrap_or(4096);
    let slots = plan.slots_per_worker.clamp(1, (share.len() as u32).max(1));
    // Viewers discard what they read, so a chunk is read through a smaller buffer (one vectored read), and the
    // buffers are not pinned: memory is what the busiest moment used, not slots × chunk.
    let setup = |kind, files| EngineSetup {
        kind,
        queue_depth: slots,
        buffer_size: page_round_up(largest_chunk.min(plan.slot_buffer_max)),
        max_transfer: largest_chunk,
        pin_buffers: false,
        files,
        spare_file_slots: 0,
        urls: Vec::new(),
        null_latency: Duration::ZERO,
        null_faults: Vec::new(),
    };
    let engine = match AnyEngine::build(setup(plan.engine, files)) {
        Ok(engine) => engine,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return WorkerEnd::default();
        }
    };
    let _ = ready.send(Ok(engine.caps().kind.name()));
    let Ok(Some(origin)) = go.recv() else { return WorkerEnd::default() };
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    let state = Loop::new(plan, share, Files::Shared(&local_of), origin, slots, interrupted);
    match engine {
        AnyEngine::IoUring(e) => state.run(e),
        AnyEngine::Sync(e) => state.run(e),
        AnyEngine::Null(e) => state.run(e),
        AnyEngine::Http(e) => state.run(e),
    }
}

/// A worker over remote media: one keep-alive connection per viewer, opened before the start, and as many
/// requests in flight as viewers (one each; no buffer is pinned, so no slot limit is needed).
fn http_worker(
    plan: &DrivePlan,
    share: &[usize],
    ready: mpsc::Sender<Result<&'static str, String>>,
    go: mpsc::Receiver<Option<Instant>>,
    interrupted: &AtomicBool,
) -> WorkerEnd {
    let mut urls = Vec::with_capacity(share.len());
    for &v in share {
        match &plan.files[plan.viewers[v].file as usize].url {
            Some(url) => urls.push(url.clone()),
            None => {
                let _ = ready.send(Err("local and remote media cannot be mixed in one run".into()));
                return WorkerEnd::default();
            }
        }
    }
    let slots = (share.len() as u32).max(1);
    let engine = match HttpEngine::connect(urls, slots) {
        Ok(engine) => engine,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return WorkerEnd::default();
        }
    };
    let _ = ready.send(Ok("http"));
    let Ok(Some(origin)) = go.recv() else { return WorkerEnd::default() };
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
    Loop::new(plan, share, Files::PerViewer, origin, slots, interrupted).run(engine)
}

/// How a viewer's requests name their "file" to the engine.
#[derive(Clone, Copy)]
enum Files<'a> {
    /// The worker's local number of each media file the worker opened (by global file index).
    Shared(&'a [u32]),
    /// The viewer's own connection: its local index.
    PerViewer,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Fetch,
    Seek,
    End,
}

struct Viewer {
    global: usize,
    player: Player,
    plan: ViewerPlan,
    file: u32,
    chunks_in_file: u64,
    /// The chunk wanted and not yet issued, and the generation of its Fetch event (older events are stale).
    pending: Option<ChunkWant>,
    generation: u32,
    rng: Rng,
    done: bool,
    stats: StreamStats,
}

struct Loop<'a> {
    viewers: Vec<Viewer>,
    files: &'a [MediaFile],
    heap: BinaryHeap<Reverse<(Duration, u32, Event, u32)>>,
    waiting: VecDeque<u32>,
    free: Vec<u32>,
    slot_viewer: Vec<u32>,
    origin: Instant,
    interrupted: &'a AtomicBool,
    end: WorkerEnd,
    active: usize,
}

impl<'a> Loop<'a> {
    fn new(
        plan: &'a DrivePlan,
        share: &[usize],
        files: Files<'_>,
        origin: Instant,
        slots: u32,
        interrupted: &'a AtomicBool,
    ) -> Loop<'a> {
        let mut heap = BinaryHeap::with_capacity(share.len() * 3 + 8);
        let viewers: Vec<Viewer> = share
            .iter()
            .enumerate()
            .map(|(local, &global)| {
                let p = plan.viewers[global];
                let size = plan.files[p.file as usize].size;
                let chunks_in_file = (size / u64::from(p.chunk_bytes)).max(1);
                heap.push(Reverse((p.start, local as u32, Event::Fetch, 0)));
                heap.push(Reverse((p.start + p.watch, local as u32, Event::End, 0)));
                let mut rng = Rng::new(p.seed);
                if let Some(every) = p.seek_every {
                    heap.push(Reverse((p.start + exponential(&mut rng, every), local as u32, Event::Seek, 0)));
                }
                let mut player = Player::new(p.player, p.start, p.first_chunk % chunks_in_file);
                let first = player.want(p.start);
                Viewer {
                    global,
                    player,
                    plan: p,
                    file: match files {
                        Files::Shared(local_of) => local_of[p.file as usize],
                        Files::PerViewer => local as u32,
                    },
                    chunks_in_file,
                    pending: first,
                    generation: 0,
                    rng,
                    done: false,
                    stats: StreamStats::default(),
                }
            })
            .collect();
        let active = viewers.len();
        Loop {
            viewers,
            files: &plan.files,
            heap,
            waiting: VecDeque::with_capacity(share.len() + 8),
            free: (0..slots).rev().collect(),
            slot_viewer: vec![u32::MAX; slots as usize],
            origin,
            interrupted,
            end: WorkerEnd::default(),
            active,
        }
    }

    fn run<E: Engine>(mut self, mut engine: E) -> WorkerEnd {
        let mut batch: Vec<Request> = Vec::with_capacity(self.free.len());
        let mut done: Vec<Completion> = Vec::with_capacity(self.free.len());
        let mut stopping = false;
        loop {
            let now = self.origin.elapsed();
            if !stopping && self.interrupted.load(Ordering::Relaxed) {
                stopping = true;
                for v in 0..self.viewers.len() {
                    self.end_watch(v, now);
                }
            }
            if !stopping {
                self.fire_events(now);
                self.issue(now, &mut batch);
                if !batch.is_empty() {
                    let mut offered = &batch[..];
                    while !offered.is_empty() {
                        match engine.submit(offered) {
                            Ok(n) => offered = &offered[n..],
                            Err(e) => {
                                self.error(e.to_string());
                                return self.finish(now);
                            }
                        }
                    }
                    batch.clear();
                }
            }
            if self.active == 0 || stopping {
                if engine.in_flight() == 0 {
                    return self.finish(now);
                }
                // Drain what is in flight; the watches are over, so these chunks are thrown away.
                done.clear();
                if engine.reap(1, Wait::AtMost(MAX_SLEEP), &mut done).is_err() {
                    return self.finish(now);
                }
                let now = self.origin.elapsed();
                self.complete(now, &done, &mut engine);
                continue;
            }
            let next = self.heap.peek().map_or(now + MAX_SLEEP, |Reverse((due, ..))| *due);
            let wait = next.saturating_sub(now).min(MAX_SLEEP);
            if engine.in_flight() > 0 && wait > SPIN_BEFORE_DUE {
                // Wake for a completion, or a little before the next due time (waking takes tens of µs).
                done.clear();
                if let Err(e) = engine.reap(1, Wait::AtMost(wait - SPIN_BEFORE_DUE), &mut done) {
                    self.error(e.to_string());
                    return self.finish(now);
                }
                let now = self.origin.elapsed();
                self.complete(now, &done, &mut engine);
            } else if wait > SPIN_BEFORE_DUE {
                std::thread::sleep(wait - SPIN_BEFORE_DUE);
            } else {
                while self.origin.elapsed() < next {
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// Pops every event due by `now`.
    fn fire_events(&mut self, now: Duration) {
        while let Some(&Reverse((due, v, event, generation))) = self.heap.peek() {
            if due > now {
                break;
            }
            self.heap.pop();
            let viewer = &mut self.viewers[v as usize];
            if viewer.done {
                continue;
            }
            match event {
                Event::Fetch if generation == viewer.generation => self.waiting.push_back(v),
                Event::Fetch => {}
                Event::End => self.end_watch(v as usize, now),
                Event::Seek => {
                    let every = viewer.plan.seek_every.expect("seek events only for seeking viewers");
                    let to = viewer.rng.below(viewer.chunks_in_file);
                    viewer.player.seek(now, to);
                    let next = now + exponential(&mut viewer.rng, every);
                    self.heap.push(Reverse((next, v, Event::Seek, 0)));
                    if viewer.player.in_flight().is_none() {
                        self.want(v as usize, now);
                    }
                }
            }
        }
    }

    /// Asks the viewer's player for its next chunk and schedules the fetch.
    fn want(&mut self, v: usize, now: Duration) {
        let viewer = &mut self.viewers[v];
        if viewer.done {
            return;
        }
        if let Some(want) = viewer.player.want(now) {
            viewer.pending = Some(want);
            viewer.generation = viewer.generation.wrapping_add(1);
            self.heap.push(Reverse((want.due, v as u32, Event::Fetch, viewer.generation)));
        }
    }

    /// Issues the chunks of waiting viewers while slots are free.
    fn issue(&mut self, now: Duration, batch: &mut Vec<Request>) {
        while let Some(&v) = self.waiting.front() {
            let viewer = &mut self.viewers[v as usize];
            let Some(want) = viewer.pending.filter(|_| !viewer.done) else {
                self.waiting.pop_front();
                continue;
            };
            let Some(slot) = self.free.pop() else { break };
            self.waiting.pop_front();
            viewer.pending = None;
            viewer.player.issued(want);
            self.end.issue_lag.record(now.saturating_sub(want.due).as_nanos() as u64);
            let bytes = u64::from(viewer.plan.chunk_bytes);
            self.slot_viewer[slot as usize] = v;
            batch.push(Request {
                slot,
                kind: OpKind::Read,
                file: viewer.file,
                offset: (want.chunk % viewer.chunks_in_file) * bytes,
                len: viewer.plan.chunk_bytes,
            });
        }
    }

    fn complete<E: Engine>(&mut self, now: Duration, done: &[Completion], engine: &mut E) {
        for c in done {
            let v = self.slot_viewer[c.slot as usize] as usize;
            self.free.push(c.slot);
            let expected = self.viewers[v].plan.chunk_bytes;
            match c.result {
                Ok(n) if n == expected => {
                    let arrival = self.viewers[v].player.arrived(now, u64::from(n));
                    if arrival.used {
                        self.end.lateness.record(arrival.lateness.as_nanos() as u64);
                    }
                    self.want(v, now);
                }
                other => {
                    let viewer = &self.viewers[v];
                    let path = &self.files[viewer.plan.file as usize].path;
                    let message = match other {
                        Err(_) if let Some(detail) = engine.error_detail(c.slot) => detail,
                        Ok(n) => format!("short read of {}: {n} of {expected} bytes", path.display()),
                        Err(errno) => {
                            format!("read of {} failed: {}", path.display(), std::io::Error::from_raw_os_error(errno))
                        }
                    };
                    self.error(message);
                    // A viewer whose read failed stops watching; the error is reported with the result.
                    self.end_watch(v, now);
                }
            }
        }
    }

    fn end_watch(&mut self, v: usize, now: Duration) {
        let viewer = &mut self.viewers[v];
        if !viewer.done {
            viewer.done = true;
            viewer.stats = viewer.player.finish(now);
            self.active -= 1;
        }
    }

    fn error(&mut self, message: String) {
        self.end.errors += 1;
        if self.end.first_error.is_none() {
            self.end.first_error = Some(message);
        }
    }

    fn finish(mut self, now: Duration) -> WorkerEnd {
        for v in 0..self.viewers.len() {
            self.end_watch(v, now);
        }
        self.end.streams = self.viewers.iter().map(|v| (v.global, v.stats.clone())).collect();
        self.end
    }
}

/// An exponentially distributed gap with the given mean (seeks arrive as a Poisson process).
fn exponential(rng: &mut Rng, mean: Duration) -> Duration {
    let u = rng.unit().max(1e-12);
    mean.mul_f64(-u.ln()).max(Duration::from_millis(1))
}
