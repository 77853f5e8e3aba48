//! Multi-host runs (streamcap under mpirun, cargo feature `mpi`): who took part (each rank's host, CPU and
//! devices), each rank's share of every phase beside the merged totals, the stonewall figures ("first done" and
//! "last done", as elbencho reports them) and, for stream phases, what each client saw of every step and whether
//! a client rather than the storage was the limit. The phase figures themselves (`RunResult::phases`) are every
//! rank's operations together, with histograms merged by addition.
//!
//! Pure data and the arithmetic that derives it; the app fills it in, renderers read it.

use serde::{Deserialize, Serialize};

use super::{DeviceResult, IntervalPoint, PhaseResult, RunStatus, TargetInfo};
use crate::sysinfo::HostFacts;

/// A client whose own delay in issuing due reads passed this at the 99th percentile was the limit, not the
/// storage: the reads were late before the storage saw them.
pub const CLIENT_LAG_LIMIT_MS: f64 = 50.0;
/// A client that used more than this share of its CPUs was busy enough to be the limit.
pub const CLIENT_CPU_LIMIT_PCT: f64 = 90.0;
/// Own lag alone does not blame the client: a viewer asks for its next chunk when the one before it arrives, so a
/// storage (or link) that falls behind makes every later request go out late too, from an idle client (CI saw
/// "the client was the limit: own lag p99 4.20 s, CPU 0 %" where an sshfs link was). Late requests are the
/// client's when it was also this busy.
pub const CLIENT_LAG_NEEDS_CPU_PCT: f64 = 50.0;

/// Whether requests `lag_ms` late at p99 from a client `cpu_pct` busy were the client's own doing.
pub fn lag_is_the_clients(lag_ms: f64, cpu_pct: f64) -> bool {
    lag_ms > CLIENT_LAG_LIMIT_MS && cpu_pct >= CLIENT_LAG_NEEDS_CPU_PCT
}

/// Every rank and what each did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClusterResult {
    /// Number of ranks (client processes).
    pub ranks: u32,
    /// Each rank's host and target, in rank order.
    pub hosts: Vec<RankHost>,
    /// Each phase's per-rank breakdown and stonewall figures, in phase order.
    pub phases: Vec<ClusterPhase>,
    /// Stream phases: what each client saw of each step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<ClusterStep>,
    /// Stream phases with a capacity search: (phase index, the verdict across clients: how many were used and
    /// whether a client rather than the storage was the limit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<(usize, String)>,
    /// `--verify`: what each rank checked (the result's `verify` is every rank's together).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify: Vec<super::RankVerify>,
}

/// One rank: where it ran and what it ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankHost {
    /// The rank, 0-based (rank 0 planned first, printed and wrote this result).
    pub rank: u32,
    /// The host the rank ran on: name, CPUs, RAM, kernel.
    pub host: HostFacts,
    /// The target on this host (its own filesystem and devices, or the shared one).
    pub target: TargetInfo,
    /// What the rank stood for in the job: `hd=NAME` for a vdbench file's hds under mpirun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// One phase over all ranks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterPhase {
    /// Index of the phase in `RunResult::phases`.
    pub index: usize,
    /// The phase's name, as in `RunResult::phases`.
    pub name: String,
    /// When the first rank finished its share (the stonewall: the others were then told to stop), and what every
    /// rank had done by then. Absent for stream phases, whose steps end together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_done: Option<DoneFigures>,
    /// When the last rank finished, and what every rank did in all (the phase's totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_done: Option<DoneFigures>,
    /// Each rank's share, in rank order.
    pub ranks: Vec<RankPhase>,
}

/// Work done by every rank together up to a moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DoneFigures {
    /// The rank that finished at that moment.
    pub rank: u32,
    /// That rank's host name.
    pub host: String,
    /// Seconds after measurement began.
    pub elapsed_s: f64,
    /// Operations every rank had completed by then (the interval it fell in counted in proportion).
    pub ops: u64,
    /// Bytes every rank had moved by then.
    pub bytes: u64,
    /// `ops` over `elapsed_s`.
    pub iops: f64,
    /// `bytes` over `elapsed_s`, 10^6 bytes/s.
    pub mbps: f64,
}

/// One rank's share of a phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankPhase {
    /// The rank, 0-based.
    pub rank: u32,
    /// Its host name.
    pub host: String,
    /// How this rank's share ended (`completed` also when the stonewall stopped it).
    pub status: RunStatus,
    /// Measured time until this rank's last worker finished, seconds.
    pub duration_s: f64,
    /// Operations this rank completed: reads, writes, syncs and file-set metadata operations (`file_ops`).
    pub ops: u64,
    /// Of `ops`, the file-set metadata operations (open, close, create, getattr, …); absent (0) for raw phases.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub file_ops: u64,
    /// Bytes this rank moved.
    pub bytes: u64,
    /// `ops` over `duration_s`, operations per second.
    pub iops: f64,
    /// 10^6 bytes/s.
    pub mbps: f64,
    /// Mean latency over this rank's operations, nanoseconds.
    pub mean_latency_ns: f64,
    /// The 99th percentile of this rank's read (or else write) latency, nanoseconds.
    pub p99_latency_ns: u64,
    /// streamcap's CPU use on this host, percent of one core.
    pub cpu_pct: f64,
    /// Logical CPUs of the host, to read `cpu_pct` against.
    pub cpu_count: u32,
    /// Activity of the devices beneath the target on this host.
    pub devices: Vec<DeviceResult>,
    /// Failed operations on this rank.
    pub errors: u64,
}

impl RankPhase {
    /// A rank's share, from the phase result its own observer built.
    pub fn of(rank: u32, host: &HostFacts, phase: &PhaseResult) -> RankPhase {
        let counts = PhaseCounts::of(phase);
        let seconds = phase.duration_s.max(1e-9);
        let p99 = phase.read.as_ref().or(phase.write.as_ref()).and_then(|c| c.latency.at(99.0)).unwrap_or(0);
        RankPhase {
            rank,
            host: host.hostname.clone(),
            status: phase.status,
            duration_s: phase.duration_s,
            ops: counts.ops(),
            file_ops: counts.file_ops,
            bytes: counts.bytes,
            iops: counts.ops() as f64 / seconds,
            mbps: counts.bytes as f64 / seconds / 1e6,
            mean_latency_ns: counts.mean_latency_ns,
            p99_latency_ns: p99,
            cpu_pct: phase.cpu.process_pct,
            cpu_count: host.cpu_count,
            devices: phase.devices.clone(),
            errors: phase.errors.count,
        }
    }
}

/// What a phase did, counted the one way the per-rank rows and the stonewall figures count it, so that the
/// ranks' rows add up to the merged phase's "last done".
struct PhaseCounts {
    /// Reads, writes and syncs.
    transfers: u64,
    /// File-set metadata operations (open, close, create, getattr, …): a file-set phase's `file_ops` without its
    /// reads and writes, which `transfers` holds already.
    file_ops: u64,
    bytes: u64,
    /// Mean latency of the transfers, nanoseconds.
    mean_latency_ns: f64,
}

impl PhaseCounts {
    fn of(phase: &PhaseResult) -> PhaseCounts {
        let classes = [&phase.read, &phase.write, &phase.sync];
        let classes = || classes.iter().filter_map(|c| c.as_ref());
        let transfers: u64 = classes().map(|c| c.ops).sum();
        let weighted: f64 = classes().map(|c| c.latency.mean_ns * c.ops as f64).sum();
        let file_ops = phase
            .file_ops
            .as_ref()
            .map_or(0, |f| f.ops.iter().filter(|o| !is_transfer(&o.op)).map(|o| o.ops).sum::<u64>());
        PhaseCounts {
            transfers,
            file_ops,
            bytes: classes().map(|c| c.bytes).sum(),
            mean_latency_ns: if transfers > 0 { weighted / transfers as f64 } else { 0.0 },
        }
    }

    fn ops(&self) -> u64 {
        self.transfers + self.file_ops
    }
}

/// A file-set operation class that is a transfer (counted in the phase's `read` and `write` too).
fn is_transfer(op: &str) -> bool {
    op == "read" || op == "write"
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The stonewall figures of a phase from its merged result (its totals and interval series) and the moments
/// the ranks finished (`(rank, host, seconds)` in rank order), in the per-rank rows' units (`PhaseCounts`).
/// "Last done" is the whole phase: its totals, so the ranks' rows add up to it exactly. "First done" counts the
/// intervals that ended by the first rank's finish, and the interval it finished in in proportion to the time
/// before it (syncs, which intervals do not hold, are left out of it).
pub fn done_figures(phase: &PhaseResult, done: &[(u32, String, f64)]) -> Option<(DoneFigures, DoneFigures)> {
    let first = done.iter().min_by(|a, b| a.2.total_cmp(&b.2))?;
    let last = done.iter().max_by(|a, b| a.2.total_cmp(&b.2))?;
    let mut upto = (0.0, 0.0);
    for point in &phase.intervals {
        let (ops, bytes) = point_totals(point);
        let end = point.start_s + point.length_s;
        let share = if end <= first.2 {
            1.0
        } else if point.start_s >= first.2 || point.length_s <= 0.0 {
            0.0
        } else {
            (first.2 - point.start_s) / point.length_s
        };
        upto = (upto.0 + ops * share, upto.1 + bytes * share);
    }
    let figures = |(rank, host, at): &(u32, String, f64), ops: u64, bytes: u64| DoneFigures {
        rank: *rank,
        host: host.clone(),
        elapsed_s: *at,
        ops,
        bytes,
        iops: ops as f64 / at.max(1e-9),
        mbps: bytes as f64 / at.max(1e-9) / 1e6,
    };
    let all = PhaseCounts::of(phase);
    // Rounded rates of file-set operations could make the part a hair more than the whole.
    let (ops, bytes) = ((upto.0.round() as u64).min(all.ops()), (upto.1.round() as u64).min(all.bytes));
    Some((figures(first, ops, bytes), figures(last, all.ops(), all.bytes)))
}

/// An interval's operations (transfers and file-set metadata operations, as `PhaseCounts`) and bytes. A point
/// holds its file-set operations as rates, reads and writes among them: those are counted once, from `read`
/// and `write`.
fn point_totals(point: &IntervalPoint) -> (f64, f64) {
    let classes = [&point.read, &point.write];
    let classes = || classes.iter().filter_map(|c| c.as_ref());
    let metadata = point.file_ops.iter().filter(|f| !is_transfer(&f.op));
    let file_ops: f64 = metadata.map(|f| f.rate * point.length_s).sum();
    let ops = classes().map(|c| c.ops).sum::<u64>() as f64 + file_ops;
    (ops, classes().map(|c| c.bytes).sum::<u64>() as f64)
}

/// One step of a stream phase, client by client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterStep {
    /// Index of the stream phase.
    pub phase: usize,
    /// Viewers of all clients together.
    pub count: u32,
    /// Whether the step met the quality target, over every client's viewers.
    pub meets_target: bool,
    /// Each client's share, in rank order.
    pub clients: Vec<ClientFigures>,
}

/// What one client saw of a step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientFigures {
    /// The client's rank.
    pub rank: u32,
    /// Its host name.
    pub host: String,
    /// Viewers this client ran.
    pub viewers: u32,
    /// Streams that stalled or never started, of this client's.
    pub stalled: u32,
    /// Reads that failed on this client.
    pub errors: u64,
    /// This client's own delay in issuing due reads, 99th percentile, milliseconds.
    pub issue_lag_p99_ms: f64,
    /// Chunk lateness as this client saw it, 99th percentile, milliseconds.
    pub lateness_p99_ms: f64,
    /// streamcap's CPU use on this client during the step, percent of all its CPUs.
    pub cpu_busy_pct: f64,
}

impl ClientFigures {
    /// Why this client, rather than the storage, held its streams back — or `None`.
    pub fn limit(&self) -> Option<String> {
        if self.cpu_busy_pct > CLIENT_CPU_LIMIT_PCT {
            Some(format!("{} (rank {}) was CPU-bound: {:.0} % of its CPUs", self.host, self.rank, self.cpu_busy_pct))
        } else if lag_is_the_clients(self.issue_lag_p99_ms, self.cpu_busy_pct) {
            Some(format!(
                "{} (rank {}) issued due reads {:.0} ms late at p99 with its CPUs {:.0} % busy",
                self.host, self.rank, self.issue_lag_p99_ms, self.cpu_busy_pct
            ))
        } else {
            None
        }
    }
}

/// The stream verdict across clients: how many were used and, at the step that failed, whether a client was the
/// limit (every sentence saying which), or the storage.
pub fn client_verdict(cluster: &ClusterResult, phase: usize) -> Option<String> {
    let steps: Vec<&ClusterStep> = cluster.steps.iter().filter(|s| s.phase == phase).collect();
    let last = steps.iter().find(|s| !s.meets_target).or(steps.last())?;
    let clients = last.clients.len();
    let limits: Vec<String> = last.clients.iter().filter_map(ClientFigures::limit).collect();
    let failed = !last.meets_target;
    Some(match (failed, limits.is_empty()) {
        (false, true) => format!("{clients} clients; no client was near its limit"),
        (false, false) => format!("{clients} clients; near their limit: {}", limits.join("; ")),
        (true, true) => format!(
            "{clients} clients; at {} streams the storage was the limit (no client was CPU-bound or late in issuing \
             reads)",
            last.count
        ),
        (true, false) => format!(
            "{clients} clients; at {} streams a client, not the storage, may have been the limit: {}; add clients \
             to measure the storage",
            last.count,
            limits.join("; ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ClassPoint;
    use crate::results::FileOpPoint;

    fn point(start: f64, length: f64, ops: u64) -> IntervalPoint {
        let mut p: IntervalPoint = serde_json::from_value(serde_json::json!({
            "start_s": start, "length_s": length, "cpu_pct": 0.0, "devices": []
        }))
        .expect("a bare interval point");
        let class: ClassPoint = serde_json::from_value(serde_json::json!({
            "ops": ops, "bytes": ops * 4096, "errors": 0, "iops": 0.0, "mbps": 0.0,
            "lat_mean_ns": 0.0, "lat_p50_ns": 0, "lat_p99_ns": 0, "lat_p999_ns": 0, "lat_max_ns": 0
        }))
        .expect("a class point");
        p.read = Some(class);
        p
    }

    /// A file-set phase (the vdbench fixture's) with `reads` reads, no writes, `opens` opens and as many closes,
    /// and `intervals`.
    fn fileset_phase(reads: u64, opens: u64, intervals: &[IntervalPoint]) -> (PhaseResult, HostFacts) {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/vdbench-fs-v1.json");
        let result = crate::results::read_result(std::path::Path::new(path)).expect("the fixture");
        let mut phase = serde_json::to_value(&result.phases[0]).expect("serializes");
        phase["read"]["ops"] = reads.into();
        phase["read"]["bytes"] = (reads * 4096).into();
        phase["write"] = serde_json::Value::Null;
        let ops = phase["file_ops"]["ops"].as_array_mut().expect("file-set operations");
        ops.retain(|o| o["op"] != "write");
        for op in ops.iter_mut() {
            op["ops"] = if op["op"] == "read" { reads } else { opens }.into();
        }
        phase["intervals"] = serde_json::to_value(intervals).expect("serializes");
        (serde_json::from_value(phase).expect("a phase"), result.host)
    }

    /// Guards the doubled first done of file-set phases: an interval's reads were counted once from its reads
    /// and again from its file-set operations (177.7 k IOPS against 83 k merged).
    #[test]
    fn first_done_counts_what_was_done_by_the_first_finish() {
        let mut intervals = [point(0.0, 1.0, 100), point(1.0, 1.0, 100), point(2.0, 0.5, 40)];
        for p in &mut intervals {
            let reads = p.read.as_ref().map_or(0.0, |r| r.ops as f64) / p.length_s;
            p.file_ops = vec![
                FileOpPoint { op: "read".into(), rate: reads, mean_ns: 1.0 },
                FileOpPoint { op: "open".into(), rate: 10.0, mean_ns: 1.0 },
                FileOpPoint { op: "close".into(), rate: 10.0, mean_ns: 1.0 },
            ];
        }
        let (phase, host) = fileset_phase(240, 25, &intervals);
        let done = [(0, "a".to_string(), 2.5), (1, "b".to_string(), 1.5)];
        let (first, last) = done_figures(&phase, &done).expect("ranks");
        assert_eq!((first.rank, first.host.as_str(), first.elapsed_s), (1, "b", 1.5));
        assert_eq!(first.ops, 150 + 30, "reads once, and 20 opens and closes a second");
        assert_eq!(first.iops, 120.0);
        assert_eq!((last.rank, last.ops, last.bytes), (0, 240 + 50, 240 * 4096), "the phase's totals");
        assert_eq!(last.iops, 116.0);
        let row = RankPhase::of(0, &host, &phase);
        assert_eq!((row.ops, row.file_ops), (last.ops, 50), "a row counts as the stonewall figures do");
        assert!(done_figures(&phase, &[]).is_none());
    }

    #[test]
    fn a_busy_or_late_client_is_named_as_the_limit() {
        let client = |rank, cpu, lag| ClientFigures {
            rank,
            host: format!("h{rank}"),
            viewers: 10,
            stalled: 1,
            errors: 0,
            issue_lag_p99_ms: lag,
            lateness_p99_ms: 5.0,
            cpu_busy_pct: cpu,
        };
        let step = |count, meets, clients| ClusterStep { phase: 0, count, meets_target: meets, clients };
        let mut cluster = ClusterResult {
            ranks: 2,
            steps: vec![step(20, true, vec![client(0, 10.0, 1.0), client(1, 10.0, 1.0)])],
            ..ClusterResult::default()
        };
        assert_eq!(client_verdict(&cluster, 0).as_deref(), Some("2 clients; no client was near its limit"));
        cluster.steps.push(step(40, false, vec![client(0, 20.0, 2.0), client(1, 20.0, 3.0)]));
        assert!(client_verdict(&cluster, 0).expect("steps").contains("the storage was the limit"));
        cluster.steps[1].clients[1] = client(1, 97.0, 80.0);
        let verdict = client_verdict(&cluster, 0).expect("steps");
        assert!(verdict.contains("h1 (rank 1) was CPU-bound: 97 %"), "{verdict}");
        assert_eq!(client_verdict(&cluster, 3), None);
    }
}
