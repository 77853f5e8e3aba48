//! The viewer scheduler: many viewers' players, and which chunk read is due next. Clock-free and I/O-free:
//! the caller passes the time and reports each read's completion, so tests run it with a manual clock and the
//! I/O core runs it as one of its schedules.
//!
//! Each scheduler keeps a binary heap of the next event of each viewer (a chunk due, a seek, the bound on its
//! start-up and on reaching steady state) and a FIFO of viewers whose chunk is due but not yet issued (the core
//! asks only when it has a free slot). Nothing is allocated per chunk: the heap and the FIFO are sized up front.
//!
//! When the watch ends is not known up front: the step's [`StepJudge`], shared by every scheduler of the step,
//! decides it once every viewer has reached steady state (or one failed, in a search step). Each scheduler
//! tells it when one of its viewers reached steady state or missed its bound, and ends every watch at the
//! instant the judge names.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use super::judge::{POLL, StepJudge};
use super::model::{ChunkWant, JudgedBuffer, Player, PlayerConfig, StreamStats};
use super::segmented::SegmentedTitle;
use super::setup::ViewerPlan;
use crate::workload::Rng;

/// A chunk read to issue now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// The viewer's number in this scheduler (handed back on completion).
    pub viewer: u32,
    /// The file to read, as the caller numbered it.
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    /// When the player wanted it, from the common origin.
    pub due: Duration,
    /// With a title of segments (`segmented.rs`): which segment of it; `offset` and `len` are that segment's
    /// place in its source.
    pub segment: Option<u32>,
}

/// What the viewers want next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewerNext {
    Chunk(Chunk),
    /// Nothing is due before this.
    At(Duration),
    /// Every watch is over.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Fetch,
    Seek,
    /// The viewer should be playing by now, or it is a slow start (a search step only).
    StartLimit,
    /// The viewer must be playing by now, twice the start-up target (a search step only).
    StartGivenUp,
    /// The viewer must have reached steady state by now.
    SteadyLimit,
}

struct Viewer {
    /// The viewer's index in the whole step.
    global: usize,
    player: Player,
    plan: ViewerPlan,
    file: u32,
    chunks_in_file: u64,
    /// A title of segments: chunk k is segment k (wrapping at the end).
    segments: Option<Arc<SegmentedTitle>>,
    /// Bytes of the chunk in flight (a segment's own length).
    in_flight_len: u32,
    /// The chunk wanted and not yet issued, and the generation of its Fetch event (older events are stale).
    pending: Option<ChunkWant>,
    generation: u32,
    rng: Rng,
    done: bool,
    /// The judge has heard of this viewer's steady state or of its giving up.
    resolved: bool,
    /// Media buffered when the judged playback began, and the seeks made by then.
    judged_start: Option<(Duration, u32)>,
    stats: StreamStats,
}

pub struct Viewers {
    viewers: Vec<Viewer>,
    heap: BinaryHeap<Reverse<(Duration, u32, Event, u32)>>,
    waiting: VecDeque<u32>,
    active: usize,
    judge: Arc<StepJudge>,
}

impl Viewers {
    /// The viewers `share` (indices into `plans`); `file_size[f]` is the size of file `f` of the plans, and
    /// `file_of(local, plan)` says which file number the caller's engine knows a viewer's file by. `judge` is
    /// the step's, shared with its other schedulers.
    pub fn new(
        plans: &[ViewerPlan],
        share: &[usize],
        file_size: &[u64],
        file_of: &mut dyn FnMut(usize, &ViewerPlan) -> u32,
        judge: Arc<StepJudge>,
    ) -> Viewers {
        Viewers::with_segments(plans, share, (file_size, &[]), file_of, judge)
    }

    /// As `new`, where `segmented[f]`, when there is one, makes file `f` a title of segments: its viewers ask
    /// for segment after segment, each one request of the segment's bytes, and their players take the title's
    /// mean segment as their media per request (its `#EXTINF`, not the bitrate's bytes).
    pub fn with_segments(
        plans: &[ViewerPlan],
        share: &[usize],
        (file_size, segmented): (&[u64], &[Option<Arc<SegmentedTitle>>]),
        file_of: &mut dyn FnMut(usize, &ViewerPlan) -> u32,
        judge: Arc<StepJudge>,
    ) -> Viewers {
        let judging = judge.judging;
        let mut heap = BinaryHeap::with_capacity(share.len() * 4 + 8);
        let viewers: Vec<Viewer> = share
            .iter()
            .enumerate()
            .map(|(local, &global)| {
                let mut p = plans[global];
                let segments = segmented.get(p.file as usize).cloned().flatten();
                let chunks_in_file = match &segments {
                    Some(title) => {
                        // The playlist says each segment's media; bursts of a bitrate model do not apply.
                        p.player =
                            PlayerConfig { chunk_media: title.mean_segment(), vbr: None, ..p.player }.normalized();
                        title.segments.len() as u64
                    }
                    None => file_size[p.file as usize] / u64::from(p.chunk_bytes),
                }
                .max(1);
                heap.push(Reverse((p.start, local as u32, Event::Fetch, 0)));
                heap.push(Reverse((p.start + judging.steady_within, local as u32, Event::SteadyLimit, 0)));
                if judging.fail_fast {
                    heap.push(Reverse((p.start + judging.max_startup, local as u32, Event::StartLimit, 0)));
                    heap.push(Reverse((p.start + judging.start_given_up(), local as u32, Event::StartGivenUp, 0)));
                }
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
                    file: file_of(local, &p),
                    chunks_in_file,
                    segments,
                    in_flight_len: 0,
                    pending: first,
                    generation: 0,
                    rng,
                    done: false,
                    resolved: false,
                    judged_start: None,
                    stats: StreamStats::default(),
                }
            })
            .collect();
        let active = viewers.len();
        Viewers { waiting: VecDeque::with_capacity(viewers.len() + 8), viewers, heap, active, judge }
    }

    /// The next chunk to read now, or when to ask again. Called only when a read can be issued at once.
    pub fn next(&mut self, now: Duration) -> ViewerNext {
        let end = self.judge.end();
        if let Some(end) = end.filter(|&end| now >= end) {
            self.finish(end);
            return ViewerNext::Done;
        }
        self.fire_events(now);
        if let Some(end) = self.judge.end().filter(|&end| now >= end) {
            self.finish(end);
            return ViewerNext::Done;
        }
        while let Some(v) = self.waiting.pop_front() {
            let viewer = &mut self.viewers[v as usize];
            let Some(want) = viewer.pending.take().filter(|_| !viewer.done) else { continue };
            viewer.player.issued(want);
            let k = want.chunk % viewer.chunks_in_file;
            let (offset, len, segment) = match &viewer.segments {
                Some(title) => {
                    let s = &title.segments[k as usize];
                    (s.offset, s.len as u32, Some(k as u32))
                }
                None => (k * u64::from(viewer.plan.chunk_bytes), viewer.plan.chunk_bytes, None),
            };
            viewer.in_flight_len = len;
            return ViewerNext::Chunk(Chunk { viewer: v, file: viewer.file, offset, len, due: want.due, segment });
        }
        if self.active == 0 {
            return ViewerNext::Done;
        }
        // Until the judge knows the end, look again now and then: another thread may decide it.
        let end = self.judge.end().unwrap_or(now + POLL);
        match self.heap.peek() {
            Some(Reverse((due, ..))) => ViewerNext::At((*due).min(end)),
            None => ViewerNext::At(end),
        }
    }

    /// A chunk read completed (bytes, or the errno). Returns whether the chunk was used, so that its lateness
    /// counts (a chunk fetched before a seek is thrown away). A viewer whose read failed stops watching.
    pub fn arrived(&mut self, viewer: u32, result: Result<u32, i32>, now: Duration) -> bool {
        let v = viewer as usize;
        match result {
            // A chunk that came after the step's end is not part of the step.
            _ if self.judge.end().is_some_and(|end| now > end) => false,
            Ok(n) if n == self.viewers[v].in_flight_len => {
                self.note_judged_start(v);
                let viewer = &mut self.viewers[v];
                let arrival = viewer.player.arrived(now, u64::from(n));
                if let Some(steady) = viewer.player.steady().filter(|_| !viewer.resolved) {
                    viewer.resolved = true;
                    // Full after its bound (a completion the scheduler saw before the bound's event): too late.
                    let bound = self.judge.judging.steady_within;
                    if steady <= bound {
                        self.judge.steady(now);
                    } else {
                        self.judge.unsteady(viewer.plan.start + bound);
                    }
                }
                self.want(v, now);
                arrival.used
            }
            _ => {
                if !self.viewers[v].player.is_steady() {
                    self.give_up(v, now);
                }
                self.judge.failed(now);
                self.end_watch(v, now);
                false
            }
        }
    }

    /// Ends every watch still going (the step is stopping), at the step's end if it came first.
    pub fn finish(&mut self, now: Duration) {
        let end = self.judge.end().map_or(now, |end| end.min(now));
        for v in 0..self.viewers.len() {
            self.end_watch(v, end);
        }
    }

    /// Each viewer's figures, with its index in the whole step. Complete after `finish`.
    pub fn stats(&self) -> impl Iterator<Item = (usize, &StreamStats)> {
        self.viewers.iter().map(|v| (v.global, &v.stats))
    }

    /// Pops every event due by `now`.
    fn fire_events(&mut self, now: Duration) {
        while let Some(&Reverse((due, v, event, generation))) = self.heap.peek() {
            if due > now || self.judge.end().is_some_and(|end| due >= end) {
                break;
            }
            self.heap.pop();
            let viewer = &mut self.viewers[v as usize];
            if viewer.done {
                continue;
            }
            let judging = self.judge.judging;
            match event {
                Event::Fetch if generation == viewer.generation => self.waiting.push_back(v),
                Event::Fetch => {}
                // Judged at the bound's own instant, whenever the scheduler got to it.
                Event::StartLimit if viewer.player.startup().is_none_or(|u| u > judging.max_startup) => {
                    self.judge.slow_start(due)
                }
                Event::StartGivenUp if viewer.player.startup().is_none_or(|u| u > judging.start_given_up()) => {
                    self.judge.failed(due)
                }
                Event::StartLimit | Event::StartGivenUp => {}
                Event::SteadyLimit if viewer.player.steady().is_none_or(|u| u > judging.steady_within) => {
                    self.give_up(v as usize, due)
                }
                Event::SteadyLimit => {}
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

    /// The viewer did not reach steady state in time (its bound passed, or its read failed).
    fn give_up(&mut self, v: usize, now: Duration) {
        let viewer = &mut self.viewers[v];
        if !viewer.resolved {
            viewer.resolved = true;
            self.judge.unsteady(now);
        }
    }

    /// The viewer's buffer when the judged playback began, taken before the first chunk applied after that
    /// instant (the judge names it when the last viewer is steady; until then the buffer moves only by playing).
    fn note_judged_start(&mut self, v: usize) {
        let viewer = &mut self.viewers[v];
        if viewer.judged_start.is_some() || viewer.done {
            return;
        }
        if let Some(from) = self.judge.judged_from() {
            viewer.judged_start = Some((viewer.player.buffered_at(from), viewer.player.seeks()));
        }
    }

    fn end_watch(&mut self, v: usize, now: Duration) {
        if self.viewers[v].done {
            return;
        }
        self.note_judged_start(v);
        let viewer = &mut self.viewers[v];
        viewer.done = true;
        let end = viewer.player.buffered_at(now);
        let chunk = viewer.player.config().longest_chunk();
        viewer.stats = viewer.player.finish(now);
        viewer.stats.judged_buffer = match viewer.judged_start {
            Some((start, seeks)) if seeks == viewer.stats.seeks => Some(JudgedBuffer { start, end, chunk }),
            _ => None,
        };
        self.active -= 1;
    }
}

/// An exponentially distributed gap with the given mean (seeks arrive as a Poisson process).
fn exponential(rng: &mut Rng, mean: Duration) -> Duration {
    let u = rng.unit().max(1e-12);
    mean.mul_f64(-u.ln()).max(Duration::from_millis(1))
}

#[cfg(test)]
#[path = "viewers_tests.rs"]
mod tests;
