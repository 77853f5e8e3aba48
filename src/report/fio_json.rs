//! fio's JSON output (`fio --output-format=json`) rendered from a `RunResult`, so scripts and dashboards written
//! for fio read streamcap's figures unchanged. Reads only `results` types.
//!
//! Mapping, and what is left out or zero:
//! - one entry in `jobs[]` per phase; phases that share a `group` (fio group_reporting) are merged into one
//!   entry named after the group's first phase, as fio reports a group. `groupid` numbers the groups in order
//!   (every ungrouped phase is its own group).
//! - `read`, `write` and `trim` are always present, as in fio (zero when the phase did none of that); `trim` is
//!   always zero. streamcap measures latency from submission to completion, which is fio's `clat_ns`; it does
//!   not measure submission latency separately, so `lat_ns` equals `clat_ns` and `slat_ns` is zero.
//! - merged groups: counts and bytes add up, the runtime is the longest member's (group members run
//!   together), mean and standard deviation are pooled exactly, and each percentile is the highest of the
//!   members' — an upper bound, since percentiles cannot be merged from summaries.
//! - `bw_min`/`bw_max`/`iops_min`/`iops_max` … come from the interval series when it has points;
//!   `usr_cpu`/`sys_cpu` are streamcap's own CPU time in percent of the runtime, as fio's; `ctx`, `majf`,
//!   `minf`, `iodepth_level` and `latency_*` buckets are not measured and are left out.
//! - `disk_util[]` comes from the devices beneath the target: I/O counts add up over phases and `util` is the
//!   busy percentage weighted by phase duration; merges, ticks and in_queue are not measured and are zero.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::results::{ClassPoint, IntervalPoint, LatencySummary, OpResult, PhaseResult, RunResult};

/// Writes fio's JSON for `result`, pretty-printed, with a final newline.
pub fn write_fio_json(out: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    let value = fio_json(result);
    serde_json::to_writer_pretty(&mut *out, &value)?;
    writeln!(out)
}

/// fio's JSON as a renderer.
pub struct FioJson;

impl super::Renderer for FioJson {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        write_fio_json(out, result)
    }
}

/// fio's JSON document for `result`.
pub fn fio_json(result: &RunResult) -> Value {
    let timestamp = unix_seconds(&result.started_at).unwrap_or(0);
    let jobs: Vec<Value> = groups(&result.phases).iter().enumerate().map(|(id, members)| job(id, members)).collect();
    json!({
        "fio version": format!("{}-{}", result.tool.name, result.tool.version),
        "timestamp": timestamp,
        "timestamp_ms": timestamp.saturating_mul(1000),
        "time": result.started_at,
        "jobs": jobs,
        "disk_util": disk_util(&result.phases),
    })
}

/// Phases gathered into fio's reports: by `group` label, in the order groups first appear.
fn groups(phases: &[PhaseResult]) -> Vec<Vec<&PhaseResult>> {
    let mut out: Vec<Vec<&PhaseResult>> = Vec::new();
    for phase in phases {
        let same = phase.group.as_ref().and_then(|g| out.iter().position(|m| m[0].group.as_ref() == Some(g)));
        match same {
            Some(i) => out[i].push(phase),
            None => out.push(vec![phase]),
        }
    }
    out
}

fn job(groupid: usize, members: &[&PhaseResult]) -> Value {
    let first = members[0];
    let runtime_s = members.iter().map(|p| p.duration_s).fold(0.0, f64::max);
    let failed = members.iter().any(|p| p.failure.is_some() || p.errors.count > 0);
    let cpu_pct = |f: fn(&PhaseResult) -> f64| {
        if runtime_s > 0.0 { members.iter().map(|p| f(p)).sum::<f64>() / runtime_s * 100.0 } else { 0.0 }
    };
    let class = |pick: fn(&PhaseResult) -> Option<&OpResult>, point: fn(&IntervalPoint) -> Option<&ClassPoint>| {
        let ops: Vec<&OpResult> = members.iter().filter_map(|p| pick(p)).collect();
        let points: Vec<&ClassPoint> = members.iter().flat_map(|p| p.intervals.iter().filter_map(point)).collect();
        direction(&ops, &points, runtime_s)
    };
    let mut sync = Map::new();
    let syncs: Vec<&OpResult> = members.iter().filter_map(|p| p.sync.as_ref()).collect();
    sync.insert("total_ios".into(), json!(syncs.iter().map(|s| s.ops).sum::<u64>()));
    sync.insert("lat_ns".into(), latency(&syncs, false));
    json!({
        "jobname": first.name,
        "groupid": groupid,
        "error": u8::from(failed),
        "eta": 0,
        "elapsed": runtime_s.round() as u64,
        "job options": {
            "rw": first.rw,
            "bs": first.bs,
            "iodepth": first.iodepth.to_string(),
            "numjobs": members.iter().map(|p| p.jobs).sum::<u32>().to_string(),
            "ioengine": first.engine.name,
            "direct": u8::from(first.direct).to_string(),
        },
        "read": class(|p| p.read.as_ref(), |i| i.read.as_ref()),
        "write": class(|p| p.write.as_ref(), |i| i.write.as_ref()),
        "trim": direction(&[], &[], runtime_s),
        "sync": sync,
        "job_runtime": (runtime_s * 1000.0).round() as u64,
        "usr_cpu": cpu_pct(|p| p.cpu.user_s),
        "sys_cpu": cpu_pct(|p| p.cpu.system_s),
    })
}

/// One direction (`read`, `write`, `trim`) over the group's phases.
fn direction(ops: &[&OpResult], points: &[&ClassPoint], runtime_s: f64) -> Value {
    let io_bytes: u64 = ops.iter().map(|o| o.bytes).sum();
    let total_ios: u64 = ops.iter().map(|o| o.ops).sum();
    let per_sec = |n: f64| if runtime_s > 0.0 { n / runtime_s } else { 0.0 };
    let bw_bytes = per_sec(io_bytes as f64);
    let mut out = Map::new();
    out.insert("io_bytes".into(), json!(io_bytes));
    out.insert("io_kbytes".into(), json!(io_bytes / 1024));
    out.insert("bw_bytes".into(), json!(bw_bytes.round() as u64));
    out.insert("bw".into(), json!((bw_bytes / 1024.0).round() as u64));
    out.insert("iops".into(), json!(per_sec(total_ios as f64)));
    out.insert("runtime".into(), json!(if total_ios > 0 { (runtime_s * 1000.0).round() as u64 } else { 0 }));
    out.insert("total_ios".into(), json!(total_ios));
    out.insert("short_ios".into(), json!(0));
    out.insert("drop_ios".into(), json!(0));
    out.insert("slat_ns".into(), json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}));
    out.insert("clat_ns".into(), latency(ops, true));
    out.insert("lat_ns".into(), latency(ops, false));
    // Interval figures: bandwidth in KiB/s, as fio's bw_* fields.
    let bw: Vec<f64> = points.iter().map(|p| p.mbps * 1e6 / 1024.0).collect();
    let iops: Vec<f64> = points.iter().map(|p| p.iops).collect();
    let (bw_min, bw_max, bw_mean, bw_dev) = spread(&bw);
    out.insert("bw_min".into(), json!(bw_min.round() as u64));
    out.insert("bw_max".into(), json!(bw_max.round() as u64));
    out.insert("bw_agg".into(), json!(if total_ios > 0 { 100.0 } else { 0.0 }));
    out.insert("bw_mean".into(), json!(bw_mean));
    out.insert("bw_dev".into(), json!(bw_dev));
    out.insert("bw_samples".into(), json!(bw.len()));
    let (iops_min, iops_max, iops_mean, iops_dev) = spread(&iops);
    out.insert("iops_min".into(), json!(iops_min.round() as u64));
    out.insert("iops_max".into(), json!(iops_max.round() as u64));
    out.insert("iops_mean".into(), json!(iops_mean));
    out.insert("iops_stddev".into(), json!(iops_dev));
    out.insert("iops_samples".into(), json!(iops.len()));
    Value::Object(out)
}

/// min, max, mean and population standard deviation (all zero for no samples).
fn spread(values: &[f64]) -> (f64, f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max, mean, var.sqrt())
}

/// fio's latency object, merged over several summaries: pooled mean and variance (exact), percentiles as the
/// highest of the members' (an upper bound).
fn latency(ops: &[&OpResult], with_percentiles: bool) -> Value {
    let summaries: Vec<&LatencySummary> = ops.iter().map(|o| &o.latency).filter(|l| l.samples > 0).collect();
    let n: u64 = summaries.iter().map(|l| l.samples).sum();
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
    let mean = summaries.iter().map(|l| l.mean_ns * l.samples as f64).sum::<f64>() / total;
    // E[x²] of each member is σ² + μ²; the pooled variance is E[x²] − μ² over all samples.
    let second =
        summaries.iter().map(|l| (l.stddev_ns.powi(2) + l.mean_ns.powi(2)) * l.samples as f64).sum::<f64>() / total;
    out.insert("min".into(), json!(summaries.iter().map(|l| l.min_ns).min().unwrap_or(0)));
    out.insert("max".into(), json!(summaries.iter().map(|l| l.max_ns).max().unwrap_or(0)));
    out.insert("mean".into(), json!(mean));
    out.insert("stddev".into(), json!((second - mean * mean).max(0.0).sqrt()));
    out.insert("N".into(), json!(n));
    if with_percentiles {
        let mut percentiles = Map::new();
        for p in &summaries[0].percentiles_ns {
            let highest = summaries.iter().filter_map(|l| l.at(p.p)).max().unwrap_or(p.ns);
            percentiles.insert(format!("{:.6}", p.p), json!(highest));
        }
        out.insert("percentile".into(), Value::Object(percentiles));
    }
    Value::Object(out)
}

/// fio's top-level disk_util from every phase's device activity.
fn disk_util(phases: &[PhaseResult]) -> Value {
    struct Disk {
        name: String,
        reads: u64,
        writes: u64,
        busy_weighted: f64,
        seconds: f64,
    }
    let mut disks: Vec<Disk> = Vec::new();
    for phase in phases {
        for device in &phase.devices {
            let a = &device.activity;
            let index = match disks.iter().position(|d| d.name == a.name) {
                Some(i) => i,
                None => {
                    disks.push(Disk { name: a.name.clone(), reads: 0, writes: 0, busy_weighted: 0.0, seconds: 0.0 });
                    disks.len() - 1
                }
            };
            let disk = &mut disks[index];
            disk.reads += a.reads;
            disk.writes += a.writes;
            disk.busy_weighted += a.busy_pct * phase.duration_s;
            disk.seconds += phase.duration_s;
        }
    }
    Value::Array(
        disks
            .into_iter()
            .map(|d| {
                json!({
                    "name": d.name,
                    "read_ios": d.reads,
                    "write_ios": d.writes,
                    "read_merges": 0,
                    "write_merges": 0,
                    "read_ticks": 0,
                    "write_ticks": 0,
                    "in_queue": 0,
                    "util": if d.seconds > 0.0 { d.busy_weighted / d.seconds } else { 0.0 },
                })
            })
            .collect(),
    )
}

/// Seconds since the epoch of an RFC 3339 UTC time such as "2026-11-22T05:00:00Z".
fn unix_seconds(text: &str) -> Option<u64> {
    let (date, time) = text.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':').map(|x| x.split('.').next().unwrap_or("").parse::<i64>());
    let (hh, mm, ss) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    // Days from civil (Howard Hinnant), the inverse of results::time's conversion.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_convert_back_to_unix_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(unix_seconds("2026-11-22T14:03:07Z"), Some(1_795_356_187));
        assert_eq!(unix_seconds("yesterday"), None);
    }

    #[test]
    fn spread_of_nothing_is_zero() {
        assert_eq!(spread(&[]), (0.0, 0.0, 0.0, 0.0));
        assert_eq!(spread(&[2.0, 4.0]), (2.0, 4.0, 3.0, 1.0));
    }
}
