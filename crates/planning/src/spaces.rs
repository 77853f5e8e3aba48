//! Windows Storage Spaces (`Family::Slabs`): simple, two- and three-way mirror, single and dual parity spaces,
//! as Microsoft documents them. A space is cut into 256 MiB slabs; each slab is striped over `columns` columns
//! of `interleave` bytes (256 KiB unless set), each column on its own drive, and a mirror space keeps `copies`
//! copies of every column on further drives; slabs go to the drives with the most free space, so a space uses
//! every drive of the pool whatever its column count (a two-way mirror of three drives holds half of their sum).
//! A parity write that covers whole stripes (`(columns − parity) × interleave` of data) writes data and parity;
//! a smaller one reads the old data and parity and writes both (read/modify/write: 4 member I/Os on single
//! parity, 6 on dual). Reads of a mirror use one copy per read: one sequential reader is served by one copy's
//! columns, many readers by every drive. Sources and the comparison with published measurements:
//! docs/planning.md, "Storage Spaces". Pure arithmetic; the costs go through `members`' `Pool::charge`.

use super::drive::{Cost, Dir, Drive};
use super::layout::{Family, Layout};
use super::members::{ALIGN, Issuers, Op, OpCosts, Part, Pool, State, units_covered};
use super::readers::concentrate;
use super::spaces_tune::Tune;
use crate::units::Bytes;

/// Storage Spaces' default interleave (the data one column holds per stripe).
pub const INTERLEAVE: u64 = 256 * 1024;
/// Columns Storage Spaces chooses at most by default.
pub const MAX_COLUMNS: usize = 8;

/// The shape of a space: copies of each column (1 for simple and parity), parity columns per stripe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub copies: usize,
    pub parity: usize,
    /// A write-back cache on SSD journal drives (1 GiB, Windows' default size when the pool has them): it
    /// gathers a sequential stream's writes into whole stripes before they reach the hard disks. Random writes
    /// are destaged one by one, each still a read/modify/write once the cache is full.
    pub cache: bool,
    /// Columns and interleave when given (`New-VirtualDisk -NumberOfColumns -Interleave`), else Windows' own.
    pub tune: Tune,
}

impl Shape {
    /// The space's columns: those given, or those Windows chooses for `n` drives: as many as the drives allow,
    /// at most 8 (a mirror: drives ÷ copies); parity needs 3 (single) or 7 (dual).
    pub fn columns(self, n: usize) -> usize {
        match self.tune.columns {
            0 => (n / self.copies).clamp(1, MAX_COLUMNS),
            given => given as usize,
        }
    }

    /// The data one column holds per stripe: the interleave given, or Windows' 256 KiB.
    pub fn interleave(self) -> u64 {
        if self.tune.interleave > 0 { self.tune.interleave } else { INTERLEAVE }
    }

    /// Columns a space of this kind needs at least: parity needs its parity columns and two of data (Windows
    /// refuses fewer: three for single parity, seven for dual), a mirror or simple space one.
    pub fn min_columns(self) -> usize {
        match self.parity {
            0 => 1,
            1 => 3,
            _ => 7,
        }
    }

    /// Data columns per stripe.
    pub fn data_columns(self, n: usize) -> usize {
        self.columns(n) - self.parity
    }

    /// Drives one slab lies on.
    pub fn width(self, n: usize) -> usize {
        self.columns(n) * self.copies
    }

    /// Drives a space needs at least (Microsoft, "Storage Spaces in Windows": a two-way mirror two, a three-way
    /// mirror five, parity three, dual parity seven).
    pub fn min_drives(self) -> usize {
        match (self.copies, self.parity) {
            (1, 0) => 1,
            (2, _) => 2,
            (_, 0) => 5,
            (_, 1) => 3,
            _ => 7,
        }
    }

    /// Data bytes of one full stripe.
    pub fn stripe(self, n: usize) -> f64 {
        (self.data_columns(n) as u64 * self.interleave()) as f64
    }
}

/// What each drive stores and what the space offers: slabs of `width` drives go to the drives with the most
/// free space, so (as btrfs's chunks) the largest R with Σ min(Cᵢ, R) ≥ width × R is what each column position
/// can hold; the space holds R × data columns.
pub fn allocate(shape: Shape, capacities: &[f64]) -> (f64, Vec<f64>) {
    let n = capacities.len();
    let width = shape.width(n).min(n).max(1);
    let total: f64 = capacities.iter().sum();
    let (mut low, mut high) = (0.0, total / width as f64);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        let fits: f64 = capacities.iter().map(|&c| c.min(mid)).sum();
        if fits >= width as f64 * mid { low = mid } else { high = mid }
    }
    let per_position = low;
    let held: f64 = capacities.iter().map(|&c| c.min(per_position)).sum::<f64>().max(1e-12);
    let stored = capacities.iter().map(|&c| c.min(per_position) * width as f64 * per_position / held).collect();
    (per_position * shape.data_columns(n) as f64, stored)
}

/// The members serving an operation and the share of it each serves: every live member by the data it holds,
/// or, for a sequential stream from few issuers, the `k × per_issuer` members of the slabs being read.
fn spread(pool: &Pool, state: State, op: Op, issuers: Issuers, per_issuer: usize) -> Vec<(usize, f64)> {
    let live: Vec<usize> = (0..pool.drives.len()).filter(|&m| state != State::Degraded(m)).collect();
    let busy = if op.sequential { issuers.outstanding.map(|k| k.saturating_mul(per_issuer as u32)) } else { None };
    let held: f64 = live.iter().map(|&m| pool.alloc.data_share[m]).sum::<f64>().max(1e-12);
    concentrate(&live, &pool.alloc.data_share, busy).into_iter().map(|(m, s)| (m, s / held)).collect()
}

/// The expected cost of `op` on each member of a space.
pub fn op_costs(pool: &Pool, shape: Shape, op: Op, issuers: Issuers, state: State) -> OpCosts {
    let n = pool.drives.len();
    let data = shape.data_columns(n);
    let units = units_covered(op.bytes, shape.interleave() as f64, op.sequential);
    let runs = units.min(data as f64);
    let mut costs = vec![Cost::ZERO; n];
    let lost = match state {
        State::Degraded(f) if shape.copies == 1 && shape.parity == 0 => pool.alloc.data_share[f],
        _ => 0.0,
    };
    let (reads, writes, write_bytes) = match op.dir {
        Dir::Read => (read_runs(shape, n, runs, state), 0.0, 0.0),
        Dir::Write if shape.parity == 0 => (0.0, runs * shape.copies as f64, op.bytes * shape.copies as f64),
        Dir::Write => {
            let (reads, writes) = parity_write_runs(shape, n, op);
            (reads, writes, parity_write_bytes(shape, n, op.bytes, op.sequential))
        }
    };
    // A sequential stream from one issuer keeps one slab's drives busy: one copy's columns when reading (parity
    // rotates over every column), every copy's when writing.
    let per_issuer = if op.dir == Dir::Read { shape.columns(n) } else { shape.width(n) };
    // A rotating disk streams past the parity units of the rows it reads; flash skips them.
    let past_parity = shape.columns(n) as f64 / data as f64;
    for (m, share) in spread(pool, state, op, issuers, per_issuer) {
        let drive = &pool.drives[m];
        if reads > 0.0 {
            let streams_past = op.dir == Dir::Read && op.sequential && drive.rotational && shape.parity > 0;
            let over = if streams_past { past_parity } else { 1.0 };
            // The reads of a read/modify/write are as large as the writes they precede.
            let bytes = if op.dir == Dir::Read { op.bytes / runs * reads } else { write_bytes * reads / writes };
            let part = Part { runs: reads * share, bytes: bytes * share * over, pieces: units / runs * reads * share };
            pool.charge(&mut costs, m, Dir::Read, part, op.positioned);
        }
        if writes > 0.0 {
            let part = Part { runs: writes * share, bytes: write_bytes * share, pieces: writes * share };
            pool.charge(&mut costs, m, Dir::Write, part, op.positioned);
        }
        // A rotating disk writes back the sectors it has just read one turn later (each read/modify/write run).
        if let Some(turn) = drive.revolution().filter(|_| op.dir == Dir::Write && reads > 0.0) {
            costs[m].seek += turn * reads * share;
        }
    }
    OpCosts { members: costs, lost }
}

/// Member reads per logical read of `runs` columns. Degraded parity: a read that meets the failed drive's
/// column (probability runs ÷ n) reads the rest of the stripe's data columns and its parity instead.
fn read_runs(shape: Shape, n: usize, runs: f64, state: State) -> f64 {
    match state {
        State::Degraded(_) if shape.parity > 0 => {
            let hit = (runs / n as f64).min(1.0);
            (1.0 - hit) * runs + hit * shape.data_columns(n) as f64
        }
        _ => runs,
    }
}

/// Member reads and writes of one parity write of `op.bytes`, in interleave-sized runs: whole stripes write
/// every column (data and parity); the rest of the write, a partial stripe of t data columns, reads the old t
/// data and p parity columns and writes them anew (read/modify/write).
pub fn parity_write_runs(shape: Shape, n: usize, op: Op) -> (f64, f64) {
    let stripe = shape.stripe(n);
    let columns = shape.columns(n) as f64;
    if shape.cache && op.sequential {
        // The cache gathers the stream into whole stripes: every column written, nothing read.
        return (0.0, op.bytes / stripe * columns);
    }
    let p = shape.parity as f64;
    let full = (op.bytes / stripe).floor();
    let rest = op.bytes - full * stripe;
    let partial = if rest > 0.5 { units_covered(rest, shape.interleave() as f64, op.sequential).ceil() } else { 0.0 };
    let rmw = if partial > 0.0 { partial + p } else { 0.0 };
    (rmw, full * columns + rmw)
}

/// Bytes the members write for one parity write of `bytes`: every column of each whole stripe, and the data
/// and parity columns of the partial stripe (each as large as the data it changes in one column).
fn parity_write_bytes(shape: Shape, n: usize, bytes: f64, sequential: bool) -> f64 {
    let stripe = shape.stripe(n);
    if shape.cache && sequential {
        return bytes / shape.data_columns(n) as f64 * shape.columns(n) as f64;
    }
    let full = (bytes / stripe).floor();
    let rest = bytes - full * stripe;
    let per_column = rest.min(shape.interleave() as f64);
    let partial = if rest > 0.5 { rest + per_column * shape.parity as f64 } else { 0.0 };
    full * (shape.columns(n) as u64 * shape.interleave()) as f64 + partial
}

/// Whether a write of `bytes` leaves a partial stripe (and so waits for its reads before it writes).
pub fn partial_stripe(shape: Shape, n: usize, bytes: f64) -> bool {
    let stripe = shape.stripe(n);
    if shape.cache {
        return false;
    }
    bytes - (bytes / stripe).floor() * stripe > 0.5
}

/// The member reads a logical write costs per member write, for the notes: (member I/Os of one small write,
/// stripe bytes).
pub fn small_write_ios(shape: Shape, n: usize) -> (f64, f64) {
    let op = Op { dir: Dir::Write, bytes: ALIGN, sequential: false, positioned: true };
    let (reads, writes) = parity_write_runs(shape, n, op);
    (reads + writes, shape.stripe(n))
}

/// The parity write penalty of `layout` over `drives`, in words, beside a two-way mirror of the same drives:
/// what a small write costs, and what 4 KiB random writes and one writer's sequential writes of `request`
/// bytes reach on each. `None` for a layout that is not a parity space.
pub fn penalty_note(layout: Layout, drives: &[Drive], request: f64) -> Option<String> {
    let Family::Slabs(shape) = layout.family() else { return None };
    if shape.parity == 0 {
        return None;
    }
    let n = drives.len();
    let (ios, stripe) = small_write_ios(shape, n);
    let rates = |layout: Layout| {
        let caps: Vec<f64> = drives.iter().map(|d| d.capacity.0 as f64).collect();
        let pool = Pool {
            layout,
            drives,
            alloc: super::layout::allocate(layout, &caps),
            queue: None,
            working_set: None,
            controller: None,
        };
        let rate = |op: Op, issuers| {
            let costs = super::members::op_costs(&pool, op, issuers, State::Healthy);
            1.0 / costs.members.iter().map(|c| c.load()).fold(0.0, f64::max).max(1e-30)
        };
        let small = Op { dir: Dir::Write, bytes: ALIGN, sequential: false, positioned: true };
        let seq = Op { dir: Dir::Write, bytes: request, sequential: true, positioned: false };
        (rate(small, Issuers::MANY), rate(seq, Issuers::threads(1)) * request / 1e6)
    };
    let (small, seq) = rates(layout);
    let (mirror_small, mirror_seq) = rates(Layout::SpacesMirror(Tune::WINDOWS));
    let kind = match (shape.cache, partial_stripe(shape, n, request)) {
        (true, _) => "gathered into whole stripes by the write-back cache",
        (false, true) => "a partial stripe, read/modify/write",
        (false, false) => "whole stripes",
    };
    Some(format!(
        "{} of {}: {} columns, {} of data per stripe; a write smaller than a stripe reads the old data and parity \
         and writes both ({ios:.0} member I/Os): 4 KiB random writes {small:.0}/s against {mirror_small:.0}/s on a \
         two-way mirror of the same drives ({:.1}× fewer); one writer's {} writes ({kind}) {seq:.0} MB/s against \
         {mirror_seq:.0} MB/s (docs/planning.md, \"Storage Spaces\").",
        layout,
        super::evaluate::pool_name(drives),
        shape.columns(n),
        Bytes(stripe as u64),
        mirror_small / small.max(1e-12),
        Bytes(request as u64),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::drive::Drive;
    use crate::planning::drive::tests::{hdd, throttled};
    use crate::planning::layout::{Layout, allocate as layout_allocate};
    use crate::planning::members::op_costs as member_costs;

    const TB: f64 = 1e12;
    const PARITY: Shape = Shape { copies: 1, parity: 1, cache: false, tune: Tune::WINDOWS };
    const MIRROR: Shape = Shape { copies: 2, parity: 0, cache: false, tune: Tune::WINDOWS };

    fn pool(layout: Layout, drives: &[Drive]) -> Pool<'_> {
        let caps: Vec<f64> = drives.iter().map(|d| d.capacity.0 as f64).collect();
        Pool { layout, drives, alloc: layout_allocate(layout, &caps), queue: None, working_set: None, controller: None }
    }

    fn rate(pool: &Pool, op: Op, issuers: Issuers, state: State) -> f64 {
        let costs = member_costs(pool, op, issuers, state);
        1.0 / costs.members.iter().map(|c| c.load()).fold(0.0, f64::max)
    }

    #[test]
    fn columns_follow_the_drives_as_windows_chooses_them() {
        assert_eq!((MIRROR.columns(3), MIRROR.columns(4), MIRROR.columns(20)), (1, 2, 8));
        assert_eq!((PARITY.columns(3), PARITY.columns(6), PARITY.columns(12)), (3, 6, 8));
        // Three columns of 256 KiB with one parity: 512 KiB of data per stripe.
        assert_eq!(PARITY.stripe(3), 524_288.0);
    }

    #[test]
    fn a_two_way_mirror_of_three_drives_holds_half_their_sum_and_reads_from_all_three() {
        // Slabs of 1 column × 2 copies on the two drives with most room: R = 12 TB ÷ 2 = 6 TB each position.
        let (usable, stored) = allocate(MIRROR, &[4.0 * TB; 3]);
        assert!((usable - 6.0 * TB).abs() < 1e6, "{usable}");
        assert!(stored.iter().all(|s| (s - 4.0 * TB).abs() < 1e6), "{stored:?}");
        let drives = vec![throttled(100.0, 100.0); 3];
        let p = pool(Layout::SpacesMirror(Tune::WINDOWS), &drives);
        let read = Op { dir: Dir::Read, bytes: 4096.0, sequential: false, positioned: true };
        // Many readers: every drive serves a third of the reads: 3 × 100 = 300 reads/s.
        assert!((rate(&p, read, Issuers::MANY, State::Healthy) - 300.0).abs() < 1e-6);
        // One sequential reader of 1 MiB on 250 MB/s disks: one column of one copy, one drive: 250 MB/s; many
        // readers: all three, 750 MB/s.
        let disks = vec![hdd(8); 3];
        let d = pool(Layout::SpacesMirror(Tune::WINDOWS), &disks);
        let seq = Op { dir: Dir::Read, bytes: 1_048_576.0, sequential: true, positioned: false };
        let mbps = rate(&d, seq, Issuers::threads(1), State::Healthy) * 1.048576;
        assert!((mbps - 250.0).abs() < 0.01, "{mbps}");
        let mbps = rate(&d, seq, Issuers::MANY, State::Healthy) * 1.048576;
        assert!((mbps - 750.0).abs() < 0.01, "{mbps}");
        // Writes go to both copies: 4 KiB writes from many writers load 2 of 3 drives per write: 150 writes/s.
        let write = Op { dir: Dir::Write, ..read };
        assert!((rate(&p, write, Issuers::MANY, State::Healthy) - 150.0).abs() < 1e-6);
    }

    #[test]
    fn a_sub_stripe_parity_write_reads_old_data_and_parity_first() {
        // 3 drives, 3 columns (2 data + parity), 512 KiB stripes. A 4 KiB write: reads 1 data + 1 parity
        // column, writes both: 4 member I/Os. On 3 disks of 100 I/O/s: 300 ÷ 4 = 75 writes/s.
        let small = Op { dir: Dir::Write, bytes: 4096.0, sequential: false, positioned: true };
        assert_eq!(parity_write_runs(PARITY, 3, small), (2.0, 2.0));
        let drives = vec![throttled(100.0, 100.0); 3];
        let p = pool(Layout::SpacesParity(Tune::WINDOWS), &drives);
        assert!((rate(&p, small, Issuers::MANY, State::Healthy) - 75.0).abs() < 1e-6);
        // A 1 MiB write is two whole stripes: 6 column writes, no reads.
        let stripe = Op { bytes: 1_048_576.0, sequential: true, positioned: false, ..small };
        assert_eq!(parity_write_runs(PARITY, 3, stripe), (0.0, 6.0));
        // 6 drives, 6 columns: a 1 MiB write is 4 of the 5 data columns of a 1.25 MiB stripe: reads 4 + 1,
        // writes 4 + 1; dual parity on 8 drives reads 4 + 2 and writes 4 + 2.
        assert_eq!(parity_write_runs(PARITY, 6, stripe), (5.0, 5.0));
        assert_eq!(
            parity_write_runs(Shape { copies: 1, parity: 2, cache: false, tune: Tune::WINDOWS }, 8, stripe),
            (6.0, 6.0)
        );
        assert_eq!(small_write_ios(Shape { copies: 1, parity: 2, cache: false, tune: Tune::WINDOWS }, 8).0, 6.0);
    }

    #[test]
    fn a_partial_stripe_on_rotating_disks_waits_a_turn_before_writing_back() {
        // 6 disks of 250 MB/s, 6 columns (5 data, 1.25 MiB stripes). One writer's 1 MiB writes are partial
        // stripes: 4 data + 1 parity columns read (1.25 MiB), then written (1.25 MiB), each member a sixth, and
        // every run written back one turn (8.33 ms) after it was read: 5 ÷ 6 turns per write per member.
        let drives = vec![hdd(8); 6];
        let p = pool(Layout::SpacesParity(Tune::WINDOWS), &drives);
        let seq = Op { dir: Dir::Write, bytes: 1_048_576.0, sequential: true, positioned: false };
        let per_member = 2.0 * 1_310_720.0 / 6.0 / 250e6 + 5.0 / 6.0 * 0.008_333_333;
        let mbps = rate(&p, seq, Issuers::threads(1), State::Healthy) * 1.048576;
        assert!((mbps - 1.048576 / per_member).abs() < 0.01, "{mbps} against {}", 1.048576 / per_member);
        // The same writes on a two-way mirror of the six (3 columns × 2 copies): 3 × 250 MB/s.
        let m = pool(Layout::SpacesMirror(Tune::WINDOWS), &drives);
        let mirror = rate(&m, seq, Issuers::threads(1), State::Healthy) * 1.048576;
        assert!((mirror - 750.0).abs() < 0.01, "{mirror}");
    }

    #[test]
    fn given_columns_and_interleave_set_the_stripe_and_the_read_modify_write() {
        // New-VirtualDisk -NumberOfColumns 4 -Interleave 64KB on 6 drives: 3 data columns of 64 KiB, a 192 KiB
        // stripe. A 1 MiB sequential write is 5 whole stripes (4 column writes each) and 64 KiB over: one data
        // column and the parity read, then written: (2 reads, 5 × 4 + 2 = 22 writes).
        let tuned = Shape { tune: Tune { columns: 4, interleave: 65536 }, ..PARITY };
        assert_eq!((tuned.columns(6), tuned.stripe(6)), (4, 196_608.0));
        let seq = Op { dir: Dir::Write, bytes: 1_048_576.0, sequential: true, positioned: false };
        assert_eq!(parity_write_runs(tuned, 6, seq), (2.0, 22.0));
        // Windows' own choice on 6 drives: 6 columns of 256 KiB, the same write a partial stripe (5 + 5).
        assert_eq!(parity_write_runs(PARITY, 6, seq), (5.0, 5.0));
        // A 4 KiB write is a read/modify/write of one column and the parity whatever the settings.
        let small = Op { bytes: 4096.0, sequential: false, positioned: true, ..seq };
        assert_eq!(small_write_ios(tuned, 6), (4.0, 196_608.0));
        assert_eq!(parity_write_runs(tuned, 6, small), (2.0, 2.0));
    }

    #[test]
    fn a_write_back_cache_gathers_a_stream_into_whole_stripes() {
        // 6 disks, 6 columns: without the cache a 1 MiB write is a partial stripe (5 reads, 5 writes); with it the
        // stream's 1 MiB is 4/5 of a stripe of 6 columns: 4.8 column writes of 256 KiB, nothing read.
        let cached = Shape { copies: 1, parity: 1, cache: true, tune: Tune::WINDOWS };
        let seq = Op { dir: Dir::Write, bytes: 1_048_576.0, sequential: true, positioned: false };
        let (reads, writes) = parity_write_runs(cached, 6, seq);
        assert!(reads == 0.0 && (writes - 4.8).abs() < 1e-9, "{writes}");
        // Random small writes still read/modify/write.
        let small = Op { bytes: 4096.0, sequential: false, positioned: true, ..seq };
        assert_eq!(parity_write_runs(cached, 6, small), (2.0, 2.0));
        // One writer on 6 disks of 250 MB/s: 1.25 MiB written per MiB, a sixth each: 5 × 250 = 1250 MB/s.
        let drives = vec![hdd(8); 6];
        let p = pool(Layout::SpacesParityCache(Tune::WINDOWS), &drives);
        let mbps = rate(&p, seq, Issuers::threads(1), State::Healthy) * 1.048576;
        assert!((mbps - 1250.0).abs() < 0.5, "{mbps}");
    }

    #[test]
    fn parity_reads_spread_and_degraded_reads_rebuild_from_the_stripe() {
        let drives = vec![hdd(8); 3];
        let p = pool(Layout::SpacesParity(Tune::WINDOWS), &drives);
        // One sequential reader of 1 MiB over 2 data columns of rotating disks: 2 × 250 MB/s.
        let seq = Op { dir: Dir::Read, bytes: 1_048_576.0, sequential: true, positioned: false };
        let mbps = rate(&p, seq, Issuers::threads(1), State::Healthy) * 1.048576;
        assert!((mbps - 500.0).abs() < 0.5, "{mbps}");
        // 4 KiB reads on 3 throttled drives, one failed: a read meets it 1 time in 3 and then reads 2 columns:
        // (2/3 × 1 + 1/3 × 2) = 4/3 reads over 2 drives of 100/s: 150 reads/s.
        let flash = vec![throttled(100.0, 100.0); 3];
        let p = pool(Layout::SpacesParity(Tune::WINDOWS), &flash);
        let read = Op { dir: Dir::Read, bytes: 4096.0, sequential: false, positioned: true };
        assert!((rate(&p, read, Issuers::MANY, State::Degraded(0)) - 150.0).abs() < 1e-6);
    }
}
