//! From member costs to service: how many streams of the mix (and of each format alone) a pool sustains with
//! ingest running, sequential MB/s for one and many readers, and reads and writes per second for the file
//! workload — each with the sentence that says what limits it. A demand fits while no member's busiest resource
//! (positioning plus transfer, IOPS, bandwidth) passes 100 %; `headroom` finds how many units of a demand fit on
//! top of a background load (ingest, rebuild).
//!
//! The stream model follows what streamcap measures (docs/planning.md, "Streams"): a viewer reads one chunk per
//! chunk period (chunk ÷ byte rate), at a position unrelated to the other viewers', so each chunk is a random
//! read; streams ≈ min(bandwidth ÷ bitrate, chunk reads/s ÷ chunks/s per stream), with the access time of
//! rotating drives inside the chunk read's cost.

use super::drive::{Cost, Dir, Resource};
use super::members::{Issuers, Op, Pool, State, op_costs, op_latency};
use super::workload::{FileWorkload, StreamDemand, StreamFormat};
use crate::results::{FormatStreams, ServiceFigures};

/// How many units of a demand fit, and where they stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub units: f64,
    pub member: usize,
    pub resource: Resource,
}

/// Units of `unit` (cost per unit, per member) that fit on top of `base`: the smallest, over members and their
/// resources, of (1 − base) ÷ unit.
pub fn headroom(base: &[Cost], unit: &[Cost]) -> Option<Bound> {
    let mut best: Option<Bound> = None;
    for (m, (b, u)) in base.iter().zip(unit).enumerate() {
        let resources = [
            (b.seek + b.transfer, u.seek + u.transfer, u.binding()),
            (b.ops, u.ops, Resource::Iops),
            (b.bytes, u.bytes, Resource::Bandwidth),
        ];
        for (used, need, resource) in resources {
            if need <= 1e-15 {
                continue;
            }
            let units = (1.0 - used).max(0.0) / need;
            if best.is_none_or(|x| units < x.units) {
                best = Some(Bound { units, member: m, resource });
            }
        }
    }
    best
}

/// Operations/s of the file workload the controller's cache allows when it holds the working set (its reads/s
/// or its MB/s ÷ the read size, whichever binds, over the reads' share), and the words that say so.
fn controller_bound(pool: &Pool, file: &FileWorkload) -> Option<(f64, String)> {
    let cache = pool.controller.filter(|_| pool.controller_holds() && file.read_pct > 0.0)?;
    let bytes = file.op_bytes();
    let (by_iops, by_bytes) = (cache.read_iops, cache.read.bytes_per_sec() / bytes);
    let reads = by_iops.min(by_bytes);
    let binds = if by_iops <= by_bytes {
        format!("{:.0} reads/s", cache.read_iops)
    } else {
        format!("{:.0} MB/s ÷ {}", cache.read.bytes_per_sec() / 1e6, crate::units::Bytes(bytes as u64))
    };
    let ws = crate::units::Bytes(file.working_set().unwrap_or(0.0) as u64);
    let words = format!(
        "controller-cache-bound: its {} cache holds the working set ({ws}) and serves every read: {binds}",
        crate::units::Bytes(cache.size.0)
    );
    Some((reads / (file.read_pct / 100.0), words))
}

/// A pool in one state, with a background load per member (a rebuild).
pub struct Context<'p, 'd> {
    pub pool: &'p Pool<'d>,
    pub state: State,
    pub base: Vec<Cost>,
}

fn add(a: &[Cost], b: &[Cost]) -> Vec<Cost> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let mut s = *x;
            s.add(*y);
            s
        })
        .collect()
}

fn scale(costs: &[Cost], k: f64) -> Vec<Cost> {
    costs.iter().map(|c| c.scaled(k)).collect()
}

impl Context<'_, '_> {
    /// Costs per logical op, spread over the data that is still there; and the share that is not.
    fn costs(&self, op: Op, issuers: Issuers) -> (Vec<Cost>, f64) {
        self.costs_on(self.pool, op, issuers)
    }

    fn costs_on(&self, pool: &Pool, op: Op, issuers: Issuers) -> (Vec<Cost>, f64) {
        let c = op_costs(pool, op, issuers, self.state);
        let served = (1.0 - c.lost).max(1e-9);
        (scale(&c.members, 1.0 / served), c.lost)
    }

    /// Words for a bound that reproduce its figure from the numbers they print: "seek-bound: 4 members × 59
    /// reads/s ÷ 0.95 reads/s per stream" (4 × 59 ÷ 0.95 = 248 streams). `io` names what members serve ("reads",
    /// or "I/Os" when writes are among them), `per` the unit of demand ("stream", "read", "write", "operation").
    fn describe(&self, unit: &[Cost], bound: &Bound, io: &str, per: &str) -> String {
        let active: Vec<usize> = (0..unit.len()).filter(|&m| unit[m].load() > 1e-12).collect();
        let b = unit[bound.member];
        let total = |f: fn(&Cost) -> f64| active.iter().map(|&m| f(&unit[m])).sum::<f64>();
        let members = if active.len() == 1 { "1 member".to_string() } else { format!("{} members", active.len()) };
        let mut text = match bound.resource {
            Resource::Seek => format!(
                "seek-bound: {members} × {:.0} {io}/s ÷ {:.2} {io} per {per}",
                b.requests / (b.seek + b.transfer),
                total(|c| c.requests)
            ),
            Resource::Iops => format!(
                "IOPS-bound: {members} × {:.0} requests/s ÷ {:.2} requests/s per {per}",
                b.requests / b.ops,
                total(|c| c.requests)
            ),
            // A rotating disk positions before its transfers: the rate it serves is what is left of its time.
            Resource::Bandwidth if b.seek > 0.0 => format!(
                "bandwidth-bound: {members} × {:.0} MB/s ({:.0} MB/s transfers + {:.1} ms positioning per {} request) ÷ \
                 {:.2} MB/s per {per}",
                b.moved / (b.seek + b.transfer) / 1e6,
                b.moved / b.transfer / 1e6,
                b.seek / b.requests.max(1e-12) * 1e3,
                crate::units::Bytes((b.moved / b.requests.max(1e-12)) as u64),
                total(|c| c.moved) / 1e6
            ),
            Resource::Bandwidth => format!(
                "bandwidth-bound: {members} × {:.0} MB/s ÷ {:.2} MB/s per {per}",
                b.moved / (b.transfer.max(b.bytes)) / 1e6,
                total(|c| c.moved) / 1e6
            ),
        };
        let loads: Vec<f64> = active.iter().map(|&m| unit[m].load()).collect();
        let (low, high) = loads.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        if high > low * 1.02 {
            let drive = &self.pool.drives[bound.member];
            text.push_str(&format!("; busiest: member {} ({})", bound.member + 1, drive.name));
        }
        let used = self.base.get(bound.member).map_or(0.0, |c| c.load());
        if used > 0.005 {
            text.push_str(&format!("; {:.0} % of it already busy", used * 100.0));
        }
        text
    }

    /// Streams of `formats` in their proportions on top of `base`, unrounded (a caller floors them to whole
    /// streams; a ratio of two pools is taken before that, or floors of 4.2 and 2.99 make 4 ÷ 2).
    fn streams(&self, demand: &StreamDemand, formats: &[StreamFormat], base: &[Cost]) -> (f64, String) {
        let chunk = demand.chunk.0 as f64;
        let read = Op { dir: Dir::Read, bytes: chunk, sequential: false, positioned: true };
        let period = |f: &StreamFormat| chunk / f.bitrate.byte_rate().bytes_per_sec();
        if let Some(latency) = op_latency(self.pool, read)
            && let Some(slow) = formats.iter().find(|f| period(f) < latency)
        {
            let words = format!(
                "one-disk cap: a {} stream needs a chunk every {:.0} ms; one chunk read takes {:.0} ms",
                slow.name,
                period(slow) * 1e3,
                latency * 1e3
            );
            return (0.0, words);
        }
        let mix = StreamDemand { formats: formats.to_vec(), ..demand.clone() };
        let chunks_per_s = mix.mean_byte_rate() / chunk;
        // The viewers' reads come from `reader_threads` threads (pid policy) with many reads in flight.
        let issuers = Issuers { threads: demand.reader_threads, outstanding: None };
        let (per_chunk, _) = self.costs(read, issuers);
        let per_stream = scale(&per_chunk, chunks_per_s);
        match headroom(base, &per_stream) {
            Some(bound) => (bound.units.min(1e9), self.describe(&per_stream, &bound, "reads", "stream")),
            None => (0.0, "no member serves these reads".into()),
        }
    }

    fn ingest_base(&self, demand: &StreamDemand) -> Vec<Cost> {
        let Some(ingest) = demand.ingest else { return self.base.clone() };
        let request = ingest.request.0 as f64;
        // Ingest writes are sequential in their files but interleaved with the viewers' reads: positioned.
        let write = Op { dir: Dir::Write, bytes: request, sequential: true, positioned: true };
        let (per_write, _) = self.costs(write, Issuers::threads(ingest.writers));
        add(&self.base, &scale(&per_write, ingest.rate.bytes_per_sec() / request))
    }

    /// Sequential MB/s for one reader or writer (`one`), or many, in requests of `request` bytes. Many
    /// sequential readers interleave on each member, so their requests are positioned.
    fn sequential(&self, dir: Dir, request: f64, one: bool) -> f64 {
        let issuers = if one { Issuers::threads(1) } else { Issuers::MANY };
        let op = Op { dir, bytes: request, sequential: true, positioned: !one };
        let (per_op, _) = self.costs(op, issuers);
        headroom(&self.base, &per_op).map_or(0.0, |b| b.units) * request / 1e6
    }

    /// Reads/s and writes/s of the file workload, and what limits them.
    fn file(&self, file: &FileWorkload) -> (f64, f64, String) {
        let bytes = file.op_bytes();
        let r = file.read_pct / 100.0;
        let positioned = !file.sequential || file.threads > 1;
        let op = |dir| Op { dir, bytes, sequential: file.sequential, positioned };
        let issuers = Issuers::threads(file.threads);
        let with_ws = Pool { working_set: file.working_set(), ..self.pool.clone() };
        // A controller cache that holds the working set serves every read: the members see only the writes.
        let member_reads = if with_ws.controller_holds() { 0.0 } else { r };
        let mix = |pool: &Pool| {
            let (reads, _) = self.costs_on(pool, op(Dir::Read), issuers);
            let (writes, _) = self.costs_on(pool, op(Dir::Write), issuers);
            add(&scale(&reads, member_reads), &scale(&writes, 1.0 - r))
        };
        // Each thread keeps one operation in flight, so the busiest member has threads × its requests per
        // operation waiting: command queueing shortens a rotating disk's positioning by that depth.
        let queue = f64::from(file.threads) * mix(&with_ws).iter().map(|c| c.requests).fold(0.0, f64::max);
        let pool = Pool { queue: Some(queue.max(1.0)), ..with_ws };
        let per_op = mix(&pool);
        let (io, per) = file.words();
        let members = headroom(&self.base, &per_op).map(|bound| (bound.units, self.describe(&per_op, &bound, io, per)));
        let (mut ops, mut limit) = match (members, controller_bound(&pool, file)) {
            (Some(m), Some(c)) => {
                if c.0 < m.0 {
                    c
                } else {
                    m
                }
            }
            (Some(bound), None) | (None, Some(bound)) => bound,
            (None, None) => return (0.0, 0.0, "nothing to do".into()),
        };
        let (read_latency, from_cache) = self.read_latency(&pool, op(Dir::Read), file, &mut limit);
        let latency = match (read_latency, op_latency(self.pool, op(Dir::Write))) {
            (Some(lr), Some(lw)) => Some(r * lr + (1.0 - r) * lw),
            _ => None,
        };
        if let Some(latency) = latency.filter(|l| f64::from(file.threads) / l < ops) {
            ops = f64::from(file.threads) / latency;
            let threads = if file.threads == 1 { "1 thread".to_string() } else { format!("{} threads", file.threads) };
            // Enough digits that threads ÷ latency gives the figure back (0.15 ms, not 0.2).
            let ms = latency * 1e3;
            let digits = if ms < 1.0 {
                3
            } else if ms < 10.0 {
                2
            } else {
                1
            };
            limit = format!("latency-bound: {threads} ÷ {ms:.digits$} ms per {per}{from_cache}");
        }
        (ops * r, ops * (1.0 - r), limit)
    }

    /// How long one read of the file workload waits, and the words saying which cache served it (appended to
    /// `limit` as well): the controller's when it holds the working set, the drives' when every member's
    /// does, else the members' own positioning and transfer.
    fn read_latency(
        &self,
        pool: &Pool,
        read: Op,
        file: &FileWorkload,
        limit: &mut String,
    ) -> (Option<f64>, &'static str) {
        let ws = crate::units::Bytes(file.working_set().unwrap_or(0.0) as u64);
        if let Some(cache) = pool.controller.filter(|_| pool.controller_holds()) {
            if !limit.starts_with("controller-cache-bound") {
                limit.push_str(&format!(
                    "; reads from the controller's {} cache (working set {ws})",
                    crate::units::Bytes(cache.size.0)
                ));
            }
            return (Some(cache.read_iops.recip()), " (reads from the controller's cache)");
        }
        let cached: Vec<usize> = (0..pool.drives.len()).filter(|&m| pool.cache_holds(m)).collect();
        if let Some(&m) = cached.first() {
            let cache = pool.drives[m].cache.expect("a member whose cache holds the working set has one");
            let (n, all) = (cached.len(), pool.drives.len());
            limit.push_str(&format!(
                "; reads from the drives' {} caches ({n} of {all}: working set {ws} on the pool)",
                crate::units::Bytes(cache.size.0)
            ));
        }
        if cached.len() == pool.drives.len() {
            // Every member reads from its cache: one read waits for the cache, not for a seek.
            let slowest = pool.drives.iter().filter_map(|d| d.cache).map(|c| c.read_iops.recip()).reduce(f64::max);
            return (slowest, " (reads from the drives' caches)");
        }
        (op_latency(self.pool, read), "")
    }

    /// Every figure of one state.
    pub fn figures(&self, demand: &StreamDemand, file: &FileWorkload, request: f64) -> ServiceFigures {
        let probe = Op { dir: Dir::Read, bytes: 4096.0, sequential: false, positioned: true };
        let lost = op_costs(self.pool, probe, Issuers::MANY, self.state).lost;
        let with_ingest = self.ingest_base(demand);
        let (streams, streams_limit) = self.streams(demand, &demand.formats, &with_ingest);
        let per_format = demand
            .formats
            .iter()
            .map(|f| {
                let (exact, limit) = self.streams(demand, std::slice::from_ref(f), &with_ingest);
                FormatStreams { name: f.name.clone(), streams: exact.floor() as u32, limit, exact }
            })
            .collect();
        let (reads_per_s, writes_per_s, file_limit) = self.file(file);
        ServiceFigures {
            unavailable_pct: lost * 100.0,
            streams: streams.floor() as u32,
            streams_limit,
            per_format,
            seq_read_one_mbps: self.sequential(Dir::Read, request, true),
            seq_read_many_mbps: self.sequential(Dir::Read, request, false),
            seq_write_mbps: self.sequential(Dir::Write, request, true),
            reads_per_s,
            writes_per_s,
            file_limit,
            cost_per_stream: None,
            cost_per_1000_reads: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::drive::Drive;
    use crate::planning::drive::tests::{hdd, throttled};
    use crate::planning::layout::{Layout, allocate};
    use crate::units::{Bitrate, Bytes};

    fn pool(layout: Layout, drives: &[Drive]) -> Pool<'_> {
        let caps: Vec<f64> = drives.iter().map(|d| d.capacity.0 as f64).collect();
        Pool { layout, drives, alloc: allocate(layout, &caps), queue: None, working_set: None, controller: None }
    }

    fn demand(mbit: u64) -> StreamDemand {
        let format =
            StreamFormat { name: "f".into(), label: "f".into(), bitrate: Bitrate(mbit * 1_000_000), weight: 1 };
        StreamDemand { formats: vec![format], chunk: Bytes(1 << 20), reader_threads: None, ingest: None }
    }

    #[test]
    fn streams_on_disks_are_seek_bound_and_say_so() {
        let drives = vec![hdd(8); 4];
        let p = pool(Layout::Raid10, &drives);
        let ctx = Context { pool: &p, state: State::Healthy, base: vec![Cost::ZERO; 4] };
        let f = ctx.figures(&demand(8), &FileWorkload::default(), 1_048_576.0);
        // A 1 MiB chunk on one member (512 KiB units: 1 + 1020/512 ≈ 3 units over 2 positions → both, 2 runs of
        // 512 KiB): 2 × (12.67 ms + 2.1 ms) of member time; 8 Mbit/s = 0.954 chunks/s.
        assert!(f.streams_limit.starts_with("seek-bound: 4 members"), "{}", f.streams_limit);
        assert!((100..=200).contains(&f.streams), "{}", f.streams);
        // Degraded raid10: the failed member's partner serves its share.
        let d = Context { state: State::Degraded(0), ..ctx };
        assert!(d.figures(&demand(8), &FileWorkload::default(), 1_048_576.0).streams < f.streams);
    }

    #[test]
    fn a_bandwidth_throttled_drive_is_bandwidth_bound() {
        let drives = vec![throttled(10_000.0, 20.0); 2];
        let p = pool(Layout::BtrfsRaid1, &drives);
        let ctx = Context { pool: &p, state: State::Healthy, base: vec![Cost::ZERO; 2] };
        // 2 × 20 MB/s ÷ 1 MB/s (8 Mbit/s) = 40 streams.
        let f = ctx.figures(&demand(8), &FileWorkload::default(), 1_048_576.0);
        assert_eq!(f.streams, 40, "{}", f.streams_limit);
        assert!(f.streams_limit.starts_with("bandwidth-bound: 2 members × 20 MB/s"), "{}", f.streams_limit);
        // One reader uses one copy: 20 MB/s; two copies for many.
        assert!((f.seq_read_one_mbps - 20.0).abs() < 0.01 && (f.seq_read_many_mbps - 40.0).abs() < 0.01);
    }

    #[test]
    fn reason_lines_reproduce_their_figure_in_the_workload_s_words() {
        // Streams of 8 Mbit/s in 4 MiB chunks on 3 disks of 250 MB/s: each chunk read is 12.67 ms positioning +
        // 16.78 ms transfer, bandwidth-bound: 4 MiB ÷ 29.45 ms = 142 MB/s per member; 3 × 142 ÷ 1.00 = 427.
        let drives = vec![hdd(8); 3];
        let p = pool(Layout::Mirror3, &drives);
        let ctx = Context { pool: &p, state: State::Healthy, base: vec![Cost::ZERO; 3] };
        let four = StreamDemand { chunk: Bytes(4 << 20), ..demand(8) };
        let (streams, limit) = ctx.streams(&four, &four.formats, &ctx.base);
        assert!(limit.starts_with("bandwidth-bound: 3 members × 142 MB/s (250 MB/s transfers + 12.7 ms"), "{limit}");
        assert!((streams - 3.0 * 142.4 / 1.0).abs() < 1.5, "{streams}");
        // One thread in the singular, and enough digits to give the figure back: 1 ÷ 12.69 ms = 78.8 reads/s.
        let one = FileWorkload { threads: 1, ..FileWorkload::default() };
        let (r, _, limit) = ctx.file(&one);
        assert_eq!(limit, "latency-bound: 1 thread ÷ 12.7 ms per read");
        assert!((r - 1.0 / (0.01267 + 4096.0 / 250e6)).abs() < 0.1, "{r}");
        // A write-only workload is told in writes.
        let many = FileWorkload { read_pct: 0.0, threads: 64, ..FileWorkload::default() };
        let (reads, w, limit) = ctx.file(&many);
        assert_eq!(reads, 0.0);
        // Every write goes to all three copies: 3 members × 79 I/Os/s ÷ 3.00 I/Os per write = 79 writes/s.
        assert!(limit.starts_with("seek-bound: 3 members × 79 I/Os/s ÷ 3.00 I/Os per write"), "{limit}");
        assert!((w - 78.8).abs() < 0.5, "{w}");
    }

    #[test]
    fn a_working_set_that_fits_the_drives_caches_is_read_from_them() {
        // Mirror of 2 disks with a 16 GiB cache each (600 MB/s, 20,000 reads/s). 8 GiB (1,024 files of 8 MiB):
        // each member holds a copy, 8 ≤ 16 GiB: a 4 KiB read costs 1 ÷ 20,000 of a member; 2 members: 40,000/s.
        let cache = crate::planning::drive::DriveCache {
            size: Bytes(16 << 30),
            read: crate::units::ByteRate(600e6),
            read_iops: 20_000.0,
        };
        let drives = vec![Drive { cache: Some(cache), ..hdd(8) }; 2];
        let p = pool(Layout::Mirror2, &drives);
        let ctx = Context { pool: &p, state: State::Healthy, base: vec![Cost::ZERO; 2] };
        let fits =
            FileWorkload { threads: 64, file_size: Some(Bytes(8 << 20)), files: Some(1024), ..Default::default() };
        let (reads, _, limit) = ctx.file(&fits);
        assert!((reads - 40_000.0).abs() < 1.0, "{reads}");
        assert!(limit.contains("reads from the drives' 16 GiB caches (2 of 2: working set 8 GiB"), "{limit}");
        // 3,072 files (24 GiB) do not fit: seek-bound again, a(32) on each disk.
        let spills = FileWorkload { files: Some(3072), ..fits };
        let (reads, _, limit) = ctx.file(&spills);
        assert!(reads < 500.0 && !limit.contains("cache"), "{reads} {limit}");
    }

    #[test]
    fn a_controller_cache_that_holds_the_working_set_serves_every_read_and_the_members_the_writes() {
        // RAID10 of 4 disks behind a controller with a 4 GiB cache (2,000 MB/s, 50,000 reads/s). 2 GiB working
        // set (512 files of 4 MiB) fits: 4 KiB reads are bound by the cache's 50,000 reads/s, not by 4 disks'
        // few hundred seeks.
        let controller = crate::planning::drive::DriveCache {
            size: Bytes(4 << 30),
            read: crate::units::ByteRate(2000e6),
            read_iops: 50_000.0,
        };
        let drives = vec![hdd(8); 4];
        let p = Pool { controller: Some(controller), ..pool(Layout::Raid10, &drives) };
        let ctx = Context { pool: &p, state: State::Healthy, base: vec![Cost::ZERO; 4] };
        let fits =
            FileWorkload { threads: 64, file_size: Some(Bytes(4 << 20)), files: Some(512), ..Default::default() };
        let (reads, _, limit) = ctx.file(&fits);
        assert!((reads - 50_000.0).abs() < 1.0, "{reads} {limit}");
        assert!(limit.starts_with("controller-cache-bound: its 4 GiB cache holds the working set (2 GiB)"), "{limit}");
        // 1 MiB reads: 2,000 MB/s ÷ 1 MiB = 1,907 reads/s binds before the cache's reads/s.
        let big = FileWorkload { transfer: Bytes(1 << 20), ..fits.clone() };
        let (reads, _, limit) = ctx.file(&big);
        assert!((reads - 2000e6 / 1_048_576.0).abs() < 1.0 && limit.contains("2000 MB/s ÷ 1 MiB"), "{reads} {limit}");
        // Half writes: the members take only the writes (each to both copies of a pair, 4 disks: a seek-bound
        // few hundred), which bind long before the cache; the words still say the reads came from the cache.
        let mixed = FileWorkload { read_pct: 50.0, ..fits.clone() };
        let (reads, writes, limit) = ctx.file(&mixed);
        assert!(reads == writes && reads < 1000.0, "{reads} {writes}");
        assert!(limit.contains("reads from the controller's 4 GiB cache (working set 2 GiB)"), "{limit}");
        // 8 GiB (2,048 files) does not fit: the disks serve the reads again.
        let spills = FileWorkload { files: Some(2048), ..fits };
        let (reads, _, limit) = ctx.file(&spills);
        assert!(reads < 1000.0 && !limit.contains("cache"), "{reads} {limit}");
    }

    #[test]
    fn a_stream_faster_than_one_disk_cannot_play_from_one_disk() {
        let drives = vec![hdd(8); 3];
        let p = pool(Layout::Unraid, &drives);
        let ctx = Context { pool: &p, state: State::Healthy, base: vec![Cost::ZERO; 3] };
        // 880 Mbit/s = 110 MB/s: a 1 MiB chunk every 9.5 ms, but a chunk read takes 16.9 ms.
        let (streams, limit) = ctx.streams(&demand(880), &demand(880).formats, &ctx.base);
        assert_eq!(streams, 0.0);
        assert!(limit.starts_with("one-disk cap"), "{limit}");
    }
}
