//! fio's JSON output (`fio --output-format=json`, and `json+` with latency bins) rendered from a `RunResult`, so
//! scripts, dashboards and fio's own tools read streamcap's figures unchanged. Every key fio 3.33 writes is here,
//! in fio's order, with fio's meaning; what streamcap measures differently is said below. Reads only `results`
//! types; `job.rs` writes one job entry, `direction.rs` the read, write, trim and sync objects.
//!
//! Jobs and groups, as fio forms them:
//! - one entry per phase; a phase read from a fio job file without `group_reporting` has one entry per worker
//!   (fio reports every clone of a job on its own), all with the job's name;
//! - phases with the same `group` label (fio group_reporting) are one entry named after the group's first phase:
//!   counts and bytes add up, the runtime is the longest member's, latency means and deviations are pooled, the
//!   percentiles come from the merged latency buckets, and bandwidth and IOPS spreads add up as fio adds them;
//! - `groupid` is fio's (a new group at every stonewall and new_group) for fio job files, else one per group of
//!   phases in order; `job options` are the options of the job's own section as written and `global options`
//!   those of its `[global]` sections; for flags and TOML jobs, `job options` carries rw, bs, iodepth, numjobs,
//!   ioengine and direct, which fio-plot reads.
//!
//! Figures, and where streamcap's differ from fio's:
//! - `clat_ns` is streamcap's latency (submission to completion); `slat_ns` is from the moment a worker took the
//!   operation to the moment it reached the kernel, `lat_ns` from taken to completed — measured per operation
//!   for every engine (fio leaves slat empty for its synchronous engines);
//! - percentiles and bins come from streamcap's histogram (bucket midpoints, within 0.4 %), in numeric order;
//! - `bw_*` and `iops_*` spreads are over streamcap's reporting intervals (fio samples every 500 ms);
//! - `usr_cpu`, `sys_cpu`, `ctx`, `majf` and `minf` are the process's, over the phase; a worker's entry gets its
//!   share by operations (streamcap does not account CPU per thread);
//! - `iodepth_*` and `latency_ns/us/ms` are counted as fio counts them; `latency_depth` is the depth a
//!   latency_target's search ended at (the iodepth without one) and `latency_target` and friends the job's own;
//!   `eta` is 0 and `elapsed` the run's seconds so far;
//! - `disk_util` adds up each device's activity over the phases; `util` is weighted by phase duration.

mod direction;
mod job;
mod time;

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::results::{PhaseResult, RunResult, WorkerResult};

fn write_document(out: &mut dyn Write, value: &Value) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// fio's JSON (`--output-format=json`), pretty-printed, with a final newline.
pub struct FioJson;

impl super::Renderer for FioJson {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        write_document(out, &fio_json(result, false))
    }
}

/// fio's json+ (`--output-format=json+`): the same document with each completion-latency histogram's bins.
pub struct FioJsonPlus;

impl super::Renderer for FioJsonPlus {
    fn render(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        write_document(out, &fio_json(result, true))
    }
}

/// fio's JSON document for `result`; `plus` adds json+'s latency bins.
pub fn fio_json(result: &RunResult, plus: bool) -> Value {
    let timestamp = time::unix_seconds(&result.started_at).unwrap_or(0);
    let entries = entries(&result.phases);
    let elapsed =
        result.finished_at.as_deref().and_then(time::unix_seconds).map_or(0, |end| end.saturating_sub(timestamp));
    let context = job::Context { plus, elapsed, entries: &entries };
    let jobs: Vec<Value> = entries.iter().map(|entry| job::job(entry, &context)).collect();
    let mut root = Map::new();
    root.insert("fio version".into(), json!(format!("{}-{}", result.tool.name, result.tool.version)));
    root.insert("timestamp".into(), json!(timestamp));
    root.insert("timestamp_ms".into(), json!(timestamp.saturating_mul(1000)));
    root.insert("time".into(), json!(time::ctime(timestamp)));
    let global = result.phases.iter().find_map(|p| p.fio.as_ref()).map(|f| &f.global_options);
    if let Some(options) = global.filter(|o| !o.is_empty()) {
        root.insert("global options".into(), options_object(options));
    }
    root.insert("jobs".into(), Value::Array(jobs));
    root.insert("disk_util".into(), disk_util(&result.phases));
    Value::Object(root)
}

/// Options as fio lists them: name to value, both strings, in the order written.
pub(super) fn options_object(options: &[(String, String)]) -> Value {
    Value::Object(options.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

/// What one entry of `jobs[]` reports: one phase, one worker of a phase, or the phases of a reporting group.
pub(super) struct Entry<'a> {
    pub name: &'a str,
    pub groupid: u64,
    /// The group label that gathered the members, if any.
    pub label: Option<&'a str>,
    pub members: Vec<Member<'a>>,
}

/// One phase, or one worker of it.
#[derive(Clone, Copy)]
pub(super) struct Member<'a> {
    pub phase: &'a PhaseResult,
    pub worker: Option<&'a WorkerResult>,
}

impl<'a> Member<'a> {
    pub fn runtime_s(&self) -> f64 {
        self.worker.map_or(self.phase.duration_s, |w| w.duration_s)
    }

    /// Threads this member stands for (fio's total_run_time adds up every thread's runtime).
    pub fn threads(&self) -> u32 {
        if self.worker.is_some() { 1 } else { self.phase.jobs.max(1) }
    }

    /// The member's share of the phase's process-wide figures (CPU, faults): its share of the operations.
    pub fn share(&self) -> f64 {
        let Some(worker) = self.worker else { return 1.0 };
        let ops = |r: Option<&crate::results::OpResult>| r.map_or(0, |o| o.ops);
        let phase = ops(self.phase.read.as_ref()) + ops(self.phase.write.as_ref());
        let mine = ops(worker.read.as_ref()) + ops(worker.write.as_ref());
        if phase == 0 { 1.0 / self.phase.workers.len().max(1) as f64 } else { mine as f64 / phase as f64 }
    }
}

/// The entries of `jobs[]`, in phase order (see the module doc).
fn entries(phases: &[PhaseResult]) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    let mut next_group = 0u64;
    for phase in phases {
        if let Some(label) = phase.group.as_deref()
            && let Some(entry) = out.iter_mut().find(|e| e.label == Some(label))
        {
            entry.members.push(Member { phase, worker: None });
            continue;
        }
        let groupid = match &phase.fio {
            Some(fio) => u64::from(fio.group_id),
            None => {
                next_group += 1;
                next_group - 1
            }
        };
        let separate = phase.fio.as_ref().is_some_and(|f| !f.group_reporting) && !phase.workers.is_empty();
        if separate {
            for worker in &phase.workers {
                let members = vec![Member { phase, worker: Some(worker) }];
                out.push(Entry { name: &phase.name, groupid, label: None, members });
            }
        } else {
            let members = vec![Member { phase, worker: None }];
            out.push(Entry { name: &phase.name, groupid, label: phase.group.as_deref(), members });
        }
    }
    out
}

/// fio's top-level disk_util from every phase's device activity.
fn disk_util(phases: &[PhaseResult]) -> Value {
    #[derive(Default)]
    struct Disk {
        name: String,
        counts: [u64; 7],
        busy_weighted: f64,
        seconds: f64,
    }
    let mut disks: Vec<Disk> = Vec::new();
    for phase in phases {
        for device in &phase.devices {
            let a = &device.activity;
            let index = disks.iter().position(|d| d.name == a.name).unwrap_or_else(|| {
                disks.push(Disk { name: a.name.clone(), ..Disk::default() });
                disks.len() - 1
            });
            let disk = &mut disks[index];
            let counts =
                [a.reads, a.writes, a.read_merges, a.write_merges, a.read_ticks_ms, a.write_ticks_ms, a.in_queue_ms];
            disk.counts.iter_mut().zip(counts).for_each(|(sum, c)| *sum += c);
            disk.busy_weighted += a.busy_pct * phase.duration_s;
            disk.seconds += phase.duration_s;
        }
    }
    let keys = ["read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue"];
    Value::Array(
        disks
            .into_iter()
            .map(|d| {
                let mut object = Map::new();
                object.insert("name".into(), json!(d.name));
                for (key, count) in keys.iter().zip(d.counts) {
                    object.insert((*key).into(), json!(count));
                }
                object.insert("util".into(), json!(if d.seconds > 0.0 { d.busy_weighted / d.seconds } else { 0.0 }));
                Value::Object(object)
            })
            .collect(),
    )
}
