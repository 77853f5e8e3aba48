//! What one logical operation on a pool costs each member: the heart of the model. For a read or a write of a
//! given size, random or part of a sequential stream, healthy or with one member failed, it returns the
//! expected cost on every member (positioning, transfer, operations, bytes) and the share of operations whose
//! data no live member holds. Everything the service model says (streams, reads/s, MB/s) is derived from these
//! costs in `service`; the formulas and their sources are in docs/planning.md ("Member costs").
//!
//! Pure arithmetic over `Drive`s and an `Allocation`; no I/O.

use super::drive::{Cost, Dir, Drive, DriveCache};
use super::layout::{Allocation, Family, Layout, Rmw};
use super::readers::concentrate;
pub use super::readers::{Issuers, copy_shares};
use super::spaces;

/// The smallest alignment assumed for a transfer's start: 4 KiB (direct I/O's).
pub const ALIGN: f64 = 4096.0;

/// A pool: a layout over drives, with its allocation.
#[derive(Debug, Clone)]
pub struct Pool<'a> {
    pub layout: Layout,
    pub drives: &'a [Drive],
    pub alloc: Allocation,
    /// Requests waiting on each busy member (a workload with a known number of threads); `None`: a deep queue of
    /// unknown depth (`Drive::read_access`).
    pub queue: Option<f64>,
    /// Bytes a workload reads again and again (`FileWorkload::working_set`): a member whose cache holds its
    /// part serves those reads from the cache.
    pub working_set: Option<f64>,
    /// A read cache in front of every member (a RAID controller's or an HBA's): one cache for the pool.
    pub controller: Option<DriveCache>,
}

/// Healthy, or with one member (by index) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Healthy,
    Degraded(usize),
}

/// One logical operation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Op {
    pub dir: Dir,
    /// Bytes the application asks for.
    pub bytes: f64,
    /// Part of a sequential stream: stripe-aligned, full rows on parity layouts. Otherwise the transfer starts
    /// at a multiple of its size (see `units_covered`).
    pub sequential: bool,
    /// The head must move to it first (a random access, or a sequential stream interleaved with others).
    pub positioned: bool,
}

/// The expected cost of one logical operation on each member.
#[derive(Debug, Clone, PartialEq)]
pub struct OpCosts {
    pub members: Vec<Cost>,
    /// Share of operations that cannot be served: their data was only on the failed member.
    pub lost: f64,
}

/// How a member takes part in an operation: `runs` contiguous runs (each positioned once when random), holding
/// `bytes` in all, submitted as `pieces` requests.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Part {
    pub runs: f64,
    pub bytes: f64,
    pub pieces: f64,
}

impl Pool<'_> {
    fn live(&self, state: State) -> impl Iterator<Item = usize> + '_ {
        (0..self.drives.len()).filter(move |&i| state != State::Degraded(i))
    }

    pub(crate) fn charge(&self, costs: &mut [Cost], member: usize, dir: Dir, part: Part, positioned: bool) {
        if part.runs <= 0.0 || part.bytes <= 0.0 {
            return;
        }
        let pieces = (part.pieces / part.runs).max(1.0);
        let drive = &self.drives[member];
        let mut one = drive.run_queued(dir, part.bytes / part.runs, pieces, positioned, self.queue);
        if dir == Dir::Read && self.cache_holds(member) {
            one = drive.cached_read(one.moved, one.requests).unwrap_or(one);
        }
        costs[member].add(one.scaled(part.runs));
    }

    /// Whether member `m`'s cache holds its part of the working set: the working set times the share of the
    /// pool's data the member keeps a copy of (stored ÷ usable: 1 on a mirror, 1 ÷ (N − 1) on RAID5).
    pub fn cache_holds(&self, m: usize) -> bool {
        if self.controller_holds() {
            // The controller serves the working set before any member sees a read.
            return false;
        }
        let (Some(ws), Some(cache)) = (self.working_set, self.drives[m].cache) else { return false };
        ws * self.alloc.stored[m] / self.alloc.usable.max(1.0) <= cache.size.0 as f64
    }
}

impl Pool<'_> {
    /// Whether the controller's cache holds the whole working set (it serves every read of it, before the
    /// members).
    pub fn controller_holds(&self) -> bool {
        matches!((self.working_set, self.controller), (Some(ws), Some(c)) if ws <= c.size.0 as f64)
    }
}

/// Expected stripe units a transfer of `bytes` covers (docs/planning.md, "Stripe spanning"). streamcap, fio and
/// vdbench put random transfers at multiples of the transfer size (fio's blockalign = bs), and filesystems start
/// file data on a stripe unit, so a transfer starts on a multiple of `a` = the largest power of two dividing
/// its size, at most one unit; starting at a random multiple of `a`, it covers `1 + (bytes − a) ÷ unit` units on
/// average: exactly `bytes ÷ unit` when it is a multiple of the unit, 1 when it divides the unit. Sequential
/// streams are read in whole units.
pub fn units_covered(bytes: f64, unit: f64, sequential: bool) -> f64 {
    if sequential {
        return (bytes / unit).max(1.0);
    }
    let whole = bytes.max(ALIGN) as u64;
    let aligned = (1u64 << whole.trailing_zeros()).max(ALIGN as u64) as f64;
    1.0 + (bytes - aligned.min(unit)).max(0.0) / unit
}

/// The expected cost of `op`, issued by `issuers`, on each member of `pool`.
pub fn op_costs(pool: &Pool, op: Op, issuers: Issuers, state: State) -> OpCosts {
    match pool.layout.family() {
        Family::WholeFile { live, .. } => whole_file(pool, op, state, live, issuers.outstanding),
        Family::MirrorSets { .. } => mirror_sets(pool, op, issuers, state),
        Family::Chunks { copies } => chunks(pool, op, issuers, state, copies),
        Family::Slabs(shape) => spaces::op_costs(pool, shape, op, issuers, state),
        Family::Striped { copies: 2, unit, pid, .. } => striped_mirror(pool, op, issuers, state, unit as f64, pid),
        Family::Striped { parity, unit, record, rmw, .. } => {
            let shape = ParityShape { parity, unit: unit as f64, record: record.map(|r| r as f64), rmw };
            match op.dir {
                Dir::Read => parity_read(pool, op, state, shape),
                Dir::Write => parity_write(pool, op, state, shape),
            }
        }
    }
}

fn whole_file(pool: &Pool, op: Op, state: State, live: bool, outstanding: Option<u32>) -> OpCosts {
    let n = pool.drives.len();
    let mut costs = vec![Cost::ZERO; n];
    let mut lost = 0.0;
    let positioned = op.positioned;
    let parity_members = &pool.alloc.parity_members;
    let data: Vec<usize> = (0..n).filter(|d| !parity_members.contains(d)).collect();
    // Each file lies on one drive: k operations in flight keep at most k data drives busy.
    for (d, share) in concentrate(&data, &pool.alloc.data_share, outstanding) {
        let part = Part { runs: share, bytes: share * op.bytes, pieces: share };
        if state == State::Degraded(d) {
            if !live {
                lost += share;
                continue;
            }
            // Unraid emulates the failed disk: every read (and the read half of every write) reads the same
            // sectors of every other member, data and parity.
            for m in pool.live(state) {
                pool.charge(&mut costs, m, Dir::Read, part, positioned);
            }
            if op.dir == Dir::Write {
                parity_members.iter().for_each(|&p| pool.charge(&mut costs, p, Dir::Write, part, positioned));
            }
            continue;
        }
        pool.charge(&mut costs, d, op.dir, part, positioned);
        if op.dir == Dir::Write && live {
            // Read/modify/write: old data and old parity are read, new data and parity written.
            pool.charge(&mut costs, d, Dir::Read, part, positioned);
            for &p in parity_members.iter().filter(|&&p| state != State::Degraded(p)) {
                pool.charge(&mut costs, p, Dir::Read, part, positioned);
                pool.charge(&mut costs, p, Dir::Write, part, positioned);
            }
        }
    }
    OpCosts { members: costs, lost }
}

/// md RAID1 and ZFS mirror vdevs. Random reads are balanced over a set's live members; a sequential stream
/// stays on one member: md's read_balance sends a read that continues the previous one to the member that served
/// it (drivers/md/raid1.c), and ZFS adds a seek penalty of 5 queued I/Os to a member whose last read was elsewhere
/// (zfs_vdev_mirror_rotating_seek_inc in vdev_mirror.c), so k sequential readers use at most k members of a set.
fn mirror_sets(pool: &Pool, op: Op, issuers: Issuers, state: State) -> OpCosts {
    let mut costs = vec![Cost::ZERO; pool.drives.len()];
    let mut lost = 0.0;
    for set in &pool.alloc.sets {
        let share: f64 = set.iter().map(|&m| pool.alloc.data_share[m]).sum();
        let live: Vec<usize> = set.iter().copied().filter(|&m| state != State::Degraded(m)).collect();
        if live.is_empty() {
            lost += share;
            continue;
        }
        // Reads are balanced over the set's live members (a sequential stream's over as many as there are
        // streams); writes go to each of them.
        let live = match (op.dir, op.sequential, issuers.outstanding) {
            (Dir::Read, true, Some(k)) => live[..(k as usize).clamp(1, live.len())].to_vec(),
            _ => live,
        };
        let each = if op.dir == Dir::Read { share / live.len() as f64 } else { share };
        for &m in &live {
            pool.charge(
                &mut costs,
                m,
                op.dir,
                Part { runs: each, bytes: each * op.bytes, pieces: each },
                op.positioned,
            );
        }
    }
    OpCosts { members: costs, lost }
}

fn chunks(pool: &Pool, op: Op, issuers: Issuers, state: State, copies: usize) -> OpCosts {
    let n = pool.drives.len();
    let mut costs = vec![Cost::ZERO; n];
    let positioned = op.positioned;
    let part = |k: f64| Part { runs: k, bytes: k * op.bytes, pieces: k };
    let live: Vec<usize> = pool.live(state).collect();
    // The members holding data: all of them, or a small data set's chunks' (`fill`).
    let holders: Vec<usize> = (0..n).filter(|&m| pool.alloc.data_share[m] > 0.0).collect();
    match op.dir {
        Dir::Read if holders.len() == copies => {
            // Every chunk is on the same members (a pool of `copies` drives, or a data set in one chunk): copy
            // index c is the c-th holder, and the pid of the reading thread picks the copy. A failed member's
            // reads go to the first live copy (find_live_mirror).
            let first_live = holders.iter().copied().find(|&m| state != State::Degraded(m)).unwrap_or(live[0]);
            for (c, share) in copy_shares(copies, issuers).into_iter().enumerate() {
                let member = if state == State::Degraded(holders[c]) { first_live } else { holders[c] };
                pool.charge(&mut costs, member, Dir::Read, part(share), positioned);
            }
        }
        Dir::Read => {
            // Chunks lie on different members: over many chunks, each member serves reads in proportion to what
            // it stores; a failed member's copies are read from the other members holding them. A sequential
            // reader reads one chunk (one copy, one member) at a time.
            let live_share: f64 = live.iter().map(|&m| pool.alloc.data_share[m]).sum();
            let busy = if op.sequential { issuers.outstanding } else { None };
            for (m, share) in concentrate(&live, &pool.alloc.data_share, busy) {
                pool.charge(&mut costs, m, Dir::Read, part(share / live_share.max(1e-12)), positioned);
            }
        }
        Dir::Write => {
            // All writes land in the chunk being filled: its `copies` members, the ones with the most room.
            let mut order = live.clone();
            order.sort_by(|&a, &b| pool.alloc.stored[b].total_cmp(&pool.alloc.stored[a]).then(a.cmp(&b)));
            for &m in order.iter().take(copies) {
                pool.charge(&mut costs, m, Dir::Write, part(1.0), positioned);
            }
        }
    }
    OpCosts { members: costs, lost: 0.0 }
}

/// RAID10: `n ÷ 2` positions, each a pair of copies; md balances reads over the pair, btrfs picks by pid.
fn striped_mirror(pool: &Pool, op: Op, issuers: Issuers, state: State, unit: f64, pid: bool) -> OpCosts {
    let n = pool.drives.len();
    let positions = (n / 2) as f64;
    let units = units_covered(op.bytes, unit, op.sequential);
    let runs = units.min(positions);
    let copy = if pid { copy_shares(2, issuers) } else { vec![0.5, 0.5] };
    let mut costs = vec![Cost::ZERO; n];
    for m in 0..n {
        if state == State::Degraded(m) {
            continue;
        }
        let partner = m ^ 1;
        let share = match op.dir {
            Dir::Write => 1.0,
            Dir::Read if state == State::Degraded(partner) => 1.0,
            Dir::Read => copy[m % 2],
        };
        let k = share / positions;
        let part = Part { runs: runs * k, bytes: op.bytes * k, pieces: units * k };
        pool.charge(&mut costs, m, op.dir, part, op.positioned);
    }
    OpCosts { members: costs, lost: 0.0 }
}

#[derive(Debug, Clone, Copy)]
struct ParityShape {
    parity: usize,
    unit: f64,
    record: Option<f64>,
    rmw: Rmw,
}

/// Reads on RAID5/6 and raidz. Parity rotates, so data units (and the operations on them) spread evenly over
/// all members. raidz reads whole records, each split over the data members.
fn parity_read(pool: &Pool, op: Op, state: State, shape: ParityShape) -> OpCosts {
    let n = pool.drives.len();
    let data = (n - shape.parity) as f64;
    let (read_bytes, units) = match shape.record {
        Some(record) => {
            let records = units_covered(op.bytes, record, op.sequential);
            (records * record, records * data)
        }
        None => (op.bytes, units_covered(op.bytes, shape.unit, op.sequential)),
    };
    // Distinct members holding the requested data (contiguous units on one member form one run).
    let touched = units.min(data);
    let (reads, spread) = match state {
        State::Healthy => (touched, n as f64),
        // A unit of the failed member is rebuilt from n − parity units of its row; the other touched units
        // are among them. raidz reads a parity column instead of the missing one.
        State::Degraded(_) if shape.record.is_some() => (touched, (n - 1) as f64),
        State::Degraded(_) => {
            let t_over_n = touched / n as f64;
            ((1.0 - t_over_n) * touched + t_over_n * data, (n - 1) as f64)
        }
    };
    let mut costs = vec![Cost::ZERO; n];
    for m in pool.live(state) {
        let drive = &pool.drives[m];
        // A rotating disk streams past the parity units of the rows it reads; flash skips them.
        let bytes = if op.sequential && drive.rotational && state == State::Healthy {
            read_bytes / data
        } else {
            read_bytes * reads / touched / spread
        };
        let part = Part { runs: reads / spread, bytes, pieces: units * reads / touched / spread };
        pool.charge(&mut costs, m, Dir::Read, part, op.positioned);
    }
    OpCosts { members: costs, lost: 0.0 }
}

/// Writes on RAID5/6 and raidz: full rows when sequential (data plus parity, no reads); a partial row costs the
/// implementation's read/modify/write (docs/planning.md, "Write penalties").
fn parity_write(pool: &Pool, op: Op, state: State, shape: ParityShape) -> OpCosts {
    let n = pool.drives.len();
    let p = shape.parity as f64;
    let data = n as f64 - p;
    let unit = shape.record.map_or(shape.unit, |r| r / data);
    let units = units_covered(op.bytes, unit, op.sequential);
    // (units read, bytes each; units written, bytes each)
    let (reads, read_bytes, writes, write_bytes) = if op.sequential {
        // Full rows: every member writes one unit (data or parity) per row.
        (0.0, 0.0, units / data * n as f64, unit)
    } else {
        let t = units.min(data);
        let piece = op.bytes / t;
        match shape.rmw {
            Rmw::Never | Rmw::None => {
                // raidz writes a new stripe as wide as the data needs: its sectors plus parity.
                let columns = (op.bytes / ALIGN).ceil().min(data);
                (0.0, 0.0, columns + p, op.bytes / columns)
            }
            // md reads the old data and parity, or the rest of the row, whichever is fewer (4 KiB pages).
            Rmw::Md => ((t + p).min(data - t), piece, t + p, piece),
            // btrfs reads every unit of the row, data and parity, to verify checksums before it writes.
            Rmw::Btrfs => (n as f64, unit, t + p, piece),
        }
    };
    let spread = match state {
        State::Healthy => n as f64,
        State::Degraded(_) => (n - 1) as f64,
    };
    let keep = if state == State::Healthy { 1.0 } else { (n - 1) as f64 / n as f64 };
    let mut costs = vec![Cost::ZERO; n];
    for m in pool.live(state) {
        let part = |count: f64, bytes: f64| {
            let runs = count * keep / spread;
            Part { runs, bytes: runs * bytes, pieces: runs }
        };
        let (read, write) = (part(reads, read_bytes), part(writes, write_bytes));
        pool.charge(&mut costs, m, Dir::Read, read, op.positioned);
        pool.charge(&mut costs, m, Dir::Write, write, op.positioned);
    }
    OpCosts { members: costs, lost: 0.0 }
}

/// How long one logical operation takes with nothing else queued: its slowest member's part (parts on
/// different members run in parallel), read then write for a parity update. `None` when a member's latency is
/// unknown (an op-limited drive without a queue-depth-1 figure).
pub fn op_latency(pool: &Pool, op: Op) -> Option<f64> {
    let n = pool.drives.len();
    let (part_bytes, phases) = match pool.layout.family() {
        Family::WholeFile { live, .. } => (op.bytes, if live && op.dir == Dir::Write { 2.0 } else { 1.0 }),
        Family::MirrorSets { .. } | Family::Chunks { .. } => (op.bytes, 1.0),
        Family::Slabs(shape) => {
            let columns = if op.dir == Dir::Read { shape.data_columns(n) } else { shape.columns(n) } as f64;
            let touched = units_covered(op.bytes, shape.interleave() as f64, op.sequential).min(columns);
            let rmw = op.dir == Dir::Write && shape.parity > 0 && spaces::partial_stripe(shape, n, op.bytes);
            (op.bytes / touched, if rmw { 2.0 } else { 1.0 })
        }
        Family::Striped { copies, parity, unit, record, rmw, .. } => {
            let columns = if copies == 2 { n / 2 } else { n - parity } as f64;
            let unit = record.map_or(unit as f64, |r| r as f64 / columns);
            let touched = units_covered(op.bytes, unit, op.sequential).min(columns);
            let rmw = op.dir == Dir::Write && !op.sequential && matches!(rmw, Rmw::Md | Rmw::Btrfs);
            (op.bytes / touched, if rmw { 2.0 } else { 1.0 })
        }
    };
    let mut slowest: f64 = 0.0;
    for drive in pool.drives {
        slowest = slowest.max(drive.latency(op.dir, part_bytes)?);
    }
    Some(slowest * phases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::drive::tests::{hdd, throttled};
    use crate::planning::layout::allocate;

    fn pool(layout: Layout, drives: &[Drive]) -> Pool<'_> {
        let caps: Vec<f64> = drives.iter().map(|d| d.capacity.0 as f64).collect();
        Pool { layout, drives, alloc: allocate(layout, &caps), queue: None, working_set: None, controller: None }
    }

    fn busiest(costs: &OpCosts) -> f64 {
        costs.members.iter().map(|c| c.load()).fold(0.0, f64::max)
    }

    const READ_4K: Op = Op { dir: Dir::Read, bytes: 4096.0, sequential: false, positioned: true };

    #[test]
    fn one_reader_on_btrfs_raid1_uses_one_member_and_two_use_both() {
        let drives = vec![throttled(100.0, 100.0); 2];
        let p = pool(Layout::BtrfsRaid1, &drives);
        // 1 reader: all reads on one member, 100 reads/s. 2 readers: 200 reads/s.
        assert!(
            (1.0 / busiest(&op_costs(&p, READ_4K, Issuers { threads: Some(1), outstanding: None }, State::Healthy))
                - 100.0)
                .abs()
                < 1e-6
        );
        assert!(
            (1.0 / busiest(&op_costs(&p, READ_4K, Issuers { threads: Some(2), outstanding: None }, State::Healthy))
                - 200.0)
                .abs()
                < 1e-6
        );
        // Degraded: the survivor serves every read.
        assert!(
            (1.0 / busiest(&op_costs(
                &p,
                READ_4K,
                Issuers { threads: Some(2), outstanding: None },
                State::Degraded(0)
            )) - 100.0)
                .abs()
                < 1e-6
        );
    }

    #[test]
    fn one_sequential_reader_of_an_md_mirror_is_served_by_one_member() {
        // md raid1 of two 250 MB/s disks: one reader of 1 MiB requests reads one member, 250 MB/s; two readers
        // read one member each, 500 MB/s (many readers: positioned, so less).
        let drives = vec![hdd(8); 2];
        let p = pool(Layout::Mirror2, &drives);
        let seq = Op { dir: Dir::Read, bytes: 1_048_576.0, sequential: true, positioned: false };
        let mbps = |k| 1.048576 / busiest(&op_costs(&p, seq, Issuers::threads(k), State::Healthy));
        assert!((mbps(1) - 250.0).abs() < 0.01, "{}", mbps(1));
        assert!((mbps(2) - 500.0).abs() < 0.01, "{}", mbps(2));
        // Random reads from one thread are still balanced over both (md picks the nearest head, ZFS the least
        // busy member).
        let one = 1.0 / busiest(&op_costs(&p, READ_4K, Issuers::threads(1), State::Healthy));
        let both = 1.0 / busiest(&op_costs(&p, READ_4K, Issuers::MANY, State::Healthy));
        assert!((one - both).abs() < 1e-9);
    }

    #[test]
    fn small_random_reads_on_raid5_spread_over_every_member_and_halve_when_degraded() {
        let drives = vec![throttled(100.0, 100.0); 4];
        let p = pool(Layout::Raid5, &drives);
        assert!((1.0 / busiest(&op_costs(&p, READ_4K, Issuers::MANY, State::Healthy)) - 400.0).abs() < 1e-6);
        // Degraded: 2(n−1)/n reads per read over n−1 members → n/2 × 100.
        assert!((1.0 / busiest(&op_costs(&p, READ_4K, Issuers::MANY, State::Degraded(3))) - 200.0).abs() < 1e-6);
    }

    #[test]
    fn a_read_spanning_stripe_units_costs_more_requests_on_a_throttle() {
        // 128 KiB over 64 KiB units: two bios, each counted by the throttle.
        let drives = vec![throttled(100.0, 1000.0); 3];
        let p = pool(Layout::BtrfsRaid5, &drives);
        let op = Op { dir: Dir::Read, bytes: 131072.0, sequential: false, positioned: true };
        let rate = 1.0 / busiest(&op_costs(&p, op, Issuers::MANY, State::Healthy));
        assert!((rate - 300.0 / 2.0).abs() < 0.01, "{rate}");
        // 96 KiB starts on a 32 KiB boundary: it crosses a unit boundary half the time, 2 units on average.
        assert_eq!(units_covered(98304.0, 65536.0, false), 2.0);
        assert_eq!(units_covered(4096.0, 65536.0, false), 1.0);
        assert_eq!(units_covered(1_048_576.0, 524_288.0, false), 2.0);
    }

    #[test]
    fn parity_write_penalties_are_four_and_six_on_md() {
        let drives = vec![hdd(8); 6];
        let write = Op { dir: Dir::Write, bytes: 4096.0, sequential: false, positioned: true };
        let read_rate = 1.0 / busiest(&op_costs(&pool(Layout::Raid5, &drives), READ_4K, Issuers::MANY, State::Healthy));
        let r5 = 1.0 / busiest(&op_costs(&pool(Layout::Raid5, &drives), write, Issuers::MANY, State::Healthy));
        let r6 = 1.0 / busiest(&op_costs(&pool(Layout::Raid6, &drives), write, Issuers::MANY, State::Healthy));
        assert!((read_rate / r5 - 4.0).abs() < 0.01, "{}", read_rate / r5);
        assert!((read_rate / r6 - 6.0).abs() < 0.01, "{}", read_rate / r6);
        let mirror = 1.0 / busiest(&op_costs(&pool(Layout::Mirror2, &drives), write, Issuers::MANY, State::Healthy));
        assert!((read_rate / mirror - 2.0).abs() < 0.01);
    }

    #[test]
    fn unraid_writes_wait_on_the_parity_disk() {
        let drives = vec![hdd(8); 4];
        let p = pool(Layout::Unraid, &drives);
        let seq = Op { dir: Dir::Write, bytes: 1_048_576.0, sequential: true, positioned: false };
        let costs = op_costs(&p, seq, Issuers::MANY, State::Healthy);
        // Parity reads and writes every byte: half a disk's rate.
        let mbps = 1.048576 / busiest(&costs);
        assert!((mbps - 125.0).abs() < 0.5, "{mbps}");
        let snap = op_costs(&pool(Layout::Snapraid, &drives), seq, Issuers::MANY, State::Healthy);
        assert!((1.048576 / busiest(&snap) - 250.0 * 3.0).abs() < 1.0);
        assert_eq!(
            op_costs(&pool(Layout::Snapraid, &drives), READ_4K, Issuers::MANY, State::Degraded(1)).lost,
            1.0 / 3.0
        );
    }
}
