//! One member drive of an existing pool, inferred from what a check measured on the whole pool: the planner's
//! model of the pool's current layout, run backwards. `predict` is the forward model — the four figures a check
//! measures (one job each: sequential 1 MiB writes and reads, 4 KiB random reads at depth 1 and 32) as the
//! planner predicts them for a pool of identical drives — and `infer_member` finds the drive whose prediction
//! equals the measurement, by a multiplicative fixed point: each member figure is scaled by measured ÷
//! predicted until every prediction is within `TOLERANCE`. Each pool figure is, in the model, proportional to
//! one member figure where that figure binds (a btrfs raid1 read by one job: one copy, so the member's own rate;
//! a raid5 of N: N − 1 members' rates), so this converges in a step or two; where a pool figure does not depend
//! on its member figure, the iteration cannot converge and the answer is an error, not a number. Also refused:
//! a pool whose members differ, a profile the planner does not model. docs/planning.md, "A drive from a pool".
//!
//! Pure: no I/O; reads `results` types (the pool facts) only.

use super::drive::{Cost, Dir, Drive};
use super::fill;
use super::from_result::{RandomPoint, random_cost};
use super::layout::{Layout, allocate};
use super::members::{Issuers, Op, Pool, State, op_costs, op_latency};
use super::service::headroom;
use crate::results::{PoolFacts, PoolKind, Profile};
use crate::units::{ByteRate, Bytes};

/// The check's sequential request, bytes.
const SEQUENTIAL: f64 = 1_048_576.0;
/// The check's random request, bytes.
const RANDOM: f64 = 4096.0;
/// The check's deep queue for random reads.
const DEEP: u32 = 32;
/// Largest relative difference between the inferred drive's prediction and the measurement.
pub const TOLERANCE: f64 = 0.005;
/// Rounds of the fixed point before giving up.
const ROUNDS: usize = 60;

/// What a check measured with one job (or what the planner predicts it would): the four raw figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawFigures {
    /// Sequential 1 MiB reads, decimal MB/s.
    pub read_mbps: f64,
    /// Sequential 1 MiB writes, decimal MB/s.
    pub write_mbps: f64,
    /// 4 KiB random reads per second, one in flight.
    pub iops_qd1: f64,
    /// 4 KiB random reads per second, 32 in flight.
    pub iops_qd32: f64,
}

impl RawFigures {
    fn values(self) -> [f64; 4] {
        [self.read_mbps, self.write_mbps, self.iops_qd1, self.iops_qd32]
    }

    fn from_values(v: [f64; 4]) -> RawFigures {
        RawFigures { read_mbps: v[0], write_mbps: v[1], iops_qd1: v[2], iops_qd32: v[3] }
    }
}

const FIGURE_NAMES: [&str; 4] =
    ["sequential read", "sequential write", "random reads at depth 1", "random reads at depth 32"];

/// Why no member drive can be inferred from a pool's measurement.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InferError {
    #[error("the pool's profile is unknown")]
    UnknownProfile,
    #[error("the planner does not model a {0} pool")]
    Unmodelled(String),
    #[error("{0} of its members are missing (degraded)")]
    Degraded(u64),
    #[error("its members differ ({0}), and one measurement of the pool cannot tell them apart")]
    Unequal(String),
    #[error("the measured {0} is zero")]
    Unmeasured(&'static str),
    #[error("in the planner's model of a {layout} pool the {figure} does not follow from one drive's ({why})")]
    NoFit { layout: String, figure: &'static str, why: String },
}

/// The planner's layout for the pool as inspect describes it.
pub fn current_layout(pool: &PoolFacts) -> Result<Layout, InferError> {
    let profile = pool.profile.ok_or(InferError::UnknownProfile)?;
    let n = pool.members.len();
    let unmodelled = || InferError::Unmodelled(format!("{} {}", kind_name(pool.kind), profile.name()));
    let layout = match (pool.kind, profile) {
        (PoolKind::Btrfs, Profile::Single) => Layout::Single,
        (PoolKind::Btrfs, Profile::Raid1) => Layout::BtrfsRaid1,
        (PoolKind::Btrfs, Profile::Raid1c3) => Layout::BtrfsRaid1c3,
        (PoolKind::Btrfs, Profile::Raid10) => Layout::BtrfsRaid10,
        (PoolKind::Btrfs, Profile::Raid5) => Layout::BtrfsRaid5,
        (PoolKind::Btrfs, Profile::Raid6) => Layout::BtrfsRaid6,
        (PoolKind::Md, Profile::Raid1) if n == 2 => Layout::Mirror2,
        (PoolKind::Md, Profile::Raid1) if n == 3 => Layout::Mirror3,
        (PoolKind::Md, Profile::Raid10) if pool.md.as_ref().is_some_and(|m| m.copies == 2) => Layout::Raid10,
        (PoolKind::Md, Profile::Raid5) => Layout::Raid5,
        (PoolKind::Md, Profile::Raid6) => Layout::Raid6,
        _ => return Err(unmodelled()),
    };
    // The planner's md layouts use mdadm's default chunk; another chunk changes every striped figure.
    let chunk = pool.md.as_ref().and_then(|m| m.chunk);
    if let Some(chunk) = chunk.filter(|c| c.0 != super::layout::MD_CHUNK && layout != Layout::Mirror2) {
        return Err(InferError::Unmodelled(format!(
            "md {} with {} chunks (the planner models 512 KiB)",
            profile.name(),
            chunk
        )));
    }
    if pool.missing_members > 0 {
        return Err(InferError::Degraded(pool.missing_members));
    }
    layout.refuses(n).map_or(Ok(layout), |why| Err(InferError::Unmodelled(format!("{layout} of {n} drives ({why})"))))
}

fn kind_name(kind: PoolKind) -> &'static str {
    match kind {
        PoolKind::Btrfs => "btrfs",
        PoolKind::Md => "md",
        PoolKind::Device => "single-device",
    }
}

/// The members' common size and rotational flag; an error naming the difference when they are not alike.
pub fn alike_members(pool: &PoolFacts) -> Result<(Bytes, bool), InferError> {
    let first = pool.members.first().ok_or(InferError::Unmodelled("member-less".into()))?;
    for m in &pool.members[1..] {
        let size_apart = (m.size.0 as f64 - first.size.0 as f64).abs() > 0.01 * first.size.0 as f64;
        let differ = if size_apart {
            Some(format!("{} is {}, {} is {}", first.name, first.size, m.name, m.size))
        } else if m.rotational != first.rotational {
            Some(format!("{} and {} differ in rotational", first.name, m.name))
        } else if m.model.is_some() && first.model.is_some() && m.model != first.model {
            Some(format!(
                "{} is a {}, {} a {}",
                first.name,
                first.model.as_deref().unwrap_or("?"),
                m.name,
                m.model.as_deref().unwrap_or("?")
            ))
        } else {
            None
        };
        if let Some(what) = differ {
            return Err(InferError::Unequal(what));
        }
    }
    Ok((first.size, first.rotational))
}

/// A drive with these single-drive figures, modelled exactly as `drive_from_result` models a drive measured
/// alone (so a catalogue entry or a result of the drive gives the same model).
pub fn drive_with(name: &str, capacity: Bytes, rotational: bool, f: RawFigures) -> Drive {
    let read = ByteRate(f.read_mbps * 1e6);
    let shallow = RandomPoint { depth: 1, iops: f.iops_qd1, bs: RANDOM };
    let deep = RandomPoint { depth: DEEP, iops: f.iops_qd32, bs: RANDOM };
    Drive {
        name: name.into(),
        product: name.into(),
        source: String::new(),
        capacity,
        price: None,
        read,
        write: ByteRate(f.write_mbps * 1e6),
        rotational,
        random: random_cost(rotational, read, shallow, deep),
        max_request: None,
        merges: true,
        cache: None,
    }
}

/// The four figures a check's one job would measure on `drives` as `layout`, in the planner's model, with
/// `data_set` bytes on the pool (`None`: a full pool): a small data set lies on few btrfs raid1 members (`fill`).
pub fn predict(layout: Layout, drives: &[Drive], data_set: Option<f64>) -> RawFigures {
    let caps: Vec<f64> = drives.iter().map(|d| d.capacity.0 as f64).collect();
    let mut alloc = allocate(layout, &caps);
    if let Some(holding) = data_set.and_then(|d| fill::chunk_holding(layout, &caps, d)) {
        fill::hold(&mut alloc, &caps, holding);
    }
    let pool = Pool { layout, drives, alloc, queue: None, working_set: None, controller: None };
    let base = vec![Cost::ZERO; drives.len()];
    let rate = |op: Op, issuers: Issuers| {
        let costs = op_costs(&pool, op, issuers, State::Healthy);
        headroom(&base, &costs.members).map_or(0.0, |b| b.units)
    };
    let sequential = |dir| Op { dir, bytes: SEQUENTIAL, sequential: true, positioned: false };
    let random = Op { dir: Dir::Read, bytes: RANDOM, sequential: false, positioned: true };
    // One job: one thread (btrfs's pid policy picks one copy), its requests in flight.
    let one_job = |depth| Issuers { threads: Some(1), outstanding: Some(depth) };
    RawFigures {
        read_mbps: rate(sequential(Dir::Read), one_job(1)) * SEQUENTIAL / 1e6,
        write_mbps: rate(sequential(Dir::Write), one_job(1)) * SEQUENTIAL / 1e6,
        // One read in flight: the time one read takes, nothing else queued.
        iops_qd1: op_latency(&pool, random).map_or(0.0, |l| 1.0 / l),
        iops_qd32: rate(random, one_job(DEEP)),
    }
}

/// The pool a check measured: its layout, its members (alike), and the data on it while the raw phases ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub layout: Layout,
    pub members: usize,
    /// Each member's size.
    pub capacity: Bytes,
    pub rotational: bool,
    /// Bytes on the pool during the measurement (the check's data set); `None`: a full pool.
    pub data_set: Option<Bytes>,
}

/// The drive that, `pool.members` times in `pool.layout`, the planner predicts to measure `measured`.
pub fn infer_member(pool: Measured, measured: RawFigures) -> Result<Drive, InferError> {
    let Measured { layout, members, capacity, rotational, data_set } = pool;
    let data_set = data_set.map(|b| b.0 as f64);
    let target = measured.values();
    if let Some(i) = target.iter().position(|v| !(*v > 0.0 && v.is_finite())) {
        return Err(InferError::Unmeasured(FIGURE_NAMES[i]));
    }
    let mut guess = target;
    let mut worst = (0, 0.0);
    for _ in 0..ROUNDS {
        let drive = drive_with("member", capacity, rotational, RawFigures::from_values(guess));
        let predicted = predict(layout, &vec![drive.clone(); members], data_set).values();
        worst = (0..4)
            .map(|i| (i, predicted[i] / target[i] - 1.0))
            .fold((0, 0.0), |w, x| if x.1.abs() > f64::abs(w.1) || !x.1.is_finite() { x } else { w });
        if worst.1.abs() <= TOLERANCE {
            return Ok(drive);
        }
        for i in 0..4 {
            let scale = if predicted[i] > 0.0 { target[i] / predicted[i] } else { 2.0 };
            guess[i] *= scale.clamp(0.1, 10.0);
        }
    }
    Err(InferError::NoFit {
        layout: layout.to_string(),
        figure: FIGURE_NAMES[worst.0],
        why: format!("the closest drive is still {:+.0} % off", worst.1 * 100.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::drive::RandomCost;

    const FLASH: RawFigures =
        RawFigures { read_mbps: 500.0, write_mbps: 450.0, iops_qd1: 9_000.0, iops_qd32: 80_000.0 };
    const DISK: RawFigures = RawFigures { read_mbps: 250.0, write_mbps: 240.0, iops_qd1: 80.0, iops_qd32: 120.0 };

    fn on(layout: Layout, members: usize, rotational: bool) -> Measured {
        Measured { layout, members, capacity: Bytes(8 << 40), rotational, data_set: None }
    }

    fn close(a: f64, b: f64) -> bool {
        (a / b - 1.0).abs() <= 2.0 * TOLERANCE
    }

    /// Forward then backward: the drive inferred from a pool's predicted figures is the drive the pool was made
    /// of, for every layout family a check can meet.
    #[test]
    fn a_pools_prediction_gives_back_its_member() {
        let layouts = [
            (Layout::BtrfsRaid1, 2),
            (Layout::BtrfsRaid1, 4),
            (Layout::BtrfsRaid1c3, 3),
            (Layout::BtrfsRaid10, 4),
            (Layout::BtrfsRaid5, 3),
            (Layout::BtrfsRaid6, 6),
            (Layout::Mirror2, 2),
            (Layout::Raid10, 4),
            (Layout::Raid5, 4),
            (Layout::Single, 3),
        ];
        for (rotational, figures) in [(false, FLASH), (true, DISK)] {
            let member = drive_with("m", Bytes(8 << 40), rotational, figures);
            for (layout, n) in layouts {
                let measured = predict(layout, &vec![member.clone(); n], None);
                let back = infer_member(on(layout, n, rotational), measured).unwrap();
                let alone = |d: &Drive| predict(Layout::Single, std::slice::from_ref(d), None);
                let (got, want) = (alone(&back), alone(&member));
                assert!(close(back.read.0, member.read.0) && close(back.write.0, member.write.0), "{layout} × {n}");
                assert!(close(got.iops_qd32, want.iops_qd32) && close(got.iops_qd1, want.iops_qd1), "{layout} × {n}");
            }
        }
    }

    #[test]
    fn one_job_on_a_btrfs_raid1_is_one_members_figures() {
        // The pid policy: one job reads one copy, so the pool measures one member; the writes go to two members
        // at once, each writing every byte.
        let member = infer_member(on(Layout::BtrfsRaid1, 2, false), FLASH).unwrap();
        assert!(close(member.read.0, 500e6) && close(member.write.0, 450e6), "{member:?}");
        let RandomCost::OpLimit { read_iops, read_iops_qd1, .. } = member.random else { panic!("flash") };
        assert!(close(read_iops, 80_000.0) && close(read_iops_qd1.unwrap(), 9_000.0));
        // Four members holding data everywhere: one job's random reads find chunks on every member.
        let full = infer_member(on(Layout::BtrfsRaid1, 4, false), FLASH).unwrap();
        assert!(close(full.random_read_iops(), 20_000.0), "{}", full.random_read_iops());
        // A small data set is one chunk on two of the four: one job reads one member again.
        let small = Measured { data_set: Some(Bytes(256 << 20)), ..on(Layout::BtrfsRaid1, 4, false) };
        assert!(close(infer_member(small, FLASH).unwrap().random_read_iops(), 80_000.0));
        // A raid5 of four reads 1 MiB over three data members' worth of rows, so each member is a third as fast.
        let r5 = infer_member(on(Layout::Raid5, 4, true), DISK).unwrap();
        assert!(close(r5.read.0, 250e6 / 3.0), "{r5:?}");
    }

    #[test]
    fn a_figure_the_member_cannot_explain_is_an_error_not_a_number() {
        let zero = RawFigures { iops_qd1: 0.0, ..FLASH };
        let e = infer_member(on(Layout::BtrfsRaid1, 2, false), zero).unwrap_err();
        assert_eq!(e, InferError::Unmeasured("random reads at depth 1"));
        // A disk at 250 MB/s moves at most 61,035 4 KiB reads/s even with no positioning at all: 100,000 measured
        // at depth 32 is no drive of the model.
        let fast = RawFigures { iops_qd32: 100_000.0, ..DISK };
        let e = infer_member(on(Layout::BtrfsRaid1, 2, true), fast).unwrap_err().to_string();
        assert!(e.contains("random reads at depth 32 does not follow"), "{e}");
    }

    fn raid5_pool() -> PoolFacts {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/inspect-raid5.json"))
                .expect("the fixture exists");
        let result: crate::results::RunResult = serde_json::from_str(&text).expect("the fixture parses");
        result.target.pool.expect("the fixture has a pool")
    }

    #[test]
    fn the_current_layout_comes_from_the_pools_kind_and_profile() {
        let mut pool = raid5_pool();
        assert_eq!(current_layout(&pool), Ok(Layout::BtrfsRaid5));
        assert_eq!(alike_members(&pool), Ok((Bytes(1 << 30), true)));
        pool.profile = Some(Profile::Raid0);
        assert_eq!(current_layout(&pool), Err(InferError::Unmodelled("btrfs raid0".into())));
        pool.profile = None;
        assert_eq!(current_layout(&pool), Err(InferError::UnknownProfile));
        pool.profile = Some(Profile::Raid10);
        assert!(matches!(current_layout(&pool), Err(InferError::Unmodelled(w)) if w.contains("at least 4")));
        pool.profile = Some(Profile::Raid1);
        pool.missing_members = 1;
        assert_eq!(current_layout(&pool), Err(InferError::Degraded(1)));
    }

    #[test]
    fn members_of_different_sizes_are_refused() {
        let mut pool = raid5_pool();
        pool.members[2].size = Bytes(2 << 30);
        let e = alike_members(&pool).unwrap_err().to_string();
        assert!(e.contains("loop0 is 1 GiB, loop2 is 2 GiB"), "{e}");
    }
}
