//! One entry of fio's `jobs[]`, every key in fio 3.33's order: names and groups, the job's options, the four
//! direction objects, run time and CPU, the queue-depth and latency distributions, the latency-target keys, and
//! (when set) the description.

use serde_json::{Map, Value, json};

use super::direction::{Class, Options, direction, merged_bins, sync};
use super::{Entry, Member, options_object};
use crate::metrics::DEFAULT_PERCENTILES;
use crate::results::{Depths, OpResult, RunStatus, SteadyOutcome, SteadyRule};

/// What every entry needs from the whole document.
pub(super) struct Context<'a> {
    pub plus: bool,
    /// Seconds the run had taken when it ended (fio's `elapsed`, the same for every job).
    pub elapsed: u64,
    pub entries: &'a [Entry<'a>],
}

pub(super) fn job(entry: &Entry<'_>, context: &Context<'_>) -> Value {
    let first = entry.members[0].phase;
    let fio_options = first.fio.as_ref().map(|f| &f.job_options);
    let said = |name: &str| fio_options.and_then(|o| o.iter().rev().find(|(k, _)| k == name)).map(|(_, v)| v.as_str());
    let lat_percentiles = said("lat_percentiles").is_some_and(|v| matches!(v, "" | "1"));
    let percentiles: Vec<f64> = first
        .read
        .as_ref()
        .or(first.write.as_ref())
        .map(|o| o.latency.percentiles_ns.iter().map(|p| p.p).collect())
        .filter(|l: &Vec<f64>| !l.is_empty())
        .unwrap_or_else(|| DEFAULT_PERCENTILES.to_vec());
    let mut out = Map::new();
    out.insert("jobname".into(), json!(entry.name));
    out.insert("groupid".into(), json!(entry.groupid));
    out.insert("error".into(), json!(error(entry)));
    out.insert("eta".into(), json!(0));
    out.insert("elapsed".into(), json!(context.elapsed));
    out.insert("job options".into(), job_options(entry));
    let options = |class: Option<Class>| Options {
        plus: context.plus,
        lat_percentiles,
        percentiles: &percentiles,
        group_kib_per_sec: group_rate(context.entries, entry.groupid, class),
    };
    out.insert("read".into(), direction(&entry.members, Some(Class::Read), &options(Some(Class::Read))));
    out.insert("write".into(), direction(&entry.members, Some(Class::Write), &options(Some(Class::Write))));
    out.insert("trim".into(), direction(&entry.members, None, &options(None)));
    out.insert("sync".into(), sync(&entry.members, &options(Some(Class::Sync))));
    cpu(entry, &mut out);
    depths(entry, &mut out);
    latency_buckets(entry, &mut out);
    if let Some(first_error) = first.errors.records.first().filter(|_| first.status == RunStatus::Completed) {
        // Errors in a phase that still completed: fio's continue_on_error counts.
        out.insert("total_err".into(), json!(first.errors.count));
        out.insert("first_error".into(), json!(first_error.errno));
    }
    latency_target(entry, &mut out);
    if let Some(description) = said("description").filter(|d| !d.is_empty()) {
        out.insert("desc".into(), json!(description));
    }
    if let Some(steady) = &first.steady_state {
        out.insert("steadystate".into(), steadystate(steady));
    }
    Value::Object(out)
}

/// fio's latency-target keys: the depth the search ended at (the iodepth without a target), the target in ns,
/// the percentile and the window in µs, as fio writes them. A clone reported on its own has its own depth;
/// members merged into one entry give the last one's, as fio's group sum copies each thread's in turn.
fn latency_target(entry: &Entry<'_>, out: &mut Map<String, Value>) {
    let first = entry.members[0].phase;
    let member_depth = |m: &Member<'_>| {
        let t = m.phase.latency_target.as_ref()?;
        let own = m.worker.and_then(|w| m.phase.workers.iter().position(|x| std::ptr::eq(x, w)));
        own.and_then(|i| t.workers.get(i)).map(|w| w.depth).or_else(|| t.depth())
    };
    let depth = entry.members.iter().rev().find_map(member_depth).unwrap_or(first.iodepth);
    let t = first.latency_target.as_ref();
    out.insert("latency_depth".into(), json!(depth));
    out.insert("latency_target".into(), json!(t.map_or(0, |t| t.target_ns)));
    out.insert("latency_percentile".into(), json!(t.map_or(100.0, |t| t.percentile)));
    out.insert("latency_window".into(), json!(t.map_or(0, |t| t.window_us)));
}

/// fio's `steadystate` object (stat.c): the criterion as written, the window in seconds, whether it was
/// attained, the last criterion value, and the window's IOPS and bandwidth (bytes/s) oldest first. streamcap
/// judges a job's clones together, so each clone's entry carries the job's.
fn steadystate(s: &SteadyOutcome) -> Value {
    let percent = match s.rule {
        SteadyRule::Deviation { percent, .. } | SteadyRule::Slope { percent, .. } => percent,
        SteadyRule::Snia { .. } => true,
    };
    let ints = |v: &[f64]| v.iter().map(|x| x.round() as u64).collect::<Vec<u64>>();
    let mean = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).round() as u64;
    json!({
        "ss": s.rule.label(),
        "duration": (f64::from(s.window) * s.round_s).round() as u64,
        "attained": u8::from(s.attained),
        "criterion": format!("{:.6}{}", s.criterion, if percent { "%" } else { "" }),
        "max_deviation": s.max_deviation,
        "slope": s.slope,
        "data": {
            "bw_mean": mean(&s.bw),
            "iops_mean": mean(&s.iops),
            "iops": ints(&s.iops),
            "bw": ints(&s.bw),
        },
    })
}

/// fio's `error`: the errno that stopped the job, 0 when nothing did.
fn error(entry: &Entry<'_>) -> i64 {
    entry
        .members
        .iter()
        .map(|m| m.phase)
        .find(|p| matches!(p.status, RunStatus::IoError | RunStatus::Failed))
        .map_or(0, |p| p.errors.records.first().map_or(1, |r| i64::from(r.errno)))
}

/// The job's own options as written (fio job files), or the ones fio-plot reads for other jobs.
fn job_options(entry: &Entry<'_>) -> Value {
    let first = entry.members[0].phase;
    if let Some(fio) = &first.fio {
        return options_object(&fio.job_options);
    }
    let numjobs: u32 = entry.members.iter().map(Member::threads).sum();
    json!({
        "rw": first.rw,
        "bs": first.bs,
        "iodepth": first.iodepth.to_string(),
        "numjobs": numjobs.to_string(),
        "ioengine": first.engine.name,
        "direct": u8::from(first.direct).to_string(),
    })
}

/// The aggregate bandwidth of every entry of a reporting group in one direction, KiB/s: fio's `bw_agg` is a
/// job's mean bandwidth as a share of it.
fn group_rate(entries: &[Entry<'_>], groupid: u64, class: Option<Class>) -> f64 {
    let class = match class {
        Some(c @ (Class::Read | Class::Write)) => c,
        _ => return 0.0,
    };
    let members = entries.iter().filter(|e| e.groupid == groupid).flat_map(|e| e.members.iter());
    let (bytes, runtime) = members
        .filter_map(|m| pick(m, class).map(|op| (op.bytes, m.runtime_s())))
        .fold((0u64, 0f64), |(b, r), (bytes, runtime)| (b + bytes, r.max(runtime)));
    if runtime > 0.0 { bytes as f64 / runtime / 1024.0 } else { 0.0 }
}

/// `job_runtime` (every thread's run time added, ms), CPU in percent of it, and the fault and switch counts.
fn cpu(entry: &Entry<'_>, out: &mut Map<String, Value>) {
    let runtime_s: f64 = entry.members.iter().map(|m| m.runtime_s() * f64::from(m.threads())).sum();
    let sum = |f: &dyn Fn(&Member<'_>) -> f64| entry.members.iter().map(|m| f(m) * m.share()).sum::<f64>();
    let percent = |seconds: f64| if runtime_s > 0.0 { seconds / runtime_s * 100.0 } else { 0.0 };
    out.insert("job_runtime".into(), json!((runtime_s * 1000.0).round() as u64));
    out.insert("usr_cpu".into(), json!(percent(sum(&|m| m.phase.cpu.user_s))));
    out.insert("sys_cpu".into(), json!(percent(sum(&|m| m.phase.cpu.system_s))));
    out.insert("ctx".into(), json!(sum(&|m| m.phase.cpu.context_switches as f64).round() as u64));
    out.insert("majf".into(), json!(sum(&|m| m.phase.cpu.major_faults as f64).round() as u64));
    out.insert("minf".into(), json!(sum(&|m| m.phase.cpu.minor_faults as f64).round() as u64));
}

/// fio's iodepth_level, iodepth_submit and iodepth_complete: percentages of operations, submissions and reaps
/// per bucket, with fio's rule that a bucket with anything in it shows at least 0.1 %.
fn depths(entry: &Entry<'_>, out: &mut Map<String, Value>) {
    let mut all = Depths::default();
    for member in &entry.members {
        match (member.worker, &member.phase.depths) {
            (Some(worker), _) => all.merge(&worker.depths),
            (None, Some(depths)) => all.merge(depths),
            (None, None) => {}
        }
    }
    let level = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
    for (key, counts, names) in [
        ("iodepth_level", all.level, level),
        ("iodepth_submit", all.submit, batch),
        ("iodepth_complete", all.complete, batch),
    ] {
        let total: u64 = counts.iter().sum();
        let object: Map<String, Value> = names
            .iter()
            .zip(counts)
            .map(|(name, n)| {
                let pct = if total > 0 { n as f64 * 100.0 / total as f64 } else { 0.0 };
                ((*name).to_string(), json!(if n > 0 { pct.max(0.1) } else { 0.0 }))
            })
            .collect();
        out.insert(key.into(), Value::Object(object));
    }
}

/// fio's latency_ns, latency_us and latency_ms: the share of reads and writes whose completion latency fell in
/// each of fio's ranges (each key is the range's upper end), from the latency buckets, with fio's rule that a
/// range with anything in it shows at least 0.01 %.
fn latency_buckets(entry: &Entry<'_>, out: &mut Map<String, Value>) {
    let ops: Vec<&OpResult> =
        entry.members.iter().flat_map(|m| [Class::Read, Class::Write].map(|c| pick(m, c))).flatten().collect();
    let bins = merged_bins(&ops);
    let total: u64 = ops.iter().map(|o| o.ops).sum();
    let edges = [2u64, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let scales: [(&str, u64, &[&str]); 3] = [
        ("latency_ns", 1, &["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]),
        ("latency_us", 1000, &["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]),
        ("latency_ms", 1_000_000, &["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"]),
    ];
    for (index, (key, unit, names)) in scales.iter().enumerate() {
        let mut counts = vec![0u64; names.len()];
        for (ns, n) in &bins {
            let in_unit = ns / unit;
            let in_scale = match index {
                0 => *ns < 1000,
                1 => (1000..1_000_000).contains(ns),
                _ => *ns >= 1_000_000,
            };
            if !in_scale {
                continue;
            }
            let mut ends: Vec<u64> = edges.to_vec();
            if index == 2 {
                ends.push(2000);
            }
            let slot = ends.iter().position(|&end| in_unit < end).unwrap_or(names.len() - 1);
            counts[slot] += n;
        }
        let object: Map<String, Value> = names
            .iter()
            .zip(&counts)
            .map(|(name, &n)| {
                let pct = if total > 0 { n as f64 * 100.0 / total as f64 } else { 0.0 };
                ((*name).to_string(), json!(if n > 0 { pct.max(0.01) } else { 0.0 }))
            })
            .collect();
        out.insert((*key).into(), Value::Object(object));
    }
}

fn pick<'a>(member: &Member<'a>, class: Class) -> Option<&'a OpResult> {
    let (phase, worker) = (member.phase, member.worker);
    match class {
        Class::Read => worker.map_or(phase.read.as_ref(), |w| w.read.as_ref()),
        Class::Write => worker.map_or(phase.write.as_ref(), |w| w.write.as_ref()),
        Class::Sync => worker.map_or(phase.sync.as_ref(), |w| w.sync.as_ref()),
    }
}
