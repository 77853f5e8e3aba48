//! The viewer scheduler: many viewers' players, and which chunk read is due next. Clock-free and I/O-free:
//! the caller passes the time and reports each read's completion, so tests run it with a manual clock and the
//! I/O core runs it as one of its schedules.
//!
//! Each scheduler keeps a binary heap of the next event of each viewer (a chunk due, a seek, the end of the
//! watch) and a FIFO of viewers whose chunk is due but not yet issued (the core asks only when it has a free
//! slot). Nothing is allocated per chunk: the heap and the FIFO are sized up front.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use super::model::{ChunkWant, Player, StreamStats};
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
    End,
}

struct Viewer {
    /// The viewer's index in the whole step.
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

pub struct Viewers {
    viewers: Vec<Viewer>,
    heap: BinaryHeap<Reverse<(Duration, u32, Event, u32)>>,
    waiting: VecDeque<u32>,
    active: usize,
}

impl Viewers {
    /// The viewers `share` (indices into `plans`); `file_size[f]` is the size of file `f` of the plans, and
    /// `file_of(local, plan)` says which file number the caller's engine knows a viewer's file by.
    pub fn new(
        plans: &[ViewerPlan],
        share: &[usize],
        file_size: &[u64],
        file_of: &mut dyn FnMut(usize, &ViewerPlan) -> u32,
    ) -> Viewers {
        let mut heap = BinaryHeap::with_capacity(share.len() * 3 + 8);
        let viewers: Vec<Viewer> = share
            .iter()
            .enumerate()
            .map(|(local, &global)| {
                let p = plans[global];
                let chunks_in_file = (file_size[p.file as usize] / u64::from(p.chunk_bytes)).max(1);
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
                    file: file_of(local, &p),
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
        Viewers { waiting: VecDeque::with_capacity(viewers.len() + 8), viewers, heap, active }
    }

    /// The next chunk to read now, or when to ask again. Called only when a read can be issued at once.
    pub fn next(&mut self, now: Duration) -> ViewerNext {
        self.fire_events(now);
        while let Some(v) = self.waiting.pop_front() {
            let viewer = &mut self.viewers[v as usize];
            let Some(want) = viewer.pending.take().filter(|_| !viewer.done) else { continue };
            viewer.player.issued(want);
            let bytes = u64::from(viewer.plan.chunk_bytes);
            return ViewerNext::Chunk(Chunk {
                viewer: v,
                file: viewer.file,
                offset: (want.chunk % viewer.chunks_in_file) * bytes,
                len: viewer.plan.chunk_bytes,
                due: want.due,
            });
        }
        match self.heap.peek() {
            _ if self.active == 0 => ViewerNext::Done,
            Some(Reverse((due, ..))) => ViewerNext::At(*due),
            None => ViewerNext::Done,
        }
    }

    /// A chunk read completed (bytes, or the errno). Returns whether the chunk was used, so that its lateness
    /// counts (a chunk fetched before a seek is thrown away). A viewer whose read failed stops watching.
    pub fn arrived(&mut self, viewer: u32, result: Result<u32, i32>, now: Duration) -> bool {
        let v = viewer as usize;
        match result {
            Ok(n) if n == self.viewers[v].plan.chunk_bytes => {
                let arrival = self.viewers[v].player.arrived(now, u64::from(n));
                self.want(v, now);
                arrival.used
            }
            _ => {
                self.end_watch(v, now);
                false
            }
        }
    }

    /// Ends every watch still going (the step is stopping).
    pub fn finish(&mut self, now: Duration) {
        for v in 0..self.viewers.len() {
            self.end_watch(v, now);
        }
    }

    /// Each viewer's figures, with its index in the whole step. Complete after `finish`.
    pub fn stats(&self) -> impl Iterator<Item = (usize, &StreamStats)> {
        self.viewers.iter().map(|v| (v.global, &v.stats))
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

    fn end_watch(&mut self, v: usize, now: Duration) {
        let viewer = &mut self.viewers[v];
        if !viewer.done {
            viewer.done = true;
            viewer.stats = viewer.player.finish(now);
            self.active -= 1;
        }
    }
}

/// An exponentially distributed gap with the given mean (seeks arrive as a Poisson process).
fn exponential(rng: &mut Rng, mean: Duration) -> Duration {
    let u = rng.unit().max(1e-12);
    mean.mul_f64(-u.ln()).max(Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::model::PlayerConfig;

    fn plan(start_ms: u64) -> ViewerPlan {
        ViewerPlan {
            start: Duration::from_millis(start_ms),
            watch: Duration::from_secs(10),
            file: 0,
            first_chunk: 0,
            chunk_bytes: 4096,
            player: PlayerConfig {
                chunk_media: Duration::from_secs(1),
                buffer: Duration::from_secs(4),
                prebuffer: Duration::from_secs(2),
                vbr: None,
            },
            seek_every: None,
            seed: 1,
        }
    }

    /// Runs the scheduler against a made-up device that serves every read in `service`, one at a time.
    fn serve(viewers: &mut Viewers, service: Duration) -> (u32, Duration) {
        let (mut now, mut reads) = (Duration::ZERO, 0);
        loop {
            match viewers.next(now) {
                ViewerNext::Chunk(c) => {
                    assert!(c.due <= now, "a chunk is issued only once due");
                    now += service;
                    viewers.arrived(c.viewer, Ok(c.len), now);
                    reads += 1;
                }
                ViewerNext::At(t) => now = now.max(t),
                ViewerNext::Done => return (reads, now),
            }
        }
    }

    #[test]
    fn a_fast_device_keeps_every_viewer_playing() {
        let plans = [plan(0), plan(500)];
        let mut viewers = Viewers::new(&plans, &[0, 1], &[1 << 20], &mut |_, _| 0);
        let (reads, end) = serve(&mut viewers, Duration::from_millis(1));
        viewers.finish(end);
        // Each watch of 10 s at one chunk per second of media: about 10 chunks plus the buffer ahead.
        assert!((20..=34).contains(&reads), "{reads}");
        for (_, stats) in viewers.stats() {
            assert_eq!(stats.stalls, 0);
            assert!(stats.startup.is_some_and(|s| s < Duration::from_millis(10)));
        }
    }

    #[test]
    fn a_slow_device_stalls_the_viewers_and_a_failed_read_ends_a_watch() {
        let plans = [plan(0), plan(0), plan(0)];
        let mut viewers = Viewers::new(&plans, &[0, 1, 2], &[1 << 20], &mut |_, _| 0);
        // Three viewers need three chunks a second; a device serving one every 600 ms cannot keep up.
        let (_, end) = serve(&mut viewers, Duration::from_millis(600));
        viewers.finish(end);
        assert!(viewers.stats().any(|(_, s)| s.stalls > 0 || s.startup.is_none()));

        let mut viewers = Viewers::new(&plans[..1], &[0], &[1 << 20], &mut |_, _| 0);
        let ViewerNext::Chunk(c) = viewers.next(Duration::ZERO) else { panic!("the first chunk is due at once") };
        assert!(!viewers.arrived(c.viewer, Err(libc::EIO), Duration::from_millis(1)));
        assert_eq!(viewers.next(Duration::from_millis(2)), ViewerNext::Done);
    }
}
