//! The cost of what was measured (`plan --result R.json`): a run, check or vdbench result on a real pool, read
//! for its best sequential rates, its best random-read rate and the largest stream count a search found, with
//! what each costs at the given price and what the pool holds. Only phases the devices served count (a phase a
//! cache served is left out and named, as `from_result` does for one drive). Pure: the app reads the file.

use super::from_result::cache_served;
use crate::results::{MeasuredPool, PhaseResult, RunResult};
use crate::units::Bytes;

fn best(phases: &[&PhaseResult], pick: impl Fn(&PhaseResult) -> Option<f64>) -> Option<f64> {
    phases.iter().filter_map(|p| pick(p)).filter(|v| *v > 0.0).reduce(f64::max)
}

/// The measured figures of `result` (named `name`) and their costs at `price`.
pub fn measured(name: &str, result: &RunResult, price: Option<f64>) -> MeasuredPool {
    let mut left_out = Vec::new();
    let mut served: Vec<&PhaseResult> = Vec::new();
    for phase in &result.phases {
        match cache_served(phase) {
            Some(why) => left_out.push(format!("'{}' {why}", phase.name)),
            None => served.push(phase),
        }
    }
    let plain: Vec<&PhaseResult> = served.iter().copied().filter(|p| p.streams.is_none()).collect();
    let seq_read_mbps = best(&plain, |p| p.read.as_ref().filter(|_| p.rw == "read").map(|o| o.mbps));
    let seq_write_mbps = best(&plain, |p| p.write.as_ref().filter(|_| p.rw == "write").map(|o| o.mbps));
    // Random reads: randread phases, mixed random phases' reads, and file-set (vdbench) reads.
    let random = |p: &PhaseResult| p.rw.starts_with("rand") || p.file_ops.is_some();
    let reads_per_s = best(&plain, |p| p.read.as_ref().filter(|_| random(p)).map(|o| o.iops));
    let streams = served
        .iter()
        .filter_map(|p| p.streams.as_ref()?.capacity.as_ref())
        .filter(|c| c.streams > 0)
        .map(|c| c.streams)
        .max();
    let t = &result.target;
    let pool = t.pool.as_ref();
    let usable = pool.and_then(|p| p.usable).or_else(|| t.filesystem.as_ref().map(|f| f.total)).map(|b: Bytes| b.0);
    let per = |figure: Option<f64>, unit: f64| price.zip(figure.filter(|f| *f > 0.0)).map(|(p, f)| p / (f / unit));
    MeasuredPool {
        name: name.into(),
        target: t.path.clone(),
        pool: pool.map(|p| {
            let profile = p.profile.as_ref().map_or_else(|| "pool".to_string(), |x| format!("{x:?}").to_lowercase());
            format!("{:?} {profile} of {} devices", p.kind, p.members.len()).to_lowercase()
        }),
        usable_bytes: usable,
        price,
        seq_read_mbps,
        seq_write_mbps,
        reads_per_s,
        streams,
        cost_per_1000_reads: per(reads_per_s, 1000.0),
        cost_per_stream: per(streams.map(f64::from), 1.0),
        cost_per_usable_tb: per(usable.map(|u| u as f64), 1e12),
        left_out,
    }
}
