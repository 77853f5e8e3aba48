//! The `read`, `write`, `trim` and `sync` objects of a fio job entry, and fio's latency objects (`slat_ns`,
//! `clat_ns`, `lat_ns`): counts, bandwidth, latency summaries, percentiles (from the latency buckets, merged
//! exactly over an entry's members) and json+'s bins, and the spread of bandwidth and IOPS over intervals.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::Member;
use crate::metrics::Spread;
use crate::results::{LatencySummary, OpResult, RateSpread};

/// Which of a member's operation classes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    Read,
    Write,
    Sync,
}

impl Class {
    fn of<'a>(self, member: &Member<'a>) -> Option<&'a OpResult> {
        let (phase, worker) = (member.phase, member.worker);
        match self {
            Class::Read => worker.map_or(phase.read.as_ref(), |w| w.read.as_ref()),
            Class::Write => worker.map_or(phase.write.as_ref(), |w| w.write.as_ref()),
            Class::Sync => worker.map_or(phase.sync.as_ref(), |w| w.sync.as_ref()),
        }
    }
}

/// What the direction object needs besides the members.
pub(super) struct Options<'a> {
    /// json+: add the bins.
    pub plus: bool,
    /// The job asked for fio's lat_percentiles: the percentiles go with `lat_ns` instead of `clat_ns`.
    pub lat_percentiles: bool,
    /// The percentiles to report (fio's percentile_list).
    pub percentiles: &'a [f64],
    /// The reporting group's aggregate bandwidth in this direction, KiB/s (fio's bw_agg is a share of it).
    pub group_kib_per_sec: f64,
}

/// `read`, `write` or (with no members doing it) `trim`.
pub(super) fn direction(members: &[Member<'_>], class: Option<Class>, options: &Options<'_>) -> Value {
    let doing: Vec<(&Member<'_>, &OpResult)> =
        class.map_or_else(Vec::new, |c| members.iter().filter_map(|m| c.of(m).map(|op| (m, op))).collect());
    let ops: Vec<&OpResult> = doing.iter().map(|(_, op)| *op).collect();
    let io_bytes: u64 = ops.iter().map(|o| o.bytes).sum();
    let total_ios: u64 = ops.iter().map(|o| o.ops).sum();
    let runtime_s = doing.iter().map(|(m, _)| m.runtime_s()).fold(0.0, f64::max);
    let per_sec = |n: f64| if runtime_s > 0.0 { n / runtime_s } else { 0.0 };
    let bw_bytes = per_sec(io_bytes as f64);
    let mut out = Map::new();
    out.insert("io_bytes".into(), json!(io_bytes));
    out.insert("io_kbytes".into(), json!(io_bytes >> 10));
    out.insert("bw_bytes".into(), json!(bw_bytes.round() as u64));
    out.insert("bw".into(), json!((bw_bytes / 1024.0).round() as u64));
    out.insert("iops".into(), json!(per_sec(total_ios as f64)));
    out.insert("runtime".into(), json!(if total_ios > 0 { (runtime_s * 1000.0).round() as u64 } else { 0 }));
    out.insert("total_ios".into(), json!(total_ios));
    out.insert("short_ios".into(), json!(0));
    out.insert("drop_ios".into(), json!(0));
    let submit: Vec<&LatencySummary> = ops.iter().filter_map(|o| o.submit_latency.as_ref()).collect();
    out.insert("slat_ns".into(), latency(&submit, None, false));
    let completion: Vec<&LatencySummary> = ops.iter().map(|o| &o.latency).collect();
    let clat_percentiles = (!options.lat_percentiles).then(|| merged_bins(&ops));
    out.insert("clat_ns".into(), latency(&completion, clat_percentiles.as_ref().map(|b| (b, options)), options.plus));
    let total: Vec<&LatencySummary> = ops.iter().filter_map(|o| o.total_latency.as_ref()).collect();
    out.insert("lat_ns".into(), lat_object(&total, options));
    let bw = group_spread(&doing, class, true);
    let (mean_kib, bw_spread) = (bw.mean / 1024.0, bw);
    insert_spread(&mut out, &bw_spread, 1024.0, &["bw_min", "bw_max", "bw_mean", "bw_dev", "bw_samples"], |o| {
        let agg = options.group_kib_per_sec;
        o.insert("bw_agg".into(), json!(if agg > 1.0 { (mean_kib * 100.0 / agg).min(100.0) } else { 100.0 }));
    });
    let iops = group_spread(&doing, class, false);
    let names = ["iops_min", "iops_max", "iops_mean", "iops_stddev", "iops_samples"];
    insert_spread(&mut out, &iops, 1.0, &names, |_| {});
    Value::Object(out)
}

/// `sync`: fsync and fdatasync operations.
pub(super) fn sync(members: &[Member<'_>], options: &Options<'_>) -> Value {
    let ops: Vec<&OpResult> = members.iter().filter_map(|m| Class::Sync.of(m)).collect();
    let summaries: Vec<&LatencySummary> = ops.iter().map(|o| &o.latency).collect();
    let bins = merged_bins(&ops);
    let mut out = Map::new();
    out.insert("total_ios".into(), json!(ops.iter().map(|o| o.ops).sum::<u64>()));
    out.insert("lat_ns".into(), latency(&summaries, Some((&bins, options)), false));
    Value::Object(out)
}

/// `lat_ns`: with fio's lat_percentiles, its percentiles (exact for one member; the highest of the members'
/// for several, an upper bound: streamcap keeps buckets of the completion latency only).
fn lat_object(total: &[&LatencySummary], options: &Options<'_>) -> Value {
    let mut value = latency(total, None, false);
    if options.lat_percentiles
        && let Value::Object(object) = &mut value
        && !total.is_empty()
    {
        let mut list = Map::new();
        for &p in options.percentiles {
            let highest = total.iter().filter_map(|l| l.at(p)).max().unwrap_or(0);
            list.insert(format!("{p:.6}"), json!(highest));
        }
        object.insert("percentile".into(), Value::Object(list));
    }
    value
}

/// All members' latency buckets added together: value (ns) → operations.
pub(super) fn merged_bins(ops: &[&OpResult]) -> BTreeMap<u64, u64> {
    let mut bins = BTreeMap::new();
    for op in ops {
        for [ns, n] in &op.latency_bins {
            *bins.entry(*ns).or_insert(0) += n;
        }
    }
    bins
}

/// fio's latency object: min, max, mean and standard deviation pooled exactly over the summaries (fio's
/// standard deviation divides by n − 1), then the percentiles (and with json+ the bins) when given.
fn latency(summaries: &[&LatencySummary], bins: Option<(&BTreeMap<u64, u64>, &Options<'_>)>, plus: bool) -> Value {
    let used: Vec<&&LatencySummary> = summaries.iter().filter(|l| l.samples > 0).collect();
    let n: u64 = used.iter().map(|l| l.samples).sum();
    let mut out = Map::new();
    if n == 0 {
        out.insert("min".into(), json!(0));
        out.insert("max".into(), json!(0));
        out.insert("mean".into(), json!(0.0));
        out.insert("stddev".into(), json!(0.0));
        out.insert("N".into(), json!(0));
        return Value::Object(out);
    }
    let total = n as f64;
    let mean = used.iter().map(|l| l.mean_ns * l.samples as f64).sum::<f64>() / total;
    // E[x²] of each member is σ² + μ²; the pooled variance is E[x²] − μ² over all samples.
    let second = used.iter().map(|l| (l.stddev_ns.powi(2) + l.mean_ns.powi(2)) * l.samples as f64).sum::<f64>() / total;
    let population = (second - mean * mean).max(0.0);
    let sample = if n > 1 { population * total / (total - 1.0) } else { 0.0 };
    out.insert("min".into(), json!(used.iter().map(|l| l.min_ns).min().unwrap_or(0)));
    out.insert("max".into(), json!(used.iter().map(|l| l.max_ns).max().unwrap_or(0)));
    out.insert("mean".into(), json!(mean));
    out.insert("stddev".into(), json!(sample.sqrt()));
    out.insert("N".into(), json!(n));
    if let Some((bins, options)) = bins {
        let fallback = |p: f64| used.iter().filter_map(|l| l.at(p)).max().unwrap_or(0);
        let values = percentiles(bins, options.percentiles)
            .unwrap_or_else(|| options.percentiles.iter().map(|&p| fallback(p)).collect());
        let list: Map<String, Value> =
            options.percentiles.iter().zip(values).map(|(p, v)| (format!("{p:.6}"), json!(v))).collect();
        out.insert("percentile".into(), Value::Object(list));
        if plus && !bins.is_empty() {
            let listed: Map<String, Value> = bins.iter().map(|(ns, count)| (ns.to_string(), json!(count))).collect();
            out.insert("bins".into(), Value::Object(listed));
        }
    }
    Value::Object(out)
}

/// Nearest-rank percentiles over buckets (the histogram's own rule, so one member's are exactly its own);
/// `None` when there are no buckets (a result from before they were kept).
pub(super) fn percentiles(bins: &BTreeMap<u64, u64>, wanted: &[f64]) -> Option<Vec<u64>> {
    let total: u64 = bins.values().sum();
    if total == 0 {
        return None;
    }
    Some(
        wanted
            .iter()
            .map(|&p| {
                let rank = ((p / 100.0) * total as f64).ceil().clamp(1.0, total as f64) as u64;
                let mut seen = 0;
                bins.iter()
                    .find(|(_, n)| {
                        seen += **n;
                        seen >= rank
                    })
                    .map_or(0, |(ns, _)| *ns)
            })
            .collect(),
    )
}

/// The spread of bandwidth (bytes/s) or IOPS of an entry's members in one direction: a worker's own, a phase's
/// over its intervals, and for several members the sums fio's group reporting makes of them (min, max, mean and
/// sample count add up, and so do the sums of squared deviations).
fn group_spread(doing: &[(&Member<'_>, &OpResult)], class: Option<Class>, bandwidth: bool) -> RateSpread {
    let spreads: Vec<RateSpread> = doing
        .iter()
        .map(|(member, op)| {
            let own = if bandwidth { op.bandwidth_spread } else { op.iops_spread };
            own.unwrap_or_else(|| interval_spread(member, class, bandwidth))
        })
        .collect();
    let mut sum = RateSpread::default();
    let mut squares = 0.0;
    for s in &spreads {
        sum.min += s.min;
        sum.max += s.max;
        sum.mean += s.mean;
        sum.samples += s.samples;
        squares += s.stddev.powi(2) * s.samples.saturating_sub(1) as f64;
    }
    if spreads.len() == 1 {
        return spreads[0];
    }
    sum.stddev = if sum.samples > 1 { (squares / (sum.samples - 1) as f64).sqrt() } else { 0.0 };
    sum
}

/// A phase's spread over its interval series (the interval's rate for the class).
fn interval_spread(member: &Member<'_>, class: Option<Class>, bandwidth: bool) -> RateSpread {
    let mut spread = Spread::default();
    for point in &member.phase.intervals {
        let class_point = match class {
            Some(Class::Read) => point.read.as_ref(),
            Some(Class::Write) => point.write.as_ref(),
            _ => None,
        };
        if let Some(p) = class_point {
            spread.add(if bandwidth { p.mbps * 1e6 } else { p.iops });
        }
    }
    spread.summary()
}

/// Writes min, max, (the extra keys), mean, deviation and samples of a spread, divided by `unit`, under fio's
/// names, in fio's order.
fn insert_spread(
    out: &mut Map<String, Value>,
    spread: &RateSpread,
    unit: f64,
    names: &[&str; 5],
    extra: impl FnOnce(&mut Map<String, Value>),
) {
    out.insert(names[0].into(), json!((spread.min / unit).round() as u64));
    out.insert(names[1].into(), json!((spread.max / unit).round() as u64));
    extra(out);
    out.insert(names[2].into(), json!(spread.mean / unit));
    out.insert(names[3].into(), json!(spread.stddev / unit));
    out.insert(names[4].into(), json!(spread.samples));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_from_buckets_use_the_nearest_rank() {
        let bins: BTreeMap<u64, u64> = [(100, 50), (200, 40), (900, 10)].into_iter().collect();
        assert_eq!(percentiles(&bins, &[1.0, 50.0, 50.1, 90.0, 99.0, 100.0]), Some(vec![100, 100, 200, 200, 900, 900]));
        assert_eq!(percentiles(&BTreeMap::new(), &[50.0]), None);
    }
}
